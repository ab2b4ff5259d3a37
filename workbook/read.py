"""Read a planning workbook a user edited back into a plan, treating the file as untrusted.

openpyxl parses the XML through defusedxml when it is installed (a dependency of ckptplan), which
refuses entity-expansion and external-entity attacks. No formula is evaluated: an input cell that
holds a formula is reported as invalid, not computed. Inputs are found through their defined names
(the generator names every input), so moved rows still work. Every invalid input is reported at
once, by sheet, cell and rule.

:func:`read_plan` reads everything the workbook holds, as a :class:`ckptplan.files.plans.PlanFile`:

* the scenario (Inputs: every field, the elastic continuation block's included; the name, currency,
  description, source, published failure rate and the domains' names under them);
* the input ranges (the ``[uncertainty]`` table): a scenario input's Low / High / Shape / Mode cells beside
  its value on the Inputs sheet (``<name>_low``, ``<name>_high``, ``<name>_dist``, ``<name>_mode``), a setup
  input's on the Sensitivity sheet (``<field>_low`` ...), checked as a scenario file's;
* the storage and recovery setup (Storage & recovery: ``setup_<field>``), the baseline's tiers
  (``tier<i>_<key>``; ``survives`` lists class names separated by commas) and failure classes
  (``class<j>_name``, ``class<j>_share``);
* the designs: those of the Storage & recovery sheet (``setup_design<k>_name``, their "set to" / "x
  baseline" cells on each setup row and on each scenario row, the row named by the sheet's name
  column: ``setup_<field>`` or ``Inputs: <name>``; their own tiers and classes,
  :mod:`ckptplan.workbook.tier_block`), then the Compare sheet's alternatives (``alt<k>_name``,
  ``alt<k>_set_<name>``, ``alt<k>_times_<name>``) not among them. A design on both sheets (one name)
  must make the same scenario changes on both. The Compare sheet's three default alternatives, unedited,
  are the workbook's defaults, not designs of the plan.

Which stall, background write and restart the planner *states* (they win over the ones the setup
derives): an Inputs cell that holds a value states it and a blank one leaves it to the setup (as the
workbook writes them); a workbook written before that says it in ``setup_stated_<name>`` cells ("yes" or
"no", its Inputs cells holding the values used), which are read where they exist. A value the setup
cannot derive is the planner's (stated unless it is the field's default).
"""

from __future__ import annotations

import re

import math
import numbers
from pathlib import Path
from typing import Any

from defusedxml.common import DefusedXmlException
from openpyxl import load_workbook
from openpyxl.utils import column_index_from_string, get_column_letter as col_letter

from .. import engine
from ..engine import InputError
from ..engine.designs import Design, default_designs
from ..engine.fleets import fleet_rate
from ..engine.spot_rates import spot_rate
from ..engine.fields import DOMAIN_SLOTS, FIELD_BY_NAME, PHASE_FIELDS, PHASE_REQUIRED, RULES, SETUP_FIELDS, Rule
from ..engine.phases import phases_from_list
from ..engine.reliability import FailureDomain
from ..engine.setup import DERIVED, RecoverySetup, plan_setup
from ..files.plans import PLACEHOLDER_STALL_MIN, PlanFile
from ..files.untrusted import check_xlsx_package

from . import formulas as F
from .notes import READINESS
from .storage_sheet import SHEET as STORAGE
from .tier_block import TIER_COLUMNS

__all__ = ["MAX_UNCOMPRESSED_BYTES", "WorkbookInputError", "read_break_even", "read_inputs", "read_plan",
           "read_readiness", "read_target"]


class WorkbookInputError(InputError):
    """Invalid inputs in a workbook: ``problems`` lists (sheet, cell, name, value, rule)."""

    def __init__(self, path: Path, problems: list[tuple[str, str, str, Any, str]]):
        self.problems = problems
        lines = [f"{sheet}!{cell} ({name}) = {value!r}: {rule}" for sheet, cell, name, value, rule in problems]
        ValueError.__init__(self, f"{path}: {len(problems)} invalid input(s):\n  " + "\n  ".join(lines))
        self.field, self.value, self.rule, self.position = "workbook", str(path), "invalid inputs", None


def _cell(wb, name: str) -> tuple[str, str, Any] | None:
    """(sheet, cell, value) of a one-cell defined name, or None; a formula's value is :class:`_Formula`."""
    if name not in wb.defined_names:
        return None
    dests = list(wb.defined_names[name].destinations)
    if len(dests) != 1 or dests[0][0] not in wb.sheetnames:
        return None
    sheet, ref = dests[0]
    ref = ref.replace("$", "")
    if not re.fullmatch(r"[A-Z]{1,3}[1-9][0-9]{0,6}", ref):  # one cell: openpyxl would build every cell of a range
        return None
    return sheet, ref, _value(wb[sheet][ref])


