"""Waste models: reference cases, independent checks of Daly's formulas, properties, bad input."""

import math

import mpmath
import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from ckptplan import engine
from ckptplan.engine import InputError

# ------------------------------------------------------------------ reference cases (templates/seed.toml)


def test_reference_young_c2():
    T = engine.young_interval(2, 1200)
    assert round(T, 1) == 69.3
    assert round(engine.first_order_waste(T, 2, 1200) * 100, 2) == 5.77
    assert engine.young_min_waste(2, 1200) == pytest.approx(engine.first_order_waste(T, 2, 1200), rel=1e-14)


def test_reference_young_c05():
    T = engine.young_interval(0.5, 1200)
    assert round(T, 1) == 34.6
    assert round(engine.first_order_waste(T, 0.5, 1200) * 100, 2) == 2.89


def test_reference_scaling_interval():
    m128, m256 = engine.job_mtbf(2560, 128), engine.job_mtbf(2560, 256)
    assert (m128, m256) == (20.0, 10.0)
    assert round(engine.young_interval(2, m128 * 60), 1) == 69.3
    assert round(engine.young_interval(2, m256 * 60), 1) == 49.0


@pytest.mark.parametrize("M_min, published", [(24 * 60, 117), (6 * 60, 57), (15, 9.1)])
def test_daly_published_optima(M_min, published):
    """Daly 2006, Figs. 3-5: a 5-minute dump gives 117, 57 and 9.1 min."""
    T = engine.daly_interval(5, M_min)
    assert round(T, 1 if published < 10 else 0) == published


# ------------------------------------------------------------- Daly, computed independently


def _daly_by_hand(C, M):
    # written out term by term from Daly (2006), not calling the engine
    if C >= 2 * M:
        return M
    xi = C / (2 * M)
    return math.sqrt(2 * C * M) * (1 + math.sqrt(xi) / 3 + xi / 9) - C


@pytest.mark.parametrize("C, M", [(5, 1440), (5, 360), (5, 15), (2, 1200), (0.01, 1e6), (29.9, 15), (30, 15), (100, 15)])
def test_daly_interval_matches_hand_computation(C, M):
    assert engine.daly_interval(C, M) == pytest.approx(_daly_by_hand(C, M), rel=1e-13)


def test_daly_hand_values_literal():
    # C = 5, M = 15: xi = 1/6; sqrt(150) = 12.247448713915890; bracket = 1 + 0.40824829046386/3 + 1/54
    expected = 12.247448713915890 * (1 + 0.4082482904638630 / 3 + 1 / 54) - 5
    assert engine.daly_interval(5, 15) == pytest.approx(expected, rel=1e-12)
    assert engine.daly_interval(40, 15) == 15.0  # C >= 2M branch: T = M


def _mp_expected(work, T, C, M, R, W=0, s=0):
    work, T, C, M, R, W, s = (mpmath.mpf(v) for v in (work, T, C, M, R, W, s))
    P, L = T + C + W * s, T + C + W
    return M * mpmath.e ** (R / M) * mpmath.e ** (L / M) * (1 - mpmath.e ** (-P / M)) * work / T


@pytest.mark.parametrize("work, T, C, M, R", [
    (43200, 68, 2, 1200, 10), (1000, 10, 5, 15, 10), (500, 100, 0.5, 20, 0), (1, 1e-3, 1e-6, 1e5, 1e3),
])
def test_expected_wall_time_matches_daly_formula_at_high_precision(work, T, C, M, R):
    mpmath.mp.dps = 40
    direct = M * math.exp(R / M) * math.expm1((T + C) / M) * work / T  # Daly's formula (expm1 for exp(x) - 1)
    assert engine.expected_wall_time(work, T, C, M, R) == pytest.approx(float(_mp_expected(work, T, C, M, R)), rel=1e-12)
    assert engine.expected_wall_time(work, T, C, M, R) == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("C, M", [(2, 1200), (5, 15), (1e-4, 1e4), (1e-9, 1.0), (7, 3), (50, 1), (0.5, 1200)])
