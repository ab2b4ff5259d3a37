"""Tables completed from a base scenario: what ``ckptplan batch --template`` fills in.

A scenario table may omit columns; :func:`fill_from_template` adds each omitted column with the
base scenario's value on every row (``ckptplan batch --template``, default the seed preset) and
says which it filled (:class:`TemplateFill`). A blank cell in a column the file gives means "not given"
(the field's default, or "is required"), as everywhere, unless ``fill_blanks``: then a blank cell of a
required column takes the base's value; a base value equal to the field's default is not filled (the
default applies anyway).
Not taken from the base: ``name``, ``description`` and ``source`` (they describe the base, not the
rows), and values that belong with a column the file gives:

* the base's ``job_mtbf_h`` override when the file gives ``node_mtbf_h`` or any ``domain{i}_*``
  column (the override would hide them: the rule of ``ckptplan plan --node-mtbf-h``);
* the base's failure domains when the file gives any ``domain{i}_*`` column (the file's domains
  replace the base's, they are not added to them);
* the base's ``currency`` when the file gives ``price_per_gpu_hour`` (rows then use the file's
  ``currency`` column, else the default, USD);
* the base's ``deadline_h`` when the file gives ``useful_training_h`` (a deadline belongs with its
  run length; rows then have no deadline unless the file gives one);
* the base's ``failure_rate_source`` when the file gives ``node_mtbf_h``, ``job_mtbf_h`` or
  failure-domain columns (a published rate would contradict the file's own failure figures);
* the base's preemption rates when the file gives another one: its ``preemptions_per_h`` when the file gives
  ``preemptions_per_node_h`` or ``preemption_rate_source``, its ``preemptions_per_node_h`` and
  ``preemption_rate_source`` when the file gives ``preemptions_per_h`` (one rate per row), its band when the file
  gives ``preemptions_per_node_h`` and its node rate when the file gives a band.

A base with a storage and recovery setup (``setup=``) fills its setup fields as columns too, and
not the stall, write and restart its setup derives: each row derives them from its own nodes and
writers. Its checkpoint tiers apply to every row (:attr:`TemplateFill.tiers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from .columns import coerce_numeric_text, column_kind, int_series, integer_typed, is_integer_column, plain_value
from .errors import InputError
from .fields import FIELD_BY_NAME, FIELDS, TEXT_FIELDS
from .scenario import DOMAIN_COL, Scenario, is_absent, to_table

__all__ = ["TemplateFill", "check_base_scenario", "fill_from_template"]


def check_base_scenario(base: Scenario) -> Scenario:
    """``base`` if it is a :class:`Scenario` (what a table is completed from); else :class:`InputError` saying
    how to get one (the engine reads no file)."""
    if isinstance(base, Scenario):
        return base
    shown = str(base) if isinstance(base, (str, bytes)) or hasattr(base, "__fspath__") else type(base).__name__
    raise InputError("base", shown, "must be a Scenario: the engine reads no file, load a template or TOML file "
                     "first (ckptplan.files.load_scenario)")


@dataclass(frozen=True)
class TemplateFill:
    """What :func:`fill_from_template` took from a base scenario.

    ``template``: the base's label (``--template`` as given, else the scenario's name); ``filled``:
    ``{column: value}`` added to every row; ``not_taken``: ``{column: why}`` for the base's values
    left out because they belong with a column the file gives (see the module notes).
    """

    template: str
    filled: dict = field(default_factory=dict)
    not_taken: dict = field(default_factory=dict)
    tiers: tuple = ()                                   # the base's checkpoint tiers (every row follows them)
    failure_classes: dict = field(default_factory=dict)
    blank_cells: dict = field(default_factory=dict)     # {column: (value, rows filled)}: required cells left blank
    ranges: dict = field(default_factory=dict)          # {field: {"from": whose, "rows": n, "own": m}}: default ranges

    def to_dict(self) -> dict:
        out = {"template": self.template, "filled": dict(self.filled), "not_taken": dict(self.not_taken)}
        if self.blank_cells:
            out["blank_cells"] = {c: {"value": v, "rows": n} for c, (v, n) in self.blank_cells.items()}
        if self.ranges:
            out["ranges"] = {f: dict(r) for f, r in self.ranges.items()}
        if self.tiers:
            out["tiers"] = [f"{t['name']} (every {t['every']})" for t in self.tiers]
        return out


def fill_from_template(table: pd.DataFrame, base: Scenario, template: Optional[str] = None, setup: Any = None,
                       fill_blanks: bool = False) -> tuple[pd.DataFrame, TemplateFill]:
    """The table with every column it omits filled from ``base`` (same value on every row), and what was filled.

    See the module notes for what is never taken from the base and why. Columns the table gives
    are never touched (a blank cell stays blank). Filled columns come after the table's own, in
    the registry's order; the index and ``attrs`` (e.g. the reader's ``cell_errors``) are kept.

    ``setup``: the base's storage and recovery setup (:class:`engine.setup.RecoverySetup`, e.g.
    ``ckptplan.files.load_plan(...).setup``). Its fields are filled as columns like the scenario's,
    so each row derives its own stall, write and restart from its own nodes and writers; the stall,
    write and restart the setup derives (not stated by the base) are then not filled. Its tiers and
    failure classes come back in :attr:`TemplateFill.tiers` and ``failure_classes``, for
    :func:`.batch.evaluate_rows`.

    ``fill_blanks`` (``ckptplan batch --template``: the planner named the template): a blank cell of a
    *required* column the file gives (``useful_training_h`` left empty on one row) takes the base's value
    instead of "is required"; :attr:`TemplateFill.blank_cells` counts them. Optional fields' blanks keep
    meaning their default; values the base may not give (above) and a stall its setup derives are not filled.
    """
    sc = check_base_scenario(base)
    if not isinstance(table, pd.DataFrame):
        raise InputError("table", type(table).__name__, "must be a pandas DataFrame")
    row = {c: plain_value(v) for c, v in to_table([sc]).iloc[0].items()}
    cols = set(table.columns)
    file_domains = any(isinstance(c, str) and DOMAIN_COL.match(c) for c in cols)
    kept_out = {
        "job_mtbf_h": ("the file gives " + ("node_mtbf_h" if "node_mtbf_h" in cols else "failure-domain columns")
                       + ": the template's job MTBF override would hide the file's own failure figures")
        if "node_mtbf_h" in cols or file_domains else None,
        "currency": "the file gives price_per_gpu_hour: its prices are in the file's currency column, else USD"
        if "price_per_gpu_hour" in cols else None,
        "deadline_h": "the file gives useful_training_h: the template's deadline belongs with its run length"
        if "useful_training_h" in cols else None,
        "failure_rate_source": ("the file gives " + ("node_mtbf_h" if "node_mtbf_h" in cols else "job_mtbf_h"
                                                     if "job_mtbf_h" in cols else "failure-domain columns")
                                + ": the template's published failure rate would contradict the file's own")
        if {"node_mtbf_h", "job_mtbf_h"} & cols or file_domains else None,
        **_preemption_kept_out(cols),
    }
    derived = setup.derives() if setup is not None else frozenset()   # per row, not the base's one value
    filled: dict[str, Any] = {}
    not_taken: dict[str, str] = {}
    domain_cols = [c for c in row if DOMAIN_COL.match(c)]
    candidates = [f.name for f in FIELDS] + [t for t in TEXT_FIELDS if t not in ("name", "description", "source")]
    for c in candidates + (domain_cols if not file_domains else []):
        v = row.get(c)
        default = FIELD_BY_NAME[c].default if c in FIELD_BY_NAME else TEXT_FIELDS[c][1] if c in TEXT_FIELDS else None
        if c in cols or v is None or v == default or c in derived:  # the default applies anyway: nothing to say
            continue
        if kept_out.get(c):
            not_taken[c] = kept_out[c]
            continue
        filled[c] = v
    if file_domains and sc.domains:
        not_taken["domains"] = (f"the file gives its own failure-domain columns: the template's "
                                f"{len(sc.domains)} domain(s) are not added")
    filled.update({c: v for c, v in (setup.columns() if setup is not None else {}).items() if c not in cols})
    out = table.copy(deep=False)
    n = len(out)
    for c, v in filled.items():
        if column_kind(c) == "text":
            out[c] = pd.Series(np.full(n, v, dtype=object), index=out.index, dtype=object)
        elif is_integer_column(c) and float(v) % 1 == 0:
            out[c] = int_series(np.full(n, float(v)), out.index)
        else:
            out[c] = np.full(n, float(v))
    out.attrs = dict(table.attrs)
    blanks = _fill_blank_cells(out, row, set(kept_out) | set(derived)) if fill_blanks else {}
    tiers = tuple(setup.tiers) if setup is not None else ()
    classes = dict(setup.failure_classes) if setup is not None else {}
    return out, TemplateFill(template or sc.name, filled, not_taken, tiers, classes, blanks)


def _fill_blank_cells(out: pd.DataFrame, base: dict[str, Any], never: set) -> dict[str, tuple[Any, int]]:
    """Fill, in place, the blank cells of the required columns ``out`` gives with the base's value (not those in
    ``never``); a cell a reader refused (``attrs["cell_errors"]``) is no blank. ``{column: (value, cells)}``."""
    refused = {(label, col) for label, col in out.attrs.get("cell_errors", {})}
    done: dict[str, tuple[Any, int]] = {}
    for f in FIELDS:
        c, v = f.name, base.get(f.name)
        if not f.required or c not in out.columns or c in never or v is None:
            continue
        cells = coerce_numeric_text(out[c])
        obj = cells.to_numpy(dtype=object)
        blank = np.fromiter((is_absent(x) for x in obj), dtype=bool, count=len(obj))
        blank &= np.array([(label, c) not in refused for label in out.index], dtype=bool) if refused else True
        if not blank.any():
            continue
        filled = cells.where(~blank, float(v))
        out[c] = integer_typed(filled.astype(float)) if filled.dtype.kind != "O" and is_integer_column(c) else (
            filled if filled.dtype.kind == "O" else filled.astype(float))
        done[c] = (v, int(blank.sum()))
    return done


def _preemption_kept_out(cols: set[str]) -> dict[str, str | None]:
    """The base's preemption rates a file's own rate replaces (one rate per row:
    :data:`ckptplan.engine.spot_rates.PREEMPTION_RATE_FIELDS`), each with the reason."""
    from .spot_rates import PREEMPTION_RATE_FIELDS

    def why(name: str) -> str | None:
        found = [c for c, replaced in PREEMPTION_RATE_FIELDS.items() if c in cols and name in replaced]
        return (f"the file gives {found[0]}: the template's preemption rate would contradict the file's own"
                if found else None)

    return {name: why(name) for name in PREEMPTION_RATE_FIELDS}
