"""The workbook on preemptible capacity: the Spot sheet's search finds the engine's optimum to the engine's own
resolution, the Compare sheet's capacity block holds the engine's Monte Carlo and says when an input changed
since, a workbook without preemptions says so, and `--from` carries the preemption fields (plan --json equal).

(Every Spot-sheet figure against engine.evaluate, as generated and after typed edits: test_workbook_recalc.)"""

from __future__ import annotations

import json
import numpy as np
import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import engine, files, workbook
from ckptplan.cli import app
from ckptplan.engine.preemption import preemption_cycle
from ckptplan.engine.spot import scenario_capacity
from ckptplan.workbook.build import scenario_inputs
from ckptplan.workbook.flags import UP_TO_DATE
from ckptplan.workbook.recalc import error_cells, recalculate, soffice
from same_json import same_json

SPOT = files.load_scenario("seed").replace(name="spot", preemptions_per_h=0.08, preemption_notice_min=5.0,
                                           capacity_wait_min=25.0, spot_price_per_gpu_hour=0.9)
runner = CliRunner()


def _named(wb, name: str):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")].value


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory):
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("out")
    capacity = scenario_capacity(SPOT, runs=400)
    built = workbook.write_workbook(src / "spot.xlsx", SPOT, capacity=capacity)
    wb = load_workbook(src / "spot.xlsx")
    sheet, cell = built.input_cells["preemptions_per_h"].split("!")
    wb[sheet][cell.replace("$", "")] = 0.2
    wb.save(src / "edited.xlsx")
    workbook.write_workbook(src / "plain.xlsx", files.load_scenario("seed"))
    paths = [src / "spot.xlsx", src / "edited.xlsx", src / "plain.xlsx"]
    return capacity, {p.stem: load_workbook(o, data_only=True) for p, o in zip(paths, recalculate(paths, out))}


def _objective(T: float, sc) -> float:
    """The engine's expected wall time per unit of work at interval T, for ``sc``'s spot inputs (the search
    minimises its logarithm)."""
    row = engine.evaluate(sc.replace(preemptions_per_h=None)).iloc[0]
    c = preemption_cycle(T, sc.checkpoint_stall_min, row["job_mtbf_h"] * 60, sc.restart_min, 60 / sc.preemptions_per_h,
                         sc.preemption_notice_min, sc.capacity_wait_min)
    return float(c["time"] / c["work"])


@pytest.mark.parametrize("name,rate", [("spot", 0.08), ("edited", 0.2)])
def test_the_sheets_interval_is_the_engines_optimum_to_rounding(recalculated, name, rate):
    """Both searches stop where the objective is flat to rounding: the sheet's interval is as good as the engine's
    to a few ulps of the objective, and the expectation there agrees to 1e-12."""
    _, books = recalculated
    sc = SPOT.replace(preemptions_per_h=rate)
    want = engine.evaluate(sc).iloc[0]
    got = _named(books[name], "spot_exact_interval_min")
    f_got, f_want = _objective(got, sc), _objective(want["exact_interval_min"], sc)
    assert abs(f_got / f_want - 1) <= 16 * np.finfo(float).eps
    assert got == pytest.approx(want["exact_interval_min"], rel=engine.preemption.INTERVAL_RTOL)
    assert _named(books[name], "spot_wall_h") == pytest.approx(want["wall_h"], rel=1e-12)
    assert error_cells_in(books[name]) == []


def error_cells_in(wb) -> list:
    return [(ws.title, c.coordinate) for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if isinstance(c.value, str) and c.value.startswith(("#DIV/0!", "#N/A", "#NAME?", "#NUM!", "#VALUE!", "Err:"))]


