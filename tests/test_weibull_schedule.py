"""Weibull failure intensity from the job's start: the schedule's expectation against an event-by-event
simulation written here, shape 1 against today's plan, the schedule against the best single interval, and
the field on the scenario surfaces."""

import math

import numpy as np
import pytest

from ckptplan import engine
from ckptplan.engine import weibull_schedule as WS
from ckptplan.engine.weibull_montecarlo import simulate_weibull_schedule


def _simulate(work, starts, intervals, C, M, R, k, runs, seed):
    """What physically happens, one run at a time: failures of a power-law process from the job's start
    (next failure after t: the t' with (t'/eta)^k - (t/eta)^k = an exponential draw), a segment saved
    when it outlives the next failure, a restart redone when a failure strikes it; the last segment counted
    as the share of its wall time its work is of a full interval (the constant-rate model's convention), and
    the failures counted those before that end (the model's count: the intensity over the wall time counted)."""
    rng = np.random.default_rng(seed)
    eta = M / math.gamma(1 + 1 / k)
    walls, fails = np.empty(runs), np.empty(runs)
    for r in range(runs):
        t, left, hits = 0.0, work, []
        nxt = eta * rng.exponential() ** (1 / k)          # the first failure
        while True:
            T = intervals[int(np.searchsorted(starts, t, side="right")) - 1]
            begin, last = t, left <= T
            while nxt < t + T + C:                        # the segment fails: restart (redone if struck) and retry
                hits.append(nxt)
                t = nxt
                nxt = eta * ((t / eta) ** k + rng.exponential()) ** (1 / k)
                while nxt < t + R:
                    hits.append(nxt)
                    t = nxt
                    nxt = eta * ((t / eta) ** k + rng.exponential()) ** (1 / k)
                t += R
                if not last:                              # the final segment keeps its interval and origin
                    T = intervals[int(np.searchsorted(starts, t, side="right")) - 1]
                    begin, last = t, left <= T
            t += T + C
            if last:
                walls[r] = begin + (left / T) * (t - begin)
                break
            left -= T
        fails[r] = np.sum(np.array(hits) < walls[r])
    return walls, fails


# (work, C, M, R, k): burn-in over a 2-day job; a strong one over a long job; a short job on a weak shape
CASES = [(48 * 60.0, 5.0, 300.0, 10.0, 0.7), (200 * 60.0, 3.0, 600.0, 10.0, 0.5), (20 * 60.0, 2.0, 120.0, 4.0, 0.85)]


@pytest.mark.parametrize("case", CASES)
def test_expectation_agrees_with_an_event_by_event_simulation(case):
    work, C, M, R, k = case
    horizon = 2 * engine.time_breakdown(work, engine.exact_optimal_interval(C, M), C, M, R)["total"]
    starts, base = WS.first_order_schedule(C, M, k, horizon)
    exact = WS.weibull_expectation(work, starts, base, C, M, R, k)
    walls, fails = _simulate(work, starts, base, C, M, R, k, runs=6000, seed=5)
    for x, name in ((walls, "total"), (fails, "failures")):
        se = x.std(ddof=1) / np.sqrt(x.size)
        assert abs(x.mean() - exact[name]) < 3 * se, (name, x.mean(), exact[name], se)
    sim = simulate_weibull_schedule(work, starts, base, C, M, R, k, runs=20_000, seed=9)   # the engine's own
    se = sim["wall"].std(ddof=1) / np.sqrt(sim["wall"].size)
    assert abs(sim["wall"].mean() - exact["total"]) < 3 * se
    assert exact["useful"] == work and exact["rework"] >= 0


def test_refining_the_grid_moves_the_expectation_by_less_than_1e4(monkeypatch):
    work, C, M, R, k = CASES[1]
    starts, base = WS.first_order_schedule(C, M, k, 30_000.0)
    coarse = WS.weibull_expectation(work, starts, base, C, M, R, k)["total"]
    monkeypatch.setattr(WS, "HAZARD_STEPS", 2 * WS.HAZARD_STEPS)
    monkeypatch.setattr(WS, "EARLY_STEPS", 2 * WS.EARLY_STEPS)
    fine = WS.weibull_expectation(work, starts, base, C, M, R, k)["total"]
    assert fine == pytest.approx(coarse, rel=1e-4)


@pytest.mark.parametrize("C,M,R", [(3.0, 600.0, 10.0), (0.5, 90.0, 0.0), (20.0, 300.0, 45.0)])
def test_shape_one_is_todays_plan_exactly(C, M, R):
    work = 12_000.0
    plan = WS.optimal_weibull_schedule(work, C, M, R, 1.0)
    assert list(plan["intervals"]) == [engine.exact_optimal_interval(C, M)]
    ref = engine.time_breakdown(work, plan["intervals"][0], C, M, R)
    for key in ("total", "save", "rework", "restart", "failures"):
        assert plan["schedule"][key] == ref[key]
    # several windows at a constant rate: the phases model at rate factor 1, Daly's model to rounding
    T = [0.9 * plan["intervals"][0], 1.1 * plan["intervals"][0]]
    two = WS.weibull_expectation(work, [0.0, 3000.0], T, C, M, R, 1.0)
    from ckptplan.engine.phases import schedule_expectation
    assert two["total"] == pytest.approx(schedule_expectation(work, T, C, M, R, [0.0, 3000.0], [1.0, 1.0])["total"],
                                         rel=1e-9)


