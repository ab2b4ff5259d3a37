"""The "Plan vs actual" sheet: a job's measured time split beside the plan, in hours, GPU-hours and money.

Written by ``ckptplan workbook --log LOG``. Every figure is a value computed by the engine when the
workbook was built (:mod:`ckptplan.engine.measured` from the log, :mod:`ckptplan.engine.variance`
against the plan): a log is data, not a formula. The sheet says which log and plan it compares
and when; regenerate the workbook to compare another log. Text from the log (its name, notes) is
stored as text, never as a formula.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font

from . import formulas as F
from . import style as S

__all__ = ["SHEET", "actual_sheet"]

SHEET = "Plan vs actual"


def _text(ws: Any, row: int, col: int, value: Any) -> Any:
    """A cell holding ``value`` as text (a log's text never becomes a formula)."""
    c = ws.cell(row=row, column=col, value=value)
    if isinstance(value, str) and value.startswith("="):
        c.data_type = "s"
    return c


def actual_sheet(wb: Workbook, split: Any, variance: Any) -> None:
    """Add the sheet for one measured split (:class:`engine.measured.MeasuredSplit`) and its
    plan-vs-actual (:class:`engine.variance.VarianceResult`)."""
    ws = wb.create_sheet(SHEET)
    cur = variance.currency
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    S.title(ws, "Plan vs actual: where the job's time went, beside the plan (values, not formulas)",
            f"Log {split.source} against the plan {variance.scenario!r}, measured by ckptplan's engine on {when}. "
            "Regenerate the workbook (ckptplan workbook --log LOG) to compare another log.", 6)
    row = _measured(ws, 4, split, variance.planned_inputs)
    row = _buckets(ws, row + 2, variance, cur)
    row = _explanations(ws, row + 2, variance, cur)
    _notes(ws, row + 2, split, variance, cur)
    for col, width in zip("ABCDEF", (62, 14, 14, 16, 18, 18)):
        ws.column_dimensions[col].width = width
    S.print_setup(ws)


def _measured(ws: Any, row: int, split: Any, plan_in: dict[str, Any]) -> int:
    """What the log measures beside the plan's value, from ``row`` (the header); returns the last row."""
    m = split.measured
    S.header(ws, row, ["Measured from the log", "Value", "Unit", "Plan's value"])
    facts = [("Wall hours covered by the log", split.wall_h, "h", None, F.HOURS),
             ("Goodput (ETTR: productive / wall)", split.goodput, "", None, F.PERCENT),
             ("Failures", m.get("failures"), "", None, "0"),
             ("Job MTBF", m.get("job_mtbf_h"), "h", plan_in.get("job_mtbf_h"), F.HOURS),
             (f"  its {split.confidence:.0%} interval, low", m.get("job_mtbf_h_low"), "h", None, F.HOURS),
             (f"  its {split.confidence:.0%} interval, high", m.get("job_mtbf_h_high"), "h", None, F.HOURS),
             ("Checkpoint stall (blocking)", m.get("checkpoint_stall_min"), "min", plan_in.get("checkpoint_stall_min"),
              F.MINUTES),
             ("Background write until durable", m.get("async_write_min"), "min", plan_in.get("async_write_min"), F.MINUTES),
             ("Throughput lost during the write", m.get("async_slowdown_fraction"), "fraction",
              plan_in.get("async_slowdown_fraction"), F.PERCENT),
             ("Restart (failure to training again)", m.get("restart_min"), "min", plan_in.get("restart_min"), F.MINUTES),
             ("Compute interval between saves", m.get("checkpoint_interval_min"), "min",
              plan_in.get("checkpoint_interval_min"), F.MINUTES)]
    for label, value, unit, planned, fmt in facts:
        row += 1
        ws.cell(row=row, column=1, value=label)
        ws.cell(row=row, column=2, value=value if value is not None else "not in the log").number_format = fmt
        ws.cell(row=row, column=3, value=unit).alignment = Alignment(indent=1)
        if planned is not None:
            ws.cell(row=row, column=4, value=planned).number_format = fmt
    return row


def _buckets(ws: Any, row: int, variance: Any, cur: str) -> int:
    """Where the time went, planned against actual, bucket by bucket and in all; returns the last row."""
    S.header(ws, row, ["Where the time went", "Planned h", "Actual h", "Difference h", "Difference GPU-h",
                       f"Difference ({cur})"])
    _text(ws, row, 6, f"Difference ({cur})")
    for b in variance.buckets:
        row += 1
        ws.cell(row=row, column=1, value=b["bucket"])
        for col, key, fmt in ((2, "planned_h", F.HOURS), (3, "actual_h", F.HOURS), (4, "difference_h", F.HOURS),
                              (5, "difference_gpu_hours", F.GPU_HOURS), (6, "difference_money", F.MONEY)):
            ws.cell(row=row, column=col, value=b[key]).number_format = fmt
    t = variance.totals
    row += 1
    ws.cell(row=row, column=1, value="Waste (everything but productive)").font = Font(bold=True)
    for col, value, fmt in ((2, t["planned_waste_h"], F.HOURS), (3, t["actual_waste_h"], F.HOURS),
                            (4, t["difference_h"], F.HOURS), (5, t["difference_gpu_hours"], F.GPU_HOURS),
                            (6, t["difference_money"], F.MONEY)):
        c = ws.cell(row=row, column=col, value=value)
        c.number_format, c.font = fmt, Font(bold=True)
    return row


def _explanations(ws: Any, row: int, variance: Any, cur: str) -> int:
    """What explains the difference, one input at a time, and the rest of it; returns the last row."""
    S.header(ws, row, ["What explains the difference (one input at a time against the plan)", "Hours", "GPU-hours",
                       f"Money ({cur})"])
    _text(ws, row, 4, f"Money ({cur})")
    for e in variance.explanations:
        row += 1
        _text(ws, row, 1, e["text"]).alignment = Alignment(wrap_text=True, vertical="top")
        ws.row_dimensions[row].height = 15 if len(e["text"]) <= 75 else 30
        for col, key, fmt in ((2, "effect_h", F.HOURS), (3, "effect_gpu_hours", F.GPU_HOURS), (4, "effect_money", F.MONEY)):
            c = ws.cell(row=row, column=col, value=e[key])
            c.number_format, c.alignment = fmt, Alignment(vertical="top")
    for key in ("interaction", "startup", "idle", "unexplained"):
        row += 1
        ws.cell(row=row, column=1, value=f"{key} (rest of the difference)")
        ws.cell(row=row, column=2, value=variance.attribution.get(key, 0.0)).number_format = F.HOURS
    return row


def _notes(ws: Any, row: int, split: Any, variance: Any, cur: str) -> None:
    """What the optimum interval would have saved, then the log's and the comparison's notes, from ``row``."""
    o = variance.optimum_savings
    S.note(ws, row, f"Interval used {o['interval_used_min']:.1f} min; the exact optimum for the measured inputs is "
                    f"{o['optimal_interval_min']:.1f} min, which would have saved {o['wall_h_saved']:,.2f} wall hours = "
                    f"{o['gpu_hours_saved']:,.0f} GPU-hours = {o['money_saved']:,.0f} {cur} for the same useful work.", 6)
    for note in tuple(split.notes) + tuple(variance.notes):
        row += 1
        c = _text(ws, row, 1, f"Note: {note}")
        c.font, c.alignment = S.NOTE_FONT, Alignment(wrap_text=True, vertical="top")
        ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=6)
        ws.row_dimensions[row].height = 30
