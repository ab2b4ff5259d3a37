"""The sheets of a baseline with checkpoint tiers: its tiered plan on the Interval curve, Scaling and Compare sheets.

The Plan sheet's top rows and the Storage & recovery sheet's baseline column plan a tiered baseline with the
tiered model (:mod:`.tier_formulas`, Benoit et al., IEEE TC 66(7), 2017). The other sheets plan it the same way,
live, from the same cells and the same engine definition:

* **Interval curve** (:func:`curve_sheet`): the engine's tiered plan optimises the first tier's interval ``T``
  with every tier's ``every`` held (each tier saves every ``every`` x ``T``), so the curve varies ``T`` over
  multiples of that optimum and every tier's interval with it: at each point the exact tiered expectation
  (:func:`engine.tiers.tiered_wall_per_work`, one row of the recursion's cells, :func:`tier_formulas.write_tier_evaluation`),
  its waste, wall time and total cost (compute, storage of every tier and spares are each the wall time times a
  rate, so the total is the plan's cost per wall hour times the wall time). It equals ``ckptplan plan`` with
  ``interval_min`` set to that point's interval.
* **Scaling** and **Compare** (:class:`TieredColumn`): each row (a node count) or column (an alternative) plans
  the baseline's tiers and failure classes at its own inputs: the design's rows (job MTBF, writers, the restart
  re-derived at the node count, the spare pool) as for one level, then a whole tiered block
  (:func:`tier_formulas.write_tier_block`: the constants and the golden-section optimum) in hidden cells, and the
  plan's rows from it (:func:`tier_formulas.tiered_expr`); the figures of one level only (Young, Daly, the analytic
  deadline answer) say so in words.
"""

from __future__ import annotations

from typing import Callable, Mapping

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter

from . import design_formulas as D, flags, formulas as F, style as S, tier_formulas as TF
from .manifest import Built, Check

__all__ = ["CLASS_SLOTS", "CURVE_SHEET", "DESIGN_KEYS", "TIER_SLOTS", "TieredColumn", "baseline_tables",
           "block_columns", "block_rows", "curve_sheet", "hide_rows", "plan_names_x"]

CURVE_SHEET = "Interval curve"
#: the rows a tiered column computes as one level: the job's failure rate and the design (the plan is its block's)
DESIGN_KEYS = frozenset({c.key for c in D.DESIGN_CALCS} | {"job_failure_rate_per_h", "job_mtbf_h", "job_mtbf_min"})
#: the baseline's tier and failure-class slots (the Storage & recovery sheet's tables, ``tier<i>_<key>``, ``class<j>_``)
TIER_SLOTS, CLASS_SLOTS = 3, 4

def baseline_tables() -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """The defined names of the baseline's tier table and failure-class table (Storage & recovery)."""
    tiers, _ = TF.named_tables("tier", "", TIER_SLOTS, 0)
    _, classes = TF.named_tables("", "class", 0, CLASS_SLOTS)
    return tiers, classes


def plan_names_x(refs: Mapping[str, str]) -> dict[str, str]:
    """A tiered block's inputs (:func:`tier_formulas.write_tier_block`'s ``x``) from a column's references once
    its design rows are bound (``refs``: ``restart_min`` is then the restart the plan uses), with ``R'`` from the
    stated restart ``refs["stated_restart_min"]``."""
    return dict(refs, restart_other=TF.restart_other(refs["stated_restart_min"], refs))