class _Formula(str):
    """A cell's formula (its text), told apart from a text that starts with "=" (stored as text)."""


def _value(cell: Any) -> Any:
    return _Formula(cell.value) if cell.data_type == "f" else cell.value


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not isinstance(value, _Formula) and value.strip() == "")


def _number_problem(value: Any, rule: Rule, blank: str = "") -> str | None:
    """Why a (non-empty) input cell breaks its registry rule, or None: a formula, text, or a number the
    rule's predicate refuses (``blank``: the words that say an empty cell is allowed too)."""
    if isinstance(value, _Formula) or (isinstance(value, str) and value.startswith("=")):
        return "holds a formula; type a number (formulas in an edited workbook are not evaluated)"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"must be {rule.noun}{blank}, not text"
    if not math.isfinite(value) or not bool(rule.predicate(float(value))):
        return f"must be {rule.noun}{blank}"
    return None


def _number(wb, name: str, rule: Rule, problems: list, label: str | None = None, blank: str = " or blank",
            integer: bool = False) -> Any:
    """The number in the named cell (None: blank or not in the workbook); a bad cell goes to ``problems``."""
    found = _cell(wb, name)
    if found is None or _blank(found[2]):
        return None
    sheet, ref, value = found
    problem = _number_problem(value, rule, blank)
    if problem:
        problems.append((sheet, ref, label or name, value, problem))
        return None
    return int(value) if integer and float(value).is_integer() else float(value)


def _text(found: tuple[str, str, Any] | None, problems: list, name: str) -> str | None:
    """The text of a named cell (None: blank or missing); a formula goes to ``problems``."""
    if found is None or _blank(found[2]):
        return None
    if isinstance(found[2], _Formula):
        problems.append((found[0], found[1], name, str(found[2]), "holds a formula; type the text"))
        return None
    value = found[2]
    return (str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)).strip()


