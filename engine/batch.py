"""Batches of scenarios: per-row errors, sweeps, files in and out, and the same path on Dask.

:func:`engine.evaluate` is vectorised and strict: the first invalid row raises. A planner with a
spreadsheet of 5,000 scenarios, three of them mistyped, needs the other 4,997 answered and the three
named. This module gives that, and the plumbing around it.

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

Sweeps (:func:`sweep`, :func:`sweep_grid`, :func:`sweep_dask`, :func:`parse_axis`)
---------------------------------------------------------------------------------
The cartesian product of axes over a base scenario; rows = product of the axis lengths, the first
axis varying slowest (as :func:`itertools.product`). Rule violations inside the grid (a negative
stall, an interval too short for the write) are row errors like any other. Range syntax for the
command line: :func:`parse_axis`.

Files (:func:`read_scenarios`, :func:`write_scenarios`, :func:`write_results`, :func:`read_results`)
------------------------------------------------------------------------------------------------
Inputs: ``.toml`` (several ``[[scenario]]`` tables or one ``[scenario]``, each with optional
``[[scenario.domains]]``), ``.csv``, ``.xlsx``, ``.parquet`` (a header row of field names: the
names of :data:`~engine.scenario.FIELDS`, the text columns ``name``, ``description``, ``source``,
``currency``, and ``domain{i}_name``/``domain{i}_mtbf_h``/``domain{i}_nodes_per_domain``).
Outputs: ``.csv``, ``.xlsx``, ``.parquet``; written atomically (:func:`ckptplan.files.atomic_write`),
never over an existing file without ``force``. Details in each function's docstring.

Large sweeps on Dask
--------------------
:func:`evaluate_rows` given a ``dask.dataframe.DataFrame`` returns one, built with
``map_partitions`` over the very same function; :func:`sweep_dask` builds the grid lazily, one
partition per range of rows, on the workers. :func:`write_results` streams any of these to a file
partition by partition, in order, with a bounded number of partitions in flight. Needs
``dask[dataframe]`` and ``distributed`` (optional dependencies, imported only on that path).

This module imports openpyxl, pyarrow and dask lazily, only when a file of that kind or a Dask
input is used.
"""

from __future__ import annotations

import collections
import csv
import datetime as _dt
import difflib
import hashlib
import itertools
import math
import re
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import cost
from . import montecarlo as _mc
from ._inputs import InputError, as_float_array
from ..files.atomic import atomic_write
from ..files.untrusted import check_xlsx_package
from .scenario import DOMAIN_COL as _DOMAIN_COL
from ..files.scenarios import load_scenario  # FIXME(split): the engine must not read files
from .scenario import FIELD_BY_NAME, FIELDS, TEXT_FIELDS, RowProblems, Scenario, check_columns
from .scenario import domain_indices as _domain_indices
from .scenario import is_absent as _is_absent
from .scenario import is_number as _is_number
from .scenario import derived_columns, evaluate_each, table_problems, to_table

__all__ = [
    "STATUS_OK",
    "STATUS_ERROR",
    "RANKING_METRIC",
    "EXCEL_MAX_DATA_ROWS",
    "MONTE_CARLO_COLUMNS",
    "BatchSummary",
    "SweepGrid",
    "evaluate_rows",
    "scenario_seeds",
    "parse_axis",
    "sweep_grid",
    "sweep",
    "sweep_dask",
    "iter_results",
    "read_scenarios",
    "write_scenarios",
    "write_results",
    "read_results",
    "summarize",
    "neutralise_csv_text",
    "excel_number_format",
    "output_kind",
    "input_kind",
]

STATUS_OK = "ok"
STATUS_ERROR = "error"
#: the figure the summary ranks scenarios by: total cost / useful GPU-hours (money per useful GPU-hour)
RANKING_METRIC = "cost_per_useful_gpu_hour"
#: Excel's sheet limit is 1,048,576 rows; one is the header
EXCEL_MAX_DATA_ROWS = 1_048_576 - 1
#: Excel's limit on the characters of one cell
EXCEL_MAX_CELL_CHARS = 32_767
DEFAULT_RUNS = 10_000
#: rows per chunk when streaming (in process) or per Dask partition (memory ~ 0.6 KB per row)
DEFAULT_CHUNK_ROWS = 200_000
#: largest grid :func:`sweep` builds in memory (about 0.6 KB per result row); beyond: sweep_dask
MAX_SWEEP_ROWS = 5_000_000
#: largest axis :func:`parse_axis` expands
MAX_AXIS_VALUES = 1_000_000
#: uncompressed size above which an .xlsx input is refused (a zip bomb guard)
MAX_XLSX_UNCOMPRESSED_BYTES = 2 * 1024**3
#: leading characters that make a spreadsheet treat a CSV text cell as a formula (OWASP)
CSV_INJECTION_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
#: words a CSV/XLSX/Parquet cell may hold to mean "not given" (case-insensitive), besides blank
NA_WORDS = ("nan", "na", "n/a", "null", "none")

MONTE_CARLO_COLUMNS = (
    "deadline_seed", "mc_runs", "p_finish", "p_finish_low", "p_finish_high", "mc_wall_h_mean",
    "mc_wall_h_mean_se", "mc_wall_h_p50", "mc_wall_h_p90", "mc_wall_h_p99", "mc_failures_mean",
    "mc_gpu_hours_mean", "mc_gpu_hours_p90", "mc_cost_mean", "mc_cost_p90",
)
_PANDAS3 = int(pd.__version__.split(".")[0]) >= 3
#: dtype of text columns in results: pandas' default string dtype on pandas 3 (missing = NaN)
_TEXT_DTYPE: Any = "str" if _PANDAS3 else object

INPUT_SUFFIXES = (".toml", ".csv", ".xlsx", ".parquet")
OUTPUT_SUFFIXES = (".csv", ".xlsx", ".parquet")


# ======================================================================================= columns

def _column_kind(name: Any) -> Optional[str]:
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
    extras = [c for c in cols if _column_kind(c) is None]
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
    if _PANDAS3 and (values.dtype == _TEXT_DTYPE or values.dtype.kind == "O"):
        return values.astype(_TEXT_DTYPE)
    return pd.Series(_text_values(values), index=values.index, dtype=_TEXT_DTYPE)


def _text_values(values: pd.Series) -> np.ndarray:
    """Object array of str, None where absent (numbers written as text)."""
    obj = values.to_numpy(dtype=object, na_value=None) if values.dtype.kind != "O" else values.to_numpy(dtype=object)
    out = np.empty(len(obj), dtype=object)
    for i, v in enumerate(obj):
        out[i] = None if _is_absent(v) else (v if isinstance(v, str) else str(v))
    return out


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
        if _column_kind(c) == "number":
            numeric[c] = _coerce_numeric_text(table[c])
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


