"""Published fleet rates as inputs: `--failure-rate-source`, the `failure_rate_source` field, `failure-rates`."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.cli import app

runner = CliRunner()


@pytest.mark.parametrize("nodes, expected", [(2048, 1.80), (16384, 0.23)])
def test_plan_reproduces_the_published_job_mtbf(nodes, expected):
    res = runner.invoke(app, ["plan", "--failure-rate-source", "meta-rsc1", "--nodes", str(nodes),
                              "--gpus-per-node", "8", "--json"])
    assert res.exit_code == 0, res.output
    assert round(json.loads(res.output)["job_mtbf_h"], 2) == expected


def test_llama3_rate_gives_its_job_mtbf():
    res = runner.invoke(app, ["plan", "-t", "llama3-405b", "--failure-rate-source", "llama3-405b", "--json"])
    assert round(json.loads(res.output)["job_mtbf_h"], 2) == 3.09


def test_scenario_field_in_a_file_and_in_a_table(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[scenario]\nname = "fleet"\nfailure_rate_source = "meta-rsc1"\ncheckpoint_stall_min = 1.0\n'
                    'nodes = 2048\nuseful_training_h = 100\nprice_per_gpu_hour = 2\n')
    sc = files.load_scenario(path)
    assert sc.node_mtbf_h == pytest.approx(24000 / 6.5)
    table = engine.to_table([sc]).drop(columns=["node_mtbf_h"])
    assert engine.evaluate(table)["job_mtbf_h"].iloc[0] == pytest.approx(24000 / 6.5 / 2048)
    bad = pd.concat([table, table.assign(failure_rate_source="nowhere")], ignore_index=True)
    with pytest.raises(engine.InputError, match="row 1: failure_rate_source.*nowhere.*meta-rsc1"):
        engine.evaluate(bad)


def test_a_source_and_a_different_node_mtbf_are_refused():
    with pytest.raises(engine.InputError, match="failure_rate_source.*give one of them"):
        files.load_scenario("seed").replace(failure_rate_source="meta-rsc1")
    res = runner.invoke(app, ["plan", "--failure-rate-source", "meta-rsc9"])
    assert res.exit_code == 2 and "meta-rsc1" in res.output and "Traceback" not in res.output
    both = runner.invoke(app, ["plan", "--failure-rate-source", "meta-rsc1", "--node-mtbf-h", "5000", "--json"])
    assert both.exit_code == 2 and "give one of them" in both.output


def test_a_node_mtbf_on_the_command_line_replaces_a_files_source(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[scenario]\nname = "fleet"\nfailure_rate_source = "meta-rsc1"\ncheckpoint_stall_min = 1.0\n'
                    'nodes = 100\nuseful_training_h = 100\nprice_per_gpu_hour = 2\n')
    res = runner.invoke(app, ["plan", "--scenario", str(path), "--node-mtbf-h", "5000", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["job_mtbf_h"] == pytest.approx(50.0)


def test_failure_rates_lists_sources():
    res = runner.invoke(app, ["failure-rates", "--json"])
    rates = {r["name"]: r for r in json.loads(res.output)}
    assert rates["meta-rsc1"]["failures_per_1000_node_days"] == 6.5
    assert "Kokolis" in rates["meta-rsc1"]["source"] and "2407.21783" in rates["llama3-405b"]["source"]
    assert runner.invoke(app, ["failure-rates"]).exit_code == 0
