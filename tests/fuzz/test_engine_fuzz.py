"""Fuzz of the engine's public API (area "engine"): every call gives a finite answer of the right kind
and shape, or an InputError whose field names one of its arguments. Never another exception (TypeError,
KeyError, OverflowError, ZeroDivisionError, MemoryError...), never a silent inf or NaN.

Hypothesis draws each argument from its valid value or from hostile ones (huge, tiny, subnormal, NaN,
inf, Python ints beyond float range, strings, None, bools, dicts, ragged lists, complex, Decimal,
numpy dates, masked arrays, Series on other indexes). Derandomized: the same examples on every run.
"""

from __future__ import annotations

import math
import re
import time
import tracemalloc
import warnings
from typing import Any, Callable

import corpus
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckptplan import engine, files
from ckptplan.engine import cost, deadline, finite, montecarlo, reliability, sweep, validity, waste
from ckptplan.engine import wall_distribution as wd
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.errors import InputError

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SEED = files.load_scenario("seed")

# ------------------------------------------------------------------------------ strategies

_floats = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
_ints = st.integers(min_value=-(10**400), max_value=10**400)
_index_a = pd.Index(["a", "b", "c"])
_index_b = pd.Index(["a", "c", "b"])


@st.composite
def _arrays(draw: Any, elements: Any) -> Any:
    values = draw(st.lists(elements, min_size=0, max_size=3))
    kind = draw(st.sampled_from(["list", "array", "series", "series_other", "column"]))
    if kind == "list":
        return values
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return values
    if kind == "array":
        return arr
    if kind == "column":
        return arr.reshape(-1, 1)
    index = (_index_a if kind == "series" else _index_b)[: len(arr)] if len(arr) <= 3 else None
    return pd.Series(arr, index=index)


def hostile() -> Any:
    """Any value a caller may pass where the engine wants a number."""
    return st.one_of(st.sampled_from(corpus.HOSTILE_NUMBERS), _floats, _ints,
                     _arrays(st.one_of(_floats, st.sampled_from([1.0, 2.0, 60.0, 1e6])))
                     )


def argument(good: Any, bad: Any = None) -> Any:
    """The valid value most of the time, else a hostile one (``bad``: a narrower strategy)."""
    return st.one_of(st.just(good), st.just(good), bad if bad is not None else hostile())


# ----------------------------------------------------------------------- the outcome check

def _field_ok(err: InputError, names: set[str]) -> bool:
    field = re.sub(r"^row [^:]+: ", "", str(err.field))  # a table's errors name the row, then the field
    base = re.split(r"[.\[ ]", field)[0]
    return base in names or err.field == "shapes"


def _finite(x: Any) -> bool:
    if isinstance(x, dict):
        return all(_finite(v) for v in x.values())
    if isinstance(x, (tuple, list)):
        return all(_finite(v) for v in x)
    if isinstance(x, (bool, np.bool_, str)) or x is None:
        return True
    if isinstance(x, pd.Series):
        x = x.to_numpy()
    a = np.asarray(x)
    if a.dtype.kind == "b":
        return True
    return bool(np.isfinite(a.astype(float)).all())


def _kind_ok(result: Any, args: list) -> bool:
    """float for all-scalar plain numbers; a Series for a Series argument (its index); else an ndarray."""
    if isinstance(result, tuple):
        return all(_kind_ok(r, args) for r in result)
    plain = [a for a in args if isinstance(a, (float, int, np.floating, np.integer, np.ndarray, pd.Series))
             and not isinstance(a, (bool, np.bool_))]
    if len(plain) != len(args):
        return True  # Fractions, lists...: only finiteness is checked
    values = list(result.values()) if isinstance(result, dict) else [result]
    series = next((a for a in args if isinstance(a, pd.Series)), None)
    for v in values:
        if isinstance(v, (bool, np.bool_)):
            continue
        if series is not None and np.ndim(v) == 1 and len(v) == len(series):
            if not (isinstance(v, pd.Series) and v.index.equals(series.index)):
                return False
        elif all(np.ndim(a) == 0 for a in args):
            if not isinstance(v, (float, bool)):
                return False
    return True


