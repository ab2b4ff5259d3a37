"""Monte Carlo of a job with asynchronous saves under failure phases (or another intensity), event by event, for the
deadline answer (the process of :mod:`ckptplan.engine.schedule_async`; written apart from it).

Every run: the job starts as the steady state does; from a durable checkpoint the next is durable after
``T + C + W slowdown`` (the interval of the phase it is in, the blocking save, the write during which training runs
slowed), after a restore after ``T + C + W`` (no write pending), unless a failure strikes first: then it falls back to
the last durable checkpoint and restarts (``R``, restarted by a failure). The last interval follows the constant-rate
model's convention: when the work left ``w`` is below the interval ``T``, one full interval runs (its retries too) and
the share ``w / T`` of its wall time counts. The event loop is the one of every schedule,
:func:`ckptplan.engine.phases_montecarlo.simulate_events`, with the write and its slowdown.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .phases_montecarlo import phase_failure_draw, simulate_events

__all__ = ["simulate_async_schedule"]


def simulate_async_schedule(work: float, starts: Sequence[float], factors: Sequence[float],
                            intervals: Sequence[float], C: float, M: float, R: float, W: float, slowdown: float,
                            runs: int = 4000, seed: int = 0,
                            failure_draw: Callable[[Any], Callable[[np.ndarray], np.ndarray]] | None = None
                            ) -> dict[str, np.ndarray]:
    """Per run: ``wall`` and ``failures`` (restarts' included). ``failure_draw(rng)``: another intensity's draw of
    the next failure after ``t`` (the phases' ``starts`` then only choose the intervals)."""
    rng = np.random.default_rng(seed)
    draw = failure_draw if failure_draw is not None else phase_failure_draw(starts, factors, M)
    out = simulate_events(work, starts, intervals, C, R, draw(rng), runs, W=W, slowdown=slowdown)
    return {"wall": out["wall"], "failures": out["failures"]}
