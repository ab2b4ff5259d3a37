"""Generate the planning workbook with openpyxl: inputs, live formulas, charts, notes.

The workbook recalculates in Excel or LibreOffice without Python: every figure on Plan, Interval
curve, Scaling, Compare and Scenarios is a live formula (from :mod:`workbook.formulas`) over the
Inputs sheet. Only the Deadline sheet holds values (a Monte Carlo Excel cannot run), labelled with
runs, seed and date. :func:`build_workbook` returns the workbook and a manifest of every formula
cell that mirrors an engine figure, which the tests recalculate and compare.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from openpyxl import Workbook
from openpyxl.worksheet.pagebreak import Break
from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.chart.marker import Marker
from openpyxl.styles import Alignment, Font, NamedStyle
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from .. import engine
from ..engine.designs import default_designs, design_from_scenario, scenario_values
from ..engine.scenario import derived_scenario
from ..files.atomic import atomic_write
from ..engine.fields import DOMAIN_SLOTS, Field
from ..engine.setup import RecoverySetup

from . import flags
from . import pages
from . import formulas as F
from . import design_formulas as D
from . import tier_formulas
from . import elastic_block as E
from . import tier_sheets
from .break_even_block import break_even_block, default_choice
from .compare_sheet import SHEET as COMPARE, compare_sheet
from .target_block import default_target, target_block
from .sensitivity_designs import designs_block, designs_block_rows
from .sensitivity_sheet import sensitivity_sheet
from .storage_sheet import storage_sheet
from .evaluate import cached_values, store_cached_values
from .manifest import Built, Check
from . import style as S
from .notes import notes_sheet, readiness_sheet
from .schedule_sheet import SHEET_MAX_PHASES, schedule_sheet
from .spot_sheet import capacity_block, spot_sheet

__all__ = ["CURVE_FACTORS", "KEY_OUTPUTS", "Built", "Check", "build_workbook", "refuse_combined", "refuse_off_sheets", "save", "scaling_nodes",
           "scenario_inputs", "write_workbook"]

CURVE_FACTORS = tuple(float(x) for x in np.round(np.geomspace(0.2, 5.0, 41), 6))
KEY_OUTPUTS = ("job_mtbf_h", "young_interval_min", "daly_interval_min", "exact_interval_min", "chosen_interval_min",
               "waste_fraction", "wall_h", "total_gpu_hours", "total_cost", "goodput", "p_finish_by_deadline",
               "wall_h_p90")

def scenario_inputs(sc: engine.Scenario) -> dict[str, Any]:
    """Inputs-sheet values of a scenario, keyed by defined name (None = blank cell)."""
    if len(sc.domains) > DOMAIN_SLOTS:
        raise engine.InputError("domains", len(sc.domains),
                                f"the workbook holds at most {DOMAIN_SLOTS} correlated failure domains")
    values = scenario_values(sc)
    return {key: (float(values[field.name]) if key.startswith("domain") else values[field.name])
            if values.get(field.name) is not None else None for key, field in F.INPUTS.items()}


def _validation(field: Field, ref: str) -> DataValidation:
    """The registry's data validation of the field's rule over a cell ``ref``, with its prompt and alert."""
    optional = not field.required or field.name in D.DERIVED   # a derived field may be left to the design
    text = field.check.noun + ("" if not optional else " (or empty)")
    return DataValidation(**field.check.data_validation(ref), allow_blank=optional, showInputMessage=True,
                          showErrorMessage=True, promptTitle=field.defined_name[:32],
                          prompt=f"{field.label[:200]}: {text}"[:255], errorTitle="Invalid input",
                          error=f"{field.defined_name} must be {text}."[:225], errorStyle="stop")


def _unit(field: Field, currency: str) -> str:
    return S.fmt_unit(field.unit if field.unit != "per GPU-h" else "money per GPU-h", currency)


# ------------------------------------------------------------------------------------- sheets

def _text_rows(sc: engine.Scenario) -> tuple[tuple[str, str, str], ...]:
    """The Inputs sheet's text rows under the currency: (label, defined name, text)."""
    names = [d.name for d in sc.domains] + [None] * DOMAIN_SLOTS
    return (("Description", "scenario_description", sc.description), ("Source", "scenario_source", sc.source),
            ("Published fleet failure rate behind node_mtbf_h (`ckptplan failure-rates`; blank = none)",
             "failure_rate_source", sc.failure_rate_source),
            ("Published spot band behind preemptions_per_node_h (`ckptplan preemption-rates`)", "preemption_rate_source",
             sc.preemption_rate_source)) + tuple(
        (f"Correlated failure domain {i} name", f"domain{i}_name", names[i - 1]) for i in range(1, DOMAIN_SLOTS + 1))


#: the Inputs sheet's range columns (G..J): part of the range (engine.uncertainty.RANGE_PARTS), header
RANGE_COLUMNS = (("low", "Low (range)"), ("high", "High (range)"), ("dist", "Shape (blank = 3-point)"),
                 ("mode", "Mode"))


def _range_cells(wb: Workbook, ws, row: int, key: str, field: Field, given: Any) -> None:
    """The row's Low, High, Shape and Mode cells (blue inputs, defined names ``<key>_low`` ...), holding the
    ``[uncertainty]`` entry ``given`` (None: blank)."""
    from ..engine.uncertainty import DISTRIBUTIONS

    values = {} if given is None else {"low": given.low, "high": given.high, "mode": given.mode,
                                       "dist": None if given.dist == "range" else given.dist}
    for j, (part, _) in enumerate(RANGE_COLUMNS):
        cell = ws.cell(row=row, column=7 + j, value=values.get(part))
        cell.font, cell.fill = S.INPUT_FONT, S.INPUT_FILL
        ref = f"{get_column_letter(7 + j)}{row}"
        if part == "dist":
            dv = DataValidation(type="list", formula1='"' + ",".join(d for d in DISTRIBUTIONS if d != "range") + '"',
                                allow_blank=True, showErrorMessage=True, errorTitle="Invalid shape",
                                error="Pick a shape from the list, or leave blank for low / value / high.")
        else:
            cell.number_format = S.INPUT_NUMBER if not field.integer else S.INPUT_WHOLE
            dv = DataValidation(**field.check.data_validation(ref), allow_blank=True, showErrorMessage=True,
                                errorTitle="Invalid input", error=f"{key}_{part} must be {field.check.noun} "
                                "(or empty)."[:225], errorStyle="stop")
        ws.add_data_validation(dv)
        dv.add(cell)
        S.name(wb, f"{key}_{part}", "Inputs", ref)


#: a node's preemption rate (about 1e-4 per node-hour) in significant figures: the input format's 4 decimals hide it
_SMALL_RATE = "0.000E+00"


def _input_row(wb: Workbook, ws, row: int, key: str, field: Field, value: Any, built: Built, currency: str) -> None:
    """One Inputs-sheet row of a registry field: label, the blue value cell (``value``; None = blank) with its
    data validation and defined name ``key``, unit, name and rule."""
    ws.cell(row=row, column=1, value=field.label)
    cell = ws.cell(row=row, column=2, value=value)
    cell.font, cell.fill = S.INPUT_FONT, S.INPUT_FILL
    cell.number_format = (S.INPUT_WHOLE if field.integer else _SMALL_RATE if field.unit == "per node-h"
                          else S.INPUT_NUMBER)
    ws.cell(row=row, column=3, value=_unit(field, currency))
    ws.cell(row=row, column=4, value=key).font = S.NOTE_FONT
    rule = field.check.noun + ("" if field.required and field.name not in D.DERIVED else " or empty")
    ws.cell(row=row, column=5, value=rule + (", empty = from the design" if field.name in D.DERIVED else "")
            ).font = S.NOTE_FONT
    dv = _validation(field, f"B{row}")
    ws.add_data_validation(dv)
    dv.add(cell)
    S.name(wb, key, "Inputs", f"B{row}")
    built.input_cells[key] = f"Inputs!$B${row}"


