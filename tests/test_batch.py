"""Tests of engine.batch, engine.sweep, files.tables, files.results, workbook.results and the
`ckptplan batch` / `ckptplan sweep` commands.

Per-row errors, sweeps, every input and output format round-tripped, formula injection, refusal to
overwrite, per-scenario Monte Carlo seeding, and the Dask path (a small LocalCluster) against the
in-process path. Monte Carlo runs are kept small (200 runs per row): these tests check plumbing and
reproducibility, not statistics (tests/test_deadline.py does that).
"""

from __future__ import annotations

import re
import math
import zipfile

import numpy as np
import pandas as pd
import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ckptplan import engine
from ckptplan import files
from ckptplan.cli_batch import register
from ckptplan.engine import batch as eb
from ckptplan.engine import deadline as dl
from ckptplan.engine import sweep as es
from ckptplan.engine.scenario import is_absent
from ckptplan.files import results as fr
from ckptplan.files import tables as ft
from ckptplan.workbook import results as wr

runner = CliRunner()
RUNS = 200
SEED = files.load_scenario("seed")  # the base of the sweeps (the engine reads no file)


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    register(a)
    return a


def templates_table() -> pd.DataFrame:
    """Every shipped preset: domains, async saves, job-MTBF overrides, text columns."""
    return engine.to_table([files.load_scenario(n) for n in files.list_templates()])


def numeric_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if df[c].dtype.kind in "fi"]


def assert_same_results(a: pd.DataFrame, b: pd.DataFrame, text_map=lambda s: s) -> None:
    """Same columns; numbers bit-identical (NaN where NaN); text equal (blank == missing)."""
    assert list(a.columns) == list(b.columns)
    assert list(a.index) == list(b.index)
    for c in a.columns:
        if a[c].dtype.kind in "fi":
            np.testing.assert_array_equal(a[c].to_numpy(dtype=float), b[c].to_numpy(dtype=float), err_msg=c)
        else:
            left = ["" if is_absent(v) else text_map(v) if isinstance(v, str) else str(v) for v in a[c].to_numpy(dtype=object)]
            right = ["" if is_absent(v) else str(v) for v in b[c].to_numpy(dtype=object)]
            assert left == right, c


MIXED_CSV = """name,checkpoint_stall_min,node_mtbf_h,nodes,useful_training_h,price_per_gpu_hour,restart_min
good,2,2560,128,720,2.5,10
negative stall,-1,2560,128,720,2.5,10
text in a number,abc,2560,128,720,2.5,10
blank nodes,2,2560,,720,2.5,10

number as text," 0.5 ",2560,128,720,2.5,10
three problems,-1,-5,1.5,720,2.5,10
free save,0,2560,128,720,2.5,NA
"""


# ============================================================================ evaluate_rows

def test_valid_rows_equal_engine_evaluate_and_carry_status():
    table = templates_table()
    out = eb.evaluate_rows(table)
    ref = engine.evaluate(table)
    assert list(out.columns[:2]) == ["status", "error"]
    assert (out["status"] == "ok").all() and (out["error"] == "").all()
    for c in ref.columns:
        if ref[c].dtype.kind == "f":
            np.testing.assert_array_equal(out[c].to_numpy(), ref[c].to_numpy(), err_msg=c)
    # seed template: reference figures of the README
    seed = out[out["name"] == "seed-128-nodes"].iloc[0]
    assert seed["young_interval_min"] == pytest.approx(69.28, abs=0.01)
    assert seed["total_cost"] == pytest.approx(1_970_195, abs=1)


