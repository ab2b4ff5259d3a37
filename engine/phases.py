"""A job failure rate that changes over the run: an interval schedule and its exact expectation.

The job fails as a non-homogeneous Poisson process whose rate is piecewise constant in **wall** time
from the job's start: ``lambda(t) = f_j / M`` for ``s_j <= t < s_{j+1}`` (``s_0 = 0``; ``M`` the
job MTBF of the constant-rate model, ``f_j`` a phase's ``rate_factor``; the rate before the first
phase is ``1 / M``). A scenario states phases as ``[[failure_phases]]`` tables (``start_h``,
``rate_factor``): "the first 3 days 3x" is ``{start_h = 0, rate_factor = 3}`` and
``{start_h = 72, rate_factor = 1}``.

**The schedule.** A compute interval ``T_j`` per phase: whenever the job starts a segment (at the
start, after a durable checkpoint, after a restore) it saves after ``T_j`` of compute, ``j`` the
phase it starts the segment in. A segment (``S = T + C`` of wall time) that straddles a boundary
keeps its interval; the rate it sees changes at the boundary. A failure costs a restart ``R``
(itself restarted by a failure) and the work since the last checkpoint.

**The exact expectation** (:func:`schedule_expectation`). Inside one phase the process is the
homogeneous renewal model of Daly (FGCS 22(3), 2006, the complete cost function; see
:mod:`ckptplan.engine.waste`): from a segment start the expected wall time per unit of work is
``rho_j = M_j exp(R/M_j) (exp(S_j/M_j) - 1) / T_j``, ``M_j = M / f_j``. Write ``psi_j(state)`` for
the expected remaining time, less ``rho_j`` times the work left, of the state the job is in (a
segment attempt started ``x`` ago, a restart running for ``y``; 0 at a fresh segment start of phase
``j``'s interval). Then ``t + rho_j w(t) + psi_j(state(t))`` is a martingale while phase ``j``
lasts (``w`` the work not yet checkpointed), so with ``L_j = s_{j+1} - s_j``::

    E[work checkpointed in phase j] = (L_j + E psi_j(state at s_{j+1}) - E psi_j(state at s_j)) / rho_j

and the expected wall time is ``s_K + rho_K E[w(s_K)] + E psi_K(state at s_K)``, ``K`` the phase
the job ends in. The same identity with other rewards (failures, saves, restart time) gives the
breakdown. The state at a boundary ``b`` is known exactly: restarts start at the failure rate
``lambda(t)`` whatever the job is doing, so restarts finish (and segments start after a restore) at
``lambda(t - R) exp(-Lambda(t - R, t))``, and a segment start at ``t`` is followed by one at
``t + S(t)`` with probability ``exp(-Lambda(t, t + S(t)))``; the density of segment starts is the
sum of these restore starts carried forward along every chain of successful segments (and the one
failure-free path from the job's start). :func:`boundary_state_rows` integrates over the time a restart
ends instead, following each forward along its one failure-free chain to ``b``; inside a phase a
restart ending ``S`` later has the same chain end and the density times ``exp(lambda S)``, so the
integral folds onto one interval with a geometric sum, in closed form but for one integral per piece:
a fixed Gauss-Legendre rule (:data:`QUADRATURE_NODES` nodes per piece), the only numerical step, the
same rule the workbook's Schedule sheet writes as cells. It is exact to rounding for one boundary and
wherever the later phases share the interval; elsewhere the chain's end jumps inside a piece, and the
rule is then within about 1e-6 of the wall time (measured against 40,000 midpoint nodes).

Assumptions and validity: failures are Poisson within a phase (exponential gaps), strike during
compute, saves and restarts alike; synchronous saves (a background write is refused); the last
segment is counted as its share of a full one, as the constant-rate model does (so a schedule with
one phase is Daly's model exactly). The job is assumed still running when a phase begins (the expectation
carries its expected state across the boundary as certain), so a phase is entered only when at least one interval
``T_j`` of work is expected to be left at its start; a boundary inside the job's expected last segment is treated as
after its end. Without that rule a boundary there made the expectation fall far below the truth with a long interval
in the next phase (32 % under an event-by-event simulation at 15x that phase's optimum, even below the work itself;
the optimum search exploited it, reporting 0 % waste). With it, against :mod:`ckptplan.engine.phases_montecarlo`
(20,000 runs each, boundaries 0-130 min before the end of a 1,000-min job, factors 0.3-3, intervals up to 3x the
phase's optimum) the expectation is within 0.6 % (0.1-0.3 % typically: the runs a failure pushes past the boundary
do see the next phase, which the rule ignores); a stated interval 15x a phase's optimum there stays off by up to 18 %.
:mod:`ckptplan.engine.phases_montecarlo` simulates the same process event by event.

**The optimal schedule** (:func:`optimal_schedule`). For exponential failures a fixed interval is
optimal (Bougeret, Casanova, Rabie, Robert, Vivien, "Checkpointing strategies for parallel jobs",
SC'11); with a rate that changes over time they use a dynamic programme. Here each phase starts at
its own exact optimum (``M_j (1 + W0(-exp(-1 - C/M_j)))``, :func:`ckptplan.engine.waste.exact_optimal_interval`)
and the exact expectation above is then minimised over the intervals, every scenario of a table at
once (:func:`optimal_schedules`; one scenario is a one-row table): golden-section search (Kiefer
1953, :func:`ckptplan.engine.roots.golden_rows`) for the best single interval, then cyclic coordinate
golden-section search on each phase's log-interval from the better of the phases' optima and the
single interval, polished at the reported rule, keeping the best schedule seen, the best single
interval included, so the schedule never costs more than one interval for the whole run.
:func:`schedule_expectation_rows` is the expectation above, written once, for many rows at once (phases
padded); :func:`schedule_expectation` is its one-row table. The combination models (downtime, preemptions,
background writes) still search one scenario at a time (:func:`search_intervals`, Nelder-Mead).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .errors import InputError
from .roots import INVPHI, golden_rows
from .waste import exact_optimal_interval_kernel

__all__ = ["FailurePhase", "LATTICE_TOL", "MAX_PHASES", "MAX_PHASES_RULE", "QUADRATURE_NODES", "SEARCH_NODES",
           "boundary_state_rows", "chain_step", "expectation_row", "fold_pieces", "gauss_nodes", "optimal_schedule",
           "optimal_schedules", "phase_arrays", "phases_from_list", "refuse_phases", "schedule_expectation",
           "schedule_expectation_rows", "search_intervals", "settle_tail", "stated_intervals"]

#: most failure phases a scenario may state: the schedule's search has one interval per phase and each
#: expectation walks every boundary, so its work grows faster than the count (16 phases: seconds; 40: minutes)
MAX_PHASES = 16
#: the rule a longer list breaks, said on every surface
MAX_PHASES_RULE = (f"at most {MAX_PHASES} failure phases (the schedule searches one interval per phase): merge "
                   "neighbouring phases of similar rate")
#: Gauss-Legendre nodes of every piece of the state distribution's integral (:func:`boundary_state_rows`)
QUADRATURE_NODES = 24
#: nodes while searching for the optimum (the schedule found is then evaluated with QUADRATURE_NODES)
SEARCH_NODES = 12
#: chain starts within this many segments of a phase's end (or of the boundary) count as on it
LATTICE_TOL = 1e-9


@dataclass(frozen=True)
class FailurePhase:
    """One ``[[failure_phases]]`` table: from ``start_h`` (wall hours from the job's start) on, the job's
    failure rate is ``rate_factor`` times the rate of the constant-rate model."""

    start_h: float
    rate_factor: float
    #: the interval the planner states for this phase (minutes of compute between saves), None: optimised
    interval_min: float | None = None

    def __post_init__(self) -> None:
        for name, rule, ok in (("start_h", "must be a finite number >= 0", lambda v: v >= 0),
                               ("rate_factor", "must be a finite number > 0", lambda v: v > 0),
                               ("interval_min", "must be a finite number > 0 (or absent: optimised)", lambda v: v > 0)):
            value = getattr(self, name)
            if name == "interval_min" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not (
                    _finite(value) and ok(value)):
                raise InputError(f"failure_phases: {name}", value, rule)
            object.__setattr__(self, name, float(value))


def _finite(value: Any) -> bool:
    """Whether a number is finite as a float (an integer beyond the float range is not)."""
    try:
        return bool(np.isfinite(float(value)))
    except OverflowError:
        return False


def phases_from_list(raw: Any, origin: str = "scenario") -> tuple[FailurePhase, ...]:
    """Failure phases from a list of tables (``start_h``, ``rate_factor``, optional ``interval_min``) or
    :class:`FailurePhase` records, checked: known keys only, both required ones given, start times strictly
    increasing."""
    if isinstance(raw, (str, bytes, dict)) or not isinstance(raw, (list, tuple)):
        raise InputError(f"{origin}: failure_phases", raw, "must be a list of [[failure_phases]] tables with "
                         "start_h and rate_factor")
    if len(raw) > MAX_PHASES:
        raise InputError(f"{origin}: failure_phases", f"{len(raw)} phases", MAX_PHASES_RULE)
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, FailurePhase):
            out.append(item)
            continue
        if not isinstance(item, dict):
            raise InputError(f"{origin}: failure_phases[{i}]", item, "must be a table with start_h and rate_factor")
        unknown = sorted(set(item) - {"start_h", "rate_factor", "interval_min"})
        if unknown:
            raise InputError(f"{origin}: failure_phases[{i}]: {unknown[0]}", item[unknown[0]],
                             "unknown key; a phase has start_h, rate_factor and optionally interval_min")
        for key in ("start_h", "rate_factor"):
            if key not in item:
                raise InputError(f"{origin}: failure_phases[{i}]: {key}", None, "is required")
        try:
            out.append(FailurePhase(item["start_h"], item["rate_factor"], item.get("interval_min")))
        except InputError as exc:
            raise InputError(f"{origin}: failure_phases[{i}]: {exc.field.split(': ')[-1]}", exc.value, exc.rule) from None
    for i in range(1, len(out)):
        if not out[i].start_h > out[i - 1].start_h:
            raise InputError(f"{origin}: failure_phases[{i}]: start_h", out[i].start_h,
                             f"must be greater than the previous phase's start_h ({out[i - 1].start_h:g})")
    return tuple(out)


def refuse_phases(scenario: Any, surface: str) -> None:
    """Raise :class:`InputError` when ``scenario`` has failure phases, a Weibull shape from the start below 1 or
    preemptions and ``surface`` (a model or a command that plans a constant failure rate) would silently leave
    them out."""
    phases = getattr(scenario, "failure_phases", ())
    shape = getattr(scenario, "weibull_shape_from_start", None)
    if shape is not None and shape < 1:
        raise InputError("weibull_shape_from_start", shape,
                         f"{surface} plans a constant failure rate: plan a Weibull shape from the start with "
                         "`ckptplan plan` or `ckptplan batch` (single-level checkpoints)")
    from .spot_rates import scenario_preemptions_per_h

    if scenario_preemptions_per_h(scenario):
        raise InputError("preemptions_per_h", scenario_preemptions_per_h(scenario),
                         f"{surface} plans on-demand capacity: plan preemptible capacity with `ckptplan plan` or "
                         "`ckptplan batch` (single-level checkpoints)")
    if phases:
        raise InputError("failure_phases", f"{len(phases)} phase(s)",
                         f"{surface} plans a constant failure rate: plan failure phases with `ckptplan plan` or "
                         "`ckptplan batch` (single-level checkpoints)")


def phase_arrays(phases: Iterable[FailurePhase]) -> tuple[np.ndarray, np.ndarray]:
    """(start hours, rate factors) of the whole run: a first phase at 0 with factor 1 unless one starts at 0."""
    phases = list(phases)
    starts = [p.start_h for p in phases]
    factors = [p.rate_factor for p in phases]
    if not starts or starts[0] > 0:
        starts, factors = [0.0] + starts, [1.0] + factors
    return np.array(starts, dtype=float), np.array(factors, dtype=float)


def stated_intervals(phases: Iterable[FailurePhase], interval_min: float | None = None) -> np.ndarray:
    """The interval each phase of :func:`phase_arrays` states (NaN: optimised): a phase's own ``interval_min`` wins
    for its phase; the scenario-wide ``interval_min`` (when given) fills every phase without one, the phase at 0
    that :func:`phase_arrays` adds included."""
    phases = list(phases)
    wide = np.nan if interval_min is None or interval_min != interval_min else float(interval_min)
    own = [wide if p.interval_min is None else p.interval_min for p in phases]
    if not phases or phases[0].start_h > 0:
        own = [wide] + own
    return np.array(own, dtype=float)


def search_intervals(f: Any, own: np.ndarray, single: float, fixed: Any = None) -> np.ndarray:
    """The one-scenario schedule search of the combination models (:mod:`ckptplan.engine.schedule_async`,
    :mod:`ckptplan.engine.schedule_interruptions`; plain phases use :func:`optimal_schedules`): Nelder-Mead on the logarithms of the intervals not
    ``fixed`` (NaN in ``fixed``: free; the others held at their stated value), from each phase's own optimum ``own``
    and from the best single interval ``single``, keeping the best schedule seen. ``f`` maps log-intervals (all
    phases) to the expected wall time."""
    from scipy.optimize import minimize

    own = np.asarray(own, dtype=float)
    fixed = np.full(len(own), np.nan) if fixed is None else np.asarray(fixed, dtype=float)
    free = np.isnan(fixed)
    base = np.log(np.where(free, 1.0, fixed))

    def full(x: np.ndarray) -> np.ndarray:
        out = base.copy()
        out[free] = x
        return out

    def g(x: np.ndarray) -> float:
        return f(full(x))

    if not free.any():
        return fixed.copy()
    candidates = [np.log(own[free]), np.full(int(free.sum()), np.log(single))]
    start = min(candidates, key=g)
    res = minimize(g, start, method="Nelder-Mead",
                   options={"xatol": 1e-3, "fatol": 1e-8 * g(start), "maxiter": 400 * int(free.sum())})
    return np.where(free, np.exp(full(min(candidates + [res.x], key=g))), fixed)   # stated ones exactly


def settle_tail(T: np.ndarray, own: np.ndarray, end_phase: int, fixed: Any = None) -> np.ndarray:
    """Phases after the one the job is expected to end in change nothing: the free ones keep their own optimum."""
    T = np.array(T, dtype=float, copy=True)
    tail = np.zeros(len(T), dtype=bool)
    tail[end_phase + 1:] = True
    if fixed is not None:
        tail &= np.isnan(np.asarray(fixed, dtype=float))
    T[tail] = np.asarray(own, dtype=float)[tail]
    return T


def _phase_constants(lam: np.ndarray, T: np.ndarray, C: float, R: float) -> dict[str, np.ndarray]:
    """Per phase: segment ``S``, restart expectation ``Rr``, cycle time ``a``, failures per cycle ``n``."""
    S = T + C
    n = np.expm1(lam * S)                    # failed attempts per successful segment
    Rr = np.expm1(lam * R) / lam             # expected restart time, restarts of restarts included
    a = n * (1.0 / lam + Rr)                 # expected wall time of one segment (Daly)
    return {"S": S, "n": n, "Rr": Rr, "a": a, "rho": a / T}


@lru_cache(maxsize=16)
def gauss_nodes(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``(0, 1)`` (``nodes`` of them): the fixed rule of every piece."""
    x, w = np.polynomial.legendre.leggauss(int(nodes))
    return (x + 1.0) / 2.0, w / 2.0


def chain_step(c: Any, S: Any, end: Any, b: float) -> tuple[Any, Any]:
    """One phase of the failure-free chain from segment start ``c`` (interval ``S`` there; the phase ends at ``end``,
    the window at ``b``): ``k = ceil((end - c)/S - LATTICE_TOL)`` segments take the chain to its first start at or after
    ``end``; returns ``(k, done)``, ``done`` when that start lies past ``b`` (the segment in progress at ``b`` then
    started at ``c + (k - 1) S``). Starts within ``LATTICE_TOL`` segments of ``end`` or ``b`` count as on it."""
    k = np.ceil((end - c) / S - LATTICE_TOL)
    return k, k > (b - c) / S + LATTICE_TOL


def fold_pieces(S: Any, r: Any, m: Any, gap: Any) -> tuple[tuple[Any, Any, Any], ...]:
    """The fold's pieces ``(lo, hi, K)`` of ``v in (0, S]``: ``K = m + 1`` restarts end on the chain of ``v`` up to
    ``v = r``, ``m`` after; split also where the chain, continued at the same interval, lands on the boundary (``gap``
    past the phase's end), the one place its end jumps when the later phases share the interval. Numbers or arrays
    (broadcast)."""
    land = S * np.ceil(gap / S - LATTICE_TOL) - gap
    a, c = np.minimum(r, land), np.maximum(r, land)
    return (0.0 * r, a, m + 1.0), (a, c, np.where(land < r, m + 1.0, m)), (c, S, m)


def schedule_expectation(work: float, intervals: Sequence[float], C: float, M: float, R: float,
                         starts: Sequence[float], factors: Sequence[float],
                         nodes: int = QUADRATURE_NODES) -> dict[str, Any]:
    """Expected wall time of ``work`` under an interval schedule, and where it goes (exact; module notes).

    All times in one unit (``starts`` in it too: phase start times from the job's start; ``factors``
    multiply the rate ``1/M``). ``intervals[j]`` is the compute interval of phase ``j``. Returns
    ``total``, ``useful`` (= work), ``save``, ``rework``, ``restart`` (times), ``failures`` (every
    failure, those during restarts included, as :func:`ckptplan.engine.waste.time_breakdown` counts them: the
    rate integrated over the expected time in each phase), ``end_phase`` (the phase the job is expected to
    end in), and per phase ``phase_wall`` (expected wall time in it) and ``phase_work`` (work checkpointed in
    it; the last phase: the work left). One phase reproduces Daly's exact model. The scenario is a one-row table of
    :func:`schedule_expectation_rows`, where the formula is written.
    """
    K = len(starts)

    def row(v: Any) -> np.ndarray:
        return np.reshape(np.asarray(v, dtype=float), (1, K))

    return expectation_row(schedule_expectation_rows(work, row(intervals), C, M, R, row(starts), row(factors), nodes), 0)


def per_phase_optima(C: float, M: float, factors: Sequence[float]) -> np.ndarray:
    """Each phase's exact optimum as if its rate held for ever: ``M_j (1 + W0(-exp(-1 - C/M_j)))``, ``M_j = M/f_j``."""
    Mj = M / np.asarray(factors, dtype=float)
    return np.asarray(exact_optimal_interval_kernel(np.full_like(Mj, C), Mj, np.zeros_like(Mj), np.zeros_like(Mj)),
                      dtype=float)


def optimal_schedule(work: float, C: float, M: float, R: float, starts: Sequence[float],
                     factors: Sequence[float], fixed: Any = None) -> dict[str, Any]:
    """The schedule with the least expected wall time (module notes), and the best single interval: one scenario as a
    one-row table of :func:`optimal_schedules` (the one search of every surface).

    ``fixed`` (optional, one per phase): the intervals the planner states, NaN where the phase is optimised; a
    stated interval is held exactly and the others are optimised around it. Returns ``intervals`` (one per phase),
    ``single_interval``, ``per_phase`` (each phase's own optimum, a starting point) and the expectations ``schedule``
    and ``single`` (as :func:`schedule_expectation` answers). Phases after the job's expected end keep their own
    optimum (they change nothing) unless stated.
    """
    if C <= 0:
        raise InputError("checkpoint_stall_min", C, "must be > 0 with failure phases (a free save has no optimum)")
    K = len(factors)
    best = optimal_schedules(work, C, M, R, np.reshape(np.asarray(starts, dtype=float), (1, K)),
                             np.reshape(np.asarray(factors, dtype=float), (1, K)),
                             None if fixed is None else np.reshape(np.asarray(fixed, dtype=float), (1, K)))
    return {"intervals": best["intervals"][0], "single_interval": float(best["single_interval"][0]),
            "per_phase": best["per_phase"][0], "schedule": expectation_row(best["schedule"], 0),
            "single": expectation_row(best["single"], 0)}


# ---- the same expectation and the schedule search, over a table of scenarios at once ------------------------------
#
# Rows may have different phase counts: a row's phases are padded with phases starting at +inf (their factors and
# intervals are then never read). Every step is done for every row still running at a boundary at once; one scenario
# (:func:`schedule_expectation`) is a one-row table.


class _Rows:
    """Per-row piecewise-constant rates: starts ``s`` (rows x phases, ``s[:, 0] = 0``, +inf after a row's last phase),
    rates ``lam``, the cumulative rate ``Hs`` at each start."""

    def __init__(self, starts: np.ndarray, rates: np.ndarray, Hs: np.ndarray | None = None):
        self.s, self.lam = starts, rates
        if Hs is None:
            with np.errstate(invalid="ignore"):
                steps = np.where(np.isfinite(starts[:, 1:]), rates[:, :-1] * np.diff(starts, axis=1), np.inf)
            Hs = np.concatenate([np.zeros((len(starts), 1)), np.cumsum(steps, axis=1)], axis=1)
        self.Hs = Hs

    def take(self, g: np.ndarray) -> "_Rows":
        """The rows ``g`` (all of them, unchanged, when ``g`` is every row in order)."""
        return self if len(g) == len(self.s) else _Rows(self.s[g], self.lam[g], self.Hs[g])

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rate, cumulative rate) at the times ``t`` (rows x points, finite)."""
        j = (self.s[:, None, :] <= t[:, :, None]).sum(axis=2) - 1
        i = np.arange(len(t))[:, None]
        lam = self.lam[i, j]
        return lam, self.Hs[i, j] + lam * (t - self.s[i, j])


def _col(a: np.ndarray, j: Any) -> np.ndarray:
    """Column ``j`` of every row (``j`` a number or one index per row), as a column vector."""
    if np.ndim(j) == 0:
        return a[:, int(j)][:, None]
    return np.take_along_axis(a, np.asarray(j)[:, None], axis=1)


def _rule(lo: np.ndarray, hi: np.ndarray, u: np.ndarray, wu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fixed rule on ``(lo, hi)`` per row (column vectors); an empty or undefined piece has zero weights."""
    width = np.where(hi > lo, hi - lo, 0.0)
    return np.minimum(lo, hi) + width * u, width * wu


