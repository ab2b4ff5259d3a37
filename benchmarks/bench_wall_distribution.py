"""The analytic deadline answer against a 10^5-run Monte Carlo: speed, and agreement on a grid.

* Speed, one scenario (the seed job: 720 h of useful compute, C = 2 min, M = 1,200 min, R = 10 min,
  T = the exact optimum, deadline 778 h): ``engine.montecarlo.simulate`` with 10^5 runs (P(finish)
  and P50/P90/P99 from the runs), against the analytic answer of ``engine.wall_distribution``
  (P(finish) and P50/P90/P99), both measured in this run, best of ``--repeat``. The analytic
  answer is timed two ways: per scenario when scenarios are answered together (10^4 scenarios in
  one vectorised call, as ``engine.evaluate`` and batches do), and one call of
  ``deadline_answer`` on the one scenario (input validation and numpy's per-call overhead included).
* Agreement: every case of the grid below (short and long jobs, C/M up to 0.5, R > 0, sync and
  async saves, final save on and off, intervals at, below and above the optimum) is simulated with
  10^5 runs; deadlines are the simulated P10, P25, P50, P75 and P90 and the table gives the largest
  |analytic P - simulated P| over them, with the case's validity flag. The same grid is the test
  ``tests/test_wall_distribution.py``.

Run single-threaded:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_wall_distribution.py
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
from ckptplan.engine import wall_distribution as wd  # noqa: E402
from ckptplan.engine.montecarlo import simulate  # noqa: E402

M = 600.0   # job MTBF of the grid (min); the grid is dimensionless in it
#: (name, work/M, C/M, R/M, async write?, final save?, interval / exact optimum)
GRID = (
    ("seed-like, 36 MTBFs", 36.0, 0.0017, 0.0083, False, False, 1.0),
    ("short, 8 MTBFs", 8.0, 0.01, 0.02, False, False, 1.0),
    ("short, final save", 8.0, 0.01, 0.02, False, True, 1.0),
    ("short, C/M 0.1", 5.0, 0.1, 0.05, False, False, 1.0),
    ("short async", 8.0, 0.01, 0.05, True, False, 1.0),
    ("short async, final save", 8.0, 0.01, 0.05, True, True, 1.0),
    ("C/M 0.5", 10.0, 0.5, 0.1, False, False, 1.0),
    ("C/M 0.5, final save", 10.0, 0.5, 0.1, False, True, 1.0),
    ("C/M 0.5 async", 5.0, 0.5, 0.1, True, False, 1.0),
    ("C/M 0.3 async, final save", 10.0, 0.3, 0.2, True, True, 1.0),
    ("long, 150 MTBFs", 150.0, 0.003, 0.02, False, False, 1.0),
    ("long async", 100.0, 0.01, 0.05, True, False, 1.0),
    ("long, R = 0.3 M", 60.0, 0.01, 0.3, False, False, 1.0),
    ("interval 0.4x optimum", 20.0, 0.01, 0.05, False, False, 0.4),
    ("interval 2.5x optimum", 20.0, 0.01, 0.05, False, True, 2.5),
    ("async, job ends mid-write", 20.3, 0.02, 0.05, True, False, 1.0),
    # outside the validity range (flagged): too few failures, or restarts long against windows
    ("out: 2 MTBFs", 2.0, 0.01, 0.02, False, False, 1.0),
    ("out: R = 0.1 M, T = 0.04 M", 5.0, 0.001, 0.1, False, False, 1.0),
    ("out: R = 0.5 M, 2 MTBFs", 2.0, 0.001, 0.5, False, False, 1.0),
)
PROBS = (0.1, 0.25, 0.5, 0.75, 0.9)


def case_inputs(work_m, c_m, r_m, asynchronous, final_save, factor):
    """(work, T, C, M, R, W, slowdown, final_save) of a grid case, in minutes."""
    C, R, work = c_m * M, r_m * M, work_m * M
    W, s = (2.0 * C + 10.0, 0.3) if asynchronous else (0.0, 0.0)
    if asynchronous and work_m == 20.3:    # a write longer than the last segment: the job ends mid-write
        W, s = 0.5 * float(engine.exact_optimal_interval(C, M)), 0.2
    T = max(float(engine.exact_optimal_interval(C, M, W, s)) * factor, W * (1 - s))
    return work, T, C, M, R, W, s, final_save


def compare_case(args, runs: int, seed: int) -> dict:
    """Analytic against simulated P(finish) at the simulated P10..P90, and the P50/P90/P99."""
    work, T, C, M_, R, W, s, fs = args
    wall = np.sort(simulate(work, T, C, M_, R, W, s, runs=runs, seed=seed, final_save=fs).wall)
    deadlines = np.quantile(wall, PROBS)
    simulated = np.searchsorted(wall, deadlines, side="right") / wall.size
    analytic = wd.finish_probability(deadlines, work, T, C, M_, R, W, s, fs)
    worst = int(np.argmax(np.abs(analytic - simulated)))
    mom = wd.wall_time_moments(work, T, C, M_, R, W, s, fs)
    sd = float(np.sqrt(mom["variance"]))
    quant = {q: (float(wd.wall_time_quantile(q, work, T, C, M_, R, W, s, fs)), float(np.quantile(wall, q)))
             for q in (0.5, 0.9, 0.99)}
    return {"ok": bool(mom["ok"]), "failures": float(mom["expected_failures"]), "skewness": float(mom["skewness"]),
            "p_analytic": float(analytic[worst]), "p_mc": float(simulated[worst]),
            "diff": float(np.max(np.abs(analytic - simulated))),
            "quantile_diff_sd": max(abs(a - b) / sd for a, b in quant.values()),
            "mean_rel": float(mom["mean"] / wall.mean() - 1.0)}


def _best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--batch", type=int, default=10_000, help="scenarios answered in one vectorised call")
    args = ap.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, one thread")

    work, C, Mj, R, deadline = 720.0 * 60.0, 2.0, 1200.0, 10.0, 778.0 * 60.0
    T = float(engine.exact_optimal_interval(C, Mj))

    def monte_carlo():
        wall = simulate(work, T, C, Mj, R, runs=args.runs, seed=args.seed).wall
        return np.count_nonzero(wall <= deadline) / wall.size, np.quantile(wall, [0.5, 0.9, 0.99])

    def scalar():
        a = wd.deadline_answer(deadline, work, T, C, Mj, R)
        return a["p_finish"], [a["wall_p50"], a["wall_p90"], a["wall_p99"]]

    rng = np.random.default_rng(0)
    n = args.batch
    batch = [np.full(n, work), T * rng.uniform(0.5, 2.0, n), C * rng.uniform(0.5, 2.0, n),
             Mj * rng.uniform(0.5, 2.0, n), R * rng.uniform(0.5, 2.0, n), np.zeros(n), np.zeros(n),
             np.full(n, deadline)]

    def vectorised():
        return wd.deadline_answers_kernel(*batch)

    t_mc = _best_of(args.repeat, monte_carlo)
    t_scalar = _best_of(max(args.repeat, 20), scalar)
    t_batch = _best_of(args.repeat, vectorised) / n
    p_mc, q_mc = monte_carlo()
    p_an, q_an = scalar()
    print(f"\nseed job, T = {T:.2f} min, deadline {deadline / 60:g} h: P(finish) analytic {p_an:.4f}, "
          f"Monte Carlo {p_mc:.4f}; P50/P90/P99 h analytic {', '.join(f'{q / 60:.2f}' for q in q_an)}, "
          f"Monte Carlo {', '.join(f'{q / 60:.2f}' for q in q_mc)}\n")
    print("| path | time per scenario | ratio to the Monte Carlo |\n| --- | ---: | ---: |")
    print(f"| Monte Carlo, {args.runs:,} runs (`simulate`) | {t_mc * 1e3:.1f} ms | 1x |")
    print(f"| analytic, {n:,} scenarios in one vectorised call | {t_batch * 1e6:.2f} us | {t_mc / t_batch:,.0f}x |")
    print(f"| analytic, one scenario, one call of `deadline_answer` (validation included) | {t_scalar * 1e6:.0f} us | "
          f"{t_mc / t_scalar:,.0f}x |")

    print(f"\nGrid: M = {M:g} min, {args.runs:,} runs per case, seed {args.seed}; deadlines at the simulated "
          f"P10..P90; 'P' columns at the deadline with the largest difference.\n")
    print("| case | failures | skewness | in range | analytic P | MC P | largest diff | quantiles, diff / sd |")
    print("| --- | ---: | ---: | :---: | ---: | ---: | ---: | ---: |")
    worst_in, worst_out = 0.0, 0.0
    for name, *spec in GRID:
        r = compare_case(case_inputs(*spec), args.runs, args.seed)
        if r["ok"]:
            worst_in = max(worst_in, r["diff"])
        else:
            worst_out = max(worst_out, r["diff"])
        print(f"| {name} | {r['failures']:.1f} | {r['skewness']:.2f} | {'yes' if r['ok'] else 'no'} | "
              f"{r['p_analytic']:.4f} | {r['p_mc']:.4f} | {r['diff'] * 100:.2f} pp | {r['quantile_diff_sd']:.3f} |")
    print(f"\nLargest difference inside the validity range: {worst_in * 100:.2f} percentage points "
          f"(outside it: {worst_out * 100:.2f}).")


if __name__ == "__main__":
    main()
