"""Monte Carlo of a job under a Weibull failure intensity measured from its start, event by event.

Written apart from :mod:`ckptplan.engine.weibull_schedule` (no piecewise grid, no shared helper) so that
the two check each other. Failures: a Poisson process of cumulative intensity ``Lambda(t) = (t/eta)^k``
from the job's start (``eta = M / Gamma(1 + 1/k)``), never reset; the next failure after ``t`` is
``eta (Lambda(t) + E)^(1/k)``, ``E`` a unit exponential draw. Every run: from wall time 0 the job starts
a segment with the interval of the window it is in, saves after ``T + C`` unless a failure strikes first;
a failure sends it into a restart ``R`` (itself restarted by a failure), then a new segment from its last
checkpoint. The last segment follows the constant-rate model's convention: when the work left ``w`` is
below the interval ``T``, one full segment of ``T`` runs (its retries too) and the share ``w / T`` of its
wall time counts.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["simulate_weibull_schedule"]


def simulate_weibull_schedule(work: float, starts: Sequence[float], intervals: Sequence[float], C: float, M: float,
                              R: float, k: float, runs: int = 10_000, seed: int = 0) -> dict[str, np.ndarray]:
    """Simulated wall times and failures (restarts' included) of ``runs`` jobs, vectorised over runs."""
    rng = np.random.default_rng(seed)
    eta = M / math.gamma(1.0 + 1.0 / k)
    bounds, T_by = np.asarray(starts, dtype=float), np.asarray(intervals, dtype=float)

    def next_failure(t: np.ndarray) -> np.ndarray:
        return eta * ((t / eta) ** k + rng.exponential(size=t.size)) ** (1.0 / k)

    t, left = np.zeros(runs), np.full(runs, float(work))
    final, t0, share, T_now = np.zeros(runs, dtype=bool), np.zeros(runs), np.ones(runs), np.zeros(runs)
    fails, wall, active = np.zeros(runs), np.full(runs, np.nan), np.ones(runs, dtype=bool)
    while active.any():
        a = np.flatnonzero(active)
        fresh = a[~final[a]]
        T_now[fresh] = T_by[np.searchsorted(bounds, t[fresh], side="right") - 1]
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
        while hit.size:                               # restarts, each restarted by a failure during it
            again = next_failure(t[hit])
            through = again >= t[hit] + R
            t[hit[through]] += R
            fails[hit[~through]] += 1
            t[hit[~through]] = again[~through]
            hit = hit[~through]
    return {"wall": wall, "failures": fails}
