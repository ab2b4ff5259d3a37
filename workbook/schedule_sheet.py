"""The Schedule sheet: a failure rate that changes over the run (``[[failure_phases]]``) and its checkpoint schedule.

The phases are inputs here (blue cells, data-validated by the registry's rules, defined names
``phase{i}_start_h`` / ``phase{i}_rate_factor``, read back by ``ckptplan workbook --from``). The
schedule (one interval per phase) and its exact expectation are :mod:`ckptplan.engine.phases`'s: the
state of the job at a phase boundary is a 4,000-node quadrature carried along every chain of
successful segments, and the intervals are found by a Nelder-Mead search over all of them at once.
Neither is a spreadsheet formula, so the table holds the engine's values, with a live status that
says when an input or a phase changed since they were computed (as the Deadline sheet); regenerating
from the edited file recomputes them. The Plan sheet keeps the constant-rate plan of the same inputs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.datavalidation import DataValidation

from ..engine.fields import phase_field
from ..engine.phases import QUADRATURE_NODES
from . import flags
from . import formulas as F
from . import style as S

__all__ = ["SHEET", "phase_slots", "schedule_sheet"]

SHEET = "Schedule"
#: blank phase rows beyond the scenario's, so a planner can add a phase in the file
_SPARE_SLOTS = 2


def phase_slots(n: int) -> int:
    """The phase rows the sheet offers for a scenario with ``n`` phases."""
    return n + _SPARE_SLOTS


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


def _schedule_rows(ws, row: int, result: Any, currency: str) -> int:
    """The engine's schedule (one row a phase) and its expectation against the best single interval."""
    S.header(ws, row, ["From (h)", "rate_factor", "Save every (min)", "Job MTBF in the phase (h)"])
    i = 1
    while f"schedule{i}_start_h" in result.index and result[f"schedule{i}_start_h"] == result[f"schedule{i}_start_h"]:
        r = row + i
        factor = float(result[f"schedule{i}_rate_factor"])
        for col, value, fmt in ((1, float(result[f"schedule{i}_start_h"]), F.HOURS), (2, factor, "0.00##"),
                                (3, float(result[f"schedule{i}_interval_min"]), F.MINUTES),
                                (4, float(result["job_mtbf_h"]) / factor, F.HOURS)):
            ws.cell(row=r, column=col, value=value).number_format = fmt
        i += 1
    row += i + 1
    gpus, price = float(result["gpus"]), float(result["price_per_gpu_hour"])
    wall, single = float(result["wall_h"]), float(result["single_interval_wall_h"])
    S.header(ws, row, ["Expectation (exact, Daly's model per phase)", "The schedule", "Best single interval",
                       "Unit"])
    figures = (("Interval", "per phase (above)", float(result["single_interval_min"]), "min", F.MINUTES),
               ("Expected wall time", wall, single, "h", F.HOURS),
               ("Waste (share of wall time not useful)", float(result["waste_fraction"]),
                1.0 - float(result["useful_h"]) / single, "share", F.PERCENT),
               ("Compute cost (GPU time x price)", wall * gpus * price, single * gpus * price, currency, F.MONEY))
    for k, (label, a, b, unit, fmt) in enumerate(figures, start=1):
        ws.cell(row=row + k, column=1, value=label)
        for col, value in ((2, a), (3, b)):
            ws.cell(row=row + k, column=col, value=value).number_format = fmt
        ws.cell(row=row + k, column=4, value=unit)
    return row + len(figures) + 1


def schedule_sheet(wb: Workbook, sc: Any, result: Any, inputs: dict[str, Any]) -> None:
    """The Schedule sheet (module notes) of scenario ``sc`` with failure phases; ``result`` its engine row,
    ``inputs`` its Inputs-sheet values (:func:`ckptplan.workbook.build.scenario_inputs`)."""
    ws = wb.create_sheet(SHEET, index=wb.sheetnames.index("Plan") + 1)
    S.title(ws, "Schedule: the failure rate changes over the run", "One checkpoint interval per phase "
            "(see Notes). The phases are inputs (blue); the schedule and its expectation are values "
            "computed by ckptplan, not formulas (see the status).", 4)
    ws.row_dimensions[2].height = 30
    row, used_phases = _phase_inputs(wb, ws, tuple(sc.failure_phases), 5)
    pairs = [(key, key, inputs[key]) for key in F.INPUT_KEYS] + used_phases
    ws["A3"] = "Schedule status"
    ws["A3"].font = Font(bold=True)
    ws["B3"] = "=" + flags.stale_check(pairs)
    ws["B3"].alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells("B3:D3")
    ws.row_dimensions[3].height = 45
    flags.highlight(ws, "B3", flags.UP_TO_DATE)
    S.name(wb, "schedule_status", SHEET, "B3")
    S.note(ws, row + 1, f"Computed on {dt.date.today().isoformat()}. Values, not formulas: the job's state at each "
           f"phase boundary is a {QUADRATURE_NODES:,}-node quadrature along every chain of successful segments, and the "
           "intervals come from a search over all of them at once; a spreadsheet formula can do neither. When the "
           "status says OUT OF DATE, regenerate: ckptplan workbook --from THIS_FILE.", 4)
    end = _schedule_rows(ws, row + 3, result, sc.currency)
    S.note(ws, end + 1, "Failures are Poisson within a phase; a segment that straddles a boundary keeps its interval; "
           "the job is assumed still running when the phase it ends in begins. The Plan, Compare and Deadline sheets "
           "plan the same inputs with a constant failure rate; `ckptplan plan` simulates the schedule's deadline.", 4)
    for col, width in zip("ABCD", (44, 24, 24, 30)):
        ws.column_dimensions[col].width = width
