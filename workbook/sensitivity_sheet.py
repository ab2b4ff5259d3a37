"""The Sensitivity sheet: each uncertain input swung from low to high as live formulas, and a tornado chart.

Written when the plan has input ranges (a scenario file's ``[uncertainty]`` table,
:mod:`ckptplan.engine.uncertainty`). The top table holds each input's low and high: a scenario input's
read live from the Inputs sheet's Low and High columns (defined names ``<name>_low``, ``<name>_high``,
where the planner edits them), a setup input's typed here (blue, named ``<field>_low`` ..., with its
Shape and Mode at the table's right end) and, as formulas, the baseline's total cost, wall hours, goodput and P(finish by the
deadline) with that input at its low and at its high, the swing (at low minus at high) and its live
rank. Below it, each of those plans is the Plan sheet's formula sequence
(:data:`ckptplan.workbook.design_formulas.PLAN_CALCS`) on one row, reading every input from the
Inputs sheet and the setup's ``setup_*`` cells except the one swung, which reads the row's value; so
an edit of any input, of a low or of a high re-plans every row, and each cell equals
:func:`ckptplan.engine.sensitivity.tornado` of the edited plan (the tests recalculate it in
LibreOffice). The chart's bars are the swings of total cost, in the order of the engine's ranking
when the workbook was written (the rank column stays live).

Below the spider, each design's swings: the engine's values under a live status
(:mod:`ckptplan.workbook.sensitivity_designs`, which says why they are not formulas). A swing of a stall or restart
the setup derives states it on that row, as a value typed on the Inputs sheet would.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.chart.marker import Marker
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from ..engine.fields import SETUP_FIELD_BY_NAME
from ..engine.uncertainty import uncertain_field
from . import design_formulas as D
from . import style as S
from .manifest import Built, Check

__all__ = ["SENSITIVITY_OUTPUTS", "sensitivity_sheet"]

#: (plan calc key, heading) of the figures the top table swings
SENSITIVITY_OUTPUTS = (("total_cost", "total cost"), ("wall_h", "wall h"), ("goodput", "goodput"),
                       ("p_finish_by_deadline", "P(finish by the deadline)"))
_FORMATS = {"total_cost": "#,##0", "wall_h": "#,##0.0", "goodput": "0.00%", "p_finish_by_deadline": "0.0%"}


def _override(refs: dict[str, str], field: str, cell: str) -> None:
    """The row's plan reads ``field`` from ``cell`` instead of the Inputs sheet or the setup."""
    if field in SETUP_FIELD_BY_NAME:
        refs[field] = cell
        default = SETUP_FIELD_BY_NAME[field].default
        refs[f"{field}_d"] = f'IF({cell}="",{default or 0!r},{cell})'
    else:
        refs[field] = cell
        if field == "node_mtbf_h":
            refs["job_mtbf_override_h"] = '""'   # a swung node MTBF is not hidden by a job MTBF override


def _chain(ws, row: int, first_col: int, field: str, value_cell: str, terms: int, built: Built,
           context: tuple) -> dict[str, str]:
    """One plan on ``row``: the Plan sheet's calcs with ``field`` read from ``value_cell``; key -> cell."""
    pool_col = first_col + len(D.PLAN_CALCS)   # the spare pool's Erlang-B chain, right of the plan
    refs = D.plan_refs(terms, f"{get_column_letter(pool_col + terms)}{row}" if terms else "1")
    _override(refs, field, value_cell)
    cells: dict[str, str] = {}
    for j, calc in enumerate(D.PLAN_CALCS):
        ref = f"{get_column_letter(first_col + j)}{row}"
        ws[ref] = "=" + calc.expr(refs)
        ws[ref].number_format = calc.fmt
        D.bind(refs, calc.key, ref)
        cells[calc.key] = ref
        if calc.engine_key:
            built.checks.append(Check("Sensitivity", ref, context, calc.engine_key))
    D.write_pool_chain(ws, row, pool_col + 1, terms, refs, across=True)
    return cells


