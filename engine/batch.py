"""Batches of scenarios: every row answered or its problems named, per-row Monte Carlo, a summary.

:func:`engine.evaluate` is vectorised and strict: the first invalid row raises. A planner with a
spreadsheet of 5,000 scenarios, three of them mistyped, needs the other 4,997 answered and the three
named. This module gives that. Sweeps and chunked streaming: :mod:`.sweep`. The engine reads and
writes no file: scenario tables are read by :mod:`ckptplan.files.tables`, results written by
:mod:`ckptplan.files.results` (CSV, Parquet) and :mod:`ckptplan.workbook.results` (any kind, .xlsx
included).

Evaluating a table (:func:`evaluate_rows`)
------------------------------------------
* Every input row gives exactly one output row, in the same order, with the same index. Two columns
  lead: ``status`` (``"ok"`` or ``"error"``) and ``error`` (``""`` when ok; else every problem of
  the row, ``"; "``-separated, each naming the field, the value and the rule, in the engine's form:
  ``checkpoint_stall_min=-1.0: must be >= 0``). Bad rows never stop the batch and are never dropped.
* The rules are those of :func:`engine.scenario.validate_table` (per-field rules from
  :data:`engine.scenario.FIELDS`, then: each row needs ``node_mtbf_h`` or ``job_mtbf_h``; a save is
  never free; a chosen interval leaves time for the background write; domains come in pairs).
  They are checked with one vectorised mask per rule, then all valid rows go through ONE
  :func:`engine.evaluate` call. Should the engine still refuse that sub-table (a rule added to the
  engine later, or an overflow), the rows it refuses are isolated by bisection and marked, so the
  engine stays the authority and a new engine rule can never crash a batch.
* Problems with the table itself raise :class:`~engine._inputs.InputError` (a ``ValueError``) and
  nothing is evaluated: a missing required column, a domain column without its pair, a duplicate
  column, and (unless ``extra_columns="keep"``) a column that is no scenario field: a misspelt
  ``restart_mins`` would otherwise be ignored silently and every row would use the default.
* Output columns: ``status``, ``error``, the input columns (numbers as float64, exactly as given:
  blanks stay blank, defaults are applied inside the engine, not written back; a cell that was text
  where a number belongs is blank here and quoted in ``error``), then every derived column of
  :func:`engine.evaluate` (``job_mtbf_h`` is both: the override when given, else the derived value),
  NaN on error rows. Units are in the names (``_min`` minutes, ``_h`` hours, ``_gpu_hours``,
  ``_cost`` money in the row's ``currency``, fractions in [0, 1]).

Deadline columns (Monte Carlo, only when ``deadline=True``)
-----------------------------------------------------------
For every row that evaluated, :func:`engine.deadline.simulate` runs the finite job at the chosen
interval (``runs`` runs). Each row gets its own seed, ``deadline_seed``, derived from the base
``seed`` and a hash of the row's numeric inputs (:func:`scenario_seeds`): a row's answer does not
depend on which other rows are in the batch, on their order, on chunking or on Dask partitions,
and ``engine.deadline.deadline_report(scenario, runs=runs, seed=deadline_seed)`` reproduces it.
Columns (hours, GPU-hours, money): ``deadline_seed``, ``mc_runs``, ``p_finish`` (+ ``_low``/``_high``,
95 % Wilson interval; NaN when the row has no ``deadline_h``), ``mc_wall_h_mean`` (+ ``_se``),
``mc_wall_h_p50/p90/p99``, ``mc_failures_mean``, ``mc_gpu_hours_mean/p90``, ``mc_cost_mean/p90``.
A row the simulator refuses (``deadline_h < useful_training_h``; failures so frequent that a run
would need more than 10^4 restarts) becomes an ``error`` row; its closed-form columns, which are
valid, are kept.

Large tables on Dask
--------------------
:func:`evaluate_rows` given a ``dask.dataframe.DataFrame`` returns one, built with
``map_partitions`` over the very same function (dask itself is never imported here).
:func:`.sweep.iter_results` streams it partition by partition, in order.
"""

from __future__ import annotations

