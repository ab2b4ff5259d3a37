"""The Compare sheet's break-even block (workbook/break_even_block.py) and the target block
(workbook/target_block.py): the engine's values, a live status.

Its values equal :func:`engine.sensitivity.break_even` of the Compare sheet's alternatives (seed and the Llama 3
storage template); the status cell is "up to date" as generated (the evaluator's cached value) and in
LibreOffice, and names the input after an edit of the Inputs sheet, an alternative's change cell or the block's
range; ``workbook --from`` keeps the chosen input and range and regenerates the engine's values for them; a bad
choice is refused naming the cell. The same for the target block's goal, value and lever
(:func:`engine.targets.target` of the baseline).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import workbook
from ckptplan.cli import app
from ckptplan.engine.designs import Design
from ckptplan.engine.sensitivity import break_even
from ckptplan.engine.targets import target
from ckptplan.files import load_plan
from ckptplan.files.scenarios import template_path
from ckptplan.workbook.break_even_block import HEADING, default_choice
from ckptplan.workbook.flags import UP_TO_DATE
from ckptplan.workbook.target_block import default_target
from ckptplan.workbook.recalc import error_cells, recalculate, soffice

TEMPLATES = ("seed.toml", "llama3-405b-storage.toml")
runner = CliRunner()


def _named(wb, name: str):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")].value


def _put(wb, name: str, value) -> None:
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    wb[sheet][ref.replace("$", "")] = value


def _block(ws) -> list[tuple[str, object, str]]:
    """(alternative, break-even cell, sentence) per alternative of the block (its sentence in the row below)."""
    rows = [r for r in range(1, ws.max_row + 1) if ws.cell(row=r, column=1).value == HEADING]
    assert len(rows) == 1
    r = rows[0] + 6   # heading, note, input, low, high, header
    out = []
    while not str(ws.cell(row=r, column=1).value).startswith("Status"):
        out.append((ws.cell(row=r, column=1).value.split(": ", 1)[1], ws.cell(row=r, column=3).value,
                    ws.cell(row=r + 1, column=1).value.removeprefix("Answer: ")))
        r += 2
    return out


def _want(plan, choice) -> list[tuple[str, object, str]]:
    designs = workbook.build_workbook(plan.scenario, designs=plan.designs, setup=plan.setup).designs
    table = break_even(plan.scenario, plan.setup, designs, *choice, inputs=plan.uncertainty)
    return [(r["design"], "none in range" if math.isnan(r["break_even"]) else r["break_even"], r["why"])
            for _, r in table.iterrows()]


@pytest.mark.parametrize("template", TEMPLATES)
def test_block_holds_the_engines_break_even_and_is_up_to_date(tmp_path: Path, template):
    plan = load_plan(template_path(template))
    out = tmp_path / "plan.xlsx"
    workbook.write_workbook(out, plan.scenario, designs=plan.designs, setup=plan.setup, uncertainty=plan.uncertainty)
    wb = load_workbook(out, data_only=True)
    choice = default_choice(plan.scenario, plan.setup, plan.uncertainty)
    assert (_named(wb, "break_even_input"), _named(wb, "break_even_low"), _named(wb, "break_even_high")) == choice
    assert _block(wb["Compare"]) == _want(plan, choice)
    assert _named(wb, "break_even_status") == UP_TO_DATE   # the evaluator's cached value


def test_a_crossing_is_the_engines_root(tmp_path: Path):
    """Faster saves bought with a dearer GPU-hour pay off while failures are frequent: the block's value is the
    engine's root, in the engine's words."""
    plan = load_plan(template_path("seed.toml"))
    designs = (Design("stall / 4 at +3 % price", times={"checkpoint_stall_min": 0.25, "price_per_gpu_hour": 1.03}),
               Design("restarts 2x faster", times={"restart_min": 0.5}))
    choice = ("node_mtbf_h", 100.0, 20000.0)
    built = workbook.build_workbook(plan.scenario, designs=designs, setup=plan.setup, break_even=choice)
    got = _block(built.workbook["Compare"])
    want = break_even(plan.scenario, plan.setup, designs, *choice)
    assert got == [(r["design"], "none in range" if math.isnan(r["break_even"]) else r["break_even"], r["why"])
                   for _, r in want.iterrows()]
    assert isinstance(got[0][1], float) and 100.0 < got[0][1] < 20000.0 and "pays off while node_mtbf_h <" in got[0][2]


def test_status_names_an_edit_in_libreoffice(tmp_path: Path):
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    plan = load_plan(template_path("seed.toml"))
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, setup=plan.setup)
    paths = [src]
    for name, edits in {"nodes": {"nodes": 256}, "alt": {"alt1_set_restart_min": 3.0},
                        "range": {"break_even_high": 9000.0, "break_even_input": "nodes"},
                        "goal": {"target_value": 0.9, "target_lever": "restart_min"}}.items():
        wb = load_workbook(src)
        for key, value in edits.items():
            _put(wb, key, value)
        wb.save(tmp_path / f"{name}.xlsx")
        paths.append(tmp_path / f"{name}.xlsx")
    outs = recalculate(paths, tmp_path / "out")
    status = [_named(load_workbook(o, data_only=True), "break_even_status") for o in outs]
    assert status[0] == UP_TO_DATE
    assert status[1].startswith("OUT OF DATE: inputs changed since this was computed: nodes.")
    assert "alt1_set_restart_min" in status[2]
    assert "break_even_high" in status[3] and "break_even_input" in status[3]
    aims = [_named(load_workbook(o, data_only=True), "target_status") for o in outs]
    assert aims[0] == aims[2] == aims[3] == UP_TO_DATE   # the target plans the baseline: no alternative's cells
    assert aims[1].startswith("OUT OF DATE: inputs changed since this was computed: nodes.")
    assert "target_value" in aims[4] and "target_lever" in aims[4] and status[4] == UP_TO_DATE
    assert all(error_cells(o) == [] for o in outs)


def test_from_keeps_the_choice_and_regenerates_the_engines_values(tmp_path: Path):
    plan = load_plan(template_path("seed.toml"))
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, setup=plan.setup)
    wb = load_workbook(src)
    for key, value in {"break_even_input": "restart_min", "break_even_low": 1.0, "break_even_high": 60.0}.items():
        _put(wb, key, value)
    wb.save(tmp_path / "edited.xlsx")
    res = runner.invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o", str(tmp_path / "again.xlsx"),
                              "--no-deadline"])
    assert res.exit_code == 0, res.output
    again = load_workbook(tmp_path / "again.xlsx", data_only=True)
    choice = ("restart_min", 1.0, 60.0)
    assert (_named(again, "break_even_input"), _named(again, "break_even_low"), _named(again, "break_even_high")) == choice
    assert _block(again["Compare"]) == _want(plan, choice)
    assert _named(again, "break_even_status") == UP_TO_DATE


@pytest.mark.parametrize("edits,where", [({"break_even_input": "bogus_field"}, "break_even_input"),
                                         ({"break_even_low": "many"}, "break_even_low"),
                                         ({"break_even_low": 50.0, "break_even_high": 10.0}, "break_even_low")])
def test_a_bad_choice_is_refused_naming_the_cell(tmp_path: Path, edits, where):
    plan = load_plan(template_path("seed.toml"))
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, setup=plan.setup)
    wb = load_workbook(src)
    for key, value in edits.items():
        _put(wb, key, value)
    wb.save(tmp_path / "edited.xlsx")
    res = runner.invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o", str(tmp_path / "x.xlsx"),
                              "--no-deadline"])
    assert res.exit_code != 0
    assert "Compare!" in res.output and where in res.output and "Traceback" not in res.output
    assert not (tmp_path / "x.xlsx").exists()


def _aim(wb) -> tuple:
    return tuple(_named(wb, f"target_{part}") for part in ("goal", "value", "lever", "solved", "status"))


@pytest.mark.parametrize("template", TEMPLATES)
def test_target_block_holds_the_engines_answer(tmp_path: Path, template):
    plan = load_plan(template_path(template))
    out = tmp_path / "plan.xlsx"
    workbook.write_workbook(out, plan.scenario, designs=plan.designs, setup=plan.setup, uncertainty=plan.uncertainty)
    wb = load_workbook(out, data_only=True)
    goal, value, lever = default_target(plan.scenario, plan.setup)
    want = target(plan.scenario, plan.setup, lever, goal, value)
    solved = "not reachable" if math.isnan(want[lever]) else float(want[lever])
    got = _aim(wb)   # a number as the file stores it: 16 significant figures
    assert got[:3] + got[4:] == (goal, value, lever, UP_TO_DATE) and got[3] == pytest.approx(solved, rel=1e-15)
    rows = [c.value for c in wb[_sheet(wb, "target_goal")]["A"]]
    assert "Answer: " + want["why"] in rows
    if template.startswith("llama"):   # the storage template: bandwidth alone cannot reach 95 % goodput
        assert solved == "not reachable" and want["why"].startswith("not reachable by aggregate_write_gb_s alone")
    else:   # reached: plugged back in, the engine's goodput is the goal
        assert lever == "checkpoint_stall_min" and want["achieved"] == pytest.approx(value, rel=1e-6)


def _sheet(wb, name: str) -> str:
    return next(iter(wb.defined_names[name].destinations))[0]


def test_from_keeps_the_target_choice(tmp_path: Path):
    plan = load_plan(template_path("seed.toml"))
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, setup=plan.setup)
    wb = load_workbook(src)
    for key, value in {"target_goal": "goodput", "target_value": 0.9, "target_lever": "restart_min"}.items():
        _put(wb, key, value)
    wb.save(tmp_path / "edited.xlsx")
    res = runner.invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o", str(tmp_path / "again.xlsx"),
                              "--no-deadline"])
    assert res.exit_code == 0, res.output
    want = target(plan.scenario, plan.setup, "restart_min", "goodput", 0.9)
    solved = "not reachable" if math.isnan(want["restart_min"]) else float(want["restart_min"])
    got = _aim(load_workbook(tmp_path / "again.xlsx", data_only=True))
    assert got[:3] + got[4:] == ("goodput", 0.9, "restart_min", UP_TO_DATE) and got[3] == pytest.approx(solved, rel=1e-15)


@pytest.mark.parametrize("edits,where", [({"target_goal": "happiness"}, "target_goal"),
                                         ({"target_lever": "bogus_field"}, "target_lever"),
                                         ({"target_value": 1.5}, "target_value")])
def test_a_bad_target_is_refused_naming_the_cell(tmp_path: Path, edits, where):
    plan = load_plan(template_path("seed.toml"))
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, setup=plan.setup)
    wb = load_workbook(src)
    for key, value in edits.items():
        _put(wb, key, value)
    wb.save(tmp_path / "edited.xlsx")
    res = runner.invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o", str(tmp_path / "x.xlsx"),
                              "--no-deadline"])
    assert res.exit_code != 0
    assert "Compare!" in res.output and where in res.output and "Traceback" not in res.output
    assert not (tmp_path / "x.xlsx").exists()
