"""Sweeps and streaming: grids of scenarios over a base, tables completed from a base, any rows
evaluated chunk by chunk, and the summary of a batch.

Sweeps (:func:`sweep`, :func:`sweep_grid`, :func:`sweep_dask`, :func:`parse_axis`)
---------------------------------------------------------------------------------
The cartesian product of axes over a base :class:`~ckptplan.engine.scenario.Scenario` (the caller
loads a template first, e.g. with :func:`ckptplan.files.load_scenario`: the engine reads no file);
rows = product of the axis lengths, the first axis varying slowest (as :func:`itertools.product`).
Rule violations inside the grid (a negative stall, an interval too short for the write) are row
errors like any other (:func:`.batch.evaluate_rows`). Range syntax for the command line:
:func:`parse_axis`.

Tables completed from a base scenario: :mod:`engine.template_fill` (:func:`fill_from_template`,
:class:`TemplateFill`, re-exported here).

Streaming (:func:`iter_results`)
--------------------------------
A table, a :class:`SweepGrid` or an evaluated dask DataFrame, evaluated and handed over in chunks
of rows, in order, so a file writer (:func:`ckptplan.files.results.write_results`) keeps memory
flat whatever the row count.

Large sweeps on Dask
--------------------
:func:`sweep_dask` builds the grid lazily, one partition per range of rows, on the workers, and
evaluates it there with :func:`.batch.evaluate_rows`; :func:`iter_results` streams the partitions
back in order with a bounded number in flight. Needs ``dask[dataframe]`` and ``distributed``
(optional dependencies, imported only on that path).
"""

from __future__ import annotations

import collections
import difflib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import montecarlo as _mc
from .batch import RANKING_METRIC, STATUS_OK, evaluate_rows
from .columns import TEXT_DTYPE, column_kind, int_series, is_dask, is_integer_column, plain_value
from .errors import InputError
from .fields import (DEFAULT_CHUNK_ROWS, DEFAULT_RUNS, DEFAULT_SEED, FIELDS, MAX_SWEEP_ROWS)
from .gate import as_float_array
from .scenario import Scenario, to_table
from .spot_rates import replaced_preemption_rates
from .scenario import is_absent as _is_absent
from .scenario import is_number as _is_number
from .template_fill import TemplateFill, check_base_scenario, fill_from_template  # the first and last re-exported

__all__ = ["MAX_AXIS_VALUES", "BatchSummary", "SweepGrid", "TemplateFill", "fill_from_template", "iter_results",
           "parse_axis", "summarize", "sweep", "sweep_dask", "sweep_grid"]

#: largest axis :func:`parse_axis` expands
MAX_AXIS_VALUES = 1_000_000


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
            span = math.log(b) - math.log(a)  # log(b / a) would overflow for a range over the whole float range
            count = _count(span / math.log(step), item, name, text)
            make = lambda i: np.where(np.isfinite(step ** i), a * step ** i,  # noqa: E731
                                      np.exp(math.log(a) + i * math.log(step)))  # step**i alone overflows
        elif op == "+":
            if step <= 0:
                raise InputError(name, text, f"arithmetic range {item!r} needs a step > 0")
            count = _count((b - a) / step, item, name, text)
            make = lambda i: a + i * step  # noqa: E731
        else:
            raise InputError(name, text, f"range {item!r}: step {parts[2].strip()!r} must start with x (geometric) "
                             f"or + (arithmetic); {syntax}")
        if count > MAX_AXIS_VALUES:
            raise InputError(name, text, f"range {item!r} has {count:,} values (limit {MAX_AXIS_VALUES:,})")
        with np.errstate(over="ignore", invalid="ignore"):
            made = make(np.arange(count, dtype=float))
        if not np.isfinite(made).all():
            raise InputError(name, text, f"range {item!r} runs beyond the float64 range")
        values.append(_round12(made))
    out = np.concatenate(values)
    if out.size > MAX_AXIS_VALUES:
        raise InputError(name, text, f"{out.size:,} values (limit {MAX_AXIS_VALUES:,})")
    uniq, counts = np.unique(out, return_counts=True)
    if (counts > 1).any():
        raise InputError(name, text, f"the value {uniq[counts > 1][0]:g} appears twice (rows would repeat)")
    return out


