"""Monte Carlo speed: vectorised simulators vs a per-event pure-Python loop, side by side.

Job: 30 days of useful compute (work = 720 h = 43,200 min), C = 2 min, M = 1,200 min (20 h job
MTBF), R = 10 min, T = the exact long-run optimum (67.96 min), exponential failures, no final save.

* vectorised: :func:`engine.montecarlo.simulate` on 10^5 runs, with its default sampler for
  exponential failures (per window: counts of failed attempts per class of windows) and with
  ``method="per_failure"`` (every failure gap drawn, chunks of gaps at once);
* loop: :func:`engine.montecarlo.reference_simulation`, the same model walked phase by phase in plain
  Python, on fewer runs (default 2,000); per-run costs are compared. The loop takes its failure gaps
  from the same (numpy-generated) stream, so it is not charged for drawing them one by one: the ratio
  is, if anything, in the loop's favour.

The per-failure sampler and the loop are also run on the same 2,000 runs and seed to show they give
the same wall times (the per-window sampler draws other random numbers: it agrees in distribution,
see ``benchmarks/bench_montecarlo.py``), and the vectorised means are compared with the exact
finite-job expectation.

Run single-threaded:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_deadline.py
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ckptplan import engine  # noqa: E402
from ckptplan.engine import finite as fin  # noqa: E402
from ckptplan.engine import montecarlo as mc  # noqa: E402

WORK, C, M, R = 720.0 * 60.0, 2.0, 1200.0, 10.0


def _best_of(repeat: int, fn):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000, help="runs for the vectorised simulator")
    ap.add_argument("--loop-runs", type=int, default=2_000, help="runs for the pure-Python loop")
    ap.add_argument("--repeat", type=int, default=3, help="timings per method (best is reported)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    T = float(engine.exact_optimal_interval(C, M))
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    print(f"job: work {WORK:g} min, T {T:.2f} min ({int(fin.segment_count(WORK, T))} segments), C {C:g}, "
          f"M {M:g}, R {R:g} min, exponential failures")

    # same runs, same seed: the per-failure sampler and the loop agree run by run
    check = args.loop_runs
    fast = mc.simulate(WORK, T, C, M, R, runs=check, seed=args.seed, method="per_failure")
    slow = mc.reference_simulation(WORK, T, C, M, R, runs=check, seed=args.seed)
    worst = float(np.max(np.abs(fast.wall - slow.wall) / slow.wall))
    same_failures = bool(np.array_equal(fast.failures, slow.failures))
    print(f"agreement on {check:,} identical runs: max relative wall-time difference {worst:.1e}, "
          f"failure counts identical: {same_failures}")

    t_vec, all_vec, sim = _best_of(args.repeat, lambda: mc.simulate(WORK, T, C, M, R, runs=args.runs, seed=args.seed))
    t_pf, all_pf, sim_pf = _best_of(args.repeat, lambda: mc.simulate(WORK, T, C, M, R, runs=args.runs, seed=args.seed,
                                                                     method="per_failure"))
    t_loop, all_loop, _ = _best_of(args.repeat, lambda: mc.reference_simulation(
        WORK, T, C, M, R, runs=args.loop_runs, seed=args.seed))
    exact = float(fin.finite_expected_wall_time(WORK, T, C, M, R))
    z = (sim.mean() - exact) / sim.standard_error()
    vec_rate = args.runs / t_vec
    loop_rate = args.loop_runs / t_loop
    print(f"vectorised, per window (default): {args.runs:,} runs in {t_vec:.3f} s (best of {args.repeat}: "
          + ", ".join(f"{t:.3f}" for t in all_vec) + f") = {vec_rate:,.0f} runs/s")
    print(f"vectorised, per failure: {args.runs:,} runs in {t_pf:.3f} s (best of {args.repeat}: "
          + ", ".join(f"{t:.3f}" for t in all_pf) + f") = {args.runs / t_pf:,.0f} runs/s")
    print(f"loop:       {args.loop_runs:,} runs in {t_loop:.3f} s (best of {args.repeat}: "
          + ", ".join(f"{t:.3f}" for t in all_loop) + f") = {loop_rate:,.0f} runs/s")
    print(f"ratio (per-run cost, loop / per window): {vec_rate / loop_rate:.1f}x, loop / per failure: "
          f"{args.runs / t_pf / loop_rate:.1f}x; "
          f"loop would need {args.runs / loop_rate:.1f} s for {args.runs:,} runs")
    print(f"vectorised mean wall {sim.mean():.2f} min +- {sim.standard_error():.2f} (SE); exact finite-job "
          f"expectation {exact:.2f} min ({z:+.2f} SE); mean failures per run {sim.failures.mean():.2f}, "
          f"max {int(sim.failures.max())}; per-failure mean {sim_pf.mean():.2f} min "
          f"({(sim_pf.mean() - exact) / sim_pf.standard_error():+.2f} SE)")


if __name__ == "__main__":
    main()
