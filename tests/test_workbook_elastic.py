"""Elastic continuation in the workbook (workbook/elastic_block.py): inputs, engine values, live status, --from.

The Llama 3 storage template as 128 replicas of 16 nodes that may train on down to 120 (1 min pauses), as the
README's ``ckptplan compare`` example:

* the Inputs sheet holds the elastic fields (``on_node_loss`` and the registry's numeric ones), read back by
  ``workbook --from``: an unedited round trip gives the same scenario and every elastic figure again to 1e-9;
* the Plan sheet's top rows are the engine's elastic plan (``plan_setup``), the Compare sheet's strategy table is
  ``recovery_strategies`` (48,514,049 / 56,532,488 / 83,968,979 / 363,914,839 USD), both "up to date" as built and
  in LibreOffice, and naming the input after an edit of an elastic cell, a scenario input or the setup;
* every live formula cell equals the engine's plan of the same job stopping at every failure, and the sheets say so;
* with ``on_node_loss = restart``, or a floor at all replicas, the workbook is today's: every cell the same as the
  workbook of the scenario without elastic fields;
* bad elastic cells are named by the Plan sheet's Input check (LibreOffice) and refused by ``--from`` naming the cell;
  a design or an input range over an elastic field is refused by name (the live columns cannot carry it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import workbook
from ckptplan.cli import app
from ckptplan.engine import InputError
from ckptplan.engine.designs import Design
from ckptplan.engine.setup import plan_setup
from ckptplan.engine.strategies import recovery_strategies
from ckptplan.engine.uncertainty import UncertainInput
from ckptplan.files import load_plan
from ckptplan.workbook.elastic_block import (DEADLINE_ROWS, ELASTIC_HEADING, STOP_AND_RESTART_SHEET,
                                             STRATEGY_HEADING, STRATEGY_ROWS)
from ckptplan.workbook.flags import UP_TO_DATE
from ckptplan.workbook.read import WorkbookInputError, read_plan
from ckptplan.workbook.recalc import error_cells, recalculate, soffice

runner = CliRunner()
ELASTIC = dict(nodes_per_replica=16, min_replicas=120, shrink_pause_min=1.0, regrow_pause_min=1.0)
#: the README's compare figures for this variant (USD): elastic + spares, hot spares, elastic, wait for a node
README_TOTALS = {"elastic + spares": 48_514_049, "hot spares": 56_532_488, "elastic": 83_968_979,
                 "wait for a node": 363_914_839}


def _plan(**changes):
    plan = load_plan("llama3-405b-storage")
    return plan, plan.scenario.replace(**{**ELASTIC, "on_node_loss": "continue", **changes})


def _write(path: Path, sc, plan) -> workbook.Built:
    return workbook.write_workbook(path, sc, designs=plan.designs, setup=plan.setup, force=True)


def _dest(wb, name: str) -> tuple[str, str]:
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return sheet, ref.replace("$", "")


def _named(wb, name: str):
    sheet, ref = _dest(wb, name)
    return wb[sheet][ref].value


def _put(wb, name: str, value) -> None:
    sheet, ref = _dest(wb, name)
    wb[sheet][ref] = value


def _elastic_figures(wb) -> dict[str, float]:
    return {str(n)[len("elastic_"):]: _named(wb, n) for n in wb.defined_names
            if str(n).startswith("elastic_") and n not in ("elastic_status", "elastic_input_problems")}


def _strategies(wb) -> dict[tuple[int, str], object]:
    return {(j, key): _named(wb, f"strategy{j}_{key}") for j in range(1, 5) for key, *_ in STRATEGY_ROWS + DEADLINE_ROWS}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("elastic")
    plan, sc = _plan()
    return plan, sc, _write(tmp / "elastic.xlsx", sc, plan), tmp / "elastic.xlsx"


def test_plan_sheet_holds_the_engines_elastic_plan(built):
    plan, sc, b, path = built
    wb = load_workbook(path, data_only=True)
    want = plan_setup(sc, plan.setup).figures
    got = _elastic_figures(wb)
    assert len(got) == 16 and "p_finish_by_deadline" in got and all(got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-12) for k in got)
    assert round(got["total_cost"]) == README_TOTALS["elastic + spares"]
    assert _named(wb, "elastic_status") == UP_TO_DATE and _named(wb, "input_check") == "OK"
    plan_ws = b.workbook["Plan"]
    column_a = [c.value for c in plan_ws["A"]]
    assert ELASTIC_HEADING in column_a and any(str(v).startswith("Stop-and-restart view") for v in column_a)
    # the printed Plan stops at column D: the status's hidden helper cells once made LibreOffice print ### beside it
    assert plan_ws.print_area == f"'Plan'!$A$1:$D${plan_ws.max_row}"


def test_compare_sheet_prices_the_four_strategies_as_compare(built):
    plan, sc, b, path = built
    wb = load_workbook(path, data_only=True)
    table = recovery_strategies(sc, plan.setup)
    got = _strategies(wb)
    for j, row in enumerate(table.itertuples(), start=1):
        assert round(got[(j, "total_cost")]) == README_TOTALS[row.strategy]
        for key, *_ in STRATEGY_ROWS + DEADLINE_ROWS:   # the template has a deadline: P(finish) and percentiles
            want = getattr(row, key) if key != "vs_cheapest" else row.total_cost - table["total_cost"].min()
            assert got[(j, key)] == (want if isinstance(want, str) else pytest.approx(float(want), rel=1e-12, abs=1e-6))
    assert [c.value for c in b.workbook["Compare"]["A"]].count(STRATEGY_HEADING) == 1
    assert _named(wb, "strategies_status") == UP_TO_DATE


def test_live_sheets_say_they_plan_the_job_stopping(built):
    plan, sc, b, path = built
    wb = b.workbook
    for name in ("Interval curve", "Compare", "Storage & recovery", "Spot", "Deadline"):
        if name in wb.sheetnames:
            assert str(wb[name]["A2"].value).startswith(STOP_AND_RESTART_SHEET), name
    assert str(wb["Scaling"]["A4"].value).startswith(STOP_AND_RESTART_SHEET)
    # the live figures are the engine's stop-and-restart plan of the same job (LibreOffice test below)
    restart = plan_setup(sc.replace(on_node_loss="restart"), plan.setup.replace(tiers=(), failure_classes={}))
    assert b.results.iloc[0]["wall_h"] == pytest.approx(restart.row["wall_h"], rel=1e-12)


@pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed (scripts/test.sh installs it)")
def test_libreoffice_recalculates_the_live_cells_and_the_status_follows_edits(built, tmp_path):
    import test_storage_sheet as storage_test
    from test_workbook_recalc import compare_all

    from ckptplan.workbook.storage_sheet import SHEET, sheet_checks

    plan, sc, b, src = built
    edits = {"floor": {"min_replicas": 110}, "mode": {"on_node_loss": "restart"}, "pause": {"shrink_pause_min": 2.0},
             "spares": {"setup_spares": 16}, "nodes": {"nodes": 1024},
             "bad_per": {"nodes_per_replica": 15}, "bad_mode": {"on_node_loss": "sometimes"},
             "bad_floor": {"min_replicas": 200}}
    paths = [src]
    for name, changes in edits.items():
        wb = load_workbook(src)
        for key, value in changes.items():
            _put(wb, key, value)
        wb.save(tmp_path / f"{name}.xlsx")
        paths.append(tmp_path / f"{name}.xlsx")
    outs = dict(zip(["built"] + list(edits), recalculate(paths, tmp_path / "out")))
    # the live cells: the engine's plan of the job stopping at every failure, which is the template's plan (the
    # Scaling rows' smaller jobs hold fewer replicas than the floor: the engine plans them without the elastic fields)
    checks, flags = sheet_checks(b.workbook)
    assert storage_test.compare_sheet(checks, flags, outs["built"], plan.scenario, plan.setup, plan.designs) > 60
    others = workbook.Built(b.workbook, results=b.results, designs=b.designs)
    others.checks.extend(c for c in b.checks if c.sheet != SHEET)
    others.flags.extend(c for c in b.flags if c.sheet != SHEET)
    assert compare_all(others, outs["built"], plan.scenario, b.designs, st=plan.setup) > 500
    status = {k: (_named(w, "elastic_status"), _named(w, "strategies_status"), _named(w, "input_check"))
              for k, o in outs.items() for w in [load_workbook(o, data_only=True)]}
    assert status["built"] == (UP_TO_DATE, UP_TO_DATE, "OK")
    stale = "OUT OF DATE: inputs changed since this was computed: "
    assert status["floor"][0] == status["floor"][1] == stale + "min_replicas. Regenerate: ckptplan workbook --from " \
                                                               "THIS_FILE"
    assert status["mode"][0].startswith(stale + "on_node_loss") and status["mode"][1] == UP_TO_DATE  # floor given
    assert "shrink_pause_min" in status["pause"][0] and "shrink_pause_min" in status["pause"][1]
    assert "spares" in status["spares"][0] and "spares" in status["spares"][1]
    assert "nodes" in status["nodes"][0] and "nodes" in status["nodes"][1]
    assert "nodes_per_replica must divide nodes" in status["bad_per"][2]
    assert "on_node_loss must be restart or continue" in status["bad_mode"][2]
    assert "min_replicas must be <= the replicas" in status["bad_floor"][2]
    assert all(error_cells(o) == [] for o in outs.values())


def test_from_round_trip_reproduces_every_figure(built, tmp_path):
    plan, sc, b, src = built
    back = read_plan(src)
    for name in ("on_node_loss", *ELASTIC, "shrink_keeps_progress"):
        assert getattr(back.scenario, name) == getattr(sc, name), name
    res = runner.invoke(app, ["workbook", "--from", str(src), "-o", str(tmp_path / "again.xlsx"), "--no-deadline"])
    assert res.exit_code == 0, res.output
    first, again = load_workbook(src, data_only=True), load_workbook(tmp_path / "again.xlsx", data_only=True)
    a, z = _elastic_figures(first), _elastic_figures(again)
    assert a.keys() == z.keys() and all(z[k] == pytest.approx(a[k], rel=1e-9, abs=1e-12) for k in a)
    s1, s2 = _strategies(first), _strategies(again)
    assert all(s2[k] == (s1[k] if isinstance(s1[k], str) else pytest.approx(s1[k], rel=1e-9, abs=1e-6)) for k in s1)
    assert _named(again, "elastic_status") == _named(again, "strategies_status") == UP_TO_DATE
    # the command line prints the elastic plan (the Plan sheet's top rows), not the stop-and-restart view
    assert "elastic: 128 replicas of 16 nodes" in res.output


@pytest.mark.parametrize("changes,cell,rule", [
    ({"on_node_loss": "sometimes"}, "on_node_loss", "must be restart or continue"),
    ({"min_replicas": 2.5}, "min_replicas", "must be a whole number >= 1"),
    ({"shrink_keeps_progress": 3}, "shrink_keeps_progress", "must be a number 0 or 1"),
])
def test_from_refuses_a_bad_elastic_cell_naming_it(built, tmp_path, changes, cell, rule):
    src = built[3]
    wb = load_workbook(src)
    for key, value in changes.items():
        _put(wb, key, value)
    wb.save(tmp_path / "bad.xlsx")
    with pytest.raises(WorkbookInputError) as err:
        read_plan(tmp_path / "bad.xlsx")
    sheet, ref = _dest(wb, cell)
    assert f"{sheet}!{ref} ({cell})" in str(err.value) and rule in str(err.value)


def test_from_refuses_elastic_fields_that_disagree_naming_the_field(built, tmp_path):
    wb = load_workbook(built[3])
    _put(wb, "nodes_per_replica", 15)
    wb.save(tmp_path / "bad.xlsx")
    with pytest.raises(InputError) as err:
        read_plan(tmp_path / "bad.xlsx")
    assert "nodes_per_replica" in str(err.value) and "must divide nodes" in str(err.value)


def _cells(path: Path, data_only: bool) -> dict[tuple[str, str], object]:
    wb = load_workbook(path, data_only=data_only)
    return {(ws.title, c.coordinate): c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if c.value is not None}


@pytest.mark.parametrize("changes", [dict(on_node_loss="restart"), dict(min_replicas=128)], ids=["restart", "all"])
def test_a_job_that_stops_at_every_failure_gets_todays_workbook(tmp_path, changes):
    """Every cell (formulas and cached values) as the workbook of the same scenario without elastic fields, but
    the Inputs sheet's elastic cells themselves; with a floor below the replicas (restart) the Compare sheet adds
    the strategy table before its break-even block, which moves down: that sheet is compared up to the table."""
    plan, sc = _plan(**changes)
    _write(tmp_path / "today.xlsx", plan.scenario, plan)
    b = _write(tmp_path / "elastic.xlsx", sc, plan)
    inputs = {tuple(b.input_cells[k].replace("$", "").split("!")) for k in ("on_node_loss", *ELASTIC)}
    strategy_row = next((c.row for c in b.workbook["Compare"]["A"] if c.value == STRATEGY_HEADING), None)
    assert (strategy_row is not None) == (changes.get("on_node_loss") == "restart")
    for data_only in (False, True):
        today, elastic = _cells(tmp_path / "today.xlsx", data_only), _cells(tmp_path / "elastic.xlsx", data_only)
        skip = inputs | {k for k in today.keys() | elastic.keys() if k[0] == "Compare" and strategy_row
                         and int("".join(ch for ch in k[1] if ch.isdigit())) >= strategy_row - 2}
        differ = [(k, today.get(k), elastic.get(k)) for k in today.keys() | elastic.keys()
                  if k not in skip and today.get(k) != elastic.get(k)]
        assert not differ, differ[:5]


def test_designs_and_ranges_over_elastic_fields_are_refused_by_name():
    plan, sc = _plan()
    with pytest.raises(InputError) as err:
        workbook.build_workbook(sc, designs=(Design("floor 100", set={"min_replicas": 100}),), setup=plan.setup)
    assert "min_replicas" in err.value.field
    with pytest.raises(InputError) as err:
        workbook.build_workbook(sc, setup=plan.setup, uncertainty=(UncertainInput("shrink_pause_min", "range", 0.5, 2.0, 1.0),))
    assert "shrink_pause_min" in err.value.field
    with pytest.raises(InputError) as err:   # a Weibull rate from the start stays off the sheets
        workbook.build_workbook(plan.scenario.replace(weibull_shape_from_start=0.7), setup=plan.setup)
    assert err.value.field == "weibull_shape_from_start"
