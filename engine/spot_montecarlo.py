"""The finite job on spot, on-demand or fallback capacity, run by run (:mod:`ckptplan.engine.spot`'s Monte Carlo; its
module notes say what happens and where the switching rule comes from). Apart from :mod:`ckptplan.engine.spot` so
that the scenario table (:mod:`ckptplan.engine.preemption_table`, the deadline answer on spot capacity) can run it
without importing what plans a scenario."""

from __future__ import annotations

from typing import Any

import numpy as np

from .preemption import preemption_optimal_interval
from .waste import exact_optimal_interval_kernel, expected_wall_time

__all__ = ["capacity_job", "simulate_capacity"]


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


def simulate_capacity(job: dict[str, float], policy: str, threshold: float = 0.0, runs: int = 4000,
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


def capacity_job(work, C, M, R, P, N, Wc, deadline, price, spot_price, gpus, D=0.0) -> dict[str, float]:
    """The job :func:`simulate_capacity` runs (minutes; prices per GPU-hour, GPUs): intervals and on-demand rho."""
    T_od = float(exact_optimal_interval_kernel(np.float64(C), np.float64(M), np.float64(0.0), np.float64(0.0)))
    return {"work": work, "C": C, "M": M, "R": R, "P": P, "N": N, "Wc": Wc, "D": D, "deadline": deadline,
            "T_od": T_od, "T_spot": float(preemption_optimal_interval(C, M, R, P, N, Wc, D)),
            "rho_od": float(expected_wall_time(1.0, T_od, C, M, R, D=D)),
            "price": price * gpus / 60.0, "spot_price": spot_price * gpus / 60.0}