@pytest.mark.parametrize("k", [0.5, 0.8])
@pytest.mark.parametrize("M", [300.0, 3000.0])
def test_schedule_never_costs_more_than_the_best_single_interval(k, M):
    work, C, R = 72 * 60.0, 4.0, 10.0
    plan = WS.optimal_weibull_schedule(work, C, M, R, k)
    assert plan["schedule"]["total"] <= plan["single"]["total"]
    single = plan["single_interval"]
    for f in (0.8, 1.25):   # the single interval is the best one under the same process
        assert WS.weibull_expectation(work, [0.0], [single * f], C, M, R, k)["total"] >= plan["single"]["total"]
    if len(plan["intervals"]) > 1:       # burn-in: shorter intervals while failures cluster
        assert np.all(np.diff(plan["intervals"]) > 0)


@pytest.mark.parametrize("bad", [0.1, 1.5, float("nan"), True, "0.7"])
def test_shape_outside_its_range_is_refused_by_name(bad):
    with pytest.raises(engine.InputError, match="weibull_shape_from_start"):
        WS.optimal_weibull_schedule(600.0, 2.0, 100.0, 1.0, bad)


BASE = dict(name="burn", checkpoint_stall_min=3.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=256,
            useful_training_h=60.0, price_per_gpu_hour=2.0, deadline_h=80.0)


