"""Round trips lose nothing: a workbook read back with ``ckptplan workbook --from`` (workbook.read_plan) is
the plan it was written from, and a scenario file written by ``fit``, ``probe`` or ``actual
--emit-scenario`` is its template with the measured fields in place (files.scenario_toml).

* Unedited workbooks of three templates: ``plan --json`` and ``compare --json`` of the plan read back
  equal the template's (every number to 1e-9), so do the designs, tiers, classes, deadline and
  currency, and the regenerated workbook equals the first cell for cell (formulas and cached values).
* Edits (a setup cell, design change cells, a design's own tier, tiers typed into the baseline's
  table, a stated restart) are what the read-back plan holds; bad cells are all reported by sheet, cell,
  name, value and rule; the two layouts of "stated" (a setup_stated_<name> cell, or a blank Inputs cell
  for a derived value) read the same.
* ``--emit-scenario -t llama3-405b-storage`` of fit, probe (smallest settings, a real run) and actual keep
  the template's setup, tiers, classes and designs, replace only the measured fields and name them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from openpyxl import load_workbook
from openpyxl.utils import column_index_from_string
from typer.testing import CliRunner

from ckptplan import files, workbook
from ckptplan.cli import app
from ckptplan.engine.designs import Design
from ckptplan.engine.fields import FIELD_BY_NAME
from ckptplan.engine.setup import DERIVED, RecoverySetup, plan_setup
from ckptplan.files.atomic import OutputExistsError
from ckptplan.files.scenarios import load_plan
from ckptplan.files.scenario_toml import plan_toml, with_measured, write_plan
from ckptplan.workbook import style as S
from ckptplan.workbook.read import WorkbookInputError, read_inputs, read_plan
from same_json import same_json

runner = CliRunner()
TEMPLATES = ("seed", "llama3-405b-storage", "dense-7b-256-gpus")
STORAGE = "llama3-405b-storage"   # designs on llama3-405b-storage: 1 storage 2x, 2 in-memory tier, 3 16 spares, 4 2x nodes
SHEET = "Storage & recovery"
TEXTS = ("name", "description", "source", "failure_rate_source")


def _cli(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


def _same_plan(got, want, texts: bool = True) -> None:
    """Two plans equal: scenario fields to 1e-9 (texts too, unless ``texts`` is False), setup, designs."""
    for name in FIELD_BY_NAME:
        a, b = getattr(got.scenario, name), getattr(want.scenario, name)
        assert a == pytest.approx(b, rel=1e-9) if isinstance(b, float) else a == b, name
    if texts:
        assert [getattr(got.scenario, t) for t in TEXTS] == [getattr(want.scenario, t) for t in TEXTS]
    assert got.scenario.domains == want.scenario.domains
    assert got.setup == want.setup and got.designs == want.designs


def _dest(wb, name: str) -> tuple[str, str]:
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return sheet, ref.replace("$", "")


def _named(wb, name: str):
    sheet, ref = _dest(wb, name)
    return wb[sheet][ref]


def _design_cell(wb, k: int, field: str, kind: int):
    """Design ``k``'s "set to" (kind 0) or "x baseline" (kind 1) cell of a setup field on the Storage & recovery sheet."""
    sheet, ref = _dest(wb, f"setup_design{k}_name")
    row = int(_dest(wb, f"setup_{field}")[1].lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    return wb[sheet].cell(row=row, column=column_index_from_string(ref.rstrip("0123456789")) + kind)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Each template's workbook, as `ckptplan workbook -t` writes it (no Monte Carlo)."""
    out = tmp_path_factory.mktemp("round-trip")
    paths = {}
    for name in TEMPLATES:
        paths[name] = out / f"{name}.xlsx"
        _cli("workbook", "-t", name, "-o", str(paths[name]), "--no-deadline")
    return paths


# ----------------------------------------------------------------------------------- unedited

def _cells(path: Path, data_only: bool) -> dict:
    wb = load_workbook(path, data_only=data_only)
    return {(ws.title, c.coordinate): c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if c.value is not None}


@pytest.mark.parametrize("name", TEMPLATES)
def test_an_unedited_round_trip_reproduces_every_figure(name, built, tmp_path):
    again, toml = tmp_path / "again.xlsx", tmp_path / "back.toml"
    _cli("workbook", "--from", str(built[name]), "-o", str(again), "--no-deadline", "--emit-scenario", str(toml))
    template, back = load_plan(name), load_plan(toml)
    _same_plan(read_plan(built[name]), template)
    _same_plan(back, template)
    assert back.scenario.deadline_h == template.scenario.deadline_h and back.scenario.currency == "USD"
    assert (back.setup.tiers, back.setup.failure_classes) == (template.setup.tiers, template.setup.failure_classes)
    for command in ("plan", "compare"):
        same_json(json.loads(_cli(command, "-t", str(toml), "--json")), json.loads(_cli(command, "-t", name, "--json")))
    # the regenerated workbook is the first one, cell for cell: formulas, texts and the cached figures
    assert load_workbook(again).sheetnames == load_workbook(built[name]).sheetnames
    assert sorted(load_workbook(again).defined_names) == sorted(load_workbook(built[name]).defined_names)
    assert _cells(again, False) == _cells(built[name], False)
    same_json(list(_cells(again, True).values()), list(_cells(built[name], True).values()))


def test_llama3_storage_keeps_its_total_and_all_four_designs(built, tmp_path):
    plan = read_plan(built[STORAGE])
    assert [d.name for d in plan.designs] == ["storage 2x faster", "in-memory tier", "16 hot spares",
                                              "2x nodes, same training"]
    assert round(plan_setup(plan.scenario, plan.setup).figures["total_cost"]) == 56_532_488
    tiered = plan.designs[1]
    assert [t["name"] for t in tiered.tiers] == ["host-memory", "remote"] and tiered.failure_classes == {
        "process": 0.22, "node": 0.76, "correlated": 0.02}


def test_hostile_texts_and_a_design_that_replaces_tiers_round_trip(tmp_path):
    evil = '=HYPERLINK("http://x","y")'
    setup = RecoverySetup(
        parameters_b=70.0, write_gb_s_per_writer=2.0, aggregate_write_gb_s=100.0, detection_min=1.0, repair_h=24.0,
        spares=2, swap_min=2.0, price_per_gb_month=0.01,
        tiers=({"name": evil, "every": 1, "survives": ["=1+1"], "checkpoint_stall_min": 0.2, "restore_min": 0.5},
               {"name": "remote", "every": 4, "survives": ["=1+1", "@SUM(1)"], "write_gb_s_per_writer": 1.0,
                "aggregate_write_gb_s": 50.0, "price_per_gb_month": 0.02, "retention": 3, "copies": 2,
                "restore_failure_probability": 0.05}),
        failure_classes={"=1+1": 0.4, "@SUM(1)": 0.6})
    designs = (Design(evil, set={"spares": 6}),
               Design("one durable tier", tiers=({"name": "remote", "every": 1, "survives": ["=1+1", "@SUM(1)"],
                                                  "checkpoint_stall_min": 0.4, "restore_min": 0.4,
                                                  "restore_failure_probability": 0.001},)),
               Design("single level", tiers=(), failure_classes={}))
    seed = files.load_scenario("seed").replace(description="=1+2", domains=({"name": "=evil()", "mtbf_h": 9e4,
                                                                               "nodes_per_domain": 16},))
    shown = plan_setup(seed, setup.replace(tiers=(), failure_classes={})).scenario
    workbook.write_workbook(tmp_path / "t.xlsx", shown, setup=setup, designs=designs)
    plan = read_plan(tmp_path / "t.xlsx")
    assert plan.setup == setup and plan.designs == designs
    assert plan.scenario.description == "=1+2" and plan.scenario.domains[0].name == "=evil()"
    formulas = [c.value for ws in load_workbook(tmp_path / "t.xlsx").worksheets for row in ws.iter_rows() for c in row
                if c.data_type == "f"]
    assert not [f for f in formulas if "evil" in f or "HYPERLINK" in f or f in ("=1+1", "=1+2")]


# ------------------------------------------------------------------------------------- edited

def test_edits_of_setup_design_and_tier_cells_are_read_back(built, tmp_path):
    wb = load_workbook(built[STORAGE])
    _named(wb, "setup_spares").value = 12
    _design_cell(wb, 1, "aggregate_write_gb_s", 1).value = 4           # storage 4x faster, not 2x
    _design_cell(wb, 3, "spares", 0).value = 20                        # "16 hot spares" set to 20
    _named(wb, "setup_design2_tier1_write_gb_s_per_writer").value = 50  # the in-memory tier's own tier
    _named(wb, "setup_design2_class1_share").value = 0.2
    _named(wb, "setup_design2_class2_share").value = 0.78
    edited, again, toml = tmp_path / "edited.xlsx", tmp_path / "again.xlsx", tmp_path / "edited.toml"
    wb.save(edited)
    _cli("workbook", "--from", str(edited), "-o", str(again), "--no-deadline", "--emit-scenario", str(toml))
    template = load_plan(STORAGE)
    d = template.designs
    tiers = (dict(d[1].tiers[0], write_gb_s_per_writer=50.0),) + d[1].tiers[1:]
    want = replace(template, setup=template.setup.replace(spares=12), designs=(
        Design(d[0].name, times={"aggregate_write_gb_s": 4.0, "aggregate_read_gb_s": 2.0}),
        Design(d[1].name, tiers=tiers, failure_classes={"process": 0.2, "node": 0.78, "correlated": 0.02}),
        Design(d[2].name, set={"spares": 20}), d[3]))
    for path in (edited, again, toml):
        _same_plan(read_plan(path) if path.suffix == ".xlsx" else load_plan(path), want, texts=False)
    write_plan(tmp_path / "want.toml", want)
    for command in ("plan", "compare"):
        same_json(json.loads(_cli(command, "-t", str(toml), "--json")),
              json.loads(_cli(command, "-t", str(tmp_path / "want.toml"), "--json")))


def test_tiers_typed_into_the_baseline_table_are_read_back(built, tmp_path):
    wb = load_workbook(built["seed"])
    typed = {"tier1_name": "host", "tier1_every": 1, "tier1_survives": "process", "tier1_checkpoint_stall_min": 0.1,
             "tier1_restore_min": 0.2, "tier2_name": "remote", "tier2_every": 10, "tier2_survives": "process,  node",
             "tier2_checkpoint_stall_min": 2, "tier2_restore_min": 5, "tier2_retention": 2,
             "class1_name": "process", "class1_share": 0.3, "class2_name": "node", "class2_share": 0.7}
    for name, value in typed.items():
        _named(wb, name).value = value
    wb.save(tmp_path / "tiers.xlsx")
    plan = read_plan(tmp_path / "tiers.xlsx")
    assert plan.setup.tiers == (
        {"name": "host", "every": 1, "survives": ["process"], "checkpoint_stall_min": 0.1, "restore_min": 0.2},
        {"name": "remote", "every": 10, "survives": ["process", "node"], "checkpoint_stall_min": 2.0,
         "restore_min": 5.0, "retention": 2})
    assert plan.setup.failure_classes == {"process": 0.3, "node": 0.7}
    assert [t["name"] for t in plan_setup(plan.scenario, plan.setup).tiers] == ["host", "remote"]


def _old_layout(wb, said: dict[str, str]) -> None:
    """The layout before derived Inputs cells were left blank: every Inputs cell holds the value the plan uses,
    and a ``setup_stated_<name>`` cell (here, far right on the Storage & recovery sheet) says "yes" or "no"."""
    plan = plan_setup(load_plan(STORAGE).scenario, load_plan(STORAGE).setup)
    for i, name in enumerate(DERIVED):
        if _named(wb, name).value is None:
            _named(wb, name).value = getattr(plan.scenario, name)
        wb[SHEET].cell(row=1 + i, column=60).value = said.get(name, "no")
        S.name(wb, f"setup_stated_{name}", SHEET, f"BH{1 + i}")


def test_a_stated_restart_wins_in_both_layouts(built, tmp_path):
    template = load_plan(STORAGE)
    # a blank Inputs cell is derived (what the workbook writes), a value typed there is stated
    wb = load_workbook(built[STORAGE])
    assert [_named(wb, name).value for name in DERIVED] == [None] * len(DERIVED)
    _named(wb, "restart_min").value = 30
    wb.save(tmp_path / "typed.xlsx")
    typed = read_plan(tmp_path / "typed.xlsx")
    assert typed.setup.stated == {"restart_min"} and typed.scenario.restart_min == 30
    assert plan_setup(typed.scenario, typed.setup).figures["restart_min"] == 30
    assert read_inputs(tmp_path / "typed.xlsx")[0].restart_min == 30
    # a workbook with setup_stated_<name> cells: they say it, whatever Inputs holds
    for said, stated in (({}, set()), ({"restart_min": "yes"}, {"restart_min"})):
        wb = load_workbook(built[STORAGE])
        _old_layout(wb, said)
        wb.save(tmp_path / "old.xlsx")
        if not said:
            _same_plan(read_plan(tmp_path / "old.xlsx"), template, texts=False)
        _named(wb, "restart_min").value = 30
        wb.save(tmp_path / "old.xlsx")
        old = read_plan(tmp_path / "old.xlsx")
        assert old.setup.stated == stated and plan_setup(old.scenario, old.setup).figures["restart_min"] == (
            30 if stated else pytest.approx(plan_setup(template.scenario, template.setup).figures["restart_min"]))
    _named(wb, "setup_stated_restart_min").value = "maybe"
    wb.save(tmp_path / "old.xlsx")
    with pytest.raises(WorkbookInputError, match=r"\(setup_stated_restart_min\) = 'maybe': must be yes or no"):
        read_plan(tmp_path / "old.xlsx")
    # a blank stall the setup cannot derive is an error, naming the cell
    wb = load_workbook(built["seed"])
    _named(wb, "checkpoint_stall_min").value = None
    wb.save(tmp_path / "seed.xlsx")
    with pytest.raises(WorkbookInputError, match=r"Inputs!B6 \(checkpoint_stall_min\) = None: is required "
                                                 r"\(the setup does not derive it\)"):
        read_plan(tmp_path / "seed.xlsx")


def test_bad_edited_cells_are_all_named_with_their_rule(built, tmp_path):
    wb = load_workbook(built[STORAGE])
    bad = {_named(wb, "setup_spares"): -1, _design_cell(wb, 1, "aggregate_write_gb_s", 1): 0,
           _named(wb, "setup_design2_tier1_every"): 1.5, _named(wb, "setup_design2_class1_share"): "lots",
           _named(wb, "setup_design2_replaces_tiers"): "maybe"}
    for cell, value in bad.items():
        cell.value = value
    wb.save(tmp_path / "bad.xlsx")
    res = runner.invoke(app, ["workbook", "--from", str(tmp_path / "bad.xlsx"), "-o", str(tmp_path / "out.xlsx"),
                              "--no-deadline"])
    assert res.exit_code == 2 and not (tmp_path / "out.xlsx").exists()
    text = " ".join(res.output.split())
    cells = [f"{SHEET}!{c.coordinate}" for c in bad]
    assert "5 invalid input(s)" in text
    for cell, expected in zip(cells, (
            "(setup_spares) = -1: must be a whole number >= 0 or blank",
            "(setup_design1_times_aggregate_write_gb_s) = 0: must be a number > 0 or blank",
            "(setup_design2_tier1_every) = 1.5: must be a whole number >= 1 or blank",
            "(setup_design2_class1_share) = 'lots': must be a fraction in [0, 1] or blank, not text",
            "(setup_design2_replaces_tiers) = 'maybe': must be yes or no")):
        assert f"{cell} {expected}" in text, (cell, expected, text)


def test_a_design_on_both_sheets_must_say_thesame_json(built, tmp_path):
    wb = load_workbook(built[STORAGE])
    assert _named(wb, "alt1_name").value == "2x nodes, same training"
    _named(wb, "alt1_times_nodes").value = 3
    wb.save(tmp_path / "one.xlsx")
    with pytest.raises(WorkbookInputError, match="make the two sheets agree"):
        read_plan(tmp_path / "one.xlsx")
    sheet, ref = _dest(wb, "setup_design4_name")
    col = column_index_from_string(ref.rstrip("0123456789")) + 1
    row = next(c.row for (c,) in wb[sheet].iter_rows(min_col=3, max_col=3) if c.value == "Inputs: nodes")
    wb[sheet].cell(row=row, column=col).value = 3
    wb.save(tmp_path / "both.xlsx")
    assert read_plan(tmp_path / "both.xlsx").designs[3].times == {"nodes": 3.0, "useful_training_h": 0.5}


def test_a_workbook_without_a_designs_own_tiers_says_so(built, tmp_path):
    """A workbook written before the designs' own tiers had cells: refused, not read without them."""
    wb = load_workbook(built[STORAGE])
    for name in [n for n in wb.defined_names if n.startswith("setup_design2_")]:
        if name != "setup_design2_name":
            del wb.defined_names[name]
    wb.save(tmp_path / "old.xlsx")
    with pytest.raises(WorkbookInputError, match=r"\(setup_design2_name\) = 'replaced: host-memory \+ remote': this "
                                                 r"design replaces the tiers, but the workbook holds no copy"):
        read_plan(tmp_path / "old.xlsx")


# ------------------------------------------------------------------------------------- emitted

def _kept(out: Path, measured: dict, texts: tuple[str, ...]) -> None:
    """The emitted plan is the template with ``measured`` in place: setup, tiers, classes, designs kept; measured
    stall, write and restart stated; the header names every replaced field."""
    got, template = load_plan(out), load_plan(STORAGE)
    assert got.designs == template.designs and len(got.designs) == 4
    assert got.setup.replace(stated=frozenset()) == template.setup.replace(stated=frozenset())
    assert got.setup.stated == template.setup.stated | {k for k in measured if k in DERIVED}
    for name in FIELD_BY_NAME:
        want = measured[name] if name in measured else getattr(template.scenario, name)
        assert getattr(got.scenario, name) == (pytest.approx(want, rel=1e-12) if isinstance(want, float) else want), name
    for name in set(("currency",) + TEXTS) - set(texts):
        assert getattr(got.scenario, name) == getattr(template.scenario, name), name
    header = [line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    replaced = next(line for line in header if line.startswith("# Replaced with measured values from"))
    assert all(f"{k} = " in replaced for k in measured)
    assert any("4 [[designs]]" in line for line in header)
    if set(measured) & set(DERIVED):
        assert any(line.startswith("# Stated (measured)") for line in header)
    figures = plan_setup(got.scenario, got.setup).figures
    for name in set(measured) & {"checkpoint_stall_min", "restart_min"}:
        assert figures[name] == pytest.approx(measured[name], rel=1e-12)


def test_fit_emits_the_template_with_the_fitted_fields(tmp_path):
    from ckptplan.files.logs import fit_log

    log = files.template_path("example-interruption-log.csv")
    out = tmp_path / "fitted.toml"
    _cli("fit", str(log), "-t", STORAGE, "--emit-scenario", str(out))
    measured = fit_log(log).scenario_overrides()
    assert set(measured) == {"job_mtbf_h", "restart_min", "checkpoint_stall_min"}
    _kept(out, measured, ("name", "description", "source"))


def test_actual_emits_the_template_with_the_measured_fields(tmp_path):
    log = files.template_path("example-step-log.csv")
    out = tmp_path / "measured.toml"
    data = json.loads(_cli("actual", str(log), "-t", STORAGE, "--json", "--emit-scenario", str(out)))
    keys = ("checkpoint_stall_min", "async_write_min", "async_slowdown_fraction", "restart_min", "job_mtbf_h")
    measured = {k: data["measured"][k] for k in keys if data["measured"].get(k) is not None}
    assert {"checkpoint_stall_min", "restart_min", "job_mtbf_h"} <= set(measured)
    _kept(out, measured, ("name", "source", "failure_rate_source"))


def test_probe_emits_the_template_with_the_measured_save_costs(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed: the probe needs it")
    out = tmp_path / "probed.toml"
    data = json.loads(_cli("probe", "--hidden", "16", "--layers", "1", "--saves", "1", "--no-verify", "--json",
                           "--dir", str(tmp_path), "-t", STORAGE, "--emit-scenario", str(out)))
    measured = data["scenario_overrides"]["dcp_async"]
    assert set(measured) == {"checkpoint_stall_min", "async_write_min", "async_slowdown_fraction"}
    _kept(out, measured, ("name", "description", "source"))
    assert "restart_min" not in load_plan(out).setup.stated   # the template's restart stays derived


# --------------------------------------------------------------------------------------- writer

def test_the_writer_keeps_a_plan_whole_and_never_overwrites(tmp_path):
    base = load_plan(STORAGE)
    plan = replace(base, scenario=base.scenario.replace(domains=({"name": "rack", "mtbf_h": 5e4, "nodes_per_domain": 32},)),
                   designs=base.designs + (Design("single level", tiers=(), failure_classes={}, set={"spares": 4}),))
    out = tmp_path / "plan.toml"
    write_plan(out, plan, ["line one\nline two", "a bell \x07 and an escape \x1b[31m"])
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# line one\n# line two\n# a bell ? and an escape ?[31m\n[scenario]\n")
    _same_plan(load_plan(out), replace(plan, origin=str(out)))
    assert "checkpoint_stall_min" not in text and "restart_min" not in text   # derived: left to the setup
    with pytest.raises(OutputExistsError):
        write_plan(out, plan)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml"]
    stated = with_measured(plan, {"restart_min": 12.0})
    assert "restart_min = 12.0" in plan_toml(stated) and stated.setup.stated == {"restart_min"}
    with pytest.raises(ValueError, match="is not a scenario field"):
        with_measured(plan, {"spares": 3})


def test_a_planner_who_edits_the_storage_sheets_labels_keeps_every_design(built, tmp_path):
    """The designs' rows are found by defined names (setup_link_<input>, setup_checkpoint_tiers), not by the text
    of the sheet's label and name columns: relabelled rows read back the same plan."""
    wb = load_workbook(built[STORAGE])
    ws = wb[SHEET]
    inputs = {_dest(wb, n)[1] for n in wb.defined_names if _dest(wb, n)[0] == SHEET}   # tier and class names
    relabelled = 0
    for row in ws.iter_rows(min_col=1, max_col=3):
        for c in row:
            if isinstance(c.value, str) and c.data_type != "f" and c.coordinate not in inputs and (
                    c.column == 3 or c.value == "Checkpoint tiers" or c.column == 1 and c.row > 7):
                c.value = f"my words {c.row}-{c.column}"
                relabelled += 1
    assert relabelled > 40
    edited = tmp_path / "relabelled.xlsx"
    wb.save(edited)
    _same_plan(read_plan(edited), read_plan(built[STORAGE]))
    _same_plan(read_plan(edited), load_plan(STORAGE))
