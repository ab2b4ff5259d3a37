"""From wall hours to GPU-hours and money, and the comparison of two plans.

A job holding ``gpus`` GPUs for ``wall_h`` hours consumes ``wall_h * gpus`` GPU-hours whatever those
GPUs are doing: computing, blocked on a save, redoing lost work or waiting for a restart. The
money is ``GPU-hours * price_per_gpu_hour`` (reserved or on-demand capacity billed per GPU-hour;
idle time after the job ends is not counted). Goodput is the share of the bill that bought
training progress that survived: ``useful / total``.
"""

from __future__ import annotations

import pandas as pd

from ._inputs import prepare

__all__ = ["CATEGORIES", "HOURS_PER_MONTH", "compare_plans", "goodput", "gpu_hours", "money"]

CATEGORIES = ("useful", "save", "rework", "restart")
HOURS_PER_MONTH = 730.485  # 365.2425 days * 24 h / 12


def gpu_hours(wall_h, gpus):
    """``wall_h * gpus``: GPU-hours held by a job of ``gpus`` GPUs over ``wall_h`` hours."""
    (h, g), wrap = prepare(("wall_h", wall_h, "nonnegative"), ("gpus", gpus, "count"))
    return wrap(_gpu_hours(h, g))


def _gpu_hours(h, g):
    return h * g


def money(gpu_hours_, price_per_gpu_hour):
    """``gpu_hours * price_per_gpu_hour``."""
    (h, p), wrap = prepare(("gpu_hours", gpu_hours_, "nonnegative"), ("price_per_gpu_hour", price_per_gpu_hour, "nonnegative"))
    return wrap(_money(h, p))


def _money(h, p):
    return h * p


def goodput(useful_h, total_h):
    """Share of held time that bought surviving training progress: ``useful_h / total_h``."""
    (u, t), wrap = prepare(("useful_h", useful_h, "nonnegative"), ("total_h", total_h, "positive"))
    return wrap(_goodput(u, t))


def _goodput(u, t):
    return u / t


def compare_plans(base: pd.Series, alternative: pd.Series, runs_per_month: float | None = None) -> pd.Series:
    """What the alternative plan saves against the base, per run and per month.

    ``base`` and ``alternative`` are rows of :func:`engine.evaluate` (they must describe the same
    training: the comparison is per completed run). Positive numbers are savings.

    Per month: ``runs_per_month`` if given, else the base plan run back to back for a month of
    continuous operation (``730.485 h / base wall_h`` runs). The alternative may need more or fewer
    GPUs (e.g. doubling the node count): GPU-hours and money compare what each plan consumes.
    """
    if runs_per_month is None:
        runs = HOURS_PER_MONTH / float(base["wall_h"])
    else:
        (runs_arr,), _ = prepare(("runs_per_month", runs_per_month, "positive"))
        runs = float(runs_arr)
    out = {
        "base": base.get("name", "base"),
        "alternative": alternative.get("name", "alternative"),
        "wall_h_saved_per_run": float(base["wall_h"] - alternative["wall_h"]),
        "gpu_hours_saved_per_run": float(base["total_gpu_hours"] - alternative["total_gpu_hours"]),
        "money_saved_per_run": float(base["total_cost"] - alternative["total_cost"]),
        "waste_fraction_base": float(base["waste_fraction"]),
        "waste_fraction_alternative": float(alternative["waste_fraction"]),
        "goodput_base": float(base["goodput"]),
        "goodput_alternative": float(alternative["goodput"]),
        "runs_per_month": runs,
    }
    out["gpu_hours_saved_per_month"] = out["gpu_hours_saved_per_run"] * runs
    out["money_saved_per_month"] = out["money_saved_per_run"] * runs
    for cat in CATEGORIES:
        out[f"{cat}_gpu_hours_saved_per_run"] = float(base[f"{cat}_gpu_hours"] - alternative[f"{cat}_gpu_hours"])
    return pd.Series(out)

