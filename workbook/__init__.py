"""ckptplan.workbook: everything Excel. Planning workbooks generated with openpyxl, whose live
formulas mirror the engine (:mod:`.formulas`, proven equal in LibreOffice); the reader of an edited
workbook (:mod:`.read`); the ``CKPT_`` Excel functions (:mod:`.udfs`, over :mod:`.cells`).

Submodules load when first used, so ``import ckptplan.workbook.udfs`` (what the Excel add-in
imports) does not pay for openpyxl.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "Built": "build", "Check": "build", "build_workbook": "build", "write_workbook": "build",
    "deadline_report": "deadline_sheet", "read_break_even": "read", "read_inputs": "read", "read_plan": "read",
    "read_readiness": "read", "read_target": "read",
}

__all__ = ["Built", "Check", "build_workbook", "deadline_report", "read_break_even", "read_inputs", "read_plan",
           "read_readiness", "read_target", "write_workbook"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
