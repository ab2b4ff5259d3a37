"""Tests of engine.wall_distribution: exact moments of the finite job's wall time, and the analytic
deadline answer (P(finish), percentiles) against a 10^5-run Monte Carlo on the benchmark's grid.

The Monte Carlo checks use a fixed seed, so they are deterministic; the 1 percentage point bound
is about 6 standard errors of a simulated probability near 0.5 at 10^5 runs.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import mpmath
import numpy as np
import pandas as pd
import pytest

from ckptplan import engine, files
from ckptplan.engine import finite as fin
from ckptplan.engine import wall_distribution as wd
from ckptplan.engine.montecarlo import simulate

_path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_wall_distribution.py"
_spec = importlib.util.spec_from_file_location("bench_wall_distribution", _path)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)  # the grid of benchmarks/bench_wall_distribution.py: one definition

RUNS = 100_000
SEED = 7            # not the benchmark's seed: the bound must hold for other draws too
P_TOLERANCE = 0.01  # 1 percentage point, inside the validity range
Q_TOLERANCE = 0.1   # P50/P90/P99 within 0.1 standard deviation of the wall time, inside the range


def _random_jobs(n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    M = rng.uniform(30.0, 3000.0, n)
    T = M * rng.uniform(0.01, 1.5, n)
    work = T * rng.uniform(0.3, 300.0, n)               # ragged last segments, single-window jobs
    C = M * rng.uniform(0.0, 0.5, n)
    R = M * rng.uniform(0.0, 0.5, n)
    s = rng.uniform(0.0, 0.9, n)
    W = np.where(rng.uniform(size=n) < 0.5, 0.0, T / (1 - s) * rng.uniform(0.0, 1.0, n))
    return work, T, C, M, R, W, s


# ------------------------------------------------------------------------------ the moments

@pytest.mark.parametrize("final_save", [False, True])
def test_mean_is_the_exact_finite_expectation(final_save):
    args = _random_jobs(5000, 1 + final_save)
    mean = wd.wall_time_moments(*args, final_save=final_save)["mean"]
    exact = fin.finite_expected_wall_time(*args[:4], R=args[4], W=args[5], slowdown=args[6], final_save=final_save)
    np.testing.assert_allclose(mean, exact, rtol=1e-12, atol=0)
    ff = wd.wall_time_moments(*args, final_save=final_save)["failure_free"]
    np.testing.assert_allclose(ff, fin.failure_free_wall_time(args[0], args[1], args[2], args[5], args[6], final_save),
                               rtol=1e-13)


def _cgf_cumulants(work, T, C, M, R, W, s, final_save):
    """Mean, variance, third cumulant from the job's moment generating function, differentiated
    numerically at 50 digits: an independent route to the same numbers (no cumulant algebra)."""
    mpmath.mp.dps = 50
    g = {k: float(v) for k, v in fin.job_geometry(*(np.float64(v) for v in (work, T, C, W, s)), final_save).items()}
    x = {k: mpmath.mpf(g[k]) / M for k in ("full_clean", "full_flow", "last_clean", "last_flow")}
    y = mpmath.mpf(R) / M

    def restart(t):      # a restart retried until one lasts y: (1-t) e^{(t-1)y} / (e^{(t-1)y} - t)
        return (1 - t) * mpmath.exp((t - 1) * y) / (mpmath.exp((t - 1) * y) - t)

    def clean(t, c):     # attempts of length c, each failure costing the time to it and a restart
        return mpmath.exp((t - 1) * c) / (1 - (1 - mpmath.exp((t - 1) * c)) * restart(t) / (1 - t))

    def flow(t, c, f):   # done after f, or a failure, a restart and a clean window c
        return mpmath.exp((t - 1) * f) + (1 - mpmath.exp((t - 1) * f)) / (1 - t) * restart(t) * clean(t, c)

    last = int(g["last"])

    def cgf(t):
        if last == 0:
            return mpmath.log(clean(t, x["last_clean"]))
        return (mpmath.log(clean(t, x["full_clean"])) + (last - 1) * mpmath.log(flow(t, x["full_clean"], x["full_flow"]))
                + mpmath.log(flow(t, x["last_clean"], x["last_flow"])))

    return [float(mpmath.diff(cgf, 0, k)) * M ** k for k in (1, 2, 3)]


@pytest.mark.parametrize("case", [
    (3000.0, 60.0, 2.0, 300.0, 5.0, 0.0, 0.0, False),        # sync, 50 windows
    (3010.0, 60.0, 2.0, 300.0, 5.0, 0.0, 0.0, True),         # ragged last segment, final save
    (100.0, 150.0, 10.0, 80.0, 30.0, 0.0, 0.0, False),       # a single window longer than M
    (2000.0, 100.0, 1.0, 400.0, 20.0, 40.0, 0.3, False),     # async
    (2010.0, 100.0, 1.0, 400.0, 20.0, 40.0, 0.3, False),     # async, the job ends before the last write
    (2010.0, 100.0, 1.0, 400.0, 20.0, 40.0, 0.3, True),      # async, final save
    (900.0, 50.0, 25.0, 50.0, 10.0, 0.0, 0.0, False),        # C/M = 0.5
    (5000.0, 0.5, 0.01, 2000.0, 0.2, 0.0, 0.0, False),       # windows of 2.5e-4 M: the series branch
])
def test_moments_equal_the_moment_generating_function(case):
    mom = wd.wall_time_moments(*case[:7], final_save=case[7])
    want = _cgf_cumulants(*case)
    got = [mom["mean"], mom["variance"], mom["third_central_moment"]]
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=1e-9)
    assert mom["skewness"] == pytest.approx(want[2] / want[1] ** 1.5, rel=1e-9)


def test_single_window_variance_is_the_classic_completion_time_result():
    """No restart cost: a task of length L with restarts has variance M^2 (e^{2x} - 1 - 2x e^x), x = L/M."""
    for L, M in ((10.0, 100.0), (100.0, 40.0), (1e-3, 50.0)):
        x = mpmath.mpf(L) / M
        want = float(M ** 2 * (mpmath.exp(2 * x) - 1 - 2 * x * mpmath.exp(x)))
        assert wd.wall_time_moments(L, L, 0.0, M)["variance"] == pytest.approx(want, rel=1e-10)


# ------------------------------------------------------------- against the Monte Carlo

@pytest.fixture(scope="module")
def simulated():
    out = {}
    for name, *spec in bench.GRID:
        args = bench.case_inputs(*spec)
        work, T, C, M, R, W, s, fs = args
        out[name] = (args, np.sort(simulate(work, T, C, M, R, W, s, runs=RUNS, seed=SEED, final_save=fs).wall))
    return out


@pytest.mark.parametrize("name", [g[0] for g in bench.GRID])
def test_analytic_deadline_answer_matches_the_monte_carlo(simulated, name):
    args, wall = simulated[name]
    mom = wd.wall_time_moments(*args)
    inside = not name.startswith("out:")
    assert bool(mom["ok"]) is inside, "the grid's cases are labelled by their validity flag"
    deadlines = np.quantile(wall, bench.PROBS)
    sim_p = np.searchsorted(wall, deadlines, side="right") / wall.size
    p = wd.finish_probability(deadlines, *args)
    if not inside:
        return
    assert np.max(np.abs(p - sim_p)) <= P_TOLERANCE, (p, sim_p)
    sd = math.sqrt(mom["variance"])
    for q in (0.5, 0.9, 0.99):
        assert abs(wd.wall_time_quantile(q, *args) - np.quantile(wall, q)) <= Q_TOLERANCE * sd, q
    # the exact moments against the sample's (standard errors ~0.5 % for the variance)
    assert mom["variance"] == pytest.approx(wall.var(), rel=0.03)
    assert mom["mean"] == pytest.approx(wall.mean(), rel=5 * wall.std() / wall.mean() / math.sqrt(RUNS) + 1e-12)


def test_flag_marks_what_the_approximation_cannot_do(simulated):
    """Outside the range the error can exceed the 1-point bound: too few failures, or a lattice of restarts."""
    worst = 0.0
    for name, (args, wall) in simulated.items():
        if name.startswith("out:"):
            deadlines = np.quantile(wall, bench.PROBS)
            sim_p = np.searchsorted(wall, deadlines, side="right") / wall.size
            worst = max(worst, float(np.max(np.abs(wd.finish_probability(deadlines, *args) - sim_p))))
            assert not wd.wall_time_approximation_ok(*args)
    assert worst > P_TOLERANCE


def test_evaluate_matches_the_deadline_reports_monte_carlo():
    """Same defaults as engine.deadline.deadline_report: chosen interval, exponential failures, no final save."""
    seed = files.load_scenario("seed")
    row = engine.evaluate(seed).iloc[0]
    rep = engine.deadline_report(seed, runs=RUNS, seed=SEED)
    assert row["p_finish_by_deadline"] == pytest.approx(rep["p_finish"], abs=P_TOLERANCE)
    assert row["deadline_approximation_ok"]
    sd_h = math.sqrt(wd.wall_time_moments(rep["useful_h"] * 60, rep["interval_min"], seed.checkpoint_stall_min,
                                          rep["job_mtbf_h"] * 60, seed.restart_min)["variance"]) / 60
    for q in ("p50", "p90", "p99"):
        assert row[f"wall_h_{q}"] == pytest.approx(rep[f"wall_h_{q}"], abs=Q_TOLERANCE * sd_h)


# ------------------------------------------------------------------- answers and evaluate()

def test_probability_and_quantile_are_inverse_and_clamped():
    args = (43200.0, 67.96, 2.0, 1200.0, 10.0)
    for p in (0.01, 0.3, 0.5, 0.9, 0.999):
        assert wd.finish_probability(wd.wall_time_quantile(p, *args), *args) == pytest.approx(p, abs=1e-12)
    ff = wd.wall_time_moments(*args)["failure_free"]
    assert wd.finish_probability(ff * 0.999, *args) == 0.0
    d = np.linspace(ff, 60000.0, 200)
    assert np.all(np.diff(wd.finish_probability(d, *args)) >= 0)
    # a job that fails rarely: it finishes at its failure-free time w0 with probability exp(-w0/M)
    rare = (600.0, 60.0, 1.0, 1000.0, 5.0)
    w0 = wd.wall_time_moments(*rare)["failure_free"]
    p0 = math.exp(-w0 / 1000.0)
    assert wd.wall_time_quantile(p0 - 0.01, *rare) == w0 < wd.wall_time_quantile(p0 + 0.01, *rare)
    assert wd.finish_probability(w0, *rare) >= p0 and wd.finish_probability(w0 * 0.9999, *rare) == 0.0
    assert not wd.wall_time_approximation_ok(*rare)


def test_evaluate_columns():
    seed = files.load_scenario("seed")
    table = engine.to_table([seed, seed.replace(name="no deadline", deadline_h=None),
                             seed.replace(name="impossible", deadline_h=700.0),
                             seed.replace(name="async", async_write_min=4.0, async_slowdown_fraction=0.15)])
    out = engine.evaluate(table)
    for col in ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99", "deadline_approximation_ok"):
        assert col in engine.scenario.derived_columns()
    assert out["deadline_approximation_ok"].dtype == bool
    assert math.isnan(out["p_finish_by_deadline"][1]) and out["wall_h_p50"][1] == out["wall_h_p50"][0]
    assert out["p_finish_by_deadline"][2] == 0.0           # below the useful hours: never
    for i in (0, 3):
        r = out.iloc[i]
        args = (r["useful_training_h"] * 60, r["chosen_interval_min"], r["checkpoint_stall_min"], r["job_mtbf_h"] * 60,
                r["restart_min"], r["async_write_min"], r["async_slowdown_fraction"])
        assert r["p_finish_by_deadline"] == wd.finish_probability(r["deadline_h"] * 60, *args)
        assert r["wall_h_p90"] * 60 == pytest.approx(wd.wall_time_quantile(0.9, *args), rel=1e-15)
        assert r["wall_h_p50"] <= r["wall_h_p90"] <= r["wall_h_p99"]
    assert out["p_finish_by_deadline"][0] == pytest.approx(0.9429, abs=1e-4)


def test_beyond_the_exponent_limit_there_is_no_answer_but_no_error():
    """(R + T + C + W)/M between 200 and the long-run model's 700: NaN and a False flag, not an exception."""
    sc = files.load_scenario("seed").replace(job_mtbf_h=1 / 60, checkpoint_stall_min=100.0, restart_min=150.0,
                                             deadline_h=1e6)
    out = engine.evaluate([sc, sc.replace(deadline_h=1.0)])       # a deadline far beyond, and one before w0
    assert np.isfinite(out["wall_h"]).all()
    assert out[["p_finish_by_deadline", "wall_h_p50", "wall_h_p99"]].isna().all().all()
    assert not out["deadline_approximation_ok"].any()


