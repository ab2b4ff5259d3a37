"""Published fleet failure rates and ETTR: published figures, the exact model, measured agreement."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from ckptplan import engine
from ckptplan.engine import InputError
from ckptplan.engine.ettr import (ettr_agreement_grid, ettr_agreement_summary, ettr_exact, ettr_first_order)
from ckptplan.engine.fleets import (FleetRate, fleet_rate, fleet_rates, job_mtbf_h_from_fleet, node_mtbf_h_from_rate)

# ------------------------------------------------------------------------------ fleets: published figures


def test_meta_rsc1_reproduces_the_published_projections():
    # Kokolis et al., HPCA 2025: about 1.8 h at 16,384 GPUs and 0.23 h at 131,072 GPUs (8-GPU nodes)
    assert round(job_mtbf_h_from_fleet("meta-rsc1", 16_384 // 8), 2) == 1.80
    assert round(job_mtbf_h_from_fleet("meta-rsc1", 131_072 // 8), 2) == 0.23


def test_llama3_405b_rate_and_job_mtbf():
    rec = fleet_rate("llama3-405b")
    assert rec.failures_per_1000_node_days == pytest.approx(419 / (2048 * 54) * 1000, rel=1e-15)
    assert round(job_mtbf_h_from_fleet("llama3-405b", 2048), 2) == 3.09
    assert job_mtbf_h_from_fleet("llama3-405b", 2048) == pytest.approx(54 * 24 / 419, rel=1e-13)


def test_meta_rsc2_rate():
    assert fleet_rate("meta-rsc2").failures_per_1000_node_days == 2.34
    assert fleet_rate("meta-rsc1").failures_per_1000_node_days == 6.50


def test_every_record_is_cited_and_frozen():
    recs = fleet_rates()
    assert isinstance(recs, tuple) and len(recs) >= 3
    assert len({r.name for r in recs}) == len(recs)
    for r in recs:
        assert isinstance(r, FleetRate)
        assert r.failures_per_1000_node_days > 0 and r.gpus_per_node == 8
        assert ("arXiv" in r.source or "doi" in r.source) and "20" in r.source
        assert r.note.startswith("Quoted:")
        assert r.node_mtbf_h == pytest.approx(24_000 / r.failures_per_1000_node_days)
        json.dumps(r.to_dict())
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.failures_per_1000_node_days = 1.0  # type: ignore[misc]


def test_unverified_figures_say_so():
    # RSC-2 was checked against secondary accounts only: the record must say it
    assert "check" in fleet_rate("meta-rsc2").note


def test_fleet_rate_lookup():
    assert fleet_rate(" Meta-RSC1 ") is fleet_rate("meta-rsc1")
    with pytest.raises(InputError) as err:
        fleet_rate("meta-rsc3")
    assert err.value.field == "fleet"
    for name in ("meta-rsc1", "meta-rsc2", "llama3-405b"):
        assert name in str(err.value)
    with pytest.raises(InputError):
        fleet_rate(6.5)  # type: ignore[arg-type]


def test_node_mtbf_from_rate():
    assert node_mtbf_h_from_rate(6.5) == pytest.approx(24_000 / 6.5)
    assert isinstance(node_mtbf_h_from_rate(6.5), float)
    arr = node_mtbf_h_from_rate(np.array([1.0, 2.0]))
    np.testing.assert_allclose(arr, [24_000.0, 12_000.0])
    s = node_mtbf_h_from_rate(pd.Series([3.0, 4.0], index=["a", "b"]))
    assert list(s.index) == ["a", "b"] and s["b"] == 6000.0
    for bad in (0.0, -1.0, float("nan"), "6.5", None):
        with pytest.raises(InputError) as err:
            node_mtbf_h_from_rate(bad)
        assert err.value.field == "failures_per_1000_node_days"


def test_job_mtbf_from_fleet_vectorised_and_consistent():
    nodes = np.array([128, 2048, 16_384])
    out = job_mtbf_h_from_fleet("meta-rsc1", nodes)
    np.testing.assert_allclose(out, 24_000 / (6.5 * nodes))
    np.testing.assert_allclose(out, engine.job_mtbf(fleet_rate("meta-rsc1").node_mtbf_h, nodes))
    s = job_mtbf_h_from_fleet(fleet_rate("meta-rsc2"), pd.Series([100, 200], index=[5, 6]))
    assert list(s.index) == [5, 6] and s[5] == pytest.approx(24_000 / 234)
    assert fleet_rate("meta-rsc1").job_mtbf_h(2048) == job_mtbf_h_from_fleet(6.5, 2048)
    np.testing.assert_allclose(job_mtbf_h_from_fleet([6.5, 2.34], 1000), [24 / 6.5, 24 / 2.34])
    for bad in (0, 1.5, -3):
        with pytest.raises(InputError) as err:
            job_mtbf_h_from_fleet("meta-rsc1", bad)
        assert err.value.field == "nodes"
    with pytest.raises(InputError):
        job_mtbf_h_from_fleet("nowhere", 10)
    with pytest.raises(InputError):
        job_mtbf_h_from_fleet(-1.0, 10)


# ------------------------------------------------------------------------------ ETTR


def test_first_order_formula():
    T, C, R, M = 60.0, 2.0, 10.0, 1200.0
    assert ettr_first_order(T, C, R, M) == pytest.approx((1 - (R + T / 2) / M) / (1 + C / T), rel=1e-15)
    # N r = 1 / M: the paper's form with r per node and N nodes
    n, r = 2048, 6.5e-3 / 24  # failures per node-hour
    M_h = 1 / (n * r)
    assert ettr_first_order(1.0, 0.05, 0.25, M_h) == pytest.approx((1 - n * r * (0.25 + 0.5)) / (1 + 0.05))


def test_first_order_is_not_clipped():
    # pinned: where u0 + dt/2 >= M the value is returned as computed (the approximation has broken down)
    assert ettr_first_order(2.0, 0.0, 0.5, 1.0) == -0.5
    assert ettr_first_order(2.0, 0.0, 0.0, 1.0) == 0.0
    assert ettr_exact(2.0, 0.0, 0.5, 1.0) > 0


def test_exact_is_useful_over_expected_wall():
    T, C, R, M, W, s = 50.0, 1.5, 12.0, 900.0, 20.0, 0.1
    work = 10_000.0
    wall = engine.expected_wall_time(work, T, C, M, R, W, s)
    assert ettr_exact(T, C, R, M, W, s) == pytest.approx(work / wall, rel=1e-12)
    assert ettr_exact(T, C, R, M, W, s) == pytest.approx(1 - engine.waste_fraction(T, C, M, R, W, s), rel=1e-12)
    assert ettr_exact(T, C, R, M) == pytest.approx(1 - engine.waste_fraction(T, C, M, R), rel=1e-12)


def test_exact_stays_in_range_where_wall_time_overflows():
    v = ettr_exact(10.0, 1.0, 5000.0, 1.0)
    assert 0.0 <= v < 1e-300  # underflows to 0 rather than raising or going negative
    assert 0 < ettr_exact(1.0, 0.0, 0.0, 1e9) <= 1


def test_ettr_broadcasts_and_names_bad_input():
    s = ettr_first_order(pd.Series([30.0, 60.0], index=["a", "b"]), 1.0, 5.0, 600.0)
    assert list(s.index) == ["a", "b"]
    e = ettr_exact(np.array([30.0, 60.0]), 1.0, 5.0, 600.0)
    assert e.shape == (2,)
    with pytest.raises(InputError) as err:
        ettr_first_order(0.0, 1.0, 1.0, 1.0)
    assert err.value.field == "interval"
    with pytest.raises(InputError) as err:
        ettr_exact(10.0, -1.0, 1.0, 1.0)
    assert err.value.field == "checkpoint_stall"
    with pytest.raises(InputError) as err:
        ettr_exact(10.0, 1.0, 1.0, 100.0, async_write=30.0)  # write not durable before the next save
    assert err.value.field == "W"


def test_the_two_agree_to_first_order():
    # at small load the difference shrinks like the load itself (the w/2M term) or faster
    g = ettr_agreement_grid(loads=(1e-4, 1e-3))
    small, smaller = (g[g["load"] == x]["difference"].abs().max() for x in (1e-3, 1e-4))
    assert small < 1e-3 and smaller < 1e-4 and smaller < small / 5


def _summary_row(summary: pd.DataFrame, band: float) -> pd.Series:
    return summary.set_index("max_load").loc[band]


def test_agreement_figures_quoted_in_the_docstring():
    grid = ettr_agreement_grid()
    assert len(grid) == 275
    whole = ettr_agreement_summary(grid, bands=(0.05, 0.1, 0.2, 0.3, 0.5, 1.0))
    regime = ettr_agreement_summary(grid[(grid["stall_ratio"] <= 0.1) & (grid["restart_ratio"] <= 1)],
                                    bands=(0.05, 0.1, 0.2, 0.3, 0.5, 1.0))
    quoted = {0.05: (0.0043, 0.0019), 0.1: (0.0082, 0.0034), 0.2: (0.0152, 0.0103), 0.3: (0.0314, 0.0228),
              0.5: (0.0827, 0.0605), 1.0: (0.2908, 0.2175)}
    for band, (w, r) in quoted.items():
        assert round(_summary_row(whole, band)["max_abs_difference"], 4) == w
        assert round(_summary_row(regime, band)["max_abs_difference"], 4) == r
    # within about 1 % up to a load of 0.1 everywhere, up to 0.2 in the formula's regime
    assert _summary_row(whole, 0.1)["max_abs_difference"] < 0.01
    assert _summary_row(regime, 0.2)["max_abs_relative_difference"] < 0.0125
    assert _summary_row(whole, 0.2)["max_abs_relative_difference"] < 0.022


def test_sign_of_the_disagreement():
    grid = ettr_agreement_grid()
    # overestimates when the stall is a large share of the interval (failures during saves left out) ...
    big_stall = grid[(grid["stall_ratio"] == 0.3) & (grid["restart_ratio"] == 0.0) & (grid["load"] <= 0.2)]
    assert (big_stall["difference"] > 0).all()
    # ... underestimates when the restart dominates, and everywhere the load is large enough
    long_restart = grid[(grid["restart_ratio"] == 3.0) & (grid["stall_ratio"] <= 0.1) & (grid["load"] >= 0.05)]
    assert (long_restart["difference"] < 0).all()
    heavy = grid[grid["load"] >= 0.5]
    assert heavy["difference"].min() < -0.08 and heavy["difference"].max() < 0.031
    assert grid["difference"].max() < 0.031


def test_agreement_grid_rejects_bad_input():
    with pytest.raises(InputError) as err:
        ettr_agreement_grid(loads=(0.1, -1.0))
    assert err.value.field == "loads"
    assert ettr_agreement_grid(loads=()).empty
