"""What a planner sees on paper: row heights, column widths and chart axes sized to the figures the
engine gives for the sheet's inputs (LibreOffice and Excel draw rows at the height openpyxl writes,
and a figure wider than its column prints as ``###``).

The sheet builders (:mod:`.build`) call these after writing their cells; nothing here writes a value.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter

from .. import engine
from ..engine.scenario import derived_scenario
from ..engine.validity import warnings_text
from . import formulas as F
from . import style as S
from .flags import OK

__all__ = ["SHORT_MONEY", "cost_axis", "fit_label", "fit_model_check", "fit_scaling"]

#: axis labels a planner reads at a glance: 250,000 / 35 M / 6,000 M, and 1E+15 once a run costs more than
#: a trillion (Excel takes two conditions per format)
SHORT_MONEY = '[>=1000000000000]0E+0;[>=1000000]#,##0,," M";#,##0'


def fit_label(ws, row: int, width: float, bold: bool = False, column: int = 1) -> None:
    """Wrap the label in ``column`` of ``row`` and make the row as tall as its lines; the row's other
    cells align to its top."""
    label = ws.cell(row=row, column=column)
    label.alignment = Alignment(wrap_text=True, vertical="top")
    lines = S.text_lines(label.value or "", width, bold=bold)
    if lines > 1:
        ws.row_dimensions[row].height = S.LINE_HEIGHT * lines
    for c in range(column + 1, column + 4):
        ws.cell(row=row, column=c).alignment = Alignment(vertical="top")


def fit_model_check(ws, row: int, results: Any, width: float) -> None:
    """Row ``row`` as tall as the model check the engine gives for ``results`` (one evaluated row) in a
    column ``width`` wide; the labels beside it align to the top."""
    text = warnings_text(results)[0] or OK
    ws.row_dimensions[row].height = S.LINE_HEIGHT * S.text_lines(text, width, bold=True)
    for c in range(1, 4):
        ws.cell(row=row, column=c).alignment = Alignment(vertical="top")


def _scaling_rows(sc: engine.Scenario, st: Any, nodes_list: list[int]) -> pd.DataFrame | None:
    """The engine's plan of each Scaling row (the design re-derived at its node count), in one table pass
    (:func:`engine.batch.evaluate_rows`: each row equals ``plan_setup`` of it); None where a row is refused."""
    import numpy as np

    from ..engine.batch import evaluate_rows
    from ..engine.setup import RecoverySetup

    st = st if st is not None else RecoverySetup()
    tiers, classes = st.tiers, st.failure_classes   # a tiered baseline's rows: its tiered plan (their model checks)
    st = st.replace(tiers=(), failure_classes={})
    base = derived_scenario(sc, interval_min=None)
    one = engine.to_table([base])   # one validated row, then the rows at each node count
    table = one.loc[one.index.repeat(len(nodes_list))].reset_index(drop=True)
    nodes = np.asarray(nodes_list, dtype=float)
    table["nodes"] = np.asarray(nodes_list, dtype=np.int64)
    table["useful_training_h"] = sc.useful_training_h * sc.nodes / nodes   # the same training (Scenario.with_nodes)
    for key in st.derives():   # derived per row from the row's own nodes, as the sheet does
        table[key] = np.nan
    for key, value in st.columns().items():
        table[key] = value
    rows = evaluate_rows(table, tiers=tiers or None, failure_classes=classes if tiers else None,
                         scenarios=base)   # validated: only the node counts and what the setup derives are checked
    return None if (rows["status"] != "ok").any() else rows


def fit_scaling(ws, sc: engine.Scenario, st: Any, nodes_list: list[int], first: int, cols: dict[str, int]) -> None:
    """Widths sized to the largest figure of each money, GPU-hour and hour column (scientific above a trillion,
    so an edited input never shows ``###``), and each row tall enough for its model check as computed now
    (``st``: the design, re-derived per row as the sheet does)."""
    rows = _scaling_rows(sc, st, nodes_list)
    for key in ("wall_h", "total_gpu_hours", "total_cost"):
        if key not in cols:
            continue
        fmt = F.CALC_BY_KEY[key].fmt if key in F.CALC_BY_KEY else F.MONEY
        letter = get_column_letter(cols[key])
        for r in range(first, first + len(nodes_list)):
            ws[f"{letter}{r}"].number_format = S.large_number(fmt)
        decimals = ".2f" if fmt == F.HOURS else ".0f"
        values = [float(v) for v in rows[key] if math.isfinite(v)] if rows is not None else [999_999_999_999.99]
        longest = max((len(f"{v:,{decimals}}") if v < 1e12 else 8 for v in values), default=0)
        ws.column_dimensions[letter].width = max(ws.column_dimensions[letter].width or 14, longest + 3)
    if rows is None:
        return
    width = ws.column_dimensions[get_column_letter(cols["model_check"])].width
    for i, text in enumerate(_check_keys(rows, bool(st is not None and st.tiers))):
        lines = S.text_lines(text.replace("; ", "; \n"), width, bold=True) if text else 1
        if lines > 1:
            ws.row_dimensions[first + i].height = S.LINE_HEIGHT * lines
            for c in range(1, cols["model_check"]):
                ws.cell(row=first + i, column=c).alignment = Alignment(vertical="top")


def _check_keys(rows: pd.DataFrame, tiered: bool) -> list[str]:
    """Each row's model check as the Scaling sheet shows it (the checks' keys, "; "-joined): a tiered row's from the
    warnings its tiered plan gives (the batch's ``warnings`` column, engine.validity's reasons)."""
    if not tiered:
        return warnings_text(rows, keys=True)
    from ..engine.validity import CHECKS

    return ["; ".join(c.key for c in CHECKS if c.reason in str(said).split("; ")) for said in rows["warnings"]]


def cost_axis(chart, currency: str) -> None:
    """The cost-per-run chart on a log axis: the cost grows by orders of magnitude once failures outpace
    the saves (a 405B job at 64x the nodes costs a thousand times more), and on a linear axis every
    affordable row lies flat on zero. A log axis keeps each row readable and a doubling the same step anywhere."""
    chart.y_axis.scaling.logBase = 10
    chart.y_axis.number_format = SHORT_MONEY
    chart.y_axis.title = f"Cost per run ({currency}, log scale)"
