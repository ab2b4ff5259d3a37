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


# ------------------------------------------------------------------ the fast kernel keeps the numbers

def _old_answers(work, T, C, M, R, W, s, deadline, D):
    """The kernel as it was written before it was made fast (one pass over all rows, both branches of the
    truncated-exponential cumulants picked with np.where, five attempt lengths, powers, a Python erfc per
    element): the reference the fast kernel must equal to rounding."""
    g = fin.job_geometry(work, T, C, W, s, False)
    x = np.stack(np.broadcast_arrays(g["full_clean"], g["last_clean"], g["full_flow"], g["last_flow"], R)) / M
    u = x * x
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        B = x / np.expm1(x)
        closed = (1.0 - B, 1.0 - B * (B + x), 2.0 - B * (B + x) * (2.0 * B + x))
    horner = [sum(c * u ** i for i, c in enumerate(coefs)) for coefs in (wd.SERIES_K1, wd.SERIES_K2, wd.SERIES_K3)]
    series = (x / 2.0 + u * horner[0], u * horner[1], u * u * horner[2])
    k = tuple(np.where(x < wd.SERIES_BELOW, a, b) for a, b in zip(series, closed))

    def rsum(n, v):
        return n[0] * v[0], n[1] * v[0] ** 2 + n[0] * v[1], n[2] * v[0] ** 3 + 3.0 * n[1] * v[0] * v[1] + n[0] * v[2]

    e, E = np.exp(x), np.expm1(x)
    n = (E, E * e, E * e * (1.0 + 2.0 * E))
    dm = D / M
    ey = e[4] * (1.0 + dm)
    rs = rsum(tuple(a[4] for a in n), (k[0][4] + dm,) + tuple(a[4] for a in k[1:]))
    Dk = (E[4] + dm * e[4], rs[1], rs[2])
    S = rsum(tuple(a[:2] for a in n), tuple(a[:2] + b for a, b in zip(k, Dk)))
    Q = (E[:2] * ey, S[1], S[2])
    xf, kf = x[2:4], tuple(a[2:4] for a in k)
    p, q = np.exp(-xf), -np.expm1(-xf)
    A2, A3 = kf[1] + Dk[1] + Q[1], kf[2] + Dk[2] + Q[2]
    d = (Q[0] - xf) + kf[0] + Dk[0]
    Z = (e[:2] * q * ey, q * A2 + p * q * d * d, q * A3 + 3.0 * p * q * A2 * d + p * q * (p - q) * d ** 3)
    last = g["last"]
    cum = [np.where(last == 0, Q[j][1], Q[j][0]) + np.maximum(last - 1.0, 0.0) * Z[j][0]
           + np.where(last >= 1, Z[j][1], 0.0) for j in range(3)]
    mean, sd, h = M * cum[0], np.sqrt(M ** 2 * cum[1]), cum[2] / cum[1] ** 1.5 / 6.0
    w0 = (np.where(last == 0, g["last_clean"], g["full_clean"]) + np.maximum(last - 1.0, 0.0) * g["full_flow"]
          + np.where(last >= 1, g["last_flow"], 0.0))
    p0 = np.exp(-w0 / M)
    out = {"skewness": 6.0 * h, "third": M ** 3 * cum[2]}
    for prob, z in wd.QUANTILES.items():
        v = z - h
        qq = mean + sd * (v + h * v * v + h * h * v ** 3 / 3.0)
        out[f"wall_p{round(prob * 100)}"] = np.where(prob <= p0, w0, np.maximum(qq, w0))
    t = (deadline - mean) / sd
    a = 1.0 + 3.0 * h * t
    uu = np.cbrt(a)
    z = 3.0 * t / (uu * uu + uu + 1.0) + h
    phi = np.array([0.5 * math.erfc(-zz / math.sqrt(2.0)) for zz in np.where(a > 0, z, 0.0)])
    gamma = np.where(a > 0, phi, np.where(h > 0, 0.0, 1.0))
    out["p_finish_by_deadline"] = np.where(deadline < w0, 0.0, np.maximum(gamma, p0))
    return out


