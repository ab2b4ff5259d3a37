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

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import workbook
from ckptplan.cli import app
from ckptplan.engine.designs import Design
from ckptplan.engine.sensitivity import break_even
from ckptplan.engine.setup import plan_setup
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


def _designs(plan) -> tuple:
    """The block's designs: the Compare sheet's alternatives, then the Storage & recovery sheet's others."""
    compare = workbook.build_workbook(plan.scenario, designs=plan.designs, setup=plan.setup).designs
    return tuple(compare) + tuple(d for d in plan.designs if d not in compare)


def _same(got: list, want: list) -> bool:
    """The block's rows equal the engine's, a number as the file stores it (16 significant figures)."""
    return len(got) == len(want) and all(
        g[0] == w[0] and g[2] == w[2] and (g[1] == w[1] if isinstance(w[1], str) else g[1] == pytest.approx(w[1], rel=1e-15))
        for g, w in zip(got, want))


def _want(plan, choice) -> list[tuple[str, object, str]]:
    table = break_even(plan.scenario, plan.setup, _designs(plan), *choice, inputs=plan.uncertainty)
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
    assert _same(_block(wb["Compare"]), _want(plan, choice))
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


def _from_edited_seed(tmp_path: Path, edits: dict, out: str):
    """The seed's workbook with ``edits`` (defined name -> value) typed in, read back by ``workbook --from`` into
    ``out``: the CLI's result and the output path."""
    plan = load_plan(template_path("seed.toml"))
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, setup=plan.setup)
    wb = load_workbook(src)
    for key, value in edits.items():
        _put(wb, key, value)
    wb.save(tmp_path / "edited.xlsx")
    res = runner.invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o", str(tmp_path / out),
                              "--no-deadline"])
    return res, tmp_path / out


def _refused_naming(res, path: Path, where: str) -> None:
    """``workbook --from`` refused the edited file naming the Compare sheet's cell ``where`` and wrote nothing."""
    assert res.exit_code != 0
    assert "Compare!" in res.output and where in res.output and "Traceback" not in res.output
    assert not path.exists()


def test_from_keeps_the_choice_and_regenerates_the_engines_values(tmp_path: Path):
    plan = load_plan(template_path("seed.toml"))
    res, again = _from_edited_seed(tmp_path, {"break_even_input": "restart_min", "break_even_low": 1.0,
                                              "break_even_high": 60.0}, "again.xlsx")
    assert res.exit_code == 0, res.output
    again = load_workbook(again, data_only=True)
    choice = ("restart_min", 1.0, 60.0)
    assert (_named(again, "break_even_input"), _named(again, "break_even_low"), _named(again, "break_even_high")) == choice
    assert _same(_block(again["Compare"]), _want(plan, choice))
    assert _named(again, "break_even_status") == UP_TO_DATE


@pytest.mark.parametrize("edits,where", [({"break_even_input": "bogus_field"}, "break_even_input"),
                                         ({"break_even_low": "many"}, "break_even_low"),
                                         ({"break_even_low": 50.0, "break_even_high": 10.0}, "break_even_low")])
def test_a_bad_choice_is_refused_naming_the_cell(tmp_path: Path, edits, where):
    _refused_naming(*_from_edited_seed(tmp_path, edits, "x.xlsx"), where)


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
    res, again = _from_edited_seed(tmp_path, {"target_goal": "goodput", "target_value": 0.9,
                                              "target_lever": "restart_min"}, "again.xlsx")
    assert res.exit_code == 0, res.output
    want = target(plan.scenario, plan.setup, "restart_min", "goodput", 0.9)
    solved = "not reachable" if math.isnan(want["restart_min"]) else float(want["restart_min"])
    got = _aim(load_workbook(again, data_only=True))
    assert got[:3] + got[4:] == ("goodput", 0.9, "restart_min", UP_TO_DATE) and got[3] == pytest.approx(solved, rel=1e-15)


@pytest.mark.parametrize("edits,where", [({"target_goal": "happiness"}, "target_goal"),
                                         ({"target_lever": "bogus_field"}, "target_lever"),
                                         ({"target_value": 1.5}, "target_value")])
def test_a_bad_target_is_refused_naming_the_cell(tmp_path: Path, edits, where):
    _refused_naming(*_from_edited_seed(tmp_path, edits, "x.xlsx"), where)


# ------------------------------------------------------------- the Storage & recovery sheet's designs in the block

STORAGE_TEMPLATE = "llama3-405b-storage.toml"


def _saving(plan, design, field: str, x: float) -> float:
    """Baseline minus design total cost at ``field`` = x, each planned by plan_setup (not the batch path)."""
    sc = plan.scenario.replace(**{field: x}, **({"failure_rate_source": ""} if field == "node_mtbf_h" else {}))
    return (plan_setup(sc, plan.setup).figures["total_cost"]
            - plan_setup(design.apply(sc), design.apply_setup(plan.setup)).figures["total_cost"])


