"""Validate once at the boundary (issue 21, point 1): every surface validates the user's scenario table once.

The contract of the plan pipeline (:func:`ckptplan.engine.pipeline.plan_table`): a user's table (a file's
scenario, a batch table) goes through :func:`ckptplan.engine.scenario.table_problems` once; tables the engine
derives from validated scenarios (a design's columns, a sensitivity swing, break-even and target candidates,
Scaling's node counts) are checked only where they differ (:func:`ckptplan.engine.pipeline.changed_cells`,
:func:`ckptplan.engine.scenario.derived_cell_problems`), so a derived value that leaves its field's domain is
still refused there, naming the field, the value and the rule; and a cell a caller changes cannot skip a check.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import ckptplan.engine.scenario as scenario_mod
from ckptplan import workbook
from ckptplan.cli import app
from ckptplan.engine import InputError
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.designs import design_from_dict
from ckptplan.engine.pipeline import plan_table
from ckptplan.engine.scenario import derived_scenario, to_table
from ckptplan.engine.sensitivity import break_even
from ckptplan.files import load_plan

TEMPLATE = "llama3-405b-storage"


@contextmanager
def validations():
    """Count the calls of ``table_problems`` wherever a ``ckptplan`` module holds it."""
    calls = []
    original = scenario_mod.table_problems

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return original(*args, **kwargs)

    patched = [(m, k) for name, m in list(sys.modules.items()) if name.startswith("ckptplan") and m is not None
               for k, v in list(vars(m).items()) if v is original]
    for m, k in patched:
        setattr(m, k, counted)
    try:
        yield calls
    finally:
        for m, k in patched:
            setattr(m, k, original)


def _cli(*args: str) -> None:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("command", ["plan", "compare"])
def test_plan_and_compare_validate_the_file_once(command):
    _cli(command, "-t", TEMPLATE, "--json")   # every module loaded before counting
    with validations() as calls:
        _cli(command, "-t", TEMPLATE, "--json")
    assert len(calls) == 1, calls


def _batch_table() -> pd.DataFrame:
    """The template's baseline and single-level designs as a planner's batch table (setup columns, the stall,
    write, restart and downtime left for the setup to derive)."""
    plan = load_plan(TEMPLATE)
    rows = []
    for p in [plan] + [plan.with_design(d.name) for d in plan.designs]:
        if not p.setup.tiers:
            rows.append({**to_table([p.scenario]).iloc[0].to_dict(), **p.setup.columns()})
    table = pd.DataFrame(rows)
    for c in ("checkpoint_stall_min", "async_write_min", "restart_min", "downtime_min"):
        table[c] = np.nan
    return table


def test_batch_validates_the_table_once(tmp_path):
    table = _batch_table()
    assert "repair_h" in table.columns   # a spare pool: the setup needs each row's job MTBF before the validation
    src = tmp_path / "in.csv"
    table.to_csv(src, index=False)
    _cli("batch", str(src), "-o", str(tmp_path / "warm.csv"), "--no-template", "--keep-extra")
    with validations() as calls:
        _cli("batch", str(src), "-o", str(tmp_path / "out.csv"), "--no-template", "--keep-extra")
    assert calls == [len(table)], calls
    out = pd.read_csv(tmp_path / "out.csv")
    assert (out["status"] == "ok").all(), out["error"]
    with validations() as calls:
        evaluate_rows(table, extra_columns="keep")
    assert calls == [len(table)], calls


def test_workbook_of_the_storage_template_validates_once(tmp_path):
    _cli("workbook", "-t", TEMPLATE, "-o", str(tmp_path / "warm.xlsx"))
    with validations() as calls:
        _cli("workbook", "-t", TEMPLATE, "-o", str(tmp_path / "book.xlsx"))
    assert len(calls) == 1, calls
    plan = load_plan(TEMPLATE)
    with validations() as calls:   # a validated scenario given: the workbook validates nothing again
        workbook.write_workbook(tmp_path / "again.xlsx", plan.scenario, setup=plan.setup, designs=plan.designs)
    assert calls == []


# ------------------------------------------------------------------ derived values are checked where they are made

def test_a_design_that_breaks_a_rule_is_refused_naming_field_value_rule():
    plan = load_plan(TEMPLATE)
    bad = design_from_dict({"name": "no nodes", "set": {"nodes": 0}})
    with validations() as calls, pytest.raises(InputError) as exc:
        bad.apply(plan.scenario)
    assert calls == []
    assert "nodes" in exc.value.field and exc.value.value == 0.0 and ">= 1" in exc.value.rule
    # the rules across a row too: a downtime over the restart it is part of
    with pytest.raises(InputError) as exc:
        derived_scenario(plan.scenario, downtime_min=plan.scenario.restart_min + 5.0)
    assert exc.value.field == "downtime_min" and "restart_min" in exc.value.rule


def test_a_swing_out_of_a_fields_domain_is_refused_where_it_is_made():
    plan = load_plan(TEMPLATE)
    designs = [d for d in plan.designs if not d.apply_setup(plan.setup).tiers][:1]
    with validations() as calls, pytest.raises(InputError) as exc:
        break_even(plan.scenario, plan.setup, designs, field="node_mtbf_h", lo=-1000.0, hi=50000.0)
    assert calls == []
    assert "node_mtbf_h" in str(exc.value) and "-1000" in str(exc.value)


def test_a_cell_changed_from_the_validated_scenarios_is_checked():
    """No caller can skip the validation: a cell that differs from the scenarios the rows claim to derive from
    is checked against its field's rule (and a column the records do not give is checked whole)."""
    plan = load_plan(TEMPLATE)
    table = to_table([plan.scenario, plan.scenario])
    table.loc[1, "nodes"] = -4
    table["price_per_gpu_hour"] = table["price_per_gpu_hour"].astype(object)
    table.loc[0, "price_per_gpu_hour"] = "cheap"
    planned = plan_table(table, scenarios=plan.scenario, extra_columns="keep")
    errs = {p: [str(e) for e in v] for p, v in planned.problems.by_row.items()}
    assert any("nodes" in e and "-4" in e for e in errs[1]), errs
    assert any("price_per_gpu_hour" in e and "cheap" in e for e in errs[0]), errs
    ok = plan_table(to_table([plan.scenario]), scenarios=[plan.scenario])
    assert not ok.problems.by_row
    with pytest.raises(InputError):
        plan_table(to_table([plan.scenario]), scenarios=["not a scenario"])


def test_the_derived_path_gives_the_validated_paths_figures():
    """Rows planned from validated scenarios equal the same table validated whole, to the bit."""
    plan = load_plan(TEMPLATE)
    table = _batch_table()
    scs = [plan.scenario] + [plan.with_design(d.name).scenario for d in plan.designs
                             if not plan.with_design(d.name).setup.tiers]
    swung = table.copy()
    swung["nodes"] = [1024, 2048, 4096, 8192][:len(swung)]
    whole = evaluate_rows(swung, extra_columns="keep")
    derived = evaluate_rows(swung, extra_columns="keep", scenarios=scs)
    pd.testing.assert_frame_equal(whole, derived)
