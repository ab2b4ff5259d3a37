"""Failure-phase schedules over many scenarios: the table search against a per-row scipy loop.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_schedules.py [--rows 100000] [--loop-rows 20]

``--rows`` scenarios of three phases (a burn-in at 1-6x the rate for its first 1-5 days, the constant rate, a
late phase at 0.5-3x from day 8-15; jobs of 100-300 h, saves of 0.5-10 min, job MTBF 5-100 h, restarts 0-30 min)
planned as schedules by ``engine.phases.optimal_schedules``, the one search ``ckptplan batch`` runs for every plain
phase row of a table (the batch's per-row deadline Monte Carlo is not part of this measurement).

The baseline plans ``--loop-rows`` of the same rows one at a time with scipy (bounded Brent for the single interval,
then ``scipy.optimize.minimize`` Nelder-Mead on the log-intervals from the phases' optima and the single interval) on
an expected wall time written independently of the engine: ``schedule_reference.expected_wall_time`` (beside this
script; it imports nothing from ckptplan), the model of ``engine/phases.py``'s module notes from its equations, with
the boundary state integrated exactly in closed form (no quadrature rule). Its time per row is extrapolated to
``--rows``. Printed first, a check that the two compute the same quantity: on ``--check-rows`` rows, the reference's
expected wall time at the table search's intervals against the totals the search reports and against
``engine.phases.schedule_expectation`` at its rule, and on the row that differs most, the engine's figure at more
nodes (the engine's fixed Gauss-Legendre rule is exact to rounding up to the first boundary and wherever the chain's
make-up does not change inside a piece; elsewhere its module notes state it within about 1e-6). Then: scenarios/s
of each search, the ratio, and the agreement of the expected wall times (the table search's relative difference to
the loop's: negative is a shorter wall time).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from schedule_reference import expected_wall_time, x_bisect

from ckptplan.engine import phases


def _loop_row(work, C, M, R, starts, factors):
    """One scenario planned with scipy on the reference expectation: the expected wall time of the schedule found."""
    from scipy.optimize import minimize, minimize_scalar

    def f(log_t):
        T = np.exp(np.clip(log_t, -50, 50))
        try:
            v = expected_wall_time(work, T, C, M, R, starts, factors)
        except (OverflowError, ValueError, ZeroDivisionError):   # a trial interval so long its odds overflow
            return np.inf
        return v if np.isfinite(v) and v >= work else np.inf

    own = np.array([(M / fj) * x_bisect(C * fj / M) for fj in factors])
    one = minimize_scalar(lambda v: f(np.full(len(own), v)), bounds=(math.log(own.min() / 4), math.log(own.max() * 4)),
                          method="bounded", options={"xatol": 1e-6}).x
    starts_x = [np.log(own), np.full(len(own), one)]
    x0 = min(starts_x, key=f)
    res = minimize(f, x0, method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-10 * f(x0), "maxiter": 2000})
    return f(min(starts_x + [res.x], key=f))


def _check(best, work, C, M, R, starts, factors, rows: int) -> None:
    """Print how the reference expectation agrees with the engine's at the table search's intervals."""
    T = best["intervals"]
    ref = np.array([expected_wall_time(work[i], T[i], C[i], M[i], R[i], starts[i], factors[i]) for i in range(rows)])
    eng = np.array([phases.schedule_expectation(work[i], T[i], C[i], M[i], R[i], starts[i], factors[i])["total"]
                    for i in range(rows)])
    rel_table, rel_eng = np.abs(best["schedule"]["total"][:rows] / ref - 1), np.abs(eng / ref - 1)
    w = int(np.argmax(rel_eng))
    more = [abs(phases.schedule_expectation(work[w], T[w], C[w], M[w], R[w], starts[w], factors[w], nodes)["total"]
                / ref[w] - 1) for nodes in (96, 384, 1536)]
    print(f"check: the reference expected wall time (written in benchmarks/, closed form) at the table search's "
          f"intervals, {rows:,} rows: largest relative difference to the search's reported totals {rel_table.max():.1e}, "
          f"to engine.phases.schedule_expectation ({phases.QUADRATURE_NODES} nodes) {rel_eng.max():.1e} (rows within "
          f"1e-12: {np.mean(rel_eng <= 1e-12):.0%}, within 1e-9: {np.mean(rel_eng <= 1e-9):.0%}); on row {w}, the "
          f"engine at 96 / 384 / 1,536 nodes: {more[0]:.1e} / {more[1]:.1e} / {more[2]:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--loop-rows", type=int, default=20)
    ap.add_argument("--check-rows", type=int, default=200, help="rows for the check of the reference expectation")
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)   # overflowing trial intervals: the searches score them inf
    rng = np.random.default_rng(7)
    n = args.rows
    work = rng.uniform(100, 300, n) * 60
    C, M, R = rng.uniform(0.5, 10, n), rng.uniform(5, 100, n) * 60, rng.uniform(0, 30, n)
    starts = np.column_stack([np.zeros(n), rng.uniform(24, 120, n) * 60, rng.uniform(192, 360, n) * 60])
    factors = np.column_stack([rng.uniform(1, 6, n), np.ones(n), rng.uniform(0.5, 3, n)])

    t0 = time.perf_counter()
    best = phases.optimal_schedules(work, C, M, R, starts, factors)
    t_table = time.perf_counter() - t0
    _check(best, work, C, M, R, starts, factors, min(args.check_rows, n))
    m = min(args.loop_rows, n)
    t0 = time.perf_counter()
    loop = np.array([_loop_row(work[i], C[i], M[i], R[i], starts[i], factors[i]) for i in range(m)])
    t_loop = (time.perf_counter() - t0) / m * n
    ok = np.isfinite(loop)   # inf: the loop found no schedule its expectation computes on
    T = best["intervals"]
    mine = np.array([expected_wall_time(work[i], T[i], C[i], M[i], R[i], starts[i], factors[i]) for i in range(m)])
    rel = mine[ok] / loop[ok] - 1
    single = best["schedule"]["total"] / best["single"]["total"] - 1
    print(f"schedules of {n:,} scenarios (3 phases): table search {n / t_table:,.0f} scenarios/s ({t_table:,.1f} s); "
          f"per-row scipy loop {n / t_loop:,.1f} scenarios/s (timed on {m:,} rows, extrapolated: {t_loop:,.0f} s); "
          f"ratio {t_loop / t_table:,.1f}x")
    print(f"expected wall time (the reference's, both schedules), table search against the loop on those {m:,} rows "
          f"({m - ok.sum()} left out: no finite answer from the loop): relative difference from "
          f"{rel.min():.1e} to {rel.max():.1e}; against the best single interval (all rows, the engine's figures): from "
          f"{single.min():.1e} to {single.max():.1e}; rows ending after phase 1: "
          f"{np.mean(best['schedule']['end_phase'] > 0):.0%}")

if __name__ == "__main__":
    main()
