"""The Storage & recovery sheet: every live formula equals engine.setup.plan_setup after LibreOffice recalculates.

Workbooks for an empty setup, a sized single-level setup (restart parts, spares, storage price, three
designs) and a tiered setup (hostile tier, class and design names) are recalculated in one soffice run;
every Check of the sheet is compared with the engine (rel 1e-9). A copy of the sized workbook whose
aggregate bandwidth and spares were edited with openpyxl must follow the engine on the edited setup.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from openpyxl import load_workbook

from ckptplan import engine, files, workbook
from ckptplan.engine.designs import Design
from ckptplan.engine.setup import RecoverySetup, plan_setup
from ckptplan.engine.validity import warnings_text
from ckptplan.workbook.recalc import error_cells, recalculate, soffice
from ckptplan.workbook.storage_sheet import SHEET, sheet_checks

from plan_figures import LOOSE_TIERED, figure, tiered_figure

try:
    from ckptplan.engine import tiers as tiers_mod
except ImportError:  # pragma: no cover - the multi-level engine is written separately
    tiers_mod = None

pytestmark = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed (scripts/test.sh installs it)")

SEED = files.load_scenario("seed")
EVIL = '=HYPERLINK("http://x","y")'
SIZED = RecoverySetup(parameters_b=70.0, write_gb_s_per_writer=2.0, aggregate_write_gb_s=100.0, detection_min=1.0,
                      startup_min=2.0, init_min=0.5, init_per_1000_nodes_min=1.0, warmup_min=1.5, repair_h=24.0,
                      spares=2, swap_min=2.0, price_per_gb_month=0.02, retention=3)
SIZED_DESIGNS = (Design("faster storage, 4 spares", set={"spares": 4}, times={"aggregate_write_gb_s": 2.0}),
                 Design("2x nodes, same training", times={"nodes": 2.0, "useful_training_h": 0.5}),
                 Design("measured stall, async", set={"checkpoint_stall_min": 0.8, "d2h_gb_s_per_writer": 20.0},
                        times={"repair_h": 0.5}))
TIERED = RecoverySetup(
    parameters_b=70.0, write_gb_s_per_writer=2.0, aggregate_write_gb_s=100.0, detection_min=1.0, repair_h=24.0,
    spares=2, swap_min=2.0, price_per_gb_month=0.01,
    tiers=({"name": EVIL, "every": 1, "survives": ["=1+1"], "checkpoint_stall_min": 0.2, "restore_min": 0.5,
            "restore_failure_probability": 0.25},
           {"name": "remote", "every": 4, "survives": ["=1+1", "@SUM(1)"], "write_gb_s_per_writer": 1.0,
            "aggregate_write_gb_s": 50.0, "price_per_gb_month": 0.02, "retention": 3, "copies": 2,
            "restore_failure_probability": 0.3}),
    failure_classes={"=1+1": 0.4, "@SUM(1)": 0.6})
TIERED_DESIGNS = (Design(EVIL, set={"spares": 6}),
                  Design("one durable tier", tiers=({"name": "remote", "every": 1, "survives": ["=1+1", "@SUM(1)"],
                                                      "checkpoint_stall_min": 0.4, "restore_min": 0.4},)))
EDITS = {"setup_aggregate_write_gb_s": 40.0, "setup_spares": 5}
STORAGE = files.load_plan("llama3-405b-storage")  # four designs: the widest sheet a template makes
CASES = {  # name -> (scenario, setup, designs)
    "empty": (SEED, RecoverySetup(), None),
    "template": (STORAGE.planned_scenario().replace(deadline_h=None), STORAGE.setup, STORAGE.designs),
    "sized": (SEED, SIZED, SIZED_DESIGNS),
    "tiered": (SEED.replace(deadline_h=None), TIERED, TIERED_DESIGNS),
    # a stated downtime: a design that changes the restart keeps the downtime's share of it (Design.apply)
    "downtime": (SEED.replace(downtime_min=4.0), RecoverySetup(parameters_b=70.0, write_gb_s_per_writer=2.0),
                 (Design("restarts 2x faster", times={"restart_min": 0.5}), Design("restart 6 min", set={"restart_min": 6.0}),
                  Design("own downtime", times={"restart_min": 0.5}, set={"downtime_min": 1.0}))),
}


def _column(sc, st, designs, k):
    if k == "base":
        return sc, st
    d = designs[k - 1]
    return d.apply(sc), d.apply_setup(st)


def _single(sc, st):
    return plan_setup(sc, st.replace(tiers=(), failure_classes={}))


def _setup_figure(key: str, sc, st, plan):
    return figure(key, sc, st, plan)


def _tier_figure(ctx, key, sc, st):
    """The baseline's tiers: plan_setup's resolved tiers, tiers.first_order_tier_intervals, recovery_tier."""
    if not st.tiers or (ctx[0] == "setup_tier" and ctx[1] >= len(st.tiers)) or (
            ctx[0] == "setup_class" and ctx[1] >= len(st.failure_classes)):
        return None
    plan = plan_setup(sc, st)
    tiers = [{k: t[k] for k in ("name", "checkpoint_stall_min", "restore_min", "every", "survives", "copies",
                                "restore_failure_probability")} for t in plan.tiers]
    M, W, s = plan.figures["job_mtbf_h"] * 60, plan.scenario.async_write_min, plan.scenario.async_slowdown_fraction
    classes = st.failure_classes
    if ctx[0] == "setup_class":
        rec = tiers_mod.recovery_tier(tiers, classes)
        return 1 + [t["name"] for t in tiers].index(rec[list(classes)[ctx[1]]])
    fo = tiers_mod.first_order_tier_intervals(M, tiers=tiers, classes=classes, W=W, slowdown=s)
    if ctx[0] == "setup_first_order":
        return fo[key]
    t = plan.tiers[ctx[1]]
    shares = tiers_mod.class_rates_per_tier(1.0, tiers=tiers, classes=classes)
    return {"checkpoint_stall_min": t["checkpoint_stall_min"], "restore_min": t["restore_min"],
            "level_cost_min": t["checkpoint_stall_min"] + (W * s if ctx[1] == 0 else 0.0),
            "share": shares[t["name"]],
            # the first order's rollbacks: the last tier's also those whose every restore failed (back to the start)
            "rate_per_min": (shares[t["name"]] + (1 - sum(shares.values()) if ctx[1] == len(tiers) - 1 else 0)) / M,
            "first_order_interval_min": fo[f"interval_{t['name']}"], "first_order_every": fo[f"every_{t['name']}"],
            "storage_cost": t["storage_cost"]}[key]


def expected(ctx: tuple, key: str, sc, st, designs):
    if ctx[0] == "setup_tiered":   # a tiered column's live plan: the engine's tiered plan of that column
        return tiered_figure(key, *_column(sc, st, designs, ctx[1]))
    if ctx[0] == "setup":
        sck, stk = _column(sc, st, designs, ctx[1])
        plan = _single(sck, stk)
        if key == "warnings":
            return warnings_text(engine.evaluate(plan.scenario), True)[0] or "OK"
        return _setup_figure(key, sck, stk, plan)
    return _tier_figure(ctx, key, sc, st)


def compare_sheet(checks, flags, path: Path, sc, st, designs) -> int:
    values = load_workbook(path, data_only=True)[SHEET]
    wrong = []
    for chk in checks + flags:
        got, want = values[chk.cell].value, expected(chk.context, chk.key, sc, st, designs)
        if want is None:
            ok = got in (None, "")
        elif isinstance(want, str):
            ok = got == want
        elif math.isinf(float(want)) or math.isnan(float(want)):
            ok = isinstance(got, str)
        else:
            tol = 1e-5 if chk.context[0] == "setup_tiered" and chk.key in LOOSE_TIERED else 1e-9
            ok = isinstance(got, (int, float)) and math.isclose(got, float(want), rel_tol=tol, abs_tol=1e-12)
        if not ok:
            wrong.append((chk.cell, chk.context, chk.key, got, want))
    assert not wrong, f"{len(wrong)} of {len(checks) + len(flags)} cells differ from the engine, e.g. {wrong[:6]}"
    return len(checks)


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory):
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("out")
    builds, paths = {}, []
    for name, (sc, st, designs) in CASES.items():
        if name == "tiered" and tiers_mod is None:
            continue
        builds[name] = workbook.write_workbook(src / f"{name}.xlsx", sc, setup=st, designs=designs)
        paths.append(src / f"{name}.xlsx")
    for base in ("sized", "tiered") if tiers_mod is not None else ("sized",):
        wb = load_workbook(src / f"{base}.xlsx")   # a planner's edits, no regeneration
        for key, value in EDITS.items():
            sheet, cell = next(iter(wb.defined_names[key].destinations))
            wb[sheet][cell.replace("$", "")] = value
        wb.save(src / f"edited-{base}.xlsx")
        paths.append(src / f"edited-{base}.xlsx")
    outs = recalculate(paths, out)
    return builds, {p.stem: o for p, o in zip(paths, outs)}, {p.stem: p for p in paths}


@pytest.mark.parametrize("name", list(CASES))
def test_every_formula_of_the_sheet_equals_the_engine(recalculated, name):
    if name == "tiered" and tiers_mod is None:
        pytest.skip("engine/tiers.py (the multi-level engine) is not there yet")
    builds, outs, _ = recalculated
    sc, st, designs = CASES[name]
    checks, flags = sheet_checks(builds[name].workbook)
    n = compare_sheet(checks, flags, outs[name], sc, st, designs)
    tiered = [bool(_column(sc, st, designs, k)[1].tiers) for k in ["base", *range(1, len(designs or ()) + 1)]]
    assert n > sum(15 if t else 60 for t in tiered)   # a tiered column checks its design rows only
    assert {c.context[1] for c in checks if c.context[0] == "setup"} == {"base", *range(1, len(designs or ()) + 1)}
    assert error_cells(outs[name]) == []
    plan = _single(sc, st)   # the documented names of the baseline's headline figures
    for key in ("checkpoint_size_gb", "wall_h", "total_cost", "total_gpu_hours", "spare_cost", "storage_cost"):
        want = _setup_figure(key, sc, st, plan)  # total_gpu_hours: job and spares
        got = _named(outs[name], f"setup_{key}")
        if st.tiers and key != "checkpoint_size_gb":   # a tiered baseline's plan: the tiered model's, live
            want = tiered_figure(key, sc, st)
        assert got in (None, "") if want is None else math.isclose(got, want, rel_tol=1e-9), key
    # the other recalculation tests know only the Plan-sheet contexts: an empty setup adds none
    mine = [c for c in builds[name].checks if c.sheet == SHEET]
    assert len(mine) == (0 if name == "empty" else len(checks))


def test_formulas_follow_a_planners_edits(recalculated):
    builds, outs, _ = recalculated
    edited = SIZED.replace(aggregate_write_gb_s=EDITS["setup_aggregate_write_gb_s"], spares=EDITS["setup_spares"])
    checks, flags = sheet_checks(builds["sized"].workbook)
    compare_sheet(checks, flags, outs["edited-sized"], SEED, edited, SIZED_DESIGNS)
    before, after = plan_setup(SEED, SIZED).figures, plan_setup(SEED, edited).figures
    assert after["checkpoint_stall_min"] > before["checkpoint_stall_min"] and after["spare_cost"] > before["spare_cost"]
    if tiers_mod is None:
        return
    # a tiered workbook: the live figures (single-level and tiered) follow; the Monte Carlo value says it is stale
    sc, st, designs = CASES["tiered"]
    checks, flags = sheet_checks(builds["tiered"].workbook)
    edited = st.replace(aggregate_write_gb_s=EDITS["setup_aggregate_write_gb_s"], spares=EDITS["setup_spares"])
    compare_sheet([c for c in checks if c.context[0] in ("setup", "setup_tiered")], flags, outs["edited-tiered"], sc,
                  edited, designs)
    assert _named(outs["tiered"], "setup_engine_values_status") == "up to date"
    assert _named(outs["edited-tiered"], "setup_engine_values_status") == (
        "OUT OF DATE: inputs changed since this value was computed: aggregate_write_gb_s, spares, "
        "checkpoint_stall_min, restart_min, downtime_min. "   # more spares, a shorter wait for a node
        "Regenerate the workbook.")


def test_a_tiered_baselines_plan_sheet_shows_its_tiered_plan_live(recalculated):
    """The Plan sheet of a tiered baseline: its tiered plan (tiered_<key>) equals plan_setup, as built and after
    the planner's edits."""
    from ckptplan.workbook.tier_formulas import PLAN_ROWS

    if tiers_mod is None:
        pytest.skip("engine/tiers.py (the multi-level engine) is not there yet")
    _, outs, _ = recalculated
    sc, st, _ = CASES["tiered"]
    edited = st.replace(aggregate_write_gb_s=EDITS["setup_aggregate_write_gb_s"], spares=EDITS["setup_spares"])
    for name, setup in (("tiered", st), ("edited-tiered", edited)):
        for key in PLAN_ROWS:
            got, want = _named(outs[name], f"tiered_{key}"), tiered_figure(key, sc, setup)
            tol = 1e-5 if key in LOOSE_TIERED else 1e-9
            assert math.isclose(got, want, rel_tol=tol), (name, key, got, want)


