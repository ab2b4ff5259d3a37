"""The workbook with failure phases: the Schedule sheet holds the engine's schedule, its phases are inputs read back
by `--from` (an unedited round trip reproduces plan --json, the schedule included, to 1e-9), and after an edit
of a phase (recalculated in LibreOffice) its status says the schedule is out of date, naming the cells."""

from __future__ import annotations

import json

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import engine, workbook
from ckptplan.cli import app
from ckptplan.engine import phases as P
from ckptplan.engine.phases import FailurePhase
from ckptplan.workbook.flags import UP_TO_DATE
from ckptplan.workbook.read import WorkbookInputError
from ckptplan.workbook.recalc import error_cells, recalculate, soffice
from same_json import same_json

TOML = ('name = "burn-in"\nnodes = 64\nnode_mtbf_h = 2560\ncheckpoint_stall_min = 2\nrestart_min = 10\n'
        'useful_training_h = 60\nprice_per_gpu_hour = 2.5\ndeadline_h = 75\n'
        '[[failure_phases]]\nstart_h = 0\nrate_factor = 4\n[[failure_phases]]\nstart_h = 24\nrate_factor = 1\n')
PHASED = engine.Scenario(name="burn-in", nodes=64, node_mtbf_h=2560.0, checkpoint_stall_min=2.0, restart_min=10.0,
                         useful_training_h=60.0, price_per_gpu_hour=2.5, deadline_h=75.0,
                         failure_phases=(FailurePhase(0.0, 4.0), FailurePhase(24.0, 1.0)))
runner = CliRunner()


