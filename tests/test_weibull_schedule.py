"""Weibull failure intensity from the job's start: the schedule's expectation against an event-by-event
simulation written here, shape 1 against today's plan, the schedule against the best single interval, and
the field on the scenario surfaces."""

import math

import numpy as np
import pytest

from ckptplan import engine
from ckptplan.engine import weibull_schedule as WS
from ckptplan.engine.weibull_montecarlo import simulate_weibull_schedule


def _simulate(work, starts, intervals, C, M, R, k, runs, seed):
    """What physically happens, one run at a time: failures of a power-law process from the job's start
    (next failure after t: the t' with (t'/eta)^k - (t/eta)^k = an exponential draw), a segment saved
    when it outlives the next failure, a restart redone when a failure strikes it; the last segment counted
    as the share of its wall time its work is of a full interval (the constant-rate model's convention), and
    the failures counted those before that end (the model's count: the intensity over the wall time counted)."""
    rng = np.random.default_rng(seed)
    eta = M / math.gamma(1 + 1 / k)
    walls, fails = np.empty(runs), np.empty(runs)
    for r in range(runs):
        t, left, hits = 0.0, work, []
        nxt = eta * rng.exponential() ** (1 / k)          # the first failure
        while True:
            T = intervals[int(np.searchsorted(starts, t, side="right")) - 1]
            begin, last = t, left <= T
            while nxt < t + T + C:                        # the segment fails: restart (redone if struck) and retry
                hits.append(nxt)
                t = nxt
                nxt = eta * ((t / eta) ** k + rng.exponential()) ** (1 / k)
                while nxt < t + R:
                    hits.append(nxt)
                    t = nxt
                    nxt = eta * ((t / eta) ** k + rng.exponential()) ** (1 / k)
                t += R
                if not last:                              # the final segment keeps its interval and origin
                    T = intervals[int(np.searchsorted(starts, t, side="right")) - 1]
                    begin, last = t, left <= T
            t += T + C
            if last:
                walls[r] = begin + (left / T) * (t - begin)
                break
            left -= T
        fails[r] = np.sum(np.array(hits) < walls[r])
    return walls, fails


# (work, C, M, R, k): burn-in over a 2-day job; a strong one over a long job; a short job on a weak shape
CASES = [(48 * 60.0, 5.0, 300.0, 10.0, 0.7), (200 * 60.0, 3.0, 600.0, 10.0, 0.5), (20 * 60.0, 2.0, 120.0, 4.0, 0.85)]


@pytest.mark.parametrize("case", CASES)
def test_expectation_agrees_with_an_event_by_event_simulation(case):
    work, C, M, R, k = case
    horizon = 2 * engine.time_breakdown(work, engine.exact_optimal_interval(C, M), C, M, R)["total"]
    starts, base = WS.first_order_schedule(C, M, k, horizon)
    exact = WS.weibull_expectation(work, starts, base, C, M, R, k)
    walls, fails = _simulate(work, starts, base, C, M, R, k, runs=6000, seed=5)
    for x, name in ((walls, "total"), (fails, "failures")):
        se = x.std(ddof=1) / np.sqrt(x.size)
        assert abs(x.mean() - exact[name]) < 3 * se, (name, x.mean(), exact[name], se)
    sim = simulate_weibull_schedule(work, starts, base, C, M, R, k, runs=20_000, seed=9)   # the engine's own
    se = sim["wall"].std(ddof=1) / np.sqrt(sim["wall"].size)
    assert abs(sim["wall"].mean() - exact["total"]) < 3 * se
    assert exact["useful"] == work and exact["rework"] >= 0


def test_refining_the_grid_moves_the_expectation_by_less_than_1e4(monkeypatch):
    work, C, M, R, k = CASES[1]
    starts, base = WS.first_order_schedule(C, M, k, 30_000.0)
    coarse = WS.weibull_expectation(work, starts, base, C, M, R, k)["total"]
    monkeypatch.setattr(WS, "HAZARD_STEPS", 2 * WS.HAZARD_STEPS)
    monkeypatch.setattr(WS, "EARLY_STEPS", 2 * WS.EARLY_STEPS)
    fine = WS.weibull_expectation(work, starts, base, C, M, R, k)["total"]
    assert fine == pytest.approx(coarse, rel=1e-4)


@pytest.mark.parametrize("C,M,R", [(3.0, 600.0, 10.0), (0.5, 90.0, 0.0), (20.0, 300.0, 45.0)])
def test_shape_one_is_todays_plan_exactly(C, M, R):
    work = 12_000.0
    plan = WS.optimal_weibull_schedule(work, C, M, R, 1.0)
    assert list(plan["intervals"]) == [engine.exact_optimal_interval(C, M)]
    ref = engine.time_breakdown(work, plan["intervals"][0], C, M, R)
    for key in ("total", "save", "rework", "restart", "failures"):
        assert plan["schedule"][key] == ref[key]
    # several windows at a constant rate: the phases model at rate factor 1, Daly's model to rounding
    T = [0.9 * plan["intervals"][0], 1.1 * plan["intervals"][0]]
    two = WS.weibull_expectation(work, [0.0, 3000.0], T, C, M, R, 1.0)
    from ckptplan.engine.phases import schedule_expectation
    assert two["total"] == pytest.approx(schedule_expectation(work, T, C, M, R, [0.0, 3000.0], [1.0, 1.0])["total"],
                                         rel=1e-9)


@pytest.mark.parametrize("k", [0.5, 0.8])
@pytest.mark.parametrize("M", [300.0, 3000.0])
def test_schedule_never_costs_more_than_the_best_single_interval(k, M):
    work, C, R = 72 * 60.0, 4.0, 10.0
    plan = WS.optimal_weibull_schedule(work, C, M, R, k)
    assert plan["schedule"]["total"] <= plan["single"]["total"]
    single = plan["single_interval"]
    for f in (0.8, 1.25):   # the single interval is the best one under the same process
        assert WS.weibull_expectation(work, [0.0], [single * f], C, M, R, k)["total"] >= plan["single"]["total"]
    if len(plan["intervals"]) > 1:       # burn-in: shorter intervals while failures cluster
        assert np.all(np.diff(plan["intervals"]) > 0)


@pytest.mark.parametrize("bad", [0.1, 1.5, float("nan"), True, "0.7"])
def test_shape_outside_its_range_is_refused_by_name(bad):
    with pytest.raises(engine.InputError, match="weibull_shape_from_start"):
        WS.optimal_weibull_schedule(600.0, 2.0, 100.0, 1.0, bad)
