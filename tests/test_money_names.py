"""One meaning per money name (issue 21.2): ``total_cost`` is everything the plan pays (the job's GPU
time + storage + spares) on every surface, ``compute_cost`` the job's GPU time alone, and the listed
parts add up: useful + save + rework + restart = compute, compute + storage + spares = total;
``cost_per_useful_gpu_hour`` = total / useful GPU-hours. ``design_cost`` appears in no output.

Surfaces: the engine's tables (``evaluate``, ``plan_setup``, a batch and a tiered batch row), ``ckptplan
plan`` (console and ``--json``), ``compare --json``, ``batch``/``sweep`` files and summaries, the Excel
functions (``CKPT_COST_BREAKDOWN``, ``CKPT_EVALUATE``, ``CKPT_TOTAL_COST``) and the Lite ``main.py``.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.cli import app
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.fields import COST_FIELDS, COST_PARTS
from ckptplan.engine.setup import plan_setup
from ckptplan.workbook import lite, udfs, udfs_setup

REL = 1e-12
STORAGE = "llama3-405b-storage"
CATEGORIES = COST_PARTS["compute_cost"]          # useful_cost, save_cost, rework_cost, restart_cost
BILL = COST_PARTS["total_cost"]                  # compute_cost, storage_cost, spare_cost
README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
runner = CliRunner()


def _invoke(args: list[str]):
    res = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.output


def _adds_up(money, useful_gpu_hours=None, what: str = "") -> None:
    """The parts of each sum add up; the cost per useful GPU-hour is the total's."""
    get = money.__getitem__
    assert get("compute_cost") == pytest.approx(sum(get(k) for k in CATEGORIES), rel=REL), what
    assert get("total_cost") == pytest.approx(sum(get(k) for k in BILL), rel=REL), what
    if useful_gpu_hours is not None:
        assert get("cost_per_useful_gpu_hour") == pytest.approx(get("total_cost") / useful_gpu_hours, rel=REL), what


# ------------------------------------------------------------------------------ the registry

def test_every_money_name_is_declared_once_with_unit_and_meaning():
    names = [f.name for f in COST_FIELDS]
    assert len(set(names)) == len(names) and "design_cost" not in names
    for f in COST_FIELDS:
        assert f.unit and f.label, f.name
    assert {k for parts in COST_PARTS.values() for k in parts} | set(COST_PARTS) <= set(names)
    glossary = README.split("## Glossary")[1]
    for f in COST_FIELDS:
        assert f"| `{f.name}` | {f.unit} | {f.label} |" in glossary, f.name
    changelog = README.split("## Changelog")[1]
    assert "`total_cost` is now everything the plan pays" in changelog and "`compute_cost`" in changelog


def test_evaluate_gives_every_money_column_of_the_registry():
    assert {f.name for f in COST_FIELDS} <= set(engine.scenario.derived_columns())
    assert "design_cost" not in engine.scenario.derived_columns()


# ------------------------------------------------------------------------------ the engine's tables

def test_evaluate_without_a_setup_pays_no_storage_and_no_spares():
    out = engine.evaluate([files.load_scenario(n) for n in ("seed", "llama3-405b", "power-domains", "async-save")])
    for _, row in out.iterrows():
        _adds_up(row, row["useful_gpu_hours"], row["name"])
        assert row["storage_cost"] == 0.0 and row["spare_cost"] == 0.0
        assert row["total_cost"] == row["compute_cost"]
        assert row["compute_cost"] == pytest.approx(row["total_gpu_hours"] * row["price_per_gpu_hour"], rel=REL)


def test_plan_setup_figures_and_row_carry_the_same_money():
    plan = files.load_plan(STORAGE)
    p = plan_setup(plan.scenario, plan.setup)
    useful_gpu_h = p.figures["gpus"] * p.scenario.useful_training_h
    _adds_up(p.figures, useful_gpu_h, "figures")
    assert p.figures["storage_cost"] > 0 and p.figures["spare_cost"] > 0
    for f in COST_FIELDS:
        assert p.row[f.name] == p.figures[f.name], f.name
    tiered = plan.with_design("in-memory tier")
    t = plan_setup(tiered.scenario, tiered.setup)
    _adds_up(t.figures, t.figures["gpus"] * t.scenario.useful_training_h, "tiered")
    assert t.figures["storage_cost"] == pytest.approx(sum(tier["storage_cost"] for tier in t.tiers), rel=REL)


