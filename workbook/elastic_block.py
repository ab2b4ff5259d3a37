"""Elastic continuation in the workbook: its inputs' checks, the elastic plan's figures, the recovery strategies.

The elastic plan (:mod:`ckptplan.engine.elastic`) is a renewal over save-to-save attempts of a chain of replicas
out, solved with matrix exponentials (Van Loan's block integrals): no spreadsheet formula evaluates it. So, as the
break-even and target blocks (:mod:`workbook.engine_block`), the workbook holds the engine's values computed
when it was built, with a live status: "up to date" while every input they depend on (the Inputs sheet's scenario
inputs, its elastic block, the recovery setup) equals the value used, else "OUT OF DATE: ..." naming the inputs
changed since (:func:`workbook.engine_block.status_row`).

* :func:`elastic_problems`: the Inputs sheet's elastic cells against their registry rules (each cell's own rule,
  ``on_node_loss`` restart or continue, and the engine's rules between fields: a whole number of replicas, a floor
  at most the replicas and at most :data:`ckptplan.engine.elastic.MAX_REPLICAS_OUT` below them), in words, for the
  Plan sheet's Input check.
* :func:`elastic_plan_rows`: the Plan sheet's top rows for a job that continues on node loss (:func:`continues`):
  the engine's elastic plan (:func:`ckptplan.engine.setup.plan_setup`, as ``ckptplan plan`` prints it). The live
  rows under them, and every other sheet, plan the same job stopping at every failure, and say so
  (:data:`STOP_AND_RESTART_SHEET`).
* :func:`strategy_block`: the Compare sheet's four recovery strategies side by side (wait for a node, hot spares,
  elastic, elastic + spares: :func:`ckptplan.engine.strategies.recovery_strategies`, as ``ckptplan compare``), for a
  job made of replicas with a spare pool (:func:`shows_strategies`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from openpyxl.styles import Alignment, Font

from ..engine.elastic import MAX_REPLICAS_OUT
from ..engine.errors import InputError
from ..engine.fields import ELASTIC_FIELD_NAMES, ELASTIC_OUTPUT_FIELDS, TEXT_FIELDS
from . import design_formulas as D
from . import formulas as F
from . import pages
from . import style as S
from .engine_block import stale_groups, status_row

__all__ = ["DEADLINE_ROWS", "ELASTIC_HEADING", "ON_NODE_LOSS_ROW", "STOP_AND_RESTART_SHEET", "STOP_AND_RESTART_VIEW", "STRATEGY_HEADING",
           "STRATEGY_ROWS", "continues", "refuse_elastic_changes", "elastic_problems", "elastic_plan_rows", "shows_strategies",
           "strategy_block"]

ELASTIC_HEADING = ("The plan: elastic continuation (on_node_loss = continue): the engine's exact plan, computed when "
                   "this workbook was built (values, not formulas)")
STRATEGY_HEADING = ("Recovery strategies side by side: wait for a node, hot spares, elastic, elastic + spares (the "
                    "engine's, as ckptplan compare, computed when this workbook was built)")
#: the Plan sheet's label over its live rows when the job continues on node loss
STOP_AND_RESTART_VIEW = ("Stop-and-restart view, for comparison only (not the plan): the same job if it stopped and "
                         "restarted at every failure (on_node_loss = restart)")
#: what every other sheet that plans the baseline says first when the job continues on node loss
STOP_AND_RESTART_SHEET = ("STOP-AND-RESTART VIEW: on_node_loss = continue, and this sheet's live formulas plan the job "
                          "as if it stopped and restarted at every failure. The elastic plan (engine values) is the "
                          "Plan sheet's top rows; the recovery strategies are on the Compare sheet.")

#: the elastic plan's rows: (figure key of :func:`ckptplan.engine.setup.plan_setup`, label, unit, number format)
_OUTPUT = {f.name: f for f in ELASTIC_OUTPUT_FIELDS}
_CALC = {c.key: c for c in D.PLAN_CALCS}
_PLAN_ROWS = (
    ("interval_min", _CALC["chosen_interval_min"].label.replace("exact optimum", "elastic optimum"), "min", F.MINUTES),
    ("waste_fraction", "Waste at that interval (share of wall time: saves, rework, restarts, pauses, throughput lost "
     "while shrunk)", "share", F.PERCENT),
    ("wall_h", _CALC["wall_h"].label, "h", F.HOURS),
    ("expected_failures", _CALC["expected_failures"].label, "failures", "#,##0.0"),
    ("expected_shrinks", _OUTPUT["expected_shrinks"].label, "shrinks", "#,##0.0"),
    ("expected_stops", _OUTPUT["expected_stops"].label, "stops", "#,##0.00"),
    ("replicas", _OUTPUT["replicas"].label, "replicas", "#,##0"),
    ("mean_replicas_running", _OUTPUT["mean_replicas_running"].label, "replicas", "#,##0.000"),
    ("shrunk_h", _OUTPUT["shrunk_h"].label, "h", F.HOURS),
    ("goodput", _CALC["goodput"].label, "share", F.PERCENT),
    ("compute_cost", _CALC["compute_cost"].label, "money", F.MONEY),
    ("storage_cost", _CALC["storage_cost"].label, "money", F.MONEY),
    ("spare_cost", _CALC["spare_cost"].label, "money", F.MONEY),
    ("total_cost", _CALC["total_cost"].label, "money", F.MONEY),
    ("cost_per_useful_gpu_hour", _CALC["cost_per_useful_gpu_hour"].label, "money/GPU-h", "#,##0.0000"),
)
_KEY_ROWS = ("interval_min", "waste_fraction", "wall_h", "total_cost", "goodput")
#: the strategy table's rows: (column of :func:`ckptplan.engine.strategies.recovery_strategies`, label, unit, format)
STRATEGY_ROWS = (
    ("on_node_loss", "What the job does at a node loss (on_node_loss)", "", "General"),
    ("spares", "Hot spare nodes", "nodes", "#,##0"),
    ("interval_min", "Interval between saves (each strategy's optimum unless chosen)", "min", F.MINUTES),
    ("waste_fraction", "Waste (share of wall time)", "share", F.PERCENT),
    ("wall_h", "Expected wall time", "h", F.HOURS),
    ("expected_failures", "Expected failures per run, restarts included", "failures", "#,##0.0"),
    ("expected_stops", "Failures that stop the job and roll it back", "stops", "#,##0.0"),
    ("mean_replicas_running", "Replicas running on average", "replicas", "#,##0.00"),
    ("compute_cost", "Cost of the job's GPU time", "money", F.MONEY),
    ("spare_cost", "Spare cost", "money", F.MONEY),
    ("total_cost", "Total cost", "money", F.MONEY),
    ("cost_per_useful_gpu_hour", "Cost per useful GPU-hour", "money/GPU-h", "#,##0.0000"),
    ("vs_cheapest", "Total cost against the cheapest strategy", "money", "+#,##0;-#,##0;0"),
)
#: with a deadline (:data:`ckptplan.engine.strategies.DEADLINE_COLUMNS`): analytic for the strategies that stop at
#: every failure, simulated for the elastic ones (the plan's seeded Monte Carlo), as ``ckptplan compare``
DEADLINE_ROWS = (
    ("p_finish_by_deadline", "P(finish by the deadline): analytic (restart), simulated (continue)", "share", "0.0%"),
    ("wall_h_p50", "Wall time, P50", "h", F.HOURS),
    ("wall_h_p90", "Wall time, P90", "h", F.HOURS),
    ("total_cost_p50", "Total cost, P50 (the total at the wall time's P50)", "money", F.MONEY),
    ("total_cost_p90", "Total cost, P90", "money", F.MONEY),
)
_ON_NODE_LOSS = "on_node_loss"


def _replicas(scenario: Any) -> tuple[int, int]:
    """(replicas, floor) as the engine reads them (blank nodes_per_replica: one replica; blank floor: all)."""
    n = scenario.nodes // (scenario.nodes_per_replica or scenario.nodes)
    return n, n if scenario.min_replicas is None else scenario.min_replicas


def continues(scenario: Any) -> bool:
    """The job trains on through node losses: ``on_node_loss = continue`` with a floor below its replicas (the rows
    :func:`ckptplan.engine.elastic_table.elastic_plan` plans elastically); otherwise its plan is today's."""
    n, floor = _replicas(scenario)
    return scenario.on_node_loss == "continue" and floor < n


