"""Deadline answers for a scenario: will the job finish in time, what will it cost, which interval?

Builds the finite job of a :class:`engine.Scenario` (useful training, checkpoint stall, job MTBF
from :func:`engine.evaluate`, restart, asynchronous write and slowdown, chosen interval, deadline;
in minutes, the simulator's unit) and runs the Monte Carlo of :mod:`engine.montecarlo` on it:

* :func:`deadline_report` simulates one interval: P(finish by the deadline) with its standard
  error and Wilson interval, the wall time's mean and percentiles, the exact finite-job
  expectation (:mod:`engine.finite`, exponential failures only) beside the long-run one
  (:func:`engine.expected_wall_time`), the split of the mean into useful, save, restart and rework
  time, GPU-hours and cost.
* :func:`deadline_search` simulates a grid of intervals on the same failure histories (common random
  numbers: the per-failure sampler, :func:`engine.montecarlo.simulate_intervals`, draws every
  failure gap once for all intervals), picks the one with the best chance of meeting
  the deadline and the cheapest one meeting a target probability, and adds plain-language notes
  where they differ materially from the long-run optimum (judged on paired standard errors over
  the shared runs), where the job is short against its MTBF and where failures cluster.

A job that trains on fewer replicas (``on_node_loss = "continue"`` with ``min_replicas`` below its replicas,
:mod:`engine.elastic`) is simulated by :func:`engine.elastic_montecarlo.simulate_elastic` instead: exponential
failures only (the chain's law), its long-run figure the elastic expectation, no exact finite-job expectation
and no finite-job optimum; the search simulates each interval on its own runs from the same seed (the elastic
sampler draws per event, not per failure gap, so the intervals share no failure histories).

Results are in hours, GPU-hours and the scenario's currency.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import numpy as np
import pandas as pd

from . import cost, waste
from .errors import InputError
from .finite import check_final_save, best_segment_count, finite_expected_wall_time, segment_count
from .gate import as_float_array
from .montecarlo import (FailureLaw, Simulation, as_failure_law, seed_entropy, check_simulation_size, simulate,
                         simulate_intervals, standard_error, wilson_interval)
from .scenario import Scenario, evaluate
from .spoken import duration

__all__ = [
    "DEFAULT_GRID_POINTS",
    "MAX_SEARCH_INTERVALS",
    "DeadlineSearch",
    "deadline_report",
    "deadline_search",
]


#: intervals of the default search grid (geometric), besides the exact and the finite-job optimum
DEFAULT_GRID_POINTS = 25
#: most intervals the default search simulates (the grid, both optima and the scenario's chosen interval): what a
#: caller reserves memory for
MAX_SEARCH_INTERVALS = DEFAULT_GRID_POINTS + 3

# ------------------------------------------------------------------------- scenario answers

@dataclass(frozen=True)
class _Job:
    """A scenario's job in minutes (the simulator's unit)."""

    name: str
    currency: str
    work: float
    C: float
    M: float
    R: float
    W: float
    s: float
    T: float
    deadline: float
    exact_T: float
    gpus: float
    price: float
    D: float = 0.0   # downtime after every failure (the part of the restart the job cannot fail in); R is the rest
    elastic: Optional[tuple] = None   # a job that trains on fewer replicas: (replicas, min_replicas,
                                      # shrink_keeps_progress, shrink_pause_min, regrow_pause_min); None: today's


def _elastic_args(sc: Scenario, row: Any) -> Optional[tuple]:
    """The elastic plan's replicas, floor, flag and pauses (:mod:`engine.elastic`), or None for a job that stops
    at every failure (restarting, or its floor at every replica)."""
    if sc.on_node_loss != "continue" or sc.min_replicas is None or sc.min_replicas >= float(row["replicas"]):
        return None
    return (float(row["replicas"]), float(sc.min_replicas), float(sc.shrink_keeps_progress),
            float(sc.shrink_pause_min), float(sc.regrow_pause_min))


def _simulate_job(job: _Job, T: float, runs: int, seed: int, law: FailureLaw, final_save: bool,
                  method: str = "auto") -> Simulation:
    """One interval of the job simulated: :func:`engine.montecarlo.simulate`, or for an elastic job
    :func:`engine.elastic_montecarlo.simulate_elastic` (exponential failures: the chain's law)."""
    if job.elastic is None:
        return simulate(job.work, T, job.C, job.M, job.R, job.W, job.s, runs, seed, law, final_save, method, D=job.D)
    from .elastic_montecarlo import simulate_elastic

    n, floor, keep, Ps, Pg = job.elastic
    return simulate_elastic(job.work, T, job.C, job.M, job.R, job.D, n, floor, keep, Ps, Pg, runs=runs, seed=seed,
                            final_save=final_save)


def _check_elastic_law(job: _Job, law: FailureLaw) -> None:
    if job.elastic is not None and not law.is_exponential:
        raise InputError("failures", law.describe(), "must be exponential for a job that trains on fewer replicas "
                         "(on_node_loss = continue: the elastic model's replicas fail and return at exponential times)")


def _job(scenario: Scenario, deadline_h, interval_min) -> _Job:
    if not isinstance(scenario, Scenario):
        raise InputError("scenario", type(scenario).__name__, "must be a ckptplan.engine.Scenario (e.g. ckptplan.files.load_scenario('seed'))")
    from .phases import refuse_phases

    refuse_phases(scenario, "the one-interval deadline simulation")
    changes = {}
    if deadline_h is not None:
        changes["deadline_h"] = _scalar("deadline_h", deadline_h, "positive")
    if interval_min is not None:
        changes["interval_min"] = _scalar("interval_min", interval_min, "positive")
    sc = scenario.replace(**changes) if changes else scenario
    if sc.deadline_h is None:
        raise InputError("deadline_h", None, "is required: give deadline_h or set it in the scenario")
    if sc.deadline_h < sc.useful_training_h:
        raise InputError("deadline_h", float(sc.deadline_h),
                         f"must be >= useful_training_h = {sc.useful_training_h:g} h: the job needs that much "
                         "compute even with no saves and no failures")
    for name in ("deadline_h", "useful_training_h"):  # hours to minutes: the simulator's unit must hold them
        if not math.isfinite(getattr(sc, name) * 60.0):
            raise InputError(name, float(getattr(sc, name)), f"must be at most {sys.float_info.max / 60:.6g} h: in "
                             "minutes it would overflow the float64 range")
    row = evaluate(sc).iloc[0]
    return _Job(name=sc.name, currency=sc.currency, work=sc.useful_training_h * 60.0, C=sc.checkpoint_stall_min,
                M=float(row["job_mtbf_h"]) * 60.0, R=sc.restart_min - sc.downtime_min, D=sc.downtime_min,
                W=sc.async_write_min,
                s=sc.async_slowdown_fraction, T=float(row["chosen_interval_min"]), deadline=sc.deadline_h * 60.0,
                exact_T=float(row["exact_interval_min"]), gpus=float(row["gpus"]), price=sc.price_per_gpu_hour,
                elastic=_elastic_args(sc, row))


def _scalar(name: str, value: Any, rule: str) -> float:
    """One number (not an array), checked against ``rule``."""
    arr = as_float_array(name, value, rule)
    if arr.ndim:
        raise InputError(name, value, "must be a single number")
    return float(arr)


def _check_runs_seed(runs, seed, intervals: int = 1):
    r = as_float_array("runs", runs, "count")
    if r.ndim or r < 2:
        raise InputError("runs", runs, "must be a single whole number >= 2")
    check_simulation_size(r, intervals)
    seed_entropy(seed)
    return int(r)


def _summary(sim: Simulation, job: _Job, T: float, law: FailureLaw, final_save: bool) -> dict[str, Any]:
    """Deadline figures of one simulated interval (hours, GPU-hours, money)."""
    wall_h = sim.wall / 60.0
    hits = int(np.count_nonzero(sim.wall <= job.deadline))
    p = hits / sim.runs
    lo, hi = wilson_interval(hits, sim.runs)
    gpu_h = np.asarray(cost.gpu_hours(wall_h, job.gpus))
    money = np.asarray(cost.money(gpu_h, job.price))
    q50, q90, q99 = np.quantile(wall_h, [0.5, 0.9, 0.99])
    exact_h = None
    if law.is_exponential and job.elastic is None:
        exact_h = float(finite_expected_wall_time(job.work, T, job.C, job.M, job.R, job.W, job.s, final_save,
                                                    job.D)) / 60.0
    restart_h = float(sim.restart_time.mean()) / 60.0
    save_h = (sim.failure_free - job.work) / 60.0
    return {
        "interval_min": T,
        "segments": int(segment_count(job.work, T)),
        "p_finish": p,
        "p_finish_se": math.sqrt(p * (1 - p) / sim.runs),
        "p_finish_low": lo,
        "p_finish_high": hi,
        "wall_h_mean": float(wall_h.mean()),
        "wall_h_mean_se": standard_error(wall_h),
        "wall_h_p50": float(q50),
        "wall_h_p90": float(q90),
        "wall_h_p99": float(q99),
        "expected_wall_h_exact": exact_h,
        "failure_free_wall_h": sim.failure_free / 60.0,
        "failures_mean": float(sim.failures.mean()),
        "useful_h": job.work / 60.0,
        "save_h": save_h,
        "restart_h": restart_h,
        "rework_h": float(wall_h.mean()) - sim.failure_free / 60.0 - restart_h,
        "gpu_hours_mean": float(gpu_h.mean()),
        "gpu_hours_p90": float(np.quantile(gpu_h, 0.9)),
        "cost_mean": float(money.mean()),
        "cost_p90": float(np.quantile(money, 0.9)),
    }


def _long_run_wall_min(job: _Job) -> float:
    """The long-run expectation at the job's interval: Daly's (:func:`engine.expected_wall_time`), or the elastic
    chain's (:func:`engine.elastic.elastic_breakdown`)."""
    if job.elastic is None:
        return float(waste.expected_wall_time(job.work, job.T, job.C, job.M, job.R, job.W, job.s, job.D))
    from .elastic import elastic_breakdown

    n, floor, keep, Ps, Pg = job.elastic
    return float(elastic_breakdown(job.work, job.T, job.C, job.M, job.R, job.D, n, floor, keep, Ps, Pg)["total"])


def deadline_report(scenario: Scenario, deadline_h=None, interval_min=None, runs=10000, seed=0,
                    failures: Union[str, FailureLaw] = "exponential", final_save=False,
                    method: str = "auto") -> dict[str, Any]:
    """Will the job finish by its deadline, and what will it cost? Monte Carlo of one interval.

    ``deadline_h`` defaults to ``scenario.deadline_h`` (error if neither is given) and must be at
    least ``useful_training_h``. ``interval_min`` defaults to the scenario's chosen interval (its
    ``interval_min``, else the exact long-run optimum). Job MTBF from :func:`engine.evaluate`
    (``job_mtbf_h``; failure domains and non-fatal shares folded into one failure process).

    Simulated with :func:`engine.montecarlo.simulate`'s sampler ``method``: by default per window for
    exponential failures, like the batch and Excel-function answers for the same seed. With
    ``method="per_failure"`` (what ``ckptplan deadline`` and the workbook's Deadline sheet use) the
    report is, run by run, :func:`deadline_search`'s row for the same interval, seed and runs (the
    search always simulates the scenario's chosen interval): one simulation answers both, so the
    outlook, the interval table and the advice say one probability.

    Returns a dict (units in the keys): ``p_finish`` = P(wall <= deadline) with its standard error
    ``sqrt(p(1-p)/runs)`` and 95 % Wilson interval ``p_finish_low``/``p_finish_high``
    (:func:`wilson_interval`); ``wall_h_mean`` (+ ``_se``), ``wall_h_p50/p90/p99``;
    ``expected_wall_h_exact`` (:func:`finite_expected_wall_time`, exponential laws only, else None);
    ``long_run_wall_h`` (:func:`engine.expected_wall_time`); the mean split ``useful_h``, ``save_h``
    (failure-free overhead), ``restart_h``, ``rework_h``; ``gpu_hours_mean``/``_p90`` and
    ``cost_mean``/``cost_p90`` (``gpus = nodes * gpus_per_node`` at ``price_per_gpu_hour``; the bill
    runs while the job holds its GPUs, restarts included).
    """
    job = _job(scenario, deadline_h, interval_min)
    runs_ = _check_runs_seed(runs, seed)
    law = as_failure_law(failures)
    final_save = check_final_save(final_save)
    _check_elastic_law(job, law)
    sim = _simulate_job(job, job.T, runs_, seed, law, final_save, method)
    out = {"name": job.name, "currency": job.currency, "failure_law": law.describe(), "runs": runs_,
           "deadline_h": job.deadline / 60.0, "job_mtbf_h": job.M / 60.0, "gpus": job.gpus,
           "exact_optimum_interval_min": job.exact_T, "long_run_wall_h": _long_run_wall_min(job) / 60.0,
           "on_node_loss": "continue" if job.elastic is not None else "restart"}
    out.update(_summary(sim, job, job.T, law, final_save))
    return out


@dataclass(frozen=True)
class DeadlineSearch:
    """Result of :func:`deadline_search` (intervals in minutes, wall in hours, money in ``currency``).

    ``candidates``: one row per interval simulated (the columns of :func:`deadline_report`'s
    per-interval figures). ``best_probability``: the row with the highest ``p_finish`` (ties: lower
    mean cost). ``cheapest_meeting_target``: the row with the lowest mean cost among those with
    ``p_finish >= target``, or None. ``exact_optimum_interval_min``: the long-run optimum
    (:func:`engine.exact_optimal_interval`); ``finite_optimum_segments`` / ``_interval_min``: the
    finite-job optimum for synchronous exponential failures (:func:`best_segment_count`; None for
    async saves). ``notes``: plain-language remarks where these differ materially.
    ``chosen_interval_min``: the scenario's chosen interval, always among the candidates.
    """

    name: str
    currency: str
    deadline_h: float
    target: float
    runs: int
    failure_law: str
    candidates: pd.DataFrame
    best_probability: dict
    cheapest_meeting_target: Optional[dict]
    exact_optimum_interval_min: float
    finite_optimum_segments: Optional[int]
    finite_optimum_interval_min: Optional[float]
    notes: list = field(default_factory=list)
    chosen_interval_min: Optional[float] = None   # the scenario's chosen interval (its interval_min, else the optimum)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "currency": self.currency, "deadline_h": self.deadline_h, "target": self.target,
            "runs": self.runs, "failure_law": self.failure_law,
            "exact_optimum_interval_min": self.exact_optimum_interval_min,
            "chosen_interval_min": self.chosen_interval_min,
            "finite_optimum_segments": self.finite_optimum_segments,
            "finite_optimum_interval_min": self.finite_optimum_interval_min,
            "best_probability": self.best_probability, "cheapest_meeting_target": self.cheapest_meeting_target,
            "notes": list(self.notes),
            "candidates": [_jsonable(r) for r in self.candidates.to_dict(orient="records")],
        }


