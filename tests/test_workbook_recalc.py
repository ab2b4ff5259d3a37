"""The generated workbook, recalculated by LibreOffice, equals the engine in every formula cell."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from openpyxl import load_workbook

from ckptplan import engine
from ckptplan import files
from ckptplan import workbook
from ckptplan.workbook.build import CURVE_FACTORS
from ckptplan.engine.preemption import INTERVAL_RTOL
from ckptplan.engine.validity import warnings_text
from ckptplan.workbook.recalc import error_cells, recalculate, soffice

from plan_figures import figure, single_plan

pytestmark = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed (scripts/test.sh installs it)")

SEED = files.load_scenario("seed")
# At least three scenarios, including C >= 2M and a tiny MTBF
BUILT_SCENARIOS = {
    "seed": SEED,
    "c_over_2m": SEED.replace(name="C >= 2M", checkpoint_stall_min=30.0, job_mtbf_h=0.2, restart_min=5.0),
    "tiny_mtbf": SEED.replace(name="tiny MTBF", node_mtbf_h=5.0, restart_min=3.0),
    "async_domains": files.load_scenario("async-save").replace(
        domains=(engine.FailureDomain("power", 20000.0, 16), engine.FailureDomain("rack", 50000.0, 4)),
        nonfatal_share=0.1, interval_min=50.0, runs_per_month=3.0),
    "llama3": files.load_scenario("llama3-405b"),
    # preemptible capacity, a notice shorter than the save (preemptions roll back): the Spot sheet plans it
    "spot_rollback": SEED.replace(name="spot", preemptions_per_h=0.08, preemption_notice_min=0.5,
                                  capacity_wait_min=25.0, spot_price_per_gpu_hour=0.9),
    # preemptible capacity with a downtime after failures (the job waits for a node, nothing strikes it)
    "spot_downtime": SEED.replace(name="spot downtime", preemptions_per_h=0.08, preemption_notice_min=5.0,
                                  capacity_wait_min=25.0, downtime_min=4.0, spot_price_per_gpu_hour=0.9),
}
# Inputs changed in the generated file (no regeneration): the formulas must follow
CHANGED = {
    "c_over_2m": {"checkpoint_stall_min": 30.0, "job_mtbf_override_h": 0.2, "restart_min": 5.0},
    "tiny_mtbf": {"node_mtbf_h": 5.0, "restart_min": 3.0, "interval_min": 4.0},
    "planner_edit": {"nodes": 256.0, "useful_training_h": 360.0, "checkpoint_stall_min": 1.5, "price_per_gpu_hour": 3.1},
    "async_domain": {"checkpoint_stall_min": 0.3, "async_write_min": 6.0, "async_slowdown_fraction": 0.25,
                     "domain1_mtbf_h": 30000.0, "domain1_nodes_per_domain": 32.0, "nodes": 512.0, "price_per_gpu_hour": 1.75},
    # preemptions typed into a workbook generated without them (checkpoint on notice), with nodes and stall
    "spot_typed": {"preemptions_per_h": 0.3, "preemption_notice_min": 2.0, "capacity_wait_min": 12.0,
                   "spot_price_per_gpu_hour": 1.1, "nodes": 256.0, "checkpoint_stall_min": 1.5},
    "spot_chosen": {"preemptions_per_h": 0.05, "interval_min": 30.0, "checkpoint_stall_min": 3.0},
    # a downtime typed beside preemptions whose save does not fit the notice (they roll back)
    "spot_downtime_typed": {"preemptions_per_h": 0.1, "preemption_notice_min": 1.0, "capacity_wait_min": 20.0,
                            "downtime_min": 6.0},
}


def _changed_scenario(changes: dict[str, float]) -> engine.Scenario:
    kw: dict = {}
    doms = {}
    for key, value in changes.items():
        if key == "job_mtbf_override_h":
            kw["job_mtbf_h"] = value
        elif key.startswith("domain1_"):
            doms[key[8:]] = value
        else:
            kw[key] = int(value) if key == "nodes" else value
    if doms:
        kw["domains"] = (engine.FailureDomain("domain1", doms["mtbf_h"], doms["nodes_per_domain"]),)
    return SEED.replace(**kw)


_SPOT_PLANS: dict[str, object] = {}


def _spot_plan(sc: engine.Scenario):
    """The engine's plan row of a scenario on spot capacity, once per scenario (its deadline answer is a
    10,000-run simulation; the Spot sheet has dozens of cells)."""
    key = repr(sc)
    if key not in _SPOT_PLANS:
        _SPOT_PLANS[key] = engine.evaluate(sc).iloc[0]
    return _SPOT_PLANS[key]


def expected(context: tuple, key: str, sc: engine.Scenario, alt: tuple, table_rows, st=None) -> float:
    kind = context[0]
    if kind == "spot":   # the Spot sheet: the engine's plan on preemptible capacity; text without preemptions
        return _spot_plan(sc)[key] if sc.preemptions_per_h else math.nan
    # every other sheet plans the same inputs on on-demand capacity with a constant rate
    sc = sc.replace(preemptions_per_h=None, failure_phases=())
    if kind == "plan":
        return figure(key, sc, st)
    if kind == "compare":  # the baseline, or design k applied to the (edited) baseline
        return figure(key, sc if context[1] == "base" else alt[context[1] - 1].apply(sc), st)
    if kind == "compare_savings":
        def row(x):   # the plan's row with its one total (job GPU time + storage + spares)
            p = single_plan(x, st)
            out = p.row.copy()
            out["total_cost"] = p.figures["total_cost"]
            out["total_gpu_hours"] = p.figures["total_gpu_hours"]
            return out

        b, a = row(sc), row(alt[context[1] - 1].apply(sc))
        return engine.compare_plans(b, a, sc.runs_per_month)[key]
    if kind == "scaling":
        return figure(key, sc.with_nodes(context[1]).replace(interval_min=None), st)
    if kind == "curve":
        sc = single_plan(sc, st).scenario   # the stall and restart the design gives
        row = engine.evaluate(sc).iloc[0]
        floor = sc.async_write_min * (1 - sc.async_slowdown_fraction)
        T = max(CURVE_FACTORS[context[1]] * row["exact_interval_min"], floor)
        M = row["job_mtbf_h"] * 60
        if key == "first_order_waste":
            return engine.first_order_waste(T, row["effective_stall_min"], M)
        return engine.waste_fraction(T, sc.checkpoint_stall_min, M, sc.restart_min - sc.downtime_min,
                                     sc.async_write_min, sc.async_slowdown_fraction, sc.downtime_min)
    if kind == "scenarios":
        row = table_rows.iloc[context[1]]
        if key in ("storage_cost", "spare_cost", "spare_gpu_hours"):   # a table without a design
            return 0.0
        if key == "job_gpu_hours":   # a table without a design: no spares, the job's GPU-hours are the total
            return row["total_gpu_hours"]
        if key.startswith("used:"):
            return row[key[5:]]
        if key in ("writers",):
            return row["nodes"]
        if key in row.index:
            return row[key]
        return math.nan   # a design figure of a row without a design: blank
    raise AssertionError(context)


def expected_warnings(context: tuple, sc: engine.Scenario, designs: tuple, table_rows, st=None) -> str:
    """The engine's validity warnings for the scenario a flag cell describes ("OK" when none)."""
    kind = context[0]
    sc = sc.replace(preemptions_per_h=None, failure_phases=())   # the sheets with model checks: on-demand, one rate
    keys = kind in ("scenarios", "scaling")  # table rows show the checks' keys
    if kind == "scenarios":
        text = warnings_text(table_rows, keys)[context[1]]
    else:
        scenario = {"plan": lambda: sc, "scaling": lambda: sc.with_nodes(context[1]).replace(interval_min=None),
                    "compare": lambda: sc if context[1] == "base" else designs[context[1] - 1].apply(sc)}[kind]()
        text = warnings_text(engine.evaluate(single_plan(scenario, st).scenario), keys)[0]
    return text or "OK"