def call(fn: Callable, args: list, names: set[str], kwargs: dict | None = None, kind: bool = True) -> Any:
    """Call ``fn``; assert the outcome contract; return the result (None after a refusal).

    ``kind``: also check the result's kind against the arguments' (off for the test's own wrappers).
    """
    corpus.count("engine")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args, **(kwargs or {}))
        except InputError as err:
            assert _field_ok(err, names), f"{fn.__name__}{tuple(args)!r}: InputError names {err.field!r}, not an argument"
            assert str(err).startswith(str(err.field)), str(err)
            return None
    assert _finite(result), f"{fn.__name__}{tuple(args)!r} -> {result!r}: not finite"
    assert not kind or _kind_ok(result, args), f"{fn.__name__}{tuple(args)!r} -> {type(result)}: wrong kind"
    numpy_warnings = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not numpy_warnings, f"{fn.__name__}{tuple(args)!r}: {[str(w.message) for w in numpy_warnings]}"
    return result


# ------------------------------------------------------------------ one test per function

# (function, argument names, valid values, names an InputError may give besides the arguments)
_SPECS: list[tuple[Callable, tuple[str, ...], tuple, set]] = [
    (waste.young_interval, ("C", "M"), (2.0, 1200.0), set()),
    (waste.daly_interval, ("C", "M"), (2.0, 1200.0), set()),
    (waste.first_order_waste, ("T", "C", "M"), (60.0, 2.0, 1200.0), set()),
    (waste.young_min_waste, ("C", "M"), (2.0, 1200.0), set()),
    (waste.effective_stall, ("C", "W", "slowdown"), (2.0, 4.0, 0.1), set()),
    (waste.exact_optimal_interval, ("C", "M", "W", "slowdown"), (2.0, 1200.0, 0.0, 0.0), set()),
    (waste.expected_wall_time, ("work", "T", "C", "M", "R", "W", "slowdown"), (43200.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0),
     set()),
    (waste.waste_fraction, ("T", "C", "M", "R", "W", "slowdown"), (60.0, 2.0, 1200.0, 10.0, 0.0, 0.0), set()),
    (waste.time_breakdown, ("work", "T", "C", "M", "R", "W", "slowdown"), (43200.0, 60.0, 2.0, 1200.0, 10.0, 4.0, 0.1),
     set()),
    (reliability.job_mtbf, ("node_mtbf", "nodes"), (2560.0, 128), set()),
    (reliability.node_mtbf_from_gpus, ("gpu_mtbf_h", "gpus_per_node", "other_mtbf_h"), (20000.0, 8, 1e5), set()),
    (reliability.domains_spanned, ("nodes", "nodes_per_domain"), (128, 16), set()),
    (reliability.job_failure_rate_per_h, ("node_mtbf_h", "nodes"), (2560.0, 128), set()),
    (reliability.job_mtbf_with_domains, ("node_mtbf_h", "nodes"), (2560.0, 128), set()),
    (cost.gpu_hours, ("wall_h", "gpus"), (100.0, 8), set()),
    (cost.money, ("gpu_hours", "price_per_gpu_hour"), (100.0, 2.5), set()),
    (cost.goodput, ("useful_h", "total_h"), (90.0, 100.0), set()),
    (finite.segment_count, ("work", "T"), (100.0, 7.0), set()),
    (finite.failure_free_wall_time, ("work", "T", "C", "W", "slowdown"), (100.0, 7.0, 1.0, 0.0, 0.0), set()),
    (finite.finite_expected_wall_time, ("work", "T", "C", "M", "R", "W", "slowdown"),
     (43200.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0), set()),
    (finite.finite_expected_rollbacks, ("work", "T", "C", "M", "W", "slowdown"), (43200.0, 60.0, 2.0, 1200.0, 0.0, 0.0),
     set()),
    (finite.best_segment_count, ("work", "C", "M", "R"), (43200.0, 2.0, 1200.0, 10.0), set()),
    (wd.wall_time_moments, ("work", "T", "C", "M", "R", "W", "slowdown"), (43200.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0),
     set()),
    (wd.finish_probability, ("deadline", "work", "T", "C", "M", "R", "W", "slowdown"),
     (50000.0, 43200.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0), set()),
    (wd.wall_time_quantile, ("p", "work", "T", "C", "M", "R", "W", "slowdown"),
     (0.9, 43200.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0), set()),
    (wd.deadline_answer, ("deadline", "work", "T", "C", "M", "R", "W", "slowdown"),
     (50000.0, 43200.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0), set()),
    (wd.wall_time_approximation_ok, ("work", "T", "C", "M", "R", "W", "slowdown"),
     (43200.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0), set()),
    (montecarlo.standard_error, ("x",), ([1.0, 2.0, 4.0],), set()),
    (montecarlo.wilson_interval, ("successes", "runs", "confidence"), (5, 10, 0.95), set()),
]


