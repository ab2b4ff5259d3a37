"""The storage and recovery setup as the input: plan_setup, designs side by side, plan files, CLI."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.cli import app
from ckptplan.engine.designs import Design, compare_designs
from ckptplan.engine.setup import RecoverySetup, plan_setup
from ckptplan.files.plans import plan_from_data

runner = CliRunner()
SEED = files.load_scenario("seed")

SIZED = {
    "name": "sized", "nodes": 2048, "gpus_per_node": 8, "node_mtbf_h": 6334.0, "useful_training_h": 1166.4,
    "price_per_gpu_hour": 2.5, "parameters_b": 405, "aggregate_write_gb_s": 2000.0, "write_gb_s_per_writer": 4.0,
}


def test_no_setup_plans_exactly_as_evaluate():
    for name in files.list_templates():
        plan = files.load_plan(name)
        if plan.setup.tiers:
            continue
        sc = plan.planned_scenario()
        row = engine.evaluate(sc).iloc[0]
        p = plan_setup(sc, RecoverySetup())
        for key in ("waste_fraction", "wall_h", "useful_h", "save_h", "rework_h", "restart_h", "job_mtbf_h"):
            assert p.figures[key] == row[key], (name, key)
        assert p.figures["total_cost"] == pytest.approx(row["total_cost"], rel=1e-13)
        assert p.figures["storage_cost"] == 0 and p.figures["spare_cost"] == 0
        assert p.figures["interval_min"] == row["chosen_interval_min"]


def test_size_and_sync_save_from_bandwidth():
    plan = plan_from_data({"scenario": SIZED})
    p = plan_setup(plan.scenario, plan.setup)
    assert p.figures["checkpoint_size_gb"] == 405 * 14 == 5670
    # 2,048 writers x 4 GB/s = 8,192 GB/s is above the 2,000 GB/s aggregate: the aggregate binds
    assert p.scenario.checkpoint_stall_min == pytest.approx(5670 / 2000 / 60, rel=1e-15)
    assert p.figures["derived_restore_min"] == pytest.approx(5670 / 2000 / 60, rel=1e-15)
    assert p.scenario.async_write_min == 0
    slow = plan_setup(plan.scenario, plan.setup.replace(write_gb_s_per_writer=0.5))  # 1,024 GB/s < aggregate
    assert slow.scenario.checkpoint_stall_min == pytest.approx(5670 / 1024 / 60, rel=1e-15)


def test_async_save_from_device_to_host_bandwidth():
    plan = plan_from_data({"scenario": {**SIZED, "d2h_gb_s_per_writer": 50.0, "async_slowdown_fraction": 0.1}})
    p = plan_setup(plan.scenario, plan.setup)
    assert p.scenario.checkpoint_stall_min == pytest.approx(5670 / (50 * 2048) / 60)
    assert p.scenario.async_write_min == pytest.approx(5670 / 2000 / 60)


def test_a_stated_stall_overrides_the_derived_one_and_says_so():
    plan = plan_from_data({"scenario": {**SIZED, "checkpoint_stall_min": 0.5}})
    p = plan_setup(plan.scenario, plan.setup)
    assert p.scenario.checkpoint_stall_min == 0.5
    assert any("checkpoint_stall_min = 0.5 is stated" in n for n in p.notes)


def test_restart_pipeline_sums_its_parts_and_spares_never_raise_it():
    parts = {"detection_min": 1.0, "startup_min": 2.0, "init_min": 1.0, "init_per_1000_nodes_min": 0.5,
             "warmup_min": 1.5, "repair_h": 24.0, "swap_min": 3.0}
    last = math.inf
    for spares in (0, 1, 2, 4, 8, 16, 64):
        plan = plan_from_data({"scenario": {**SIZED, **parts, "spares": spares}})
        p = plan_setup(plan.scenario, plan.setup)
        r = p.restart_parts_min
        assert r["init_min"] == pytest.approx(1.0 + 0.5 * 2048 / 1000)
        assert r["load_min"] == pytest.approx(5670 / 2000 / 60)
        assert p.scenario.restart_min == pytest.approx(sum(r.values()), rel=1e-15)
        assert p.figures["restart_min"] <= last + 1e-12
        last = p.figures["restart_min"]
        assert p.figures["spare_gpu_hours"] == pytest.approx(spares * 8 * p.figures["wall_h"])
        assert p.figures["spare_cost"] == pytest.approx(p.figures["spare_gpu_hours"] * 2.5)


def test_storage_cost_is_size_times_copies_months_and_price():
    plan = plan_from_data({"scenario": {**SIZED, "price_per_gb_month": 0.03, "retention": 4}})
    p = plan_setup(plan.scenario, plan.setup)
    assert p.figures["storage_cost"] == pytest.approx(5670 * 4 * 0.03 * p.figures["wall_h"] / 730.0)
    assert p.figures["total_cost"] == pytest.approx(
        sum(p.figures[f"{k}_cost"] for k in ("useful", "save", "rework", "restart", "storage", "spare")))


@pytest.mark.parametrize("changes, field, rule", [
    ({"aggregate_write_gb_s": 0.0}, "aggregate_write_gb_s", "must be > 0"),
    ({"spares": 4}, "spares", "needs repair_h"),
    ({"spares": 2.5, "repair_h": 10.0}, "spares", "whole number"),
    ({"retention": 0}, "retention", "whole number >= 1"),
    ({"replacement_share": 1.5}, "replacement_share", "fraction in [0, 1]"),
    ({"parameters_b": None, "aggregate_write_gb_s": 100.0}, "checkpoint_stall_min", "is required"),
])
def test_bad_setups_name_the_field(changes, field, rule):
    data = {**SIZED, **changes}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(engine.InputError) as err:
        plan = plan_from_data({"scenario": data})
        plan_setup(plan.scenario, plan.setup)
    assert field in str(err.value) and rule in str(err.value)


def test_designs_change_the_setup_and_compare_cheapest_first():
    plan = plan_from_data({"scenario": {**SIZED, "detection_min": 1.0, "repair_h": 24.0, "swap_min": 1.0},
                           "designs": [{"name": "faster storage", "times": {"aggregate_write_gb_s": 4.0}},
                                       {"name": "16 spares", "set": {"spares": 16}},
                                       {"name": "2x nodes", "times": {"nodes": 2.0, "useful_training_h": 0.5}}]})
    table = compare_designs(plan.scenario, plan.setup, plan.designs)
    assert list(table["total_cost"]) == sorted(table["total_cost"])
    assert table["baseline"].sum() == 1
    base = table[table["baseline"]].iloc[0]
    for _, r in table.iterrows():
        assert r["total_cost_change"] == pytest.approx(r["total_cost"] - base["total_cost"])
    by = table.set_index("name")
    # each row equals planning the changed inputs directly
    direct = plan_setup(plan.scenario, plan.setup.replace(spares=16)).figures["total_cost"]
    assert by.loc["16 spares", "total_cost"] == pytest.approx(direct, rel=1e-12)
    faster = plan_setup(plan.scenario, plan.setup.replace(aggregate_write_gb_s=8000.0)).figures
    assert by.loc["faster storage", "total_cost"] == pytest.approx(faster["total_cost"], rel=1e-12)


def test_design_errors_name_design_and_field():
    with pytest.raises(engine.InputError, match="not a scenario field"):
        Design("x", set={"bandwidth": 3.0})
    plan = plan_from_data({"scenario": SIZED})
    with pytest.raises(engine.InputError, match="design 'bad'.*retention"):
        Design("bad", set={"retention": 0}).apply_setup(plan.setup)
    with pytest.raises(engine.InputError, match="unknown key"):
        plan_from_data({"scenario": SIZED, "designs": [{"name": "x", "sett": {}}]})


def test_plan_json_reports_the_setup(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[scenario]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in SIZED.items()) + "\n")
    res = runner.invoke(app, ["plan", "--scenario", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["checkpoint_size_gb"] == 5670
    assert [t["name"] for t in out["tiers"]] == ["checkpoint"] and out["tiers"][0]["interval_min"] > 0
    assert out["total_cost"] > 0 and "restart_min" in out and "waste_fraction" in out
    # a setup field on the command line
    res2 = runner.invoke(app, ["plan", "--scenario", str(path), "--json", "--aggregate-write-gb-s", "500"])
    assert json.loads(res2.output)["checkpoint_stall_min"] == pytest.approx(5670 / 500 / 60)


def test_plan_json_of_a_plain_scenario_is_unchanged():
    res = runner.invoke(app, ["plan", "--json"])
    out = json.loads(res.output)
    row = engine.evaluate(SEED).iloc[0]
    for key in ("waste_fraction", "wall_h", "total_cost", "exact_interval_min", "goodput"):
        assert out[key] == pytest.approx(float(row[key]), rel=1e-15)
    assert out["checkpoint_size_gb"] is None and out["storage_cost"] == 0


def test_compare_command_json_and_table():
    res = runner.invoke(app, ["compare", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    costs = [d["total_cost"] for d in out["designs"]]
    assert costs == sorted(costs) and sum(d["baseline"] for d in out["designs"]) == 1
    res = runner.invoke(app, ["compare"])
    assert res.exit_code == 0 and "cheapest first" in res.output
    bad = runner.invoke(app, ["compare", "--spares", "3"])
    assert bad.exit_code == 2 and "repair_h" in bad.output and "Traceback" not in bad.output


def test_one_tier_surviving_every_class_reproduces_the_single_level_plan():
    sc = files.load_scenario("async-save").replace(restart_min=7.0)
    single = plan_setup(sc, RecoverySetup()).figures
    tiered = plan_setup(sc, RecoverySetup(
        tiers=({"name": "store", "every": 1, "checkpoint_stall_min": sc.checkpoint_stall_min, "restore_min": 0.0,
                "survives": ["hardware", "software"]},),
        failure_classes={"hardware": 0.7, "software": 0.3})).figures
    assert tiered["interval_min"] == pytest.approx(single["interval_min"], rel=1e-6)
    for key in ("waste_fraction", "wall_h", "total_cost"):  # flat at the optimum: equal although T differs ~1e-7
        assert tiered[key] == pytest.approx(single[key], rel=1e-12), key
    # at the same chosen interval every figure matches to 1e-12, the split too
    fixed = sc.replace(interval_min=30.0)
    a = plan_setup(fixed, RecoverySetup()).figures
    b = plan_setup(fixed, RecoverySetup(tiers=({"name": "store", "every": 1, "restore_min": 0.0,
                                                 "checkpoint_stall_min": fixed.checkpoint_stall_min,
                                                 "survives": ["any"]},), failure_classes={"any": 1.0})).figures
    for key in ("waste_fraction", "wall_h", "total_cost", "save_h", "restart_h", "rework_h", "useful_h"):
        assert b[key] == pytest.approx(a[key], rel=1e-12, abs=1e-9), key


def test_tiered_plan_reports_each_tier_and_a_memory_tier_helps():
    plan = files.load_plan("llama3-405b-storage")
    table = compare_designs(plan.scenario, plan.setup, plan.designs).set_index("name")
    assert table.loc["in-memory tier", "waste_fraction"] < table.loc["llama3-405b-storage", "waste_fraction"]
    memory = next(d for d in plan.designs if d.name == "in-memory tier")
    p = plan_setup(memory.apply(plan.scenario), memory.apply_setup(plan.setup))
    names = [t["name"] for t in p.tiers]
    assert names == ["host-memory", "remote"]
    assert p.tiers[1]["interval_min"] == pytest.approx(p.tiers[0]["interval_min"] * p.tiers[1]["every"])
    assert p.tiers[0]["restore_min"] < p.tiers[1]["restore_min"]
    res = runner.invoke(app, ["plan", "-t", "llama3-405b-storage", "--json"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("tiers, classes, message", [
    ([{"name": "mem", "every": 1, "checkpoint_stall_min": 0.1, "restore_min": 0.1, "survives": []}], {"a": 1.0},
     "mem"),
    ([{"name": "mem", "every": 1, "checkpoint_stall_min": 0.1, "restore_min": 0.1, "survives": ["a"]}],
     {"a": 0.5, "b": 0.5}, "could never be recovered"),
    ([{"name": "mem", "every": 0, "checkpoint_stall_min": 0.1, "restore_min": 0.1, "survives": ["a"]}], {"a": 1.0},
     "every"),
    ([{"name": "mem", "every": 1, "checkpoint_stall_min": 0.1, "restore_min": 0.1, "survives": ["a"],
       "retention": 0}], {"a": 1.0}, "retention"),
    ([{"name": "disk", "every": 1, "write_gb_s_per_writer": 0.0, "restore_min": 0.1, "survives": ["a"]}], {"a": 1.0},
     "write_gb_s_per_writer"),
])
def test_bad_tiers_name_the_tier_and_field(tiers, classes, message):
    sc = {**SIZED, "checkpoint_stall_min": 1.0}
    with pytest.raises(engine.InputError, match=message):
        plan = plan_from_data({"scenario": sc, "tiers": tiers, "failure_classes": classes})
        plan_setup(plan.scenario, plan.setup)


def test_best_spares_is_the_cheapest_count():
    plan = files.load_plan("llama3-405b-storage")
    f = plan_setup(plan.scenario, plan.setup).figures
    best = f["best_spares"]
    assert best is not None and 0 <= best < 64
    costs = {n: plan_setup(plan.scenario, plan.setup.replace(spares=n)).figures["total_cost"]
             for n in (best - 1, best, best + 1) if n >= 0}
    assert min(costs, key=costs.get) == best  # the full plan agrees with the single-level search here


def test_readme_glossary_lists_every_setup_field_and_tier_key():
    from pathlib import Path

    from ckptplan.engine.fields import SETUP_FIELDS
    from ckptplan.engine.setup import TIER_KEYS

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    glossary = text[text.index("## Glossary"):]
    for f in SETUP_FIELDS:
        assert f"| `{f.name}` | {f.unit} | {f.label} |" in glossary, f.name
    for key in TIER_KEYS:
        assert f"`{key}`" in glossary


def test_readme_worked_design_example_is_what_compare_prints(monkeypatch):
    """The README's compare table is the command's own table at 80 columns: the same headings, names and cells."""
    import re
    from pathlib import Path

    from typer.testing import CliRunner

    from ckptplan import common
    from ckptplan.cli import app

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = text[text.index("$ ckptplan compare -t llama3-405b-storage"):]
    body = block.splitlines()
    first = next(i for i, ln in enumerate(body) if ln.startswith("|"))
    table_lines = body[first:next(i for i in range(first, len(body)) if not body[i].startswith("|"))]
    readme = [[c.strip() for c in ln.strip("|").split("|")] for ln in table_lines]
    head, rows = readme[0], readme[2:]
    monkeypatch.setattr(common.console, "width", 240)  # the console was sized when the CLI was imported
    wide = CliRunner().invoke(app, ["compare", "-t", "llama3-405b-storage"])
    monkeypatch.setattr(common.console, "width", 80)
    narrow = CliRunner().invoke(app, ["compare", "-t", "llama3-405b-storage"])
    assert wide.exit_code == 0 and narrow.exit_code == 0
    # the README's columns are the 80-column table's: every heading but those it says it left out
    from ckptplan.cli_setup import compare_heads

    flat = " ".join(narrow.output.split())
    left_out = flat[flat.index("left out at 80 columns: ") + 24:flat.index(" (a wider terminal")].split(", ")
    assert head == [h for h in compare_heads("USD") if h not in left_out]
    assert all(len(ln) <= 80 for ln in narrow.output.splitlines())
    # each README row is a row of the wide table (cells split on runs of 2+ spaces), its columns picked by heading
    plan = files.load_plan("llama3-405b-storage")
    table = compare_designs(plan.scenario, plan.setup, plan.designs)
    assert [r[0] for r in rows] == [f"{n} (baseline)" if b else n for n, b in zip(table["name"], table["baseline"])]
    printed = {}
    for ln in wide.output.splitlines():
        cells = re.split(r"\s{2,}", ln.strip())
        for r in rows:
            if cells and cells[0] == r[0]:
                printed[r[0]] = cells
    for r in rows:
        got = printed[r[0]]
        for cell in r[1:]:
            assert cell in got, (r[0], cell, got)
    for (label, waste, wall, total, _vs, p), t in zip(rows, table.itertuples()):
        assert waste == f"{t.waste_fraction:.2%}" and wall == f"{t.wall_h:,.1f}" and total == f"{t.total_cost:,.0f}"
        assert p == f"{t.p_finish_by_deadline:.1%}"


def test_only_failures_that_need_a_node_wait_for_one():
    from ckptplan.engine import recovery

    data = {**SIZED, "detection_min": 1.0, "repair_h": 24.0, "spares": 4, "swap_min": 2.0, "replacement_share": 0.6}
    plan = plan_from_data({"scenario": data})
    p = plan_setup(plan.scenario, plan.setup)
    M = p.figures["job_mtbf_h"]
    per_replacement = float(recovery.expected_reallocation_min(0.6 / M, 24.0, 4, 2.0))
    assert p.restart_parts_min["reallocation_min"] == pytest.approx(0.6 * per_replacement, rel=1e-15)
