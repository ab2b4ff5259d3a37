"""Elastic continuation (engine.elastic) against an event-by-event simulation of what physically happens,
written here independently of the engine: replicas fail and drop out, nodes come back, the job pauses to
shrink and regrow, rolls back where the framework loses progress, and stops at the floor."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ckptplan.engine import InputError, elastic, waste


def _restart(rng, lam_k, R, D, stats):
    """A stop's recovery: wait D for a node (exponential, mean D), then R exposed to failures at lam_k."""
    t = 0.0
    while True:
        t += rng.expovariate(1.0 / D) if D > 0 else 0.0
        hit = rng.expovariate(lam_k) if lam_k > 0 else math.inf
        if hit >= R:
            return t + R
        t += hit
        stats["failures"] += 1


def _run(rng, work, T, C, M, R, D, n, K, keep, Ps, Pg, stats):
    """One job, event by event, until `work` is committed; returns (wall, committed work)."""
    lam = 1.0 / M
    k, phase, pending, done, wall, clock = 0, 0.0, 0.0, 0.0, 0.0, 0.0
    back: list[float] = []                      # chain-clock times at which each replica out gets its node
    while done < work:
        rate = lam * (n - k) / n
        to_fail = rng.expovariate(rate)
        to_back = (min(back) - clock) if back else math.inf
        to_phase = (T - phase) if phase < T else (T + C - phase)
        step = min(to_fail, to_back, to_phase)
        if phase < T:
            pending += step * (n - k) / n
        phase += step
        clock += step
        wall += step
        stats["active"] += step
        stats["replica_time"] += step * (n - k)
        if k > 0:
            stats["shrunk"] += step
        if step == to_phase:
            if phase >= T + C - 1e-12:      # save complete: the work is safe
                done += pending
                pending, phase = 0.0, 0.0
            else:
                phase = T                   # compute done: save
            continue
        if step == to_back:
            back.remove(min(back))
            k -= 1
            wall += Pg
            continue
        stats["failures"] += 1
        if k == K and not (D == 0 and K >= 1):  # the floor: stop, roll back, restart as today
            stats["stops"] += 1
            pending, phase = 0.0, 0.0
            wall += _restart(rng, lam * (n - K) / n, R, D, stats)
            continue
        stats["shrinks"] += 1
        if D == 0:                          # the node is back at once: shrink and regrow
            wall += Ps + Pg
        else:
            k += 1
            back.append(clock + rng.expovariate(1.0 / D))
            wall += Ps
        if not keep:                        # progress not kept: back to the last checkpoint
            pending, phase = 0.0, 0.0
    return wall, done


def _simulate(runs, seed, **kw):
    rng = random.Random(seed)
    stats = dict.fromkeys(("failures", "stops", "shrinks", "active", "replica_time", "shrunk"), 0.0)
    walls, works = np.empty(runs), np.empty(runs)
    for i in range(runs):
        walls[i], works[i] = _run(rng, stats=stats, **kw)
    return walls, works, stats


def _ratio_se(walls, works):
    """Ratio estimator sum(wall)/sum(work) and its delta-method standard error."""
    r = walls.sum() / works.sum()
    d = walls - r * works
    return r, math.sqrt((d ** 2).sum() / (len(walls) - 1) / len(walls)) / works.mean()


GRID = [
    # (n, K, keep, D, Ps, Pg)
    (8, 1, 1, 60.0, 1.0, 2.0),
    (8, 1, 0, 60.0, 1.0, 2.0),
    (8, 3, 1, 200.0, 0.5, 0.5),
    (8, 3, 0, 200.0, 0.5, 0.5),
    (4, 3, 1, 400.0, 3.0, 1.0),   # floor of one replica
    (16, 2, 0, 30.0, 0.0, 0.0),
    (6, 2, 1, 0.0, 1.0, 1.0),     # a node back at once (many spares, instant swap)
]


@pytest.mark.parametrize("n,K,keep,D,Ps,Pg", GRID)
def test_expectation_matches_event_simulation(n, K, keep, D, Ps, Pg):
    M, C, R, T, work = 300.0, 4.0, 15.0, 60.0, 6000.0
    kw = dict(work=work, T=T, C=C, M=M, R=R, D=D, n=n, K=K, keep=keep, Ps=Ps, Pg=Pg)
    walls, works, stats = _simulate(300, 7 + n + 10 * K + keep, **kw)
    model = elastic.elastic_breakdown(1.0, T, C, M, R, D, n, n - K, keep, Ps, Pg)
    r, se = _ratio_se(walls, works)
    assert abs(model["total"] - r) < 3 * se, (model["total"], r, se)
    # every failure counted (shrinks, stops, failures of restarts): per unit of committed work
    fails = stats["failures"] / works.sum()
    assert abs(model["failures"] - fails) < 3 * math.sqrt(stats["failures"]) / works.sum() + 1e-12
    assert abs(model["stops"] - stats["stops"] / works.sum()) < 3 * math.sqrt(stats["stops"] + 1) / works.sum()
    running = stats["replica_time"] / stats["active"]
    assert abs(model["mean_replicas_running"] - running) < 0.01 * n


def test_floor_at_all_replicas_is_todays_model():
    rng = np.random.default_rng(3)
    work, T, C, M = rng.uniform(100, 1e4, 50), rng.uniform(5, 200, 50), rng.uniform(0.1, 10, 50), rng.uniform(60, 3e3, 50)
    R, D, n = rng.uniform(0, 30, 50), rng.uniform(0, 300, 50), rng.integers(1, 40, 50)
    got = elastic.elastic_breakdown(work, T, C, M, R, D, n, n, 1, 2.0, 3.0)
    want = waste.time_breakdown(work, T, C, M, R, 0.0, 0.0, D)
    for key in ("total", "save", "restart", "failures"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-10)
    assert np.all(np.abs(got["rework"] - want["rework"]) <= 1e-8 * want["total"])


def test_broadcasts_scalars_arrays_series():
    import pandas as pd

    s = pd.Series([6, 5, 4], index=list("abc"))
    out = elastic.elastic_breakdown(1000.0, 60.0, 2.0, 500.0, 10.0, 100.0, 6, s)
    assert list(out["total"].index) == list("abc")
    scalar = elastic.elastic_breakdown(1000.0, 60.0, 2.0, 500.0, 10.0, 100.0, 6, 5)
    assert isinstance(scalar["total"], float) and scalar["total"] == pytest.approx(out["total"]["b"], rel=1e-12)
    # a lower floor never costs time here (returns in 100 min against failures every 500)
    assert out["total"]["a"] > out["total"]["b"] > out["total"]["c"]


@pytest.mark.parametrize("args,field", [
    ((6, 7), "min_replicas"), ((200, 100), "min_replicas"), ((6, 0), "min_replicas")])
def test_refuses_bad_floors(args, field):
    with pytest.raises(InputError) as err:
        elastic.elastic_breakdown(1000.0, 60.0, 2.0, 500.0, 10.0, 100.0, *args)
    assert err.value.field == field


def test_optimum_is_the_minimum():
    args = (4.0, 300.0, 15.0, 200.0, 8, 6, 0, 1.0, 1.0)
    best = elastic.elastic_optimal_interval(*args)
    f = lambda T: elastic.elastic_breakdown(1.0, T, *args[:4], *args[4:])["total"]  # noqa: E731
    assert f(best) <= min(f(best * 0.9), f(best * 1.1))
    today = elastic.elastic_optimal_interval(4.0, 300.0, 15.0, 200.0, 8, 8)
    assert today == pytest.approx(waste.exact_optimal_interval(4.0, 300.0), rel=1e-6)
