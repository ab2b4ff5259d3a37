"""The workbook's target block: the value of one input (the lever) the baseline needs to reach a goal.

:func:`ckptplan.engine.targets.target` for the baseline plan, computed when the workbook is built and written as
values with the engine's own sentence ("not reachable by this lever alone, because ..." when no value works), on
the Compare sheet below the break-even block (the Sensitivity sheet's hidden working rows stand below its print
area, so a block there would print them). Like the break-even block
(:mod:`workbook.break_even_block`) it carries a live status naming the inputs changed since, and solves the
Compare sheet's view of the scenario, on-demand capacity at a constant failure rate
(:func:`workbook.engine_block.solved_view`; the block says so): a failure-phase scenario's lever is not solved on
its phase schedule here (seconds per candidate; ``ckptplan target`` does that), a spot scenario's not on spot
capacity.

The goal, its value and the lever are blue cells (``target_goal``, ``target_value``, ``target_lever``), read back
by ``ckptplan workbook --from`` (:func:`workbook.read.read_target`) so a regenerated workbook solves for them.
Default: goodput 0.95, by the storage's aggregate write bandwidth when the setup gives one, else by the
checkpoint stall. In Excel the CKPT_TARGET function gives the same answer live.
"""

from __future__ import annotations

import math
from typing import Any

from openpyxl.styles import Font

from ..engine.errors import InputError
from ..engine.fields import SETUP_FIELDS
from ..engine.targets import GOALS
from . import style as S
from .break_even_block import CHOICES
from .engine_block import answer_rows, solved_view, stale_groups, status_row, view_note
from .manifest import Built

__all__ = ["HEADING", "LEVERS", "default_target", "target_block"]

HEADING = "Target: the value of one input the baseline needs to reach a goal (the engine's, at build time)"
#: the inputs the block can solve for: the break-even block's scenario inputs and the setup's numeric fields
LEVERS = CHOICES + tuple(f.name for f in SETUP_FIELDS if f.name not in CHOICES)


def default_target(scenario: Any, setup: Any) -> tuple[str, float, str]:
    """(goal, value, lever) written first: goodput 0.95 by the aggregate write bandwidth of a setup that gives
    one, else by the checkpoint stall."""
    lever = "aggregate_write_gb_s" if getattr(setup, "aggregate_write_gb_s", None) is not None else \
        "checkpoint_stall_min"
    return "goodput", 0.95, lever


def _answer(scenario: Any, setup: Any, choice: tuple[str, float, str]) -> tuple[Any, Any, str]:
    """(solved value or "not reachable", the goal's figure there, sentence), or the engine's refusal in words."""
    from ..engine.targets import target

    goal, value, lever = choice
    try:
        row = target(scenario, setup, lever, goal, value)
    except InputError as exc:
        return "not computed", None, f"not computed: {exc}"
    solved = float(row[lever])
    achieved = float(row["achieved"])
    return ("not reachable" if math.isnan(solved) else solved, None if math.isnan(achieved) else achieved,
            str(row["why"]))


def target_block(wb: Any, ws: Any, row: int, scenario: Any, setup: Any, choice: tuple[str, float, str],
                 built: Built, derived: frozenset = frozenset()) -> int:
    """Write the block on ``ws`` from ``row`` (module notes): solved on the Compare sheet's view of ``scenario``
    (:func:`workbook.engine_block.solved_view`), the status watching ``scenario`` as given (``derived``: the inputs
    its design derives, blank on the Inputs sheet); returns the row after it."""
    last_col = 6
    ws.cell(row=row, column=1, value=HEADING).font = Font(bold=True, size=12)
    note = ("The engine's bracketed root search over the lever, every other input as on the Inputs sheet. "
            + view_note(scenario) + " Values, not formulas: regenerate with ckptplan workbook --from THIS_FILE after "
            "an edit (the status says when); in Excel, CKPT_TARGET gives it live. Goals: " + ", ".join(GOALS) + ".")
    S.note(ws, row + 1, note, last_col)
    row += 2
    sheet = ws.title
    for label, name, value in (("Goal (goodput, p_finish or cost_per_useful_gpu_hour)", "target_goal", choice[0]),
                               ("Goal's value", "target_value", choice[1]),
                               ("Lever: the input solved for (a field name)", "target_lever", choice[2])):
        ws.cell(row=row, column=1, value=label)
        cell = ws.cell(row=row, column=3, value=value)
        cell.font, cell.fill = S.INPUT_FONT, S.INPUT_FILL
        S.name(wb, name, sheet, cell.coordinate)
        built.input_cells[name] = f"{sheet}!$C${row}"
        row += 1
    solved, achieved, words = _answer(solved_view(scenario), setup, choice)
    cell, row = answer_rows(ws, row, "Lever's value that reaches the goal", solved, words, last_col, extra=(
        ("The goal's figure there (at the best value searched, when not reachable)", achieved, "0.000000"),))
    S.name(wb, "target_solved", sheet, cell.coordinate)
    choices = [(name, name, value) for name, value in zip(("target_goal", "target_value", "target_lever"), choice)]
    S.name(wb, "target_status", sheet, f"C{row}")
    return status_row(ws, row, stale_groups(scenario, setup, (), choices, derived), last_col)