def test_scenario_plan_json_and_toml_carry_the_schedule(tmp_path):
    import json

    from typer.testing import CliRunner

    from ckptplan import files
    from ckptplan.cli import app

    sc = engine.Scenario(**BASE, weibull_shape_from_start=0.6)
    assert engine.scenario_from_dict(engine.scenario_to_dict(sc)) == sc
    row = engine.evaluate(sc).iloc[0]
    plan = WS.optimal_weibull_schedule(60 * 60.0, 3.0, row["job_mtbf_h"] * 60, 10.0, 0.6)
    assert row["wall_h"] == pytest.approx(plan["schedule"]["total"] / 60, rel=1e-12)
    assert row["single_interval_wall_h"] == pytest.approx(plan["single"]["total"] / 60, rel=1e-12)
    assert row["wall_h"] <= row["single_interval_wall_h"]
    assert row["total_cost"] == pytest.approx(row["wall_h"] * 2048 * 2.0)
    assert 0 < row["p_finish_by_deadline"] <= 1 and row["wall_h_p50"] < row["wall_h_p90"]
    path = tmp_path / "burn.toml"
    body = "\n".join(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in BASE.items())
    path.write_text(f"[scenario]\n{body}\nweibull_shape_from_start = 0.6\n")
    assert files.load_scenario(path) == sc
    res = CliRunner().invoke(app, ["plan", "--scenario", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [s["start_h"] for s in out["schedule"]] == [float(row[f"schedule{i}_start_h"])
                                                       for i in range(1, len(out["schedule"]) + 1)]
    assert out["schedule"][0]["start_h"] == 0 and len(out["schedule"]) == len(plan["intervals"])
    assert [s["interval_min"] for s in out["schedule"]] == pytest.approx(list(plan["intervals"]))
    assert out["wall_h"] == pytest.approx(row["wall_h"]) and out["wall_h"] <= out["single_interval_wall_h"]
    text = CliRunner().invoke(app, ["plan", "--scenario", str(path)])
    flat = " ".join(text.output.split())
    assert "Weibull failure intensity" in flat and "(shape 0.6;" in flat


def test_shape_one_scenario_is_todays_plan():
    plain = engine.evaluate(engine.Scenario(**BASE)).iloc[0]
    one = engine.evaluate(engine.Scenario(**BASE, weibull_shape_from_start=1.0)).iloc[0]
    for key in ("wall_h", "expected_failures", "total_cost", "waste_fraction", "p_finish_by_deadline",
                "chosen_interval_min"):
        assert one[key] == plain[key]


def test_batch_rows_with_and_without_a_weibull_shape(tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    from ckptplan.cli import app

    src = tmp_path / "rows.csv"
    head = "name,checkpoint_stall_min,restart_min,node_mtbf_h,nodes,useful_training_h,price_per_gpu_hour,"
    # a background write is planned with a Weibull shape (tests/test_schedule_interruptions.py), not with a downtime too
    src.write_text(head + "weibull_shape_from_start,async_write_min,downtime_min\n"
                   "flat,3,10,2560,256,60,2,,,\nburn,3,10,2560,256,60,2,0.6,,\nasync,3,10,2560,256,60,2,0.6,1,2\n"
                   "bad,3,10,2560,256,60,2,1.4,,\n")
    out = tmp_path / "out.csv"
    res = CliRunner().invoke(app, ["batch", str(src), "-o", str(out)])
    assert res.exit_code == 3, res.output
    d = pd.read_csv(out)
    burn = engine.evaluate(engine.Scenario(**{**BASE, "deadline_h": None}, weibull_shape_from_start=0.6)).iloc[0]
    assert d.loc[1, "wall_h"] == pytest.approx(burn["wall_h"], rel=1e-12)
    assert d.loc[1, "schedule2_interval_min"] == pytest.approx(burn["schedule2_interval_min"], rel=1e-12)
    assert np.isnan(d.loc[0, "schedule2_interval_min"]) and d.loc[0, "wall_h"] > d.loc[1, "wall_h"]
    assert d.loc[2, "status"] == "error" and "async_write_min" in d.loc[2, "error"]
    assert d.loc[3, "status"] == "error" and "weibull_shape_from_start" in d.loc[3, "error"]


@pytest.mark.parametrize("extra,name", [(dict(preemptions_per_h=0.1, async_write_min=2.0), "async_write_min"),
                                        (dict(failure_phases=[{"start_h": 0, "rate_factor": 2}]),
                                         "weibull_shape_from_start")])
def test_combinations_not_modelled_are_refused_with_the_reason(extra, name):
    with pytest.raises(engine.InputError, match=name) as err:
        engine.evaluate(engine.Scenario(**BASE, weibull_shape_from_start=0.7, **extra))
    assert "(" in str(err.value) or "not both" in str(err.value)


def test_constant_rate_surfaces_refuse_it_by_name(tmp_path):
    from typer.testing import CliRunner

    from ckptplan.cli import app
    from ckptplan.engine.deadline import deadline_report

    sc = engine.Scenario(**BASE, weibull_shape_from_start=0.7)
    with pytest.raises(engine.InputError, match="weibull_shape_from_start"):
        deadline_report(sc, runs=100)
    path = tmp_path / "burn.toml"
    body = "\n".join(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in BASE.items())
    path.write_text(f"[scenario]\n{body}\nweibull_shape_from_start = 0.7\n")
    for extra in ([], ["--no-deadline"]):   # refused by the sheets themselves, not only by the deadline simulation
        res = CliRunner().invoke(app, ["workbook", "--scenario", str(path), "-o", str(tmp_path / "w.xlsx"), *extra])
        assert res.exit_code != 0 and "weibull_shape_from_start" in res.output and "workbook" in res.output
        assert not (tmp_path / "w.xlsx").exists()


def test_the_inputs_sheet_has_no_cell_for_a_shape_its_sheets_would_ignore():
    from ckptplan.workbook.formulas import INPUTS

    assert "weibull_shape_from_start" not in INPUTS


def test_compare_shows_each_design_on_its_schedule():
    from ckptplan.engine.designs import Design, compare_designs

    sc = engine.Scenario(**BASE, weibull_shape_from_start=0.7)
    table = compare_designs(sc, designs=[Design("faster storage", times={"checkpoint_stall_min": 0.25})])
    base = table[table["baseline"]].iloc[0]
    row = engine.evaluate(sc).iloc[0]
    assert base["wall_h"] == pytest.approx(row["wall_h"], rel=1e-12)
    assert base["tier_intervals"].startswith("from-0h ") and f"{row['schedule2_interval_min']:.1f} min" in \
        base["tier_intervals"]
    fast = table[~table["baseline"]].iloc[0]
    assert fast["wall_h"] < base["wall_h"] and fast["tier_intervals"].startswith("from-0h ")


def test_batch_deadline_monte_carlo_refuses_rows_whose_rate_changes(tmp_path):
    from ckptplan.engine.batch import evaluate_rows
    import pandas as pd

    rows = pd.DataFrame([{**BASE, "useful_training_h": 20.0, "deadline_h": 30.0},
                         {**BASE, "useful_training_h": 20.0, "deadline_h": 30.0, "weibull_shape_from_start": 0.6}]
                        ).drop(columns="name")
    out = evaluate_rows(rows, deadline=True, runs=200)
    assert list(out["status"]) == ["ok", "error"]
    assert "weibull_shape_from_start=0.6" in out.loc[1, "error"] and out.loc[1, "p_finish_by_deadline"] == 1.0


@pytest.mark.parametrize("extra,name", [(dict(checkpoint_stall_min=1e-300), "checkpoint_stall_min"),
                                        (dict(interval_min=0.01), "interval_min")])
def test_a_schedule_of_too_many_saves_is_refused_by_name(extra, name):
    for rate in (dict(weibull_shape_from_start=0.7), dict(failure_phases=[{"start_h": 0, "rate_factor": 2}])):
        with pytest.raises(engine.InputError, match=f"{name}.*saves per run"):
            engine.evaluate(engine.Scenario(**{**BASE, **extra}, **rate))
