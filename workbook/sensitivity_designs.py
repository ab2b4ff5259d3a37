"""The Sensitivity sheet's designs: each design's swings, the engine's values under a live status.

``ckptplan sensitivity`` swings every input for the baseline and for each design
(:func:`ckptplan.engine.sensitivity.tornado`). The sheet's top table swings the baseline as live formulas (the
Plan sheet's single-level chain). A design's plan is not that chain: it changes the scenario (nodes, prices, a
stall it derives from a faster store) or the recovery setup (spares, tiers, failure classes), and a tiered
design's P(finish by the deadline) is simulated. Rather than a live formula for some designs and not others,
every design's swings are written here as the engine's values, one block per design (the Compare sheet's
alternatives, then the Storage & recovery sheet's designs not among them, the set the Compare sheet's
break-even block answers), each input on one row in the engine's rank of its total-cost swing. The status
(:func:`ckptplan.workbook.engine_block.status_row`) compares live every cell the values depend on (the Inputs
sheet, the setup, each design's change cells, its tiers and classes, every range cell: Low, High, Shape, Mode)
with the value used, and names the changed ones; ``ckptplan workbook --from THIS_FILE`` recomputes them.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from openpyxl.styles import Font

from ..engine.errors import InputError
from ..engine.uncertainty import RANGE_PARTS, uncertain_field
from . import style as S
from .engine_block import stale_groups, status_row

__all__ = ["designs_block", "designs_block_rows"]

#: (tornado output, heading, number format) of the block's columns
_OUTPUTS = (("total_cost", "total cost swing", "#,##0"), ("wall_h", "wall h swing", "#,##0.0"),
            ("goodput", "goodput swing", "0.00%"), ("p_finish_by_deadline", "P(finish by deadline) swing", "0.0%"))
_LAST_COL = 3 + len(_OUTPUTS)


def _range_cells(wb: Any, sheets: Sequence[str]) -> list[tuple[str, str, Any]]:
    """(name, name, value written) of every range cell (``<input>_low`` / ``_high`` / ``_dist`` / ``_mode``) on
    ``sheets``: a range typed into a blank one adds an input, so it is watched too."""
    out = []
    for name, defn in wb.defined_names.items():
        if name.rpartition("_")[2] not in RANGE_PARTS:
            continue
        for sheet, ref in defn.destinations:
            if sheet in sheets:
                out.append((name, name, wb[sheet][ref.replace("$", "")].value))
    return out


def _value(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _plan_rows(ws: Any, row: int, label: str, table: Any) -> int:
    """One design's rows: its label, then each input (low, high, the four swings) in the engine's rank."""
    c = ws.cell(row=row, column=1, value=label)
    c.font, c.data_type = Font(bold=True), "s"
    row += 1
    cost = table[table["output"] == "total_cost"].sort_values("rank")
    for _, r in cost.iterrows():
        ws.cell(row=row, column=1, value=r["input"])
        fmt = "#,##0" if uncertain_field(r["input"]).integer else S.INPUT_NUMBER
        ws.cell(row=row, column=2, value=_value(r["low"])).number_format = fmt
        ws.cell(row=row, column=3, value=_value(r["high"])).number_format = fmt
        for j, (out, _, fmt) in enumerate(_OUTPUTS):
            swing = table[(table["output"] == out) & (table["input"] == r["input"])]["swing"].iloc[0]
            ws.cell(row=row, column=4 + j, value=_value(swing)).number_format = fmt
        row += 1
    return row


def designs_block_rows(designs: tuple, storage: tuple, inputs: tuple) -> int:
    """The rows :func:`designs_block` takes at most (its heading, note and header, each plan's rows, the status)."""
    return 3 + (len(designs) + len(storage)) * (1 + len(inputs)) + 3


def designs_block(wb: Any, ws: Any, row: int, scenario: Any, setup: Any, designs: tuple,
                  storage: tuple, inputs: tuple, derived: frozenset) -> int:
    """Write the block from ``row`` (module notes): ``designs`` (the Compare sheet's alternatives) and ``storage``
    ((k, design): design ``k`` of the Storage & recovery sheet not among them), swung over ``inputs`` on
    ``scenario`` as its file gives it (as ``ckptplan sensitivity``; the status compares the Inputs sheet with it,
    the stall and restart the setup derives blank); ``derived``: the inputs the baseline's design derives
    (blank on the Inputs sheet). Returns the row after it."""
    from ..engine.sensitivity import tornado

    labels = [f"alternative {k}: {d.name}" for k, d in enumerate(designs, start=1)]   # never a formula
    labels += [f"Storage & recovery design {k}: {d.name}" for k, d in storage]
    every = tuple(designs) + tuple(d for _, d in storage)
    ws.cell(row=row, column=1, value="Each design's swings (values from the engine)").font = Font(bold=True, size=12)
    S.note(ws, row + 1, "The baseline's swings above are live formulas of its plan. A design's plan changes the "
                        "scenario or the recovery setup (spares, tiers, a derived stall) and is not that formula "
                        "chain, so each design's swings below are ckptplan sensitivity's values (low minus high, "
                        "ranked by |total cost swing|), not formulas: after an edit the status names what changed; "
                        "regenerate with ckptplan workbook --from THIS_FILE.", _LAST_COL)
    S.header(ws, row + 2, ["Design / input", "Low", "High"] + [h for _, h, _ in _OUTPUTS])
    ws.row_dimensions[row + 2].height = 45
    row += 3
    try:
        table = tornado(scenario, setup, every, inputs)
        size = len(_OUTPUTS) * len(inputs)
        for i, label in enumerate(labels, start=1):   # the table's plans in order: the baseline, then each design
            row = _plan_rows(ws, row, label, table.iloc[i * size:(i + 1) * size])
    except InputError as exc:
        ws.cell(row=row, column=1, value=f"not computed: {exc}"[:2000]).data_type = "s"
        row += 1
    choices = _range_cells(wb, ("Inputs", "Sensitivity"))
    S.name(wb, "sensitivity_designs_status", ws.title, f"C{row}")
    return status_row(ws, row, stale_groups(scenario, setup, designs, choices, derived, storage), _LAST_COL)
