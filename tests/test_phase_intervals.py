"""A phase's own stated interval (``interval_min`` in a ``[[failure_phases]]`` table): held exactly while the plan
optimises the phases that state none, on every surface that reads scenarios (TOML, a table row, plan --json, the
Excel function), winning over the scenario-wide ``interval_min`` for its phase."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.cli import app
from ckptplan.engine import phases as P
from ckptplan.engine.phases import FailurePhase
from ckptplan.engine.schedule_async import async_optimal_schedule, async_schedule_expectation
from ckptplan.engine.schedule_interruptions import interruption_optimal_schedule, interruption_schedule_expectation

BASE = dict(name="t", checkpoint_stall_min=3.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=256,
            useful_training_h=400.0, price_per_gpu_hour=2.0)
PHASES = (FailurePhase(0.0, 3.0), FailurePhase(72.0, 1.0))


def _ctx(sc: engine.Scenario) -> tuple[pd.Series, float, float, float, float]:
    row = engine.evaluate(sc).iloc[0]
    return row, sc.useful_training_h * 60, sc.checkpoint_stall_min, float(row["job_mtbf_h"]) * 60, sc.restart_min


def test_a_stated_phase_interval_gives_exactly_the_schedules_expectation():
    sc = engine.Scenario(**BASE, failure_phases=(FailurePhase(0.0, 3.0, 25.0), FailurePhase(72.0, 1.0)))
    row, work, C, M, R = _ctx(sc)
    assert row["schedule1_interval_min"] == 25.0 and row["schedule1_interval_stated"] == 1.0
    assert row["schedule2_interval_stated"] == 0.0
    e = P.schedule_expectation(work, [25.0, row["schedule2_interval_min"]], C, M, R, [0.0, 72 * 60.0], [3.0, 1.0])
    assert row["wall_h"] == pytest.approx(e["total"] / 60, rel=1e-12)
    assert row["expected_failures"] == pytest.approx(e["failures"], rel=1e-12)
    assert row["save_h"] == pytest.approx(e["save"] / 60, rel=1e-12)
    # the free phase is optimised around the stated one: no other interval there does better (a local check)
    T2 = row["schedule2_interval_min"]
    for other in (T2 * 0.9, T2 * 1.1):
        assert P.schedule_expectation(work, [25.0, other], C, M, R, [0.0, 4320.0], [3.0, 1.0])["total"] >= e["total"]
    # and the stated interval costs something against the free plan
    free = engine.evaluate(engine.Scenario(**BASE, failure_phases=PHASES)).iloc[0]
    assert row["wall_h"] > free["wall_h"]


def test_fixing_every_phase_at_the_optimum_reproduces_the_plan():
    free_sc = engine.Scenario(**BASE, failure_phases=PHASES)
    free, work, C, M, R = _ctx(free_sc)
    T = [float(free["schedule1_interval_min"]), float(free["schedule2_interval_min"])]
    fixed = engine.evaluate(engine.Scenario(**BASE, failure_phases=(FailurePhase(0.0, 3.0, T[0]),
                                                                     FailurePhase(72.0, 1.0, T[1])))).iloc[0]
    for key in ("wall_h", "expected_failures", "save_h", "rework_h", "restart_h", "total_cost", "waste_fraction",
                "single_interval_min", "single_interval_wall_h", "schedule1_interval_min", "schedule2_interval_min"):
        assert fixed[key] == pytest.approx(free[key], rel=1e-12), key
    assert fixed["schedule1_interval_stated"] == 1.0 and free["schedule1_interval_stated"] == 0.0
    # the engine's search: every interval fixed returns them as they are
    plan = P.optimal_schedule(work, C, M, R, [0.0, 4320.0], [3.0, 1.0], fixed=T)
    assert list(plan["intervals"]) == T


def test_a_phase_interval_wins_over_the_scenario_wide_one():
    sc = engine.Scenario(**BASE, interval_min=40.0, failure_phases=(FailurePhase(0.0, 3.0),
                                                                    FailurePhase(72.0, 1.0, 90.0)))
    row, work, C, M, R = _ctx(sc)
    assert [row["schedule1_interval_min"], row["schedule2_interval_min"]] == [40.0, 90.0]
    assert [row["schedule1_interval_stated"], row["schedule2_interval_stated"]] == [1.0, 1.0]
    e = P.schedule_expectation(work, [40.0, 90.0], C, M, R, [0.0, 4320.0], [3.0, 1.0])
    assert row["wall_h"] == pytest.approx(e["total"] / 60, rel=1e-12)
    # a first phase starting later: the phase at 0 ahead of it takes the scenario-wide interval
    late = engine.evaluate(engine.Scenario(**BASE, interval_min=40.0, failure_phases=(
        FailurePhase(12.0, 3.0, 20.0),))).iloc[0]
    assert [late["schedule1_interval_min"], late["schedule2_interval_min"]] == [40.0, 20.0]


def test_async_and_interrupted_schedules_hold_a_stated_interval():
    work, C, M, R, s, f = 24_000.0, 3.0, 600.0, 10.0, [0.0, 4320.0], [3.0, 1.0]
    a = async_optimal_schedule(work, C, M, R, 6.0, 0.1, s, f, fixed=[np.nan, 70.0])
    assert a["intervals"][1] == 70.0 and a["intervals"][0] != 70.0
    want = async_schedule_expectation(work, a["intervals"], C, M, R, 6.0, 0.1, s, f)["total"]
    assert a["schedule"]["total"] == pytest.approx(want, rel=1e-12)
    free = async_optimal_schedule(work, C, M, R, 6.0, 0.1, s, f)
    assert free["schedule"]["total"] <= a["schedule"]["total"] * (1 + 1e-9)
    b = interruption_optimal_schedule(work, C, M, R, s, f, 300.0, 0.5, 5.0, 2.0, fixed=[25.0, np.nan])
    assert b["intervals"][0] == 25.0
    assert b["schedule"]["total"] == pytest.approx(
        interruption_schedule_expectation(work, b["intervals"], b["exposure"])["total"], rel=1e-12)


def test_phase_intervals_are_checked_and_travel_through_every_surface(tmp_path):
    with pytest.raises(engine.InputError, match="interval_min"):
        engine.Scenario(**BASE, failure_phases=[{"start_h": 0, "rate_factor": 2, "interval_min": 0}])
    with pytest.raises(engine.InputError, match="unknown key"):
        engine.Scenario(**BASE, failure_phases=[{"start_h": 0, "rate_factor": 2, "interval_h": 1}])
    path = tmp_path / "burn.toml"
    body = "\n".join(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in BASE.items())
    path.write_text(f"[scenario]\n{body}\n\n[[failure_phases]]\nstart_h = 0\nrate_factor = 3\ninterval_min = 25\n\n"
                    "[[failure_phases]]\nstart_h = 72\nrate_factor = 1\n")
    sc = files.load_scenario(path)
    assert sc.failure_phases == (FailurePhase(0.0, 3.0, 25.0), FailurePhase(72.0, 1.0))
    assert engine.scenario_from_dict(engine.scenario_to_dict(sc)) == sc
    table = engine.to_table([sc])
    assert table.loc[0, "phase1_interval_min"] == 25.0 and "phase2_interval_min" not in table
    row = engine.evaluate(table).iloc[0]
    res = CliRunner().invoke(app, ["plan", "--scenario", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [(s["interval_min"], s["interval_stated"]) for s in out["schedule"]] == [
        (25.0, True), (float(row["schedule2_interval_min"]), False)]
    assert out["wall_h"] == pytest.approx(row["wall_h"], rel=1e-12)
    # a batch row: the column alone needs its phase; a bad value is named
    rows = engine.to_table([sc, engine.Scenario(**BASE)])
    rows.loc[1, "phase1_interval_min"] = 30.0
    with pytest.raises(engine.InputError, match="phase1_interval_min.*give phase1_start_h"):
        engine.validate_table(rows)
    rows.loc[1, "phase1_interval_min"], rows.loc[0, "phase1_interval_min"] = np.nan, -2.0
    with pytest.raises(engine.InputError, match="phase1_interval_min"):
        engine.validate_table(rows)


def test_the_excel_function_takes_phase_intervals():
    from ckptplan.workbook.udfs_risk import CKPT_SCHEDULE

    names = [[k] for k in BASE if k != "name"]
    values = [[v] for k, v in BASE.items() if k != "name"]
    got = CKPT_SCHEDULE(names, values, [[0], [72]], [[3], [1]], [[25], [None]])
    row = engine.evaluate(engine.Scenario(**BASE, failure_phases=(FailurePhase(0.0, 3.0, 25.0),
                                                                  FailurePhase(72.0, 1.0)))).iloc[0]
    assert got[1] == [0.0, 3.0, 25.0]
    assert got[2][2] == pytest.approx(row["schedule2_interval_min"], rel=1e-12)
    assert got[3] == ["wall_h", None, pytest.approx(row["wall_h"], rel=1e-12)]
    assert "intervals_min" in CKPT_SCHEDULE(names, values, [[0], [72]], [[3], [1]], [[25]])
    assert "intervals_min" in CKPT_SCHEDULE(names, values, [[0], [None]], [[3], [None]], [[25], [7]])
