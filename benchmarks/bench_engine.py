"""Vectorised engine against plain per-row Python, measured side by side in one run.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_engine.py [--rows 1000000]

Three comparisons over the same random scenarios (stall, MTBF, restart):
1. closed forms (Young interval, Daly interval, first-order waste at Young, exact waste at Daly)
   through the vectorised API, against a plain loop of the same formulas written with `math`,
   and against the same formulas in bare numpy (no validation; checked equal to 1e-12): the cost
   of the API's validation and broadcasting;
2. the same closed forms called per row through the public API (what a naive caller does);
3. engine.evaluate() on a whole scenario table, against evaluate() row by row (timed on a sample
   and scaled per row).
Prints scenarios/second for each and the ratios. Absolute times drift on a shared machine; the
ratios are what the README and RESULTS.md quote.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _timing import best_of
import pandas as pd

from ckptplan import engine



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--loop-rows", type=int, default=200_000, help="rows for the plain-math loop")
    ap.add_argument("--api-loop-rows", type=int, default=5_000, help="rows for per-row API calls")
    ap.add_argument("--table-loop-rows", type=int, default=100, help="rows for per-row evaluate()")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    n = args.rows
    C = rng.uniform(0.1, 10, n)
    M = rng.uniform(60, 6000, n)
    R = rng.uniform(0, 30, n)

    def vectorised():
        ty = engine.young_interval(C, M)
        td = engine.daly_interval(C, M)
        w1 = engine.first_order_waste(ty, C, M)
        w2 = engine.waste_fraction(td, C, M, R)
        return ty, td, w1, w2

    def plain(k):
        out = []
        for c, m, r in zip(C[:k].tolist(), M[:k].tolist(), R[:k].tolist()):
            ty = math.sqrt(2 * c * m)
            x = c / (2 * m)
            td = math.sqrt(2 * c * m) * (1 + math.sqrt(x) / 3 + x / 9) - c if c < 2 * m else m
            w1 = c / ty + ty / (2 * m)
            w2 = 1 - td / (m * math.exp(r / m) * math.expm1((td + c) / m))
            out.append((ty, td, w1, w2))
        return out

    def bare_numpy():  # the same formulas in numpy, no validation: what the API adds over the arithmetic
        ty = np.sqrt(2.0 * C * M)
        x = C / (2.0 * M)
        td = np.where(C < 2.0 * M, ty * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - C, M)
        w1 = C / ty + ty / (2.0 * M)
        w2 = 1.0 - td / (M * np.exp(R / M) * np.expm1((td + C) / M))
        return ty, td, w1, w2

    def api_loop(k):
        for c, m, r in zip(C[:k].tolist(), M[:k].tolist(), R[:k].tolist()):
            ty = engine.young_interval(c, m)
            td = engine.daly_interval(c, m)
            engine.first_order_waste(ty, c, m)
            engine.waste_fraction(td, c, m, r)

    # correctness first: the vectorised result equals the plain loop
    ref = np.array(plain(1000))
    got = np.column_stack([np.asarray(a)[:1000] for a in vectorised()])
    assert np.allclose(ref, got, rtol=1e-12), "vectorised and plain results differ"
    for a, b in zip(vectorised(), bare_numpy()):
        np.testing.assert_allclose(a, b, rtol=1e-12)

    t_vec = best_of(vectorised)
    t_np = best_of(bare_numpy)
    t_plain = best_of(lambda: plain(args.loop_rows), repeat=1) * n / args.loop_rows
    t_api = best_of(lambda: api_loop(args.api_loop_rows), repeat=1) * n / args.api_loop_rows

    table = pd.DataFrame({
        "name": "s", "checkpoint_stall_min": C, "restart_min": R, "node_mtbf_h": M * 128 / 60, "nodes": 128,
        "useful_training_h": rng.uniform(100, 2000, n), "price_per_gpu_hour": 2.5,
    })
    t_eval = best_of(lambda: engine.evaluate(table), repeat=1)
    k = args.table_loop_rows
    t_eval_rows = best_of(lambda: [engine.evaluate(table.iloc[i:i + 1]) for i in range(k)], repeat=1) * n / k

    print(f"rows: {n:,}")
    print(f"closed forms, vectorised API      : {t_vec:8.3f} s  {n / t_vec / 1e6:8.2f} M scenarios/s")
    print(f"closed forms, plain math loop     : {t_plain:8.3f} s  {n / t_plain / 1e6:8.3f} M scenarios/s"
          f"  (timed on {args.loop_rows:,} rows)")
    print(f"closed forms, per-row API calls   : {t_api:8.3f} s  {n / t_api / 1e6:8.4f} M scenarios/s"
          f"  (timed on {args.api_loop_rows:,} rows)")
    print(f"evaluate(), whole table           : {t_eval:8.3f} s  {n / t_eval / 1e6:8.3f} M scenarios/s")
    print(f"evaluate(), row by row            : {t_eval_rows:8.1f} s  {n / t_eval_rows:10.0f} scenarios/s"
          f"  (timed on {k} rows)")
    print(f"closed forms, bare numpy          : {t_np:8.3f} s  {n / t_np / 1e6:8.2f} M scenarios/s")
    print(f"ratio vectorised API / bare numpy : {t_vec / t_np:8.2f}x  (the API's validation and broadcasting)")
    print(f"ratio vectorised / plain loop     : {t_plain / t_vec:8.1f}x")
    print(f"ratio vectorised / per-row API    : {t_api / t_vec:8.1f}x")
    print(f"ratio evaluate table / row by row : {t_eval_rows / t_eval:8.1f}x")


if __name__ == "__main__":
    main()
