"""Batches of scenarios: every row answered or its problems named, per-row Monte Carlo and warnings.

:func:`engine.evaluate` is vectorised and strict: the first invalid row raises. A planner with a
spreadsheet of 5,000 scenarios, three of them mistyped, needs the other 4,997 answered and the three
named. This module gives that, on the plan pipeline every surface calls (:func:`.pipeline.plan_table`). Sweeps, streaming, the summary of a batch and tables completed
from a base scenario: :mod:`.sweep`. The engine reads and writes no file: scenario tables are read by
:mod:`ckptplan.files.tables`, results written by :mod:`ckptplan.files.results` (CSV, Parquet) and
:mod:`ckptplan.workbook.results` (any kind, .xlsx included).

Evaluating a table (:func:`evaluate_rows`)
------------------------------------------
* Every input row gives exactly one output row, in the same order, with the same index (a table
  read by :func:`ckptplan.files.tables.read_scenarios` is indexed by ``row``, the 1-based data row
  of the file). Three columns lead: ``status`` (``"ok"`` or ``"error"``), ``error`` (``""`` when
  ok; else every problem of the row, ``"; "``-separated, each naming the field, the value and the
  rule, in the engine's form: ``checkpoint_stall_min=-1.0: must be >= 0``) and ``warnings`` (on
  ok rows, every reason the answer leaves its model's range, :func:`engine.validity.warnings_text`;
  ``""`` when none and on error rows). Bad rows never stop the batch and are never dropped.
* The rules are those of :func:`engine.scenario.validate_table` (per-field rules from
  :data:`engine.scenario.FIELDS`, then: each row needs ``node_mtbf_h`` or ``job_mtbf_h``; a save is
  never free; a chosen interval leaves time for the background write; domains come in pairs).
  They are checked with one vectorised mask per rule, then all valid rows go through ONE
  :func:`engine.evaluate` call. Should the engine still refuse that sub-table (a rule added to the
  engine later, or an overflow), the rows it refuses are isolated by bisection and marked, so the
  engine stays the authority and a new engine rule can never crash a batch.
* Problems with the table itself raise :class:`~engine.errors.InputError` (a ``ValueError``) and
  nothing is evaluated: missing required columns (all of them named at once; complete the table
  from a base scenario first, :func:`.sweep.fill_from_template`), a domain column without its pair,
  a duplicate column, and (unless ``extra_columns="keep"``) columns that are no scenario field: a
  misspelt ``restart_mins`` would otherwise be ignored silently and every row would use the default.
* Output columns: ``status``, ``error``, ``warnings``, the input columns exactly as given (blanks
  stay blank, defaults are applied inside the engine, not written back), then every derived column
  of :func:`engine.evaluate` (``job_mtbf_h`` is both: the override when given, else the derived
  value), NaN on error rows. An input column keeps its type: integer columns (int64 or pandas'
  ``Int64``) come out as ``Int64``, float columns as float64, whatever the file held: a cell that
  is no number (text such as ``2 min``, a formula the reader refused, a boolean) is blank there and
  quoted in the row's ``error``, so the column stays numeric in every output. The whole-number
  derived columns (``gpus``, ``deadline_seed``, ``mc_runs``: :data:`.columns.INTEGER_RESULT_COLUMNS`) are
  ``Int64``. Units are in the names (``_min`` minutes, ``_h`` hours, ``_gpu_hours``, ``_cost``
  money in the row's ``currency``, fractions in [0, 1]).

Deadline columns (Monte Carlo, only when ``deadline=True``)
-----------------------------------------------------------
For every row that evaluated, :func:`engine.deadline.simulate` runs the finite job at the chosen
interval (``runs`` runs). Each row gets its own seed, ``deadline_seed``, derived from the base
``seed`` and a hash of what the simulation uses (:func:`scenario_seeds`): the stall, the async
write and slowdown, the restart time, the job MTBF the row uses, the useful hours, the chosen
interval, the failure law and ``final_save``. Price, currency, name, GPUs, ``runs_per_month`` and
``deadline_h`` do not enter, so rows that differ only in them simulate identical schedules; a
row's answer does not depend on which other rows are in the batch, on their order, on chunking or
on Dask partitions, and ``engine.deadline.deadline_report(scenario, runs=runs, seed=deadline_seed)``
reproduces it. Columns (hours, GPU-hours, money): ``deadline_seed``, ``mc_runs``, ``p_finish``
(+ ``_low``/``_high``, 95 % Wilson interval; NaN when the row has no ``deadline_h``),
``mc_wall_h_mean`` (+ ``_se``), ``mc_wall_h_p50/p90/p99``, ``mc_failures_mean``,
``mc_gpu_hours_mean/p90``, ``mc_cost_mean/p90``. A row the simulator refuses (``deadline_h <
useful_training_h``; failures so frequent that a run would need more than 10^4 restarts; a failure rate
that changes over the run, failure phases or ``weibull_shape_from_start`` below 1, whose deadline answer
is the schedule's own simulated ``p_finish_by_deadline``) becomes an ``error`` row; its closed-form
columns, which are valid, are kept.

Recovery strategies and capacity policies (``strategies=True``, ``capacity=True``)
--------------------------------------------------------------------------------
Each row's four recovery strategies (:mod:`.batch_strategies`) and, for a row on preemptible capacity with a
deadline, its three capacity policies (all on-demand, all spot, spot with an on-demand fallback:
:mod:`.batch_capacity`), each as ``ckptplan compare`` prices the row's scenario.

Large tables on Dask
--------------------
:func:`evaluate_rows` given a ``dask.dataframe.DataFrame`` returns one, built with
``map_partitions`` over the very same function (dask itself is never imported here).
:func:`.sweep.iter_results` streams it partition by partition, in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Hashable, Iterable, Mapping, Optional, Union

import numpy as np
import pandas as pd

from . import montecarlo as _mc
from .batch_mc import MONTE_CARLO_COLUMNS, check_mc_options, monte_carlo_columns, row_seeds
from .columns import TEXT_DTYPE, column_kind, int_series, integer_typed, is_dask, is_integer_column, real_numbers, text_series
from .errors import InputError
from .fields import DEFAULT_RUNS, DEFAULT_SEED, SETUP_FIELD_BY_NAME
from .pipeline import (SETUP_RESULT_COLUMNS, fill_from_setup, is_extra_column, plan_table, validate_cells)
from .scenario import RowProblems, Scenario, derived_columns, to_table
from .spot import CAPACITY_RUNS, CAPACITY_SEED
from .uncertainty import range_column
from .validity import CHECKS

__all__ = ["MONTE_CARLO_COLUMNS", "RANKING_METRIC", "STATUS_ERROR", "STATUS_OK", "evaluate_rows", "scenario_seeds"]

STATUS_OK = "ok"
STATUS_ERROR = "error"
#: the figure the summary ranks scenarios by: total cost / useful GPU-hours (money per useful GPU-hour)
RANKING_METRIC = "cost_per_useful_gpu_hour"


# ===================================================================================== the table

# ==================================================================================== evaluation

def _row_warnings(n: int, eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray],
                  positions: np.ndarray) -> np.ndarray:
    """:func:`engine.validity.warnings_text` of the rows at ``positions`` ("" elsewhere).

    The checks' masks are computed once over all rows; the text (the reasons of the checks that fire,
    "; "-joined, as :func:`engine.validity.warnings_text`) is built once per distinct set of checks (a
    batch of 10^6 rows holds a handful of such sets).
    """
    out = np.full(n, "", dtype=object)
    if len(positions):
        cols = {**{k: v[positions] for k, v in eff.items()}, **{k: v[positions] for k, v in res.items()}}
        cols.setdefault("stall_derived", np.zeros(len(positions)))   # no setup columns: every stall is stated
        with np.errstate(invalid="ignore"):
            masks = np.column_stack([np.broadcast_to(np.asarray(c.test(cols), dtype=bool), (len(positions),))
                                     for c in CHECKS])
        codes = masks.astype(np.int64) @ (np.int64(1) << np.arange(len(CHECKS), dtype=np.int64))
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        texts = ["; ".join(c.reason for c, hit in zip(CHECKS, masks[i]) if hit) for i in first.tolist()]
        out[positions] = np.array(texts, dtype=object)[inverse.reshape(-1)]
    return out


def _number_output(name: str, raw: pd.Series, vals: np.ndarray, bad: Optional[np.ndarray]) -> pd.Series:
    """An input number column as the results give it back: numbers in their own type on every row.

    A cell that holds no number (text such as ``2 min``, a formula, a boolean) is blank here: its text is
    in the row's ``error`` (``checkpoint_stall_min='2 min': must be a number``), so one bad cell never turns
    the whole column into text in a CSV, XLSX or Parquet output. Whole-number fields stay whole numbers.
    """
    if bad is not None and bad.any():
        vals = np.where(bad, np.nan, vals)
    if raw.dtype.kind in "iu" or (raw.dtype.kind == "O" and is_integer_column(name)):  # whole numbers stay whole
        return integer_typed(pd.Series(vals, index=raw.index, name=name))
    if not vals.flags.writeable:  # a read-only view of the input: the results must be editable
        vals = vals.copy()
    return pd.Series(np.asarray(vals, dtype=np.float64), index=raw.index, copy=False)


def evaluate_rows(table: Any, *, deadline: bool = False, runs: int = DEFAULT_RUNS, seed: int = DEFAULT_SEED,
                  failures: Union[str, "_mc.FailureLaw"] = "exponential", final_save: bool = False,
                  extra_columns: str = "error",
                  cell_errors: Optional[Mapping[tuple[Hashable, str], str]] = None,
                  tiers: Any = None, failure_classes: Any = None, strategies: bool = False, capacity: bool = False,
                  capacity_runs: int = CAPACITY_RUNS, capacity_seed: int = CAPACITY_SEED, scenarios: Any = None) -> Any:
    """Evaluate every row of a scenario table; bad rows become ``status="error"`` rows, never exceptions.

    ``table``: a pandas DataFrame (see the module notes for its columns), a :class:`Scenario` or an
    iterable of them, or a ``dask.dataframe.DataFrame`` (then a lazy dask DataFrame is returned,
    ``map_partitions`` over this same function: results are identical to the in-process path).

    ``deadline``: also run the Monte Carlo of :mod:`engine.deadline` for every valid row (``runs``
    runs each, exponential ``failures`` unless a :class:`engine.deadline.FailureLaw` is given,
    ``final_save`` as there), seeded per row from ``seed`` (:func:`scenario_seeds`). Costs about
    ``runs`` x failures-per-run of work per row: 10^4 runs of the seed case take ~20 ms.

    Cells: numbers; numbers written as text (``" 1.5 "``, as CSV, Excel and Dask's string
    conversion hold them) count as numbers; blank, ``None``/NaN and the words ``NA``, ``N/A``,
    ``null``, ``none`` mean "not given" (the field's default, or "is required"); any other
    text, booleans and dates are row errors (``must be a number``, quoting the cell), blank in the output.

    ``strategies``: also each valid row's four recovery strategies as ``ckptplan compare`` prices them
    (:mod:`engine.batch_strategies`).

    ``capacity``: also each spot row's three capacity policies with a deadline, as ``ckptplan compare`` prices them
    (:mod:`engine.batch_capacity`), ``capacity_runs`` runs each, seed ``capacity_seed`` (by default compare's).

    ``scenarios``: the validated :class:`Scenario` records the rows derive from (one, or one per row; default: the
    Scenarios given as ``table``): checked where they differ, not validated again (:func:`engine.pipeline.changed_cells`).

    ``extra_columns``: ``"error"`` (default) refuses columns that are no scenario field; ``"keep"``
    carries them through unchanged and unevaluated. ``cell_errors``: ``{(row label, column): message}``
    of cells a reader already refused (e.g. formulas in an .xlsx); defaults to
    ``table.attrs["cell_errors"]`` as set by :func:`ckptplan.files.tables.read_scenarios`.

    ``tiers`` and ``failure_classes``: a checkpoint tier design (``[[tiers]]`` tables and class ->
    share, as in a scenario file) that every row follows: each row is planned as
    :func:`engine.setup.plan_setup` plans a tiered scenario (:mod:`engine.tiers.table`; a tier's
    times derived from the row's own checkpoint size and writers where the tier gives bandwidths).
    The single-level columns that describe a plan the job does not follow (Young's, Daly's and the
    exact single-level intervals and wastes, ``effective_stall_min``, the analytic deadline figures)
    are left out; the plan's columns hold the tiered figures (``chosen_interval_min`` is the first
    tier's interval); ``mean_restart_min``, ``failed_restores``, ``rollbacks_to_start`` and per tier ``tier{i}_name`` and
    :data:`engine.tiers.table.TIER_COLUMNS` are added; with ``deadline`` the Monte Carlo is the tiered
    one (:func:`engine.montecarlo_tiers.simulate_tiers`, exponential failures only).

    Returns a DataFrame with the table's index: ``status``, ``error``, ``warnings``, the input
    columns, the derived columns of :func:`engine.evaluate`, and with ``deadline`` the
    :data:`MONTE_CARLO_COLUMNS`. Raises :class:`InputError` only for problems of the whole table
    (missing required columns, unknown columns, half a domain's columns, duplicate header, bad
    ``runs``/``seed``, a bad tier design).
    """
    design = _tier_design(tiers, failure_classes)
    if capacity:
        capacity_runs, capacity_seed = _checked_capacity_options(capacity_runs, capacity_seed, design)
    if deadline:
        runs, seed, failures = _checked_mc_options(runs, seed, failures, design)
    table, scenarios = _as_table(table, scenarios)
    if is_dask(table):
        kwargs = dict(deadline=deadline, runs=runs, seed=seed, failures=failures, final_save=final_save,
                      extra_columns=extra_columns, cell_errors=dict(cell_errors or {}), tiers=tiers,
                      failure_classes=failure_classes, strategies=strategies, capacity=capacity,
                      capacity_runs=capacity_runs, capacity_seed=capacity_seed)
        meta = evaluate_rows(table._meta, **kwargs)
        return table.map_partitions(evaluate_rows, meta=meta, **kwargs)
    given_table = table                              # the rows as given: what the strategies plan from
    planned = plan_table(table, designs=() if design is None else (design,), extra_columns=extra_columns,
                         ranged=range_column, scenarios=scenarios,
                         cell_errors=table.attrs.get("cell_errors", {}) if cell_errors is None else cell_errors)
    table, given, eff, res, problems = planned.table, planned.given, planned.eff, planned.res, planned.problems
    mc = None
    if deadline:
        evaluated = np.flatnonzero(~problems.mask())
        mc = monte_carlo_columns(len(table), eff, res, evaluated, runs, seed, failures, final_save, problems, design)
    if strategies:   # engine.batch_strategies: the rows as given, planned as compare plans a file
        mc = {**(mc or {}), **_strategies(given_table, problems, tiers, failure_classes)}
    if capacity:     # engine.batch_capacity: as compare prices each row's scenario
        mc = {**(mc or {}), **_capacity(eff, res, problems, capacity_runs, capacity_seed)}
    return _results(table, given, eff, res, planned.bad_cells, problems, design, planned.setup is not None, mc)


def _tier_design(tiers: Any, failure_classes: Any) -> Any:
    """The batch's tier design (:func:`engine.tiers.table.tier_design`), None without one."""
    if tiers is None and failure_classes is None:
        return None
    from .tiers.table import tier_design

    return tier_design(tiers, failure_classes)


def _checked_mc_options(runs: Any, seed: Any, failures: Any, design: Any) -> tuple[int, int, Any]:
    """:func:`check_mc_options`, and a tier design's Monte Carlo refusing a failure law other than exponential."""
    runs, seed, failures = check_mc_options(runs, seed, failures)
    if design is not None and isinstance(failures, _mc.FailureLaw) and failures.kind != "exponential":
        raise InputError("failures", getattr(failures, "kind", failures), "the tiered Monte Carlo draws "
                         "exponential (Poisson) failures only: drop the failure law (--weibull-shape) or the tiers")
    return runs, seed, failures


def _checked_capacity_options(runs: Any, seed: Any, design: Any) -> tuple[int, int]:
    """The capacity comparison's runs and seed checked as the Monte Carlo's, and a tier design refused."""
    from .batch_capacity import refuse_capacity_design

    refuse_capacity_design(design)
    runs, seed, _ = check_mc_options(runs, seed, "exponential")
    return runs, seed


def _capacity(eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], problems: RowProblems, runs: int,
              seed: int) -> dict[str, Any]:
    """The capacity policies of the rows that evaluated (:func:`engine.batch_capacity.capacity_columns`)."""
    from .batch_capacity import capacity_columns

    return capacity_columns(eff, res, np.flatnonzero(~problems.mask()), problems, runs, seed)


def _strategies(table: pd.DataFrame, problems: RowProblems, tiers: Any, failure_classes: Any) -> dict[str, Any]:
    """The recovery strategies of the rows that evaluated (:func:`engine.batch_strategies.strategy_columns`)."""
    from .batch_strategies import strategy_columns

    return strategy_columns(table, np.flatnonzero(~problems.mask()), problems, tiers, failure_classes)


def _as_table(table: Any, scenarios: Any = None) -> tuple[pd.DataFrame, Any]:
    """The scenarios as a DataFrame (a table as it is, a :class:`Scenario` or an iterable of them as
    :func:`engine.to_table` lays them out), and the validated records its rows derive from (``scenarios``, else
    the Scenarios given as the table; None for a table). A dask DataFrame as it is (its partitions are tables)."""
    if is_dask(table):
        if scenarios is not None:
            raise InputError("scenarios", type(scenarios).__name__, "only with a pandas table")
        return table, None
    if isinstance(table, Scenario):
        return to_table([table]), table if scenarios is None else scenarios
    if isinstance(table, pd.DataFrame):
        return table, scenarios
    if isinstance(table, (str, bytes, Path)) or not isinstance(table, Iterable):
        raise InputError("table", type(table).__name__, "must be a pandas or dask DataFrame, or Scenarios")
    table = list(table)
    if scenarios is None and table and all(isinstance(sc, Scenario) for sc in table):
        scenarios = table
    return to_table(table), scenarios


def _results(table: pd.DataFrame, given: Mapping[str, np.ndarray], eff: Mapping[str, np.ndarray],
             res: Mapping[str, np.ndarray], bad_cells: Mapping[str, np.ndarray], problems: RowProblems, design: Any,
             with_setup: bool, mc: Optional[Mapping[str, np.ndarray]]) -> pd.DataFrame:
    """The output table (module notes): status, error and warnings, the input columns, the plan's columns
    (with a tier design each tier's name and columns), the setup's and the Monte Carlo's."""
    out = {**_lead_columns(table.index, eff, res, problems), **_input_columns(table, given, res, bad_cells)}
    plan_out = list(derived_columns()) + [c for c in res if is_extra_column(c)]
    if design is not None:
        from .tiers.table import SINGLE_LEVEL_ONLY, TIER_COLUMNS

        plan_out = [c for c in plan_out if c not in SINGLE_LEVEL_ONLY] + ["mean_restart_min", "failed_restores",
                                                                          "rollbacks_to_start"]
        for i, name in enumerate(design.names):
            out[f"tier{i + 1}_name"] = pd.Series(np.full(len(table), name, dtype=object), index=table.index,
                                                 dtype=TEXT_DTYPE)
            plan_out += [f"tier{i + 1}_{c}" for c in TIER_COLUMNS]
    setup_out: list[str] = []
    if with_setup:
        setup_out = [c for c in SETUP_RESULT_COLUMNS if c in res]
    extra = {c: mc[c] for c in MONTE_CARLO_COLUMNS if c in mc} if mc is not None else {}
    if mc is not None and "cheapest_strategy" in mc:
        from .batch_strategies import STRATEGY_COLUMNS

        extra.update({c: mc[c] for c in STRATEGY_COLUMNS[:-1]})
        extra["cheapest_strategy"] = pd.Series(mc["cheapest_strategy"], index=table.index, dtype=TEXT_DTYPE)
    if mc is not None and "capacity_note" in mc:
        from .batch_capacity import CAPACITY_NUMBER_COLUMNS
        from .fields import CAPACITY_TEXT_FIELDS

        extra.update({c: mc[c] for c in CAPACITY_NUMBER_COLUMNS})
        extra.update({c: pd.Series(mc[c], index=table.index, dtype=TEXT_DTYPE) for c in CAPACITY_TEXT_FIELDS})
    for c, values in [*((c, res[c]) for c in plan_out + setup_out if c not in out), *extra.items()]:
        out[c] = int_series(values, table.index) if is_integer_column(c) else pd.Series(values, index=table.index,
                                                                                          copy=False)
    frame = pd.DataFrame(out, index=table.index, copy=False)
    # the strategies' 53 columns as one block each would fragment the frame (pandas warns on any later insert)
    return frame.copy() if mc is not None and ("cheapest_strategy" in mc or "capacity_note" in mc) else frame


def _lead_columns(index: pd.Index, eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray],
                  problems: RowProblems) -> dict[str, pd.Series]:
    """``status``, ``error`` (every problem of the row) and ``warnings`` (on ok rows) of every row."""
    n = len(index)
    bad = problems.mask()
    errors = np.full(n, "", dtype=object)
    for p, msgs in problems.by_row.items():
        errors[p] = "; ".join(map(str, msgs))
    return {
        "status": pd.Series(np.where(bad, STATUS_ERROR, STATUS_OK), index=index, dtype=TEXT_DTYPE),
        "error": pd.Series(errors, index=index, dtype=TEXT_DTYPE),
        "warnings": pd.Series(_row_warnings(n, eff, res, np.flatnonzero(~bad)), index=index, dtype=TEXT_DTYPE),
    }


def _input_columns(table: pd.DataFrame, given: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray],
                   bad_cells: Mapping[str, np.ndarray]) -> dict[str, pd.Series]:
    """The input columns as the results give them back: numbers in their own type (``job_mtbf_h`` the one each
    row used; a bad cell blank, its text in the error), text as text, other columns unchanged."""
    out: dict[str, pd.Series] = {}
    for c in table.columns:
        kind = column_kind(c)
        if kind == "number" and c not in given:  # a setup column: its cells as numbers (checked by the setup)
            out[c] = _number_output(c, table[c], real_numbers(table[c]), None)
        elif kind == "number":
            vals = given[c]
            if c == "job_mtbf_h":
                vals = np.where(np.isnan(res["job_mtbf_h"]), vals, res["job_mtbf_h"])
            out[c] = _number_output(c, table[c], vals, bad_cells.get(c))
        elif kind == "text":
            out[c] = text_series(table[c])
        else:
            out[c] = table[c]
    return out


