"""A tiered baseline's Interval curve, Scaling and Compare sheets plan its tiers, live, and equal the engine.

The storage template with its in-memory tier made the baseline's own tiers (host memory every save, the remote
store every 10th; as tests/test_tiered_plan_sheet.py). Built, then edited as a planner would (nodes, the storage
system's bandwidths, a restart part, the spares, the remote tier's every, the node MTBF in place of the published
failure rate), recalculated in
LibreOffice:

* every Interval curve row equals ``plan_setup`` with ``interval_min`` set to that row's interval (1e-9), and the
  row's interval is its multiple of the engine's tiered optimum (1e-5: the optimum's T is fixed to ~1e-7 by a search
  that compares values);
* every Scaling row equals the engine's tiered plan at its node count, the design re-derived there (restart,
  writers, spare pool; 1e-9, the interval-bound figures 1e-5);
* every Compare column equals ``ckptplan compare --json`` of the same edits (totals 1e-9, savings 1e-3 money) and
  each cell the engine's tiered plan of that alternative;
* each tiered model check reads OK; the cached values written with the file equal LibreOffice's on these sheets;
* the Deadline sheet holds the tiered plan's simulation (engine.deadline_tiers, same runs and seed), "up to date"
  as built and out of date after the edits;
* ``read_plan`` of the workbook (``workbook --from``) gives back the same tiered plan (every figure, 1e-9).
"""

from __future__ import annotations

import math

import pytest
from openpyxl import load_workbook

from ckptplan import workbook
from ckptplan.engine.cost import HOURS_PER_MONTH
from ckptplan.engine.setup import plan_setup
from ckptplan.workbook.build import CURVE_FACTORS
from ckptplan.workbook.recalc import error_cells, recalculate, soffice

from plan_figures import LOOSE_TIERED, figure, single_plan, tiered_figure
from tiered_baseline import cli_json, edited, named, tiered_plan

pytestmark = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed (scripts/test.sh installs it)")

EDITS = {"nodes": 1024, "node_mtbf_h": 10000.0, "failure_rate_source": None, "tier2_every": 5, "setup_aggregate_write_gb_s": 1000.0,
         "setup_aggregate_read_gb_s": 1000.0, "setup_startup_min": 5.0, "setup_spares": 12}
SHEETS = ("Interval curve", "Scaling", "Compare")
DEADLINE_RUNS = 500


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tiered-sheets")
    plan = tiered_plan()
    report = workbook.deadline_report(plan.scenario, runs=DEADLINE_RUNS, setup=plan.setup)
    built = workbook.write_workbook(tmp / "built.xlsx", plan.scenario, setup=plan.setup, designs=plan.designs,
                                    deadline=report)
    wb = load_workbook(tmp / "built.xlsx")
    for name, value in EDITS.items():
        named(wb, name).value = value
    wb.save(tmp / "edited.xlsx")
    outs = recalculate([tmp / "built.xlsx", tmp / "edited.xlsx"], tmp / "out")
    return built, plan, {"built": tmp / "built.xlsx", "lo-built": outs[0], "lo-edited": outs[1]}, tmp


def _expected(chk, plan, designs, values):
    """The engine's figure for a check of the Interval curve, Scaling or Compare sheet of a tiered baseline."""
    sc, st = plan.scenario.replace(deadline_h=None), plan.setup   # no deadline: the tiered Monte Carlo is no sheet's
    kind = chk.context[0]
    if kind == "tiered_curve":
        row = int(chk.cell[1:])
        T = values["Interval curve"][f"B{row}"].value
        if chk.key == "interval_min":
            used = single_plan(sc, st).scenario   # the background write the design gives: the shortest interval
            floor = used.async_write_min * (1 - used.async_slowdown_fraction)
            return max(CURVE_FACTORS[chk.context[1]] * _plan(sc, st).figures["interval_min"], floor)
        return _plan(sc.replace(interval_min=T), st).figures[chk.key]
    if kind == "compare_savings":   # engine.compare_plans of the tiered plans (one total each)
        b, a = (_plan(x, st).figures for x in (sc, designs[chk.context[1] - 1].apply(sc)))
        runs = sc.runs_per_month if sc.runs_per_month is not None else HOURS_PER_MONTH / b["wall_h"]
        return {"runs_per_month": runs, "wall_h_saved_per_run": b["wall_h"] - a["wall_h"],
                "gpu_hours_saved_per_run": b["total_gpu_hours"] - a["total_gpu_hours"],
                "gpu_hours_saved_per_month": (b["total_gpu_hours"] - a["total_gpu_hours"]) * runs,
                "money_saved_per_run": b["total_cost"] - a["total_cost"],
                "money_saved_per_month": (b["total_cost"] - a["total_cost"]) * runs}[chk.key]
    tiered = chk.context[-1] == "tiered"
    if kind == "scaling":
        sck = sc.with_nodes(chk.context[1]).replace(interval_min=None)
    elif kind == "compare":
        k = chk.context[1]
        sck = sc if k == "base" else designs[k - 1].apply(sc)
    else:
        raise AssertionError(chk.context)
    if chk.key == "warnings":   # the engine's tiered plan's warnings, worded as the sheet's single-level checks
        return _warnings(sck, st, keys=kind == "scaling") if tiered else "OK"
    return tiered_figure(chk.key, sck, st) if tiered else figure(chk.key, sck, st)


