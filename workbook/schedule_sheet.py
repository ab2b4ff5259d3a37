"""The Schedule sheet: a failure rate that changes over the run (``[[failure_phases]]``) and its checkpoint schedule.

The phases are inputs here (blue cells, data-validated by the registry's rules, defined names
``phase{i}_start_h`` / ``phase{i}_rate_factor``, read back by ``ckptplan workbook --from``). Under them, a
live table with one row per schedule row (the constant rate before phase 1, then every phase slot): the
phase's job MTBF, its own exact optimum at its rate (live, the Plan sheet's Newton steps: the search's
starting point), ckptplan's schedule optimum (a value: :func:`ckptplan.engine.phases.optimal_schedule`
searches all intervals at once, which no formula does), the interval the table evaluates ("Save every",
an input named ``schedule{i}_interval_min``: ckptplan's optimum as generated, a typed number marked
STATED, blank for the phase's own optimum; ``--from`` optimises a blank phase around the typed ones instead, and a
live line under the table says so while a phase the job runs in is blank), and the schedule's exact expectation of those intervals as
live formulas (:mod:`ckptplan.workbook.schedule_formulas`, the engine's rule cell for cell): expected wall
time, work, waste, failures and compute cost per phase and in all. A live status says when an input or a
phase changed since the optimum was computed (as the Deadline sheet); ``--from`` regenerates it, and reads
one interval stated in every phase as ``interval_min``, different ones as each phase's ``interval_min`` (a phase
the scenario stated shows "stated" in column F, so an unedited round trip keeps it). The Plan sheet keeps the constant-rate plan.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.formatting.rule import FormulaRule
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from ..engine.fields import phase_field
from ..engine.phases import QUADRATURE_NODES
from . import flags
from . import formulas as F
from . import style as S

__all__ = ["SHEET", "SHEET_MAX_PHASES", "phase_slots", "schedule_sheet"]

SHEET = "Schedule"
#: blank phase rows beyond the scenario's, so a planner can add a phase in the file
_SPARE_SLOTS = 2
#: most phase rows the sheet holds: its exact expectation is written cell for cell (every boundary's nodes followed
#: phase by phase), about 42,000 formula cells at 6 rows and 140,000 at 10, past what a cached value is computed for
#: (:data:`ckptplan.workbook.evaluate.MAX_CACHED_CELLS_PER_SHEET`) and minutes to write
SHEET_MAX_PHASES = 6


def phase_slots(n: int) -> int:
    """The phase rows the sheet offers for a scenario with ``n`` phases (at most :data:`SHEET_MAX_PHASES`)."""
    return max(n, min(n + _SPARE_SLOTS, SHEET_MAX_PHASES))


def _phase_inputs(wb: Workbook, ws, phases: tuple, row: int) -> tuple[int, list[tuple[str, str, Any]]]:
    """The blue phase cells from ``row``; returns the next row and (name, reference, value) for the status."""
    S.header(ws, row, ["Failure phase (start: wall hours from the job's start)", "start_h (h)", "rate_factor (x)",
                       "Rule"])
    used = []
    for i in range(1, phase_slots(len(phases)) + 1):
        r = row + i
        ws.cell(row=r, column=1, value=f"Phase {i}" + ("" if i <= len(phases) else " (blank: none)"))
        for col, part in ((2, "start_h"), (3, "rate_factor")):
            field = phase_field(i, part)
            value = getattr(phases[i - 1], part) if i <= len(phases) else None
            cell = ws.cell(row=r, column=col, value=value)
            cell.font, cell.fill, cell.number_format = S.INPUT_FONT, S.INPUT_FILL, S.INPUT_NUMBER
            dv = DataValidation(**field.check.data_validation(cell.coordinate), allow_blank=True, showErrorMessage=True,
                                errorTitle="Invalid input", error=f"{field.name} must be {field.check.noun}."[:225])
            ws.add_data_validation(dv)
            dv.add(cell)
            S.name(wb, field.name, SHEET, cell.coordinate)
            used.append((field.name, field.name, value))
        ws.cell(row=r, column=4, value="start >= 0, rising; factor > 0").font = S.NOTE_FONT
    return row + phase_slots(len(phases)) + 1, used


_COLUMNS = ["Schedule row", "From (h)", "rate_factor", "Job MTBF in the phase (h)",
            "Own optimum at its rate (min, live)", "ckptplan's schedule optimum (min, value)", "Save every (min)",
            "Interval is", "Expected wall time in the phase (h)", "Work checkpointed in it (h)",
            "Waste in the phase (share)", "Expected failures", "Compute cost"]
_WIDTHS = (30, 10, 10, 13, 13, 15, 12, 22, 14, 13, 12, 11, 13)
#: first hidden column of the schedule's cells (after the table and a gap)
_HIDDEN_COL = len(_COLUMNS) + 3


def _engine_optima(sc: Any, result: Any) -> tuple[list[float | None], list[bool]]:
    """The engine's interval per sheet row (the rate before phase 1 first: none when phase 1 starts at 0), and
    whether the scenario stated it (a phase's ``interval_min`` or the scenario's)."""
    found, stated, i = [], [], 1
    while f"schedule{i}_start_h" in result.index and result[f"schedule{i}_start_h"] == result[f"schedule{i}_start_h"]:
        found.append(float(result[f"schedule{i}_interval_min"]))
        stated.append(float(result.get(f"schedule{i}_interval_stated", 0.0)) == 1.0)
        i += 1
    return (found, stated) if sc.failure_phases[0].start_h > 0 else ([None] + found, [False] + stated)


def _table(wb: Workbook, ws, row: int, sc: Any, result: Any, currency: str) -> tuple[int, Any]:
    """The live schedule table from ``row`` (module notes): one row per schedule row, the totals under them."""
    from .schedule_formulas import write_schedule_cells

    S.header(ws, row, [c.replace("Compute cost", f"Compute cost ({currency})") for c in _COLUMNS])
    ws.row_dimensions[row].height = 58
    optima, stated = _engine_optima(sc, result)
    P = phase_slots(len(sc.failure_phases)) + 1
    rows = [row + 1 + i for i in range(P)]
    inputs = []
    for i, r in enumerate(rows):
        cell = ws.cell(row=r, column=7, value=optima[i] if i < len(optima) and optima[i] is not None else
                       (optima[1] if i == 0 else None))
        cell.font, cell.fill, cell.number_format = S.INPUT_FONT, S.INPUT_FILL, F.MINUTES
        dv = DataValidation(type="decimal", operator="greaterThan", formula1="0", allow_blank=True,
                            showErrorMessage=True, errorTitle="Invalid input",
                            error="An interval in minutes, greater than 0 (blank: the phase's own optimum).")
        ws.add_data_validation(dv)
        dv.add(cell)
        S.name(wb, f"schedule{i + 1}_interval_min", SHEET, cell.coordinate)
        inputs.append(f"$G${r}")
    names = {"M": "job_mtbf_min", "C": "used_checkpoint_stall_min", "R": "used_restart_min",
             "work": "useful_training_h*60"}
    cells = write_schedule_cells(ws, rows, _HIDDEN_COL, 5, names, inputs)
    money = "/60*gpus*price_per_gpu_hour"
    for i, r in enumerate(rows):
        g = cells.given[i]
        opt = optima[i] if i < len(optima) else None
        ws.cell(row=r, column=1, value="Before phase 1 (the constant rate)" if i == 0 else
                f"Phase {i}" + ("" if i <= len(sc.failure_phases) else " (blank: none)"))
        live = {2: (f"{cells.start_min[i]}/60", F.HOURS), 3: (cells.factor[i], "0.00##"),
                4: (f"job_mtbf_h/{cells.factor[i]}", F.HOURS), 5: (cells.own_optimum[i], F.MINUTES),
                9: (f"{cells.wall_min[i]}/60", F.HOURS), 10: (f"{cells.work_min[i]}/60", F.HOURS),
                11: (f'IF({cells.wall_min[i]}>0,1-{cells.work_min[i]}/{cells.wall_min[i]},"")', F.PERCENT),
                12: (cells.failures[i], "#,##0.00"), 13: (f"{cells.wall_min[i]}{money}", F.MONEY)}
        for col, (expr, fmt) in live.items():
            c = ws.cell(row=r, column=col, value=f'=IF({g},{expr},"")')
            c.number_format = fmt
        if opt is not None and i < len(stated) and stated[i]:   # the scenario's own: read back as stated
            ws.cell(row=r, column=6, value="stated")
            opt = None
        elif opt is not None:
            ws.cell(row=r, column=6, value=opt).number_format = F.MINUTES
        else:
            ws.cell(row=r, column=6, value="none" if i == 0 else "")
        state = (f'IF(NOT(ISNUMBER({inputs[i]})),"blank: own optimum",' + (
            f'IF(ABS({inputs[i]}-$F${r})<=1E-9*$F${r},"ckptplan\'s optimum","STATED"))' if opt is not None else
            '"STATED")'))
        if i == 0:
            state = f'IF({cells.start_min[1]}=0,"none: phase 1 starts at 0",{state})'
        ws.cell(row=r, column=8, value=f'=IF({g},{state},"")')
    ws.conditional_formatting.add(f"H{rows[0]}:H{rows[-1]}", FormulaRule(formula=[f'H{rows[0]}="STATED"'],
                                  font=Font(bold=True, color="9C0006")))
    end = rows[-1] + 1
    ws.cell(row=end, column=1, value="The schedule (all phases)").font = Font(bold=True)
    total = cells.total_min
    fails = "+".join(cells.failures)
    for col, expr, fmt in ((9, f"{total}/60", F.HOURS), (10, "useful_training_h", F.HOURS),
                           (11, f"1-useful_training_h*60/{total}", F.PERCENT), (12, fails, "#,##0.00"),
                           (13, f"{total}{money}", F.MONEY)):
        c = ws.cell(row=end, column=col, value="=" + expr)
        c.number_format, c.font = fmt, Font(bold=True)
        c.fill = S.KEY_FILL
    _blank_warning(ws, end + 1, rows, inputs, cells)
    S.name(wb, "schedule_wall_h", SHEET, f"I{end}")
    S.name(wb, "schedule_failures", SHEET, f"L{end}")
    S.name(wb, "schedule_compute_cost", SHEET, f"M{end}")
    return end, cells


#: what a blank 'Save every' means here and what ``workbook --from`` does with it, said live under the table
BLANK_WARNING = ("A blank 'Save every' in a phase the job runs in: this table evaluates that phase's own optimum at "
                 "its rate (column E), but ckptplan workbook --from optimises that phase around the typed intervals, "
                 "so the schedule it plans (and its wall time) can differ from this table's. Type an interval in "
                 "every such row (or keep ckptplan's optimum) for the two to agree.")


def _blank_warning(ws, row: int, rows: list[int], inputs: list[str], cells: Any) -> None:
    """A live line that appears while a phase the job reaches (expected wall time in it > 0) has a blank interval."""
    blanks = "+".join(f"AND({cells.given[i]},NOT(ISNUMBER({inputs[i]})),N({cells.wall_min[i]})>0)*1"
                      for i in range(len(rows)))
    text = "&".join(f'"{BLANK_WARNING[k:k + 200]}"' for k in range(0, len(BLANK_WARNING), 200))  # 255 a literal
    c = ws.cell(row=row, column=1, value=f'=IF(({blanks})>0,{text},"")')
    c.font = Font(bold=True, color="9C0006")
    c.alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=len(_COLUMNS))
    ws.row_dimensions[row].height = 30


def _compare_rows(ws, row: int, result: Any, currency: str, total: str) -> int:
    """The live schedule against the engine's best single interval (values, see the status)."""
    gpus, price = float(result["gpus"]), float(result["price_per_gpu_hour"])
    single = float(result["single_interval_wall_h"])
    S.header(ws, row, ["Expectation (exact, Daly's model per phase)", "", "", "", "The schedule above (live)",
                       "Best single interval (value)", "Unit"])
    ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=4)
    ws.row_dimensions[row].height = 32
    figures = (("Interval", "per phase", float(result["single_interval_min"]), "min", F.MINUTES),
               ("Expected wall time", f"={total}/60", single, "h", F.HOURS),
               ("Waste (share of wall time not useful)", f"=1-useful_training_h*60/{total}",
                1.0 - float(result["useful_h"]) / single, "share", F.PERCENT),
               ("Compute cost (GPU time x price)", f"={total}/60*gpus*price_per_gpu_hour", single * gpus * price,
                currency, F.MONEY))
    for k, (label, a, b, unit, fmt) in enumerate(figures, start=1):
        ws.cell(row=row + k, column=1, value=label)
        ws.merge_cells(start_row=row + k, start_column=1, end_row=row + k, end_column=4)
        for col, value in ((5, a), (6, b)):
            ws.cell(row=row + k, column=col, value=value).number_format = fmt
        ws.cell(row=row + k, column=7, value=unit)
    return row + len(figures) + 1


