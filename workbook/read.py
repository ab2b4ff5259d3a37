"""Read the inputs back from a planning workbook a user edited, treating the file as untrusted.

openpyxl parses the XML through defusedxml when it is installed (a dependency of ckptplan), which
refuses entity-expansion and external-entity attacks. No formula is evaluated: an input cell that
holds a formula is reported as invalid, not computed. Inputs are found through their defined names
(the generator names every input), so moved rows still work. Every invalid input is reported at
once, by sheet, cell and rule.
"""

from __future__ import annotations

import re

import math
import numbers
from pathlib import Path
from typing import Any

from defusedxml.common import DefusedXmlException
from openpyxl import load_workbook

from .. import engine
from ..engine import InputError
from ..files.untrusted import check_xlsx_package
from ..engine.designs import Design
from ..engine.fields import DOMAIN_SLOTS, RULES, Rule
from ..engine.reliability import FailureDomain

from . import formulas as F
from .notes import READINESS

__all__ = ["MAX_UNCOMPRESSED_BYTES", "WorkbookInputError", "read_inputs", "read_readiness"]

class WorkbookInputError(InputError):
    """Invalid inputs in a workbook: ``problems`` lists (sheet, cell, name, value, rule)."""

    def __init__(self, path: Path, problems: list[tuple[str, str, str, Any, str]]):
        self.problems = problems
        lines = [f"{sheet}!{cell} ({name}) = {value!r}: {rule}" for sheet, cell, name, value, rule in problems]
        ValueError.__init__(self, f"{path}: {len(problems)} invalid input(s):\n  " + "\n  ".join(lines))
        self.field, self.value, self.rule, self.position = "workbook", str(path), "invalid inputs", None


def _cell(wb, name: str) -> tuple[str, str, Any] | None:
    if name not in wb.defined_names:
        return None
    dests = list(wb.defined_names[name].destinations)
    if len(dests) != 1 or dests[0][0] not in wb.sheetnames:
        return None
    sheet, ref = dests[0]
    ref = ref.replace("$", "")
    if not re.fullmatch(r"[A-Z]{1,3}[1-9][0-9]{0,6}", ref):  # one cell: openpyxl would build every cell of a range
        return None
    return sheet, ref, wb[sheet][ref].value


def _number_problem(value: Any, rule: Rule, blank: str = "") -> str | None:
    """Why a (non-empty) input cell breaks its registry rule, or None: a formula, text, or a number the
    rule's predicate refuses (``blank``: the words that say an empty cell is allowed too)."""
    if isinstance(value, str) and value.startswith("="):
        return "holds a formula; type a number (formulas in an edited workbook are not evaluated)"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"must be {rule.noun}{blank}, not text"
    if not math.isfinite(value) or not bool(rule.predicate(float(value))):
        return f"must be {rule.noun}{blank}"
    return None


def _read_block(wb, prefix: str, problems: list) -> dict[str, Any]:
    """The values of one block of inputs (``prefix`` "" = Inputs, "alt_" = Compare), keyed by defined
    name; every cell breaking its registry rule is added to ``problems``."""
    values: dict[str, Any] = {}
    for key, field in F.INPUTS.items():
        found = _cell(wb, prefix + key)
        if found is None:
            problems.append(("?", "?", prefix + key, None, "defined name missing: is this a ckptplan planning workbook?"))
            continue
        sheet, ref, value = found
        rule = field.check
        if value is None or (isinstance(value, str) and value.strip() == ""):
            if field.required:
                problems.append((sheet, ref, key, None, f"is required ({rule.noun})"))
            values[key] = None
            continue
        problem = _number_problem(value, rule)
        if problem:
            problems.append((sheet, ref, key, value, problem))
            continue
        values[key] = float(value)
    return values


def _scenario(values: dict[str, Any], name: str, currency: str, origin: str) -> engine.Scenario:
    fields: dict[str, Any] = {"name": name, "currency": currency, "description": f"read from {origin}",
                              "source": f"planning workbook {origin}"}
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
            domains.append(FailureDomain(f"domain {i}", mtbf, int(per)))
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


def _read_designs(wb, problems: list) -> list[tuple[str, dict[str, float], dict[str, float]]]:
    """The Compare sheet's alternatives as (name, set, times), their change cells checked: a "set to"
    value against its field's rule, an "x baseline" factor > 0 (blank = same as the baseline)."""
    designs = []
    k = 1
    while (found := _cell(wb, f"alt{k}_name")) is not None:
        name = found[2]
        name = str(name).strip() if name not in (None, "") and not str(name).startswith("=") else f"alternative {k}"
        changes: dict[str, dict[str, float]] = {"set": {}, "times": {}}
        for key, field in F.INPUTS.items():
            for kind in ("set", "times"):
                cell = _cell(wb, f"alt{k}_{kind}_{key}")
                if cell is None:
                    continue
                sheet, ref, value = cell
                if value is None or (isinstance(value, str) and value.strip() == ""):
                    continue
                rule = field.check if kind == "set" else RULES["positive"]
                what = f"alt{k}_{kind}_{key}"  # the cell's defined name
                problem = _number_problem(value, rule, " or blank")
                if problem:
                    problems.append((sheet, ref, what, value, problem))
                else:
                    changes[kind][field.name] = float(value)
        designs.append((name, changes["set"], changes["times"]))
        k += 1
    return designs


def read_inputs(path: str | Path) -> tuple[engine.Scenario, tuple[Design, ...]]:
    """The baseline scenario (Inputs sheet) and the Compare sheet's alternatives (designs: sets of
    changes on the baseline) of an edited workbook.

    Raises :class:`WorkbookInputError` listing every invalid input (sheet, cell, rule), or
    :class:`engine.InputError` for a file that is not a readable workbook.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("--from", str(path), "file not found")
    _check_package(path)
    try:
        wb = load_workbook(path, data_only=False, read_only=False, keep_links=False)
    except Exception as exc:  # noqa: BLE001 - any failure to parse a user's file becomes one clear error
        hostile = _defused(exc)
        if hostile is not None:
            raise InputError("--from", str(path), f"was refused as unsafe XML ({type(hostile).__name__}: "
                             "entity or DTD declarations are not allowed in a workbook)") from None
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError("--from", str(path), f"is not a readable .xlsx workbook ({type(exc).__name__}: {first_line})") from None
    problems: list = []
    base = _read_block(wb, "", problems)
    found = _read_designs(wb, problems)
    if problems:
        raise WorkbookInputError(path, problems)

    def text(name: str, default: str) -> str:
        found = _cell(wb, name)
        return str(found[2]).strip() if found and found[2] not in (None, "") and not str(found[2]).startswith("=") else default

    currency = text("currency", "USD")
    try:
        sc = _scenario(base, text("scenario_name", path.stem), currency, path.name)
        designs = tuple(Design(name, set=set_, times=times) for name, set_, times in found)
    except InputError as exc:
        raise InputError(f"{path.name}: {exc.field}", exc.value, exc.rule) from None
    return sc, designs


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