def test_storage_designs_get_the_engines_break_even_in_compares_words(tmp_path: Path):
    """Tiers, spares and storage designs of the Storage & recovery sheet are in the block, each with the engine's
    value and the words of `ckptplan compare --break-even`; each value plugged back in makes the saving zero."""
    plan = load_plan(template_path(STORAGE_TEMPLATE))
    choice = ("node_mtbf_h", 1000.0, 1e6)
    out = tmp_path / "plan.xlsx"
    workbook.write_workbook(out, plan.scenario, designs=plan.designs, setup=plan.setup, break_even=choice)
    got = _block(load_workbook(out, data_only=True)["Compare"])
    assert sorted(name for name, _, _ in got) == sorted(d.name for d in plan.designs)   # every design, once
    assert _same(got, _want(plan, choice))
    res = runner.invoke(app, ["compare", "-t", str(template_path(STORAGE_TEMPLATE)), "--break-even", "node_mtbf_h",
                              "--break-even-range", "1000:1000000", "--json"])
    assert res.exit_code == 0, res.output
    words = {r["design"]: r["why"] for r in json.loads(res.output)["break_even"]}
    assert {name: text for name, _, text in got} == words
    crossing = [(name, x) for name, x, _ in got if isinstance(x, float)]
    assert {name for name, _ in crossing} == {"16 hot spares", "2x nodes, same training"}
    for name, x in crossing:
        design = next(d for d in plan.designs if d.name == name)
        base = plan_setup(plan.scenario.replace(node_mtbf_h=x, failure_rate_source=""), plan.setup).figures
        assert abs(_saving(plan, design, "node_mtbf_h", x)) <= 1e-6 * base["total_cost"]


def test_a_storage_design_edit_flips_the_status_in_libreoffice(tmp_path: Path):
    """Editing a design's own inputs on the Storage & recovery sheet (a change cell, a tier of its own, a tier's
    name) or the baseline's tiers makes the block OUT OF DATE naming the cell; the target block (the baseline
    only) stays up to date for a design's edit. `workbook --from` of the edited file regenerates the engine's answer
    for the edited design."""
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    plan = load_plan(template_path(STORAGE_TEMPLATE))
    k = {d.name: i for i, d in enumerate(plan.designs, start=1)}
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, designs=plan.designs, setup=plan.setup)
    edits = {"spares": {f"setup_design{k['16 hot spares']}_set_spares": 24},
             "tier": {f"setup_design{k['in-memory tier']}_tier1_write_gb_s_per_writer": 30.0},
             "name": {f"setup_design{k['in-memory tier']}_tier1_name": "hbm"},
             "base": {"tier1_every": 2}}
    paths = [src]
    for label, edit in edits.items():
        wb = load_workbook(src)
        for key, value in edit.items():
            _put(wb, key, value)
        wb.save(tmp_path / f"{label}.xlsx")
        paths.append(tmp_path / f"{label}.xlsx")
    books = [load_workbook(o, data_only=True) for o in recalculate(paths, tmp_path / "out")]
    status = [_named(b, "break_even_status") for b in books]
    aims = [_named(b, "target_status") for b in books]
    assert status[0] == aims[0] == UP_TO_DATE
    for (label, edit), text, aim in zip(edits.items(), status[1:], aims[1:]):
        name = next(iter(edit))
        assert text.startswith("OUT OF DATE: inputs changed since this was computed: ") and name in text, (label, text)
        assert (name in aim) if label == "base" else aim == UP_TO_DATE   # the target plans the baseline
    assert all(error_cells(o) == [] for o in (tmp_path / "out").iterdir())
    again = tmp_path / "again.xlsx"
    res = runner.invoke(app, ["workbook", "--from", str(paths[1]), "-o", str(again), "--no-deadline"])
    assert res.exit_code == 0, res.output
    edited = load_plan(template_path(STORAGE_TEMPLATE))
    designs = tuple(replace(d, set={"spares": 24}) if d.name == "16 hot spares" else d for d in edited.designs)
    choice = default_choice(plan.scenario, plan.setup, plan.uncertainty)
    compare = workbook.build_workbook(plan.scenario, designs=designs, setup=plan.setup).designs
    want = break_even(plan.scenario, plan.setup, tuple(compare) + tuple(d for d in designs if d not in compare),
                      *choice)
    got = load_workbook(again, data_only=True)
    assert _same(_block(got["Compare"]), [(r["design"], "none in range" if math.isnan(r["break_even"]) else
                                           r["break_even"], r["why"]) for _, r in want.iterrows()])
    assert _named(got, "break_even_status") == UP_TO_DATE


# ------------------------------------------------------------- the view the blocks solve (spot, failure phases)