def shows_strategies(scenario: Any, setup: Any) -> bool:
    """The Compare sheet prices the recovery strategies when ``ckptplan compare`` does: a job of replicas that may
    train on fewer, and a setup modelling the spare pool (``repair_h`` given, ``reallocation_min`` not)."""
    from ..engine.strategies import elastic_fields_set

    return elastic_fields_set(scenario) and setup.repair_h is not None and setup.reallocation_min is None


def elastic_problems(refs: F.Refs) -> str:
    """Formula text (no "=") naming every elastic input that breaks a rule ("" when none): each numeric cell's registry
    rule (:data:`workbook.formulas.ELASTIC_INPUTS`), ``on_node_loss`` (restart, continue or blank) and the rules
    between fields the engine applies (:func:`ckptplan.engine.elastic_table.elastic_row_problems`); ``refs``: the
    Plan sheet's references (``nodes``)."""
    parts = [F.field_problem(key, field, key) for key, field in F.ELASTIC_INPUTS.items()]
    choices = " or ".join(("restart", "continue"))
    parts.append(f'IF(OR({_ON_NODE_LOSS}="",{_ON_NODE_LOSS}="restart",{_ON_NODE_LOSS}="continue"),"",'
                 f'"{_ON_NODE_LOSS} must be {choices} (or empty = restart); ")')
    nodes, per, floor = refs["nodes"], "nodes_per_replica", "min_replicas"
    whole = f"AND(ISNUMBER({nodes}),{nodes}>=1)"
    per_ok = f"AND(ISNUMBER({per}),{per}>=1,{per}=INT({per}))"
    parts.append(f'IF(AND({whole},{per_ok}),IF({per}>{nodes},"{per} must be <= nodes; ",IF({nodes}/{per}<>'
                 f'INT({nodes}/{per}),"{per} must divide nodes (the job is a whole number of replicas); ","")),"")')
    n = f"IF({per_ok},{nodes}/{per},IF({per}=\"\",1,0))"
    floor_ok = f"AND(ISNUMBER({floor}),{floor}>=1,{floor}=INT({floor}))"
    parts.append(f'IF(AND({whole},{floor_ok},({n})=INT({n}),({n})>=1),IF({floor}>({n}),"{floor} must be <= the '
                 f'replicas, nodes / {per}; ",IF(AND({_ON_NODE_LOSS}="continue",({n})-{floor}>{MAX_REPLICAS_OUT}),'
                 f'"{floor} must be >= replicas - {MAX_REPLICAS_OUT} (the plan solves one state per replica out); ",'
                 f'"")),"")')
    return "&".join(parts)


