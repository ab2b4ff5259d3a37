"""One plan pipeline (engine.pipeline.plan_table) behind every surface (issue 21, point 1), and the tiered designs' optima
searched in one vectorised pass (point 2).

* a batch row of each shipped template and of each of its designs equals `plan --json` (the baseline) and
  engine.setup.plan_setup (the designs) of the same scenario to 1e-12, the tiered design's row included;
* `compare` equals batch rows of the same designs; `total_cost` and its parts add up on plan, compare and batch;
* designs of one tier structure planned together (stacked, one tiered pass) equal each design planned alone;
* the pass counts: a compare of a baseline and its designs runs one setup pass, one evaluate pass and one tiered
  pass per tier structure, whatever the number of designs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.engine import pipeline
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.designs import compare_designs
from ckptplan.engine.scenario import to_table
from ckptplan.engine.setup import plan_setup, plan_setups
from ckptplan.files import load_plan
from ckptplan.templates import __path__ as TEMPLATE_DIRS

REL = 1e-12
TEMPLATES = sorted(p.stem for d in TEMPLATE_DIRS for p in __import__("pathlib").Path(d).glob("*.toml"))
#: plan figure -> the batch column that carries it
SAME = {"total_cost": "total_cost", "compute_cost": "compute_cost", "storage_cost": "storage_cost",
        "spare_cost": "spare_cost", "wall_h": "wall_h", "waste_fraction": "waste_fraction",
        "interval_min": "chosen_interval_min", "cost_per_useful_gpu_hour": "cost_per_useful_gpu_hour",
        "useful_cost": "useful_cost", "save_cost": "save_cost", "rework_cost": "rework_cost",
        "restart_cost": "restart_cost", "spare_gpu_hours": "spare_gpu_hours"}


def _plans(name: str) -> list:
    """The template's baseline and each of its designs as (label, scenario, setup)."""
    plan = load_plan(name)
    out = [("baseline", plan.scenario, plan.setup)]
    for d in plan.designs:
        out.append((d.name, d.apply(plan.scenario), d.apply_setup(plan.setup)))
    return out


def _batch_row(scenario, setup, figures) -> pd.Series:
    """The scenario as a batch row a planner writes: its fields and its setup's as columns, the stall, write,
    restart and downtime left blank where the setup derives them (a stated one written), the tiers as ``tiers=``."""
    row = to_table([scenario]).iloc[0].to_dict()
    row.update(setup.columns())
    derives = {"checkpoint_stall_min": figures["derived_checkpoint_stall_min"] is not None,
               "async_write_min": figures["derived_async_write_min"] is not None}
    derives["restart_min"] = derives["downtime_min"] = bool(plan_setup(scenario, setup).restart_parts_min)
    for c, derived in derives.items():
        if derived and c not in setup.stated:
            row[c] = np.nan
    options = {"tiers": setup.tiers, "failure_classes": setup.failure_classes} if setup.tiers else {}
    out = evaluate_rows(pd.DataFrame([row]), extra_columns="keep", **options)
    assert (out["status"] == "ok").all(), out["error"].iloc[0]
    return out.iloc[0]


def _same(got: float, want: float) -> bool:
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return bool(np.isnan(got))
    return got == pytest.approx(want, rel=REL, abs=1e-9)


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_batch_row_of_each_template_equals_plan_json(name):
    res = CliRunner().invoke(app, ["plan", "-t", name, "--json"])
    assert res.exit_code == 0, res.output
    cli = json.loads(res.stdout)
    for label, sc, st in _plans(name):
        figures = plan_setup(sc, st).figures if label != "baseline" else cli
        row = _batch_row(sc, st, figures)
        for key, col in SAME.items():
            if col not in row.index:   # a table without setup columns pays no spares
                assert not figures[key], (name, label, key)
            elif key in figures:
                assert _same(row[col], figures[key]), (name, label, key, row[col], figures[key])
        assert row["total_cost"] == pytest.approx(row["compute_cost"] + row["storage_cost"] + row["spare_cost"], rel=REL)


