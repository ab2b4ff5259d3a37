"""Cost conversion, plan comparison, scenario records, tables, presets and evaluate()."""

import math

import numpy as np
import pandas as pd
import pytest

from ckptplan import engine
from ckptplan import files
from ckptplan.engine import InputError


def seed():
    return files.load_scenario("seed")


def test_templates_load_and_name_their_sources():
    names = files.list_templates()
    assert {"seed", "llama3-405b", "fast-storage", "async-save", "power-domains"} <= set(names)
    for name in names:
        sc = files.load_scenario(name)
        assert sc.source, f"{name} must name its source"
    llama = files.load_scenario("llama3-405b")
    assert llama.nodes * llama.gpus_per_node == 16384
    assert "Llama 3" in llama.source
    # 419 unexpected interruptions in 54 days -> job MTBF 3.09 h
    assert engine.evaluate(llama).iloc[0]["job_mtbf_h"] == pytest.approx(54 * 24 / 419, rel=1e-3)


def test_seed_reference_case_through_evaluate():
    row = engine.evaluate(seed()).iloc[0]
    assert row["job_mtbf_h"] == 20.0
    assert round(row["young_interval_min"], 1) == 69.3
    assert round(row["young_min_waste"] * 100, 2) == 5.77
    at256 = engine.evaluate(seed().replace(nodes=256)).iloc[0]
    assert round(at256["young_interval_min"], 1) == 49.0


def test_evaluate_columns_are_consistent():
    table = engine.to_table([files.load_scenario(n) for n in files.list_templates()])
    out = engine.evaluate(table)
    assert len(out) == len(table)
    parts = out[["useful_h", "save_h", "rework_h", "restart_h"]].sum(axis=1)
    np.testing.assert_allclose(parts, out["wall_h"], rtol=1e-12)
    np.testing.assert_allclose(out["total_gpu_hours"], out["wall_h"] * out["nodes"] * out["gpus_per_node"], rtol=1e-12)
    np.testing.assert_allclose(out["total_cost"], out["total_gpu_hours"] * out["price_per_gpu_hour"], rtol=1e-12)
    np.testing.assert_allclose(out["goodput"], out["useful_h"] / out["wall_h"], rtol=1e-12)
    np.testing.assert_allclose(out["waste_fraction"], 1 - out["goodput"], rtol=1e-9)
    assert (out["waste_fraction_at_optimum"] <= out[["waste_fraction_at_young", "waste_fraction_at_daly"]].min(axis=1) + 1e-15).all()
    numeric = out.select_dtypes("number").drop(columns=["interval_min", "runs_per_month", "job_mtbf_h", "deadline_h",
                                                        "node_mtbf_h", "domain1_mtbf_h", "domain1_nodes_per_domain",
                                                        "p_finish_by_deadline",  # NaN without a deadline
                                                        "preemptions_per_h", "preemptions_per_node_h", "preemption_notice_min",
                                                        "capacity_wait_min", "spot_price_per_gpu_hour",
                                                        "nodes_per_replica", "min_replicas",
                                                        "weibull_shape_from_start"],  # optional
                                               errors="ignore")
    assert np.isfinite(numeric.to_numpy()).all()


def test_evaluate_matches_engine_functions_row_by_row():
    sc = files.load_scenario("async-save")
    row = engine.evaluate(sc).iloc[0]
    M = 2560 / 128 * 60
    T = engine.exact_optimal_interval(0.2, M, 4, 0.15)
    assert row["chosen_interval_min"] == T
    assert row["wall_h"] == pytest.approx(engine.expected_wall_time(720 * 60, T, 0.2, M, 10, 4, 0.15) / 60, rel=1e-14)
    assert row["effective_stall_min"] == pytest.approx(0.8)


def test_chosen_interval_and_job_mtbf_override():
    row = engine.evaluate(seed().replace(interval_min=30.0, job_mtbf_h=5.0)).iloc[0]
    assert row["chosen_interval_min"] == 30.0 and row["job_mtbf_h"] == 5.0
    assert row["waste_fraction"] == pytest.approx(engine.waste_fraction(30, 2, 300, 10))


def test_domains_in_tables_and_rows_without_them():
    out = engine.evaluate([files.load_scenario("power-domains"), seed()])
    assert out.loc[0, "job_mtbf_h"] == pytest.approx(1 / (0.9 * 256 / 2560 + 16 / 20000))
    assert out.loc[1, "job_mtbf_h"] == 20.0


def test_with_nodes_keeps_useful_gpu_hours():
    base = seed()
    doubled = base.with_nodes(256)
    assert doubled.useful_training_h == 360.0
    rows = engine.evaluate([base, doubled])
    assert rows.loc[0, "useful_gpu_hours"] == rows.loc[1, "useful_gpu_hours"]
    assert rows.loc[1, "waste_fraction"] > rows.loc[0, "waste_fraction"]
    assert rows.loc[1, "wall_h"] < rows.loc[0, "wall_h"]