def test_exact_optimum_solves_first_order_condition(C, M):
    """Independent check: mpmath root of d/dT[(exp((T+C)/M) - 1)/T] = 0 at 40 digits."""
    mpmath.mp.dps = 40
    Cm, Mm = mpmath.mpf(C), mpmath.mpf(M)
    f = lambda T: mpmath.diff(lambda t: (mpmath.e ** ((t + Cm) / Mm) - 1) / t, T)
    start = min(math.sqrt(2 * C * M), 0.9 * M)
    ref = mpmath.findroot(lambda T: (1 - T / Mm) * mpmath.e ** ((T + Cm) / Mm) - 1, start, tol=1e-35)
    assert abs(f(ref)) < 1e-20 * (1 + abs(f(ref / 2)))
    assert engine.exact_optimal_interval(C, M) == pytest.approx(float(ref), rel=1e-11)


@pytest.mark.parametrize("C, M, R, W, s", [(2, 1200, 10, 0, 0), (5, 15, 10, 0, 0), (0.2, 1200, 10, 4, 0.15),
                                           (0.0, 600, 5, 3, 0.5), (1, 30, 0, 20, 0.9)])
def test_exact_optimum_beats_a_numeric_optimiser(C, M, R, W, s):
    T_star = engine.exact_optimal_interval(C, M, W, s)
    lo = W * (1 - s)
    res = minimize_scalar(lambda T: engine.waste_fraction(T, C, M, R, W, s), bounds=(max(lo, 1e-9), 5 * M),
                          method="bounded", options={"xatol": 1e-10 * M})
    assert engine.waste_fraction(T_star, C, M, R, W, s) <= res.fun + 1e-13
    assert T_star == pytest.approx(max(res.x, lo), rel=1e-4, abs=1e-7)


def test_exact_optimum_constraint_binds_for_long_writes():
    # C_eff = 0.01 * 30 = 0.3 -> unconstrained optimum ~ sqrt(2*0.3*1000) = 24.5 < W = 30
    assert engine.exact_optimal_interval(0.0, 1000.0, 30.0, 0.01) == pytest.approx(30 * 0.99)


def test_exact_optimum_limits():
    assert engine.exact_optimal_interval(0.0, 100.0) == 0.0
    assert engine.exact_optimal_interval(1e6, 1.0) == pytest.approx(1.0)
    c = 1e-10
    assert engine.exact_optimal_interval(c, 1.0) / engine.young_interval(c, 1.0) == pytest.approx(1.0, abs=1e-4)


# ------------------------------------------------------------------------- async and breakdown


def test_async_reduces_to_sync():
    args = (43200, 60, 2, 1200, 10)
    assert engine.expected_wall_time(*args, W=0, slowdown=0.3) == engine.expected_wall_time(*args)


def test_async_is_not_free():
    """A save with no blocking stall but a background write still costs time and rework."""
    free = engine.waste_fraction(40, 1e-12, 1200, 10)
    async_ = engine.waste_fraction(40, 0.0, 1200, 10, W=4, slowdown=0.15)
    assert async_ > free + 0.004
    # its cost is not only the throughput lost: the durability lag adds rework
    eff = engine.effective_stall(0.0, 4, 0.15)
    same_eff_sync = engine.waste_fraction(40, eff, 1200, 10)
    assert async_ > same_eff_sync


def test_async_matches_mp_formula():
    mpmath.mp.dps = 40
    got = engine.expected_wall_time(43200, 43, 0.2, 1200, 10, 4, 0.15)
    assert got == pytest.approx(float(_mp_expected(43200, 43, 0.2, 1200, 10, 4, 0.15)), rel=1e-12)


def test_async_write_must_fit_in_interval():
    with pytest.raises(InputError, match=r"W=.*durable before the next save"):
        engine.waste_fraction(10, 1, 1200, 0, W=20, slowdown=0.1)


