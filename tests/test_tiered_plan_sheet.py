"""A tiered baseline's Plan sheet shows the tiered plan as THE plan, equal to ``ckptplan plan --json``.

The storage template with its in-memory tier made the baseline's own tiers (host memory every save, the
remote store every 10th). Built, then edited as a planner would (nodes, the remote tier's every, the
storage system's aggregate write and read bandwidth), recalculated in LibreOffice: the Plan sheet's top
rows (interval, waste, failures, wall time, GPU-hours, money) equal ``plan --json`` of the same plan with
the same edits; the single-level rows under them say they are a comparison only; a Deadline sheet simulated
as one level says so first, and the sheets that plan the tiers (Interval curve, Scaling, Compare) say that.
"""

from __future__ import annotations

import math

import pytest
from openpyxl import load_workbook

from ckptplan import files, workbook
from ckptplan.engine.setup import plan_setup
from ckptplan.workbook.build import SINGLE_LEVEL_VIEW
from ckptplan.workbook.recalc import recalculate, soffice
from ckptplan.workbook.tier_formulas import PLAN_ROWS

from plan_figures import LOOSE_TIERED
from tiered_baseline import cli_json, edited, named, tiered_plan

pytestmark = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed (scripts/test.sh installs it)")

EDITS = {"nodes": 1024, "tier2_every": 5, "setup_aggregate_write_gb_s": 1000.0, "setup_aggregate_read_gb_s": 1000.0}


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tiered-plan")
    plan = tiered_plan()
    single = plan_setup(plan.scenario, plan.setup.replace(tiers=(), failure_classes={})).scenario  # as `workbook` does
    report = workbook.deadline_report(single, runs=500)
    built = workbook.write_workbook(tmp / "built.xlsx", plan.scenario, setup=plan.setup, designs=plan.designs,
                                    deadline=report)
    wb = load_workbook(tmp / "built.xlsx")
    for name, value in EDITS.items():
        named(wb, name).value = value
    wb.save(tmp / "edited.xlsx")
    outs = recalculate([tmp / "built.xlsx", tmp / "edited.xlsx"], tmp / "out")
    wants = [cli_json("plan", plan, tmp / "built.toml"), cli_json("plan", edited(plan, EDITS), tmp / "edited.toml")]
    return built, [load_workbook(o, data_only=True) for o in outs], wants


def test_the_plan_sheets_top_rows_are_the_tiered_plan_of_plan_json(books):
    _, outs, wants = books
    for wb, want in zip(outs, wants):
        for key in PLAN_ROWS:
            got = named(wb, f"tiered_{key}").value
            tol = 1e-5 if key in LOOSE_TIERED else 1e-9
            assert math.isclose(got, want[key], rel_tol=tol), (key, got, want[key])
        assert named(wb, "model_check").value == "OK"
    assert not math.isclose(wants[0]["total_cost"], wants[1]["total_cost"], rel_tol=1e-3)  # the edits matter


def test_the_single_level_rows_and_sheets_say_they_are_a_comparison(books):
    built, outs, _ = books
    plan = built.workbook["Plan"]
    labels = {plan.cell(row=r, column=1).value: r for r in range(1, plan.max_row + 1)}
    top = min(r for r in range(1, plan.max_row + 1) if plan.cell(row=r, column=4).value == "tiered_total_cost")
    assert labels[SINGLE_LEVEL_VIEW] > top   # the tiered plan first, then the single-level view, labelled
    assert labels[SINGLE_LEVEL_VIEW] < min(r for r in range(1, plan.max_row + 1)
                                           if plan.cell(row=r, column=4).value == "total_cost")
    assert built.workbook["Deadline"].cell(row=2, column=1).value.startswith("SINGLE-LEVEL VIEW: the baseline has "
                                                                               "checkpoint tiers")   # a one-level report
    for name, row in (("Scaling", 4), ("Compare", 2)):   # these plan the tiers (tests/test_tiered_sheets.py)
        assert built.workbook[name].cell(row=row, column=1).value.startswith("CHECKPOINT TIERS"), name
    assert "checkpoint tiers" in built.workbook["Interval curve"]["A1"].value
    # a single-level baseline's sheets say nothing of the kind
    seed = workbook.build_workbook(files.load_scenario("seed")).workbook
    assert SINGLE_LEVEL_VIEW not in [c.value for c in seed["Plan"]["A"]]
    assert not str(seed["Interval curve"]["A2"].value).startswith("SINGLE-LEVEL")