def _count(steps: float, item: str, name: str, text: str) -> int:
    """Values of a range of ``steps`` steps (its end included when hit), refusing more than :data:`MAX_AXIS_VALUES`."""
    if not steps + 1e-9 < MAX_AXIS_VALUES:  # also inf and NaN (a step of 1e-300 over 1e300)
        shown = f"{math.floor(steps + 1e-9) + 1:,}" if math.isfinite(steps) else "too many"
        raise InputError(name, text, f"range {item!r} has {shown} values (limit {MAX_AXIS_VALUES:,})")
    return math.floor(steps + 1e-9) + 1


@dataclass(frozen=True)
class SweepGrid:
    """A lazily materialised cartesian grid over a base scenario (picklable: ships to Dask workers).

    ``base``: the base scenario's one-row table columns (numbers as float, text as str/None);
    ``axes``: ordered ``{column: values}``; ``same_work``: scale ``useful_training_h`` by
    ``base nodes / row nodes`` (perfect scaling, as :meth:`Scenario.with_nodes`). Row ``i``
    (0-based) takes axis ``k``'s value number ``(i // prod(len(later axes))) % len(axis k)``.
    Whole-number columns (``nodes``, ``gpus_per_node``, ...) are ``Int64`` when every value of the
    grid is whole (the same type in every chunk), else float64.
    """

    base: dict
    axes: dict
    same_work: bool = False
    tiers: tuple = ()                                   # a tier design every row follows (from the base's setup)
    failure_classes: dict = field(default_factory=dict)
    #: the validated base :class:`Scenario` the rows derive from: a chunk is checked where it differs from it
    #: (the axes, the scaled work: :func:`engine.pipeline.changed_cells`), not validated again
    scenario: Any = None

    def design_options(self) -> dict:
        """``tiers`` and ``failure_classes`` for :func:`evaluate_rows` (empty without tiers)."""
        return {"tiers": self.tiers, "failure_classes": self.failure_classes} if self.tiers else {}

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
            if column_kind(c) == "text":
                cols[c] = pd.Series(np.full(len(idx), v, dtype=object), index=index, dtype=TEXT_DTYPE)
            else:
                cols[c] = np.full(len(idx), np.nan if v is None else float(v))
        lengths = [len(v) for v in self.axes.values()]
        stride = int(np.prod(lengths, dtype=object)) if lengths else 1
        for (c, values), L in zip(self.axes.items(), lengths):
            stride //= L
            cols[c] = np.asarray(values, dtype=float)[(idx // stride) % L]
        if self.same_work:
            cols["useful_training_h"] = np.asarray(cols["useful_training_h"]) * float(self.base["nodes"]) / cols["nodes"]
        for c in [c for c in cols if is_integer_column(c) and self._whole(c)]:  # whole on every row of the grid
            cols[c] = int_series(np.asarray(cols[c], dtype=float), index)
        return pd.DataFrame(cols, index=index)

    def _whole(self, column: str) -> bool:
        values = self.axes[column] if column in self.axes else [self.base[column]]
        return all(v is None or (math.isfinite(float(v)) and float(v) % 1 == 0) for v in values)


def _axis_values(values: Any) -> np.ndarray:
    """An axis as a flat array: a numeric numpy array (integers, floats) as float64, whose values the caller
    checks at array speed (a million-value axis in milliseconds); anything else as objects, checked one by one."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu":
        with np.errstate(over="ignore"):
            return values.astype(np.float64).reshape(-1)
    return np.asarray(values, dtype=object).reshape(-1)


def sweep_grid(base: Scenario, *, same_work: bool = False, setup: Any = None, **axes: Sequence[float]) -> SweepGrid:
    """The grid of ``axes`` over the scenario ``base``, not yet evaluated.

    Axis names: numeric scenario fields (:data:`~engine.scenario.FIELDS`), setup fields
    (:data:`~engine.fields.SETUP_FIELDS`) or the base's ``domain{i}_mtbf_h``/``domain{i}_nodes_per_domain``.
    Values: finite numbers, no repeats. ``setup``: the base's storage and recovery setup
    (:class:`engine.setup.RecoverySetup`): its fields are columns of every row, the stall, write and
    restart it derives are derived per row (from the row's nodes, bandwidths ...), and its tiers
    apply to every row (:meth:`SweepGrid.design_options`).
    Sweeping ``node_mtbf_h`` drops a ``job_mtbf_h`` override of the base (else the override would
    win on every row), as ``ckptplan plan --node-mtbf-h`` does. ``same_work=True``: the job needs
    the same useful GPU-hours on every row (``useful_training_h`` scales by base nodes / nodes).
    """
    sc = check_base_scenario(base)
    # description and source describe the template, not each row: left out of the grid
    table = to_table([sc]).drop(columns=["description", "source"])
    row = {c: (None if (isinstance(v, float) and math.isnan(v)) else (v.item() if isinstance(v, np.generic) else v))
           for c, v in table.iloc[0].items()}
    if not axes:
        raise InputError("axes", None, "give at least one axis, e.g. checkpoint_stall_min=[0.5, 1, 2]")
    clean: dict[str, np.ndarray] = {}
    for name, values in axes.items():
        if column_kind(name) != "number" or (name.startswith("domain") and name not in row):
            known = [f.name for f in FIELDS]
            close = difflib.get_close_matches(name, known, n=1)
            raise InputError("axis", name, "is not a numeric scenario field" + (f" (did you mean {close[0]}?)" if close else ""))
        if isinstance(values, (str, bytes)):
            values = parse_axis(values, name)
        arr = _axis_values(values)
        if arr.size == 0:
            raise InputError(name, list(values), "an axis needs at least one value")
        for v in arr if arr.dtype == object else arr[~np.isfinite(arr)][:1]:
            try:
                finite = _is_number(v) and math.isfinite(float(v))
            except OverflowError:  # an int beyond the float range
                finite = False
            if not finite:
                shown = f"~1e{len(str(abs(v))) - 1}" if isinstance(v, int) and not isinstance(v, bool) else v
                raise InputError(name, shown, "axis values must be finite numbers within the float64 range")
        arr = arr.astype(float)
        uniq, counts = np.unique(arr, return_counts=True)
        if (counts > 1).any():
            raise InputError(name, float(uniq[counts > 1][0]), "appears twice in the axis (rows would repeat)")
        clean[name] = arr
    if "node_mtbf_h" in clean and "job_mtbf_h" not in clean:
        row["job_mtbf_h"] = None
        if "failure_rate_source" in row:   # a published rate would contradict the swept node MTBF
            row["failure_rate_source"] = None
    # a swept preemption rate replaces the base's other one and its published band (engine.spot_rates)
    row.update({k: None for k in replaced_preemption_rates(clean) if k in row})
    if same_work and not isinstance(same_work, bool):
        raise InputError("same_work", same_work, "must be True or False")
    tiers, classes = (), {}
    if setup is not None:
        row.update({c: v for c, v in setup.columns().items() if c not in clean})
        row.update({c: None for c in setup.derives() if c not in clean})   # derived per row, not the base's value
        tiers, classes = tuple(setup.tiers), dict(setup.failure_classes)
    return SweepGrid(base=row, axes=clean, same_work=bool(same_work), tiers=tiers, failure_classes=classes, scenario=sc)


def sweep(base: Scenario, *, deadline: bool = False, runs: int = DEFAULT_RUNS,
          seed: int = DEFAULT_SEED, failures: Union[str, "_mc.FailureLaw"] = "exponential", final_save: bool = False,
          same_work: bool = False, max_rows: int = MAX_SWEEP_ROWS, setup: Any = None,
          **axes: Sequence[float]) -> pd.DataFrame:
    """Evaluate the cartesian grid of ``axes`` over ``base``: one row per combination.

    ``sweep(base, checkpoint_stall_min=[0.5, 1, 2], nodes=[64, 128, 256], price_per_gpu_hour=[2, 2.5])``
    gives 3 x 3 x 2 = 18 rows, the first axis varying slowest; an axis may also be a string in
    :func:`parse_axis` syntax (``nodes="64:4096:x2"``). Other arguments as :func:`evaluate_rows` and
    :func:`sweep_grid`. In memory: refuses grids above ``max_rows`` (about 0.6 KB per result row);
    stream larger ones with :func:`iter_results` + :func:`ckptplan.workbook.results.write_results`
    or run them on Dask with :func:`sweep_dask`.
    """
    if isinstance(max_rows, (bool, np.bool_)) or not isinstance(max_rows, (int, np.integer)) or max_rows < 1:
        raise InputError("max_rows", max_rows, "must be a whole number >= 1")
    grid = sweep_grid(base, same_work=same_work, setup=setup, **axes)
    if grid.rows > max_rows:
        raise InputError("rows", grid.rows, f"exceeds max_rows = {max_rows:,} for an in-memory sweep: stream it to a "
                         "file (ckptplan sweep -o, ckptplan.workbook.results.write_results) or use sweep_dask")
    return evaluate_rows(grid.chunk(), deadline=deadline, runs=runs, seed=seed, failures=failures,
                         final_save=final_save, **grid.design_options(), scenarios=grid.scenario)


def sweep_dask(base: Scenario, *, partition_rows: int = DEFAULT_CHUNK_ROWS,
               deadline: bool = False, runs: int = DEFAULT_RUNS, seed: int = DEFAULT_SEED,
               failures: Union[str, "_mc.FailureLaw"] = "exponential", final_save: bool = False,
               same_work: bool = False, setup: Any = None, **axes: Sequence[float]):
    """:func:`sweep` as a lazy ``dask.dataframe.DataFrame``: the grid is built on the workers.

    Partition ``k`` holds grid rows ``k*partition_rows ..``; each is built by
    :meth:`SweepGrid.chunk` and evaluated by :func:`evaluate_rows` (``map_partitions``), so the
    result equals :func:`sweep` exactly, with no row count limit on the client. Compute it on any
    ``distributed`` cluster, or stream it to a file with :func:`ckptplan.workbook.results.write_results`.
    """
    import dask.dataframe as dd

    grid = sweep_grid(base, same_work=same_work, setup=setup, **axes)
    step = int(as_float_array("partition_rows", partition_rows, "count"))
    bounds = [(a, min(a + step, grid.rows)) for a in range(0, grid.rows, step)]
    table = dd.from_map(_grid_part, bounds, grid=grid, meta=grid.chunk(0, 0),
                        divisions=[a + 1 for a, _ in bounds] + [grid.rows], label="ckptplan-sweep-grid",
                        enforce_metadata=False)
    return evaluate_rows(table, deadline=deadline, runs=runs, seed=seed, failures=failures, final_save=final_save,
                         **grid.design_options())


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
        options = {**source.design_options(), **options}
        for a in range(0, source.rows, step):
            yield evaluate_rows(source.chunk(a, a + step), **options, scenarios=source.scenario)
    elif isinstance(source, pd.DataFrame):
        cell_errors = options.pop("cell_errors", source.attrs.get("cell_errors", {}))
        evaluate_rows(source.iloc[:0], **options)   # the table's own problems (after its setup fills it), at once
        if len(source) == 0:
            yield evaluate_rows(source, cell_errors=cell_errors, **options)
        for a in range(0, len(source), step):
            yield evaluate_rows(source.iloc[a:a + step], cell_errors=cell_errors, **options)
    elif is_dask(source):
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
    useful training really costs once saves, rework and restarts are paid, and a setup's storage and
    spares: ``total_cost`` is everything the plan pays) and ``describe`` the row's values of the
    ``describe`` columns. Ties keep the first row. ``first_errors``: up to
    ``max_errors`` ``(row, message)`` pairs in input order; ``warned``: ok rows with a model
    warning (``warnings`` column), the first ``max_errors`` of them in ``first_warnings``.
    ``template``: what the table took from a base scenario (:meth:`TemplateFill.to_dict`),
    None when it took nothing.
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
    warned: int = 0
    first_warnings: list = field(default_factory=list)
    template: Optional[dict] = None

    def update(self, part: pd.DataFrame) -> None:
        """Fold one chunk of results in (chunks in input order)."""
        n = len(part)
        self.rows += n
        bad = np.asarray(part["status"] != STATUS_OK, dtype=bool)
        k = int(bad.sum())
        self.errors += k
        self.ok += n - k
        self._first(part, bad, "error", self.first_errors)
        if "warnings" in part.columns:
            w = part["warnings"]
            if isinstance(w.dtype, pd.StringDtype):  # text or missing only: vectorised
                texts = (w.str.len() > 0).to_numpy(dtype=bool, na_value=False)
            else:
                texts = np.array([isinstance(v, str) and v != "" for v in w.to_numpy(dtype=object)], dtype=bool)
            warned = ~bad & texts
            self.warned += int(warned.sum())
            self._first(part, warned, "warnings", self.first_warnings)
        good = np.flatnonzero(~bad)
        if not len(good) or self.metric not in part.columns:
            return
        metric = part[self.metric].to_numpy(dtype=float)[good]
        keep = np.isfinite(metric)
        good, metric = good[keep], metric[keep]
        if "currency" in part.columns:
            col = part["currency"]
            if isinstance(col.dtype, pd.StringDtype):  # text or missing only: vectorised
                cur = col.fillna("USD").to_numpy(dtype=object)[good]
            else:
                cur = col.to_numpy(dtype=object)[good]
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

    def _first(self, part: pd.DataFrame, mask: np.ndarray, column: str, into: list) -> None:
        if mask.any() and len(into) < self.max_errors:
            texts = part[column].to_numpy(dtype=object)
            for p in np.flatnonzero(mask)[: self.max_errors - len(into)]:
                into.append((plain_value(part.index[p]), str(texts[p])))

    def _record(self, part: pd.DataFrame, p: int, value: float) -> dict:
        row = part.iloc[p]
        return {"row": plain_value(part.index[p]), "value": value,
                "total_cost": float(row.get("total_cost", np.nan)), "goodput": float(row.get("goodput", np.nan)),
                "describe": {c: plain_value(row[c]) for c in self.describe if c in part.columns}}

    def to_dict(self) -> dict:
        return {"rows": self.rows, "ok": self.ok, "errors": self.errors, "warnings": self.warned,
                "metric": self.metric, "best": self.best, "worst": self.worst,
                "first_errors": [list(e) for e in self.first_errors],
                "first_warnings": [list(e) for e in self.first_warnings], "template": self.template}

    @staticmethod
    def describe_record(rec: dict) -> str:
        """``name=value`` pairs of a best/worst record (or its row number)."""
        parts = [f"{k}={_fmt(v)}" for k, v in rec["describe"].items()]
        return ", ".join(parts) if parts else f"row {rec['row']}"


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def summarize(results: pd.DataFrame, describe: Sequence[str] = ("name",)) -> BatchSummary:
    """The :class:`BatchSummary` of an evaluated table (or use ``BatchSummary.update`` per chunk)."""
    s = BatchSummary(describe=tuple(describe))
    s.update(results)
    return s
