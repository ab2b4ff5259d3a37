"""Monte Carlo of a job with asynchronous saves under failure phases (or another intensity), event by event, for the
deadline answer (the process of :mod:`ckptplan.engine.schedule_async`; written apart from it).

Every run: the job starts as the steady state does; from a durable checkpoint the next is durable after
``T + C + W slowdown`` (the interval of the phase it is in, the blocking save, the write during which training runs
slowed), after a restore after ``T + C + W`` (no write pending), unless a failure strikes first: then it falls back to
the last durable checkpoint and restarts (``R``, restarted by a failure). The last interval follows the constant-rate
model's convention: when the work left ``w`` is below the interval ``T``, one full interval runs (its retries too) and
the share ``w / T`` of its wall time counts (as :func:`ckptplan.engine.phases_montecarlo.simulate_events`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["simulate_async_schedule"]


def simulate_async_schedule(work: float, starts: Sequence[float], factors: Sequence[float],
                            intervals: Sequence[float], C: float, M: float, R: float, W: float, slowdown: float,
                            runs: int = 4000, seed: int = 0,
                            failure_draw: Callable[[Any], Callable[[np.ndarray], np.ndarray]] | None = None
                            ) -> dict[str, np.ndarray]:
    """Per run: ``wall`` and ``failures`` (restarts' included). ``failure_draw(rng)``: another intensity's draw of
    the next failure after ``t`` (the phases' ``starts`` then only choose the intervals)."""
    rng = np.random.default_rng(seed)
    bounds = np.asarray(starts, dtype=float)
    rates = np.asarray(factors, dtype=float) / M
    cum = np.concatenate([[0.0], np.cumsum(rates[:-1] * np.diff(bounds))])
    T_by = np.asarray(intervals, dtype=float)

    def piecewise(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(bounds, t, side="right") - 1
        h = cum[i] + rates[i] * (t - bounds[i]) + rng.exponential(size=t.size)
        k = np.searchsorted(cum, h, side="right") - 1
        return bounds[k] + (h - cum[k]) / rates[k]

    next_failure = failure_draw(rng) if failure_draw is not None else piecewise
    t, left = np.zeros(runs), np.full(runs, float(work))
    steady, final = np.ones(runs, dtype=bool), np.zeros(runs, dtype=bool)
    t0, share, T_now = np.zeros(runs), np.ones(runs), np.zeros(runs)
    fails, wall = np.zeros(runs), np.full(runs, np.nan)
    active = np.ones(runs, dtype=bool)
    while active.any():
        a = np.flatnonzero(active)
        fresh = a[~final[a]]
        T_now[fresh] = T_by[np.searchsorted(bounds, t[fresh], side="right") - 1]
        last = fresh[left[fresh] <= T_now[fresh]]
        final[last], t0[last], share[last] = True, t[last], left[last] / T_now[last]
        end = t[a] + T_now[a] + C + W * np.where(steady[a], slowdown, 1.0)
        strike = next_failure(t[a])
        ok = strike >= end
        done = a[ok]
        t[done], steady[done] = end[ok], True
        normal = done[~final[done]]
        left[normal] -= T_now[normal]
        finished = done[final[done]]
        wall[finished] = t0[finished] + share[finished] * (t[finished] - t0[finished])
        active[finished] = False
        hit = a[~ok]
        fails[hit] += 1
        t[hit], steady[hit] = strike[~ok], False
        while hit.size:                                 # restarts, each restarted by a failure
            back, again = t[hit] + R, next_failure(t[hit])
            through = again >= back
            fails[hit[~through]] += 1
            t[hit[through]] = back[through]
            t[hit[~through]] = again[~through]
            hit = hit[~through]
    return {"wall": wall, "failures": fails}
