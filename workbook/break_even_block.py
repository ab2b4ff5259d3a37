"""The Compare sheet's break-even block: per alternative, the engine's break-even value of one chosen input.

:func:`ckptplan.engine.sensitivity.break_even` of the Compare sheet's alternatives against the baseline, computed
when the workbook is built and written as values with the engine's own sentence ("... pays off while
node_mtbf_h < 4,100"; "... never pays off in ..., because ..."). A bracketed root search over full plans is no
formula a spreadsheet evaluates reliably (chained bisection steps gave wrong plans in LibreOffice), so, like the
Storage & recovery sheet's engine values, the block carries a live status: "up to date" while every input the
values depend on (the Inputs sheet's scenario inputs, the recovery setup, each alternative's change cells and
the block's own choice cells) equals the value used, else "OUT OF DATE: ..." naming the inputs changed.

The chosen input and its range are blue cells (``break_even_input``, ``break_even_low``, ``break_even_high``),
read back by ``ckptplan workbook --from`` (:func:`workbook.read.read_break_even`) so a regenerated workbook
solves for them. Default: node MTBF over its ``[uncertainty]`` range, else its value / 4 to x 4. In Excel the
CKPT_BREAK_EVEN function gives the same answer live.
"""

from __future__ import annotations

import math
from typing import Any

from openpyxl.styles import Alignment, Font

from ..engine.designs import scenario_values
from ..engine.errors import InputError
from ..engine.fields import SETUP_FIELDS
from . import flags
from . import formulas as F
from . import style as S
from .manifest import Built

__all__ = ["CHOICES", "HEADING", "break_even_block", "default_choice", "stale_groups", "status_row"]

#: the inputs the block can solve for: the Inputs sheet's scenario fields with a single value (registry names;
#: not the failure domains' per-domain inputs)
CHOICES = tuple(f.name for f in F.INPUTS.values() if not f.name.startswith("domain"))
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


def stale_groups(scenario: Any, setup: Any, designs: tuple, choices: list[tuple[str, str, Any]],
                 derived: frozenset) -> list[list[tuple[str, str, Any]]]:
    """Groups of (name, live reference, value used) a status compares, one helper cell per group: the Inputs sheet
    (an input the design derives, ``derived``, is a blank cell), the recovery setup, each of ``designs``' change
    cells on the Compare sheet, and ``choices`` (the block's own cells; a text one compared as text)."""
    values = scenario_values(scenario)
    groups = [[(key, key, None if key in derived else values.get(f.name)) for key, f in F.INPUTS.items()]]
    groups.append([(f.name, f"setup_{f.name}", getattr(setup, f.name)) for f in SETUP_FIELDS
                   if isinstance(getattr(setup, f.name), (int, float, type(None)))])
    for k, d in enumerate(designs, start=1):
        group = []
        for key, f in F.INPUTS.items():
            times = None if f.name in d.set else d.times.get(f.name)
            group += [(f"alt{k}_set_{key}", f"alt{k}_set_{key}", d.set.get(f.name)),   # no user text in a formula
                      (f"alt{k}_times_{key}", f"alt{k}_times_{key}", times)]
        groups.append(group)
    groups.append(choices)
    return groups


def _same(live: str, used: Any) -> str:
    if used is None:
        return f'{live}=""'
    if isinstance(used, str):
        return f'{live}="{used}"'
    return f"AND(ISNUMBER({live}),{live}={float(used)!r})"


def status_row(ws, row: int, groups: list, last_col: int) -> None:
    """The live status in column C of ``row`` (:func:`stale_groups`); its helper cells, one per group, hidden in
    the row below."""
    helpers = []
    for i, group in enumerate(groups):
        text = "&".join(f'IF({_same(live, used)},"","{name}, ")' for name, live, used in group)
        cell = ws.cell(row=row + 1, column=3 + i, value="=" + text)
        helpers.append(cell.coordinate)
    h = "&".join(helpers)
    ws.row_dimensions[row + 1].hidden = True
    label = ws.cell(row=row, column=1, value="Status (the inputs now against those the values used)")
    label.font, label.alignment = Font(bold=True), Alignment(vertical="top")
    c = ws.cell(row=row, column=3, value=f'=IF(({h})="","{flags.UP_TO_DATE}","OUT OF DATE: inputs changed since '
                                         f'this was computed: "&LEFT({h},LEN({h})-2)&". Regenerate: ckptplan '
                                         f'workbook --from THIS_FILE")')
    c.alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(start_row=row, start_column=3, end_row=row, end_column=last_col)
    ws.row_dimensions[row].height = 45
    flags.highlight(ws, f"C{row}", flags.UP_TO_DATE)


def break_even_block(wb: Any, ws: Any, row: int, scenario: Any, setup: Any, designs: tuple,
                     choice: tuple[str, float, float], inputs: tuple, built: Built,
                     derived: frozenset = frozenset()) -> int:
    """Write the block from ``row`` (module notes; ``scenario`` as given, ``derived``: the inputs its design derives,
    blank on the Inputs sheet); returns the row after it."""
    last_col = max(3 + 3 * len(designs), 6)
    ws.cell(row=row, column=1, value=HEADING).font = Font(bold=True, size=12)
    row += 1
    S.note(ws, row, "Each alternative's value of the chosen input at which its money saved per run against the "
                    "baseline is zero, searched over the range below (the engine's bracketed root search). Values, "
                    "not formulas: regenerate with ckptplan workbook --from THIS_FILE after an edit (the status "
                    "says when); in Excel, CKPT_BREAK_EVEN gives it live.")
    ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=last_col)
    ws.cell(row=row, column=1).alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[row].height = 45
    row += 1
    for label, name, value in (("Input solved for (a scenario field name)",
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
    S.header(ws, row, ["Alternative (its answer in words below it)", "", "Break-even"])
    row += 1
    for k, ((value, words), d) in enumerate(zip(_answers(scenario, setup, designs, choice, inputs), designs), start=1):
        ws.cell(row=row, column=1, value=f"alternative {k}: {d.name}").font = Font(bold=True)   # never a formula
        c = ws.cell(row=row, column=3, value="none in range" if value is None else value)
        c.number_format = "#,##0.######"
        w = ws.cell(row=row + 1, column=1, value="Answer: " + words)
        w.alignment = Alignment(wrap_text=True, vertical="top")
        ws.merge_cells(start_row=row + 1, start_column=1, end_row=row + 1, end_column=last_col)
        ws.row_dimensions[row + 1].height = 15 * max(1, math.ceil(len(words) / 100))
        row += 2
    choices = [(name, name, value) for name, value in zip(("break_even_input", "break_even_low", "break_even_high"),
                                                           choice)]
    status_row(ws, row, stale_groups(scenario, setup, designs, choices, derived), last_col)
    S.name(wb, "break_even_status", _SHEET, f"C{row}")
    return row + 2