def test_the_capacity_block_holds_the_simulation_and_flags_an_edit(recalculated):
    capacity, books = recalculated
    wb = books["spot"]
    ws = wb["Compare"]
    rows = {ws.cell(row=r, column=1).value: r for r in range(1, ws.max_row + 1)}
    for key, label in (("on-demand", "all on-demand"), ("spot", "all spot"), ("fallback", "spot, on-demand fallback")):
        f = capacity["policies"][key]
        got = [ws.cell(row=rows[label], column=c).value for c in range(2, 8)]
        assert got == pytest.approx([f["interval_min"], f["p_finish_by_deadline"], f["wall_h_p50"], f["wall_h_p90"],
                                     f["cost_p50"], f["cost_p90"]], rel=1e-14)   # as LibreOffice writes them
    assert _named(wb, "capacity_status") == UP_TO_DATE
    stale = _named(books["edited"], "capacity_status")
    assert stale.startswith("OUT OF DATE") and "preemptions_per_h" in stale
    assert _named(books["spot"], "spot_status").startswith("spot capacity")


def test_a_workbook_without_preemptions_says_the_plan_sheet_is_the_plan(recalculated):
    _, books = recalculated
    wb = books["plain"]
    assert _named(wb, "spot_status").startswith("no preemptions given")
    assert str(_named(wb, "spot_wall_h")).startswith("n/a")
    rows = [c.value for c in wb["Compare"]["A"] if c.value]
    assert any(str(v).startswith("Left out: the scenario has no preemptions_per_h") for v in rows)


def test_refusals_by_name_in_the_status(tmp_path):
    """A background write is refused by name in the sheet (the engine refuses it too), not planned silently."""
    if soffice() is None:
        pytest.skip("LibreOffice not installed")
    sc = SPOT.replace(async_write_min=4.0)
    with pytest.raises(engine.InputError, match="async_write_min"):
        engine.evaluate(sc)
    built = workbook.write_workbook(tmp_path / "a.xlsx", SPOT)
    wb = load_workbook(tmp_path / "a.xlsx")
    sheet, cell = built.input_cells["async_write_min"].split("!")
    wb[sheet][cell.replace("$", "")] = 4.0
    wb.save(tmp_path / "b.xlsx")
    out = recalculate([tmp_path / "b.xlsx"], tmp_path / "out")[0]
    assert _named(load_workbook(out, data_only=True), "spot_status").startswith("refused: async_write_min")
    assert error_cells(out) == []


def _cli(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


def test_an_unedited_round_trip_keeps_the_preemption_fields(tmp_path):
    """`workbook --from` reads the preemption fields back: plan --json of the emitted scenario equals the original's
    to 1e-9 (the simulated deadline answer included)."""
    src = tmp_path / "spot.toml"
    src.write_text('name = "spot"\nnodes = 128\nnode_mtbf_h = 2560\ncheckpoint_stall_min = 2\nrestart_min = 10\n'
                   'useful_training_h = 200\nprice_per_gpu_hour = 2.5\ndeadline_h = 240\npreemptions_per_h = 0.08\n'
                   'preemption_notice_min = 5\ncapacity_wait_min = 25\nspot_price_per_gpu_hour = 0.9\n')
    book, back = tmp_path / "spot.xlsx", tmp_path / "back.toml"
    _cli("workbook", "--scenario", str(src), "-o", str(book), "--no-deadline")
    _cli("workbook", "--from", str(book), "-o", str(tmp_path / "again.xlsx"), "--no-deadline", "--emit-scenario",
         str(back))
    got, want = (json.loads(_cli("plan", "--scenario", str(p), "--json")) for p in (back, src))
    assert want["deadline_method"] == "simulated" and want["expected_preemptions"] > 0
    same_json(got, want)
    sc = workbook.read_inputs(book)[0]
    assert (sc.preemptions_per_h, sc.preemption_notice_min, sc.capacity_wait_min, sc.spot_price_per_gpu_hour) == (
        0.08, 5.0, 25.0, 0.9)
    assert scenario_inputs(sc)["preemptions_per_h"] == 0.08


