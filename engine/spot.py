"""Spot, on-demand, or spot with an on-demand fallback, against a deadline: a Monte Carlo of the finite job.

Three ways to run the same job (:func:`capacity_policies`):

* **on-demand**: failures only, at ``price_per_gpu_hour``, the exact optimum interval for failures;
* **spot**: failures and preemptions (:mod:`ckptplan.engine.preemption`: a save that fits the notice is
  taken on notice, else the work since the last checkpoint is lost; then a wait for capacity, no GPUs
  held, and a restart), at ``spot_price_per_gpu_hour``, the interval planned for both;
* **fallback**: spot until the slack runs out, then on-demand to the end: at every checkpoint and
  restore the job moves when ``deadline - t - w rho_od < threshold`` (``w`` the work left, ``rho_od``
  the on-demand expected wall time per unit of work, Daly's model), paying one restart to move (none at
  the start). This is the switching rule of Wu et al., "Can't Be Late: Optimizing Spot Instance Savings
  under Deadlines", NSDI'24 (move to on-demand when the remaining time less the remaining work falls
  below a threshold), with the expected on-demand overheads counted in the work. The threshold is the
  smallest (bisection over common random numbers) whose chance of finishing by the deadline reaches
  on-demand's, so the fallback is as likely to be on time as on-demand and pays spot prices until it
  must not.

Per policy: P(finish by the deadline), the wall time's and the cost's P50 and P90 (cost: GPU-hours held
x their price), from the same number of runs. The last segment ends the job without a final save (as
the deadline simulation of :mod:`ckptplan.engine.montecarlo`). Assumptions as the preemption model:
exponential gaps, independent failures and preemptions, the notice save always completes.

A failure rate that changes over the run (``[[failure_phases]]``, or ``weibull_shape_from_start`` below 1): the
failures are drawn from the changing intensity exactly (inverse cumulative intensity from the job's start, only while
the job holds its GPUs and is exposed; preemptions keep their constant rate), and each policy runs its schedule
instead of one interval: on-demand the schedule planned for failures alone, spot the one planned for failures and
preemptions (those ``ckptplan plan`` reports on each capacity), the fallback spot's until it moves, then on-demand's; a
segment takes the interval of the window it starts in. The fallback's ``rho_od`` is then the on-demand schedule's
expected wall time over the whole run per unit of work (:mod:`ckptplan.engine.capacity_schedules` says why).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .spot_montecarlo import capacity_job, simulate_capacity, simulate_capacity_jobs

__all__ = ["CAPACITY_RUNS", "CAPACITY_SEED", "capacity_job", "capacity_policies", "capacity_policies_many",
           "scenario_capacity", "simulate_capacity"]

#: runs per policy and seed of the comparison (``ckptplan compare``, ``ckptplan batch --capacity``)
CAPACITY_RUNS = 4000
CAPACITY_SEED = 0


def _summary(sim: dict[str, np.ndarray], deadline: float) -> dict[str, float]:
    on_time = sim["finished"] & (sim["wall"] <= deadline)
    return {"p_finish_by_deadline": float(on_time.mean()),
            "wall_h_p50": float(np.percentile(sim["wall"], 50)) / 60.0,
            "wall_h_p90": float(np.percentile(sim["wall"], 90)) / 60.0,
            "cost_p50": float(np.percentile(sim["cost"], 50)), "cost_p90": float(np.percentile(sim["cost"], 90)),
            "mean_cost": float(sim["cost"].mean())}


def capacity_policies(work: float, C: float, M: float, R: float, P: float, N: float, Wc: float, deadline: float,
                      price: float, spot_price: float, gpus: float, runs: int = CAPACITY_RUNS, seed: int = CAPACITY_SEED,
                      D: float = 0.0, phase_starts: Any = None, phase_factors: Any = None, weibull_shape: Any = None
                      ) -> dict[str, dict[str, Any]]:
    """The three policies' deadline and cost figures (module notes); times in minutes, prices per GPU-hour.

    ``fallback`` also reports its ``threshold_min``; the threshold is searched on seed ``seed`` and reported
    figures come from the same runs. ``phase_starts`` (wall minutes) and ``phase_factors``, or ``weibull_shape``:
    a failure rate that changes over the run (:func:`ckptplan.engine.spot_montecarlo.capacity_job`); each policy
    then also reports its ``schedule`` (``{start_h, interval_min}`` windows; the fallback reports spot's, and runs
    on-demand's once it moves) and ``interval_min`` is the schedule's first."""
    args = dict(work=work, C=C, M=M, R=R, P=P, N=N, Wc=Wc, deadline=deadline, price=price, spot_price=spot_price,
                gpus=gpus, D=D)
    if phase_starts is not None or weibull_shape is not None:
        args.update(phase_starts=phase_starts, phase_factors=phase_factors, weibull_shape=weibull_shape)
    return capacity_policies_many([args], runs=runs, seed=seed)[0]


def _p_on_time(sim: dict[str, np.ndarray], deadline: float) -> float:
    return float((sim["finished"] & (sim["wall"] <= deadline)).mean())


def capacity_policies_many(args: list[dict[str, float]], runs: int = CAPACITY_RUNS, seed: int = CAPACITY_SEED
                           ) -> list[dict[str, dict[str, float]]]:
    """:func:`capacity_policies` ``(**a, runs=runs, seed=seed)`` for every ``a`` of ``args`` (its keyword arguments
    ``work`` .. ``D``), the jobs simulated together (:func:`ckptplan.engine.spot_montecarlo.simulate_capacity_jobs`):
    both fixed policies in one pass, then each step of the jobs' threshold searches (bisection to 1e-3 of the
    deadline for the smallest threshold meeting on-demand's chance, on the same seed) in one pass, then the
    fallbacks at their thresholds. A job's figures are the same whichever jobs share the call. An element of
    ``args`` may be the job :func:`~ckptplan.engine.spot_montecarlo.capacity_job` built from them (it has ``T_od``)."""
    jobs = [a if "T_od" in a else capacity_job(**a) for a in args]
    n = len(jobs)
    dl = [float(j["deadline"]) for j in jobs]
    fixed = simulate_capacity_jobs(jobs + jobs, ["on-demand"] * n + ["spot"] * n, [0.0] * (2 * n), runs, seed)
    out = [{"on-demand": _summary(fixed[i], dl[i]), "spot": _summary(fixed[n + i], dl[i])} for i in range(n)]
    target = [o["on-demand"]["p_finish_by_deadline"] for o in out]
    lo, hi = [0.0] * n, list(dl)
    going = list(range(n))
    for _ in range(30):                                  # each job's bisection, as capacity_policies steps it
        if not going:
            break
        mid = {i: (lo[i] + hi[i]) / 2.0 for i in going}
        sims = simulate_capacity_jobs([jobs[i] for i in going], ["fallback"] * len(going), [mid[i] for i in going],
                                      runs, seed)
        for i, sim in zip(going, sims):
            lo[i], hi[i] = (lo[i], mid[i]) if _p_on_time(sim, dl[i]) >= target[i] else (mid[i], hi[i])
        going = [i for i in going if not hi[i] - lo[i] < 1e-3 * max(dl[i], 1.0)]
    final = simulate_capacity_jobs(jobs, ["fallback"] * n, hi, runs, seed)
    for i, o in enumerate(out):
        o["fallback"] = {**_summary(final[i], dl[i]), "threshold_min": hi[i], "target_p_finish": target[i]}
        for name in o:
            o[name]["interval_min"] = jobs[i]["T_od"] if name == "on-demand" else jobs[i]["T_spot"]
            if "schedule" in jobs[i]:
                o[name]["schedule"] = _windows(jobs[i]["schedule"], "od" if name == "on-demand" else "spot")
    return out


def _windows(sched: dict[str, Any], key: str) -> list[dict[str, float]]:
    """A policy's schedule as ``{start_h, interval_min}`` windows (``plan --json``'s ``schedule``)."""
    return [{"start_h": float(s) / 60.0, "interval_min": float(T)}
            for s, T in zip(sched[f"starts_{key}"], sched[f"T_{key}_by"])]


def scenario_capacity(scenario: Any, runs: int = CAPACITY_RUNS, seed: int = CAPACITY_SEED) -> dict[str, Any] | None:
    """:func:`capacity_policies` for a scenario on preemptible capacity with a deadline (None otherwise):
    its job MTBF, stall, restart, preemption fields, prices (``spot_price_per_gpu_hour``, else
    ``price_per_gpu_hour``) and GPUs."""
    from .scenario import evaluate
    from .spot_rates import scenario_preemptions_per_h

    rate = scenario_preemptions_per_h(scenario)   # the job's rate (given, or nodes x the node's)
    if not rate or scenario.deadline_h is None:
        return None
    row = evaluate(scenario).iloc[0]
    phases = scenario.failure_phases
    changing = dict(phase_starts=[p.start_h * 60.0 for p in phases] or None,
                    phase_factors=[p.rate_factor for p in phases] or None,
                    weibull_shape=getattr(scenario, "weibull_shape_from_start", None))
    spot_price = scenario.spot_price_per_gpu_hour
    D = float(scenario.downtime_min or 0.0)    # the exposed restart and the downtime, as engine.scenario splits them
    out = capacity_policies(scenario.useful_training_h * 60.0, float(scenario.checkpoint_stall_min),
                            float(row["job_mtbf_h"]) * 60.0, max(float(scenario.restart_min) - D, 0.0),
                            60.0 / rate, float(scenario.preemption_notice_min or 0.0),
                            float(scenario.capacity_wait_min or 0.0), scenario.deadline_h * 60.0,
                            scenario.price_per_gpu_hour, scenario.price_per_gpu_hour if spot_price is None else spot_price,
                            float(row["gpus"]), runs=runs, seed=seed, D=D, **changing)
    return {"runs": runs, "seed": seed, "deadline_h": scenario.deadline_h, "policies": out}
