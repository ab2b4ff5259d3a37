"""A Weibull failure intensity measured from the job's start (shape ``k <= 1``): an interval schedule for it.

**The process.** The job's failures form a non-homogeneous Poisson process whose cumulative intensity
runs from the job's start and is never reset by a failure (a "power-law process", Crow, "Reliability
analysis for complex, repairable systems", in Reliability and Biometry, SIAM, 1974)::

    Lambda(t) = (t / eta)^k,   lambda(t) = (k / eta) (t / eta)^(k - 1),   eta = M / Gamma(1 + 1/k)

``t`` the wall time from the job's start, ``M`` the job MTBF of the constant-rate model. The time to
the job's first failure is Weibull with shape ``k`` and mean ``M`` (the scale convention of
:class:`ckptplan.engine.montecarlo.FailureLaw`); ``k = 1`` is the constant rate ``1 / M`` (Daly's model).
With ``k < 1`` failures cluster early (burn-in of a new cluster or of new nodes) and thin out.

*Why the clock runs from the job's start (not a renewal process).* A job's failures are those of its
many nodes; a failure replaces or repairs one node of hundreds, so the fleet's age, hence its failure
intensity, carries on from where it was ("minimal repair"). A renewal process, whose clock restarts at
each failure (the deadline simulation's ``FailureLaw.weibull``), would make every failure reset the
whole job to the high hazard of age 0: a burst after every failure, the other reading of "clustered"
and not the burn-in the job starts with. Failures strike compute, saves and restarts alike; a
failure during a restart restarts it (as Daly's model).

**The schedule.** Wall time is split into windows ``[b_j, b_{j+1})``; a segment (compute ``T_j``,
then a save ``C``) uses the interval of the window it starts in (at the start, after a save, after a
restore), the policy of :mod:`ckptplan.engine.phases`. The intervals start from the first-order rule for
a time-varying rate: checkpoint frequency ``sqrt(lambda(t) / (2C))`` (Ling, Mi, Lin, "A variational
calculus approach to optimal checkpoint placement", IEEE TC 50(7), 2001), i.e. Young's interval at
the window's mean rate ``T_j = sqrt(2 C / lambda_j)``, ``lambda_j = (Lambda(b_{j+1}) - Lambda(b_j)) /
(b_{j+1} - b_j)``; windows grow geometrically so that ``T_j`` changes by :data:`WINDOW_STEP` from one to
the next. One factor scaling every ``T_j`` is then chosen to minimise the expected wall time below
(bounded Brent search), and the schedule kept only if it beats the best single interval under the same
process (searched the same way): the plan never costs more than one interval for the whole run.

Bougeret, Casanova, Rabie, Robert, Vivien, "Checkpointing strategies for parallel jobs", SC'11, prove
that a fixed interval is optimal for exponential failures (their Theorem 1), which is why ``k = 1``
returns today's plan (the exact optimum, :func:`ckptplan.engine.waste.exact_optimal_interval`) exactly;
for Weibull failures they give a dynamic programme (DPNextFailure) over the time since the last
failure of a rejuvenated processor, the renewal reading above. Their programme is **not** what is
implemented here: for this process its state would be (work left, wall time from the start), and a grid
fine enough for its expectation to agree with a Monte Carlo within a few standard errors costs more
than the windowed schedule's search below.

**The expectation.** The intensity is replaced by a piecewise-constant one that matches ``Lambda`` at
every grid point (the schedule's windows plus :data:`HAZARD_STEPS` steps of equal ``Lambda`` up to a
horizon past the job's end), and the exact expectation of a schedule under a piecewise-constant rate
(:func:`ckptplan.engine.phases.schedule_expectation`, Daly's model per phase with the boundary states
carried exactly) is taken. The one approximation is that step (and the phases model's: the job is
assumed running when the last phase it reaches begins). The tests hold it to a Monte Carlo of the
Weibull process itself within 3 standard errors, and refining the grid moves the answer by less than
1e-4 of it. Valid for ``0.2 <= k <= 1`` (a rising intensity, ``k > 1``, is refused). A downtime after every failure
(a wait for a node, no failure in it, as Bougeret et al.'s downtime) and preemptions (a constant rate ``1/P``, a notice that covers the
save costing no rework: the spot model of :mod:`ckptplan.engine.preemption`) are: the same grid under
:mod:`ckptplan.engine.schedule_interruptions`' expectation (its delay equations carry the downtime, the save on notice
and the wait for capacity across the grid's steps); so are background writes (asynchronous saves), under
:mod:`ckptplan.engine.schedule_async`' (not with a downtime nor preemptions: that expectation has neither state).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .errors import InputError
from .phases import SEARCH_NODES, schedule_expectation
from .schedule_async import async_schedule_expectation
from .schedule_interruptions import exposure, interruption_schedule_expectation
from .waste import exact_optimal_interval_kernel, time_breakdown_kernel

__all__ = ["EARLY_STEPS", "HAZARD_STEPS", "MAX_WINDOWS", "MIN_SHAPE", "WINDOW_STEP", "check_shape", "cumulative_hazard",
           "first_order_schedule", "optimal_weibull_schedule", "weibull_expectation", "weibull_rows", "weibull_scale"]

#: smallest shape planned (as the deadline simulation's Weibull law: smaller shapes put nearly all failures
#: in the first instants and the mean in astronomically rare long gaps)
MIN_SHAPE = 0.2
#: ratio of first-order intervals from one window to the next
WINDOW_STEP = 1.25
#: most windows in a schedule (the last one runs to the end of the job)
MAX_WINDOWS = 12
#: steps of equal cumulative intensity in the piecewise-constant grid the expectation is taken on
HAZARD_STEPS = 16
#: grid points between 0 and the first step, each half the next
EARLY_STEPS = 8


def check_shape(k: Any) -> float:
    """The shape as a float, or :class:`InputError` (``weibull_shape_from_start``)."""
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)) or not math.isfinite(k) \
            or not MIN_SHAPE <= k <= 1.0:
        raise InputError("weibull_shape_from_start", k, f"must be a number from {MIN_SHAPE:g} to 1 (a failure "
                         "intensity that falls from the job's start; 1 = constant rate)")
    return float(k)


def weibull_scale(M: Any, k: float) -> Any:
    """``eta = M / Gamma(1 + 1/k)``: the time to the first failure has mean ``M``."""
    return np.asarray(M, dtype=float) / math.gamma(1.0 + 1.0 / k)


def cumulative_hazard(t: Any, M: float, k: float) -> Any:
    """``Lambda(t) = (t / eta)^k``: expected failures from the job's start to wall time ``t``."""
    return (np.asarray(t, dtype=float) / weibull_scale(M, k)) ** k


