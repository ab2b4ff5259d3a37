"""The failure-phase schedule over a table of scenarios at once: its expectation against the one-scenario
expectation, padding that changes nothing, its search against a per-scenario Nelder-Mead (the search the
planner used before) and the best single interval, and batch rows that agree with one-scenario plans."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from ckptplan import engine
from ckptplan.engine import phases as P


def _scenarios(seed: int, n: int, kmax: int, stated: float = 0.0) -> list[tuple]:
    """Random scenarios: 1..kmax phases (the first at 0), factors 0.2-10, boundaries over the job's span."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        K = int(rng.integers(1, kmax + 1))
        work = rng.uniform(2_000, 30_000)
        starts = np.concatenate([[0.0], np.sort(rng.uniform(10, work * 1.3, K - 1))])
        fixed = np.where(rng.random(K) < stated, rng.uniform(10, 200, K), np.nan)
        out.append((work, rng.uniform(0.5, 10), rng.uniform(200, 3_000), rng.uniform(0, 40), starts,
                    rng.uniform(0.2, 10, K), fixed))
    return out


def _table(rows: list[tuple], k: int, width: int | None = None) -> np.ndarray:
    """Column ``k`` of the scenarios as a padded rows x phases table (NaN after a row's last phase)."""
    width = width or max(len(r[k]) for r in rows)
    return np.array([np.concatenate([r[k], np.full(width - len(r[k]), np.nan)]) for r in rows])