def test_mixed_file_reports_every_bad_row_and_evaluates_the_rest(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text(MIXED_CSV)
    table = ft.read_scenarios(path)
    assert list(table.index) == [1, 2, 3, 4, 6, 7, 8]  # data rows (1 = first under the header); blank row 5 is empty
    out = eb.evaluate_rows(table)
    assert len(out) == len(table)  # nothing dropped
    status = dict(zip(out.index, out["status"]))
    errors = dict(zip(out.index, out["error"]))
    assert status == {1: "ok", 2: "error", 3: "error", 4: "error", 6: "ok", 7: "error", 8: "error"}
    assert errors[2] == "checkpoint_stall_min=-1.0: must be >= 0"
    assert errors[3] == "checkpoint_stall_min='abc': must be a number"
    assert errors[4] == "nodes: blank: is required"
    assert errors[7].split("; ") == ["checkpoint_stall_min=-1.0: must be >= 0", "node_mtbf_h=-5.0: must be > 0",
                                     "nodes=1.5: must be a whole number >= 1"]
    assert errors[8].startswith("checkpoint_stall_min=0.0: checkpoint_stall_min + async_write_min must be > 0")
    # good rows: exactly what the engine gives for them alone ("NA" restart = default 0 is not an error)
    good = engine.evaluate(pd.DataFrame({
        "checkpoint_stall_min": [2.0, 0.5], "node_mtbf_h": [2560.0] * 2, "nodes": [128.0] * 2,
        "useful_training_h": [720.0] * 2, "price_per_gpu_hour": [2.5] * 2, "restart_min": [10.0] * 2}))
    np.testing.assert_array_equal(out.loc[[1, 6], "total_cost"].to_numpy(), good["total_cost"].to_numpy())
    assert out.loc[[2, 3, 4, 7, 8], "total_cost"].isna().all()
    # the bad number stays visible as a number; the text is quoted in the error, and the column stays numeric
    assert out.loc[2, "checkpoint_stall_min"] == -1.0 and np.isnan(out.loc[3, "checkpoint_stall_min"])
    assert out["checkpoint_stall_min"].dtype == np.float64


def test_cross_field_rules_match_validate_table_row_by_row():
    """Each rule the vectorised masks implement agrees with engine.validate_table on that row alone."""
    base = dict(checkpoint_stall_min=1.0, node_mtbf_h=1000.0, nodes=8.0, useful_training_h=100.0, price_per_gpu_hour=1.0)
    rows = [
        base,
        {**base, "node_mtbf_h": np.nan},                                            # no MTBF at all
        {**base, "node_mtbf_h": np.nan, "job_mtbf_h": 5.0},                         # job MTBF is enough
        {**base, "async_write_min": 10.0, "async_slowdown_fraction": 0.5, "interval_min": 4.0},  # write not durable
        {**base, "async_write_min": 10.0, "async_slowdown_fraction": 0.5, "interval_min": 6.0},
        {**base, "nonfatal_share": 1.0},                                            # fraction must be < 1
        {**base, "domain1_mtbf_h": 5000.0, "domain1_nodes_per_domain": np.nan},     # half a domain
        {**base, "domain1_mtbf_h": 5000.0, "domain1_nodes_per_domain": 4.0},
        {**base, "gpus_per_node": np.inf},
    ]
    table = pd.DataFrame(rows)
    out = eb.evaluate_rows(table)
    for i in range(len(table)):
        try:
            engine.validate_table(table.iloc[[i]])
            expected = None
        except engine.InputError as exc:
            expected = re.sub(r"^row [^:]*: ", "", str(exc))   # the row is the output row
        if expected is None:
            assert out["status"].iloc[i] == "ok", (i, out["error"].iloc[i])
        else:
            assert out["status"].iloc[i] == "error" and out["error"].iloc[i] == expected, i


def test_rows_the_engine_refuses_are_isolated_by_bisection():
    """An overflow the masks cannot see (engine.waste refuses it) marks only its own row."""
    table = pd.DataFrame({"checkpoint_stall_min": [2.0] * 6, "job_mtbf_h": [20, 0.001, 20, 30, 1e-4, 40],
                          "nodes": [128.0] * 6, "useful_training_h": [720.0] * 6, "price_per_gpu_hour": [2.5] * 6,
                          "interval_min": [60, 5000, 60, 70, 1e5, 80]})
    with pytest.raises(engine.InputError):
        engine.evaluate(table)
    out = eb.evaluate_rows(table)
    assert list(out["status"]) == ["ok", "error", "ok", "ok", "error", "ok"]
    assert out["error"].iloc[1].startswith("M=0.06: ") and "overflows" in out["error"].iloc[1]
    good = engine.evaluate(table.iloc[[0, 2, 3, 5]])
    np.testing.assert_array_equal(out["wall_h"].iloc[[0, 2, 3, 5]].to_numpy(), good["wall_h"].to_numpy())


def test_table_level_problems_raise():
    table = templates_table()
    with pytest.raises(engine.InputError, match=r"columns='nodes': missing required column"):
        eb.evaluate_rows(table.drop(columns=["nodes"]))
    with pytest.raises(engine.InputError, match=r"restart_mins.*did you mean restart_min"):
        eb.evaluate_rows(table.rename(columns={"restart_min": "restart_mins"}))
    with pytest.raises(engine.InputError, match="domain1_nodes_per_domain"):
        eb.evaluate_rows(table.drop(columns=["domain1_nodes_per_domain"]))
    with pytest.raises(engine.InputError, match="is an output column"):
        eb.evaluate_rows(eb.evaluate_rows(table))
    teams = [f"team {i}" for i in range(len(table))]
    kept = eb.evaluate_rows(table.assign(team=teams), extra_columns="keep")
    assert list(kept["team"]) == teams
    with pytest.raises(engine.InputError, match="runs"):
        eb.evaluate_rows(table, deadline=True, runs=1)
    with pytest.raises(engine.InputError, match="seed"):
        eb.evaluate_rows(table, deadline=True, seed=-1)


def test_empty_and_scenario_inputs():
    empty = eb.evaluate_rows(templates_table().iloc[:0])
    assert len(empty) == 0 and "total_cost" in empty.columns
    one = eb.evaluate_rows(files.load_scenario("seed"))
    assert one["status"].tolist() == ["ok"]


# ================================================================================ sweeps

@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_sweep_row_count_is_the_product_and_every_combination_appears_once(lengths):
    fields = ["checkpoint_stall_min", "nodes", "restart_min", "price_per_gpu_hour"][: len(lengths)]
    values = {"checkpoint_stall_min": [0.5, 1.0, 2.0, 4.0], "nodes": [64, 128, 256, 512],
              "restart_min": [0.0, 5.0, 10.0, 20.0], "price_per_gpu_hour": [1.0, 2.0, 2.5, 3.0]}
    axes = {f: values[f][:n] for f, n in zip(fields, lengths)}
    out = es.sweep(SEED, **axes)
    assert len(out) == int(np.prod(lengths))
    combos = list(zip(*(out[f].tolist() for f in fields)))
    assert len(set(combos)) == len(combos)
    assert sorted(combos) == sorted(__import__("itertools").product(*(map(float, axes[f]) for f in fields)))
    assert (out["status"] == "ok").all()
    # first axis varies slowest, like itertools.product
    assert out[fields[0]].tolist() == sorted(out[fields[0]].tolist())


def test_sweep_matches_engine_and_chunks_agree():
    out = es.sweep(SEED, checkpoint_stall_min="0.5,1,2", nodes="64:1024:x2", restart_min=[5, 10])
    assert len(out) == 3 * 5 * 2 and list(out.index) == list(range(1, 31))
    ref = engine.evaluate(es.sweep_grid(SEED, checkpoint_stall_min=[0.5, 1, 2], nodes=[64, 128, 256, 512, 1024],
                                        restart_min=[5, 10]).chunk())
    np.testing.assert_array_equal(out["total_cost"].to_numpy(), ref["total_cost"].to_numpy())
    grid = es.sweep_grid(SEED, checkpoint_stall_min="0.5,1,2", nodes="64:1024:x2", restart_min=[5, 10])
    chunked = pd.concat(es.iter_results(grid, chunk_rows=7))
    assert_same_results(out, chunked)


def test_sweep_rule_violations_are_row_errors_and_options():
    out = es.sweep(SEED, checkpoint_stall_min=[-1, 1], nodes=[64, 128])
    assert out["status"].tolist() == ["error", "error", "ok", "ok"]
    assert set(out["error"].iloc[:2]) == {"checkpoint_stall_min=-1.0: must be >= 0"}
    # sweeping node MTBF drops a template's job MTBF override, or it would win on every row
    llama = files.load_scenario("llama3-405b")
    swept = es.sweep(llama, node_mtbf_h=[1000, 2000])
    assert swept["job_mtbf_h"].iloc[0] != swept["job_mtbf_h"].iloc[1]
    # same work: useful hours scale with nodes
    same = es.sweep(SEED, nodes=[64, 256], same_work=True)
    assert same["useful_training_h"].tolist() == [1440.0, 360.0]
    assert same["useful_gpu_hours"].iloc[0] == same["useful_gpu_hours"].iloc[1]
    with pytest.raises(engine.InputError, match="not a numeric scenario field"):
        es.sweep(SEED, restart_mins=[1, 2])
    with pytest.raises(engine.InputError, match="appears twice"):
        es.sweep(SEED, nodes=[64, 64])
    with pytest.raises(engine.InputError, match="max_rows"):
        es.sweep(SEED, nodes="1:1000:+1", restart_min="1:100:+1", max_rows=10_000)
    # the engine reads no file: a template name is refused, the caller loads it
    with pytest.raises(engine.InputError, match="must be a Scenario.*load_scenario"):
        es.sweep_grid("seed", nodes=[64, 128])


@pytest.mark.parametrize("text,expected", [
    ("0.5,1,2", [0.5, 1, 2]),
    ("64:4096:x2", [64, 128, 256, 512, 1024, 2048, 4096]),
    ("1:10:*3", [1, 3, 9]),
    ("0.1:0.5:+0.1", [0.1, 0.2, 0.3, 0.4, 0.5]),
    ("0.5:3:+1", [0.5, 1.5, 2.5]),
    ("0.25, 0.5:2:x2", [0.25, 0.5, 1, 2]),
    ("1e3", [1000.0]),
])
def test_parse_axis(text, expected):
    assert es.parse_axis(text, "--x").tolist() == expected


@pytest.mark.parametrize("text,match", [
    ("", "use numbers and ranges"),
    ("1,,2", "empty item"),
    ("abc", "'abc' is not a number"),
    ("1:2", "must be a:b:xK or a:b:\\+d"),
    ("1:8:2", "must be a:b:xK or a:b:\\+d"),
    ("1:8:/2", "must start with x"),
    ("8:1:x2", "end 1 is below the start 8"),
    ("0:8:x2", "start > 0 and a factor > 1"),
    ("1:8:x1", "start > 0 and a factor > 1"),
    ("1:8:+0", "step > 0"),
    ("1,2,1", "appears twice"),
    ("0:1e9:+1", "limit"),
    ("inf", "finite"),
])
def test_parse_axis_errors_name_the_option(text, match):
    with pytest.raises(engine.InputError, match=match) as info:
        es.parse_axis(text, "--nodes")
    assert str(info.value).startswith("--nodes=")


# ======================================================================= Monte Carlo seeds

def test_deadline_columns_are_seeded_per_scenario_not_per_batch():
    grid = es.sweep_grid(SEED, checkpoint_stall_min=[1, 2], restart_min=[5, 30], nodes=[128, 256]).chunk()
    full = eb.evaluate_rows(grid, deadline=True, runs=RUNS, seed=7)
    assert (full["status"] == "ok").all()
    assert full["mc_runs"].eq(RUNS).all() and full["p_finish"].between(0, 1).all()
    # a subset, shuffled, among other rows (one of which adds failure-domain columns to the table)
    other = templates_table().assign(deadline_h=np.nan)
    mixed = pd.concat([other, grid.iloc[[6, 1, 4]]], ignore_index=True)
    sub = eb.evaluate_rows(mixed, deadline=True, runs=RUNS, seed=7).iloc[len(other):]
    for col in eb.MONTE_CARLO_COLUMNS:
        np.testing.assert_array_equal(sub[col].to_numpy(), full[col].iloc[[6, 1, 4]].to_numpy(), err_msg=col)
    # equal inputs, equal seeds; another base seed, other draws
    twice = eb.evaluate_rows(pd.concat([grid.iloc[[0]], grid.iloc[[0]]]), deadline=True, runs=RUNS, seed=7)
    assert twice["mc_wall_h_mean"].iloc[0] == twice["mc_wall_h_mean"].iloc[1] == full["mc_wall_h_mean"].iloc[0]
    other_seed = eb.evaluate_rows(grid.iloc[[0]], deadline=True, runs=RUNS, seed=8)
    assert other_seed["deadline_seed"].iloc[0] != full["deadline_seed"].iloc[0]
    assert other_seed["mc_wall_h_mean"].iloc[0] != full["mc_wall_h_mean"].iloc[0]
    np.testing.assert_array_equal(eb.scenario_seeds(grid, 7), full["deadline_seed"].to_numpy().astype(np.int64))


def test_deadline_row_reproduces_deadline_report():
    out = eb.evaluate_rows(files.load_scenario("seed"), deadline=True, runs=RUNS, seed=3)
    row = out.iloc[0]
    rep = dl.deadline_report(files.load_scenario("seed"), runs=RUNS, seed=int(row["deadline_seed"]))
    assert row["deadline_seed"] < 2**49
    for mine, theirs in (("p_finish", "p_finish"), ("p_finish_low", "p_finish_low"), ("mc_wall_h_mean", "wall_h_mean"),
                         ("mc_wall_h_p90", "wall_h_p90"), ("mc_failures_mean", "failures_mean"),
                         ("mc_gpu_hours_p90", "gpu_hours_p90"), ("mc_cost_mean", "cost_mean")):
        assert row[mine] == rep[theirs], mine


def test_deadline_problems_are_row_errors():
    sc = files.load_scenario("seed")
    table = engine.to_table([sc, sc.replace(name="too tight", deadline_h=100.0), sc.replace(name="open", deadline_h=None)])
    out = eb.evaluate_rows(table, deadline=True, runs=RUNS)
    assert out["status"].tolist() == ["ok", "error", "ok"]
    assert out["error"].iloc[1].startswith("deadline_h=100.0: must be >= useful_training_h = 720 h")
    assert not math.isnan(out["total_cost"].iloc[1])          # closed-form figures stay
    assert math.isnan(out["mc_wall_h_mean"].iloc[1])
    assert math.isnan(out["p_finish"].iloc[2]) and out["mc_wall_h_mean"].iloc[2] > 720


# ================================================================================ files

@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet", ".toml"])
def test_input_formats_round_trip(tmp_path, suffix):
    table = templates_table()
    path = wr.write_scenarios(table, tmp_path / f"scenarios{suffix}")
    back = ft.read_scenarios(path)
    assert back.index.name == "row" and len(back) == len(table)
    for c in table.columns:
        if c not in back.columns:  # TOML leaves out a field no scenario gives
            assert suffix == ".toml" and table[c].isna().all(), c
            continue
        if table[c].dtype.kind in "fi":
            np.testing.assert_array_equal(back[c].to_numpy(dtype=float), table[c].to_numpy(dtype=float), err_msg=c)
        else:
            assert [None if is_absent(v) or v == "" else v for v in back[c]] == \
                   [None if is_absent(v) or v == "" else v for v in table[c]], c
    ref = eb.evaluate_rows(table)
    got = eb.evaluate_rows(back)
    assert (got["status"] == "ok").all()
    for c in numeric_columns(ref):
        if c in got.columns:
            np.testing.assert_array_equal(got[c].to_numpy(), ref[c].to_numpy(), err_msg=c)


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet"])
def test_output_formats_round_trip(tmp_path, suffix):
    path = tmp_path / "mixed.csv"
    path.write_text(MIXED_CSV)
    results = eb.evaluate_rows(ft.read_scenarios(path), deadline=True, runs=RUNS)
    out = tmp_path / f"results{suffix}"
    summary = wr.write_results(results, out, describe=("name",))
    assert (summary.rows, summary.ok, summary.errors) == (7, 2, 5)
    back = fr.read_results(out)
    neutral = (lambda s: "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s) if suffix == ".csv" else (lambda s: s)
    assert_same_results(results, back, text_map=neutral)


def test_streamed_chunks_write_the_same_file_as_one_frame(tmp_path):
    grid = es.sweep_grid(SEED, checkpoint_stall_min=[0.5, 1, -2], nodes="64:512:x2")
    whole = eb.evaluate_rows(grid.chunk())
    for suffix in (".csv", ".parquet"):
        wr.write_results(whole, tmp_path / f"a{suffix}")
        wr.write_results(es.iter_results(grid, chunk_rows=5), tmp_path / f"b{suffix}")
        assert_same_results(fr.read_results(tmp_path / f"a{suffix}"), fr.read_results(tmp_path / f"b{suffix}"))


def test_csv_output_neutralises_formulas_but_keeps_numbers(tmp_path):
    sc = files.load_scenario("seed")
    names = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tTAB", "\rCR", "plain", "a=b"]
    table = engine.to_table([sc.replace(name=n) for n in names])
    results = eb.evaluate_rows(table)
    results.loc[results.index[0], "checkpoint_stall_min"] = -1.5  # a negative number must stay a number
    wr.write_results(results, tmp_path / "r.csv")
    raw = pd.read_csv(tmp_path / "r.csv", keep_default_na=False)
    assert raw["name"].tolist() == ["'=1+1", "'+SUM(A1)", "'-2+3", "'@cmd", "'\tTAB", "'\rCR", "plain", "a=b"]
    assert raw["checkpoint_stall_min"].iloc[0] == -1.5 and raw["checkpoint_stall_min"].dtype.kind == "f"
    first_data_line = (tmp_path / "r.csv").read_text().splitlines()[1]
    assert ",-1.5," in first_data_line  # unquoted, unprefixed: a number to any spreadsheet
    frame = pd.DataFrame({"t": ["-3", "x", None], "n": [-3.0, 1.0, np.nan]})
    neutral = fr.neutralise_csv_text(frame)
    assert neutral["t"].tolist()[:2] == ["'-3", "x"] and neutral["n"].tolist()[:2] == [-3.0, 1.0]


def test_xlsx_output_is_an_excel_table_with_formats_and_summary(tmp_path):
    from openpyxl import load_workbook

    sc = files.load_scenario("seed")
    table = engine.to_table([sc, sc.replace(name="=HYPERLINK(\"http://x\")", checkpoint_stall_min=0.5),
                             sc.replace(name="#N/A", restart_min=30.0)])
    table.loc[2, "nodes"] = -4
    results = eb.evaluate_rows(table, deadline=True, runs=RUNS)
    wr.write_results(results, tmp_path / "r.xlsx", source="unit test")
    wb = load_workbook(tmp_path / "r.xlsx")
    assert wb.sheetnames == ["Results", "Summary"]  # results first: what pandas.read_excel returns
    ws = wb["Results"]
    assert ws.freeze_panes == "A2"
    t = ws.tables["Results"]
    assert t.ref == f"A1:{ws.cell(1, ws.max_column).column_letter}4" and t.autoFilter.ref == t.ref
    header = [c.value for c in ws[1]]
    assert [c.name for c in t.tableColumns] == header == list(results.columns)
    fmt = {h: ws.cell(2, j + 1).number_format for j, h in enumerate(header)}
    assert fmt["checkpoint_stall_min"] == '#,##0.00" min"' and fmt["wall_h"] == '#,##0.0" h"'
    assert fmt["waste_fraction"] == "0.00%" and fmt["goodput"] == "0.00%" and fmt["p_finish"] == "0.00%"
    assert fmt["total_gpu_hours"] == '#,##0" GPU-h"' and fmt["total_cost"] == "#,##0.00"
    assert fmt["price_per_gpu_hour"] == "#,##0.00" and fmt["nodes"] == "#,##0"
    # untrusted text is stored as text: never a formula, never an error value
    name_col = header.index("name") + 1
    assert ws.cell(3, name_col).value == '=HYPERLINK("http://x")' and ws.cell(3, name_col).data_type == "s"
    assert ws.cell(4, name_col).value == "#N/A" and ws.cell(4, name_col).data_type == "s"
    assert ws.cell(4, header.index("status") + 1).value == "error"
    assert ws.cell(4, header.index("total_cost") + 1).value is None  # NaN -> empty cell
    assert ws.cell(2, header.index("total_cost") + 1).value == results["total_cost"].iloc[0]
    summary = {r[0]: r[1] for r in wb["Summary"].iter_rows(values_only=True) if r and r[0]}
    assert summary["rows"] == 3 and summary["ok"] == 2 and summary["errors (status = error)"] == 1
    assert summary["source"] == "unit test"
    assert "best (USD)" in summary and "worst (USD)" in summary


def test_xlsx_row_limit_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(wr, "EXCEL_MAX_DATA_ROWS", 5)
    grid = es.sweep_grid(SEED, nodes="1:8:+1")
    with pytest.raises(engine.InputError, match="Excel's limit of 5 data rows.*csv or .parquet"):
        wr.write_results(es.iter_results(grid, chunk_rows=3), tmp_path / "big.xlsx")
    assert not (tmp_path / "big.xlsx").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind
    with pytest.raises(engine.InputError, match="Excel's limit"):
        wr.write_results(iter([]), tmp_path / "big.xlsx", expected_rows=6)


def test_xlsx_input_is_read_as_untrusted_values(tmp_path):
    import openpyxl
    from openpyxl import Workbook

    assert openpyxl.xml.DEFUSEDXML  # openpyxl parses through defusedxml
    wb = Workbook()
    ws = wb.active
    ws.title = "Notes"
    ws["A1"] = "this sheet is not read"
    ws = wb.create_sheet("Scenarios")
    ws.append(["name", "checkpoint_stall_min", "node_mtbf_h", "nodes", "useful_training_h", "price_per_gpu_hour"])
    ws.append(["ok", 2, 2560, 128, 720, 2.5])
    ws.append(["formula", "=1+1", 2560, 128, 720, 2.5])
    ws.append(["text number", "0.5", 2560, 128, 720, 2.5])
    ws.append(["bool", True, 2560, 128, 720, 2.5])
    ws.append(["error value", 2, "#DIV/0!", 128, 720, 2.5])
    ws.append([None] * 6)
    ws.append(["=CMD()", 1, 2560, 128, 720, 2.5])
    wb.save(tmp_path / "in.xlsx")
    table = ft.read_scenarios(tmp_path / "in.xlsx")
    assert list(table.index) == [1, 2, 3, 4, 5, 7]  # data rows: sheet row - 1
    out = eb.evaluate_rows(table)
    assert out["status"].tolist() == ["ok", "error", "ok", "error", "error", "error"]
    assert out["error"].iloc[1] == ("checkpoint_stall_min='=1+1': is a formula: formulas are not evaluated "
                                    "(ckptplan reads stored values only); type the value")
    assert out["error"].iloc[3] == "checkpoint_stall_min=True: must be a number"
    assert out["error"].iloc[4] == "node_mtbf_h='#DIV/0!': is an Excel error value"
    assert out["error"].iloc[5].startswith("name='=CMD()': is a formula")
    assert out["checkpoint_stall_min"].iloc[2] == 0.5
    # a value under no header is a file-level error; so is a zip bomb or a file that is no workbook
    ws["H3"] = 5
    wb.save(tmp_path / "stray.xlsx")
    with pytest.raises(engine.InputError, match="column 8.*no header"):
        ft.read_scenarios(tmp_path / "stray.xlsx")
    (tmp_path / "fake.xlsx").write_text("name,nodes\n")
    with pytest.raises(engine.InputError, match="not an .xlsx workbook"):
        ft.read_scenarios(tmp_path / "fake.xlsx")
    with zipfile.ZipFile(tmp_path / "in.xlsx") as zf:
        size = sum(i.file_size for i in zf.infolist())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ft, "MAX_XLSX_UNCOMPRESSED_BYTES", size - 1)
        with pytest.raises(engine.InputError, match="unpacks to"):
            ft.read_scenarios(tmp_path / "in.xlsx")


def test_toml_input_single_and_several_and_errors(tmp_path):
    one = tmp_path / "one.toml"
    one.write_text((files.TEMPLATE_DIR / "power-domains.toml").read_text())
    t1 = ft.read_scenarios(one)
    assert len(t1) == 1 and "domain1_mtbf_h" in t1.columns
    ref = engine.evaluate(files.load_scenario("power-domains"))
    assert eb.evaluate_rows(t1)["total_cost"].iloc[0] == ref["total_cost"].iloc[0]
    several = tmp_path / "several.toml"
    several.write_text("""
[[scenario]]
name = "a"
checkpoint_stall_min = 2.0
node_mtbf_h = 2560.0
nodes = 128
useful_training_h = 720.0
price_per_gpu_hour = 2.5

[[scenario]]
name = "b: quoted number is text in TOML"
checkpoint_stall_min = "2"
node_mtbf_h = 2560.0
nodes = 128
useful_training_h = 720.0
price_per_gpu_hour = 2.5

[[scenario]]
name = "c: no price"
checkpoint_stall_min = 1.0
node_mtbf_h = 2560.0
nodes = 64
useful_training_h = 720.0
""")
    out = eb.evaluate_rows(ft.read_scenarios(several))
    assert out["status"].tolist() == ["ok", "error", "error"]
    assert out["error"].tolist()[1:] == ["checkpoint_stall_min='2': must be a number (TOML: write it without quotes)",
                                      "price_per_gpu_hour: blank: is required"]
    bad = tmp_path / "bad.toml"
    bad.write_text("[[scenario]]\nname = 'x'\nnodes = 1\n")
    with pytest.raises(engine.InputError, match="missing required column"):
        eb.evaluate_rows(ft.read_scenarios(bad))
    bad.write_text("[other]\nx = 1\n")
    with pytest.raises(engine.InputError, match=r"\[\[scenario\]\]"):
        ft.read_scenarios(bad)


def test_unreadable_inputs_are_file_level_errors(tmp_path):
    with pytest.raises(engine.InputError, match="file not found"):
        ft.read_scenarios(tmp_path / "missing.csv")
    with pytest.raises(engine.InputError, match="unsupported type"):
        ft.read_scenarios(tmp_path / "x.json")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(engine.InputError, match="empty"):
        ft.read_scenarios(tmp_path / "empty.csv")
    (tmp_path / "header.csv").write_text("name,nodes\n")
    with pytest.raises(engine.InputError, match="no scenario rows"):
        ft.read_scenarios(tmp_path / "header.csv")
    (tmp_path / "dup.csv").write_text("nodes,nodes\n1,2\n")
    with pytest.raises(engine.InputError, match="more than once"):
        ft.read_scenarios(tmp_path / "dup.csv")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(engine.InputError, match="cannot be read as Parquet"):
        ft.read_scenarios(tmp_path / "bad.parquet")


def test_outputs_are_never_overwritten_without_force(tmp_path):
    results = eb.evaluate_rows(templates_table())
    for suffix in (".csv", ".xlsx", ".parquet"):
        path = tmp_path / f"r{suffix}"
        path.write_text("keep me")
        with pytest.raises(FileExistsError, match="--force"):
            wr.write_results(results, path)
        assert path.read_text() == "keep me"
        wr.write_results(results, path, force=True)
        assert len(fr.read_results(path)) == len(results)
    with pytest.raises(engine.InputError, match="unsupported type"):
        wr.write_results(results, tmp_path / "r.json")
    # the files layer writes csv and parquet; .xlsx comes with the workbook's sink
    with pytest.raises(engine.InputError, match="workbook.results"):
        fr.write_results(results, tmp_path / "plain.xlsx")
    assert not (tmp_path / "plain.xlsx").exists()


# ================================================================================== CLI

def test_cli_batch_mixed_file_exits_3_and_writes_every_row(app, tmp_path):
    src = tmp_path / "mixed.csv"
    src.write_text(MIXED_CSV)
    out = tmp_path / "out.xlsx"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out)])
    assert res.exit_code == 3, res.output
    assert "7 rows: 2 ok, 5 failed" in res.output
    assert "row 2: checkpoint_stall_min=-1.0: must be >= 0" in res.output
    assert "best  2.5951 USD per useful GPU-h" in res.output and "row 6, name=number as text" in res.output
    back = fr.read_results(out)
    assert back["status"].tolist() == ["ok", "error", "error", "error", "ok", "error", "error"]
    # refuses to overwrite, leaves the file alone; --force replaces it
    before = out.read_bytes()
    res = runner.invoke(app, ["batch", str(src), "-o", str(out)])
    assert res.exit_code == 2 and "--force" in res.output and out.read_bytes() == before
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--force", "--json"])
    assert res.exit_code == 3 and '"errors": 5' in res.output


