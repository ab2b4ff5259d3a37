"""ckptplan.files: the one I/O layer. Every file format the tools read or write lives here
(scenario TOML and tables, results, interruption logs), apart from the models (``ckptplan.engine``)
and from the Excel workbook generator (``ckptplan.workbook``). Writes are atomic and never replace a
user's file without ``force``; untrusted packages are checked before any parser sees them.

Names load on first use (``files.load_plan`` imports :mod:`.scenarios` then), so a command that needs
one of them does not pay for the others at start-up.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"OutputExistsError": "atomic", "atomic_write": "atomic", "atomic_write_text": "atomic",
          "PlanFile": "plans", "load_plan": "scenarios", "TEMPLATE_DIR": "scenarios", "list_templates": "scenarios",
          "load_scenario": "scenarios", "template_path": "scenarios", "check_xlsx_package": "untrusted"}

__all__ = ["OutputExistsError", "PlanFile", "TEMPLATE_DIR", "atomic_write", "atomic_write_text", "check_xlsx_package",
           "list_templates", "load_plan", "load_scenario", "template_path"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
