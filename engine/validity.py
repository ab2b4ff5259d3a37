"""When an answer leaves its model's range: one table of checks, each with a plain-language reason.

Every model here has a range where it means something (see each docstring). The checks below
flag an evaluated scenario that leaves it. Each is declared once: a numpy test over the columns of
:func:`ckptplan.engine.evaluate` (True = warn), the same condition as an Excel formula over the
workbook's defined names (``{name}``), and the reason a planner reads. The command line prints
them, ``--json`` carries them as ``warnings``, batch results get a ``warnings`` column, the Excel
functions return them and every sheet of the planning workbook shows them in a live flag cell.

Thresholds (module constants) are judgement calls, stated with each check:

* ``interval_at_or_above_mtbf``: the chosen interval ``T >= M``. Most segments then fail before
  they finish; every first-order argument (Young, Daly) assumes ``T << M``.
* ``failures_per_segment``: one failure or more expected per segment (the expected failures per
  run divided by the segments ``work/T``): the job spends its time redoing work.
* ``high_waste``: more than :data:`HIGH_WASTE` of the wall time is saves, rework and restarts.
* ``first_order_out_of_range``: Young's ``C << T << M`` fails: at Young's interval
  ``C/T = sqrt(C/2M)`` and ``T/M = sqrt(2C/M)``; above ``C_eff/M =`` :data:`YOUNG_MAX_RATIO`
  (``C/T`` = 10 %, ``T/M`` = 20 %) the first-order interval and waste are off by several percent:
  use the exact figures.
* ``async_write_sets_interval``: the async write ``W (1 - s)`` is longer than the optimum interval,
  so the interval was raised to it: the write, not the failures, sets the checkpoint rate.
* ``deadline_approximation``: the analytic P(finish by the deadline) and wall-time percentiles
  (:mod:`ckptplan.engine.wall_distribution`) are outside their stated validity range.
* ``stall_from_a_small_model``: a blocking stall under :data:`TINY_STALL_MIN` min (0.6 s) for a
  job of :data:`TINY_STALL_GPUS` GPUs or more: no real checkpoint of a model that needs that many
  GPUs saves that fast; the figure was probably measured on a small model (``ckptplan probe``).
  Not raised for a stall derived from the real checkpoint size and bandwidth (a ``stall_derived``
  column > 0, as :func:`engine.setup.plan_setup` and a batch with setup columns give it): that one
  was not measured at all. The workbook's Plan sheet states its stall, so its Excel form has no
  such cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from .fields import FIELD_BY_NAME

__all__ = ["CHECKS", "HIGH_WASTE", "TINY_STALL_GPUS", "TINY_STALL_MIN", "YOUNG_MAX_RATIO", "ValidityCheck",
           "model_warnings", "warnings_text"]

HIGH_WASTE = 0.5
YOUNG_MAX_RATIO = 0.02
TINY_STALL_MIN = 0.01
TINY_STALL_GPUS = 64


@dataclass(frozen=True)
class ValidityCheck:
    key: str
    test: Callable[[Mapping[str, np.ndarray]], np.ndarray]   # evaluate() columns -> bool mask (True = warn)
    excel: str                                               # the same condition in Excel; {name} = a reference
    reason: str                                              # what a planner reads

    def excel_condition(self, refs: Mapping[str, str]) -> str:
        return self.excel.format(**refs)


def _if_number(x: str, condition: str) -> str:
    """``condition`` only where ``x`` holds a number: guarded cells show a text when the model breaks,
    and Excel's AND would evaluate (and fail on) the arithmetic anyway."""
    return f"IF(ISNUMBER({x}),{condition},FALSE)"


def _trains_on(r: Mapping[str, np.ndarray]) -> np.ndarray:
    """Elastic rows whose failures mostly shrink the job without a rollback (engine.elastic): the two checks of
    failures against the interval speak of a job that rolls back at every failure (the workbook has none)."""
    keep = r.get("shrink_keeps_progress")
    return _elastic(r) & (np.asarray(1.0 if keep is None else keep) == 1)


def _elastic(r: Mapping[str, np.ndarray]) -> np.ndarray:
    """Rows planned elastic (a shrink expected; engine.elastic_table's columns, absent from other tables)."""
    shrinks = r.get("expected_shrinks")
    return np.asarray(False) if shrinks is None else np.asarray(shrinks) > 0