_PLANS: dict = {}


def _warnings(sc, st, keys: bool) -> str:
    """``plan_setup``'s warnings of the tiered plan ("OK" when none); ``keys``: the checks' short keys (table rows)."""
    from ckptplan.engine.validity import CHECKS

    said = _plan(sc, st).warnings
    words = [c.key if keys else c.reason for c in CHECKS if c.reason in said]
    assert len(words) == len(said)
    return "; ".join(words) or "OK"


def _plan(sc, st):
    key = (repr(sc), repr(st))
    if key not in _PLANS:
        _PLANS[key] = plan_setup(sc, st)
    return _PLANS[key]


def _loose(chk) -> bool:
    return chk.key in LOOSE_TIERED or (chk.context[0] == "tiered_curve" and chk.key == "interval_min")


@pytest.mark.parametrize("which", ["built", "edited"])
def test_curve_scaling_and_compare_equal_the_engines_tiered_plan(books, which):
    built, plan, paths, _ = books
    plan = plan if which == "built" else edited(plan, EDITS)
    values = load_workbook(paths[f"lo-{which}"], data_only=True)
    checks = [c for c in built.checks + built.flags if c.sheet in SHEETS]
    kinds = {c.context[0] for c in checks}
    assert {"tiered_curve", "scaling", "compare"} <= kinds
    assert sum(c.context[-1] == "tiered" for c in checks) > 300
    wrong = []
    for chk in checks:
        got, want = values[chk.sheet][chk.cell].value, _expected(chk, plan, built.designs, values)
        if want is None:
            ok = got in (None, "")
        elif isinstance(want, str):
            ok = got == want
        else:
            tol = 1e-5 if _loose(chk) else 1e-9
            ok = isinstance(got, (int, float)) and math.isclose(got, float(want), rel_tol=tol, abs_tol=1e-12)
        if not ok:
            wrong.append((chk.sheet, chk.cell, chk.context, chk.key, got, want))
    assert not wrong, f"{len(wrong)} of {len(checks)} cells differ from the engine, e.g. {[w for w in wrong if w[3] != 'interval_min'][:8]}"
    assert error_cells(paths[f"lo-{which}"]) == []


def test_scaling_checks_flag_the_tiered_plans_high_waste(books):
    """A Scaling row whose tiered plan wastes (almost) all its wall time never reads OK: it names the checks the
    engine's tiered plan warns of (``plan --json`` warnings), the inputs' problems first."""
    built, plan, paths, _ = books
    values = load_workbook(paths["lo-built"], data_only=True)["Scaling"]
    flagged = {c.context[1]: values[c.cell].value for c in built.flags
               if c.sheet == "Scaling" and c.context[-1] == "tiered"}
    for nodes in (65536, 131072):
        sc = plan.scenario.with_nodes(nodes).replace(interval_min=None, deadline_h=None)
        assert _plan(sc, plan.setup).figures["waste_fraction"] > 0.99 and _plan(sc, plan.setup).warnings
        assert flagged[nodes] == "failures_per_segment; high_waste", (nodes, flagged[nodes])
    assert flagged[min(flagged)] == "OK"


def test_compare_equals_ckptplan_compare(books):
    built, plan, paths, tmp = books
    values = load_workbook(paths["lo-edited"], data_only=True)["Compare"]
    want = cli_json("compare", edited(plan, EDITS), tmp / "edited.toml")
    by_name = {d["name"]: d for d in want["designs"]}
    total = next(r for r in range(1, values.max_row + 1)
                 if values.cell(row=r, column=1).value == "Total cost = job GPU time + storage + spares")
    saved = next(r for r in range(1, values.max_row + 1) if values.cell(row=r, column=1).value == "Money saved per run")
    base = next(d for d in want["designs"] if d.get("baseline"))
    assert math.isclose(values.cell(row=total, column=3).value, base["total_cost"], rel_tol=1e-9)
    for k, design in enumerate(built.designs, start=1):
        got = values.cell(row=total, column=3 + 3 * k).value
        assert math.isclose(got, by_name[design.name]["total_cost"], rel_tol=1e-9), (design.name, got)
        assert abs(-values.cell(row=saved, column=3 + 3 * k).value - by_name[design.name]["total_cost_change"]) <= 1e-3