def _ends(wb: Any, ws, r: int, u: Any, shape_col: int) -> None:
    """Row ``r``'s Low and High: a scenario input's are the Inputs sheet's cells (``<name>_low``, ``<name>_high``,
    read live); a setup input's are blue inputs here, named ``<field>_low`` ... with its Shape and Mode."""
    from ..engine.uncertainty import DISTRIBUTIONS

    spec = uncertain_field(u.field)
    fmt = S.INPUT_WHOLE if spec.integer else S.INPUT_NUMBER
    if u.field not in SETUP_FIELD_BY_NAME:
        key = spec.defined_name
        for col, part in ((2, "low"), (3, "high")):
            c = ws.cell(row=r, column=col, value=f'=IF(ISNUMBER({key}_{part}),{key}_{part},"")')
            c.number_format = fmt
        ws.cell(row=r, column=shape_col, value="on the Inputs sheet").font = S.NOTE_FONT
        return
    values = {"low": u.low, "high": u.high, "dist": None if u.dist == "range" else u.dist, "mode": u.mode}
    for col, part in ((2, "low"), (3, "high"), (shape_col, "dist"), (shape_col + 1, "mode")):
        c = ws.cell(row=r, column=col, value=values[part])
        c.font, c.fill = S.INPUT_FONT, S.INPUT_FILL
        ref = f"{get_column_letter(col)}{r}"
        if part == "dist":
            dv = DataValidation(type="list", formula1='"' + ",".join(d for d in DISTRIBUTIONS if d != "range") + '"',
                                allow_blank=True)
        else:
            c.number_format = fmt
            dv = DataValidation(**spec.check.data_validation(ref), allow_blank=True, showErrorMessage=True,
                                errorTitle="Invalid input", error=f"{u.field}_{part} must be {spec.check.noun}."[:225])
        ws.add_data_validation(dv)
        dv.add(c)
        S.name(wb, f"{u.field}_{part}", "Sensitivity", ref)