def test_fast_kernel_equals_the_one_pass_formulas_to_rounding():
    """Blocks, one branch per element, products for powers and a vectorised erfc move no figure by more than
    rounding: within 1e-12 of the formulas written plainly (relative; P(finish) absolute)."""
    work, T, C, M, R, W, s = _random_jobs(3 * wd.BLOCK_ROWS + 17, 11)   # several blocks and a ragged one
    W[::3] = 0.0                                                        # synchronous rows among async ones
    D = R * 0.3
    deadline = work * np.random.default_rng(3).uniform(1.0, 3.0, work.size)
    deadline[::5] = np.nan                                              # rows without a deadline
    got = wd.deadline_answers_kernel(work, T, C, M, R, W, s, deadline, D=D)
    ref = _old_answers(work, T, C, M, R, W, s, deadline, D)
    for name in ("wall_p50", "wall_p90", "wall_p99"):
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-12, atol=0, err_msg=name)
    given = ~np.isnan(deadline)
    assert np.isnan(got["p_finish_by_deadline"][~given]).all()
    np.testing.assert_allclose(got["p_finish_by_deadline"][given], ref["p_finish_by_deadline"][given], rtol=0,
                               atol=1e-12)
    m = wd._kernel(work, T, C, M, R, W, s, False, D)
    np.testing.assert_allclose(m["skewness"], ref["skewness"], rtol=1e-12)
    np.testing.assert_allclose(m["third_central_moment"], ref["third"], rtol=1e-12)


def test_fast_kernel_with_a_downtime_and_without_async_writes_in_one_block():
    """A table with no background write (its flow windows are its clean ones, so only three attempt lengths are
    computed) gives the formulas' numbers, with and without a downtime."""
    work, T, C, M, R, _, _ = _random_jobs(500, 12)
    zero = np.zeros_like(T)
    for D in (zero, R * 0.5):
        got = wd.deadline_answers_kernel(work, T, C, M, R, zero, zero, work * 2.0, D=D)
        ref = _old_answers(work, T, C, M, R, zero, zero, work * 2.0, D)
        for name in ("wall_p50", "wall_p90", "wall_p99"):
            np.testing.assert_allclose(got[name], ref[name], rtol=1e-12, atol=0, err_msg=name)
        np.testing.assert_allclose(got["p_finish_by_deadline"], ref["p_finish_by_deadline"], rtol=0, atol=1e-12)


def test_blocks_give_the_numbers_of_one_pass(monkeypatch):
    """Cutting the rows into blocks changes no bit: each figure is computed element by element."""
    work, T, C, M, R, W, s = _random_jobs(1000, 13)
    deadline = np.where(np.arange(1000) % 4 == 0, np.nan, work * 1.5)
    whole = wd.deadline_answers_kernel(work, T, C, M, R, W, s, deadline)
    monkeypatch.setattr(wd, "BLOCK_ROWS", 64)
    blocked = wd.deadline_answers_kernel(work, T, C, M, R, W, s, deadline)
    for name, v in whole.items():
        assert np.array_equal(v, blocked[name], equal_nan=True), name


def test_normal_cdf_against_mpmath():
    """The vectorised Phi(z) = erfc(-z/sqrt 2)/2 within 1e-12 (relative) of 30-digit arithmetic, tails included."""
    z = np.concatenate([np.linspace(-37.0, 8.0, 4001), [np.nan]])
    got = wd._normal_cdf(z)
    mpmath.mp.dps = 30
    want = np.array([float(mpmath.erfc(-mpmath.mpf(float(v)) / mpmath.sqrt(2)) / 2) for v in z[:-1]])
    np.testing.assert_allclose(got[:-1], want, rtol=1e-12, atol=0)
    assert np.isnan(got[-1])
