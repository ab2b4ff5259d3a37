"""The one-job spot / on-demand / fallback loop the engine's vectorised simulation (``engine.spot_montecarlo``) was
written from, kept here as the tests' run-by-run reference: the engine must give the same runs from the same seed.

Copied from the engine as it stood before the jobs were simulated together (2026-12-05); the engine no longer
calls it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["simulate_capacity_loop"]


def _draw(rng: Any, mean: Any, n: int) -> np.ndarray:
    return rng.exponential(1.0, n) * mean


def _restart(rng, idx, t, bill, spot, job, deadline_cap):
    """Restart the runs ``idx`` (in place): failures restart it, preemptions (spot) wait for capacity first."""
    while idx.size:
        fail = _draw(rng, job["M"], idx.size)
        pre = np.where(spot[idx], _draw(rng, job["P"], idx.size), np.inf)
        first = np.minimum(fail, pre)
        done = first >= job["R"]
        step = np.where(done, job["R"], first)
        t[idx] += step
        bill[idx] += step * np.where(spot[idx], job["spot_price"], job["price"])
        waited = ~done & (pre < fail)
        t[idx[waited]] += job["Wc"]
        down = idx[~done & ~waited]                           # a failure: the downtime before the next restart,
        t[down] += job.get("D", 0.0)                          # billed as the plan bills it (part of restart_h)
        bill[down] += job.get("D", 0.0) * np.where(spot[down], job["spot_price"], job["price"])
        idx = idx[~done & (t[idx] < deadline_cap)]


def simulate_capacity_loop(job: dict[str, float], policy: str, threshold: float = 0.0, runs: int = 4000,
                      seed: int = 0) -> dict[str, np.ndarray]:
    """Wall time and cost of ``runs`` jobs under ``policy`` (``spot``, ``on-demand``, ``fallback`` with
    ``threshold`` minutes of slack). ``job``: ``work``, ``C``, ``M``, ``R``, ``P``, ``N``, ``Wc``, ``T_spot``,
    ``T_od``, ``rho_od``, ``deadline``, ``price``, ``spot_price`` (per GPU-minute x GPUs), minutes; ``D`` (the
    downtime after every failure, billed as the plan's restart time, 0 when absent)."""
    rng = np.random.default_rng(seed)
    t, bill = np.zeros(runs), np.zeros(runs)
    left = np.full(runs, float(job["work"]))
    spot = np.full(runs, policy != "on-demand")
    active = np.ones(runs, dtype=bool)
    cap = 50.0 * job["deadline"] + 50.0 * job["work"] * job["rho_od"]   # runs this late are given up (reported)
    while active.any():
        a = np.flatnonzero(active)
        if policy == "fallback":
            move = a[spot[a] & (job["deadline"] - t[a] - left[a] * job["rho_od"] < threshold)]
            spot[move] = False
            later = move[t[move] > 0]
            _restart(rng, later, t, bill, spot, job, cap)   # moving: restore on on-demand capacity
        T = np.where(spot[a], job["T_spot"], job["T_od"])
        last = left[a] <= T
        length = np.where(last, left[a], T + job["C"])
        fail = _draw(rng, job["M"], a.size)
        pre = np.where(spot[a], _draw(rng, job["P"], a.size), np.inf)
        first = np.minimum(fail, pre)
        price = np.where(spot[a], job["spot_price"], job["price"])
        ok = first >= length
        step = np.where(ok, length, first)
        t[a] += step
        bill[a] += step * price
        left[a[ok]] -= np.where(last[ok], left[a[ok]], T[ok])
        by_pre = ~ok & (pre < fail)
        if job["N"] >= job["C"]:                            # a save on notice keeps the work done
            p = a[by_pre]
            left[p] -= np.minimum(first[by_pre], T[by_pre])
            t[p] += job["C"]
            bill[p] += job["C"] * job["spot_price"]
        t[a[by_pre]] += job["Wc"]
        down = a[~ok & ~by_pre]                               # a failure: the downtime before the restart (billed)
        t[down] += job.get("D", 0.0)
        bill[down] += job.get("D", 0.0) * price[~ok & ~by_pre]
        hit = a[~ok]
        _restart(rng, hit[left[hit] > 0], t, bill, spot, job, cap)
        active = (left > 1e-9) & (t < cap)
    return {"wall": t, "cost": bill, "finished": left <= 1e-9}




def capacity_policies_loop(job: dict[str, float], deadline: float, runs: int, seed: int) -> dict[str, dict[str, float]]:
    """The three policies of ``job`` (``engine.spot_montecarlo.capacity_job``) one simulation at a time: the fixed
    policies, then the bisection for the smallest fallback threshold on time at least as often as on-demand (to
    1e-3 of the deadline, same seed), as the engine's comparison was written before it searched jobs together."""
    def summary(sim: dict[str, np.ndarray]) -> dict[str, float]:
        on_time = sim["finished"] & (sim["wall"] <= deadline)
        return {"p_finish_by_deadline": float(on_time.mean()),
                "wall_h_p50": float(np.percentile(sim["wall"], 50)) / 60.0,
                "wall_h_p90": float(np.percentile(sim["wall"], 90)) / 60.0,
                "cost_p50": float(np.percentile(sim["cost"], 50)), "cost_p90": float(np.percentile(sim["cost"], 90)),
                "mean_cost": float(sim["cost"].mean())}

    out = {name: summary(simulate_capacity_loop(job, name, runs=runs, seed=seed)) for name in ("on-demand", "spot")}
    target = out["on-demand"]["p_finish_by_deadline"]
    lo, hi = 0.0, float(deadline)
    for _ in range(30):
        mid = (lo + hi) / 2.0
        p = summary(simulate_capacity_loop(job, "fallback", mid, runs, seed))["p_finish_by_deadline"]
        lo, hi = (lo, mid) if p >= target else (mid, hi)
        if hi - lo < 1e-3 * max(deadline, 1.0):
            break
    out["fallback"] = {**summary(simulate_capacity_loop(job, "fallback", hi, runs, seed)), "threshold_min": hi,
                       "target_p_finish": target}
    for name in out:
        out[name]["interval_min"] = job["T_od"] if name == "on-demand" else job["T_spot"]
    return out