@pytest.mark.parametrize("fn, names, good, extra", _SPECS, ids=[s[0].__name__ for s in _SPECS])
@FUZZ
@given(data=st.data())
def test_numeric_functions_answer_or_refuse_naming_an_argument(fn, names, good, extra, data):
    args = [data.draw(argument(g), label=n) for n, g in zip(names, good)]
    call(fn, args, set(names) | extra)


_SMALL_RUNS = st.sampled_from([2, 20, 1, 0, -5, 2.5, 1e8, 1e9, 10**400, float("nan"), "20", None, True, [20, 30]])
_SIM_NAMES = ("work", "T", "C", "M", "R", "W", "slowdown")
_SIM_GOOD = (6000.0, 60.0, 2.0, 1200.0, 10.0, 0.0, 0.0)


@FUZZ
@given(data=st.data())
def test_the_simulator_answers_or_refuses(data):
    args = [data.draw(argument(g), label=n) for n, g in zip(_SIM_NAMES, _SIM_GOOD)]
    runs = data.draw(argument(20, _SMALL_RUNS), label="runs")
    seed = data.draw(argument(0, st.sampled_from([-1, 2**70, 1.5, "0", None, np.random.default_rng(1)])), label="seed")
    failures = data.draw(argument("exponential", st.sampled_from(
        ["weibull", "empirical", "lognormal", None, 3, montecarlo.FailureLaw.weibull(0.7)])), label="failures")
    method = data.draw(argument("auto", st.sampled_from(["per_window", "per_failure", "fast", None, 1])), label="method")
    names = set(_SIM_NAMES) | {"runs", "seed", "failures", "method", "weibull_shape"}

    def run(*a: Any) -> Any:
        sim = montecarlo.simulate(*a, runs=runs, seed=seed, failures=failures, method=method)
        return {"wall": sim.wall, "failures": sim.failures.astype(float), "free": sim.failure_free}

    run.__name__ = "simulate"
    started = time.perf_counter()
    call(run, args, names, kind=False)
    assert time.perf_counter() - started < 10


@FUZZ
@given(data=st.data())
def test_failure_laws_and_their_shapes(data):
    def weibull(shape: Any) -> dict:
        law = montecarlo.FailureLaw.weibull(shape)
        return {"cv": law.coefficient_of_variation, "draw": law.draw(np.random.default_rng(0), 60.0, 5)}

    def empirical(times: Any) -> dict:
        law = montecarlo.FailureLaw.empirical(times)
        return {"cv": law.coefficient_of_variation, "draw": law.draw(np.random.default_rng(0), 60.0, 5)}

    call(weibull, [data.draw(hostile(), label="shape")], {"weibull_shape", "failures"}, kind=False)
    call(empirical, [data.draw(hostile(), label="times")], {"failure_times", "failures"}, kind=False)


