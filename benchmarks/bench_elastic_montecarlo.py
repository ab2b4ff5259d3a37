"""The elastic Monte Carlo (engine.elastic_montecarlo), vectorised over runs, against a plain-Python event loop.

    OMP_NUM_THREADS=1 python benchmarks/bench_elastic_montecarlo.py [--runs 10000] [--loop-runs 300] [--repeat 2]

Jobs (minutes): ``seed``: 720 h of work, 8 replicas of 16 nodes, floor 6, job MTBF 20 h, a node back after 60 min
on average, save 2 min every 90 min, restart 10 min, pauses 1 and 2 min, progress lost on a shrink; ``llama``:
1,166 h of work, 128 replicas, floor 124, job MTBF 3.1 h, a node back after 6 h, save 1 min every 45 min,
restart 10 min, pauses 1 min, progress kept.

The engine: :func:`engine.elastic_montecarlo.simulate_elastic`, every run of a block advanced together, one
failure or return per round, whole failure-free segments skipped at once. The baseline, written here independently
of the engine's kernels: one run at a time, event by event with Python's ``random`` (each replica out carries its
own return time; every segment's compute end and save end is an event; a stop's restart tried attempt by
attempt). The loop's time is measured on ``--loop-runs`` runs and scaled; the two means are printed with their
standard errors (they must agree: different random numbers, the same model).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402

import numpy as np  # noqa: E402

from ckptplan.engine.elastic_montecarlo import simulate_elastic  # noqa: E402

from _timing import best_of  # noqa: E402

__all__ = ["JOBS", "loop_run", "main"]

JOBS = {
    "seed": dict(work=720 * 60.0, T=90.0, C=2.0, M=1200.0, R=10.0, D=60.0, n=8, floor=6, keep=0, Ps=1.0, Pg=2.0),
    "llama": dict(work=1166.4 * 60, T=45.0, C=1.0, M=186.0, R=10.0, D=360.0, n=128, floor=124, keep=1, Ps=1.0,
                  Pg=1.0),
}


def loop_run(rng: random.Random, work, T, C, M, R, D, n, floor, keep, Ps, Pg) -> float:
    """One run's wall time (final save included), event by event."""
    lam, K = 1.0 / M, n - floor
    out: list[float] = []
    clock = wall = done = pending = pos = 0.0
    saving = False
    while True:
        running = n - len(out)
        to_fail = rng.expovariate(lam * running / n)
        to_back = min(out) - clock if out else math.inf
        to_phase = (T + C - pos) if saving else min(T - pos, (work - done - pending) * n / running)
        step = min(to_fail, to_back, to_phase)
        clock += step
        wall += step
        if not saving:
            pending += step * running / n
        pos += step
        if step == to_phase:
            if not saving:
                saving, pos = True, T
                continue
            done, pending, pos, saving = done + pending, 0.0, 0.0, False
            if done >= work * (1 - 1e-12):
                return wall
            continue
        if step == to_back:
            out.remove(min(out))
            wall += Pg
            continue
        if len(out) < K:
            out.append(clock + rng.expovariate(1.0 / D))
            wall += Ps
            if not keep:
                pending, pos, saving = 0.0, 0.0, False
            continue
        pending, pos, saving = 0.0, 0.0, False          # the floor: stop, wait, restart until one succeeds
        rate = lam * running / n
        while True:
            wall += D
            hit = rng.expovariate(rate)
            if hit >= R:
                wall += R
                break
            wall += hit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--loop-runs", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    for name, j in JOBS.items():
        def engine(j=j):
            return simulate_elastic(j["work"], j["T"], j["C"], j["M"], j["R"], j["D"], j["n"], j["floor"], j["keep"],
                                    j["Ps"], j["Pg"], runs=args.runs, seed=1).wall

        def loop(j=j):
            rng = random.Random(2)
            return np.array([loop_run(rng, **j) for _ in range(args.loop_runs)])

        a, b = engine(), loop()
        se = math.hypot(a.std(ddof=1) / math.sqrt(a.size), b.std(ddof=1) / math.sqrt(b.size))
        t_eng = best_of(engine, args.repeat)
        t_loop = best_of(loop, args.repeat)
        eng_rate, loop_rate = args.runs / t_eng, args.loop_runs / t_loop
        print(f"{name}: engine {args.runs:,} runs in {t_eng:.2f} s ({eng_rate:,.0f} runs/s), Python loop "
              f"{args.loop_runs:,} runs in {t_loop:.2f} s ({loop_rate:,.0f} runs/s), ratio {eng_rate / loop_rate:.1f}x; "
              f"mean wall {a.mean() / 60:,.2f} h vs {b.mean() / 60:,.2f} h (difference {(a.mean() - b.mean()) / se:+.1f} "
              "standard errors)")


if __name__ == "__main__":
    main()
