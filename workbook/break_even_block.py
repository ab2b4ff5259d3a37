"""The Compare sheet's break-even block: per alternative, the engine's break-even value of one chosen input.

:func:`ckptplan.engine.sensitivity.break_even` of the Compare sheet's alternatives against the baseline, computed
when the workbook is built and written as values with the engine's own sentence ("... pays off while
node_mtbf_h < 4,100"; "... never pays off in ..., because ..."). A bracketed root search over full plans is no
formula a spreadsheet evaluates reliably (chained bisection steps gave wrong plans in LibreOffice), so, like the
Storage & recovery sheet's engine values, the block carries a live status: "up to date" while every input the
values depend on (the Inputs sheet's scenario inputs, the recovery setup with the baseline's tiers and failure
classes, each alternative's change cells, each Storage & recovery design's change cells and own tiers, and the
block's own choice cells) equals the value used, else "OUT OF DATE: ..." naming the inputs changed
(:mod:`workbook.engine_block`).

The designs: the Compare sheet's alternatives, then the Storage & recovery sheet's designs not among them (faster
storage, checkpoint tiers, spare counts: what ``ckptplan compare --break-even`` answers for the same file, in its
words). Solved on the Compare sheet's view of the scenario, on-demand capacity at a constant failure rate
(:func:`workbook.engine_block.solved_view`; the block says so): a spot or failure-phase scenario's preemptions and
phases are the Spot and Schedule sheets', not these answers'.

The chosen input and its range are blue cells (``break_even_input``, ``break_even_low``, ``break_even_high``),
read back by ``ckptplan workbook --from`` (:func:`workbook.read.read_break_even`) so a regenerated workbook
solves for them. Default: node MTBF over its ``[uncertainty]`` range, else its value / 4 to x 4. In Excel the
CKPT_BREAK_EVEN function gives the same answer live.
"""

from __future__ import annotations

import math
from typing import Any

from openpyxl.styles import Alignment, Font

from ..engine.errors import InputError
from ..engine.fields import SETUP_FIELDS
from . import formulas as F
from . import style as S
from .engine_block import answer_rows, solved_view, stale_groups, status_row, view_note
from .manifest import Built

__all__ = ["CHOICES", "HEADING", "break_even_block", "default_choice"]

#: the inputs the block can solve for (registry names): the Inputs sheet's scenario fields with a single value (not
#: the failure domains' per-domain inputs), then the storage and recovery setup's (a spare count, a bandwidth: what a
#: Storage & recovery design changes)
CHOICES = tuple(f.name for f in F.INPUTS.values() if not f.name.startswith("domain")) + tuple(
    f.name for f in SETUP_FIELDS)
HEADING = "Break-even against the baseline (the engine's, computed when this workbook was built)"
_SHEET = "Compare"


def default_choice(scenario: Any, setup: Any, inputs: tuple = (), field: str = "node_mtbf_h") -> tuple[str, float, float]:
    """(field, low, high) written first: the field's ``[uncertainty]`` entry, else its value / 4 to x 4 (to six
    significant figures)."""
    from ..engine.uncertainty import base_values

    for u in inputs:
        if u.field == field:
            return field, float(u.low), float(u.high)
    base = base_values(scenario, setup, [field]).get(field)
    if base is None or not math.isfinite(float(base)) or float(base) <= 0:
        raise InputError(f"break_even: {field}", base, "needs a positive value (or an [uncertainty] range) to search "
                                                        "around")
    # six significant figures: a cell stores the number as written, and the status compares it with the one used
    return field, float(f"{float(base) / 4:.6g}"), float(f"{float(base) * 4:.6g}")


def _answers(scenario: Any, setup: Any, designs: tuple, choice: tuple[str, float, float], inputs: tuple) -> list:
    """Per design (break-even value or None, sentence): the engine's answer, or its refusal in words."""
    from ..engine.sensitivity import break_even

    try:
        table = break_even(scenario, setup, designs, *choice, inputs=inputs)
    except InputError as exc:
        return [(None, f"not computed: {exc}")] * len(designs)
    return [(None if math.isnan(r["break_even"]) else float(r["break_even"]), str(r["why"]))
            for _, r in table.iterrows()]


def break_even_block(wb: Any, ws: Any, row: int, scenario: Any, setup: Any, designs: tuple,
                     choice: tuple[str, float, float], inputs: tuple, built: Built,
                     derived: frozenset = frozenset(), storage: tuple = ()) -> int:
    """Write the block from ``row`` (module notes): the answers of ``designs`` (the Compare sheet's alternatives)
    and of ``storage`` ((k, design) pairs: design ``k`` of the Storage & recovery sheet not among them), solved on
    the Compare sheet's view of ``scenario`` (:func:`workbook.engine_block.solved_view`), the status watching
    ``scenario`` as given (``derived``: the inputs its design derives, blank on the Inputs sheet). Returns the row
    after it."""
    last_col = max(3 + 3 * len(designs), 6)
    ws.cell(row=row, column=1, value=HEADING).font = Font(bold=True, size=12)
    row += 1
    S.note(ws, row, "Each design's value of the chosen input at which its money saved per run against the "
                    "baseline is zero, searched over the range below (the engine's bracketed root search): the "
                    "Compare sheet's alternatives, then the Storage & recovery sheet's designs (storage, tiers, "
                    "spares). " + view_note(scenario) + " Values, not formulas: regenerate with ckptplan workbook "
                    "--from THIS_FILE after an edit (the status says when); in Excel, CKPT_BREAK_EVEN gives it live.")
    ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=last_col)
    ws.cell(row=row, column=1).alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[row].height = 15 * max(3, math.ceil(len(ws.cell(row=row, column=1).value) / 100))
    row += 1
    for label, name, value in (("Input solved for (a scenario or setup field name)",
                                "break_even_input", choice[0]),
                               ("Range searched: low", "break_even_low", choice[1]),
                               ("Range searched: high", "break_even_high", choice[2])):
        ws.cell(row=row, column=1, value=label)
        cell = ws.cell(row=row, column=3, value=value)
        cell.font, cell.fill = S.INPUT_FONT, S.INPUT_FILL
        if name != "break_even_input":
            cell.number_format = S.INPUT_NUMBER
        S.name(wb, name, _SHEET, cell.coordinate)
        built.input_cells[name] = f"{_SHEET}!$C${row}"
        row += 1
    S.header(ws, row, ["Design (its answer in words below it)", "", "Break-even"])
    row += 1
    labels = [f"alternative {k}: {d.name}" for k, d in enumerate(designs, start=1)]   # never a formula
    labels += [f"Storage & recovery design {k}: {d.name}" for k, d in storage]
    answers = _answers(solved_view(scenario), setup, tuple(designs) + tuple(d for _, d in storage), choice, inputs)
    for label, (value, words) in zip(labels, answers):
        _, row = answer_rows(ws, row, label, "none in range" if value is None else value, words, last_col, bold=True)
    choices = [(name, name, value) for name, value in zip(("break_even_input", "break_even_low", "break_even_high"),
                                                           choice)]
    S.name(wb, "break_even_status", _SHEET, f"C{row}")
    return status_row(ws, row, stale_groups(scenario, setup, designs, choices, derived, storage), last_col)
