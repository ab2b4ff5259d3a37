"""The CKPT_ functions never freeze Excel: bad cells cost what good ones do, calls have a cell budget,
and no input (however odd) makes an exception escape.

Correctness only, never timings: the cost is asserted by counting engine calls (a refused cell must
not cost extra engine calls) and by the messages being built once per distinct value (the same
string object in every cell that shows it). Every test runs in well under a second or two.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from ckptplan import engine
from ckptplan.engine import scenario as engine_scenario
from ckptplan.workbook import cells
from ckptplan.workbook import udfs as U
from ckptplan.workbook import udfs_risk as R
from ckptplan.workbook import udfs_setup as S
from ckptplan.workbook.cells import MAX_UDF_CELLS, budget_text, elementwise, engine_message, error_text

REL = 1e-12
N = 10_000


def err(name: str, rule: str, got: str) -> str:
    return f"#CKPT! {name}: {rule} (got {got})"


def flat(result) -> list:
    if not isinstance(result, list):
        return [result]
    return [c for row in result for c in (row if isinstance(row, list) else [row])]


def values_or_messages(result) -> None:
    """Every cell a finite float or a short readable #CKPT! message (never an "unexpected" one)."""
    for cell in flat(result):
        assert (isinstance(cell, float) and math.isfinite(cell)) or (
            isinstance(cell, str) and cell.startswith("#CKPT! ") and "unexpected" not in cell and len(cell) <= 255), cell


class Counting:
    """Wraps an engine function and counts its calls."""

    def __init__(self, f):
        self.f, self.calls = f, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.f(*args, **kwargs)


# -------------------------------------------------------------------------- half the cells invalid