def test_cli_batch_file_level_errors_exit_2_and_write_nothing(app, tmp_path):
    src = tmp_path / "nocol.csv"
    src.write_text("name,checkpoint_stall_min,node_mtbf_h,useful_training_h,price_per_gpu_hour\nx,2,2560,720,2.5\n")
    out = tmp_path / "out.csv"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--no-template"])
    assert res.exit_code == 2 and "columns='nodes': missing required column" in res.output
    assert not out.exists()
    res = runner.invoke(app, ["batch", str(tmp_path / "nope.csv"), "-o", str(out)])
    assert res.exit_code == 2 and "file not found" in res.output
    res = runner.invoke(app, ["batch", str(src), "-o", str(tmp_path / "out.json")])
    assert res.exit_code == 2 and "unsupported type" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nocol.csv"]


def test_cli_batch_all_good_exits_0_with_deadline(app, tmp_path):
    src = wr.write_scenarios(templates_table(), tmp_path / "t.toml")
    out = tmp_path / "out.parquet"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--deadline", "--runs", str(RUNS), "--seed", "4"])
    assert res.exit_code == 0, res.output
    back = fr.read_results(out)
    ref = eb.evaluate_rows(ft.read_scenarios(src), deadline=True, runs=RUNS, seed=4)
    assert_same_results(ref, back)