def sensitivity_sheet(wb: Any, inputs: Sequence[Any], built: Built, terms: int, currency: str,
                      designs: tuple[Callable[[Any, int], int], int] | None = None) -> None:
    """Add the Sensitivity sheet for ``inputs`` (:class:`ckptplan.engine.uncertainty.UncertainInput`, in the
    order the chart shows them); ``terms``: the spare pool's chain length (as the Plan sheet's); ``designs``:
    (writer, rows) of the designs' block below the spider's table (:mod:`workbook.sensitivity_designs`)."""
    ws = wb.create_sheet("Sensitivity")
    S.title(ws, "Sensitivity: each input swung from low to high, the others as on the Inputs sheet",
            "Swing = the plan at low minus the plan at high (ckptplan sensitivity). Low and high: the Inputs sheet's "
            "(a setup input's are typed here); every other figure is a live formula of the plan below.", 0)
    head, first = 4, 5
    k = len(inputs)
    titles = ["Input", "Low", "High"]
    for _, label in SENSITIVITY_OUTPUTS:
        titles += [f"{label} at low", f"{label} at high", f"{label} swing"]
    titles += ["|total cost swing|", "Rank (total cost)", "Shape (setup inputs)", "Mode (setup inputs)"]
    S.header(ws, head, titles)
    spider_head = first + k + 21   # below the charts
    block = spider_head + k + 3   # the designs' swings, then the plan rows
    chain_head = block + (designs[1] + 2 if designs else 0)
    S.header(ws, chain_head, ["Input", "End", "Value"])
    for i, u in enumerate(inputs):
        r = first + i
        ws.cell(row=r, column=1, value=u.field)
        _ends(wb, ws, r, u, 4 + 3 * len(SENSITIVITY_OUTPUTS) + 2)
        plans = {}
        for e, (end, col) in enumerate((("low", "B"), ("high", "C"))):
            cr = chain_head + 1 + 2 * i + e
            ws.cell(row=cr, column=1, value=u.field)
            ws.cell(row=cr, column=2, value=end)
            ws.cell(row=cr, column=3, value=f"={col}{r}")
            plans[end] = _chain(ws, cr, 4, u.field, f"C{cr}", terms, built, ("sensitivity", u.field, end))
        for j, (key, _) in enumerate(SENSITIVITY_OUTPUTS):
            c0 = 4 + 3 * j
            lo, hi = (get_column_letter(c0 + d) for d in (0, 1))
            ws.cell(row=r, column=c0, value=f"={plans['low'][key]}")
            ws.cell(row=r, column=c0 + 1, value=f"={plans['high'][key]}")
            ws.cell(row=r, column=c0 + 2, value=f'=IF(AND(ISNUMBER({lo}{r}),ISNUMBER({hi}{r})),{lo}{r}-{hi}{r},"")')
            for d in range(3):
                ws.cell(row=r, column=c0 + d).number_format = _FORMATS[key]
            built.checks.append(Check("Sensitivity", f"{get_column_letter(c0 + 2)}{r}", ("sensitivity", u.field,
                                                                                          "swing"), key))
        size_col = 4 + 3 * len(SENSITIVITY_OUTPUTS)
        ws.cell(row=r, column=size_col, value=f'=IF(ISNUMBER(F{r}),ABS(F{r}),"")').number_format = "#,##0"
        rng = f"${get_column_letter(size_col)}${first}:${get_column_letter(size_col)}${first + k - 1}"
        size = f"{get_column_letter(size_col)}{r}"
        ws.cell(row=r, column=size_col + 1, value=f'=IF(ISNUMBER({size}),RANK({size},{rng}),"")')
    _chart(ws, first, k, currency)
    _spider(ws, inputs, first, spider_head, chain_head + 1 + 2 * k, terms, built, currency)
    if designs:
        designs[0](ws, block)
    ws.row_dimensions[head].height = 45
    for c in range(1, 4 + 3 * len(SENSITIVITY_OUTPUTS) + 4):
        ws.cell(row=head, column=c).alignment = Alignment(wrap_text=True, vertical="top")
        ws.column_dimensions[get_column_letter(c)].width = 24 if c == 1 else 14
    ws.freeze_panes = ws.cell(row=first, column=2)
    # the printout: the swings, the charts and the spider's table; the plan rows below are the working
    ws.print_area = f"A1:{get_column_letter(4 + 3 * len(SENSITIVITY_OUTPUTS) + 3)}{chain_head - 2}"


def _chart(ws, first: int, k: int, currency: str) -> None:
    """The tornado: one horizontal bar per input, its total-cost swing."""
    chart = BarChart()
    chart.type = "bar"
    chart.title = f"Total cost swing, low minus high ({currency})"
    chart.y_axis.title = currency
    chart.y_axis.number_format = "#,##0"
    chart.legend = None
    chart.add_data(Reference(ws, min_col=6, min_row=first - 1, max_row=first + k - 1), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=first, max_row=first + k - 1))
    chart.x_axis.scaling.orientation = "maxMin"   # rank 1 on top
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.height, chart.width = 9, 18
    ws.add_chart(chart, f"A{first + k + 2}")


#: one line colour per input (colour-blind safe, Okabe and Ito), repeated beyond eight inputs
_SPIDER_COLORS = ("0072B2", "D55E00", "009E73", "CC79A7", "E69F00", "56B4E9", "000000", "F0E442")
#: the spider's points along each range: low, halfway to the base, the base, halfway to the high, high
SPIDER_POINTS = ("low", "mid-low", "base", "mid-high", "high")


def _base_value(field: str) -> str:
    """The value the plan uses for ``field``: a derived stall or restart as used, a blank setup cell's default."""
    if field in SETUP_FIELD_BY_NAME:
        return f'IF(setup_{field}="",{SETUP_FIELD_BY_NAME[field].default or 0!r},setup_{field})'
    key = uncertain_field(field).defined_name
    return f"used_{key}" if field in D.DERIVED else key


