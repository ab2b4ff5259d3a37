"""The CKPT_ Excel functions (workbook.udfs), their check sheet and the excel-setup command.

xlwings' converters do not run here (its decorators are no-ops on Linux), so every function is
called with exactly what Excel can send: scalars, None for blank cells, text, bools, 2-D lists and
numpy arrays. Numbers are compared with the engine functions the UDFs call; bad cells with the
exact error text.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from hypothesis import given, settings, strategies as st
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import engine
from ckptplan import files
from ckptplan import workbook
from ckptplan.engine import deadline as dl
from ckptplan.engine import montecarlo as mc
from ckptplan.engine.validity import warnings_text
from ckptplan.workbook import udfs as U
from ckptplan.workbook.udf_sheet import add_udf_sheet

REL = 1e-12
REPO = Path(__file__).resolve().parent.parent


def approx(x):
    return pytest.approx(x, rel=REL)


def err(name: str, rule: str, got: str) -> str:
    return f"#CKPT! {name}: {rule} (got {got})"


# -------------------------------------------------------------------------- scalars vs engine

def test_reference_cases_and_engine_equality_for_scalars():
    assert U.CKPT_JOB_MTBF(2560, 128) == approx(engine.job_mtbf(2560, 128)) == 20.0
    assert U.CKPT_JOB_MTBF(2560, 256) == 10.0
    assert round(U.CKPT_YOUNG_INTERVAL(2, 1200), 1) == 69.3
    assert round(U.CKPT_YOUNG_INTERVAL(2, 600), 1) == 49.0
    assert round(U.CKPT_DALY_INTERVAL(5, 24 * 60)) == 117
    assert U.CKPT_DALY_INTERVAL(5, 24 * 60) == approx(engine.daly_interval(5, 24 * 60))
    assert U.CKPT_EFFECTIVE_STALL(2, 3, 0.25) == approx(engine.effective_stall(2, 3, 0.25))
    assert U.CKPT_EXACT_INTERVAL(2, 1200) == approx(engine.exact_optimal_interval(2, 1200))
    assert U.CKPT_EXACT_INTERVAL(2, 1200, 3, 0.25) == approx(engine.exact_optimal_interval(2, 1200, 3, 0.25))
    assert U.CKPT_WASTE(69.28, 2, 1200, 0, 0, 0, "first_order") == approx(engine.first_order_waste(69.28, 2, 1200))
    assert round(U.CKPT_WASTE(U.CKPT_YOUNG_INTERVAL(2, 1200), 2, 1200, 0, 0, 0, "first_order"), 4) == 0.0577
    assert U.CKPT_WASTE(60, 2, 1200, 10, 3, 0.25) == approx(engine.waste_fraction(60, 2, 1200, 10, 3, 0.25))
    assert U.CKPT_WASTE(60, 2, 1200, 10, 3, 0.25, "first_order") == approx(
        engine.first_order_waste(60, engine.effective_stall(2, 3, 0.25), 1200))
    assert U.CKPT_WALL_TIME(720, 60, 2, 1200, 10, 3, 0.25) == approx(
        engine.expected_wall_time(720 * 60, 60, 2, 1200, 10, 3, 0.25) / 60)
    assert U.CKPT_GPU_HOURS(769.6, 1024) == approx(engine.gpu_hours(769.6, 1024))
    assert U.CKPT_COST(788078, 2.5) == approx(engine.money(788078, 2.5))
    for result in (U.CKPT_YOUNG_INTERVAL(2, 1200), U.CKPT_WASTE(60, 2, 1200)):
        assert type(result) is float  # a plain Python float for a single cell, not a numpy scalar


def test_seed_scenario_figures_match_engine_evaluate():
    sc = files.load_scenario("seed")
    row = engine.evaluate(sc).iloc[0]
    M = row["job_mtbf_h"] * 60
    T = row["chosen_interval_min"]
    args = (T, sc.checkpoint_stall_min, M, sc.restart_min, sc.async_write_min, sc.async_slowdown_fraction)
    assert U.CKPT_JOB_MTBF_DOMAINS(sc.node_mtbf_h, sc.nodes, None, None, sc.nonfatal_share) == approx(row["job_mtbf_h"])
    assert U.CKPT_YOUNG_INTERVAL(row["effective_stall_min"], M) == approx(row["young_interval_min"])
    assert U.CKPT_DALY_INTERVAL(row["effective_stall_min"], M) == approx(row["daly_interval_min"])
    assert U.CKPT_EXACT_INTERVAL(sc.checkpoint_stall_min, M) == approx(row["exact_interval_min"])
    assert U.CKPT_WASTE(*args, "exact") == approx(row["waste_fraction"])
    assert U.CKPT_WASTE(*args, "first_order") == approx(row["first_order_waste"])
    assert U.CKPT_WALL_TIME(sc.useful_training_h, *args) == approx(row["wall_h"])
    assert U.CKPT_GPU_HOURS(row["wall_h"], row["gpus"]) == approx(row["job_gpu_hours"])
    assert U.CKPT_COST(row["job_gpu_hours"], sc.price_per_gpu_hour) == approx(row["compute_cost"])
    table = U.CKPT_COST_BREAKDOWN(sc.useful_training_h, *args, row["gpus"], sc.price_per_gpu_hour)
    assert table[0] == ["category", "hours", "GPU-hours", "cost"]
    assert [r[0] for r in table[1:]] == ["useful", "save", "rework", "restart", "compute"]
    for r in table[1:]:
        cat = r[0]
        keys = ("wall_h", "job_gpu_hours", "compute_cost") if cat == "compute" else (f"{cat}_h", f"{cat}_gpu_hours", f"{cat}_cost")
        assert r[1:] == [approx(row[k]) for k in keys]


def test_job_mtbf_with_domains_matches_engine():
    doms = [engine.FailureDomain("d1", 20000, 16), engine.FailureDomain("d2", 50000, 64)]
    expected = engine.job_mtbf_with_domains(2560, 256, doms, nonfatal_share=0.1)
    assert U.CKPT_JOB_MTBF_DOMAINS(2560, 256, 20000, 16, 0.1, 50000, 64) == approx(expected)
    # the three domain slots are interchangeable; blank slots are "no domain"
    assert U.CKPT_JOB_MTBF_DOMAINS(2560, 256, None, None, 0.1, 20000, 16, 50000, 64) == approx(expected)
    assert U.CKPT_JOB_MTBF_DOMAINS(2560, 256, None, None) == approx(engine.job_mtbf(2560, 256))
    # per row: a domain without its size is an error in that row only
    out = U.CKPT_JOB_MTBF_DOMAINS(2560, 256, [[20000], [20000], [None]], [[16], [None], [None]])
    assert out[0][0] == approx(engine.job_mtbf_with_domains(2560, 256, [engine.FailureDomain("d", 20000, 16)]))
    assert out[1][0] == err("domain1_nodes_per_domain", "is required when domain1_mtbf_h is given", "a blank cell")
    assert out[2][0] == approx(10.0)
    assert U.CKPT_JOB_MTBF_DOMAINS(2560, 256, -5, 16) == err("domain1_mtbf_h", "must be > 0", "-5")


# -------------------------------------------------------------------------- ranges with bad cells

# function, arguments of a good call, engine reference of that call, and per argument a value that
# breaks its rule with the rule's text
CASES = {
    "CKPT_JOB_MTBF": ((2560, 128), lambda: engine.job_mtbf(2560, 128),
                      {0: (0, "must be > 0"), 1: (1.5, "must be a whole number >= 1")}),
    "CKPT_EFFECTIVE_STALL": ((2, 3, 0.25), lambda: engine.effective_stall(2, 3, 0.25),
                             {0: (-1, "must be >= 0"), 1: (-2, "must be >= 0"), 2: (1, "must be a fraction in [0, 1)")}),
    "CKPT_YOUNG_INTERVAL": ((2, 1200), lambda: engine.young_interval(2, 1200),
                            {0: (-1, "must be >= 0"), 1: (0, "must be > 0")}),
    "CKPT_DALY_INTERVAL": ((5, 1440), lambda: engine.daly_interval(5, 1440),
                           {0: (-1, "must be >= 0"), 1: (-3, "must be > 0")}),
    "CKPT_EXACT_INTERVAL": ((2, 1200, 3, 0.25), lambda: engine.exact_optimal_interval(2, 1200, 3, 0.25),
                            {0: (-1, "must be >= 0"), 1: (0, "must be > 0"), 2: (-1, "must be >= 0"),
                             3: (1.5, "must be a fraction in [0, 1)")}),
    "CKPT_WASTE": ((60, 2, 1200, 10, 3, 0.25), lambda: engine.waste_fraction(60, 2, 1200, 10, 3, 0.25),
                   {0: (0, "must be > 0"), 1: (-1, "must be >= 0"), 2: (0, "must be > 0"), 3: (-10, "must be >= 0"),
                    4: (-3, "must be >= 0"), 5: (-0.5, "must be a fraction in [0, 1)")}),
    "CKPT_WALL_TIME": ((720, 60, 2, 1200, 10, 3, 0.25),
                       lambda: engine.expected_wall_time(720 * 60, 60, 2, 1200, 10, 3, 0.25) / 60,
                       {0: (0, "must be > 0"), 1: (-60, "must be > 0"), 2: (-1, "must be >= 0"), 3: (0, "must be > 0"),
                        4: (-1, "must be >= 0"), 5: (-1, "must be >= 0"), 6: (1, "must be a fraction in [0, 1)")}),
    "CKPT_GPU_HOURS": ((769.5, 1024), lambda: engine.gpu_hours(769.5, 1024),
                       {0: (-1, "must be >= 0"), 1: (0.5, "must be a whole number >= 1")}),
    "CKPT_COST": ((788078, 2.5), lambda: engine.money(788078, 2.5),
                  {0: (-1, "must be >= 0"), 1: (-2.5, "must be >= 0")}),
    "CKPT_DEADLINE_PROB": ((10, 11, 60, 2, 1200, 10, 0, 0, 400, 7),
                           lambda: float(np.mean(mc.simulate_wall_times(600, 60, 2, 1200, 10, 0, 0, 400, 7) <= 660)),
                           {0: (-10, "must be > 0"), 3: (-2, "must be >= 0"),
                            8: (1, "must be a whole number from 2 to 20,000 (the cap keeps one cell from freezing Excel)"),
                            9: (1.5, "must be a whole number >= 0")}),
}
ARG_NAMES = {
    "CKPT_JOB_MTBF": ("node_mtbf_h", "nodes"),
    "CKPT_EFFECTIVE_STALL": ("checkpoint_stall_min", "async_write_min", "async_slowdown_fraction"),
    "CKPT_YOUNG_INTERVAL": ("checkpoint_stall_min", "job_mtbf_min"),
    "CKPT_DALY_INTERVAL": ("checkpoint_stall_min", "job_mtbf_min"),
    "CKPT_EXACT_INTERVAL": ("checkpoint_stall_min", "job_mtbf_min", "async_write_min", "async_slowdown_fraction"),
    "CKPT_WASTE": ("interval_min", "checkpoint_stall_min", "job_mtbf_min", "restart_min", "async_write_min", "async_slowdown_fraction", "model"),
    "CKPT_WALL_TIME": ("useful_training_h", "interval_min", "checkpoint_stall_min", "job_mtbf_min", "restart_min", "async_write_min", "async_slowdown_fraction"),
    "CKPT_GPU_HOURS": ("wall_h", "gpus"),
    "CKPT_COST": ("gpu_hours", "price_per_gpu_hour"),
    "CKPT_DEADLINE_PROB": ("useful_training_h", "deadline_h", "interval_min", "checkpoint_stall_min", "job_mtbf_min", "restart_min",
                           "async_write_min", "async_slowdown_fraction", "runs", "seed", "weibull_shape"),
}
BAD_CELLS = (None, "abc", True, float("nan"))


def _bad_cell_text(name: str, cell) -> str:
    if cell is None:
        return err(name, "must be a number", "a blank cell")
    if isinstance(cell, str):
        return err(name, "must be a number", f"text {cell!r}")
    if isinstance(cell, bool):
        return err(name, "must be a number", "TRUE" if cell else "FALSE")
    return err(name, "must be a finite number", "NaN")


@pytest.mark.parametrize("fname,position", [(f, p) for f, (_, _, rules) in CASES.items() for p in rules])
@pytest.mark.parametrize("container", ["list", "numpy"])
def test_bad_cells_get_their_own_message_and_good_cells_the_engine_value(fname, position, container):
    good_args, reference, rules = CASES[fname]
    func = getattr(U, fname)
    name = ARG_NAMES[fname][position]
    bad_value, rule = rules[position]
    good = good_args[position]
    column = [good, bad_value, *BAD_CELLS, good]
    cells = [[c] for c in column]
    arg = cells if container == "list" else np.array(cells, dtype=object)
    args = list(good_args)
    args[position] = arg
    out = func(*args)
    assert isinstance(out, list) and len(out) == len(column) and all(len(r) == 1 for r in out)
    expected_good = reference()
    assert out[0][0] == approx(expected_good) and out[-1][0] == approx(expected_good)
    assert out[0][0] == func(*good_args)  # a range cell equals the single-cell call
    assert out[1][0] == err(name, rule, f"{bad_value:.10g}")
    for cell, got in zip(BAD_CELLS, out[2:-1]):
        assert got[0] == _bad_cell_text(name, cell)


def test_float_numpy_array_and_row_ranges_keep_their_shape():
    stalls = np.array([[0.5, 2.0, -1.0], [np.nan, 3.0, np.inf]])
    out = U.CKPT_YOUNG_INTERVAL(stalls, 1200)
    assert np.shape(np.array(out, dtype=object)) == (2, 3)
    assert out[0][:2] == [approx(engine.young_interval(0.5, 1200)), approx(engine.young_interval(2.0, 1200))]
    assert out[0][2] == err("checkpoint_stall_min", "must be >= 0", "-1")
    assert out[1][0] == err("checkpoint_stall_min", "must be a finite number", "NaN")
    assert out[1][2] == err("checkpoint_stall_min", "must be a finite number", "infinity")
    row = U.CKPT_YOUNG_INTERVAL([[2, 0.5]], 1200)  # a 1 x 2 range stays a row
    assert row == [[approx(engine.young_interval(2, 1200)), approx(engine.young_interval(0.5, 1200))]]
    flat = U.CKPT_YOUNG_INTERVAL([2, 0.5], 1200)  # a 1-D list (a Python caller) stays 1-D
    assert flat == [approx(69.28203230275509), approx(34.64101615137755)]
    assert U.CKPT_YOUNG_INTERVAL([[2]], [[1200]]) == approx(69.28203230275509)  # a 1 x 1 range is one value


def test_column_against_row_broadcasts_to_a_grid_like_the_engine():
    stalls = [[0.5], [1.0], [2.0]]
    mtbfs = [[600, 1200]]
    out = U.CKPT_EXACT_INTERVAL(stalls, mtbfs)
    expected = engine.exact_optimal_interval(np.array(stalls, float), np.array(mtbfs, float))
    assert np.array(out, dtype=float) == pytest.approx(expected, rel=REL)
    mismatch = U.CKPT_YOUNG_INTERVAL([[1], [2], [3]], [[600], [1200]])
    assert mismatch == ("#CKPT! shapes: ranges must have the same size, or be single cells, or be a row against a "
                        "column (checkpoint_stall_min 3x1, job_mtbf_min 2x1)")


def test_a_row_the_engine_refuses_does_not_blank_out_the_others():
    # the async write must be durable before the next save: W (1 - s) <= T; row 3 breaks it
    writes = [[0.0], [3.0], [200.0], [5.0]]
    out = U.CKPT_WASTE(60, 2, 1200, 10, writes, 0.25)
    for i in (0, 1, 3):
        assert out[i][0] == approx(engine.waste_fraction(60, 2, 1200, 10, writes[i][0], 0.25))
    assert out[2][0] == err("async_write_min", "the background write must be durable before the next save starts: "
                            "W * (1 - slowdown) = 150 must be <= T = 60", "200")
    wall = U.CKPT_WALL_TIME(720, 60, 2, 1200, 10, writes, 0.25)
    assert wall[2][0] == out[2][0] and wall[3][0] == approx(engine.expected_wall_time(43200, 60, 2, 1200, 10, 5, 0.25) / 60)


def test_model_argument_is_checked_per_cell():
    out = U.CKPT_WASTE(60, 2, 1200, 10, 0, 0, [["exact"], ["First-Order"], ["young"], [None], [1]])
    assert out[0][0] == approx(engine.waste_fraction(60, 2, 1200, 10))
    assert out[1][0] == approx(engine.first_order_waste(60, 2, 1200))
    assert out[2][0] == err("model", 'must be "exact" or "first_order"', "text 'young'")
    assert out[3][0] == err("model", 'must be "exact" or "first_order"', "a blank cell")
    assert out[4][0] == err("model", 'must be "exact" or "first_order"', "1")


def test_optional_arguments_omitted_or_single_blank_take_their_default():
    base = U.CKPT_WASTE(60, 2, 1200)
    assert base == approx(engine.waste_fraction(60, 2, 1200))
    assert U.CKPT_WASTE(60, 2, 1200, None, [[None]], "", None) == base
    assert U.CKPT_EXACT_INTERVAL(2, 1200, None, None) == approx(engine.exact_optimal_interval(2, 1200))
    # but a blank inside a range is an error in that cell
    out = U.CKPT_WASTE(60, 2, 1200, [[10], [None]])
    assert out[1][0] == err("restart_min", "must be a number", "a blank cell")
    # and a blank required argument is an error
    assert U.CKPT_YOUNG_INTERVAL(None, 1200) == err("checkpoint_stall_min", "must be a number", "a blank cell")
    assert U.CKPT_YOUNG_INTERVAL("", 1200) == err("checkpoint_stall_min", "must be a number", "a blank cell")


def test_malformed_ranges_give_one_readable_message():
    assert U.CKPT_YOUNG_INTERVAL([[1, 2], [3]], 1200) == \
        "#CKPT! checkpoint_stall_min: a range must be rectangular (every row as long as the first)"
    assert U.CKPT_YOUNG_INTERVAL(np.ones((2, 2, 2)), 1200) == \
        "#CKPT! checkpoint_stall_min: must be a single cell or a range (at most 2 dimensions)"
    assert U.CKPT_YOUNG_INTERVAL([], 1200) == "#CKPT! checkpoint_stall_min: the range is empty"


def test_bool_mixed_with_numbers_is_not_taken_as_one():
    # numpy would read [2, True] as [2, 1]: a TRUE cell must stay an error
    out = U.CKPT_YOUNG_INTERVAL([[2], [True]], 1200)
    assert out[1][0] == err("checkpoint_stall_min", "must be a number", "TRUE")
    assert U.CKPT_JOB_MTBF(np.array([[2560.0]]), np.array([[True]])) == err("nodes", "must be a number", "TRUE")


def test_large_range_equals_the_vectorised_engine():
    rng = np.random.default_rng(5)
    T = rng.uniform(10, 200, 2000)
    out = U.CKPT_WASTE(T.reshape(-1, 1).tolist(), 2, 1200, 10, 3, 0.25)
    assert np.array(out, dtype=float).ravel() == pytest.approx(engine.waste_fraction(T, 2, 1200, 10, 3, 0.25), rel=REL)


CELL = st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.integers(-5, 5),
                 st.floats(allow_nan=True, allow_infinity=True, width=64), st.sampled_from([0.5, 2.0, 60.0, 1200.0]))
ARG = st.one_of(CELL, st.lists(st.lists(CELL, min_size=1, max_size=3).map(tuple), min_size=1, max_size=3)
                .map(lambda rows: [list(r[:min(map(len, rows))]) for r in rows]))


@settings(max_examples=60, deadline=None)
@given(T=ARG, C=ARG, M=ARG, R=ARG, model=st.one_of(CELL, st.sampled_from(["exact", "first_order"])))
def test_any_input_gives_values_or_messages_never_an_exception_or_nan(T, C, M, R, model):
    out = U.CKPT_WASTE(T, C, M, R, 0, 0, model)
    cells = out if isinstance(out, list) else [[out]]
    for row in cells:
        for cell in row if isinstance(row, list) else [row]:
            assert (isinstance(cell, float) and math.isfinite(cell)) or \
                   (isinstance(cell, str) and cell.startswith("#CKPT! ")), cell


# -------------------------------------------------------------------------- cost breakdown

def test_cost_breakdown_single_values_only_and_readable_errors():
    assert U.CKPT_COST_BREAKDOWN(720, [[60], [70]], 2, 1200, 10, 0, 0, 1024, 2.5) == \
        err("interval_min", "must be a single cell (one scenario per call)", "a range of 2 cells")
    assert U.CKPT_COST_BREAKDOWN(720, 60, 2, 1200, 10, 0, 0, 1024, -1) == err("price_per_gpu_hour", "must be >= 0", "-1")
    assert U.CKPT_COST_BREAKDOWN(720, 60, 2, 1200, 10, 200, 0, 1024, 2.5).startswith(
        "#CKPT! async_write_min: the background write must be durable")
    table = U.CKPT_COST_BREAKDOWN([[720]], [[60]], 2, 1200, 10, 0, 0, 1024, 2.5)  # 1 x 1 ranges are fine
    parts = engine.time_breakdown(720 * 60, 60, 2, 1200, 10)
    assert table[5][1] == approx(parts["total"] / 60)
    assert sum(r[3] for r in table[1:5]) == pytest.approx(table[5][3], rel=1e-9)


# -------------------------------------------------------------------------- evaluate

def _rows_from_table(table: pd.DataFrame) -> list[list]:
    """A scenario table as Excel hands it over: a header row, then values with None for blanks."""
    rows = [list(table.columns)]
    for rec in table.itertuples(index=False):
        rows.append([None if isinstance(v, float) and math.isnan(v) else v for v in rec])
    return rows


def test_evaluate_matches_engine_for_every_template():
    table = engine.to_table([files.load_scenario(n) for n in files.list_templates()])
    expected = engine.evaluate(table)
    expected["warnings"] = warnings_text(expected)  # the last column: where a row leaves its models' range
    out = U.CKPT_EVALUATE(_rows_from_table(table))
    header = out[0]
    assert set(header) == set(expected.columns)
    assert header[:len(table.columns)] == list(table.columns)
    assert len(out) == len(table) + 1
    for i, row in enumerate(out[1:]):
        for col, value in zip(header, row):
            want = expected.iloc[i][col]
            if isinstance(want, str):
                assert value == want or (want == "" and value is None)  # Excel hands an empty text cell as None
            elif isinstance(want, float) and math.isnan(want):
                assert value is None  # an optional input not given: a blank cell, never NaN
            else:
                assert value == approx(float(want)), (i, col)


def test_evaluate_bad_row_blank_row_and_dataframe_input():
    sc = files.load_scenario("seed")
    table = engine.to_table([sc, sc.replace(name="fast", checkpoint_stall_min=0.5)])
    rows = _rows_from_table(table)
    col = rows[0].index("checkpoint_stall_min")
    bad = list(rows[1])
    bad[col] = -1
    blank = [None] * len(rows[0])
    text = list(rows[1])
    text[col] = "2 min"
    out = U.CKPT_EVALUATE([rows[0], rows[1], bad, blank, text, rows[2]])
    header = out[0]
    derived = header.index("wall_h")
    expected = engine.evaluate(table)
    assert out[1][derived] == approx(expected.iloc[0]["wall_h"])
    assert out[5][derived] == approx(expected.iloc[1]["wall_h"])
    assert out[2][col] == -1 and out[2][derived] == err("row 2: checkpoint_stall_min", "must be >= 0", "-1")
    assert out[3] == [None] * len(header)
    assert out[4][derived] == err("row 4: checkpoint_stall_min", "must be a number", "text '2 min'")
    # what xlwings' DataFrame converter hands over (blank cells as NaN) gives the same table
    frame = pd.DataFrame(rows[1:], columns=rows[0]).astype({"interval_min": float})
    assert U.CKPT_EVALUATE(frame) == U.CKPT_EVALUATE(rows)


def test_evaluate_whole_table_problems():
    assert U.CKPT_EVALUATE([["nodes_typo", "nodes"], [1, 2]]).startswith("#CKPT! table: unknown column 'nodes_typo'")
    assert U.CKPT_EVALUATE([["nodes", "nodes"], [1, 2]]) == "#CKPT! table: column 'nodes' appears twice"
    assert U.CKPT_EVALUATE([["nodes", None], [1, 2]]) == \
        "#CKPT! table: every header cell must hold a column name (got a blank cell)"
    assert U.CKPT_EVALUATE([["nodes"], [1]]) == \
        "#CKPT! table: column 'checkpoint_stall_min': missing required column"
    assert U.CKPT_EVALUATE([["nodes"]]).startswith("#CKPT! table: must be a range with a header row")
    assert U.CKPT_EVALUATE([["nodes"], [None]]) == "#CKPT! table: no data rows"


# -------------------------------------------------------------------------- deadline Monte Carlo

def test_deadline_probability_is_the_engine_deadline_report():
    sc = engine.Scenario(name="d", checkpoint_stall_min=2, nodes=16, useful_training_h=100, price_per_gpu_hour=2,
                         job_mtbf_h=20, restart_min=10, interval_min=60, deadline_h=108)
    for law, shape in ((mc.FailureLaw.exponential(), 1), (mc.FailureLaw.weibull(0.7), 0.7)):
        report = dl.deadline_report(sc, runs=1500, seed=3, failures=law)
        p = U.CKPT_DEADLINE_PROB(100, 108, 60, 2, 1200, 10, 0, 0, 1500, 3, shape)
        assert p == report["p_finish"]


def test_deadline_range_of_deadlines_shares_one_cached_simulation():
    U.deadline_cache_clear()
    out = U.CKPT_DEADLINE_PROB(50, [[50], [52], [55], [60], [45]], 60, 2, 1200, 10, 0, 0, 1000, 1)
    walls = mc.simulate_wall_times(3000, 60, 2, 1200, 10, 0, 0, 1000, 1)
    for cell, deadline in zip(out[:4], (50, 52, 55, 60)):
        assert cell[0] == np.mean(walls <= deadline * 60)
    assert out[4][0] == err("deadline_h", "must be >= useful_training_h = 50 h: the job needs that much compute even with no "
                            "saves and no failures", "45")
    info = U.deadline_cache_info()
    assert info.misses == 1 and info.currsize == 1
    first = U._simulated_walls(3000.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0, 1000, 1, 1.0, 0.0)
    again = U.CKPT_DEADLINE_PROB(50, 52, 60, 2, 1200, 10, 0, 0, 1000, 1)
    assert again == out[1][0]
    assert U.deadline_cache_info().hits >= info.hits + 2 and U.deadline_cache_info().misses == 1
    assert U._simulated_walls(3000.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0, 1000, 1, 1.0, 0.0) is first
    assert not first.flags.writeable


def test_deadline_runs_cap_per_cell_and_per_call():
    too_many = U.CKPT_DEADLINE_PROB(5, 6, 60, 2, 1200, 10, 0, 0, U.MAX_RUNS + 1)
    assert too_many == err("runs", "must be a whole number from 2 to 20,000 (the cap keeps one cell from freezing "
                           "Excel)", "20001")
    # eleven distinct cases of 20,000 runs: the first ten fit the 200,000-run budget, the last does not
    intervals = [[30 + i] for i in range(11)]
    out = U.CKPT_DEADLINE_PROB(5, 6, intervals, 2, 1200, 10, 0, 0, U.MAX_RUNS, 0)
    assert all(isinstance(r[0], float) and 0 <= r[0] <= 1 for r in out[:10])
    assert out[10][0] == err("runs", "this call already simulates 200,000 runs; the limit is 200,000 per call: "
                             "split the range or lower runs", "20000")


# -------------------------------------------------------------------------- the check sheet

EXCEL_BUILTINS = {"IF", "AND", "ISNUMBER", "ABS", "MAX"}


def _formulas(ws):
    for row in ws.iter_rows():
        for cell in row:
            v = cell.value
            text = getattr(v, "text", v)  # ArrayFormula keeps its text apart
            if isinstance(text, str) and text.startswith("="):
                yield cell.coordinate, text


def test_udf_sheet_formulas_use_existing_names_and_functions():
    built = workbook.build_workbook(files.load_scenario("seed"))
    wb = built.workbook
    triples = add_udf_sheet(wb)
    assert wb.sheetnames.index("Add-in check") == wb.sheetnames.index("Readiness") - 1
    ws = wb["Add-in check"]
    called = set()
    for coord, text in _formulas(ws):
        bare = re.sub(r'"[^"]*"', "", text[1:])
        for func in re.findall(r"([A-Za-z_][\w.]*)\s*\(", bare):
            assert func in EXCEL_BUILTINS or func in U.__all__, (coord, func)
            called.add(func)
        for name in re.findall(r"(?<![\w$])([A-Za-z_]\w*)(?![\w(])", bare):
            if not re.fullmatch(r"[A-Z]{1,3}\d+", name):
                assert name in wb.defined_names, (coord, name)
    assert called >= set(U.__all__) - {"CKPT_JOB_MTBF", "CKPT_EVALUATE"}
    evaluated = engine.evaluate(files.load_scenario("seed")).columns
    assert len(triples) == 10 + 15
    block = ws["A18"].value
    assert block.ref == "A18:D23" and block.text.startswith("=CKPT_COST_BREAKDOWN(")
    for udf_cell, plain_cell, key in triples:
        assert key in evaluated
        row = int(udf_cell[1:])
        if row < 18:
            assert ws[udf_cell].value.startswith("=CKPT_") and udf_cell[0] == "B" and plain_cell == f"C{row}"
        else:  # inside the spilled breakdown, below its header row
            assert "B" <= udf_cell[0] <= "D" and 19 <= row <= 23
        assert ws[plain_cell].value.startswith("=")
    with pytest.raises(ValueError, match="already has a sheet"):
        add_udf_sheet(wb)
    from openpyxl import Workbook
    with pytest.raises(ValueError, match="lacks defined names"):
        add_udf_sheet(Workbook())
    server = workbook.build_workbook(files.load_scenario("seed")).workbook
    add_udf_sheet(server, function_prefix="XLWINGS.")
    assert server["Add-in check"]["B8"].value == "=XLWINGS.CKPT_YOUNG_INTERVAL(effective_stall_min,job_mtbf_min)"


def _name_value(wb, name):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")].value


def _call_like_the_addin(wb, ws, text):
    """Evaluate a CKPT_ call the way Excel with the add-in would: names -> their recalculated values."""
    m = re.search(r"(CKPT_\w+)\(([^()]*)\)", text)
    args = []
    for token in m.group(2).split(","):
        if token.startswith('"'):
            args.append(token.strip('"'))
        elif re.fullmatch(r"\$?[A-Z]+\$?\d+", token):
            args.append(ws[token.replace("$", "")].value)
        else:
            args.append(_name_value(wb, token))
    return getattr(U, m.group(1))(*args)


@pytest.mark.skipif(shutil.which("soffice") is None and shutil.which("libreoffice") is None,
                    reason="LibreOffice (soffice) is not installed")
def test_udf_sheet_udfs_agree_with_the_recalculated_plain_formulas(tmp_path):
    from ckptplan.workbook.recalc import recalculate

    sc = files.load_scenario("power-domains").replace(async_write_min=3.0, async_slowdown_fraction=0.2,
                                                      deadline_h=None)
    built = workbook.build_workbook(sc)
    triples = add_udf_sheet(built.workbook)
    src = tmp_path / "in.xlsx"
    built.workbook.save(src)
    (out,) = recalculate([src], tmp_path / "out")
    values = load_workbook(out, data_only=True)
    ws_values = values["Add-in check"]
    ws_formulas = built.workbook["Add-in check"]
    row = engine.evaluate(sc).iloc[0]
    block = _call_like_the_addin(values, ws_values, ws_formulas["A18"].value.text)
    for udf_cell, plain_cell, key in triples:
        plain = ws_values[plain_cell].value
        assert plain == pytest.approx(row[key], rel=1e-9), key
        assert ws_values[udf_cell].value in ("#NAME?", "#NAME", None)  # LibreOffice has no add-in
        if udf_cell.startswith("B") and int(udf_cell[1:]) < 18:
            got = _call_like_the_addin(values, ws_values, ws_formulas[udf_cell].value)
        else:
            r, c = int(udf_cell[1:]) - 18, ord(udf_cell[0]) - ord("A")
            got = block[r][c]
        assert got == pytest.approx(plain, rel=1e-9), key
    assert ws_values["E6"].value == "no value in B: add-in not loaded, or see the message in B"
    assert ws_values["B42"].value == "no deadline_h on Inputs"


# -------------------------------------------------------------------------- excel-setup command

def _app() -> typer.Typer:
    from ckptplan.cli_excel import register

    app = typer.Typer()

    @app.callback()
    def main() -> None:  # a group, so the command is invoked by name as in the real CLI
        pass

    register(app)
    return app


def test_excel_setup_writes_config_and_starter_workbook(tmp_path):
    folder = tmp_path / "excel"
    res = CliRunner().invoke(_app(), ["excel-setup", str(folder), "--interpreter", r"C:\Py\python.exe"])
    assert res.exit_code == 0, res.output
    conf = (folder / "xlwings.conf").read_bytes()
    assert conf == (b'"UDF MODULES","ckptplan.workbook.udfs;ckptplan.workbook.udfs_setup;ckptplan.workbook.udfs_risk"\r\n'
                    b'"INTERPRETER_WIN","C:\\Py\\python.exe"\r\n')
    wb = load_workbook(folder / "ckptplan-udfs.xlsx")
    assert "Add-in check" in wb.sheetnames
    out = " ".join(res.output.split())
    for step in ("pip install", "xlwings addin install", "workbook.udfs", "Import Functions", ".xlsm",
                 "Trust access to the VBA project object model"):
        assert step in out, step


def test_excel_setup_never_overwrites_without_force(tmp_path):
    (tmp_path / "xlwings.conf").write_text("mine")
    res = CliRunner().invoke(_app(), ["excel-setup", str(tmp_path)])
    assert res.exit_code == 2
    assert "refusing to overwrite" in " ".join(res.output.split())
    assert (tmp_path / "xlwings.conf").read_text() == "mine"
    assert not (tmp_path / "ckptplan-udfs.xlsx").exists()  # nothing written when one target exists
    res = CliRunner().invoke(_app(), ["excel-setup", str(tmp_path), "--force", "--no-workbook"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "xlwings.conf").read_bytes().startswith(
        b'"UDF MODULES","ckptplan.workbook.udfs;ckptplan.workbook.udfs_setup;ckptplan.workbook.udfs_risk"\r\n')
    assert not (tmp_path / "ckptplan-udfs.xlsx").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_excel_setup_bad_template_is_a_readable_error(tmp_path):
    res = CliRunner().invoke(_app(), ["excel-setup", str(tmp_path), "--template", "missing"])
    assert res.exit_code == 2 and "unknown template" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "xlwings.conf").exists()


# -------------------------------------------------------------------------- xlwings Server

def _server_python() -> str | None:
    candidate = os.environ.get("CKPTPLAN_XLWINGS_SERVER_PYTHON") or sys.executable
    probe = subprocess.run([candidate, "-c", "import xlwings_server"], capture_output=True)
    return candidate if probe.returncode == 0 else None


def _license_configured() -> bool:
    if os.environ.get("XLWINGS_LICENSE_KEY"):
        return True
    import xlwings

    conf = Path(xlwings.USER_CONFIG_FILE)
    return conf.is_file() and any(line.startswith('"LICENSE_KEY"') for line in conf.read_text().splitlines())


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def test_xlwings_server_serves_the_same_module_over_http(tmp_path):
    """Start xlwings Server on loopback with custom_functions = `from ckptplan.workbook.udfs import *` and call it as Office.js does."""
    python = _server_python()
    if python is None:
        pytest.skip("xlwings-server is not installed: `pip install xlwings-server`, or point "
                    "CKPTPLAN_XLWINGS_SERVER_PYTHON at a Python that has it")
    if not _license_configured():
        pytest.skip("xlwings Server needs an xlwings license key (importing xlwings.server raises LicenseError "
                    "without one): set XLWINGS_LICENSE_KEY (a paid key, or 'noncommercial' where the PolyForm "
                    "Noncommercial license applies)")
    (tmp_path / "custom_functions").mkdir()
    (tmp_path / "custom_functions" / "__init__.py").write_text("from ckptplan.workbook.udfs import *  # noqa: F401,F403\n")
    (tmp_path / "custom_scripts").mkdir()
    (tmp_path / "custom_scripts" / "__init__.py").write_text("")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "XLWINGS_PROJECT_DIR": str(tmp_path), "PYTHONPATH": str(REPO),
           "XLWINGS_ENABLE_SOCKETIO": "false", "XLWINGS_LOG_LEVEL": "WARNING"}
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([python, "-m", "uvicorn", "xlwings_server.main:main_app", "--host", "127.0.0.1",
                             "--port", str(port)], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/xlwings"
    try:
        meta = None
        for _ in range(120):  # up to 60 s to start
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{base}/custom-functions-meta", timeout=5) as resp:
                    meta = json.loads(resp.read())
                break
            except OSError:
                time.sleep(0.5)
        assert meta is not None, (tmp_path / "server.log").read_text()[-3000:]
        functions = {f["id"]: f for f in meta["functions"]}
        assert set(functions) == set(U.__all__)
        waste = functions["CKPT_WASTE"]
        assert [p["name"] for p in waste["parameters"]] == list(ARG_NAMES["CKPT_WASTE"])
        assert [p.get("optional", False) for p in waste["parameters"]] == [False] * 3 + [True] * 4
        assert waste["parameters"][0]["description"] == U.describe("interval_min")
        assert waste["description"].startswith("Checkpoint waste at an interval.")

        def call(func, *args):
            body = {"client": "Office.js", "func_name": func, "args": list(args),
                    "caller_address": "[Book1.xlsx]Sheet1!B2", "session_id": "test", "culture_info_name": "en-US",
                    "date_format": "m/d/yyyy", "version": "0.37.8", "runtime": "1.4"}
            return _post(f"{base}/custom-functions-call", body)["result"]

        # Office.js sends every argument as a matrix, blanks in ranges as null, omitted optionals as null
        assert call("CKPT_YOUNG_INTERVAL", [[2]], [[1200]]) == [[approx(69.28203230275509)]]
        assert call("CKPT_YOUNG_INTERVAL", [[2], [-1], [None], ["x"]], [[1200]]) == [
            [approx(69.28203230275509)], [err("checkpoint_stall_min", "must be >= 0", "-1")],
            [err("checkpoint_stall_min", "must be a number", "a blank cell")], [err("checkpoint_stall_min", "must be a number", "text 'x'")]]
        assert call("CKPT_WASTE", [[60]], [[2]], [[1200]], [[10]], None, None, [["first_order"]]) == \
            [[approx(engine.first_order_waste(60, 2, 1200))]]
        table = engine.to_table([files.load_scenario("seed")])
        rows = _rows_from_table(table)
        served = call("CKPT_EVALUATE", rows)
        assert served[0] == U.CKPT_EVALUATE(rows)[0]
        wall = served[0].index("wall_h")
        assert served[1][wall] == approx(engine.evaluate(table).iloc[0]["wall_h"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# -------------------------------------------------------------------------- spilled ranges on every host

# good arguments of every element-wise function (CASES, plus the domain function), and a second good
# value per argument for ranges
SPILL_CASES = {name: good for name, (good, _, _) in CASES.items()}
SPILL_CASES["CKPT_JOB_MTBF_DOMAINS"] = (2560, 256, 20000, 16, 0.1, 50000, 64, 90000, 128)
SPILL_NAMES = dict(ARG_NAMES, CKPT_JOB_MTBF_DOMAINS=("node_mtbf_h", "nodes", "domain1_mtbf_h", "domain1_nodes_per_domain",
                                                    "nonfatal_share", "domain2_mtbf_h", "domain2_nodes_per_domain",
                                                    "domain3_mtbf_h", "domain3_nodes_per_domain"))


def _other(name: str, value):
    """A second good value of an argument (whole numbers stay whole, fractions stay below 1)."""
    if isinstance(value, str):
        return "exact" if value == "first_order" else "first_order"
    if name in ("nonfatal_share", "async_slowdown_fraction"):
        return value / 2
    if name in ("deadline_h", "useful_training_h"):
        return value + 0.5
    if name == "weibull_shape":
        return 0.8
    return value * 2 if value else 1


def test_spill_cases_cover_every_elementwise_function():
    import inspect

    assert set(SPILL_CASES) == set(U.__all__) - {"CKPT_COST_BREAKDOWN", "CKPT_EVALUATE"}
    for name, good in SPILL_CASES.items():
        assert len(good) <= len(inspect.signature(getattr(U, name)).parameters) and \
            tuple(inspect.signature(getattr(U, name)).parameters)[:len(good)] == SPILL_NAMES[name][:len(good)]


@pytest.mark.parametrize("fname,position", [(f, p) for f, good in SPILL_CASES.items() for p in range(len(good))])
def test_a_column_gives_a_column_a_row_a_row_and_each_cell_its_single_cell_value(fname, position):
    func = getattr(U, fname)
    good = list(SPILL_CASES[fname])
    name = SPILL_NAMES[fname][position]
    values = [good[position], _other(name, good[position]), good[position]]
    singles = []
    for v in values:
        args = list(good)
        args[position] = v
        singles.append(func(*args))
    assert all(isinstance(s, float) for s in singles), singles
    for shaped_arg, expect in (([[v] for v in values], [[s] for s in singles]),      # a column of scenarios
                               ([values], [singles]),                                # a row
                               (np.array([[v] for v in values], dtype=object), [[s] for s in singles])):
        args = list(good)
        args[position] = shaped_arg
        assert func(*args) == expect, (fname, name)
    args = list(good)
    args[position] = [[values[1]]]
    assert func(*args) == singles[1]                                                 # 1 x 1 range: one value


def test_a_column_of_scenarios_against_a_row_of_choices_gives_the_grid():
    out = U.CKPT_WASTE([[45], [60], [90]], 2, [[600, 1200]], 10, 0, 0, [["exact", "first_order"]])
    assert np.shape(np.array(out, dtype=object)) == (3, 2)
    assert out[1][0] == U.CKPT_WASTE(60, 2, 600, 10, 0, 0, "exact")
    assert out[2][1] == U.CKPT_WASTE(90, 2, 1200, 10, 0, 0, "first_order")


def test_table_functions_give_a_header_row_and_blank_rows_stay_blank():
    sc = files.load_scenario("seed")
    rows = _rows_from_table(engine.to_table([sc, sc.replace(name="b", checkpoint_stall_min=1.0)]))
    width = len(rows[0])
    blank, formula_blank = [None] * width, [""] * width        # an empty row; a row of formulas giving ""
    out = U.CKPT_EVALUATE([rows[0], blank, rows[1], formula_blank, rows[2], blank])
    header = out[0]
    assert header[:width] == rows[0] and len(header) > width and all(isinstance(h, str) for h in header)
    assert len(out) == 6 and all(len(r) == len(header) for r in out)
    for i in (1, 3, 5):
        assert out[i] == [None] * len(header)                   # blanks stay blank (never 0, never NaN)
    for row in out[1:]:
        for cell in row:
            assert cell is None or isinstance(cell, str) or math.isfinite(cell)
    evaluated = engine.evaluate(engine.to_table([sc]))
    evaluated["warnings"] = warnings_text(evaluated)
    evaluated = evaluated.iloc[0]
    empty = [c for c in header if isinstance(evaluated[c], float) and math.isnan(evaluated[c])]
    assert "runs_per_month" in empty and all(out[2][header.index(c)] is None for c in empty)  # not given: blank
    table = U.CKPT_COST_BREAKDOWN(720, 60, 2, 1200, 10, 0, 0, 1024, 2.5)
    assert table[0] == U.BREAKDOWN_HEADER and [r[0] for r in table[1:]] == list(U.BREAKDOWN_ROWS)
    assert all(len(r) == len(U.BREAKDOWN_HEADER) for r in table)