def _jsonable(row: dict) -> dict:
    return {k: (None if v is None or (isinstance(v, float) and math.isnan(v)) else
                int(v) if isinstance(v, (np.integer,)) else float(v) if isinstance(v, (np.floating,)) else v)
            for k, v in row.items()}


def _default_grid(job: _Job, finite_T: Optional[float], points: int = DEFAULT_GRID_POINTS) -> np.ndarray:
    floor = job.W * (1.0 - job.s)
    lo = max(job.exact_T / 4.0, floor, 1e-3)
    hi = max(min(job.exact_T * 4.0, job.work), lo)
    grid = np.geomspace(lo, hi, points)
    extra = [job.exact_T] + ([finite_T] if finite_T is not None else [])
    return np.unique(np.concatenate([grid, [x for x in extra if x >= floor]]))


def deadline_search(scenario: Scenario, deadline_h=None, target=0.9, intervals_min=None, runs=10000, seed=0,
                    failures: Union[str, FailureLaw] = "exponential", final_save=False,
                    progress: Optional[Callable[[int, int], None]] = None) -> DeadlineSearch:
    """Which interval gives the best chance of meeting the deadline, and which is cheapest at ``target``?

    Simulates every interval in ``intervals_min`` (default: 25 geometrically spaced points from a
    quarter to four times the long-run exact optimum, capped at the whole job, plus the exact and
    finite-job optima; the scenario's chosen interval is always added) on one stream of failure gaps (the per-failure sampler,
    :func:`engine.montecarlo.simulate_intervals`), so all candidates see the same failure histories
    (common random numbers: differences between intervals are not blurred by independent noise).
    The per-window sampler cannot share them (its random numbers are counts per window, which
    depend on the interval), so the search does not use it.
    Picks the interval maximising P(finish by deadline) and the one minimising expected cost
    subject to ``P(finish by deadline) >= target``; reports them beside the long-run optimum
    (:func:`engine.exact_optimal_interval`, which minimises expected wall time of an endless job)
    and, for synchronous saves, the finite-job optimum (:func:`best_segment_count`).

    The grid optimum is only as fine as the grid and as precise as ``runs`` allows (each row has its
    standard errors); a flat optimum means nearby intervals are equally good. A note flags a
    material difference: interval off by > 10 % and the gain over the long-run optimum larger than
    two paired standard errors; also short jobs (fewer than 20 MTBFs of work) and heavy-tailed
    failure laws (coefficient of variation > 1), where the long-run formula is least reliable.
    ``progress(done, total)`` is called ``total`` (= number of intervals) times as the simulation
    advances, ``done`` counting intervals' worth of simulated runs (e.g. to drive a progress bar;
    all intervals advance together, block of runs by block of runs).
    """
    job = _job(scenario, deadline_h, None)
    runs_ = _check_runs_seed(runs, seed, MAX_SEARCH_INTERVALS if intervals_min is None else 1)
    law = as_failure_law(failures)
    final_save = check_final_save(final_save)
    tgt = _scalar("target", target, "fraction")
    if not tgt > 0:
        raise InputError("target", tgt, "must be a probability in (0, 1)")
    _check_elastic_law(job, law)
    finite_n = finite_T = None
    if job.W == 0 and job.elastic is None:
        finite_n = int(best_segment_count(job.work, job.C, job.M, job.R))
        finite_T = job.work / finite_n
    if intervals_min is None:
        grid = _default_grid(job, finite_T)
    else:
        grid = np.unique(as_float_array("intervals_min", intervals_min, "positive").reshape(-1))
        floor = job.W * (1.0 - job.s)
        if np.any(grid < floor):
            raise InputError("intervals_min", float(grid[grid < floor][0]),
                             f"must be >= async_write_min * (1 - async_slowdown_fraction) = {floor:.6g} "
                             "(the write must be durable before the next save)")
    grid = np.append(grid[~np.isclose(grid, job.exact_T, rtol=1e-12)], job.exact_T)  # exact optimum always in
    if job.T >= job.W * (1.0 - job.s) and not np.isclose(grid, job.T, rtol=1e-12).any():
        grid = np.append(grid, job.T)  # and the chosen interval: the report's figures are its row
    grid.sort()
    reported = [0]

    def blocks_done(done: int, total: int) -> None:   # report intervals' worth of simulated runs
        while progress is not None and reported[0] < done * len(grid) // total:
            reported[0] += 1
            progress(reported[0], len(grid))

    if job.elastic is None:
        sims = simulate_intervals(job.work, grid, job.C, job.M, job.R, job.W, job.s, runs_, seed, law, final_save,
                                  progress=blocks_done, D=job.D)
    else:   # an elastic job: each interval on its own runs from the same seed (no common failure histories)
        sims = _each_interval(job, grid, runs_, seed, law, final_save, blocks_done)
    rows = [_summary(sim, job, float(T), law, final_save) for T, sim in zip(grid, sims)]
    walls = [sim.wall for sim in sims]
    table = pd.DataFrame(rows)
    order = np.lexsort((table["cost_mean"].to_numpy(), -table["p_finish"].to_numpy()))
    best = table.iloc[int(order[0])].to_dict()
    meeting = table[table["p_finish"] >= tgt]
    cheapest = meeting.loc[meeting["cost_mean"].idxmin()].to_dict() if len(meeting) else None

    ref = int(np.flatnonzero(np.isclose(grid, job.exact_T, rtol=1e-12))[0])
    notes = _notes(job, law, grid, walls, ref, table, best, cheapest, tgt, finite_n, finite_T)
    return DeadlineSearch(name=job.name, currency=job.currency, deadline_h=job.deadline / 60.0, target=tgt,
                          runs=runs_, failure_law=law.describe(), candidates=table,
                          best_probability=_jsonable(best), cheapest_meeting_target=_jsonable(cheapest) if cheapest else None,
                          exact_optimum_interval_min=job.exact_T, finite_optimum_segments=finite_n,
                          finite_optimum_interval_min=finite_T, notes=notes, chosen_interval_min=job.T)