def test_compare_faster_storage():
    rows = engine.evaluate([seed(), files.load_scenario("fast-storage")])
    cmp = engine.compare_plans(rows.iloc[0], rows.iloc[1])
    assert cmp["gpu_hours_saved_per_run"] == pytest.approx(rows.loc[0, "total_gpu_hours"] - rows.loc[1, "total_gpu_hours"])
    assert cmp["gpu_hours_saved_per_run"] > 0
    assert cmp["money_saved_per_run"] == pytest.approx(cmp["gpu_hours_saved_per_run"] * 2.5)
    assert cmp["runs_per_month"] == pytest.approx(730.485 / rows.loc[0, "wall_h"])
    assert cmp["money_saved_per_month"] == pytest.approx(cmp["money_saved_per_run"] * cmp["runs_per_month"])
    fixed = engine.compare_plans(rows.iloc[0], rows.iloc[1], runs_per_month=2)
    assert fixed["gpu_hours_saved_per_month"] == pytest.approx(2 * cmp["gpu_hours_saved_per_run"])
    with pytest.raises(InputError, match="runs_per_month"):
        engine.compare_plans(rows.iloc[0], rows.iloc[1], runs_per_month=0)


def test_cost_helpers():
    assert engine.gpu_hours(10.0, 1024) == 10240.0
    assert engine.money(100.0, 2.5) == 250.0
    assert engine.goodput(90.0, 100.0) == 0.9
    with pytest.raises(InputError, match="price_per_gpu_hour"):
        engine.money(1.0, -1)


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize("change, field, rule", [
    ({"checkpoint_stall_min": -1.0}, "checkpoint_stall_min", ">= 0"),
    ({"node_mtbf_h": 0.0}, "node_mtbf_h", "> 0"),
    ({"node_mtbf_h": float("nan"), "job_mtbf_h": None}, "node_mtbf_h", "give node_mtbf_h"),
    ({"nodes": 0}, "nodes", "whole number"),
    ({"useful_training_h": float("inf")}, "useful_training_h", "finite"),
    ({"async_slowdown_fraction": 1.5}, "async_slowdown_fraction", "[0, 1)"),
    ({"checkpoint_stall_min": 0.0}, "checkpoint_stall_min", "no save is free"),
    ({"async_write_min": 40.0, "interval_min": 20.0}, "interval_min", "durable"),
    ({"price_per_gpu_hour": "cheap"}, "price_per_gpu_hour", "must be a number"),
])
def test_scenario_validation(change, field, rule):
    with pytest.raises(InputError) as info:
        seed().replace(**change)
    assert field in str(info.value) and rule in str(info.value)


def test_table_errors_name_row_label_and_column():
    table = engine.to_table([seed(), seed()])
    table.index = ["base", "bad"]
    table.loc["bad", "restart_min"] = -3.0
    with pytest.raises(InputError, match=r"^row bad: restart_min=-3.0: must be >= 0$"):
        engine.evaluate(table)
    with pytest.raises(InputError, match="missing required column"):
        engine.evaluate(engine.to_table([seed()]).drop(columns=["nodes"]))
    mixed = engine.to_table([seed()]).astype({"nodes": object})
    mixed.loc[0, "nodes"] = "many"
    with pytest.raises(InputError, match="row 0: nodes='many': must be a number"):
        engine.evaluate(mixed)


def test_minimal_table_uses_defaults():
    table = pd.DataFrame({"checkpoint_stall_min": [2.0, 0.5], "node_mtbf_h": [2560, 2560], "nodes": [128, 256],
                          "useful_training_h": [100.0, 100.0], "price_per_gpu_hour": [2.0, 2.0]})
    out = engine.evaluate(table)
    assert list(out["gpus"]) == [1024, 2048]
    assert list(out["job_mtbf_h"]) == [20.0, 10.0]


def test_template_errors(tmp_path):
    with pytest.raises(InputError, match="unknown template"):
        files.load_scenario("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text("[scenario]\nname='x'\ncheckpoint_stall_min = 2\nnodes=1\nuseful_training_h=1\nprice_per_gpu_hour=1\nnode_mtbf_h=10\nstal=3\n")
    with pytest.raises(InputError, match="stal.*unknown field"):
        files.load_scenario(bad)
    bad.write_text("[scenario\n")
    with pytest.raises(InputError, match="not valid TOML"):
        files.load_scenario(bad)


def test_round_trip_dict():
    sc = files.load_scenario("power-domains")
    again = engine.scenario_from_dict(engine.scenario_to_dict(sc))
    assert again == sc
    assert math.isclose(engine.evaluate(again).iloc[0]["wall_h"], engine.evaluate(sc).iloc[0]["wall_h"])


@pytest.mark.parametrize("bad", [None, "seed", 3, []])
def test_evaluate_refuses_what_is_no_scenario(bad):
    with pytest.raises(InputError, match="table"):
        engine.evaluate(bad)


@pytest.mark.parametrize("domains", ["abc", [{"mtbf_h": 1.0}], [3]])
def test_scenario_refuses_malformed_domains(domains):
    with pytest.raises(InputError, match="^domains="):
        seed().replace(domains=domains)