def compare_all(built: workbook.Built, recalculated: Path, sc, alt, table_rows=None, st=None) -> int:
    values = load_workbook(recalculated, data_only=True)
    wrong = [(f.sheet, f.cell, values[f.sheet][f.cell].value, want) for f in built.flags
             if values[f.sheet][f.cell].value != (want := expected_warnings(f.context, sc, alt, table_rows, st))]
    assert not wrong, f"{len(wrong)} model-check cells differ from the engine's warnings, e.g. {wrong[:3]}"
    assert built.flags
    cache: dict = {}
    mismatches = []
    for chk in built.checks:
        got = values[chk.sheet][chk.cell].value
        ck = (chk.context, chk.key)
        if ck not in cache:
            want = expected(chk.context, chk.key, sc, alt, table_rows, st)
            cache[ck] = math.nan if want is None else float(want)
        want = cache[ck]
        # a saving is a difference of two large figures: when the plans cost the same it is rounding
        # noise around 0, so it is compared to a thousandth of a GPU-hour or of a currency unit
        tol = 1e-3 if "_saved_" in chk.key else 1e-12
        # the Spot sheet searches the optimum again: the interval (and what scales with it) to the engine's own
        # resolution of that search; the expectation itself to 1e-9 (test_workbook_spot checks the objective)
        rel = INTERVAL_RTOL if chk.context[0] == "spot" and chk.key in _BY_INTERVAL else 1e-9
        if math.isnan(want):  # no engine figure (e.g. no deadline given): the sheet shows text, not a number
            if not (got is None or isinstance(got, str)):
                mismatches.append((chk.sheet, chk.cell, chk.context, chk.key, got, want))
        elif not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=rel, abs_tol=tol):
            mismatches.append((chk.sheet, chk.cell, chk.context, chk.key, got, want))
    assert not mismatches, f"{len(mismatches)} cells differ from the engine, e.g. {mismatches[:5]}"
    return len(built.checks)