def _each_interval(job: _Job, grid: np.ndarray, runs: int, seed: int, law: FailureLaw, final_save: bool,
                   done: Callable[[int, int], None]) -> list[Simulation]:
    """Every interval of ``grid`` simulated on its own (an elastic job), ``done(i, len(grid))`` after each."""
    sims = []
    for i, T in enumerate(grid):
        sims.append(_simulate_job(job, float(T), runs, seed, law, final_save))
        done(i + 1, len(grid))
    return sims


def _paired_gain(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of ``x - y`` over the same runs (common random numbers)."""
    d = x - y
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def _notes(job, law, grid, walls, ref, table, best, cheapest, target, finite_n, finite_T) -> list[str]:
    notes: list[str] = []
    T_ref = job.exact_T
    ref_row = table.iloc[ref]
    i_best = int(np.flatnonzero(grid == best["interval_min"])[0])
    dp, dp_se = _paired_gain((walls[i_best] <= job.deadline).astype(float), (walls[ref] <= job.deadline).astype(float))
    if abs(best["interval_min"] / T_ref - 1) > 0.10 and dp > 2 * dp_se and dp > 0:
        notes.append(f"To maximise the chance of meeting the {job.deadline / 60:g} h deadline, save every "
                     f"{duration(best['interval_min'])} rather than at the long-run optimum {duration(T_ref)}: "
                     f"P(finish) rises from {ref_row['p_finish']:.1%} to {best['p_finish']:.1%}.")
    if cheapest is None:
        notes.append(f"No interval tried reaches P(finish) >= {target:.0%}; the best is {best['p_finish']:.1%} "
                     f"at {duration(best['interval_min'])}. Move the deadline, shorten saves or restarts, or add margin.")
    else:
        i_c = int(np.flatnonzero(grid == cheapest["interval_min"])[0])
        dc, dc_se = _paired_gain(walls[ref], walls[i_c])
        if abs(cheapest["interval_min"] / T_ref - 1) > 0.10 and (ref_row["p_finish"] < target or dc > 2 * dc_se):
            why = (f"the long-run optimum {duration(T_ref)} reaches only {ref_row['p_finish']:.1%}"
                   if ref_row["p_finish"] < target else
                   f"it costs {(ref_row['cost_mean'] - cheapest['cost_mean']):,.0f} {job.currency} less on average "
                   f"than the long-run optimum {duration(T_ref)}")
            notes.append(f"Cheapest interval with P(finish) >= {target:.0%}: {duration(cheapest['interval_min'])}; {why}.")
    spans = job.work / job.M
    if finite_T is not None and abs(finite_T / T_ref - 1) > 0.05:
        notes.append(f"The job is short against its MTBF ({spans:.1f} MTBFs of work): the finite-job optimum is "
                     f"{finite_n} segments of {duration(finite_T)}, not the long-run {duration(T_ref)}.")
    elif spans < 20:
        notes.append(f"The job spans only {spans:.1f} MTBFs of work: long-run averages understate the spread; "
                     "read the simulated percentiles and P(finish), not the means.")
    if law.coefficient_of_variation > 1.0 + 1e-9:
        notes.append(f"Failures are more clustered than exponential ({law.describe()}, coefficient of variation "
                     f"{law.coefficient_of_variation:.2f}): the long-run optimum assumes exponential failures; "
                     "trust the simulated figures.")
    return notes
