"""The elastic plan (engine.elastic) over many designs, vectorised, against a per-row loop.

    OMP_NUM_THREADS=1 python benchmarks/bench_elastic.py [--rows 100000] [--loop-rows 2000] [--repeat 3]

Designs: ``--rows`` random elastic jobs: 5-64 replicas, 1-4 of them allowed out, progress kept or not, a node
back after 10 min - 24 h, job MTBF 1-50 h, save stall 0.5-10 min, restart 5-30 min, pauses 0-3 min, an
interval of 10-300 min.

The engine: :func:`engine.elastic.elastic_breakdown` on all rows in one call (the expected wall time per unit of
work at the given interval). The baseline, written here independently of the engine's kernels: one row at a time,
the chain over replicas out built with plain Python loops, ``scipy.linalg.expm`` for the Van Loan blocks (the
engine has its own stacked exponential), ``numpy.linalg.solve`` for the stationary law of the attempts' start
states, and the renewal-reward ratio. Before timing, the two are checked equal (relative 1e-9) on the loop's
rows; the loop's time is measured on ``--loop-rows`` rows and scaled to ``--rows``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402
from scipy.linalg import expm  # noqa: E402

from ckptplan.engine import elastic  # noqa: E402

from _timing import best_of  # noqa: E402

__all__ = ["designs", "loop_row", "main"]


def designs(rows: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 65, rows).astype(float)
    return {"T": rng.uniform(10, 300, rows), "C": rng.uniform(0.5, 10, rows), "M": rng.uniform(60, 3000, rows),
            "R": rng.uniform(5, 30, rows), "D": rng.uniform(10, 1440, rows), "n": n,
            "floor": n - rng.integers(1, 5, rows), "keep": rng.integers(0, 2, rows).astype(float),
            "Ps": rng.uniform(0, 3, rows), "Pg": rng.uniform(0, 3, rows)}


def loop_row(T, C, M, R, D, n, floor, keep, Ps, Pg):
    """Expected wall time per unit of work of one elastic job (engine.elastic's model, written from its notes)."""
    K = int(n - floor)
    m = K + 1
    lam = 1.0 / M
    G = np.zeros((m, m))
    kill_to = []          # (state, rate, next start) of every event that rolls back
    shrink_rate, stop_rate = [0.0] * m, [0.0] * m
    for k in range(m):
        fail = lam * (n - k) / n
        if k > 0:
            G[k, k - 1] += k / D
        if k == K:
            stop_rate[k] = fail
            kill_to.append((k, fail, K))
        elif keep:
            G[k, k + 1] += fail
            shrink_rate[k] = fail
        else:
            shrink_rate[k] = fail
            kill_to.append((k, fail, k + 1))
    for k in range(m):
        G[k, k] = -(G[k].sum() + sum(r for s, r, _ in kill_to if s == k))
    theta = np.diag([(n - k) / n for k in range(m)])
    A = np.zeros((3 * m, 3 * m))
    A[:m, :m], A[:m, m:2 * m], A[m:2 * m, m:2 * m], A[m:2 * m, 2 * m:] = G, theta, G, np.eye(m)
    big = expm(A * T)
    B = np.zeros((2 * m, 2 * m))
    B[:m, :m], B[:m, m:] = G, np.eye(m)
    small = expm(B * C)
    E = big[:m, :m] @ small[:m, :m]
    U = big[m:2 * m, 2 * m:] + big[:m, :m] @ small[:m, m:]
    J = (big[:m, m:2 * m] @ small[:m, :m]).sum(axis=1)
    P = E.copy()
    for s, r, to in kill_to:
        P[:, to] += U[:, s] * r
    A2 = P.T - np.eye(m)
    A2[-1, :] = 1.0
    b = np.zeros(m)
    b[-1] = 1.0
    pi = np.linalg.solve(A2, b)
    occ = pi @ U
    lam_K = lam * (n - K) / n
    grow = math.expm1(lam_K * R)
    stops = occ[K] * stop_rate[K]
    returns = sum(occ[k] * k / D for k in range(m))
    shrinks = sum(occ[k] * shrink_rate[k] for k in range(m))
    time = occ.sum() + shrinks * Ps + returns * Pg + stops * ((grow + 1) * D + grow / lam_K)
    return time / (pi @ J)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--loop-rows", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    d = designs(args.rows)

    def vectorised():
        return elastic.elastic_breakdown(1.0, d["T"], d["C"], d["M"], d["R"], d["D"], d["n"], d["floor"], d["keep"],
                                         d["Ps"], d["Pg"])["total"]

    def loop():
        return np.array([loop_row(*(float(d[k][i]) for k in ("T", "C", "M", "R", "D", "n", "floor", "keep", "Ps",
                                                                "Pg"))) for i in range(args.loop_rows)])

    got, want = vectorised(), loop()
    diff = float(np.max(np.abs(got[:args.loop_rows] / want - 1.0)))
    assert diff < 1e-9, diff
    t_vec = best_of(vectorised, args.repeat)
    t_loop = best_of(loop, args.repeat) * args.rows / args.loop_rows
    print(f"elastic plan, {args.rows:,} designs: vectorised {t_vec:.2f} s ({args.rows / t_vec:,.0f} designs/s), "
          f"per-row loop {t_loop:.1f} s scaled from {args.loop_rows:,} rows ({args.rows / t_loop:,.0f} designs/s), "
          f"ratio {t_loop / t_vec:.1f}x; max rel. diff {diff:.1e}")


if __name__ == "__main__":
    main()