def _read_block(wb, prefix: str, problems: list, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """The values of one block of inputs (``prefix`` "" = Inputs, "alt_" = Compare), keyed by defined
    name; every cell breaking its registry rule is added to ``problems`` (``optional``: required fields a
    blank cell may leave to the setup)."""
    values: dict[str, Any] = {}
    for key, field in F.INPUTS.items():
        found = _cell(wb, prefix + key)
        if found is None:
            problems.append(("?", "?", prefix + key, None, "defined name missing: is this a ckptplan planning workbook?"))
            continue
        sheet, ref, value = found
        rule = field.check
        if _blank(value):
            if field.required and key not in optional:
                problems.append((sheet, ref, key, None, f"is required ({rule.noun})"))
            values[key] = None
            continue
        problem = _number_problem(value, rule)
        if problem:
            problems.append((sheet, ref, key, value, problem))
            continue
        values[key] = float(value)
    return values


def _read_elastic(wb, problems: list) -> dict[str, Any]:
    """The Inputs sheet's elastic continuation cells (:data:`workbook.formulas.ELASTIC_INPUTS` and ``on_node_loss``),
    as scenario fields: a blank cell is the field's default (left out when it has none); none in a workbook written
    before the block. A cell breaking its rule goes to ``problems``."""
    from ..engine.fields import ON_NODE_LOSS

    out: dict[str, Any] = {}
    for key, field in F.ELASTIC_INPUTS.items():
        value = _number(wb, key, field.check, problems, integer=field.integer)
        if value is not None or field.default is not None:
            out[field.name] = value if value is not None else field.default
    found = _cell(wb, "on_node_loss")
    mode = _text(found, problems, "on_node_loss")
    if mode is not None and mode.lower() not in ON_NODE_LOSS:
        problems.append((found[0], found[1], "on_node_loss", mode, "must be " + " or ".join(ON_NODE_LOSS)))
    elif found is not None:
        out["on_node_loss"] = (mode or "restart").lower()
    return out


def _scenario(values: dict[str, Any], texts: dict[str, Any], origin: str) -> engine.Scenario:
    fields: dict[str, Any] = {"description": f"read from {origin}", "source": f"planning workbook {origin}"}
    fields.update({k: v for k, v in texts.items() if v is not None and not k.startswith("domain")})
    for key, value in values.items():
        field = F.INPUTS[key]
        if key.startswith("domain") or value is None:
            continue
        fields[field.name] = int(value) if field.integer else value
    domains = []
    for i in range(1, DOMAIN_SLOTS + 1):
        mtbf, per = values.get(f"domain{i}_mtbf_h"), values.get(f"domain{i}_nodes_per_domain")
        if (mtbf is None) != (per is None):
            raise InputError(f"domain{i}", origin, f"give both domain{i}_mtbf_h and domain{i}_nodes_per_domain, or neither")
        if mtbf is not None:
            domains.append(FailureDomain(texts.get(f"domain{i}_name") or f"domain {i}", mtbf, int(per)))
    fields["domains"] = tuple(domains)
    return engine.Scenario(**fields)


MAX_UNCOMPRESSED_BYTES = 512 * 1024 * 1024  # a planning workbook is a few MB; more is a zip bomb


def _check_package(path: Path) -> None:
    """:func:`ckptplan.files.check_xlsx_package` for ``--from`` (a planning workbook is a few MB)."""
    check_xlsx_package(path, "--from", MAX_UNCOMPRESSED_BYTES)


def _defused(exc: BaseException) -> BaseException | None:
    """The defusedxml refusal somewhere in the exception chain, if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DefusedXmlException):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _open(path: Path) -> Any:
    """The workbook (formulas as text), or an :class:`InputError` for a file that is not a readable one."""
    if not path.exists():
        raise InputError("--from", str(path), "file not found")
    _check_package(path)
    try:
        return load_workbook(path, data_only=False, read_only=False, keep_links=False)
    except Exception as exc:  # noqa: BLE001 - any failure to parse a user's file becomes one clear error
        hostile = _defused(exc)
        if hostile is not None:
            raise InputError("--from", str(path), f"was refused as unsafe XML ({type(hostile).__name__}: "
                             "entity or DTD declarations are not allowed in a workbook)") from None
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError("--from", str(path), f"is not a readable .xlsx workbook ({type(exc).__name__}: {first_line})") from None


def _yes_no(found: tuple[str, str, Any], problems: list, name: str) -> bool | None:
    """A yes/no cell: True for "yes", False for "no" (any case), None (and a problem) for anything else."""
    text = _text(found, problems, name)
    if text is not None and text.lower() in ("yes", "no"):
        return text.lower() == "yes"
    if not isinstance(found[2], _Formula):
        problems.append((found[0], found[1], name, found[2], "must be yes or no"))
    return None


def _changes(cells: list[tuple[Any, str, Any, Any]], problems: list) -> tuple[dict, dict]:
    """(set, times) of one design from (field, label, "set to" cell, "x baseline" cell) per input, a cell being
    (sheet, ref, value) or None: "set to" against the field's rule, "x baseline" a factor > 0, blank = no change."""
    out: tuple[dict, dict] = ({}, {})
    for field, label, *both in cells:
        for kind, found in enumerate(both):
            if found is None or _blank(found[2]):
                continue
            sheet, ref, value = found
            problem = _number_problem(value, field.check if kind == 0 else RULES["positive"], " or blank")
            if problem:
                problems.append((sheet, ref, label.format(kind=("set", "times")[kind]), value, problem))
            else:
                out[kind][field.name] = float(value)
    return out


def _compare_designs(wb, problems: list) -> list[tuple[Design, tuple[str, str]]]:
    """The Compare sheet's alternatives, each with (sheet, cell) of its name."""
    designs, k = [], 1
    while (found := _cell(wb, f"alt{k}_name")) is not None:
        name = _text(found, [], f"alt{k}_name") or f"alternative {k}"
        cells = [(field, f"alt{k}_{{kind}}_{key}", _cell(wb, f"alt{k}_set_{key}"), _cell(wb, f"alt{k}_times_{key}"))
                 for key, field in F.INPUTS.items()]
        set_, times = _changes(cells, problems)
        designs.append((Design(name, set=set_, times=times), found[:2]))
        k += 1
    return designs


def _row(ref: str) -> int:
    return int(ref.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))


def _name_column(wb) -> dict[str, int]:
    """Row of each design row the Storage & recovery sheet names: ``Inputs: <name>`` (the defined name
    ``setup_link_<name>``) and the "Checkpoint tiers" row, ``tiers below`` (``setup_checkpoint_tiers``), so that
    a planner who edits the labels keeps every design. A workbook written before those names: the rows' text in
    the name column (C), ``setup.tiers`` for the tiers row in older ones still."""
    if STORAGE not in wb.sheetnames:
        return {}
    rows: dict[str, int] = {}
    for key in F.INPUTS:
        if (found := _cell(wb, f"setup_link_{key}")) is not None and found[0] == STORAGE:
            rows[f"Inputs: {key}"] = _row(found[1])
    if (found := _cell(wb, "setup_checkpoint_tiers")) is not None and found[0] == STORAGE:
        rows["tiers below"] = _row(found[1])
    if len(rows) == len(F.INPUTS) + 1:
        return rows
    for (c,) in wb[STORAGE].iter_rows(min_col=3, max_col=3):   # written before the names
        if isinstance(c.value, str) and c.data_type != "f":
            rows.setdefault(c.value, c.row)
    return rows


