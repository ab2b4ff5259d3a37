"""Monte Carlo of a job under failure phases, preemptions and a downtime, event by event, for the deadline answer
(the process of :mod:`ckptplan.engine.schedule_interruptions`; written apart from it).

Every run: from wall time 0 the job starts a segment with the interval of the phase it is in and saves after
``T + C`` unless an interruption strikes first; the last segment computes only the work left and ends the job
without a save (as the spot simulation, :mod:`ckptplan.engine.spot_montecarlo`). A failure (rate ``f_j / M`` in
phase ``j``) loses the work since the last checkpoint, then a downtime ``D`` and a restart ``R``; a preemption (rate
``1 / P``) with a notice ``N >= C`` keeps the work done (a save ``C`` on notice), otherwise loses it, then a wait
``Wc`` for capacity and a restart. A failure during a restart costs ``D`` and a new restart, a preemption ``Wc`` and
a new restart. Runs past ``50 x`` the failure-free wall time plus 50 restarts' worth are given up (wall ``inf``).
The event loop is the one of every schedule, :func:`ckptplan.engine.phases_montecarlo.simulate_events` (its
``last="exact"`` convention, with preemptions and the downtime).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .phases_montecarlo import phase_failure_draw, simulate_events

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
    draw = failure_draw if failure_draw is not None else phase_failure_draw(starts, factors, M)
    next_failure = draw(rng)
    pi = 0.0 if not np.isfinite(P) else 1.0 / P

    def next_preemption(t: np.ndarray) -> np.ndarray:
        return t + (rng.exponential(1.0 / pi, t.size) if pi > 0 else np.inf)

    cap = 50.0 * (work * (1.0 + C / np.asarray(intervals, dtype=float).min()) + 50.0 * (R + D + Wc))
    out = simulate_events(work, starts, intervals, C, R, next_failure, runs, D=D, next_preemption=next_preemption,
                          keep=N >= C, Wc=Wc, last="exact", cap=cap)
    return {k: out[k] for k in ("wall", "failures", "preemptions", "wait")}