CHECKS: tuple[ValidityCheck, ...] = (
    ValidityCheck(
        "interval_at_or_above_mtbf",
        lambda r: (r["chosen_interval_min"] >= r["job_mtbf_h"] * 60.0) & ~_trains_on(r),
        "{chosen_interval_min}>={job_mtbf_min}",
        "the checkpoint interval is at least the job MTBF: most segments fail before they finish"),
    ValidityCheck(
        "failures_per_segment",
        lambda r: (r["expected_failures"] * r["chosen_interval_min"] >= r["useful_training_h"] * 60.0) & ~_trains_on(r),
        _if_number("{expected_failures}", "{expected_failures}*{chosen_interval_min}>={useful_training_h}*60"),
        "one failure or more is expected per segment: the job mostly redoes lost work"),
    ValidityCheck(
        "high_waste",
        lambda r: r["waste_fraction"] > HIGH_WASTE,
        _if_number("{waste_fraction}", f"{{waste_fraction}}>{HIGH_WASTE}"),
        f"more than {HIGH_WASTE:.0%} of the wall time is saves, rework and restarts"),
    ValidityCheck(
        "first_order_out_of_range",
        lambda r: r["effective_stall_min"] > YOUNG_MAX_RATIO * r["job_mtbf_h"] * 60.0,
        f"{{effective_stall_min}}>{YOUNG_MAX_RATIO}*{{job_mtbf_min}}",
        "the stall is not small against the job MTBF (C << T << M fails): Young's interval and the "
        "first-order waste are off; use the exact figures"),
    ValidityCheck(
        "async_write_sets_interval",
        lambda r: (r["async_write_min"] > 0)
        & (r["exact_interval_min"] <= r["async_write_min"] * (1.0 - r["async_slowdown_fraction"]) * (1 + 1e-12)),
        "AND({async_write_min}>0,{exact_interval_min}<={async_write_min}*(1-{async_slowdown_fraction})*(1+1E-12))",
        "the background write takes longer than the optimum interval: the interval was raised so that "
        "each write is durable before the next save"),
    ValidityCheck(
        "stall_from_a_small_model",
        lambda r: (r["checkpoint_stall_min"] + r["async_write_min"] < TINY_STALL_MIN) & (r["gpus"] >= TINY_STALL_GPUS)
        & ~(r["stall_derived"] > 0),
        f"AND({{checkpoint_stall_min}}+{{async_write_min}}<{TINY_STALL_MIN},{{gpus}}>={TINY_STALL_GPUS})",
        f"a save under {TINY_STALL_MIN * 60:g} s for a job of {TINY_STALL_GPUS}+ GPUs: was the stall measured on a "
        "small model (ckptplan probe)? Measure it on the real checkpoint size"),
    ValidityCheck(
        "deadline_approximation",
        lambda r: ~np.isnan(r["deadline_h"]) & (r["deadline_approximation_ok"] == 0) & ~_elastic(r),
        'IF({deadline_h}<>"",NOT({deadline_approximation_ok}),FALSE)',
        "the analytic deadline answer is outside its validity range (few failures, a skewed or stepped wall "
        "time): use the Monte Carlo (ckptplan deadline, the Deadline sheet)"),
)


def model_warnings(results: pd.DataFrame | Mapping[str, Any], keys: bool = False) -> list[list[str]]:
    """The reasons each evaluated row leaves its models' range (an empty list when none).

    ``results``: a table from :func:`ckptplan.engine.evaluate` (or a mapping of its columns).
    ``keys``: the checks' short keys (e.g. ``high_waste``) instead of the reasons, for table columns.
    """
    cols = {k: _column(results, k) for k in _needed()}
    n = len(next(iter(cols.values())))
    out: list[list[str]] = [[] for _ in range(n)]
    with np.errstate(invalid="ignore", over="ignore"):   # a product past the float range is inf: the test holds
        for check in CHECKS:
            for i in np.flatnonzero(np.broadcast_to(check.test(cols), (n,))):
                out[i].append(check.key if keys else check.reason)
    return out


def warnings_text(results: pd.DataFrame | Mapping[str, Any], keys: bool = False) -> list[str]:
    """:func:`model_warnings` joined per row with "; " ("" when none): for a table column or a cell."""
    return ["; ".join(w) for w in model_warnings(results, keys)]


def _needed() -> tuple[str, ...]:
    return ("chosen_interval_min", "job_mtbf_h", "expected_failures", "useful_training_h", "waste_fraction",
            "effective_stall_min", "async_write_min", "async_slowdown_fraction", "exact_interval_min",
            "checkpoint_stall_min", "gpus", "deadline_h", "deadline_approximation_ok", "stall_derived",
            "expected_shrinks", "shrink_keeps_progress")


def _column(results: Any, key: str) -> np.ndarray:
    """A column of the results; an input the table leaves out takes its registry default (NaN: not given)."""
    if key in getattr(results, "columns", results):
        return np.atleast_1d(np.asarray(results[key], dtype=np.float64))
    field = FIELD_BY_NAME.get(key)
    n = len(results) if isinstance(results, pd.DataFrame) else 1
    return np.full(n, np.nan if field is None or field.default is None else float(field.default))
