"""What the workbook's engine-answer blocks share: the view they solve, their answer rows and their live status.

The break-even block (:mod:`workbook.break_even_block`) and the target block (:mod:`workbook.target_block`) hold
answers the engine computed when the workbook was built (a bracketed root search over full plans is no formula a
spreadsheet evaluates reliably). Each answer is a row (label, value) with the answer in words on a full-width row
below it (:func:`answer_rows`); each block ends with a status (:func:`status_row`): "up to date" while every input
the answers depend on equals the value used, else "OUT OF DATE: ..." naming the inputs changed
(:func:`stale_groups` lists them: the Inputs sheet, the storage and recovery setup, the baseline's tiers and
failure classes, each design's change cells and own tiers, the block's own choice cells).

The view solved (:func:`solved_view`): the Compare sheet plans on-demand capacity at a constant failure rate (the
Spot sheet plans preemptions, the Schedule sheet failure phases), so the blocks solve that view of the scenario,
as the sheet above them shows it, and say so (:func:`view_note`); their status watches the full scenario's inputs
(preemptions_per_h and preemptions_per_node_h included), as the Inputs sheet holds them.

A text a status compares (a tier's or a failure class's name, a block's choice) is copied into a hidden cell and
compared with ``EXACT``: no text a user controls is written inside a formula.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from openpyxl.styles import Alignment, Font

from ..engine.designs import scenario_values
from ..engine.fields import SETUP_FIELDS
from ..engine.setup import TIER_KEYS
from ..engine.spot_rates import on_demand_changes, scenario_preemptions_per_h
from . import flags
from . import formulas as F
from .storage_sheet import CLASS_SLOTS as _CLASS_SLOTS, TIER_SLOTS as _TIER_SLOTS
from .tier_block import survives_text

__all__ = ["MAX_HELPER_CHARS", "answer_rows", "solved_view", "stale_groups", "status_row", "view_note"]

#: a status helper cell's formula is cut into cells of at most this many characters (Excel's limit is 8,192)
MAX_HELPER_CHARS = 4000


def solved_view(scenario: Any) -> Any:
    """The scenario as the Compare sheet plans it: on-demand capacity (no ``preemptions_per_h``) at a constant
    failure rate (no ``failure_phases``)."""
    if not scenario_preemptions_per_h(scenario) and not scenario.failure_phases:
        return scenario
    return scenario.replace(**on_demand_changes(scenario), failure_phases=())


def view_note(scenario: Any) -> str:
    """The sentence that says which view the block solves (:func:`solved_view`)."""
    left = [what for what, given in (("spot preemptions (preemptions_per_h; the Spot sheet plans them)",
                                      bool(scenario_preemptions_per_h(scenario))),
                                     ("failure phases (the Schedule sheet plans them)", bool(scenario.failure_phases)))
            if given]
    text = "Solved on the Compare sheet's view: on-demand capacity at a constant failure rate."
    if left:
        text += (" This scenario's " + " and ".join(left) + " are left out of these answers; ckptplan compare "
                 "--break-even and ckptplan target plan them.")
    return text


def answer_rows(ws: Any, row: int, label: str, value: Any, words: str, last_col: int,
                extra: Sequence[tuple[str, Any, str]] = (), bold: bool = False) -> tuple[Any, int]:
    """One answer: ``label`` in column A and ``value`` in C, then each ``extra`` (label, value, number format) row,
    then ``"Answer: " + words`` on a full-width row (A to ``last_col``, tall enough to read). Returns the value's
    cell and the row after the answer. Labels and words start with text of ours: never a formula."""
    ws.cell(row=row, column=1, value=label).font = Font(bold=bold)
    cell = ws.cell(row=row, column=3, value=value)
    cell.number_format = "#,##0.######"
    for i, (text, figure, fmt) in enumerate(extra, start=1):
        ws.cell(row=row + i, column=1, value=text)
        ws.cell(row=row + i, column=3, value=figure).number_format = fmt
    at = row + 1 + len(extra)
    w = ws.cell(row=at, column=1, value="Answer: " + words)
    w.alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(start_row=at, start_column=1, end_row=at, end_column=last_col)
    per_line = 105 if last_col <= 6 else 17 * last_col   # characters a merged row of that width holds (Compare A:F)
    ws.row_dimensions[at].height = 15 * max(1, math.ceil(len("Answer: " + words) / per_line))
    return cell, at + 1


def _tier_group(prefix: str, tiers: Sequence[Any], slots: int) -> list[tuple[str, str, Any]]:
    out = []
    for i in range(max(slots, len(tiers))):
        t = dict(tiers[i]) if i < len(tiers) else {}
        if t.get("survives") is not None:
            t["survives"] = survives_text(t["survives"])
        out += [(f"{prefix}{i + 1}_{key}",) * 2 + (t.get(key),) for key in TIER_KEYS]
    return out


def _class_group(prefix: str, classes: dict, slots: int) -> list[tuple[str, str, Any]]:
    names, out = list(classes), []
    for j in range(max(slots, len(names))):
        out += [(f"{prefix}{j + 1}_name",) * 2 + (names[j] if j < len(names) else None,),
                (f"{prefix}{j + 1}_share",) * 2 + (classes[names[j]] if j < len(names) else None,)]
    return out


def _storage_group(k: int, design: Any) -> list[tuple[str, str, Any]]:
    """Storage & recovery design ``k``'s cells: its change cells on every scenario and setup row
    (``setup_design<k>_set_<name>`` / ``_times_<name>``) and the tiers and classes it puts in place of the baseline's."""
    group = []
    for key, name in [(key, f.name) for key, f in F.INPUTS.items()] + [(f.name, f.name) for f in SETUP_FIELDS]:
        times = None if name in design.set else design.times.get(name)
        group += [(f"setup_design{k}_set_{key}",) * 2 + (design.set.get(name),),
                  (f"setup_design{k}_times_{key}",) * 2 + (times,)]
    if design.tiers is not None or design.failure_classes is not None:   # the grouped rows exist (tier_block)
        group += [(f"setup_design{k}_replaces_{what}",) * 2 + ("yes" if replaced else "no",)
                  for what, replaced in (("tiers", design.tiers is not None),
                                         ("classes", design.failure_classes is not None))]
        group += _tier_group(f"setup_design{k}_tier", tuple(design.tiers or ()), _TIER_SLOTS)
        group += _class_group(f"setup_design{k}_class", dict(design.failure_classes or {}), _CLASS_SLOTS)
    return group


