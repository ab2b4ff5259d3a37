"""The workbook's look, in one place: input and header styles, titles, notes, chart series, print setup.

Conventions of financial models: inputs in blue on a light fill, calculations in black, headers
white on dark blue; every sheet prints landscape, fitted to the page width.
"""

from __future__ import annotations

from typing import Any

import math
import textwrap

from openpyxl import Workbook
from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.chart.marker import Marker
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.utils.indexed_list import IndexedList
from openpyxl.workbook.defined_name import DefinedName

__all__ = ["interval_chart", "keep_text_literal", "HEADER_FILL", "HEADER_FONT", "INPUT_FILL", "INPUT_FONT", "INPUT_NUMBER", "INPUT_WHOLE", "KEY_FILL", "NOTE_FONT", "TITLE_FONT", "fit_rows",
           "fmt_unit", "header", "large_number", "line", "name", "new_workbook", "note", "points", "print_setup", "text_lines",
           "title"]

INPUT_FONT = Font(color="0000FF")
INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")
HEADER_FONT = Font(bold=True, color="FFFFFF")
HEADER_FILL = PatternFill("solid", fgColor="1F4E78")
TITLE_FONT = Font(bold=True, size=14)
KEY_FILL = PatternFill("solid", fgColor="E2EFDA")
NOTE_FONT = Font(italic=True, color="595959")
#: number formats of input cells: thousands separators everywhere, as on the Plan sheet
INPUT_NUMBER = "#,##0.00##"
INPUT_WHOLE = "#,##0"


class _StyleIndex(IndexedList):
    """openpyxl's list of a workbook's distinct fonts (fills, borders, alignments, protections), found by the style
    object's fields.

    openpyxl finds a style's index by hashing the object and comparing it field by field with the one of equal
    hash (every time a cell's font or alignment is set: about 4,000 times a workbook, much of the build's time).
    Here the object's fields (``vars``) are the key: objects with equal fields are equal to openpyxl too, so the
    index is the one openpyxl gives; an object not met before (or one whose fields cannot be a key) goes through
    openpyxl's own lookup. Fields are read at every call, so an object changed after use is looked up anew."""

    def __init__(self, iterable: Any = None):
        super().__init__(iterable)
        self.by_fields: dict[Any, int] = {}

    def add(self, value: Any) -> int:
        try:
            key = (type(value), tuple(vars(value).items()))
            hit = self.by_fields.get(key)
        except TypeError:   # no fields (text) or a field that cannot be a key
            return super().add(value)
        if hit is None:
            hit = self.by_fields[key] = super().add(value)
        return hit


def new_workbook() -> Workbook:
    """An empty workbook whose style lists look styles up by their fields (:class:`_StyleIndex`): the same file."""
    wb = Workbook()
    for name in ("_fonts", "_fills", "_borders", "_alignments", "_protections"):   # openpyxl's own lists
        setattr(wb, name, _StyleIndex(getattr(wb, name)))
    return wb


def header(ws, row: int, titles: list[str], col: int = 1) -> None:
    for j, title in enumerate(titles):
        c = ws.cell(row=row, column=col + j, value=title)
        c.font, c.fill = HEADER_FONT, HEADER_FILL
        c.alignment = Alignment(wrap_text=True, vertical="center")


def title(ws, title: str, subtitle: str = "", width_cols: int = 4) -> None:
    ws["A1"] = title
    ws["A1"].font = TITLE_FONT
    if subtitle:
        note(ws, 2, subtitle, width_cols)


def note(ws, row: int, text: str, width_cols: int = 4, lines: int | None = None) -> None:
    """A wrapped italic note spanning ``width_cols`` columns (merged), tall enough to read.

    ``width_cols = 0``: one unwrapped cell whose text runs on over the empty cells to its right
    (for sheets whose first columns are narrow or hidden).
    """
    if width_cols == 0:
        ws.cell(row=row, column=1, value=text).font = NOTE_FONT
        return
    ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=width_cols)
    c = ws.cell(row=row, column=1, value=text)
    c.font = NOTE_FONT
    c.alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[row].height = 15 * (lines or max(1, math.ceil(len(text) / (28 * width_cols))))


def line(series: Series, color: str, width_emu: int = 28575, dash: str | None = None) -> Series:
    series.marker = Marker(symbol="none")
    series.smooth = False
    series.graphicalProperties.line.solidFill = color
    series.graphicalProperties.line.width = width_emu
    if dash:
        series.graphicalProperties.line.dashStyle = dash
    return series


def points(series: Series, color: str, symbol: str, size: int = 9) -> Series:
    series.marker = Marker(symbol=symbol, size=size)
    series.marker.graphicalProperties = GraphicalProperties(solidFill=color)
    series.marker.graphicalProperties.line.solidFill = color
    series.graphicalProperties.line.noFill = True
    return series



