"""Spot, on-demand and the fallback under a failure rate that changes over the run (failure phases, a Weibull
intensity from the start): the engine's Monte Carlo (engine.spot_montecarlo) against an event-by-event simulation
written here (its own hazard inversion, one run at a time), and the degenerate cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ckptplan.engine import spot
from ckptplan.engine.spot_montecarlo import capacity_job, simulate_capacity

# a burn-in on spot capacity: the first 6 h fail 3x as often; a notice that covers the save; a downtime
BURN_IN = dict(work=24 * 60.0, C=2.0, M=600.0, R=10.0, P=300.0, N=2.0, Wc=30.0, deadline=34 * 60.0, price=2.5,
               spot_price=1.0, gpus=8.0, D=3.0, phase_starts=[0.0, 360.0], phase_factors=[3.0, 1.0])
WEIBULL = dict(BURN_IN, phase_starts=None, phase_factors=None, weibull_shape=0.6, N=0.5, D=0.0)
RUNS = 2500


def _phase_hazard(starts, factors, M):
    """Next failure after t: walk the phases, spending a unit exponential draw at each phase's rate."""
    def nxt(t, rng):
        e = rng.exponential()
        j = max(i for i, s in enumerate(starts) if s <= t)
        while True:
            rate = factors[j] / M
            end = starts[j + 1] if j + 1 < len(starts) else math.inf
            if t + e / rate < end:
                return t + e / rate
            e -= (end - t) * rate
            t, j = end, j + 1
    return nxt


def _weibull_hazard(M, k):
    eta = M / math.gamma(1.0 + 1.0 / k)

    def nxt(t, rng):
        return eta * ((t / eta) ** k + rng.exponential()) ** (1.0 / k)
    return nxt


def _interval(starts, intervals, t):
    return intervals[max(i for i, s in enumerate(starts) if s <= t)]


def _one_run(job, policy, threshold, nxt, rng):
    """One run, event by event: segments with the interval of the window they start in, failures only while the job
    holds its GPUs (not in a wait for capacity, not in a downtime), preemptions on spot, the fallback's move."""
    sc = job["schedule"]
    prices = {True: job["spot_price"], False: job["price"]}
    P, C, R, D, Wc = job["P"], job["C"], job["R"], job["D"], job["Wc"]
    st = {"t": 0.0, "left": job["work"], "cost": 0.0, "spot": policy != "on-demand"}

    def strike():
        f = nxt(st["t"], rng)
        p = st["t"] + rng.exponential() * P if st["spot"] else math.inf
        return f, p

    def restart():
        while True:
            f, p = strike()
            if min(f, p) >= st["t"] + R:
                st["cost"] += R * prices[st["spot"]]
                st["t"] += R
                return
            st["cost"] += (min(f, p) - st["t"]) * prices[st["spot"]]
            st["t"] = min(f, p)
            if p < f:
                st["t"] += Wc
            else:
                st["t"] += D
                st["cost"] += D * prices[st["spot"]]

    while st["left"] > 1e-9:
        if policy == "fallback" and st["spot"] and job["deadline"] - st["t"] - st["left"] * job["rho_od"] < threshold:
            st["spot"] = False
            if st["t"] > 0:
                restart()
        key = "spot" if st["spot"] else "od"
        T = _interval(sc[f"starts_{key}"], sc[f"T_{key}_by"], st["t"])
        last = st["left"] <= T
        length = st["left"] if last else T + C
        f, p = strike()
        first = min(f, p)
        if first >= st["t"] + length:
            st["cost"] += length * prices[st["spot"]]
            st["t"] += length
            st["left"] -= st["left"] if last else T
            continue
        done = first - st["t"]
        st["cost"] += done * prices[st["spot"]]
        st["t"] = first
        if p < f:                                 # preempted: a save on notice keeps the work done
            if job["N"] >= C:
                st["left"] -= min(done, T)
                st["t"] += C
                st["cost"] += C * prices[True]
            st["t"] += Wc
        else:                                     # a failure: the work since the last save is lost, a downtime
            st["t"] += D
            st["cost"] += D * prices[st["spot"]]
        if st["left"] > 1e-9:
            restart()
    return st["t"], st["cost"]


def _independent(job, policy, threshold, nxt, runs, seed):
    rng = np.random.default_rng(seed)
    out = np.array([_one_run(job, policy, threshold, nxt, rng) for _ in range(runs)])
    return {"wall": out[:, 0], "cost": out[:, 1]}


def _agree(engine_sim, ref, deadline, what):
    """P(on time), mean wall time and mean cost within 3 standard errors of the two estimates."""
    a = engine_sim["finished"] & (engine_sim["wall"] <= deadline)
    b = ref["wall"] <= deadline
    pooled = (a.sum() + b.sum()) / (a.size + b.size)
    se = math.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / a.size + 1 / b.size))
    assert abs(a.mean() - b.mean()) <= 3 * se + 1e-12, (what, "p", a.mean(), b.mean(), se)
    for key in ("wall", "cost"):
        x, y = engine_sim[key], ref[key]
        se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        assert abs(x.mean() - y.mean()) <= 3 * se, (what, key, x.mean(), y.mean(), se)