def _storage_designs(wb, problems: list) -> list[tuple[Design, tuple[str, str]]]:
    """The Storage & recovery sheet's designs: the change cells under each design's name on every setup row
    (the row of ``setup_<field>``) and scenario row (named ``Inputs: <name>``), and its own tiers and classes."""
    designs, k, rows = [], 1, None
    while (found := _cell(wb, f"setup_design{k}_name")) is not None:
        rows = _name_column(wb) if rows is None else rows
        sheet, ref, _ = found
        ws, col = wb[sheet], column_index_from_string(ref.rstrip("0123456789"))
        name = _text(found, problems, f"setup_design{k}_name") or f"design {k}"

        def at(row: int | None, c: int) -> tuple[str, str, Any] | None:
            return None if row is None else (sheet, f"{col_letter(c)}{row}", _value(ws.cell(row=row, column=c)))

        cells = [(field, f"setup_design{k}_{{kind}}_{key}", at(rows.get(f"Inputs: {key}"), col),
                  at(rows.get(f"Inputs: {key}"), col + 1)) for key, field in F.INPUTS.items()]
        cells += [(f, f"setup_design{k}_{{kind}}_{f.name}", *(at(_row(base[1]), col + j) for j in (0, 1)))
                  for f in SETUP_FIELDS if (base := _cell(wb, f"setup_{f.name}")) is not None]
        set_, times = _changes(cells, problems)
        tiers, classes = _design_tiers(wb, k, at(rows.get("tiers below", rows.get("setup.tiers")), col), problems)
        designs.append((Design(name, set=set_, times=times, tiers=tiers, failure_classes=classes), found[:2]))
        k += 1
    return designs


def _design_tiers(wb, k: int, tiers_row: tuple[str, str, Any] | None, problems: list) -> tuple[Any, Any]:
    """(tiers, failure classes) design ``k`` puts in place of the baseline's (None: keeps them)."""
    out: list[Any] = []
    for what, read in (("tiers", lambda: tuple(_read_tiers(wb, f"setup_design{k}_tier", problems))),
                       ("classes", lambda: _read_classes(wb, f"setup_design{k}_class", problems))):
        flag = _cell(wb, f"setup_design{k}_replaces_{what}")
        replaces = flag is not None and _yes_no(flag, problems, f"setup_design{k}_replaces_{what}")
        block = read() if flag is not None else None   # checked even when not used: every bad cell is reported
        out.append(block if replaces else None)
    replaced = tiers_row is not None and isinstance(tiers_row[2], str) and tiers_row[2].startswith("replaced")
    if replaced and _cell(wb, f"setup_design{k}_replaces_tiers") is None:
        problems.append((*tiers_row[:2], f"setup_design{k}_name", tiers_row[2], "this design replaces the tiers, but "
                         "the workbook holds no copy of its tiers (written by an older ckptplan): regenerate it from "
                         "the scenario file"))
    return out[0], out[1]


def _read_tiers(wb, prefix: str, problems: list) -> list[dict[str, Any]]:
    """The tier table named ``<prefix><i>_<key>`` (i = 1, 2, ...): a tier per row that is not blank."""
    tiers, i = [], 1
    while (found := _cell(wb, f"{prefix}{i}_name")) is not None:
        t: dict[str, Any] = {}
        for key, (_, rule) in TIER_COLUMNS.items():
            what = f"{prefix}{i}_{key}"
            if rule is None:
                text = _text(_cell(wb, what), problems, what)
                if text is not None:
                    t[key] = text if key == "name" else [c.strip() for c in text.split(",") if c.strip()]
            elif (value := _number(wb, what, RULES[rule], problems, integer=rule == "count")) is not None:
                t[key] = value
        if t and "name" not in t and not isinstance(found[2], _Formula):
            problems.append((found[0], found[1], f"{prefix}{i}_name", None, "a tier needs a name (or clear its row)"))
        elif t:
            tiers.append(t)
        i += 1
    return tiers


