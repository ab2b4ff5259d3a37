"""Whole-scenario Excel functions: a tornado as a spilled range, a break-even, a target, a failure-phase schedule
and the plan on spot capacity.

The companion of :mod:`.udfs` and :mod:`.udfs_setup`, with their conventions (:mod:`.cells`): nothing
raises, a bad argument answers with one readable ``#CKPT!`` message, at most 250,000 cells per
argument. A plan here is a whole scenario, so it comes as two ranges side by side: field names (the
registry's: ``node_mtbf_h``, ``aggregate_write_gb_s`` ...) and their values; a blank value is a field
not given (a blank stall or restart is derived from the storage and recovery setup, as everywhere).
Text fields (the registry's: ``name``, ``currency``, ``failure_rate_source``, ``on_node_loss`` ...) may be among them. A design is a third
range beside them, as on the Compare sheet: a value sets that field, a blank keeps the baseline's.

* :func:`CKPT_TORNADO`: each input swung from its low to its high, the others at base, ranked by the
  size of the swing of one output; a spilled range with a header row
  (:func:`ckptplan.engine.sensitivity.tornado`);
* :func:`CKPT_BREAK_EVEN`: the value of one input at which the design's saving against the
  baseline is zero (:func:`ckptplan.engine.sensitivity.break_even`), or the reason there is none;
* :func:`CKPT_TARGET`: the value of one input that reaches a goodput, P(finish) or cost per useful
  GPU-hour (:func:`ckptplan.engine.targets.target`), or the reason it cannot;
* :func:`CKPT_SCHEDULE`: the checkpoint schedule of a failure rate that changes over the run (phases
  as two columns, start hours and rate factors: ``[[failure_phases]]``), a spilled range with a header
  row, one row per phase (:mod:`ckptplan.engine.phases`, as ``plan --json``'s ``schedule``);
* :func:`CKPT_SPOT_PLAN`: the plan on preemptible capacity (the fields ``preemptions_per_h``,
  ``preemption_notice_min``, ``capacity_wait_min``, ``spot_price_per_gpu_hour`` among the names), a
  spilled range of figures (:mod:`ckptplan.engine.preemption`; the deadline answer simulated, as ``plan``).

Each is the engine function on the same plan, so a cell equals ``ckptplan sensitivity``,
``compare --break-even`` and ``target`` for the same scenario.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.fields import TEXT_FIELDS
from .cells import ERROR_PREFIX, CallError, as_array, udf

__all__ = ["CKPT_BREAK_EVEN", "CKPT_SCHEDULE", "CKPT_SPOT_PLAN", "CKPT_TARGET", "CKPT_TORNADO"]

_NAMES = "A range of field names (the registry's, e.g. node_mtbf_h), one per value."
_VALUES = "The fields' values, the same shape as the names (blank = not given)."
_TEXT_FIELDS = tuple(TEXT_FIELDS)   # the registry's text fields (name, currency, on_node_loss ...)


def _cells(name: str, value: Any) -> list:
    """A range's cells, row by row, as Python values (blank = None)."""
    return [None if v is None or (isinstance(v, float) and v != v) else v
            for v in as_array(name, value).reshape(-1).tolist()]


def _plan(names: Any, values: Any, design: Any = None, phases: list | None = None) -> tuple[Any, Any]:
    """The plan (files.plans.PlanFile) the ranges describe, and the design (a column: blank = baseline's);
    ``phases``: ``[[failure_phases]]`` tables to add."""
    from ..engine.designs import Design
    from ..files.plans import plan_from_data

    keys, vals = _cells("names", names), _cells("values", values)
    if len(keys) != len(vals):
        raise CallError(f"{ERROR_PREFIX} values: must have as many cells as names ({len(vals)} for {len(keys)})")
    table: dict[str, Any] = {"name": "plan"}
    for k, v in zip(keys, vals):
        if k is None:
            continue
        if not isinstance(k, str):
            raise CallError(f"{ERROR_PREFIX} names: {_shown(k)} is not a field name"[:255])
        if v is not None:
            table[k.strip()] = v if k.strip() in _TEXT_FIELDS else _number(k.strip(), v)
    if phases:
        table["failure_phases"] = phases
    try:
        plan = plan_from_data({"scenario": table}, origin="plan")
        if design is None:
            return plan, None
        changes = _cells("design", design)
        if len(changes) != len(keys):
            raise CallError(f"{ERROR_PREFIX} design: must have as many cells as names ({len(changes)} for "
                            f"{len(keys)})")
        sets = {k.strip(): _number(k.strip(), v) for k, v in zip(keys, changes) if k is not None and v is not None}
        return plan, Design("design", set=sets)
    except ValueError as exc:
        raise CallError(_message(exc)) from None