@pytest.mark.parametrize("W, s", [(0, 0), (4, 0.15)])
def test_breakdown_adds_up_and_matches_independent_sync_terms(W, s):
    work, T, C, M, R = 43200.0, 60.0, 2.0, 1200.0, 10.0
    b = engine.time_breakdown(work, T, C, M, R, W, s)
    assert b["useful"] + b["save"] + b["rework"] + b["restart"] == pytest.approx(b["total"], rel=1e-12)
    assert b["total"] == pytest.approx(engine.expected_wall_time(work, T, C, M, R, W, s), rel=1e-14)
    if W == 0:
        n_seg, L = work / T, T + C
        failures = n_seg * (math.exp(L / M) - 1)  # geometric number of failed attempts per segment
        assert b["rollbacks"] == pytest.approx(failures, rel=1e-12)
        # every failure, restarts included: each rollback's restart is tried a geometric number of times, exp(R/M)
        assert b["failures"] == pytest.approx(failures * math.exp(R / M), rel=1e-12)
        assert b["failures"] == pytest.approx(b["total"] / M, rel=1e-14)
        assert b["restart"] == pytest.approx(failures * M * (math.exp(R / M) - 1), rel=1e-12)
        # rework = failed attempts * E[time to failure | failure within L]
        e_lost = M - L / (math.exp(L / M) - 1)
        assert b["rework"] == pytest.approx(failures * e_lost, rel=1e-9)
        assert b["save"] == pytest.approx(n_seg * C)


# --------------------------------------------------------------------------------- properties

pos = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(C=st.floats(1e-4, 100), M=st.floats(1.0, 1e5), R=st.floats(0, 100),
       W=st.floats(0, 50), s=st.floats(0, 0.95))
@example(C=1.0, M=1.0, R=0.0, W=4.0, s=0.0)   # the write floor W (1 - s) = 4 M: the grid once collapsed to a point
def test_wall_time_is_convex_in_T_and_minimised_at_the_optimum(C, M, R, W, s):
    T_star = engine.exact_optimal_interval(C, M, W, s)
    lo = max(W * (1 - s), 1e-6)
    Ts = np.geomspace(lo, max(4 * M, 4 * lo), 400)   # a write floor at 4 M or above: the grid still spans a range
    Ts = Ts[Ts >= lo]
    f = np.asarray(engine.expected_wall_time(1.0, Ts, C, M, R, W, s) / engine.expected_wall_time(1.0, T_star, C, M, R, W, s))
    # convex on a geometric grid: slopes between consecutive points never decrease
    slopes = np.diff(f) / np.diff(Ts)
    assert np.all(np.diff(slopes) >= -1e-9 * np.maximum(1, np.abs(slopes[1:])))
    assert np.all(f >= 1 - 1e-12)  # nothing on the grid beats the optimum
    w = np.asarray(engine.waste_fraction(Ts, C, M, R, W, s))
    assert np.all(w >= engine.waste_fraction(T_star, C, M, R, W, s) - 1e-12)


@settings(max_examples=200, deadline=None)
@given(T=pos, C=st.floats(1e-4, 100), M=st.floats(1.0, 1e5))
def test_first_order_waste_convex_minimum_at_young(T, C, M):
    Ty = engine.young_interval(C, M)
    assert engine.first_order_waste(T, C, M) >= engine.first_order_waste(Ty, C, M) * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(c=st.floats(1e-12, 1e-2), M=st.floats(1.0, 1e5))
def test_daly_tends_to_young(c, M):
    C = c * M
    ratio = engine.daly_interval(C, M) / engine.young_interval(C, M)
    # Daly = Young * (1 + sqrt(c/2)/3 + ...) - C: relative gap O(sqrt(c))
    assert abs(ratio - 1) <= 2 * math.sqrt(c)


@settings(max_examples=200, deadline=None)
@given(T=pos, C=st.floats(0, 100), M=st.floats(1.0, 1e5), R1=st.floats(0, 500), dR=st.floats(1e-3, 500))
def test_exact_waste_nonnegative_and_grows_with_restart(T, C, M, R1, dR):
    w1 = engine.waste_fraction(T, C, M, R1)
    w2 = engine.waste_fraction(T, C, M, R1 + dR)
    assert 0 <= w1 <= 1 and 0 <= w2 <= 1
    assert w2 >= w1


