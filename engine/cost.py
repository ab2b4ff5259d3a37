"""From wall hours to GPU-hours and money, and the comparison of two plans.

A job holding ``gpus`` GPUs for ``wall_h`` hours consumes ``wall_h * gpus`` GPU-hours whatever those
GPUs are doing: computing, blocked on a save, redoing lost work or waiting for a restart. The
money is ``GPU-hours * price_per_gpu_hour`` (reserved or on-demand capacity billed per GPU-hour;
idle time after the job ends is not counted). Goodput is the share of the bill that bought
training progress that survived: ``useful / total``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .gate import FLOAT_MAX, check_finite_result, prepare

__all__ = ["CATEGORIES", "HOURS_PER_MONTH", "PLAN_COLUMNS", "compare_plans", "goodput", "goodput_kernel", "gpu_hours",
           "gpu_hours_kernel", "money", "money_kernel", "plan_money"]

CATEGORIES = ("useful", "save", "rework", "restart")
HOURS_PER_MONTH = 730.485  # 365.2425 days * 24 h / 12


def gpu_hours(wall_h, gpus):
    """``wall_h * gpus``: GPU-hours held by a job of ``gpus`` GPUs over ``wall_h`` hours."""
    (h, g), wrap = prepare(("wall_h", wall_h, "nonnegative"), ("gpus", gpus, "count"))
    return wrap(gpu_hours_kernel(h, g))


def gpu_hours_kernel(h, g):
    """:func:`gpu_hours` on validated arrays (raises only when the result overflows)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = h * g
    check_finite_result("gpus", out, "wall_h x gpus overflows", {"gpus": g, "wall_h": h})
    return out


def money(gpu_hours_, price_per_gpu_hour):
    """``gpu_hours * price_per_gpu_hour``."""
    (h, p), wrap = prepare(("gpu_hours", gpu_hours_, "nonnegative"), ("price_per_gpu_hour", price_per_gpu_hour, "nonnegative"))
    return wrap(money_kernel(h, p))


def money_kernel(h, p):
    """:func:`money` on validated arrays (raises only when the result overflows)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = h * p
    check_finite_result("price_per_gpu_hour", out, "GPU-hours x price_per_gpu_hour overflows",
                        {"gpu_hours": h, "price_per_gpu_hour": p})
    return out


def goodput(useful_h, total_h):
    """Share of held time that bought surviving training progress: ``useful_h / total_h``."""
    (u, t), wrap = prepare(("useful_h", useful_h, "nonnegative"), ("total_h", total_h, "positive"))
    return wrap(goodput_kernel(u, t))


def goodput_kernel(u, t):
    """:func:`goodput` on validated arrays (raises only when the result overflows)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = u / t
    check_finite_result("total_h", out, "useful_h / total_h overflows", {"useful_h": u, "total_h": t})
    return out


def plan_money(hours: dict[str, Any], wall_h: Any, gpus: Any, price: Any) -> dict[str, Any]:
    """GPU-hours and money of a plan without a storage and recovery setup, as :func:`engine.evaluate` adds
    them (in its column order): ``job_gpu_hours`` (``wall_h`` x ``gpus``), ``spare_gpu_hours``, 0 (no setup
    holds spares), ``total_gpu_hours``, their sum (:data:`engine.fields.GPU_HOURS_PARTS`); ``compute_cost`` (the
    job's GPU time x price);
    ``storage_cost`` and ``spare_cost``, 0 (no setup pays for storage or spares); ``total_cost``, their sum
    (:data:`engine.fields.COST_PARTS`); per category of ``hours`` (:data:`CATEGORIES`) its GPU-hours and cost."""
    from .fields import COST_PARTS

    out = {"job_gpu_hours": gpu_hours_kernel(wall_h, gpus)}
    out["spare_gpu_hours"] = np.zeros(np.shape(out["job_gpu_hours"]))
    out["total_gpu_hours"] = out["job_gpu_hours"] + out["spare_gpu_hours"]
    out["compute_cost"] = money_kernel(out["job_gpu_hours"], price)
    out["storage_cost"] = np.zeros(np.shape(out["compute_cost"]))
    out["spare_cost"] = np.zeros(np.shape(out["compute_cost"]))
    out["total_cost"] = sum((out[k] for k in COST_PARTS["total_cost"][1:]), out["compute_cost"])
    for cat in CATEGORIES:
        out[f"{cat}_gpu_hours"] = gpu_hours_kernel(hours[cat], gpus)
        out[f"{cat}_cost"] = money_kernel(out[f"{cat}_gpu_hours"], price)
    return out


