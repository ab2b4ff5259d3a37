"""Preemptions per node-hour and published spot bands (engine.spot_rates): the conversion of each band by hand, the
node rate times nodes equal to the job rate given directly on every surface, the job rate following nodes, and the
refusals (both rates, an unknown band) by name."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.cli import app
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.batch_capacity import CAPACITY_NUMBER_COLUMNS
from ckptplan.engine.designs import Design
from ckptplan.engine.spot import scenario_capacity
from ckptplan.engine.spot_rates import (HOURS_PER_MONTH, job_preemptions_per_h, node_rate_from_monthly_fraction,
                                        scenario_preemptions_per_h, spot_rate, spot_rates)
from ckptplan.engine.sweep import fill_from_template, sweep

runner = CliRunner()
SEED = files.load_scenario("seed")
JOB = 0.05                      # preemptions of the seed's 128-node job per hour
NODE = JOB / SEED.nodes         # the same, per node-hour
SPOT = dict(preemption_notice_min=2.0, capacity_wait_min=30.0, spot_price_per_gpu_hour=1.0)

# each band's figure as published and the fraction used, by hand: r = -ln(1 - f) / (365 * 24 / 12)
BANDS = {"aws-advisor-under-5pct": ("< 5%", 0.05), "aws-advisor-5-10pct": ("5-10%", 0.10),
         "aws-advisor-10-15pct": ("10-15%", 0.15), "aws-advisor-15-20pct": ("15-20%", 0.20),
         "aws-advisor-over-20pct": (">20%", 0.20)}


@pytest.mark.parametrize("name", list(BANDS))
def test_each_band_converts_by_hand(name):
    band, f = BANDS[name]
    r = spot_rate(name)
    assert r.band == band and r.fraction_per_month == f
    assert HOURS_PER_MONTH == 730.0
    assert r.preemptions_per_node_h == pytest.approx(-math.log(1.0 - f) / 730.0, rel=1e-15)
    # a node held the whole month at that rate is reclaimed at least once with probability f
    assert 1.0 - math.exp(-r.preemptions_per_node_h * 730.0) == pytest.approx(f, rel=1e-12)
    assert "instance-advisor" in r.source and "spot-advisor-data.json" in r.source
    assert ("LOWER BOUND" in r.note) == (name == "aws-advisor-over-20pct")
    assert ("upper edge" in r.note) == (name != "aws-advisor-over-20pct")


def test_the_listing_is_every_band_and_the_conversion_broadcasts():
    assert [r.name for r in spot_rates()] == list(BANDS)
    f = pd.Series([0.0, 0.05, 0.5])
    out = node_rate_from_monthly_fraction(f)
    assert isinstance(out, pd.Series) and out.iloc[0] == 0.0
    assert out.iloc[2] == pytest.approx(math.log(2) / 730)
    with pytest.raises(engine.InputError, match="fraction"):
        node_rate_from_monthly_fraction(1.0)
    assert job_preemptions_per_h(np.array([np.nan, 0.3]), np.array([1e-3, np.nan]), 128).tolist() == [0.128, 0.3]


def _plan_json(*args: str) -> dict:
    res = runner.invoke(app, ["plan", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _spot_args(**extra: float) -> list[str]:
    out: list[str] = []
    for k, v in {**SPOT, **extra}.items():
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


def _same_figures(got: dict, want: dict, skip: tuple[str, ...] = ()) -> None:
    assert got.keys() - set(skip) == want.keys() - set(skip)
    for k, v in want.items():
        if k in skip:
            continue
        if isinstance(v, float) and isinstance(got[k], float):
            assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-12), k
        else:
            assert got[k] == v, k


def test_the_node_rate_times_nodes_is_the_job_rate_in_plan_json():
    node = _plan_json(*_spot_args(preemptions_per_node_h=NODE, deadline_h=800))
    job = _plan_json(*_spot_args(preemptions_per_h=JOB, deadline_h=800))
    assert node["preemptions_per_h"] == pytest.approx(JOB, rel=1e-15) and job["preemptions_per_h"] == JOB
    assert node["preemptions_per_node_h"] == NODE and node["preemption_rate_source"] == ""
    assert node["expected_preemptions"] > 30
    _same_figures(node, job, skip=("preemptions_per_node_h", "preemption_rate_source"))


def test_a_band_gives_the_node_rate_and_plan_says_where_it_came_from():
    rate = spot_rate("aws-advisor-under-5pct").preemptions_per_node_h
    band = _plan_json("--preemption-rate-source", "aws-advisor-under-5pct", *_spot_args())
    job = _plan_json(*_spot_args(preemptions_per_h=rate * 128))
    assert band["preemption_rate_source"] == "aws-advisor-under-5pct" and band["preemptions_per_node_h"] == rate
    _same_figures(band, job, skip=("preemptions_per_node_h", "preemption_rate_source"))
    text = runner.invoke(app, ["plan", "--preemption-rate-source", "aws-advisor-under-5pct", *_spot_args()]).output
    assert "128 nodes x 7.03e-05 per node-h" in " ".join(text.split()) and "upper edge" in text


def test_the_job_rate_follows_nodes():
    """A design, Scenario.with_nodes, a table row and a sweep with twice the nodes: twice the job's preemptions."""
    sc = SEED.replace(preemptions_per_node_h=NODE, **SPOT)
    assert scenario_preemptions_per_h(sc) == pytest.approx(JOB)
    twice = Design("2x nodes", times={"nodes": 2.0}).apply(sc)
    assert scenario_preemptions_per_h(twice) == pytest.approx(2 * JOB)
    assert scenario_preemptions_per_h(sc.with_nodes(256)) == pytest.approx(2 * JOB)
    want = engine.evaluate(SEED.replace(nodes=256, preemptions_per_h=2 * JOB, **SPOT)).iloc[0]
    for got in (engine.evaluate(twice).iloc[0], engine.evaluate(engine.to_table([sc]).assign(nodes=256)).iloc[0]):
        assert got["expected_preemptions"] == pytest.approx(want["expected_preemptions"], rel=1e-12)
        assert got["wall_h"] == pytest.approx(want["wall_h"], rel=1e-12)
    swept = sweep(sc, nodes=[128, 256])
    assert swept["expected_preemptions"].tolist() == pytest.approx(
        [engine.evaluate(SEED.replace(preemptions_per_h=JOB, **SPOT)).iloc[0]["expected_preemptions"],
         want["expected_preemptions"]], rel=1e-12)