def scenario_seeds(table: pd.DataFrame, seed: int = 0) -> np.ndarray:
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


def _is_dask(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def evaluate_rows(table: Any, *, deadline: bool = False, runs: int = DEFAULT_RUNS, seed: int = 0,
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
    ``table.attrs["cell_errors"]`` as set by :func:`read_scenarios`.

    Returns a DataFrame with the table's index: ``status``, ``error``, the input columns, the derived
    columns of :func:`engine.evaluate`, and with ``deadline`` the :data:`MONTE_CARLO_COLUMNS`.
    Raises :class:`InputError` only for problems of the whole table (missing required column,
    unknown column, half a domain's columns, duplicate header, bad ``runs``/``seed``).
    """
    if deadline:
        runs, seed, failures = _check_mc_options(runs, seed, failures)
    if _is_dask(table):
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
    number_cols = [c for c in table.columns if _column_kind(c) == "number"]
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
        "status": pd.Series(np.where(bad, STATUS_ERROR, STATUS_OK), index=table.index, dtype=_TEXT_DTYPE),
        "error": pd.Series(errors, index=table.index, dtype=_TEXT_DTYPE),
    }
    for c in table.columns:
        kind = _column_kind(c)
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


# ========================================================================================= sweeps

def _round12(values: np.ndarray) -> np.ndarray:
    return np.array([float(f"{v:.12g}") for v in values.tolist()])


def parse_axis(text: str, name: str = "axis") -> np.ndarray:
    """Parse a sweep axis: numbers and ranges, comma-separated, e.g. ``0.5,1,2`` or ``64:4096:x2``.

    * ``v``: one number (``1e3`` allowed).
    * ``a:b:xK`` (or ``a:b:*K``): geometric, ``a, a*K, a*K^2, ...`` up to ``b`` (inclusive when hit);
      needs ``0 < a <= b`` and ``K > 1``. ``64:4096:x2`` = 64, 128, ..., 4096 (7 values).
    * ``a:b:+d``: arithmetic, ``a, a+d, a+2d, ...`` up to ``b`` (inclusive when hit); ``d > 0``,
      ``a <= b``. Computed as ``a + i*d`` and rounded to 12 significant digits, so ``0.1:0.5:+0.1``
      gives 0.1, 0.2, 0.3, 0.4, 0.5 exactly as typed.
    * Items combine: ``0.5,1:4:x2`` = 0.5, 1, 2, 4. A value given twice is an error (it would
      duplicate rows). At most :data:`MAX_AXIS_VALUES` values per axis.

    Raises :class:`InputError` naming ``name``, the text and the rule.
    """
    syntax = ("use numbers and ranges separated by commas: 0.5,1,2 | a:b:xK (geometric, e.g. 64:4096:x2) | "
              "a:b:+d (arithmetic, e.g. 0.5:3:+0.5)")
    if not isinstance(text, str) or not text.strip():
        raise InputError(name, text, syntax)
    values: list[np.ndarray] = []

    def number(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise InputError(name, text, f"{s.strip()!r} is not a number; {syntax}") from None
        if not math.isfinite(v):
            raise InputError(name, text, f"{s.strip()!r} is not a finite number")
        return v

    for item in text.split(","):
        item = item.strip()
        if not item:
            raise InputError(name, text, f"empty item; {syntax}")
        if ":" not in item:
            values.append(np.array([number(item)]))
            continue
        parts = item.split(":")
        if len(parts) != 3 or len(parts[2].strip()) < 2:
            raise InputError(name, text, f"range {item!r} must be a:b:xK or a:b:+d; {syntax}")
        a, b = number(parts[0]), number(parts[1])
        op, step = parts[2].strip()[0], number(parts[2].strip()[1:])
        if b < a:
            raise InputError(name, text, f"range {item!r}: the end {b:g} is below the start {a:g}")
        if op in "x*":
            if a <= 0 or step <= 1:
                raise InputError(name, text, f"geometric range {item!r} needs a start > 0 and a factor > 1")
            count = math.floor(math.log(b / a) / math.log(step) + 1e-9) + 1
            make = lambda i: a * step ** i  # noqa: E731
        elif op == "+":
            if step <= 0:
                raise InputError(name, text, f"arithmetic range {item!r} needs a step > 0")
            count = math.floor((b - a) / step + 1e-9) + 1
            make = lambda i: a + i * step  # noqa: E731
        else:
            raise InputError(name, text, f"range {item!r}: step {parts[2].strip()!r} must start with x (geometric) "
                             f"or + (arithmetic); {syntax}")
        if count > MAX_AXIS_VALUES:
            raise InputError(name, text, f"range {item!r} has {count:,} values (limit {MAX_AXIS_VALUES:,})")
        values.append(_round12(make(np.arange(count, dtype=float))))
    out = np.concatenate(values)
    if out.size > MAX_AXIS_VALUES:
        raise InputError(name, text, f"{out.size:,} values (limit {MAX_AXIS_VALUES:,})")
    uniq, counts = np.unique(out, return_counts=True)
    if (counts > 1).any():
        raise InputError(name, text, f"the value {uniq[counts > 1][0]:g} appears twice (rows would repeat)")
    return out


@dataclass(frozen=True)
class SweepGrid:
    """A lazily materialised cartesian grid over a base scenario (picklable: ships to Dask workers).

    ``base``: the base scenario's one-row table columns (numbers as float, text as str/None);
    ``axes``: ordered ``{column: values}``; ``same_work``: scale ``useful_training_h`` by
    ``base nodes / row nodes`` (perfect scaling, as :meth:`Scenario.with_nodes`). Row ``i``
    (0-based) takes axis ``k``'s value number ``(i // prod(len(later axes))) % len(axis k)``.
    """

    base: dict
    axes: dict
    same_work: bool = False

    @property
    def rows(self) -> int:
        return int(np.prod([len(v) for v in self.axes.values()], dtype=object)) if self.axes else 1

    def chunk(self, start: int = 0, stop: Optional[int] = None) -> pd.DataFrame:
        """Rows ``start .. stop-1`` of the grid as a scenario table; index ``row`` = position + 1."""
        stop = self.rows if stop is None else min(stop, self.rows)
        start = max(0, min(start, stop))
        idx = np.arange(start, stop, dtype=np.int64)
        index = pd.Index(idx + 1, name="row")
        cols: dict[str, Any] = {}
        for c, v in self.base.items():
            if _column_kind(c) == "text":
                cols[c] = pd.Series(np.full(len(idx), v, dtype=object), index=index, dtype=_TEXT_DTYPE)
            else:
                cols[c] = np.full(len(idx), np.nan if v is None else float(v))
        lengths = [len(v) for v in self.axes.values()]
        stride = int(np.prod(lengths, dtype=object)) if lengths else 1
        for (c, values), L in zip(self.axes.items(), lengths):
            stride //= L
            cols[c] = np.asarray(values, dtype=float)[(idx // stride) % L]
        if self.same_work:
            cols["useful_training_h"] = np.asarray(cols["useful_training_h"]) * float(self.base["nodes"]) / cols["nodes"]
        table = pd.DataFrame(cols, index=index)
        return table


def _base_scenario(base: Union[None, str, Path, Scenario]) -> Scenario:
    if base is None:
        return load_scenario("seed")
    if isinstance(base, Scenario):
        return base
    if isinstance(base, (str, Path)):
        return load_scenario(base)
    raise InputError("base", type(base).__name__, "must be a Scenario, a template name or a TOML path")


def sweep_grid(base: Union[None, str, Path, Scenario] = None, *, same_work: bool = False,
               **axes: Sequence[float]) -> SweepGrid:
    """The grid of ``axes`` over ``base`` (default: the ``seed`` template), not yet evaluated.

    Axis names: numeric scenario fields (:data:`~engine.scenario.FIELDS`) or the base's
    ``domain{i}_mtbf_h``/``domain{i}_nodes_per_domain``. Values: finite numbers, no repeats.
    Sweeping ``node_mtbf_h`` drops a ``job_mtbf_h`` override of the base (else the override would
    win on every row), as ``ckptplan plan --node-mtbf-h`` does. ``same_work=True``: the job needs
    the same useful GPU-hours on every row (``useful_training_h`` scales by base nodes / nodes).
    """
    sc = _base_scenario(base)
    # description and source describe the template, not each row: left out of the grid
    table = to_table([sc]).drop(columns=["description", "source"])
    row = {c: (None if (isinstance(v, float) and math.isnan(v)) else (v.item() if isinstance(v, np.generic) else v))
           for c, v in table.iloc[0].items()}
    if not axes:
        raise InputError("axes", None, "give at least one axis, e.g. checkpoint_stall_min=[0.5, 1, 2]")
    clean: dict[str, np.ndarray] = {}
    for name, values in axes.items():
        if _column_kind(name) != "number" or (name.startswith("domain") and name not in row):
            known = [f.name for f in FIELDS]
            close = difflib.get_close_matches(name, known, n=1)
            raise InputError("axis", name, "is not a numeric scenario field" + (f" (did you mean {close[0]}?)" if close else ""))
        if isinstance(values, (str, bytes)):
            values = parse_axis(values, name)
        arr = np.asarray(values, dtype=object).reshape(-1)
        if arr.size == 0:
            raise InputError(name, list(values), "an axis needs at least one value")
        for v in arr:
            if not _is_number(v) or not math.isfinite(float(v)):
                raise InputError(name, v, "axis values must be finite numbers")
        arr = arr.astype(float)
        uniq, counts = np.unique(arr, return_counts=True)
        if (counts > 1).any():
            raise InputError(name, float(uniq[counts > 1][0]), "appears twice in the axis (rows would repeat)")
        clean[name] = arr
    if "node_mtbf_h" in clean and "job_mtbf_h" not in clean:
        row["job_mtbf_h"] = None
    if same_work and not isinstance(same_work, bool):
        raise InputError("same_work", same_work, "must be True or False")
    return SweepGrid(base=row, axes=clean, same_work=bool(same_work))


def sweep(base: Union[None, str, Path, Scenario] = None, *, deadline: bool = False, runs: int = DEFAULT_RUNS,
          seed: int = 0, failures: Union[str, "_mc.FailureLaw"] = "exponential", final_save: bool = False,
          same_work: bool = False, max_rows: int = MAX_SWEEP_ROWS, **axes: Sequence[float]) -> pd.DataFrame:
    """Evaluate the cartesian grid of ``axes`` over ``base``: one row per combination.

    ``sweep(checkpoint_stall_min=[0.5, 1, 2], nodes=[64, 128, 256], price_per_gpu_hour=[2, 2.5])``
    gives 3 x 3 x 2 = 18 rows, the first axis varying slowest; an axis may also be a string in
    :func:`parse_axis` syntax (``nodes="64:4096:x2"``). Other arguments as :func:`evaluate_rows` and
    :func:`sweep_grid`. In memory: refuses grids above ``max_rows`` (about 0.6 KB per result row);
    stream larger ones with :func:`iter_results` + :func:`write_results` or run them on Dask with
    :func:`sweep_dask`.
    """
    grid = sweep_grid(base, same_work=same_work, **axes)
    if grid.rows > max_rows:
        raise InputError("rows", grid.rows, f"exceeds max_rows = {max_rows:,} for an in-memory sweep: stream it to a "
                         "file (ckptplan sweep -o, engine.batch.write_results) or use sweep_dask")
    return evaluate_rows(grid.chunk(), deadline=deadline, runs=runs, seed=seed, failures=failures,
                         final_save=final_save)


def sweep_dask(base: Union[None, str, Path, Scenario] = None, *, partition_rows: int = DEFAULT_CHUNK_ROWS,
               deadline: bool = False, runs: int = DEFAULT_RUNS, seed: int = 0,
               failures: Union[str, "_mc.FailureLaw"] = "exponential", final_save: bool = False,
               same_work: bool = False, **axes: Sequence[float]):
    """:func:`sweep` as a lazy ``dask.dataframe.DataFrame``: the grid is built on the workers.

    Partition ``k`` holds grid rows ``k*partition_rows ..``; each is built by
    :meth:`SweepGrid.chunk` and evaluated by :func:`evaluate_rows` (``map_partitions``), so the
    result equals :func:`sweep` exactly, with no row count limit on the client. Compute it on any
    ``distributed`` cluster, or stream it to a file with :func:`write_results`.
    """
    import dask.dataframe as dd

    grid = sweep_grid(base, same_work=same_work, **axes)
    step = int(as_float_array("partition_rows", partition_rows, "count"))
    bounds = [(a, min(a + step, grid.rows)) for a in range(0, grid.rows, step)]
    table = dd.from_map(_grid_part, bounds, grid=grid, meta=grid.chunk(0, 0),
                        divisions=[a + 1 for a, _ in bounds] + [grid.rows], label="ckptplan-sweep-grid",
                        enforce_metadata=False)
    return evaluate_rows(table, deadline=deadline, runs=runs, seed=seed, failures=failures, final_save=final_save)


def _grid_part(bounds: tuple[int, int], grid: SweepGrid) -> pd.DataFrame:
    return grid.chunk(*bounds)


# ================================================================================== streaming

def iter_results(source: Any, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, window: Optional[int] = None,
                 **options: Any) -> Iterator[pd.DataFrame]:
    """Evaluated chunks, in order, of a table, a :class:`SweepGrid` or a dask DataFrame.

    * pandas DataFrame: :func:`evaluate_rows` on ``chunk_rows`` rows at a time (``options`` go to it);
    * :class:`SweepGrid`: its rows ``chunk_rows`` at a time, evaluated the same way;
    * dask DataFrame (already evaluated, e.g. from :func:`sweep_dask`): its partitions in order,
      computed on the current ``distributed`` client if there is one (at most ``window``
      partitions in flight, default 2 per worker thread, so memory stays bounded), else with
      dask's default scheduler one after another.

    Results equal one :func:`evaluate_rows` call on the whole input (rows are independent).
    """
    step = int(as_float_array("chunk_rows", chunk_rows, "count"))
    if isinstance(source, SweepGrid):
        for a in range(0, source.rows, step):
            yield evaluate_rows(source.chunk(a, a + step), **options)
    elif isinstance(source, pd.DataFrame):
        cell_errors = options.pop("cell_errors", source.attrs.get("cell_errors", {}))
        _check_columns(source, options.get("extra_columns", "error"))
        if len(source) == 0:
            yield evaluate_rows(source, cell_errors=cell_errors, **options)
        for a in range(0, len(source), step):
            yield evaluate_rows(source.iloc[a:a + step], cell_errors=cell_errors, **options)
    elif _is_dask(source):
        if options:
            raise InputError("options", sorted(options), "apply evaluate_rows to the dask DataFrame first")
        yield from _iter_dask(source, window)
    else:
        raise InputError("source", type(source).__name__, "must be a pandas DataFrame, a SweepGrid or a dask DataFrame")


def _iter_dask(ddf: Any, window: Optional[int]) -> Iterator[pd.DataFrame]:
    parts = ddf.to_delayed()
    try:
        from distributed import default_client
        client = default_client()
    except (ImportError, ValueError):
        client = None
    if client is None:
        for d in parts:
            yield d.compute()
        return
    if window is None:
        window = max(2, 2 * sum(client.nthreads().values()))
    it = iter(parts)
    flight = collections.deque(client.compute(d) for d in itertools.islice(it, window))
    while flight:
        fut = flight.popleft()
        part = fut.result()
        fut.release()
        nxt = next(it, None)
        if nxt is not None:
            flight.append(client.compute(nxt))
        yield part


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
                self.first_errors.append((_plain(part.index[p]), str(errs[p])))
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
        return {"row": _plain(part.index[p]), "value": value,
                "total_cost": float(row.get("total_cost", np.nan)), "goodput": float(row.get("goodput", np.nan)),
                "describe": {c: _plain(row[c]) for c in self.describe if c in part.columns}}

    def to_dict(self) -> dict:
        return {"rows": self.rows, "ok": self.ok, "errors": self.errors, "metric": self.metric,
                "best": self.best, "worst": self.worst, "first_errors": [list(e) for e in self.first_errors]}

    @staticmethod
    def describe_record(rec: dict) -> str:
        """``name=value`` pairs of a best/worst record (or its row number)."""
        parts = [f"{k}={_fmt(v)}" for k, v in rec["describe"].items()]
        return ", ".join(parts) if parts else f"row {rec['row']}"


def _plain(v: Any) -> Any:
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


# ====================================================================================== reading

def input_kind(path: Union[str, Path]) -> str:
    """The reader for ``path`` by its suffix: ``toml``, ``csv``, ``xlsx`` or ``parquet``."""
    suffix = Path(path).suffix.lower()
    if suffix not in INPUT_SUFFIXES:
        raise InputError("scenario file", str(path), f"unsupported type {suffix or '(none)'!r}: use "
                         + ", ".join(INPUT_SUFFIXES))
    return suffix[1:]


def output_kind(path: Union[str, Path]) -> str:
    """The writer for ``path`` by its suffix: ``csv``, ``xlsx`` or ``parquet``."""
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise InputError("output file", str(path), f"unsupported type {suffix or '(none)'!r}: use "
                         + ", ".join(OUTPUT_SUFFIXES))
    return suffix[1:]


def read_scenarios(path: Union[str, Path], *, sheet: Optional[str] = None) -> pd.DataFrame:
    """Read a scenario table from ``.toml``, ``.csv``, ``.xlsx`` or ``.parquet`` (see the module notes).

    The index, named ``row``, is where each scenario sits in the file: the spreadsheet row / CSV
    line (header = 1, first scenario = 2) or, in TOML, the scenario's position (1, 2, ...). Wholly
    blank rows are skipped (they hold no scenario). Numeric cells written as text (``"1.5"``, as
    Excel and CSV often store them) become numbers; blank cells and ``NA``/``N/A``/``null``/``none``/
    ``nan`` mean "not given"; any other text stays text and becomes a row error in
    :func:`evaluate_rows`. TOML is typed: a quoted number there is a row error (in
    ``attrs["cell_errors"]``).

    ``.xlsx`` is read as untrusted data: openpyxl parses its XML through defusedxml (a dependency),
    the archive is refused above :data:`MAX_XLSX_UNCOMPRESSED_BYTES` uncompressed, and only stored
    values are read, never formulas: a formula cell (and an Excel error value such as ``#DIV/0!``)
    is recorded in ``attrs["cell_errors"]`` and becomes a row error. The sheet named ``Scenarios``
    is read if there is one, else the first (or ``sheet``). CSV: comma-separated, UTF-8 (a BOM is
    fine). Raises :class:`InputError` for an unreadable or empty file.
    """
    path = Path(path)
    kind = input_kind(path)
    if not path.exists():
        raise InputError("scenario file", str(path), "file not found")
    if not path.is_file():
        raise InputError("scenario file", str(path), "is not a file")
    reader = {"toml": _read_toml, "csv": _read_csv, "xlsx": _read_xlsx, "parquet": _read_parquet}[kind]
    if kind == "xlsx":
        table, cell_errors = reader(path, sheet)
    else:
        table, cell_errors = reader(path)
    if len(table) == 0:
        raise InputError("scenario file", str(path), "holds no scenario rows")
    table.index.name = "row"
    table.attrs["cell_errors"] = cell_errors
    table.attrs["source"] = str(path)
    return table


def _coerce_numeric_text(values: pd.Series) -> pd.Series:
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


def _tidy(table: pd.DataFrame) -> pd.DataFrame:
    """Numeric columns coerced from text; text columns as str with None for blanks."""
    for c in table.columns:
        kind = _column_kind(c)
        if kind == "number":
            table[c] = _coerce_numeric_text(table[c])
        elif kind == "text":
            vals = _text_values(table[c])
            vals = np.array([None if (v is None or v.strip() == "") else v for v in vals], dtype=object)
            table[c] = pd.Series(vals, index=table.index, dtype=object)
    return table


def _read_csv(path: Path) -> tuple[pd.DataFrame, dict]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
        if not header:
            raise InputError("scenario file", str(path), "is empty: it needs a header row of field names")
        header = [h.strip() for h in header]
        dup = [c for c, k in collections.Counter(header).items() if k > 1]
        if dup:
            raise InputError("columns", dup[0], "appears more than once in the header")
        table = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False, encoding="utf-8-sig")
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error, OSError) as exc:
        raise InputError("scenario file", str(path), f"cannot be read as CSV ({exc})") from None
    table.columns = header
    table.index = pd.RangeIndex(2, 2 + len(table))
    blank = table.apply(lambda col: col.astype(str).str.strip().eq("")).all(axis=1) if len(table.columns) else None
    if blank is not None and blank.any():
        table = table[~blank.to_numpy()]
    return _tidy(table.copy()), {}


def _read_parquet(path: Path) -> tuple[pd.DataFrame, dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("scenario file", str(path), "Parquet needs pyarrow: pip install pyarrow") from None
    try:
        table = pq.read_table(path).to_pandas()
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for damaged files
        raise InputError("scenario file", str(path), f"cannot be read as Parquet ({exc})") from None
    table = table.reset_index(drop=True)
    table.index = pd.RangeIndex(1, 1 + len(table))
    return _tidy(table), {}


def _read_toml(path: Path) -> tuple[pd.DataFrame, dict]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError("scenario file", str(path), f"is not valid TOML ({exc})") from None
    if "scenario" not in data:
        raise InputError("scenario file", str(path), "needs [[scenario]] tables (several) or one [scenario] table")
    other = sorted(set(data) - {"scenario"})
    if other:
        raise InputError("scenario file", str(path), f"unknown top-level key {other[0]!r}: only [scenario] / [[scenario]]")
    items = data["scenario"]
    items = [items] if isinstance(items, dict) else items
    if not isinstance(items, list) or not all(isinstance(it, dict) for it in items):
        raise InputError("scenario file", str(path), "[scenario] must be a table or an array of tables")
    rows = []
    cell_errors: dict[tuple[int, str], str] = {}
    for k, item in enumerate(items, start=1):
        row = {key: value for key, value in item.items() if key != "domains"}
        doms = item.get("domains", [])
        if not isinstance(doms, list) or not all(isinstance(d, dict) for d in doms):
            raise InputError(f"scenario {k}: domains", doms, "must be an array of tables [[scenario.domains]]")
        for i, d in enumerate(doms, start=1):
            unknown = sorted(set(d) - {"name", "mtbf_h", "nodes_per_domain"})
            if unknown:
                raise InputError(f"scenario {k}: domains[{i}]", unknown[0], "unknown key: use name, mtbf_h, nodes_per_domain")
            for key, value in d.items():
                row[f"domain{i}_{key}"] = value
        for key, value in row.items():
            if isinstance(value, (dict, list)):
                raise InputError(f"scenario {k}: {key}", value, "must be a single value")
            if isinstance(value, str) and _column_kind(key) == "number":  # TOML is typed: "2" is text
                cell_errors[(k, key)] = str(InputError(key, value, "must be a number (TOML: write it without quotes)"))
        rows.append(row)
    table = pd.DataFrame(rows, index=pd.RangeIndex(1, 1 + len(rows)), dtype=object) if rows else pd.DataFrame()
    for c in table.columns:
        if _column_kind(c) == "text":
            table[c] = pd.Series(_text_values(table[c]), index=table.index, dtype=object)
    return table, cell_errors


def _check_zip(path: Path) -> None:
    check_xlsx_package(path, "scenario file", MAX_XLSX_UNCOMPRESSED_BYTES, "; export CSV or Parquet instead")


def _read_xlsx(path: Path, sheet: Optional[str]) -> tuple[pd.DataFrame, dict]:
    from openpyxl import load_workbook

    _check_zip(path)
    try:
        wb = load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many kinds for damaged files
        raise InputError("scenario file", str(path), f"cannot be read as .xlsx ({type(exc).__name__}: {exc})") from None
    try:
        if sheet is not None:
            if sheet not in wb.sheetnames:
                raise InputError("sheet", sheet, f"not in the workbook; sheets: {', '.join(wb.sheetnames)}")
            ws = wb[sheet]
        else:
            ws = wb["Scenarios"] if "Scenarios" in wb.sheetnames else wb.worksheets[0]
        if hasattr(ws, "reset_dimensions"):
            ws.reset_dimensions()  # do not trust the stored dimension: read every row
        rows = ws.iter_rows()
        header_cells = next(rows, None)
        if not header_cells:
            raise InputError("scenario file", str(path), f"sheet {ws.title!r} is empty: it needs a header row")
        header: list[Optional[str]] = []
        for cell in header_cells:
            v = cell.value
            header.append(None if v is None or (isinstance(v, str) and not v.strip()) else str(v).strip())
        while header and header[-1] is None:
            header.pop()
        width = len(header)
        dup = [c for c, k in collections.Counter(h for h in header if h is not None).items() if k > 1]
        if dup:
            raise InputError("columns", dup[0], "appears more than once in the header")
        records, labels = [], []
        cell_errors: dict[tuple[int, str], str] = {}
        for r, cells in enumerate(rows, start=2):
            values: list[Any] = [None] * width
            any_value = False
            for j, cell in enumerate(cells):
                v = cell.value
                if v is None:
                    continue
                if j >= width or header[j] is None:
                    raise InputError("columns", f"column {j + 1}", f"holds a value in row {r} but has no header")
                any_value = True
                col = header[j]
                if cell.data_type == "f":
                    text = v if isinstance(v, str) else getattr(v, "text", str(v))
                    cell_errors[(r, col)] = str(InputError(col, text, "is a formula: formulas are not evaluated "
                                                                     "(ckptplan reads stored values only); type the value"))
                    continue
                if cell.data_type == "e":
                    cell_errors[(r, col)] = str(InputError(col, v, "is an Excel error value"))
                    continue
                values[j] = v
            if any_value:
                records.append(values)
                labels.append(r)
    finally:
        wb.close()
    table = pd.DataFrame(records, columns=header, index=pd.Index(labels, dtype=np.int64), dtype=object)
    if None in header:
        empty_cols = [j for j, h in enumerate(header) if h is None]
        table = table.drop(columns=[table.columns[j] for j in empty_cols])
    return _tidy(table), cell_errors


def read_results(path: Union[str, Path]) -> pd.DataFrame:
    """Read a results file written by :func:`write_results` (CSV, Parquet, or the xlsx ``Results`` sheet).

    Numbers come back as float64, text as text (a CSV text cell neutralised on writing keeps its
    leading ``'``). The ``row`` column, when present, becomes the index.
    """
    path = Path(path)
    kind = output_kind(path)
    if kind == "csv":
        table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    elif kind == "parquet":
        table = pd.read_parquet(path)
    else:
        from openpyxl import load_workbook
        wb = load_workbook(path, read_only=True, data_only=True)
        try:
            ws = wb["Results"] if "Results" in wb.sheetnames else wb["Scenarios"]
            it = ws.iter_rows(values_only=True)
            header = list(next(it))
            width = len(header)
            table = pd.DataFrame([(list(r) + [None] * width)[:width] for r in it], columns=header)
        finally:
            wb.close()
        for c in table.columns:
            if _column_kind(c) == "text" or c in ("status", "error") or table[c].map(lambda v: isinstance(v, str)).any():
                table[c] = pd.Series(_text_values(table[c]), dtype=_TEXT_DTYPE)
            else:
                table[c] = pd.to_numeric(table[c]).astype(float)
    if "error" in table.columns:
        table["error"] = table["error"].astype(object).where(table["error"].notna(), "").astype(_TEXT_DTYPE)
    if "row" in table.columns:
        table = table.set_index("row")
    return table


# ====================================================================================== writing

def neutralise_csv_text(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells cannot run as formulas when the CSV is opened in a spreadsheet.

    OWASP "CSV Injection": a cell starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return
    is prefixed with a single quote, so Excel/LibreOffice show it as text. Only text cells change:
    numbers (negative ones included) stay numbers.
    """
    out = frame.copy()
    for c in out.columns:
        col = out[c]
        if col.dtype.kind in "iufbmM":
            continue
        mask = col.map(lambda v: isinstance(v, str) and v.startswith(CSV_INJECTION_PREFIXES)).to_numpy(dtype=bool)
        if mask.any():
            vals = col.to_numpy(dtype=object).copy()
            vals[mask] = ["'" + v for v in vals[mask]]
            out[c] = pd.Series(vals, index=col.index, dtype=col.dtype if col.dtype != object else object)
    return out


def _file_frame(part: pd.DataFrame) -> pd.DataFrame:
    """The frame as written: the ``row`` index as a first column when the index is named ``row``."""
    if part.index.name == "row":
        return part.reset_index()
    return part.reset_index(drop=True)


def _is_text_col(series: pd.Series) -> bool:
    return series.dtype.kind not in "iufbmM"


def _arrow_schema(frame: pd.DataFrame):
    import pyarrow as pa

    fields_ = []
    for c in frame.columns:
        s = frame[c]
        if s.dtype.kind in "iu":
            fields_.append(pa.field(str(c), pa.int64()))
        elif s.dtype.kind == "f":
            fields_.append(pa.field(str(c), pa.float64()))
        elif s.dtype.kind == "b":
            fields_.append(pa.field(str(c), pa.bool_()))
        else:
            fields_.append(pa.field(str(c), pa.string()))
    return pa.schema(fields_)


def _arrow_table(frame: pd.DataFrame, schema):
    import pyarrow as pa

    arrays = []
    for f in schema:
        s = frame[f.name]
        if pa.types.is_string(f.type):
            if s.dtype.kind == "f" and s.isna().all():
                arrays.append(pa.nulls(len(s), pa.string()))
            else:
                vals = s.to_numpy(dtype=object)
                arrays.append(pa.array([None if _is_absent(v) else (v if isinstance(v, str) else str(v)) for v in vals],
                                       type=pa.string()) if s.dtype.kind == "O" else
                              pa.array(s.astype(object).where(s.notna(), None).to_numpy(dtype=object), type=pa.string()))
        else:
            arrays.append(pa.array(s.to_numpy(), type=f.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


class _Sink:
    """A results file being written: ``write`` chunks in order, then ``close`` (or ``abort``)."""

    writer: Any = None

    def write(self, frame: pd.DataFrame) -> None:
        raise NotImplementedError

    def close(self, summary: Optional[BatchSummary]) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001 - best effort clean-up of a file about to be deleted
                pass


class _CsvSink(_Sink):
    """CSV through pyarrow's streaming writer (shortest round-trip floats, blanks for NaN)."""

    def __init__(self, path: Path):
        self.path = path
        self.writer = None
        self.schema = None

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow.csv as pacsv

        frame = neutralise_csv_text(frame)
        if self.writer is None:
            self.schema = _arrow_schema(frame)
            self.writer = pacsv.CSVWriter(str(self.path), self.schema,
                                          write_options=pacsv.WriteOptions(quoting_style="needed"))
        self.writer.write_table(_arrow_table(frame, self.schema))

    def close(self, summary: Optional[BatchSummary]) -> None:
        if self.writer is not None:
            self.writer.close()


class _ParquetSink(_Sink):
    def __init__(self, path: Path):
        self.path = path
        self.writer = None
        self.schema = None

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow.parquet as pq

        if self.writer is None:
            self.schema = _arrow_schema(frame)
            self.writer = pq.ParquetWriter(str(self.path), self.schema, compression="zstd")
        self.writer.write_table(_arrow_table(frame, self.schema))

    def close(self, summary: Optional[BatchSummary]) -> None:
        if self.writer is not None:
            self.writer.close()


_ILLEGAL_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def excel_number_format(column: str) -> str:
    """Excel number format for a column, by the unit in its name.

    Fractions (waste, goodput, shares, ``p_finish``) as percentages; ``_min`` minutes and ``_h``
    hours with the unit shown; GPU-hours whole with ``GPU-h``; money (``_cost``, ``cost_``,
    ``price_per_gpu_hour``, ``cost_per_useful_gpu_hour``) with two decimals (the currency is in
    its own column, so no symbol); counts whole.
    """
    c = column
    if c in ("row", "deadline_seed", "mc_runs"):
        return "0"
    if c in ("nodes", "gpus_per_node", "gpus") or c.endswith("_nodes_per_domain"):
        return "#,##0"
    if ("waste" in c or c in ("goodput", "async_slowdown_fraction", "nonfatal_share")
            or c.startswith("p_finish") or c.endswith("_fraction") or c.endswith("_share")):
        return "0.00%"
    if c.endswith("gpu_hours") or "gpu_hours_" in c:
        return '#,##0" GPU-h"'
    if c.endswith("_cost") or c.startswith("cost_") or c.startswith("mc_cost") or c == "price_per_gpu_hour":
        return "#,##0.00"
    if c.endswith("_min"):
        return '#,##0.00" min"'
    if c.endswith("_h") or "_h_" in c:
        return '#,##0.0" h"'
    if "failures" in c or c == "runs_per_month":
        return "#,##0.0"
    return "General"


class _XlsxSink(_Sink):
    """openpyxl write-only workbook: an Excel Table with frozen header and filter buttons, formats per unit.

    Write-only mode streams rows to disk (memory stays flat), so everything that sits before the
    rows in the sheet XML (frozen pane, column widths) is set before the first row; the Table (its
    range, column names and autofilter) is added at the end, when the row count is known (openpyxl
    writes tables after the rows, and needs explicit column names in write-only mode). The
    autofilter is the Table's own (a sheet-level autofilter over a Table makes Excel repair the
    file). Text cells are always stored as text (never formulas or error values, whatever they
    start with); NaN/inf cells are left empty; numbers are written in their shortest round-trip
    form (openpyxl's default ``%.16g`` can change the last bit). A ``Summary`` sheet comes first.
    """

    def __init__(self, path: Path, sheet: str = "Results", summary_sheet: bool = True, source: str = ""):
        from openpyxl import Workbook

        self.path = path
        self.wb = Workbook(write_only=True)
        self.summary_ws = self.wb.create_sheet("Summary") if summary_sheet else None
        self.ws = self.wb.create_sheet(sheet)
        self.sheet = sheet
        self.source = source
        self.columns: Optional[list[str]] = None
        self.rows = 0

    def _setup(self, frame: pd.DataFrame) -> None:
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Alignment, Font
        from openpyxl.utils import get_column_letter

        self.columns = [str(c) for c in frame.columns]
        ws = self.ws
        ws.freeze_panes = "A2"
        self.styles = []
        self.text = []
        for j, c in enumerate(self.columns, start=1):
            is_text = _is_text_col(frame[c])
            self.text.append(is_text)
            width = 40 if c in ("error", "description", "source") else max(9, min(28, len(c) + 3))
            ws.column_dimensions[get_column_letter(j)].width = width
            proto = WriteOnlyCell(ws, "")
            if not is_text:
                proto.number_format = excel_number_format(c)
            self.styles.append(proto._style if proto.has_style else None)
        header = []
        for c in self.columns:
            cell = WriteOnlyCell(ws)
            cell._value, cell.data_type = c, "s"
            cell.font = Font(bold=True)
            cell.alignment = Alignment(wrap_text=True, vertical="top")
            header.append(cell)
        ws.append(header)

    def write(self, frame: pd.DataFrame) -> None:
        from openpyxl.cell import WriteOnlyCell

        if self.columns is None:
            self._setup(frame)
        if self.rows + len(frame) > EXCEL_MAX_DATA_ROWS:
            raise InputError("rows", self.rows + len(frame), f"exceed Excel's limit of {EXCEL_MAX_DATA_ROWS:,} data rows "
                             "per sheet: write .csv or .parquet instead (splitting one table over sheets would break "
                             "its sorting and filtering)")
        ws = self.ws
        cols = []
        for c, is_text in zip(self.columns, self.text):
            s = frame[c]
            if is_text:
                cols.append([None if _is_absent(v) or v == "" else _excel_text(v) for v in s.to_numpy(dtype=object)])
            else:
                arr = s.to_numpy(dtype=float)
                vals = arr.tolist()
                if not np.isfinite(arr).all():
                    vals = [v if math.isfinite(v) else None for v in vals]
                if s.dtype.kind in "iu":
                    vals = [None if v is None else int(v) for v in vals]
                cols.append(vals)
        styles, text = self.styles, self.text
        for values in zip(*cols):
            row = []
            for v, style, is_text in zip(values, styles, text):
                if v is None:
                    row.append(None)
                    continue
                cell = WriteOnlyCell(ws)
                if is_text:
                    cell._value, cell.data_type = v, "s"
                else:
                    # openpyxl would write "%.16g" (not always the same double back); repr is the
                    # shortest text that is, and Excel parses all 17 digits
                    cell._value, cell.data_type = repr(v), "n"
                    if style is not None:
                        cell._style = style
                row.append(cell)
            ws.append(row)
        self.rows += len(frame)

    def abort(self) -> None:
        """Finish the half-written sheet streams quietly (the temporary file is discarded anyway)."""
        for ws in self.wb.worksheets:
            try:
                if not ws.closed:
                    ws.close()
            except Exception:  # noqa: BLE001 - best effort clean-up of a file about to be deleted
                pass

    def close(self, summary: Optional[BatchSummary]) -> None:
        from openpyxl.utils import get_column_letter
        from openpyxl.worksheet.filters import AutoFilter
        from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

        if self.columns is None:
            raise InputError("results", 0, "no rows to write")
        last = get_column_letter(len(self.columns))
        ref = f"A1:{last}{max(self.rows, 1) + 1}"
        table = Table(displayName=self.sheet, ref=ref)
        # write-only mode cannot read the header back: name the columns here (else Column1..n)
        table.tableColumns = [TableColumn(id=i, name=c) for i, c in enumerate(self.columns, start=1)]
        table.autoFilter = AutoFilter(ref=ref)
        table.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2", showRowStripes=True)
        with warnings.catch_warnings():  # "you must add table columns manually": done above
            warnings.filterwarnings("ignore", "In write-only mode", UserWarning)
            self.ws.add_table(table)
        if self.summary_ws is not None:
            self._write_summary(summary)
        self.wb.save(self.path)

    def _write_summary(self, summary: Optional[BatchSummary]) -> None:
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Font

        ws = self.summary_ws
        ws.column_dimensions["A"].width = 34
        ws.column_dimensions["B"].width = 60
        ws.column_dimensions["C"].width = 22
        ws.column_dimensions["D"].width = 22

        def text(v: Any, bold: bool = False):
            cell = WriteOnlyCell(ws)
            cell._value, cell.data_type = _excel_text(v), "s"
            if bold:
                cell.font = Font(bold=True)
            return cell

        def num(v: Any, fmt: str):
            if v is None or not math.isfinite(v):
                return None
            cell = WriteOnlyCell(ws, v)
            cell.number_format = fmt
            return cell

        ws.append([text("ckptplan batch results", bold=True)])
        ws.append([text("written (UTC)"), text(_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"))])
        if self.source:
            ws.append([text("source"), text(self.source)])
        s = summary or BatchSummary()
        ws.append([text("rows"), num(s.rows, "#,##0")])
        ws.append([text("ok"), num(s.ok, "#,##0")])
        ws.append([text("errors (status = error)"), num(s.errors, "#,##0")])
        ws.append([])
        ws.append([text("Ranked by cost per useful GPU-hour", bold=True),
                   text("total cost / useful GPU-hours, in each row's currency (saves, rework and restarts included)")])
        ws.append([text("", bold=True), text("scenario", bold=True), text("cost per useful GPU-h", bold=True),
                   text("total cost", bold=True), text("goodput", bold=True)])
        for label, store in (("best", s.best), ("worst", s.worst)):
            for cur, rec in store.items():
                ws.append([text(f"{label} ({cur})"), text(f"row {rec['row']}: {BatchSummary.describe_record(rec)}"),
                           num(rec["value"], "#,##0.0000"), num(rec["total_cost"], "#,##0"), num(rec["goodput"], "0.00%")])
        if s.first_errors:
            ws.append([])
            ws.append([text(f"First {len(s.first_errors)} errors (filter the status column for all)", bold=True)])
            ws.append([text("row", bold=True), text("error", bold=True)])
            for r, message in s.first_errors:
                ws.append([text(f"row {r}"), text(message)])
        ws.append([])
        ws.append([text("Notes", bold=True)])
        for note in (
            "One row per input row, in input order; a row that could not be evaluated has status = error, its "
            "figures blank and its problems in the error column (field=value: rule).",
            "Units are in the column names: _min minutes, _h hours, _gpu_hours GPU-hours, _cost money in the row's "
            "currency; fractions are formatted as percentages.",
            "Long-run figures: Daly's model for exponential failures (engine.evaluate). mc_* and p_finish columns: "
            "Monte Carlo of the finite job (engine.deadline), seeded per row (deadline_seed).",
        ):
            ws.append([text(note)])


def _excel_text(v: Any) -> str:
    s = v if isinstance(v, str) else str(v)
    s = _ILLEGAL_XML.sub("\ufffd", s)
    return s if len(s) <= EXCEL_MAX_CELL_CHARS else s[: EXCEL_MAX_CELL_CHARS - 1] + "\u2026"


def _sink(kind: str, tmp: Path, source: str, summary_sheet: bool, sheet: str) -> _Sink:
    if kind in ("csv", "parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError("output file", str(tmp), f"{kind} output needs pyarrow: pip install pyarrow") from None
    if kind == "csv":
        return _CsvSink(tmp)
    if kind == "parquet":
        return _ParquetSink(tmp)
    return _XlsxSink(tmp, sheet=sheet, summary_sheet=summary_sheet, source=source)


def write_results(results: Any, path: Union[str, Path], *, force: bool = False, describe: Sequence[str] = ("name",),
                  source: str = "", progress: Optional[Callable[[int], None]] = None,
                  expected_rows: Optional[int] = None) -> BatchSummary:
    """Write evaluated results to ``.csv``, ``.xlsx`` or ``.parquet`` atomically; return the summary.

    ``results``: a DataFrame from :func:`evaluate_rows`, an iterable of such chunks (e.g.
    :func:`iter_results`, evaluated lazily while writing) or an evaluated dask DataFrame (streamed
    partition by partition: see :func:`iter_results`). ``progress(rows)`` is called after each
    chunk with the rows it wrote. ``expected_rows``, when known, lets an .xlsx beyond Excel's limit
    fail before any work.

    * The file appears complete or not at all (:func:`ckptplan.files.atomic_write`); an existing
      file is replaced only with ``force``, and that is checked before any evaluation.
    * CSV: UTF-8, comma, header row, numbers in shortest round-trip form, blank for missing; text
      cells neutralised against formula injection (:func:`neutralise_csv_text`). Parquet: zstd,
      float64/int64/string columns. Both need pyarrow.
    * XLSX: sheet ``Summary`` (counts, best/worst, first errors, notes) then ``Results``, an Excel
      Table with a frozen header, filter buttons and number formats per unit
      (:func:`excel_number_format`); openpyxl write-only mode, so memory stays flat, at about 1.5k
      rows/s (60 columns). More than :data:`EXCEL_MAX_DATA_ROWS` rows raise :class:`InputError`
      suggesting CSV/Parquet: a Table split over sheets could not be sorted or filtered as one.
    """
    path = Path(path)
    kind = output_kind(path)
    if kind == "xlsx" and expected_rows is not None and expected_rows > EXCEL_MAX_DATA_ROWS:
        raise InputError("rows", expected_rows, f"exceed Excel's limit of {EXCEL_MAX_DATA_ROWS:,} data rows per sheet: "
                         "write .csv or .parquet instead")
    if isinstance(results, pd.DataFrame):
        chunks: Iterable[pd.DataFrame] = [results]
    elif _is_dask(results):
        chunks = iter_results(results)
    else:
        chunks = results
    summary = BatchSummary(describe=tuple(describe))

    def write(tmp: Path) -> None:
        sink = _sink(kind, tmp, source, summary_sheet=True, sheet="Results")
        try:
            for part in chunks:
                if "status" not in part.columns:
                    raise InputError("results", list(part.columns)[:3], "are not evaluated results: use evaluate_rows first")
                summary.update(part)
                sink.write(_file_frame(part))
                if progress is not None:
                    progress(len(part))
        except BaseException:
            sink.abort()
            raise
        sink.close(summary)

    atomic_write(path, write, force=force)
    return summary


def write_scenarios(table: pd.DataFrame, path: Union[str, Path], *, force: bool = False) -> Path:
    """Write a scenario table (e.g. a grid from :func:`sweep_grid`) as a file :func:`read_scenarios` reads.

    ``.toml``: ``[[scenario]]`` tables (empty cells left out, domains as ``[[scenario.domains]]``,
    whole numbers of count fields as integers); ``.csv``/``.parquet``/``.xlsx`` as in
    :func:`write_results` (xlsx: one ``Scenarios`` sheet, an Excel Table). Atomic; no overwrite
    without ``force``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".toml":
        import tomli_w

        doms = _domain_indices(list(table.columns))
        items = []
        for _, r in table.iterrows():
            item: dict[str, Any] = {}
            for c, v in r.items():
                if _DOMAIN_COL.match(str(c)) or _is_absent(v):
                    continue
                item[str(c)] = _toml_value(str(c), v)
            ds = []
            for i in doms:
                d = {k: r[f"domain{i}_{k}"] for k in ("name", "mtbf_h", "nodes_per_domain") if f"domain{i}_{k}" in r.index}
                d = {k: _toml_value(k, v) for k, v in d.items() if not _is_absent(v)}
                if d:
                    ds.append(d)
            if ds:
                item["domains"] = ds
            items.append(item)
        text = tomli_w.dumps({"scenario": items})
        return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), force=force)
    kind = output_kind(path)

    def write(tmp: Path) -> None:
        sink = _sink(kind, tmp, "", summary_sheet=False, sheet="Scenarios")
        sink.write(_file_frame(table))
        sink.close(None)

    return atomic_write(path, write, force=force)


def _toml_value(name: str, v: Any) -> Any:
    v = _plain(v)
    if isinstance(v, float) and v.is_integer() and (name in ("nodes", "gpus_per_node") or name.endswith("nodes_per_domain")):
        return int(v)
    return v
