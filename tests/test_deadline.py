"""Tests of engine.deadline: exact finite-job expectation, Monte Carlo, deadlines, CLI.

Statistical checks use fixed seeds, so they are deterministic; their bounds (3 standard errors)
are the ones a correct simulator meets with probability ~99.7 % for any seed.
"""

from __future__ import annotations

import json
import math
import tracemalloc

import numpy as np
import pytest
import typer
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from typer.testing import CliRunner

from ckptplan import engine
from ckptplan.engine import deadline as dl
from ckptplan.engine import finite as fin
from ckptplan.engine import gaps
from ckptplan.engine import montecarlo as mc
from ckptplan.engine import montecarlo_fast as mcf
from ckptplan.engine.montecarlo import FailureLaw

# ------------------------------------------------------------------ exact finite expectation

SYNC_CASES = [  # (n, T, C, M, R)
    (10, 60.0, 2.0, 300.0, 5.0),
    (636, 68.0, 2.0, 1200.0, 10.0),
    (3, 50.0, 25.0, 50.0, 0.0),       # C/M = 0.5
    (1, 45.0, 1.0, 5.0, 3.0),
]


@pytest.mark.parametrize("n,T,C,M,R", SYNC_CASES)
def test_finite_equals_long_run_for_sync_final_save_whole_segments(n, T, C, M, R):
    finite = fin.finite_expected_wall_time(n * T, T, C, M, R, final_save=True)
    assert finite == pytest.approx(engine.expected_wall_time(n * T, T, C, M, R), rel=1e-12)


@pytest.mark.parametrize("n,T,C,M,R", SYNC_CASES)
@pytest.mark.parametrize("W,s", [(20.0, 0.2), (40.0, 0.0), (10.0, 0.9)])
def test_async_finite_exceeds_long_run_by_the_clean_first_segment(n, T, C, M, R, W, s):
    finite = fin.finite_expected_wall_time(n * T, T, C, M, R, W, s, final_save=True)
    long_run = engine.expected_wall_time(n * T, T, C, M, R, W, s)
    gap = M * math.exp(R / M) * math.expm1(W * (1 - s) / M)
    assert finite - long_run == pytest.approx(gap, abs=1e-12 * long_run)
    # and the closed form quoted in the docstring
    L0, P = T + C + W, T + C + W * s
    closed = M * math.exp(R / M) * (math.expm1(L0 / M) + (n - 1) * math.exp(L0 / M) * -math.expm1(-P / M))
    assert finite == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("final_save", [False, True])
def test_finite_sync_ragged_matches_segment_sum(final_save):
    work, T, C, M, R = 1000.0, 60.0, 3.0, 200.0, 7.0       # 16 full segments + 40
    lengths = [T + C] * 16 + [40.0 + (C if final_save else 0.0)]
    by_hand = M * math.exp(R / M) * sum(math.expm1(L / M) for L in lengths)
    assert fin.finite_expected_wall_time(work, T, C, M, R, final_save=final_save) == pytest.approx(by_hand, rel=1e-13)


def test_finite_broadcasts_and_keeps_kind():
    T = np.array([30.0, 60.0, 90.0])
    out = fin.finite_expected_wall_time(1000.0, T, 2.0, 300.0, 5.0)
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    for i, t in enumerate(T):
        assert out[i] == fin.finite_expected_wall_time(1000.0, float(t), 2.0, 300.0, 5.0)
    assert isinstance(fin.finite_expected_wall_time(1000.0, 60.0, 2.0, 300.0), float)


def test_failure_free_wall_time_cases():
    # sync: work + (n-1) C, plus C if final save
    assert fin.failure_free_wall_time(1000, 60, 2) == pytest.approx(1000 + 16 * 2)
    assert fin.failure_free_wall_time(1000, 60, 2, final_save=True) == pytest.approx(1000 + 17 * 2)
    # async, last segment 40 >= a = 16: each of the 16 saves costs C + W s; a final save adds C + W idle
    assert fin.failure_free_wall_time(1000, 60, 2, 20, 0.2) == pytest.approx(1000 + 16 * (2 + 4))
    assert fin.failure_free_wall_time(1000, 60, 2, 20, 0.2, final_save=True) == pytest.approx(1000 + 16 * 6 + 2 + 20)
    # async, last segment 5 < a = 16: the job ends while the last write runs, computing at 0.8 speed
    assert fin.failure_free_wall_time(965, 60, 2, 20, 0.2) == pytest.approx(16 * 60 + 16 * 2 + 15 * 4 + 5 / 0.8)
    assert fin.segment_count(965, 60) == 17 and fin.segment_count(300, 100) == 3 and fin.segment_count(1, 100) == 1


# ---------------------------------------------------------------- simulation vs exact formula

