"""Targets: the value of one input (the lever) a plan needs to reach a goal, for one plan or many rows.

The inverse questions of a plan: what aggregate write bandwidth, restart time, spare count or node
MTBF reaches a goodput of 0.95, a cost per useful GPU-hour of 2.70, or a 90 % chance to finish by
the deadline? The plan is the batch pipeline's (:func:`engine.batch.evaluate_rows`, as
:func:`engine.setup.plan_setup` plans it: the derived stall and restart follow the lever).

Method, per row and vectorised over rows (one batch of plans per step for all rows):

1. *Bracket*: the goal's margin ``h(x)`` (the figure minus the goal for goodput and P(finish), the
   goal minus the figure for the cost per useful GPU-hour: ``h >= 0`` means the goal is met) on a
   grid of candidates of the lever (:func:`candidates`: the base value times ``2^k``,
   ``k = -20 .. 12``, with 0 where the field's rule allows it; fractions on [0, 1)), and the sign
   change nearest the base value (:func:`engine.roots.first_bracket`).
2. *Refine*: :func:`engine.roots.solve_rows` until ``|h| <= 1e-9`` of the goal (whole-number levers:
   the whole value at the edge where the goal is met).
3. *No sign change*: the goal is not reachable by this lever alone within the searched range. The
   answer names the best the lever reaches and why, from the plan at that point: the share of wall
   time its restarts, rework and saves still take (goodput), the wall time against the deadline
   (P(finish)), or the price over the goodput (cost per useful GPU-hour). At 100k+ GPUs the job MTBF
   is minutes and the restart, not the save, bounds goodput: no storage bandwidth reaches 0.95.

Assumptions: the figure is monotone in the lever near the base (otherwise the nearest crossing is
returned); a lever beyond the searched range (from 2^-20 to 2^12 = 4,096 times the base) is not
considered.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from .errors import InputError
from .fields import RULES, Field
from .uncertainty import uncertain_field

__all__ = ["GOALS", "TARGET_COLUMNS", "candidates", "solve_targets", "target"]

#: goal name (the CLI option without dashes) -> (the plan's figure, +1 when more is better, -1 when less)
GOALS: dict[str, tuple[str, int]] = {
    "goodput": ("goodput", 1),
    "p_finish": ("p_finish_by_deadline", 1),
    "cost_per_useful_gpu_hour": ("cost_per_useful_gpu_hour", -1),
}
#: powers of two the grid of candidates spans below and above the base value (far above, the plan of a
#: stall or restart thousands of times the base overflows: the engine refuses such rows one by one)
SPAN = (20, 12)

#: the columns of :func:`solve_targets` besides the lever's own (named as the field), declared once
TARGET_COLUMNS: tuple[Field, ...] = (
    Field("goal", "", "The goal: goodput, p_finish or cost_per_useful_gpu_hour", "any"),
    Field("target", "goal's unit", "The value the goal asks for", "any"),
    Field("reachable", "", "True when some value of the lever reaches the goal", "any"),
    Field("achieved", "goal's unit", "The goal's figure with the lever at the answer (at the best value searched "
          "when unreachable)", "any"),
    Field("base", "lever's unit", "The lever's value in the scenario", "any"),
    Field("why", "", "The answer in words (and why, when the goal is not reachable)", "any"),
)


def candidates(field: str, base: Any) -> np.ndarray:
    """The grid of lever values searched per row (rows x candidates, ascending; module notes)."""
    spec = uncertain_field(field)
    base = np.asarray(base, dtype=float).reshape(-1)
    rule = spec.rule
    if rule in ("fraction", "share"):
        top = 0.999 if rule == "fraction" else 1.0
        return np.tile(np.append(np.linspace(0.0, 0.99, 100), top), (len(base), 1))
    start = np.where(base > 0, base, 1.0)
    grid = start[:, None] * 2.0 ** np.arange(-SPAN[0], SPAN[1] + 1)[None, :]
    if spec.integer:
        grid = np.maximum(np.rint(grid), 1.0 if rule == "count" else 0.0)
    if bool(RULES[rule].predicate(np.zeros(1))[0]):
        grid = np.hstack([np.zeros((len(base), 1)), grid])
    return grid


def _margin(res: pd.DataFrame, goal: str, value: float) -> np.ndarray:
    column, direction = GOALS[goal]
    y = res[column].to_numpy(dtype=float) if column in res.columns else np.full(len(res), np.nan)
    bad = res["status"].to_numpy() != "ok"
    return np.where(bad, np.nan, direction * (y - value))


def _check(field: str, goal: str, value: Any) -> float:
    uncertain_field(field)
    if goal not in GOALS:
        raise InputError("goal", goal, "must be one of " + ", ".join(GOALS))
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not np.isfinite(value):
        raise InputError(goal, value, "must be a finite number")
    if goal in ("goodput", "p_finish") and not 0 < value < 1:
        raise InputError(goal, value, "must be a fraction in (0, 1)")
    if goal == "cost_per_useful_gpu_hour" and not value > 0:
        raise InputError(goal, value, "must be > 0")
    return float(value)


def solve_targets(table: pd.DataFrame, field: str, goal: str, value: float, **options: Any) -> pd.DataFrame:
    """For every row of a scenario table (:func:`engine.batch.evaluate_rows`' input; ``options``: its
    ``tiers`` and ``failure_classes``), the value of ``field`` that reaches ``goal`` = ``value`` (module
    notes). Returns a table with the table's index: the answer under the field's name (NaN where not
    reachable), then :data:`TARGET_COLUMNS`."""
    from .batch import evaluate_rows

    value = _check(field, goal, value)
    if field not in table.columns:
        raise InputError("table", field, "needs the lever as a column (its base value on every row)")
    n = len(table)
    base = table[field].to_numpy(dtype=float)
    grid = candidates(field, base)
    m = grid.shape[1]

    # a goal other than P(finish) needs no deadline answer: left out, so a row on spot capacity or an interval
    # schedule (whose deadline answer is a 10,000-run simulation) is not simulated at every candidate value
    quiet = goal != "p_finish" and "deadline_h" in table.columns

    def plans(x: np.ndarray, rows: np.ndarray) -> pd.DataFrame:
        sub = table.iloc[rows].reset_index(drop=True)
        sub[field] = x
        if quiet:
            sub["deadline_h"] = np.nan
        return evaluate_rows(sub, **options)

    res = plans(grid.reshape(-1), np.repeat(np.arange(n), m))
    h = _margin(res, goal, value).reshape(n, m)
    return _finish(table, field, goal, value, base, grid, h, res, plans)


def _finish(table: pd.DataFrame, field: str, goal: str, value: float, base: np.ndarray, grid: np.ndarray,
            h: np.ndarray, res: pd.DataFrame, plans: Callable[[np.ndarray, np.ndarray], pd.DataFrame]) -> pd.DataFrame:
    """Refine the brackets found on the grid, then the answer table (:func:`solve_targets`)."""
    from .roots import first_bracket, solve_rows

    n, m = grid.shape
    k, found = first_bracket(grid, h, base)
    idx = np.flatnonzero(found)
    answer = np.full(n, np.nan)
    spec = uncertain_field(field)
    if len(idx):
        kk = k[idx]

        def g(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
            return _margin(plans(x, idx[rows]), goal, value)

        answer[idx] = solve_rows(g, grid[idx, kk], grid[idx, kk + 1], h[idx, kk], h[idx, kk + 1],
                                 ftol=1e-9 * abs(value), integer=spec.integer)
    best = np.where(np.isnan(h).all(axis=1), 0, np.nanargmax(np.where(np.isnan(h), -np.inf, h), axis=1))
    at = np.where(found, np.nan, grid[np.arange(n), best])
    at_rows = res.iloc[np.arange(n) * m + best].reset_index(drop=True)
    done = plans(np.where(found, answer, at), np.arange(n)) if n else at_rows
    column, direction = GOALS[goal]
    achieved = done[column].to_numpy(dtype=float) if column in done.columns else np.full(n, np.nan)
    why = [_why(field, goal, value, bool(found[i]), answer[i], at[i], done.iloc[i], grid[i]) for i in range(n)]
    out = pd.DataFrame({field: answer, "goal": goal, "target": value, "reachable": found, "achieved": achieved,
                        "base": base, "why": why}, index=table.index)
    return out


def _why(field: str, goal: str, value: float, found: bool, answer: float, at: float, row: pd.Series,
         grid: np.ndarray) -> str:
    """The answer in words; when unreachable, what bounds the goal at the best value searched."""
    column = GOALS[goal][0]
    if found:
        return f"{field} = {answer:,.6g} reaches {goal} = {value:g}"
    if row.get("status") != "ok":
        return f"not reachable by {field} alone: the plan is refused over the range searched ({row.get('error')})"
    head = (f"not reachable by {field} alone: the best over {field} in [{np.nanmin(grid):,.6g}, "
            f"{np.nanmax(grid):,.6g}] is {goal} = {float(row[column]):.6g} at {field} = {at:,.6g}, because ")
    wall = float(row["wall_h"])
    if goal == "goodput":
        shares = sorted(((k, float(row[f"{k}_h"]) / wall) for k in ("restart", "rework", "save")), key=lambda t: -t[1])
        parts = ", ".join(f"{k}s take {v:.1%}" if k != "rework" else f"rework takes {v:.1%}" for k, v in shares)
        return head + f"there {parts} of the wall time, which this lever does not remove"
    if goal == "p_finish":
        return head + (f"the job still needs {wall:,.1f} wall hours on average (P50 "
                       f"{float(row.get('wall_h_p50', np.nan)):,.1f} h) against a deadline of "
                       f"{float(row['deadline_h']):,.1f} h")
    return head + (f"goodput is only {float(row['goodput']):.1%} there: the list price "
                   f"{float(row['price_per_gpu_hour']):g} per GPU-hour / goodput, plus storage and spares, stays "
                   f"above {value:g}")


def target(scenario: Any, setup: Any, field: str, goal: str, value: float) -> pd.Series:
    """:func:`solve_targets` for one plan (a scenario with its storage and recovery setup): one row, the
    answer under the field's name. The lever's base is the plan's own value (a derived stall or restart:
    the derived one)."""
    from .sensitivity import variant_table, variants
    from .uncertainty import base_values

    uncertain_field(field)
    base = base_values(scenario, setup, [field]).get(field)
    if base is None:
        raise InputError(field, None, "has no value in the scenario to start from: give it one")
    table, options = variant_table(variants(scenario, setup)[0], {field: np.array([float(base)])}, 1)
    # the candidates derive from the validated scenario: only the lever's cells are checked at each candidate
    return solve_targets(table, field, goal, value, **options, scenarios=scenario).iloc[0]
