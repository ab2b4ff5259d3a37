"""Monte Carlo of a job under a failure rate that changes over the run, event by event: the one event loop of every
schedule's simulation (failure phases, a Weibull intensity from the start, background writes, preemptions, a
downtime).

Written apart from :mod:`ckptplan.engine.phases` (its own hazard inversion, no shared helper) so that the two
check each other. Every run: from wall time 0, the job starts a segment with the interval of the phase it is in,
saves after ``T + C`` unless an interruption strikes first; a failure loses the work since the last checkpoint and
sends it, after a downtime ``D`` (a wait for a node, no failure in it; 0 by default), into a restart of length ``R``
(itself restarted by a failure, or a preemption), after which it starts a segment again from its last checkpoint
with the interval of the phase it is then in. Failures arrive as a Poisson process of rate ``factor_j / M`` in
phase ``j`` (drawn by inverting the cumulative rate), or of any intensity ``next_failure`` draws.

A background write (asynchronous save, ``W > 0``): from a durable checkpoint the next is durable after
``T + C + W slowdown`` (training runs slowed during the write), after a restore after ``T + C + W`` (no write
pending), as :mod:`ckptplan.engine.schedule_async` models it. A preemption (``next_preemption``) with a notice that
covers the save (``keep``) keeps the work done (a save ``C`` on notice) and otherwise loses it, then a wait ``Wc``
for capacity and a restart; a preemption during a restart costs ``Wc`` and a new restart (the spot model,
:mod:`ckptplan.engine.preemption`).

The last segment: ``last="share"`` follows the constant-rate model's convention (when the work left ``w`` is below
the interval ``T``, one full segment of ``T`` runs, its retries too, and only the share ``w / T`` of its wall time
counts); ``last="exact"`` computes only the work left and ends the job without a save (as the spot simulation,
:mod:`ckptplan.engine.spot_montecarlo`), and gives up runs past ``cap`` (wall ``inf``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["phase_failure_draw", "phase_next_failure", "simulate_events", "simulate_schedule"]


def phase_next_failure(starts: Sequence[float], factors: Sequence[float], M: float
                       ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The next failure after wall time ``t`` under failure phases (rate ``factor_j / M`` from ``starts[j]``), given a
    unit exponential ``E`` per run: the cumulative rate ``H(t)`` inverted at ``H(t) + E`` (``H`` piecewise linear)."""
    bounds = np.asarray(starts, dtype=float)
    rates = np.asarray(factors, dtype=float) / M
    cum = np.concatenate([[0.0], np.cumsum(rates[:-1] * np.diff(bounds))])

    def next_failure(t: np.ndarray, e: np.ndarray) -> np.ndarray:
        i = np.searchsorted(bounds, t, side="right") - 1
        h = cum[i] + rates[i] * (t - bounds[i]) + e
        k = np.searchsorted(cum, h, side="right") - 1
        return bounds[k] + (h - cum[k]) / rates[k]

    return next_failure


def phase_failure_draw(starts: Sequence[float], factors: Sequence[float], M: float
                       ) -> Callable[[Any], Callable[[np.ndarray], np.ndarray]]:
    """The draw of the next failure after ``t`` under failure phases (:func:`phase_next_failure`), bound to a
    generator: ``E`` a unit exponential draw of it."""
    inverse = phase_next_failure(starts, factors, M)

    def bind(rng: Any) -> Callable[[np.ndarray], np.ndarray]:
        return lambda t: inverse(t, rng.exponential(size=t.size))

    return bind


def simulate_schedule(work: float, intervals: Sequence[float], C: float, M: float, R: float,
                      starts: Sequence[float], factors: Sequence[float], runs: int = 10_000,
                      seed: int = 0) -> dict[str, np.ndarray]:
    """Simulated wall times (and failures, those during restarts included) of ``runs`` jobs under the schedule, vectorised over runs.

    Units as :func:`ckptplan.engine.phases.schedule_expectation`. Returns ``wall`` and ``failures`` arrays.
    """
    next_failure = phase_failure_draw(starts, factors, M)(np.random.default_rng(seed))
    out = simulate_events(work, starts, intervals, C, R, next_failure, runs)
    return {"wall": out["wall"], "failures": out["failures"]}


class _Runs:
    """The state of every run of the loop: wall time, work left, the last segment's start and share, the interval
    of the segment under way, whether the job is in steady state (a write pending), the tallies."""

    def __init__(self, runs: int, work: float) -> None:
        self.t, self.left = np.zeros(runs), np.full(runs, float(work))
        self.final, self.steady = np.zeros(runs, dtype=bool), np.ones(runs, dtype=bool)
        self.t0, self.share, self.T_now = np.zeros(runs), np.ones(runs), np.zeros(runs)
        self.tally = {k: np.zeros(runs) for k in ("failures", "preemptions", "wait")}
        self.wall = np.full(runs, np.nan)
        self.active = np.ones(runs, dtype=bool)


