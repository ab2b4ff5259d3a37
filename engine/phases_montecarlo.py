"""Monte Carlo of a job under a failure rate that changes over the run, event by event.

Written apart from :mod:`ckptplan.engine.phases` (its own hazard inversion, no shared helper) so
that the two check each other. Every run: from wall time 0, the job starts a segment with the
interval of the phase it is in, saves after ``T + C`` unless a failure strikes first; a failure
sends it into a restart of length ``R`` (itself restarted by a failure), after which it starts a
segment again from its last checkpoint with the interval of the phase it is then in. Failures
arrive as a Poisson process of rate ``factor_j / M`` in phase ``j`` (drawn by inverting the
cumulative rate). The last segment follows the constant-rate model's convention: when the work left
``w`` is below the interval ``T``, one full segment of ``T`` runs (its retries too) and only the
share ``w / T`` of its wall time counts.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["simulate_events", "simulate_schedule"]


def _hazard_tools(starts: np.ndarray, rates: np.ndarray):
    bounds = np.asarray(starts, dtype=float)
    cum = np.zeros(len(bounds))
    for i in range(1, len(bounds)):
        cum[i] = cum[i - 1] + rates[i - 1] * (bounds[i] - bounds[i - 1])

    def cumulative(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(bounds, t, side="right") - 1
        return cum[i] + rates[i] * (t - bounds[i])

    def inverse(h: np.ndarray) -> np.ndarray:
        i = np.searchsorted(cum, h, side="right") - 1
        return bounds[i] + (h - cum[i]) / rates[i]

    return cumulative, inverse


def simulate_schedule(work: float, intervals: Sequence[float], C: float, M: float, R: float,
                      starts: Sequence[float], factors: Sequence[float], runs: int = 10_000,
                      seed: int = 0) -> dict[str, np.ndarray]:
    """Simulated wall times (and failures, those during restarts included) of ``runs`` jobs under the schedule, vectorised over runs.

    Units as :func:`ckptplan.engine.phases.schedule_expectation`. Returns ``wall`` and ``failures`` arrays.
    """
    rng = np.random.default_rng(seed)
    bounds = np.asarray(starts, dtype=float)
    cumulative, inverse = _hazard_tools(bounds, np.asarray(factors, dtype=float) / M)

    def next_failure(t: np.ndarray) -> np.ndarray:
        return inverse(cumulative(t) + rng.exponential(size=t.size))

    return simulate_events(work, bounds, intervals, C, R, next_failure, runs)


def simulate_events(work: float, starts: Sequence[float], intervals: Sequence[float], C: float, R: float,
                    next_failure: Callable[[np.ndarray], np.ndarray], runs: int) -> dict[str, np.ndarray]:
    """The event loop of a schedule (module notes), vectorised over ``runs``: ``next_failure(t)`` draws, per
    run, the next failure after wall time ``t`` (a Poisson process of any intensity: failure phases here, a
    Weibull intensity from the job's start in :mod:`engine.weibull_montecarlo`). Returns ``wall`` and
    ``failures`` (those during restarts included)."""
    bounds = np.asarray(starts, dtype=float)
    T_by_phase = np.asarray(intervals, dtype=float)
    t = np.zeros(runs)
    left = np.full(runs, float(work))
    final = np.zeros(runs, dtype=bool)
    t0 = np.zeros(runs)
    share = np.ones(runs)
    T_now = np.zeros(runs)
    fails = np.zeros(runs)
    wall = np.full(runs, np.nan)
    active = np.ones(runs, dtype=bool)
    while active.any():
        a = np.flatnonzero(active)
        fresh = a[~final[a]]
        T_now[fresh] = T_by_phase[np.searchsorted(bounds, t[fresh], side="right") - 1]
        last = fresh[left[fresh] <= T_now[fresh]]
        final[last], t0[last], share[last] = True, t[last], left[last] / T_now[last]
        end = t[a] + T_now[a] + C
        strike = next_failure(t[a])
        ok = strike >= end
        done = a[ok]
        t[done] = end[ok]
        normal = done[~final[done]]
        left[normal] -= T_now[normal]
        finished = done[final[done]]
        wall[finished] = t0[finished] + share[finished] * (t[finished] - t0[finished])
        active[finished] = False
        hit = a[~ok]
        fails[hit] += 1
        t[hit] = strike[~ok]
        in_restart = hit
        while in_restart.size:                      # restarts, each restarted by a failure during it
            back = t[in_restart] + R
            again = next_failure(t[in_restart])
            through = again >= back
            fails[in_restart[~through]] += 1        # a failure during a restart counts too
            t[in_restart[through]] = back[through]
            t[in_restart[~through]] = again[~through]
            in_restart = in_restart[~through]
    return {"wall": wall, "failures": fails}
