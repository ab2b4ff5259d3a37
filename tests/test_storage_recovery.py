"""Storage (checkpoint size, save/restore times, storage money) and recovery (restart pipeline, spare pool)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ckptplan.engine import InputError, expected_wall_time
from ckptplan.engine import recovery as rc
from ckptplan.engine import storage as st

# ------------------------------------------------------------------------------ size


def test_llama3_405b_mixed_adam_is_5670_gb_exactly():
    assert st.checkpoint_size_gb(405) == 5670.0
    assert st.checkpoint_size_gb(405, "mixed-adam") == 5670.0
    assert st.checkpoint_size_gb(405, 14, extra_state_gb=30) == 5700.0


def test_presets_and_their_sources():
    assert st.BYTES_PER_PARAMETER == {"mixed-adam": 14, "fp32-adam": 12, "fp32-sgd-momentum": 8,
                                      "bf16-adam-bf16-moments": 6, "weights-bf16": 2}
    for name, value in st.BYTES_PER_PARAMETER.items():
        assert st.bytes_per_parameter(name) == value
        assert st.checkpoint_size_gb(7, name) == 7 * value
    assert st.bytes_per_parameter(3.5) == 3.5
    with pytest.raises(InputError) as err:
        st.bytes_per_parameter("adam-fp8")
    assert err.value.field == "bytes_per_parameter"
    assert "mixed-adam" in str(err.value) and "weights-bf16" in str(err.value)
    with pytest.raises(InputError) as err:
        st.checkpoint_size_gb(7, "nonsense")
    assert err.value.field == "bytes_per_parameter"
    with pytest.raises(InputError) as err:
        st.bytes_per_parameter(0)
    assert err.value.field == "bytes_per_parameter" and err.value.rule == "must be > 0"


# ------------------------------------------------------------------------------ bandwidth and times


def test_effective_bandwidth_is_the_smaller_of_writers_and_aggregate():
    assert st.effective_bandwidth_gb_s(2.0, 100) == 200.0            # no shared bottleneck
    assert st.effective_bandwidth_gb_s(2.0, 100, 150.0) == 150.0     # the file system caps it
    assert st.effective_bandwidth_gb_s(2.0, 10, 150.0) == 20.0       # the writers cap it
    got = st.effective_bandwidth_gb_s(np.array([1.0, 2.0, 3.0]), 50, 120.0)
    np.testing.assert_array_equal(got, [50.0, 100.0, 120.0])


def test_sync_save_of_5670_gb_at_1000_gb_s_stalls_5_67_s():
    times = st.save_times(5670.0, 1024, 1e6, 1000.0)
    assert times.checkpoint_stall_min * 60 == pytest.approx(5.67, rel=1e-15)
    assert times.checkpoint_stall_min == 5670.0 / 1000.0 / 60.0
    assert times.async_write_min == 0.0
    stall, write = times  # a plain pair too
    assert (stall, write) == (times.checkpoint_stall_min, 0.0)


def test_async_save_splits_into_copy_stall_and_background_write():
    size, writers = 98.0, 64
    times = st.save_times(size, writers, 0.5, 20.0, async_save=True, d2h_gb_s_per_writer=25.0)
    assert times.checkpoint_stall_min == size / (25.0 * writers) / 60.0
    assert times.async_write_min == size / min(0.5 * writers, 20.0) / 60.0
    sync = st.save_times(size, writers, 0.5, 20.0)
    assert sync.checkpoint_stall_min == times.async_write_min   # the same write, moved off the critical path
    assert times.checkpoint_stall_min < sync.checkpoint_stall_min
    with pytest.raises(InputError) as err:
        st.save_times(size, writers, 0.5, async_save=True)
    assert err.value.field == "d2h_gb_s_per_writer"
    with pytest.raises(InputError) as err:
        st.save_times(size, writers, 0.5, async_save="yes")
    assert err.value.field == "async_save"


def test_restore_time_is_size_over_bandwidth():
    assert st.restore_time_min(600.0, 10, 1.0) == 1.0
    assert st.restore_time_min(600.0, 100, 1.0, 5.0) == 2.0
    assert st.restore_time_min(0.0, 1, 1.0) == 0.0


@pytest.mark.parametrize("call, field, rule", [
    (lambda: st.effective_bandwidth_gb_s(0.0, 8), "per_writer_gb_s", "must be > 0"),
    (lambda: st.effective_bandwidth_gb_s(1.0, 8, 0.0), "aggregate_gb_s", "must be > 0"),
    (lambda: st.effective_bandwidth_gb_s(1.0, 0), "writers", "must be a whole number >= 1"),
    (lambda: st.effective_bandwidth_gb_s(1.0, 2.5), "writers", "must be a whole number >= 1"),
    (lambda: st.effective_bandwidth_gb_s(np.inf, 8), "per_writer_gb_s", "must be a finite number"),
    (lambda: st.save_times(100.0, 8, 0.0), "write_gb_s_per_writer", "must be > 0"),
    (lambda: st.save_times(100.0, 8, 1.0, 0.0), "aggregate_write_gb_s", "must be > 0"),
    (lambda: st.save_times(-1.0, 8, 1.0), "size_gb", "must be >= 0"),
    (lambda: st.save_times(100.0, 8, 1.0, async_save=True, d2h_gb_s_per_writer=0.0), "d2h_gb_s_per_writer",
     "must be > 0"),
    (lambda: st.restore_time_min(100.0, 8, 0.0), "read_gb_s_per_reader", "must be > 0"),
    (lambda: st.restore_time_min(100.0, 8, 1.0, 0.0), "aggregate_read_gb_s", "must be > 0"),
    (lambda: st.restore_time_min(-5.0, 8, 1.0), "size_gb", "must be >= 0"),
    (lambda: st.checkpoint_size_gb(-7), "parameters_b", "must be > 0"),
    (lambda: st.checkpoint_size_gb(7, -2), "bytes_per_parameter", "must be > 0"),
    (lambda: st.checkpoint_size_gb(7, 14, -1), "extra_state_gb", "must be >= 0"),
    (lambda: st.storage_cost(100.0, 0, 0.02, 1), "retention", "must be a whole number >= 1"),
    (lambda: st.storage_cost(100.0, 1.5, 0.02, 1), "retention", "must be a whole number >= 1"),
    (lambda: st.storage_cost(-100.0, 1, 0.02, 1), "size_gb", "must be >= 0"),
    (lambda: st.storage_cost(100.0, 2, -0.02, 1), "price_per_gb_month", "must be >= 0"),
    (lambda: st.storage_cost(100.0, 2, 0.02, 1, copies=0), "copies", "must be a whole number >= 1"),
    (lambda: st.months_from_hours(-1), "h", "must be >= 0"),
    (lambda: st.storage_cost("big", 2, 0.02, 1), "size_gb", "must be a number or an array of numbers"),
])
def test_bad_storage_input_names_the_argument(call, field, rule):
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field
    assert err.value.rule.startswith(rule)
    assert str(err.value).startswith(field)


def test_bad_element_of_an_array_is_located():
    with pytest.raises(InputError) as err:
        st.restore_time_min(100.0, 8, np.array([1.0, 0.0, 2.0]))
    assert (err.value.field, err.value.position, err.value.rule) == ("read_gb_s_per_reader", (1,), "must be > 0")


def test_series_in_series_out_with_the_index():
    idx = pd.Index(["7b", "70b", "405b"], name="model")
    params = pd.Series([7.0, 70.0, 405.0], index=idx)
    size = st.checkpoint_size_gb(params)
    assert isinstance(size, pd.Series) and size.index.equals(idx)
    np.testing.assert_array_equal(size.to_numpy(), [98.0, 980.0, 5670.0])
    times = st.save_times(size, 64, 2.0, 100.0, async_save=True, d2h_gb_s_per_writer=20.0)
    for part in times:
        assert isinstance(part, pd.Series) and part.index.equals(idx)
    sync = st.save_times(size, 64, 2.0, 100.0)
    assert isinstance(sync.async_write_min, pd.Series) and (sync.async_write_min == 0).all()
    restore = st.restore_time_min(size, 64, 2.0)
    assert isinstance(restore, pd.Series) and restore.index.equals(idx)
    assert isinstance(st.effective_bandwidth_gb_s(pd.Series([1.0, 2.0], index=["a", "b"]), 4), pd.Series)
    cost = st.storage_cost(size, 3, 0.02, st.months_from_hours(pd.Series([730.0] * 3, index=idx)))
    assert isinstance(cost, pd.Series) and cost.index.equals(idx)
    assert isinstance(st.bytes_per_parameter(pd.Series([2.0, 14.0])), pd.Series)
    # numpy in, numpy out; scalars in, float out
    assert isinstance(st.checkpoint_size_gb(np.array([1.0, 2.0])), np.ndarray)
    assert isinstance(st.restore_time_min(10, 1, 1), float)


def test_misaligned_series_are_refused():
    a = pd.Series([1.0, 2.0], index=["x", "y"])
    b = pd.Series([1.0, 2.0], index=["y", "x"])
    with pytest.raises(InputError):
        st.restore_time_min(a, 4, b)


# ------------------------------------------------------------------------------ storage money


def test_storage_cost_arithmetic():
    # 5,670 GB x 3 kept x 2 copies x 1.5 months x 0.02 per GB-month
    assert st.storage_cost(5670.0, 3, 0.02, 1.5, copies=2) == pytest.approx(5670 * 3 * 2 * 1.5 * 0.02, rel=1e-15)
    assert st.storage_cost(100.0, 1, 0.023, 1) == pytest.approx(2.3, rel=1e-15)
    assert st.storage_cost(100.0, 5, 0.0, 12) == 0.0
    assert st.months_from_hours(730.0) == 1.0
    assert st.months_from_hours(8760.0) == 12.0
    assert st.HOURS_PER_BILLING_MONTH == 8760 / 12
    got = st.storage_cost(np.array([10.0, 20.0]), np.array([1, 2]), 0.5, 2.0)
    np.testing.assert_array_equal(got, [10.0 * 1 * 0.5 * 2.0, 20.0 * 2 * 0.5 * 2.0])


# ------------------------------------------------------------------------------ restart pipeline


def test_restart_pipeline_names_and_sums_its_parts():
    assert rc.RESTART_PHASES == ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min",
                                 "warmup_min")
    parts = dict(detection_min=1.0, reallocation_min=2.0, startup_min=3.0, init_min=4.0, load_min=5.0,
                 warmup_min=6.0)
    out = rc.restart_pipeline(**parts)
    assert list(out) == list(rc.RESTART_PHASES) + ["restart_min"]
    assert out["restart_min"] == 21.0 == rc.restart_pipeline_min(**parts)
    assert rc.restart_pipeline_min() == 0.0
    assert rc.restart_pipeline(load_min=2.5) == {**{p: 0.0 for p in rc.RESTART_PHASES}, "load_min": 2.5,
                                                 "restart_min": 2.5}
    s = pd.Series([1.0, 2.0], index=["a", "b"])
    out = rc.restart_pipeline(detection_min=s, load_min=np.array([10.0, 20.0]))
    assert all(isinstance(v, pd.Series) and v.index.equals(s.index) for v in out.values())
    assert out["restart_min"].tolist() == [11.0, 22.0]
    assert out["warmup_min"].tolist() == [0.0, 0.0]
    with pytest.raises(InputError) as err:
        rc.restart_pipeline(load_min=1.0, reboot_min=3.0)
    assert err.value.field == "reboot_min" and "detection_min" in err.value.rule
    with pytest.raises(InputError) as err:
        rc.restart_pipeline_min(warmup_min=-1.0)
    assert err.value.field == "warmup_min"


def test_communicator_init_grows_linearly_with_nodes():
    assert rc.communicator_init_min(1000, 0.5, 0.2) == pytest.approx(0.7, rel=1e-15)
    assert rc.communicator_init_min(2048, 1.0) == 1.0
    got = rc.communicator_init_min(np.array([500, 1000, 4000]), 1.0, 2.0)
    np.testing.assert_allclose(got, [2.0, 3.0, 9.0], rtol=1e-15)
    with pytest.raises(InputError) as err:
        rc.communicator_init_min(0, 1.0)
    assert err.value.field == "nodes"
    with pytest.raises(InputError) as err:
        rc.communicator_init_min(8, -1.0)
    assert err.value.field == "init_fixed_min"


# ------------------------------------------------------------------------------ spare pool


@pytest.mark.parametrize("mu", [0.0, 1e-300, 1e-9, 1e-3, 0.3, 1.0, 2.4, 7.5, 40.0, 73.0, 300.0, 5e3, 1e5])
@pytest.mark.parametrize("repair_h", [0.5, 48.0])
def test_no_spares_waits_the_full_repair(mu, repair_h):
    """S = 0: the job waits for its own node's repair, 60 repair_h, whatever swap_min and mu are."""
    rate = mu / repair_h
    for swap in (0.0, 5.0, 1e6):
        assert rc.expected_reallocation_min(rate, repair_h, 0, swap) == pytest.approx(60.0 * repair_h, rel=1e-15)
        assert rc.reallocation_sd_min(rate, repair_h, 0, swap, "fixed") == 0.0
        assert rc.reallocation_sd_min(rate, repair_h, 0, swap, "exponential") == pytest.approx(60.0 * repair_h,
                                                                                            rel=1e-15)
    assert rc.spare_free_probability(rate, repair_h, 0) == 0.0