@FUZZ
@given(data=st.data())
def test_deadline_answers_for_a_scenario(data):
    kw = {"deadline_h": data.draw(argument(800.0), label="deadline_h"),
          "runs": data.draw(argument(20, _SMALL_RUNS), label="runs"),
          "seed": data.draw(argument(0, st.sampled_from([-1, 1.5, None])), label="seed")}
    which = data.draw(st.sampled_from(["report", "search"]))
    if which == "report":
        kw["interval_min"] = data.draw(argument(60.0), label="interval_min")
        fn = deadline.deadline_report
    else:
        kw["target"] = data.draw(argument(0.9), label="target")
        kw["intervals_min"] = data.draw(argument(None, st.one_of(hostile(), st.just([30.0, 60.0]))), label="intervals")
        fn = deadline.deadline_search
    scenario = data.draw(argument(SEED, st.sampled_from(["seed", None, {"name": "x"}, 3])), label="scenario")

    def run(sc: Any) -> Any:
        out = fn(sc, **kw)
        if which == "search":
            assert not corpus.finite_frame(out.candidates)
            return {k: v for k, v in out.to_dict().items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return {k: v for k, v in out.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    run.__name__ = f"deadline_{which}"
    call(run, [scenario], set(kw) | {"scenario", "intervals_min", "failures", "weibull_shape", "M", "R"}, kind=False)


# ------------------------------------------------------------------------------ scenarios

_FIELD_VALUES = st.one_of(
    st.sampled_from([0.0, 5e-324, 1e-300, 1e-9, 0.5, 1 - 1e-16, 1.0, 3.0, 1e6, 1e15, 1e100, 1e300, 1.7e308,
                     float("nan"), float("inf"), -1.0, None, "2", True, 1 + 1j]),
    st.floats(min_value=0.0, max_value=1e308),
    st.integers(min_value=-5, max_value=10**18),
)
#: whole-number fields (the scenario record refuses the rest)
_COUNTS = {f.name for f in engine.FIELDS if f.integer}
#: evaluate()'s columns that may be NaN: the analytic deadline answer ("no answer", flagged) and optional inputs
_MAY_BE_NAN = {"p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99", "interval_min", "deadline_h",
               "runs_per_month", "node_mtbf_h", "job_mtbf_h_given", "preemptions_per_h", "preemptions_per_node_h", "preemption_notice_min",
               "capacity_wait_min", "spot_price_per_gpu_hour", "nodes_per_replica", "min_replicas",
               "weibull_shape_from_start"}


def check_evaluated(out: pd.DataFrame) -> None:
    bad = corpus.finite_frame(out, _MAY_BE_NAN)
    assert not bad, f"evaluate() returned non-finite {bad}:\n{out[bad].T}"
    for q in ("wall_h_p50", "wall_h_p90", "wall_h_p99"):
        no_answer = out[q].isna().to_numpy()
        assert not (no_answer & out["deadline_approximation_ok"].to_numpy(dtype=bool)).any(), q


@st.composite
def scenario_fields(draw: Any) -> dict:
    data = {"name": "fuzz", "checkpoint_stall_min": 2.0, "node_mtbf_h": 2560.0, "nodes": 128,
            "useful_training_h": 720.0, "price_per_gpu_hour": 2.5}
    for name in draw(st.lists(st.sampled_from([f.name for f in engine.FIELDS]), max_size=4, unique=True)):
        v = draw(_FIELD_VALUES)
        if name in _COUNTS and isinstance(v, float) and math.isfinite(v) and v < 2**62:
            v = int(v)
        data[name] = v
    return data


@FUZZ
@given(fields=scenario_fields())
def test_scenarios_evaluate_to_finite_figures_or_refuse_naming_a_field(fields):
    names = {f.name for f in engine.FIELDS} | {"domains", "M", "T", "C", "R", "W", "work", "gpus", "table",
                                               "price_per_gpu_hour", "total_h", "gpu_hours"}

    def run(data: dict) -> Any:
        out = engine.evaluate(engine.Scenario(**data))
        check_evaluated(out)
        return {}

    run.__name__ = "evaluate"
    call(run, [fields], names | {"row 0"}, kind=False)


@pytest.mark.parametrize("table", ["seed", None, b"seed", 3, {"name": "x"}, [], [None], [SEED, "seed"], object(),
                                   pd.Series([1.0]), np.array([1.0])])
def test_evaluate_refuses_what_is_no_scenario(table):
    corpus.count("engine")
    with pytest.raises(InputError) as err:
        engine.evaluate(table)
    assert err.value.field.split("[")[0] == "table"


@FUZZ
@given(data=st.data())
def test_batches_answer_every_row_or_name_its_problem(data):
    n = data.draw(st.integers(1, 4))
    cols = {"checkpoint_stall_min": [2.0] * n, "node_mtbf_h": [2560.0] * n, "nodes": [128] * n,
            "useful_training_h": [720.0] * n, "price_per_gpu_hour": [2.5] * n}
    names = [f.name for f in engine.FIELDS] + [f.name for f in engine.fields.SETUP_FIELDS]   # the setup's too
    for name in data.draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
        cols[name] = [data.draw(st.one_of(_FIELD_VALUES, st.sampled_from(corpus.HOSTILE_NUMBERS[:40]))) for _ in range(n)]
    table = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in cols.items()})
    corpus.count("engine", n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = evaluate_rows(table)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert list(out.index) == list(table.index) and set(out["status"]) <= {"ok", "error"}
    ok = out["status"].to_numpy() == "ok"
    assert all(out["error"][~ok].str.len() > 0)
    derived = [c for c in engine.scenario.derived_columns()]
    check_evaluated(out.loc[ok, derived].astype(float).assign(
        deadline_approximation_ok=out.loc[ok, "deadline_approximation_ok"].astype(bool)))


_TIERS = ({"name": "host-memory", "every": 1, "write_gb_s_per_writer": 25.0, "survives": ["process", "node"]},
          {"name": "remote", "every": 10, "write_gb_s_per_writer": 1.0, "aggregate_write_gb_s": 2000.0,
           "survives": ["process", "node", "correlated"], "retention": 3, "price_per_gb_month": 0.02})
_CLASSES = {"process": 0.22, "node": 0.76, "correlated": 0.02}
_TIER_KEYS = ("every", "checkpoint_stall_min", "restore_min", "write_gb_s_per_writer", "aggregate_write_gb_s",
              "read_gb_s_per_writer", "retention", "copies", "price_per_gb_month", "restore_failure_probability",
              "survives", "name", "bogus")
_ROW_KEYS = ("nodes", "parameters_b", "node_mtbf_h", "restart_min", "interval_min", "async_write_min", "writers",
             "detection_min", "repair_h", "spares", "useful_training_h", "price_per_gpu_hour")
#: a tiered row's columns that hold a figure whenever the row is ok
_TIERED_FIGURES = ("chosen_interval_min", "waste_fraction", "wall_h", "save_h", "rework_h", "restart_h",
                   "compute_cost", "total_cost", "cost_per_useful_gpu_hour", "mean_restart_min", "storage_cost",
                   "failed_restores", "rollbacks_to_start")


@FUZZ
@given(data=st.data())
def test_tiered_batches_answer_every_row_or_name_the_tier_or_field(data):
    """Hostile tier designs refuse the batch naming the tier and field; hostile rows are row errors; every ok
    row's tiered figures are finite; no numpy warning."""
    tiers = [dict(t) for t in _TIERS]
    classes = dict(_CLASSES)
    for _ in range(data.draw(st.integers(0, 2))):
        i, key = data.draw(st.integers(0, 1)), data.draw(st.sampled_from(_TIER_KEYS))
        tiers[i][key] = data.draw(st.one_of(_FIELD_VALUES, st.sampled_from([[], ["nope"], "node", {"a": 1}, ""])))
    if data.draw(st.booleans()):
        classes[data.draw(st.sampled_from(list(classes)))] = data.draw(_FIELD_VALUES)
    n = data.draw(st.integers(1, 3))
    cols = {"nodes": [2048] * n, "node_mtbf_h": [6334.0] * n, "useful_training_h": [1166.4] * n,
            "price_per_gpu_hour": [2.5] * n, "parameters_b": [405.0] * n, "restart_min": [10.0] * n}
    for name in data.draw(st.lists(st.sampled_from(_ROW_KEYS), max_size=3, unique=True)):
        cols[name] = [data.draw(st.one_of(_FIELD_VALUES, st.sampled_from(corpus.HOSTILE_NUMBERS[:40])))
                      for _ in range(n)]
    table = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in cols.items()})
    corpus.count("engine", n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = evaluate_rows(table, tiers=tiers, failure_classes=classes)
        except InputError as err:
            assert re.match(r"(tiers|failure_classes|classes)", str(err.field)), err
            return
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert list(out.index) == list(table.index) and set(out["status"]) <= {"ok", "error"}
    ok = out["status"].to_numpy() == "ok"
    assert all(out["error"][~ok].str.len() > 0)
    figures = list(_TIERED_FIGURES) + [c for c in out.columns if re.match(r"tier\d+_(?!name)", c)]
    bad = corpus.finite_frame(out.loc[ok, figures].astype(float))
    assert not bad, f"non-finite tiered figures {bad}:\n{out.loc[ok, bad].T}"


# -------------------------------------------------------------------- plans compared

_ROWS = engine.evaluate([SEED, SEED.with_nodes(256)])


@pytest.mark.parametrize("case", ["missing column", "zero wall", "nan wall", "inf cost", "text cost", "not a row",
                                  "dataframe", "two rows", "dict", "none", "bad runs", "runs array", "huge cost"])
def test_compare_plans_refuses_rows_it_cannot_compare(case):
    corpus.count("engine")
    base, alt = _ROWS.iloc[0].copy(), _ROWS.iloc[1].copy()
    kwargs: dict = {}
    if case == "missing column":
        base = base.drop("total_cost")
    elif case == "zero wall":
        base["wall_h"] = 0.0
    elif case == "nan wall":
        alt["wall_h"] = float("nan")
    elif case == "inf cost":
        base["total_cost"] = float("inf")
    elif case == "text cost":
        base = base.astype(object)
        base["total_cost"] = "lots"
    elif case == "not a row":
        base = "seed"
    elif case == "dataframe":
        base = _ROWS.iloc[[0]]
    elif case == "two rows":
        base = _ROWS
    elif case == "dict":
        base = {"wall_h": 1.0}
    elif case == "none":
        alt = None
    elif case == "bad runs":
        kwargs["runs_per_month"] = float("nan")
    elif case == "runs array":
        kwargs["runs_per_month"] = [1.0, 2.0]
    elif case == "huge cost":
        base["total_cost"], alt["total_cost"] = 1.7e308, -1.7e308
    if case == "dataframe":  # one row as a frame is a row
        assert np.isfinite(engine.compare_plans(base, alt).drop(["base", "alternative"]).astype(float)).all()
        return
    with pytest.raises(InputError) as err:
        engine.compare_plans(base, alt, **kwargs)
    assert re.split(r"[.\[]", err.value.field)[0] in {"base", "alternative", "runs_per_month",
                                                       "money_saved_per_run"}, err.value


def test_compare_plans_of_valid_rows_is_finite():
    corpus.count("engine")
    out = engine.compare_plans(_ROWS.iloc[0], _ROWS.iloc[1])
    assert np.isfinite(out.drop(["base", "alternative"]).astype(float)).all()


# -------------------------------------------------------------------- series and shapes

def test_series_on_different_indexes_are_refused_never_paired_by_position():
    a = pd.Series([2.0, 3.0], index=["x", "y"])
    b = pd.Series([1200.0, 600.0], index=["y", "x"])
    for fn, args in ((waste.young_interval, (a, b)), (waste.waste_fraction, (60.0, a, b)),
                     (reliability.job_mtbf, (b, pd.Series([128, 256], index=["p", "q"]))),
                     (cost.money, (a, b)), (wd.finish_probability, (a * 1e4, 43200.0, 60.0, 2.0, b))):
        corpus.count("engine")
        with pytest.raises(InputError, match="same index|align"):
            fn(*args)
    aligned = waste.young_interval(a, b.reindex(a.index))
    assert isinstance(aligned, pd.Series) and aligned.index.equals(a.index)


def test_an_outer_product_beyond_the_limit_is_refused_before_any_memory():
    corpus.count("engine", 3)
    col, row = np.ones((10**5, 1)), np.ones(10**5)  # 10^10 results: 80 GB
    tracemalloc.start()
    try:
        for fn, args in ((waste.young_interval, (col, row)), (waste.waste_fraction, (60.0, 2.0, col, 10.0, row)),
                         (cost.money, (col, row))):
            with pytest.raises(InputError, match="MAX_BROADCAST_ELEMENTS"):
                fn(*args)
        assert tracemalloc.get_traced_memory()[1] < 50 * 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("runs", [10**8, 10**9, 1e9, 2**62])
def test_monte_carlo_runs_beyond_memory_are_refused_before_allocating(runs):
    corpus.count("engine", 4)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        for fn in (lambda: deadline.deadline_report(SEED, runs=runs), lambda: deadline.deadline_search(SEED, runs=runs),
                   lambda: montecarlo.simulate(6000.0, 60.0, 2.0, 1200.0, runs=runs),
                   lambda: evaluate_rows(engine.to_table([SEED]), deadline=True, runs=runs)):
            with pytest.raises(InputError, match="MAX_SIMULATION_BYTES") as err:
                fn()
            assert err.value.field == "runs"
        assert tracemalloc.get_traced_memory()[1] < 50 * 2**20
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 5


def test_a_sweep_of_a_million_million_rows_is_refused_before_it_starts():
    corpus.count("engine", 2)
    axis = np.arange(1.0, 10**6 + 1)
    started = time.perf_counter()
    with pytest.raises(InputError, match="max_rows"):
        sweep.sweep(SEED, checkpoint_stall_min=axis, nodes=axis)
    with pytest.raises(InputError, match="max_rows"):  # four axes of 1,000: 10^12 rows
        sweep.sweep(SEED, checkpoint_stall_min="1:1000:+1", restart_min="1:1000:+1", nodes="1:1000:+1",
                    price_per_gpu_hour="1:1000:+1")
    with pytest.raises(InputError, match="limit 1,000,000"):
        sweep.sweep(SEED, checkpoint_stall_min="1:1000001:+1")
    assert time.perf_counter() - started < 10


@FUZZ
@given(text=st.one_of(st.text(max_size=30), st.sampled_from(
    ["5e-324:1e308:x2", "1:1e308:+1e-300", "0:1e308:+1e300", "1:2:+nan", "1:1e300:x1.0000001", "1e308:1.7e308:+1e307",
     "64:4096:x2", "0.1:0.5:+0.1", "1,1", "1:2", "1:2:x", "1:2:*2", "-1:1:+0.5", "1" + "0" * 400, "1e400"])))
def test_sweep_axes_parse_or_refuse(text):
    def run(t: str) -> Any:
        values = sweep.parse_axis(t, "nodes")
        assert 1 <= values.size <= sweep.MAX_AXIS_VALUES
        return values

    run.__name__ = "parse_axis"
    call(run, [text], {"nodes"}, kind=False)


@FUZZ
@given(data=st.data())
def test_sweeps_over_hostile_axes(data):
    axis = data.draw(st.one_of(hostile(), st.just([1.0, 2.0]), st.just("1:4:x2")), label="axis")
    max_rows = data.draw(argument(100, st.sampled_from([0, -1, 1.5, "9", None, True, 10**400])), label="max_rows")

    def run(values: Any) -> Any:
        out = sweep.sweep(SEED, max_rows=max_rows, checkpoint_stall_min=values)
        ok = out["status"].to_numpy() == "ok"
        check_evaluated(out.loc[ok, [c for c in engine.scenario.derived_columns()]]
                        .astype(float).assign(deadline_approximation_ok=out.loc[ok, "deadline_approximation_ok"]
                                              .astype(bool)))
        return {}

    run.__name__ = "sweep"
    call(run, [axis], {"checkpoint_stall_min", "max_rows", "axes", "rows"}, kind=False)


def test_model_warnings_take_evaluated_rows():
    corpus.count("engine", 2)
    assert validity.warnings_text(_ROWS) == ["", ""] or all(isinstance(w, str) for w in validity.warnings_text(_ROWS))
    assert isinstance(validity.model_warnings(_ROWS.iloc[[0]], keys=True), list)


def test_the_engine_gives_no_python_number_errors_on_the_corpus():
    """Each hostile value in every argument position of a representative call: InputError or an answer."""
    for value in corpus.HOSTILE_NUMBERS:
        for position in range(7):
            args = list((43200.0, 60.0, 2.0, 1200.0, 10.0, 4.0, 0.1))
            args[position] = value
            call(waste.time_breakdown, args, {"work", "T", "C", "M", "R", "W", "slowdown"})
            call(finite.finite_expected_wall_time, args, {"work", "T", "C", "M", "R", "W", "slowdown"})


# ------------------------------------------------- known bugs in files this suite does not own

def _seed_with(**changes: Any) -> dict:
    data = {"name": "x", "checkpoint_stall_min": 2.0, "node_mtbf_h": 2560.0, "nodes": 128,
            "useful_training_h": 720.0, "price_per_gpu_hour": 2.5}
    data.update(changes)
    return data


@pytest.mark.parametrize("how", ["record", "table"])
def test_an_integer_beyond_float_range_in_a_scenario_is_an_input_error(how):
    corpus.count("engine")
    with pytest.raises(InputError) as err:
        if how == "record":
            engine.Scenario(**_seed_with(nodes=10**400))
        else:
            engine.evaluate(pd.DataFrame({k: pd.Series([v], dtype=object) for k, v in _seed_with(nodes=10**400).items()}))
    assert "nodes" in err.value.field


def test_cost_per_useful_gpu_hour_never_overflows_silently():
    corpus.count("engine")
    sc = engine.Scenario(**_seed_with(price_per_gpu_hour=1.7e308, useful_training_h=1e-300, interval_min=0.5))
    try:
        out = engine.evaluate(sc)
    except InputError:
        return
    assert np.isfinite(out["cost_per_useful_gpu_hour"]).all(), out["cost_per_useful_gpu_hour"]


@pytest.mark.parametrize("changes", [{"job_mtbf_h": 1e307}, {"useful_training_h": 1e308},
                                     {"checkpoint_stall_min": 1e308, "async_write_min": 1e308}],
                         ids=["job_mtbf_h", "useful_training_h", "stall+write"])
def test_evaluate_refuses_overflow_without_numpy_warnings(changes):
    corpus.count("engine")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(InputError):
            engine.evaluate(engine.Scenario(**_seed_with(**changes)))


@pytest.mark.parametrize("name, args", [
    ("checkpoint_size_gb", (1e308, 14.0)), ("storage_cost", (1e300, 1, 1e308, 1.0)),
    ("save_times", (1e300, 1, 5e-324)), ("restore_time_min", (1e300, 1, 5e-324)),
    ("effective_bandwidth_gb_s", (1e308, 1e10)), ("restart_pipeline_min", (1e308, 1e308)),
    ("communicator_init_min", (1e12, 1e300, 1e300)),
])
def test_storage_and_recovery_refuse_overflow_without_numpy_warnings(name, args):
    from ckptplan.engine import recovery, storage

    corpus.count("engine")
    fn = getattr(storage, name, None) or getattr(recovery, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(InputError):
            fn(*args)


def _unowned(module: str, name: str) -> Callable:
    import importlib

    return getattr(importlib.import_module(f"ckptplan.engine.{module}"), name)


def _gap(module: str, name: str, args: tuple) -> Any:
    return pytest.param(module, name, args, id=f"{name}{args!r}"[:60])


@pytest.mark.parametrize("module, name, args", [
    _gap("ettr", "ettr_first_order", (60.0, 2.0, 10.0, 5e-324)),
    _gap("ettr", "ettr_exact", (60.0, 2.0, 10.0, 5e-324, 0.0, 0.0)),
    _gap("fleets", "node_mtbf_h_from_rate", (5e-324,)),
    _gap("fleets", "job_mtbf_h_from_fleet", ("llama3-405b", 1.7976931348623157e308)),
    _gap("fitting", "check_confidence", (10**400,)),
    _gap("fitting", "check_confidence", (np.timedelta64(3, "m"),)),
    _gap("fitting", "mtbf_estimate", (100.0, 10**400, 0.9)),
    _gap("fitting", "mtbf_estimate", (100.0, np.float64(1e308), 0.9)),
    _gap("fitting", "summarize_minutes", ([1.0, "x"],)),
    _gap("fitting", "summarize_minutes", ([1 + 0j],)),
    _gap("fitting", "weibull_fit", ([10.0, 20.0, 5.0] * 5, [True] * 15, 10**400, 10)),
])
def test_known_gaps_of_the_gate_in_other_engine_modules(module, name, args):
    """Functions of engine modules this suite does not own, at inputs that broke the contract before their fix."""
    fn = _unowned(module, name)
    try:
        call(fn, list(args), {"confidence", "failures", "running_h", "values_min", "job_mtbf", "interval", "rate",
                              "failures_per_1000_node_days", "nodes", "checkpoint_stall", "restart"}, kind=False)
    except AssertionError:
        raise
    except Exception as exc:  # what must become an InputError
        raise AssertionError(f"{name}{args!r}: {type(exc).__name__}: {exc}") from None