# -------------------------------------------------------------------- broadcasting, errors

def test_scalars_arrays_and_series():
    args = (43200.0, 67.96, 2.0, 1200.0, 10.0)
    p = wd.finish_probability(46000.0, *args)
    assert isinstance(p, float)
    assert isinstance(wd.wall_time_approximation_ok(*args), bool)
    arr = wd.finish_probability(np.array([45000.0, 46000.0, 47000.0]), *args)
    assert isinstance(arr, np.ndarray) and arr.shape == (3,) and arr[1] == p
    grid = wd.wall_time_quantile(np.array([[0.5], [0.9]]), *args[:3], np.array([1000.0, 1200.0]), args[4])
    assert grid.shape == (2, 2) and grid[0, 1] == wd.wall_time_quantile(0.5, *args)
    idx = pd.Index(["a", "b"], name="job")
    s = wd.finish_probability(pd.Series([46000.0, 47000.0], index=idx), *args)
    assert isinstance(s, pd.Series) and s.index.equals(idx) and s["a"] == p
    mom = wd.wall_time_moments(*args[:3], pd.Series([1200.0, 600.0], index=idx), args[4])
    assert isinstance(mom["variance"], pd.Series) and mom["mean"]["a"] == wd.wall_time_moments(*args)["mean"]
    ok = wd.wall_time_approximation_ok(*args[:3], pd.Series([1200.0, 1e6], index=idx), args[4])  # 0.04 failures
    assert ok.dtype == bool and list(ok) == [True, False]