def _views():
    from ckptplan import files
    from ckptplan.engine.phases import FailurePhase

    seed = files.load_scenario("seed")
    return {"spot": seed.replace(name="spot", preemptions_per_h=0.08, preemption_notice_min=5.0,
                                 capacity_wait_min=25.0, spot_price_per_gpu_hour=0.9),
            "phases": seed.replace(name="burn-in", failure_phases=(FailurePhase(0.0, 4.0), FailurePhase(24.0, 1.0)))}


def test_spot_and_phase_scenarios_solve_the_compare_view_and_stay_up_to_date(tmp_path: Path):
    """A spot or failure-phase scenario: both blocks hold the engine's answers for the Compare sheet's view
    (on-demand, constant rate: no preemptions, no phases) and say so; their status watches the full scenario's
    inputs and reads "up to date" as generated, in LibreOffice too, and names preemptions_per_h once it is edited."""
    designs = (Design("restarts 2x faster", times={"restart_min": 0.5}),)
    paths = []
    for label, sc in _views().items():
        flat = sc.replace(preemptions_per_h=None, failure_phases=())
        built = workbook.write_workbook(tmp_path / f"{label}.xlsx", sc, designs=designs)
        ws = built.workbook["Compare"]
        choice = default_choice(sc, _setup())
        want = break_even(flat, _setup(), designs, *choice)
        assert _same(_block(ws), [(r["design"], "none in range" if math.isnan(r["break_even"]) else r["break_even"],
                                   r["why"]) for _, r in want.iterrows()])
        goal, value, lever = default_target(sc, _setup())
        aim = target(flat, _setup(), lever, goal, value)
        assert _named(built.workbook, "target_solved") == ("not reachable" if math.isnan(aim[lever]) else aim[lever])
        notes = [c.value for c in ws["A"] if isinstance(c.value, str) and "Solved on the Compare sheet's view" in c.value]
        assert len(notes) == 2 and all(("spot preemptions" if label == "spot" else "failure phases") in n for n in notes)
        cached = load_workbook(tmp_path / f"{label}.xlsx", data_only=True)
        assert _named(cached, "break_even_status") == _named(cached, "target_status") == UP_TO_DATE
        paths.append(tmp_path / f"{label}.xlsx")
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    wb = load_workbook(paths[0])
    _put(wb, "preemptions_per_h", 0.2)
    wb.save(tmp_path / "edited.xlsx")
    outs = recalculate(paths + [tmp_path / "edited.xlsx"], tmp_path / "out")
    status = [(_named(b, "break_even_status"), _named(b, "target_status")) for b in map(
        lambda o: load_workbook(o, data_only=True), outs)]
    assert status[0] == status[1] == (UP_TO_DATE, UP_TO_DATE)
    assert all(s.startswith("OUT OF DATE") and "preemptions_per_h" in s for s in status[2])


def _setup():
    from ckptplan.engine.setup import RecoverySetup

    return RecoverySetup()


def test_a_hostile_tier_name_stays_text_in_the_status(tmp_path: Path):
    """A tier or class name a status compares is copied into a hidden text cell and compared with EXACT: no formula
    holds it, and the block reads up to date (the evaluator's cached value)."""
    plan = load_plan(template_path(STORAGE_TEMPLATE))
    evil = '=HYPERLINK("http://evil.example","x")'
    designs = tuple(replace(d, tiers=tuple({**t, "name": evil} if i == 0 else t for i, t in enumerate(d.tiers)))
                    if d.tiers else d for d in plan.designs)
    out = tmp_path / "plan.xlsx"
    workbook.write_workbook(out, plan.scenario, designs=designs, setup=plan.setup)
    wb = load_workbook(out)
    assert not [c.coordinate for ws in wb for row in ws.iter_rows() for c in row
                if c.data_type == "f" and "evil" in str(c.value)]
    assert evil in [c.value for row in wb["Compare"].iter_rows() for c in row if c.data_type == "s"]
    assert _named(load_workbook(out, data_only=True), "break_even_status") == UP_TO_DATE


def test_a_setup_input_is_a_break_even_choice(tmp_path: Path):
    """The block solves for a setup input too (the spare count a Storage & recovery design changes): `workbook
    --from` keeps the choice and the block holds the engine's answer for every design, as `compare --break-even`."""
    plan = load_plan(template_path(STORAGE_TEMPLATE))
    src = tmp_path / "plan.xlsx"
    workbook.write_workbook(src, plan.scenario, designs=plan.designs, setup=plan.setup)
    wb = load_workbook(src)
    for key, value in {"break_even_input": "spares", "break_even_low": 0, "break_even_high": 64}.items():
        _put(wb, key, value)
    wb.save(tmp_path / "edited.xlsx")
    res = runner.invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o", str(tmp_path / "again.xlsx"),
                              "--no-deadline"])
    assert res.exit_code == 0, res.output
    again = load_workbook(tmp_path / "again.xlsx", data_only=True)
    assert _same(_block(again["Compare"]), _want(plan, ("spares", 0.0, 64.0)))
    assert _named(again, "break_even_status") == UP_TO_DATE
