"""Planning workbooks: openpyxl generation with live Excel formulas that mirror the engine."""

from .build import Built, Check, build_workbook, write_workbook
from .deadline_sheet import deadline_report
from .read import read_inputs, read_readiness

__all__ = ["Built", "Check", "build_workbook", "deadline_report", "read_inputs", "read_readiness", "write_workbook"]