def _restart(s: _Runs, idx: np.ndarray, R: float, D: float, Wc: float, cap: float,
             next_failure: Callable[[np.ndarray], np.ndarray],
             next_preemption: Callable[[np.ndarray], np.ndarray] | None) -> None:
    """Restarts of the runs ``idx``, each restarted by a failure (after ``D``) or a preemption (after ``Wc``)."""
    while idx.size:
        f = next_failure(s.t[idx])
        p = next_preemption(s.t[idx]) if next_preemption is not None else None
        strike = f if p is None else np.minimum(f, p)
        through = strike >= s.t[idx] + R
        s.t[idx[through]] += R
        hit = idx[~through]
        by_f = np.ones(hit.size, dtype=bool) if p is None else (f < p)[~through]
        s.tally["failures"][hit[by_f]] += 1
        s.tally["preemptions"][hit[~by_f]] += 1
        s.tally["wait"][hit[~by_f]] += Wc
        s.t[hit] = f[~through] + D if p is None else np.where(by_f, f[~through] + D, p[~through] + Wc)
        idx = hit[s.t[hit] < cap]


def simulate_events(work: float, starts: Sequence[float], intervals: Sequence[float], C: float, R: float,
                    next_failure: Callable[[np.ndarray], np.ndarray], runs: int, *, W: float = 0.0,
                    slowdown: float = 1.0, D: float = 0.0,
                    next_preemption: Callable[[np.ndarray], np.ndarray] | None = None, keep: bool = False,
                    Wc: float = 0.0, last: str = "share", cap: float = np.inf) -> dict[str, np.ndarray]:
    """The event loop of every schedule (module notes), vectorised over ``runs``: ``next_failure(t)`` draws, per
    run, the next failure after wall time ``t`` (a Poisson process of any intensity: failure phases here, a
    Weibull intensity from the job's start in :mod:`engine.weibull_montecarlo`); ``next_preemption(t)`` the next
    preemption (none when None). Returns ``wall`` (``inf`` when given up), ``failures`` (those during restarts
    included), ``preemptions`` and ``wait`` (for capacity)."""
    bounds, T_by = np.asarray(starts, dtype=float), np.asarray(intervals, dtype=float)
    share_last = {"share": True, "exact": False}[last]
    s = _Runs(runs, work)
    while s.active.any():
        a = np.flatnonzero(s.active)
        fresh = a[~s.final[a]] if share_last else a
        s.T_now[fresh] = T_by[np.searchsorted(bounds, s.t[fresh], side="right") - 1]
        if share_last:
            lst = fresh[s.left[fresh] <= s.T_now[fresh]]
            s.final[lst], s.t0[lst], s.share[lst] = True, s.t[lst], s.left[lst] / s.T_now[lst]
            end = s.t[a] + s.T_now[a] + C + W * np.where(s.steady[a], slowdown, 1.0)
        else:
            s.final[a] = s.left[a] <= s.T_now[a]
            end = s.t[a] + np.where(s.final[a], s.left[a], s.T_now[a] + C + W * np.where(s.steady[a], slowdown, 1.0))
        f = next_failure(s.t[a])
        p = next_preemption(s.t[a]) if next_preemption is not None else None
        ok = (f if p is None else np.minimum(f, p)) >= end
        done = a[ok]
        s.t[done], s.steady[done] = end[ok], True
        if share_last:
            normal = done[~s.final[done]]
            s.left[normal] -= s.T_now[normal]
            finished = done[s.final[done]]
            s.wall[finished] = s.t0[finished] + s.share[finished] * (s.t[finished] - s.t0[finished])
            s.active[finished] = False
        else:
            s.left[done] -= np.where(s.final[done], s.left[done], s.T_now[done])
        by_f = ~ok if p is None else ~ok & (f < p)
        s.tally["failures"][a[by_f]] += 1
        s.t[a[by_f]], s.steady[a[by_f]] = f[by_f] + D, False
        if p is not None:
            _preempt(s, a, ~ok & (p <= f), p, C, Wc, keep)
        back = a[~ok]
        _restart(s, back if share_last else back[s.left[back] > 1e-9], R, D, Wc, cap, next_failure, next_preemption)
        if not share_last:
            s.active = (s.left > 1e-9) & (s.t < cap)
    if not share_last:
        s.wall = np.where(s.left <= 1e-9, s.t, np.inf)
    return {"wall": s.wall, **s.tally}


def _preempt(s: _Runs, a: np.ndarray, by_p: np.ndarray, p: np.ndarray, C: float, Wc: float, keep: bool) -> None:
    """Preemptions of the runs ``a[by_p]`` at ``p``: with a notice that covers the save the work done is kept (a save
    ``C`` on notice), otherwise lost; then a wait ``Wc`` for capacity."""
    pre = a[by_p]
    s.tally["preemptions"][pre] += 1
    s.tally["wait"][pre] += Wc
    s.steady[pre] = False
    if keep:
        s.left[pre] -= np.minimum(p[by_p] - s.t[pre], np.minimum(s.T_now[pre], s.left[pre]))
        s.t[pre] = p[by_p] + C + Wc
    else:
        s.t[pre] = p[by_p] + Wc
