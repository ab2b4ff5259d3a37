"""Workbook structure, files (no overwrite, atomic), and regenerating from an edited workbook."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from openpyxl import load_workbook

from ckptplan import engine
from ckptplan import files
from ckptplan import workbook
from ckptplan.files import OutputExistsError, atomic_write
from ckptplan.workbook.read import WorkbookInputError, read_inputs, read_readiness

SEED = files.load_scenario("seed")


def test_sheets_names_styles_and_validation(tmp_path):
    built = workbook.write_workbook(tmp_path / "plan.xlsx", SEED)
    wb = load_workbook(tmp_path / "plan.xlsx")
    assert wb.sheetnames[:5] == ["Inputs", "Plan", "Interval curve", "Scaling", "Compare"]
    assert {"Readiness", "Notes"} <= set(wb.sheetnames)
    for name in ("job_mtbf_h", "young_interval_min", "daly_interval_min", "waste_fraction", "total_gpu_hours",
                 "total_cost", "checkpoint_stall_min", "node_mtbf_h", "nodes", "price_per_gpu_hour"):
        assert name in wb.defined_names, name
    ws = wb["Inputs"]
    validated = {str(c) for dv in ws.data_validations.dataValidation for c in dv.sqref.ranges}
    for key in ("checkpoint_stall_min", "async_slowdown_fraction", "nodes"):
        sheet, cell = built.input_cells[key].split("!")
        c = ws[cell.replace("$", "")]
        assert c.font.color.rgb.endswith("0000FF") and c.fill.fgColor.rgb.endswith("FFF2CC")
        assert cell.replace("$", "") in validated
    dv = next(dv for dv in ws.data_validations.dataValidation if "B6" in {str(r) for r in dv.sqref.ranges})
    assert dv.showErrorMessage and dv.showInputMessage and dv.error and dv.prompt
    # every Plan formula is a formula, no literal numbers typed into Plan
    plan = wb["Plan"]
    for row in plan.iter_rows(min_row=5, min_col=2, max_col=2):
        for c in row:
            assert c.value is None or str(c.value).startswith("=")
    assert wb["Interval curve"]._charts and wb["Scaling"]._charts


def test_refuses_to_overwrite_and_never_half_writes(tmp_path):
    out = tmp_path / "plan.xlsx"
    out.write_bytes(b"the user's own file")
    with pytest.raises(OutputExistsError, match="--force"):
        workbook.write_workbook(out, SEED)
    assert out.read_bytes() == b"the user's own file"

    def crash(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(out, crash, force=True)
    assert out.read_bytes() == b"the user's own file"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.xlsx"]  # no temporary left behind
    workbook.write_workbook(out, SEED, force=True)
    assert load_workbook(out).sheetnames[0] == "Inputs"


def test_regenerate_from_edited_workbook_keeps_inputs(tmp_path):
    built = workbook.write_workbook(tmp_path / "plan.xlsx", SEED)
    wb = load_workbook(tmp_path / "plan.xlsx")
    edits = {"checkpoint_stall_min": 0.75, "nodes": 512, "domain1_mtbf_h": 25000, "domain1_nodes_per_domain": 32,
             "alt1:set:async_write_min": 3.0, "alt2:times:restart_min": 0.5}
    for key, value in edits.items():
        sheet, cell = built.input_cells[key].split("!")
        wb[sheet][cell.replace("$", "")] = value
    wb["Readiness"]["C5"] = "restore tested"
    wb["Readiness"]["D5"] = "run 42, 2026-11-30"
    wb.save(tmp_path / "edited.xlsx")

    sc, designs = read_inputs(tmp_path / "edited.xlsx")
    assert (sc.checkpoint_stall_min, sc.nodes) == (0.75, 512)
    assert sc.domains[0].mtbf_h == 25000 and sc.domains[0].nodes_per_domain == 32
    alt = designs[0].apply(sc)  # an alternative is changes on the (edited) baseline
    assert alt.async_write_min == 3.0 and alt.checkpoint_stall_min == 0.75 / 4 and alt.nodes == 512
    assert designs[1].times == {"nodes": 2.0, "useful_training_h": 0.5, "restart_min": 0.5}
    kept = read_readiness(tmp_path / "edited.xlsx")
    assert kept["Model weights"] == ("restore tested", "run 42, 2026-11-30")
    again = workbook.write_workbook(tmp_path / "again.xlsx", sc, designs=designs, readiness=kept)
    assert again.designs == designs
    wb2 = load_workbook(tmp_path / "again.xlsx")
    sheet, cell = again.input_cells["checkpoint_stall_min"].split("!")
    assert wb2[sheet][cell.replace("$", "")].value == 0.75
    assert wb2["Readiness"]["C5"].value == "restore tested"


def test_invalid_inputs_are_all_reported_by_sheet_cell_and_rule(tmp_path):
    built = workbook.write_workbook(tmp_path / "plan.xlsx", SEED)
    wb = load_workbook(tmp_path / "plan.xlsx")
    bad = {"checkpoint_stall_min": -2, "nodes": 12.5, "node_mtbf_h": "lots", "restart_min": "=1/0",
           "useful_training_h": None, "alt1:set:async_slowdown_fraction": 1.5}
    for key, value in bad.items():
        sheet, cell = built.input_cells[key].split("!")
        wb[sheet][cell.replace("$", "")] = value
    wb.save(tmp_path / "bad.xlsx")
    with pytest.raises(WorkbookInputError) as info:
        read_inputs(tmp_path / "bad.xlsx")
    msg = str(info.value)
    assert "6 invalid input(s)" in msg
    for key in ("checkpoint_stall_min", "nodes", "node_mtbf_h", "restart_min", "useful_training_h",
                "alt1_set_async_slowdown_fraction"):
        assert f"({key})" in msg
    sheet, cell = built.input_cells["checkpoint_stall_min"].split("!")
    assert f"{sheet}!{cell.replace('$', '')} (checkpoint_stall_min) = -2: must be a number >= 0" in msg
    assert "holds a formula" in msg and "not text" in msg and "whole number" in msg and "is required" in msg


def test_untrusted_files_are_refused_cleanly(tmp_path):
    assert openpyxl.DEFUSEDXML, "defusedxml must be installed so openpyxl parses untrusted XML safely"
    junk = tmp_path / "junk.xlsx"
    junk.write_bytes(b"not a zip")
    with pytest.raises(engine.InputError, match="not a readable .xlsx"):
        read_inputs(junk)
    # a billion-laughs entity bomb in the workbook part or in a worksheet part is refused, not expanded
    import zipfile
    good = tmp_path / "good.xlsx"
    workbook.write_workbook(good, SEED)
    for target in ("xl/workbook.xml", "xl/worksheets/sheet1.xml"):
        bomb = tmp_path / "bomb.xlsx"
        with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bomb, "w") as zout:
            for item in zin.infolist():
                data = zin.read(item.filename)
                if item.filename == target:
                    body = data.split(b"?>", 1)[1] if data.startswith(b"<?xml") else data
                    data = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                            b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>' + body)
                zout.writestr(item, data)
        with pytest.raises(engine.InputError, match="refused as unsafe XML"):
            read_inputs(bomb)
    with pytest.raises(engine.InputError, match="not a ckptplan planning workbook|invalid input"):
        other = tmp_path / "other.xlsx"
        openpyxl.Workbook().save(other)
        read_inputs(other)


def test_workbook_rejects_too_many_domains():
    doms = tuple(engine.FailureDomain(f"d{i}", 1e5, 8) for i in range(4))
    with pytest.raises(engine.InputError, match="at most 3"):
        workbook.build_workbook(SEED.replace(domains=doms))
