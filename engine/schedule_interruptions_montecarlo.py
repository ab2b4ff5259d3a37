"""Monte Carlo of a job under failure phases, preemptions and a downtime, event by event, for the deadline answer
(the process of :mod:`ckptplan.engine.schedule_interruptions`; written apart from it, its own hazard inversion).

Every run: from wall time 0 the job starts a segment with the interval of the phase it is in and saves after
``T + C`` unless an interruption strikes first; the last segment computes only the work left and ends the job
without a save (as the spot simulation, :mod:`ckptplan.engine.spot_montecarlo`). A failure (rate ``f_j / M`` in
phase ``j``) loses the work since the last checkpoint, then a downtime ``D`` and a restart ``R``; a preemption (rate
``1 / P``) with a notice ``N >= C`` keeps the work done (a save ``C`` on notice), otherwise loses it, then a wait
``Wc`` for capacity and a restart. A failure during a restart costs ``D`` and a new restart, a preemption ``Wc`` and
a new restart. Runs past ``50 x`` the failure-free wall time plus 50 restarts' worth are given up (wall ``inf``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["simulate_interrupted_schedule"]


def simulate_interrupted_schedule(work: float, starts: Sequence[float], factors: Sequence[float],
                                  intervals: Sequence[float], C: float, M: float, R: float, P: float, N: float,
                                  Wc: float, D: float = 0.0, runs: int = 4000, seed: int = 0,
                                  failure_draw: Callable[[Any], Callable[[np.ndarray], np.ndarray]] | None = None
                                  ) -> dict[str, np.ndarray]:
    """Per run: ``wall`` (``inf`` when given up), ``failures``, ``preemptions`` and ``wait`` (capacity).

    ``failure_draw(rng)``, when given, returns the draw of the next failure after ``t`` of another intensity (a
    Weibull intensity from the job's start: :func:`ckptplan.engine.weibull_montecarlo.weibull_failure_draw`); the
    phases' ``starts`` then only choose the intervals (``factors`` unused)."""
    rng = np.random.default_rng(seed)
    bounds = np.asarray(starts, dtype=float)
    rates = np.asarray(factors, dtype=float) / M
    cum = np.concatenate([[0.0], np.cumsum(rates[:-1] * np.diff(bounds))])
    T_by = np.asarray(intervals, dtype=float)
    pi = 0.0 if not np.isfinite(P) else 1.0 / P
    keep = N >= C

    def next_failure(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(bounds, t, side="right") - 1
        h = cum[i] + rates[i] * (t - bounds[i]) + rng.exponential(size=t.size)
        k = np.searchsorted(cum, h, side="right") - 1
        return bounds[k] + (h - cum[k]) / rates[k]

    if failure_draw is not None:
        next_failure = failure_draw(rng)  # noqa: F811 (another intensity replaces the phases')

    def next_preemption(t: np.ndarray) -> np.ndarray:
        return t + (rng.exponential(1.0 / pi, t.size) if pi > 0 else np.inf)

    t, left = np.zeros(runs), np.full(runs, float(work))
    tally = {k: np.zeros(runs) for k in ("failures", "preemptions", "wait")}
    cap = 50.0 * (work * (1.0 + C / T_by.min()) + 50.0 * (R + D + Wc))
    active = np.ones(runs, dtype=bool)

    def restart(idx: np.ndarray) -> None:
        while idx.size:
            f, p = next_failure(t[idx]), next_preemption(t[idx])
            done = np.minimum(f, p) >= t[idx] + R
            t[idx[done]] += R
            hit, by_f = idx[~done], (f < p)[~done]
            tally["failures"][hit[by_f]] += 1
            tally["preemptions"][hit[~by_f]] += 1
            tally["wait"][hit[~by_f]] += Wc
            t[hit] = np.where(by_f, f[~done] + D, p[~done] + Wc)
            idx = hit[t[hit] < cap]

    while active.any():
        a = np.flatnonzero(active)
        T = T_by[np.searchsorted(bounds, t[a], side="right") - 1]
        last = left[a] <= T
        length = np.where(last, left[a], T + C)
        f, p = next_failure(t[a]), next_preemption(t[a])
        ok = np.minimum(f, p) >= t[a] + length
        done = a[ok]
        t[done] += length[ok]
        left[done] -= np.where(last[ok], left[done], T[ok])
        by_f, by_p = ~ok & (f < p), ~ok & (p <= f)
        tally["failures"][a[by_f]] += 1
        t[a[by_f]] = f[by_f] + D
        pre = a[by_p]
        tally["preemptions"][pre] += 1
        tally["wait"][pre] += Wc
        if keep:
            left[pre] -= np.minimum(p[by_p] - t[pre], np.minimum(T[by_p], left[pre]))
            t[pre] = p[by_p] + C + Wc
        else:
            t[pre] = p[by_p] + Wc
        back = a[~ok]
        restart(back[left[back] > 1e-9])
        active = (left > 1e-9) & (t < cap)
    wall = np.where(left <= 1e-9, t, np.inf)
    return {"wall": wall, **tally}
