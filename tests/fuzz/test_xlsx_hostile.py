"""XLSX scenario tables for ``batch`` with merged, hidden, array-formula and error cells (area "xlsx").

Each workbook is a valid scenario table with one hostile feature (openpyxl writes them as Excel would): merged
cells over names and numbers, hidden rows, columns and sheets, an array formula (``{=...}``) and a spilled dynamic
array, every Excel error value (``#DIV/0!``, ``#N/A``, ``#VALUE!``, ``#REF!``, ``#NAME?``, ``#NUM!``, ``#NULL!``,
``#SPILL!``, ``#CALC!``), formulas without a cached value, a second sheet, a table object, frozen panes and a
data-validated cell. Written to .csv and .xlsx results: :func:`corpus.check_run` and
:func:`corpus.check_output_dir`; a row whose cell holds an error or a formula is never evaluated as a number it
does not hold (no silent wrong number: it is refused, or it is the number the cell shows).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_hostile import run_case

HEAD = ["name", "checkpoint_stall_min", "node_mtbf_h", "nodes", "useful_training_h", "price_per_gpu_hour"]
ROWS = [["a", 2.0, 2560.0, 128, 720.0, 2.5], ["b", 1.0, 2560.0, 256, 720.0, 2.5], ["c", 3.0, 5000.0, 64, 100.0, 1.0]]
ERRORS = ["#DIV/0!", "#N/A", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#NULL!", "#SPILL!", "#CALC!"]


def _book(edit) -> "object":
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Scenarios"
    for r in [HEAD, *ROWS]:
        ws.append(r)
    edit(wb, ws)
    return wb


def _merged_names(wb, ws):
    ws.merge_cells("A2:A3")


def _merged_numbers(wb, ws):
    ws.merge_cells("B2:B4")


def _merged_header(wb, ws):
    ws.merge_cells("B1:C1")


def _hidden_row(wb, ws):
    ws.row_dimensions[3].hidden = True


def _hidden_column(wb, ws):
    ws.column_dimensions["D"].hidden = True


def _hidden_sheet_first(wb, ws):
    other = wb.create_sheet("Hidden", 0)
    other.append(["name", "nodes"])
    other.append(["h", 1])
    other.sheet_state = "hidden"


def _array_formula(wb, ws):
    from openpyxl.worksheet.formula import ArrayFormula

    ws["B2"] = ArrayFormula("B2:B4", "={1;2;3}")


def _dynamic_array(wb, ws):
    ws["D2"] = "=SEQUENCE(3,1,64,64)"


def _formulas(wb, ws):
    ws["B3"] = "=B2*2"
    ws["D4"] = "=SUM(D2:D3)"


def _table_object(wb, ws):
    from openpyxl.worksheet.table import Table

    ws.add_table(Table(displayName="Scenarios1", ref="A1:F4"))


def _frozen_validated(wb, ws):
    from openpyxl.worksheet.datavalidation import DataValidation

    ws.freeze_panes = "B2"
    dv = DataValidation(type="decimal", operator="greaterThan", formula1="0")
    ws.add_data_validation(dv)
    dv.add("B2:B4")


def _second_sheet(wb, ws):
    extra = wb.create_sheet("Notes")
    extra.append(["not", "a", "table"])


def _error(code: str):
    def edit(wb, ws):
        ws["B3"].value = code
        ws["B3"].data_type = "e"
    return edit


def _error_name(wb, ws):
    ws["A3"].value = "#N/A"
    ws["A3"].data_type = "e"


def _errors_everywhere(wb, ws):
    for col, code in zip("BCDEF", ERRORS):
        ws[f"{col}4"].value = code
        ws[f"{col}4"].data_type = "e"


EDITS = {"merged names": _merged_names, "merged numbers": _merged_numbers, "merged header": _merged_header,
         "hidden row": _hidden_row, "hidden column": _hidden_column, "hidden first sheet": _hidden_sheet_first,
         "array formula": _array_formula, "dynamic array": _dynamic_array, "formulas without values": _formulas,
         "table object": _table_object, "frozen and validated": _frozen_validated, "second sheet": _second_sheet,
         "error in a name": _error_name, "errors in every column": _errors_everywhere,
         **{f"error {code}": _error(code) for code in ERRORS}}
CASES = [(name, out) for name in EDITS for out in ("out.csv", "out.xlsx")]


@pytest.mark.parametrize("name, output", CASES, ids=[f"{n} -> {o}" for n, o in CASES])
def test_hostile_xlsx_tables(tmp_path: Path, name: str, output: str):
    path = tmp_path / "table.xlsx"
    _book(EDITS[name]).save(path)
    out = run_case("batch", [str(path), "-o", output, "--json"], tmp_path, area="xlsx")
    if out.code not in (0, 3) or not output.endswith(".csv"):
        return
    import pandas as pd

    table = pd.read_csv(tmp_path / output)
    ok = table[table["status"].astype(str).str.lower().eq("ok")] if "status" in table else table
    # an error or formula cell is never read as a number: row b (B3) holds one in the error/formula cases
    if name.startswith("error #") or name == "formulas without values":
        row_b = ok[ok["name"].astype(str) == "b"]
        assert row_b.empty, f"a row whose stall cell is {name!r} was evaluated: {row_b.to_dict('records')}"