@pytest.mark.parametrize("case", ["phases", "weibull"])
def test_each_policy_agrees_with_an_event_by_event_simulation(case):
    a = BURN_IN if case == "phases" else WEIBULL
    job = capacity_job(**a)
    nxt = (_phase_hazard(a["phase_starts"], a["phase_factors"], a["M"]) if case == "phases"
           else _weibull_hazard(a["M"], a["weibull_shape"]))
    found = spot.capacity_policies(**a, runs=2000, seed=5)
    th = found["fallback"]["threshold_min"]
    assert 0 < th < a["deadline"]                      # the threshold matters: spot alone is late more often
    assert found["spot"]["p_finish_by_deadline"] < found["on-demand"]["p_finish_by_deadline"]
    # the fallback runs on spot a while and moves mid-run: its cost lies strictly between the two
    assert found["spot"]["mean_cost"] < 0.9 * found["fallback"]["mean_cost"] < 0.9 * found["on-demand"]["mean_cost"]
    for policy, threshold in (("on-demand", 0.0), ("spot", 0.0), ("fallback", th)):
        mine = simulate_capacity(job, policy, threshold, runs=RUNS, seed=11)
        ref = _independent(job, policy, threshold, nxt, RUNS, 23)
        _agree(mine, ref, a["deadline"], (case, policy))


def test_the_policies_run_the_schedules_plan_reports():
    """On-demand runs the schedule planned for failures alone, spot the one for failures and preemptions (the
    schedules engine.phases / engine.schedule_interruptions plan), and the burn-in shortens both at the start."""
    from ckptplan.engine.phases import optimal_schedule
    from ckptplan.engine.schedule_interruptions import interruption_optimal_schedule

    job = capacity_job(**dict(BURN_IN, D=0.0))
    a = BURN_IN
    od = optimal_schedule(a["work"], a["C"], a["M"], a["R"], a["phase_starts"], a["phase_factors"])
    sp = interruption_optimal_schedule(a["work"], a["C"], a["M"], a["R"], a["phase_starts"], a["phase_factors"],
                                       a["P"], a["N"], a["Wc"])
    np.testing.assert_array_equal(job["schedule"]["T_od_by"], od["intervals"])
    np.testing.assert_array_equal(job["schedule"]["T_spot_by"], sp["intervals"])
    assert job["rho_od"] == od["schedule"]["total"] / a["work"]
    for key in ("T_od_by", "T_spot_by"):
        assert job["schedule"][key][0] < job["schedule"][key][1]
    found = spot.capacity_policies(**BURN_IN, runs=300, seed=1)
    assert [w["start_h"] for w in found["on-demand"]["schedule"]] == [0.0, 6.0]
    assert found["spot"]["interval_min"] == found["spot"]["schedule"][0]["interval_min"]


def test_phases_at_one_rate_are_the_constant_rate_comparison_exactly():
    const = {k: v for k, v in BURN_IN.items() if not k.startswith("phase_")}
    base = spot.capacity_policies(**const, runs=500, seed=2)
    flat = spot.capacity_policies(**dict(BURN_IN, phase_factors=[1.0, 1.0]), runs=500, seed=2)
    assert flat == base
    later = spot.capacity_policies(**dict(BURN_IN, phase_starts=[120.0], phase_factors=[1.0]), runs=500, seed=2)
    assert later == base                             # a phase at 1x from 2 h: the constant rate before it too
    doubled = spot.capacity_policies(**dict(BURN_IN, phase_factors=[2.0, 2.0]), runs=500, seed=2)
    assert doubled == spot.capacity_policies(**dict(const, M=300.0), runs=500, seed=2)
    shape_one = spot.capacity_policies(**dict(const, weibull_shape=1.0), runs=500, seed=2)
    assert shape_one == base


def test_without_preemptions_spot_is_on_demand_apart_from_the_price():
    for a in (BURN_IN, WEIBULL):
        a = dict(a, P=math.inf)
        job = capacity_job(**a)
        assert job["schedule"]["T_spot_by"] is job["schedule"]["T_od_by"]
        s = simulate_capacity(job, "spot", runs=400, seed=4)
        o = simulate_capacity(job, "on-demand", runs=400, seed=4)
        np.testing.assert_array_equal(s["wall"], o["wall"])
        np.testing.assert_allclose(s["cost"] * a["price"], o["cost"] * a["spot_price"], rtol=1e-12)


def test_the_changing_rate_path_at_a_constant_rate_is_the_constant_path_run_by_run():
    """The schedule path forced onto a constant rate (two phases at 1x, each window the constant interval) draws the
    same failures (``H^-1(H(t) + E) - t = E M`` up to rounding) and picks the same intervals: every run's wall time
    and cost equal the constant-rate simulation's to rounding, for all three policies."""
    from ckptplan.engine.phases_montecarlo import phase_next_failure

    const = {k: v for k, v in BURN_IN.items() if not k.startswith("phase_")}
    plain = capacity_job(**const)
    forced = dict(plain, schedule={"starts_od": np.array([0.0, 360.0]), "T_od_by": np.full(2, plain["T_od"]),
                                   "starts_spot": np.array([0.0, 360.0]), "T_spot_by": np.full(2, plain["T_spot"]),
                                   "next_failure": phase_next_failure([0.0, 360.0], [1.0, 1.0], const["M"])})
    for policy, th in (("on-demand", 0.0), ("spot", 0.0), ("fallback", 200.0)):
        a = simulate_capacity(plain, policy, th, runs=500, seed=8)
        b = simulate_capacity(forced, policy, th, runs=500, seed=8)
        np.testing.assert_allclose(b["wall"], a["wall"], rtol=1e-9)
        np.testing.assert_allclose(b["cost"], a["cost"], rtol=1e-9)
        np.testing.assert_array_equal(b["finished"], a["finished"])