def _spider(ws, inputs: Sequence[Any], first: int, head: int, chain_row: int, terms: int, built: Built,
            currency: str) -> None:
    """The spider: each input at its low, halfway to the base, the base, halfway to the high and its high
    (the halfway points planned on rows from ``chain_row``, as the low and high ones), as % of its base
    value against total cost; a chart beside the tornado, one line per input."""
    k = len(inputs)
    S.header(ws, head, ["Spider: input"] + [f"value at {p}" for p in SPIDER_POINTS]
             + [f"% of base at {p}" for p in SPIDER_POINTS] + [f"total cost at {p} ({currency})" for p in SPIDER_POINTS])
    for i, u in enumerate(inputs):
        r, top = head + 1 + i, first + i
        whole = uncertain_field(u.field).integer
        ws.cell(row=r, column=1, value=u.field)
        base = _base_value(u.field)
        # the halfway values are computed on their plan rows, from the top table and the base (never from this
        # table, whose costs read those rows: LibreOffice's grouped recalculation mis-orders such a loop of rows)
        mids = {"mid-low": f"($B${top}+{base})/2", "mid-high": f"({base}+$C${top})/2"}
        exprs = {"low": f"B{top}", "base": base, "high": f"C{top}"}
        costs = {"low": f"D{top}", "base": "total_cost", "high": f"E{top}"}
        for e, point in enumerate(("mid-low", "mid-high")):
            cr = chain_row + 2 * i + e
            ws.cell(row=cr, column=1, value=u.field)
            ws.cell(row=cr, column=2, value=point)
            # a whole-number input halfway rounds half up (INT(x + 0.5): LibreOffice mis-orders ROUND of a setup name)
            ws.cell(row=cr, column=3, value=f"=INT({mids[point]}+0.5)" if whole else f"={mids[point]}")
            exprs[point] = f"C{cr}"
            costs[point] = _chain(ws, cr, 4, u.field, f"C{cr}", terms, built, ("sensitivity", u.field, point))[
                "total_cost"]
        for j, point in enumerate(SPIDER_POINTS):
            v, x, y = (get_column_letter(c + j) for c in (2, 7, 12))
            ws[f"{v}{r}"] = f"={exprs[point]}"
            ws[f"{x}{r}"] = f'=IF(AND(ISNUMBER({v}{r}),ISNUMBER($D{r}),$D{r}<>0),100*{v}{r}/$D{r},"")'
            ws[f"{y}{r}"] = f"={costs[point]}"
            ws[f"{v}{r}"].number_format = S.INPUT_WHOLE if whole else "#,##0.00##"
            ws[f"{x}{r}"].number_format = "0"
            ws[f"{y}{r}"].number_format = "#,##0"
            built.checks.append(Check("Sensitivity", f"{y}{r}", ("spider", u.field, point), "total_cost"))
    ws.row_dimensions[head].height = 45
    for c in range(1, 17):
        ws.cell(row=head, column=c).alignment = Alignment(wrap_text=True, vertical="top")
    chart = ScatterChart()
    chart.title = f"Spider: total cost ({currency}) as each input moves across its range"
    chart.style = 13
    chart.x_axis.title = "input, % of its base value"
    chart.y_axis.title = currency
    chart.y_axis.number_format = "#,##0"
    for i in range(k):
        r = head + 1 + i
        series = Series(Reference(ws, min_col=12, max_col=16, min_row=r), Reference(ws, min_col=7, max_col=11, min_row=r),
                        title=inputs[i].field)
        color = _SPIDER_COLORS[i % len(_SPIDER_COLORS)]
        series.marker = Marker(symbol=("circle", "square", "triangle", "diamond")[i % 4], size=6)
        series.marker.graphicalProperties = GraphicalProperties(solidFill=color)
        series.marker.graphicalProperties.line.solidFill = color
        series.graphicalProperties.line.solidFill = color
        series.graphicalProperties.line.width = 22000
        series.smooth = False
        chart.series.append(series)
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.legend.position = "b"
    chart.height, chart.width = 9, 18
    ws.add_chart(chart, f"H{first + k + 2}")