import collections
import difflib
import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Hashable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import cost
from . import montecarlo as _mc
from ._inputs import InputError, as_float_array
from .fields import DEFAULT_RUNS, DEFAULT_SEED, FIELD_BY_NAME, FIELDS, TEXT_FIELDS
from .scenario import DOMAIN_COL as _DOMAIN_COL
from .scenario import RowProblems, Scenario, check_columns
from .scenario import domain_indices as _domain_indices
from .scenario import is_absent as _is_absent
from .scenario import is_number as _is_number
from .scenario import derived_columns, evaluate_each, table_problems, to_table

__all__ = [
    "STATUS_OK",
    "STATUS_ERROR",
    "RANKING_METRIC",
    "MONTE_CARLO_COLUMNS",
    "NA_WORDS",
    "TEXT_DTYPE",
    "BatchSummary",
    "evaluate_rows",
    "scenario_seeds",
    "summarize",
    "column_kind",
    "coerce_numeric_text",
    "text_values",
    "is_dask",
    "plain_value",
]

STATUS_OK = "ok"
STATUS_ERROR = "error"
#: the figure the summary ranks scenarios by: total cost / useful GPU-hours (money per useful GPU-hour)
RANKING_METRIC = "cost_per_useful_gpu_hour"
#: words a cell may hold to mean "not given" (case-insensitive), besides blank
NA_WORDS = ("nan", "na", "n/a", "null", "none")

MONTE_CARLO_COLUMNS = (
    "deadline_seed", "mc_runs", "p_finish", "p_finish_low", "p_finish_high", "mc_wall_h_mean",
    "mc_wall_h_mean_se", "mc_wall_h_p50", "mc_wall_h_p90", "mc_wall_h_p99", "mc_failures_mean",
    "mc_gpu_hours_mean", "mc_gpu_hours_p90", "mc_cost_mean", "mc_cost_p90",
)
_PANDAS3 = int(pd.__version__.split(".")[0]) >= 3
#: dtype of text columns in results: pandas' default string dtype on pandas 3 (missing = NaN)
TEXT_DTYPE: Any = "str" if _PANDAS3 else object


# ======================================================================================= columns

def column_kind(name: Any) -> Optional[str]:
    """'number', 'text' or None (not a scenario column)."""
    if not isinstance(name, str):
        return None
    if name in FIELD_BY_NAME:
        return "number"
    if name in TEXT_FIELDS:
        return "text"
    m = _DOMAIN_COL.match(name)
    if m:
        return "text" if m.group(2) == "name" else "number"
    return None


def _output_names() -> set[str]:
    return {"status", "error", *derived_columns(), *MONTE_CARLO_COLUMNS} - {"job_mtbf_h"}