MC_CASES = [  # work, T, C, M, R, W, slowdown, final_save
    (1000.0, 60.0, 2.0, 300.0, 5.0, 0.0, 0.0, False),
    (1000.0, 60.0, 2.0, 300.0, 5.0, 0.0, 0.0, True),
    (1000.0, 60.0, 30.0, 60.0, 10.0, 0.0, 0.0, False),    # C/M = 0.5, R > 0
    (1010.0, 45.0, 25.0, 50.0, 20.0, 0.0, 0.0, True),     # C/M = 0.5, ragged
    (500.0, 40.0, 0.5, 400.0, 0.0, 0.0, 0.0, False),      # R = 0
    (1000.0, 60.0, 2.0, 300.0, 5.0, 20.0, 0.2, True),     # async, whole segments
    (1010.0, 60.0, 2.0, 300.0, 5.0, 20.0, 0.2, False),    # async, ragged last 50 >= a
    (965.0, 60.0, 2.0, 300.0, 5.0, 20.0, 0.2, False),     # async, last 5 < a: job ends mid-write
    (965.0, 60.0, 2.0, 300.0, 5.0, 20.0, 0.2, True),      # ... with a final save: waits for the write
    (600.0, 50.0, 1.0, 100.0, 10.0, 50.0, 0.0, False),    # async, write as long as the interval (W(1-s) = T)
    (125.0, 60.0, 2.0, 30.0, 5.0, 20.0, 0.5, True),       # short job against M
    (40.0, 60.0, 2.0, 30.0, 5.0, 20.0, 0.2, False),       # a single segment
    (43200.0, 25.5, 2.0, 180.0, 10.0, 0.0, 0.0, False),   # 30-day job, M = 3 h: ~300 failures per run
    (43200.0, 25.5, 2.0, 180.0, 10.0, 4.0, 0.1, True),    # ... async, with a final save
]


@pytest.mark.parametrize("method", ["per_window", "per_failure"])
@pytest.mark.parametrize("case_id", range(len(MC_CASES)))
def test_simulated_mean_matches_exact_within_3_se(case_id, method):
    work, T, C, M, R, W, s, fs = MC_CASES[case_id]
    sim = mc.simulate(work, T, C, M, R, W, s, runs=20000, seed=100 + case_id, final_save=fs, method=method)
    exact = fin.finite_expected_wall_time(work, T, C, M, R, W, s, final_save=fs)
    assert abs(sim.mean() - exact) < 3 * sim.standard_error()
    # rollbacks (failures outside restarts) match the bracket of the formula
    rb = fin.finite_expected_rollbacks(work, T, C, M, W, s, final_save=fs)
    assert abs(sim.rollbacks.mean() - rb) < 3 * mc.standard_error(sim.rollbacks.astype(float))
    # Wald's identity: E[all failures] = E[wall] / M
    assert abs(np.mean(sim.failures - sim.wall / M)) < 3 * mc.standard_error(sim.failures - sim.wall / M)
    # nobody beats the failure-free schedule, and runs without failures take exactly that long
    assert sim.wall.min() >= sim.failure_free * (1 - 1e-12)
    assert np.allclose(sim.wall[sim.failures == 0], sim.failure_free, rtol=1e-12)
    assert np.all(sim.failures >= sim.rollbacks) and np.all(sim.restart_time >= R * sim.rollbacks - 1e-9)


REF_CASES = [  # work, T, C, M, R, W, slowdown, final_save
    (1000.0, 60.0, 2.0, 300.0, 5.0, 0.0, 0.0, False),
    (1000.0, 60.0, 30.0, 60.0, 10.0, 0.0, 0.0, True),
    (965.0, 60.0, 2.0, 300.0, 5.0, 20.0, 0.2, False),
    (965.0, 60.0, 2.0, 300.0, 5.0, 20.0, 0.2, True),
    (1010.0, 60.0, 2.0, 300.0, 5.0, 20.0, 0.2, False),
    (600.0, 50.0, 1.0, 100.0, 10.0, 50.0, 0.0, True),
    (125.0, 60.0, 0.0, 30.0, 5.0, 20.0, 0.99, True),
    (40.0, 60.0, 2.0, 30.0, 5.0, 20.0, 0.2, False),
]


@pytest.mark.parametrize("law", [FailureLaw.exponential(), FailureLaw.weibull(0.6),
                                 FailureLaw.empirical([1.0, 2.0, 9.0, 30.0])], ids=["exp", "weibull", "empirical"])