#: Spot-sheet figures that move with the interval found (saves per unit of work, and rework as the remainder)
_BY_INTERVAL = ("exact_interval_min", "chosen_interval_min", "save_h", "rework_h")

GENERATED: dict[str, Path] = {}


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory):
    """Build every scenario's workbook (and the input-changed copies) and recalc them in one soffice run."""
    src = tmp_path_factory.mktemp("src")
    out = tmp_path_factory.mktemp("out")
    builds, paths = {}, []
    table = engine.to_table([files.load_scenario(n) for n in files.list_templates()])
    for name, sc in BUILT_SCENARIOS.items():
        kwargs = {"scenarios": table} if name == "seed" else {}
        builds[name] = workbook.write_workbook(src / f"{name}.xlsx", sc, **kwargs)
        paths.append(src / f"{name}.xlsx")
    for name, changes in CHANGED.items():
        base_path = src / f"base-for-{name}.xlsx"
        built = workbook.write_workbook(base_path, SEED)
        wb = load_workbook(base_path)
        for key, value in changes.items():
            sheet, cell = built.input_cells[key].split("!")
            wb[sheet][cell.replace("$", "")] = value
        wb.save(src / f"changed-{name}.xlsx")
        builds[f"changed-{name}"] = built
        paths.append(src / f"changed-{name}.xlsx")
    outs = recalculate(paths, out)
    GENERATED.update({p.stem: p for p in paths})  # the files as written, before any recalculation
    return builds, {p.stem: o for p, o in zip(paths, outs)}, table