def _elastic_inputs(wb: Workbook, ws, row: int, sc: engine.Scenario, built: Built) -> int:
    """The Inputs sheet's elastic continuation block from ``row`` (:data:`workbook.formulas.ELASTIC_INPUTS` and
    ``on_node_loss``): read by the elastic plan's engine values only; returns the next row."""
    row += 1
    head = ws.cell(row=row, column=1, value="Elastic continuation: read by the elastic plan's "
                                            "engine values (Plan sheet, top; Compare sheet, recovery strategies), not "
                                            "by the live formulas, which plan a job that stops at every failure")
    head.font, head.alignment = Font(bold=True), Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[row].height = S.LINE_HEIGHT * S.text_lines(head.value, 70, bold=True)
    row += 1
    label, rule = E.ON_NODE_LOSS_ROW
    ws.cell(row=row, column=1, value=label)
    cell = ws.cell(row=row, column=2, value=sc.on_node_loss)
    cell.font, cell.fill = S.INPUT_FONT, S.INPUT_FILL
    ws.cell(row=row, column=4, value="on_node_loss").font = S.NOTE_FONT
    ws.cell(row=row, column=5, value=rule).font = S.NOTE_FONT
    dv = DataValidation(type="list", formula1='"restart,continue"', allow_blank=True, showErrorMessage=True,
                        errorTitle="Invalid input", error="on_node_loss must be restart or continue.")
    ws.add_data_validation(dv)
    dv.add(cell)
    S.name(wb, "on_node_loss", "Inputs", f"B{row}")
    built.input_cells["on_node_loss"] = f"Inputs!$B${row}"
    pages.fit_label(ws, row, 70)   # the block's labels wrap: each says what the job does
    ws.cell(row=row, column=5).alignment = Alignment(vertical="top")
    row += 1
    for key, field in F.ELASTIC_INPUTS.items():
        value = getattr(sc, field.name)
        _input_row(wb, ws, row, key, field, None if value is None else float(value), built, sc.currency)
        pages.fit_label(ws, row, 70)
        ws.cell(row=row, column=5).alignment = Alignment(vertical="top")
        row += 1
    return row


def _inputs_sheet(wb: Workbook, sc: engine.Scenario, built: Built, derived: frozenset[str] = frozenset(),
                  uncertainty: tuple = ()) -> None:
    """The Inputs sheet; ``derived``: the fields the design derives (written blank: a value typed there is
    stated and wins), each with the value the plan uses beside it; ``uncertainty``: the input ranges, in the
    Low / High / Shape / Mode columns beside each value (a setup field's are on the Sensitivity sheet)."""
    from ..engine.uncertainty import range_column

    ranges = {u.field: u for u in uncertainty}
    ws = wb.active
    ws.title = "Inputs"
    about = f"Scenario: {sc.name}. {sc.description}\nSource: {sc.source or 'user input'}"
    S.title(ws, "Inputs: every assumption in one place", about, 5)
    ws.row_dimensions[2].height = S.LINE_HEIGHT * S.text_lines(about, 70 + 14 + 16 + 26 + 34)  # columns A-E
    S.note(ws, 3, "Blue cells on a light fill are inputs; change them and every sheet recalculates. Save stall, "
                  "background write and restart: empty = derived from the design (Storage & recovery); a value "
                  "typed there is stated and wins. Low / High (optional Shape, Mode): how wrong the value may be; "
                  "the Sensitivity sheet swings each range (ckptplan sensitivity).", 6)
    S.header(ws, 5, ["Input", "Value", "Unit", "Defined name", "Rule", "The plan uses"] + [h for _, h in RANGE_COLUMNS])
    for c in range(1, 11):
        ws.cell(row=5, column=c).alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[5].height = 2 * S.LINE_HEIGHT
    values = scenario_inputs(sc)
    row = 6
    for key, field in F.INPUTS.items():
        _input_row(wb, ws, row, key, field, None if field.name in derived else values[key], built, sc.currency)
        if field.name in D.DERIVED:
            used = ws.cell(row=row, column=6, value=f'=IF(ISNUMBER(used_{key}),used_{key},"")')
            used.number_format = S.INPUT_NUMBER
            built.checks.append(Check("Inputs", f"F{row}", ("plan",), f"used:{key}"))
        if range_column(f"{field.name}_low") is not None:   # a field an input range may name
            _range_cells(wb, ws, row, key, field, ranges.get(field.name))
        row += 1
    row = _elastic_inputs(wb, ws, row, sc, built)
    row += 1
    ws.cell(row=row, column=1, value="Scenario name")
    ws.cell(row=row, column=2, value=sc.name).font = S.INPUT_FONT
    ws.cell(row=row + 1, column=1, value="Currency")
    c = ws.cell(row=row + 1, column=2, value=sc.currency)
    c.font, c.fill = S.INPUT_FONT, S.INPUT_FILL
    S.name(wb, "currency", "Inputs", f"B{row + 1}")
    built.input_cells["currency"] = f"Inputs!$B${row + 1}"
    built.input_cells["name"] = f"Inputs!$B${row}"
    S.name(wb, "scenario_name", "Inputs", f"B{row}")
    texts = _text_rows(sc)
    for i, (label, key, text) in enumerate(texts, start=2):   # kept by `ckptplan workbook --from`
        ws.cell(row=row + i, column=1, value=label)
        c = ws.cell(row=row + i, column=2, value=text or None)
        c.font, c.fill = S.INPUT_FONT, S.INPUT_FILL
        S.name(wb, key, "Inputs", f"B{row + i}")
        built.input_cells[key] = f"Inputs!$B${row + i}"
    S.note(ws, row + 3 + len(texts), "Job MTBF comes from node MTBF / nodes (independent failures, any node stops the job), plus the "
          "correlated domains; a Job MTBF override (e.g. from `ckptplan fit LOG.csv`) replaces it.", 5)
    for col, width in zip("ABCDEFGHIJ", (70, 14, 16, 26, 34, 14, 12, 12, 16, 12)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A6"


#: what every sheet that plans a tiered baseline as one level says (the tiered plan is the Plan sheet's top rows)
SINGLE_LEVEL_VIEW = ("Single-level view, for comparison only (not the plan): the baseline as if it had one checkpoint "
                     "level, the first tier's stall and one restart")
_SINGLE_LEVEL_SHEET = ("SINGLE-LEVEL VIEW: the baseline has checkpoint tiers, and this sheet plans it as one level (the "
                       "first tier's stall, one restart). The plan it follows is the tiered one: the Plan sheet's top "
                       "rows and the Storage & recovery sheet's baseline column.")


#: what the sheets that plan a tiered baseline's tiers row by row or column by column say first
_TIERED_SHEET = ("CHECKPOINT TIERS: every row and column here plans the baseline's tiers (the tiered model, live, as "
                 "the Plan sheet's top rows): the first tier's interval at the optimum for the stated every, the "
                 "design's stall, restore and restart re-derived at that row's or column's inputs. Figures of one "
                 "level only (Young, Daly, the analytic deadline answer) say so.")


def _wrap_over_table(ws, row: int, bold: bool = False) -> None:
    """Wrap the text of column A in ``row`` over the visible columns of a table sheet's plan (Scaling), the row as
    tall as its lines: a long line would run past the print area, or widen the print."""
    shown = [c for c in range(1, 3 + len(D.PLAN_CALCS) + 2) if not ws.column_dimensions[get_column_letter(c)].hidden]
    ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=shown[-1])
    cell = ws.cell(row=row, column=1)
    cell.alignment = Alignment(wrap_text=True, vertical="top")
    width = sum(ws.column_dimensions[get_column_letter(c)].width or 13 for c in shown)
    ws.row_dimensions[row].height = S.LINE_HEIGHT * S.text_lines(str(cell.value), width, bold=bold)


