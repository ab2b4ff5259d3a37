"""The Excel results file of a batch or sweep, and the one results writer for every output kind.

:func:`write_results` (and :func:`write_scenarios`) write ``.csv``, ``.parquet`` and ``.xlsx``:
they call :func:`ckptplan.files.results.write_results` (streaming, atomic, no overwrite without
``force``) with the styled .xlsx sink of this module added. The .xlsx holds ``Results`` first (so
``pandas.read_excel(path)`` returns the results), an Excel Table with a frozen header, filter
buttons and number formats per unit (:func:`excel_number_format`; whole-number columns in a
whole-number format), then a ``Summary`` sheet (counts, the base scenario's filled columns, best
and worst scenario, first errors and model warnings, notes); openpyxl
write-only mode, so memory stays flat, at about 1.5k rows/s (60 columns). More rows than
:data:`~ckptplan.engine.fields.EXCEL_MAX_DATA_ROWS` raise :class:`InputError` suggesting CSV or
Parquet: a Table split over sheets could not be sorted or filtered as one.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import warnings
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from ..engine.columns import is_integer_column
from ..engine.errors import InputError
from ..engine.fields import EXCEL_MAX_DATA_ROWS
from ..engine.scenario import is_absent, is_number
from ..engine.sweep import BatchSummary
from ..files import results as _files
from ..files import tables as _tables
from ..files.results import Sink, is_text_column

__all__ = ["EXCEL_MAX_CELL_CHARS", "SINKS", "excel_number_format", "write_results", "write_scenarios"]

#: Excel's limit on the characters of one cell
EXCEL_MAX_CELL_CHARS = 32_767
_ILLEGAL_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def excel_number_format(column: str) -> str:
    """Excel number format for a column, by the unit in its name.

    Fractions (waste, goodput, shares, ``p_finish``, a strategy's or capacity policy's ``_p_finish``) as percentages; ``_min`` minutes and ``_h``
    hours with the unit shown; GPU-hours whole with ``GPU-h``; money (``_cost``, ``cost_``, ``_cost_p50``,
    ``price_per_gpu_hour``, ``cost_per_useful_gpu_hour``) with two decimals (the currency is in
    its own column, so no symbol); counts whole.
    """
    c = column
    if c in ("row", "deadline_seed", "mc_runs"):
        return "0"
    if c in ("nodes", "gpus_per_node", "gpus") or c.endswith("_nodes_per_domain"):
        return "#,##0"
    if ("waste" in c or c in ("goodput", "async_slowdown_fraction", "nonfatal_share")
            or c.startswith("p_finish") or "_p_finish" in c or c.endswith("_fraction") or c.endswith("_share")):
        return "0.00%"
    if c.endswith("gpu_hours") or "gpu_hours_" in c:
        return '#,##0" GPU-h"'
    if (c.endswith("_cost") or c.startswith("cost_") or "_cost_p" in c or c.startswith("mc_cost")
            or c == "price_per_gpu_hour"):
        return "#,##0.00"
    if c.endswith("_min"):
        return '#,##0.00" min"'
    if c.endswith("_h") or "_h_" in c:
        return '#,##0.0" h"'
    if "failures" in c or c == "runs_per_month":
        return "#,##0.0"
    return "General"


class _XlsxSink(Sink):
    """openpyxl write-only workbook: an Excel Table with frozen header and filter buttons, formats per unit.

    Write-only mode streams rows to disk (memory stays flat), so everything that sits before the
    rows in the sheet XML (frozen pane, column widths) is set before the first row; the Table (its
    range, column names and autofilter) is added at the end, when the row count is known (openpyxl
    writes tables after the rows, and needs explicit column names in write-only mode). The
    autofilter is the Table's own (a sheet-level autofilter over a Table makes Excel repair the
    file). Text cells are always stored as text (never formulas or error values, whatever they
    start with); NaN/inf cells are left empty; numbers are written in their shortest round-trip
    form (openpyxl's default ``%.16g`` can change the last bit), whole-number columns as integers.
    In a column holding text among numbers (an input cell that was no number), each cell keeps its
    kind. The ``Summary`` sheet is created at the end, after ``Results``.
    """

    @classmethod
    def check_rows(cls, rows: int) -> None:
        """More rows than one sheet holds: refused before any work (a Table split over sheets would
        break its sorting and filtering)."""
        if rows > EXCEL_MAX_DATA_ROWS:
            raise InputError("rows", rows, f"exceed Excel's limit of {EXCEL_MAX_DATA_ROWS:,} data rows per sheet: "
                             "write .csv or .parquet instead")

    def __init__(self, path: Path, sheet: str = "Results", summary_sheet: bool = True, source: str = ""):
        from openpyxl import Workbook

        self.path = path
        self.wb = Workbook(write_only=True)
        self.ws = self.wb.create_sheet(sheet)  # first: what pandas.read_excel(path) returns
        self.summary_sheet = summary_sheet
        self.sheet = sheet
        self.source = source
        self.columns: Optional[list[str]] = None
        self.rows = 0

    def _setup(self, frame: pd.DataFrame) -> None:
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Alignment, Font
        from openpyxl.utils import get_column_letter

        self.columns = [str(c) for c in frame.columns]
        ws = self.ws
        ws.freeze_panes = "A2"
        self.styles = []
        self.text = []  # "text", "number" or "mixed" (an object column: each cell keeps its kind)
        for j, c in enumerate(self.columns, start=1):
            col = frame[c]
            kind = ("mixed" if col.dtype.kind == "O" else "text") if is_text_column(col) else "number"
            self.text.append(kind)
            width = 40 if c in ("error", "warnings", "description", "source") else max(9, min(28, len(c) + 3))
            ws.column_dimensions[get_column_letter(j)].width = width
            proto = WriteOnlyCell(ws, "")
            if kind != "text":
                whole = col.dtype.kind in "iu" or not is_integer_column(c)
                proto.number_format = excel_number_format(c) if whole else "General"  # 1.5 nodes shows as 1.5
            self.styles.append(proto._style if proto.has_style else None)
        header = []
        for c in self.columns:
            cell = WriteOnlyCell(ws)
            cell._value, cell.data_type = c, "s"
            cell.font = Font(bold=True)
            cell.alignment = Alignment(wrap_text=True, vertical="top")
            header.append(cell)
        ws.append(header)
        # every further row: the column's prototype cell is filled and handed to the writer, which
        # serialises it before asking for the next (no cell object per value, no failed value bind)
        self.plain = WriteOnlyCell(ws)
        self.protos = []
        for style in self.styles:
            proto = WriteOnlyCell(ws)
            if style is not None:
                proto._style = style
            self.protos.append(proto)
        if hasattr(ws, "_values_to_row"):
            ws._values_to_row = self._row_cells

    def _row_cells(self, values: tuple, row_idx: int):
        """openpyxl's write-only ``_values_to_row`` for a row of plain values (None: empty cell)."""
        plain = self.plain
        for col_idx, (v, proto) in enumerate(zip(values, self.protos), start=1):
            if v is None:
                continue
            if isinstance(v, str):
                cell = plain
                cell._value, cell.data_type = v, "s"
            else:
                # openpyxl would write "%.16g" (not always the same double back); repr is the
                # shortest text that is, and Excel parses all 17 digits
                cell = proto
                cell._value, cell.data_type = repr(v), "n"
            cell.column, cell.row = col_idx, row_idx
            yield cell

    def write(self, frame: pd.DataFrame) -> None:
        from openpyxl.cell import WriteOnlyCell

        if self.columns is None:
            self._setup(frame)
        if self.rows + len(frame) > EXCEL_MAX_DATA_ROWS:
            raise InputError("rows", self.rows + len(frame), f"exceed Excel's limit of {EXCEL_MAX_DATA_ROWS:,} data rows "
                             "per sheet: write .csv or .parquet instead (splitting one table over sheets would break "
                             "its sorting and filtering)")
        ws = self.ws
        cols = []
        for c, kind in zip(self.columns, self.text):
            s = frame[c]
            if kind == "text":
                cols.append([None if is_absent(v) or v == "" else _excel_text(v) for v in s.to_numpy(dtype=object)])
            elif kind == "mixed":
                cols.append([None if is_absent(v) or (is_number(v) and not math.isfinite(v)) else
                             (float(v) if is_number(v) else _excel_text(v)) for v in s.to_numpy(dtype=object)])
            else:
                arr = s.to_numpy(dtype=float, na_value=np.nan)
                vals = arr.tolist()
                if not np.isfinite(arr).all():
                    vals = [v if math.isfinite(v) else None for v in vals]
                if s.dtype.kind in "iu":
                    vals = [None if v is None else int(v) for v in vals]
                cols.append(vals)
        if getattr(ws, "_values_to_row", None) == self._row_cells:
            for values in zip(*cols):
                ws.append(values)
            self.rows += len(frame)
            return
        styles = self.styles
        for values in zip(*cols):
            row = []
            for v, style in zip(values, styles):
                if v is None:
                    row.append(None)
                    continue
                cell = WriteOnlyCell(ws)
                if isinstance(v, str):
                    cell._value, cell.data_type = v, "s"
                else:
                    # openpyxl would write "%.16g" (not always the same double back); repr is the
                    # shortest text that is, and Excel parses all 17 digits
                    cell._value, cell.data_type = repr(v), "n"
                    if style is not None:
                        cell._style = style
                row.append(cell)
            ws.append(row)
        self.rows += len(frame)

    def abort(self) -> None:
        """Finish the half-written sheet streams quietly (the temporary file is discarded anyway)."""
        for ws in self.wb.worksheets:
            try:
                if not ws.closed:
                    ws.close()
            except Exception:  # noqa: BLE001 - best effort clean-up of a file about to be deleted
                pass

    def close(self, summary: Optional[BatchSummary]) -> None:
        from openpyxl.utils import get_column_letter
        from openpyxl.worksheet.filters import AutoFilter
        from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

        if self.columns is None:
            raise InputError("results", 0, "no rows to write")
        last = get_column_letter(len(self.columns))
        ref = f"A1:{last}{max(self.rows, 1) + 1}"
        table = Table(displayName=self.sheet, ref=ref)
        # write-only mode cannot read the header back: name the columns here (else Column1..n)
        table.tableColumns = [TableColumn(id=i, name=c) for i, c in enumerate(self.columns, start=1)]
        table.autoFilter = AutoFilter(ref=ref)
        table.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2", showRowStripes=True)
        with warnings.catch_warnings():  # "you must add table columns manually": done above
            warnings.filterwarnings("ignore", "In write-only mode", UserWarning)
            self.ws.add_table(table)
        if self.summary_sheet:
            self._write_summary(summary)
        self.wb.save(self.path)

    def _write_summary(self, summary: Optional[BatchSummary]) -> None:
        ws = self.wb.create_sheet("Summary")  # after Results: the results are the first sheet
        for col, width in zip("ABCD", (34, 60, 22, 22)):
            ws.column_dimensions[col].width = width
        cells = _SummaryCells(ws)
        s = summary or BatchSummary()
        _summary_counts(ws, cells, s, self.source)
        _summary_ranking(ws, cells, s)
        _summary_first_problems(ws, cells, s)
        _summary_notes(ws, cells, s)


class _SummaryCells:
    """The summary sheet's cells (write-only): text stored as text, numbers with their format."""

    def __init__(self, ws: Any):
        self.ws = ws

    def text(self, v: Any, bold: bool = False) -> Any:
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Font

        cell = WriteOnlyCell(self.ws)
        cell._value, cell.data_type = _excel_text(v), "s"
        if bold:
            cell.font = Font(bold=True)
        return cell

    def num(self, v: Any, fmt: str) -> Any:
        from openpyxl.cell import WriteOnlyCell

        if v is None or not math.isfinite(v):
            return None
        cell = WriteOnlyCell(self.ws, v)
        cell.number_format = fmt
        return cell


def _summary_counts(ws: Any, cells: _SummaryCells, s: BatchSummary, source: Optional[str]) -> None:
    """Title, time, source, row counts, and what the template filled in (and its tiers)."""
    text, num = cells.text, cells.num
    ws.append([text("ckptplan batch results", bold=True)])
    ws.append([text("written (UTC)"), text(_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"))])
    if source:
        ws.append([text("source"), text(source)])
    ws.append([text("rows"), num(s.rows, "#,##0")])
    ws.append([text("ok"), num(s.ok, "#,##0")])
    ws.append([text("errors (status = error)"), num(s.errors, "#,##0")])
    ws.append([text("ok rows with model warnings"), num(s.warned, "#,##0")])
    if s.template:
        filled = s.template.get("filled", {})
        ws.append([text("base scenario (template)"), text(s.template.get("template", ""))])
        ws.append([text("filled from the template"), text(", ".join(f"{k}={_show(v)}" for k, v in filled.items())
                                                         or "nothing: the file gives every column")])
        for k, why in s.template.get("not_taken", {}).items():
            ws.append([text(f"not taken from the template: {k}"), text(why)])
        for k, cells in s.template.get("blank_cells", {}).items():
            ws.append([text(f"blank cells filled from the template: {k}"),
                       text(f"{k}={_show(cells['value'])} ({cells['rows']:,} row(s))")])
        for k, r in s.template.get("ranges", {}).items():
            ws.append([text(f"input range {k}"), text(f"{r['from']} on {r['rows']:,} row(s), the row's own "
                                                      f"{k}_low/_high cells on {r['own']:,}")])
        if s.template.get("tiers"):
            ws.append([text("checkpoint tiers (every row)"), text(", ".join(s.template["tiers"]))])
    ws.append([])


def _summary_ranking(ws: Any, cells: _SummaryCells, s: BatchSummary) -> None:
    """The best and worst row per currency by cost per useful GPU-hour."""
    text, num = cells.text, cells.num
    ws.append([text("Ranked by cost per useful GPU-hour", bold=True),
               text("total cost (GPU time + storage + spares) / useful GPU-hours, in each row's currency (saves, "
                    "rework and restarts included)")])
    ws.append([text("", bold=True), text("scenario", bold=True), text("cost per useful GPU-h", bold=True),
               text("total cost", bold=True), text("goodput", bold=True)])
    for label, store in (("best", s.best), ("worst", s.worst)):
        for cur, rec in store.items():
            ws.append([text(f"{label} ({cur})"), text(f"row {rec['row']}: {BatchSummary.describe_record(rec)}"),
                       num(rec["value"], "#,##0.0000"), num(rec["total_cost"], "#,##0"), num(rec["goodput"], "0.00%")])


def _summary_first_problems(ws: Any, cells: _SummaryCells, s: BatchSummary) -> None:
    """The first errors and the first model warnings, row by row."""
    text = cells.text
    if s.first_errors:
        ws.append([])
        ws.append([text(f"First {len(s.first_errors)} errors (filter the status column for all)", bold=True)])
        ws.append([text("row", bold=True), text("error", bold=True)])
        for r, message in s.first_errors:
            ws.append([text(f"row {r}"), text(message)])
    if s.first_warnings:
        ws.append([])
        ws.append([text(f"First {len(s.first_warnings)} model warnings (filter the warnings column for all)",
                        bold=True)])
        for r, message in s.first_warnings:
            ws.append([text(f"row {r}"), text(message)])


def _summary_notes(ws: Any, cells: _SummaryCells, s: BatchSummary) -> None:
    """How to read the results: rows, warnings, units, and which models gave the figures."""
    text = cells.text
    ws.append([])
    ws.append([text("Notes", bold=True)])
    for note in (
        "One row per input row, in input order; row = the data row in the input file (1 = the first row under "
        "the header). A row that could not be evaluated has status = error, its figures blank and its problems "
        "in the error column (field=value: rule), a cell that was no number quoted there (its column stays numeric).",
        "warnings: why an ok row's answer leaves its model's range (engine.validity); empty when none.",
        "Units are in the column names: _min minutes, _h hours, _gpu_hours GPU-hours, _cost money in the row's "
        "currency; fractions are formatted as percentages.",
        ("Long-run figures: the exact multi-level model of the template's checkpoint tiers for exponential "
         "failures split into classes (engine.tiers.table); tier{i}_ columns per tier. mc_* and p_finish columns: "
         "the tiered Monte Carlo (engine.montecarlo_tiers), seeded per row (deadline_seed)."
         if s.template and s.template.get("tiers") else
         "Long-run figures: Daly's model for exponential failures (engine.evaluate). mc_* and p_finish columns: "
         "Monte Carlo of the finite job (engine.deadline), seeded per row (deadline_seed)."),
    ):
        ws.append([text(note)])


def _show(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _excel_text(v: Any) -> str:
    s = v if isinstance(v, str) else str(v)
    s = _ILLEGAL_XML.sub("\ufffd", s)
    return s if len(s) <= EXCEL_MAX_CELL_CHARS else s[: EXCEL_MAX_CELL_CHARS - 1] + "\u2026"


#: the output kinds this module adds to :func:`ckptplan.files.results.write_results`
SINKS = {"xlsx": _XlsxSink}


def write_results(results: Any, path: Union[str, Path], **kw: Any) -> BatchSummary:
    """Write evaluated results to ``.csv``, ``.xlsx`` or ``.parquet`` atomically; return the summary.

    :func:`ckptplan.files.results.write_results` (same arguments: ``force``, ``describe``,
    ``source``, ``progress``, ``expected_rows``, ``sinks``) with the .xlsx sink added (see the
    module notes). With ``expected_rows`` above Excel's limit, an .xlsx fails before any work.
    """
    return _files.write_results(results, path, **{**kw, "sinks": {**SINKS, **(kw.get("sinks") or {})}})


def write_scenarios(table: pd.DataFrame, path: Union[str, Path], **kw: Any) -> Path:
    """:func:`ckptplan.files.tables.write_scenarios` with the .xlsx sink added (one ``Scenarios`` sheet)."""
    return _tables.write_scenarios(table, path, **{**kw, "sinks": {**SINKS, **(kw.get("sinks") or {})}})
