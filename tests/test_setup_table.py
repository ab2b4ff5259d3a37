"""engine.setup_table: the storage and recovery setup as table columns equals plan_setup row by row.

A random table of 200 rows mixes given and blank scenario and setup cells (stall, write and restart
stated or left to the setup; bandwidths per writer, aggregate or both; async or sync saves; restart
parts; spare pools; storage prices). Every row's columns must equal :func:`engine.setup.plan_setup`
of that row's scenario and setup (rel 1e-12); bad cells are reported with their row and field; a
table of 10^5 rows runs on whole columns.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from ckptplan import engine
from ckptplan.engine import recovery
from ckptplan.engine import setup_table as T
from ckptplan.engine.pipeline import fill_from_setup, plan_table
from ckptplan.engine.errors import InputError
from ckptplan.engine.fields import FIELD_BY_NAME, SETUP_FIELDS
from ckptplan.engine.scenario import RowProblems, Scenario
from ckptplan.engine.setup import DERIVED, PARTS, RecoverySetup, plan_setup

REL = 1e-12
SCENARIO_KEYS = ("checkpoint_stall_min", "async_write_min", "async_slowdown_fraction", "restart_min", "node_mtbf_h",
                 "nodes", "gpus_per_node", "job_mtbf_h", "useful_training_h", "price_per_gpu_hour", "interval_min")
SETUP_KEYS = tuple(f.name for f in SETUP_FIELDS)


def random_rows(n: int, seed: int = 7) -> list[dict]:
    """Rows of scenario and setup cells, each optional one given or blank (None), all valid together."""
    rng = np.random.default_rng(seed)

    def maybe(p: float, value):
        return value if rng.random() < p else None

    rows = []
    for i in range(n):
        r: dict = {"name": f"row{i}", "nodes": int(rng.integers(1, 3000)), "useful_training_h": float(rng.uniform(5, 900)),
                   "price_per_gpu_hour": float(rng.uniform(0, 6)), "gpus_per_node": maybe(0.5, int(rng.choice([4, 8])))}
        if rng.random() < 0.5:
            r["job_mtbf_h"] = float(rng.uniform(2, 200))
        else:
            r["node_mtbf_h"] = float(rng.uniform(500, 50000))
        sized = rng.random() < 0.75
        if sized:
            r["parameters_b"] = float(rng.uniform(0.5, 800))
            r["bytes_per_parameter"] = maybe(0.4, float(rng.choice([14, 12, 6])))
            r["extra_state_gb"] = maybe(0.3, float(rng.uniform(0, 50)))
            kind = rng.integers(0, 4)   # 0 no bandwidth, 1 per writer, 2 aggregate, 3 both
            r["write_gb_s_per_writer"] = float(rng.uniform(0.2, 20)) if kind in (1, 3) else None
            r["aggregate_write_gb_s"] = float(rng.uniform(5, 2000)) if kind in (2, 3) else None
            r["writers"] = maybe(0.4, int(rng.integers(1, 4000)))
            r["read_gb_s_per_writer"] = maybe(0.3, float(rng.uniform(0.2, 30)))
            r["aggregate_read_gb_s"] = maybe(0.3, float(rng.uniform(5, 3000)))
            r["d2h_gb_s_per_writer"] = maybe(0.4, float(rng.uniform(5, 50))) if kind else None
            r["price_per_gb_month"] = maybe(0.5, float(rng.uniform(0, 0.1)))
            r["retention"] = maybe(0.5, int(rng.integers(1, 6)))
        derives_stall = sized and (r.get("write_gb_s_per_writer") or r.get("aggregate_write_gb_s"))
        r["checkpoint_stall_min"] = maybe(0.4, float(rng.uniform(0.1, 10))) if derives_stall else \
            float(rng.uniform(0.1, 10))
        r["async_write_min"] = maybe(0.2, float(rng.uniform(0, 5)))
        r["async_slowdown_fraction"] = maybe(0.3, float(rng.uniform(0, 0.5)))
        for p in ("detection_min", "reallocation_min", "startup_min", "init_min", "init_per_1000_nodes_min",
                  "load_min", "warmup_min"):
            r[p] = maybe(0.3, float(rng.uniform(0, 8)))
        if rng.random() < 0.4:
            r["repair_h"] = float(rng.uniform(0.5, 72))
            r["spares"] = maybe(0.7, int(rng.integers(0, 12)))
            r["swap_min"] = maybe(0.5, float(rng.uniform(0, 5)))
            r["replacement_share"] = maybe(0.5, float(rng.uniform(0.1, 1)))
        r["restart_min"] = maybe(0.3, float(rng.uniform(0, 30)))
        r["interval_min"] = maybe(0.1, float(rng.uniform(400, 900)))
        rows.append(r)
    return rows


def table_of(rows: list[dict]) -> pd.DataFrame:
    cols = ("name",) + SCENARIO_KEYS + SETUP_KEYS
    return pd.DataFrame({c: [r.get(c) for r in rows] for c in cols}).astype(
        {c: float for c in SCENARIO_KEYS + SETUP_KEYS})


def planned(row: dict):
    """plan_setup of one row: the scenario (a placeholder stall where the setup derives it) and its setup."""
    stated = {k for k in DERIVED if row.get(k) is not None}
    sc = {k: row[k] for k in SCENARIO_KEYS if row.get(k) is not None}
    sc.setdefault("checkpoint_stall_min", 1.0)
    setup = RecoverySetup(**{k: row[k] for k in SETUP_KEYS if row.get(k) is not None}, stated=frozenset(stated))
    return plan_setup(Scenario(name=row["name"], **sc), setup)


def fill(table: pd.DataFrame) -> pd.DataFrame:
    """The table with the stall, write and restart its setup derives (the pipeline's first pass)."""
    return fill_from_setup(table)[0]


def close(a, b) -> bool:
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return bool(np.isnan(a))
    return a == pytest.approx(b, rel=REL, abs=1e-300)


@pytest.fixture(scope="module")
def case():
    rows = random_rows(200)
    table = table_of(rows)
    return rows, table, [planned(r) for r in rows]


def test_every_row_equals_plan_setup(case):
    rows, table, plans = case
    filled = fill(table)
    evaluated = engine.evaluate(filled)
    cols = T.setup_columns(filled, evaluated["job_mtbf_h"], evaluated["wall_h"])
    assert list(cols) == list(T.SETUP_COLUMNS)
    planned = plan_table(table, extra_columns="keep")   # the pipeline every surface calls
    assert not planned.problems.by_row
    plan_cols = pd.DataFrame(planned.res)
    # a table's GPU-hours mean what plan_setup's do: the job's, the spares', their sum (the same names)
    assert np.allclose(plan_cols["total_gpu_hours"], plan_cols["job_gpu_hours"] + plan_cols["spare_gpu_hours"],
                       rtol=1e-12)
    kinds = {"derived stall": 0, "async": 0, "pool": 0, "pipeline": 0, "stated stall": 0}
    for i, (row, plan) in enumerate(zip(rows, plans)):
        f = plan.figures
        for key in DERIVED:   # the filled-in scenario is the one plan_setup plans (a blank: the field's default)
            value = filled[key].iloc[i]
            value = FIELD_BY_NAME[key].default if np.isnan(value) else value
            assert close(value, getattr(plan.scenario, key)), (i, key)
            assert planned.table[key].iloc[i] == filled[key].iloc[i] or np.isnan(filled[key].iloc[i]), (i, key)
        for key in ("checkpoint_size_gb", "derived_checkpoint_stall_min", "derived_async_write_min",
                    "derived_restore_min", "spare_free_probability", "storage_cost", "spare_gpu_hours", "spare_cost"):
            assert close(cols[key][i], f[key]), (i, key, cols[key][i], f[key])
        parts = plan.restart_parts_min
        for p in PARTS:
            assert close(cols[f"part_{p}"][i], parts.get(p)), (i, p)
        assert close(cols["restart_pipeline_min"][i], sum(parts.values()) if parts else None), i
        if row.get("repair_h") is not None:
            rate = (row.get("replacement_share") or 1.0) / f["job_mtbf_h"]
            assert close(cols["pool_reallocation_min"][i], float(recovery.expected_reallocation_min(
                rate, row["repair_h"], row.get("spares") or 0, row.get("swap_min") or 0.0))), i
        else:
            assert np.isnan(cols["pool_reallocation_min"][i])
        for key in ("job_mtbf_h", "wall_h", "interval_min", "job_gpu_hours", "spare_gpu_hours", "total_gpu_hours", "storage_cost",
                    "spare_cost", "total_cost", "cost_per_useful_gpu_hour", "goodput"):
            want = f[key] if key != "interval_min" else f["interval_min"]
            got = plan_cols[key if key != "interval_min" else "chosen_interval_min"].iloc[i]
            assert close(got, want), (i, key, got, want)
        kinds["derived stall"] += row.get("checkpoint_stall_min") is None
        kinds["stated stall"] += row.get("checkpoint_stall_min") is not None and f["derived_checkpoint_stall_min"] is not None
        kinds["async"] += row.get("d2h_gb_s_per_writer") is not None and f["derived_async_write_min"] is not None
        kinds["pool"] += row.get("repair_h") is not None
        kinds["pipeline"] += bool(parts)
    assert min(kinds.values()) >= 10, kinds   # the table exercises every rule of precedence


def test_a_stated_value_wins_and_the_table_keeps_its_columns_as_given():
    table = pd.DataFrame({"checkpoint_stall_min": [3.0, None, "2"], "nodes": [16, 16, 16], "useful_training_h": [10] * 3,
                          "price_per_gpu_hour": [1.0] * 3, "node_mtbf_h": [1000.0] * 3, "parameters_b": [7.0] * 3,
                          "aggregate_write_gb_s": [10.0] * 3, "restart_min": [None, 4.0, None], "detection_min": [1.0] * 3})
    filled = fill(table)
    assert filled["checkpoint_stall_min"].tolist()[0] == 3.0 and filled["checkpoint_stall_min"].tolist()[2] == 2.0
    assert filled["checkpoint_stall_min"].iloc[1] == pytest.approx(7 * 14 / 10 / 60, rel=REL)
    assert filled["async_write_min"].tolist() == [0.0, 0.0, 0.0]        # a synchronous save writes nothing after
    restore = 7 * 14 / 10 / 60
    assert filled["restart_min"].tolist() == [pytest.approx(1 + restore), 4.0, pytest.approx(1 + restore)]
    assert table["restart_min"].isna().tolist() == [True, False, True]   # the caller's table is untouched


def test_bad_cells_are_reported_with_row_and_field_and_the_others_computed():
    table = pd.DataFrame({"nodes": [8, 8, 8, 8, 8, 8], "parameters_b": [70, -1, "x", None, 70, 70],
                          "write_gb_s_per_writer": [2, 2, 2, 2, None, 2], "spares": [None, None, None, None, 3, None],
                          "repair_h": [None] * 6, "price_per_gb_month": [0, 0, 0, 0.1, 0, 0],
                          "writers": [4, 4, 4, 4, 4, 2.5]}, index=list("abcdef"))
    problems = RowProblems(len(table))
    cols = T.setup_columns(table, 20.0, problems=problems)
    got = {p: [(e.field, e.rule) for e in errs] for p, errs in problems.by_row.items()}
    assert got == {1: [("parameters_b", "must be > 0")], 2: [("parameters_b", "must be a number")],
                   3: [("write_gb_s_per_writer", "needs the checkpoint size: give parameters_b"),
                       ("price_per_gb_month", "needs the checkpoint size: give parameters_b")],
                   4: [("spares", "needs repair_h: how long a failed node takes to come back")],
                   5: [("writers", "must be a whole number >= 1")]}
    assert cols["checkpoint_size_gb"][0] == 980.0 and np.isnan(cols["checkpoint_size_gb"][1:]).all()
    assert cols["derived_checkpoint_stall_min"][0] == pytest.approx(980 / 8 / 60, rel=REL)
    with pytest.raises(InputError, match=r"row b: parameters_b=-1.0: must be > 0"):
        T.setup_columns(table, 20.0)
    # a pool needs the job MTBF; an overflow the rules cannot see is the row's problem, named as its column
    pool = pd.DataFrame({"nodes": [8, 8, 8], "repair_h": [24.0, 24.0, 1e300], "spares": [1, 1, 1]})
    problems = RowProblems(3)
    cols = T.setup_columns(pool, [20.0, -1.0, 20.0], problems=problems)
    assert [(p, errs[0].field) for p, errs in sorted(problems.by_row.items())] == [(1, "job_mtbf_h"), (2, "repair_h")]
    assert 0 < cols["spare_free_probability"][0] < 1 and np.isnan(cols["spare_free_probability"][1:]).all()


def test_the_pipeline_reports_scenario_problems_and_a_missing_stall():
    table = pd.DataFrame({"checkpoint_stall_min": [2.0, None, 2.0, -1.0], "nodes": [8] * 4, "useful_training_h": [10.0] * 4,
                          "price_per_gpu_hour": [1.0] * 4, "job_mtbf_h": [20.0, 20.0, None, 20.0]})
    planned = plan_table(table, setup=True)
    found = {p: errs[0].field for p, errs in planned.problems.by_row.items()}
    assert found == {1: "checkpoint_stall_min", 2: "node_mtbf_h", 3: "checkpoint_stall_min"}
    assert "parameters_b with a write bandwidth" in str(planned.problems.by_row[1][0])   # how the setup would derive it
    total = planned.res["total_cost"]
    assert np.isfinite(total[0]) and np.isnan(total[1:]).all()
    assert total[0] == pytest.approx(engine.evaluate(table.iloc[:1])["total_cost"].iloc[0], rel=REL)


@pytest.mark.parametrize("per", [None, 2.0])
@pytest.mark.parametrize("agg", [None, 50.0])
def test_bandwidth_columns_is_plan_setups_rule(per, agg):
    per_c, agg_c = T.bandwidth_columns(np.nan if per is None else per, np.nan if agg is None else agg, 16)
    if per is None and agg is None:
        assert np.isnan(per_c)
        return
    # the rule written out: no aggregate is no shared limit; no per-writer figure shares the aggregate
    want = {(None, 50.0): (50.0 / 16, 50.0), (2.0, None): (2.0, math.inf), (2.0, 50.0): (2.0, 50.0)}[(per, agg)]
    assert (float(per_c), float(agg_c)) == want


def test_a_table_of_100000_rows_runs_on_whole_columns():
    rows = random_rows(500, seed=3)
    table = table_of(rows)
    big = pd.concat([table] * 200, ignore_index=True)
    assert len(big) == 100_000
    start = time.perf_counter()
    filled = fill(big)
    evaluated = engine.evaluate(filled)
    cols = T.setup_columns(filled, evaluated["job_mtbf_h"], evaluated["wall_h"])
    seconds = time.perf_counter() - start
    small = T.setup_columns(filled.iloc[:500], evaluated["job_mtbf_h"][:500], evaluated["wall_h"][:500])
    for key, values in cols.items():   # the same 500 rows, 200 times over
        np.testing.assert_array_equal(values.reshape(200, 500), np.broadcast_to(small[key], (200, 500)), key)
    assert seconds < 60, seconds


def test_the_pool_uses_each_rows_job_mtbf_with_domains_and_skips_a_row_without_one():
    from ckptplan.engine.reliability import FailureDomain

    sc = Scenario(name="d", checkpoint_stall_min=2.0, nodes=512, node_mtbf_h=8000.0, useful_training_h=200.0,
                  price_per_gpu_hour=2.0, nonfatal_share=0.2, domains=(FailureDomain("rack", 20000.0, 16),))
    setup = {"repair_h": 12.0, "spares": 3, "detection_min": 1.0, "swap_min": 2.0}
    plan = plan_setup(sc, RecoverySetup(**setup, stated=frozenset({"checkpoint_stall_min"})))
    table = engine.to_table([sc, sc])
    table.loc[1, "node_mtbf_h"] = np.nan   # row 1: no MTBF at all (evaluate's problem to report)
    table["restart_min"] = np.nan          # not stated (to_table writes the default 0): the pipeline's
    for k, v in setup.items():
        table[k] = v
    filled = fill(table)
    assert filled["restart_min"].iloc[0] == approx_(plan.scenario.restart_min)
    assert np.isnan(filled["restart_min"].iloc[1])   # left as it was: no pool without a job MTBF
    with pytest.raises(InputError, match="row 1: node_mtbf_h"):
        engine.evaluate(filled)


def approx_(x):
    return pytest.approx(x, rel=REL)