@pytest.mark.parametrize("name", list(BUILT_SCENARIOS))
def test_every_formula_cell_equals_the_engine(recalculated, name):
    builds, outs, table = recalculated
    sc = BUILT_SCENARIOS[name]
    rows = engine.evaluate(table) if name == "seed" else None
    n = compare_all(builds[name], outs[name], sc, builds[name].designs, rows)
    assert n > 500  # Plan, curve, scaling, compare (and scenarios): hundreds of cells, all compared
    assert error_cells(outs[name]) == []


@pytest.mark.parametrize("name", list(CHANGED))
def test_formulas_follow_changed_inputs(recalculated, name):
    builds, outs, _ = recalculated
    sc = _changed_scenario(CHANGED[name])
    # every Compare column follows the edited Inputs: the designs apply to the edited baseline
    compare_all(builds[f"changed-{name}"], outs[f"changed-{name}"], sc, builds[f"changed-{name}"].designs)
    assert error_cells(outs[f"changed-{name}"]) == []


def test_reference_cases_in_the_recalculated_plan(recalculated):
    _, outs, _ = recalculated
    wb = load_workbook(outs["seed"], data_only=True)
    names = wb.defined_names

    def value(name):
        sheet, cell = list(names[name].destinations)[0]
        return wb[sheet][cell.replace("$", "")].value

    assert value("job_mtbf_h") == 20
    assert round(value("young_interval_min"), 1) == 69.3
    assert round(value("young_min_waste") * 100, 2) == 5.77
    assert round(value("daly_interval_min"), 1) == 68.0
    for required in ("job_mtbf_h", "young_interval_min", "daly_interval_min", "waste_fraction", "total_gpu_hours", "total_cost"):
        assert required in names
    # the live deadline answer (engine.wall_distribution): defined names equal to the engine's analytic figures
    row = engine.evaluate(SEED).iloc[0]
    for key in ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99"):
        assert math.isclose(value(key), row[key], rel_tol=1e-9), key
    assert value("deadline_approximation_ok") is True and round(value("p_finish_by_deadline"), 3) == 0.943
    # the 256-node row of the Scaling sheet: job MTBF 10 h
    ws = wb["Scaling"]
    rows = {ws.cell(row=r, column=1).value: r for r in range(6, ws.max_row + 1) if isinstance(ws.cell(row=r, column=1).value, int)}
    assert 256 in rows


def test_overflowing_inputs_give_readable_text_not_errors(tmp_path):
    built = workbook.write_workbook(tmp_path / "x.xlsx", SEED)
    wb = load_workbook(tmp_path / "x.xlsx")
    sheet, cell = built.input_cells["job_mtbf_override_h"].split("!")
    wb[sheet][cell.replace("$", "")] = 0.0002   # 0.72 s job MTBF with a 10-minute restart
    wb.save(tmp_path / "y.xlsx")
    out = recalculate([tmp_path / "y.xlsx"], tmp_path / "out")[0]
    assert error_cells(out) == []
    values = load_workbook(out, data_only=True)
    sheet, cell = list(values.defined_names["total_cost"].destinations)[0]
    assert "never finish" in values[sheet][cell.replace("$", "")].value
    with pytest.raises(engine.InputError, match="overflows"):
        engine.evaluate(SEED.replace(job_mtbf_h=0.0002))


def test_input_check_names_pasted_invalid_inputs(tmp_path):
    """Data validation stops typing, not pasting: the Plan sheet's Input check names what is wrong."""
    built = workbook.write_workbook(tmp_path / "x.xlsx", SEED)
    wb = load_workbook(tmp_path / "x.xlsx")
    for key, value in {"checkpoint_stall_min": -1, "nodes": 12.5, "async_slowdown_fraction": "a lot",
                       "useful_training_h": None}.items():
        sheet, cell = built.input_cells[key].split("!")
        wb[sheet][cell.replace("$", "")] = value
    wb.save(tmp_path / "bad.xlsx")
    good = workbook.write_workbook(tmp_path / "good.xlsx", SEED)
    outs = recalculate([tmp_path / "bad.xlsx", tmp_path / "good.xlsx"], tmp_path / "out")
    bad_text = load_workbook(outs[0], data_only=True)["Plan"]["B3"].value
    assert bad_text == ("checkpoint_stall_min must be a number >= 0; async_slowdown_fraction must be a fraction in "
                        "[0, 1); nodes must be a whole number >= 1; useful_training_h is required; ")
    assert load_workbook(outs[1], data_only=True)["Plan"]["B3"].value == "OK"
    assert good.workbook.defined_names["input_check"]