def test_a_10k_range_half_invalid_completes_with_the_rule_text_in_each_bad_cell(monkeypatch):
    rng = np.random.default_rng(1)
    T = rng.uniform(10, 300, N)
    bad_values = (-1.0, 0.0, "x", None, True, math.nan, math.inf, "#N/A")
    column = [[bad_values[i // 2 % len(bad_values)]] if i % 2 else [float(T[i])] for i in range(N)]
    waste = Counting(engine.waste_fraction)
    monkeypatch.setattr(engine, "waste_fraction", waste)
    out = U.CKPT_WASTE(column, 2, 1200, 10, 0, 0)
    assert waste.calls == 1  # the bad cells cost no engine call
    expected = engine.waste_fraction(T[0::2], 2, 1200, 10)
    assert np.array([r[0] for r in out[0::2]]) == pytest.approx(expected, rel=REL)
    texts = {-1.0: err("interval_min", "must be > 0", "-1"), 0.0: err("interval_min", "must be > 0", "0"),
             "x": err("interval_min", "must be a number", "text 'x'"),
             None: err("interval_min", "must be a number", "a blank cell"),
             True: err("interval_min", "must be a number", "TRUE"),
             "#N/A": err("interval_min", "must be a number", "the Excel error #N/A")}
    for i in range(1, N, 2):
        bad = bad_values[i // 2 % len(bad_values)]
        if isinstance(bad, float) and not math.isfinite(bad):
            want = err("interval_min", "must be a finite number", "NaN" if math.isnan(bad) else "infinity")
        else:
            want = texts[bad]
        assert out[i][0] == want, (i, bad)
    # one message per distinct (rule, value), the same string in every cell that shows it
    negative = [out[i][0] for i in range(1, N, 2) if bad_values[i // 2 % len(bad_values)] == -1.0]
    assert len(negative) > 100 and all(m is negative[0] for m in negative)


def test_half_the_rows_refused_by_the_engine_cost_no_extra_engine_call(monkeypatch):
    # an async write that is never durable before the next save: a rule spanning three arguments
    writes = [[500.0] if i % 2 else [float(i % 7)] for i in range(N)]
    waste = Counting(engine.waste_fraction)
    monkeypatch.setattr(engine, "waste_fraction", waste)
    out = U.CKPT_WASTE(60, 2, 1200, 10, writes, 0.25)
    assert waste.calls == 1
    monkeypatch.undo()
    late = U.CKPT_WASTE(60, 2, 1200, 10, 500, 0.25)  # the message a single cell gets (the engine's own)
    assert late.startswith("#CKPT! async_write_min: the background write must be durable")
    assert all(out[i][0] == late for i in range(1, N, 2))
    assert out[4][0] == pytest.approx(engine.waste_fraction(60, 2, 1200, 10, 4, 0.25), rel=REL)
    # the first-order model has no such rule: those cells are computed
    mixed = U.CKPT_WASTE(60, 2, 1200, 10, [[500.0], [500.0]], 0.25, [["exact"], ["first_order"]])
    assert mixed[0][0] == late and mixed[1][0] == pytest.approx(
        engine.first_order_waste(60, engine.effective_stall(2, 500, 0.25), 1200), rel=REL)


def test_screens_give_exactly_the_engines_messages():
    """The per-cell screens restate engine rules; their messages must stay the engine's."""
    names = U._WASTE_NAMES
    for T, W, s in ((60.0, 200.0, 0.25), (10.0, 11.0, 0.0), (30.5, 1e6, 0.999)):
        with pytest.raises(engine.InputError) as refused:
            engine.waste_fraction(T, 2, 1200, 10, W, s)
        screened = U._late_writes(np.array([T]), np.array([W]), np.array([s]))
        assert screened[0] == engine_message(refused.value, names)
        assert U.CKPT_WALL_TIME(720, T, 2, 1200, 10, W, s) == screened[0]
    for T, M in ((60.0, 0.05), (600.0, 0.6)):  # the wall time overflows
        with pytest.raises(engine.InputError) as refused:
            engine.expected_wall_time(720 * 60.0, T, 2, M, 10)
        screened = U._wall_screen(*(np.array([v]) for v in (720.0, T, 2.0, M, 10.0, 0.0, 0.0, 0.0)))
        assert screened[0] == engine_message(refused.value, names)


def test_wall_time_overflow_and_late_writes_in_half_a_range(monkeypatch):
    mtbf = [[0.05] if i % 3 == 1 else [1200.0] for i in range(3000)]
    writes = [[500.0] if i % 3 == 2 else [0.0] for i in range(3000)]
    wall = Counting(engine.expected_wall_time)
    monkeypatch.setattr(engine, "expected_wall_time", wall)
    out = U.CKPT_WALL_TIME(720, 60, 2, mtbf, 10, writes, 0.25)
    assert wall.calls == 1
    monkeypatch.undo()
    assert out[0][0] == U.CKPT_WALL_TIME(720, 60, 2, 1200, 10, 0, 0.25)
    assert out[1][0] == U.CKPT_WALL_TIME(720, 60, 2, 0.05, 10, 0, 0.25)
    assert "expected wall time overflows" in out[1][0] and out[1][0].startswith("#CKPT! job_mtbf_min:")
    assert out[2][0] == U.CKPT_WALL_TIME(720, 60, 2, 1200, 10, 500, 0.25)


def test_half_the_domain_rows_without_their_size():
    per = [[16] if i % 2 else [None] for i in range(N)]
    out = U.CKPT_JOB_MTBF_DOMAINS(2560, 256, [[20000.0]] * N, per)
    missing = err("domain1_nodes_per_domain", "is required when domain1_mtbf_h is given", "a blank cell")
    assert all(out[i][0] == missing for i in range(0, N, 2))
    assert out[1][0] == pytest.approx(engine.job_mtbf_with_domains(2560, 256, [engine.FailureDomain("d", 20000, 16)]))


def test_deadlines_half_before_the_work_and_one_simulation_per_case():
    U.deadline_cache_clear()
    deadlines = [[4.0] if i % 2 else [6.0 + (i % 5)] for i in range(N)]
    out = U.CKPT_DEADLINE_PROB(5, deadlines, 60, 2, 1200, 10, 0, 0, 200, 1)
    early = err("deadline_h", "must be >= useful_training_h = 5 h: the job needs that much compute even with no saves "
                "and no failures", "4")
    assert all(out[i][0] == early for i in range(1, N, 2))
    walls = U._simulated_walls(300.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0, 200, 1, 1.0, 0.0)
    assert out[0][0] == np.mean(walls <= 6 * 60) and out[2][0] == np.mean(walls <= 8 * 60)
    assert U.deadline_cache_info().misses == 1


def test_deadline_distinct_cases_are_capped_per_call(monkeypatch):
    monkeypatch.setattr(U, "MAX_CASES_PER_CALL", 3)
    out = U.CKPT_DEADLINE_PROB(5, 6, [[30.0 + i] for i in range(5)] + [[30.0]], 2, 1200, 10, 0, 0, 20, 0)
    assert all(isinstance(r[0], float) for r in out[:3]) and out[5][0] == out[0][0]  # a case already run is free
    assert out[3][0] == out[4][0] == ("#CKPT! range: this call already simulates 3 distinct cases; the limit is 3 per "
                                      "call: split the range")


def test_evaluate_with_half_the_rows_refused_calls_the_engine_once(monkeypatch):
    sc = engine.Scenario(name="s", checkpoint_stall_min=2, nodes=16, useful_training_h=100, price_per_gpu_hour=2,
                         node_mtbf_h=2560, restart_min=10)
    table = engine.to_table([sc])
    header = list(table.columns)
    row = [None if isinstance(v, float) and math.isnan(v) else v for v in table.iloc[0].tolist()]
    stall = header.index("checkpoint_stall_min")
    rows = [header]
    for i in range(2000):
        r = list(row)
        r[stall] = (-1.0, "2 min", None, 2.0)[i % 4]
        rows.append(r)
    engine_scenario.derived_columns()  # cached once per process (it evaluates a probe table)
    evaluate = Counting(engine_scenario.evaluate)
    monkeypatch.setattr(engine_scenario, "evaluate", evaluate)
    out = U.CKPT_EVALUATE(rows)
    assert evaluate.calls == 1
    wall = out[0].index("wall_h")
    assert out[1][wall] == err("row 1: checkpoint_stall_min", "must be >= 0", "-1") and out[1][stall] == -1.0
    assert out[2][wall] == err("row 2: checkpoint_stall_min", "must be a number", "text '2 min'")
    assert out[3][wall] == err("row 3: checkpoint_stall_min", "is required", "a blank cell")
    monkeypatch.undo()
    assert out[4][wall] == pytest.approx(engine.evaluate(table).iloc[0]["wall_h"], rel=REL)
    assert out[4] == U.CKPT_EVALUATE([header, rows[4]])[1]


# -------------------------------------------------------------------------- the cell budget

def test_a_range_beyond_the_budget_gets_one_message_instead_of_a_computation():
    over = MAX_UDF_CELLS + 1
    assert U.CKPT_YOUNG_INTERVAL([[2.0]] * over, 1200) == budget_text("checkpoint_stall_min", over)
    assert U.CKPT_YOUNG_INTERVAL([2.0] * over, 1200) == budget_text("checkpoint_stall_min", over)
    assert U.CKPT_YOUNG_INTERVAL(np.full((over, 1), 2.0), 1200) == budget_text("checkpoint_stall_min", over)
    assert U.CKPT_YOUNG_INTERVAL([["x"]] * over, 1200) == budget_text("checkpoint_stall_min", over)
    assert U.CKPT_WASTE(60, 2, 1200, 10, 0, 0, [["exact"]] * over) == budget_text("model", over)
    # a column against a row broadcasts to a grid bigger than the budget: refused before broadcasting
    column, row = [[2.0]] * 1000, [[1200.0] * 1000]
    assert U.CKPT_YOUNG_INTERVAL(column, row) == budget_text("result", 1_000_000)
    message = budget_text("checkpoint_stall_min", over)
    assert message.startswith("#CKPT! checkpoint_stall_min: 250,001 cells is more than one call takes (250,000)")
    assert "split the range" in message and len(message) < 255
    assert "250,000 cells per argument and per result" in U.CKPT_WASTE.__doc__  # documented in the description


def test_a_range_at_the_budget_is_computed():
    out = U.CKPT_YOUNG_INTERVAL([[2.0]] * MAX_UDF_CELLS, 1200)
    assert len(out) == MAX_UDF_CELLS and out[-1][0] == pytest.approx(engine.young_interval(2, 1200), rel=REL)


def test_evaluate_tables_beyond_the_budget():
    header = ["checkpoint_stall_min", "nodes", "node_mtbf_h", "useful_training_h", "price_per_gpu_hour"]
    width = len(header) + len([c for c in engine_scenario.derived_columns() if c not in header]) + 1
    rows = [header] + [[2.0, 16, 2560.0, 100.0, 2.0]] * (MAX_UDF_CELLS // width)  # in: 5 columns; out: ~40
    assert U.CKPT_EVALUATE(rows) == budget_text("result", len(rows) * width)
    big = pd.DataFrame(np.ones((MAX_UDF_CELLS // 5 + 1, 5)), columns=header)
    assert U.CKPT_EVALUATE(big) == budget_text("table", big.size)
    assert U.CKPT_EVALUATE([header] + [[2.0, 16, 2560.0, 100.0, 2.0]] * 1000)[1000][0] == 2.0


# -------------------------------------------------------------------------- odd ranges

def test_ragged_nested_and_deep_ranges_give_one_readable_message():
    rectangular = "#CKPT! checkpoint_stall_min: a range must be rectangular (every row as long as the first)"
    assert U.CKPT_YOUNG_INTERVAL([[1.0, 2.0], [3.0]], 1200) == rectangular
    assert U.CKPT_YOUNG_INTERVAL([[1.0], [2.0, 3.0]], 1200) == rectangular
    assert U.CKPT_YOUNG_INTERVAL([[1.0], [[2.0]]], 1200) == rectangular          # a list inside a cell
    assert U.CKPT_YOUNG_INTERVAL([1.0, [2.0]], 1200) == rectangular
    assert U.CKPT_YOUNG_INTERVAL([[1.0], np.array([2.0, 3.0])], 1200) == rectangular
    assert U.CKPT_YOUNG_INTERVAL([[[1.0]], [[2.0]]], 1200) == \
        "#CKPT! checkpoint_stall_min: must be a single cell or a range (at most 2 dimensions)"
    assert U.CKPT_YOUNG_INTERVAL([[]], 1200) == "#CKPT! checkpoint_stall_min: the range is empty"
    assert U.CKPT_YOUNG_INTERVAL([], 1200) == "#CKPT! checkpoint_stall_min: the range is empty"
    assert U.CKPT_WASTE([[1.0, 2.0], [3.0]], 2, 1200, 0, 0, 0, [["exact"], ["x", "y"]]) == \
        "#CKPT! interval_min: a range must be rectangular (every row as long as the first)"
    assert U.CKPT_WASTE(60, 2, 1200, 0, 0, 0, [["exact"], ["first_order", "exact"]]).startswith("#CKPT! model: a range")


def test_huge_strings_are_cut_in_the_message():
    huge = "y" * 1_000_000
    out = U.CKPT_YOUNG_INTERVAL([[huge], [2.0]], 1200)
    assert out[0][0] == err("checkpoint_stall_min", "must be a number", "text '" + "y" * 27 + "...'")
    assert U.CKPT_WASTE(60, 2, 1200, 0, 0, 0, huge) == err("model", 'must be "exact" or "first_order"',
                                                         "text '" + "y" * 27 + "...'")
    assert len(U.CKPT_EVALUATE([[huge], [1.0]])) < 300


def test_nan_infinity_bools_and_numpy_scalars_cell_by_cell():
    column = [[math.nan], [math.inf], [-math.inf], [True], [False], [np.True_], [np.float32(2.0)], [np.int64(3)],
              [np.float64(0.5)], [np.float32("nan")], [np.uint8(1)], [Fraction(1, 2)], [Decimal("2.5")], [10 ** 400],
              [-(10 ** 400)], [1j], [b"2"], [{"a": 1}], [np.datetime64("2020-01-01")], [pd.NA], [2]]
    out = U.CKPT_YOUNG_INTERVAL(column, 1200)
    name = "checkpoint_stall_min"
    young = lambda c: pytest.approx(engine.young_interval(c, 1200), rel=REL)
    assert [r[0] for r in out[:6]] == [
        err(name, "must be a finite number", "NaN"), err(name, "must be a finite number", "infinity"),
        err(name, "must be a finite number", "-infinity"), err(name, "must be a number", "TRUE"),
        err(name, "must be a number", "FALSE"), err(name, "must be a number", "TRUE")]
    assert out[6][0] == young(2.0) and out[7][0] == young(3.0) and out[8][0] == young(0.5)
    assert out[9][0] == err(name, "must be a finite number", "NaN")
    assert out[10][0] == young(1.0) and out[11][0] == young(0.5) and out[12][0] == young(2.5)
    assert out[13][0] == err(name, "must be a finite number", "infinity")
    assert out[14][0] == err(name, "must be a finite number", "-infinity")
    assert out[15][0] == err(name, "must be a number", "a complex")
    assert out[16][0] == err(name, "must be a number", "a bytes")
    assert out[17][0] == err(name, "must be a number", "a dict")
    assert out[18][0] == err(name, "must be a number", "a datetime64")
    assert out[19][0] == err(name, "must be a number", "a NAType")
    assert out[20][0] == young(2)
    # the same cells alone, as single-cell arguments
    for cell, row in zip(column, out):
        assert U.CKPT_YOUNG_INTERVAL(cell[0], 1200) == row[0], cell
    values_or_messages(out)


def test_excel_error_values_as_xlwings_hands_them_over():
    for code in sorted(cells.EXCEL_ERRORS):
        assert U.CKPT_JOB_MTBF(code, 128) == err("node_mtbf_h", "must be a number", f"the Excel error {code}")
    # desktop xlwings turns an error cell into None: a blank cell
    assert U.CKPT_JOB_MTBF([[None], [2560.0]], 128)[0][0] == err("node_mtbf_h", "must be a number", "a blank cell")
    # text that only looks like an error stays text
    assert U.CKPT_JOB_MTBF("#N/A ", 128) == err("node_mtbf_h", "must be a number", "text '#N/A '")


def test_shapes_one_and_two_dimensional():
    young = lambda c: engine.young_interval(c, 1200)
    assert U.CKPT_YOUNG_INTERVAL([2.0, 0.5], 1200) == [young(2.0), young(0.5)]                 # 1-D stays 1-D
    assert U.CKPT_YOUNG_INTERVAL(np.array([2.0, 0.5]), 1200) == [young(2.0), young(0.5)]
    assert U.CKPT_YOUNG_INTERVAL([[2.0, 0.5]], 1200) == [[young(2.0), young(0.5)]]              # a row
    assert U.CKPT_YOUNG_INTERVAL([[2.0], [0.5]], 1200) == [[young(2.0)], [young(0.5)]]          # a column
    assert U.CKPT_YOUNG_INTERVAL([(2.0,), (0.5,)], 1200) == [[young(2.0)], [young(0.5)]]        # rows as tuples
    assert U.CKPT_YOUNG_INTERVAL(pd.Series([2.0, 0.5]), 1200) == [young(2.0), young(0.5)]
    assert U.CKPT_YOUNG_INTERVAL(pd.DataFrame({"a": [2.0, 0.5]}), 1200) == [[young(2.0)], [young(0.5)]]
    grid = U.CKPT_YOUNG_INTERVAL([[2.0], [0.5]], [[600.0, 1200.0, "x"]])
    assert np.shape(np.array(grid, dtype=object)) == (2, 3)
    assert grid[1][1] == young(0.5) and grid[0][2] == err("job_mtbf_min", "must be a number", "text 'x'")
    assert U.CKPT_YOUNG_INTERVAL([2.0, 0.5], [[600.0], [1200.0]]) == [                        # 1-D against a column
        [engine.young_interval(2.0, 600), engine.young_interval(0.5, 600)], [young(2.0), young(0.5)]]
    assert U.CKPT_YOUNG_INTERVAL([2.0, 0.5, 1.0], [600.0, 1200.0]).startswith("#CKPT! shapes:")
    assert U.CKPT_YOUNG_INTERVAL([[2.0]], 1200) == young(2.0)                                  # 1 x 1: one value
    assert U.CKPT_YOUNG_INTERVAL(np.array([["2"], ["x"]]), 1200) == [
        [err("checkpoint_stall_min", "must be a number", "text '2'")],
        [err("checkpoint_stall_min", "must be a number", "text 'x'")]]
    assert U.CKPT_YOUNG_INTERVAL(np.array([[True], [False]]), 1200)[0][0] == \
        err("checkpoint_stall_min", "must be a number", "TRUE")


ODD = [None, "", "x", "#N/A", True, np.True_, math.nan, math.inf, -1.0, 0.0, 1.0, 10 ** 400, np.float32(2.0), 1j,
       [1.0], [[1.0]], [[1.0], [2.0, 3.0]], [[None, "x"], [True, 2.0]], np.array([[1.0, np.nan]]),
       np.array([["a"]]), "y" * 100_000, {"a": 1}, object()]


@pytest.mark.parametrize("name", [n for n in U.__all__ if n != "CKPT_EVALUATE"])
def test_no_odd_value_in_any_argument_makes_an_exception_escape(name):
    import inspect

    params = list(inspect.signature(getattr(U, name)).parameters.values())
    good = {"domain1_mtbf_h": None, "domain1_nodes_per_domain": None, "model": "exact", "runs": 20, "seed": 1,
            "deadline_h": 12, "useful_training_h": 10, "nonfatal_share": 0.1, "async_slowdown_fraction": 0.25,
            "weibull_shape": 1.0, "job_mtbf_min": 1200.0, "checkpoint_stall_min": 2.0, "async_write_min": 3.0,
            "restart_min": 10.0, "interval_min": 60.0}
    base = [good.get(p.name, 2.0) for p in params]
    for i in range(len(params)):
        for odd in ODD:
            args = list(base)
            args[i] = odd
            out = getattr(U, name)(*args)
            if name == "CKPT_COST_BREAKDOWN" and isinstance(out, list):
                continue
            values_or_messages(out)


def test_evaluate_odd_tables():
    for table in ([["nodes", "nodes"], [1, 2]], [[None]], [["x" * 10_000], [1]], [[1.0, 2.0]], "x", None, 5.0,
                  [["checkpoint_stall_min"], [[1.0]]], np.ones((3, 3, 3)), pd.DataFrame()):
        out = U.CKPT_EVALUATE(table)
        assert isinstance(out, str) and out.startswith("#CKPT! ") and "unexpected" not in out and len(out) <= 255, out


# -------------------------------------------------------------------------- refusals no screen foresaw

def test_unforeseen_refusals_are_isolated_within_a_bounded_number_of_engine_calls():
    values = np.arange(2000, dtype=float)
    spec = ("x", values, cells._no_errors(values.shape))
    calls = []

    def compute(x):  # refuses every call holding a multiple of 500 (as an engine rule would)
        calls.append(x.size)
        hit = x % 500 == 0
        if hit.any():
            raise engine.InputError("x", float(x[hit][0]), "must not be a multiple of 500")
        return x * 2

    out = elementwise([spec], compute, {})
    assert [out[i] for i in (0, 500, 1500)] == [err("x", "must not be a multiple of 500", str(i)) for i in (0, 500, 1500)]
    assert out[1] == 2.0 and out[1999] == 3998.0
    assert len(calls) <= 1 + cells.MAX_RETRIES

    calls.clear()
    def odd_refused(x):  # every odd cell refused: too many to isolate one by one
        calls.append(x.size)
        if (x % 2 == 1).any():
            raise engine.InputError("x", 1.0, "refused")
        return x * 2

    every_other = elementwise([spec], odd_refused, {})
    assert len(calls) <= 1 + cells.MAX_RETRIES
    assert every_other[0] == 0.0 or every_other[0].startswith("#CKPT! ")
    assert all(isinstance(c, float) or c.startswith("#CKPT! x: refused") or
               c.startswith("#CKPT! range: the engine refused too many cells") for c in every_other)
    assert any(isinstance(c, str) and c.startswith("#CKPT! range:") for c in every_other)


def test_messages_are_built_once_per_distinct_value():
    for odd in ([1], {"a": 1}, None):  # with or without an unhashable cell among them
        texts = cells.messages("a", "must be a number", ["x", "x", True, 1, odd, "x"])
        assert texts[0] == texts[1] == texts[5] == error_text("a", "must be a number", "text 'x'")
        assert texts[0] is texts[1] or odd is not None
        assert texts[2] == error_text("a", "must be a number", "TRUE")
        assert texts[3] == error_text("a", "must be a number", "1")
    zero = cells._number_messages("a", "must be > 0", np.array([0.0, -0.0, 0.0, -1.0]))
    assert list(zero) == [error_text("a", "must be > 0", v) for v in ("0", "-0", "0", "-1")] and zero[0] is zero[2]


#: a plan the setup and risk functions can read (names and values as two columns), so each odd value reaches the
#: argument it is put in rather than stopping at the names
_PLAN_NAMES = [["name"], ["nodes"], ["gpus_per_node"], ["node_mtbf_h"], ["checkpoint_stall_min"], ["restart_min"],
               ["useful_training_h"], ["price_per_gpu_hour"], ["preemptions_per_h"]]
_PLAN_VALUES = [["odd"], [64], [8], [2560.0], [2.0], [10.0], [200.0], [2.0], [0.01]]
_RISK_GOOD = {"names": _PLAN_NAMES, "values": _PLAN_VALUES, "inputs": [["node_mtbf_h"]], "lows": [[1000.0]],
              "highs": [[4000.0]], "field": "node_mtbf_h", "lo": 1000.0, "hi": 4000.0, "solve": "checkpoint_stall_min",
              "goal": "goodput", "target": 0.9, "starts_h": [[0.0], [24.0]],
              "rate_factors": [[3.0], [1.0]], "design": [[None]] * 3 + [[5000.0]] + [[None]] * 5}


@pytest.mark.parametrize("name", [f"{m.__name__.rsplit('.', 1)[1]}.{n}" for m in (S, R) for n in m.__all__])
def test_no_odd_value_in_any_argument_of_the_setup_and_risk_functions_escapes(name):
    """issue 25: every UDF with every Excel value type: an odd value in any one argument (the others good) gives
    finite numbers or a short #CKPT! message naming what is wrong, never an exception or an 'unexpected' one."""
    import inspect

    module, fn = name.split(".")
    func = getattr(S if module == "udfs_setup" else R, fn)
    params = list(inspect.signature(func).parameters.values())
    base = [_RISK_GOOD.get(p.name, p.default if p.default is not inspect.Parameter.empty else 2.0) for p in params]
    for i in range(len(params)):
        for odd in ODD:
            args = list(base)
            args[i] = odd
            out = func(*args)
            if isinstance(out, list):   # a spilled table: labels and names beside finite numbers, blanks allowed
                for cell in flat(out):
                    assert cell is None or (isinstance(cell, float) and math.isfinite(cell)) or (
                        isinstance(cell, str) and "unexpected" not in cell and len(cell) <= 255), (args, cell)
            else:
                values_or_messages(out)