def test_batch_rows_with_and_without_a_setup_and_with_tiers():
    plan = files.load_plan(STORAGE)
    base = {k: v for k, v in engine.scenario_to_dict(plan.scenario).items()
            if k not in ("domains", "checkpoint_stall_min")}   # the setup derives the stall per row
    rows = pd.DataFrame([{**base, **plan.setup.columns(), "nodes": n} for n in (1024, 2048)])
    tiers = plan.with_design("in-memory tier").setup
    for label, out in (("setup", evaluate_rows(rows)),
                       ("tiers", evaluate_rows(rows, tiers=list(tiers.tiers), failure_classes=tiers.failure_classes)),
                       ("none", evaluate_rows(engine.to_table([files.load_scenario("seed")])))):
        assert (out["status"] == "ok").all(), out["error"].tolist()
        assert "design_cost" not in out.columns
        for _, row in out.iterrows():
            _adds_up(row, row["useful_gpu_hours"], label)
            if label != "none":
                assert row["storage_cost"] > 0 and row["spare_cost"] > 0 and row["total_cost"] > row["compute_cost"]


# ------------------------------------------------------------------------------ the command line

def test_plan_json_parts_add_up_and_equal_the_readme():
    data = json.loads(_invoke(["plan", "-t", STORAGE, "--json"]))
    _adds_up(data, data["useful_gpu_hours"], "plan --json")
    assert "design_cost" not in data
    # the README's worked example quotes both sums
    assert f"{data['compute_cost']:,.0f}" == "56,311,879" and f"{data['total_cost']:,.0f}" == "56,532,488"
    assert "56,311,879" in README and "56,532,488" in README
    seed = json.loads(_invoke(["plan", "--json"]))
    _adds_up(seed, seed["useful_gpu_hours"], "seed")
    assert seed["storage_cost"] == seed["spare_cost"] == 0 and seed["total_cost"] == seed["compute_cost"]


