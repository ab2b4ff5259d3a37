"""Reading interruption logs (ckptplan.files.logs), reading and fitting end to end, the example log and the
`ckptplan fit` command (ckptplan.cli_fit). The estimators alone: test_fitting.py."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from scipy import stats
from typer.testing import CliRunner

from ckptplan import engine
from ckptplan import files
from ckptplan.engine.fitting import fit_events, run_segments
from ckptplan.files import logs
from ckptplan.files.logs import LogError, fit_log, read_log, synthetic_log

TEMPLATE_LOG = files.TEMPLATE_DIR / "example-interruption-log.csv"
HEADER = "timestamp,event,cause,checkpoint_stall_s,step\n"


def write(tmp_path: Path, text: str, name: str = "log.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# A hand-made log whose every statistic is worked out by hand below.
HAND_LOG = HEADER + """\
2024-01-01T00:00:00,start,,,0
2024-01-01T01:00:00,checkpoint_saved,,30,100
2024-01-01T02:00:00,checkpoint_saved,,90,200
2024-01-01T02:30:00,interruption,hardware,,250
2024-01-01T02:40:00,restart_complete,,,200
2024-01-01T03:40:00,checkpoint_saved,,60,300
2024-01-01T04:10:00,interruption,Planned,,350
2024-01-01T04:30:00,restart_complete,,,300
2024-01-01T04:45:00,interruption,,,315
2024-01-01T05:15:00,restart_complete,,,300
2024-01-01T07:15:00,checkpoint_saved,,120,500
2024-01-01T08:15:00,checkpoint_saved,,,600
2024-01-01T09:00:00,end,,,
"""


# ----------------------------------------------------------------------------- hand-checked log

def test_hand_log_segments(tmp_path):
    segs = run_segments(read_log(write(tmp_path, HAND_LOG)))
    # run segments 00:00-02:30, 02:40-04:10 (planned), 04:30-04:45, 05:15-09:00
    assert segs["running_h"].tolist() == pytest.approx([2.5, 1.5, 0.25, 3.75])
    assert segs["ended_by"].tolist() == ["interruption", "interruption", "interruption", "end"]
    assert segs["planned"].tolist() == [False, True, False, False]
    assert segs["failure"].tolist() == [True, False, True, False]
    assert segs["start_row"].tolist() == [2, 6, 9, 11] and segs["end_row"].tolist() == [5, 8, 10, 14]
    # lost: since the last save of the segment (02:00, 03:40) or, with none, since the restart (04:30)
    assert segs["lost_h"].iloc[:3].tolist() == pytest.approx([0.5, 0.5, 0.25])
    assert segs["lost_steps"].iloc[:3].tolist() == [50, 50, 15]


def test_hand_log_fit_matches_hand_computation(tmp_path):
    fit = fit_log(write(tmp_path, HAND_LOG), confidence=0.9)
    assert fit.running_h == pytest.approx(8.0) and fit.observed_h == pytest.approx(9.0)
    assert fit.running_share == pytest.approx(8 / 9)
    assert (fit.interruptions, fit.unplanned_failures, fit.planned_interruptions) == (3, 2, 1)
    assert fit.failure_causes == {"hardware": 1, "unknown": 1}
    # M = T/n = 8/2 with time-terminated chi-square bounds
    assert fit.mtbf.mtbf_h == pytest.approx(4.0)
    assert fit.mtbf.lower_h == pytest.approx(16 / stats.chi2.ppf(0.95, 6))
    assert fit.mtbf.upper_h == pytest.approx(16 / stats.chi2.ppf(0.05, 4))
    # restarts 10, 20 (planned counts), 30 min; p90 by linear interpolation: 20 + 0.8*10
    r = fit.restart
    assert (r.count, r.mean_min, r.median_min, r.p90_min, r.max_min) == (3, pytest.approx(20), pytest.approx(20),
                                                                          pytest.approx(28), pytest.approx(30))
    # stalls 30, 90, 60, 120 s (one save without checkpoint_stall_s): 0.5, 1.5, 1, 2 min; p90 = 1.5 + 0.7*0.5
    s = fit.stall
    assert (s.count, s.mean_min, s.median_min, s.p90_min, s.max_min) == (4, pytest.approx(1.25), pytest.approx(1.25),
                                                                          pytest.approx(1.85), pytest.approx(2.0))
    assert any("checkpoint_stall_s given on 4 of 5" in n for n in fit.notes)
    # consecutive saves in the same segment: 01:00->02:00 and 07:15->08:15 only
    assert fit.checkpoint_interval.count == 2 and fit.checkpoint_interval.mean_min == pytest.approx(60)
    assert fit.checkpoints == 5
    assert fit.lost_h == pytest.approx(1.25) and fit.lost_h_unplanned == pytest.approx(0.75)
    assert fit.lost_share == pytest.approx(1.25 / 8) and fit.lost_per_failure_h == pytest.approx(0.375)
    assert fit.lost_steps == 115
    assert fit.shape.verdict == "insufficient data" and fit.shape.shape is None and not fit.shape.clustered
    assert fit.scenario_overrides() == {"job_mtbf_h": pytest.approx(4.0), "restart_min": pytest.approx(20.0),
                                        "checkpoint_stall_min": pytest.approx(1.25)}


def test_dataframe_and_file_give_the_same_fit(tmp_path):
    path = write(tmp_path, HAND_LOG)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    a, b = fit_log(path).to_dict(), fit_log(frame).to_dict()
    a.pop("source"), b.pop("source")
    assert a == b


def test_stats_of_a_synthetic_log_equal_independent_computation():
    df = synthetic_log(running_h=300, mtbf_h=10, checkpoint_every_min=90, checkpoint_stall_s=40, restart_min=15,
                       planned_every_h=80, seed=11)
    fit = fit_log(df)
    ts = pd.to_datetime(df["timestamp"])
    # restarts: each interruption row is immediately followed by its restart_complete in this generator
    irows = np.flatnonzero(df["event"] == "interruption")
    assert (df["event"].iloc[irows + 1] == "restart_complete").all()
    restart_min = ((ts.iloc[irows + 1].to_numpy() - ts.iloc[irows].to_numpy()) / np.timedelta64(1, "m")).astype(float)
    assert fit.restart.count == len(irows)
    assert fit.restart.mean_min == pytest.approx(restart_min.mean())
    assert fit.restart.median_min == pytest.approx(np.median(restart_min))
    assert fit.restart.p90_min == pytest.approx(np.quantile(restart_min, 0.9))
    stall_min = df.loc[df["event"] == "checkpoint_saved", "checkpoint_stall_s"].astype(float).to_numpy() / 60
    assert fit.stall.count == len(stall_min)
    assert fit.stall.mean_min == pytest.approx(stall_min.mean())
    assert fit.stall.median_min == pytest.approx(np.median(stall_min))
    assert fit.stall.p90_min == pytest.approx(np.quantile(stall_min, 0.9))
    # running time = observed wall time minus time down
    observed_h = (ts.iloc[-1] - ts.iloc[0]) / pd.Timedelta(hours=1)
    assert fit.running_h == pytest.approx(observed_h - restart_min.sum() / 60)
    assert fit.running_h == pytest.approx(300, abs=0.01)  # timestamps are truncated to seconds
    planned = (df["cause"] == "planned").sum()
    assert fit.planned_interruptions == planned > 0
    assert fit.unplanned_failures == len(irows) - planned


# ------------------------------------------------------------------------------- bad logs

OK_ROWS = "2024-01-01T00:00:00,start,,,\n"


@pytest.mark.parametrize("text, row, field, rule", [
    ("", 1, "header", "empty file"),
    (HEADER, 1, "header", "no data rows"),
    ("timestamp,event,checkpoint_stall_s\n2024-01-01T00:00:00,start,\n", 1, "header",
     "missing required column(s) cause"),
    ("timestamp,event,cause,event\n2024-01-01T00:00:00,start,,start\n", 1, "header", "duplicate column"),
    (HEADER + "2024-01-01 25:00,start,,,\n", 2, "timestamp", "not an ISO 8601"),
    (HEADER + ",start,,,\n", 2, "timestamp", "is required"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00+00:00,checkpoint_saved,,,\n", 3, "timestamp", "UTC offset"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,chekpoint,,,\n", 3, "event", "unknown event"),
    (HEADER + OK_ROWS + "2023-12-31T23:00:00,checkpoint_saved,,,\n", 3, "timestamp", "earlier than row 2"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,interruption,gpu,,\n2024-01-01T01:05:00,interruption,gpu,,\n",
     4, "event", "interruption while the job is not running"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,restart_complete,,,\n", 3, "event", "restart_complete without"),
    (HEADER + "2024-01-01T01:00:00,checkpoint_saved,,,\n", 2, "event", "before the first start"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,start,,,\n", 3, "event", "start while the job is running"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,end,,,\n2024-01-01T02:00:00,end,,,\n", 4, "event", "end while no job"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,checkpoint_saved,,-3,\n", 3, "checkpoint_stall_s", ">= 0"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,checkpoint_saved,,abc,\n", 3, "checkpoint_stall_s", ">= 0"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,interruption,gpu,12,\n", 3, "checkpoint_stall_s",
     "only given on checkpoint_saved"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,checkpoint_saved,hardware,,\n", 3, "cause", "only given on interruption"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,checkpoint_saved,,,12.5\n", 3, "step", "whole number"),
    (HEADER + OK_ROWS + "2024-01-01T01:00:00,checkpoint_saved,,,,extra\n", 3, "row", "has 6 fields"),
])
def test_each_kind_of_bad_row_is_reported(tmp_path, text, row, field, rule):
    with pytest.raises(LogError) as err:
        fit_log(write(tmp_path, text))
    exc = err.value
    assert isinstance(exc, engine.InputError) and isinstance(exc, ValueError)
    assert [(p.row, p.field) for p in exc.problems] == [(row, field)]
    assert rule in exc.problems[0].rule
    assert f"row {row}: {field}=" in str(exc)


def test_all_bad_rows_are_reported_in_one_error(tmp_path):
    text = HEADER + (
        "2024-01-01T00:00:00,start,,,0\n"                 # 2 ok
        "2024-01-01T01:00:00,checkpoint_saved,,x,100\n"   # 3 bad stall
        "2024-01-01T0l:30:00,checkpoint_saved,,10,150\n"  # 4 bad timestamp (letter l)
        "2024-01-01T02:00:00,crash,hardware,,\n"          # 5 unknown event
        "2024-01-01T01:59:00,interruption,hardware,,\n"   # 6 earlier than row 5
        "2024-01-01T02:10:00,restart_complete,,,\n"       # 7 ok
        "2024-01-01T02:20:00,restart_complete,,,\n"       # 8 restart without interruption
        "\n"                                              # 9 empty line: skipped, numbering kept
        "2024-01-01T03:00:00,end,,,-1\n"                  # 10 bad step
    )
    with pytest.raises(LogError) as err:
        fit_log(write(tmp_path, text))
    rows = [(p.row, p.field) for p in err.value.problems]
    assert rows == [(3, "checkpoint_stall_s"), (4, "timestamp"), (5, "event"), (6, "timestamp"), (8, "event"),
                    (10, "step")]
    message = str(err.value)
    assert "6 bad rows" in message
    for r in (3, 4, 5, 6, 8, 10):
        assert f"row {r}:" in message


def test_dataframe_rows_are_numbered_as_in_a_file():
    df = pd.DataFrame({"timestamp": ["2024-01-01T00:00:00", "2024-01-01T01:00:00"],
                       "event": ["start", "restart_complete"], "cause": ["", ""]})
    with pytest.raises(LogError) as err:
        read_log(df)
    assert [p.row for p in err.value.problems] == [3]


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(engine.InputError, match="file not found"):
        fit_log(tmp_path / "nope.csv")


def test_log_ending_while_running_is_closed_at_the_last_row_and_noted(tmp_path):
    text = ("Timestamp , EVENT,cause,node\n"  # names are trimmed and case-insensitive; extra columns ignored
            "2024-01-01T00:00:00Z,start,,n1\n2024-01-01T05:00:00Z,interruption,hardware,n7\n"
            "2024-01-01T05:10:00Z,restart_complete,,n1\n2024-01-01T06:10:00Z,checkpoint_saved,,n1\n")
    fit = fit_log(write(tmp_path, text))
    assert fit.running_h == pytest.approx(6.0)
    assert fit.unplanned_failures == 1 and fit.stall is None
    assert any("stops while the job is running" in n for n in fit.notes)
    assert any("ignored column(s): node" in n for n in fit.notes)


# ------------------------------------------------------------------------- legacy column name

LEGACY_HAND_LOG = HAND_LOG.replace(HEADER, "timestamp,event,cause,stall_s,step\n", 1)


def test_legacy_stall_s_header_is_read_as_checkpoint_stall_s(tmp_path):
    assert LEGACY_HAND_LOG != HAND_LOG
    old, new = read_log(write(tmp_path, LEGACY_HAND_LOG, "old.csv")), read_log(write(tmp_path, HAND_LOG, "new.csv"))
    assert list(old.columns) == list(new.columns) and "checkpoint_stall_s" in old.columns
    pd.testing.assert_frame_equal(old, new)
    assert old.attrs["ignored_columns"] == []
    a, b = fit_log(write(tmp_path, LEGACY_HAND_LOG, "old.csv")).to_dict(), fit_log(write(tmp_path, HAND_LOG)).to_dict()
    a.pop("source"), b.pop("source")
    assert a == b
    frame = pd.read_csv(write(tmp_path, LEGACY_HAND_LOG, "old.csv"), dtype=str, keep_default_na=False)
    assert "stall_s" in frame.columns and fit_log(frame).stall.count == 4


def test_legacy_stall_s_bad_value_is_reported_under_the_documented_name(tmp_path):
    text = "timestamp,event,cause,STALL_S\n2024-01-01T00:00:00,start,,\n2024-01-01T01:00:00,checkpoint_saved,,x\n"
    with pytest.raises(LogError) as err:
        read_log(write(tmp_path, text))
    assert [(p.row, p.field) for p in err.value.problems] == [(3, "checkpoint_stall_s")]


def test_legacy_and_documented_stall_columns_together_are_a_duplicate(tmp_path):
    text = "timestamp,event,cause,checkpoint_stall_s,stall_s\n2024-01-01T00:00:00,start,,,\n"
    with pytest.raises(LogError) as err:
        read_log(write(tmp_path, text))
    (p,) = err.value.problems
    assert (p.row, p.field, p.value) == (1, "header", "stall_s")
    assert "duplicate column (also column 4; stall_s is the legacy spelling of checkpoint_stall_s)" in p.rule


def test_fit_log_is_read_log_then_fit_events(tmp_path):
    frame = pd.read_csv(write(tmp_path, HAND_LOG), dtype=str, keep_default_na=False).assign(node="n1")
    events = read_log(frame)
    direct = fit_events(events, events.attrs["source"], 0.8)
    fit = fit_log(frame, confidence=0.8)
    assert fit.notes == ("ignored column(s): node",) + direct.notes
    assert fit.to_dict() | {"notes": None} == direct.to_dict() | {"notes": None}


# ------------------------------------------------------------------------------ template CSV

def test_template_log_is_the_documented_synthetic_history():
    on_disk = pd.read_csv(TEMPLATE_LOG, dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(on_disk, synthetic_log(**logs.EXAMPLE_LOG_PARAMS))
    assert 30 <= len(on_disk) <= 60
    fit = fit_log(TEMPLATE_LOG)
    assert fit.notes == () and set(fit.scenario_overrides()) == {"job_mtbf_h", "restart_min", "checkpoint_stall_min"}
    assert fit.planned_interruptions >= 1 and fit.unplanned_failures >= 3


# -------------------------------------------------------------------------------------- CLI

def make_app() -> typer.Typer:
    from ckptplan.cli_fit import register

    app = typer.Typer()

    @app.callback()
    def main() -> None:  # a group, so the command is invoked as `fit`
        pass

    register(app)
    return app


runner = CliRunner()


def test_cli_fit_prints_a_table():
    fit = fit_log(TEMPLATE_LOG)
    res = runner.invoke(make_app(), ["fit", str(TEMPLATE_LOG)])
    assert res.exit_code == 0, res.output
    for text in ("job MTBF", f"{fit.mtbf.mtbf_h:.3g} h", f"{fit.mtbf.lower_h:.3g}", "restart time",
                 f"{fit.restart.mean_min:.3g} min", "save stall", "progress lost", "insufficient data"):
        assert text in res.stdout


def test_cli_fit_json_is_parseable_and_equals_the_fit():
    res = runner.invoke(make_app(), ["fit", str(TEMPLATE_LOG), "--json", "--confidence", "0.8"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data == json.loads(json.dumps(fit_log(TEMPLATE_LOG, confidence=0.8).to_dict()))
    assert data["mtbf"]["confidence"] == 0.8


def test_cli_emit_scenario_writes_a_loadable_toml(tmp_path):
    out = tmp_path / "fitted.toml"
    res = runner.invoke(make_app(), ["fit", str(TEMPLATE_LOG), "--emit-scenario", str(out)])
    assert res.exit_code == 0, res.output
    sc = files.load_scenario(out)
    fit = fit_log(TEMPLATE_LOG)
    seed = files.load_scenario("seed")
    assert sc.job_mtbf_h == pytest.approx(fit.mtbf.mtbf_h)
    assert sc.restart_min == pytest.approx(fit.restart.mean_min)
    assert sc.checkpoint_stall_min == pytest.approx(fit.stall.mean_min)
    assert (sc.nodes, sc.price_per_gpu_hour, sc.useful_training_h) == (seed.nodes, seed.price_per_gpu_hour,
                                                                       seed.useful_training_h)
    assert engine.evaluate(sc)["job_mtbf_h"].iloc[0] == pytest.approx(fit.mtbf.mtbf_h)  # the override wins
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fitted.toml"]  # no temporary file left


def test_cli_emit_scenario_uses_the_template_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "fitted.toml"
    out.write_text("keep me", encoding="utf-8")
    app = make_app()
    res = runner.invoke(app, ["fit", str(TEMPLATE_LOG), "--emit-scenario", str(out), "--template", "llama3-405b"])
    assert res.exit_code == 2 and "--force" in res.output
    assert out.read_text(encoding="utf-8") == "keep me"
    res = runner.invoke(app, ["fit", str(TEMPLATE_LOG), "--emit-scenario", str(out), "--template", "llama3-405b",
                              "--force", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["emitted_scenario"]["path"] == str(out)
    sc = files.load_scenario(out)
    llama = files.load_scenario("llama3-405b")
    assert sc.nodes == llama.nodes == 2048 and sc.name == f"{llama.name}-fitted"
    assert sc.job_mtbf_h == pytest.approx(fit_log(TEMPLATE_LOG).mtbf.mtbf_h)


def test_cli_bad_log_lists_every_row_without_traceback(tmp_path):
    path = write(tmp_path, HEADER + "2024-01-01T00:00:00,start,,,\n2024-01-01T01:00:00,boom,,,\n"
                                    "2024-01-01T00:30:00,end,,,\n")
    res = runner.invoke(make_app(), ["fit", str(path)])
    assert res.exit_code == 2
    assert isinstance(res.exception, SystemExit)
    assert "row 3: event='boom'" in res.output and "row 4: timestamp=" in res.output


def test_emit_scenario_carries_the_mtbf_interval_as_a_range_that_sensitivity_swings(tmp_path):
    """fit --emit-scenario writes the job MTBF's confidence interval into [uncertainty]; sensitivity uses it."""
    from ckptplan.engine.sensitivity import tornado

    out = tmp_path / "fitted.toml"
    res = runner.invoke(make_app(), ["fit", str(TEMPLATE_LOG), "--emit-scenario", str(out), "--confidence", "0.8"])
    assert res.exit_code == 0, res.output
    fit = fit_log(TEMPLATE_LOG, confidence=0.8)
    plan = files.load_plan(out)
    (u,) = plan.uncertainty
    assert (u.field, u.dist) == ("job_mtbf_h", "range")
    assert (u.low, u.base, u.high) == pytest.approx((fit.mtbf.lower_h, fit.mtbf.mtbf_h, fit.mtbf.upper_h))
    table = tornado(plan.scenario, plan.setup, (), plan.uncertainty, outputs=("wall_h",))
    at = {}
    for bound in (fit.mtbf.lower_h, fit.mtbf.upper_h):
        at[bound] = float(engine.evaluate(plan.scenario.replace(job_mtbf_h=bound))["wall_h"].iloc[0])
    assert table["swing"].iloc[0] == pytest.approx(at[fit.mtbf.lower_h] - at[fit.mtbf.upper_h], rel=1e-9)
    assert table["swing"].iloc[0] > 0   # a shorter MTBF makes the job longer


def test_emit_scenario_drops_the_template_ranges_the_fit_replaces(tmp_path):
    """A template's range on a measured field (or on the node MTBF the measured job MTBF shadows) is dropped;
    the others are kept around the template's values."""
    src = tmp_path / "ranged.toml"
    text = files.scenarios.template_path("seed.toml").read_text(encoding="utf-8")
    src.write_text(text + "\n[uncertainty]\nnode_mtbf_h = [1000, 9000]\nrestart_min = [1, 30]\n"
                   "price_per_gpu_hour = [1.5, 4]\n", encoding="utf-8")
    out = tmp_path / "fitted.toml"
    res = runner.invoke(make_app(), ["fit", str(TEMPLATE_LOG), "--emit-scenario", str(out), "--template", str(src)])
    assert res.exit_code == 0, res.output
    fields = [u.field for u in files.load_plan(out).uncertainty]
    assert fields == ["price_per_gpu_hour", "job_mtbf_h"]