def _read_classes(wb, prefix: str, problems: list) -> dict[str, float]:
    """The failure classes named ``<prefix><j>_name`` / ``_share`` (j = 1, 2, ...), in row order."""
    classes: dict[str, float] = {}
    j = 1
    while (found := _cell(wb, f"{prefix}{j}_name")) is not None:
        name, what = _text(found, problems, f"{prefix}{j}_name"), f"{prefix}{j}_share"
        share_cell = _cell(wb, what)
        share = _number(wb, what, RULES["share"], problems)
        given = share_cell is not None and not _blank(share_cell[2])
        if name is None and given and not isinstance(found[2], _Formula):
            problems.append((found[0], found[1], f"{prefix}{j}_name", None, "a share needs its class name"))
        elif name is not None and "," in name:
            problems.append((found[0], found[1], f"{prefix}{j}_name", name, "a class name cannot hold a comma "
                             "(a tier's survives cell lists class names separated by commas)"))
        elif name is not None and name in classes:
            problems.append((found[0], found[1], f"{prefix}{j}_name", name, "names a class already listed above"))
        elif name is not None and not given and share_cell is not None:
            problems.append((share_cell[0], share_cell[1], what, None, "is required: a class needs its share"))
        elif name is not None and share is not None:
            classes[name] = share
        j += 1
    return classes


def _read_phases(wb, problems: list) -> list[dict[str, float]]:
    """The Schedule sheet's failure phases (``phase{i}_start_h`` / ``phase{i}_rate_factor``, blank rows skipped;
    none without the sheet); a bad cell goes to ``problems``, a half-given phase too."""
    out, i = [], 1
    while f"phase{i}_start_h" in wb.defined_names:
        cells = {}
        for part in PHASE_FIELDS:
            if part.name in PHASE_REQUIRED:   # a phase's own interval is the schedule table's 'Save every' cell
                cells[part.name] = _number(wb, f"phase{i}_{part.name}", part.check, problems, blank=" or blank")
        if (cells["start_h"] is None) != (cells["rate_factor"] is None):
            found = _cell(wb, f"phase{i}_start_h")
            problems.append((found[0] if found else "?", found[1] if found else "?", f"phase{i}", None,
                             f"give both phase{i}_start_h and phase{i}_rate_factor, or neither"))
        elif cells["start_h"] is not None:
            out.append(cells)
        i += 1
    return out


def _read_schedule_interval(wb, phases: list[dict[str, float]], problems: list) -> float | None:
    """The intervals the Schedule sheet's 'Save every' cells state (``schedule{i}_interval_min``).

    A cell blank or equal (to 1e-9) to ckptplan's schedule beside it (column F) states nothing; a row whose column F
    says the interval was stated (the scenario stated it) states its cell. One interval stated in every row of the
    schedule becomes ``interval_min`` (returned: a plan of that interval in every phase); otherwise each stated row
    becomes its phase's ``interval_min`` (written into ``phases``; the row before phase 1, when phase 1 starts
    later, becomes a phase at 0 with the constant rate, as the plan takes it) and None is returned."""
    rows, i = [], 1
    while f"schedule{i}_interval_min" in wb.defined_names:
        value = _number(wb, f"schedule{i}_interval_min", F.INPUTS["interval_min"].check, problems)
        sheet, ref, _ = _cell(wb, f"schedule{i}_interval_min")
        used = (i == 1 and phases and phases[0]["start_h"] > 0) or 2 <= i <= len(phases) + 1
        if used:
            ours = wb[sheet][f"F{ref[1:]}"].value
            ours = float(ours) if isinstance(ours, numbers.Real) and not isinstance(ours, bool) else None
            stated = value is not None and (ours is None or abs(value - ours) > 1e-9 * ours)
            rows.append((i, value if stated else None))
        i += 1
    said = {v for _, v in rows if v is not None}
    if not said:
        return None
    if len(said) == 1 and all(v is not None for _, v in rows):
        return said.pop()
    for i, v in rows:
        if v is not None and i >= 2:
            phases[i - 2]["interval_min"] = v
    if rows and rows[0][0] == 1 and rows[0][1] is not None:
        phases.insert(0, {"start_h": 0.0, "rate_factor": 1.0, "interval_min": rows[0][1]})
    return None


def _read_setup(wb, problems: list) -> dict[str, Any]:
    """The setup's fields (blank = the field's default); empty when the workbook has no setup cells."""
    if _cell(wb, f"setup_{SETUP_FIELDS[0].name}") is None:
        return {}
    values = {f.name: _number(wb, f"setup_{f.name}", f.check, problems, integer=f.integer) for f in SETUP_FIELDS}
    return {f.name: f.default if values[f.name] is None else values[f.name] for f in SETUP_FIELDS}


