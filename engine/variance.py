"""Plan versus actual: where a run's wall time went against what its scenario expected, and why.

Inputs are plain numbers (what a log reader or a person measured), so this module does not
depend on any file format:

* the plan: a :class:`engine.scenario.Scenario` (its job MTBF, effective stall, interval (the
  scenario's ``interval_min`` or the exact optimum), GPUs, price and currency, exactly as
  :func:`engine.scenario.evaluate` derives them) and ``wall_h``, the wall hours the actual run held
  its GPUs;
* the actual: ``measured`` inputs (:data:`MEASURED_KEYS`: ``checkpoint_stall_min``,
  ``async_write_min``, ``async_slowdown_fraction``, ``restart_min``, ``job_mtbf_h``,
  ``checkpoint_interval_min``: the compute interval actually used; a value left out or ``None``
  falls back to the plan's, with a note) and ``actual_h``, hours by bucket (:data:`BUCKETS`).

Buckets (wall hours; GPU-hours = hours x the scenario's GPUs; money = GPU-hours x price):

* ``productive`` compute that survived; ``save_blocking`` blocking save stalls;
  ``async_slowdown`` throughput lost while background writes ran; ``rework`` compute (and saves)
  lost to failures; ``restart`` restart phases; ``startup`` the first start; ``idle`` anything else.

The planned split (:func:`planned_split`) is the exact model's expected breakdown
(:func:`engine.waste.time_breakdown`, [Daly06]) of the same ``wall_h`` into those buckets: each
bucket's share of the expected wall time times ``wall_h``. The model has no first start and no
idle time, so ``startup`` and ``idle`` are planned at 0.

Attribution (:func:`plan_vs_actual`). The total difference is the actual non-productive hours
minus the planned ones (``sum over buckets other than productive of actual - planned``; when the
actual buckets add up to ``wall_h`` it equals the planned minus the actual productive hours).
Writing ``f(inputs)`` for the model's waste share of wall time (1 - ETTR)::

    total = sum_i [f(plan with input i measured) - f(plan)] wall_h      one input at a time
          + interaction                                                   so the model part adds up
          + startup + idle                                                time the model has no bucket for
          + unexplained                                                   the rest

where ``interaction = [f(all measured) - f(plan)] wall_h - sum_i (...)`` (inputs that act
together: a longer restart costs more when failures are also more frequent) and ``unexplained``
is what the measured inputs do not account for in expectation (the luck of when failures struck,
or time the buckets record that the model does not). Each input is substituted *against the plan*
(not in sequence), so its effect does not depend on an order. Positive = more waste than planned.

``optimum_savings``: for the measured inputs and the same useful work (the actual productive
hours), the expected wall time at the interval actually used minus that at the exact optimum
(:func:`engine.waste.exact_optimal_interval`), in hours, GPU-hours and money; >= 0 by the
optimum's definition (a rounding-level negative is reported as 0).

Assumptions: those of the exact model (exponential failures at the measured job MTBF, long-run
expectations; the background write durable before the next save: an interval below
``async_write_min * (1 - async_slowdown_fraction)`` is evaluated at that floor, with a note).
A single run is one draw: differences of a few failures' worth are noise, not a broken plan.

References: [Daly06] J. T. Daly, Future Generation Computer Systems 22(3), 303-312, 2006 (the
exact model); the buckets follow the usual goodput accounting of training time (productive time,
checkpoint save, wasted progress, restart/recovery, start-up, idle).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from . import waste
from .errors import NEVER_FINISHES, InputError
from .fields import RULES

__all__ = ["BUCKETS", "MEASURED_KEYS", "VarianceResult", "plan_vs_actual", "planned_inputs", "planned_split"]

#: time buckets of a run, in the order every table lists them
BUCKETS: tuple[str, ...] = ("productive", "save_blocking", "async_slowdown", "rework", "restart", "startup", "idle")
#: measured inputs: key -> (rule, unit)
MEASURED_KEYS: dict[str, tuple[str, str]] = {
    "checkpoint_stall_min": ("nonnegative", "min"),
    "async_write_min": ("nonnegative", "min"),
    "async_slowdown_fraction": ("fraction", ""),
    "restart_min": ("nonnegative", "min"),
    "job_mtbf_h": ("positive", "h"),
    "checkpoint_interval_min": ("positive", "min"),
}
_PHRASES = {  # (subject and verb, phrase when the plan had none)
    "checkpoint_stall_min": ("checkpoint stalls took", "checkpoint stalls took {m} where the plan had none"),
    "async_write_min": ("background writes took", "background writes took {m} where the plan had none"),
    "async_slowdown_fraction": ("the slowdown during writes was",
                                "training lost {m} of its speed during writes where the plan assumed none"),
    "restart_min": ("restarts took", "restarts took {m} where the plan had none"),
    "job_mtbf_h": ("the job MTBF was", ""),
    "checkpoint_interval_min": ("the interval between saves was", ""),
}
#: a negative saving no larger than this share of the wall time is rounding: reported as 0
_ROUNDING = 1e-12


@dataclass(frozen=True)
class VarianceResult:
    """The answer of :func:`plan_vs_actual` (see the module notes for every figure).

    * ``buckets``: one dict per bucket: ``bucket``, ``planned_h``, ``actual_h``, ``difference_h``
      (actual - planned), ``difference_gpu_hours``, ``difference_money``;
    * ``totals``: planned and actual wall and waste hours, the total difference in hours,
      GPU-hours and money;
    * ``explanations``: one dict per measured input that differs from the plan: ``input``,
      ``planned``, ``measured``, ``ratio`` (measured / planned; None when the plan had 0),
      ``unit``, ``effect_h``, ``effect_gpu_hours``, ``effect_money``, ``text``;
    * ``attribution``: hours by part (each differing input, ``interaction``, ``startup``,
      ``idle``, ``unexplained``), adding up to ``totals["difference_h"]``;
    * ``optimum_savings``: what the exact optimum interval would have saved at the measured inputs;
    * ``notes``: fallbacks and model limits met on the way.
    """

    scenario: str
    currency: str
    gpus: int
    price_per_gpu_hour: float
    wall_h: float
    planned_inputs: dict[str, float]
    measured_inputs: dict[str, float]
    buckets: tuple[dict[str, Any], ...]
    totals: dict[str, float]
    explanations: tuple[dict[str, Any], ...]
    attribution: dict[str, float]
    optimum_savings: dict[str, Any]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-safe dict (floats finite, ``None`` only for a ratio against a planned 0)."""
        return _plain(asdict(self))

    def to_frame(self) -> pd.DataFrame:
        """The per-bucket table, one row per bucket (index: bucket)."""
        return pd.DataFrame(list(self.buckets)).set_index("bucket")