def stale_groups(scenario: Any, setup: Any, designs: tuple, choices: list[tuple[str, str, Any]],
                 derived: frozenset, storage: Sequence[tuple[int, Any]] = ()) -> list[list[tuple[str, str, Any]]]:
    """Groups of (name, live reference, value used) a status compares: the Inputs sheet (an input the design
    derives, ``derived``, is a blank cell), the recovery setup with the baseline's tiers and failure classes, each
    of ``designs``' change cells on the Compare sheet, each ``storage`` design's (``(k, design)``: design ``k`` of
    the Storage & recovery sheet, :func:`_storage_group`), and ``choices`` (the block's own cells)."""
    values = scenario_values(scenario)
    groups = [[(key, key, None if key in derived else values.get(f.name)) for key, f in F.INPUTS.items()]]
    groups.append([(f.name, f"setup_{f.name}", getattr(setup, f.name)) for f in SETUP_FIELDS])
    groups.append(_tier_group("tier", tuple(setup.tiers), _TIER_SLOTS)
                  + _class_group("class", dict(setup.failure_classes), _CLASS_SLOTS))
    for k, d in enumerate(designs, start=1):
        group = []
        for key, f in F.INPUTS.items():
            times = None if f.name in d.set else d.times.get(f.name)
            group += [(f"alt{k}_set_{key}", f"alt{k}_set_{key}", d.set.get(f.name)),   # no user text in a formula
                      (f"alt{k}_times_{key}", f"alt{k}_times_{key}", times)]
        groups.append(group)
    groups += [_storage_group(k, d) for k, d in storage]
    groups.append(choices)
    return groups


def _same(live: str, used: Any, copy: str | None) -> str:
    if used is None or used == "":
        return f'{live}=""'
    if isinstance(used, str):
        return f"EXACT({live},{copy})"
    return f"AND(ISNUMBER({live}),{live}={float(used)!r})"


def status_row(ws: Any, row: int, groups: list, last_col: int) -> int:
    """The live status in column C of ``row`` (:func:`stale_groups`): hidden helper cells in the row below (one
    or more per group, each at most :data:`MAX_HELPER_CHARS` long), the texts used in the hidden row below that.
    Returns the row after them."""
    tests, copies = [], 0
    for group in groups:
        part: list[str] = []
        for name, live, used in group:
            copy = None
            if isinstance(used, str) and used:
                copies += 1
                cell = ws.cell(row=row + 2, column=2 + copies, value=used)
                cell.data_type = "s"   # a text that starts with "=" stays text
                copy = cell.coordinate
            test = f'IF({_same(live, used, copy)},"","{name}, ")'
            if part and len("&".join(part + [test])) > MAX_HELPER_CHARS:
                tests.append("&".join(part))
                part = []
            part.append(test)
        if part:
            tests.append("&".join(part))
    helpers = [ws.cell(row=row + 1, column=3 + i, value="=" + text).coordinate for i, text in enumerate(tests)]
    h = "&".join(helpers)
    ws.row_dimensions[row + 1].hidden = ws.row_dimensions[row + 2].hidden = True
    label = ws.cell(row=row, column=1, value="Status (the inputs now against those the values used)")
    label.font, label.alignment = Font(bold=True), Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(start_row=row, start_column=1, end_row=row, end_column=2)   # wrapped over A:B, not cut at C
    c = ws.cell(row=row, column=3, value=f'=IF(({h})="","{flags.UP_TO_DATE}","OUT OF DATE: inputs changed since '
                                         f'this was computed: "&LEFT({h},LEN({h})-2)&". Regenerate: ckptplan '
                                         f'workbook --from THIS_FILE")')
    c.alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(start_row=row, start_column=3, end_row=row, end_column=last_col)
    ws.row_dimensions[row].height = 45
    flags.highlight(ws, f"C{row}", flags.UP_TO_DATE)
    return row + 3
