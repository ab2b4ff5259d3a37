"""The workbook's checks point at the bad input first, recalculated by LibreOffice.

A planner edits the default workbook: a node count typed as text and a negative stall on the Inputs sheet, a
factor typed as "x2" in a Compare "x baseline" cell. The Plan sheet's Model check names the inputs (not
"the job would never finish", what the bad inputs did further down); the Compare input check says what the
change cell expected (not #VALUE!), and that column's Model check sends the reader to it.
"""

from __future__ import annotations

import pytest
from openpyxl import load_workbook

from ckptplan import files, workbook
from ckptplan.workbook.flags import NEVER_FINISHES
from ckptplan.workbook.recalc import recalculate, soffice

pytestmark = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed (scripts/test.sh installs it)")

SEED = files.load_scenario("seed")


def _cell(ref: str) -> tuple[str, str]:
    sheet, cell = ref.split("!")
    return sheet, cell.replace("$", "")


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("checks")
    built = workbook.write_workbook(tmp / "plan.xlsx", SEED)
    wb = load_workbook(tmp / "plan.xlsx")
    for key, value in {"nodes": "128 nodes", "checkpoint_stall_min": -1}.items():
        sheet, cell = _cell(built.input_cells[key])
        wb[sheet][cell] = value
    sheet, cell = _cell(built.input_cells["alt1:times:nodes"])
    wb[sheet][cell] = "x2"
    sheet, cell = _cell(built.input_cells["alt2:set:restart_min"])
    wb[sheet][cell] = 5.0  # a good change beside it: that column stays computed
    wb.save(tmp / "edited.xlsx")
    # the same edit on the Compare sheet only: the baseline stays valid
    wb = load_workbook(tmp / "plan.xlsx")
    sheet, cell = _cell(built.input_cells["alt1:times:nodes"])
    wb[sheet][cell] = "x2"
    wb.save(tmp / "compare_only.xlsx")
    # the storage template (a tiered baseline, four designs): the same bad inputs
    plan = files.load_plan("llama3-405b-storage")
    stored = workbook.write_workbook(tmp / "storage.xlsx", plan.scenario, setup=plan.setup, designs=plan.designs)
    wb = load_workbook(tmp / "storage.xlsx")
    for key, value in {"nodes": "1024 nodes", "checkpoint_stall_min": -1}.items():
        sheet, cell = _cell(stored.input_cells[key])
        wb[sheet][cell] = value
    wb.save(tmp / "storage-edited.xlsx")
    outs = recalculate([tmp / "edited.xlsx", tmp / "compare_only.xlsx", tmp / "storage-edited.xlsx"], tmp / "out")
    return built, [load_workbook(o, data_only=True) for o in outs]


def _compare_rows(ws) -> dict[str, int]:
    return {ws.cell(row=r, column=1).value: r for r in range(1, ws.max_row + 1)
            if isinstance(ws.cell(row=r, column=1).value, str)}


def test_plan_model_check_names_the_bad_inputs(edited):
    _, (wb, _, _) = edited
    plan = wb["Plan"]
    assert plan["B3"].value == "checkpoint_stall_min must be a number >= 0; nodes must be a whole number >= 1; "
    model = plan["D3"].value
    assert model.startswith("check the inputs first: checkpoint_stall_min must be a number >= 0; nodes must be")
    assert NEVER_FINISHES not in model


def test_compare_change_cell_says_what_it_expected(edited):
    from ckptplan.workbook.compare_sheet import value_column

    _, (wb, only, _) = edited
    for book in (wb, only):
        ws = book["Compare"]
        rows = _compare_rows(ws)
        check = rows["Input check (each alternative's inputs against their rules)"]
        model = rows["Model check (where the answer leaves the models' range)"]
        text = ws.cell(row=check, column=value_column(1)).value
        assert text == "nodes: 'x baseline' takes a factor such as 2 or 0.5, not x2; ", text
        assert ws.cell(row=model, column=value_column(1)).value == "check the inputs first: " + text
        for col in range(1, ws.max_column + 1):  # no error value in any check cell
            for r in (check, model):
                v = ws.cell(row=r, column=col).value
                assert not (isinstance(v, str) and v.startswith("#")), (r, col, v)
    # with a valid baseline, the other alternatives and the baseline are computed and checked as before
    ws = only["Compare"]
    rows = _compare_rows(ws)
    check = rows["Input check (each alternative's inputs against their rules)"]
    assert ws.cell(row=check, column=3).value == "OK" and ws.cell(row=check, column=value_column(2)).value == "OK"
    assert only["Plan"]["D3"].value == "OK" or not only["Plan"]["D3"].value.startswith("check the inputs")


def _names_them(text: str) -> bool:
    """The check names both bad inputs first (a design column doubling the text node count: "nodes is an error
    value")."""
    return text.startswith("check the inputs first: checkpoint_stall_min must be a number >= 0; ") and any(
        b in text for b in ("; nodes must be a whole number >= 1; ", "; nodes is an error value; "))


def _model_checks(ws, head: str, by_row: bool) -> list[str]:
    """The model-check cells of a sheet: the column under the header ``head`` (Scaling) or the row labelled
    ``head`` (Storage & recovery), every non-empty one."""
    for row in ws.iter_rows():
        for c in row:
            if c.value == head:
                cells = ([ws.cell(row=r, column=c.column) for r in range(c.row + 1, ws.max_row + 1)] if by_row else
                         [ws.cell(row=c.row, column=col) for col in range(4, ws.max_column + 1)])
                out = []
                for x in cells:
                    if x.value in (None, ""):
                        if by_row:
                            break
                        continue
                    out.append(x.value)
                return out
    raise AssertionError(f"no {head!r} on {ws.title}")


def test_scaling_and_storage_checks_name_the_bad_inputs(edited):
    """Issue 26: the Scaling rows and the Storage & recovery columns name the bad inputs first (not "never finishes"
    or an overflow), on the default workbook and on the storage template's (a tiered baseline and four designs)."""
    _, (wb, _, storage) = edited
    for book, n_design_cols in ((wb, 1), (storage, 5)):
        rows = _model_checks(book["Scaling"], "Model check", by_row=True)
        assert len(rows) >= 8 and all(map(_names_them, rows)), rows
        cols = _model_checks(book["Storage & recovery"], "Model check (keys: see the legend at the bottom)",
                             by_row=False)
        assert len(cols) == n_design_cols and all(map(_names_them, cols)), cols
        for v in rows + cols:
            assert NEVER_FINISHES not in v and "overflow" not in v, v