# ------------------------------------------------------------------------------------------- the plan

def _plan_context(scenario: Any) -> tuple[dict[str, float], float, float, str, str]:
    """(planned inputs, GPUs, price, currency, name) exactly as :func:`engine.scenario.evaluate` derives them."""
    from .scenario import Scenario, evaluate  # scenario imports the heavier models; load on use

    if not isinstance(scenario, Scenario):
        raise InputError("scenario", type(scenario).__name__, "must be a Scenario (engine.scenario.Scenario)")
    row = evaluate(scenario).iloc[0]
    inputs = {
        "checkpoint_stall_min": float(scenario.checkpoint_stall_min),
        "async_write_min": float(scenario.async_write_min or 0.0),
        "async_slowdown_fraction": float(scenario.async_slowdown_fraction or 0.0),
        "restart_min": float(scenario.restart_min or 0.0),
        "job_mtbf_h": float(row["job_mtbf_h"]),
        "checkpoint_interval_min": float(row["chosen_interval_min"]),
    }
    return inputs, float(row["gpus"]), float(row["price_per_gpu_hour"]), str(scenario.currency), str(scenario.name)


def planned_inputs(scenario: Any) -> dict[str, float]:
    """The plan's values of the :data:`MEASURED_KEYS`: stall, write, slowdown, restart, job MTBF
    (derived from nodes and domains unless overridden) and the interval it would use (its
    ``interval_min``, else the exact optimum)."""
    return _plan_context(scenario)[0]