def interval_chart(ws, titles: tuple[str, str, str], rows: tuple[int, int], curves: list[tuple[int, str, str, str | None]],
                   marked: tuple[int, int, int, str], anchor: str) -> ScatterChart:
    """The waste-against-interval chart of the Interval curve sheets (single-level and tiered): ``titles`` =
    (chart, x axis, y axis); x from column B over ``rows`` = (first, last); each curve = (y column, legend,
    colour, dash or None); ``marked`` = (first marked row, x column, y column, the optimum's legend) for the two
    marked points (the optimum, then the chosen interval one row under it)."""
    chart = ScatterChart()
    chart.title, chart.x_axis.title, chart.y_axis.title = titles
    chart.scatterStyle = "lineMarker"
    chart.y_axis.number_format = "0%"
    chart.x_axis.number_format = "0"
    chart.height, chart.width = 10, 18
    chart.legend.position = "b"
    first, last = rows
    xs = Reference(ws, min_col=2, min_row=first, max_row=last)
    for col, legend, color, dash in curves:
        chart.series.append(line(Series(Reference(ws, min_col=col, min_row=first, max_row=last), xs, title=legend),
                                 color, dash=dash))
    r0, xcol, ycol, optimum = marked
    for r, legend, color, symbol in ((r0, optimum, "C00000", "diamond"), (r0 + 1, "Chosen interval", "000000", "circle")):
        chart.series.append(points(Series(Reference(ws, min_col=ycol, min_row=r, max_row=r),
                                          Reference(ws, min_col=xcol, min_row=r, max_row=r), title=legend), color, symbol))
    chart.x_axis.delete = chart.y_axis.delete = False
    ws.add_chart(chart, anchor)
    return chart

#: points per line of wrapped 11-point text (what a row needs per line; LibreOffice and Excel draw
#: rows written by openpyxl at the height given, never growing them to fit)
LINE_HEIGHT = 15


def text_lines(text: Any, width: float, bold: bool = False) -> int:
    """Lines ``text`` wraps to in a column ``width`` characters wide (words wrap whole; bold is wider)."""
    per_line = max(1, int(width * (1.0 if bold else 1.2)))  # characters per width unit, measured on rendered pages
    return max(1, sum(len(textwrap.wrap(part, per_line)) or 1 for part in str(text).split("\n")))


def large_number(fmt: str) -> str:
    """``fmt`` for figures up to a trillion, scientific above: a column sized to its largest figure never
    shows ``###`` when an edited input makes a run cost 1e20 (e.g. ``#,##0`` -> ``[<1E12]#,##0;0.00E+00``)."""
    return f"[<1000000000000]{fmt};0.00E+00"


def fit_rows(ws, first_row: int, last_row: int) -> None:
    """Row heights for wrapped text (LibreOffice and Excel do not grow rows written by openpyxl)."""
    widths = {col: (ws.column_dimensions[get_column_letter(col)].width or 10) for col in range(1, ws.max_column + 1)}
    for r in range(first_row, last_row + 1):
        lines = 1
        for col in range(1, ws.max_column + 1):
            v = ws.cell(row=r, column=col).value
            if isinstance(v, str):
                lines = max(lines, text_lines(v, widths[col], bool(ws.cell(row=r, column=col).font.b)))
        ws.row_dimensions[r].height = LINE_HEIGHT * lines + 2


def print_setup(ws, landscape: bool = True) -> None:
    ws.page_setup.orientation = "landscape" if landscape else "portrait"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    # a sheet that asked for more pages across (a wide design comparison) keeps them; the rest fit one page across
    ws.page_setup.fitToWidth = ws.page_setup.fitToWidth if (ws.page_setup.fitToWidth or 0) > 1 else 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_options.gridLines = False
    ws.oddFooter.center.text = "&A - page &P of &N"


def name(wb: Workbook, name: str, sheet: str, cell: str) -> None:
    col, row = "".join(ch for ch in cell if ch.isalpha()), "".join(ch for ch in cell if ch.isdigit())
    wb.defined_names[name] = DefinedName(name, attr_text=f"'{sheet}'!${col}${row}")


def fmt_unit(unit: str, currency: str) -> str:
    return unit.replace("money", currency)


def keep_text_literal(wb: Workbook, texts: Any) -> int:
    """Store as plain text every cell that became a formula only because it starts with user text.

    openpyxl turns any string starting with ``=`` into a formula. Text a user controls (scenario
    and design names, currency, descriptions, checklist evidence, tier names) must never run as a
    formula in a workbook we write, whatever it holds (``=HYPERLINK(...)``). The generated formulas
    never contain such text literally (they refer to its cell), so a formula cell whose text starts
    with one of ``texts`` that itself starts with ``=`` came from that text: it is stored as text.
    Returns the number of cells changed.
    """
    hostile = tuple(sorted({t for t in texts if isinstance(t, str) and t.startswith("=")}, key=len, reverse=True))
    if not hostile:
        return 0
    changed = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f" and isinstance(c.value, str) and c.value in hostile:
                    c.data_type = "s"
                    changed += 1
    return changed