def _whole(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.parametrize("template", ["seed", STORAGE])
def test_plan_console_parts_add_up_to_the_total(template):
    text = _invoke(["plan", "-t", template])
    cost = {}
    for cat in ("useful", "save", "rework", "restart", "compute"):
        cells = [c.strip() for c in next(line for line in text.splitlines()
                                         if re.match(rf"^[│|] {cat}\s", line)).split("│" if "│" in text else "|")]
        cost[cat] = _whole(cells[4])   # where the time goes | wall h | GPU-hours | cost | share
    m = re.search(r"total cost ([\d,]+) (\S+) = compute ([\d,]+) \+ storage ([\d,]+) \+ spares ([\d,]+)", text)
    assert m, text
    total, compute, storage, spares = (_whole(m.group(i)) for i in (1, 3, 4, 5))
    assert compute == cost["compute"]
    assert abs(sum(cost[c] for c in ("useful", "save", "rework", "restart")) - compute) <= 2   # each shown rounded
    assert abs(compute + storage + spares - total) <= 2
    data = json.loads(_invoke(["plan", "-t", template, "--json"]))
    assert total == round(data["total_cost"]) and compute == round(data["compute_cost"])
    per_useful = re.search(r"([\d.]+) USD per useful GPU-hour", text).group(1)
    assert per_useful == f"{data['cost_per_useful_gpu_hour']:,.3f}"


def test_compare_json_parts_add_up():
    data = json.loads(_invoke(["compare", "-t", STORAGE, "--json"]))
    assert "design_cost" not in json.dumps(data)
    for d in data["designs"]:
        assert d["total_cost"] == pytest.approx(d["compute_cost"] + d["storage_cost"] + d["spare_cost"], rel=REL)
    plan = json.loads(_invoke(["plan", "-t", STORAGE, "--json"]))
    base = next(d for d in data["designs"] if d["baseline"])
    for key in BILL + ("total_cost", "cost_per_useful_gpu_hour"):
        assert base[key] == pytest.approx(plan[key], rel=REL), key


@pytest.mark.parametrize("template, nodes", [(STORAGE, 2048), ("seed", 128)])
def test_plan_json_and_a_batch_row_of_the_same_scenario_give_the_same_total(tmp_path, template, nodes):
    src, dst = tmp_path / "rows.csv", tmp_path / "out.csv"
    src.write_text(f"name,nodes\nsame,{nodes}\n")
    summary = json.loads(_invoke(["batch", str(src), "-t", template, "-o", str(dst), "--json"]))
    row = pd.read_csv(dst).iloc[0]
    assert row["status"] == "ok"
    assert not any("design" in c for c in pd.read_csv(dst).columns)
    _adds_up(row, row["useful_gpu_hours"], "batch CSV row")
    plan = json.loads(_invoke(["plan", "-t", template, "--json"]))
    for key in ("compute_cost", "storage_cost", "spare_cost", "total_cost", "cost_per_useful_gpu_hour"):
        assert row[key] == pytest.approx(plan[key], rel=REL, abs=1e-12), key
    assert summary["metric"] == "cost_per_useful_gpu_hour"
    best = summary["best"]["USD"]
    assert best["total_cost"] == pytest.approx(plan["total_cost"], rel=REL)
    assert best["value"] == pytest.approx(plan["cost_per_useful_gpu_hour"], rel=REL)
    assert "design" not in json.dumps(summary)


def test_sweep_outputs_and_summary_name_no_design_cost(tmp_path):
    out = tmp_path / "grid.csv"
    text = _invoke(["sweep", "-t", STORAGE, "--nodes", "1024,2048", "-o", str(out)])
    assert "design" not in text.lower().replace("--design", "")
    got = pd.read_csv(out)
    assert (got["status"] == "ok").all() and "design_cost" not in got.columns
    for _, row in got.iterrows():
        _adds_up(row, row["useful_gpu_hours"], "sweep row")


# ------------------------------------------------------------------------------ the Excel functions

def test_cost_breakdown_parts_add_up_to_its_total():
    row = engine.evaluate(files.load_scenario("seed")).iloc[0]
    table = udfs.CKPT_COST_BREAKDOWN(720, row["chosen_interval_min"], 2, 1200, 10, 0, 0, 1024, 2.5)
    money = {r[0]: r[3] for r in table[1:]}
    assert money["compute"] == pytest.approx(sum(money[c] for c in ("useful", "save", "rework", "restart")), rel=REL)
    assert money["compute"] == pytest.approx(row["compute_cost"], rel=1e-9)
    hours = {r[0]: r[2] for r in table[1:]}
    assert hours["compute"] == pytest.approx(row["job_gpu_hours"], rel=1e-9)


def test_evaluate_function_gives_the_money_columns_adding_up():
    sc = files.load_scenario("seed")
    header = ["name", "checkpoint_stall_min", "node_mtbf_h", "nodes", "useful_training_h", "price_per_gpu_hour"]
    out = udfs.CKPT_EVALUATE([header, [sc.name, 2.0, 2560.0, 128, 720.0, 2.5]])
    assert "design_cost" not in out[0]
    got = dict(zip(out[0], out[1]))
    _adds_up(got, got["useful_gpu_hours"], "CKPT_EVALUATE")
    assert got["storage_cost"] == 0 and got["spare_cost"] == 0


def test_total_cost_function_is_the_plans_compute_storage_and_spares():
    plan = files.load_plan(STORAGE)
    p = plan_setup(plan.scenario, plan.setup)
    st, sc = plan.setup, plan.scenario
    args = dict(useful_training_h=sc.useful_training_h, nodes=sc.nodes, job_mtbf_h=p.figures["job_mtbf_h"],
                price_per_gpu_hour=sc.price_per_gpu_hour, **st.columns())
    params = inspect.signature(udfs_setup.CKPT_TOTAL_COST).parameters.values()   # Excel passes them by position
    got = udfs_setup.CKPT_TOTAL_COST(*(args.get(q.name, q.default) for q in params))
    assert got == pytest.approx(p.figures["compute_cost"] + p.figures["storage_cost"] + p.figures["spare_cost"],
                                rel=REL)
    assert got == pytest.approx(p.figures["total_cost"], rel=REL)
    assert not hasattr(udfs_setup, "CKPT_DESIGN_COST")


def test_no_function_and_no_lite_wrapper_is_named_design_cost():
    names = list(udfs.__all__) + list(udfs_setup.__all__)
    assert "CKPT_TOTAL_COST" in names and not [n for n in names if "DESIGN_COST" in n]
    assert "DESIGN_COST" not in lite.main_py("test") and "design_cost" not in lite.main_py("test")


def test_summary_ranks_every_batch_by_cost_per_useful_gpu_hour():
    out = evaluate_rows(engine.to_table([files.load_scenario(n) for n in ("seed", "llama3-405b")]))
    s = engine.sweep.summarize(out)
    assert s.metric == "cost_per_useful_gpu_hour"
    best = s.best["USD"]
    row = out.loc[out["cost_per_useful_gpu_hour"].idxmin()]
    assert best["value"] == row["cost_per_useful_gpu_hour"] and best["total_cost"] == row["total_cost"]
    assert np.isclose(row["cost_per_useful_gpu_hour"], row["total_cost"] / row["useful_gpu_hours"], rtol=REL)


# ------------------------------------------------------------------------------ GPU-hours: one meaning per name

from ckptplan.engine.fields import GPU_HOURS_FIELDS, GPU_HOURS_PARTS  # noqa: E402


def _hours_add_up(h, what: str = "") -> None:
    """job = useful + save + rework + restart GPU-hours; total = job + spares."""
    for total, parts in GPU_HOURS_PARTS.items():
        assert h[total] == pytest.approx(sum(h[k] for k in parts), rel=REL), (what, total)


def test_every_gpu_hour_name_is_declared_once_with_unit_and_meaning():
    names = [f.name for f in GPU_HOURS_FIELDS]
    assert len(set(names)) == len(names) and all(f.unit == "GPU-h" and f.label for f in GPU_HOURS_FIELDS)
    assert {k for parts in GPU_HOURS_PARTS.values() for k in parts} | set(GPU_HOURS_PARTS) <= set(names)
    assert set(names) <= set(engine.scenario.derived_columns())
    glossary = README.split("## Glossary")[1]
    for f in GPU_HOURS_FIELDS:
        assert f"| `{f.name}` | {f.unit} | {f.label} |" in glossary, f.name
    changelog = README.split("## Changelog")[1]
    assert "`total_gpu_hours` is the job's and the spares' GPU-hours on every" in changelog


def test_gpu_hours_add_up_in_tables_plan_compare_and_agree_with_a_batch_row(tmp_path):
    for _, row in engine.evaluate([files.load_scenario(n) for n in ("seed", "llama3-405b")]).iterrows():
        _hours_add_up(row, row["name"])
        assert row["spare_gpu_hours"] == 0 and row["total_gpu_hours"] == row["job_gpu_hours"]
    plan = json.loads(_invoke(["plan", "-t", STORAGE, "--json"]))
    _hours_add_up(plan, "plan --json")
    assert plan["spare_gpu_hours"] > 0 and plan["total_gpu_hours"] > plan["job_gpu_hours"]
    seed = json.loads(_invoke(["plan", "--json"]))
    _hours_add_up(seed, "seed plan --json")
    for d in json.loads(_invoke(["compare", "-t", STORAGE, "--json"]))["designs"]:
        assert d["total_gpu_hours"] == pytest.approx(d["job_gpu_hours"] + d["spare_gpu_hours"], rel=REL), d["name"]
    src, dst = tmp_path / "rows.csv", tmp_path / "out.csv"
    src.write_text("name,nodes\nsame,2048\n")
    _invoke(["batch", str(src), "-t", STORAGE, "-o", str(dst)])
    row = pd.read_csv(dst).iloc[0]
    _hours_add_up(row, "batch row")
    for f in GPU_HOURS_FIELDS:
        assert row[f.name] == pytest.approx(plan[f.name], rel=REL, abs=1e-12), f.name
    tiers = files.load_plan(STORAGE).with_design("in-memory tier").setup
    base = {k: v for k, v in engine.scenario_to_dict(files.load_plan(STORAGE).scenario).items()
            if k not in ("domains", "checkpoint_stall_min")}
    out = evaluate_rows(pd.DataFrame([{**base, **tiers.columns()}]), tiers=list(tiers.tiers),
                        failure_classes=tiers.failure_classes)
    _hours_add_up(out.iloc[0], "tiered batch row")
    assert out.iloc[0]["spare_gpu_hours"] > 0


def test_plan_console_gpu_hours_line_adds_up():
    text = _invoke(["plan", "-t", STORAGE])
    m = re.search(r"GPU-hours ([\d,]+) = job ([\d,]+) \+ spares ([\d,]+)", text)
    assert m, text
    total, job, spares = (_whole(m.group(i)) for i in (1, 2, 3))
    assert abs(job + spares - total) <= 1
    compute_row = next(line for line in text.splitlines() if re.match(r"^[│|] compute\s", line))
    assert _whole(compute_row.split("│")[3].strip()) == job
