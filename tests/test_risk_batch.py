"""Input ranges as batch columns (<field>_low/_high/_dist/_mode): read into the [uncertainty] model, each row's
P10/P50/P90 and top swing equal to the engine's risk and tornado of that row's scenario; bad cells are error rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.batch_risk import RANGE_RESULT_COLUMNS, evaluate_ranges
from ckptplan.engine.errors import InputError
from ckptplan.engine.risk import risk_percentiles
from ckptplan.engine.sensitivity import tornado
from ckptplan.engine.uncertainty import uncertainty_from_dict
from ckptplan.files import load_plan

runner = CliRunner()

ROWS = """name,nodes,node_mtbf_h,node_mtbf_h_low,node_mtbf_h_high,repair_h_low,repair_h_high,repair_h_dist,repair_h_mode
a,2048,6000,3000,12000,8,72,pert,
b,1024,6000,,,8,72,,
c,2048,5000,2000,9000,8,72,triangular,30
plain,2048,6000,,,,,,
"""
#: each row's ranges as an [uncertainty] table (what the columns say)
TABLES = {
    "a": {"node_mtbf_h": [3000, 12000], "repair_h": {"dist": "pert", "low": 8, "high": 72}},
    "b": {"repair_h": [8, 72]},
    "c": {"node_mtbf_h": [2000, 9000], "repair_h": {"dist": "triangular", "low": 8, "mode": 30, "high": 72}},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[pd.DataFrame, pd.DataFrame]:
    d = tmp_path_factory.mktemp("ranges")
    (d / "rows.csv").write_text(ROWS, encoding="utf-8")
    out = {}
    for ext in ("csv", "parquet"):
        res = runner.invoke(app, ["batch", str(d / "rows.csv"), "-o", str(d / f"out.{ext}"), "-t",
                                  "llama3-405b-storage", "--risk-draws", "400"])
        assert res.exit_code == 0, res.output
        out[ext] = pd.read_csv(d / "out.csv") if ext == "csv" else pd.read_parquet(d / "out.parquet")
    return out["csv"], out["parquet"]


def test_batch_ranges_read_back_with_pandas_equal_the_engine_per_row(results):
    """Each row's percentiles are engine.risk.risk_percentiles of its scenario and ranges (same draws and seed),
    its top swing the first line of engine.sensitivity.tornado; a row without ranges gets none."""
    plan = load_plan("llama3-405b-storage")
    for table in results:
        assert [c.name for c in RANGE_RESULT_COLUMNS] == list(table.columns[-len(RANGE_RESULT_COLUMNS):])
        assert {"node_mtbf_h_low", "node_mtbf_h_high", "repair_h_dist", "repair_h_mode"} <= set(table.columns)
        by = table.set_index("name")
        assert (by["status"] == "ok").all()
        for name, ranges in TABLES.items():
            row = by.loc[name]
            sc = plan.scenario.replace(nodes=int(row["nodes"]), node_mtbf_h=float(row["node_mtbf_h"]),
                                       failure_rate_source=None)
            inputs = uncertainty_from_dict(ranges, sc, plan.setup)
            want = risk_percentiles(sc, plan.setup, (), inputs, draws=400).iloc[0]
            for fig in ("total_cost", "wall_h"):
                for q in (10, 50, 90):
                    assert row[f"risk_{fig}_p{q}"] == pytest.approx(want[f"{fig}_p{q}"], rel=1e-9)
            assert row["risk_p_finish_by_deadline"] == pytest.approx(want["p_finish_by_deadline"])
            assert row["risk_draws"] == 400
            swing = tornado(sc, plan.setup, (), inputs, outputs=("total_cost",)).iloc[0]
            assert (row["top_swing_input"], row["top_swing_total_cost"]) == (swing["input"],
                                                                             pytest.approx(swing["swing"], rel=1e-9))
        assert row["risk_total_cost_p10"] < row["total_cost"] * 1.5 and row["risk_total_cost_p10"] < row[
            "risk_total_cost_p90"]
        plain = by.loc["plain"]
        assert plain["risk_draws"] == 0 and np.isnan(plain["risk_total_cost_p50"])


@pytest.mark.parametrize("cells, message", [
    ({"node_mtbf_h_low": 7000, "node_mtbf_h_high": 9000},
     "node_mtbf_h_low=7000, node_mtbf_h_high=9000: must hold the row's value node_mtbf_h = 6000"),
    ({"node_mtbf_h_low": "lots", "node_mtbf_h_high": 9000}, "node_mtbf_h_low='lots': must be a number"),
    ({"node_mtbf_h_low": 3000}, "node_mtbf_h_high is blank: a range needs node_mtbf_h_low and node_mtbf_h_high"),
    ({"node_mtbf_h_low": 3000, "node_mtbf_h_high": 9000, "node_mtbf_h_dist": "normal"},
     "node_mtbf_h_dist='normal': must be one of"),
    ({"node_mtbf_h_low": 3000, "node_mtbf_h_high": 9000, "node_mtbf_h_mode": 9500},
     "node_mtbf_h_mode=9500: must lie in [low, high] = [3000, 9000]"),
    ({"node_mtbf_h_low": 3000, "node_mtbf_h_high": 9000, "node_mtbf_h_dist": "uniform", "node_mtbf_h_mode": 5000},
     "node_mtbf_h_mode=5000: a uniform distribution takes no mode"),
    ({"nodes_low": 100.5, "nodes_high": 3000}, "nodes_low=100.5: must be a whole number >= 1 (the rule of nodes)"),
    ({"price_per_gpu_hour_low": -1, "price_per_gpu_hour_high": 3}, "price_per_gpu_hour_low=-1: must be"),
])
def test_a_malformed_range_is_an_error_row_naming_its_cells(cells, message):
    row = {"nodes": 2048, "node_mtbf_h": 6000.0, "useful_training_h": 1000.0, "checkpoint_stall_min": 1.0,
           "restart_min": 10.0, "price_per_gpu_hour": 2.5}
    good = {**row, "name": "good"}
    table = pd.DataFrame([good, {**row, "name": "bad", **cells}])
    for c in cells:
        table.loc[0, c] = None
    out = evaluate_ranges(table, risk_draws=50)
    assert list(out["status"]) == ["ok", "error"]
    assert message in out["error"].iloc[1], out["error"].iloc[1]
    assert out["total_cost"].iloc[1] > 0   # its plan is valid and kept
    assert np.isnan(out["risk_total_cost_p50"].iloc[1]) and out["top_swing_input"].iloc[1] == ""


def test_evaluate_rows_and_dask_refuse_range_columns_by_name(tmp_path):
    table = pd.DataFrame({"nodes": [128], "node_mtbf_h": [2560.0], "useful_training_h": [100.0],
                          "checkpoint_stall_min": [1.0], "price_per_gpu_hour": [2.0], "node_mtbf_h_low": [1000.0], "node_mtbf_h_high": [4000.0]})
    with pytest.raises(InputError, match="node_mtbf_h_low, node_mtbf_h_high.*input range columns"):
        evaluate_rows(table)
    path = tmp_path / "rows.csv"
    table.to_csv(path, index=False)
    res = runner.invoke(app, ["batch", str(path), "-o", str(tmp_path / "o.csv"), "--scheduler", "dask"])
    assert res.exit_code != 0 and "--scheduler" in res.output and "node_mtbf_h_low" in res.output
    res = runner.invoke(app, ["batch", str(path), "-o", str(tmp_path / "o.csv"), "--risk-draws", "1"])
    assert res.exit_code != 0 and "risk_draws" in res.output


def test_hostile_range_cells_are_error_rows_not_crashes():
    """A whole number beyond the float range, infinity and a boolean in a range cell: error rows naming them."""
    row = {"nodes": 128, "node_mtbf_h": 2560.0, "useful_training_h": 100.0, "checkpoint_stall_min": 1.0,
           "price_per_gpu_hour": 2.0, "node_mtbf_h_high": 4000.0}
    table = pd.DataFrame([{**row, "node_mtbf_h_low": v} for v in (10**400, float("inf"), True, 1000.0)])
    out = evaluate_ranges(table, risk_draws=20)
    assert list(out["status"]) == ["error"] * 3 + ["ok"]
    assert "node_mtbf_h_low=10000000000000000000... (401 characters): must be a finite number" in out["error"].iloc[0]
    assert "node_mtbf_h_low=inf: must be a finite number" in out["error"].iloc[1]
    assert "node_mtbf_h_low=True: must be a number" in out["error"].iloc[2]


# ---------------------------------------------------- a template's or a .toml batch file's [uncertainty] table

TEMPLATE_RANGES = """
[uncertainty]
node_mtbf_h = [3000, 12000]
aggregate_write_gb_s = {dist = "lognormal", low = 1000, high = 3000}
spares = [0, 32]
"""
DEFAULTED_ROWS = """name,nodes,node_mtbf_h,node_mtbf_h_low,node_mtbf_h_high
own,2048,6000,5000,7000
template,1024,6000,,
outside,2048,20000,,
"""


def _row_risk(tmp_path, template, name: str, nodes: int, mtbf: float, ranges: dict, draws: int) -> dict:
    """`ckptplan risk --json` of one row's scenario (the template with the row's values) and ranges (an
    [uncertainty] table in the batch's order of range columns: the draws follow the inputs' order)."""
    import json
    from dataclasses import replace

    import tomli_w

    from ckptplan.files.scenario_toml import plan_toml

    sc = template.scenario.replace(name=name, nodes=nodes, node_mtbf_h=mtbf, failure_rate_source=None)
    path = tmp_path / f"row-{name}.toml"
    inline = {k: tomli_w.dumps({"x": v}).strip().removeprefix("x = ") if isinstance(v, list) else
              "{" + ", ".join(f"{a} = {b!r}".replace("'", '"') for a, b in v.items()) + "}" for k, v in ranges.items()}
    path.write_text(plan_toml(replace(template, scenario=sc, designs=(), uncertainty=())) + "[uncertainty]\n"
                    + "".join(f"{k} = {v}\n" for k, v in inline.items()), encoding="utf-8")
    res = runner.invoke(app, ["risk", "--scenario", str(path), "--draws", str(draws), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["plans"][0]


def test_a_templates_uncertainty_is_every_rows_default_range(tmp_path):
    """A template's [uncertainty] gives every row its ranges; a row's own cells win (field by field); the output
    says which ranges are defaults and whose (summary and the ranges_from column); each ok row equals
    `ckptplan risk` of its own scenario with those ranges to 1e-9; a default that misses a row's value is that
    row's error, naming the template."""
    import json

    from ckptplan.files.scenarios import template_path

    template = tmp_path / "ranged.toml"
    template.write_text(template_path("llama3-405b-storage.toml").read_text(encoding="utf-8") + TEMPLATE_RANGES,
                        encoding="utf-8")
    (tmp_path / "rows.csv").write_text(DEFAULTED_ROWS, encoding="utf-8")
    res = runner.invoke(app, ["batch", str(tmp_path / "rows.csv"), "-o", str(tmp_path / "out.csv"), "-t", str(template),
                              "--risk-draws", "300", "--json"])
    assert res.exit_code == 3, res.output   # one row fails
    summary = json.loads(res.output)["template"]["ranges"]
    whose = "template " + str(template) + "'s [uncertainty]"
    assert summary == {"node_mtbf_h": {"from": whose, "rows": 2, "own": 1},
                       "aggregate_write_gb_s": {"from": whose, "rows": 3, "own": 0},
                       "spares": {"from": whose, "rows": 3, "own": 0}}
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False).set_index("name")
    assert out.loc["own", "ranges_from"] == f"aggregate_write_gb_s: {whose}; spares: {whose}"
    assert out.loc["template", "ranges_from"].startswith(f"node_mtbf_h: {whose}; ")
    assert out.loc["outside", "status"] == "error" and (
        f"must hold the row's value node_mtbf_h = 20000 (low <= base <= high) (the default range of {whose})"
        in out.loc["outside", "error"])
    plan = load_plan(template)
    later = {"aggregate_write_gb_s": {"dist": "lognormal", "low": 1000, "high": 3000}, "spares": [0, 32]}
    for name, nodes, node_range in (("own", 2048, [5000, 7000]), ("template", 1024, [3000, 12000])):
        want = _row_risk(tmp_path, plan, name, nodes, 6000.0, {"node_mtbf_h": node_range, **later}, 300)
        row = out.loc[name]
        assert row["status"] == "ok" and int(row["risk_draws"]) == 300
        for fig in ("total_cost", "wall_h"):
            for q in (10, 50, 90):
                assert float(row[f"risk_{fig}_p{q}"]) == pytest.approx(want[f"{fig}_p{q}"], rel=1e-9)


