"""One design, one answer: a planner edits the storage template's workbook and every sheet follows `plan` and `compare`.

The llama3-405b-storage workbook is generated as `ckptplan workbook -t llama3-405b-storage` writes it, then
edited with openpyxl the way a planner would (nodes, the storage system's bandwidths, a restart part, the
spares), recalculated in LibreOffice, and compared with the command line run with the same edits:

* the Plan sheet (and Inputs' "plan uses" column) against `ckptplan plan --json` (1e-9 relative);
* every Compare and Storage & recovery column against `ckptplan compare --json` (totals 1e-9, savings 1e-3), the
  tiered design's column included (live: waste, wall, GPU-hours and money 1e-9; its interval, the optimum at the
  stated every, 1e-5: a search that compares values fixes it to ~1e-7 only), also after its remote tier's `every`
  was edited (the command line reads the template with the same edit);
* every formula cell of Plan, Interval curve, Scaling, Compare and Storage & recovery against the engine
  (engine.setup.plan_setup of the edited design, Scaling re-derived at each node count);
* the cached values written with the file equal LibreOffice's, on every sheet, Storage & recovery included.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import files, workbook
from ckptplan.cli import app
from ckptplan.workbook.recalc import error_cells, recalculate, soffice
from ckptplan.workbook.storage_sheet import SHEET, sheet_checks

import test_storage_sheet as storage_test
import test_workbook_recalc as recalc_test

pytestmark = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed (scripts/test.sh installs it)")

TEMPLATE = "llama3-405b-storage"
#: a planner's edits: defined name -> value (Inputs and the design's inputs on Storage & recovery)
EDITS = {"nodes": 1024, "setup_aggregate_write_gb_s": 1000.0, "setup_aggregate_read_gb_s": 1000.0,
         "setup_startup_min": 5.0, "setup_spares": 12, "setup_design2_tier2_every": 5}
#: the tiered design (its position among the template's designs) and its remote tier's every after the edit
TIERED, EVERY = "in-memory tier", 5
#: the same edits as command-line options
OPTIONS = ["--nodes", "1024", "--aggregate-write-gb-s", "1000", "--aggregate-read-gb-s", "1000", "--startup-min", "5",
           "--spares", "12"]


def _named(wb, name: str):
    sheet, cell = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][cell.replace("$", "")].value


def _cli(*args: str) -> dict:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("out")
    plan = files.load_plan(TEMPLATE)
    built = workbook.write_workbook(src / "as-built.xlsx", plan.scenario, setup=plan.setup, designs=plan.designs)
    wb = load_workbook(src / "as-built.xlsx")
    for name, value in EDITS.items():
        sheet, cell = next(iter(wb.defined_names[name].destinations))
        wb[sheet][cell.replace("$", "")] = value
    wb.save(src / "edited.xlsx")
    outs = recalculate([src / "as-built.xlsx", src / "edited.xlsx"], out)
    edited_sc = plan.scenario.replace(nodes=EDITS["nodes"])
    edited_st = plan.setup.replace(aggregate_write_gb_s=1000.0, aggregate_read_gb_s=1000.0, startup_min=5.0, spares=12)
    edited_toml = src / "edited.toml"
    edited_toml.write_text(_edited_template())
    designs = tuple(_edited_design(d) for d in plan.designs)
    return built, plan, {"as-built": outs[0], "edited": outs[1]}, {"as-built": src / "as-built.xlsx",
                                                                   "toml": edited_toml}, (edited_sc, edited_st, designs)


def _edited_template() -> str:
    """The template's TOML with the tiered design's remote tier taking every 5th save instead of every 10th."""
    from ckptplan.templates import __file__ as here

    text = (Path(here).parent / f"{TEMPLATE}.toml").read_text()
    assert text.count("every = 10\n") == 1
    return text.replace("every = 10\n", f"every = {EVERY}\n")


def _edited_design(d):
    if d.name != TIERED:
        return d
    return dataclasses.replace(d, tiers=tuple({**t, "every": EVERY} if t["name"] == "remote" else t for t in d.tiers))


@pytest.mark.parametrize("which", ["as-built", "edited"])
def test_the_plan_sheet_equals_ckptplan_plan(books, which):
    _, _, outs, _, _ = books
    got = load_workbook(outs[which], data_only=True)
    want = _cli("plan", "-t", TEMPLATE, "--json", *(OPTIONS if which == "edited" else []))
    for key in ("checkpoint_stall_min", "restart_min", "waste_fraction", "wall_h", "storage_cost", "spare_cost",
                "total_cost", "spare_free_probability", "checkpoint_size_gb"):
        name = f"used_{key}" if key in ("checkpoint_stall_min", "restart_min") else key
        assert math.isclose(_named(got, name), want[key], rel_tol=1e-9), (which, key, _named(got, name), want[key])
    assert math.isclose(_named(got, "compute_cost") + _named(got, "storage_cost") + _named(got, "spare_cost"),
                        want["total_cost"], rel_tol=1e-12)
    assert _named(got, "input_check") == "OK"
    compare = got["Compare"]
    check = next(r for r in range(1, compare.max_row + 1) if str(compare.cell(row=r, column=1).value).startswith(
        "Input check"))
    assert all(compare.cell(row=check, column=c).value == "OK" for c in range(3, compare.max_column + 1, 3)
               if compare.cell(row=check, column=c).value is not None)
    assert error_cells(outs[which]) == []


@pytest.mark.parametrize("which", ["as-built", "edited"])
def test_every_design_column_equals_ckptplan_compare(books, which):
    built, plan, outs, paths, _ = books
    got = load_workbook(outs[which], data_only=True)
    want = _cli("compare", "-t", str(paths["toml"]) if which == "edited" else TEMPLATE, "--json",
                *(OPTIONS if which == "edited" else []))
    by_name = {d["name"]: d for d in want["designs"]}
    storage, compare = got[SHEET], got["Compare"]
    total_row = next(r for r in range(1, storage.max_row + 1)
                     if storage.cell(row=r, column=3).value == "total_cost")
    compared = 0
    for k, design in enumerate(plan.designs, start=1):
        col = 4 + 3 * k
        value = storage.cell(row=total_row, column=col).value
        assert math.isclose(value, by_name[design.name]["total_cost"], rel_tol=1e-9), (which, design.name)
        saving = value - storage.cell(row=total_row, column=4).value
        assert abs(saving - by_name[design.name]["total_cost_change"]) <= 1e-3, (which, design.name, saving)
        compared += 1
        if design.tiers is not None:   # a tiered column: live, every figure compare prints
            _tiered_column(storage, col, by_name[design.name], which)
            compared += 1
    compare_total = next(r for r in range(1, compare.max_row + 1)
                         if compare.cell(row=r, column=1).value == "Total cost = job GPU time + storage + spares")
    for k, design in enumerate(built.designs, start=1):   # the designs that change scenario inputs only
        value = compare.cell(row=compare_total, column=3 + 3 * k).value
        assert math.isclose(value, by_name[design.name]["total_cost"], rel_tol=1e-9), (which, design.name)
        compared += 1
    baseline = next(d for d in want["designs"] if d.get("baseline"))
    assert math.isclose(compare.cell(row=compare_total, column=3).value, baseline["total_cost"], rel_tol=1e-9)
    assert compared >= 3


def _tiered_column(storage, col: int, want: dict, which: str) -> None:
    """A tiered design's column of Storage & recovery against `compare --json`'s figures of that design."""
    rows = {storage.cell(row=r, column=3).value: r for r in range(1, storage.max_row + 1)}
    for key, name, tol in (("chosen_interval_min", "interval_min", 1e-5), ("waste_fraction", "waste_fraction", 1e-9),
                           ("wall_h", "wall_h", 1e-9), ("total_gpu_hours", "total_gpu_hours", 1e-9),
                           ("compute_cost", "compute_cost", 1e-9), ("storage_cost", "storage_cost", 1e-9),
                           ("spare_cost", "spare_cost", 1e-9), ("cost_per_useful_gpu_hour", "cost_per_useful_gpu_hour",
                                                                 1e-9)):
        got = storage.cell(row=rows[key], column=col).value
        assert math.isclose(got, want[name], rel_tol=tol), (which, key, got, want[name])


def test_every_formula_cell_follows_the_edits(books):
    """Plan, Interval curve, Scaling (re-derived per node count), Compare and Storage & recovery against the engine."""
    built, plan, outs, _, (sc, st, designs) = books
    checks, flags = sheet_checks(built.workbook)
    storage_test.compare_sheet(checks, flags, outs["edited"], sc, st, designs)
    others = workbook.Built(built.workbook, results=built.results, designs=built.designs)
    others.checks.extend(c for c in built.checks if c.sheet != SHEET)
    others.flags.extend(c for c in built.flags if c.sheet != SHEET)
    n = recalc_test.compare_all(others, outs["edited"], sc, built.designs, st=st)
    assert n > 800
    scaling = {c.context[1] for c in others.checks if c.context[0] == "scaling"}
    assert EDITS["nodes"] in scaling or len(scaling) > 8


def test_cached_values_on_every_sheet_equal_libreoffice(books):
    _, _, outs, paths, _ = books
    cached, formulas = load_workbook(paths["as-built"], data_only=True), load_workbook(paths["as-built"])
    lo = load_workbook(outs["as-built"], data_only=True)
    per_sheet: dict[str, int] = {}
    wrong = []
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type != "f":
                    continue
                mine, theirs = cached[ws.title][c.coordinate].value, lo[ws.title][c.coordinate].value
                if isinstance(theirs, (int, float)) and not isinstance(theirs, bool):
                    ok = isinstance(mine, (int, float)) and math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12)
                else:
                    ok = mine is theirs if isinstance(theirs, bool) else (mine or "").rstrip() == (theirs or "").rstrip()
                per_sheet[ws.title] = per_sheet.get(ws.title, 0) + 1
                if not ok:
                    wrong.append((ws.title, c.coordinate, mine, theirs))
    assert per_sheet[SHEET] > 500 and not wrong, wrong[:5]


def test_inputs_leave_the_derived_stall_and_restart_to_the_design(books):
    _, _, _, paths, _ = books
    wb = load_workbook(Path(paths["as-built"]))
    for key in ("checkpoint_stall_min", "restart_min"):
        assert _named(wb, key) is None   # blank: derived from the design, live


# ------------------------------------------------------------------ every shipped template, edited

def _template_edits(plan) -> tuple[dict, list[str]]:
    """A planner's edits of a template's workbook (twice the nodes; with a design, a slower detection and a
    dearer storage) as defined names -> values, and the same as command-line options."""
    edits, options = {"nodes": 2 * plan.scenario.nodes}, ["--nodes", str(2 * plan.scenario.nodes)]
    if plan.setup.given():
        edits.update(setup_detection_min=4.0, setup_price_per_gb_month=0.05)
        options += ["--detection-min", "4", "--price-per-gb-month", "0.05"]
    return edits, options


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    src, out = tmp_path_factory.mktemp("tsrc"), tmp_path_factory.mktemp("tout")
    built, paths = {}, []
    for name in files.list_templates():
        plan = files.load_plan(name)
        built[name] = workbook.write_workbook(src / f"{name}.xlsx", plan.scenario, setup=plan.setup,
                                              designs=plan.designs or None)
        wb = load_workbook(src / f"{name}.xlsx")
        for key, value in _template_edits(plan)[0].items():
            sheet, cell = next(iter(wb.defined_names[key].destinations))
            wb[sheet][cell.replace("$", "")] = value
        wb.save(src / f"{name}.xlsx")
        paths.append(src / f"{name}.xlsx")
    return built, dict(zip(files.list_templates(), recalculate(paths, out)))


@pytest.mark.parametrize("name", files.list_templates())
def test_every_template_edited_equals_ckptplan_plan(templates, name):
    """Each shipped template's workbook, edited (nodes, and a design's inputs where it has one) and recalculated:
    the Plan sheet equals `ckptplan plan` with the same edits, and no cell is an error."""
    built, outs = templates
    plan = files.load_plan(name)
    got = load_workbook(outs[name], data_only=True)
    want = _cli("plan", "-t", name, "--json", *_template_edits(plan)[1])
    for key in ("checkpoint_stall_min", "restart_min", "waste_fraction", "wall_h", "total_cost", "storage_cost"):
        name_ = f"used_{key}" if key in ("checkpoint_stall_min", "restart_min") else key
        assert math.isclose(_named(got, name_), want[key], rel_tol=1e-9), (name, key, _named(got, name_), want[key])
    assert _named(got, "input_check") == "OK"
    assert error_cells(outs[name]) == []