def test_compare_prices_a_design_with_twice_the_nodes_at_twice_the_rate(tmp_path):
    path = tmp_path / "s.toml"
    base = ('[scenario]\nname = "n"\nnodes = 128\nnode_mtbf_h = 2560\ncheckpoint_stall_min = 2\nrestart_min = 10\n'
            'useful_training_h = 200\nprice_per_gpu_hour = 2.5\npreemption_notice_min = 0.5\n')
    path.write_text(base + f"preemptions_per_node_h = {NODE!r}\n"
                    '[[designs]]\nname = "2x"\ntimes = { nodes = 2 }\n')
    res = runner.invoke(app, ["compare", "--scenario", str(path), "--json"])
    assert res.exit_code == 0, res.output
    got = next(d for d in json.loads(res.output)["designs"] if d["name"] == "2x")
    want = engine.evaluate(files.load_scenario(path).replace(nodes=256, preemptions_per_node_h=None,
                                                             preemptions_per_h=2 * JOB)).iloc[0]
    assert got["wall_h"] == pytest.approx(want["wall_h"], rel=1e-12)


def test_both_rates_are_refused_naming_both():
    with pytest.raises(engine.InputError, match="preemptions_per_h.*not both.*preemptions_per_node_h") as err:
        SEED.replace(preemptions_per_h=JOB, preemptions_per_node_h=NODE)
    assert err.value.field == "preemptions_per_h"
    with pytest.raises(engine.InputError, match="not both.*preemption_rate_source"):
        SEED.replace(preemptions_per_h=JOB, preemption_rate_source="aws-advisor-5-10pct")
    table = engine.to_table([SEED, SEED]).assign(preemptions_per_h=[JOB, JOB], preemptions_per_node_h=[np.nan, NODE])
    with pytest.raises(engine.InputError, match="row 1: preemptions_per_h.*not both"):
        engine.evaluate(table)
    res = runner.invoke(app, ["plan", "--preemptions-per-h", "0.05", "--preemptions-per-node-h", "0.001"])
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "Traceback" not in res.output
    assert "preemptions_per_h" in lines[0] and "preemptions_per_node_h" in lines[0] and "not both" in lines[0]


