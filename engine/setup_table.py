"""The storage and recovery setup as table columns: the setup steps of the plan pipeline (:func:`engine.pipeline.plan_table`).

A scenario table (one scenario per row, :func:`engine.to_table`) may also hold setup columns, named as
:data:`engine.fields.SETUP_FIELDS` (``parameters_b``, ``write_gb_s_per_writer``, ``repair_h`` ...;
an empty cell is a field not given). This module derives, per row and on whole numpy columns (no
Python step per row), what :func:`~engine.setup.plan_setup` derives for that row's scenario and
setup without tiers (tiers are not table columns):

* :func:`setup_columns`: the checkpoint size, the derived stall, background write and restore,
  each part of the restart pipeline and their sum, the spare pool's figures, and (given the wall
  hours) the storage and spare money (:data:`SETUP_COLUMNS`);
* :func:`filled_table`: the table with ``checkpoint_stall_min``, ``async_write_min``, ``restart_min``
  and ``downtime_min`` filled in where a row does not state them and its setup derives them (a value the
  row states wins, as in ``plan_setup``).

The pipeline (:func:`engine.pipeline.plan_table`) runs them for ``plan``, ``compare``, ``batch``, ``sweep``, the
workbook and the ``CKPT_`` functions; the money is summed there (:func:`engine.pipeline.setup_figures`).

Same rules, same numbers: every cell is checked against its registry rule, then the rules
``plan_setup`` applies across fields (a bandwidth or a storage price needs ``parameters_b``;
``spares`` needs ``repair_h``); the figures come from the same engine functions
(:mod:`engine.storage`, :mod:`engine.recovery`) on the same numbers, so each row equals
``plan_setup`` of that row (the tests hold them to 1e-12). A per-writer bandwidth left empty
leaves the aggregate as the only limit (each writer gets aggregate / writers), as in
``plan_setup``; read bandwidths left empty are the write ones.

Problems: with ``problems`` (an :class:`engine.scenario.RowProblems`) every bad row is recorded,
field by field, and its figures are NaN; the other rows are computed. Without it the first bad
row raises :class:`InputError` naming the row label and the field, as :func:`engine.validate_table`.

Output columns named like ``plan_setup``'s figures: ``checkpoint_size_gb``,
``derived_checkpoint_stall_min``, ``derived_async_write_min``, ``derived_restore_min``,
``part_<phase>`` (``plan_setup``'s ``restart_parts_min[<phase>]``: the part the pipeline uses,
``init_min`` with its per-1,000-nodes part, ``load_min`` the derived restore when not stated,
``reallocation_min`` the spare pool's when not stated), ``restart_pipeline_min``,
``spare_free_probability``, ``pool_reallocation_min`` (the spare pool's expected reallocation,
whether or not a stated ``reallocation_min`` overrides it), ``reallocation_sd_min`` (its standard
deviation per node-replacing failure, fixed repair times: :func:`engine.recovery.reallocation_sd_min`),
``mean_nodes_in_repair`` (time-average) and ``pool_waiting_share`` (share of the pool's time the job
waits for a node), ``storage_cost``, ``spare_gpu_hours``,
``spare_cost``. A figure the row's setup does not give is NaN.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from .errors import InputError
from .fields import FIELD_BY_NAME, RULES, SETUP_FIELD_BY_NAME, SETUP_FIELDS

__all__ = ["FILLED", "SETUP_COLUMNS", "bandwidth_columns", "blank_cells", "filled_table", "isolate_refusals",
           "money_columns", "restore_column", "save_columns", "setup_columns", "table_job_mtbf_h"]

#: the restart phases in pipeline order (engine.recovery.RESTART_PHASES)
_PHASES = ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min", "warmup_min")
#: what :func:`setup_columns` returns, in order (the last three only when the wall hours are given)
SETUP_COLUMNS = ("checkpoint_size_gb", "derived_checkpoint_stall_min", "derived_async_write_min",
                 "derived_restore_min", "part_detection_min", "part_reallocation_min", "part_startup_min",
                 "part_init_min", "part_load_min", "part_warmup_min", "restart_pipeline_min", "spare_free_probability",
                 "pool_reallocation_min", "reallocation_sd_min", "mean_nodes_in_repair", "pool_waiting_share",
                 "storage_cost", "spare_gpu_hours", "spare_cost")
#: scenario column -> the setup figure that fills it when the row leaves it empty (``downtime_min``, the restart's
#: wait for a node, only where ``restart_min`` is filled too: a stated restart keeps the downtime stated with it)
FILLED = {"checkpoint_stall_min": "derived_checkpoint_stall_min", "async_write_min": "derived_async_write_min",
          "restart_min": "restart_pipeline_min", "downtime_min": "part_reallocation_min"}
#: engine argument names -> the table's column names, for the messages of refused rows
_NAMES = {"size_gb": "parameters_b", "readers": "writers", "read_gb_s_per_reader": "read_gb_s_per_writer",
          "init_fixed_min": "init_min", "node_replacement_rate_per_h": "repair_h", "months": "wall_h", "h": "wall_h"}


# ------------------------------------------------------------------------------ the pieces (also the Excel functions')

def bandwidth_columns(per_writer: Any, aggregate: Any, writers: Any) -> tuple[np.ndarray, np.ndarray]:
    """(per-writer, aggregate) GB/s for :mod:`engine.storage`, element-wise, NaN standing for a blank.

    The rule of plan_setup on arrays: a blank aggregate is no shared limit
    (``inf``); a blank per-writer figure leaves the aggregate as the only limit, each of the
    ``writers`` getting ``aggregate / writers``. Both blank gives NaN (nothing to derive).
    """
    per, agg, n = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (per_writer, aggregate, writers)))
    with np.errstate(invalid="ignore"):
        per = np.where(np.isnan(per), agg / n, per)   # NaN when the aggregate is blank too
    return per, np.where(np.isnan(agg), np.inf, agg)


def save_columns(size_gb: Any, writers: Any, write_gb_s_per_writer: Any, aggregate_write_gb_s: Any,
                 d2h_gb_s_per_writer: Any) -> tuple[np.ndarray, np.ndarray]:
    """(stall, background write) of one save in minutes, element-wise (:func:`engine.storage.save_times`).

    NaN stands for a blank: a blank ``d2h_gb_s_per_writer`` is a synchronous save (the stall is
    the whole write, the background write 0), a given one an asynchronous save; blank bandwidths
    follow :func:`bandwidth_columns`. Raises :class:`InputError` as ``save_times`` does.
    """
    from .storage import save_times

    size, n, per_, agg_, d2h = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (
        size_gb, writers, write_gb_s_per_writer, aggregate_write_gb_s, d2h_gb_s_per_writer)))
    per, agg = bandwidth_columns(per_, agg_, n)
    stall, write = np.full(size.shape, np.nan), np.full(size.shape, np.nan)
    sync = np.isnan(d2h)
    if sync.any():
        stall[sync], write[sync] = save_times(size[sync], n[sync], per[sync], agg[sync])
    if not sync.all():
        a = ~sync
        stall[a], write[a] = save_times(size[a], n[a], per[a], agg[a], async_save=True, d2h_gb_s_per_writer=d2h[a])
    return stall, write


def restore_column(size_gb: Any, writers: Any, read_gb_s_per_writer: Any, aggregate_read_gb_s: Any) -> np.ndarray:
    """Restore time in minutes, element-wise (:func:`engine.storage.restore_time_min`); NaN = blank, as
    :func:`bandwidth_columns`."""
    from .storage import restore_time_min

    size, n, per_, agg_ = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (
        size_gb, writers, read_gb_s_per_writer, aggregate_read_gb_s)))
    per, agg = bandwidth_columns(per_, agg_, n)
    return np.asarray(restore_time_min(size, n, per, agg), dtype=np.float64)


# ------------------------------------------------------------------------------ validation

class _Cols:
    """A table's numeric columns as validated float arrays: ``given`` (NaN = blank) and ``eff`` (defaults)."""

    def __init__(self, table: pd.DataFrame, problems: Any):
        self.table, self.n, self.problems = table, len(table), problems
        self.given: dict[str, np.ndarray] = {}
        self.eff: dict[str, np.ndarray] = {}

    def read(self, name: str, rule: str, required: bool, default: float | None) -> None:
        from .scenario import number_column

        raw = self.table[name] if name in self.table.columns else None
        self.given[name], self.eff[name], _ = number_column(name, rule, required, default, raw, self.n,
                                                             np.zeros(self.n, dtype=bool), self.problems)

    def has(self, name: str) -> np.ndarray:
        return ~np.isnan(self.given[name])

    def stated(self, name: str) -> np.ndarray:
        """Cells holding something (a bad value too: its own rule reports it, not a rule across fields)."""
        return ~blank_cells(self.table[name]) if name in self.table.columns else np.zeros(self.n, dtype=bool)


