"""The failure-phase schedule on the console and in ``plan --json`` (views of :mod:`ckptplan.engine.phases_table`'s
columns; the engine plans, this only shows)."""

from __future__ import annotations

import math
from typing import Any

from .common import console, duration

__all__ = ["print_schedule", "schedule_json"]


def _slots(row: Any) -> list[int]:
    out, i = [], 1
    while f"schedule{i}_interval_min" in row.index:
        if math.isfinite(float(row[f"schedule{i}_interval_min"])):
            out.append(i)
        i += 1
    return out


def _stated(row: Any, i: int) -> bool:
    return float(row.get(f"schedule{i}_interval_stated", 0.0)) == 1.0


def schedule_json(row: Any) -> dict[str, Any]:
    """``schedule`` (a list of ``{start_h, interval_min, rate_factor, interval_stated}``, the schedule planned;
    ``interval_stated``: the planner stated that interval, else the plan optimised it), ``single_interval_min`` and
    ``single_interval_wall_h`` when the row has a schedule; nothing otherwise."""
    slots = _slots(row)
    if not slots:
        return {}
    return {"schedule": [{"start_h": float(row[f"schedule{i}_start_h"]),
                          "interval_min": float(row[f"schedule{i}_interval_min"]),
                          "rate_factor": float(row[f"schedule{i}_rate_factor"]),
                          "interval_stated": _stated(row, i)} for i in slots],
            "single_interval_min": float(row["single_interval_min"]),
            "single_interval_wall_h": float(row["single_interval_wall_h"])}


def print_schedule(row: Any) -> bool:
    """The schedule table of a row with failure phases or a Weibull shape from the start (False, nothing printed,
    for a constant rate)."""
    from rich.table import Table

    slots = _slots(row)
    shape = float(row.get("weibull_shape_from_start", math.nan))
    if len(slots) < 2 and not shape < 1:      # a Weibull plan is a schedule even when one interval wins
        return False
    if shape < 1:
        title = (f"Checkpoint schedule: a Weibull failure intensity from the job's start (shape {shape:g}; "
                 "the rate shown is each window's mean)")
    else:
        title = f"Checkpoint schedule: the failure rate changes over the run ({_schedule_model(row)})"
    t = Table(title=title, title_justify="left")
    for col in ("from (wall)", "failure rate", "job MTBF", "save every", ""):
        t.add_column(col, justify="right" if col else "left")
    for i in slots:
        factor = float(row[f"schedule{i}_rate_factor"])
        t.add_row(duration(row[f"schedule{i}_start_h"] * 60), f"{factor:.3g}x",
                  duration(row["job_mtbf_h"] * 60 / factor), duration(row[f"schedule{i}_interval_min"]),
                  "stated" if _stated(row, i) else "optimised")
    console.print(t)
    single, wall = float(row["single_interval_wall_h"]), float(row["wall_h"])
    gpus, price = float(row["gpus"]), float(row["price_per_gpu_hour"])
    spot = float(row.get("spot_price_per_gpu_hour", math.nan))
    if float(row.get("expected_preemptions", 0.0) or 0.0) > 0 and spot == spot:
        price = spot                          # on spot capacity the hours saved are paid at the spot price
    console.print(f"schedule: expected wall {duration(wall * 60)}, waste {row['waste_fraction']:.2%}; best single "
                  f"interval {duration(row['single_interval_min'])}: {duration(single * 60)} "
                  f"(the schedule {'saves' if single >= wall else 'costs'} {duration(abs(single - wall) * 60)}, "
                  f"{abs(single - wall) * gpus * price:,.0f} {row['currency']}{'' if single >= wall else ' more'})",
                  highlight=False)
    return True


def _schedule_model(row: Any) -> str:
    """The model a failure-phase schedule was planned with, in words (engine.phases_table's choice)."""
    parts = []
    if float(row.get("expected_preemptions", 0.0) or 0.0) > 0:
        parts.append("on spot capacity, preemptions at a constant rate")
    if float(row.get("downtime_min", 0.0) or 0.0) > 0:
        parts.append("a downtime after every failure")
    if float(row.get("async_write_min", 0.0) or 0.0) > 0:
        return "exact expectation, the asynchronous-save model per phase"
    return "exact expectation, Daly's model per phase" + "".join(f"; {p}" for p in parts)


def parse_phase_starts(text: str) -> list[float]:
    """``--phase-starts-h 0,72`` as numbers (a first phase at 0 added when the list starts later)."""
    from .engine.errors import InputError

    try:
        starts = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError("--phase-starts-h", text, "must be comma-separated hours, e.g. 0,72") from None
    return starts if starts and starts[0] == 0 else [0.0] + starts


def fit_phases(log: Any, starts: list[float], confidence: float) -> Any:
    """The per-phase rates of the log's failures (:func:`ckptplan.engine.phase_fitting.fit_phase_rates`)."""
    from .engine.fitting import run_segments
    from .engine.phase_fitting import fit_phase_rates, segments_from_log
    from .files.logs import read_log

    a, b, f = segments_from_log(run_segments(read_log(log)))
    return fit_phase_rates(a, b, f, starts, confidence=confidence)


def phase_fit_json(fit: Any) -> dict[str, Any]:
    """A phase fit as ``fit --json`` reports it (rates per running hour)."""
    from dataclasses import asdict

    return {**asdict(fit), "changed": fit.changed, "scenario": fit.scenario_phases()}


def print_phase_fit(fit: Any) -> None:
    """The per-phase rates, their intervals and the test of a change."""
    from rich.table import Table

    t = Table(title=f"Failure rate by phase ({fit.confidence:.0%} intervals; per running hour)", title_justify="left")
    for col in ("from (wall)", "running", "failures", "rate /h", "interval", "MTBF"):
        t.add_column(col, justify="right")
    for s, T, n, r, lo, hi in zip(fit.starts_h, fit.running_h, fit.failures, fit.rate_per_h, fit.rate_low_per_h,
                                  fit.rate_high_per_h):
        t.add_row(duration(s * 60), duration(T * 60), f"{n:,}", f"{r:.3g}", f"{lo:.3g}..{hi:.3g}",
                  duration(60 / r) if r > 0 else "-")
    console.print(t)
    verdict = "the rate changed: plan with these phases" if fit.changed else "no change shown: plan one rate"
    console.print(f"likelihood-ratio test of one rate: G = {fit.lr_statistic:.3g}, p = {fit.p_value:.3g} "
                  f"(level {fit.level:g}): {verdict}", highlight=False)
    if fit.changed:
        sc = fit.scenario_phases()
        console.print(f"scenario: job_mtbf_h = {sc['job_mtbf_h']:.4g}; "
                      + "; ".join(f"[[failure_phases]] start_h = {p['start_h']:g}, rate_factor = {p['rate_factor']:.3g}"
                                  for p in sc["failure_phases"]), highlight=False)