@pytest.mark.parametrize("nodes", [P.QUADRATURE_NODES, P.SEARCH_NODES])
def test_the_table_expectation_is_the_one_scenario_expectation(nodes):
    rng = np.random.default_rng(5)
    rows = [r[:4] + (rng.uniform(5, 250, len(r[4])),) + r[4:6] for r in _scenarios(11, 40, 8)]
    got = P.schedule_expectation_rows([r[0] for r in rows], _table(rows, 4), [r[1] for r in rows],
                                      [r[2] for r in rows], [r[3] for r in rows], _table(rows, 5), _table(rows, 6), nodes)
    ends = set()
    for i, (work, C, M, R, T, starts, factors) in enumerate(rows):
        ref = P.schedule_expectation(work, T, C, M, R, starts, factors, nodes)
        one = P.expectation_row(got, i, len(T))
        for key in ("total", "useful", "save", "rework", "restart", "failures"):
            assert one[key] == pytest.approx(ref[key], rel=1e-12, abs=1e-9), (i, key)
        assert one["end_phase"] == ref["end_phase"]
        np.testing.assert_allclose(one["phase_wall"], ref["phase_wall"], rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(one["phase_work"], ref["phase_work"], rtol=1e-12, atol=1e-9)
        ends.add(ref["end_phase"])
    assert len(ends) >= 4   # jobs that end in their first phase and jobs that cross several boundaries


def test_padding_changes_nothing():
    rows = _scenarios(3, 12, 6, stated=0.3)
    cols = [[r[k] for r in rows] for k in range(4)]
    narrow = P.optimal_schedules(*cols, _table(rows, 4), _table(rows, 5), _table(rows, 6))
    wide = P.optimal_schedules(*cols, _table(rows, 4, 10), _table(rows, 5, 10), _table(rows, 6, 10))
    inf = _table(rows, 4, 10)
    inf[np.isnan(inf)] = np.inf
    for other in (wide, P.optimal_schedules(*cols, inf, _table(rows, 5, 10), _table(rows, 6, 10))):
        for key in ("total", "save", "failures", "end_phase"):
            np.testing.assert_array_equal(other["schedule"][key], narrow["schedule"][key])
        np.testing.assert_array_equal(other["single_interval"], narrow["single_interval"])
        np.testing.assert_array_equal(other["intervals"][:, :narrow["intervals"].shape[1]], narrow["intervals"])
        assert np.isnan(other["intervals"][:, narrow["intervals"].shape[1]:]).all()
    for i in (0, 5, 11):   # a row alone is the same row in the table
        alone = P.optimal_schedule(*(c[i] for c in cols), rows[i][4], rows[i][5], rows[i][6])
        k = len(rows[i][4])
        np.testing.assert_array_equal(alone["intervals"], narrow["intervals"][i, :k])
        assert alone["schedule"]["total"] == narrow["schedule"]["total"][i]


def _nelder_mead(work, C, M, R, starts, factors, fixed):
    """The per-scenario search the planner used before the table search: bounded Brent for the single interval,
    Nelder-Mead on the log-intervals from the phases' optima and the single interval (engine.phases.search_intervals,
    which the combination models still use)."""
    def f(log_t):
        T = np.exp(np.clip(log_t, -50, 50))
        v = P.schedule_expectation(work, T, C, M, R, starts, factors, P.SEARCH_NODES)["total"]
        return v if np.isfinite(v) else np.inf

    own = np.asarray(P.per_phase_optima(C, M, factors))
    res = minimize_scalar(lambda v: f(np.full(len(own), v)), bounds=(np.log(own.min() / 4), np.log(own.max() * 4)),
                          method="bounded", options={"xatol": 1e-6})
    T = P.search_intervals(f, own, float(np.exp(res.x)), fixed)
    return P.schedule_expectation(work, T, C, M, R, starts, factors)["total"]


@pytest.mark.parametrize("seed,n,kmax", [(1, 8, 4), (2, 2, 16)])
def test_the_table_search_is_never_worse_than_nelder_mead_or_one_interval(seed, n, kmax):
    rows = _scenarios(seed, n, kmax, stated=0.25)
    cols = [[r[k] for r in rows] for k in range(4)]
    best = P.optimal_schedules(*cols, _table(rows, 4), _table(rows, 5), _table(rows, 6))
    for i, r in enumerate(rows):
        total = best["schedule"]["total"][i]
        assert total <= _nelder_mead(*r) * (1 + 1e-9), i
        K, fixed = len(r[4]), r[6]
        T = best["intervals"][i, :K]
        np.testing.assert_array_equal(T[~np.isnan(fixed)], fixed[~np.isnan(fixed)])   # stated: held exactly
        one = np.where(np.isnan(fixed), best["single_interval"][i], fixed)
        assert total <= P.schedule_expectation(r[0], one, *r[1:6])["total"] * (1 + 1e-12)
        if np.isnan(fixed).all():
            assert total <= best["single"]["total"][i] * (1 + 1e-12)
        # the reported figures are the schedule's exact expectation
        assert total == pytest.approx(P.schedule_expectation(r[0], T, *r[1:6])["total"], rel=1e-12)


def test_batch_rows_are_one_scenario_plans():
    base = dict(name="t", checkpoint_stall_min=3.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=256,
                useful_training_h=300.0, price_per_gpu_hour=2.0)
    phase_sets = ([{"start_h": 0, "rate_factor": 3.0}, {"start_h": 72, "rate_factor": 1.0}],
                  [{"start_h": 20, "rate_factor": 2.5, "interval_min": 40.0}],
                  [{"start_h": 0, "rate_factor": 0.5}, {"start_h": 50, "rate_factor": 4.0},
                   {"start_h": 120, "rate_factor": 1.5}, {"start_h": 200, "rate_factor": 0.8}])
    scs = [engine.Scenario(**base, failure_phases=p) for p in phase_sets]
    batch = engine.evaluate(scs)   # one table: every row's schedule in one search
    for i, sc in enumerate(scs):
        row, alone = batch.iloc[i], engine.evaluate(sc).iloc[0]
        for key in ("wall_h", "expected_failures", "single_interval_min", "single_interval_wall_h",
                    "schedule1_interval_min", "schedule2_interval_min"):
            assert row[key] == alone[key], (i, key)
    assert batch.iloc[1]["schedule2_interval_min"] == 40.0 and batch.iloc[1]["schedule2_interval_stated"] == 1.0