def _windows(C: float, M: float, k: float, horizon: float) -> np.ndarray:
    """Window starts ``b_0 = 0 < b_1 < ...``: ``b_1`` Young's interval at ``M``, then geometric with the
    ratio that moves the first-order interval by WINDOW_STEP (``T ~ t^((1-k)/2)``), at most MAX_WINDOWS."""
    first = math.sqrt(2.0 * C * M)
    if horizon <= first:
        return np.array([0.0])
    ratio = WINDOW_STEP ** (2.0 / (1.0 - k))
    n = min(MAX_WINDOWS - 1, max(1, math.ceil(math.log(horizon / first) / math.log(ratio))))
    return np.concatenate([[0.0], first * (horizon / first) ** (np.arange(n) / n)])


def first_order_schedule(C: float, M: float, k: float, horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """(window starts, intervals ``sqrt(2C / lambda_j)``) up to ``horizon`` (module notes; one unit for all)."""
    b = _windows(C, M, k, horizon)
    ends = np.append(b[1:], max(horizon, b[-1] * 1.5))
    rate = (cumulative_hazard(ends, M, k) - cumulative_hazard(b, M, k)) / (ends - b)
    return b, np.sqrt(2.0 * C / rate)


def _grid(starts: np.ndarray, M: float, k: float, horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """(grid starts, rate factors) of the piecewise-constant intensity matching ``Lambda`` at each grid point."""
    eta = float(weibull_scale(M, k))
    steps = eta * (cumulative_hazard(horizon, M, k) * np.arange(1, HAZARD_STEPS) / HAZARD_STEPS) ** (1.0 / k)
    # the intensity is steepest near 0 (infinite there for k < 1): halve the first step EARLY_STEPS times
    early = min(float(steps[0]), float(starts[1]) if starts.size > 1 else math.inf) * 0.5 ** np.arange(1, EARLY_STEPS + 1)
    g = np.unique(np.concatenate([[0.0], starts, steps, early, [horizon]]))
    g = g[g <= horizon]
    g = g[np.append(True, np.diff(g) > 1e-9 * horizon)]     # points that coincide up to rounding: one
    ends = np.append(g[1:], 2.0 * horizon)
    rate = (cumulative_hazard(ends, M, k) - cumulative_hazard(g, M, k)) / (ends - g)
    return g, rate * M


def weibull_expectation(work: float, starts: Any, intervals: Any, C: float, M: float, R: float, k: float,
                        horizon: float | None = None, nodes: int | None = None, D: float = 0.0, W: float = 0.0,
                        slowdown: float = 0.0, P: float = math.inf, N: float = 0.0,
                        Wc: float = 0.0) -> dict[str, float]:
    """Expected wall time of ``work`` under the schedule (window ``starts``, their ``intervals``) and where it
    goes: ``total``, ``useful``, ``save``, ``rework``, ``restart``, ``failures`` (module notes; one time unit).

    ``horizon`` (default: twice Daly's constant-rate wall time) must lie past the job's end: it is doubled
    until it does. ``D``: the downtime after every failure (no nodes held, no failure in it): on the same grid,
    :mod:`ckptplan.engine.schedule_interruptions`' expectation (``D = 0``: the phases model's, as without it).
    ``W``, ``slowdown``: asynchronous saves (:mod:`ckptplan.engine.schedule_async` on the same grid; not with ``D``
    nor preemptions). ``P``, ``N``, ``Wc``: preemptions (mean time between them, notice, wait for capacity; the spot
    model of :mod:`ckptplan.engine.preemption`, a notice ``N >= C`` met by a save on notice that costs no rework) on
    the same grid, :mod:`ckptplan.engine.schedule_interruptions`' expectation (``P = inf``: none, as without them)."""
    starts, intervals = np.asarray(starts, dtype=float), np.asarray(intervals, dtype=float)
    spot = bool(np.isfinite(P))
    if spot and W > 0:
        raise InputError("async_write_min", W, "must be 0 with preemptions and a Weibull shape from the start "
                         "(checkpoint on notice is modelled for synchronous saves)")
    if k == 1.0 and intervals.size == 1:          # one interval at a constant rate: Daly's (or the spot) model itself
        return _constant_rate(work, float(intervals[0]), C, M, R, W, slowdown, D, P, N, Wc)
    if horizon is None:
        horizon = 2.0 * _constant_rate(work, float(intervals[0]), C, M, R, W, slowdown, D, P, N, Wc)["total"]
    for _ in range(8):
        g, f = _grid(starts, M, k, horizon)
        T = intervals[np.searchsorted(starts, g, side="right") - 1]
        kw = {} if nodes is None else {"nodes": nodes}
        if W > 0:
            out = async_schedule_expectation(work, T, C, M, R, W, slowdown, g, f, **kw)
        elif D > 0 or spot:
            out = interruption_schedule_expectation(work, T, _downtime_exposure(tuple(g), tuple(f), M, C, R, D, P, Wc,
                                                                                 N >= C), **kw)
        else:
            out = schedule_expectation(work, T, C, M, R, g, f, **kw)
        if out["total"] < 0.8 * horizon:
            out.pop("end_phase", None)
            return out
        horizon *= 2.0
    raise InputError("useful_training_h", work / 60.0, "the job does not end within the horizon the Weibull "
                     "schedule is evaluated on (failures come faster than saves and restarts)")


def _constant_rate(work: float, T: float, C: float, M: float, R: float, W: float, slowdown: float, D: float,
                   P: float, N: float, Wc: float) -> dict[str, float]:
    """One interval at the constant rate ``1/M``: Daly's model (:func:`ckptplan.engine.waste.time_breakdown`), with
    preemptions the spot model (:func:`ckptplan.engine.preemption.preemption_breakdown`)."""
    if not np.isfinite(P):
        return {key: float(v) for key, v in time_breakdown_kernel(work, T, C, M, R, W, slowdown, D).items()}
    from .preemption import preemption_breakdown

    return {key: float(v) for key, v in preemption_breakdown(work, T, C, M, R, P, N, Wc, D).items()}


@functools.lru_cache(maxsize=8)
def _downtime_exposure(g: tuple, f: tuple, M: float, C: float, R: float, D: float, P: float = math.inf,
                       Wc: float = 0.0, keep: bool = False) -> Any:
    """The exposure of the piecewise-constant grid with a downtime and preemptions (schedule-independent: solved once
    per grid)."""
    return exposure(np.array(g), np.array(f), M, P, C, R, D, Wc, keep, g[-1] + 1.0)


def _search(f: Any, lo: float, hi: float) -> float:
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    return float(res.x)


def optimal_weibull_schedule(work: float, C: float, M: float, R: float, k: float, D: float = 0.0, W: float = 0.0,
                             slowdown: float = 0.0, P: float = math.inf, N: float = 0.0,
                             Wc: float = 0.0) -> dict[str, Any]:
    """The schedule planned for the Weibull intensity (module notes), and the best single interval.

    Returns ``starts`` and ``intervals`` (the windows of the schedule planned: one window, the best single
    interval, when no schedule beats it), ``schedule`` (its expectation), ``single_interval`` and
    ``single`` (the best single interval and its expectation), ``first_order`` (the intervals before the
    search). ``k = 1``: today's plan, the exact optimum ``M (1 + W0(-exp(-1 - C/M)))`` and Daly's model.
    ``D``: a downtime after every failure; ``W``, ``slowdown``: asynchronous saves (:func:`weibull_expectation`; the
    first-order intervals at the effective stall ``C + W slowdown``, every interval at least ``W (1 - slowdown)``).
    ``P``, ``N``, ``Wc``: preemptions (:func:`weibull_expectation`; the single interval's search spans the spot
    model's optimum, :func:`ckptplan.engine.preemption.preemption_optimal_interval`).
    """
    k = check_shape(k)
    if not C > 0:
        raise InputError("checkpoint_stall_min", C, "must be > 0 with a Weibull schedule (a free save has no optimum)")
    exact = float(exact_optimal_interval_kernel(C, M, W, slowdown))
    extra: dict[str, float] = {"D": D, "W": W, "slowdown": slowdown}
    if np.isfinite(P):
        from .preemption import preemption_optimal_interval

        exact = float(preemption_optimal_interval(C, M, R, P, N, Wc, D))
        extra.update(P=P, N=N, Wc=Wc)
    floor = W * (1.0 - slowdown)
    if k == 1.0:
        single = weibull_expectation(work, [0.0], [exact], C, M, R, k, **extra)
        return {"starts": np.array([0.0]), "intervals": np.array([exact]), "schedule": single,
                "single_interval": exact, "single": single, "first_order": np.array([exact])}
    horizon = 2.0 * _constant_rate(work, exact, C, M, R, W, slowdown, D, P, N, Wc)["total"]
    starts, base = first_order_schedule(C + W * slowdown, M, k, horizon)

    def wall(s: np.ndarray, T: np.ndarray, nodes: int | None = SEARCH_NODES) -> float:
        return weibull_expectation(work, s, np.maximum(T, floor), C, M, R, k, horizon, nodes, **extra)["total"]

    a = math.exp(_search(lambda v: wall(starts, base * math.exp(v)), math.log(0.25), math.log(4.0)))
    lo = math.log(max(float(base.min()) / 4.0, floor)) if floor > 0 else math.log(float(base.min()) / 4.0)
    hi = math.log(max(float(base.max()), exact) * 4.0)
    one = max(math.exp(_search(lambda v: wall(np.array([0.0]), np.array([math.exp(v)])), lo, hi)), floor)
    single = weibull_expectation(work, [0.0], [one], C, M, R, k, horizon, **extra)
    sched = weibull_expectation(work, starts, np.maximum(base * a, floor), C, M, R, k, horizon, **extra)
    if sched["total"] <= single["total"]:
        plan_s, plan_T, plan_e = starts, np.maximum(base * a, floor), sched
    else:
        plan_s, plan_T, plan_e = np.array([0.0]), np.array([one]), single
    return {"starts": plan_s, "intervals": plan_T, "schedule": plan_e, "single_interval": one, "single": single,
            "first_order": base}


def weibull_rows(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Rows whose failure intensity falls from the job's start (``weibull_shape_from_start`` given and below 1)."""
    k = cols.get("weibull_shape_from_start")
    if k is None:
        return np.zeros(len(next(iter(cols.values()))), dtype=bool)
    with np.errstate(invalid="ignore"):
        return k < 1.0