def schedule_sheet(wb: Workbook, sc: Any, result: Any, inputs: dict[str, Any]) -> None:
    """The Schedule sheet (module notes) of scenario ``sc`` with failure phases; ``result`` its engine row,
    ``inputs`` its Inputs-sheet values (:func:`ckptplan.workbook.build.scenario_inputs`)."""
    ws = wb.create_sheet(SHEET, index=wb.sheetnames.index("Plan") + 1)
    S.title(ws, "Schedule: the failure rate changes over the run", "One checkpoint interval per phase (see Notes). "
            "The phases and the intervals are inputs (blue); the table's expectation is live formulas of them and "
            "the Inputs sheet. ckptplan's schedule optimum and the best single interval are values (see the status).",
            8)
    ws.row_dimensions[2].height = 30
    row, used_phases = _phase_inputs(wb, ws, tuple(sc.failure_phases), 5)
    ws.row_dimensions[5].height = 32
    pairs = [(key, key, inputs[key]) for key in F.INPUT_KEYS] + used_phases
    ws["A3"] = "Optimum status"
    ws["A3"].font = Font(bold=True)
    ws["A3"].alignment = Alignment(vertical="top")
    ws["B3"] = "=" + flags.stale_check(pairs)
    ws["B3"].alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells("B3:H3")
    ws.row_dimensions[3].height = 45
    flags.highlight(ws, "B3", flags.UP_TO_DATE)
    S.name(wb, "schedule_status", SHEET, "B3")
    S.note(ws, row + 1, f"Computed on {dt.date.today().isoformat()}: ckptplan's schedule optimum (a search over all "
           "the intervals at once) and the best single interval are values, not formulas. When the status says OUT "
           "OF DATE, regenerate: ckptplan workbook --from THIS_FILE. 'Save every' is the interval the live table "
           "evaluates: ckptplan's optimum as generated, a number you type (STATED), or blank (the phase's own exact "
           "optimum at its rate, live: the search's starting point, not the schedule's optimum; --from optimises a "
           "blank phase around the typed ones instead, and a red line under the table says so).", 8, lines=4)
    end, cells = _table(wb, ws, row + 5, sc, result, sc.currency)
    end = _compare_rows(ws, end + 2, result, sc.currency, cells.total_min)
    S.note(ws, end + 1, "Failures are Poisson within a phase; a segment that straddles a boundary keeps its interval; "
           "a phase is entered only with at least one interval of work left at its start (a boundary inside the job's "
           "last segment counts as after its end; within 0.6 % of a simulation, engine.phases notes). The state of the job at each boundary "
           f"is a {QUADRATURE_NODES}-node Gauss-Legendre rule per piece over the time a restart ends, each node "
           "followed along its failure-free chain (hidden columns, one row per node): the engine's rule, cell for "
           "cell. The Plan, Compare and Deadline sheets plan the same inputs with a constant failure rate; "
           "`ckptplan plan` simulates the schedule's deadline.", 8, lines=5)
    for col, width in enumerate(_WIDTHS, start=1):
        ws.column_dimensions[get_column_letter(col)].width = width
    ws.print_area = f"A1:{get_column_letter(len(_COLUMNS))}{end + 2}"
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth, ws.page_setup.fitToHeight = 1, 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
