"""Spot, on-demand and spot with an on-demand fallback for each batch row side by side (``evaluate_rows(...,
capacity=True)``, ``ckptplan batch --capacity``).

Each row that evaluated, runs on preemptible capacity (``preemptions_per_h > 0``) and has a ``deadline_h`` is
priced as ``ckptplan compare`` prices that scenario (:func:`ckptplan.engine.spot.scenario_capacity`): the same
inputs (the row's job MTBF, stall, restart less its downtime, preemption rate, notice, wait for capacity, deadline,
on-demand price ``price_per_gpu_hour`` and spot price ``spot_price_per_gpu_hour``, else the on-demand one, GPUs),
the same :data:`~ckptplan.engine.spot.CAPACITY_RUNS` runs per policy and seed
:data:`~ckptplan.engine.spot.CAPACITY_SEED` (the same for every row: each row's figures are those of its own
``compare --json``, whichever rows share the batch). For each policy ``key`` of
:data:`ckptplan.engine.fields.CAPACITY_KEYS` the columns ``{key}_{name}`` of
:data:`ckptplan.engine.fields.CAPACITY_FIELDS` (``compare --json``'s names), the fallback's
``fallback_threshold_min`` and ``fallback_target_p_finish``, and ``cheapest_capacity_on_time``: the policy of the
lowest ``mean_cost`` among those on time at least as often as on-demand (the fallback is, by its threshold's
construction; ties go to the first of on_demand, spot, fallback).

A row without a preemption rate or without a deadline has nothing to compare: its capacity columns are blank and
``capacity_note`` says why (the row itself is answered as without ``--capacity``). A row with failure phases
(``phase{i}_start_h``, ``phase{i}_rate_factor``) or a ``weibull_shape_from_start`` below 1 is compared as ``compare``
compares that scenario: failures from the changing rate, each policy on its schedule
(:mod:`ckptplan.engine.capacity_schedules`). A tier design is refused for the whole batch (``compare`` shows no
capacity comparison for a tiered plan).

The rows' simulations run together (:func:`ckptplan.engine.spot.capacity_policies_many`): each row's numbers
are those of :func:`ckptplan.engine.spot.capacity_policies` run for it alone, run by run.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .errors import InputError
from .fields import CAPACITY_FALLBACK_FIELDS, CAPACITY_FIELDS, CAPACITY_KEYS, CAPACITY_TEXT_FIELDS
from .phases_table import PHASE_COL
from .scenario import RowProblems

__all__ = ["CAPACITY_COLUMNS", "CAPACITY_NUMBER_COLUMNS", "capacity_columns", "refuse_capacity_design"]

#: every capacity number column, policy by policy, then the fallback's own
CAPACITY_NUMBER_COLUMNS = (tuple(f"{k}_{f.name}" for k in CAPACITY_KEYS for f in CAPACITY_FIELDS)
                           + tuple(f"fallback_{f.name}" for f in CAPACITY_FALLBACK_FIELDS))
#: every capacity column: the numbers, then ``cheapest_capacity_on_time`` and ``capacity_note``
CAPACITY_COLUMNS = CAPACITY_NUMBER_COLUMNS + tuple(CAPACITY_TEXT_FIELDS)
#: ``compare --json``'s policy names, by column prefix
_POLICY = {"on_demand": "on-demand", "spot": "spot", "fallback": "fallback"}
NO_PREEMPTIONS = ("no preemptions_per_h: the row runs on on-demand capacity only; give it a preemption rate to "
                  "compare spot, on-demand and the fallback")
NO_DEADLINE = "no deadline_h: the policies are compared by their chance of finishing by a deadline; give one"
SPOT_AT_ON_DEMAND = ("no spot_price_per_gpu_hour: spot priced at price_per_gpu_hour, as compare does (give the "
                     "spot price to see its savings)")


def refuse_capacity_design(design: Any) -> None:
    """Refuse ``capacity`` with a tier design (the comparison plans single-level checkpoints)."""
    if design is not None:
        raise InputError("--capacity", True, "the spot / on-demand / fallback comparison plans single-level "
                         "checkpoints, as compare (which shows none for a tiered plan): drop the tiers (--design, the "
                         "template's [[tiers]]) or --capacity")


def _cell(eff: Mapping[str, np.ndarray], name: str, p: int) -> float:
    return float(eff[name][p]) if name in eff else float("nan")


def _changing_rate(eff: Mapping[str, np.ndarray], p: int) -> dict[str, Any]:
    """Row ``p``'s failure phases (``phase_starts`` in minutes, ``phase_factors``) and Weibull shape from the start,
    as :func:`ckptplan.engine.spot.scenario_capacity` passes a scenario's (nothing when the row has neither)."""
    idx = sorted(int(m.group(1)) for c in eff if (m := PHASE_COL.match(str(c))) and m.group(2) == "start_h")
    given = [i for i in idx if not np.isnan(eff[f"phase{i}_start_h"][p])]
    k = _cell(eff, "weibull_shape_from_start", p)
    if not given and not k < 1.0:
        return {}
    return dict(phase_starts=[float(eff[f"phase{i}_start_h"][p]) * 60.0 for i in given] or None,
                phase_factors=[float(eff[f"phase{i}_rate_factor"][p]) for i in given] or None,
                weibull_shape=k if k < 1.0 else None)


