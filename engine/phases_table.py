"""Failure phases in a scenario table: ``phase{i}_start_h`` / ``phase{i}_rate_factor`` columns, their rules,
and the schedule columns :func:`ckptplan.engine.scenario.evaluate` adds for rows that have phases.

A table row (a batch row, a sweep row, one scenario flattened) holds phase ``i`` (numbered from 1, in
order of start) as two number cells, as correlated failure domains are held (``domain{i}_*``), and optionally a
third, ``phase{i}_interval_min`` (the interval the planner states for the phase). Rules: ``start_h`` >= 0,
``rate_factor`` > 0 and ``interval_min`` > 0 (:data:`ckptplan.engine.fields.PHASE_FIELDS`); both required cells of a
phase given or neither (an interval needs its phase); phases numbered from 1 without gaps; each start after the
previous phase's.

For a row with phases, the figures of the plan are those of the schedule planned
(:mod:`ckptplan.engine.phases`): the optimal schedule with every stated interval held fixed. A phase states its
interval with ``phase{i}_interval_min``; the row's ``interval_min`` states it for every phase that gives none (a
per-phase value wins for its phase; the phase at 0 added ahead of a first phase that starts later takes the row's).
Columns added for every row of a table with phase columns: ``schedule{i}_start_h`` and
``schedule{i}_interval_min`` and ``schedule{i}_rate_factor`` and ``schedule{i}_interval_stated`` (1 when the planner
stated that interval, 0 when the plan optimised it) (the schedule, phase 1 the one from the job's start: a row whose first
phase starts later has a phase at 0 with the constant rate ahead of it), ``single_interval_min`` (the
best single interval under the same process) and ``single_interval_wall_h`` (its expected wall time).
A row with ``weibull_shape_from_start`` below 1 (a failure intensity that falls from the job's start,
:mod:`ckptplan.engine.weibull_schedule`) gets the same columns: its windows as ``schedule{i}_*`` (the rate
factor of a window is its mean failure rate over the constant one), its deadline figures from
:func:`ckptplan.engine.weibull_montecarlo.simulate_weibull_schedule`. A row may not have both. A background
write on a row with a schedule is refused with the reason. A row with preemptions or a downtime
(``downtime_min``: the part of ``restart_min`` spent waiting for a node, no failure in it) is planned by
:mod:`ckptplan.engine.schedule_interruptions` (failure phases; a Weibull intensity with a downtime on its grid) and
simulated by :mod:`ckptplan.engine.schedule_interruptions_montecarlo` (the last segment ends the job without a save,
as the spot simulation); a single phase on spot capacity is today's spot plan exactly; preemptions with a Weibull
intensity are planned on its grid (:func:`ckptplan.engine.weibull_schedule.weibull_expectation`) and simulated the
same way with the Weibull draw; a background write with preemptions is refused
(:mod:`ckptplan.engine.preemption_table`).
The deadline figures of a row with phases come from :func:`ckptplan.engine.phases_montecarlo.simulate_schedule`
(``DEFAULT_RUNS`` runs, ``DEFAULT_SEED``): the analytic answer holds for a constant rate only.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from .errors import NEVER_FINISHES, InputError
from .fields import DEFAULT_RUNS, DEFAULT_SEED, PHASE_FIELDS, PHASE_REQUIRED
from .phases import MAX_PHASES, MAX_PHASES_RULE
from .preemption_table import MAX_INTERRUPTIONS
from .weibull_schedule import weibull_rows

__all__ = ["PHASE_COL", "PhaseSchedules", "is_schedule_column", "phase_column_specs", "phase_indices", "phase_row_problems",
           "phase_schedules", "scenario_phase_columns"]

PHASE_COL = re.compile(r"^phase(\d+)_(" + "|".join(f.name for f in PHASE_FIELDS) + r")$")


_SCHEDULE_COL = re.compile(r"^schedule\d+_(start_h|interval_min|rate_factor|interval_stated)$")


def is_schedule_column(name: Any) -> bool:
    """A column :func:`phase_schedules` adds to an evaluated table (module notes)."""
    return isinstance(name, str) and (bool(_SCHEDULE_COL.match(name))
                                      or name in ("single_interval_min", "single_interval_wall_h"))


def phase_indices(columns: Iterable[Any]) -> list[int]:
    """The ``i`` of every ``phase{i}_*`` column; raises unless each phase has both required columns."""
    columns = list(columns)
    found = sorted({int(m.group(1)) for c in columns if isinstance(c, str) and (m := PHASE_COL.match(c))})
    if len(found) > MAX_PHASES:
        raise InputError("columns", f"phase1_* .. phase{found[-1]}_* ({len(found)} phases)", MAX_PHASES_RULE)
    for i in found:
        for part in PHASE_REQUIRED:
            if f"phase{i}_{part}" not in columns:
                raise InputError("columns", f"phase{i}_{part}",
                                 f"missing: every failure phase needs both phase{i}_start_h and phase{i}_rate_factor")
    return found


def phase_column_specs(columns: Iterable[Any]) -> list[tuple[str, str]]:
    """(column, rule key) of every phase cell of a table with these columns (``phase{i}_interval_min`` when present)."""
    columns = list(columns)
    return [(f"phase{i}_{part.name}", part.rule) for i in phase_indices(columns) for part in PHASE_FIELDS
            if part.name in PHASE_REQUIRED or f"phase{i}_{part.name}" in columns]


def scenario_phase_columns(phases: Iterable[Any]) -> dict[str, float]:
    """A scenario's phases as table cells."""
    out: dict[str, float] = {}
    for i, p in enumerate(phases, start=1):
        out[f"phase{i}_start_h"] = p.start_h
        out[f"phase{i}_rate_factor"] = p.rate_factor
        if p.interval_min is not None:
            out[f"phase{i}_interval_min"] = p.interval_min
    return out


