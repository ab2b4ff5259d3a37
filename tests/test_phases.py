"""Failure phases: the schedule's exact expectation against Daly's model and an event-by-event Monte Carlo,
the optimal schedule against the best single interval, and the phases at every boundary (record, table,
TOML, plan --json)."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.cli import app
from ckptplan.engine import phases as P
from ckptplan.engine.phases_montecarlo import simulate_schedule

BASE = dict(name="t", checkpoint_stall_min=3.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=256,
            useful_training_h=400.0, price_per_gpu_hour=2.0)


@pytest.mark.parametrize("C,M,R,T", [(3.0, 600.0, 10.0, 58.0), (0.5, 90.0, 0.0, 9.0), (20.0, 300.0, 45.0, 150.0)])
def test_one_phase_is_dalys_model(C, M, R, T):
    work = 12_000.0
    one = P.schedule_expectation(work, [T], C, M, R, [0.0], [1.0])
    ref = engine.time_breakdown(work, T, C, M, R)
    for key in ("total", "useful", "save", "rework", "restart", "failures"):
        assert one[key] == pytest.approx(ref[key], rel=1e-12)
    # a boundary where nothing changes changes nothing (the boundary terms cancel exactly)
    two = P.schedule_expectation(work, [T, T], C, M, R, [0.0, 1000.0], [1.0, 1.0])
    for key in ("total", "save", "restart", "failures"):
        assert two[key] == pytest.approx(ref[key], rel=1e-9)


def test_constant_rate_scenario_reproduces_todays_plan_exactly():
    plain = engine.evaluate(engine.Scenario(**BASE)).iloc[0]
    assert not any(c.startswith("schedule") for c in plain.index)
    flat = engine.evaluate(engine.Scenario(**BASE, failure_phases=[{"start_h": 0, "rate_factor": 1}])).iloc[0]
    for key in ("wall_h", "expected_failures", "save_h", "restart_h", "total_cost", "waste_fraction"):
        assert flat[key] == pytest.approx(plain[key], rel=1e-9)
    assert flat["schedule1_interval_min"] == pytest.approx(plain["exact_interval_min"], rel=1e-3)


def test_boundary_state_is_a_distribution():
    for b in (500.0, 530.0, 2.0, 1234.5, 505.0):   # the fixed rule integrates the densities to 1
        s, lam, T = np.array([0.0, 500.0, 530.0]), np.array([3 / 600.0, 1 / 600.0, 2 / 600.0]), np.array([40.0, 70.0, 25.0])
        if b not in s:   # the state at b inside a phase: the state at a boundary there that changes nothing
            j = int(s.searchsorted(b))
            s, lam, T = np.insert(s, j, b), np.insert(lam, j, lam[j - 1]), np.insert(T, j, T[j - 1])
        J = int(np.flatnonzero(s == b)[0]) - 1
        for nodes, tol in ((P.QUADRATURE_NODES, 1e-9), (P.SEARCH_NODES, 1e-7)):
            st = P.boundary_state_rows(P._Rows(s[None, :], lam[None, :]), T[None, :], np.array([[3.0]]),
                                       np.array([[10.0]]), J, nodes)
            assert st["mass"].sum() + st["restart_mass"].sum() == pytest.approx(1.0, abs=tol)


# (work, intervals, C, M, R, starts, factors): burn-in; a phase shorter than a segment; a rate that falls
# then rises with long restarts; a job that ends inside its first phase
CASES = [
    (24_000.0, [33.0, 58.0], 3.0, 600.0, 10.0, [0.0, 4320.0], [3.0, 1.0]),
    (6_000.0, [50.0, 20.0, 80.0], 2.0, 500.0, 5.0, [0.0, 1000.0, 1030.0], [1.0, 6.0, 0.5]),
    (9_000.0, [90.0, 60.0, 40.0], 8.0, 900.0, 40.0, [0.0, 2000.0, 5000.0], [2.0, 0.7, 3.0]),
    (3_000.0, [30.0, 60.0], 3.0, 400.0, 10.0, [0.0, 20_000.0], [2.0, 1.0]),
]


@pytest.mark.parametrize("case", CASES)
def test_exact_expectation_agrees_with_monte_carlo(case):
    work, T, C, M, R, starts, factors = case
    exact = P.schedule_expectation(work, T, C, M, R, starts, factors)
    sim = simulate_schedule(work, T, C, M, R, starts, factors, runs=20_000, seed=7)
    for key, name in (("wall", "total"), ("failures", "failures")):
        x = sim[key]
        se = x.std(ddof=1) / np.sqrt(x.size)
        assert abs(x.mean() - exact[name]) < 3 * se, (key, x.mean(), exact[name], se)


@pytest.mark.parametrize("factor", [0.4, 3.0, 8.0])
@pytest.mark.parametrize("length_h", [5.0, 72.0])
def test_schedule_never_costs_more_than_the_best_single_interval(factor, length_h):
    work, C, M, R = 200 * 60.0, 3.0, 600.0, 10.0
    starts, factors = [0.0, length_h * 60], [factor, 1.0]
    best = P.optimal_schedule(work, C, M, R, starts, factors)
    assert best["schedule"]["total"] <= best["single"]["total"] * (1 + 1e-12)
    # the single interval is the best one: a little longer or shorter costs more
    for k in (0.9, 1.1):
        T = np.full(2, best["single_interval"] * k)
        assert P.schedule_expectation(work, T, C, M, R, starts, factors)["total"] >= best["single"]["total"]
    if factor >= 3 and length_h >= 72:  # a long burn-in: a shorter interval while it lasts
        assert best["intervals"][0] < best["intervals"][1]


def test_phases_are_checked_at_the_boundary():
    with pytest.raises(engine.InputError, match="rate_factor"):
        engine.Scenario(**BASE, failure_phases=[{"start_h": 0, "rate_factor": 0}])
    with pytest.raises(engine.InputError, match="greater than the previous"):
        engine.Scenario(**BASE, failure_phases=[{"start_h": 5, "rate_factor": 2}, {"start_h": 5, "rate_factor": 1}])
    with pytest.raises(engine.InputError, match="unknown key"):
        engine.Scenario(**BASE, failure_phases=[{"start": 5, "rate_factor": 2}])
    table = engine.to_table([engine.Scenario(**BASE)])
    table["phase1_start_h"], table["phase1_rate_factor"] = [10.0], [np.nan]
    with pytest.raises(engine.InputError, match="give both"):
        engine.validate_table(table)
    table["phase1_rate_factor"] = [-1.0]
    with pytest.raises(engine.InputError, match="phase1_rate_factor"):
        engine.validate_table(table)
    table = table.drop(columns=["phase1_rate_factor"])
    with pytest.raises(engine.InputError, match="phase1_rate_factor"):
        engine.validate_table(table)
    two = engine.to_table([engine.Scenario(**BASE, failure_phases=[{"start_h": 1, "rate_factor": 2},
                                                                   {"start_h": 9, "rate_factor": 1}])])
    two["phase2_start_h"] = [0.5]
    with pytest.raises(engine.InputError, match="phase2_start_h"):
        engine.validate_table(two)


def test_phase_count_is_bounded_before_any_work():
    """MAX_PHASES phases are a scenario; one more is refused naming the count and the rule, in a scenario and in a
    table's phase columns (the schedule's search grows faster than the count: 1,000 phases never ended)."""
    many = [{"start_h": 10.0 * i, "rate_factor": 1.0 + i % 3} for i in range(P.MAX_PHASES + 1)]
    assert len(engine.Scenario(**BASE, failure_phases=many[:-1]).failure_phases) == P.MAX_PHASES
    with pytest.raises(engine.InputError, match=f"{P.MAX_PHASES + 1} phases.*at most {P.MAX_PHASES} failure phases"):
        engine.Scenario(**BASE, failure_phases=many)
    table = engine.to_table([engine.Scenario(**BASE)])
    for i, phase in enumerate(many, start=1):
        table[f"phase{i}_start_h"], table[f"phase{i}_rate_factor"] = [phase["start_h"]], [phase["rate_factor"]]
    with pytest.raises(engine.InputError, match=f"at most {P.MAX_PHASES} failure phases"):
        engine.validate_table(table)


def test_toml_table_and_json_round_trip(tmp_path):
    path = tmp_path / "burn.toml"
    body = "\n".join(f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in BASE.items())
    path.write_text(f"[scenario]\n{body}\ndeadline_h = 480.0\n\n[[failure_phases]]\nstart_h = 0\nrate_factor = 3\n\n"
                    "[[failure_phases]]\nstart_h = 72\nrate_factor = 1\n".replace("'", '"'))
    sc = files.load_scenario(path)
    assert [(p.start_h, p.rate_factor) for p in sc.failure_phases] == [(0.0, 3.0), (72.0, 1.0)]
    assert engine.scenario_from_dict(engine.scenario_to_dict(sc)) == sc
    row = engine.evaluate(engine.to_table([sc])).iloc[0]
    res = CliRunner().invoke(app, ["plan", "--scenario", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [s["start_h"] for s in out["schedule"]] == [0.0, 72.0]
    assert out["schedule"][0]["interval_min"] < out["schedule"][1]["interval_min"]
    assert out["wall_h"] == pytest.approx(row["wall_h"])
    assert out["wall_h"] <= out["single_interval_wall_h"]
    assert out["total_cost"] == pytest.approx(out["wall_h"] * 2048 * 2.0)
    text = CliRunner().invoke(app, ["plan", "--scenario", str(path)])
    assert "Checkpoint schedule" in text.output and "72 h" in text.output


def test_table_rows_with_and_without_phases():
    rows = pd.DataFrame([{**BASE, "phase1_start_h": 0.0, "phase1_rate_factor": 3.0, "phase2_start_h": 72.0,
                          "phase2_rate_factor": 1.0},
                         {**BASE, "phase1_start_h": np.nan, "phase1_rate_factor": np.nan, "phase2_start_h": np.nan,
                          "phase2_rate_factor": np.nan}]).drop(columns="name")
    out = engine.evaluate(rows)
    plain = engine.evaluate(engine.Scenario(**BASE)).iloc[0]
    assert out.loc[1, "wall_h"] == plain["wall_h"]
    assert out.loc[1, "schedule1_interval_min"] == plain["chosen_interval_min"]
    assert np.isnan(out.loc[1, "schedule2_interval_min"])
    assert out.loc[0, "wall_h"] > plain["wall_h"]
    assert out.loc[0, "schedule2_start_h"] == 72.0


@pytest.mark.parametrize("start, rate, field", [(10**400, 2.0, "start_h"), (10.0, -(10**400), "rate_factor")])
def test_an_integer_beyond_float_range_in_a_phase_is_refused_by_name(start, rate, field):
    with pytest.raises(engine.InputError, match=f"failure_phases: {field}"):
        P.FailurePhase(start, rate)


def test_every_schedule_simulation_runs_the_one_event_loop_and_its_limit_cases_are_the_plain_loop():
    """A write of length 0 (background saves) is the plain phases loop run for run, bit for bit, under failure
    phases and under a Weibull intensity; preemptions at rate 0 and no downtime leave the exact-last-segment loop
    with failures only (no preemption, no wait), and a downtime only lengthens every run."""
    from ckptplan.engine.schedule_async_montecarlo import simulate_async_schedule
    from ckptplan.engine.schedule_interruptions_montecarlo import simulate_interrupted_schedule
    from ckptplan.engine.weibull_montecarlo import simulate_weibull_schedule, weibull_failure_draw

    S, F, T = [0.0, 3000.0, 9000.0], [3.0, 1.0, 1.5], [30.0, 60.0, 45.0]
    for seed, (w, C, M, R) in enumerate([(20_000.0, 1.0, 600.0, 10.0), (5_000.0, 2.0, 200.0, 5.0)]):
        plain = simulate_schedule(w, T, C, M, R, S, F, runs=800, seed=seed)
        for sd in (0.3, 1.0):
            zero = simulate_async_schedule(w, S, F, T, C, M, R, 0.0, sd, runs=800, seed=seed)
            assert np.array_equal(zero["wall"], plain["wall"]) and np.array_equal(zero["failures"], plain["failures"])
        weib = simulate_weibull_schedule(w, S, T, C, M, R, 0.7, runs=800, seed=seed)
        zero = simulate_async_schedule(w, S, F, T, C, M, R, 0.0, 0.3, runs=800, seed=seed,
                                       failure_draw=weibull_failure_draw(M, 0.7))
        assert np.array_equal(zero["wall"], weib["wall"]) and np.array_equal(zero["failures"], weib["failures"])
        written = simulate_async_schedule(w, S, F, T, C, M, R, 8.0, 0.2, runs=800, seed=seed)
        assert np.mean(written["wall"]) > np.mean(plain["wall"])          # the write costs wall time
        spotless = simulate_interrupted_schedule(w, S, F, T, C, M, R, np.inf, 0.0, 5.0, 0.0, runs=800, seed=seed)
        assert not spotless["preemptions"].any() and not spotless["wait"].any()
        down = simulate_interrupted_schedule(w, S, F, T, C, M, R, np.inf, 0.0, 5.0, 4.0, runs=800, seed=seed)
        assert np.mean(down["wall"]) > np.mean(spotless["wall"])


@pytest.mark.parametrize("factors", [(1.0, 1.0), (1.0, 3.0), (3.0, 1.0), (1.0, 0.3)])
def test_a_boundary_near_the_end_is_not_a_free_lunch(factors):
    """A phase that starts inside the job's last expected segment: the expectation once fell below the work itself
    with a long interval there (the search then reported 0 % waste; an event-by-event simulation said 10 % more).
    Now a phase is entered only with an interval of work left: the optimal schedule's expectation is within 0.6 %
    of the simulation of the same schedule, and the plan pays for its saves and failures."""
    from ckptplan.engine.phases import optimal_schedule
    from ckptplan.engine.phases_montecarlo import simulate_schedule

    work, C, M, R = 1000.0, 2.0, 1200.0, 10.0
    for b in (1000.0, 1040.0, 1060.0, 1080.0):   # the job ends near 1,069 min
        best = optimal_schedule(work, C, M, R, [0.0, b], list(factors))
        got = best["schedule"]["total"]
        sim = simulate_schedule(work, best["intervals"], C, M, R, [0.0, b], list(factors), runs=20000, seed=5)["wall"]
        assert abs(got / sim.mean() - 1.0) < 0.006, (b, best["intervals"], got, sim.mean())
        assert got > work * (1.0 + C / best["intervals"].max())   # at least the saves of its longest interval
