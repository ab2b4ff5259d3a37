"""Will a tiered plan finish by its deadline? The tiered Monte Carlo at the plan's interval, summarised.

:func:`tiered_deadline_report` plans ``scenario`` with its checkpoint tiers (:func:`engine.setup.plan_setup`:
the first tier's interval ``T`` at the optimum for the stated ``every``, or ``interval_min``) and simulates the
finite job run by run with :func:`engine.montecarlo_tiers.simulate_tiers` (failure classes restored from the
first tier that survives them, restores that fail falling back; Benoit et al., IEEE TC 66(7), 2017, for the
model), the same simulation as the plan's ``p_finish_by_deadline`` (``runs`` and ``seed`` chosen here: with
:data:`engine.setup.DEADLINE_RUNS` runs and seed 0 the two are the same number).

Returned figures (units in the keys), as :func:`engine.deadline.deadline_report` names them: ``p_finish`` =
P(wall <= deadline), its standard error ``sqrt(p (1 - p) / runs)`` and 95 % Wilson interval; the wall time's
mean (and standard error), P50, P90, P99; the job's GPU-hours and its GPU-time cost (mean, P90; ``gpus`` at
``price_per_gpu_hour``, restarts included). Assumptions: exponential failures at the job's rate, independent
between runs; where it stops: a plan expecting more than 10^4 failures per run is refused (``InputError`` on M).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import cost
from .errors import InputError
from .montecarlo import standard_error, wilson_interval
from .scenario import Scenario

__all__ = ["tiered_deadline_report"]


def tiered_deadline_report(scenario: Scenario, setup: Any, runs: int = 10000, seed: int = 0) -> dict[str, Any]:
    """The tiered plan's deadline answer by simulation (module notes); ``setup`` with ``tiers``."""
    from .montecarlo_tiers import simulate_tiers
    from .setup import plan_setup
    from .tiers import Tier

    if scenario.deadline_h is None:
        raise InputError("deadline_h", None, "a deadline answer needs a deadline")
    if not setup.tiers:
        raise InputError("tiers", (), "the tiered deadline answer needs checkpoint tiers")
    plan = plan_setup(scenario.replace(deadline_h=None), setup)   # the plan alone: its own 2,000 runs are not needed
    f, base, tiers = plan.figures, plan.scenario, plan.tiers
    # a tier's restart is R' + its restore (engine.tiers.table): R', the restart without the load, is the same for each
    other = tiers[0]["restart_min"] - tiers[0]["restore_min"]
    D = float(base.downtime_min)
    objs = [Tier(t["name"], t["checkpoint_stall_min"], t["restore_min"], t["every"], tuple(t["survives"]),
                 restore_failure_probability=t["restore_failure_probability"], copies=t["copies"]) for t in tiers]
    sim = simulate_tiers(base.useful_training_h * 60.0, f["interval_min"], f["job_mtbf_h"] * 60.0, max(other - D, 0.0),
                         float(base.async_write_min), float(base.async_slowdown_fraction), tiers=objs,
                         classes=setup.failure_classes, runs=runs, seed=seed, D=D)
    wall_h = np.asarray(sim.wall, dtype=float) / 60.0   # as engine.deadline's summary of one interval
    hits = int(np.count_nonzero(np.asarray(sim.wall) <= scenario.deadline_h * 60.0))
    p = hits / sim.runs
    low, high = wilson_interval(hits, sim.runs)
    gpu_h = np.asarray(cost.gpu_hours(wall_h, f["gpus"]))
    money = np.asarray(cost.money(gpu_h, base.price_per_gpu_hour))
    q50, q90, q99 = np.quantile(wall_h, [0.5, 0.9, 0.99])
    return {"runs": sim.runs, "seed": seed, "deadline_h": float(scenario.deadline_h), "interval_min": f["interval_min"],
            "failure_law": "exponential", "p_finish": p, "p_finish_se": math.sqrt(p * (1 - p) / sim.runs),
            "p_finish_low": low, "p_finish_high": high, "wall_h_mean": float(wall_h.mean()),
            "wall_h_mean_se": standard_error(wall_h), "wall_h_p50": float(q50), "wall_h_p90": float(q90),
            "wall_h_p99": float(q99), "gpu_hours_mean": float(gpu_h.mean()),
            "gpu_hours_p90": float(np.quantile(gpu_h, 0.9)), "cost_mean": float(money.mean()),
            "cost_p90": float(np.quantile(money, 0.9)), "expected_wall_h": f["wall_h"],
            "used": _used(base, scenario.deadline_h, f, plan.restart_parts_min, tiers, other, setup.failure_classes)}


def _used(base: Scenario, deadline_h: float, f: Any, parts: Any, tiers: Any, other: float,
          classes: Any) -> dict[str, Any]:
    """What the simulation was given, keyed by name and unit: the job (work, MTBF, GPUs, price, deadline), the restart
    (``R'`` the restart without the checkpoint load, the downtime ``D`` inside it, the restart pipeline's parts
    ``restart_part_<part>_min`` when the setup gives them), the background write and its slowdown, each tier (its every, interval ``every x T``, stall, restore, restart ``R' + restore``, restore failure
    probability, copies) and each failure class's share."""
    out: dict[str, Any] = {"useful_training_h": float(base.useful_training_h), "job_mtbf_min": f["job_mtbf_h"] * 60.0,
                           "gpus": f["gpus"], "price_per_gpu_hour": float(base.price_per_gpu_hour),
                           "deadline_h": float(deadline_h), "restart_without_load_min": other,
                           "downtime_min": float(base.downtime_min),
                           **{f"restart_part_{p}": float(v) for p, v in parts.items()},
                           "async_write_min": float(base.async_write_min),
                           "async_slowdown_fraction": float(base.async_slowdown_fraction)}
    for i, t in enumerate(tiers, start=1):
        out[f"tier{i}_name"] = t["name"]
        for key in ("every", "interval_min", "checkpoint_stall_min", "restore_min", "restart_min",
                    "restore_failure_probability", "copies"):
            out[f"tier{i}_{key}"] = t[key]
    for name, share in classes.items():
        out[f"class_{name}_share"] = float(share)
    return out