@pytest.mark.parametrize("case_id", range(len(REF_CASES)))
def test_vectorised_equals_per_event_reference_run_by_run(case_id, law):
    work, T, C, M, R, W, s, fs = REF_CASES[case_id]
    fast = mc.simulate(work, T, C, M, R, W, s, runs=300, seed=case_id, failures=law, final_save=fs,
                       method="per_failure")
    slow = mc.reference_simulation(work, T, C, M, R, W, s, runs=300, seed=case_id, failures=law, final_save=fs)
    np.testing.assert_allclose(fast.wall, slow.wall, rtol=1e-10)
    np.testing.assert_array_equal(fast.failures, slow.failures)
    np.testing.assert_array_equal(fast.rollbacks, slow.rollbacks)
    np.testing.assert_allclose(fast.restart_time, slow.restart_time, rtol=1e-10, atol=1e-9)


@settings(max_examples=150, deadline=None, database=None)
@given(
    work=st.floats(1.0, 2000.0), T=st.floats(1.0, 300.0), C=st.floats(0.0, 30.0), M=st.floats(20.0, 2000.0),
    R=st.floats(0.0, 30.0), W_frac=st.floats(0.0, 1.0), s=st.floats(0.0, 0.95), fs=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_vectorised_equals_reference_property(work, T, C, M, R, W_frac, s, fs, seed):
    W = W_frac * T / (1 - s)          # any write that is durable before the next save
    assume((T + C + W + R) / M < 2.0)  # keeps the run count per example small
    fast = mc.simulate(work, T, C, M, R, W, s, runs=25, seed=seed, final_save=fs, method="per_failure")
    slow = mc.reference_simulation(work, T, C, M, R, W, s, runs=25, seed=seed, final_save=fs)
    np.testing.assert_allclose(fast.wall, slow.wall, rtol=1e-9)
    np.testing.assert_array_equal(fast.failures, slow.failures)
    assert fast.wall.min() >= fin.failure_free_wall_time(work, T, C, W, s, fs) * (1 - 1e-12)
    # the per-window sampler (other random numbers) keeps the same invariants
    win = mc.simulate(work, T, C, M, R, W, s, runs=25, seed=seed, final_save=fs, method="per_window")
    assert win.wall.min() >= win.failure_free * (1 - 1e-12)
    assert np.allclose(win.wall[win.failures == 0], win.failure_free, rtol=1e-12)
    assert np.all(win.failures >= win.rollbacks) and np.all(win.restart_time >= R * win.rollbacks - 1e-9)


# ----------------------------------------------- per-window sampler against the per-failure one

@pytest.mark.parametrize("case_id", range(len(MC_CASES)))
def test_per_window_equals_per_failure_in_distribution(case_id):
    # the two samplers draw different random numbers (counts per window vs one gap per failure), so
    # they can only agree in distribution: means within 3 standard errors, KS tests on the walls
    work, T, C, M, R, W, s, fs = MC_CASES[case_id]
    win = mc.simulate(work, T, C, M, R, W, s, runs=20000, seed=200 + case_id, final_save=fs, method="per_window")
    per = mc.simulate(work, T, C, M, R, W, s, runs=20000, seed=300 + case_id, final_save=fs, method="per_failure")
    for field in ("wall", "failures", "rollbacks", "restart_time"):
        x, y = getattr(win, field).astype(float), getattr(per, field).astype(float)
        assert abs(x.mean() - y.mean()) <= 3 * math.hypot(mc.standard_error(x), mc.standard_error(y)), field
    assert stats.ks_2samp(win.wall, per.wall).pvalue > 0.001


def test_per_window_wall_times_match_per_failure_over_seeds():
    job = (43200.0, 25.5, 2.0, 180.0, 10.0)     # 30-day job at M = 3 h, ~300 failures per run
    for seed in range(4):
        win = mc.simulate_wall_times(*job, runs=10000, seed=seed, method="per_window")
        per = mc.simulate_wall_times(*job, runs=10000, seed=50 + seed, method="per_failure")
        assert stats.ks_2samp(win, per).pvalue > 0.01
        assert abs(win.mean() - per.mean()) < 3 * math.hypot(mc.standard_error(win), mc.standard_error(per))
    # the default sampler for exponential failures is the per-window one (Weibull k = 1 included)
    np.testing.assert_array_equal(mc.simulate_wall_times(*job, runs=500, seed=1),
                                  mc.simulate_wall_times(*job, runs=500, seed=1, method="per_window"))
    np.testing.assert_array_equal(mc.simulate_wall_times(*job, runs=500, seed=1, failures=FailureLaw.weibull(1.0)),
                                  mc.simulate_wall_times(*job, runs=500, seed=1, method="per_window"))
    np.testing.assert_array_equal(
        mc.simulate_wall_times(*job, runs=200, seed=1, failures=FailureLaw.weibull(0.8)),
        mc.simulate_wall_times(*job, runs=200, seed=1, failures=FailureLaw.weibull(0.8), method="per_failure"))


def test_simulate_intervals_is_per_failure_on_one_stream():
    Ts = [30.0, 55.5, 60.0, 140.0]
    seen = []
    sims = mc.simulate_intervals(2000.0, Ts, 2.0, 150.0, 5.0, 10.0, 0.2, runs=900, seed=4, final_save=True,
                                 progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (900, 900)
    for T, sim in zip(Ts, sims):
        one = mc.simulate(2000.0, T, 2.0, 150.0, 5.0, 10.0, 0.2, runs=900, seed=4, final_save=True,
                          method="per_failure")
        np.testing.assert_array_equal(sim.wall, one.wall)
        np.testing.assert_array_equal(sim.failures, one.failures)
        np.testing.assert_array_equal(sim.restart_time, one.restart_time)
        assert sim.failure_free == one.failure_free
    with pytest.raises(engine.InputError) as err:
        mc.simulate_intervals(1000.0, [60.0, -1.0], 2.0, 300.0)
    assert err.value.field == "intervals"


# ------------------------------------------------------------------------------ failure laws

def test_failure_law_draws_have_mean_M():
    rng = np.random.default_rng(0)
    for law in (FailureLaw.exponential(), FailureLaw.weibull(0.5), FailureLaw.weibull(3.0),
                FailureLaw.empirical([1.0, 2.0, 9.0])):
        x = law.draw(rng, 250.0, 200000)
        assert abs(x.mean() - 250.0) < 4 * mc.standard_error(x), law


def test_weibull_shape_one_is_exponential_in_distribution():
    job = (3000.0, 100.0, 5.0, 400.0, 10.0)
    exp_ = mc.simulate(*job, runs=20000, seed=1)
    wei = mc.simulate(*job, runs=20000, seed=2, failures=FailureLaw.weibull(1.0))
    assert abs(exp_.mean() - wei.mean()) < 3 * math.hypot(exp_.standard_error(), wei.standard_error())
    assert stats.ks_2samp(exp_.wall, wei.wall).pvalue > 0.01
    assert FailureLaw.weibull(1.0).is_exponential and FailureLaw.weibull(1.0).coefficient_of_variation == pytest.approx(1.0)


def test_weibull_below_one_widens_the_tail():
    work, T, C, M, R = 43200.0, 68.0, 2.0, 1200.0, 10.0
    exp_ = mc.simulate(work, T, C, M, R, runs=20000, seed=3)
    wei = mc.simulate(work, T, C, M, R, runs=20000, seed=3, failures=FailureLaw.weibull(0.5))
    # same mean time between failures, clustered failures: a wider spread and a later P99
    assert wei.wall.std() > 1.4 * exp_.wall.std()
    assert np.quantile(wei.wall, 0.99) - np.quantile(exp_.wall, 0.99) > 200.0   # minutes; ~20 SE of a P99
    assert stats.ks_2samp(exp_.wall, wei.wall).pvalue < 1e-6
    assert FailureLaw.weibull(0.5).coefficient_of_variation == pytest.approx(math.sqrt(5.0))  # Gamma(5)/Gamma(3)^2 - 1


def test_empirical_resampling_uses_only_rescaled_observations():
    law = FailureLaw.empirical([1.0, 3.0])               # mean 2: rescaled to mean M
    draws = law.draw(np.random.default_rng(0), 100.0, 10000)
    assert set(np.unique(draws)) == {50.0, 150.0}
    # deterministic failures every M: every run takes exactly the same time
    sim = mc.simulate(1000.0, 60.0, 2.0, 100.0, 5.0, runs=200, seed=0, failures=FailureLaw.empirical([7.0]))
    assert np.all(sim.wall == sim.wall[0]) and np.all(sim.failures == sim.failures[0])
    # by hand: failures at t = 100, 200, ...; after each restart (5 min) 95 min remain, room for one
    # 62-min window (segment + save), so failure f strikes with f checkpoints durable; after the 16th
    # (t = 1600) the restart ends at 1605 and the last 40-min segment ends the job at 1645
    assert sim.failures[0] == 16 and sim.wall[0] == pytest.approx(1645.0, rel=1e-12)


def test_empirical_with_unit_free_times_matches_its_rescaled_twin():
    hours = [0.5, 2.0, 7.5, 20.0]
    a = mc.simulate_wall_times(900.0, 60.0, 2.0, 300.0, 5.0, runs=500, seed=4, failures=FailureLaw.empirical(hours))
    b = mc.simulate_wall_times(900.0, 60.0, 2.0, 300.0, 5.0, runs=500, seed=4,
                               failures=FailureLaw.empirical([60 * h for h in hours]))
    np.testing.assert_allclose(a, b, rtol=1e-12)


# ------------------------------------------------------------------- reproducibility, errors

def test_reproducible_from_seed_and_common_random_numbers():
    job = (3000.0, 100.0, 5.0, 400.0, 10.0)
    a = mc.simulate_wall_times(*job, runs=3000, seed=9)
    np.testing.assert_array_equal(a, mc.simulate_wall_times(*job, runs=3000, seed=9))
    assert not np.array_equal(a, mc.simulate_wall_times(*job, runs=3000, seed=10))
    wall, fails = mc.simulate_wall_times(*job, runs=3000, seed=9, return_failures=True)
    np.testing.assert_array_equal(wall, a)
    assert fails.dtype.kind == "i" and fails.shape == (3000,)
    # per-failure sampler, same seed at a nearby interval: same failure histories, strongly correlated
    # wall times (the per-window default draws per interval: same-seed intervals are independent samples)
    a_pf = mc.simulate_wall_times(*job, runs=3000, seed=9, method="per_failure")
    np.testing.assert_array_equal(a_pf, mc.simulate_wall_times(*job, runs=3000, seed=9, method="per_failure"))
    near = mc.simulate_wall_times(3000.0, 110.0, 5.0, 400.0, 10.0, runs=3000, seed=9, method="per_failure")
    other = mc.simulate_wall_times(3000.0, 110.0, 5.0, 400.0, 10.0, runs=3000, seed=10, method="per_failure")
    assert np.corrcoef(a_pf, near)[0, 1] > 0.5
    assert abs(np.corrcoef(a_pf, other)[0, 1]) < 0.1
    # a Generator seeds reproducibly too
    g1 = mc.simulate_wall_times(*job, runs=100, seed=np.random.default_rng(5))
    g2 = mc.simulate_wall_times(*job, runs=100, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(g1, g2)


def test_standard_error_and_wilson_interval():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    assert mc.standard_error(x) == pytest.approx(np.std(x, ddof=1) / 2.0)
    sim = mc.simulate(500.0, 50.0, 1.0, 200.0, runs=1000, seed=0)
    assert sim.standard_error() == mc.standard_error(sim.wall)
    lo, hi = mc.wilson_interval(0, 10)
    z = stats.norm.ppf(0.975)
    assert lo == 0.0 and hi == pytest.approx(z * z / (10 + z * z))
    lo, hi = mc.wilson_interval(50, 100)
    assert (lo + hi) / 2 == pytest.approx(0.5)
    assert hi - lo == pytest.approx(2 * z * math.sqrt(0.25 / 100 + z * z / 40000) / (1 + z * z / 100), rel=1e-12)
    assert mc.wilson_interval(10, 10)[1] == pytest.approx(1.0)


@pytest.mark.parametrize("call,field", [
    (lambda: mc.simulate(1000, 60, -2, 300), "C"),
    (lambda: mc.simulate(1000, 60, 2, float("nan")), "M"),
    (lambda: mc.simulate(1000, 60, 2, 300, R=-1), "R"),
    (lambda: mc.simulate(1000, 60, 2, 300, W=80), "W"),
    (lambda: mc.simulate(1000, 60, 2, 300, W=30, slowdown=1.0), "slowdown"),
    (lambda: mc.simulate(1000, [60, 70], 2, 300), "T"),
    (lambda: mc.simulate(1000, 60, 2, 300, runs=0), "runs"),
    (lambda: mc.simulate(1000, 60, 2, 300, seed=-1), "seed"),
    (lambda: mc.simulate(1000, 60, 2, 300, final_save="yes"), "final_save"),
    (lambda: mc.simulate(1000, 60, 2, 300, failures="gamma"), "failures"),
    (lambda: mc.simulate(1000, 60, 2, 300, failures="weibull"), "failures"),
    (lambda: mc.simulate(1000, 60, 2, 300, method="fast"), "method"),
    (lambda: mc.simulate(1000, 60, 2, 300, failures=FailureLaw.weibull(0.7), method="per_window"), "method"),
    (lambda: mc.simulate(1e5, 600, 2, 5), "M"),
    (lambda: FailureLaw.weibull(-0.5), "weibull_shape"),
    (lambda: FailureLaw.weibull(float("nan")), "weibull_shape"),
    (lambda: FailureLaw.weibull(0.1), "weibull_shape"),
    (lambda: FailureLaw("lognormal"), "failures"),
    (lambda: FailureLaw.empirical([1.0, -2.0]), "failure_times"),
    (lambda: FailureLaw.empirical([]), "failure_times"),
    (lambda: fin.finite_expected_wall_time(1000, 0, 2, 300), "T"),
    (lambda: fin.finite_expected_wall_time(1000, 60, 2, 300, W=70), "W"),
    (lambda: fin.finite_expected_wall_time(1e6, 1000, 1, 1), "M"),
    (lambda: fin.best_segment_count(1000, 0, 300), "C"),
    (lambda: fin.best_segment_count(-5, 2, 300), "work"),
    (lambda: fin.best_segment_count(1e4, 800, 1), "M"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(engine.InputError) as err:
        call()
    assert err.value.field == field
    assert str(err.value).startswith(field)


def test_runs_that_never_finish_are_refused(monkeypatch):
    monkeypatch.setattr(gaps, "MAX_FAILURES_PER_RUN", 48)
    with pytest.raises(engine.InputError) as err:
        mc.simulate(5000.0, 60.0, 2.0, 50.0, 1.0, runs=100, seed=0, method="per_failure")   # ~200 failures per run
    assert err.value.field == "failures" and "failures" in err.value.rule
    assert mc.simulate(200.0, 60.0, 2.0, 50.0, 1.0, runs=100, seed=0, method="per_failure").runs == 100


@pytest.mark.parametrize("method", ["per_window", "per_failure"])
def test_memory_is_bounded_whatever_the_failures_per_run(method, monkeypatch):
    # small blocks: besides its four result arrays a simulation holds a few blocks, never the failure
    # histories (which here would take 4000 runs x ~210 failures x 8 bytes = 6.7 MB)
    monkeypatch.setattr(gaps, "RUN_BLOCK", 256)
    monkeypatch.setattr(gaps, "GAP_CHUNK", 16)
    monkeypatch.setattr(mcf, "WINDOW_BLOCK", 256)
    monkeypatch.setattr(mcf, "PIECE", 4096)
    job, runs = (5000.0, 60.0, 2.0, 50.0, 1.0), 4000
    tracemalloc.start()
    try:
        sim = mc.simulate(*job, runs=runs, seed=0, method=method)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sim.failures.mean() > 150
    assert peak < 32 * runs + 1_000_000, peak


def test_block_sizes_change_nothing_but_the_stream(monkeypatch):
    job = (2000.0, 60.0, 2.0, 100.0, 5.0, 10.0, 0.2)
    # per window: pieces of the lost-time draws only regroup the sums (the stream is the same)
    whole = mc.simulate(*job, runs=700, seed=3, method="per_window")
    monkeypatch.setattr(mcf, "PIECE", 7)
    pieces = mc.simulate(*job, runs=700, seed=3, method="per_window")
    np.testing.assert_allclose(pieces.wall, whole.wall, rtol=1e-12)
    np.testing.assert_allclose(pieces.restart_time, whole.restart_time, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(pieces.failures, whole.failures)
    # per failure: many blocks of runs and chunks of gaps, still run by run equal to the reference
    monkeypatch.setattr(gaps, "RUN_BLOCK", 37)
    monkeypatch.setattr(gaps, "GAP_CHUNK", 3)
    for law in (FailureLaw.exponential(), FailureLaw.weibull(0.7)):
        fast = mc.simulate(*job, runs=200, seed=5, failures=law, method="per_failure")
        slow = mc.reference_simulation(*job, runs=200, seed=5, failures=law)
        np.testing.assert_allclose(fast.wall, slow.wall, rtol=1e-10)
        np.testing.assert_array_equal(fast.failures, slow.failures)
        np.testing.assert_array_equal(fast.rollbacks, slow.rollbacks)


def test_error_message_names_value_and_rule():
    with pytest.raises(ValueError, match=r"W=80\.0: the background write must be durable"):
        mc.simulate(1000, 60, 2, 300, W=80)
    with pytest.raises(ValueError, match=r"C=-2\.0: must be >= 0"):
        fin.finite_expected_wall_time(1000, 60, -2, 300)


# ------------------------------------------------------------------------ best segment count

@pytest.mark.parametrize("work,C,M", [
    (43200.0, 2.0, 1200.0), (100.0, 2.0, 1200.0), (1000.0, 50.0, 60.0), (10.0, 5.0, 2.0),
    (5000.0, 0.01, 100.0), (3.0, 3.0, 1.0), (50.0, 0.5, 10.0), (1.0, 10.0, 1.0), (2000.0, 30.0, 5.0),
])
def test_best_segment_count_brute_force(work, C, M):
    best = fin.best_segment_count(work, C, M, R=4.0)
    bound = int(best) * 3 + 300
    n = np.arange(1, bound + 1, dtype=float)
    E = fin.finite_expected_wall_time(work, work / n, C, M, 4.0)
    E_best = fin.finite_expected_wall_time(work, work / best, C, M, 4.0)
    assert E_best <= E.min() * (1 + 1e-12)
    assert best == n[np.argmin(E)] or E_best == pytest.approx(E.min(), rel=1e-12)


def test_best_segment_count_vectorised_and_near_long_run_for_long_jobs():
    work, C, M = np.array([43200.0, 100.0, 1000.0]), 2.0, np.array([1200.0, 1200.0, 60.0])
    out = fin.best_segment_count(work, C, M)
    assert list(out) == [fin.best_segment_count(w, C, m) for w, m in zip(work, M)]
    # a 36-MTBF job: the finite optimum is within one segment of work / long-run optimum
    assert abs(out[0] - 43200.0 / engine.exact_optimal_interval(2.0, 1200.0)) <= 1.0
    # a job of 1/12 MTBF: two segments, the long-run answer would say 1.5
    assert out[1] == 2.0


# ------------------------------------------------------------------------ scenario answers

SEED_FIELDS = dict(  # the seed reference case, spelled out so that template edits cannot move the tests
    name="seed-test", checkpoint_stall_min=2.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=128,
    gpus_per_node=8, useful_training_h=720.0, price_per_gpu_hour=2.5, deadline_h=840.0,
)


@pytest.fixture(scope="module")
def seed_scenario():
    return engine.Scenario(**SEED_FIELDS)


def test_deadline_report_figures_are_consistent(seed_scenario):
    rep = dl.deadline_report(seed_scenario, deadline_h=775.0, runs=4000, seed=1)
    assert rep["deadline_h"] == 775.0 and rep["job_mtbf_h"] == pytest.approx(20.0)
    assert rep["interval_min"] == pytest.approx(float(engine.exact_optimal_interval(2.0, 1200.0)))
    assert 0.0 < rep["p_finish"] < 1.0
    assert rep["p_finish_low"] < rep["p_finish"] < rep["p_finish_high"]
    assert rep["p_finish_se"] == pytest.approx(math.sqrt(rep["p_finish"] * (1 - rep["p_finish"]) / 4000))
    assert rep["failure_free_wall_h"] < rep["wall_h_p50"] < rep["wall_h_p90"] < rep["wall_h_p99"]
    assert abs(rep["wall_h_mean"] - rep["expected_wall_h_exact"]) < 3 * rep["wall_h_mean_se"]
    parts = rep["useful_h"] + rep["save_h"] + rep["rework_h"] + rep["restart_h"]
    assert parts == pytest.approx(rep["wall_h_mean"], rel=1e-12)
    assert rep["gpus"] == 1024
    assert rep["gpu_hours_mean"] == pytest.approx(rep["wall_h_mean"] * 1024, rel=1e-12)
    assert rep["cost_mean"] == pytest.approx(rep["gpu_hours_mean"] * 2.5, rel=1e-12)
    assert rep["cost_p90"] == pytest.approx(rep["wall_h_p90"] * 1024 * 2.5, rel=1e-9)
    # a generous deadline is always met; a deadline just under the failure-free time never is
    assert dl.deadline_report(seed_scenario, deadline_h=900.0, runs=500)["p_finish"] == 1.0
    tight = dl.deadline_report(seed_scenario, deadline_h=rep["failure_free_wall_h"] - 0.01, runs=500)
    assert tight["p_finish"] == 0.0 and tight["p_finish_high"] > 0.0


def test_deadline_report_weibull_has_no_exact_mean(seed_scenario):
    rep = dl.deadline_report(seed_scenario, runs=500, interval_min=90.0, failures=FailureLaw.weibull(0.7))
    assert rep["expected_wall_h_exact"] is None and rep["interval_min"] == 90.0
    assert "Weibull" in rep["failure_law"]


@pytest.mark.parametrize("kwargs,field", [
    ({"deadline_h": 700.0}, "deadline_h"),
    ({"deadline_h": -5.0}, "deadline_h"),
    ({"deadline_h": float("nan")}, "deadline_h"),
    ({"interval_min": 0.0}, "interval_min"),
    ({"runs": 1}, "runs"),
    ({"failures": "pareto"}, "failures"),
])
def test_deadline_report_bad_input(seed_scenario, kwargs, field):
    with pytest.raises(engine.InputError) as err:
        dl.deadline_report(seed_scenario, **kwargs)
    assert err.value.field == field


def test_deadline_shorter_than_work_names_value_and_rule(seed_scenario):
    with pytest.raises(ValueError, match=r"deadline_h=700\.0: must be >= useful_training_h = 720 h"):
        dl.deadline_report(seed_scenario, deadline_h=700.0)
    no_deadline = seed_scenario.replace(deadline_h=None)
    with pytest.raises(engine.InputError) as err:
        dl.deadline_search(no_deadline)
    assert err.value.field == "deadline_h"
    with pytest.raises(engine.InputError) as err:
        dl.deadline_report("seed")
    assert err.value.field == "scenario"


def test_deadline_search_short_job(seed_scenario):
    sc = seed_scenario.replace(useful_training_h=10.0, deadline_h=11.0)
    seen = []
    res = dl.deadline_search(sc, target=0.7, runs=20000, seed=1, progress=lambda i, n: seen.append((i, n)))
    table = res.candidates
    assert seen[-1] == (len(table), len(table)) and len(seen) == len(table)
    assert res.best_probability["p_finish"] == table["p_finish"].max()
    meeting = table[table["p_finish"] >= 0.7]
    assert res.cheapest_meeting_target["cost_mean"] == meeting["cost_mean"].min()
    assert res.cheapest_meeting_target["p_finish"] >= 0.7
    assert np.isclose(table["interval_min"], res.exact_optimum_interval_min).any()
    assert res.finite_optimum_segments == fin.best_segment_count(600.0, 2.0, 1200.0, 10.0)
    assert res.finite_optimum_interval_min == pytest.approx(600.0 / res.finite_optimum_segments)
    # exponential: the simulated means agree with the exact finite expectation at every interval
    assert np.all(np.abs(table["wall_h_mean"] - table["expected_wall_h_exact"]) < 4 * table["wall_h_mean_se"])
    # the deadline-optimal interval is well below the long-run optimum (68 min), by more than noise
    assert res.best_probability["interval_min"] < 0.9 * res.exact_optimum_interval_min
    assert any("maximise the chance" in n for n in res.notes)
    assert any("spans only 0.5 MTBFs" in n for n in res.notes)
    json.dumps(res.to_dict())


def test_deadline_search_compares_intervals_on_the_same_failure_histories(seed_scenario):
    res = dl.deadline_search(seed_scenario, deadline_h=775.0, intervals_min=[50.0, 90.0], runs=3000, seed=2)
    job = dl._job(seed_scenario, 775.0, None)
    for _, row in res.candidates.iterrows():
        sim = mc.simulate(job.work, row["interval_min"], job.C, job.M, job.R, runs=3000, seed=2, method="per_failure")
        assert row["p_finish"] == np.mean(sim.wall <= job.deadline)
        assert row["wall_h_mean"] == pytest.approx(sim.mean() / 60.0, rel=1e-12)


def test_deadline_search_unreachable_target_and_explicit_grid(seed_scenario):
    res = dl.deadline_search(seed_scenario, deadline_h=760.0, target=0.99, intervals_min=[40.0, 68.0, 100.0],
                             runs=1000, seed=0, failures=FailureLaw.weibull(0.7))
    assert res.cheapest_meeting_target is None
    assert any("No interval tried reaches" in n for n in res.notes)
    assert any("more clustered than exponential" in n for n in res.notes)
    assert len(res.candidates) == 4   # the three asked for + the exact optimum
    async_sc = seed_scenario.replace(checkpoint_stall_min=0.2, async_write_min=4.0, async_slowdown_fraction=0.15)
    with pytest.raises(engine.InputError) as err:
        dl.deadline_search(async_sc, intervals_min=[2.0, 60.0], runs=100)
    assert err.value.field == "intervals_min"
    with pytest.raises(engine.InputError) as err:
        dl.deadline_search(seed_scenario, target=1.5, runs=100)
    assert err.value.field == "target"


# ------------------------------------------------------------------------------------- CLI

@pytest.fixture(scope="module")
def cli_app():
    from ckptplan.cli_deadline import register

    test_app = typer.Typer()

    @test_app.callback()
    def main() -> None:  # a callback keeps `deadline` a subcommand, as in the real app
        """ckptplan (test harness)."""

    register(test_app)
    return test_app


@pytest.fixture()
def seed_toml(tmp_path):
    import tomli_w

    path = tmp_path / "seed-test.toml"
    path.write_text(tomli_w.dumps({"scenario": SEED_FIELDS}), encoding="utf-8")
    return str(path)


def test_cli_deadline_json(cli_app, seed_toml):
    result = CliRunner().invoke(cli_app, ["deadline", "-t", seed_toml, "--runs", "400", "--deadline-h", "775", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["report"]["deadline_h"] == 775.0 and data["report"]["runs"] == 400
    assert 0.0 <= data["report"]["p_finish"] <= 1.0
    assert data["search"]["exact_optimum_interval_min"] == pytest.approx(67.955, abs=1e-3)
    assert data["search"]["candidates"] and data["search"]["finite_optimum_segments"] == 636


def test_cli_deadline_tables_and_weibull(cli_app, seed_toml):
    result = CliRunner().invoke(cli_app, ["deadline", "-t", seed_toml, "--runs", "300", "--weibull-shape", "0.7",
                                          "--target", "0.5", "--deadline-h", "800", "--interval-min", "50"])
    assert result.exit_code == 0, result.output
    assert "P(finish by 800 h)" in result.output and "saving every 50 min" in result.output and "Weibull" in result.output
    assert "Interval choice" in result.output and "highest" in result.output


@pytest.mark.parametrize("args,field", [
    (["--deadline-h", "100"], "deadline_h"),
    (["--weibull-shape", "-1"], "weibull_shape"),
    (["--runs", "0"], "runs"),
    (["--interval-min", "-3"], "interval_min"),
])
def test_cli_deadline_bad_input_exit_2(cli_app, seed_toml, args, field):
    result = CliRunner().invoke(cli_app, ["deadline", "-t", seed_toml, *args])
    assert result.exit_code == 2
    assert field in result.output and "Traceback" not in result.output