def _check_columns(table: pd.DataFrame, extra_columns: str) -> list[str]:
    """File-level checks; returns the extra (non-scenario) columns to carry through."""
    if extra_columns not in ("error", "keep"):
        raise InputError("extra_columns", extra_columns, "must be 'error' or 'keep'")
    cols = list(table.columns)
    dup = [c for c, k in collections.Counter(cols).items() if k > 1]
    if dup:
        raise InputError("columns", dup[0], "appears more than once in the header")
    check_columns(table)
    extras = [c for c in cols if column_kind(c) is None]
    reserved = [c for c in extras if c in _output_names()]
    if reserved:
        raise InputError("columns", reserved[0], "is an output column: give the scenario table, not a results file")
    if extras and extra_columns == "error":
        c = extras[0]
        known = [f.name for f in FIELDS] + list(TEXT_FIELDS)
        close = difflib.get_close_matches(str(c), known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise InputError("columns", c, f"is not a scenario field{hint}; fields: {', '.join(known)}, domain{{i}}_name/"
                         "_mtbf_h/_nodes_per_domain. Pass extra_columns='keep' (--keep-extra) to carry it through")
    return extras


# ==================================================================================== validation

def _text_series(values: pd.Series) -> pd.Series:
    """The column as text (pandas' string dtype on pandas 3), missing as missing, numbers as their str."""
    if _PANDAS3 and (values.dtype == TEXT_DTYPE or values.dtype.kind == "O"):
        return values.astype(TEXT_DTYPE)
    return pd.Series(text_values(values), index=values.index, dtype=TEXT_DTYPE)


def text_values(values: pd.Series) -> np.ndarray:
    """Object array of str, None where absent (numbers written as text)."""
    obj = values.to_numpy(dtype=object, na_value=None) if values.dtype.kind != "O" else values.to_numpy(dtype=object)
    out = np.empty(len(obj), dtype=object)
    for i, v in enumerate(obj):
        out[i] = None if _is_absent(v) else (v if isinstance(v, str) else str(v))
    return out


def coerce_numeric_text(values: pd.Series) -> pd.Series:
    """Numbers stored as text -> float; blanks and NA words -> NaN; other text kept (a row error later)."""
    if values.dtype.kind in "iufb":
        return values
    obj = values.to_numpy(dtype=object)
    is_str = np.fromiter((isinstance(v, str) for v in obj), dtype=bool, count=len(obj))
    if not is_str.any():
        return values
    out = obj.copy()
    stripped = pd.Series(np.where(is_str, obj, ""), dtype=object).str.strip()
    absent = is_str & (stripped.eq("") | stripped.str.lower().isin(NA_WORDS)).to_numpy()
    parsed = pd.to_numeric(stripped.where(is_str & ~absent, None), errors="coerce").to_numpy(dtype=float)
    numeric = is_str & ~absent & ~np.isnan(parsed)
    out[absent] = np.nan
    out[numeric] = parsed[numeric]
    if not (is_str & ~absent & ~numeric).any() and all(_is_number(v) or _is_absent(v) for v in out[~is_str]):
        return pd.Series(out.astype(float), index=values.index, name=values.name)
    return pd.Series(out, index=values.index, name=values.name, dtype=object)


def _validate(table: pd.DataFrame, cell_errors: Mapping[tuple[Hashable, str], str]):
    """(given, effective, problems) of :func:`engine.scenario.table_problems`, all problems kept.

    Numbers written as text (CSV, Excel text cells) count as numbers here; cells the reader
    already refused (``cell_errors``: a formula, a quoted TOML number) are reported first and then
    treated as blank.
    """
    n = len(table)
    problems = RowProblems(n)
    flagged: dict[str, np.ndarray] = {}
    if cell_errors:
        index = table.index
        for (label, col), message in cell_errors.items():
            pos = index.get_indexer([label]) if index.is_unique else np.flatnonzero(index == label)
            for p in np.atleast_1d(pos):
                if p >= 0:
                    flagged.setdefault(col, np.zeros(n, dtype=bool))[p] = True
                    problems.add([p], lambda _p, m=message: m)
    numeric = table.copy(deep=False)
    for c in numeric.columns:
        if column_kind(c) == "number":
            numeric[c] = coerce_numeric_text(table[c])
    return table_problems(numeric, flagged, problems)


# ==================================================================================== evaluation

_ROW_PREFIX = re.compile(r"^row [^:]*: ")
_POSITION = re.compile(r"^([A-Za-z_][\w ]*)\[0\]=")


def _refusal_message(exc: ValueError) -> str:
    """The engine's message for a one-row table, without its "row 0: " and "[0]" (the output row is the row)."""
    return _POSITION.sub(r"\1=", _ROW_PREFIX.sub("", str(exc)), count=1)


def _check_mc_options(runs: Any, seed: Any, failures: Any) -> tuple[int, int, Any]:
    r = as_float_array("runs", runs, "count")
    if r.ndim or r < 2:
        raise InputError("runs", runs, "must be a single whole number >= 2")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError("seed", seed, "must be a whole number >= 0 (the base seed of every row's own seed)")
    if not (failures == "exponential" or isinstance(failures, _mc.FailureLaw)):
        raise InputError("failures", failures, "must be 'exponential' or an engine.deadline.FailureLaw")
    return int(r), int(seed), failures


def _canonical_rows(eff: Mapping[str, np.ndarray], domain_idx: Sequence[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Numeric inputs in a fixed order, -0.0 -> 0.0 and one NaN pattern, for hashing."""
    base = np.column_stack([eff[f.name] for f in FIELDS]).astype("<f8") + 0.0
    base[np.isnan(base)] = np.nan
    doms = []
    for i in domain_idx:
        d = np.column_stack([np.full(len(base), float(i)), eff[f"domain{i}_mtbf_h"],
                             eff[f"domain{i}_nodes_per_domain"]]).astype("<f8") + 0.0
        doms.append(d)
    return base, doms


def _seeds_from(eff: Mapping[str, np.ndarray], domain_idx: Sequence[int], positions: np.ndarray, seed: int) -> np.ndarray:
    base, doms = _canonical_rows(eff, domain_idx)
    out = np.empty(len(positions), dtype=np.int64)
    for k, p in enumerate(positions):
        h = hashlib.blake2b(base[p].tobytes(), digest_size=16)
        for d in doms:
            if not np.isnan(d[p, 1]):  # a domain left empty does not count: same seed as a table without it
                h.update(d[p].tobytes())
        words = np.frombuffer(h.digest(), dtype="<u4").tolist()
        state = np.random.SeedSequence([seed, *words]).generate_state(1, np.uint64)[0]
        out[k] = int(state) >> 15  # 49 bits: exact in float64 and in Excel's 15 digits
    return out


def scenario_seeds(table: pd.DataFrame, seed: int = DEFAULT_SEED) -> np.ndarray:
    """The per-row Monte Carlo seed :func:`evaluate_rows` uses (``deadline_seed``), for every row.

    ``SeedSequence([seed, blake2b-128(row's numeric inputs)])`` -> a 49-bit integer. The inputs are
    the numeric fields of :data:`~engine.scenario.FIELDS` with defaults applied (float64, fixed
    order) plus each failure domain the row gives; names, text, other rows, the row's position and
    the number of runs do not enter. Rows with equal inputs get equal seeds. Invalid rows get -1.
    """
    _check_mc_options(2, seed, "exponential")
    _check_columns(table, "keep")
    _, eff, problems = _validate(table, table.attrs.get("cell_errors", {}))
    out = np.full(len(table), -1, dtype=np.int64)
    good = np.flatnonzero(~problems.mask())
    out[good] = _seeds_from(eff, _domain_indices(list(table.columns)), good, seed)
    return out


def _monte_carlo(n: int, eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], positions: np.ndarray,
                 domain_idx: Sequence[int], runs: int, seed: int, failures: Any, final_save: bool,
                 problems: RowProblems) -> dict[str, np.ndarray]:
    out = {c: np.full(n, np.nan) for c in MONTE_CARLO_COLUMNS}
    if not len(positions):
        return out
    seeds = _seeds_from(eff, domain_idx, positions, seed)
    useful_h, deadline_h = eff["useful_training_h"], eff["deadline_h"]
    for p, row_seed in zip(positions.tolist(), seeds.tolist()):
        dl_h = deadline_h[p]
        if not np.isnan(dl_h) and dl_h < useful_h[p]:
            problems.add([p], lambda _p: str(InputError(
                "deadline_h", float(dl_h), f"must be >= useful_training_h = {useful_h[_p]:g} h: the job needs that "
                "much compute even with no saves and no failures")))
            continue
        try:
            sim = _mc.simulate(useful_h[p] * 60.0, res["chosen_interval_min"][p], eff["checkpoint_stall_min"][p],
                               res["job_mtbf_h"][p] * 60.0, eff["restart_min"][p], eff["async_write_min"][p],
                               eff["async_slowdown_fraction"][p], runs, row_seed, failures, final_save)
        except ValueError as exc:
            problems.add([p], lambda _p, m=str(exc): f"Monte Carlo: {m}")
            continue
        wall_h = sim.wall / 60.0
        gpu_h = np.asarray(cost.gpu_hours(wall_h, res["gpus"][p]))
        money = np.asarray(cost.money(gpu_h, eff["price_per_gpu_hour"][p]))
        q50, q90, q99 = np.quantile(wall_h, [0.5, 0.9, 0.99])
        out["deadline_seed"][p] = row_seed
        out["mc_runs"][p] = runs
        if not np.isnan(dl_h):
            hits = int(np.count_nonzero(sim.wall <= dl_h * 60.0))
            out["p_finish"][p] = hits / runs
            out["p_finish_low"][p], out["p_finish_high"][p] = _mc.wilson_interval(hits, runs)
        out["mc_wall_h_mean"][p] = float(wall_h.mean())
        out["mc_wall_h_mean_se"][p] = _mc.standard_error(wall_h)
        out["mc_wall_h_p50"][p], out["mc_wall_h_p90"][p], out["mc_wall_h_p99"][p] = q50, q90, q99
        out["mc_failures_mean"][p] = float(sim.failures.mean())
        out["mc_gpu_hours_mean"][p] = float(gpu_h.mean())
        out["mc_gpu_hours_p90"][p] = float(np.quantile(gpu_h, 0.9))
        out["mc_cost_mean"][p] = float(money.mean())
        out["mc_cost_p90"][p] = float(np.quantile(money, 0.9))
    return out


def is_dask(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def evaluate_rows(table: Any, *, deadline: bool = False, runs: int = DEFAULT_RUNS, seed: int = DEFAULT_SEED,
                  failures: Union[str, "_mc.FailureLaw"] = "exponential", final_save: bool = False,
                  extra_columns: str = "error",
                  cell_errors: Optional[Mapping[tuple[Hashable, str], str]] = None) -> Any:
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
    ``null``, ``none``, ``nan`` mean "not given" (the field's default, or "is required"); any other
    text, booleans and dates are row errors (``must be a number``).

    ``extra_columns``: ``"error"`` (default) refuses columns that are no scenario field; ``"keep"``
    carries them through unchanged and unevaluated. ``cell_errors``: ``{(row label, column): message}``
    of cells a reader already refused (e.g. formulas in an .xlsx); defaults to
    ``table.attrs["cell_errors"]`` as set by :func:`ckptplan.files.tables.read_scenarios`.

    Returns a DataFrame with the table's index: ``status``, ``error``, the input columns, the derived
    columns of :func:`engine.evaluate`, and with ``deadline`` the :data:`MONTE_CARLO_COLUMNS`.
    Raises :class:`InputError` only for problems of the whole table (missing required column,
    unknown column, half a domain's columns, duplicate header, bad ``runs``/``seed``).
    """
    if deadline:
        runs, seed, failures = _check_mc_options(runs, seed, failures)
    if is_dask(table):
        kwargs = dict(deadline=deadline, runs=runs, seed=seed, failures=failures, final_save=final_save,
                      extra_columns=extra_columns, cell_errors=dict(cell_errors or {}))
        meta = evaluate_rows(table._meta, **kwargs)
        return table.map_partitions(evaluate_rows, meta=meta, **kwargs)
    if isinstance(table, Scenario):
        table = to_table([table])
    elif not isinstance(table, pd.DataFrame):
        if isinstance(table, (str, bytes, Path)) or not isinstance(table, Iterable):
            raise InputError("table", type(table).__name__, "must be a pandas or dask DataFrame, or Scenarios")
        table = to_table(table)
    if cell_errors is None:
        cell_errors = table.attrs.get("cell_errors", {})
    _check_columns(table, extra_columns)
    n = len(table)
    given, eff, problems = _validate(table, cell_errors)
    domain_idx = _domain_indices(list(table.columns))

    # one engine call over every row that passed the masks; bisection only if the engine disagrees
    candidates = np.flatnonzero(~problems.mask())
    number_cols = [c for c in table.columns if column_kind(c) == "number"]
    derived = derived_columns()
    res = {c: np.full(n, np.nan) for c in derived}
    if len(candidates):
        sub = pd.DataFrame({c: given[c][candidates] for c in number_cols}, index=pd.RangeIndex(len(candidates)), copy=False)
        parts, refused = evaluate_each(sub)
        for k, exc in refused.items():
            problems.add([candidates[k]], lambda _p, m=_refusal_message(exc): m)
        for part in parts:
            pos = candidates[part.index.to_numpy()]
            for c in derived:
                res[c][pos] = part[c].to_numpy(dtype=float)
    evaluated = np.flatnonzero(~problems.mask())
    mc = None
    if deadline:
        mc = _monte_carlo(n, eff, res, evaluated, domain_idx, runs, seed, failures, final_save, problems)

    bad = problems.mask()
    errors = np.full(n, "", dtype=object)
    for p, msgs in problems.by_row.items():
        errors[p] = "; ".join(map(str, msgs))
    out: dict[str, Any] = {
        "status": pd.Series(np.where(bad, STATUS_ERROR, STATUS_OK), index=table.index, dtype=TEXT_DTYPE),
        "error": pd.Series(errors, index=table.index, dtype=TEXT_DTYPE),
    }
    for c in table.columns:
        kind = column_kind(c)
        if kind == "number":
            vals = given[c]
            if c == "job_mtbf_h":
                vals = np.where(np.isnan(res["job_mtbf_h"]), vals, res["job_mtbf_h"])
            if not vals.flags.writeable:  # a read-only view of the input: the results must be editable
                vals = vals.copy()
            out[c] = pd.Series(vals, index=table.index, copy=False)
        elif kind == "text":
            out[c] = _text_series(table[c])
        else:
            out[c] = table[c]
    for c in derived:
        if c not in out:
            out[c] = pd.Series(res[c], index=table.index, copy=False)
    if mc is not None:
        for c in MONTE_CARLO_COLUMNS:
            out[c] = pd.Series(mc[c], index=table.index, copy=False)
    return pd.DataFrame(out, index=table.index, copy=False)


# ===================================================================================== summary

@dataclass
class BatchSummary:
    """Counts and the extremes of a batch; ``best``/``worst`` per currency, ranked by :data:`RANKING_METRIC`.

    ``best[currency]`` / ``worst[currency]``: ``{"row", "value", "total_cost", "goodput", "describe"}``
    where ``value`` is the cost per useful GPU-hour (total cost / useful GPU-hours: what one hour of
    useful training really costs once saves, rework and restarts are paid) and ``describe`` the
    row's values of the ``describe`` columns. Ties keep the first row. ``first_errors``: up to
    ``max_errors`` ``(row, message)`` pairs in input order.
    """

    rows: int = 0
    ok: int = 0
    errors: int = 0
    metric: str = RANKING_METRIC
    best: dict = field(default_factory=dict)
    worst: dict = field(default_factory=dict)
    first_errors: list = field(default_factory=list)
    describe: tuple = ()
    max_errors: int = 20

    def update(self, part: pd.DataFrame) -> None:
        """Fold one chunk of results in (chunks in input order)."""
        n = len(part)
        self.rows += n
        status = part["status"].to_numpy(dtype=object)
        bad = status != STATUS_OK
        k = int(bad.sum())
        self.errors += k
        self.ok += n - k
        if k and len(self.first_errors) < self.max_errors:
            pos = np.flatnonzero(bad)[: self.max_errors - len(self.first_errors)]
            errs = part["error"].to_numpy(dtype=object)
            for p in pos:
                self.first_errors.append((plain_value(part.index[p]), str(errs[p])))
        good = np.flatnonzero(~bad)
        if not len(good) or self.metric not in part.columns:
            return
        metric = part[self.metric].to_numpy(dtype=float)[good]
        keep = np.isfinite(metric)
        good, metric = good[keep], metric[keep]
        if "currency" in part.columns:
            cur = part["currency"].to_numpy(dtype=object)[good]
            cur = np.array(["USD" if _is_absent(c) else str(c) for c in cur], dtype=object) if len(cur) else cur
        else:
            cur = np.full(len(good), "USD", dtype=object)
        codes, uniques = pd.factorize(cur)
        for ci, name in enumerate(uniques):
            sel = np.flatnonzero(codes == ci)
            lo, hi = sel[int(np.argmin(metric[sel]))], sel[int(np.argmax(metric[sel]))]
            for store, j, better in ((self.best, lo, lambda a, b: a < b), (self.worst, hi, lambda a, b: a > b)):
                if name not in store or better(metric[j], store[name]["value"]):
                    store[name] = self._record(part, good[j], float(metric[j]))

    def _record(self, part: pd.DataFrame, p: int, value: float) -> dict:
        row = part.iloc[p]
        return {"row": plain_value(part.index[p]), "value": value,
                "total_cost": float(row.get("total_cost", np.nan)), "goodput": float(row.get("goodput", np.nan)),
                "describe": {c: plain_value(row[c]) for c in self.describe if c in part.columns}}

    def to_dict(self) -> dict:
        return {"rows": self.rows, "ok": self.ok, "errors": self.errors, "metric": self.metric,
                "best": self.best, "worst": self.worst, "first_errors": [list(e) for e in self.first_errors]}

    @staticmethod
    def describe_record(rec: dict) -> str:
        """``name=value`` pairs of a best/worst record (or its row number)."""
        parts = [f"{k}={_fmt(v)}" for k, v in rec["describe"].items()]
        return ", ".join(parts) if parts else f"row {rec['row']}"


def plain_value(v: Any) -> Any:
    """A cell as a plain Python value: numpy scalars unwrapped, NaN as None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def summarize(results: pd.DataFrame, describe: Sequence[str] = ("name",)) -> BatchSummary:
    """The :class:`BatchSummary` of an evaluated table (or use ``BatchSummary.update`` per chunk)."""
    s = BatchSummary(describe=tuple(describe))
    s.update(results)
    return s
