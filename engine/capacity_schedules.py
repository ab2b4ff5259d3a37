"""The interval schedules of the spot / on-demand / fallback comparison (:mod:`ckptplan.engine.spot`) when the job's
failure rate changes over the run: failure phases (:mod:`ckptplan.engine.phases`) or a Weibull intensity from the
job's start (:mod:`ckptplan.engine.weibull_schedule`).

Each policy runs the schedule ``ckptplan plan`` reports for its capacity, planned for the optimum (no stated interval
held, as the constant-rate comparison runs the optimum interval whatever the scenario chooses):

* **on-demand**: the schedule planned for failures alone: :func:`ckptplan.engine.phases.optimal_schedule` (with a
  downtime :func:`ckptplan.engine.schedule_interruptions.interruption_optimal_schedule` without preemptions), or
  :func:`ckptplan.engine.weibull_schedule.optimal_weibull_schedule`;
* **spot**: the schedule planned for failures and preemptions:
  :func:`ckptplan.engine.schedule_interruptions.interruption_optimal_schedule`, or
  :func:`~ckptplan.engine.weibull_schedule.optimal_weibull_schedule` with the preemptions;
* **fallback**: spot's schedule until it moves, then on-demand's (both indexed by the wall time from the job's start).

The fallback's pace ``rho_od`` (on-demand expected wall time per unit of work, in its rule ``deadline - t - w rho_od <
threshold``) is the on-demand schedule's expected wall time over the whole run divided by the work: the engine's
expectations start at the job's start, and an expectation from any wall time and work left would cost one schedule
expectation per run and round. During a burn-in the rest of the run is cheaper than the whole run's average, so the
rule counts the work left a little slow and moves a little early; the threshold is searched to be on time as often
as on-demand whatever the pace, so the pace only moves how early it switches.

Failures: a Poisson process of the changing intensity, the next one after wall time ``t`` drawn exactly by inverting
the cumulative intensity at ``H(t) + E`` (:func:`ckptplan.engine.phases_montecarlo.phase_next_failure`,
:func:`ckptplan.engine.weibull_montecarlo.weibull_next_failure`), struck only while the job holds its GPUs and is
exposed. Preemptions keep their constant rate (phases and the shape scale failures only). Without preemptions
(``P = inf``) spot's schedule is on-demand's: the two policies differ by their price only.

A failure process that is constant after all (every phase at one factor ``f``, one phase, a shape of 1) is the
constant rate ``f / M``: :func:`failure_process` says so and the comparison is the constant-rate one exactly.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["capacity_schedules", "failure_process"]


def failure_process(M: float, phase_starts: Sequence[float] | None = None, phase_factors: Sequence[float] | None = None,
                    weibull_shape: float | None = None) -> tuple[float, tuple[float, ...], tuple[float, ...], float | None]:
    """``(M_constant, starts, factors, shape)``: the job failure rate as the comparison plans it (minutes). Phases:
    a phase at 0 with the constant rate ahead of a first phase that starts later (as ``ckptplan plan``); phases all
    at one factor ``f`` are the constant rate (``M / f``, no phases); a shape below 1 is kept, else dropped. Without
    either, ``(M, (), (), None)``."""
    if weibull_shape is not None and weibull_shape == weibull_shape and weibull_shape < 1.0:
        return M, (), (), float(weibull_shape)
    if not phase_starts:
        return M, (), (), None
    s, f = [float(x) for x in phase_starts], [float(x) for x in phase_factors or ()]
    if s[0] > 0:
        s, f = [0.0] + s, [1.0] + f
    if len(set(f)) == 1:
        return M / f[0], (), (), None
    return M, tuple(s), tuple(f), None


def _phase_schedules(work: float, C: float, M: float, R: float, P: float, N: float, Wc: float, D: float,
                     s: tuple[float, ...], f: tuple[float, ...]) -> dict[str, Any]:
    from .phases import optimal_schedule
    from .schedule_interruptions import interruption_optimal_schedule

    with np.errstate(all="ignore"):
        od = (optimal_schedule(work, C, M, R, s, f) if D == 0
              else interruption_optimal_schedule(work, C, M, R, s, f, math.inf, 0.0, 0.0, D))
        spot = interruption_optimal_schedule(work, C, M, R, s, f, P, N, Wc, D) if math.isfinite(P) else od
    starts = np.asarray(s, dtype=float)
    return {"starts_od": starts, "T_od_by": np.asarray(od["intervals"], dtype=float), "starts_spot": starts,
            "T_spot_by": np.asarray(spot["intervals"], dtype=float), "wall_od": float(od["schedule"]["total"])}


def _weibull_schedules(work: float, C: float, M: float, R: float, P: float, N: float, Wc: float, D: float,
                       k: float) -> dict[str, Any]:
    from .weibull_schedule import optimal_weibull_schedule

    od = optimal_weibull_schedule(work, C, M, R, k, D)
    spot = optimal_weibull_schedule(work, C, M, R, k, D, P=P, N=N, Wc=Wc) if math.isfinite(P) else od
    return {"starts_od": np.asarray(od["starts"], dtype=float), "T_od_by": np.asarray(od["intervals"], dtype=float),
            "starts_spot": np.asarray(spot["starts"], dtype=float),
            "T_spot_by": np.asarray(spot["intervals"], dtype=float), "wall_od": float(od["schedule"]["total"])}


def capacity_schedules(work: float, C: float, M: float, R: float, P: float, N: float, Wc: float, D: float,
                       starts: Sequence[float], factors: Sequence[float], shape: float | None) -> dict[str, Any]:
    """The on-demand and spot schedules (module notes) of a job whose failure rate changes (``starts``/``factors``
    from :func:`failure_process`, or ``shape``); minutes. Returns ``starts_od``, ``T_od_by``, ``starts_spot``,
    ``T_spot_by`` (window starts and intervals), ``rho_od`` (the on-demand schedule's expected wall time per unit of
    work over the whole run) and ``next_failure(t, E)`` (the failure draw)."""
    from .phases_montecarlo import phase_next_failure
    from .weibull_montecarlo import weibull_next_failure

    if shape is not None:
        out = _weibull_schedules(work, C, M, R, P, N, Wc, D, shape)
        out["next_failure"] = weibull_next_failure(M, shape)
    else:
        out = _phase_schedules(work, C, M, R, P, N, Wc, D, tuple(starts), tuple(factors))
        out["next_failure"] = phase_next_failure(starts, factors, M)
    out["rho_od"] = out.pop("wall_od") / work
    return out
