"""Batch rows' recovery strategies (engine.batch_strategies, ``ckptplan batch --strategies``) equal ``compare``'s,
row by row; elastic rows get their Monte Carlo runs (engine.elastic_montecarlo) in a batch with --deadline."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.batch_strategies import STRATEGY_COLUMNS
from ckptplan.engine.fields import STRATEGY_FIELDS, STRATEGY_KEYS, lookup
from ckptplan.engine.strategies import recovery_strategies
from ckptplan.engine.sweep import fill_from_template
from ckptplan.files import load_plan

# every row gives the columns another row gives (a blank cell is a field not given, not the template's value)
ROWS = [dict(name="floor-124", nodes_per_replica=16, min_replicas=124, shrink_pause_min=1.0, regrow_pause_min=1.0,
             deadline_h=1296.0, spares=8),
        dict(name="floor-120-lossy", nodes_per_replica=16, min_replicas=120, shrink_keeps_progress=0,
             shrink_pause_min=2.0, regrow_pause_min=0.5, spares=4, deadline_h=1400.0),
        dict(name="no-deadline", nodes_per_replica=32, min_replicas=60, deadline_h=None, spares=0),  # 0: the best
        dict(name="no-replicas")]


@pytest.fixture(scope="module")
def priced():
    plan = load_plan("llama3-405b-storage")
    table, fill = fill_from_template(pd.DataFrame(ROWS), plan.scenario, "llama3-405b-storage", setup=plan.setup,
                                     fill_blanks=False)
    return plan, evaluate_rows(table, strategies=True)


def test_each_row_is_what_compare_says(priced):
    plan, out = priced
    for p, given in enumerate(ROWS[:3]):
        changes = {k: v for k, v in given.items() if k not in ("name", "spares")}
        setup = plan.setup.replace(spares=given["spares"]) if "spares" in given else plan.setup
        ref = recovery_strategies(plan.scenario.replace(**changes), setup)
        assert out["status"][p] == "ok", out["error"][p]
        for key, row in zip(STRATEGY_KEYS, ref.to_dict("records")):
            for f in STRATEGY_FIELDS:
                got = out[f"{key}_{f.name}"][p]
                if f.name in row:
                    assert math.isclose(got, row[f.name], rel_tol=1e-9, abs_tol=1e-12), (key, f.name, got, row[f.name])
                else:
                    assert np.isnan(got)                   # no deadline: no deadline columns
        assert out["cheapest_strategy"][p] == STRATEGY_KEYS[int(np.argmin(ref["total_cost"]))]
    assert not np.isnan(out["elastic_p_finish_by_deadline"][0]) and np.isnan(out["elastic_p_finish_by_deadline"][2])


def test_a_row_without_replicas_is_an_error_naming_the_field(priced):
    _, out = priced
    assert out["status"][3] == "error" and "nodes_per_replica" in out["error"][3]
    assert np.isnan(out["wait_total_cost"][3]) and out["cheapest_strategy"][3] == ""


def test_strategy_columns_are_in_the_registry():
    for c in STRATEGY_COLUMNS[:-1]:
        assert lookup(c).name == c
    assert lookup("elastic_spares_total_cost").label.startswith("Elastic + spares")
    assert lookup("elastic_total_cost").label.startswith("Elastic:")


def test_batch_command_writes_the_strategies(tmp_path):
    from typer.testing import CliRunner

    from ckptplan.cli import app

    src = tmp_path / "rows.csv"
    pd.DataFrame(ROWS[:1]).drop(columns=["deadline_h", "spares"]).to_csv(src, index=False)
    res = CliRunner().invoke(app, ["batch", str(src), "-t", "llama3-405b-storage", "-o", str(tmp_path / "out.csv"),
                                   "--strategies"])
    assert res.exit_code == 0, res.output
    got = pd.read_csv(tmp_path / "out.csv")
    assert set(STRATEGY_COLUMNS) <= set(got.columns) and got["cheapest_strategy"][0] in STRATEGY_KEYS


def test_elastic_rows_get_their_monte_carlo_runs():
    from ckptplan.engine.elastic_montecarlo import simulate_elastic

    base = dict(name="a", checkpoint_stall_min=2.0, nodes=128, useful_training_h=720.0, price_per_gpu_hour=2.5,
                node_mtbf_h=2560.0, restart_min=70.0, downtime_min=60.0, nodes_per_replica=16, min_replicas=6,
                deadline_h=772.0, shrink_pause_min=1.0, regrow_pause_min=2.0)
    table = pd.DataFrame([dict(base, on_node_loss="continue"), dict(base, on_node_loss="restart")])
    out = evaluate_rows(table, deadline=True, runs=2000)
    assert list(out["status"]) == ["ok", "ok"]
    sim = simulate_elastic(720.0 * 60, out["chosen_interval_min"][0], 2.0, out["job_mtbf_h"][0] * 60, 10.0, 60.0, 8, 6,
                           1, 1.0, 2.0, runs=2000, seed=int(out["deadline_seed"][0]), final_save=False)
    assert out["mc_wall_h_mean"][0] == pytest.approx(sim.wall.mean() / 60, rel=1e-12)
    assert out["p_finish"][0] == float(np.mean(sim.wall <= 772.0 * 60))
    # the runs agree with the plan's expectation (the last save left out, as the deadline answers do)
    assert abs(out["mc_wall_h_mean"][0] - out["wall_h"][0]) < 3 * out["mc_wall_h_mean_se"][0] + 2.0 / 60
    assert abs(out["mc_failures_mean"][0] - out["expected_failures"][0]) < 3 * np.std(sim.failures) / math.sqrt(2000)