def _stated_cells(wb, problems: list) -> dict[str, bool]:
    """The sheet's ``setup_stated_<name>`` answers (a workbook without these cells says it by a blank Inputs cell)."""
    out = {}
    for name in DERIVED:
        found = _cell(wb, f"setup_stated_{name}")
        if found is not None and (said := _yes_no(found, problems, f"setup_stated_{name}")) is not None:
            out[name] = said
    return out


def _derivable(sc: engine.Scenario, setup: Any) -> set[str]:
    """The scenario fields of :data:`DERIVED` the setup derives (what a blank or unstated cell leaves to it)."""
    if not setup.given():
        return set()
    single = plan_setup(sc, setup.replace(tiers=(), failure_classes={}, stated=frozenset()))
    out = {n for n in DERIVED[:2] if single.figures[f"derived_{n}"] is not None}
    return out | ({"restart_min", "downtime_min"} if single.restart_parts_min else set()) | (
        {"checkpoint_stall_min"} if setup.tiers else set())


def _resolve_derived(wb, values: dict[str, Any], said: dict[str, bool], derivable: set[str],
                     problems: list) -> tuple[dict[str, Any], set[str]]:
    """The scenario's stall, background write and restart, and those the planner states (module notes)."""
    out, stated = {}, set()
    for name in DERIVED:
        value, field = values.get(name), FIELD_BY_NAME[name]
        fallback = PLACEHOLDER_STALL_MIN if field.required else field.default
        if value is None:
            if said.get(name) or (field.required and name not in derivable):
                why = f"setup_stated_{name} says yes" if said.get(name) else "the setup does not derive it"
                problems.append((*_cell(wb, name)[:2], name, None, f"is required ({why})"))
            out[name] = fallback
        elif said.get(name) or (name in derivable and name not in said):
            out[name] = value          # "yes", or a value typed where the setup would derive one
            stated.add(name)
        elif name in derivable:
            out[name] = fallback       # "no": the setup derives it
        else:
            out[name] = value          # the setup cannot derive it: the value is the planner's
            if value != field.default:
                stated.add(name)
    return out, stated


def _merge_designs(storage: list, compare: list, sc: engine.Scenario, problems: list) -> tuple[Design, ...]:
    """The Storage & recovery sheet's designs, then the Compare sheet's not among them (one name, one design);
    the Compare sheet's unedited defaults are none."""
    if tuple(d for d, _ in compare) == tuple(default_designs(sc)):
        compare = []
    designs = [d for d, _ in storage]
    named = {d.name: d for d in reversed(designs)}   # the first design of a name
    for d, (sheet, ref) in compare:
        if d.name not in named:
            designs.append(named.setdefault(d.name, d))
        elif (ours := _scenario_part(d)) != (theirs := _scenario_part(named[d.name])):
            problems.append((sheet, ref, "design", d.name, f"changes the scenario as {ours.describe()}, but the same "
                             f"design on the {STORAGE} sheet as {theirs.describe()}: make the two sheets agree"))
    return tuple(designs)


def _scenario_part(d: Design) -> Design:
    """The design's changes to scenario inputs (what the Compare sheet shows of it)."""
    keep = {f.name for f in F.INPUTS.values()}
    return Design(d.name, set={k: v for k, v in d.set.items() if k in keep},
                  times={k: v for k, v in d.times.items() if k in keep and k not in d.set})


def _texts(wb, values: dict[str, Any], path: Path, problems: list) -> dict[str, Any]:
    """The scenario's texts: name (blank: the file's), currency (blank: USD), description, source and the
    domains' names (None: not in the workbook), and the published failure rate and spot band behind node_mtbf_h
    and preemptions_per_node_h (:func:`_source_kept`)."""
    out: dict[str, Any] = {"name": _text(_cell(wb, "scenario_name"), [], "scenario_name") or path.stem,
                           "currency": _text(_cell(wb, "currency"), [], "currency") or "USD"}
    for key, name in (("description", "scenario_description"), ("source", "scenario_source"),
                      ("failure_rate_source", "failure_rate_source"),
                      ("preemption_rate_source", "preemption_rate_source"),
                      *((f"domain{i}_name",) * 2 for i in range(1, DOMAIN_SLOTS + 1))):
        found = _cell(wb, name)
        out[key] = None if found is None else _text(found, problems, name) or ""
    _source_kept(wb, out, values, problems, "failure_rate_source", "node_mtbf_h",
                 lambda name: fleet_rate(name).node_mtbf_h)
    _source_kept(wb, out, values, problems, "preemption_rate_source", "preemptions_per_node_h",
                 lambda name: spot_rate(name).preemptions_per_node_h)
    return out


