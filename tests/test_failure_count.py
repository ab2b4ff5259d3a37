"""Every failure counted once: the plan's ``expected_failures`` is wall time / job MTBF (Wald), restarts included.

Checked against event-by-event simulations written here from the physical description (not from the
engine's samplers): a job of whole segments, each compute ``T`` then a save; a failure (exponential,
mean ``M``) anywhere, during compute, a save or a restart, stops it; after a failure the job restarts
(``R``, plus the restore of the copy it rolls back to), and a failure during the restart starts it
again. Every failure is counted.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from ckptplan import engine
from ckptplan.engine import montecarlo as mc
from ckptplan.engine.montecarlo_tiers import simulate_tiers as simulate_tiers_engine
from ckptplan.engine.tiers import model as tm
from restart_loop import recover


def _mean_se(x: list[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size))


def simulate_single(segments: int, T: float, C: float, M: float, R: float, runs: int, seed: int, D: float = 0.0):
    """(failures per run, wall per run) of a synchronous single-level job; ``D``: downtime after every failure (the
    job waits for a node, holding none, and cannot fail), then the exposed restart ``R``."""
    rng = random.Random(seed)
    fails, walls = [], []
    for _ in range(runs):
        t, n, done = 0.0, 0, 0
        while done < segments:
            gap = rng.expovariate(1.0 / M)
            if gap >= T + C:            # the segment and its save complete
                t += T + C
                done += 1
                continue
            t += gap
            n += 1
            dt, dn = recover(rng, D, R, M)
            t, n = t + dt, n + dn
        fails.append(n)
        walls.append(t)
    return fails, walls


@pytest.mark.parametrize("T, C, M, R, D", [(60.0, 2.0, 300.0, 20.0, 0.0), (30.0, 5.0, 120.0, 90.0, 0.0),
                                           (100.0, 1.0, 2000.0, 10.0, 0.0), (60.0, 2.0, 300.0, 20.0, 45.0),
                                           (30.0, 5.0, 120.0, 90.0, 200.0)])
def test_single_level_expected_failures_is_exposed_time_over_mtbf_and_matches_the_simulation(T, C, M, R, D):
    segments = 40
    work = segments * T
    # through the plan's surface: engine.evaluate of a scenario with this interval, job MTBF, restart and downtime
    table = pd.DataFrame({"checkpoint_stall_min": [C], "restart_min": [R + D], "downtime_min": [D], "nodes": [1],
                          "job_mtbf_h": [M / 60.0], "useful_training_h": [work / 60.0], "price_per_gpu_hour": [1.0],
                          "interval_min": [T]})
    row = engine.evaluate(table).iloc[0]
    assert row["expected_failures"] == pytest.approx(row["wall_h"] * 60.0 / (M + D), rel=1e-12)
    fails, walls = simulate_single(segments, T, C, M, R, runs=4000, seed=11, D=D)
    f, f_se = _mean_se(fails)
    w, w_se = _mean_se(walls)
    assert abs(f - row["expected_failures"]) <= 3 * f_se, (f, f_se, row["expected_failures"])
    assert abs(w - row["wall_h"] * 60.0) <= 3 * w_se, (w, w_se, row["wall_h"] * 60.0)
    # the Monte Carlo of the plan (engine.montecarlo) with the same downtime
    sim = mc.simulate(work, T, C, M, R, runs=4000, seed=5, D=D)
    assert abs(sim.failures.mean() - row["expected_failures"]) <= 3 * mc.standard_error(sim.failures)
    assert abs(sim.mean() - row["wall_h"] * 60.0) <= 3 * sim.standard_error()
    # the old count (failures outside restarts) is refuted where restarts are long against M
    rollbacks = engine.time_breakdown(work, T, C, M, R, D=D)["rollbacks"]
    if R / M > 0.5:
        assert abs(f - rollbacks) > 10 * f_se


def simulate_tiers(patterns: int, K: int, T: float, C1: float, C2: float, r1: float, r2: float, M: float, R: float,
                   share_node: float, runs: int, seed: int, D: float = 0.0):
    """(failures per run, wall per run): two tiers, host memory at every save (its copy survives a process
    failure only) and a remote store every K saves (survives everything); a failure rolls back to the newest
    copy that survives its class and restarts with that copy's restore."""
    rng = random.Random(seed)
    total = patterns * K
    fails, walls = [], []
    for _ in range(runs):
        t, n, durable = 0.0, 0, 0
        while durable < total:
            k = durable + 1
            seg = T + C1 + (C2 if k % K == 0 else 0.0)
            gap = rng.expovariate(1.0 / M)
            if gap >= seg:
                t += seg
                durable = k
                continue
            t += gap
            n += 1
            node_loss = rng.random() < share_node
            durable = (durable // K) * K if node_loss else durable
            dt, dn = recover(rng, D, R + (r2 if node_loss else r1), M)
            t, n = t + dt, n + dn
        fails.append(n)
        walls.append(t)
    return fails, walls


@pytest.mark.parametrize("D", [0.0, 30.0])
def test_tiered_expected_failures_is_exposed_time_over_mtbf_and_matches_the_simulation(D):
    T, C1, C2, r1, r2, M, R, K, share = 10.0, 0.5, 6.0, 0.5, 8.0, 150.0, 15.0, 5, 0.4
    patterns = 8
    tiers = [tm.Tier("host", C1, r1, 1, ("process",)), tm.Tier("remote", C2, r2, K, ("process", "node"))]
    classes = {"process": 1.0 - share, "node": share}
    work = patterns * K * T
    split = tm.tiered_breakdown(work, T, M, R, tiers=tiers, classes=classes, D=D)
    assert split["failures"] == pytest.approx(split["wall"] / (M + D), rel=1e-12)
    parts = split["useful"] + split["save"] + split["rework"] + split["restart"]
    assert parts == pytest.approx(split["wall"], rel=1e-12)
    fails, walls = simulate_tiers(patterns, K, T, C1, C2, r1, r2, M, R, share, runs=4000, seed=5, D=D)
    f, f_se = _mean_se(fails)
    w, w_se = _mean_se(walls)
    assert abs(w - split["wall"]) <= 3 * w_se, (w, w_se, split["wall"])
    assert abs(f - split["failures"]) <= 3 * f_se, (f, f_se, split["failures"])
    # the tiered Monte Carlo (engine.montecarlo_tiers) with the same downtime, final save: whole patterns
    sim = simulate_tiers_engine(work, T, M, R, tiers=tiers, classes=classes, runs=4000, seed=9, final_save=True, D=D)
    assert abs(sim.failures.mean() - split["failures"]) <= 3 * mc.standard_error(sim.failures)
    assert abs(sim.wall.mean() - split["wall"]) <= 3 * mc.standard_error(sim.wall)


def test_no_downtime_is_the_model_without_it_to_the_bit():
    """D = 0 reproduces the model without downtime exactly (the same floating-point operations)."""
    args = (43200.0, 60.0, 2.0, 1200.0, 10.0, 4.0, 0.15)
    assert engine.expected_wall_time(*args, D=0.0) == engine.expected_wall_time(*args)
    assert engine.waste_fraction(*args[1:], D=0.0) == engine.waste_fraction(*args[1:])
    a, b = engine.time_breakdown(*args, D=0.0), engine.time_breakdown(*args)
    assert all(a[k] == b[k] for k in a)
    tiers = [tm.Tier("only", 2.0, 3.0, 1, ("all",))]
    assert tm.tiered_wall_per_work(60.0, 1200.0, 10.0, tiers=tiers, classes={"all": 1.0}, D=0.0) == \
        tm.tiered_wall_per_work(60.0, 1200.0, 10.0, tiers=tiers, classes={"all": 1.0})