def _problem(problems: Any, mask: np.ndarray, make: Callable[[int], InputError]) -> None:
    if mask.any():
        problems.add(np.flatnonzero(mask), make)


def isolate_refusals(problems: Any, rows: np.ndarray, compute: Callable[[np.ndarray], tuple], count: int) -> list[np.ndarray]:
    """``compute(positions)`` (one engine call, arrays aligned with the positions) over ``rows``.

    Rows the engine refuses (an overflow the per-cell rules cannot see) are recorded in
    ``problems`` with the engine's message, field named as the table's column; the error's position
    names the row, else the rows are halved until it is found. Returns ``count`` arrays over ``rows``
    (NaN where refused).
    """
    out = [np.full(rows.size, np.nan) for _ in range(count)]
    pending = [np.arange(rows.size)]
    while pending:
        idx = pending.pop()
        if not idx.size:
            continue
        try:
            with np.errstate(all="ignore"):
                got = compute(rows[idx])
        except InputError as exc:
            pos = exc.position[0] if exc.position and len(exc.position) == 1 else None
            if idx.size == 1 or (pos is not None and 0 <= pos < idx.size):
                k = 0 if idx.size == 1 else int(pos)
                err = InputError(_NAMES.get(exc.field, exc.field), exc.value, exc.rule)
                problems.add([int(rows[idx[k]])], lambda _p, err=err: err)
                pending.append(np.delete(idx, k))
            else:
                pending += [idx[idx.size // 2:], idx[:idx.size // 2]]
            continue
        for o, g in zip(out, got):
            o[idx] = g
    return out


def _raise_first(table: pd.DataFrame, problems: Any) -> None:
    if problems.by_row:
        p = min(problems.by_row)
        err = problems.by_row[p][0]
        if isinstance(err, InputError):
            raise InputError(f"row {table.index[p]}: {err.field}", err.value, err.rule)
        raise InputError(f"row {table.index[p]}", None, str(err))


def _rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask)


# ------------------------------------------------------------------------------ the setup's figures

def setup_columns(table: pd.DataFrame, job_mtbf_h: Any, wall_h: Any = None, *, problems: Any = None,
                  quiet_mtbf: bool = False, held_h: Any = None) -> dict[str, np.ndarray]:
    """Every figure the setup derives, per row of ``table`` (see the module notes): name -> float array.

    ``table``: scenario columns (``nodes`` required: the default writers and the communicator's
    scale; ``gpus_per_node``, and ``price_per_gpu_hour`` with ``wall_h``) and any setup columns.
    ``job_mtbf_h``: each row's job MTBF in hours (:func:`engine.evaluate`'s ``job_mtbf_h``; one
    number or one per row), used by the spare pool only. ``wall_h``: each row's wall hours
    (``evaluate``'s ``wall_h`` at the scenario the setup fills in); when given, ``storage_cost``,
    ``spare_gpu_hours`` and ``spare_cost`` are added (money in the row's currency).
    ``problems``: see the module notes. ``quiet_mtbf``: a row whose ``job_mtbf_h`` is missing or breaks its rule
    gets no spare pool and no problem here (the scenario's own checks report it, as a batch's do).
    ``held_h``: the hours the job holds its nodes, which the spares are billed for (default ``wall_h``; less
    by the wait for capacity of a preemptible plan, :mod:`engine.preemption_table`).
    """
    own = problems is None
    problems = _row_problems(len(table)) if own else problems
    out = _compute(table, job_mtbf_h, wall_h, problems, quiet_mtbf=quiet_mtbf, held_h=held_h)
    if own:
        _raise_first(table, problems)
    return out


def _row_problems(n: int) -> Any:
    from .scenario import RowProblems

    return RowProblems(n)


def _compute(table: pd.DataFrame, job_mtbf_h: Any, wall_h: Any, problems: Any, quiet_mtbf: bool,
             held_h: Any = None) -> dict[str, np.ndarray]:
    from . import storage

    n = len(table)
    c = _Cols(table, problems)
    for f in SETUP_FIELDS:
        c.read(f.name, f.rule, False, f.default)
    for name in ("nodes", "gpus_per_node") + (("price_per_gpu_hour",) if wall_h is not None else ()):
        f = FIELD_BY_NAME[name]
        c.read(name, f.rule, f.required, f.default)
    g, e = c.given, c.eff
    sized = c.has("parameters_b")
    _cross_field_rules(c, problems)
    M = np.broadcast_to(np.asarray(job_mtbf_h, dtype=np.float64), (n,)) if job_mtbf_h is not None else np.full(n, np.nan)
    pool = c.has("repair_h")
    with np.errstate(invalid="ignore"):
        bad_m = pool & ~(np.isfinite(M) & (M > 0))
    if quiet_mtbf:  # the scenario's own problem (evaluate reports it): no pool, no pipeline, no message here
        pool &= ~bad_m
    else:
        _problem(problems, bad_m, lambda p: InputError("job_mtbf_h", float(M[p]), RULES["positive"].message))
    W = None
    if wall_h is not None:
        W = np.broadcast_to(np.asarray(wall_h, dtype=np.float64), (n,))
        with np.errstate(invalid="ignore"):
            bad_w = ~(np.isfinite(W) & (W >= 0))
        _problem(problems, bad_w, lambda p: InputError("wall_h", float(W[p]), RULES["nonnegative"].message))

    def ok() -> np.ndarray:
        return ~problems.mask()

    out = {k: np.full(n, np.nan) for k in SETUP_COLUMNS}
    rows = _rows(ok() & sized)
    (out["checkpoint_size_gb"][rows],) = isolate_refusals(problems, rows, lambda r: (storage.checkpoint_size_gb(
        g["parameters_b"][r], e["bytes_per_parameter"][r], e["extra_state_gb"][r]),), 1)
    size = out["checkpoint_size_gb"]
    writers = np.where(c.has("writers"), g["writers"], e["nodes"])
    bw = ok() & sized & (c.has("write_gb_s_per_writer") | c.has("aggregate_write_gb_s"))
    for is_async in (False, True):
        rows = _rows(bw & (c.has("d2h_gb_s_per_writer") == is_async))
        got = isolate_refusals(problems, rows, lambda r: save_columns(
            size[r], writers[r], g["write_gb_s_per_writer"][r], g["aggregate_write_gb_s"][r],
            g["d2h_gb_s_per_writer"][r]), 2)
        out["derived_checkpoint_stall_min"][rows], out["derived_async_write_min"][rows] = got
    read = np.where(c.has("read_gb_s_per_writer"), g["read_gb_s_per_writer"], g["write_gb_s_per_writer"])
    read_agg = np.where(c.has("aggregate_read_gb_s"), g["aggregate_read_gb_s"], g["aggregate_write_gb_s"])
    rows = _rows(bw & ok())
    (out["derived_restore_min"][rows],) = isolate_refusals(problems, rows, lambda r: (restore_column(
        size[r], writers[r], read[r], read_agg[r]),), 1)
    _restart(out, c, problems, ok, pool, M, bad_m if quiet_mtbf else np.zeros(n, dtype=bool))
    if W is not None:
        _money(out, c, problems, ok, W, W if held_h is None else np.broadcast_to(np.asarray(held_h, float), (n,)))
    else:
        for k in ("storage_cost", "spare_gpu_hours", "spare_cost"):
            del out[k]
    bad = ~ok()
    for v in out.values():
        v[bad] = np.nan
    return out


def _cross_field_rules(c: _Cols, problems: Any) -> None:
    """The rules ``plan_setup`` applies across fields (the first one broken per row is reported)."""
    g, e = c.given, c.eff
    seen = np.zeros(c.n, dtype=bool)
    sized = c.stated("parameters_b")
    for name in ("write_gb_s_per_writer", "aggregate_write_gb_s", "d2h_gb_s_per_writer"):
        hit = ~sized & c.has(name) & ~seen
        _problem(problems, hit, lambda p, name=name: InputError(name, float(g[name][p]),
                                                                "needs the checkpoint size: give parameters_b"))
        seen |= hit
    with np.errstate(invalid="ignore"):
        lonely = (e["spares"] > 0) & ~c.stated("repair_h")
        unpriced = (e["price_per_gb_month"] > 0) & ~sized
    _problem(problems, lonely, lambda p: InputError("spares", _whole_or_float(e["spares"][p]),
                                                    "needs repair_h: how long a failed node takes to come back"))
    _problem(problems, unpriced, lambda p: InputError("price_per_gb_month", float(e["price_per_gb_month"][p]),
                                                      "needs the checkpoint size: give parameters_b"))


def _whole_or_float(v: float) -> int | float:
    """A count as a message shows it: whole and finite as an int, anything else (inf, 2.5) as it is."""
    return int(v) if np.isfinite(v) and float(v).is_integer() else float(v)


def _restart(out: dict, c: _Cols, problems: Any, ok: Callable[[], np.ndarray], pool: np.ndarray, M: np.ndarray,
             skip: np.ndarray) -> None:
    """The restart pipeline's parts and sum, and the spare pool (``engine.setup._restart_parts`` on columns);
    none for the rows ``skip`` (a pool without a job MTBF)."""
    from . import recovery

    g, e = c.given, c.eff
    given = np.zeros(c.n, dtype=bool)
    for p in _PHASES + ("init_per_1000_nodes_min", "repair_h"):
        given |= c.has(p)
    given &= ~skip
    parts = {p: np.nan_to_num(g[p], nan=0.0) for p in _PHASES}
    rows = _rows(given & ok())
    per1000 = np.nan_to_num(g["init_per_1000_nodes_min"], nan=0.0)
    (init,) = isolate_refusals(problems, rows, lambda r: (recovery.communicator_init_min(
        e["nodes"][r], parts["init_min"][r], per1000[r]),), 1)
    parts["init_min"] = np.full(c.n, np.nan)
    parts["init_min"][rows] = init
    restore = out["derived_restore_min"]
    parts["load_min"] = np.where(~c.has("load_min") & ~np.isnan(restore), restore, parts["load_min"])
    rows = _rows(pool & ok())
    rate = e["replacement_share"] / np.where(pool, M, 1.0)
    spares = np.nan_to_num(g["spares"], nan=0.0)
    swap = e["swap_min"]
    free, realloc = isolate_refusals(problems, rows, lambda r: (
        recovery.spare_free_probability(rate[r], g["repair_h"][r], spares[r]),
        recovery.expected_reallocation_min(rate[r], g["repair_h"][r], spares[r], swap[r])), 2)
    out["spare_free_probability"][rows], out["pool_reallocation_min"][rows] = free, realloc
    spread, busy, waiting = isolate_refusals(problems, rows, lambda r: (
        recovery.reallocation_sd_min(rate[r], g["repair_h"][r], spares[r], swap[r]),
        recovery.mean_nodes_in_repair(rate[r], g["repair_h"][r], spares[r]),
        recovery.pool_waiting_share(rate[r], g["repair_h"][r], spares[r])), 3)
    out["reallocation_sd_min"][rows], out["mean_nodes_in_repair"][rows], out["pool_waiting_share"][rows] = (
        spread, busy, waiting)
    # a failure waits for a node only when it needs one replaced: the mean per failure is the share of those
    share = e["replacement_share"]
    parts["reallocation_min"] = np.where(~c.has("reallocation_min") & pool, share * out["pool_reallocation_min"],
                                         parts["reallocation_min"])
    rows = _rows(given & ok())
    (total,) = isolate_refusals(problems, rows, lambda r: (recovery.restart_pipeline_min(
        *(parts[p][r] for p in _PHASES)),), 1)
    for p in _PHASES:
        out[f"part_{p}"][rows] = parts[p][rows]
    out["restart_pipeline_min"][rows] = total


def money_columns(table: pd.DataFrame, size_gb: Any, wall_h: Any, held_h: Any = None, *,
                  problems: Any) -> dict[str, np.ndarray]:
    """The setup's money per row once the plan's hours are known, from what :func:`setup_columns` derived:
    ``storage_cost`` (``size_gb`` x retention x months of ``wall_h`` x price per GB-month; 0 without a size),
    ``spare_gpu_hours`` and ``spare_cost`` (spares x GPUs per node x ``held_h``, default ``wall_h``, x the price
    per GPU-hour of ``table``). The money pass of the plan pipeline (:func:`engine.pipeline.setup_figures`):
    the setup is not derived again. A bill beyond the float64 range is the row's problem (``problems``)."""
    n = len(table)
    c = _Cols(table, problems)
    for name in ("retention", "price_per_gb_month", "spares"):
        f = SETUP_FIELD_BY_NAME[name]
        c.read(name, f.rule, False, f.default)
    for name in ("gpus_per_node", "price_per_gpu_hour"):
        f = FIELD_BY_NAME[name]
        c.read(name, f.rule, f.required, f.default)
    W = np.broadcast_to(np.asarray(wall_h, dtype=np.float64), (n,))
    out = {"checkpoint_size_gb": np.broadcast_to(np.asarray(size_gb, dtype=np.float64), (n,)),
           **{k: np.full(n, np.nan) for k in ("storage_cost", "spare_gpu_hours", "spare_cost")}}
    _money(out, c, problems, lambda: ~problems.mask(), W,
           W if held_h is None else np.broadcast_to(np.asarray(held_h, dtype=np.float64), (n,)))
    del out["checkpoint_size_gb"]
    return out


def _money(out: dict, c: _Cols, problems: Any, ok: Callable[[], np.ndarray], W: np.ndarray, held: np.ndarray) -> None:
    """Storage money over the wall hours ``W`` (the single-level bill) and the spares' over the hours ``held``."""
    from . import storage

    e, g = c.eff, c.given
    rows = _rows(ok())
    size = out["checkpoint_size_gb"]
    sized = ~np.isnan(size)
    (cost,) = isolate_refusals(problems, rows, lambda r: (np.where(sized[r], storage.storage_cost(
        np.where(sized[r], size[r], 0.0), e["retention"][r], e["price_per_gb_month"][r],
        storage.months_from_hours(W[r]), 1), 0.0),), 1)
    out["storage_cost"][rows] = cost
    spares = np.nan_to_num(g["spares"], nan=0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        spare_h = spares * e["gpus_per_node"] * held
        spare_cost = spare_h * e["price_per_gpu_hour"]
    broken = ok() & ~(np.isfinite(spare_h) & np.isfinite(spare_cost))
    _problem(problems, broken, lambda p: InputError("spares", float(spares[p]), "spare GPU-hours x price overflows "
                                                    "(results must stay within the float64 range)"))
    rows = _rows(ok())
    out["spare_gpu_hours"][rows], out["spare_cost"][rows] = spare_h[rows], spare_cost[rows]


# ------------------------------------------------------------------------------ the scenario's stall, write, restart

def blank_cells(column: pd.Series) -> np.ndarray:
    """Cells that state nothing: blank (NaN, None, NA) or empty text."""
    blank = column.isna().to_numpy(copy=True)
    if column.dtype.kind == "O":
        obj = column.to_numpy(dtype=object)
        blank |= np.fromiter((isinstance(v, str) and not v.strip() for v in obj), dtype=bool, count=len(obj))
    return blank


def table_job_mtbf_h(table: pd.DataFrame, changed: Any = None) -> np.ndarray:
    """Each row's job MTBF in hours as :func:`engine.evaluate` gives it (the override, else from nodes and
    domains); NaN where the row's reliability fields break a rule (evaluate reports those).

    Not a validation of the table (the plan pipeline validates it once, after the setup has filled the cells
    this MTBF helps derive): only the reliability cells it reads are checked
    (:func:`engine.scenario.derived_cell_problems`), so no pool is derived from a cell the validation will
    refuse. ``changed``: the table's rows derive from validated scenarios and only these columns differ from
    them (:func:`engine.pipeline.changed_cells`): only the reliability cells among them are checked."""
    from .reliability import FailureDomain, job_mtbf_with_domains
    from .scenario import derived_cell_problems, domain_indices

    n = len(table)
    probe = table.copy(deep=False)
    probe["checkpoint_stall_min"] = 1.0   # the stall may be the setup's to fill: not this probe's business
    try:
        domains = domain_indices(table.columns)
    except InputError:
        return np.full(n, np.nan)
    reliability = {"node_mtbf_h", "nodes", "nonfatal_share", "job_mtbf_h", "failure_rate_source"}
    read = reliability | {c for c in table.columns if str(c).startswith("domain")}
    _, eff, found = derived_cell_problems(probe, read if changed is None else read & set(changed))
    bad = np.zeros(n, dtype=bool)
    for p, errs in found.by_row.items():
        if any(getattr(err, "field", "").split(".")[0] in reliability or getattr(err, "field", "").startswith("domain")
               for err in errs):
            bad[p] = True
    override = ~np.isnan(eff["job_mtbf_h"])
    out = np.where(override & ~bad, eff["job_mtbf_h"], np.nan)
    rows = _rows(~override & ~bad & ~np.isnan(eff["node_mtbf_h"]))

    def compute(r: np.ndarray) -> tuple:
        doms = [FailureDomain(f"domain{i}", np.nan_to_num(eff[f"domain{i}_mtbf_h"][r], nan=np.inf),
                              np.nan_to_num(eff[f"domain{i}_nodes_per_domain"][r], nan=1.0)) for i in domains]
        return (job_mtbf_with_domains(eff["node_mtbf_h"][r], eff["nodes"][r], doms, eff["nonfatal_share"][r]),)

    (out[rows],) = isolate_refusals(_row_problems(n), rows, compute, 1)   # refusals: evaluate's to report
    return out


def filled_table(table: pd.DataFrame, cols: dict[str, np.ndarray], stated: Any = None) -> pd.DataFrame:
    """A copy of ``table`` with :data:`FILLED`'s columns taken from the setup's figures ``cols`` (of
    :func:`setup_columns`) where the row states nothing (a column the table lacks is added).

    ``stated``: column -> per-row mask of the cells the row states (they win over the derived figure);
    by default a cell states its value when it is not blank. A cell not stated keeps its value where the
    setup derives nothing (a scenario's own value, :func:`engine.setup.plan_setups`)."""
    out = table.copy()
    filled_restart = None
    for name, key in FILLED.items():
        derived = cols[key]
        if stated is not None and name in stated:
            given = np.asarray(stated[name], dtype=bool)
        else:
            given = ~blank_cells(table[name]) if name in table.columns else np.zeros(len(table), dtype=bool)
        fill = ~given & ~np.isnan(derived)
        if name == "restart_min":
            filled_restart = fill
        elif name == "downtime_min":
            fill &= filled_restart
        if name not in out.columns:
            out[name] = np.where(fill, derived, np.nan)
        elif not fill.any():
            continue
        elif out[name].dtype.kind in "iuf":
            out[name] = np.where(fill, derived, out[name].to_numpy(dtype=np.float64))
        else:
            cells = out[name].to_numpy(dtype=object).copy()
            cells[fill] = derived[fill]
            out[name] = pd.Series(cells, index=out.index, dtype=object)
    return out