class TieredColumn:
    """One row or column of a sheet that plans the baseline's tiers: its block is written at ``(row, col)`` the first
    time a plan row asks for it (the design's rows are bound by then); ``expr`` gives each plan row's formula."""

    def __init__(self, ws, row: int, col: int, stated_restart: str):
        self.ws, self.row, self.col, self.stated = ws, row, col, stated_restart
        self.block: dict[str, str] | None = None

    def expr(self, key: str, refs: Mapping[str, str], calc: Callable[[Mapping[str, str]], str]) -> str | None:
        """The formula of plan row ``key`` (without "="), or None for a figure of one level only."""
        if self.block is None:
            tiers, classes = baseline_tables()
            self.block = TF.write_tier_block(self.ws, self.row, self.col,
                                             plan_names_x(dict(refs, stated_restart_min=self.stated)), tiers, classes)
        return TF.tiered_expr(key, self.block, refs, calc, F.NEVER)

    def check(self, refs: Mapping[str, str], problems: str | None, keys: bool = False) -> str:
        """The column's model check (``refs``: its references, every row bound): its bad inputs first, then the
        tiered plan's check and validity warnings as the engine words them (:func:`flags.tiered_model_check`)."""
        assert self.block is not None
        return flags.tiered_model_check(refs, self.block, keys=keys, problems=problems or None)


def block_rows() -> int:
    """Rows one baseline block takes, a spare row included."""
    return TF.block_size(TIER_SLOTS, CLASS_SLOTS)[0] + 1


def block_columns() -> int:
    """Columns one baseline block takes."""
    return TF.block_size(TIER_SLOTS, CLASS_SLOTS)[1]


def hide_rows(ws, first: int, last: int) -> None:
    """Group and hide rows ``first``..``last`` (working cells: never printed)."""
    for r in range(first, last + 1):
        ws.row_dimensions[r].outlineLevel, ws.row_dimensions[r].hidden = 1, True


# ------------------------------------------------------------------------------------------ Interval curve

#: the curve's columns: key -> (header, number format)
_CURVE = {"factor": ("Multiple of the tiered optimum", "0.000"),
          "interval_min": ("First tier's interval T (min)", F.MINUTES),
          "waste_fraction": ("Waste (tiered, share of wall time)", F.PERCENT),
          "wall_h": ("Expected wall time (h)", F.HOURS),
          "total_cost": ("Total cost (money)", F.MONEY)}
#: column widths A-J; the marked points' first row (columns G-I, under the chart)
_WIDTHS, _MARKED = (16, 14, 16, 14, 18, 3, 18, 14, 14, 14), 26