def _source_kept(wb, out: dict[str, Any], values: dict[str, Any], problems: list, source: str, value: str,
                 lookup: Any) -> None:
    """The published figure named by ``source`` (the fleet failure rate behind node_mtbf_h, the spot band behind
    preemptions_per_node_h), dropped when the Inputs' ``value`` is not its (the planner's own figure wins, as on
    the command line); an unknown name is a problem."""
    if not out.get(source):
        return
    try:
        figure = lookup(out[source])
    except InputError as exc:
        problems.append((*_cell(wb, source)[:2], source, out[source], exc.rule))
        return
    given = values.get(value)
    if given is not None and abs(given - figure) > 1e-9 * figure:
        out[source] = ""


def _read_ranges(wb, sc: engine.Scenario, setup: Any, problems: list) -> tuple:
    """The input ranges: each scenario input's Low / High / Shape / Mode cells (Inputs sheet, ``<name>_low`` ...)
    and each setup input's (Sensitivity sheet, ``<field>_low`` ...), read as a table's range columns are
    (:func:`ckptplan.engine.uncertainty.range_from_cells`) around the plan's own values."""
    from ..engine.uncertainty import RANGE_PARTS, base_values, range_column, range_from_cells

    fields = [(f.defined_name, f.name) for f in F.INPUTS.values() if range_column(f"{f.name}_low")] + [
        (f.name, f.name) for f in SETUP_FIELDS]   # the domains' numbers included
    found = {}
    for key, field in fields:
        cells = {part: _cell(wb, f"{key}_{part}") for part in RANGE_PARTS}
        if any(c is not None and not _blank(c[2]) for c in cells.values()):
            found[field] = (key, cells)
    if not found:
        return ()
    base = base_values(sc, setup, list(found))
    out = []
    for field, (key, cells) in found.items():
        formula = [(p, c) for p, c in cells.items() if c is not None and isinstance(c[2], _Formula)]
        if formula:
            p, c = formula[0]
            problems.append((c[0], c[1], f"{key}_{p}", str(c[2]), "holds a formula; type a number"))
            continue
        u, problem = range_from_cells(field, {p: None if c is None else c[2] for p, c in cells.items()},
                                      base.get(field), "workbook")
        if problem is not None:
            parts, rule = problem
            at = cells.get(parts[0] if parts else "low") or cells.get("high")
            name = f"{key}_{parts[0] if parts else 'low'}"
            problems.append((at[0], at[1], name, at[2], rule) if at else ("Inputs", "?", name, None, rule))
        elif u is not None:
            out.append(u)
    return tuple(out)


def _read(path: Path) -> tuple[PlanFile, tuple[Design, ...]]:
    """The workbook's plan and the Compare sheet's alternatives as they stand."""
    wb = _open(path)
    problems: list = []
    values = _read_block(wb, "", problems, optional=DERIVED)
    setup_values = _read_setup(wb, problems)
    tiers, classes = tuple(_read_tiers(wb, "tier", problems)), _read_classes(wb, "class", problems)
    said, storage = _stated_cells(wb, problems), _storage_designs(wb, problems)
    compare = _compare_designs(wb, problems)
    phases = _read_phases(wb, problems)
    stated_interval = _read_schedule_interval(wb, phases, problems)
    elastic = _read_elastic(wb, problems)
    if problems:
        raise WorkbookInputError(path, problems)
    texts = _texts(wb, values, path, problems)
    if problems:
        raise WorkbookInputError(path, problems)
    try:
        filled = {**values, **{k: PLACEHOLDER_STALL_MIN for k in DERIVED if values.get(k) is None and F.INPUTS[k].required}}
        sc = _scenario(filled, texts, path.name).replace(failure_phases=phases_from_list(phases, "Schedule"), **elastic)
        if stated_interval is not None:
            sc = sc.replace(interval_min=stated_interval)
        setup = RecoverySetup(**setup_values, tiers=tiers, failure_classes=classes)
        resolved, stated = _resolve_derived(wb, values, said, _derivable(sc, setup), problems)
        sc, setup = sc.replace(**resolved), setup.replace(stated=frozenset(stated))
        designs = _merge_designs(storage, compare, sc, problems)
        uncertainty = _read_ranges(wb, sc, setup, problems)
    except InputError as exc:
        raise InputError(f"{path.name}: {exc.field}", exc.value, exc.rule) from None
    if problems:
        raise WorkbookInputError(path, problems)
    return PlanFile(sc, setup, designs, str(path), uncertainty), tuple(d for d, _ in compare)


