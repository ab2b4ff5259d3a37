"""Failure-phase schedules over many scenarios: the table search against a per-row scipy loop.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_schedules.py [--rows 100000] [--loop-rows 20]

``--rows`` scenarios of three phases (a burn-in at 1-6x the rate for its first 1-5 days, the constant rate, a
late phase at 0.5-3x from day 8-15; jobs of 100-300 h, saves of 0.5-10 min, job MTBF 5-100 h, restarts 0-30 min)
planned as schedules by ``engine.phases.optimal_schedules``, the one search ``ckptplan batch`` runs for every plain
phase row of a table (the batch's per-row deadline Monte Carlo is not part of this measurement). The baseline plans
``--loop-rows`` of the same rows one at a time with scipy (bounded Brent for the single interval, then
``scipy.optimize.minimize`` Nelder-Mead on the log-intervals from the phases' optima and the single interval) on
the engine's one-scenario exact expectation ``engine.phases.schedule_expectation`` (not the table kernels); its time
per row is extrapolated to ``--rows``. Printed: scenarios/s of each, the ratio, and the agreement of the expected
wall times (the table search's relative difference to the loop's: negative is a shorter wall time).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from ckptplan.engine import phases


def _x_bisect(c: float) -> float:
    """The root in (0, 1) of (1 - x) exp(x + c) = 1 (a phase's exact optimum over M), by bisection."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if (1 - mid) * math.exp(mid + c) > 1:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _loop_row(work, C, M, R, starts, factors):
    """One scenario planned with scipy, written here: the expected wall time of the schedule found."""
    from scipy.optimize import minimize, minimize_scalar

    def f(log_t):
        T = np.exp(np.clip(log_t, -50, 50))
        v = phases.schedule_expectation(work, T, C, M, R, starts, factors, phases.SEARCH_NODES)["total"]
        return v if np.isfinite(v) else np.inf

    own = np.array([(M / fj) * _x_bisect(C * fj / M) for fj in factors])
    one = minimize_scalar(lambda v: f(np.full(len(own), v)), bounds=(math.log(own.min() / 4), math.log(own.max() * 4)),
                          method="bounded", options={"xatol": 1e-6}).x
    starts_x = [np.log(own), np.full(len(own), one)]
    x0 = min(starts_x, key=f)
    res = minimize(f, x0, method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-10 * f(x0), "maxiter": 2000})
    x = min(starts_x + [res.x], key=f)
    return phases.schedule_expectation(work, np.exp(x), C, M, R, starts, factors)["total"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--loop-rows", type=int, default=20)
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
    m = min(args.loop_rows, n)
    t0 = time.perf_counter()
    loop = np.array([_loop_row(work[i], C[i], M[i], R[i], starts[i], factors[i]) for i in range(m)])
    t_loop = (time.perf_counter() - t0) / m * n
    ok = loop >= work[:m]   # a loop result below the work: its search ran into intervals the expectation breaks on
    rel = best["schedule"]["total"][:m][ok] / loop[ok] - 1
    single = best["schedule"]["total"] / best["single"]["total"] - 1
    print(f"schedules of {n:,} scenarios (3 phases): table search {n / t_table:,.0f} scenarios/s ({t_table:,.1f} s); "
          f"per-row scipy loop {n / t_loop:,.1f} scenarios/s (timed on {m:,} rows, extrapolated: {t_loop:,.0f} s); "
          f"ratio {t_loop / t_table:,.1f}x")
    print(f"expected wall time, table search against the loop on those {m:,} rows ({m - ok.sum()} left out: the "
          f"loop's answer below the work): relative difference from "
          f"{rel.min():.1e} to {rel.max():.1e}; against the best single interval (all rows): from {single.min():.1e} "
          f"to {single.max():.1e}; rows ending after phase 1: {np.mean(best['schedule']['end_phase'] > 0):.0%}")


if __name__ == "__main__":
    main()