def curve_sheet(wb: Workbook, refs: Mapping[str, str], built: Built, factors: tuple[float, ...], currency: str) -> None:
    """The Interval curve of a tiered baseline (module notes): one row per multiple of the tiered optimum, the
    recursion's cells of each in hidden columns to the right, the design's constants in hidden rows below.

    ``refs``: the Plan sheet's references (defined names, the design's rows bound). Checks:
    ``("tiered_curve", i)`` with keys ``interval_min``, ``waste_fraction``, ``wall_h``, ``total_cost``."""
    ws = wb.create_sheet(CURVE_SHEET)
    about = ("The tiered plan optimises the first tier's interval T, each tier's 'every' held (tier i saves every "
             "every_i x T). Here T runs over multiples of that optimum, every tier's interval with it: the exact tiered "
             "expectation, its wall time and total cost (job GPU time, every tier's storage, spares) at each T, as "
             "`ckptplan plan` with interval_min = T.")
    S.title(ws, "Waste against the checkpoint interval (checkpoint tiers)", about, 5)
    ws.row_dimensions[2].height = S.LINE_HEIGHT * S.text_lines(about, sum(_WIDTHS[:5]))
    head, first = 4, 5
    S.header(ws, head, [S.fmt_unit(h, currency) for h, _ in _CURVE.values()])
    ws.row_dimensions[head].height = S.LINE_HEIGHT * 3
    ws.print_title_rows = f"{head}:{head}"   # the table runs onto a second page: its headings repeat
    for c in range(1, len(_CURVE) + 1):
        ws.cell(row=head, column=c).alignment = Alignment(wrap_text=True, vertical="top")
    last = first + len(factors) - 1
    const_row = last + 3   # the design's constants: hidden rows under the table
    tiers, classes = baseline_tables()
    k, end = TF.write_tier_constants(ws, const_row, 1, plan_names_x(dict(refs, stated_restart_min="restart_min")),
                                     tiers, classes)
    ws.cell(row=const_row - 1, column=1, value="Tiered model's constants (the design's; working cells)")
    hide_rows(ws, const_row - 1, end)
    optimum, floor = "setup_tiered_optimum_interval_min", k["floor"]
    per_wall_h = "IF(ISNUMBER(tiered_total_cost),tiered_total_cost/tiered_wall_h,tiered_total_cost)"
    work_col = 12
    for i, factor in enumerate(factors):
        r = first + i
        ws.cell(row=r, column=1, value=factor).number_format = _CURVE["factor"][1]
        T = f"B{r}"
        ws.cell(row=r, column=2, value=f'=IF(ISNUMBER({optimum}),MAX(A{r}*{optimum},{floor}),{optimum})')
        wpw, _ = TF.write_tier_evaluation(ws, r, work_col, k, TIER_SLOTS, f"IF(ISNUMBER({T}),{T},1)")
        ok = f"AND(ISNUMBER({T}),{wpw}<1E+300)"
        formulas = {"waste_fraction": f"IF({ok},1-1/{wpw},{F.NEVER})",
                    "wall_h": f"IF({ok},{refs['useful_training_h']}*{wpw},{F.NEVER})",
                    "total_cost": f"IF(AND(ISNUMBER(D{r}),ISNUMBER({per_wall_h})),{per_wall_h}*D{r},{F.NEVER})"}
        for j, (key, expr) in enumerate(formulas.items(), start=3):
            ws.cell(row=r, column=j, value=f"={expr}")
        for j, (key, (_, fmt)) in enumerate(_CURVE.items(), start=1):
            ws.cell(row=r, column=j).number_format = fmt
            if j > 1:
                built.checks.append(Check(CURVE_SHEET, f"{get_column_letter(j)}{r}", ("tiered_curve", i), key))
    width = TF.block_size(TIER_SLOTS, CLASS_SLOTS)[1]
    for c in range(work_col, work_col + 2 * width + 1):   # the curve's cells, then the marked points'
        ws.column_dimensions[get_column_letter(c)].outlineLevel = 1
        ws.column_dimensions[get_column_letter(c)].hidden = True
    _marked_points(ws, _MARKED, k, work_col + width + 1)   # under the chart, beside the table
    _curve_chart(ws, first, last, _MARKED + 1)
    for col, w in zip("ABCDEFGHIJ", _WIDTHS):
        ws.column_dimensions[col].width = w
    ws.freeze_panes = f"A{first}"


def _marked_points(ws, row: int, k: Mapping[str, str], work_col: int) -> None:
    """The tiered optimum and the interval the plan uses, each with its waste (the recursion at it), in columns
    G-I from ``row``."""
    S.header(ws, row, ["Marked point", "T (min)", "Waste (tiered)"], col=7)
    for r, label, interval in ((row + 1, "Tiered optimum", "setup_tiered_optimum_interval_min"),
                               (row + 2, "Chosen interval", "tiered_chosen_interval_min")):
        ws.cell(row=r, column=7, value=label).font = Font(bold=True)
        ws.cell(row=r, column=8, value=f"={interval}").number_format = F.MINUTES
        wpw, _ = TF.write_tier_evaluation(ws, r, work_col, k, TIER_SLOTS, f"IF(ISNUMBER(H{r}),H{r},1)")
        ws.cell(row=r, column=9, value=f"=IF(AND(ISNUMBER(H{r}),{wpw}<1E+300),1-1/{wpw},{F.NEVER})"
                ).number_format = F.PERCENT


def _curve_chart(ws, first: int, last: int, marked: int) -> None:
    S.interval_chart(ws, ("Tiered waste against the first tier's interval", "First tier's interval T (min)",
                          "Waste (share of wall time)"),
                     (first, last), [(3, "Tiered model (share of wall time)", "1F4E78", None)],
                     (marked, 8, 9, "Tiered optimum"), "G4")
