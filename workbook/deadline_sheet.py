"""Deadline sheet content: Monte Carlo answers from :mod:`engine.deadline`, written as values.

Excel cannot run the simulation, so the sheet carries numbers labelled with the runs, the seed and
the date they were computed; regenerating the workbook refreshes them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable, Optional

from .. import engine
from ..engine import deadline

from . import formulas as F

__all__ = ["deadline_report", "simulated_rows", "tiered_rows"]



def simulated_rows(at: dict[str, Any], interval_label: str, cur: str, *after_mean: tuple) -> list[tuple]:
    """The rows every Deadline sheet shows of a simulation ``at`` (a deadline report): the deadline, the interval
    simulated (``interval_label``), P(finish) with its error and interval, the wall time (``after_mean``: rows
    under its mean) and the job's GPU-hours and their cost (the job's alone: spares and storage are the plan's)."""
    return [
        ("Deadline", at["deadline_h"], "h", F.HOURS),
        (interval_label, at["interval_min"], "min", F.MINUTES),
        ("Failure law", at["failure_law"], "", None),
        ("P(finish by the deadline)", at["p_finish"], "share", "0.00%"),
        ("  standard error", at["p_finish_se"], "share", "0.00%"),
        ("  95 % interval, low (Wilson)", at["p_finish_low"], "share", "0.00%"),
        ("  95 % interval, high (Wilson)", at["p_finish_high"], "share", "0.00%"),
        ("Wall time, mean", at["wall_h_mean"], "h", F.HOURS),
        ("  standard error of the mean", at["wall_h_mean_se"], "h", F.HOURS),
        *after_mean,
        ("Wall time, P50", at["wall_h_p50"], "h", F.HOURS),
        ("Wall time, P90", at["wall_h_p90"], "h", F.HOURS),
        ("Wall time, P99", at["wall_h_p99"], "h", F.HOURS),
        ("GPU-hours of the job, mean", at["gpu_hours_mean"], "GPU-h", F.GPU_HOURS),
        ("GPU-hours of the job, P90", at["gpu_hours_p90"], "GPU-h", F.GPU_HOURS),
        ("Cost of the job's GPU time, mean", at["cost_mean"], cur, F.MONEY),
        ("Cost of the job's GPU time, P90", at["cost_p90"], cur, F.MONEY),
    ]


def deadline_report(scenario: engine.Scenario, runs: int = 10000, seed: int = 0, target: float = 0.9,
                    progress: Optional[Callable[[int, int], None]] = None, setup: Any = None) -> dict[str, Any] | None:
    """Rows for the Deadline sheet, or None when the scenario has no deadline (the sheet is left out).

    ``setup`` with checkpoint tiers: the tiered plan's answer (:func:`tiered_rows`), ``scenario`` as given (its
    stall and restart not yet derived).

    Simulates the chosen interval (:func:`engine.deadline.deadline_report`) and searches the intervals
    for the best chance of meeting the deadline and the cheapest one meeting ``target``
    (:func:`engine.deadline.deadline_search`), exponential failures, both with the per-failure sampler on
    the same failure histories: the chosen interval's figures are the search's row for it, run by run,
    and ``ckptplan deadline`` with the same runs and seed gives the same numbers.
    """
    if scenario.deadline_h is None:
        return None
    if setup is not None and setup.tiers:
        return tiered_rows(scenario, setup, runs, seed)
    search = deadline.deadline_search(scenario, target=target, runs=runs, seed=seed, progress=progress)
    at = _chosen_row(search)
    if at is None:   # the chosen interval is not one of the search's (below the write's floor): simulate it
        at = deadline.deadline_report(scenario, runs=runs, seed=seed, method="per_failure")
    cur = scenario.currency
    best, cheap = search.best_probability, search.cheapest_meeting_target
    rows: list[tuple[str, Any, str, str | None]] = simulated_rows(
        at, "Interval simulated (the chosen interval of the Plan sheet)", cur) + [
        ("Long-run optimum interval (Plan sheet, endless job)", search.exact_optimum_interval_min, "min", F.MINUTES),
        ("Interval with the best chance of meeting the deadline", best["interval_min"], "min", F.MINUTES),
        ("  its P(finish by the deadline)", best["p_finish"], "share", "0.00%"),
        (f"Cheapest interval with P(finish) >= {target:.0%}",
         cheap["interval_min"] if cheap else "none of the intervals tried", "min" if cheap else "", F.MINUTES),
        ("  its mean cost", cheap["cost_mean"] if cheap else "-", cur if cheap else "", F.MONEY),
    ]
    if search.finite_optimum_segments is not None:
        rows.append(("Finite-job optimum: number of segments (exact, exponential failures)",
                     search.finite_optimum_segments, "segments", "#,##0"))
        rows.append(("  its interval", search.finite_optimum_interval_min, "min", F.MINUTES))
    return {"runs": at["runs"], "seed": seed, "computed": dt.date.today().isoformat(), "rows": rows,
            "notes": list(search.notes) + [
                f"{len(search.candidates)} intervals simulated with the same {at['runs']:,} failure histories each "
                "(common random numbers), the chosen interval among them: its figures above are that simulation's, "
                "the same as `ckptplan deadline` with these runs and seed.",
                "P(finish by the deadline) on the Plan sheet is the analytic answer (exponential failures, a normal "
                "approximation of the wall time); the figures here are simulated."]}


