"""What a generated workbook promises: the formula cells that must equal engine figures, and where its inputs are."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TYPE_CHECKING, Any

from openpyxl import Workbook

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Built", "Check"]


@dataclass
class Check:
    """A formula cell that must equal an engine figure after recalculation."""

    sheet: str
    cell: str
    context: tuple          # which engine evaluation: ("plan",), ("scaling", nodes), ...
    key: str                # column of engine.evaluate, or a named figure of the context


@dataclass
class Built:
    workbook: Workbook
    checks: list[Check] = dc_field(default_factory=list)
    input_cells: dict[str, str] = dc_field(default_factory=dict)   # input key -> "Inputs!$B$5"
    results: "pd.DataFrame | None" = None  # engine.evaluate of the baseline (row 0) and each design (rows 1..)
    designs: tuple[Any, ...] = ()          # the Compare sheet's alternatives (engine.designs.Design)
    flags: list[Check] = dc_field(default_factory=list)  # model-check cells: key "warnings" of a context