# ========================================================================== Monte Carlo seeds

def scenario_seeds(table: Any, seed: int = DEFAULT_SEED, failures: Union[str, "_mc.FailureLaw"] = "exponential",
                   final_save: bool = False, tiers: Any = None, failure_classes: Any = None) -> np.ndarray:
    """The per-row Monte Carlo seed :func:`evaluate_rows` uses (``deadline_seed``), for every row.

    ``SeedSequence([seed, blake2b-128(x)])`` -> a 49-bit integer, where ``x`` is what the row's
    simulation uses: ``checkpoint_stall_min``, ``async_write_min``, ``async_slowdown_fraction``,
    ``restart_min`` (defaults applied), the job MTBF the row uses (the override, else derived from
    nodes, node MTBF, non-fatal share and domains), ``useful_training_h`` and the chosen interval
    (float64, fixed order), plus the failure law and ``final_save``. Price, currency, name, text,
    GPUs, ``runs_per_month``, ``deadline_h``, other rows, the row's position and the number of runs
    do not enter: rows that simulate the same job get the same seed. Invalid rows get -1. The stall,
    write and restart are the ones the row's setup columns fill in; with a tier design (``tiers``,
    ``failure_classes``) the restart is the one without the load and each tier's times and the
    design itself enter too.
    """
    from .tiers.table import tier_design

    check_mc_options(2, seed, failures)
    design = tier_design(tiers, failure_classes) if tiers is not None or failure_classes is not None else None
    results = evaluate_rows(table, extra_columns="keep", tiers=tiers, failure_classes=failure_classes)
    table = table if isinstance(table, pd.DataFrame) else to_table([table] if isinstance(table, Scenario) else table)
    cell_errors = table.attrs.get("cell_errors", {})
    info = None
    if design is not None or any(c in SETUP_FIELD_BY_NAME for c in table.columns):
        table, _, info = fill_from_setup(table, () if design is None else (design,))
    _, eff, _, _ = validate_cells(table, cell_errors)
    taken = ("job_mtbf_h", "chosen_interval_min") + (tuple(
        f"tier{i + 1}_{k}" for i in range(len(design.tiers)) for k in ("checkpoint_stall_min", "restore_min"))
        if design is not None else ())
    sim = {**eff, **{c: results[c].to_numpy(dtype=float) for c in taken}}
    if design is not None:
        other = info["restart_other_min"]
        sim["restart_other_min"] = np.where(np.isnan(other), eff["restart_min"], other)
    out = np.full(len(results), -1, dtype=np.int64)
    good = np.flatnonzero(results["status"].to_numpy(dtype=object) == STATUS_OK)
    out[good] = row_seeds(sim, good, int(seed), failures, final_save, design)
    return out