# ---------------------------------------------------------------------------- broadcasting


def test_broadcasting_kinds():
    assert isinstance(engine.young_interval(2, 1200), float)
    arr = engine.young_interval(np.array([0.5, 2.0]), 1200)
    assert isinstance(arr, np.ndarray) and arr.shape == (2,)
    s = pd.Series([0.5, 2.0], index=["fast", "slow"])
    out = engine.young_interval(s, 1200)
    assert isinstance(out, pd.Series) and list(out.index) == ["fast", "slow"]
    assert out["slow"] == pytest.approx(69.282, abs=1e-3)
    grid = engine.waste_fraction(np.array([[30.0], [60.0]]), np.array([0.5, 1, 2]), 1200)
    assert grid.shape == (2, 3)


# ------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, field, rule", [
    (lambda: engine.young_interval(2, 0), "M", "must be > 0"),
    (lambda: engine.young_interval(2, -5), "M", "must be > 0"),
    (lambda: engine.young_interval(-1, 1200), "C", "must be >= 0"),
    (lambda: engine.young_interval(float("nan"), 1200), "C", "finite"),
    (lambda: engine.young_interval(2, float("inf")), "M", "finite"),
    (lambda: engine.young_interval("2", 1200), "C", "number"),
    (lambda: engine.young_interval([1, "x"], 1200), "C[1]", "number"),
    (lambda: engine.young_interval(True, 1200), "C", "number"),
    (lambda: engine.daly_interval(2, None), "M", "number"),
    (lambda: engine.first_order_waste(0, 2, 1200), "T", "must be > 0"),
    (lambda: engine.waste_fraction(60, 2, 1200, R=-1), "R", "must be >= 0"),
    (lambda: engine.waste_fraction(60, 2, 1200, slowdown=1.0), "slowdown", "[0, 1)"),
    (lambda: engine.expected_wall_time(0, 60, 2, 1200), "work", "must be > 0"),
    (lambda: engine.young_interval(np.array([1.0, 2.0, -3.0]), 1200), "C[2]", "must be >= 0"),
    (lambda: engine.young_interval(np.ones(3), np.ones(4)), "shapes", "broadcast"),
])
def test_bad_input_names_field_value_and_rule(call, field, rule):
    with pytest.raises(ValueError) as info:
        call()
    assert isinstance(info.value, InputError)
    msg = str(info.value)
    assert msg.startswith(field) and rule in msg


def test_error_message_carries_value():
    with pytest.raises(InputError) as info:
        engine.young_interval(-2.5, 1200)
    assert str(info.value) == "C=-2.5: must be >= 0"
    assert (info.value.field, info.value.value) == ("C", -2.5)


def test_c_at_least_2m_is_a_regime_not_an_error():
    assert engine.daly_interval(50, 20) == 20
    assert engine.young_interval(50, 20) == pytest.approx(math.sqrt(2000))
    w = engine.waste_fraction(engine.exact_optimal_interval(50, 20), 50, 20)
    assert 0.9 < w < 1


def test_overflow_is_an_error_not_inf():
    with pytest.raises(InputError, match="overflows"):
        engine.expected_wall_time(100, 1e6, 1, 1)
    assert engine.waste_fraction(1e6, 1, 1) == 1.0


def test_series_with_different_indexes_are_refused_not_paired_by_position():
    C = pd.Series([2.0, 8.0], index=["a", "b"])
    M = pd.Series([1200.0, 300.0], index=["b", "a"])
    with pytest.raises(InputError, match=r"^M=.*must have the same index as C"):
        engine.young_interval(C, M)
    with pytest.raises(InputError, match="same index"):
        engine.job_mtbf(pd.Series([2560.0], index=[7]), pd.Series([128], index=[8]))
    aligned = engine.young_interval(*C.align(M))
    assert aligned["a"] == pytest.approx((2 * 2.0 * 300.0) ** 0.5)  # label a: C = 2, M = 300
