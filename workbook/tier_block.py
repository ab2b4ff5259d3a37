"""Checkpoint tiers and failure classes as workbook cells: the columns of a tier table, and the grouped rows
that hold a design's own tiers and classes (the ones it puts in place of the baseline's).

The Storage & recovery sheet shows the baseline's tiers as an input table (``tier<i>_<key>``,
``class<j>_name`` / ``class<j>_share``). A design that replaces the tiers or the failure classes
(:class:`ckptplan.engine.designs.Design`) is named in the sheet's "Checkpoint tiers" row; its own tables
are written here, under the baseline's, as grouped rows (collapsed; expand with +) of the same columns:
``setup_design<k>_replaces_tiers`` and ``setup_design<k>_replaces_classes`` ("yes" or "no": "yes" with
no rows = none), ``setup_design<k>_tier<i>_<key>`` and ``setup_design<k>_class<j>_name`` / ``_share``.
:func:`ckptplan.workbook.read.read_plan` reads both back, so an edited workbook keeps every design.
"""

from __future__ import annotations

from typing import Any, Callable

from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.datavalidation import DataValidation

from ..engine.errors import InputError
from ..engine.fields import RULES
from ..engine.setup import TIER_KEYS
from . import style as S

__all__ = ["TIER_COLUMNS", "design_tier_rows", "survives_text"]

#: the tier table's columns (:data:`ckptplan.engine.setup.TIER_KEYS` order): key -> (header, rule; None: text)
TIER_COLUMNS = dict(zip(TIER_KEYS, (
    ("Tier name", None), ("Every k-th save", "count"), ("Survives (classes, comma-separated)", None),
    ("Stall, empty = derived (min)", "nonnegative"), ("Restore, empty = derived (min)", "nonnegative"),
    ("Write per writer (GB/s)", "positive"), ("Write aggregate (GB/s)", "positive"),
    ("Read per reader (GB/s)", "positive"), ("Read aggregate (GB/s)", "positive"), ("Checkpoints kept", "count"),
    ("Replicas of each", "count"), ("Price per GB-month (money)", "nonnegative"),
    ("Restore fails, per replica (probability)", "fraction"))))


def survives_text(survives: Any) -> str:
    """A tier's ``survives`` as its cell shows it: the class names separated by commas."""
    return survives if isinstance(survives, str) else ", ".join(str(c) for c in survives)


def _text(ws, row: int, col: int, value: Any, fmt: str | None = None, font=None, fill=None):
    """A value cell; a text stays text even when it starts with "=" (user text never becomes a formula)."""
    c = ws.cell(row=row, column=col, value=value)
    if isinstance(value, str):
        c.data_type = "s"
    for attr, v in (("number_format", fmt), ("font", font), ("fill", fill)):
        if v is not None:
            setattr(c, attr, v)
    c.alignment = Alignment(vertical="top")
    return c


def _input(ws, row: int, col: int, value: Any, rule: str | None, what: str) -> str:
    """A blue input cell validated by the registry rule (``rule`` None: text; "yes/no": yes or no)."""
    fmt = "@" if rule in (None, "yes/no") else S.INPUT_WHOLE if rule == "count" else S.INPUT_NUMBER
    c = _text(ws, row, col, value, fmt, S.INPUT_FONT, S.INPUT_FILL)
    if rule is not None:
        r = RULES.get(rule)
        kw = (dict(type="list", formula1='"yes,no"', error=f"{what}: yes or no") if r is None else
              dict(**r.data_validation(c.coordinate), error=f"{what} must be {r.noun}, or empty."[:225]))
        dv = DataValidation(**kw, allow_blank=True, showErrorMessage=True, errorTitle="Invalid input")
        ws.add_data_validation(dv)
        dv.add(c.coordinate)
    return c.coordinate


def _check_classes(design: Any) -> None:
    for c in list(design.failure_classes or ()) + [s for t in design.tiers or () for s in (
            [t.get("survives")] if isinstance(t.get("survives"), str) else t.get("survives") or ())]:
        if "," in str(c):
            raise InputError(f"design {design.name!r}: failure_classes", c, "a class name in the workbook cannot "
                             "hold a comma (a tier's survives cell lists class names separated by commas)")


def design_tier_rows(ws, row: int, designs: tuple, name: Callable[[str, str], None], slots: tuple[int, int],
                     currency: str) -> int:
    """Write the own tiers and failure classes of every design (``k`` = 1-based position in ``designs``)
    that replaces them, from ``row``, as grouped hidden rows; return the next free row.

    ``name(defined_name, cell)`` names a cell of the sheet; ``slots`` = (tier rows, class rows) at least.
    """
    replacing = [(k, d) for k, d in enumerate(designs, start=1) if d.tiers is not None or d.failure_classes is not None]
    if not replacing:
        return row
    first = row
    _text(ws, row, 1, "Designs' own checkpoint tiers and failure classes (they replace the baseline's; grouped rows: "
          "expand with +)", font=Font(bold=True))
    row += 1
    for k, d in replacing:
        _check_classes(d)
        tiers, classes = tuple(d.tiers or ()), dict(d.failure_classes or {})
        _text(ws, row, 1, f"Design {k}: {d.name}", font=Font(bold=True))
        for label, key, replaced in (("Replaces the baseline's tiers (yes/no)", "tiers", d.tiers is not None),
                                     ("Replaces the baseline's failure classes (yes/no)", "classes",
                                      d.failure_classes is not None)):
            row += 1
            _text(ws, row, 1, label)
            name(f"setup_design{k}_replaces_{key}", _input(ws, row, 4, "yes" if replaced else "no", "yes/no",
                                                           f"setup_design{k}_replaces_{key}"))
        S.header(ws, row + 1, [S.fmt_unit(h, currency) for h, _ in TIER_COLUMNS.values()])
        row += 2
        for i in range(max(slots[0], len(tiers))):
            t = dict(tiers[i]) if i < len(tiers) else {}
            if "survives" in t:
                t["survives"] = survives_text(t["survives"])
            for j, (key, (_, rule)) in enumerate(TIER_COLUMNS.items()):
                what = f"setup_design{k}_tier{i + 1}_{key}"
                name(what, _input(ws, row, 1 + j, t.get(key), rule, what))
            row += 1
        S.header(ws, row, ["Failure class (name)", "Share of failures"])
        row += 1
        names = list(classes)
        for j in range(max(slots[1], len(names))):
            what = f"setup_design{k}_class{j + 1}"
            name(f"{what}_name", _input(ws, row, 1, names[j] if j < len(names) else None, None, f"{what}_name"))
            name(f"{what}_share", _input(ws, row, 2, classes[names[j]] if j < len(names) else None, "share",
                                         f"{what}_share"))
            row += 1
    for r in range(first + 1, row):
        ws.row_dimensions[r].outlineLevel, ws.row_dimensions[r].hidden = 1, True
    return row + 1