def _inputs(scenario: Any, with_mode: bool = True) -> list[tuple[str, str, Any]]:
    """(name, live reference, value used) of the Inputs sheet's elastic cells (``with_mode``: ``on_node_loss`` too)."""
    out = [(key, key, getattr(scenario, f.name)) for key, f in F.ELASTIC_INPUTS.items()]
    return out + ([(_ON_NODE_LOSS, _ON_NODE_LOSS, scenario.on_node_loss)] if with_mode else [])


def _status(wb: Any, ws: Any, row: int, scenario: Any, setup: Any, derived: frozenset, choices: list,
            last_col: int, name: str) -> int:
    """The live status at ``row`` (:func:`workbook.engine_block.status_row`), named ``name``; returns the next row."""
    after = status_row(ws, row, stale_groups(scenario, setup, (), choices, derived), last_col)
    S.name(wb, name, ws.title, f"C{row}")
    return after


def elastic_plan_rows(wb: Any, ws: Any, row: int, scenario: Any, setup: Any, derived: frozenset = frozenset()) -> int:
    """The Plan sheet's elastic plan from ``row`` (module notes; ``scenario`` and ``setup`` as given, ``derived``:
    the inputs the setup derives, blank on the Inputs sheet); returns the next free row. Names ``elastic_<key>``."""
    from ..engine.setup import plan_setup

    plan = plan_setup(scenario, setup)
    head = ws.cell(row=row, column=1, value=ELASTIC_HEADING)
    head.font, head.alignment = Font(bold=True), Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[row].height = S.LINE_HEIGHT * S.text_lines(head.value, 62, bold=True)   # column A: 62 wide
    note = ("The elastic plan (a chain of replicas out, solved with matrix exponentials; see Notes) has "
            "no spreadsheet formula: these are the engine's figures for the inputs as built, and the status below "
            "says when one changed. Regenerate: ckptplan workbook --from THIS_FILE.")
    S.note(ws, row + 1, note, 4, lines=S.text_lines(note, 124))
    row += 2
    deadline = () if not math.isfinite(float(plan.figures.get("p_finish_by_deadline") or math.nan)) else (
        ("p_finish_by_deadline", "P(finish by the deadline), simulated (the elastic job's seeded Monte Carlo, as "
         "ckptplan plan)", "share", "0.0%"),)
    for key, label, unit, fmt in _PLAN_ROWS + deadline:
        ws.cell(row=row, column=1, value=label)
        ws.cell(row=row, column=2, value=float(plan.figures[key])).number_format = fmt
        ws.cell(row=row, column=3, value=S.fmt_unit(unit, scenario.currency))
        ws.cell(row=row, column=4, value=f"elastic_{key}").font = S.NOTE_FONT
        if key in _KEY_ROWS:
            for c in range(1, 4):
                ws.cell(row=row, column=c).fill = S.KEY_FILL
            ws.cell(row=row, column=1).font = Font(bold=True)
        S.name(wb, f"elastic_{key}", ws.title, f"B{row}")
        pages.fit_label(ws, row, 62, bold=key in _KEY_ROWS)   # column A: 62 wide
        row += 1
    return _status(wb, ws, row, scenario, setup, derived, _inputs(scenario), 4, "elastic_status")