def phase_row_problems(eff: dict[str, np.ndarray], ok: dict[str, np.ndarray], indices: list[int]
                       ) -> list[tuple[np.ndarray, Callable[[int], InputError]]]:
    """The rules across a row's phase cells (module notes): (rows, the error of a row) per broken rule."""
    out: list[tuple[np.ndarray, Callable[[int], InputError]]] = []
    prev_start = prev_given = None
    for i in indices:
        start, factor = eff[f"phase{i}_start_h"], eff[f"phase{i}_rate_factor"]
        cells_ok = ok[f"phase{i}_start_h"] & ok[f"phase{i}_rate_factor"]
        given = ~np.isnan(start)
        half = (np.isnan(start) != np.isnan(factor)) & cells_ok
        out.append((np.flatnonzero(half), lambda p, i=i: InputError(
            f"phase{i}", None, f"give both phase{i}_start_h and phase{i}_rate_factor, or neither")))
        if f"phase{i}_interval_min" in eff:
            lone = ~np.isnan(eff[f"phase{i}_interval_min"]) & ~given & ok[f"phase{i}_interval_min"]
            out.append((np.flatnonzero(lone), lambda p, i=i: InputError(
                f"phase{i}_interval_min", float(eff[f"phase{i}_interval_min"][p]),
                f"states the interval of failure phase {i}: give phase{i}_start_h and phase{i}_rate_factor too")))
        if prev_given is None:
            gap = given & (i != 1)
        else:
            gap = given & ~prev_given
        out.append((np.flatnonzero(gap & cells_ok), lambda p, i=i: InputError(
            f"phase{i}_start_h", None, "failure phases are numbered from 1 without gaps")))
        if prev_start is not None:
            with np.errstate(invalid="ignore"):
                early = given & prev_given & (start <= prev_start) & cells_ok
            out.append((np.flatnonzero(early), lambda p, i=i, s=start, q=prev_start: InputError(
                f"phase{i}_start_h", float(s[p]), f"must be greater than phase{i - 1}_start_h ({q[p]:g})")))
        prev_start, prev_given = start, given & ~half
    return out