def test_compare_equals_batch_rows_of_the_same_designs_and_the_parts_add_up():
    plan = load_plan("llama3-405b-storage")
    table = compare_designs(plan.scenario, plan.setup, plan.designs).set_index("name")
    for label, sc, st in _plans("llama3-405b-storage"):
        figures = plan_setup(sc, st).figures
        row = _batch_row(sc, st, figures)
        got = table.loc[sc.name if label == "baseline" else label]
        for key in ("total_cost", "compute_cost", "storage_cost", "spare_cost", "wall_h", "waste_fraction",
                    "cost_per_useful_gpu_hour"):
            assert got[key] == pytest.approx(row[key], rel=REL), (label, key)
        assert got["total_cost"] == pytest.approx(got["compute_cost"] + got["storage_cost"] + got["spare_cost"], rel=REL)
        parts = sum(figures[f"{k}_cost"] for k in ("useful", "save", "rework", "restart"))
        assert figures["compute_cost"] == pytest.approx(parts, rel=REL)
        assert figures["total_cost"] == pytest.approx(figures["compute_cost"] + figures["storage_cost"]
                                                      + figures["spare_cost"], rel=REL)


def _tiered_designs():
    """Tiered designs of the storage template: five of one structure with their own numbers (nodes, the
    host-memory bandwidth, the remote tier's every, the class shares, a restore that can fail), one whose
    first tier states its stall (another structure) and the single-level baseline."""
    plan = load_plan("llama3-405b-storage").with_design("in-memory tier")
    sc, st = plan.scenario.replace(deadline_h=None), plan.setup
    host, remote = (dict(t) for t in st.tiers)
    out = [(plan.scenario.replace(deadline_h=None), load_plan("llama3-405b-storage").setup)]
    for k, (nodes, bw, every, process, fail) in enumerate([(2048, 25.0, 10, 0.22, 0.0), (1024, 10.0, 4, 0.3, 0.0),
                                                           (4096, 40.0, 20, 0.1, 0.0), (512, 5.0, 2, 0.35, 0.0),
                                                           (3000, 25.0, 6, 0.2, 0.05)]):
        tiers = ({**host, "write_gb_s_per_writer": bw, "read_gb_s_per_writer": bw, "restore_failure_probability": fail},
                 {**remote, "every": every})
        classes = {"process": process, "node": 0.98 - process, "correlated": 0.02}
        out.append((sc.replace(nodes=nodes), st.replace(tiers=tiers, failure_classes=classes)))
    stated = ({**host, "checkpoint_stall_min": 0.05, "write_gb_s_per_writer": None}, remote)
    out.append((sc, st.replace(tiers=stated)))
    return out


def test_designs_of_one_structure_planned_together_equal_each_planned_alone():
    pairs = _tiered_designs()
    together = plan_setups(pairs)
    for k, (pair, plan) in enumerate(zip(pairs, together)):
        alone = plan_setup(*pair)
        for key, want in alone.figures.items():
            if isinstance(want, float):
                assert _same(plan.figures[key], want), (k, key, plan.figures[key], want)
        for got, want in zip(plan.tiers, alone.tiers):
            for key in ("every", "interval_min", "checkpoint_stall_min", "restore_min", "restart_min", "storage_cost"):
                assert _same(float(got[key]), float(want[key])), (k, key)
        assert plan.warnings == alone.warnings and plan.notes == alone.notes


def test_one_pass_of_each_step_for_a_baseline_and_its_designs(monkeypatch):
    calls = {"setup": 0, "evaluate": 0, "tiered": 0, "search": 0}
    import ckptplan.engine.tiers.optimum as optimum
    import ckptplan.engine.tiers.table as tier_table

    def counted(module, name, key):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[key] += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    counted(pipeline, "setup_columns", "setup")
    counted(pipeline, "evaluate_each", "evaluate")
    counted(tier_table, "tiered_columns", "tiered")
    counted(tier_table, "best_first_interval", "search")
    assert optimum.best_first_interval is not None
    plans = plan_setups(_tiered_designs())
    assert len(plans) == 7
    # one setup pass (the money pass adds only the money); one evaluate; one tiered pass and one search per tier
    # structure (two: five designs share one, the design whose first tier states its stall is another)
    assert calls == {"setup": 1, "evaluate": 1, "tiered": 2, "search": 2}, calls