def _model(inputs: Mapping[str, float]) -> tuple[dict[str, float], bool]:
    """(share of wall time by model bucket, whether the interval was raised to the durability floor)."""
    C, W, s = inputs["checkpoint_stall_min"], inputs["async_write_min"], inputs["async_slowdown_fraction"]
    R, M = inputs["restart_min"], inputs["job_mtbf_h"] * 60.0
    floor = W * (1.0 - s)
    T = max(inputs["checkpoint_interval_min"], floor)
    arr = [np.asarray(v, dtype=np.float64) for v in (1.0, T, C, M, R, W, s)]
    try:
        parts = {k: float(v) for k, v in waste.time_breakdown_kernel(*arr).items()}
    except InputError:
        raise InputError("job_mtbf_h", inputs["job_mtbf_h"], f"{NEVER_FINISHES} (the job MTBF is so short against "
                         "the interval, stall and restart that the expected wall time overflows)") from None
    segments = 1.0 / T  # work = 1 minute
    split = {"productive": parts["useful"], "save_blocking": segments * C, "async_slowdown": segments * W * s,
             "rework": parts["rework"], "restart": parts["restart"]}
    total = sum(split.values())
    return {k: v / total for k, v in split.items()}, T > inputs["checkpoint_interval_min"]


def _waste_share(inputs: Mapping[str, float]) -> tuple[float, bool]:
    shares, floored = _model(inputs)
    return 1.0 - shares["productive"], floored


def planned_split(scenario: Any, wall_h: Any) -> dict[str, float]:
    """The plan's expected split of ``wall_h`` wall hours into :data:`BUCKETS` (hours).

    Each model bucket's share of the expected wall time (:func:`engine.waste.time_breakdown` at the
    plan's inputs and interval) times ``wall_h``; ``save`` is split into the blocking stalls
    (``C`` per save) and the throughput lost to writes (``W * slowdown`` per save); ``startup``
    and ``idle`` are 0 (the model has neither). The buckets add up to ``wall_h``.
    """
    wall = _number("wall_h", wall_h, "positive")
    shares, _ = _model(_plan_context(scenario)[0])
    out = {k: shares.get(k, 0.0) * wall for k in BUCKETS}
    return out


# ------------------------------------------------------------------------------------------- checks