def test_an_unknown_band_and_a_conflicting_node_rate_are_refused():
    with pytest.raises(engine.InputError, match="preemption_rate_source.*aws-advisor-under-5pct"):
        SEED.replace(preemption_rate_source="aws-advisor-99pct")
    with pytest.raises(engine.InputError, match="preemption_rate_source.*give one of them"):
        SEED.replace(preemption_rate_source="aws-advisor-5-10pct", preemptions_per_node_h=1e-3)
    same = spot_rate("aws-advisor-5-10pct").preemptions_per_node_h
    assert SEED.replace(preemption_rate_source="aws-advisor-5-10pct", preemptions_per_node_h=same) is not None
    for args in (["--preemption-rate-source", "nowhere"], ["--preemptions-per-node-h", "-1"]):
        res = runner.invoke(app, ["plan", *args])
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert res.exit_code == 2 and len(lines) == 1, res.output
    assert "aws-advisor-over-20pct" in runner.invoke(app, ["plan", "--preemption-rate-source", "nowhere"]).output
    assert "preemptions_per_node_h" in runner.invoke(app, ["plan", "--preemptions-per-node-h", "-1"]).output


def test_the_command_line_rate_replaces_the_files_other_rate(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[scenario]\nname = "f"\nnodes = 128\nnode_mtbf_h = 2560\ncheckpoint_stall_min = 2\n'
                    'useful_training_h = 200\nprice_per_gpu_hour = 2.5\npreemption_rate_source = "aws-advisor-5-10pct"\n')
    assert files.load_scenario(path).preemptions_per_node_h == spot_rate("aws-advisor-5-10pct").preemptions_per_node_h
    job = _plan_json("--scenario", str(path), "--preemptions-per-h", "0.05")
    assert job["preemptions_per_h"] == 0.05 and "preemptions_per_node_h" not in job
    node = _plan_json("--scenario", str(path), "--preemptions-per-node-h", "0.001")
    assert node["preemptions_per_h"] == pytest.approx(0.128) and node["preemption_rate_source"] == ""


def test_a_batch_column_of_node_rates_equals_the_job_rates():
    plan = files.load_plan("seed")
    rows = pd.DataFrame({"name": ["a", "b", "c"], "nodes": [64, 128, 256], "deadline_h": [1600.0, 800.0, 420.0],
                         "preemption_notice_min": [0.5, 2.0, 0.5]})
    node = rows.assign(preemptions_per_node_h=[NODE, 2 * NODE, NODE])
    job = rows.assign(preemptions_per_h=node["preemptions_per_node_h"] * node["nodes"])
    got, want = (evaluate_rows(fill_from_template(t, plan.scenario, "seed", setup=plan.setup)[0])
                 for t in (node, job))
    assert (got["status"] == "ok").all(), got["error"].tolist()
    for c in ("chosen_interval_min", "wall_h", "expected_preemptions", "total_cost", "p_finish_by_deadline"):
        assert got[c].to_numpy() == pytest.approx(want[c].to_numpy(), rel=1e-12), c
    band = rows.assign(preemption_rate_source=["aws-advisor-under-5pct", "", "nowhere"])
    out = evaluate_rows(fill_from_template(band, plan.scenario, "seed", setup=plan.setup)[0])
    assert out["status"].tolist()[:2] == ["ok", "ok"] and "aws-advisor-under-5pct" in out["error"][2]
    assert out["expected_preemptions"][0] > 0 and out["expected_preemptions"][1] == 0


