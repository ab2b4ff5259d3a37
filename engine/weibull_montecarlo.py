"""Monte Carlo of a job under a Weibull failure intensity measured from its start, event by event.

Written apart from :mod:`ckptplan.engine.weibull_schedule` (no piecewise grid) so that the two check each
other; the event loop is the failure-phases simulation's (:func:`engine.phases_montecarlo.simulate_events`),
with this intensity's draw. Failures: a Poisson process of cumulative intensity ``Lambda(t) = (t/eta)^k``
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
from typing import Any, Callable, Sequence

import numpy as np

from .phases_montecarlo import simulate_events

__all__ = ["simulate_weibull_schedule", "weibull_failure_draw", "weibull_next_failure"]


def weibull_next_failure(M: float, k: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The next failure after wall time ``t`` under this intensity (module notes), given a unit exponential ``E`` per
    run: ``eta (Lambda(t) + E)^(1/k)``."""
    eta = M / math.gamma(1.0 + 1.0 / k)
    return lambda t, e: eta * ((t / eta) ** k + e) ** (1.0 / k)


def weibull_failure_draw(M: float, k: float) -> Callable[[Any], Callable[[np.ndarray], np.ndarray]]:
    """The draw of the next failure after ``t`` (:func:`weibull_next_failure`), bound to a generator: what
    :func:`ckptplan.engine.schedule_interruptions_montecarlo.simulate_interrupted_schedule` takes for a downtime."""
    inverse = weibull_next_failure(M, k)

    def bind(rng: Any) -> Callable[[np.ndarray], np.ndarray]:
        return lambda t: inverse(t, rng.exponential(size=t.size))

    return bind


def simulate_weibull_schedule(work: float, starts: Sequence[float], intervals: Sequence[float], C: float, M: float,
                              R: float, k: float, runs: int = 10_000, seed: int = 0) -> dict[str, np.ndarray]:
    """Simulated wall times and failures (restarts' included) of ``runs`` jobs, vectorised over runs."""
    next_failure = weibull_failure_draw(M, k)(np.random.default_rng(seed))
    out = simulate_events(work, starts, intervals, C, R, next_failure, runs)
    return {"wall": out["wall"], "failures": out["failures"]}