def _say_single_level(ws, row: int = 2, text: str = _SINGLE_LEVEL_SHEET, color: str = "9C0006") -> None:
    """Put ``text`` (:data:`_SINGLE_LEVEL_SHEET`) first in the sheet's note at ``row`` (a wrapped note under the
    title: the row grows by the lines it adds; an empty row: the words alone, bold, on one line)."""
    cell = ws.cell(row=row, column=1)
    cell.font = Font(bold=True, color=color)
    if not cell.value and color == "9C0006":
        cell.value = text
        return
    if not cell.value:   # wrapped over the visible columns of the sheet's table (a long line would shrink the print)
        cell.value = text
        _wrap_over_table(ws, row, bold=True)
        return
    cell.value = f"{text} {cell.value}"
    merged = next((m for m in ws.merged_cells.ranges if m.min_row == row and m.min_col == 1), None)
    last = merged.max_col if merged is not None else 1
    width = sum(ws.column_dimensions[get_column_letter(c)].width or 13 for c in range(1, last + 1))
    ws.row_dimensions[row].height = S.LINE_HEIGHT * S.text_lines(cell.value, width, bold=True)


#: Plan-sheet rows shown (the rest of the design's steps are grouped and collapsed, as the solver steps)
_PLAN_VISIBLE_DESIGN = {"checkpoint_size_gb", "derived_checkpoint_stall_min", "derived_restore_min",
                        "spare_free_probability", "pool_reallocation_min", "reallocation_sd_min",
                        "mean_nodes_in_repair", "pool_waiting_share", "restart_pipeline_min",
                        "used_checkpoint_stall_min", "used_async_write_min", "used_restart_min"}
_PLAN_HIDDEN = {c.key for c in D.DESIGN_CALCS} - _PLAN_VISIBLE_DESIGN | {"billing_months"}


def _plan_top(wb: Workbook, ws, sc: engine.Scenario, tiered: bool, elastic: Callable[[Any, int], int] | None) -> int:
    """The Plan sheet's title and, for a tiered baseline or a job that continues on node loss (``elastic`` writes
    its rows from a row and returns the next), the plan it follows on top with the live rows' label under it;
    returns the first live row."""
    S.title(ws, "Plan: how often to save, and what it costs",
           "Live formulas over the Inputs sheet and the design (exact model: Daly 2006 with async saves; see Notes)."
           + (" The baseline has checkpoint tiers: its plan is the tiered one (the rows on top); the single-level "
              "rows under them are a comparison only." if tiered else "")
           + (" The job continues on node loss: its plan is the elastic one (the engine's values on top); the live "
              "rows under them plan it stopping at every failure, a comparison only." if elastic else ""))
    if not (tiered or elastic):
        return 5
    if tiered:   # the tiered plan on top, the single-level view under it, labelled as a comparison
        first, label = tier_formulas.plan_rows(wb, ws, 5, sc.currency) + 1, SINGLE_LEVEL_VIEW
    else:
        first, label = elastic(ws, 5) + 1, E.STOP_AND_RESTART_VIEW
    ws.cell(row=first, column=1, value=label).font = Font(bold=True, color="9C0006")
    pages.fit_label(ws, first, 62, bold=True)
    return first + 1


def _plan_sheet(wb: Workbook, sc: engine.Scenario, built: Built, terms: int, tiered: bool = False,
                elastic: Callable[[Any, int], int] | None = None) -> dict[str, str]:
    ws = wb.create_sheet("Plan")
    chain_col = 7
    first = _plan_top(wb, ws, sc, tiered, elastic)
    refs = D.plan_refs(terms, f"$G${first + terms - 1}")
    for key in D.DERIVED:   # the input check reads what the plan uses: a stall is required, stated or derived
        refs[key] = f"used_{key}"
    ws["A3"] = "Input check"
    ws["A3"].font = Font(bold=True)
    ws["B3"] = '=IF(input_problems="","OK",input_problems)'
    ws["B3"].font = Font(bold=True)
    ws["F2"] = "=" + E.elastic_problems(refs)   # one cell each: a formula holds at most 8,192 characters
    S.name(wb, "elastic_input_problems", "Plan", "F2")
    ws["F3"] = "=" + F.input_problems(refs) + "&elastic_input_problems"
    ws["F3"].font = S.NOTE_FONT
    ws.column_dimensions["F"].hidden = True
    S.name(wb, "input_check", "Plan", "B3")
    S.name(wb, "input_problems", "Plan", "F3")
    ws["C3"] = "Model check"
    ws["C3"].font = Font(bold=True)
    ws["D3"] = "=" + flags.model_check(refs | {c.key: c.key for c in D.PLAN_CALCS}, problems="input_problems")
    if tiered:   # the tiered plan's check (Storage & recovery's baseline column: bad inputs named first)
        ws["D3"] = "=setup_model_check"
    ws["D3"].alignment = Alignment(wrap_text=True, vertical="top")
    flags.highlight(ws, "D3")
    flags.highlight(ws, "B3")
    S.name(wb, "model_check", "Plan", "D3")
    if not tiered:
        built.flags.append(Check("Plan", "D3", ("plan",), "warnings"))
    S.header(ws, 4, ["Quantity", "Value", "Unit", "Defined name"])
    widths = dict(zip("ABCD", (62, 18, 14, 30)))
    pages.fit_model_check(ws, 3, built.results.iloc[[0]], widths["D"])
    refs = D.plan_refs(terms, f"$G${first + terms - 1}")
    row = first
    for calc in D.PLAN_CALCS:
        cell = ws.cell(row=row, column=2, value="=" + calc.expr(refs))
        cell.number_format = calc.fmt
        ws.cell(row=row, column=1, value=calc.label)
        key_row = calc.key in KEY_OUTPUTS and not (tiered or elastic)   # else the key figures are the rows on top
        pages.fit_label(ws, row, widths["A"], bold=key_row)
        ws.cell(row=row, column=3, value=S.fmt_unit(calc.unit, sc.currency))
        ws.cell(row=row, column=4, value=calc.key).font = S.NOTE_FONT
        if key_row:
            for c in range(1, 4):
                ws.cell(row=row, column=c).fill = S.KEY_FILL
            ws.cell(row=row, column=1).font = Font(bold=True)
        if calc.helper or calc.key in _PLAN_HIDDEN:
            ws.row_dimensions[row].outlineLevel = 1
            ws.row_dimensions[row].hidden = True
        S.name(wb, calc.key, "Plan", f"B{row}")
        D.bind(refs, calc.key, calc.key)
        if calc.engine_key:
            built.checks.append(Check("Plan", f"B{row}", ("plan",), calc.engine_key))
        row += 1
    D.write_pool_chain(ws, first, chain_col, terms, refs)
    ws.column_dimensions[get_column_letter(chain_col)].hidden = True
    S.note(ws, row + 1, "Rows grouped under the design and 'c = effective stall / job MTBF' (expand with +) derive "
          "the stall and restart from the design and solve the exact optimum by Newton steps; Excel has no Lambert W.", 4)
    S.note(ws, row + 2, "Long-run averages for exponential failures; P(finish by the deadline) and the wall-time "
          "percentiles are the finite job's analytic answer (Model check says when it leaves its range). For clustered "
          "failures or as a check, see the Deadline sheet (Monte Carlo).", 4)
    S.note(ws, row + 3, "Capacity: on-demand, a constant failure rate. Preemptible (spot) capacity, given by "
          "preemptions_per_h on the Inputs sheet, is planned on the Spot sheet"
          + ("; this scenario's failure phases on the Schedule sheet." if sc.failure_phases else "."), 4)
    ws.sheet_properties.outlinePr.summaryBelow = False
    for col, width in widths.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A5"
    ws.print_title_rows = "4:4"  # every printed page starts with the column headings
    if elastic:   # the elastic status's hidden helper cells reach column E: LibreOffice then printed the hidden
        ws.print_area = f"A1:D{ws.max_row}"   # chain column as ### beside every live row (seen in the PDF)
    return refs


