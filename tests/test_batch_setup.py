"""Batch tables may describe the design itself: the setup's columns derive C, W and R and add its money (issue 12)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.setup import plan_setup
from ckptplan.engine.pipeline import SETUP_RESULT_COLUMNS
from ckptplan.files.plans import plan_from_data

BASE = {"nodes": 2048, "gpus_per_node": 8, "node_mtbf_h": 6334.0, "useful_training_h": 1166.4,
        "price_per_gpu_hour": 2.5}
ROWS = [
    {"name": "sized, spares", "parameters_b": 405, "aggregate_write_gb_s": 2000.0, "detection_min": 2,
     "repair_h": 24, "spares": 8, "swap_min": 2, "replacement_share": 0.78, "price_per_gb_month": 0.02,
     "retention": 3},
    {"name": "measured stall wins", "checkpoint_stall_min": 0.5, "parameters_b": 70, "aggregate_write_gb_s": 100.0},
    {"name": "async", "parameters_b": 70, "write_gb_s_per_writer": 0.5, "d2h_gb_s_per_writer": 10.0,
     "async_slowdown_fraction": 0.05, "startup_min": 3, "init_min": 1, "init_per_1000_nodes_min": 0.5},
    {"name": "plain", "checkpoint_stall_min": 1.0, "restart_min": 5.0},
]


def _table(rows):
    return pd.DataFrame([{**BASE, **r} for r in rows])


def test_every_row_equals_plan_setup():
    out = evaluate_rows(_table(ROWS))
    assert (out["status"] == "ok").all(), out["error"].tolist()
    for i, r in enumerate(ROWS):
        plan = plan_from_data({"scenario": {**BASE, **r}})
        f = plan_setup(plan.scenario, plan.setup).figures
        row = out.iloc[i]
        assert row["total_cost"] == pytest.approx(f["total_cost"], rel=1e-12), r["name"]
        assert row["compute_cost"] == pytest.approx(f["compute_cost"], rel=1e-12), r["name"]
        assert row["cost_per_useful_gpu_hour"] == pytest.approx(f["cost_per_useful_gpu_hour"], rel=1e-12), r["name"]
        assert row["wall_h"] == pytest.approx(f["wall_h"], rel=1e-12), r["name"]
        assert row["checkpoint_stall_min"] == pytest.approx(f["checkpoint_stall_min"], rel=1e-12), r["name"]
        if f["checkpoint_size_gb"] is not None:
            assert row["checkpoint_size_gb"] == pytest.approx(f["checkpoint_size_gb"])
        assert row["storage_cost"] == pytest.approx(f["storage_cost"], abs=1e-9)
        assert row["spare_cost"] == pytest.approx(f["spare_cost"], abs=1e-9)


def test_a_bad_setup_cell_is_a_row_error_naming_the_field():
    out = evaluate_rows(_table(ROWS + [{"name": "bad", "parameters_b": -1, "aggregate_write_gb_s": 100.0}]))
    bad = out.iloc[-1]
    assert bad["status"] == "error" and "parameters_b=-1.0: must be > 0" in bad["error"]
    assert (out["status"].iloc[:-1] == "ok").all()


def test_batch_command_with_setup_columns(tmp_path):
    src, dst = tmp_path / "designs.csv", tmp_path / "out.csv"
    _table(ROWS).to_csv(src, index=False)
    res = CliRunner().invoke(app, ["batch", str(src), "-o", str(dst), "--no-template"])
    assert res.exit_code == 0, res.output
    got = pd.read_csv(dst)
    assert set(SETUP_RESULT_COLUMNS) <= set(got.columns)
    assert got["total_cost"].notna().all() and (got["total_cost"] >= got["compute_cost"]).all()
    assert "design_cost" not in got.columns
