"""Scenario files: the shipped presets (``ckptplan.templates``) and TOML scenario files.

A scenario file holds a ``[scenario]`` table with the fields of
:class:`ckptplan.engine.Scenario` (names and rules: :mod:`ckptplan.engine.fields`) and optional
``[[scenario.domains]]`` tables (``name``, ``mtbf_h``, ``nodes_per_domain``).
"""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path
from typing import Any

from ..engine.errors import InputError

#: the folder of the shipped presets (``ckptplan.templates``, read through importlib.resources)
TEMPLATE_DIR = Path(str(importlib.resources.files("ckptplan.templates")))


def list_templates() -> list[str]:
    """Names of the shipped presets (file stems of ``ckptplan/templates/*.toml``)."""
    return sorted(p.stem for p in TEMPLATE_DIR.glob("*.toml"))


def template_path(name: str) -> Path:
    """The file of a shipped preset or example (e.g. ``example-interruption-log.csv``)."""
    return TEMPLATE_DIR / name


def read_scenario_document(source: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed TOML of a template name or a scenario file, and its name for messages."""
    path = Path(source)
    if not path.suffix and not path.exists():
        path = TEMPLATE_DIR / f"{source}.toml"
        if not path.exists():
            raise InputError("template", str(source), f"unknown template; available: {', '.join(list_templates())}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("scenario file", str(path), "file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError("scenario file", str(path), f"is not valid TOML ({exc})") from None
    return data, str(path)


def load_scenario(source: str | Path) -> Any:
    """Load a scenario from a template name (see :func:`list_templates`) or a TOML file path.

    Returns a :class:`ckptplan.engine.Scenario`; raises :class:`ckptplan.engine.InputError` naming
    the file and the problem (unknown template, missing file, invalid TOML, a bad field). A file
    with a storage and recovery setup (:mod:`ckptplan.files.plans`) gives the scenario with the
    stall, write and restart its setup derives; its tiers and designs are read by
    :func:`ckptplan.files.plans.load_plan`.
    """
    from .plans import plan_from_data

    data, origin = read_scenario_document(source)
    return plan_from_data(data, origin=origin).planned_scenario()


__all__ = ["TEMPLATE_DIR", "list_templates", "load_scenario", "read_scenario_document", "template_path"]
