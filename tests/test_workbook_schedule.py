"""The workbook with failure phases: the Schedule sheet holds the engine's schedule, its phases are inputs read back
by `--from` (an unedited round trip reproduces plan --json, the schedule included, to 1e-9), and after an edit
of a phase (recalculated in LibreOffice) its status says the schedule is out of date, naming the cells."""

from __future__ import annotations

import json

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import engine, workbook
from ckptplan.cli import app
from ckptplan.engine.phases import FailurePhase
from ckptplan.workbook.flags import UP_TO_DATE
from ckptplan.workbook.read import WorkbookInputError
from ckptplan.workbook.recalc import error_cells, recalculate, soffice
from same_json import same_json

TOML = ('name = "burn-in"\nnodes = 64\nnode_mtbf_h = 2560\ncheckpoint_stall_min = 2\nrestart_min = 10\n'
        'useful_training_h = 60\nprice_per_gpu_hour = 2.5\ndeadline_h = 75\n'
        '[[failure_phases]]\nstart_h = 0\nrate_factor = 4\n[[failure_phases]]\nstart_h = 24\nrate_factor = 1\n')
PHASED = engine.Scenario(name="burn-in", nodes=64, node_mtbf_h=2560.0, checkpoint_stall_min=2.0, restart_min=10.0,
                         useful_training_h=60.0, price_per_gpu_hour=2.5, deadline_h=75.0,
                         failure_phases=(FailurePhase(0.0, 4.0), FailurePhase(24.0, 1.0)))
runner = CliRunner()


def _cli(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


def _named_cell(wb, name: str):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")]


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("schedule")
    workbook.write_workbook(out / "phased.xlsx", PHASED)
    return out / "phased.xlsx"


def test_the_schedule_table_is_the_engines(book):
    row = engine.evaluate(PHASED).iloc[0]
    ws = load_workbook(book)["Schedule"]
    cells = {c.coordinate: c.value for r in ws.iter_rows() for c in r if c.value is not None}
    values = [v for v in cells.values() if isinstance(v, float)]

    def shown(x):   # a value the sheet holds (openpyxl writes 15 significant digits)
        return any(v == pytest.approx(float(x), rel=1e-14) for v in values)

    for i in (1, 2):
        assert shown(row[f"schedule{i}_interval_min"])
    for key in ("wall_h", "single_interval_min", "single_interval_wall_h", "waste_fraction"):
        assert shown(row[key]), key
    assert shown(row["wall_h"] * row["gpus"] * row["price_per_gpu_hour"])
    assert row["wall_h"] <= row["single_interval_wall_h"]
    assert [_named_cell(load_workbook(book), f"phase{i}_{p}").value for i in (1, 2) for p in ("start_h", "rate_factor")
            ] == [0.0, 4.0, 24.0, 1.0]
    assert _named_cell(load_workbook(book), "phase3_start_h").value is None   # a spare row to add a phase


def test_an_edited_phase_puts_the_schedule_out_of_date_and_is_read_back(book, tmp_path):
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    wb = load_workbook(book)
    _named_cell(wb, "phase2_start_h").value = 36.0
    _named_cell(wb, "phase2_rate_factor").value = 1.5
    _named_cell(wb, "phase3_start_h").value = 48.0
    _named_cell(wb, "phase3_rate_factor").value = 0.5
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    plain, changed = recalculate([book, edited], tmp_path / "out")
    assert _named_cell(load_workbook(plain, data_only=True), "schedule_status").value == UP_TO_DATE
    status = _named_cell(load_workbook(changed, data_only=True), "schedule_status").value
    assert status.startswith("OUT OF DATE") and "phase2_start_h" in status and "phase3_rate_factor" in status
    assert error_cells(changed) == []
    sc = workbook.read_inputs(edited)[0]
    assert sc.failure_phases == (FailurePhase(0.0, 4.0), FailurePhase(36.0, 1.5), FailurePhase(48.0, 0.5))


def test_a_half_given_or_bad_phase_is_reported_by_cell(book, tmp_path):
    wb = load_workbook(book)
    _named_cell(wb, "phase3_start_h").value = 40.0
    _named_cell(wb, "phase2_rate_factor").value = -1.0
    wb.save(tmp_path / "bad.xlsx")
    with pytest.raises(WorkbookInputError) as err:
        workbook.read_inputs(tmp_path / "bad.xlsx")
    text = str(err.value)
    assert "phase3" in text and "give both" in text and "phase2_rate_factor" in text


def test_an_unedited_round_trip_reproduces_plan_json(tmp_path):
    src, first, back = tmp_path / "burn-in.toml", tmp_path / "first.xlsx", tmp_path / "back.toml"
    src.write_text(TOML)
    _cli("workbook", "--scenario", str(src), "-o", str(first), "--no-deadline")
    _cli("workbook", "--from", str(first), "-o", str(tmp_path / "again.xlsx"), "--no-deadline", "--emit-scenario",
         str(back))
    got, want = (json.loads(_cli("plan", "--scenario", str(p), "--json")) for p in (back, src))
    assert len(want["schedule"]) == 2 and want["deadline_method"] == "simulated"
    same_json(got, want)