def test_a_toml_batch_files_uncertainty_wins_over_the_templates(tmp_path):
    """A .toml batch file may carry its own [uncertainty] table: every row's default, before the template's."""
    import json

    from ckptplan.files.scenarios import template_path

    template = tmp_path / "ranged.toml"
    template.write_text(template_path("llama3-405b-storage.toml").read_text(encoding="utf-8") + TEMPLATE_RANGES,
                        encoding="utf-8")
    rows = tmp_path / "rows.toml"
    rows.write_text('[[scenario]]\nname = "a"\nnodes = 2048\nnode_mtbf_h = 6000\n'
                    '[[scenario]]\nname = "b"\nnodes = 1024\nnode_mtbf_h = 6000\nnode_mtbf_h_low = 5500\n'
                    'node_mtbf_h_high = 6500\n[uncertainty]\nnode_mtbf_h = [4000, 8000]\n', encoding="utf-8")
    res = runner.invoke(app, ["batch", str(rows), "-o", str(tmp_path / "out.csv"), "-t", str(template),
                              "--risk-draws", "200", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)["template"]["ranges"]
    assert summary["node_mtbf_h"] == {"from": "rows.toml's [uncertainty]", "rows": 1, "own": 1}
    assert summary["spares"]["from"] == "template " + str(template) + "'s [uncertainty]"
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False).set_index("name")
    assert (out.loc["a", "node_mtbf_h_low"], out.loc["a", "node_mtbf_h_high"]) == (4000, 8000)
    assert (out.loc["b", "node_mtbf_h_low"], out.loc["b", "node_mtbf_h_high"]) == (5500, 6500)
    plan = load_plan(template)
    want = _row_risk(tmp_path, plan, "a", 2048, 6000.0, {
        "node_mtbf_h": [4000, 8000], "aggregate_write_gb_s": {"dist": "lognormal", "low": 1000, "high": 3000},
        "spares": [0, 32]}, 200)
    assert float(out.loc["a", "risk_total_cost_p50"]) == pytest.approx(want["total_cost_p50"], rel=1e-9)
    bad = tmp_path / "bad.toml"
    bad.write_text(rows.read_text(encoding="utf-8").replace("node_mtbf_h = [4000, 8000]", "bogus_field = [1, 2]"),
                   encoding="utf-8")
    res = runner.invoke(app, ["batch", str(bad), "-o", str(tmp_path / "bad.csv"), "-t", str(template)])
    assert res.exit_code == 2 and "bogus_field" in res.output and "Traceback" not in res.output