def test_simulation_sheet_says_when_its_inputs_changed(tmp_path):
    """The Deadline sheet's Monte Carlo values name the inputs edited since they were simulated,
    and a regeneration from the edited workbook (`ckptplan workbook --from`) brings them up to date."""
    from typer.testing import CliRunner

    from ckptplan.cli import app

    report = workbook.deadline_report(SEED, runs=500, seed=0)
    built = workbook.write_workbook(tmp_path / "plan.xlsx", SEED, deadline=report)
    wb = load_workbook(tmp_path / "plan.xlsx")
    for key, value in {"nodes": 256, "useful_training_h": 360.0}.items():
        sheet, cell = built.input_cells[key].split("!")
        wb[sheet][cell.replace("$", "")] = value
    wb.save(tmp_path / "edited.xlsx")
    res = CliRunner().invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o",
                                   str(tmp_path / "regenerated.xlsx"), "--deadline-runs", "500"])
    assert res.exit_code == 0, res.output
    outs = recalculate([tmp_path / "plan.xlsx", tmp_path / "edited.xlsx", tmp_path / "regenerated.xlsx"],
                       tmp_path / "out")
    status = [load_workbook(o, data_only=True)["Deadline"]["B3"].value for o in outs]
    assert status[0] == "up to date"
    assert status[1].startswith("OUT OF DATE: inputs changed since this simulation: nodes, useful_training_h.")
    assert status[2] == "up to date"
    assert all(error_cells(o) == [] for o in outs)


@pytest.mark.parametrize("name", list(BUILT_SCENARIOS))
def test_generated_files_carry_every_formulas_value(recalculated, name):
    """A reader that does not recalculate sees numbers: every formula cell of a freshly generated
    workbook holds a cached value equal to LibreOffice's recalculation (numbers to 1e-9)."""
    builds, outs, _ = recalculated
    generated = GENERATED[name]
    cached = load_workbook(generated, data_only=True)
    formulas = load_workbook(generated)
    lo = load_workbook(outs[name], data_only=True)
    n, wrong = 0, []
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if not (isinstance(c.value, str) and c.value.startswith("=")):
                    continue
                n += 1
                mine, theirs = cached[ws.title][c.coordinate].value, lo[ws.title][c.coordinate].value
                if isinstance(theirs, (int, float)) and not isinstance(theirs, bool):
                    ok = isinstance(mine, (int, float)) and math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12)
                else:
                    ok = (mine or "").rstrip() == (theirs or "").rstrip() if not isinstance(theirs, bool) else mine is theirs
                if not ok:
                    wrong.append((ws.title, c.coordinate, mine, theirs))
    assert n > 800 and not wrong, f"{len(wrong)} of {n} cached values differ from LibreOffice, e.g. {wrong[:4]}"


def test_pandas_reads_the_plan_of_a_generated_workbook_without_recalculating(tmp_path):
    import pandas as pd

    workbook.write_workbook(tmp_path / "plan.xlsx", SEED)
    plan = pd.read_excel(tmp_path / "plan.xlsx", sheet_name="Plan", header=3)
    values = dict(zip(plan["Defined name"], plan["Value"]))
    row = engine.evaluate(SEED).iloc[0]
    for key in ("job_mtbf_h", "young_interval_min", "exact_interval_min", "waste_fraction", "wall_h",
                "total_gpu_hours", "total_cost", "goodput"):
        assert math.isclose(values[key], row[key], rel_tol=1e-9), key
    assert values["job_mtbf_h"] == pytest.approx(20.0)