def _curve_sheet(wb: Workbook, refs: dict[str, str], built: Built) -> None:
    ws = wb.create_sheet("Interval curve")
    S.title(ws, "Waste against the checkpoint interval",
           "Intervals as multiples of the exact optimum; waste of the exact model (share of wall time) and "
           "Young's first-order waste (share of compute, no restarts).")
    S.header(ws, 4, ["Multiple of the optimum", "Interval (min)", "First-order waste", "Exact waste"])
    first = 5
    for i, factor in enumerate(CURVE_FACTORS):
        r = first + i
        ws.cell(row=r, column=1, value=factor).number_format = "0.000"
        ws.cell(row=r, column=2, value=f"={F.floor_interval(f'A{r}*exact_interval_min', refs)}").number_format = F.MINUTES
        ws.cell(row=r, column=3, value=f"={F.first_order_waste_at(f'B{r}', refs)}").number_format = F.PERCENT
        ws.cell(row=r, column=4, value=f"={F.waste_at(f'B{r}', refs)}").number_format = F.PERCENT
        built.checks.append(Check("Interval curve", f"C{r}", ("curve", i), "first_order_waste"))
        built.checks.append(Check("Interval curve", f"D{r}", ("curve", i), "waste_fraction"))
    last = first + len(CURVE_FACTORS) - 1
    opt = 27  # the marked points, under the chart (columns F-H)
    S.header(ws, opt - 1, ["Marked point", "Interval (min)", "Exact waste"], col=6)
    for r, label, interval, waste in ((opt, "Exact optimum", "exact_interval_min", "waste_fraction_at_optimum"),
                                      (opt + 1, "Chosen interval", "chosen_interval_min", "waste_fraction")):
        ws.cell(row=r, column=6, value=label).font = Font(bold=True)
        ws.cell(row=r, column=7, value=f"={interval}").number_format = F.MINUTES
        ws.cell(row=r, column=8, value=f"={waste}").number_format = F.PERCENT

    S.interval_chart(ws, ("Waste against the checkpoint interval", "Interval between saves (min)", "Waste (share)"),
                     (first, last), [(4, "Exact model (share of wall time)", "1F4E78", None),
                                     (3, "First order, Young (share of compute)", "ED7D31", "dash")],
                     (opt, 7, 8, "Exact optimum"), "F4")
    for col, width in zip("ABCDEFGH", (24, 16, 18, 14, 3, 18, 14, 14)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A5"


def _table_columns(ws, first_row: int, n_rows: int, row_refs: Callable[[int], dict[str, str]], calcs,
                   first_col: int, checks: list[Check], context: Callable[[int], tuple], sheet: str,
                   visible: set[str] | None, currency: str, flag_checks: list[Check] | None = None,
                   terms: int = 0, problems: str | None = None,
                   tiered: Callable[[int, dict[str, str]], Any] | None = None) -> dict[str, int]:
    """Write calcs as columns, one row per scenario, then a model-check column; return key -> column index.

    ``terms``: the spare pool's Erlang-B chain, written along each row in hidden columns after the model check
    (its last cell is the row's ``pool_erlang_b``); 0 = the rows have no design (their refs give it).
    ``problems``: a formula naming the inputs that break their rules, which every row's model check names first.
    ``tiered(i, refs)``: a :class:`workbook.tier_sheets.TieredColumn` for row ``i`` (its refs as given): the row plans
    the baseline's checkpoint tiers (the design's rows as one level, the plan from its tiered block)."""
    cols: dict[str, int] = {}
    for j, calc in enumerate(calcs):
        col = first_col + j
        cols[calc.key] = col
        head = ws.cell(row=first_row - 1, column=col, value=f"{calc.label} ({S.fmt_unit(calc.unit, currency)})")
        head.font, head.fill = S.HEADER_FONT, S.HEADER_FILL
        head.alignment = Alignment(wrap_text=True, vertical="top")
        letter = get_column_letter(col)
        ws.column_dimensions[letter].width = 14
        if visible is not None and calc.key not in visible:
            ws.column_dimensions[letter].outlineLevel = 1
            ws.column_dimensions[letter].hidden = True
    flag_col = first_col + len(calcs)
    head = ws.cell(row=first_row - 1, column=flag_col, value="Model check")
    head.font, head.fill = S.HEADER_FONT, S.HEADER_FILL
    ws.column_dimensions[get_column_letter(flag_col)].width = 30
    head.alignment = Alignment(wrap_text=True, vertical="top")
    for i in range(n_rows):
        r = first_row + i
        refs = row_refs(r)
        if terms:
            refs.update(pool_terms=str(terms), pool_erlang_b=f"{get_column_letter(flag_col + terms)}{r}")
        column = tiered(i, dict(refs)) if tiered is not None else None
        for calc in calcs:
            letter = get_column_letter(cols[calc.key])
            tier_row = column is not None and calc.key not in tier_sheets.DESIGN_KEYS
            expr = column.expr(calc.key, refs, calc.expr) if tier_row else calc.expr(refs)
            if expr is None:   # a figure of one level only
                ws.cell(row=r, column=cols[calc.key], value=tier_formulas.SINGLE_LEVEL_ONLY)
                D.bind(refs, calc.key, '""')
                continue
            cell = ws.cell(row=r, column=cols[calc.key], value="=" + expr)
            cell.number_format = calc.fmt
            D.bind(refs, calc.key, f"{letter}{r}")
            if calc.engine_key:
                checks.append(Check(sheet, f"{letter}{r}", context(i) + (("tiered",) if tier_row else ()),
                                    calc.key if tier_row else calc.engine_key))
        D.write_pool_chain(ws, r, flag_col + 1, terms, refs, across=True)
        check = column.check(refs, problems, keys=True) if column is not None else flags.model_check(refs, keys=True, problems=problems)
        flag = ws.cell(row=r, column=flag_col, value="=" + check)
        flag.alignment = Alignment(wrap_text=True, vertical="top")
        if flag_checks is not None:
            flag_checks.append(Check(sheet, flag.coordinate, context(i) + (("tiered",) if column else ()), "warnings"))
    for n in range(terms):
        ws.column_dimensions[get_column_letter(flag_col + 1 + n)].hidden = True
    if n_rows:
        letter = get_column_letter(flag_col)
        flags.highlight(ws, f"{letter}{first_row}:{letter}{first_row + n_rows - 1}")
    cols["model_check"] = flag_col
    return cols


def _legend(ws, row: int) -> None:
    """The reasons behind the model-check keys of a table sheet, one per row."""
    ws.cell(row=row, column=1, value="Model check keys (each row's last column):").font = Font(bold=True)
    for i, line in enumerate(flags.legend(), start=1):
        ws.cell(row=row + i, column=1, value=line).font = S.NOTE_FONT


def scaling_nodes(nodes: int) -> list[int]:
    """Node counts for the Scaling sheet: doubling from nodes/16 (at least 1) to nodes*64."""
    start = max(1, int(nodes) // 16)
    out = [start]
    while out[-1] < int(nodes) * 64:
        out.append(out[-1] * 2)
    if int(nodes) not in out:
        out = sorted(set(out) | {int(nodes)})
    return out


def _scaling_tiers(ws, first: int, rows: int) -> Callable[[int, dict[str, str]], Any]:
    """Each Scaling row's tiered block (:class:`workbook.tier_sheets.TieredColumn`), in hidden rows below the legend,
    outside the print area (in columns right of the table, cells past row ~1,040 were missing from LibreOffice's
    recalculation)."""
    base = first + rows + 24 + len(flags.legend()) + 3

    def tiered(i: int, row_refs: dict[str, str]) -> tier_sheets.TieredColumn:
        return tier_sheets.TieredColumn(ws, base + i * tier_sheets.block_rows(), 1, row_refs["restart_min"])

    tier_sheets.hide_rows(ws, base - 1, base + rows * tier_sheets.block_rows())
    return tiered


def _scaling_sheet(wb: Workbook, sc: engine.Scenario, built: Built, terms: int, st: Any = None) -> None:
    ws = wb.create_sheet("Scaling")
    S.title(ws, "Scaling: the same training on more or fewer nodes",
           "Assumes perfect scaling (useful GPU-hours constant, useful hours = Inputs hours x Inputs nodes / nodes), "
           "independent node failures (job MTBF = node MTBF / nodes, plus domains) and the exact optimum interval per row; "
           "the design is re-derived at each node count (writers, communicator set-up, the spare pool's load).", 0)
    S.note(ws, 3, "The node -> job division is wrong for correlated failures (shared racks or power domains): "
          "enter those as domains on the Inputs sheet.", 0)
    nodes_list = scaling_nodes(sc.nodes)
    head_row, first = 5, 6
    S.header(ws, head_row, ["Nodes", "Useful training (h)"])
    for i, n in enumerate(nodes_list):
        ws.cell(row=first + i, column=1, value=n).number_format = "#,##0"
        ws.cell(row=first + i, column=2, value=f"=useful_training_h*nodes/A{first + i}").number_format = F.HOURS
        built.checks.append(Check("Scaling", f"B{first + i}", ("scaling", n), "useful_training_h"))

    def refs(r: int) -> dict[str, str]:
        base = D.plan_refs(terms, "")
        base.update(nodes=f"A{r}", useful_training_h=f"B{r}", interval_min='""')
        return base

    visible = {"job_mtbf_h", "used_checkpoint_stall_min", "used_restart_min", "exact_interval_min", "waste_fraction",
               "wall_h", "total_gpu_hours", "total_cost", "goodput"}
    tiered = _scaling_tiers(ws, first, len(nodes_list)) if st is not None and st.tiers else None
    if tiered is not None:
        visible = visible - {"exact_interval_min", "used_checkpoint_stall_min"} | {"chosen_interval_min"}
    cols = _table_columns(ws, first, len(nodes_list), refs, D.PLAN_CALCS, 3, built.checks,
                          lambda i: ("scaling", nodes_list[i]), "Scaling", visible, sc.currency, built.flags,
                          terms=terms, problems="input_problems",   # the Plan's input check: every row reads those inputs
                          tiered=tiered)
    ws.sheet_properties.outlinePr.summaryRight = False
    ws.row_dimensions[head_row].height = 80
    for c in (1, 2):
        ws.cell(row=head_row, column=c).alignment = Alignment(wrap_text=True, vertical="top")
    last = first + len(nodes_list) - 1
    ws.freeze_panes = ws.cell(row=first, column=3)
    ws.column_dimensions["A"].width = 10
    ws.column_dimensions["B"].width = 14
    pages.fit_scaling(ws, sc, st, nodes_list, first, cols)
    if tiered is not None:   # the rows' checks are the tiered plan's (pages.fit_scaling sized the rows for them)
        ws.print_area = f"A1:{get_column_letter(cols['model_check'])}{last + 23 + len(flags.legend())}"
        for r in (2, 3):   # the notes under the title: wrapped inside the print area
            _wrap_over_table(ws, r)

    xs = Reference(ws, min_col=1, min_row=first, max_row=last)
    def nodes_chart(title: str, key: str, y_title: str, y_format: str, color: str, symbol: str) -> ScatterChart:
        chart = ScatterChart()
        chart.title = title
        chart.scatterStyle = "lineMarker"
        chart.x_axis.title = "Nodes (log scale)"
        chart.x_axis.scaling.logBase = 2
        chart.x_axis.number_format = "#,##0"
        chart.y_axis.title = y_title
        chart.y_axis.number_format = y_format
        chart.height, chart.width = 9, 14
        chart.legend = None
        series = S.line(Series(Reference(ws, min_col=cols[key], min_row=first, max_row=last), xs, title=title), color)
        series.marker = Marker(symbol=symbol, size=6)
        chart.series.append(series)
        chart.x_axis.delete = False
        chart.y_axis.delete = False
        return chart

    waste = nodes_chart("Waste at the optimum interval (chosen per row)", "waste_fraction", "Waste (share of wall time)",
                        "0%", "1F4E78", "circle")
    waste.y_axis.scaling.min, waste.y_axis.scaling.max = 0, 1  # a share: never above 100 %
    ws.add_chart(waste, f"A{last + 3}")
    chart = nodes_chart("Cost per run (log scale)", "total_cost", "", "", "ED7D31", "triangle")
    pages.cost_axis(chart, sc.currency)
    # beside the first chart (one page holds the table and both), anchored at a visible column ~15 cm right
    ws.add_chart(chart, f"{get_column_letter(cols['total_gpu_hours'])}{last + 3}")
    _legend(ws, last + 23)


def _scenarios_sheet(wb: Workbook, table: pd.DataFrame, built: Built, currency: str) -> None:
    """One row per scenario: inputs as blue values, every figure as a live formula of its row."""
    ws = wb.create_sheet("Scenarios")
    input_style = NamedStyle(name="ckptplan input", font=S.INPUT_FONT, fill=S.INPUT_FILL, number_format=S.INPUT_NUMBER)
    wb.add_named_style(input_style)  # one shared style: 20 inputs x 10^4 rows set it in one assignment each
    S.title(ws, "Scenarios: one row each, every figure a live formula of its row")
    scenarios = [row for row in _table_rows(table)]
    head, first = 4, 5
    S.header(ws, head, ["Scenario"] + [f"{key} ({field.unit})" for key, field in F.INPUTS.items()])
    for i, values in enumerate(scenarios):
        r = first + i
        ws.cell(row=r, column=1, value=values.get("name", f"row {i + 1}"))
        for j, key in enumerate(F.INPUT_KEYS):
            ws.cell(row=r, column=2 + j, value=values[key]).style = input_style

    def refs(r: int) -> dict[str, str]:   # a table of scenarios without a design: blank setup
        return {key: f"{get_column_letter(2 + j)}{r}" for j, key in enumerate(F.INPUT_KEYS)} | D.blank_setup_refs() | {
            "pool_terms": "0"}

    _table_columns(ws, first, len(scenarios), refs, D.PLAN_CALCS, 2 + len(F.INPUT_KEYS), built.checks,
                   lambda i: ("scenarios", i), "Scenarios", None, currency, built.flags)
    _legend(ws, first + len(scenarios) + 1)
    ws.freeze_panes = ws.cell(row=first, column=2)


def _table_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    engine.validate_table(table)
    rows = []
    for _, rec in table.iterrows():
        values: dict[str, Any] = {"name": rec.get("name", None)}
        for key, field in F.INPUTS.items():
            v = rec.get(field.name, None)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                v = field.default
            values[key] = None if v is None else float(v)
        rows.append(values)
    return rows


def _deadline_sheet(wb: Workbook, report: dict[str, Any] | None, sc: engine.Scenario) -> None:
    if not report:
        return
    ws = wb.create_sheet("Deadline")
    S.title(ws, "Deadline: Monte Carlo answers (values, not formulas)",
           f"Computed by ckptplan with {report['runs']:,} simulated runs, seed {report['seed']}, "
           f"on {report['computed']}, from the inputs listed below. Excel cannot rerun a simulation: regenerate the "
           "workbook to refresh these. " + ("The baseline's plan is tiered: these simulated figures are its deadline "
                                            "answer (the Plan sheet's analytic one is for a single level)."
                                            if report.get("tiered") else
                                            "The Plan sheet's P(finish by the deadline) and wall-time percentiles are "
                                            "live formulas (the analytic answer)."))
    used = scenario_inputs(sc)
    ws["A3"] = "Simulation status"
    ws["A3"].font = Font(bold=True)
    ws["A3"].alignment = Alignment(vertical="top")
    ws["B3"] = "=" + flags.stale_check([(key, key, used[key]) for key in F.INPUT_KEYS])
    if report.get("tiered"):   # the tiered plan's simulation read the design's inputs too: the Storage sheet's status
        ws["B3"] = "=setup_engine_values_status"
    ws["B3"].alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells("B3:C3")
    ws.row_dimensions[3].height = 45
    flags.highlight(ws, "B3", flags.UP_TO_DATE)
    S.name(wb, "simulation_status", "Deadline", "B3")
    S.header(ws, 4, ["Figure", "Value", "Unit"])
    row = 5
    for label, value, unit, fmt in report["rows"]:
        ws.cell(row=row, column=1, value=label)
        c = ws.cell(row=row, column=2, value=value)
        if fmt:
            c.number_format = fmt
        ws.cell(row=row, column=3, value=unit)
        row += 1
    for note in report.get("notes", []):
        row += 1
        S.note(ws, row, note, 3)
    row += 2
    if report.get("used"):   # the tiered simulation's own inputs (engine.deadline_tiers); B3 says when they changed
        _used_table(ws, row, report["used"])
        return
    S.header(ws, row, ["Input this simulation used", "Value used", "Now on Inputs"])
    for key, field in F.INPUTS.items():
        row += 1
        # the Inputs sheet's words and unit (the status line above names their defined names)
        label = ws.cell(row=row, column=1, value=f"{field.label} ({_unit(field, sc.currency)})")
        label.alignment = Alignment(wrap_text=True, vertical="top")   # a long label wraps, never runs off the page
        ws.row_dimensions[row].height = 15.0 * max(1, -(-len(label.value) // 78))   # a line per 78 characters
        ws.cell(row=row, column=2, value=used[key]).number_format = S.INPUT_NUMBER if not field.integer else S.INPUT_WHOLE
        ws.cell(row=row, column=3, value=f'=IF({key}="","",{key})').number_format = ws.cell(row=row, column=2).number_format
    ws.column_dimensions["A"].width = 70
    ws.column_dimensions["B"].width = 18
    ws.column_dimensions["C"].width = 14


def _used_table(ws, row: int, used: list[tuple[str, Any, str]]) -> None:
    """The Deadline sheet's "Input this simulation used" table of a tiered simulation: (label, value, unit) rows."""
    S.header(ws, row, ["Input this simulation used", "Value used", "Unit"])
    for label, value, unit in used:
        row += 1
        ws.cell(row=row, column=1, value=label).alignment = Alignment(wrap_text=True, vertical="top")
        c = ws.cell(row=row, column=2, value=value)
        c.number_format = S.INPUT_WHOLE if isinstance(value, int) else S.INPUT_NUMBER
        ws.cell(row=row, column=3, value=unit)
    ws.column_dimensions["A"].width = 70
    ws.column_dimensions["B"].width = 18
    ws.column_dimensions["C"].width = 14


# --------------------------------------------------------------------------------------- API

def refuse_off_sheets(scenario: Any) -> None:
    """Raise :class:`InputError` when ``scenario`` uses a field the sheets cannot plan
    (:data:`ckptplan.engine.fields.NOT_ON_SHEETS`: a Weibull failure rate from the job's start): refused by name,
    never planned silently at a constant rate. Elastic continuation is on the sheets (:mod:`workbook.elastic_block`).
    """
    shape = getattr(scenario, "weibull_shape_from_start", None)
    if shape is not None and shape < 1:
        raise engine.InputError("weibull_shape_from_start", shape, "the workbook's sheets plan a constant failure "
                                "rate: plan a Weibull shape from the start with `ckptplan plan` or `ckptplan batch` "
                                "(an interval schedule)")
    phases = getattr(scenario, "failure_phases", ())
    if len(phases) > SHEET_MAX_PHASES:
        raise engine.InputError("failure_phases", f"{len(phases)} phases", f"the workbook's Schedule sheet holds at "
                                f"most {SHEET_MAX_PHASES} phases (its exact expectation is live formulas, cell for "
                                "cell): plan more phases with `ckptplan plan` or `ckptplan batch`, or merge "
                                "neighbouring phases of similar rate")
    refuse_combined(scenario)


def refuse_combined(scenario: Any) -> None:
    """Raise :class:`InputError` when ``scenario`` combines failure phases with preemptions, a downtime or a
    background write: the engine plans them together (:mod:`ckptplan.engine.schedule_interruptions`,
    :mod:`ckptplan.engine.schedule_async`), the Schedule sheet's formulas plan phases for synchronous saves and a job
    that holds its nodes, so it cannot show the combination (refused by name). The Spot sheet plans preemptions
    with a downtime."""
    from ..engine.spot_rates import scenario_preemptions_per_h

    rate = scenario_preemptions_per_h(scenario)   # the job's: given, or nodes x the node's
    if not getattr(scenario, "failure_phases", ()):
        return
    if rate:
        raise engine.InputError("preemptions_per_h", rate, "the workbook plans failure phases "
                                "(Schedule sheet) and spot capacity (Spot sheet) apart, not together: plan failure "
                                "phases on spot capacity with `ckptplan plan` or `ckptplan batch`, or drop one of them")
    if getattr(scenario, "async_write_min", None):
        raise engine.InputError("async_write_min", scenario.async_write_min, "the workbook's Schedule sheet plans "
                                "failure phases for synchronous saves: plan failure phases with a background write "
                                "with `ckptplan plan` or `ckptplan batch`, or drop one of them")
    if getattr(scenario, "downtime_min", None):
        raise engine.InputError("downtime_min", scenario.downtime_min, "the workbook's Schedule sheet plans failure "
                                "phases for a job that holds its nodes through the whole restart: plan failure phases "
                                "with a downtime with `ckptplan plan` or `ckptplan batch`, or state restart_min "
                                "without it")


def build_workbook(scenario: engine.Scenario, alternative: engine.Scenario | None = None,
                   scenarios: pd.DataFrame | None = None, deadline: dict[str, Any] | None = None,
                   readiness: dict[str, tuple[Any, Any]] | None = None, designs: tuple | None = None,
                   setup: Any = None, uncertainty: tuple = (), capacity: dict[str, Any] | None = None,
                   break_even: tuple | None = None, target: tuple | None = None, swung: Any = None,
                   single: Any = None) -> Built:
    """Build the planning workbook in memory (see :func:`write_workbook` to save it).

    ``swung``: the scenario as its file gives it (default ``scenario``), the one ``ckptplan sensitivity`` swings.
    ``single``: the setup's single-level plan whose scenario is ``scenario``, when the caller made it (not made again).
    ``designs``: the Compare sheet's alternatives, each a set of changes on the baseline
    (:class:`ckptplan.engine.designs.Design`; default :func:`~ckptplan.engine.designs.default_designs`:
    storage 4x faster, twice the nodes for the same training, restarts twice as fast).
    ``alternative``: a whole scenario to compare instead, written as the changes that turn the
    baseline into it (the first alternative). ``scenarios``: an optional table (as
    :func:`engine.to_table`) written to a Scenarios sheet. ``deadline``: Monte Carlo answers for
    the Deadline sheet (see :func:`workbook.deadline_report`); left out when None. ``readiness``:
    status and evidence per checklist item, kept from an edited workbook (see :func:`read_inputs`).
    ``setup``: the storage and recovery setup (:class:`ckptplan.engine.setup.RecoverySetup`; None = none
    given) for the Storage & recovery sheet, which shows ``designs`` when they are given.
    ``uncertainty``: input ranges (:class:`ckptplan.engine.uncertainty.UncertainInput`, a scenario file's
    ``[uncertainty]`` table) for a Sensitivity sheet (:mod:`workbook.sensitivity_sheet`); none: no sheet.
    ``capacity``: the spot / on-demand / fallback Monte Carlo (:func:`ckptplan.engine.spot.scenario_capacity`) for
    the Compare sheet's capacity block; the Spot sheet (live) is always there.
    ``break_even``: (input, low, high) the Compare sheet's break-even block solves for (as read back by
    :func:`read_break_even`); default: node MTBF over its ``uncertainty`` range, else its value / 4 to x 4.
    ``target``: (goal, value, lever) of the target block (as read back by :func:`read_target`; default
    :func:`workbook.target_block.default_target`), on the Compare sheet below the break-even block.
    """
    refuse_off_sheets(scenario)
    given = tuple(designs) if designs is not None else ()
    # the Compare sheet shows the designs that change scenario inputs only; the others (storage, tiers,
    # spares) are on the Storage & recovery sheet, which gets every design given
    designs = tuple(d for d in given if _changes_scenario(d)) or tuple(default_designs(scenario))
    if alternative is not None:
        designs = (design_from_scenario(scenario, alternative),) + tuple(designs[1:])
    st = setup if setup is not None else RecoverySetup()
    E.refuse_elastic_changes(designs + given, tuple(uncertainty))
    elastic = E.continues(scenario)   # the job trains on through node losses: the live sheets show it stopping
    given_sc = scenario               # as given, elastic fields and all: the elastic blocks' engine calls and status
    stated = derived_scenario(scenario, on_node_loss="restart")   # the live sheets plan a job that stops at every failure
    planned, derived = _planned(scenario, st, single)
    refuse_combined(planned)   # a setup's spare pool may derive a downtime
    scenario = derived_scenario(planned, on_node_loss="restart")
    ranked = _ranked(stated, st, uncertainty)
    # one evaluation of all (refuses designs the models cannot evaluate); kept for the caller
    results = engine.evaluate([scenario] + [d.apply(scenario) for d in designs])
    terms = D.pool_terms(max([st.spares or 0] + [d.apply_setup(st).spares or 0 for d in given]))
    wb = S.new_workbook()
    built = Built(wb, results=results, designs=designs)
    _inputs_sheet(wb, planned, built, derived, uncertainty)
    refs = _plan_sheet(wb, scenario, built, terms, tiered=bool(st.tiers), elastic=(lambda ws, row: E.elastic_plan_rows(
        wb, ws, row, given_sc, st, derived)) if elastic else None)
    if scenario.failure_phases:
        schedule_sheet(wb, scenario, results.iloc[0], scenario_inputs(scenario))
    if st.tiers:   # the tiered plan's curve; the single-level one otherwise
        tier_sheets.curve_sheet(wb, refs, built, CURVE_FACTORS, scenario.currency)
    else:
        _curve_sheet(wb, refs, built)
    _scaling_sheet(wb, scenario, built, terms, st)
    compare_sheet(wb, scenario, designs, built, terms, tiered=bool(st.tiers))
    capacity_block(wb, capacity, scenario_inputs(scenario), scenario.currency)
    _engine_blocks(wb, built, (scenario, given_sc, stated), st, derived, given, break_even, tuple(uncertainty))
    spot_sheet(wb, scenario.currency, built)
    storage_sheet(wb, scenario, setup, given, built, terms)
    _sensitivity(wb, ranked, built, terms, scenario.currency, swung or stated, st, designs, given,
                 _on_sheet(scenario, given), derived)
    _target(wb, stated, st, target or default_target(stated, st), built, derived)
    if scenarios is not None:
        _scenarios_sheet(wb, scenarios, built, scenario.currency)
    _deadline_sheet(wb, deadline, scenario)
    _say_views(wb, bool(st.tiers), elastic, deadline)
    readiness_sheet(wb, readiness)
    notes_sheet(wb)
    S.keep_text_literal(wb, _user_texts(scenario, designs + given, scenarios, readiness))
    for ws in wb.worksheets:
        S.print_setup(ws)
    wb.calculation.fullCalcOnLoad = True
    return built


def _engine_blocks(wb: Workbook, built: Built, views: tuple, st: Any, derived: frozenset, given: tuple,
                   break_even: tuple | None, uncertainty: tuple) -> None:
    """The Compare sheet's engine blocks under its live table: the recovery strategies (an elastic scenario), then
    the break-even block on a printed page of its own. ``views``: the scenario the live sheets plan, as given (the
    elastic blocks'), as stated (the break-even block's)."""
    scenario, given_sc, stated = views
    ws = wb[COMPARE]
    if E.shows_strategies(given_sc, st):   # the recovery strategies, as `ckptplan compare` prices them, on a page
        E.strategy_block(wb, ws, _new_page(ws), given_sc, st, derived)
    ws.row_breaks.append(Break(id=ws.max_row + 2))   # the break-even and target blocks start a printed page
    break_even_block(wb, ws, ws.max_row + 3, stated, st, built.designs,
                     break_even or default_choice(stated, st, uncertainty), uncertainty, built, derived,
                     tuple((k, d) for k, d in enumerate(_on_sheet(scenario, given), start=1) if d not in built.designs))


def _on_sheet(scenario: engine.Scenario, given: tuple) -> tuple:
    """The Storage & recovery sheet's designs: those given, none when they are the defaults."""
    return () if given == tuple(default_designs(scenario)) else given


def _new_page(ws) -> int:
    """A printed page starts two rows under the sheet's last: its first row."""
    ws.row_breaks.append(Break(id=ws.max_row + 2))
    return ws.max_row + 3


def _say_views(wb: Workbook, tiered: bool, elastic: bool, deadline: Any) -> None:
    """What the sheets plan, said first: a tiered baseline's Scaling and Compare plan its tiers (the Deadline sheet
    too when the report simulated them, else it says it shows one level); a job that continues on node loss is
    shown stopping at every failure."""
    if tiered:
        for name, row in (("Scaling", 4), ("Compare", 2)):
            _say_single_level(wb[name], row, _TIERED_SHEET, "1F4E78")
        if "Deadline" in wb.sheetnames and not (deadline or {}).get("tiered"):
            _say_single_level(wb["Deadline"], 2)
    if elastic:
        for name, row in (("Interval curve", 2), ("Scaling", 4), ("Compare", 2), ("Spot", 2), ("Storage & recovery", 2),
                          ("Sensitivity", 2), ("Deadline", 2)):
            if name in wb.sheetnames:
                _say_single_level(wb[name], row, E.STOP_AND_RESTART_SHEET)


def _sensitivity(wb: Workbook, ranked: tuple, built: Built, terms: int, currency: str, swung: engine.Scenario,
                 st: Any, designs: tuple, given: tuple, on_sheet: tuple, derived: frozenset) -> None:
    """The Sensitivity sheet (none without ranges) and its designs' block: the designs ``ckptplan sensitivity`` swings
    on ``swung`` (the scenario as its file gives it, no derived stall or restart filled in), the file's Compare
    alternatives (none when the Compare sheet shows the defaults) and the Storage & recovery sheet's others."""
    if not ranked:
        return
    alts = designs if given else ()
    extra = tuple((k, d) for k, d in enumerate(on_sheet, start=1) if d not in designs)
    block = (partial(designs_block, wb, scenario=swung, setup=st, designs=alts, storage=extra, inputs=ranked,
                     derived=derived), designs_block_rows(alts, extra, ranked)) if alts or extra else None
    sensitivity_sheet(wb, ranked, built, terms, currency, block)


def _ranked(scenario: engine.Scenario, st: Any, uncertainty: tuple) -> tuple:
    """The input ranges in the order of their total-cost swing (the engine's tornado), largest first."""
    if not uncertainty:
        return ()
    from ..engine.sensitivity import tornado

    order = list(tornado(scenario, st, (), uncertainty, outputs=("total_cost",))["input"])
    return tuple(sorted(uncertainty, key=lambda u: order.index(u.field)))


def _target(wb: Workbook, scenario: engine.Scenario, st: Any, choice: tuple, built: Built, derived: frozenset) -> None:
    """The target block (:mod:`workbook.target_block`) below the Compare sheet's break-even block (the Sensitivity
    sheet's rows below its print area are its working rows, which print when a block follows them)."""
    ws = wb[COMPARE]
    target_block(wb, ws, ws.max_row + 3, scenario, st, choice, built, derived)


def _planned(scenario: engine.Scenario, st: Any, single: Any = None) -> tuple[engine.Scenario, frozenset[str]]:
    """The scenario with the stall, write and restart its design gives (a tiered design: its single-level
    view, as the Plan sheet shows it), and the fields the design derives (not stated, derivable). ``single``:
    that single-level plan when the caller made it (``ckptplan workbook``: its scenario is ``scenario``, planned
    with ``st`` without tiers, so planning it again gives the same plan): used, not made again."""
    if not st.given():
        return scenario, frozenset()
    from ..engine.setup import plan_setup

    same = single is not None and single.scenario is scenario
    plan = single if same else plan_setup(scenario, st.replace(tiers=(), failure_classes={}))
    f = plan.figures
    can = {"checkpoint_stall_min": f["derived_checkpoint_stall_min"] is not None,
           "async_write_min": f["derived_async_write_min"] is not None, "restart_min": bool(plan.restart_parts_min),
           "downtime_min": bool(plan.restart_parts_min) and "restart_min" not in st.stated}
    return plan.scenario, frozenset(k for k in D.DERIVED if can[k] and k not in st.stated)


def _changes_scenario(design: Any) -> bool:
    """Whether a design changes scenario inputs only (the Compare sheet's columns plan the baseline's design at
    their own inputs); one that changes the design itself (storage, restart parts, spares, tiers) is a column of
    the Storage & recovery sheet, which holds the design's inputs."""
    from ..engine.fields import FIELD_BY_NAME

    keys = list(design.set) + list(design.times)
    return bool(keys) and design.tiers is None and not getattr(design, "failure_classes", None) and all(
        k in FIELD_BY_NAME or k.startswith("domain") for k in keys)


def _user_texts(scenario: engine.Scenario, designs: tuple, scenarios: pd.DataFrame | None,
                readiness: dict[str, tuple[Any, Any]] | None) -> list[Any]:
    """Every text a user controls that the workbook writes into a cell (see :func:`style.keep_text_literal`)."""
    texts: list[Any] = [scenario.name, scenario.description, scenario.source, scenario.currency]
    texts += [d.name for d in scenario.domains]
    texts += [d.name for d in designs]
    units = {c.unit for c in F.CALCS} | {"money", "money per GPU-h", "money/GPU-h"}
    texts += [S.fmt_unit(u, scenario.currency) for u in units if "money" in u]
    for status, evidence in (readiness or {}).values():
        texts += [status, evidence]
    if scenarios is not None:
        for col in scenarios.columns:
            if scenarios[col].dtype == object:
                texts += [v for v in scenarios[col].tolist() if isinstance(v, str)]
    return texts


def save(wb: Workbook, path: str | Path) -> None:
    """Save ``wb`` to ``path`` with every formula's result cached beside it (:mod:`.evaluate`), so a reader
    that does not recalculate (pandas, previews) sees the numbers; Excel and LibreOffice recalculate on open."""
    wb.save(path)
    store_cached_values(Path(path), wb, cached_values(wb))


def write_workbook(path: str | Path, scenario: engine.Scenario, force: bool = False, **kwargs: Any) -> Built:
    """Build and save atomically (temporary file + rename); refuses to overwrite without ``force``."""
    built = build_workbook(scenario, **kwargs)
    atomic_write(path, lambda tmp: save(built.workbook, tmp), force=force)
    return built

