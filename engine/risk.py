"""P10 / P50 / P90 in money: input uncertainty and failure randomness together.

A plan's wall time is random twice over: the failures of one run (given the inputs), and the inputs
themselves (the node MTBF, restart, bandwidth and price are estimates; :mod:`engine.uncertainty`).
:func:`risk_percentiles` combines both by a Monte Carlo over the inputs that uses, inside, the
analytic distribution of one run's wall time (:func:`engine.wall_distribution.wall_time_quantile`):

1. draw ``draws`` input vectors, each input independently by its inverse CDF (the same draws for the
   baseline and every design: each design is judged in the same worlds);
2. plan every draw in one batch per tier design (:func:`engine.sensitivity.evaluate_variants`: the
   derived stall and restart follow the drawn bandwidth, spares ...);
3. draw one run's wall time per input draw, ``wall = Q(v)`` with ``v ~ U(0, 1)`` and ``Q`` the draw's
   analytic wall-time quantile (translated gamma over the exact moments of the finite job,
   exponential failures, no final save: the model of ``p_finish_by_deadline``). A mixture sampled
   this way is exact up to that approximation: no inner simulation, so 10^5 draws take about a second;
4. money follows the wall time: every part of ``total_cost`` (compute, spares, storage per month)
   is proportional to the wall hours for fixed inputs, so a run costs ``wall x total_cost / wall_h``
   of its draw (the expected plan's cost per wall hour);
5. percentiles (any P) of total cost, wall hours and finish date (start + wall hours), the mean,
   and P(the design costs less than the baseline) over paired input draws, the failure randomness
   of the two plans drawn independently (two runs of the same job are not the same run).

The check (``tests/test_risk.py``) samples both layers run by run, independently of this module: the
inputs with numpy's own samplers, then one run per draw simulated failure by failure in the test (the
plan of the draw, its interval, stall and restart, from the engine's planner); it holds the two within
their sampling error on three scenarios.

Limits: a tiered plan's wall time has no analytic distribution here (its P(finish) is simulated):
for it only the input uncertainty enters (each draw at its expected wall time), and the answer says
so. Inputs vary independently; correlated inputs (a cheaper store that is also slower) are not
modelled.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .errors import InputError
from .fields import DEFAULT_SEED
from .uncertainty import UncertainInput

__all__ = ["DEFAULT_DRAWS", "RISK_FIGURES", "draw_inputs", "risk_percentiles", "run_figures"]

#: input draws when none is given (P10/P90 to about 0.5 percentage point of probability)
DEFAULT_DRAWS = 20_000
#: the figures whose percentiles are reported (finish date = start + wall hours)
RISK_FIGURES = ("total_cost", "wall_h")


def draw_inputs(inputs: Sequence[UncertainInput], draws: int, seed: int = DEFAULT_SEED) -> dict[str, np.ndarray]:
    """``draws`` independent draws of every input (inverse CDF of uniforms from one seeded generator)."""
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 2:
        raise InputError("draws", draws, "must be a whole number >= 2")
    rng = np.random.default_rng(seed)
    u = rng.random((draws, len(inputs)))
    return {x.field: x.quantile(np.clip(u[:, j], 1e-12, 1 - 1e-12)) for j, x in enumerate(inputs)}


def _finite_job(res: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each planned row's finite-job arguments (minutes): work, T, C, M, R, W, s."""
    nan = np.full(len(res), np.nan)   # a column the table does not give (an optional input): not given
    col = {c: res[c].to_numpy(dtype=float) if c in res.columns else nan for c in ("useful_training_h", "chosen_interval_min", "checkpoint_stall_min",
                                                       "job_mtbf_h", "restart_min", "async_write_min",
                                                       "async_slowdown_fraction")}
    return {"work": col["useful_training_h"] * 60.0, "T": col["chosen_interval_min"], "C": col["checkpoint_stall_min"],
            "M": col["job_mtbf_h"] * 60.0, "R": np.nan_to_num(col["restart_min"]),   # blank: the default, 0
            "W": np.nan_to_num(col["async_write_min"]),
            "slowdown": np.nan_to_num(col["async_slowdown_fraction"])}


def run_figures(res: pd.DataFrame, v: np.ndarray, tiered: bool) -> dict[str, np.ndarray]:
    """One run's wall hours and total cost per planned row, the run drawn at uniform ``v`` (module notes, 3-4);
    a tiered plan's rows at their expected wall hours."""
    from .wall_distribution import wall_time_quantile

    wall_h = res["wall_h"].to_numpy(dtype=float)
    per_wall_h = res["total_cost"].to_numpy(dtype=float) / wall_h
    if not tiered:
        j = _finite_job(res)
        wall_h = np.asarray(wall_time_quantile(np.clip(v, 1e-12, 1 - 1e-12), j["work"], j["T"], j["C"], j["M"],
                                               j["R"], j["W"], j["slowdown"])) / 60.0
    return {"wall_h": wall_h, "total_cost": wall_h * per_wall_h}


def risk_percentiles(scenario: Any, setup: Any = None, designs: Sequence[Any] = (),
                     inputs: Sequence[UncertainInput] = (), draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
                     probabilities: Sequence[float] = (0.1, 0.5, 0.9)) -> pd.DataFrame:
    """Percentiles of total cost and wall hours of the baseline and each design under input uncertainty and
    failure randomness (module notes). One row per plan: ``plan``, ``mean_total_cost``, ``total_cost_p10``
    ... (one column per probability), ``mean_wall_h``, ``wall_h_p10`` ..., ``p_beats_baseline`` (NaN for
    the baseline), ``p_finish_by_deadline`` (the share of runs within ``deadline_h``, NaN without one),
    ``failure_randomness`` (False for a tiered plan: inputs only) and ``draws``."""
    from .sensitivity import evaluate_variants, variants

    probs = np.asarray(probabilities, dtype=float)
    if probs.size == 0 or not ((probs > 0) & (probs < 1)).all():
        raise InputError("probabilities", list(probabilities), "each must be in (0, 1)")
    plans = variants(scenario, setup, designs)
    values = draw_inputs(inputs, draws, seed)
    results = evaluate_variants([(p, values) for p in plans])
    rng = np.random.default_rng([seed, 1])
    runs = []
    for p, res in zip(plans, results):
        runs.append(run_figures(res, rng.random(draws), bool(p.setup.tiers)))
    rows = []
    for p, res, run in zip(plans, results, runs):
        row: dict[str, Any] = {"plan": p.name}
        for fig in RISK_FIGURES:
            row[f"mean_{fig}"] = float(np.mean(run[fig]))
            for q, value in zip(probs, np.quantile(run[fig], probs)):
                row[f"{fig}_p{q * 100:g}"] = float(value)
        deadline = res["deadline_h"].to_numpy(dtype=float)
        row["p_finish_by_deadline"] = float(np.mean(run["wall_h"] <= deadline)) if not np.isnan(deadline).all() \
            else float("nan")
        row["p_beats_baseline"] = (float("nan") if p is plans[0]
                                   else float(np.mean(run["total_cost"] < runs[0]["total_cost"])))
        row["failure_randomness"] = not p.setup.tiers
        row["draws"] = int(draws)
        rows.append(row)
    return pd.DataFrame(rows)