def test_cached_values_equal_libreoffice(books):
    _, _, paths, _ = books
    cached, formulas = load_workbook(paths["built"], data_only=True), load_workbook(paths["built"])
    lo = load_workbook(paths["lo-built"], data_only=True)
    wrong, n = [], 0
    for title in SHEETS:
        for row in formulas[title].iter_rows():
            for c in row:
                if c.data_type != "f":
                    continue
                n += 1
                mine, theirs = cached[title][c.coordinate].value, lo[title][c.coordinate].value
                if isinstance(theirs, (int, float)) and not isinstance(theirs, bool):
                    ok = isinstance(mine, (int, float)) and math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12)
                else:
                    ok = mine is theirs if isinstance(theirs, bool) else (mine or "").rstrip() == (theirs or "").rstrip()
                if not ok:
                    wrong.append((title, c.coordinate, mine, theirs))
    assert n > 10_000 and not wrong, (len(wrong), wrong[:5])


def test_the_deadline_sheet_is_the_tiered_plans_simulation(books):
    built, plan, paths, _ = books
    from ckptplan.engine.deadline_tiers import tiered_deadline_report

    want = tiered_deadline_report(plan.scenario, plan.setup, runs=DEADLINE_RUNS, seed=0)
    ws = built.workbook["Deadline"]
    rows = {ws.cell(row=r, column=1).value: ws.cell(row=r, column=2).value for r in range(5, 25)}
    for label, key in (("P(finish by the deadline)", "p_finish"), ("Wall time, mean", "wall_h_mean"),
                       ("Wall time, P90", "wall_h_p90"), ("Cost of the job's GPU time, mean", "cost_mean"),
                       ("First tier's interval simulated (the tiered plan of the Plan sheet)", "interval_min")):
        assert rows[label] == want[key], label
    assert not str(ws["A2"].value).startswith("SINGLE-LEVEL")
    for which, status in (("lo-built", "up to date"), ("lo-edited", "OUT OF DATE")):
        got = load_workbook(paths[which], data_only=True)["Deadline"]["B3"].value
        assert got.startswith(status), (which, got)


def test_the_deadline_sheet_lists_what_the_tiered_simulation_used(books):
    """The "Input this simulation used" table holds what engine.deadline_tiers simulated: each tier's every, interval,
    stall, restore and restart, the restart without the load and its parts, not the single-level view's."""
    built, plan, _, _ = books
    from ckptplan.engine.deadline_tiers import tiered_deadline_report

    used = tiered_deadline_report(plan.scenario, plan.setup, runs=DEADLINE_RUNS, seed=0)["used"]
    ws = built.workbook["Deadline"]
    head = next(r for r in range(1, ws.max_row + 1) if ws.cell(row=r, column=1).value == "Input this simulation used")
    table = {ws.cell(row=r, column=1).value: ws.cell(row=r, column=2).value for r in range(head + 1, ws.max_row + 1)}
    sim = plan_setup(plan.scenario.replace(deadline_h=None), plan.setup)
    for i, tier in enumerate(sim.tiers, start=1):
        for key, words in (("interval_min", "interval"), ("checkpoint_stall_min", "stall"), ("restore_min", "restore"),
                           ("restart_min", "restart = R' + restore"), ("every", "every (saves every 'every' x T)")):
            assert table[f"Tier {i} ({tier['name']}): {words}"] == tier[key] == used[f"tier{i}_{key}"], (i, key)
    assert math.isclose(table["Job MTBF"], sim.figures["job_mtbf_h"] * 60, rel_tol=1e-12)
    assert table["Restart without the checkpoint load (R'; each tier adds its restore)"] == used["restart_without_load_min"]
    assert used["restart_without_load_min"] == sim.tiers[0]["restart_min"] - sim.tiers[0]["restore_min"]
    for part, minutes in sim.restart_parts_min.items():
        assert table[f"  restart part: {part[:-len('_min')]} (setup)"] == minutes
    assert not any(str(label).startswith(("Checkpoint stall", "Restart time")) for label in table), table


def test_workbook_from_reads_back_the_same_tiered_plan(books):
    from ckptplan.workbook.read import read_plan

    _, plan, paths, _ = books
    back = read_plan(paths["built"])
    assert back.setup.tiers and back.setup.failure_classes == plan.setup.failure_classes
    a, b = plan_setup(plan.scenario, plan.setup).figures, plan_setup(back.scenario, back.setup).figures
    for key, value in a.items():
        if isinstance(value, float) and math.isfinite(value):
            assert math.isclose(b[key], value, rel_tol=1e-9, abs_tol=1e-12), key
