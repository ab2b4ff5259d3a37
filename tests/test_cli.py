"""The command line: headline numbers, JSON, overrides and readable errors."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ckptplan import engine
from ckptplan import files
from ckptplan.cli import app

runner = CliRunner()


def test_plan_default_prints_reference_numbers():
    res = runner.invoke(app, ["plan"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "job MTBF 20 h  |  stall 2 min  |  restart 10 min" in out  # times as a person says them
    assert "69.3" in out and "5.77%" in out  # Young interval and first-order waste of the seed case
    for word in ("useful", "save", "rework", "restart", "total", "goodput"):
        assert word in out


def test_plan_json_matches_engine():
    res = runner.invoke(app, ["plan", "--checkpoint-stall-min", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    row = engine.evaluate(files.load_scenario("seed").replace(checkpoint_stall_min=0.5)).iloc[0]
    assert data["young_interval_min"] == pytest.approx(34.641, abs=1e-3)
    assert data["total_cost"] == pytest.approx(row["total_cost"], rel=1e-12)
    assert data["currency"] == "USD"


def test_plan_node_overrides():
    res = runner.invoke(app, ["plan", "--nodes", "256", "--node-mtbf-h", "2560", "--json"])
    data = json.loads(res.output)
    assert data["job_mtbf_h"] == 10.0
    assert round(data["young_interval_min"], 1) == 49.0


def test_plan_template_and_async_note():
    res = runner.invoke(app, ["plan", "--template", "async-save"])
    assert res.exit_code == 0
    assert "async is not free" in res.output


def test_plan_bad_input_is_a_readable_error():
    res = runner.invoke(app, ["plan", "--checkpoint-stall-min", "-1"])
    assert res.exit_code == 2
    assert "checkpoint_stall_min=-1.0: must be >= 0" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(app, ["plan", "--template", "missing"])
    assert res.exit_code == 2 and "unknown template" in res.output


def test_templates_command_lists_presets():
    res = runner.invoke(app, ["templates"])
    assert res.exit_code == 0
    for name in files.list_templates():
        assert name in res.output


def test_workbook_command_writes_file_and_prints_headline(tmp_path):
    out = tmp_path / "plan.xlsx"
    res = runner.invoke(app, ["workbook", "-o", str(out), "--deadline-runs", "2000"])
    assert res.exit_code == 0, res.output
    assert out.exists() and "69.3" in res.output and "P(finish)" in res.output
    from openpyxl import load_workbook
    wb = load_workbook(out)
    assert "Deadline" in wb.sheetnames
    assert "2,000 simulated runs, seed 0" in wb["Deadline"]["A2"].value
    again = runner.invoke(app, ["workbook", "-o", str(out), "--no-deadline"])
    assert again.exit_code == 2 and "--force" in again.output
    forced = runner.invoke(app, ["workbook", "-o", str(out), "--no-deadline", "--force", "--template", "llama3-405b"])
    assert forced.exit_code == 0, forced.output
    assert "Deadline" not in load_workbook(out).sheetnames


def test_workbook_from_edited_file_keeps_inputs_and_reports_bad_cells(tmp_path):
    from openpyxl import load_workbook
    out = tmp_path / "plan.xlsx"
    assert runner.invoke(app, ["workbook", "-o", str(out), "--no-deadline"]).exit_code == 0
    wb = load_workbook(out)
    wb["Inputs"]["B6"] = 0.5          # checkpoint_stall_min
    wb.save(out)
    res = runner.invoke(app, ["workbook", "--from", str(out), "-o", str(tmp_path / "v2.xlsx"), "--no-deadline"])
    assert res.exit_code == 0, res.output
    assert "34.6" in res.output  # Young interval at C = 0.5
    wb["Inputs"]["B6"] = "fast"
    wb.save(out)
    bad = runner.invoke(app, ["workbook", "--from", str(out), "-o", str(tmp_path / "v3.xlsx"), "--no-deadline"])
    assert bad.exit_code == 2
    assert "Inputs!B6 (checkpoint_stall_min) = 'fast': must be a number >= 0, not text" in bad.output
    assert not (tmp_path / "v3.xlsx").exists()


def test_deadline_and_workbook_give_the_same_monte_carlo_answers(tmp_path):
    """One scenario, one answer: the same default runs and seed, the same simulation and search."""
    import json as _json

    from openpyxl import load_workbook

    dl = runner.invoke(app, ["deadline", "--runs", "2000", "--json"])
    assert dl.exit_code == 0, dl.output
    data = _json.loads(dl.output)
    wb = runner.invoke(app, ["workbook", "-o", str(tmp_path / "p.xlsx"), "--deadline-runs", "2000"])
    assert wb.exit_code == 0, wb.output
    sheet = load_workbook(tmp_path / "p.xlsx")["Deadline"]
    rows = {sheet.cell(row=r, column=1).value: sheet.cell(row=r, column=2).value for r in range(5, sheet.max_row + 1)}
    assert rows["P(finish by the deadline)"] == data["report"]["p_finish"]
    assert rows["Interval with the best chance of meeting the deadline"] == \
        pytest.approx(data["search"]["best_probability"]["interval_min"], rel=1e-12)
    assert rows["  its P(finish by the deadline)"] == data["search"]["best_probability"]["p_finish"]


def test_plan_deadline_workbook_and_batch_give_the_same_p_finish(tmp_path):
    """The analytic deadline answer is one number on every surface for the seed scenario."""
    import json as _json

    from openpyxl import load_workbook

    from ckptplan.engine import batch as eb

    plan = _json.loads(runner.invoke(app, ["plan", "--json"]).output)["p_finish_by_deadline"]
    deadline = _json.loads(runner.invoke(app, ["deadline", "--runs", "500", "--json"]).output)["analytic"]
    assert runner.invoke(app, ["workbook", "-o", str(tmp_path / "p.xlsx"), "--no-deadline"]).exit_code == 0
    book = load_workbook(tmp_path / "p.xlsx", data_only=True)  # the cached values, no recalculation
    sheet, cell = next(iter(book.defined_names["p_finish_by_deadline"].destinations))
    in_book = book[sheet][cell.replace("$", "")].value
    row = eb.evaluate_rows(files.load_scenario("seed")).iloc[0]
    assert 0.5 < plan < 1
    for other in (deadline["p_finish_by_deadline"], in_book, row["p_finish_by_deadline"]):
        assert other == pytest.approx(plan, rel=1e-12)


def test_plan_says_when_the_answer_leaves_the_models_range():
    import json as _json

    seed = _json.loads(runner.invoke(app, ["plan", "--json"]).output)
    assert seed["warnings"] == []
    huge = runner.invoke(app, ["plan", "--nodes", "100000", "--json"])
    assert huge.exit_code == 0
    warnings = _json.loads(huge.output)["warnings"]
    assert any("failure or more is expected per segment" in w for w in warnings)
    assert any("more than 50% of the wall time" in w for w in warnings)
    toy = runner.invoke(app, ["plan", "--checkpoint-stall-min", "0.0001", "--nodes", "128"], env={"COLUMNS": "200"})
    assert "warning:" in toy.output and "small model" in toy.output


def test_text_from_a_scenario_file_is_printed_literally_never_as_markup(tmp_path):
    hostile = "[link=https://evil.example]Click[/link] [bold red]x"
    path = tmp_path / "evil.toml"
    path.write_text(f'[scenario]\nname = "{hostile}"\ndescription = "{hostile}"\ncheckpoint_stall_min = 2.0\n'
                    'nodes = 8\nuseful_training_h = 10.0\nprice_per_gpu_hour = 1.0\nnode_mtbf_h = 1000.0\n')
    for args in (["plan", "--scenario", str(path)], ["deadline", "--scenario", str(path), "--deadline-h", "12",
                                                     "--runs", "200"]):
        res = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert res.exit_code == 0, res.output
        assert hostile in res.output


def test_times_read_in_the_unit_a_person_would_say():
    """One formatter for every printed duration: seconds below a minute, minutes below two hours, hours
    from there on (never days), three significant digits; --json keeps each field's unit."""
    from ckptplan.common import duration, kept

    assert [duration(m) for m in (0.04725, 0.5, 2, 40.6044, 67.96, 185.3, 1200, 46176, None, float("nan"))] == \
        ["2.83 s", "30 s", "2 min", "40.6 min", "68 min", "3.09 h", "20 h", "769.6 h", "-", "-"]
    assert kept(3, 1) == "last 3, 1 copy each" and kept(1, 2) == "latest only, 2 copies"
    res = runner.invoke(app, ["plan", "-t", "llama3-405b-storage"], env={"COLUMNS": "160"})
    assert res.exit_code == 0, res.output
    assert "stall 2.83 s" in res.output and "restart 27 min" in res.output and "0.04725" not in res.output
    assert "last 3, 1 copy each" in res.output and "x1" not in res.output
    as_json = json.loads(runner.invoke(app, ["plan", "-t", "llama3-405b-storage", "--json"]).output)
    assert as_json["effective_stall_min"] == pytest.approx(0.04725, rel=1e-9)  # JSON: the field's own unit


STEP_LOG = str(Path(__file__).resolve().parents[1] / "templates" / "example-step-log.csv")


@pytest.mark.parametrize("args", [["compare", "-t", "llama3-405b-storage"], ["plan", "-t", "llama3-405b-storage"],
                                  ["actual", STEP_LOG, STEP_LOG]])
def test_narrow_terminals_get_whole_figures(args, monkeypatch):
    """At 80 columns a table too wide to fit wraps names and leaves columns out (saying which): no figure is cut."""
    from ckptplan import common

    monkeypatch.setattr(common.console, "width", 80)  # the console was sized when the CLI was imported
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "…" not in res.output and max(len(line) for line in res.output.splitlines()) <= 80