def _loss_law(mu, spares):
    """The stationary law of nodes in repair, n = 0 .. S+1, from its definition (pi_n proportional to mu^n/n!,
    with math.lgamma: independent of the engine's recursion)."""
    logs = [n * math.log(mu) - math.lgamma(n + 1) if mu > 0 else (0.0 if n == 0 else -math.inf)
            for n in range(spares + 2)]
    top = max(logs)
    w = [math.exp(v - top) for v in logs]
    return [x / sum(w) for x in w]


def _by_hand(rate, repair_h, spares, swap):
    """Mean wait per node-replacing failure from the loss system's law: a failure sees pi restricted to n <= S."""
    pi = _loss_law(rate * repair_h, spares)
    blocked = pi[spares] / sum(pi[: spares + 1])
    return (1.0 - blocked) * swap + blocked * 60.0 * repair_h / (spares + 1)


@pytest.mark.parametrize("rate, repair_h, swap", [(0.05, 48.0, 5.0), (0.5, 24.0, 10.0), (2.0, 72.0, 1.0),
                                                  (0.01, 2.0, 30.0), (1.0, 10.0, 0.0)])
def test_reallocation_matches_the_loss_system(rate, repair_h, swap):
    spares = np.arange(0, 40)
    got = rc.expected_reallocation_min(rate, repair_h, spares, swap)
    want = [_by_hand(rate, repair_h, int(s), swap) for s in spares]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15 * 60.0 * repair_h)
    pi = [_loss_law(rate * repair_h, int(s)) for s in spares]
    np.testing.assert_allclose(rc.mean_nodes_in_repair(rate, repair_h, spares),
                               [sum(n * p for n, p in enumerate(law)) for law in pi], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(rc.pool_waiting_share(rate, repair_h, spares), [law[-1] for law in pi], rtol=1e-12,
                               atol=1e-300)


def test_spare_free_probability_is_one_minus_erlang_b():
    from scipy.stats import poisson

    spares = np.arange(0, 30)
    got = rc.spare_free_probability(0.3, 20.0, spares)
    want = 1.0 - poisson.pmf(spares, 6.0) / poisson.cdf(spares, 6.0)   # Erlang B as a ratio of Poisson terms
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert rc.spare_free_probability(0.0, 20.0, 1) == 1.0   # nothing ever in repair
    assert rc.spare_free_probability(0.3, 20.0, 10**9) == 1.0
    assert rc.erlang_b(0, 7.0) == 1.0 and rc.erlang_b(3, 0.0) == 0.0


@pytest.mark.parametrize("S, mu", [(5, 1e6), (10**6, 10**6), (900, 1000.0), (100, 3.0), (2_000, 1_900.0)])
def test_erlang_b_for_large_pools_against_the_poisson_ratio_in_logs(S, mu):
    from scipy.special import gammaincc, gammaln

    logpmf = S * math.log(mu) - mu - gammaln(S + 1.0)
    logcdf = math.log(gammaincc(S + 1.0, mu)) if gammaincc(S + 1.0, mu) > 0 else None
    if logcdf is None:   # mu far above S: B = 1 - S/mu + O(1/mu^2) (overloaded loss system)
        assert rc.erlang_b(S, mu) == pytest.approx(1.0 - S / mu, abs=10 * S / mu ** 2)
    else:
        assert rc.erlang_b(S, mu) == pytest.approx(math.exp(logpmf - logcdf), rel=1e-9)


def test_many_spares_tend_to_the_swap_time():
    assert rc.expected_reallocation_min(0.01, 10.0, 50, 2.0) == pytest.approx(2.0, rel=1e-12)
    # a free spare is taken even when a swap is slower than a repair return
    assert rc.expected_reallocation_min(0.01, 1.0, 50, 1e9) == pytest.approx(1e9, rel=1e-12)


def test_reallocation_never_rises_with_spares_while_a_swap_beats_a_repair_on_a_grid():
    rates = np.array([0.0, 0.001, 0.05, 0.3, 1.0, 4.0, 25.0])
    repairs = np.array([0.0, 0.25, 4.0, 48.0, 240.0])
    swaps = np.array([0.0, 1.0, 5.0, 60.0, 1e4])
    spares = np.arange(0, 120)
    R, P, W, S = np.meshgrid(rates, repairs, swaps, spares, indexing="ij")
    realloc = rc.expected_reallocation_min(R, P, S, W)
    free = rc.spare_free_probability(R, P, S)
    assert realloc.shape == R.shape and np.isfinite(realloc).all()
    swap_beats_repair = (W <= 60.0 * P / (S + 2.0))[..., :-1]
    assert (np.diff(realloc, axis=-1)[swap_beats_repair] <= 1e-12 * realloc[..., :-1][swap_beats_repair]).all()
    assert (np.diff(free, axis=-1) >= 0).all() and (free >= 0).all() and (free <= 1).all()
    # never above the slower of waiting a full repair and a swap
    assert (realloc <= np.maximum(60.0 * P, W) * (1 + 1e-12)).all()


def test_monotone_in_spares_when_spares_are_scattered_through_a_large_array():
    rng = np.random.default_rng(7)
    spares = rng.permutation(np.arange(0, 400))
    realloc = rc.expected_reallocation_min(3.0, 60.0, spares, 2.0)   # mu = 180
    ordered = realloc[np.argsort(spares)]
    assert (np.diff(ordered) <= 0).all()


@pytest.mark.parametrize("call, field", [
    (lambda: rc.expected_reallocation_min(0.1, 24.0, -1, 5.0), "spares"),
    (lambda: rc.expected_reallocation_min(0.1, 24.0, 1.5, 5.0), "spares"),
    (lambda: rc.spare_free_probability(0.1, 24.0, -2), "spares"),
    (lambda: rc.spare_free_probability(0.1, 24.0, 0.5), "spares"),
    (lambda: rc.expected_reallocation_min(-0.1, 24.0, 1, 5.0), "node_replacement_rate_per_h"),
    (lambda: rc.expected_reallocation_min(0.1, -24.0, 1, 5.0), "repair_h"),
    (lambda: rc.expected_reallocation_min(0.1, 24.0, 1, -5.0), "swap_min"),
    (lambda: rc.expected_reallocation_min(1e6, 24.0, 1, 5.0), "node_replacement_rate_per_h"),
    (lambda: rc.expected_reallocation_min(np.nan, 24.0, 1, 5.0), "node_replacement_rate_per_h"),
    (lambda: rc.reallocation_sd_min(0.1, 24.0, 1, 5.0, "weibull"), "repair_law"),
    (lambda: rc.mean_nodes_in_repair(0.1, 24.0, 0.5), "spares"),
    (lambda: rc.pool_waiting_share(0.1, -1.0, 1), "repair_h"),
    (lambda: rc.erlang_b(1, -1.0), "mean_in_repair"),
    (lambda: rc.erlang_b(1, 2e6), "mean_in_repair"),
])
def test_bad_pool_input_names_the_argument(call, field):
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field


def test_pool_series_in_series_out():
    idx = pd.Index([0, 1, 2, 3], name="spares")
    spares = pd.Series([0, 1, 2, 3], index=idx)
    for fn in (lambda s: rc.spare_free_probability(0.1, 24.0, s), lambda s: rc.expected_reallocation_min(0.1, 24, s, 5),
               lambda s: rc.reallocation_sd_min(0.1, 24, s, 5), lambda s: rc.mean_nodes_in_repair(0.1, 24, s),
               lambda s: rc.pool_waiting_share(0.1, 24, s), lambda s: rc.erlang_b(s, 2.4)):
        out = fn(spares)
        assert isinstance(out, pd.Series) and out.index.equals(idx)
    assert isinstance(rc.expected_reallocation_min(0.1, 24.0, 2, 5.0), float)


# ------------------------------------------------------------------------------ how many spares

BASE = dict(nodes=128, gpus_per_node=8, spares_max=12, node_replacement_rate_per_h=0.05, repair_h=48.0, swap_min=5.0,
            restart_other_min=10.0, useful_training_h=720.0, T_min=None, checkpoint_stall_min=1.0, job_mtbf_min=1200.0,
            price_per_gpu_hour=2.0)


def test_spares_table_columns_and_arithmetic():
    table = rc.spares_table(**BASE)
    assert list(table["spares"]) == list(range(13))
    assert list(table.columns) == ["spares", "spare_free_probability", "reallocation_min", "restart_min", "T_min",
                                   "wall_h", "gpu_hours", "spare_gpu_hours", "total_cost", "cost_per_useful_gpu_hour"]
    S = table["spares"].to_numpy()
    np.testing.assert_array_equal(table["restart_min"], 10.0 + table["reallocation_min"])
    np.testing.assert_allclose(table["gpu_hours"], (128 + S) * 8 * table["wall_h"], rtol=1e-15)
    np.testing.assert_allclose(table["spare_gpu_hours"], S * 8 * table["wall_h"], rtol=1e-15)
    np.testing.assert_allclose(table["cost_per_useful_gpu_hour"], table["total_cost"] / (128 * 8 * 720.0), rtol=1e-15)
    np.testing.assert_allclose(table["total_cost"], table["gpu_hours"] * 2.0, rtol=1e-15)
    stored = rc.spares_table(**BASE, storage_cost_per_wall_h=50.0)   # the storage bill grows with the wall hours
    np.testing.assert_allclose(stored["total_cost"], table["total_cost"] + 50.0 * table["wall_h"], rtol=1e-15)
    assert (np.diff(table["restart_min"]) <= 0).all() and (np.diff(table["wall_h"]) <= 0).all()
    row = table.iloc[3]
    # the wait for a node is downtime (the job cannot fail in it); the other phases are exposed
    wall = expected_wall_time(720.0 * 60, row["T_min"], 1.0, 1200.0, 10.0, D=row["reallocation_min"]) / 60
    assert row["wall_h"] == pytest.approx(wall, rel=1e-14)


def _brute_force_best(kw):
    best = None
    for s in range(kw["spares_max"] + 1):
        realloc = rc.expected_reallocation_min(kw["node_replacement_rate_per_h"], kw["repair_h"], s, kw["swap_min"])
        T = kw["T_min"]
        wall_h = expected_wall_time(kw["useful_training_h"] * 60, T, kw["checkpoint_stall_min"], kw["job_mtbf_min"],
                                    kw["restart_other_min"], kw.get("async_write_min", 0.0),
                                    kw.get("async_slowdown_fraction", 0.0), realloc) / 60
        per_useful = (kw["nodes"] + s) * kw["gpus_per_node"] * wall_h * kw["price_per_gpu_hour"] / (
            kw["nodes"] * kw["gpus_per_node"] * kw["useful_training_h"])
        if best is None or per_useful < best[1]:
            best = (s, per_useful)
    return best


@pytest.mark.parametrize("change", [
    {}, {"repair_h": 4.0}, {"repair_h": 200.0, "node_replacement_rate_per_h": 0.2}, {"swap_min": 60.0},
    {"price_per_gpu_hour": 10.0, "nodes": 2048, "node_replacement_rate_per_h": 0.8, "job_mtbf_min": 75.0},
    {"async_write_min": 5.0, "async_slowdown_fraction": 0.1, "checkpoint_stall_min": 0.2},
])
def test_best_spares_is_the_argmin_of_a_brute_force_search(change):
    from ckptplan.engine import exact_optimal_interval

    kw = {**BASE, **change}
    best = rc.best_spares(**kw)
    T = exact_optimal_interval(kw["checkpoint_stall_min"], kw["job_mtbf_min"], kw.get("async_write_min", 0.0),
                               kw.get("async_slowdown_fraction", 0.0))
    s, per_useful = _brute_force_best({**kw, "T_min": T})
    assert best["spares"] == s
    assert best["cost_per_useful_gpu_hour"] == pytest.approx(per_useful, rel=1e-12)
    assert best["T_min"] == pytest.approx(T, rel=1e-15)


def test_best_spares_ties_go_to_fewer_spares_and_a_given_interval_is_used():
    free = rc.best_spares(**{**BASE, "price_per_gpu_hour": 0.0})   # every row costs 0
    assert free["spares"] == 0
    table = rc.spares_table(**{**BASE, "T_min": 30.0})
    assert (table["T_min"] == 30.0).all()
    assert rc.best_spares(**{**BASE, "T_min": 30.0})["spares"] == _brute_force_best({**BASE, "T_min": 30.0})[0]


@pytest.mark.parametrize("change, field", [
    ({"spares_max": -1}, "spares_max"), ({"spares_max": 2.5}, "spares_max"), ({"nodes": 0}, "nodes"),
    ({"repair_h": -1.0}, "repair_h"), ({"job_mtbf_min": 0.0}, "job_mtbf_min"), ({"T_min": 0.0}, "T_min"),
    ({"price_per_gpu_hour": -1.0}, "price_per_gpu_hour"), ({"async_slowdown_fraction": 1.0}, "async_slowdown_fraction"),
    ({"nodes": np.array([64, 128])}, "nodes"),
    ({"checkpoint_stall_min": 0.0}, "checkpoint_stall_min"),             # free saves: no optimal interval
    ({"async_write_min": 100.0, "T_min": 30.0}, "async_write_min"),      # write not durable before the next save
])
def test_bad_table_input_names_the_argument(change, field):
    with pytest.raises(InputError) as err:
        rc.spares_table(**{**BASE, **change})
    assert err.value.field == field
