"""What a workbook cell must equal: the engine's plan of a scenario with its design (engine.setup.plan_setup).

One function maps every check key the sheet builders write (an ``engine.evaluate`` column, a design figure,
a restart part ``part:<name>``, the value the plan uses ``used:<field>``, ``row:<column>``) to the engine's
figure, so the Plan, Scaling, Compare and Storage & recovery sheets are held to one answer.
"""

from __future__ import annotations

import math

from ckptplan.engine import recovery, storage
from ckptplan.engine.setup import RecoverySetup, plan_setup

__all__ = ["LOOSE_TIERED", "figure", "single_plan", "tiered_figure"]


def single_plan(sc, st=None):
    """``plan_setup`` of ``sc`` with the single-level view of ``st`` (no tiers): what a live sheet column plans."""
    st = st if st is not None else RecoverySetup()
    return plan_setup(sc, st.replace(tiers=(), failure_classes={}))


def figure(key: str, sc, st, plan=None):
    """The engine's value of check ``key`` for ``sc`` with setup ``st`` (``plan``: its :func:`single_plan`)."""
    st = st if st is not None else RecoverySetup()
    plan = plan if plan is not None else single_plan(sc, st)
    f, row = plan.figures, plan.row
    writers = st.writers or sc.nodes
    if key.startswith("row:"):
        key = key[4:]
    if key.startswith("used:"):
        return getattr(plan.scenario, key[5:])
    if key.startswith("part:"):
        return plan.restart_parts_min.get(key[5:])
    if key == "pipeline_min":
        return sum(plan.restart_parts_min.values()) if plan.restart_parts_min else None
    if key == "writers":
        return writers
    if key in ("write_bandwidth_gb_s", "read_bandwidth_gb_s"):
        if f["derived_checkpoint_stall_min"] is None:
            return None
        per, agg = st.write_gb_s_per_writer, st.aggregate_write_gb_s or math.inf
        if key == "read_bandwidth_gb_s":
            per, agg = st.read_gb_s_per_writer or per, st.aggregate_read_gb_s or agg
        return storage.effective_bandwidth_gb_s(per, writers, agg)
    if key in ("mean_in_repair", "pool_reallocation_min", "reallocation_sd_min", "mean_nodes_in_repair",
               "pool_waiting_share"):
        if st.repair_h is None:
            return None
        rate = (st.replacement_share if st.replacement_share is not None else 1.0) / f["job_mtbf_h"]
        if key == "mean_in_repair":
            return rate * st.repair_h
        pool = (rate, st.repair_h, st.spares or 0)
        if key == "mean_nodes_in_repair":
            return recovery.mean_nodes_in_repair(*pool)
        if key == "pool_waiting_share":
            return recovery.pool_waiting_share(*pool)
        fn = recovery.expected_reallocation_min if key == "pool_reallocation_min" else recovery.reallocation_sd_min
        return fn(*pool, st.swap_min or 0.0)
    if key in ("job_gpu_hours", "total_gpu_hours"):   # the job's; the job's and the spares'
        return f[key]
    if key in ("storage_cost", "spare_cost", "spare_gpu_hours", "total_cost", "cost_per_useful_gpu_hour",
               "checkpoint_size_gb", "derived_checkpoint_stall_min", "derived_async_write_min", "derived_restore_min",
               "spare_free_probability"):
        return f[key] if key != "spare_free_probability" or st.repair_h is not None else None
    return row[key]


#: tiered figures that move with the interval itself: the engine and the sheet each fix the optimum's T only to
#: about 1e-7 relative by comparing values (the objective is flat there; measured up to 2.1e-6), so 1e-5
LOOSE_TIERED = frozenset({"chosen_interval_min", "tiered_optimum_interval_min", "save_h", "rework_h", "save_gpu_hours",
                          "rework_gpu_hours", "save_cost", "rework_cost", "tier1_interval_min", "tier2_interval_min",
                          "tier3_interval_min"})


def tiered_figure(key: str, sc, st):
    """The engine's value of a tiered column's check ``key`` (``plan_setup`` of ``sc`` with its tiers ``st``)."""
    plan = plan_setup(sc, st)
    f = plan.figures
    if key.startswith("tier") and key.endswith("_interval_min") and key[4:-13].isdigit():
        i = int(key[4:-13]) - 1
        return plan.tiers[i]["interval_min"] if i < len(plan.tiers) else None
    cats = {f"{c}_gpu_hours": f[f"{c}_h"] * f["gpus"] for c in ("useful", "save", "rework", "restart")}
    named = {"chosen_interval_min": f["interval_min"], "tiered_optimum_interval_min": f["interval_min"],
             "job_gpu_hours": f["job_gpu_hours"], "total_gpu_hours": f["total_gpu_hours"],
             "billing_months": float(storage.months_from_hours(f["wall_h"])), "mean_restart_min": f["restart_min"],
             **cats}
    return named[key] if key in named else f[key]