def _cli(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


def _named_cell(wb, name: str):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")]


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("schedule")
    workbook.write_workbook(out / "phased.xlsx", PHASED)
    return out / "phased.xlsx"


def _table_rows(wb) -> list[int]:
    """Sheet rows of the live schedule table (the row before phase 1, then every phase slot), from the input names."""
    rows, i = [], 1
    while f"schedule{i}_interval_min" in wb.defined_names:
        rows.append(_named_cell(wb, f"schedule{i}_interval_min").row)
        i += 1
    return rows


def _expected(sc: engine.Scenario, typed: list) -> dict:
    """The engine's figures of the schedule the sheet evaluates: ``typed`` the 'Save every' cells (None: blank, the
    phase's own optimum; the row before phase 1 takes phase 1's when phase 1 starts at 0), one per sheet row."""
    row = engine.evaluate(sc).iloc[0]
    M, C, R, work = float(row["job_mtbf_h"]) * 60, sc.checkpoint_stall_min, sc.restart_min, sc.useful_training_h * 60
    slots = len(typed) - 1
    factors = [1.0] + [p.rate_factor for p in sc.failure_phases] + [1.0] * (slots - len(sc.failure_phases))
    own = list(P.per_phase_optima(C, M, factors))
    T = [own[i] if v is None else float(v) for i, v in enumerate(typed)]
    lead = sc.failure_phases[0].start_h > 0
    used = list(range(0 if lead else 1, len(sc.failure_phases) + 1))
    starts, f = P.phase_arrays(sc.failure_phases)
    e = P.schedule_expectation(work, [T[i] for i in used], C, M, R, starts * 60, f)
    gpus, price = float(row["gpus"]), float(row["price_per_gpu_hour"])
    rows = {}
    for k, i in enumerate(used):
        wall, done = e["phase_wall"][k], e["phase_work"][k]
        rows[i] = {"D": float(row["job_mtbf_h"]) / factors[i], "E": own[i], "I": wall / 60, "J": done / 60,
                   "L": factors[i] / M * wall, "M": wall / 60 * gpus * price}
        if wall > 0:
            rows[i]["K"] = 1 - done / wall
    total = {"I": e["total"] / 60, "K": 1 - work / e["total"], "L": e["failures"], "M": e["total"] / 60 * gpus * price}
    return {"rows": rows, "total": total}


def _assert_live(path, sc: engine.Scenario, typed: list, rel: float = 1e-9) -> None:
    ws = load_workbook(path, data_only=True)["Schedule"]
    rows = _table_rows(load_workbook(path))
    want = _expected(sc, typed)
    for i, figures in want["rows"].items():
        for col, value in figures.items():
            got = ws[f"{col}{rows[i]}"].value
            assert got == pytest.approx(value, rel=rel, abs=1e-12), (path.name, i, col, got, value)
    for col, value in want["total"].items():
        got = ws[f"{col}{rows[-1] + 1}"].value
        assert got == pytest.approx(value, rel=rel), (path.name, "total", col, got, value)
    for i in range(len(rows)):   # rows the job never reaches: no time, no failures, no cost
        if i not in want["rows"]:
            assert ws[f"I{rows[i]}"].value in ("", None, 0), (path.name, i)


def _typed(path) -> list:
    wb = load_workbook(path)
    return [_named_cell(wb, f"schedule{i + 1}_interval_min").value for i in range(len(_table_rows(wb)))]


def test_the_schedule_table_is_the_engines(book):
    row = engine.evaluate(PHASED).iloc[0]
    wb = load_workbook(book)
    ws = wb["Schedule"]
    rows = _table_rows(wb)
    optimum = [row["schedule1_interval_min"], row["schedule2_interval_min"]]   # 15 significant digits in the file
    assert [ws[f"F{r}"].value for r in rows[1:3]] == pytest.approx(optimum, rel=1e-14)
    assert _typed(book)[1:3] == pytest.approx(optimum, rel=1e-14) and _typed(book)[3:] == [None, None]
    cells = {c.coordinate: c.value for r in ws.iter_rows(max_col=13) for c in r if c.value is not None}
    values = [v for v in cells.values() if isinstance(v, float)]
    for key in ("single_interval_min", "single_interval_wall_h"):     # the engine's values beside the live table
        assert any(v == pytest.approx(float(row[key]), rel=1e-14) for v in values), key
    # the cached values (the generator's own evaluation) are the engine's, the live table's totals the plan's
    _assert_live(book, PHASED, _typed(book))
    got = load_workbook(book, data_only=True)["Schedule"]
    assert got[f"I{rows[-1] + 1}"].value == pytest.approx(row["wall_h"], rel=1e-9)
    assert got[f"M{rows[-1] + 1}"].value == pytest.approx(row["compute_cost"], rel=1e-9)
    assert row["wall_h"] <= row["single_interval_wall_h"]
    assert [_named_cell(wb, f"phase{i}_{p}").value for i in (1, 2) for p in ("start_h", "rate_factor")
            ] == [0.0, 4.0, 24.0, 1.0]
    assert _named_cell(wb, "phase3_start_h").value is None   # a spare row to add a phase


#: (file, Inputs / Schedule edits by defined name, the scenario they make)
EDITS = [
    ("mtbf", {"node_mtbf_h": 1800.0}, dict(node_mtbf_h=1800.0)),
    ("factor", {"phase1_rate_factor": 6.0}, dict(failure_phases=(FailurePhase(0.0, 6.0), FailurePhase(24.0, 1.0)))),
    ("start", {"phase2_start_h": 30.0}, dict(failure_phases=(FailurePhase(0.0, 4.0), FailurePhase(30.0, 1.0)))),
    ("interval", {"schedule3_interval_min": 70.0, "schedule2_interval_min": None}, {}),
    ("stall", {"checkpoint_stall_min": 3.5}, dict(checkpoint_stall_min=3.5)),
    ("added", {"phase3_start_h": 40.0, "phase3_rate_factor": 2.5, "schedule3_interval_min": 60.0},
     dict(failure_phases=(FailurePhase(0.0, 4.0), FailurePhase(24.0, 1.0), FailurePhase(40.0, 2.5)))),
    ("late", {"phase1_start_h": 6.0, "schedule1_interval_min": 80.0, "schedule2_interval_min": 30.0},
     dict(failure_phases=(FailurePhase(6.0, 4.0), FailurePhase(24.0, 1.0)))),
    ("round", {"schedule2_interval_min": 46.0, "schedule3_interval_min": 58.0}, {}),   # S = 48 and 60: lattice on 24 h
]


def test_the_live_table_follows_every_edit_in_libreoffice(book, tmp_path):
    """MTBF, a rate factor, a phase start, an interval (and a blank one), the stall, an added phase, a phase 1 that
    starts late, intervals whose segments land on the boundary: every live figure is the engine's, to 1e-9."""
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    paths = []
    for name, edits, _ in EDITS:
        wb = load_workbook(book)
        for key, value in edits.items():
            _named_cell(wb, key).value = value
        wb.save(tmp_path / f"{name}.xlsx")
        paths.append(tmp_path / f"{name}.xlsx")
    done = recalculate([book, *paths], tmp_path / "out")
    _assert_live(done[0], PHASED, _typed(book))
    for (name, _, changes), src, out in zip(EDITS, paths, done[1:]):
        assert error_cells(out) == [], name
        _assert_live(out, PHASED.replace(**changes), _typed(src))
    stated = load_workbook(done[4], data_only=True)["Schedule"]
    rows = _table_rows(load_workbook(book))
    assert stated[f"H{rows[2]}"].value == "STATED" and stated[f"H{rows[1]}"].value == "blank: own optimum"
    assert stated[f"H{rows[0]}"].value.startswith("none")


def test_cached_values_equal_libreoffices(book, tmp_path):
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    (done,) = recalculate([book], tmp_path / "out")
    ours, theirs = load_workbook(book, data_only=True)["Schedule"], load_workbook(done, data_only=True)["Schedule"]
    formulas = load_workbook(book)["Schedule"]
    checked = 0
    for r in formulas.iter_rows():
        for c in r:
            if isinstance(c.value, str) and c.value.startswith("="):
                a, b = ours[c.coordinate].value, theirs[c.coordinate].value
                if b not in ("", None):
                    assert a is not None, c.coordinate        # every formula with a value has a cached one
                if isinstance(b, (int, float)) and not isinstance(b, bool):
                    assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (c.coordinate, a, b)
                else:
                    assert a == b or (a in ("", None) and b in ("", None)), (c.coordinate, a, b)
                checked += 1
    assert checked > 10_000


def test_a_stated_interval_round_trips_and_different_ones_become_phase_intervals(book, tmp_path):
    back = tmp_path / "back.toml"
    wb = load_workbook(book)
    for i in (2, 3):
        _named_cell(wb, f"schedule{i}_interval_min").value = 55.0
    wb.save(tmp_path / "stated.xlsx")
    _cli("workbook", "--from", str(tmp_path / "stated.xlsx"), "-o", str(tmp_path / "again.xlsx"), "--no-deadline",
         "--emit-scenario", str(back))
    (tmp_path / "want.toml").write_text(TOML.replace("deadline_h = 75\n", "deadline_h = 75\ninterval_min = 55\n"))
    got, want = (json.loads(_cli("plan", "--scenario", str(p), "--json")) for p in (back, tmp_path / "want.toml"))
    assert [s["interval_min"] for s in want["schedule"]] == [55.0, 55.0]
    assert [s["interval_stated"] for s in want["schedule"]] == [True, True]
    same_json(got, want)
    again = load_workbook(tmp_path / "again.xlsx")
    assert _typed(tmp_path / "again.xlsx")[1:3] == [55.0, 55.0]
    assert again["Schedule"][f"F{_table_rows(again)[1]}"].value == "stated"   # read back as stated, not as ours
    _named_cell(wb, "schedule3_interval_min").value = 70.0
    wb.save(tmp_path / "two.xlsx")
    sc = workbook.read_inputs(tmp_path / "two.xlsx")[0]
    assert sc.interval_min is None
    assert sc.failure_phases == (FailurePhase(0.0, 4.0, 55.0), FailurePhase(24.0, 1.0, 70.0))


def test_a_typed_interval_before_a_late_phase_becomes_a_phase_at_zero(book, tmp_path):
    """Phase 1 starting at 6 h: the row before it is the constant rate from 0, which the plan takes as a phase at 0
    with rate factor 1; a typed interval there becomes that phase, stated."""
    wb = load_workbook(book)
    _named_cell(wb, "phase1_start_h").value = 6.0
    for i, v in ((1, 80.0), (2, 30.0)):
        _named_cell(wb, f"schedule{i}_interval_min").value = v
    wb.save(tmp_path / "late.xlsx")
    sc = workbook.read_inputs(tmp_path / "late.xlsx")[0]
    assert sc.failure_phases == (FailurePhase(0.0, 1.0, 80.0), FailurePhase(6.0, 4.0, 30.0), FailurePhase(24.0, 1.0))
    row = engine.evaluate(sc).iloc[0]
    assert [row[f"schedule{i}_interval_stated"] for i in (1, 2, 3)] == [1.0, 1.0, 0.0]
    assert [row[f"schedule{i}_interval_min"] for i in (1, 2)] == [80.0, 30.0]


def test_two_typed_intervals_round_trip_through_libreoffice(book, tmp_path):
    """Different intervals typed in the two phases, recalculated in LibreOffice: --from then plan --json reproduces
    the sheet's live figures (wall time, waste, failures, cost) to 1e-9, and a second round trip changes nothing."""
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    wb = load_workbook(book)
    _named_cell(wb, "schedule2_interval_min").value = 31.5
    _named_cell(wb, "schedule3_interval_min").value = 88.0
    typed = tmp_path / "typed.xlsx"
    wb.save(typed)
    (done,) = recalculate([typed], tmp_path / "out")
    assert error_cells(done) == []
    ws = load_workbook(done, data_only=True)["Schedule"]
    total = _table_rows(load_workbook(typed))[-1] + 1
    back, again, back2 = tmp_path / "back.toml", tmp_path / "again.xlsx", tmp_path / "back2.toml"
    _cli("workbook", "--from", str(done), "-o", str(again), "--no-deadline", "--emit-scenario", str(back))
    plan = json.loads(_cli("plan", "--scenario", str(back), "--json"))
    assert [(s["interval_min"], s["interval_stated"]) for s in plan["schedule"]] == [(31.5, True), (88.0, True)]
    assert plan["wall_h"] == pytest.approx(ws[f"I{total}"].value, rel=1e-9)
    assert plan["waste_fraction"] == pytest.approx(ws[f"K{total}"].value, rel=1e-9)
    assert plan["expected_failures"] == pytest.approx(ws[f"L{total}"].value, rel=1e-9)
    assert plan["compute_cost"] == pytest.approx(ws[f"M{total}"].value, rel=1e-9)
    _cli("workbook", "--from", str(again), "-o", str(tmp_path / "third.xlsx"), "--no-deadline", "--emit-scenario",
         str(back2))
    same_json(json.loads(_cli("plan", "--scenario", str(back2), "--json")), plan)


def test_an_edited_phase_puts_the_schedule_out_of_date_and_is_read_back(book, tmp_path):
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    wb = load_workbook(book)
    _named_cell(wb, "phase2_start_h").value = 36.0
    _named_cell(wb, "phase2_rate_factor").value = 1.5
    _named_cell(wb, "phase3_start_h").value = 48.0
    _named_cell(wb, "phase3_rate_factor").value = 0.5
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    plain, changed = recalculate([book, edited], tmp_path / "out")
    assert _named_cell(load_workbook(plain, data_only=True), "schedule_status").value == UP_TO_DATE
    status = _named_cell(load_workbook(changed, data_only=True), "schedule_status").value
    assert status.startswith("OUT OF DATE") and "phase2_start_h" in status and "phase3_rate_factor" in status
    assert error_cells(changed) == []
    sc = workbook.read_inputs(edited)[0]
    assert sc.failure_phases == (FailurePhase(0.0, 4.0), FailurePhase(36.0, 1.5), FailurePhase(48.0, 0.5))


def test_a_half_given_or_bad_phase_is_reported_by_cell(book, tmp_path):
    wb = load_workbook(book)
    _named_cell(wb, "phase3_start_h").value = 40.0
    _named_cell(wb, "phase2_rate_factor").value = -1.0
    wb.save(tmp_path / "bad.xlsx")
    with pytest.raises(WorkbookInputError) as err:
        workbook.read_inputs(tmp_path / "bad.xlsx")
    text = str(err.value)
    assert "phase3" in text and "give both" in text and "phase2_rate_factor" in text


def test_an_unedited_round_trip_reproduces_plan_json(tmp_path):
    src, first, back = tmp_path / "burn-in.toml", tmp_path / "first.xlsx", tmp_path / "back.toml"
    src.write_text(TOML)
    _cli("workbook", "--scenario", str(src), "-o", str(first), "--no-deadline")
    _cli("workbook", "--from", str(first), "-o", str(tmp_path / "again.xlsx"), "--no-deadline", "--emit-scenario",
         str(back))
    got, want = (json.loads(_cli("plan", "--scenario", str(p), "--json")) for p in (back, src))
    assert len(want["schedule"]) == 2 and want["deadline_method"] == "simulated"
    same_json(got, want)




def test_the_sheet_holds_at_most_six_phases_and_refuses_more_by_name(tmp_path):
    """The Schedule sheet's exact expectation is written cell for cell (about 42,000 formulas at six phase rows,
    140,000 at ten: past the cached-value limit): it offers spare rows up to six, and a scenario with more phases
    is refused by name before any work, pointing to `plan`/`batch`."""
    from ckptplan.workbook.build import refuse_off_sheets
    from ckptplan.workbook.schedule_sheet import SHEET_MAX_PHASES, phase_slots

    assert [phase_slots(n) for n in range(1, SHEET_MAX_PHASES + 1)] == [3, 4, 5, 6, 6, 6]
    base = engine.Scenario(name="six", price_per_gpu_hour=2.0, nodes=16, node_mtbf_h=2000, checkpoint_stall_min=1, restart_min=5, useful_training_h=50)
    phases = [{"start_h": 5.0 * i, "rate_factor": 1.0 + i % 2} for i in range(SHEET_MAX_PHASES + 1)]
    refuse_off_sheets(base.replace(failure_phases=phases[:-1]))
    with pytest.raises(engine.InputError, match="7 phases.*at most 6 phases.*ckptplan plan"):
        refuse_off_sheets(base.replace(failure_phases=phases))
    path = tmp_path / "seven.toml"
    path.write_text("[scenario]\nname = \"seven\"\nprice_per_gpu_hour = 2.0\nnodes = 16\nnode_mtbf_h = 2000\ncheckpoint_stall_min = 1\nrestart_min = 5\n"
                    "useful_training_h = 50\n" + "".join(f"\n[[failure_phases]]\nstart_h = {p['start_h']}\n"
                                                       f"rate_factor = {p['rate_factor']}\n" for p in phases))
    res = CliRunner().invoke(app, ["workbook", "--scenario", str(path), "-o", str(tmp_path / "w.xlsx"), "--no-deadline"])
    assert res.exit_code == 2 and "at most 6 phases" in res.output and not (tmp_path / "w.xlsx").exists(), res.output


def test_a_blank_interval_says_what_it_means_and_what_from_does(book, tmp_path):
    """A blank 'Save every' in a phase the job runs in: the table evaluates the phase's own optimum, a red line under
    it says --from optimises that phase instead, and --from's plan indeed differs; typed (or as generated): no line."""
    from ckptplan.workbook.schedule_sheet import BLANK_WARNING

    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    wb = load_workbook(book)
    rows = _table_rows(wb)
    _named_cell(wb, "schedule2_interval_min").value = None   # the burn-in: blank
    _named_cell(wb, "schedule3_interval_min").value = 90.0
    blank = tmp_path / "blank.xlsx"
    wb.save(blank)
    wb = load_workbook(book)
    _named_cell(wb, "schedule4_interval_min").value = None   # a slot with no phase: nothing to warn about
    unused = tmp_path / "unused.xlsx"
    wb.save(unused)
    done = recalculate([book, blank, unused], tmp_path / "out")
    line = rows[-1] + 2
    sheets = [load_workbook(p, data_only=True)["Schedule"] for p in done]
    assert sheets[1][f"A{line}"].value == BLANK_WARNING
    assert sheets[0][f"A{line}"].value in ("", None) and sheets[2][f"A{line}"].value in ("", None)
    _assert_live(done[1], PHASED, _typed(blank))   # the table: phase 1 at its own optimum
    back = tmp_path / "back.toml"
    _cli("workbook", "--from", str(done[1]), "-o", str(tmp_path / "again.xlsx"), "--no-deadline", "--emit-scenario",
         str(back))
    plan = json.loads(_cli("plan", "--scenario", str(back), "--json"))
    own = sheets[1][f"E{rows[1]}"].value
    assert plan["schedule"][1]["interval_min"] == 90.0 and plan["schedule"][1]["interval_stated"] is True
    assert plan["schedule"][0]["interval_stated"] is False
    assert plan["schedule"][0]["interval_min"] != pytest.approx(own, rel=1e-6)
    assert plan["wall_h"] <= sheets[1][f"I{rows[-1] + 1}"].value   # --from's optimum: never longer than the table's