def strategy_block(wb: Any, ws: Any, row: int, scenario: Any, setup: Any, derived: frozenset = frozenset()) -> int:
    """The Compare sheet's recovery strategies from ``row``, one column each (module notes; ``scenario`` and
    ``setup`` as given); returns the next free row. Names ``strategy<j>_<key>`` (j = 1..4, in
    :data:`ckptplan.engine.strategies.STRATEGIES` order) and ``strategies_status``."""
    from ..engine.strategies import recovery_strategies

    table = recovery_strategies(scenario, setup)
    table["vs_cheapest"] = table["total_cost"] - table["total_cost"].min()
    last_col = 1 + len(table)
    ws.cell(row=row, column=1, value=STRATEGY_HEADING).font = Font(bold=True, size=12)
    S.note(ws, row + 1, "Each strategy is the plan with on_node_loss and the spare count changed: restart (stop at "
                        "every failure and wait for a node) or continue (train on fewer replicas while the node comes "
                        "back, down to min_replicas), with no spares or the setup's (its cheapest count when it holds "
                        "none). Values, not formulas: the elastic plan has no spreadsheet formula; the status says "
                        "when an input changed. Regenerate: ckptplan workbook --from THIS_FILE.", last_col)
    for col in range(2, last_col + 1):   # money in the tens of millions: wide enough never to show ###
        letter = ws.cell(row=row, column=col).column_letter
        ws.column_dimensions[letter].width = max(ws.column_dimensions[letter].width or 10, 15)
    row += 2
    S.header(ws, row, ["Figure"] + [str(s) for s in table["strategy"]])
    cheapest = int(table["total_cost"].idxmin())
    row += 1
    for key, label, unit, fmt in STRATEGY_ROWS + tuple(r for r in DEADLINE_ROWS if r[0] in table.columns):
        unit_text = S.fmt_unit(unit, scenario.currency)
        ws.cell(row=row, column=1, value=f"{label} ({unit_text})" if unit_text else label)
        for j, value in enumerate(table[key], start=1):
            c = ws.cell(row=row, column=1 + j, value=value if isinstance(value, str) else float(value))
            c.number_format = fmt
            c.alignment = Alignment(horizontal="right")
            if j - 1 == cheapest:
                c.fill = S.KEY_FILL
            S.name(wb, f"strategy{j}_{key}", ws.title, c.coordinate)
        row += 1
    return _status(wb, ws, row, scenario, setup, derived, _inputs(scenario, with_mode=scenario.min_replicas is None),
                   last_col, "strategies_status")


#: the Inputs sheet's text cell of ``on_node_loss``: (label, rule) (the label the registry's)
ON_NODE_LOSS_ROW = (re.sub(r";? ?ckptplan\.[\w.]+", "", TEXT_FIELDS[_ON_NODE_LOSS][0]), "restart or continue (empty = restart)")


def refuse_elastic_changes(designs: tuple, uncertainty: tuple) -> None:
    """Raise :class:`InputError` for a design that changes an elastic field, or an input range over one: the
    Compare and Storage & recovery columns and the Sensitivity sheet's swings are live formulas of a job that stops at
    every failure, so they cannot carry it (never dropped silently). The baseline's elastic fields are the Inputs
    sheet's; ``ckptplan compare`` and ``ckptplan sensitivity`` plan such designs and ranges."""
    for d in designs:
        for key in list(d.set) + list(d.times):
            if key in ELASTIC_FIELD_NAMES:
                raise InputError(f"design {d.name!r}: {key}", d.set.get(key, d.times.get(key)),
                                 "is an elastic continuation field: the workbook's design columns plan a job that stops "
                                 "at every failure; set it on the baseline (Inputs sheet), or compare such designs "
                                 "with `ckptplan compare`")
    for u in uncertainty:
        if u.field in ELASTIC_FIELD_NAMES:
            raise InputError(f"uncertainty: {u.field}", (u.low, u.high), "is an elastic continuation field: the "
                             "Sensitivity sheet swings live formulas of a job that stops at every failure; swing it "
                             "with `ckptplan sensitivity`")