def _job_args(eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], p: int) -> dict[str, float]:
    """:func:`ckptplan.engine.spot.capacity_policies`' arguments for row ``p``, as scenario_capacity takes them."""
    def given(name: str) -> float:
        x = _cell(eff, name, p)
        return 0.0 if np.isnan(x) else x

    D = given("downtime_min")
    spot = _cell(eff, "spot_price_per_gpu_hour", p)
    price = _cell(eff, "price_per_gpu_hour", p)
    return dict(work=_cell(eff, "useful_training_h", p) * 60.0, C=_cell(eff, "checkpoint_stall_min", p),
                M=float(res["job_mtbf_h"][p]) * 60.0, R=max(_cell(eff, "restart_min", p) - D, 0.0),
                P=60.0 / _cell(eff, "preemptions_per_h", p), N=given("preemption_notice_min"),
                Wc=given("capacity_wait_min"), deadline=_cell(eff, "deadline_h", p) * 60.0, price=price,
                spot_price=price if np.isnan(spot) else spot, gpus=float(res["gpus"][p]), D=D, **_changing_rate(eff, p))


def capacity_columns(eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], positions: np.ndarray,
                     problems: RowProblems, runs: int, seed: int) -> dict[str, np.ndarray]:
    """:data:`CAPACITY_COLUMNS` of a table's rows (NaN / "" where a row is not compared; module notes); ``eff``,
    ``res``: the planned table's inputs (defaults applied) and results, ``positions``: the rows that evaluated."""
    from .spot import capacity_policies_many
    from .spot_montecarlo import capacity_job

    n = len(res["job_mtbf_h"])
    out: dict[str, Any] = {c: np.full(n, np.nan) for c in CAPACITY_NUMBER_COLUMNS}
    for c in CAPACITY_TEXT_FIELDS:
        out[c] = np.full(n, "", dtype=object)
    rows, jobs = [], []
    for p in positions.tolist():
        if not _cell(eff, "preemptions_per_h", p) > 0:
            out["capacity_note"][p] = NO_PREEMPTIONS
        elif np.isnan(_cell(eff, "deadline_h", p)):
            out["capacity_note"][p] = NO_DEADLINE
        else:
            try:       # a changing failure rate plans the policies' schedules here: a row they fail is an error row
                job = capacity_job(**_job_args(eff, res, p))
            except ValueError as exc:
                problems.add([p], lambda _p, m=str(exc): f"capacity: {m}")
                continue
            rows.append(p)
            jobs.append(job)
    for p, job, policies in zip(rows, jobs, capacity_policies_many(jobs, runs=runs, seed=seed)):
        for key in CAPACITY_KEYS:
            for f in CAPACITY_FIELDS + (CAPACITY_FALLBACK_FIELDS if key == "fallback" else ()):
                out[f"{key}_{f.name}"][p] = policies[_POLICY[key]][f.name]
        target = policies["on-demand"]["p_finish_by_deadline"]
        on_time = [k for k in CAPACITY_KEYS if policies[_POLICY[k]]["p_finish_by_deadline"] >= target]
        out["cheapest_capacity_on_time"][p] = min(on_time, key=lambda k: policies[_POLICY[k]]["mean_cost"])
        if np.isnan(_cell(eff, "spot_price_per_gpu_hour", p)):
            out["capacity_note"][p] = SPOT_AT_ON_DEMAND
    return out