def read_plan(path: str | Path) -> PlanFile:
    """Everything an edited workbook holds, as a plan: the scenario, the storage and recovery setup with its
    tiers, failure classes and stated fields, and every design (see the module notes); ``origin`` the path.

    Raises :class:`WorkbookInputError` listing every invalid input (sheet, cell, name, value, rule), or
    :class:`engine.InputError` for a file that is not a readable workbook or inputs that break a rule
    between fields (naming the file and the field).
    """
    return _read(Path(path))[0]


def read_inputs(path: str | Path) -> tuple[engine.Scenario, tuple[Design, ...]]:
    """The baseline scenario as planned (the stall, write and restart its setup derives filled in) and the
    Compare sheet's alternatives (designs: sets of changes on the baseline) of an edited workbook.

    :func:`read_plan` reads the rest (setup, tiers, classes, the Storage & recovery sheet's designs).
    Raises :class:`WorkbookInputError` listing every invalid input (sheet, cell, rule), or
    :class:`engine.InputError` for a file that is not a readable workbook.
    """
    plan, compare = _read(Path(path))
    if plan.setup.given():
        return plan_setup(plan.scenario, plan.setup.replace(tiers=(), failure_classes={})).scenario, compare
    return plan.scenario, compare


def read_break_even(path: str | Path) -> tuple[str, float, float] | None:
    """The Compare sheet's break-even choice of an edited workbook: (``break_even_input``, ``break_even_low``,
    ``break_even_high``), or None in a workbook written before the block. An input not among the block's
    choices, or a range that is not two numbers with low < high, raises :class:`engine.InputError` naming
    the cell."""
    from .break_even_block import CHOICES

    wb = _open(Path(path))
    found = [_cell(wb, f"break_even_{part}") for part in ("input", "low", "high")]
    if any(f is None for f in found):
        return None
    (sheet, ref, field), lo, hi = found
    if field not in CHOICES:
        raise InputError(f"{sheet}!{ref} (break_even_input)", field, "must be one of " + ", ".join(CHOICES))
    ends = []
    for (sheet, ref, value), part in zip((lo, hi), ("low", "high")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InputError(f"{sheet}!{ref} (break_even_{part})", value, "must be a number")
        ends.append(float(value))
    if not ends[0] < ends[1]:
        raise InputError(f"{lo[0]}!{lo[1]} (break_even_low)", ends, "must be below break_even_high")
    return str(field), ends[0], ends[1]


def read_target(path: str | Path) -> tuple[str, float, str] | None:
    """The target block's choice of an edited workbook: (``target_goal``, ``target_value``, ``target_lever``), or
    None in a workbook written before the block. A goal or lever not among the block's choices, or a goal value
    outside its rule, raises :class:`engine.InputError` naming the cell."""
    from ..engine.targets import GOALS
    from .target_block import LEVERS

    wb = _open(Path(path))
    found = [_cell(wb, f"target_{part}") for part in ("goal", "value", "lever")]
    if any(f is None for f in found):
        return None
    goal, value, lever = found
    if goal[2] not in GOALS:
        raise InputError(f"{goal[0]}!{goal[1]} (target_goal)", goal[2], "must be one of " + ", ".join(GOALS))
    if lever[2] not in LEVERS:
        raise InputError(f"{lever[0]}!{lever[1]} (target_lever)", lever[2], "must be one of " + ", ".join(LEVERS))
    v = value[2]
    fraction = goal[2] in ("goodput", "p_finish")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not (
            0 < v < 1 if fraction else v > 0):
        raise InputError(f"{value[0]}!{value[1]} (target_value)", v,
                         "must be a fraction in (0, 1)" if fraction else "must be a number > 0")
    return str(goal[2]), float(v), str(lever[2])


def read_readiness(path: str | Path) -> dict[str, tuple[Any, Any]]:
    """Status and evidence per Readiness checklist item of an edited workbook (items matched by text)."""
    _check_package(Path(path))
    wb = load_workbook(path, data_only=False)
    if "Readiness" not in wb.sheetnames:
        return {}
    ws = wb["Readiness"]
    items = {item for item, _ in READINESS}
    kept = {}
    for r in range(5, ws.max_row + 1):
        item = ws.cell(row=r, column=1).value
        if item in items:
            status, evidence = ws.cell(row=r, column=3).value, ws.cell(row=r, column=4).value
            if isinstance(status, str) and status.startswith("="):
                status = "not checked"
            if isinstance(evidence, str) and evidence.startswith("="):
                evidence = None
            kept[item] = (status, evidence)
    return kept