def _number(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise CallError(f"{ERROR_PREFIX} {name}: must be a number (got {_shown(v)})"[:255])
    try:
        return float(v)
    except OverflowError:   # an integer beyond the float range
        raise CallError(f"{ERROR_PREFIX} {name}: must be a finite number (got an integer of {len(str(abs(v)))} "
                        "digits)") from None


def _shown(v: Any) -> str:
    """A cell's value as a message shows it: at most 40 characters."""
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _message(exc: ValueError) -> str:
    return f"{ERROR_PREFIX} {exc}"[:255]


@udf(names=_NAMES, values=_VALUES,
     inputs="A range of the input names to swing (fields among the names).",
     lows="Each input's low end, the same shape as inputs.", highs="Each input's high end, the same shape as inputs.",
     output="Optional. The figure swung: total_cost (default), wall_h, goodput or p_finish_by_deadline.")
def CKPT_TORNADO(names, values, inputs, lows, highs, output="total_cost"):
    """The inputs ranked by their swing of one output: a spilled range (input, low, high, at low, at high, swing).

    Each input at its low, then its high, every other at its value in the plan (ckptplan sensitivity;
    swing = at low - at high, largest first).
    """
    from ..engine.sensitivity import SWING_OUTPUTS, tornado
    from ..engine.uncertainty import uncertainty_from_dict

    output = "total_cost" if output is None else output
    if not isinstance(output, str) or output not in SWING_OUTPUTS:
        return f"{ERROR_PREFIX} output: must be one of {', '.join(SWING_OUTPUTS)} (got {_shown(output)})"[:255]
    plan, _ = _plan(names, values)
    fields, lo, hi = _cells("inputs", inputs), _cells("lows", lows), _cells("highs", highs)
    if not len(fields) == len(lo) == len(hi):
        return f"{ERROR_PREFIX} lows, highs: must have one cell per input"
    try:
        ranges = {str(f).strip(): [_number("lows", a), _number("highs", b)] for f, a, b in zip(fields, lo, hi)
                  if f is not None}
        inputs_ = uncertainty_from_dict(ranges, plan.scenario, plan.setup, origin="inputs")
        table = tornado(plan.scenario, plan.setup, (), inputs_, outputs=(output,))
    except ValueError as exc:
        return _message(exc)
    rows = [["input", "low", "high", f"{output} at low", f"{output} at high", "swing"]]
    for r in table.itertuples():
        rows.append([r.input, r.low, r.high, _cell(r.at_low), _cell(r.at_high), _cell(r.swing)])
    return rows


def _cell(v: float) -> Any:
    return None if v != v else float(v)


@udf(names=_NAMES, values=_VALUES,
     design="The design's values beside the names: a value sets that field, blank = the baseline's.",
     field="The input whose break-even value is solved for (a field name).",
     lo="The low end of the range searched.", hi="The high end of the range searched.")
def CKPT_BREAK_EVEN(names, values, design, field, lo, hi):
    """The value of one input at which the design's saving against the baseline is zero (ckptplan compare
    --break-even); text when it pays off over the whole range or never, and why."""
    from ..engine.sensitivity import break_even

    plan, d = _plan(names, values, design)
    if d is None:   # a blank design argument
        return f"{ERROR_PREFIX} design: give the design's values beside the names (blank = the baseline's)"
    try:
        row = break_even(plan.scenario, plan.setup, (d,), str(field).strip(), _number("lo", lo), _number("hi", hi)
                         ).iloc[0]
    except ValueError as exc:
        return _message(exc)
    return float(row["break_even"]) if not np.isnan(row["break_even"]) else str(row["why"])[:255]


@udf(names=_NAMES, values=_VALUES, solve="The input to solve for (a field name), e.g. aggregate_write_gb_s.",
     goal="The goal: goodput, p_finish or cost_per_useful_gpu_hour.", target="The goal's value, e.g. 0.95.")
def CKPT_TARGET(names, values, solve, goal, target):
    """The value of one input that reaches a goal (ckptplan target): a goodput, P(finish by the deadline) or a
    cost per useful GPU-hour; text saying why when this input alone cannot reach it."""
    from ..engine.targets import target as solve_target

    plan, _ = _plan(names, values)
    try:
        row = solve_target(plan.scenario, plan.setup, str(solve).strip(), str(goal).strip(), _number("target", target))
    except ValueError as exc:
        return _message(exc)
    return float(row[str(solve).strip()]) if row["reachable"] else str(row["why"])[:255]


def _phases(starts_h: Any, rate_factors: Any, intervals_min: Any = None) -> list[dict[str, float]]:
    """``[[failure_phases]]`` tables from two ranges of the same size (blank pairs skipped), and optionally a third,
    each phase's stated ``interval_min`` (blank: optimised)."""
    starts, factors = _cells("starts_h", starts_h), _cells("rate_factors", rate_factors)
    if len(starts) != len(factors):
        raise CallError(f"{ERROR_PREFIX} rate_factors: must have one cell per start ({len(factors)} for {len(starts)})")
    intervals = [None] * len(starts) if intervals_min is None else _cells("intervals_min", intervals_min)
    if len(intervals) != len(starts):
        raise CallError(f"{ERROR_PREFIX} intervals_min: must have one cell per start ({len(intervals)} for "
                        f"{len(starts)})")
    out = []
    for s, f, t in zip(starts, factors, intervals):
        if s is None and f is None:
            if t is not None:
                raise CallError(f"{ERROR_PREFIX} intervals_min: an interval needs its phase (start and rate factor)")
            continue
        if s is None or f is None:
            raise CallError(f"{ERROR_PREFIX} starts_h, rate_factors: give both cells of a phase, or neither")
        out.append({"start_h": _number("starts_h", s), "rate_factor": _number("rate_factors", f)})
        if t is not None:
            out[-1]["interval_min"] = _number("intervals_min", t)
    if not out:
        raise CallError(f"{ERROR_PREFIX} starts_h: give at least one phase (start hour and rate factor)")
    return out


def _evaluated(plan: Any) -> Any:
    """The plan's engine row (engine.setup.plan_setup: the setup's stall and restart, as `ckptplan plan`)."""
    from ..engine.setup import plan_setup

    return plan_setup(plan.scenario, plan.setup).row


@udf(names=_NAMES, values=_VALUES,
     starts_h="The phases' start hours from the job's start, a column (increasing; a first phase at 0 is added at "
              "rate 1 when none starts there).",
     rate_factors="Each phase's factor on the job failure rate, the same shape as starts_h.",
     intervals_min="Optional: each phase's stated interval (minutes; blank: optimised), the same shape as starts_h.")
def CKPT_SCHEDULE(names, values, starts_h, rate_factors, intervals_min=None):
    """The checkpoint schedule when the failure rate changes over the run: a spilled range (start_h, rate_factor,
    interval_min), one row per phase, then the schedule's expected wall time and the best single interval's.

    Each phase's interval is optimised with the phase boundaries handled exactly (ckptplan plan; Daly's model per
    phase). A chosen interval_min among the names is used in every phase without its own; a phase's stated interval
    (intervals_min) wins for its phase and the others are optimised around it.
    """
    plan, _ = _plan(names, values, phases=_phases(starts_h, rate_factors, intervals_min))
    try:
        row = _evaluated(plan)
    except ValueError as exc:
        return _message(exc)
    rows: list[list[Any]] = [["start_h", "rate_factor", "interval_min"]]
    i = 1
    while f"schedule{i}_start_h" in row.index and row[f"schedule{i}_start_h"] == row[f"schedule{i}_start_h"]:
        rows.append([float(row[f"schedule{i}_start_h"]), float(row[f"schedule{i}_rate_factor"]),
                     float(row[f"schedule{i}_interval_min"])])
        i += 1
    rows.append(["wall_h", None, float(row["wall_h"])])
    rows.append(["single_interval_min", None, float(row["single_interval_min"])])
    rows.append(["single_interval_wall_h", None, float(row["single_interval_wall_h"])])
    return rows


#: the figures CKPT_SPOT_PLAN spills, in order (engine.evaluate columns)
SPOT_FIGURES = ("exact_interval_min", "chosen_interval_min", "wall_h", "capacity_wait_h", "expected_failures",
                "expected_preemptions", "waste_fraction", "total_gpu_hours", "total_cost", "goodput",
                "cost_per_useful_gpu_hour", "p_finish_by_deadline")


@udf(names=_NAMES, values=_VALUES)
def CKPT_SPOT_PLAN(names, values):
    """The plan on preemptible capacity: a spilled range (figure, value) of the interval for failures and preemptions,
    the expected wall time (capacity waits included), the GPU-hours held and their cost at the spot price, and
    P(finish by the deadline) (simulated, 10,000 runs, seed 0, as ckptplan plan; blank without a deadline).

    preemptions_per_h (the job's rate), preemptions_per_node_h (the node's: the job's is nodes x it) or
    preemption_rate_source (a published band, ``ckptplan preemption-rates``) must be among the names, the rate
    above 0 (with none, the plan is the on-demand one).
    """
    plan, _ = _plan(names, values)
    from ..engine.spot_rates import scenario_preemptions_per_h

    if not scenario_preemptions_per_h(plan.scenario):
        return (f"{ERROR_PREFIX} preemptions_per_h: must be given and > 0, or preemptions_per_node_h or "
                "preemption_rate_source (the plan on spot capacity)")
    try:
        row = _evaluated(plan)
    except ValueError as exc:
        return _message(exc)
    return [["figure", "value"]] + [[key, _cell(float(row[key]))] for key in SPOT_FIGURES]