def _named(path: Path, name: str):
    wb = load_workbook(path, data_only=True)
    sheet, cell = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][cell.replace("$", "")].value


def test_cached_values_equal_libreoffice(recalculated):
    """Cells the in-process evaluator computes carry cached values equal to LibreOffice's (the POISSON.DIST,
    SUMPRODUCT and FIND cells are computed on open)."""
    _, outs, paths = recalculated
    for name in ("empty", "sized"):
        cached = load_workbook(paths[name], data_only=True)[SHEET]
        formulas, lo = load_workbook(paths[name])[SHEET], load_workbook(outs[name], data_only=True)[SHEET]
        n, wrong = 0, []
        for row in formulas.iter_rows():
            for c in row:
                if c.data_type != "f" or (mine := cached[c.coordinate].value) is None:
                    continue
                n += 1
                theirs = lo[c.coordinate].value
                ok = (math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12) if isinstance(theirs, (int, float))
                      and not isinstance(theirs, bool) else mine == theirs or (mine == "" and theirs is None))
                if not ok:
                    wrong.append((c.coordinate, mine, theirs))
        assert n > 100 and not wrong, (name, wrong[:5])


def test_user_text_lands_as_text(recalculated):
    if tiers_mod is None:
        pytest.skip("engine/tiers.py (the multi-level engine) is not there yet")
    _, outs, paths = recalculated
    ws = load_workbook(paths["tiered"])[SHEET]
    texts = {c.value for row in ws.iter_rows() for c in row if c.data_type == "s"}
    assert {EVIL, "=1+1", "@SUM(1)", "=1+1, @SUM(1)"} <= texts
    formulas = [c.value for row in ws.iter_rows() for c in row if c.data_type == "f"]
    assert not [f for f in formulas if "HYPERLINK" in f or "http" in f or "=1+1" in f]
    names = load_workbook(paths["tiered"]).defined_names
    for key, want in (("tier1_name", EVIL), ("class1_name", "=1+1"), ("tier2_survives", "=1+1, @SUM(1)"),
                      ("setup_design1_name", EVIL)):
        assert _named(outs["tiered"], key) == want, key   # after LibreOffice recalculated: still the text
        assert ws[next(iter(names[key].destinations))[1].replace("$", "")].data_type == "s", key


def test_more_than_the_slots_is_refused_naming_the_field():
    tier = {"every": 1, "survives": ["a"], "checkpoint_stall_min": 0.1, "restore_min": 0.1}
    four = RecoverySetup(tiers=tuple({**tier, "name": f"t{i}"} for i in range(4)), failure_classes={"a": 1.0})
    with pytest.raises(engine.InputError, match=r"tiers.*at most 3"):
        workbook.build_workbook(SEED, setup=four)
    five = RecoverySetup(tiers=({**tier, "name": "t", "survives": list("abcde")},),
                         failure_classes={c: 0.2 for c in "abcde"})
    with pytest.raises(engine.InputError, match=r"failure_classes.*at most 4"):
        workbook.build_workbook(SEED, setup=five)
    comma = RecoverySetup(tiers=({**tier, "name": "t", "survives": ["a,b"]},), failure_classes={"a,b": 1.0})
    with pytest.raises(engine.InputError, match="comma"):
        workbook.build_workbook(SEED, setup=comma)
    with pytest.raises(engine.InputError, match=r"designs.*at most 4"):
        workbook.build_workbook(SEED, designs=tuple(Design(f"d{i}", set={"spares": 0}) for i in range(5)))
