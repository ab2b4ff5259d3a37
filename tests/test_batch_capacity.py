"""Batch rows' capacity policies (engine.batch_capacity, ``ckptplan batch --capacity``) equal ``compare --json``'s,
row by row: all on-demand, all spot, spot with an on-demand fallback."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.batch_capacity import CAPACITY_COLUMNS, CAPACITY_NUMBER_COLUMNS, NO_DEADLINE, NO_PREEMPTIONS
from ckptplan.engine.fields import CAPACITY_FALLBACK_FIELDS, CAPACITY_FIELDS, CAPACITY_KEYS, CAPACITY_TEXT_FIELDS, lookup
from ckptplan.engine.sweep import fill_from_template
from ckptplan.files import load_plan

from spot_reference import capacity_policies_loop, simulate_capacity_loop

POLICY = {"on_demand": "on-demand", "spot": "spot", "fallback": "fallback"}
# the rows differ in price, notice (a save that fits it or not), rate, wait, downtime and deadline; every row gives
# every column (a blank cell is a field not given, as compare without the option)
ROWS = [
    # a threshold that matters: spot is late one run in ten, the fallback never, at a cost between the two
    dict(name="aws-2min", useful_training_h=48.0, deadline_h=62.0, preemptions_per_h=0.2, preemption_notice_min=2.0,
         spot_price_per_gpu_hour=1.0, capacity_wait_min=30.0, price_per_gpu_hour=2.5, downtime_min=None),
    dict(name="gcp-30s", useful_training_h=48.0, deadline_h=60.0, preemptions_per_h=0.1, preemption_notice_min=0.5,
         spot_price_per_gpu_hour=0.8, capacity_wait_min=5.0, price_per_gpu_hour=3.0, downtime_min=None),
    dict(name="slack-downtime", useful_training_h=40.0, deadline_h=70.0, preemptions_per_h=0.05,
         preemption_notice_min=2.0, spot_price_per_gpu_hour=1.2, capacity_wait_min=10.0, price_per_gpu_hour=2.0,
         downtime_min=5.0),
    dict(name="no-spot-price", useful_training_h=48.0, deadline_h=58.0, preemptions_per_h=0.3,
         preemption_notice_min=None, spot_price_per_gpu_hour=None, capacity_wait_min=None, price_per_gpu_hour=2.5,
         downtime_min=None),
    dict(name="on-demand-only", useful_training_h=48.0, deadline_h=60.0, preemptions_per_h=None,
         preemption_notice_min=None, spot_price_per_gpu_hour=None, capacity_wait_min=None, price_per_gpu_hour=2.5,
         downtime_min=None),
    dict(name="no-deadline", useful_training_h=48.0, deadline_h=None, preemptions_per_h=0.2, preemption_notice_min=2.0,
         spot_price_per_gpu_hour=1.0, capacity_wait_min=30.0, price_per_gpu_hour=2.5, downtime_min=None),
]
PRICED = 4


@pytest.fixture(scope="module")
def compared():
    plan = load_plan("seed")
    table, _ = fill_from_template(pd.DataFrame(ROWS), plan.scenario, "seed", setup=plan.setup, fill_blanks=False)
    return evaluate_rows(table, capacity=True)


def _compare_json(row: dict) -> dict:
    args = ["compare", "-t", "seed", "--json"]
    for k, v in row.items():
        if k != "name" and v is not None:
            args += ["--" + k.replace("_", "-"), str(v)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


@pytest.mark.parametrize("p", range(PRICED))
def test_each_row_is_what_compare_says(compared, p):
    out = compared
    assert out["status"][p] == "ok", out["error"][p]
    policies = _compare_json(ROWS[p])["capacity"]["policies"]
    for key in CAPACITY_KEYS:
        for f in CAPACITY_FIELDS + (CAPACITY_FALLBACK_FIELDS if key == "fallback" else ()):
            got, want = out[f"{key}_{f.name}"][p], policies[POLICY[key]][f.name]
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9), (key, f.name, got, want)
    on_time = [k for k in CAPACITY_KEYS if policies[POLICY[k]]["p_finish_by_deadline"]
               >= policies["on-demand"]["p_finish_by_deadline"]]
    assert out["cheapest_capacity_on_time"][p] == min(on_time, key=lambda k: policies[POLICY[k]]["mean_cost"])


def test_the_threshold_search_matters_on_the_first_row(compared):
    row = compared.iloc[0]
    assert row["spot_p_finish_by_deadline"] < row["on_demand_p_finish_by_deadline"]
    assert row["fallback_p_finish_by_deadline"] >= row["fallback_target_p_finish"] == row["on_demand_p_finish_by_deadline"]
    assert 0 < row["fallback_threshold_min"] < row["deadline_h"] * 60
    assert row["spot_mean_cost"] < row["fallback_mean_cost"] < row["on_demand_mean_cost"]
    assert row["cheapest_capacity_on_time"] == "fallback"


def test_rows_without_spot_or_deadline_are_blank_with_a_note(compared):
    out = compared
    assert "spot_price_per_gpu_hour" in out["capacity_note"][3]            # priced at the on-demand price, said so
    assert out["spot_cost_p50"][3] > out["on_demand_cost_p50"][3] * 0.9
    for p, note in ((4, NO_PREEMPTIONS), (5, NO_DEADLINE)):
        assert out["status"][p] == "ok" and out["capacity_note"][p] == note
        assert all(np.isnan(out[c][p]) for c in CAPACITY_NUMBER_COLUMNS) and out["cheapest_capacity_on_time"][p] == ""
    assert not np.isnan(out["wall_h"][4])                                   # the row itself is answered


@pytest.mark.parametrize("changing", [dict(failure_phases=[{"start_h": 0.0, "rate_factor": 3.0},
                                                             {"start_h": 12.0, "rate_factor": 1.0}]),
                                      dict(weibull_shape_from_start=0.7)])
def test_a_row_with_a_changing_failure_rate_is_what_compare_says(tmp_path, changing):
    """A row with failure phases or a Weibull shape from the start is compared on its schedules, jointly with a
    constant-rate row, and gives its own ``compare --json`` figures."""
    import tomli_w

    from ckptplan.engine.scenario import derived_scenario, scenario_to_dict, to_table

    plan = load_plan("seed")
    given = {k: v for k, v in ROWS[0].items() if k != "name" and v is not None}
    sc = derived_scenario(plan.scenario, **given, **changing)
    toml = tmp_path / "changing.toml"
    toml.write_text(tomli_w.dumps({"scenario": {k: v for k, v in scenario_to_dict(sc).items()
                                                if k not in ("domains", "failure_phases")},
                                   **({"failure_phases": changing["failure_phases"]} if "failure_phases" in changing
                                      else {})}))
    res = CliRunner().invoke(app, ["compare", "--scenario", str(toml), "--json"])
    assert res.exit_code == 0, res.output
    policies = json.loads(res.output)["capacity"]["policies"]
    assert len(policies["spot"]["schedule"]) > 1
    out = evaluate_rows(to_table([sc, derived_scenario(plan.scenario, **given)]), capacity=True)
    assert list(out["status"]) == ["ok", "ok"], list(out["error"])
    for key in CAPACITY_KEYS:
        for f in CAPACITY_FIELDS + (CAPACITY_FALLBACK_FIELDS if key == "fallback" else ()):
            got, want = out[f"{key}_{f.name}"][0], policies[POLICY[key]][f.name]
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9), (key, f.name, got, want)
    assert out["on_demand_mean_cost"][1] != out["on_demand_mean_cost"][0]     # the changing rate changes the answer


def test_a_tiered_batch_is_refused():
    with pytest.raises(ValueError, match="--capacity"):
        evaluate_rows(pd.DataFrame([]), capacity=True, failure_classes={"any": 1.0},
                      tiers=[{"name": "store", "every": 1, "checkpoint_stall_min": 0.5, "restore_min": 0.0,
                              "survives": ["any"]}])


def test_capacity_columns_are_in_the_registry():
    for c in CAPACITY_NUMBER_COLUMNS:
        assert lookup(c).name == c and lookup(c).unit
    assert lookup("fallback_threshold_min").label.startswith("Spot, on-demand fallback")
    assert set(CAPACITY_COLUMNS) == set(CAPACITY_NUMBER_COLUMNS) | set(CAPACITY_TEXT_FIELDS)
    with pytest.raises(KeyError):
        lookup("spot_threshold_min")


def test_batch_command_writes_the_capacity_columns(tmp_path):
    src = tmp_path / "rows.csv"
    pd.DataFrame(ROWS[4:6]).to_csv(src, index=False)
    res = CliRunner().invoke(app, ["batch", str(src), "-o", str(tmp_path / "out.csv"), "--capacity"])
    assert res.exit_code == 0, res.output
    got = pd.read_csv(tmp_path / "out.csv")
    assert set(CAPACITY_COLUMNS) <= set(got.columns)
    assert list(got["capacity_note"]) == [NO_PREEMPTIONS, NO_DEADLINE]


JOBS = [dict(work=w * 60.0, C=2.0, M=1200.0, R=10.0, P=60.0 / r, N=n, Wc=wc, deadline=d * 60.0, price=2.5,
             spot_price=sp, gpus=1024.0, D=dn)
        for w, r, n, wc, d, sp, dn in [(48, 0.2, 2.0, 30.0, 62, 1.0, 0.0), (48, 0.1, 0.5, 5.0, 60, 0.8, 0.0),
                                       (40, 0.05, 2.0, 10.0, 70, 1.2, 5.0), (12, 0.3, 0.0, 0.0, 13, 1.0, 0.0),
                                       (8, 0.5, 1.0, 60.0, 30, 0.7, 2.0)]]


def test_jointly_simulated_jobs_are_run_for_run_each_jobs_own_simulation():
    from ckptplan.engine.spot_montecarlo import SPOT_BLOCK, capacity_job, simulate_capacity_jobs

    jobs = [capacity_job(**a) for a in JOBS]
    policies = ["on-demand", "spot", "fallback", "fallback", "fallback", "spot", "on-demand", "fallback"]
    thresholds = [0.0, 0.0, 300.0, 20.0, 5000.0, 0.0, 0.0, 0.0]
    mixed = [jobs[i % len(jobs)] for i in range(len(policies))]
    runs = SPOT_BLOCK // 3 + 1                                        # groups of two jobs: every group boundary crossed
    for job, policy, th, sim in zip(mixed, policies, thresholds,
                                    simulate_capacity_jobs(mixed, policies, thresholds, runs=runs, seed=7)):
        ref = simulate_capacity_loop(job, policy, th, runs=runs, seed=7)
        for k in ("wall", "cost", "finished"):
            np.testing.assert_array_equal(sim[k], ref[k], err_msg=f"{policy} {th} {k}")


def test_jointly_searched_thresholds_are_each_jobs_own():
    from ckptplan.engine.spot import capacity_policies, capacity_policies_many
    from ckptplan.engine.spot_montecarlo import capacity_job

    for a, got in zip(JOBS, capacity_policies_many(JOBS, runs=600, seed=3)):
        assert got == capacity_policies(**a, runs=600, seed=3)   # searched with the others or alone
        assert got == capacity_policies_loop(capacity_job(**a), a["deadline"], runs=600, seed=3)   # one at a time


def test_a_spot_row_compare_refuses_is_an_error_row_with_the_same_rule():
    row = dict(ROWS[0], async_write_min=3.0)
    plan = load_plan("seed")
    table, _ = fill_from_template(pd.DataFrame([row]), plan.scenario, "seed", setup=plan.setup, fill_blanks=False)
    out = evaluate_rows(table, capacity=True)
    res = CliRunner().invoke(app, ["compare", "-t", "seed", "--json", "--async-write-min", "3",
                                   "--preemptions-per-h", "0.2", "--deadline-h", "62", "--useful-training-h", "48"])
    assert res.exit_code != 0 and out["status"][0] == "error"
    rule = res.output.strip().splitlines()[-1].split("async_write_min")[-1].split(":", 1)[-1].strip()
    assert "async_write_min" in out["error"][0] and rule[:40] in out["error"][0], (rule, out["error"][0])


def test_jobs_with_a_changing_rate_simulated_with_constant_ones_are_each_jobs_own():
    """A group of jobs holding phase jobs and constant-rate ones (the changing-rate path then runs every job of the
    group) gives each job exactly the figures it has alone."""
    from ckptplan.engine.spot import capacity_policies, capacity_policies_many

    phased = [dict(JOBS[0], phase_starts=[0.0, 600.0], phase_factors=[3.0, 1.0]),
              dict(JOBS[2], phase_starts=[300.0], phase_factors=[0.5])]
    mixed = [JOBS[0], phased[0], JOBS[2], phased[1], JOBS[3]]
    for a, got in zip(mixed, capacity_policies_many(mixed, runs=400, seed=3)):
        assert got == capacity_policies(**a, runs=400, seed=3)