def test_cli_sweep(app, tmp_path):
    out = tmp_path / "s.csv"
    res = runner.invoke(app, ["sweep", "--checkpoint-stall-min", "0.5,1,2", "--nodes", "64:4096:x2",
                              "--price-per-gpu-hour", "2,2.5",
                              "--axis", "restart_min=5:15:+5", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "126 rows: 126 ok, 0 failed" in res.output
    back = fr.read_results(out)
    ref = es.sweep(SEED, checkpoint_stall_min=[0.5, 1, 2], nodes=[64, 128, 256, 512, 1024, 2048, 4096],
                   price_per_gpu_hour=[2, 2.5], restart_min=[5, 10, 15])
    assert_same_results(ref, back)
    best = ref.loc[ref["cost_per_useful_gpu_hour"].idxmin()]
    assert (f"best  {best['cost_per_useful_gpu_hour']:,.4f} USD per useful GPU-h" in res.output
            and f"row {best.name}, checkpoint_stall_min=0.5, nodes=64, price_per_gpu_hour=2, restart_min=5" in res.output)
    res = runner.invoke(app, ["sweep", "--nodes", "64:4096:2", "-o", str(tmp_path / "x.csv")])
    assert res.exit_code == 2 and "--nodes='64:4096:2': range '64:4096:2' must be a:b:xK or a:b:+d" in res.output
    res = runner.invoke(app, ["sweep", "--checkpoint-stall-min", "-1,1", "-o", str(tmp_path / "y.csv")])
    assert res.exit_code == 3 and "2 rows: 1 ok, 1 failed" in res.output
    assert "row 1: checkpoint_stall_min=-1.0: must be >= 0" in res.output
    res = runner.invoke(app, ["sweep", "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 2 and "at least one axis" in res.output


# ============================================================ base scenario (template) fill

PLANNER_CSV = """name,checkpoint_stall_min,node_mtbf_h,nodes,restart_min
today,2,2560,128,10
faster storage,0.5,2560,128,10
bigger job,2,2560,1024,10
"""


def planner_table() -> pd.DataFrame:
    return pd.DataFrame({"name": ["today", "faster storage", "bigger job"], "checkpoint_stall_min": [2.0, 0.5, 2.0],
                         "node_mtbf_h": [2560.0] * 3, "nodes": [128, 128, 1024], "restart_min": [10.0] * 3})


def test_template_fills_the_columns_a_file_omits_and_says_which():
    table = planner_table()
    table.attrs["cell_errors"] = {}
    filled, fill = es.fill_from_template(table, SEED, "seed")
    # the seed preset's values that differ from the registry defaults; name/description/source never
    assert fill.template == "seed"
    assert fill.filled == {"useful_training_h": 720.0, "price_per_gpu_hour": 2.5, "deadline_h": 778.0}
    assert fill.not_taken == {}
    assert list(filled.columns[:5]) == list(table.columns) and "description" not in filled.columns
    assert list(filled.index) == list(table.index) and "cell_errors" in filled.attrs
    out = eb.evaluate_rows(filled)
    assert (out["status"] == "ok").all()
    for i, sc in enumerate([SEED, SEED.replace(checkpoint_stall_min=0.5), SEED.replace(nodes=1024)]):
        assert out["total_cost"].iloc[i] == engine.evaluate(sc)["total_cost"].iloc[0]
    # without the template, every missing required column is named at once
    with pytest.raises(engine.InputError, match=r"columns='useful_training_h, price_per_gpu_hour': missing required "
                                                 r"columns"):
        eb.evaluate_rows(table)


def test_template_never_hides_the_files_own_failure_figures():
    fitted = SEED.replace(job_mtbf_h=5.0, currency="EUR", name="fitted")  # e.g. a job MTBF fitted from a log
    # the file gives node_mtbf_h: the template's job MTBF override would win over it on every row
    filled, fill = es.fill_from_template(planner_table(), fitted)
    assert "job_mtbf_h" not in filled.columns and "node_mtbf_h" in fill.not_taken["job_mtbf_h"]
    assert fill.template == "fitted" and fill.filled["currency"] == "EUR"
    out = eb.evaluate_rows(filled)
    assert out["job_mtbf_h"].tolist() == [20.0, 20.0, 2.5]  # from node MTBF / nodes, as plan --node-mtbf-h does
    # a file without node MTBF takes the override; a file with prices keeps its own currency
    table = planner_table().drop(columns=["node_mtbf_h"]).assign(price_per_gpu_hour=2.0, useful_training_h=100.0)
    filled, fill = es.fill_from_template(table, fitted)
    assert fill.filled == {"job_mtbf_h": 5.0, "node_mtbf_h": 2560.0}
    assert set(fill.not_taken) == {"currency", "deadline_h"}  # they belong with the price and the run length
    out = eb.evaluate_rows(filled)
    assert out["job_mtbf_h"].tolist() == [5.0] * 3 and "currency" not in out.columns
    # domains: the file's own domain columns replace the template's, they are not added to them
    power = files.load_scenario("power-domains")
    own = planner_table().assign(domain1_mtbf_h=[1000.0, np.nan, 1000.0], domain1_nodes_per_domain=[8, np.nan, 8])
    filled, fill = es.fill_from_template(own, power)
    assert "domains" in fill.not_taken and "domain1_name" not in filled.columns
    assert "job_mtbf_h" not in fill.filled
    filled, fill = es.fill_from_template(planner_table().iloc[:1].assign(nodes=256), power)
    assert fill.filled["domain1_mtbf_h"] == 20000.0 and fill.filled["domain1_nodes_per_domain"] == 16
    assert str(filled["domain1_nodes_per_domain"].dtype) == "Int64"
    same = power.replace(checkpoint_stall_min=2.0, restart_min=10.0, name="today")
    assert eb.evaluate_rows(filled)["total_cost"].iloc[0] == engine.evaluate(same)["total_cost"].iloc[0]
    with pytest.raises(engine.InputError, match="must be a Scenario"):
        es.fill_from_template(planner_table(), "seed")


def test_every_unknown_and_missing_column_is_named_at_once():
    table = planner_table().drop(columns=["nodes"]).rename(columns={"restart_min": "restart_mins"}).assign(team="a")
    with pytest.raises(engine.InputError) as info:
        eb.evaluate_rows(table)
    assert "nodes, useful_training_h, price_per_gpu_hour" in str(info.value)
    filled, _ = es.fill_from_template(table, SEED)
    with pytest.raises(engine.InputError, match=r"columns='restart_mins, team': are not scenario fields: "
                                                r"restart_mins \(did you mean restart_min\?\); team"):
        eb.evaluate_rows(filled)
    assert (eb.evaluate_rows(filled, extra_columns="keep")["team"] == "a").all()


def test_cli_batch_on_a_planners_five_columns(app, tmp_path):
    src = tmp_path / "planner.csv"
    src.write_text(PLANNER_CSV)
    res = runner.invoke(app, ["batch", str(src), "-o", str(tmp_path / "out.csv")])
    assert res.exit_code == 0, res.output
    assert "3 rows: 3 ok, 0 failed" in res.output
    assert ("Base scenario seed: filled 3 column(s) the file omits (same value on every row): useful_training_h=720, "
            "price_per_gpu_hour=2.5, deadline_h=778") in res.output
    back = fr.read_results(tmp_path / "out.csv")
    assert list(back.index) == [1, 2, 3] and back["useful_training_h"].tolist() == [720.0] * 3
    # --json says the same; another template fills other values; a TOML file is a template too
    own = tmp_path / "mine.toml"
    own.write_text("[scenario]\nname = 'mine'\ncheckpoint_stall_min = 1.0\nnode_mtbf_h = 2560.0\nnodes = 64\n"
                   "useful_training_h = 100.0\nprice_per_gpu_hour = 4.0\n")
    for template, price in (("llama3-405b", 2.5), (str(own), 4.0)):
        res = runner.invoke(app, ["batch", str(src), "-o", str(tmp_path / "j.csv"), "--force", "--json",
                                  "--template", template])
        assert res.exit_code == 0, res.output
        data = __import__("json").loads(res.output)
        assert data["template"]["template"] == template and data["template"]["filled"]["price_per_gpu_hour"] == price
        assert data["rows"] == 3 and "warnings" in data
    # --no-template: every missing required column named, nothing written
    res = runner.invoke(app, ["batch", str(src), "-o", str(tmp_path / "none.csv"), "--no-template"])
    assert res.exit_code == 2 and "columns='useful_training_h, price_per_gpu_hour': missing required columns" in res.output
    assert not (tmp_path / "none.csv").exists()
    res = runner.invoke(app, ["batch", str(src), "-o", str(tmp_path / "x.csv"), "--no-template", "--template", "seed"])
    assert res.exit_code == 2


# ============================================================================ results files

def test_results_sheet_first_data_rows_and_bad_cells_in_the_error_column(tmp_path):
    """A cell holding no number is blank in its (numeric) column and quoted in the row's error, in every format."""
    path = tmp_path / "mixed.csv"
    path.write_text(MIXED_CSV)
    results = eb.evaluate_rows(ft.read_scenarios(path), deadline=True, runs=RUNS)
    for suffix in (".csv", ".xlsx", ".parquet"):
        out = tmp_path / f"r{suffix}"
        wr.write_results(results, out)
        back = fr.read_results(out)
        assert list(back.index) == [1, 2, 3, 4, 6, 7, 8], suffix
        assert np.isnan(back.loc[3, "checkpoint_stall_min"]) and back.loc[2, "checkpoint_stall_min"] == -1.0, suffix
        assert "checkpoint_stall_min='abc': must be a number" in back.loc[3, "error"], suffix
        assert back.loc[1, "checkpoint_stall_min"] == 2.0 and back.loc[6, "checkpoint_stall_min"] == 0.5, suffix
        assert back["checkpoint_stall_min"].dtype.kind == "f", suffix
    first = pd.read_excel(tmp_path / "r.xlsx")  # the first sheet: the results, not the Summary
    assert first.columns[:4].tolist() == ["row", "status", "error", "warnings"] and first["row"].tolist()[0] == 1
    assert first["checkpoint_stall_min"].dtype.kind == "f" and np.isnan(first["checkpoint_stall_min"].tolist()[2])
    raw = pd.read_parquet(tmp_path / "r.parquet")
    assert raw["checkpoint_stall_min"].dtype.kind == "f" and raw["checkpoint_stall_min"].tolist()[:2] == [2.0, -1.0]
    # xlsx input: a formula and an Excel error value are quoted in the error; the row is the sheet row - 1
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.append(["name", "checkpoint_stall_min", "node_mtbf_h", "nodes", "useful_training_h", "price_per_gpu_hour"])
    wb.active.append(["ok", 2, 2560, 128, 720, 2.5])
    wb.active.append(["formula", "=1+1", "#DIV/0!", 128, 720, 2.5])
    wb.save(tmp_path / "in.xlsx")
    got = eb.evaluate_rows(ft.read_scenarios(tmp_path / "in.xlsx"))
    assert list(got.index) == [1, 2] and got["status"].tolist() == ["ok", "error"]
    assert np.isnan(got.loc[2, "checkpoint_stall_min"]) and np.isnan(got.loc[2, "node_mtbf_h"])
    assert "'=1+1'" in got.loc[2, "error"] and "'#DIV/0!'" in got.loc[2, "error"]
    wr.write_results(got, tmp_path / "f.xlsx")
    from openpyxl import load_workbook

    ws = load_workbook(tmp_path / "f.xlsx")["Results"]
    header = [c.value for c in ws[1]]
    cell = ws.cell(3, header.index("error") + 1)
    assert "=1+1" in cell.value and cell.data_type == "s"  # text, never a formula
    assert ws.cell(2, header.index("checkpoint_stall_min") + 1).value == 2
    assert ws.cell(3, header.index("checkpoint_stall_min") + 1).value is None


def test_whole_number_columns_stay_whole_in_every_output(tmp_path):
    import pyarrow.parquet as pq
    from openpyxl import load_workbook

    table = ft.read_scenarios(wr.write_scenarios(templates_table(), tmp_path / "t.toml"))  # whole numbers: Int64
    table.loc[2, "nodes"] = -4  # an error row: its figures (gpus, deadline_seed) are blank
    results = eb.evaluate_rows(table, deadline=True, runs=RUNS)
    whole = ("nodes", "gpus_per_node", "gpus", "deadline_seed", "mc_runs", "domain1_nodes_per_domain")
    for c in whole:
        assert str(results[c].dtype) == "Int64", c
    assert results["deadline_seed"].isna().sum() == 1
    for suffix in (".csv", ".xlsx", ".parquet"):
        wr.write_results(results, tmp_path / f"r{suffix}")
        back = fr.read_results(tmp_path / f"r{suffix}")
        for c in whole:
            assert str(back[c].dtype) == "Int64", (suffix, c)
            assert back[c].tolist() == results[c].tolist(), (suffix, c)
    schema = pq.read_schema(tmp_path / "r.parquet")
    for c in ("row",) + whole:
        assert str(schema.field(c).type) == "int64", c
    assert str(pd.read_parquet(tmp_path / "r.parquet")["nodes"].dtype) == "Int64"
    header, first = list(__import__("csv").reader((tmp_path / "r.csv").read_text().splitlines()))[:2]
    seed_text = first[header.index("deadline_seed")]
    assert seed_text.isdigit() and int(seed_text) == results["deadline_seed"].iloc[0]  # all digits, no 3.92e+14
    assert first[header.index("nodes")] == "128" and first[header.index("gpus")] == "1024"
    ws = load_workbook(tmp_path / "r.xlsx")["Results"]
    cols = [c.value for c in ws[1]]
    for c, fmt in (("nodes", "#,##0"), ("gpus", "#,##0"), ("deadline_seed", "0"), ("mc_runs", "0")):
        cell = ws.cell(2, cols.index(c) + 1)
        assert isinstance(cell.value, int) and cell.number_format == fmt, c
    assert ws.cell(2, cols.index("deadline_seed") + 1).value == results["deadline_seed"].iloc[0]
    # a sweep and a scenario file read back keep whole numbers whole too
    assert str(es.sweep_grid(SEED, nodes=[64, 128]).chunk()["nodes"].dtype) == "Int64"
    assert str(es.sweep_grid(SEED, nodes=[64, 96.5]).chunk()["nodes"].dtype) == "float64"  # 96.5: a row error
    src = tmp_path / "mixed.csv"
    src.write_text(MIXED_CSV)
    assert str(ft.read_scenarios(src)["nodes"].dtype) == "float64"  # holds 1.5, kept visible
    assert str(eb.evaluate_rows(templates_table())["domain1_nodes_per_domain"].dtype) == "float64"  # as given


# ========================================================================= seeds, warnings

def test_a_rows_seed_comes_only_from_what_its_simulation_uses():
    sc = SEED
    others = [sc.replace(price_per_gpu_hour=9.0), sc.replace(currency="EUR", name="other"),
              sc.replace(runs_per_month=2.0), sc.replace(deadline_h=900.0), sc.replace(gpus_per_node=4)]
    changed = [sc.replace(restart_min=11.0), sc.replace(checkpoint_stall_min=2.5), sc.replace(useful_training_h=700.0),
               sc.replace(interval_min=60.0), sc.replace(node_mtbf_h=2600.0), sc.replace(async_write_min=1.0)]
    table = engine.to_table([sc, *others, *changed])
    out = eb.evaluate_rows(table, deadline=True, runs=RUNS, seed=5)
    seeds = out["deadline_seed"].tolist()
    assert seeds[1:1 + len(others)] == [seeds[0]] * len(others)
    assert len(set(seeds[1 + len(others):] + [seeds[0]])) == 1 + len(changed)
    # rows that differ only in price simulate identical schedules; only the money differs
    schedule = ["mc_wall_h_mean", "mc_wall_h_p50", "mc_wall_h_p90", "mc_wall_h_p99", "mc_failures_mean"]
    np.testing.assert_array_equal(out.loc[1, schedule].to_numpy(dtype=float), out.loc[0, schedule].to_numpy(dtype=float))
    assert out.loc[1, "p_finish"] == out.loc[0, "p_finish"] and out.loc[1, "mc_cost_mean"] != out.loc[0, "mc_cost_mean"]
    assert out.loc[1, "mc_cost_mean"] == pytest.approx(out.loc[0, "mc_cost_mean"] * 9.0 / 2.5, rel=1e-12)
    # reproducible from the row alone: another order, other neighbours, the same seed; deadline_report agrees
    alone = eb.evaluate_rows(table.iloc[[7, 1]], deadline=True, runs=RUNS, seed=5)
    assert alone["deadline_seed"].tolist() == [seeds[7], seeds[1]]
    rep = dl.deadline_report(sc.replace(price_per_gpu_hour=9.0), runs=RUNS, seed=int(seeds[1]))
    assert rep["p_finish"] == out.loc[1, "p_finish"] and rep["wall_h_p90"] == out.loc[1, "mc_wall_h_p90"]
    # the failure law, the final save and the base seed enter
    law = eb.scenario_seeds(table.iloc[:1], 5, failures=dl.FailureLaw.weibull(0.7))
    final = eb.scenario_seeds(table.iloc[:1], 5, final_save=True)
    assert len({seeds[0], int(law[0]), int(final[0]), int(eb.scenario_seeds(table.iloc[:1], 6)[0])}) == 4
    assert eb.scenario_seeds(table.iloc[:1], 5, failures=dl.FailureLaw.exponential())[0] == seeds[0]


def test_warnings_column_and_count():
    from ckptplan.engine.validity import warnings_text

    sc = SEED
    table = engine.to_table([sc, sc.replace(nodes=100_000, name="huge"), sc.replace(checkpoint_stall_min=5e-5),
                             sc.replace(nodes=100_000)])
    table.loc[3, "restart_min"] = -1.0
    out = eb.evaluate_rows(table)
    assert out.columns[:3].tolist() == ["status", "error", "warnings"]
    assert out["status"].tolist() == ["ok", "ok", "ok", "error"]
    ok = out["status"] == "ok"
    assert out.loc[ok, "warnings"].tolist() == warnings_text(engine.evaluate(table.iloc[:3]))
    assert out.loc[0, "warnings"] == "" and out.loc[1, "warnings"] != "" and "small model" in out.loc[2, "warnings"]
    assert out.loc[3, "warnings"] == ""  # error rows: empty
    summary = es.summarize(out)
    assert summary.warned == 2 and [r for r, _ in summary.first_warnings] == [1, 2]
    assert summary.to_dict()["warnings"] == 2
    swept = es.sweep(SEED, nodes=[128, 100_000])
    assert swept["warnings"].tolist()[0] == "" and swept["warnings"].tolist()[1] == out.loc[1, "warnings"]


def test_cli_prints_and_stores_the_model_warnings(app, tmp_path):
    from openpyxl import load_workbook

    res = runner.invoke(app, ["sweep", "--nodes", "128,100000", "-o", str(tmp_path / "s.xlsx")])
    assert res.exit_code == 0, res.output
    assert "Model warnings on 1 ok row(s) (warnings column):" in res.output and "  row 2: " in res.output
    summary = {r[0]: r[1] for r in load_workbook(tmp_path / "s.xlsx")["Summary"].iter_rows(values_only=True) if r and r[0]}
    assert summary["ok rows with model warnings"] == 1
    assert fr.read_results(tmp_path / "s.xlsx")["warnings"].tolist()[0] == ""


# ================================================================================= Dask

@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def test_dask_sweep_equals_in_process(dask_client):
    axes = dict(checkpoint_stall_min=[0.5, 2, -1], nodes="64:512:x2", restart_min=[5, 30])
    ref = es.sweep(SEED, **axes, deadline=True, runs=RUNS, seed=11)
    lazy = es.sweep_dask(SEED, **axes, deadline=True, runs=RUNS, seed=11, partition_rows=5)
    assert lazy.npartitions == 5
    got = lazy.compute()
    assert_same_results(ref, got)
    assert (ref.dtypes == got.dtypes).all()
    streamed = pd.concat(es.iter_results(lazy, window=2))
    assert_same_results(ref, streamed)


def test_dask_dataframe_input_equals_in_process(dask_client, tmp_path):
    import dask.dataframe as dd

    path = tmp_path / "mixed.csv"
    path.write_text(MIXED_CSV)
    table = pd.concat([ft.read_scenarios(path), templates_table().pipe(lambda t: t.set_axis(range(20, 20 + len(t))))])
    ref = eb.evaluate_rows(table, deadline=True, runs=RUNS)
    got = eb.evaluate_rows(dd.from_pandas(table, npartitions=3, sort=False), deadline=True, runs=RUNS).compute()
    assert_same_results(ref, got)
    with pytest.raises(engine.InputError, match="missing required column"):
        eb.evaluate_rows(dd.from_pandas(table.drop(columns=["nodes"]), npartitions=2))


def test_cli_sweep_on_dask_writes_the_same_file(app, dask_client, tmp_path):
    args = ["sweep", "--checkpoint-stall-min", "0.5,1,-2", "--nodes", "64:1024:x2", "--chunk-rows", "4"]
    local = runner.invoke(app, args + ["-o", str(tmp_path / "local.parquet")])
    remote = runner.invoke(app, args + ["-o", str(tmp_path / "dask.parquet"), "--scheduler", "dask",
                                        "--dask-address", dask_client.cluster.scheduler_address])
    assert local.exit_code == remote.exit_code == 3, remote.output
    assert_same_results(fr.read_results(tmp_path / "local.parquet"), fr.read_results(tmp_path / "dask.parquet"))