def _chosen_row(search: Any) -> dict[str, Any] | None:
    """The search's row for the scenario's chosen interval, as :func:`engine.deadline.deadline_report` with
    ``method="per_failure"`` gives it (run by run the same simulation: the search simulates the chosen interval
    on the same failure histories), so the interval is simulated once; None when the search holds no row at
    exactly that interval."""
    table = search.candidates
    rows = table[table["interval_min"] == search.chosen_interval_min]
    if rows.empty:
        return None
    return dict(rows.iloc[0].to_dict(), deadline_h=search.deadline_h, failure_law=search.failure_law, runs=search.runs)


def tiered_rows(scenario: engine.Scenario, setup: Any, runs: int = 10000, seed: int = 0) -> dict[str, Any]:
    """Rows for the Deadline sheet of a baseline with checkpoint tiers: the tiered plan's Monte Carlo at its interval
    (:func:`engine.deadline_tiers.tiered_deadline_report`: failure classes, each restored from the first tier that
    survives it), marked ``tiered`` (the sheet's status then reads the design's inputs too)."""
    from ..engine.deadline_tiers import tiered_deadline_report

    at = tiered_deadline_report(scenario, setup, runs=runs, seed=seed)
    cur = scenario.currency
    rows: list[tuple[str, Any, str, str | None]] = simulated_rows(
        at, "First tier's interval simulated (the tiered plan of the Plan sheet)", cur,
        ("  expected (the tiered model, exact)", at["expected_wall_h"], "h", F.HOURS))
    return {"runs": at["runs"], "seed": seed, "computed": dt.date.today().isoformat(), "rows": rows, "tiered": True,
            "used": used_rows(at["used"], cur),
            "notes": ["The tiered plan simulated run by run: each failure falls in a class, restored from the first "
                      "tier that survives it (a restore that fails falls back to the next, or to the job's start); "
                      "the simulation behind the tiered P(finish by the deadline) on the Storage & recovery sheet "
                      "(there with 2,000 runs, seed 0).",
                      "The interval search of a single-level plan (the interval with the best chance, the cheapest "
                      "meeting a target) is not run for tiers: the tiered plan's interval is its optimum at the "
                      "stated every (the Interval curve sheet)."]}


#: the words and unit of what the tiered simulation used (engine.deadline_tiers' ``used`` keys)
_JOB = {"useful_training_h": ("Useful training (work)", "h"), "job_mtbf_min": ("Job MTBF", "min"),
        "gpus": ("GPUs", "GPUs"), "price_per_gpu_hour": ("Price per GPU-hour", "money per GPU-h"),
        "deadline_h": ("Deadline", "h"),
        "restart_without_load_min": ("Restart without the checkpoint load (R'; each tier adds its restore)", "min"),
        "downtime_min": ("  of which the downtime: the wait for a node (the job cannot fail in it)", "min"),
        "async_write_min": ("Background write", "min"), "async_slowdown_fraction": ("Background write slowdown", "share")}
_TIER = {"every": ("every (saves every 'every' x T)", "x T"), "interval_min": ("interval", "min"),
         "checkpoint_stall_min": ("stall", "min"), "restore_min": ("restore", "min"),
         "restart_min": ("restart = R' + restore", "min"),
         "restore_failure_probability": ("restore failure probability", "share"), "copies": ("copies", "copies")}


def used_rows(used: dict[str, Any], currency: str) -> list[tuple[str, Any, str]]:
    """The Deadline sheet's "Input this simulation used" rows of the tiered simulation: (label, value, unit), in the
    order :func:`engine.deadline_tiers.tiered_deadline_report` lists its ``used`` inputs."""
    out, names = [], {k[:-len("_name")]: v for k, v in used.items() if k.startswith("tier") and k.endswith("_name")}
    for key, value in used.items():
        if key in _JOB:
            label, unit = _JOB[key]
        elif key.startswith("restart_part_"):
            label, unit = f"  restart part: {key[len('restart_part_'):-len('_min')]} (setup)", "min"
        elif key.startswith("class_"):
            label, unit = f"Failure class {key[len('class_'):-len('_share')]}: share", "share"
        elif key.endswith("_name"):
            continue
        else:
            tier, rest = key.split("_", 1)
            label, unit = f"Tier {tier[4:]} ({names[tier]}): {_TIER[rest][0]}", _TIER[rest][1]
        out.append((label, value, unit.replace("money", currency)))
    return out
