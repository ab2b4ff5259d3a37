"""`ckptplan actual`: plan versus actual from step-level logs (issue 13)."""

from __future__ import annotations

import json

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.cli import app
from ckptplan.cli_actual import compare_log
from ckptplan.files.steplogs import synthetic_step_log

runner = CliRunner()
SEED = files.load_scenario("seed")          # C = 2 min, R = 10 min, job MTBF 20 h, 1,024 GPUs
PHASES = {"detection": 2.0, "reallocation": 3.0, "startup": 2.0, "init": 1.0, "load": 1.0, "warmup": 1.0}
PLAN_T = float(engine.evaluate(SEED).iloc[0]["chosen_interval_min"])


def _log(tmp_path, name="job.csv", seed=1, phases=PHASES, stall_s=120.0, running_h=2000.0):
    df = synthetic_step_log(running_h=running_h, mtbf_h=20.0, step_s=60.0, checkpoint_every_min=PLAN_T,
                            checkpoint_stall_s=stall_s, restart_phases_min=phases, seed=seed, jitter=0.05)
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def test_a_log_generated_from_the_plan_matches_it_within_noise(tmp_path):
    split, v = compare_log(_log(tmp_path), SEED)
    t = v.totals
    # the waste differs from the plan's by chance only: well within 10 % of the planned waste
    assert abs(t["difference_h"]) < 0.10 * t["planned_waste_h"]
    m = split.measured
    assert m["checkpoint_stall_min"] == pytest.approx(2.0, rel=0.03)
    assert m["restart_min"] == pytest.approx(10.0, rel=0.1)
    assert m["job_mtbf_h_low"] < 20.0 < m["job_mtbf_h_high"]


@pytest.mark.parametrize("what", ["restart", "stall"])
def test_longer_restarts_or_stalls_show_with_the_right_sign_and_size(tmp_path, what):
    if what == "restart":
        path = _log(tmp_path, phases={**PHASES, "reallocation": 13.0})   # restart 20 min instead of 10
    else:
        path = _log(tmp_path, stall_s=240.0)                             # stall 4 min instead of 2
    split, v = compare_log(path, SEED)
    by = {b["bucket"]: b for b in v.buckets}
    if what == "restart":
        extra_h = split.measured["failures"] * 10.0 / 60.0
        assert by["restart"]["difference_h"] == pytest.approx(extra_h, rel=0.2)
        e = next(e for e in v.explanations if e["input"] == "restart_min")
        assert e["ratio"] == pytest.approx(2.0, rel=0.1) and e["effect_h"] > 0 and "restarts took" in e["text"]
    else:
        extra_h = split.measured["saves"] * 2.0 / 60.0  # each save stalled 2 min longer than planned
        assert by["save_blocking"]["difference_h"] == pytest.approx(extra_h, rel=0.1)
        e = next(e for e in v.explanations if e["input"] == "checkpoint_stall_min")
        assert e["ratio"] == pytest.approx(2.0, rel=0.05) and e["effect_h"] > 0
    b = by["restart" if what == "restart" else "save_blocking"]
    assert b["difference_money"] == pytest.approx(b["difference_h"] * 1024 * SEED.price_per_gpu_hour)


def test_actual_json_has_the_measured_object(tmp_path):
    res = runner.invoke(app, ["actual", str(_log(tmp_path, running_h=300.0)), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    for key in ("checkpoint_stall_min", "async_write_min", "async_slowdown_fraction", "restart_min", "job_mtbf_h",
                "goodput"):
        assert key in out["measured"]
    assert out["measured"]["goodput"] == out["split"]["goodput"]
    assert {b["bucket"] for b in out["plan_vs_actual"]["buckets"]} >= {"productive", "rework", "restart"}


def test_emit_scenario_writes_the_measured_inputs_and_never_overwrites(tmp_path):
    log = _log(tmp_path, running_h=300.0)
    out = tmp_path / "measured.toml"
    res = runner.invoke(app, ["actual", str(log), "--emit-scenario", str(out)])
    assert res.exit_code == 0, res.output
    sc = files.load_scenario(out)
    assert sc.checkpoint_stall_min == pytest.approx(2.0, rel=0.05) and sc.job_mtbf_h is not None
    again = runner.invoke(app, ["actual", str(log), "--emit-scenario", str(out)])
    assert again.exit_code == 2 and "exists" in again.output
    assert runner.invoke(app, ["actual", str(log), "--emit-scenario", str(out), "--force"]).exit_code == 0


def test_several_logs_give_one_row_per_job(tmp_path):
    logs = [_log(tmp_path, f"job{i}.csv", seed=i, running_h=200.0) for i in range(3)]
    out = tmp_path / "jobs.csv"
    res = runner.invoke(app, ["actual", *map(str, logs), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["jobs"]
    assert [r["log"] for r in rows] == [str(p) for p in logs]
    import pandas as pd
    assert len(pd.read_csv(out)) == 3


def test_malformed_logs_list_every_bad_row_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,event,cause,step\n2024-03-01T00:00:00,start,,0\n2024-03-01T00:01:00,step,,x\n"
                   "2024-03-01T00:02:00,teleport,,\n2024-03-01T00:00:30,step,,2\n")
    res = runner.invoke(app, ["actual", str(bad)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    for row in ("row 3", "row 4", "row 5"):
        assert row in res.output
    good = _log(tmp_path, running_h=100.0)
    both = runner.invoke(app, ["actual", str(good), str(bad), "--json"])
    assert both.exit_code == 2 and json.loads(both.stdout)["jobs"][0]["log"] == str(good)


def test_workbook_gets_a_plan_vs_actual_sheet(tmp_path):
    out = tmp_path / "plan.xlsx"
    res = runner.invoke(app, ["workbook", "--log", str(_log(tmp_path, running_h=200.0)), "-o", str(out),
                              "--no-deadline"])
    assert res.exit_code == 0, res.output
    ws = load_workbook(out)["Plan vs actual"]
    labels = [ws.cell(row=r, column=1).value for r in range(1, ws.max_row + 1)]
    assert "productive" in labels and "Waste (everything but productive)" in labels


def test_the_shipped_example_log_says_what_the_readme_quotes():
    from pathlib import Path

    _, v = compare_log(files.template_path("example-step-log.csv"), SEED)
    text = next(e["text"] for e in v.explanations if e["input"] == "restart_min")
    assert text == "restarts took 2x the planned 10 min: +779 GPU-hours, +1,949 USD"
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f'"{text}"' in readme.replace("\n", " ").replace("  ", " ")