def _number(name: str, value: Any, rule: str) -> float:
    """A finite real number (not a bool) meeting ``rule``, else :class:`InputError` naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InputError(name, value, "must be a number")
    x = float(value)
    if not math.isfinite(x):
        raise InputError(name, x, "must be a finite number")
    check = RULES[rule]
    if not bool(check.predicate(np.float64(x))):
        raise InputError(name, x, check.message)
    return x


def _measured(measured: Any, plan: dict[str, float], notes: list[str]) -> dict[str, float]:
    if measured is None:
        measured = {}
    if not isinstance(measured, Mapping):
        raise InputError("measured", type(measured).__name__, "must be a dict of measured inputs")
    for key in measured:
        if key not in MEASURED_KEYS:
            raise InputError(f"measured.{key}", measured[key], "unknown input; known: " + ", ".join(MEASURED_KEYS))
    out = {}
    for key, (rule, unit) in MEASURED_KEYS.items():
        value = measured.get(key)
        if value is None:
            out[key] = plan[key]
            notes.append(f"{key} not measured: the plan's {_fmt(plan[key])}{' ' + unit if unit else ''} is used")
        else:
            out[key] = _number(f"measured.{key}", value, rule)
    return out


def _actual(actual_h: Any) -> dict[str, float]:
    if not isinstance(actual_h, Mapping):
        raise InputError("actual_h", type(actual_h).__name__, "must be a dict of hours by bucket")
    for key in actual_h:
        if key not in BUCKETS:
            raise InputError(f"actual_h.{key}", actual_h[key], "unknown bucket; buckets: " + ", ".join(BUCKETS))
    for key in BUCKETS:
        if key not in actual_h:
            raise InputError(f"actual_h.{key}", None, "is required (give 0 for none)")
    return {key: _number(f"actual_h.{key}", actual_h[key], "nonnegative") for key in BUCKETS}


# ------------------------------------------------------------------------------------------- the comparison

def plan_vs_actual(scenario: Any, wall_h: Any, measured: Mapping[str, Any] | None,
                   actual_h: Mapping[str, Any]) -> VarianceResult:
    """Plan against actual, bucket by bucket, with the measured inputs' share of the difference.

    ``scenario``: the plan (:class:`engine.scenario.Scenario`); ``wall_h``: the wall hours the run
    held its GPUs; ``measured``: :data:`MEASURED_KEYS` (missing or ``None``: the plan's value,
    noted); ``actual_h``: hours for every one of :data:`BUCKETS`. See the module notes for the
    figures and the attribution (one input at a time against the plan, plus the interaction and
    the unexplained rest, adding up to the total). Bad input raises :class:`InputError` naming
    the key (``measured.restart_min``, ``actual_h.idle``, ...).
    """
    wall = _number("wall_h", wall_h, "positive")
    plan, gpus, price, currency, name = _plan_context(scenario)
    notes: list[str] = []
    meas = _measured(measured, plan, notes)
    actual = _actual(actual_h)

    def gh(hours: float) -> float:
        return hours * gpus

    def cash(hours: float) -> float:
        return hours * gpus * price

    plan_shares, floored = _model(plan)
    planned = {k: plan_shares.get(k, 0.0) * wall for k in BUCKETS}
    buckets = tuple({"bucket": k, "planned_h": planned[k], "actual_h": actual[k],
                     "difference_h": actual[k] - planned[k], "difference_gpu_hours": gh(actual[k] - planned[k]),
                     "difference_money": cash(actual[k] - planned[k])} for k in BUCKETS)
    actual_total = sum(actual.values())
    if abs(actual_total - wall) > 1e-6 * wall:
        notes.append(f"the actual buckets add up to {_fmt(actual_total)} h, not wall_h = {_fmt(wall)} h: "
                     "the totals compare non-productive hours as given")
    planned_waste = sum(v for k, v in planned.items() if k != "productive")
    actual_waste = sum(v for k, v in actual.items() if k != "productive")
    total = actual_waste - planned_waste

    # the model's part: each input against the plan, then all together
    f_plan = 1.0 - plan_shares["productive"]
    explanations, attribution, effects = [], {}, 0.0
    for key, (_, unit) in MEASURED_KEYS.items():
        if _same(meas[key], plan[key]):
            continue
        f_one, fl = _waste_share({**plan, key: meas[key]})
        floored |= fl
        effect = (f_one - f_plan) * wall
        effects += effect
        attribution[key] = effect
        explanations.append(_explain(key, unit, plan[key], meas[key], effect, gh(effect), cash(effect), currency))
    f_meas, fl = _waste_share(meas)
    floored |= fl
    model_total = (f_meas - f_plan) * wall
    attribution["interaction"] = model_total - effects
    attribution["startup"] = actual["startup"]
    attribution["idle"] = actual["idle"]
    attribution["unexplained"] = total - model_total - actual["startup"] - actual["idle"]
    if floored:
        notes.append("an interval shorter than the background write's durability floor "
                     "(async_write_min * (1 - async_slowdown_fraction)) was evaluated at that floor")

    totals = {"planned_wall_h": wall, "actual_total_h": actual_total, "planned_waste_h": planned_waste,
              "actual_waste_h": actual_waste, "difference_h": total, "difference_gpu_hours": gh(total),
              "difference_money": cash(total), "model_difference_h": model_total,
              "planned_waste_fraction": f_plan, "modelled_waste_fraction_at_measured": f_meas}
    result = VarianceResult(
        scenario=name, currency=currency, gpus=int(round(gpus)), price_per_gpu_hour=price, wall_h=wall,
        planned_inputs=dict(plan), measured_inputs=dict(meas), buckets=buckets, totals=totals,
        explanations=tuple(explanations), attribution=attribution,
        optimum_savings=_optimum_savings(meas, actual["productive"], gpus, price, currency, notes),
        notes=tuple(notes))
    _check_finite(result.to_dict())
    return result


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def _optimum_savings(meas: dict[str, float], useful_h: float, gpus: float, price: float, currency: str,
                     notes: list[str]) -> dict[str, Any]:
    """Expected wall time at the interval used minus at the exact optimum, measured inputs, same useful work."""
    C, W, s = meas["checkpoint_stall_min"], meas["async_write_min"], meas["async_slowdown_fraction"]
    R, M = meas["restart_min"], meas["job_mtbf_h"] * 60.0
    used = max(meas["checkpoint_interval_min"], W * (1.0 - s))
    best = float(waste.exact_optimal_interval(C, M, W, s))
    out: dict[str, Any] = {"interval_used_min": used, "optimal_interval_min": best, "useful_h": useful_h,
                           "expected_wall_h_at_used": 0.0, "expected_wall_h_at_optimum": 0.0,
                           "wall_h_saved": 0.0, "gpu_hours_saved": 0.0, "money_saved": 0.0, "currency": currency}
    if useful_h <= 0:
        notes.append("no productive hours: the optimum's savings are 0")
        return out
    if best <= 0:  # a free save (C_eff = 0, W = 0): the model's optimum saves continuously
        notes.append("the measured save costs nothing: no optimum interval, savings reported as 0")
        return out
    work = useful_h * 60.0
    at_used = float(waste.expected_wall_time(work, used, C, M, R, W, s)) / 60.0
    at_best = float(waste.expected_wall_time(work, best, C, M, R, W, s)) / 60.0
    saved = at_used - at_best
    if saved < 0 and -saved <= _ROUNDING * at_used:
        saved = 0.0
    out.update(expected_wall_h_at_used=at_used, expected_wall_h_at_optimum=at_best, wall_h_saved=saved,
               gpu_hours_saved=saved * gpus, money_saved=saved * gpus * price)
    return out


def _explain(key: str, unit: str, planned: float, measured: float, effect_h: float, effect_gh: float,
             effect_money: float, currency: str) -> dict[str, Any]:
    """One explanation entry, with its sentence."""
    ratio = measured / planned if planned != 0 else None
    subject, from_none = _PHRASES[key]
    if key == "async_slowdown_fraction":
        m_txt, p_txt = f"{measured:.0%}", f"{planned:.0%}"
    else:
        m_txt, p_txt = _fmt(measured) + (f" {unit}" if unit else ""), _fmt(planned) + (f" {unit}" if unit else "")
    if ratio is None:
        head = from_none.format(m=m_txt) if from_none else f"{subject} {m_txt} where the plan had 0"
    else:
        head = f"{subject} {_fmt(ratio)}x the planned {p_txt}"
    text = f"{head}: {_signed(effect_gh)} GPU-hours, {_signed(effect_money)} {currency}"
    return {"input": key, "planned": planned, "measured": measured, "ratio": ratio, "unit": unit,
            "effect_h": effect_h, "effect_gpu_hours": effect_gh, "effect_money": effect_money, "text": text}


def _fmt(x: float) -> str:
    """Three significant figures, thousands separated: 2.3, 10, 0.25, 1,234."""
    if abs(x) >= 999.5:
        return f"{x:,.0f}"
    text = f"{x:.3g}"
    return text if "e" not in text else f"{x:.2e}"


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "-") + _fmt(abs(x))


def _plain(value: Any) -> Any:
    """Tuples to lists, numpy numbers to Python floats/ints (JSON-safe)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def _check_finite(value: Any, path: str = "result") -> None:
    """Raise rather than return an infinite or NaN figure (the model overflowed)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, f"{path}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise InputError(path, value, "is not finite: the inputs are outside the model's range (check job_mtbf_h)")