def test_the_capacity_comparison_reads_the_node_rate():
    sc = SEED.replace(preemptions_per_node_h=NODE, deadline_h=800.0, **SPOT)
    got = scenario_capacity(sc, runs=200)
    want = scenario_capacity(SEED.replace(preemptions_per_h=JOB, deadline_h=800.0, **SPOT), runs=200)
    assert got == want
    plan = files.load_plan("seed")
    rows = pd.DataFrame({"name": ["a"], "nodes": [64], "deadline_h": [1600.0], "useful_training_h": [1440.0]})
    node, job = (evaluate_rows(fill_from_template(t, plan.scenario, "seed", setup=plan.setup)[0], capacity=True)
                 for t in (rows.assign(preemptions_per_node_h=[0.1 / 64]), rows.assign(preemptions_per_h=[0.1])))
    cols = [c for c in CAPACITY_NUMBER_COLUMNS if c in job.columns]
    assert job["spot_p_finish_by_deadline"][0] > 0 and node[cols].equals(job[cols])


def test_a_template_with_a_job_rate_is_not_filled_beside_a_files_node_rate():
    base = SEED.replace(preemptions_per_h=JOB, **SPOT)
    filled, fill = fill_from_template(pd.DataFrame({"preemptions_per_node_h": [NODE]}), base, "base")
    assert "preemptions_per_h" in fill.not_taken and "preemptions_per_h" not in filled.columns
    assert evaluate_rows(filled)["expected_preemptions"][0] == pytest.approx(
        engine.evaluate(base).iloc[0]["expected_preemptions"], rel=1e-12)


def test_preemption_rates_lists_the_bands():
    res = runner.invoke(app, ["preemption-rates", "--json"])
    assert res.exit_code == 0
    rates = {r["name"]: r for r in json.loads(res.output)}
    assert list(rates) == list(BANDS)
    assert rates["aws-advisor-under-5pct"]["preemptions_per_node_h"] == spot_rate("aws-advisor-under-5pct").preemptions_per_node_h
    text = runner.invoke(app, ["preemption-rates"])
    assert text.exit_code == 0 and "lower bound" in text.output and "instance-advisor" in text.output


def test_the_udf_takes_the_node_rate():
    from ckptplan.workbook.udfs_risk import CKPT_SPOT_PLAN

    base = {k: getattr(SEED, k) for k in ("checkpoint_stall_min", "node_mtbf_h", "nodes", "useful_training_h",
                                           "price_per_gpu_hour", "restart_min")} | SPOT

    def spilled(**rate):
        given = base | rate
        return CKPT_SPOT_PLAN([[k] for k in given], [[v] for v in given.values()])

    got, want = spilled(preemptions_per_node_h=NODE), spilled(preemptions_per_h=JOB)
    assert isinstance(got, list) and [r[0] for r in got] == [r[0] for r in want], got
    for (_, a), (_, b) in zip(got[1:], want[1:]):
        assert a == pytest.approx(b, rel=1e-12)
    both = spilled(preemptions_per_h=JOB, preemptions_per_node_h=NODE)
    assert isinstance(both, str) and "not both" in both
    rate = spot_rate("aws-advisor-under-5pct").preemptions_per_node_h
    band, same = spilled(preemption_rate_source="aws-advisor-under-5pct"), spilled(preemptions_per_h=rate * 128)
    for (_, a), (_, b) in zip(band[1:], same[1:]):
        assert a == pytest.approx(b, rel=1e-12)


# ------------------------------------------------------------------------------------------ workbook

def _named(wb, name: str):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")].value


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    """The workbook of a node rate, recalculated as generated, with nodes edited to 256, and with a job rate typed
    beside the node rate."""
    from openpyxl import load_workbook

    from ckptplan import workbook
    from ckptplan.workbook.recalc import recalculate, soffice

    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("out")
    sc = SEED.replace(name="node-rate", preemptions_per_node_h=NODE, **SPOT)
    built = workbook.write_workbook(src / "node.xlsx", sc)
    for stem, edits in (("nodes256", {"nodes": 256}), ("both", {"preemptions_per_h": JOB})):
        wb = load_workbook(src / "node.xlsx")
        for field, value in edits.items():
            sheet, cell = built.input_cells[field].split("!")
            wb[sheet][cell.replace("$", "")] = value
        wb.save(src / f"{stem}.xlsx")
    paths = [src / "node.xlsx", src / "nodes256.xlsx", src / "both.xlsx"]
    return sc, {p.stem: load_workbook(o, data_only=True) for p, o in zip(paths, recalculate(paths, out))}