#: the columns of an evaluated row that :func:`compare_plans` reads
PLAN_COLUMNS = ("wall_h", "total_gpu_hours", "total_cost", "waste_fraction", "goodput",
                *(f"{cat}_gpu_hours" for cat in CATEGORIES))


def compare_plans(base: pd.Series, alternative: pd.Series, runs_per_month: float | None = None) -> pd.Series:
    """What the alternative plan saves against the base, per run and per month.

    ``base`` and ``alternative`` are rows of :func:`engine.evaluate` (they must describe the same
    training: the comparison is per completed run). Positive numbers are savings.

    Per month: ``runs_per_month`` if given, else the base plan run back to back for a month of
    continuous operation (``730.485 h / base wall_h`` runs). The alternative may need more or fewer
    GPUs (e.g. doubling the node count): GPU-hours and money compare what each plan consumes.

    Raises :class:`InputError` naming the plan and the column when a row is not a Series (or a
    mapping) with every column of :data:`PLAN_COLUMNS` holding a finite number, when the base's wall
    time is not > 0 (no month of back-to-back runs without it), or when a figure overflows.
    """
    b = _plan_figures("base", base)
    a = _plan_figures("alternative", alternative)
    if runs_per_month is None:
        if not b["wall_h"] > 0:
            raise InputError("base.wall_h", b["wall_h"], "must be > 0 to count back-to-back runs per month "
                             "(or give runs_per_month)")
        runs = HOURS_PER_MONTH / b["wall_h"]
    else:
        (runs_arr,), _ = prepare(("runs_per_month", runs_per_month, "positive"))
        if runs_arr.ndim:
            raise InputError("runs_per_month", runs_per_month, "must be a single number")
        runs = float(runs_arr)
    out = {
        "base": _name(base, "base"),
        "alternative": _name(alternative, "alternative"),
        "wall_h_saved_per_run": b["wall_h"] - a["wall_h"],
        "gpu_hours_saved_per_run": b["total_gpu_hours"] - a["total_gpu_hours"],
        "money_saved_per_run": b["total_cost"] - a["total_cost"],
        "waste_fraction_base": b["waste_fraction"],
        "waste_fraction_alternative": a["waste_fraction"],
        "goodput_base": b["goodput"],
        "goodput_alternative": a["goodput"],
        "runs_per_month": runs,
    }
    out["gpu_hours_saved_per_month"] = out["gpu_hours_saved_per_run"] * runs
    out["money_saved_per_month"] = out["money_saved_per_run"] * runs
    for cat in CATEGORIES:
        out[f"{cat}_gpu_hours_saved_per_run"] = b[f"{cat}_gpu_hours"] - a[f"{cat}_gpu_hours"]
    for key, value in out.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(key, value, f"overflows (results must stay within the float64 range, |x| <= "
                             f"{FLOAT_MAX:.6g}): the plans' figures are too far apart")
    return pd.Series(out)


def _plan_figures(which: str, row: Any) -> dict[str, float]:
    """The numbers :func:`compare_plans` reads from one evaluated row, each a finite float."""
    if isinstance(row, pd.DataFrame):
        if len(row) != 1:
            raise InputError(which, f"DataFrame of {len(row)} rows", "must be one row of engine.evaluate "
                             "(e.g. results.iloc[0])")
        row = row.iloc[0]
    if not isinstance(row, (pd.Series, dict)):
        raise InputError(which, type(row).__name__, "must be a row of engine.evaluate (a pandas Series)")
    missing = [c for c in PLAN_COLUMNS if c not in row]
    if missing:
        raise InputError(f"{which}.{missing[0]}", None, f"is missing: {which} must be a row of engine.evaluate "
                         f"(missing columns: {', '.join(missing)})")
    out = {}
    for c in PLAN_COLUMNS:
        (arr,), _ = prepare((f"{which}.{c}", row[c], "any"))
        if arr.ndim:
            raise InputError(f"{which}.{c}", row[c], "must be a single number")
        out[c] = float(arr)
    return out


def _name(row: Any, default: str) -> Any:
    """The row's name, as text (the default when it has none)."""
    name = row.get("name", default) if hasattr(row, "get") else default
    if name is None or (isinstance(name, float) and math.isnan(name)):
        return default
    return name