def _fold_rows(rate: _Rows, S: np.ndarray, R: np.ndarray, J: int, b: np.ndarray, Hb: np.ndarray, u: np.ndarray,
               wu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The folds of phases ``0..J`` (phase ``p``'s: restarts ending in ``[s_p + R, e_p)``, ``e_p = min(s_{p+1}, b)``),
    every row at once: segment starts and masses of their three pieces (:func:`fold_pieces`), rows x phases x 3 x
    nodes. Restarts ending at ``c`` have the density ``lam_p exp(-(H(b) - H(c - R)))``; folded onto ``v in (0, S_p]``
    (``c = e_p - v - k S_p``) their sum over ``k`` is geometric, ``K`` terms."""
    sp, lam, Sp, Hs = (a[:, :J + 1, None, None] for a in (rate.s, rate.lam, S, rate.Hs))
    b, Hb, R = b[:, :, None, None], Hb[:, :, None, None], R[:, :, None, None]
    e = np.minimum(rate.s[:, 1:J + 2, None, None], b)
    D = e - (sp + R)
    m = np.floor(D / Sp)
    r = D - m * Sp
    lo, hi, K = (np.concatenate(x, axis=2) for x in zip(*fold_pieces(Sp, r, m, b - e)))   # all rows x phases x 1 x 1
    v, w = _rule(lo, np.where(D > 0, hi, lo), u, wu)
    dens = lam * np.exp(-(Hb - Hs - lam * (e - v - R - sp))) * -np.expm1(-K * lam * Sp) / -np.expm1(-lam * Sp)
    return e - v, np.where(w > 0, w * dens, 0.0)


def _edge_rows(rate: _Rows, R: np.ndarray, J: int, b: np.ndarray, Hb: np.ndarray, u: np.ndarray, wu: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The edges of phases ``1..J``: restarts ending in ``[max(s_p, R), s_p + R)``, their failure (at ``c - R``) in an
    earlier phase; ends and masses, rows x phases x nodes."""
    if J == 0:
        return np.zeros((len(b), 0, len(u))), np.zeros((len(b), 0, len(u)))
    sp = rate.s[:, 1:J + 1, None]
    b, Hb, R = b[:, :, None], Hb[:, :, None], R[:, :, None]
    c, w = _rule(np.maximum(sp, R), np.minimum(sp + R, np.minimum(rate.s[:, 2:J + 2, None], b)), u, wu)
    lam_f, H_f = (x.reshape(c.shape) for x in rate.at((c - R).reshape(len(c), -1)))
    return c, np.where(w > 0, w * lam_f * np.exp(-(Hb - H_f)), 0.0)


def _restarts_rows(rate: _Rows, R: np.ndarray, J: int, b: np.ndarray, Hb: np.ndarray, u: np.ndarray, wu: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Restarts in progress at ``b`` whose failure struck in phase ``p = 0..J``: time elapsed and mass, rows x
    (phases x nodes)."""
    sp, lam, Hs = (a[:, :J + 1, None] for a in (rate.s, rate.lam, rate.Hs))
    b, Hb, R = b[:, :, None], Hb[:, :, None], R[:, :, None]
    e = np.minimum(rate.s[:, 1:J + 2, None], b)
    y, w = _rule(np.maximum(0.0, b - e), np.minimum(R, b - sp), u, wu)
    mass = np.where(w > 0, w * lam * np.exp(-(Hb - Hs - lam * (b - y - sp))), 0.0)
    return y.reshape(len(y), -1), mass.reshape(len(y), -1)


def _piece_order(atom: np.ndarray, fold: np.ndarray, edge: np.ndarray) -> np.ndarray:
    """Rows x nodes in the pieces' order: the failure-free path, then phase by phase its fold's three pieces and (after
    the first phase) its edge."""
    n = len(atom)
    rest = np.concatenate([fold[:, 1:], edge[:, :, None]], axis=2).reshape(n, -1)
    return np.concatenate([atom, fold[:, 0].reshape(n, -1), rest], axis=1)


def _chain_end_rows(rate: _Rows, S: np.ndarray, c: np.ndarray, p: np.ndarray, b: np.ndarray, J: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Start and phase of the segment in progress at ``b`` on the failure-free chain from each start ``c`` (made in
    phase ``p``; ``c``, ``p``: rows x points, ``b``: a column): phase by phase, :func:`chain_step`; a chain that lands
    on ``b`` starts a segment there."""
    x, px = np.broadcast_to(b, c.shape).copy(), np.full(c.shape, J + 1)
    done = np.zeros(c.shape, dtype=bool)
    for t in range(J + 1):
        end = np.minimum(rate.s[:, t + 1:t + 2], b)
        St = S[:, t:t + 1]
        m = ~done & (p <= t) & (c < end)
        k, stop = chain_step(c, St, end, b)
        fin, go = m & stop, m & ~stop
        x = np.where(fin, c + (k - 1.0) * St, x)
        px = np.where(fin, t, px)
        done |= fin
        c = np.where(go, c + k * St, c)
    return x, px


def boundary_state_rows(rate: _Rows, T: np.ndarray, C: np.ndarray, R: np.ndarray, J: int,
                        nodes: int = QUADRATURE_NODES) -> dict[str, np.ndarray]:
    """The job's state at every row's boundary ``b = s[:, J + 1]`` (module notes): segments in progress (start,
    interval, probability mass) and restarts in progress (elapsed, mass), rows x points (``C``, ``R``: columns); the
    masses sum to 1.

    Integrated over the time ``c`` a restart ends (the failure at ``c - R``), each followed along its failure-free
    chain to the segment in progress at ``b`` (:func:`_chain_end_rows`): the failure-free path from the job's start,
    every phase's fold (:func:`_fold_rows`) and edge (:func:`_edge_rows`), and the restarts in progress
    (:func:`_restarts_rows`). Each piece is a :data:`QUADRATURE_NODES`-node Gauss-Legendre rule; a row's empty piece
    has zero-weight nodes."""
    S = T + C
    u, wu = gauss_nodes(nodes)
    b = rate.s[:, J + 1:J + 2]
    Hb = rate.Hs[:, J + 1:J + 2]
    with np.errstate(over="ignore", invalid="ignore"):   # the nodes of an empty piece (zero weight) are masked out
        fc, fm = _fold_rows(rate, S, R, J, b, Hb, u, wu)
        ec, em = _edge_rows(rate, R, J, b, Hb, u, wu)
        y, rm = _restarts_rows(rate, R, J, b, Hb, u, wu)
    n = len(b)
    c, mass = _piece_order(np.zeros((n, 1)), fc, ec), _piece_order(np.exp(-Hb), fm, em)
    p = _piece_order(np.zeros((n, 1), dtype=int), np.broadcast_to(np.arange(J + 1)[None, :, None, None], fc.shape),
                     np.broadcast_to(np.arange(1, J + 1)[None, :, None], ec.shape))
    x, px = _chain_end_rows(rate, S, c, p, b, J)
    i = np.arange(n)[:, None]
    return {"b": b, "start": x, "S": S[i, px], "T": T[i, px],
            "mass": mass, "restart_elapsed": y, "restart_mass": rm}


def _potential_rows(state: dict[str, np.ndarray], q: int, lam: np.ndarray, T: np.ndarray, k: dict[str, np.ndarray],
                    R: np.ndarray) -> np.ndarray:
    """``E psi_q(state at b)`` of every row for each reward (rows x rewards: wall time, failed attempts, successful
    saves, restart time), phase ``q``'s rate and interval: a segment in progress with ``d`` of wall time left fails
    before it ends with odds ``1 - exp(-lam_q d)``; one that ends has done ``T / T_q`` of a segment of phase ``q``."""
    lam, Tq = lam[:, q:q + 1], T[:, q:q + 1]
    Rr, n, a = (k[key][:, q:q + 1] for key in ("Rr", "n", "a"))
    d = state["S"] - (state["b"] - state["start"])
    fail = -np.expm1(-lam * d)
    ok = 1.0 - fail
    share = state["T"] / Tq
    m = state["mass"]
    rm = state["restart_mass"]
    rfail = -np.expm1(-lam * (R - state["restart_elapsed"]))

    rtime = np.sum(np.where(rm > 0, rm * (rfail * (1.0 / lam + Rr)), 0.0), axis=1)   # a padded node adds nothing
    att = np.stack([fail * (1.0 / lam + Rr) - ok * a * share, fail - ok * n * share, ok * (1.0 - share),
                    fail * Rr - ok * n * Rr * share])
    att = np.sum(np.where(m > 0, m * att, 0.0), axis=2).T   # rewards x rows x points, summed over the points
    att[:, 0] += rtime
    att[:, 3] += rtime
    return att


def _per_row(v: Any, n: int) -> np.ndarray:
    """A number or a column as one float per row."""
    return np.broadcast_to(np.asarray(v, dtype=float), (n,)).astype(float)


def _pad(a: np.ndarray, fill: float) -> np.ndarray:
    """A row table as a float matrix, NaN cells (a row's missing phases) filled."""
    a = np.array(a, dtype=float, ndmin=2)
    return np.where(np.isnan(a), fill, a)


def schedule_expectation_rows(work: Any, intervals: Any, C: Any, M: Any, R: Any, starts: Any, factors: Any,
                              nodes: int = QUADRATURE_NODES) -> dict[str, np.ndarray]:
    """:func:`schedule_expectation` for a table of scenarios at once (same formula, same rule; module notes).

    ``work``, ``C``, ``M``, ``R``: one per row; ``intervals``, ``starts``, ``factors``: rows x phases, a row with fewer
    phases padded (NaN or +inf starts after its last phase; its padded intervals and factors are never read). Returns
    arrays: ``total``, ``useful``, ``save``, ``rework``, ``restart``, ``failures``, ``end_phase`` (one per row) and
    ``phase_wall``, ``phase_work`` (rows x phases)."""
    s = _pad(starts, np.inf)
    n, K = s.shape
    work, C, M, R = (_per_row(v, n)[:, None] for v in (work, C, M, R))
    T, f = _pad(intervals, 1.0), _pad(factors, 1.0)
    lam = f / M
    k = _phase_constants(lam, T, C, R)
    last = np.isfinite(s).sum(axis=1) - 1
    out = {"total": np.full(n, np.nan), "failures": np.full(n, np.nan), "save": np.full(n, np.nan),
           "restart": np.full(n, np.nan), "end_phase": np.zeros(n, dtype=int), "phase_wall": np.zeros((n, K)),
           "phase_work": np.zeros((n, K))}
    w, acc, psi = work[:, 0].copy(), np.zeros((n, 4)), np.zeros((n, 4))
    live = np.arange(n)
    rate = _Rows(s, lam)
    for j in range(K):
        kj = k if len(live) == n else {key: v[live] for key, v in k.items()}
        cyc = np.column_stack([kj["a"][:, j], kj["n"][:, j], np.ones(len(live)), kj["n"][:, j] * kj["Rr"][:, j]]) \
            / T[live, j:j + 1]
        go = last[live] > j
        dw = np.full(len(live), np.inf)
        if go.any():
            g = live[go]
            sub = rate.take(g)
            kg = k if len(g) == n else {key: v[g] for key, v in k.items()}
            Tg, Rg = (a if len(g) == n else a[g] for a in (T, R))
            state = boundary_state_rows(sub, Tg, C[g], Rg, j, nodes)
            psi_end = _potential_rows(state, j, sub.lam, Tg, kg, Rg)
            dw[go] = (s[g, j + 1] - s[g, j] + psi_end[:, 0] - psi[g, 0]) / kj["rho"][go, j]
        ends = ~(dw < w[live] - T[live, j])   # as schedule_expectation: an interval of work left to enter
        if go.any():
            on = ~ends[go]
            g, gi = g[on], np.flatnonzero(go)[on]
            acc[g] += cyc[gi] * dw[gi, None] + psi[g] - psi_end[on]
            acc[g, 0] = s[g, j + 1]
            w[g] -= dw[gi]
            out["phase_work"][g, j] = dw[gi]
            psi[g] = _potential_rows({key: v[on] for key, v in state.items()}, j + 1, lam[g], T[g],
                                     {key: v[g] for key, v in k.items()}, R[g])
        _finish_rows(out, live[ends], cyc[ends], w, acc, psi, s, lam, C, j)
        live = live[~ends]
        if not len(live):
            break
    out["useful"] = work[:, 0]
    out["rework"] = np.maximum(out["total"] - out["useful"] - out["save"] - out["restart"], 0.0)
    return out


def _finish_rows(out: dict[str, np.ndarray], e: np.ndarray, cyc: np.ndarray, w: np.ndarray, acc: np.ndarray,
                 psi: np.ndarray, s: np.ndarray, lam: np.ndarray, C: np.ndarray, j: int) -> None:
    """The rows ``e`` end in phase ``j``: their totals and per-phase figures (as :func:`schedule_expectation`)."""
    total = acc[e] + cyc * w[e, None] + psi[e]
    spent = np.diff(np.column_stack([s[e, :j + 1], total[:, 0]]), axis=1)
    out["total"][e] = total[:, 0]
    out["failures"][e] = np.sum(lam[e, :j + 1] * spent, axis=1)
    out["save"][e] = total[:, 2] * C[e, 0]
    out["restart"][e] = total[:, 3]
    out["end_phase"][e] = j
    out["phase_wall"][e, :j + 1] = spent
    out["phase_work"][e, j] = w[e]


def expectation_row(rows: dict[str, np.ndarray], i: int, phases: int | None = None) -> dict[str, Any]:
    """Row ``i`` of :func:`schedule_expectation_rows` as :func:`schedule_expectation` answers (``phases``: the row's
    phase count, its padding dropped)."""
    K = rows["phase_wall"].shape[1] if phases is None else int(phases)
    out = {key: float(rows[key][i]) for key in ("total", "useful", "save", "rework", "restart", "failures")}
    out["end_phase"] = int(rows["end_phase"][i])
    out["phase_wall"] = [float(x) for x in rows["phase_wall"][i, :K]]
    out["phase_work"] = [float(x) for x in rows["phase_work"][i, :K]]
    return out


#: golden-section steps of the single-interval search (its bracket, /4 to x4 of the phases' optima, shrinks to
#: about 1e-7 of a log-interval) and of each phase's first coordinate step (x4 either way, to about 1e-6)
SINGLE_STEPS, COORDINATE_STEPS = 40, 34
#: coordinate sweeps at most; a row stops when a sweep improves its expected wall time by less than SWEEP_RTOL
MAX_SWEEPS, SWEEP_RTOL = 12, 1e-13
#: every phase's interval is searched between the row's least phase optimum / SEARCH_SPAN and its largest x SEARCH_SPAN
#: (far beyond any optimum; it keeps the search off intervals so long that the expectation's boundary terms break down)
SEARCH_SPAN = 16.0
#: the polish's first bracket either way of each log-interval found at SEARCH_NODES, searched at QUADRATURE_NODES
POLISH_BRACKET = 0.01


def _rows_objective(work: np.ndarray, C: np.ndarray, M: np.ndarray, R: np.ndarray, starts: np.ndarray,
                    factors: np.ndarray, nodes: int = SEARCH_NODES) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Expected wall time (``nodes`` per piece) of rows ``idx`` at log-intervals ``x`` (len(idx) x phases); inf where
    it does not compute (not finite, or below the work: an interval so long that a segment's failure odds overflow)."""
    def f(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            T = np.exp(np.clip(x, -50.0, 50.0))
            v = schedule_expectation_rows(work[idx], T, C[idx], M[idx], R[idx], starts[idx], factors[idx],
                                          nodes)["total"]
        return np.where(np.isfinite(v) & (v >= work[idx]), v, np.inf)
    return f


def _golden_best(f: Callable[[np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray, steps: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The better inner point of :func:`ckptplan.engine.roots.golden_rows`' last bracket, and its value."""
    _, _, c, d, fc, fd = golden_rows(f, a, b, steps)
    left = fc <= fd
    return np.where(left, c, d), np.where(left, fc, fd)


def _coordinate_search(f: Callable[[np.ndarray, np.ndarray], np.ndarray], x: np.ndarray, fx: np.ndarray,
                       free: np.ndarray, bounds: tuple[np.ndarray, np.ndarray], h0: float = np.log(4.0)) -> np.ndarray:
    """Cyclic coordinate golden-section search on every row's free log-intervals at once, keeping the best schedule
    seen per row (a step never raises a row's expected wall time): phase by phase, a bracket of ``h`` either way of
    the current value (``h0`` at first, narrowing with each sweep that moves less); a row stops after a sweep that
    improves it by less than :data:`SWEEP_RTOL`. ``bounds``: each row's lowest and highest log-interval (the
    brackets are clipped to them)."""
    x, fx = x.copy(), fx.copy()
    h = np.full(x.shape, h0)
    open_ = np.isfinite(fx) & free.any(axis=1)
    for _ in range(MAX_SWEEPS):
        rows = np.flatnonzero(open_)
        if not len(rows):
            break
        before = fx[rows].copy()
        for j in range(x.shape[1]):
            idx = rows[free[rows, j]]
            if not len(idx):
                continue

            # each row's steps from its own bracket (to about 1e-6 of a log-interval): a row's search never depends on
            # the other rows of its table
            steps = np.clip(np.ceil(np.log(2.0 * h[idx, j] / 1e-6) / -np.log(INVPHI)), 8, COORDINATE_STEPS)
            for k in np.unique(steps):
                _coordinate_step(f, x, fx, h, idx[steps == k], j, int(k), bounds)
        open_[rows] = before - fx[rows] > SWEEP_RTOL * fx[rows]
    return x


def _coordinate_step(f: Callable[[np.ndarray, np.ndarray], np.ndarray], x: np.ndarray, fx: np.ndarray, h: np.ndarray,
                     idx: np.ndarray, j: int, steps: int, bounds: tuple[np.ndarray, np.ndarray]) -> None:
    """One golden-section search on log-interval ``j`` of rows ``idx`` (in place: ``x``, ``fx``, the bracket ``h``),
    kept only where it lowers the expected wall time."""
    def g(v: np.ndarray) -> np.ndarray:
        y = x[idx].copy()
        y[:, j] = v
        return f(y, idx)

    lo, hi = np.maximum(x[idx, j] - h[idx, j], bounds[0][idx]), np.minimum(x[idx, j] + h[idx, j], bounds[1][idx])
    v, fv = _golden_best(g, lo, hi, steps)
    better = fv < fx[idx]
    moved = np.abs(v - x[idx, j])
    h[idx, j] = np.where(better, np.clip(4.0 * moved, 1e-4, np.log(4.0)), np.maximum(h[idx, j] / 4.0, 1e-4))
    x[idx[better], j], fx[idx[better]] = v[better], fv[better]


def optimal_schedules(work: Any, C: Any, M: Any, R: Any, starts: Any, factors: Any, fixed: Any = None
                      ) -> dict[str, np.ndarray]:
    """:func:`optimal_schedule` for a table of scenarios at once, the one search every surface uses (module notes).

    ``work``, ``C``, ``M``, ``R``: one per row; ``starts``, ``factors``, ``fixed``: rows x phases (``s[:, 0] = 0``), a
    row with fewer phases padded with NaN (or +inf starts); ``fixed``: the stated intervals, NaN where optimised.
    The best single interval: golden-section search on its logarithm between the row's phase optima /4 and x4.
    The schedule: from the better of each phase's own optimum and the best single interval (stated intervals held),
    :func:`_coordinate_search` (each interval between the least phase optimum / SEARCH_SPAN and the largest x it); then the better, at QUADRATURE_NODES, of the schedule found and the single interval
    (stated ones held), so it never costs more than that. Returns ``intervals``, ``per_phase`` (rows x phases, NaN
    in the padding), ``single_interval`` and the expectations ``schedule`` and ``single``
    (:func:`schedule_expectation_rows`)."""
    s = _pad(starts, np.inf)
    n, K = s.shape
    real = np.isfinite(s)
    work, C, M, R = (_per_row(v, n) for v in (work, C, M, R))
    fac = _pad(factors, 1.0)
    fix = np.full((n, K), np.nan) if fixed is None else np.array(fixed, dtype=float, ndmin=2)
    fix = np.where(real, fix, 1.0)
    free = np.isnan(fix)
    with np.errstate(all="ignore"):
        own = np.where(real, per_phase_optima(C[:, None], M[:, None], fac), np.nan)
    f = _rows_objective(work, C, M, R, s, fac)
    everyone = np.arange(n)
    lo, hi = np.log(np.nanmin(own, axis=1) / 4.0), np.log(np.nanmax(own, axis=1) * 4.0)
    v, _ = _golden_best(lambda v: f(np.repeat(v[:, None], K, axis=1), everyone), lo, hi, SINGLE_STEPS)
    single = np.exp(v)
    held = np.log(np.where(free, 1.0, fix))
    x_own, x_one = np.where(free, np.log(own), held), np.where(free, v[:, None], held)
    f_own, f_one = f(x_own, everyone), f(x_one, everyone)
    x0 = np.where((f_own <= f_one)[:, None], x_own, x_one)
    bounds = (lo - np.log(SEARCH_SPAN / 4.0), hi + np.log(SEARCH_SPAN / 4.0))
    x = _coordinate_search(f, x0, np.minimum(f_own, f_one), free, bounds)
    polish = _rows_objective(work, C, M, R, s, fac, QUADRATURE_NODES)   # the rule the figures are reported with
    x = _coordinate_search(polish, x, polish(x, everyone), free, bounds, POLISH_BRACKET)
    T, T_one = np.where(free, np.exp(x), fix), np.where(free, single[:, None], fix)
    e = schedule_expectation_rows(work, T, C, M, R, s, fac)
    e_one = schedule_expectation_rows(work, T_one, C, M, R, s, fac)
    take = ~(np.isfinite(f(x, everyone)) & (e["total"] <= e_one["total"])) & np.isfinite(e_one["total"])
    T = np.where(take[:, None], T_one, T)
    e = {key: np.where(take if v.ndim == 1 else take[:, None], e_one[key], v) for key, v in e.items()}
    tail = (np.arange(K)[None, :] > e["end_phase"][:, None]) & free & real
    T = np.where(tail, own, np.where(real, T, np.nan))
    single_all = schedule_expectation_rows(work, np.repeat(single[:, None], K, axis=1), C, M, R, s, fac)
    return {"intervals": T, "per_phase": own, "single_interval": single, "schedule": e, "single": single_all}
