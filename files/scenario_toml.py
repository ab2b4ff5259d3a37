"""The one writer of scenario files: a plan (scenario, storage and recovery setup, tiers, failure classes and
``[[designs]]``) as TOML that :func:`ckptplan.files.scenarios.load_plan` reads back to the same plan.

Every command that writes a scenario file writes it here: ``ckptplan fit``, ``probe`` and ``actual
--emit-scenario`` (a template with the fields a log or a probe measured, :func:`write_measured`) and
``ckptplan workbook --emit-scenario`` (the plan a workbook is written from, :func:`write_plan`).

* **Stated and derived.** A stall, background write or restart the plan *states* is written; one its
  setup derives is left out, so that the setup derives it again when the file is loaded (a value in
  the file is stated: it wins over the derived one). A measured one replaces the template's and is
  stated; the header says so.
* **The rest is kept**: every other scenario field, the setup's fields (those given, not the defaults),
  ``[[scenario.tiers]]``, ``[scenario.failure_classes]``, every ``[[designs]]`` table and the ``[uncertainty]``
  table.
* **The header** is a block of ``#`` comments: what wrote the file, the fields replaced and where
  their values come from, what was kept; text that a TOML comment cannot hold (line breaks, control
  characters) is shown as ``?``.
* **The write** is atomic (:func:`ckptplan.files.atomic.atomic_write`: a temporary file in the
  same folder, checked by loading it as a plan, then renamed); an existing file is replaced only with
  ``force``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..engine.errors import InputError
from ..engine.fields import FIELD_BY_NAME
from ..engine.setup import DERIVED
from .atomic import atomic_write
from .plans import PlanFile
from .scenarios import load_plan

__all__ = ["measured_header", "plan_document", "plan_toml", "plan_writer", "with_measured", "write_measured",
           "write_plan"]

#: characters a TOML comment cannot hold (every control character but tab)
_NOT_IN_COMMENT = re.compile("[\x00-\x08\x0a-\x1f\x7f]")


def with_measured(plan: PlanFile, measured: Mapping[str, Any], ranges: Mapping[str, Any] | None = None,
                  **texts: str) -> PlanFile:
    """``plan`` with the ``measured`` scenario fields in place of its own (a measured stall, background write
    or restart becomes stated: it wins over the one the setup derives) and the scenario texts ``texts``
    (``name``, ``description``, ``source``, ``failure_rate_source``) changed; setup, tiers, classes and
    designs kept. Raises :class:`InputError` for a field that is not a scenario field or breaks its rule.

    The ``[uncertainty]`` table: the template's range of a measured field is dropped (it was a guess around
    the template's value, not the measurement), as is a node MTBF range once a job MTBF is measured (the
    job MTBF overrides it: it would move nothing); ``ranges`` (field -> ``[low, high]`` or a distribution,
    e.g. a fitted MTBF's confidence interval) are added, checked around the measured values."""
    unknown = sorted(k for k in measured if k not in FIELD_BY_NAME)
    if unknown:
        raise InputError("measured", unknown[0], "is not a scenario field")
    scenario = plan.scenario.replace(**dict(measured), **texts)
    stated = frozenset(plan.setup.stated) | {k for k in measured if k in DERIVED}
    setup = plan.setup.replace(stated=stated)
    shadowed = set(measured) | ({"node_mtbf_h"} if "job_mtbf_h" in measured else set())
    kept = {u.field: u.to_dict() for u in plan.uncertainty if u.field not in shadowed}
    from ..engine.uncertainty import uncertainty_from_dict

    table = {**kept, **dict(ranges or {})}
    uncertainty = uncertainty_from_dict(table, scenario, setup, origin="measured") if table else ()
    return replace(plan, scenario=scenario, setup=setup, uncertainty=uncertainty)


def _plain(value: Any) -> Any:
    """A value as TOML takes it: numpy scalars as Python numbers, tuples as lists, None left out of tables."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def _design(design: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": design.name}
    for key in ("set", "times"):
        if getattr(design, key):
            out[key] = _plain(getattr(design, key))
    if design.tiers is not None:
        out["tiers"] = _plain(design.tiers)
    if design.failure_classes is not None:
        out["failure_classes"] = _plain(design.failure_classes)
    return out


def plan_document(plan: PlanFile) -> dict[str, Any]:
    """The plan as a TOML document (a dict): ``[scenario]`` with the setup's fields, tiers and classes, then
    ``[[designs]]``. A stall, write or restart the plan does not state is left out where the setup derives it
    (and where it is the field's default)."""
    from ..engine.scenario import scenario_to_dict

    setup = plan.setup
    table = scenario_to_dict(plan.scenario)
    for name in DERIVED:
        if name not in setup.stated and (setup.given() or table.get(name) == FIELD_BY_NAME[name].default):
            table.pop(name, None)
    from ..engine.fields import ELASTIC_FIELD_NAMES

    for name in ELASTIC_FIELD_NAMES:   # elastic continuation's fields at their defaults say nothing: left out
        if table.get(name) == FIELD_BY_NAME[name].default:
            table.pop(name, None)
    if table.get("on_node_loss") == "restart":
        table.pop("on_node_loss")
    table.update(setup.columns())
    if setup.tiers:
        table["tiers"], table["failure_classes"] = _plain(setup.tiers), _plain(setup.failure_classes)
    document: dict[str, Any] = {"scenario": _plain(table)}
    if plan.designs:
        document["designs"] = [_design(d) for d in plan.designs]
    if plan.uncertainty:
        from ..engine.uncertainty import uncertainty_to_dict

        document["uncertainty"] = _plain(uncertainty_to_dict(plan.uncertainty))
    return document


def plan_toml(plan: PlanFile, header: Sequence[str] = ()) -> str:
    """The plan's TOML text, after ``header`` as ``#`` comment lines."""
    import tomli_w

    lines = [f"# {_NOT_IN_COMMENT.sub('?', part)}".rstrip() for line in header for part in str(line).splitlines() or [""]]
    return "".join(f"{line}\n" for line in lines) + tomli_w.dumps(plan_document(plan))


def plan_writer(plan: PlanFile, header: Sequence[str] = ()) -> Callable[[Path], None]:
    """A writer of the plan's TOML (:func:`plan_toml`) into a temporary file, checked by loading it back as a
    plan: for :func:`ckptplan.files.atomic.atomic_write` or, with other outputs, ``atomic_write_many``."""
    text = plan_toml(plan, header)

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")
        load_plan(tmp)

    return write


def write_plan(path: str | Path, plan: PlanFile, header: Sequence[str] = (), force: bool = False) -> Path:
    """Write the plan's TOML (:func:`plan_toml`) atomically, checked by loading it back as a plan; an existing
    file is replaced only with ``force`` (:class:`ckptplan.files.atomic.OutputExistsError` otherwise)."""
    return atomic_write(path, plan_writer(plan, header), force=force)


def measured_header(command: str, measured: Mapping[str, Any], source: str, template: PlanFile,
                    notes: Sequence[str] = ()) -> list[str]:
    """The header of a measured scenario file: what wrote it (``command``, as the header shows it), the replaced
    fields and their source, the stated ones, what was kept from the template, then ``notes``."""
    setup = template.setup
    replaced = ", ".join(f"{k} = {v:.6g}" if isinstance(v, (int, float)) else f"{k} = {v}" for k, v in measured.items())
    stated = [k for k in measured if k in DERIVED]
    kept = [f"{len(setup.columns())} storage and recovery setup field(s)", f"{len(setup.tiers)} checkpoint tier(s)",
            f"{len(setup.failure_classes)} failure class(es)", f"{len(template.designs)} [[designs]]"]
    lines = [f"Generated by {command}.",
             f"Replaced with measured values from {source}: {replaced or 'none (nothing could be measured)'}.",
             f"Kept from the template {template.scenario.name} ({template.origin}): every other scenario field, "
             + ", ".join(kept) + "."]
    if stated:
        lines.append(f"Stated (measured), so each wins over the value the setup derives: {', '.join(stated)}.")
    return lines + [f"note: {n}" for n in notes]


def write_measured(path: str | Path, template: PlanFile, measured: Mapping[str, Any], *, command: str, source: str,
                   texts: Mapping[str, str] | None = None, notes: Sequence[str] = (), force: bool = False,
                   ranges: Mapping[str, Any] | None = None) -> PlanFile:
    """Write ``template`` with the ``measured`` fields in place of its own and the measured ``ranges`` in its
    ``[uncertainty]`` table (:func:`with_measured`) as a scenario file, headed by :func:`measured_header`
    (``command`` wrote it, ``source`` measured the fields; ``notes`` follow); returns the plan written. Raises
    :class:`InputError` (a ``ValueError``) for a measured value that breaks its field's rule,
    ``FileExistsError`` without ``force``, ``OSError`` when it cannot write."""
    plan = with_measured(template, measured, ranges, **dict(texts or {}))
    write_plan(path, plan, measured_header(command, measured, source, template, notes), force=force)
    return plan