class PhaseSchedules:
    """The schedules of a table's rows with phases; :func:`phase_schedules` builds it."""

    def __init__(self, rows: np.ndarray, plans: list[dict[str, Any]], n: int, slots: int, given: np.ndarray):
        self.rows, self.plans, self.n, self.slots = rows, plans, n, slots
        self.given = given   # 1.0 where the row states interval_min (a row without phases: its one interval)

    def parts(self, parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The constant-rate breakdown with the schedule's figures in the rows that have phases."""
        out = {k: np.array(v, dtype=float, copy=True) for k, v in parts.items()}
        for r, plan in zip(self.rows, self.plans):
            e = plan["expectation"]
            for key in ("useful", "save", "rework", "restart", "total", "failures"):
                out[key][r] = e[key]
        return out

    def columns(self, new: dict[str, np.ndarray], chosen: np.ndarray, deadline_min: np.ndarray
                ) -> dict[str, np.ndarray]:
        """The schedule columns (module notes) and the rows' waste and deadline figures from the schedule."""
        out: dict[str, np.ndarray] = {}
        for i in range(1, self.slots + 1):
            out[f"schedule{i}_start_h"] = np.full(self.n, np.nan)
            out[f"schedule{i}_interval_min"] = np.full(self.n, np.nan)
            out[f"schedule{i}_rate_factor"] = np.full(self.n, np.nan)
            out[f"schedule{i}_interval_stated"] = np.full(self.n, np.nan)
        out["schedule1_start_h"][:] = 0.0
        out["schedule1_rate_factor"][:] = 1.0
        out["schedule1_interval_min"][:] = chosen
        out["schedule1_interval_stated"][:] = self.given
        out["single_interval_min"] = np.array(new["exact_interval_min"], dtype=float, copy=True)
        out["single_interval_wall_h"] = new["useful_h"] / (1.0 - np.asarray(new["waste_fraction_at_optimum"]))
        for key in ("waste_fraction", "p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99",
                    "deadline_approximation_ok"):
            out[key] = np.array(new[key], copy=True)
        for r, plan in zip(self.rows, self.plans):
            for i, (s, f, T) in enumerate(zip(plan["starts_min"], plan["factors"], plan["intervals"]), start=1):
                out[f"schedule{i}_start_h"][r], out[f"schedule{i}_interval_min"][r] = s / 60.0, T
                out[f"schedule{i}_rate_factor"][r] = f
                out[f"schedule{i}_interval_stated"][r] = float(plan["stated"][i - 1]) if "stated" in plan \
                    else float(self.given[r])
            out["single_interval_min"][r] = plan["single_interval"]
            out["single_interval_wall_h"][r] = plan["single_total"] / 60.0
            e = plan["expectation"]
            out["waste_fraction"][r] = 1.0 - e["useful"] / e["total"]
            wall = plan["simulated_wall"]
            out["p_finish_by_deadline"][r] = np.mean(wall <= deadline_min[r]) if deadline_min[r] == deadline_min[r] \
                else np.nan
            for q, key in ((50, "wall_h_p50"), (90, "wall_h_p90"), (99, "wall_h_p99")):
                out[key][r] = np.percentile(wall, q) / 60.0
            out["deadline_approximation_ok"][r] = True
        return out


def _phase_plan(wr: float, C: float, Mr: float, R: float, s: list[float], f: list[float], fixed: np.ndarray
                ) -> dict[str, Any]:
    """One row's failure-phase schedule: the stated intervals (``fixed``, NaN where none) held, the others optimised."""
    from .phases import optimal_schedule, per_phase_optima

    best = optimal_schedule(wr, C, Mr, R, s, f, fixed)
    plan = {"intervals": best["intervals"], "expectation": best["schedule"]}
    plan.update(single_interval=best["single_interval"], single_total=best["single"]["total"], starts_min=s,
                factors=f, per_phase=per_phase_optima(C, Mr, f))
    return plan


def _weibull_plan(wr: float, C: float, Mr: float, R: float, k: float, chosen: float, D: float = 0.0, W: float = 0.0,
                  sd: float = 0.0, spot: tuple[float, float, float] = (np.inf, 0.0, 0.0)) -> dict[str, Any]:
    """One row's Weibull schedule (:mod:`ckptplan.engine.weibull_schedule`; its own interval for the whole run
    when it chooses one); ``factors``: each window's mean failure rate over the constant rate ``1/M``. ``spot``:
    the row's preemptions ``(P, N, Wc)`` (``P = inf``: none); with them the plan carries its ``wait`` and
    ``preemptions`` (what :meth:`ckptplan.engine.preemption_table.PreemptionPlan.take_schedules` reads)."""
    from .weibull_schedule import cumulative_hazard, optimal_weibull_schedule, weibull_expectation

    P, N, Wc = spot
    extra = {"P": P, "N": N, "Wc": Wc} if np.isfinite(P) else {}
    best = optimal_weibull_schedule(wr, C, Mr, R, k, D, W, sd, **extra)
    if chosen == chosen:
        s, T = np.array([0.0]), np.array([float(chosen)])
        e = weibull_expectation(wr, s, T, C, Mr, R, k, D=D, W=W, slowdown=sd, **extra)
    else:
        s, T, e = best["starts"], best["intervals"], best["schedule"]
    ends = np.append(s[1:], max(e["total"], s[-1] * 1.5))
    f = (cumulative_hazard(ends, Mr, k) - cumulative_hazard(s, Mr, k)) / (ends - s) * Mr
    plan = {"intervals": T, "expectation": e, "single_interval": best["single_interval"],
            "single_total": best["single"]["total"], "starts_min": list(s), "factors": list(f), "weibull_shape": k}
    if extra:
        plan.update(wait=e["wait"], preemptions=e["preemptions"])
    return plan


def _weibull_plan_checked(label: Any, wr: float, C: float, Mr: float, R: float, k: float, chosen: float,
                          D: float = 0.0, W: float = 0.0, sd: float = 0.0,
                          spot: tuple[float, float, float] = (np.inf, 0.0, 0.0)) -> dict[str, Any]:
    """:func:`_weibull_plan`, refused by name when the job would not finish in any sense a plan means (judged first
    on the constant-rate plan's failures, then on the schedule's) or a figure is not finite."""
    from .waste import exact_optimal_interval_kernel, time_breakdown_kernel

    rule = f"{NEVER_FINISHES} (failures come faster than a save and a restart, or more than {MAX_INTERRUPTIONS:,} " \
           "are expected in one run)"
    with np.errstate(all="ignore"):
        T0 = exact_optimal_interval_kernel(C, Mr, W, sd)
        flat = time_breakdown_kernel(wr, T0, C, Mr, R, W, sd, D) if np.isfinite(T0) and T0 > 0 else None
        if flat is None or not (np.isfinite(flat["total"]) and flat["failures"] <= MAX_INTERRUPTIONS):
            raise InputError(f"row {label}: weibull_shape_from_start", k, rule)
        plan = _weibull_plan(wr, C, Mr, R, k, chosen, D, W, sd, spot)
    e = plan["expectation"]
    if not (np.isfinite(e["total"]) and np.all(np.isfinite(plan["intervals"])) and e["failures"] <= MAX_INTERRUPTIONS):
        raise InputError(f"row {label}: weibull_shape_from_start", k, rule)
    return plan


#: most saves one run of a schedule may take: its expectation and its simulation follow every segment
MAX_SCHEDULE_SAVES = 20_000


def _refuse_too_many_saves(label: Any, wr: float, C: float, M_peak: float, chosen: float) -> None:
    """Refuse by name a schedule whose run would take more than MAX_SCHEDULE_SAVES saves (judged on the chosen
    interval, else the constant-rate optimum at the highest rate)."""
    from .waste import exact_optimal_interval_kernel

    with np.errstate(all="ignore"):
        T = chosen if chosen == chosen else float(exact_optimal_interval_kernel(C, M_peak, 0.0, 0.0))
        saves = wr / T if T > 0 else np.inf
    if not saves <= MAX_SCHEDULE_SAVES:
        name, value = ("interval_min", chosen) if chosen == chosen else ("checkpoint_stall_min", C)
        raise InputError(f"row {label}: {name}", value, f"gives about {saves:.3g} saves per run: a schedule (failure "
                         f"phases, a Weibull shape from the start) is planned and simulated save by save, at most "
                         f"{MAX_SCHEDULE_SAVES:,} per run (a longer interval, or plan a constant rate)")


def _refuse_unmodelled(table: pd.DataFrame, cols: dict[str, np.ndarray], r: int, what: str) -> None:
    """A background write with a downtime on a row with a schedule: refused by name, with the reason."""
    W = float(cols["async_write_min"][r])
    D = float(np.nan_to_num(cols["downtime_min"][r])) if "downtime_min" in cols else 0.0
    if W > 0 and D > 0:
        raise InputError(f"row {table.index[r]}: async_write_min", W, f"must be 0 with {what} and a downtime (the "
                         "schedule's expectation with background writes takes the whole restart as time the job can "
                         "fail in; with a wait for a node it plans synchronous saves): plan one or the other")


def phase_schedules(table: pd.DataFrame, cols: dict[str, np.ndarray], M: np.ndarray, work: np.ndarray
                    ) -> PhaseSchedules | None:
    """The schedule of every row with failure phases or a Weibull intensity (None when there is none)."""
    indices = phase_indices(table.columns)
    weib = weibull_rows(cols)
    if not indices and not weib.any():
        return None
    n = len(table)
    starts_h = np.column_stack([cols[f"phase{i}_start_h"] for i in indices]) if indices else np.full((n, 1), np.nan)
    factors = np.column_stack([cols[f"phase{i}_rate_factor"] for i in indices]) if indices else np.full((n, 1), np.nan)
    stated = np.column_stack([np.asarray(cols[f"phase{i}_interval_min"], dtype=float) if f"phase{i}_interval_min" in cols
                              else np.full(n, np.nan) for i in indices]) if indices else np.full((n, 1), np.nan)
    phased = ~np.isnan(starts_h).all(axis=1)
    if np.any(phased & weib):
        p = int(np.flatnonzero(phased & weib)[0])
        raise InputError(f"row {table.index[p]}: weibull_shape_from_start", float(cols["weibull_shape_from_start"][p]),
                         "give failure phases or a Weibull shape from the start, not both (each is the failure "
                         "rate over the whole run)")
    rows = np.flatnonzero(phased | weib)
    planned = _plain_phase_plans(cols, np.flatnonzero(phased), M, work, (starts_h, factors, stated))
    plans, slots = [], 1
    for r in rows:
        plan = _row_plan(table, cols, r, float(M[r]), float(work[r]), (starts_h[r], factors[r], stated[r]),
                         bool(weib[r]), planned.get(int(r)))
        plans.append(plan)
        slots = max(slots, len(plan["starts_min"]))
    return PhaseSchedules(rows, plans, n, slots, (~np.isnan(np.asarray(cols["interval_min"], dtype=float))).astype(float))


def _row_phases(phase_cells: tuple[np.ndarray, ...], chosen: float) -> tuple[list[float], list[float], np.ndarray]:
    """A row's phase starts (minutes, a phase at 0 with the constant rate ahead of a first phase that starts later),
    rate factors and stated intervals (a phase's own wins; the row's ``interval_min`` fills the rest; NaN: none)."""
    starts_h, factors, stated = phase_cells
    given = ~np.isnan(starts_h)
    s, f, fixed = list(starts_h[given] * 60.0), list(factors[given]), list(stated[given])
    if s[0] > 0:
        s, f, fixed = [0.0] + s, [1.0] + f, [np.nan] + fixed
    return s, f, np.where(np.isnan(fixed), chosen, fixed)


def _plain_phase_plans(cols: dict[str, np.ndarray], rows: np.ndarray, M: np.ndarray, work: np.ndarray,
                       phase_cells: tuple[np.ndarray, ...]) -> dict[int, dict[str, Any]]:
    """The schedules of every row with plain failure phases (no preemptions, downtime or background write, a save
    that takes time), all rows at once (:func:`ckptplan.engine.phases.optimal_schedules`, the search a one-row
    :func:`ckptplan.engine.phases.optimal_schedule` runs too); by row. The other rows are planned one by one."""
    from .phases import expectation_row, optimal_schedules

    def plain(r: int) -> bool:
        P, _, _, D = _interruptions(cols, r)
        return not (np.isfinite(P) or D > 0 or cols["async_write_min"][r] > 0) and cols["checkpoint_stall_min"][r] > 0

    rows = [int(r) for r in rows if plain(int(r))]
    if not rows:
        return {}
    cells = [_row_phases(tuple(c[r] for c in phase_cells), float(cols["interval_min"][r])) for r in rows]
    K = max(len(c[0]) for c in cells)

    def pad(v: Any) -> np.ndarray:
        return np.concatenate([np.asarray(v, dtype=float), np.full(K - len(v), np.nan)])

    R = np.maximum(np.asarray(cols["restart_min"], dtype=float)[rows], 0.0)
    best = optimal_schedules(work[rows], cols["checkpoint_stall_min"][rows], M[rows], R,
                             np.array([pad(c[0]) for c in cells]), np.array([pad(c[1]) for c in cells]),
                             np.array([pad(c[2]) for c in cells]))
    out = {}
    for i, (r, (s, f, _)) in enumerate(zip(rows, cells)):
        k = len(s)
        out[r] = {"intervals": best["intervals"][i, :k], "expectation": expectation_row(best["schedule"], i, k),
                  "single_interval": float(best["single_interval"][i]),
                  "single_total": float(best["single"]["total"][i]), "starts_min": s, "factors": f,
                  "per_phase": best["per_phase"][i, :k]}
    return out


def _interruptions(cols: dict[str, np.ndarray], r: int) -> tuple[float, float, float, float]:
    """A row's (mean time between preemptions ``P``, notice ``N``, capacity wait ``Wc``, downtime ``D``), minutes;
    ``P = inf`` without preemptions."""
    def cell(name: str) -> float:
        v = float(cols[name][r]) if name in cols else 0.0
        return 0.0 if v != v else v

    rate = cell("preemptions_per_h")
    with np.errstate(over="ignore", divide="ignore"):
        P = 60.0 / rate if rate > 0 else np.inf
    return float(P), cell("preemption_notice_min"), cell("capacity_wait_min"), cell("downtime_min")


def _row_plan(table: pd.DataFrame, cols: dict[str, np.ndarray], r: int, Mr: float, wr: float,
              phase_cells: tuple[np.ndarray, np.ndarray, np.ndarray], weib: bool,
              planned: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row's schedule (failure phases or a Weibull intensity; with preemptions or a downtime, the model of
    :mod:`ckptplan.engine.schedule_interruptions`) and its simulated wall times. ``phase_cells``: the row's phase
    starts (h), rate factors and stated intervals (NaN: none stated); ``planned``: its plain schedule, planned with
    the table's (:func:`_plain_phase_plans`)."""
    from .phases_montecarlo import simulate_schedule
    from .schedule_async_montecarlo import simulate_async_schedule
    from .schedule_interruptions_montecarlo import simulate_interrupted_schedule
    from .weibull_montecarlo import simulate_weibull_schedule, weibull_failure_draw

    C, chosen = float(cols["checkpoint_stall_min"][r]), float(cols["interval_min"][r])
    W, sd = float(cols["async_write_min"][r]), float(cols["async_slowdown_fraction"][r])
    P, N, Wc, D = _interruptions(cols, r)
    R = max(float(cols["restart_min"][r]) - D, 0.0)   # the exposed restart (engine.scenario's split)
    starts_h, factors, stated = phase_cells
    peak = 1.0 if weib else max(1.0, float(np.nanmax(factors)))
    _refuse_too_many_saves(table.index[r], wr, C, Mr / peak, chosen if weib or np.isnan(stated).all()
                           else float(np.nanmin(np.append(stated, chosen))))
    if "on_node_loss" in cols and cols["on_node_loss"][r] > 0:   # engine.elastic_table: 1.0 = continue
        raise InputError(f"row {table.index[r]}: on_node_loss", "continue", "a job that trains on through failures "
                         "is planned at a constant failure rate: give failure phases or a Weibull shape from the "
                         "start to a job that restarts, not both")
    interrupted = np.isfinite(P) or D > 0
    if weib:
        _refuse_unmodelled(table, cols, r, "a Weibull shape from the start")
        plan = _weibull_plan_checked(table.index[r], wr, C, Mr, R, float(cols["weibull_shape_from_start"][r]),
                                     chosen, D, W, sd, (P, N, Wc))
    else:
        _refuse_unmodelled(table, cols, r, "failure phases")
        s, f, fixed = _row_phases(phase_cells, chosen)
        if planned is not None:
            plan = dict(planned)
        elif interrupted:
            plan = _interrupted_plan(wr, C, Mr, R, s, f, fixed, P, N, Wc, D)
        elif W > 0:
            plan = _async_plan(wr, C, Mr, R, W, sd, s, f, fixed)
        else:
            plan = _phase_plan(wr, C, Mr, R, s, f, fixed)
        plan["stated"] = ~np.isnan(fixed)
    e = plan["expectation"]
    if not e["failures"] + e.get("preemptions", 0.0) <= MAX_INTERRUPTIONS:   # the simulation would not end
        name = "weibull_shape_from_start" if weib else "failure_phases"
        raise InputError(f"row {table.index[r]}: {name}", f"{len(plan['factors'])} window(s)",
                         f"{NEVER_FINISHES} (about {e['failures'] + e.get('preemptions', 0.0):.3g} failures and "
                         f"preemptions expected in one run, more than {MAX_INTERRUPTIONS:,})")
    if weib and W > 0:
        sim = simulate_async_schedule(wr, plan["starts_min"], plan["factors"], plan["intervals"], C, Mr, R, W, sd,
                                      runs=DEFAULT_RUNS, seed=DEFAULT_SEED,
                                      failure_draw=weibull_failure_draw(Mr, plan["weibull_shape"]))
    elif weib and interrupted:
        sim = simulate_interrupted_schedule(wr, plan["starts_min"], plan["factors"], plan["intervals"], C, Mr, R, P,
                                            N, Wc, D, runs=DEFAULT_RUNS, seed=DEFAULT_SEED,
                                            failure_draw=weibull_failure_draw(Mr, plan["weibull_shape"]))
    elif weib:
        sim = simulate_weibull_schedule(wr, plan["starts_min"], plan["intervals"], C, Mr, R, plan["weibull_shape"],
                                        runs=DEFAULT_RUNS, seed=DEFAULT_SEED)
    elif W > 0:
        sim = simulate_async_schedule(wr, plan["starts_min"], plan["factors"], plan["intervals"], C, Mr, R, W, sd,
                                      runs=DEFAULT_RUNS, seed=DEFAULT_SEED)
    elif interrupted:
        sim = simulate_interrupted_schedule(wr, plan["starts_min"], plan["factors"], plan["intervals"], C, Mr, R, P,
                                            N, Wc, D, runs=DEFAULT_RUNS, seed=DEFAULT_SEED)
    else:
        sim = simulate_schedule(wr, plan["intervals"], C, Mr, R, plan["starts_min"], plan["factors"],
                                runs=DEFAULT_RUNS, seed=DEFAULT_SEED)
    plan["simulated_wall"] = sim["wall"]
    return plan


def _interrupted_plan(wr: float, C: float, Mr: float, R: float, s: list[float], f: list[float], fixed: np.ndarray,
                      P: float, N: float, Wc: float, D: float) -> dict[str, Any]:
    """One row's failure-phase schedule with preemptions or a downtime (the stated intervals ``fixed`` held, NaN where
    none, the others optimised); refused by name when a figure is not finite."""
    from .schedule_interruptions import interruption_optimal_schedule

    if len(s) == 1 and D == 0:
        return _one_phase_spot_plan(wr, C, Mr / f[0], R, float(fixed[0]), P, N, Wc, s, f)
    with np.errstate(all="ignore"):
        best = interruption_optimal_schedule(wr, C, Mr, R, s, f, P, N, Wc, D, fixed)
        plan = {"intervals": best["intervals"], "expectation": best["schedule"]}
    e = plan["expectation"]
    if not (np.isfinite(e["total"]) and np.all(np.isfinite(plan["intervals"]))):
        raise InputError("failure_phases", f"{len(s)} phase(s)", f"{NEVER_FINISHES} (failures and preemptions come "
                         "faster than a save and a restart: the expected wall time overflows)")
    plan.update(single_interval=best["single_interval"], single_total=best["single"]["total"], starts_min=s,
                factors=f, per_phase=best["per_phase"], wait=e["wait"], preemptions=e["preemptions"])
    return plan


def _one_phase_spot_plan(wr: float, C: float, Mj: float, R: float, chosen: float, P: float, N: float, Wc: float,
                         s: list[float], f: list[float]) -> dict[str, Any]:
    """A single phase on spot capacity: today's spot plan (:mod:`ckptplan.engine.preemption`) at the phase's rate,
    exactly. At the constant rate (factor 1) the row's spot figures (its deadline simulation, its one interval) are
    :class:`ckptplan.engine.preemption_table.PreemptionPlan`'s: the plan leaves them to it (no ``wait`` key)."""
    from .preemption import preemption_breakdown, preemption_optimal_interval

    best = float(preemption_optimal_interval(C, Mj, R, P, N, Wc))
    T = float(chosen) if chosen == chosen else best

    def at(interval: float) -> dict[str, float]:
        return {k: float(v) for k, v in preemption_breakdown(wr, interval, C, Mj, R, P, N, Wc).items()}

    e, single = at(T), at(best)
    plan = {"intervals": np.array([T]), "expectation": e, "single_interval": best, "single_total": single["total"],
            "starts_min": s, "factors": f, "per_phase": np.array([best])}
    if f[0] != 1.0:
        plan.update(wait=e["wait"], preemptions=e["preemptions"])
    return plan


def _async_plan(wr: float, C: float, Mr: float, R: float, W: float, sd: float, s: list[float], f: list[float],
                fixed: np.ndarray) -> dict[str, Any]:
    """One row's failure-phase schedule with asynchronous saves (:mod:`ckptplan.engine.schedule_async`; the stated
    intervals ``fixed`` held, NaN where none, the others optimised)."""
    from .schedule_async import async_optimal_schedule

    best = async_optimal_schedule(wr, C, Mr, R, W, sd, s, f, fixed)
    plan = {"intervals": best["intervals"], "expectation": best["schedule"]}
    plan.update(single_interval=best["single_interval"], single_total=best["single"]["total"], starts_min=s,
                factors=f, per_phase=best["per_phase"])
    return plan
