"""Planning workbooks: openpyxl generation with live Excel formulas that mirror the engine."""

from .build import Built, Check, build_workbook, write_workbook

__all__ = ["Built", "Check", "build_workbook", "write_workbook"]