@pytest.mark.parametrize("stem,nodes", [("node", 128), ("nodes256", 256)])
def test_the_spot_sheet_follows_the_node_rate_and_nodes(books, stem, nodes):
    sc, wbs = books
    wb = wbs[stem]
    want = engine.evaluate(sc.replace(nodes=nodes)).iloc[0]
    assert _named(wb, "spot_status").startswith("spot capacity")
    assert _named(wb, "spot_preemptions_per_h") == pytest.approx(nodes * NODE, rel=1e-12)
    assert _named(wb, "spot_exact_interval_min") == pytest.approx(want["exact_interval_min"],
                                                                  rel=engine.preemption.INTERVAL_RTOL)
    for name, key in (("spot_wall_h", "wall_h"), ("spot_expected_preemptions", "expected_preemptions"),
                      ("spot_compute_cost", "compute_cost"), ("spot_capacity_wait_h", "capacity_wait_h")):
        assert _named(wb, name) == pytest.approx(want[key], rel=1e-9), name


def test_the_spot_sheet_refuses_both_rates_by_name(books):
    status = _named(books[1]["both"], "spot_status")
    assert status.startswith("refused") and "preemptions_per_h" in status and "preemptions_per_node_h" in status
    assert str(_named(books[1]["both"], "spot_wall_h")).startswith("n/a")


def _cli(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.mark.parametrize("rate", ["preemption_rate_source = \"aws-advisor-10-15pct\"\n",
                                  f"preemptions_per_node_h = {NODE!r}\n"])
def test_an_unedited_round_trip_keeps_the_node_rate(tmp_path, rate):
    from same_json import same_json

    src = tmp_path / "spot.toml"
    src.write_text('name = "spot"\nnodes = 128\nnode_mtbf_h = 2560\ncheckpoint_stall_min = 2\nrestart_min = 10\n'
                   'useful_training_h = 200\nprice_per_gpu_hour = 2.5\ndeadline_h = 240\npreemption_notice_min = 0.5\n'
                   'capacity_wait_min = 25\nspot_price_per_gpu_hour = 0.9\n' + rate)
    book, back = tmp_path / "spot.xlsx", tmp_path / "back.toml"
    _cli("workbook", "--scenario", str(src), "-o", str(book), "--no-deadline")
    _cli("workbook", "--from", str(book), "-o", str(tmp_path / "again.xlsx"), "--no-deadline", "--emit-scenario",
         str(back))
    assert files.load_scenario(back).preemption_rate_source == files.load_scenario(src).preemption_rate_source
    got, want = (json.loads(_cli("plan", "--scenario", str(p), "--json")) for p in (back, src))
    assert want["expected_preemptions"] > 0 and "preemptions_per_node_h" in want
    same_json(got, want)


def test_a_band_with_an_edited_node_rate_reads_back_as_the_planners_rate(tmp_path):
    """The planner's own node rate typed over a band's wins (the band is dropped), as node_mtbf_h over a fleet's."""
    from openpyxl import load_workbook

    from ckptplan import workbook
    from ckptplan.workbook.read import read_plan

    sc = SEED.replace(preemption_rate_source="aws-advisor-5-10pct", **SPOT)
    built = workbook.write_workbook(tmp_path / "a.xlsx", sc)
    assert read_plan(tmp_path / "a.xlsx").scenario.preemption_rate_source == "aws-advisor-5-10pct"
    wb = load_workbook(tmp_path / "a.xlsx")
    sheet, cell = built.input_cells["preemptions_per_node_h"].split("!")
    wb[sheet][cell.replace("$", "")] = 1e-3
    wb.save(tmp_path / "b.xlsx")
    back = read_plan(tmp_path / "b.xlsx").scenario
    assert back.preemption_rate_source == "" and back.preemptions_per_node_h == 1e-3
