"""Scenario files: the shipped presets (``ckptplan.templates``) and TOML scenario files, read.

A scenario file holds a ``[scenario]`` table with the fields of
:class:`ckptplan.engine.Scenario` (names and rules: :mod:`ckptplan.engine.fields`) and optional
``[[scenario.domains]]`` tables (``name``, ``mtbf_h``, ``nodes_per_domain``); what its storage and
recovery setup, tiers and designs mean is :mod:`ckptplan.files.plans`' (:func:`load_plan` reads all of it).
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any

from ..engine.errors import InputError
from .plans import PlanFile, plan_from_data
from .untrusted import FileInputError, check_text, read_toml

__all__ = ["TEMPLATE_DIR", "list_templates", "load_plan", "load_scenario", "read_scenario_document", "template_path"]

#: the folder of the shipped presets (``ckptplan.templates``, read through importlib.resources)
TEMPLATE_DIR = Path(str(importlib.resources.files("ckptplan.templates")))


def list_templates() -> list[str]:
    """Names of the shipped presets (file stems of ``ckptplan/templates/*.toml``)."""
    return sorted(p.stem for p in TEMPLATE_DIR.glob("*.toml"))


def template_path(name: str) -> Path:
    """The file of a shipped preset or example (e.g. ``example-interruption-log.csv``)."""
    return TEMPLATE_DIR / name


def read_scenario_document(source: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed TOML of a template name or a scenario file, and its name for messages.

    The file is read as untrusted (:func:`ckptplan.files.untrusted.read_toml`): a directory, a device
    or pipe, an unreadable, oversized or non-UTF-8 file, nesting deeper than
    :data:`~ckptplan.files.untrusted.MAX_TOML_DEPTH` and keys or text longer than
    :data:`~ckptplan.files.untrusted.MAX_CELL_CHARS` are refused with an :class:`InputError` naming
    the file and the rule.
    """
    path = Path(source)
    try:
        exists = path.exists()
    except OSError as exc:  # e.g. a name too long for the filesystem
        raise FileInputError("scenario file", str(source)[:200], f"cannot be read ({exc.strerror or exc})") from None
    if not path.suffix and not exists:
        path = TEMPLATE_DIR / f"{source}.toml"
        if not path.exists():
            raise InputError("template", str(source), f"unknown template; available: {', '.join(list_templates())}")
    data = read_toml(path, "scenario file")  # untrusted: a regular file, bounded size and nesting, UTF-8
    _check_lengths(data, path)
    return data, str(path)


def _check_lengths(data: Any, path: Path) -> None:
    """Every key and text value of the document at most MAX_CELL_CHARS long (before any message quotes one)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                check_text(key, path, "a key")
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
        else:
            check_text(item, path, "a value")


def load_scenario(source: str | Path) -> Any:
    """Load a scenario from a template name (see :func:`list_templates`) or a TOML file path.

    Returns a :class:`ckptplan.engine.Scenario`; raises :class:`ckptplan.engine.InputError` naming
    the file and the problem (unknown template, missing file, invalid TOML, a bad field). A file
    with a storage and recovery setup (:mod:`ckptplan.files.plans`) gives the scenario with the
    stall, write and restart its setup derives; its tiers and designs are read by
    :func:`load_plan`.
    """
    data, origin = read_scenario_document(source)
    return plan_from_data(data, origin=origin).planned_scenario()


def load_plan(source: str | Path) -> PlanFile:
    """Load a template name or TOML file as a :class:`PlanFile` (errors name the file and the field)."""
    data, origin = read_scenario_document(source)
    return plan_from_data(data, origin=origin)