@pytest.mark.parametrize("call, field", [
    (lambda: wd.finish_probability(46000.0, 43200.0, 67.96, -2.0, 1200.0), "C"),
    (lambda: wd.finish_probability(0.0, 43200.0, 67.96, 2.0, 1200.0), "deadline"),
    (lambda: wd.finish_probability("soon", 43200.0, 67.96, 2.0, 1200.0), "deadline"),
    (lambda: wd.wall_time_quantile(0.0, 43200.0, 67.96, 2.0, 1200.0), "p"),
    (lambda: wd.wall_time_quantile(1.0, 43200.0, 67.96, 2.0, 1200.0), "p"),
    (lambda: wd.wall_time_moments(43200.0, 67.96, 2.0, 0.0), "M"),
    (lambda: wd.wall_time_moments(43200.0, 67.96, 2.0, 1200.0, R=np.nan), "R"),
    (lambda: wd.wall_time_moments(43200.0, 10.0, 2.0, 1200.0, W=20.0, slowdown=0.1), "W"),
    (lambda: wd.wall_time_moments(43200.0, 67.96, 2.0, 1200.0, final_save="yes"), "final_save"),
    (lambda: wd.wall_time_approximation_ok(np.ones(3), np.ones(2), 2.0, 1200.0), "shapes"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(engine.InputError) as err:
        call()
    assert err.value.field == field
