"""Checkpoint tiers on table rows: the tiered plan of :func:`engine.setup.plan_setup` for many scenarios at once.

A tier design (``[[tiers]]`` and ``[failure_classes]``, :mod:`engine.tiers`) is a pair of tables, not
columns: it applies to every row of a scenario table (``ckptplan batch --template`` takes it from
the base scenario; :func:`engine.batch.evaluate_rows` as ``tiers=`` and ``failure_classes=``). Each
row keeps its own numbers: a tier's save and restore times are the ones the tier states, or derived
per row from the row's checkpoint size and writers with the tier's bandwidths
(:func:`engine.setup_table.save_columns`, :func:`~engine.setup_table.restore_column`), so "host
memory at 25 GB/s per node" stalls a 1,024-node row longer than a 2,048-node one.

Per row, the rules of ``plan_setup`` (which plans its one scenario through this module):

* the restart without the checkpoint load, ``R'``: the restart pipeline's other parts (detection,
  reallocation, start-up, initialisation, warm-up) when the row's setup gives a pipeline and the
  row does not state ``restart_min``; else ``restart_min`` (then taken as the restart without the
  load). A failure of class ``j`` restarts in ``R' + restore_min`` of the first tier surviving it;
* the first tier's compute interval ``T``: the row's ``interval_min`` when given, else the exact
  model's optimum for the tiers' own ``every`` (:func:`engine.tiers.optimum.best_first_interval`);
* the wall time ``useful x`` :func:`engine.tiers.tiered_wall_per_work`, its split
  (:func:`engine.tiers.tiered_breakdown`), the compute money by category at the row's GPUs and
  price, and each tier's storage bill ``size x retention x copies x months x price per GB-month``
  over the wall time's months (:func:`engine.storage.storage_cost`; 0 without a checkpoint size).

Output (:func:`tiered_columns`; minutes, hours, GPU-hours, money in the row's currency):
``chosen_interval_min`` (= ``T``), ``waste_fraction``, ``expected_failures``, ``wall_h``,
``useful_h``, ``save_h``, ``rework_h``, ``restart_h``, ``goodput``, ``gpus``, the GPU-hours and
compute money by category as :func:`engine.evaluate` names them and their sum ``compute_cost`` (the
job's GPU time; the spares, and so ``total_cost``, are the setup's: :func:`engine.pipeline.setup_figures`),
``mean_restart_min`` (per rollback, over the classes and their restore outcomes: failed attempts included),
``failed_restores`` and ``rollbacks_to_start`` (expected restore attempts that fail, and rollbacks whose every
attempt failed: back to the job's start; 0 when no tier's ``restore_failure_probability`` is above 0),
``storage_cost`` (all tiers) and per tier ``i`` (1-based, in the
design's order) :data:`TIER_COLUMNS`: ``tier{i}_every``, ``tier{i}_interval_min``,
``tier{i}_checkpoint_stall_min``, ``tier{i}_restore_min``, ``tier{i}_restart_min``,
``tier{i}_storage_cost``. Tier names are in :attr:`TierDesign.names` (and the batch's ``tier{i}_name``).

Validity: :mod:`engine.tiers`' assumptions (nested tiers, Poisson failures split into independent
classes, tiers that do not fail on their own); the single-level models' other figures (Young's and
Daly's intervals, the analytic deadline answer) describe a plan the job does not follow and are not
given for tiered rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import InputError
from ..fields import TIER_KEYS
from ..gate import check_number
from .model import Tier, check_design, recovery_index, restore_outcomes, tiered_breakdown, tiered_wall_per_work
from .optimum import best_first_interval

__all__ = ["SINGLE_LEVEL_ONLY", "TIER_COLUMNS", "TIERED_COLUMNS", "TierDesign", "checked_figures", "design_at",
           "design_structure", "mean_restart_min", "stack_designs", "stall_derived", "tier_columns", "tier_design",
           "tier_times", "tiered_columns"]

#: per-tier output columns, ``tier{i}_<name>`` (i = 1, 2, ...)
TIER_COLUMNS = ("every", "interval_min", "checkpoint_stall_min", "restore_min", "restart_min", "storage_cost")
#: the plan's columns of a tiered row, besides the per-tier ones
TIERED_COLUMNS = ("chosen_interval_min", "waste_fraction", "expected_failures", "wall_h", "useful_h", "save_h",
                  "rework_h", "restart_h", "gpus", "job_gpu_hours", "total_gpu_hours", "compute_cost", "useful_gpu_hours", "useful_cost",
                  "save_gpu_hours", "save_cost", "rework_gpu_hours", "rework_cost", "restart_gpu_hours",
                  "restart_cost", "goodput", "mean_restart_min", "storage_cost", "failed_restores", "rollbacks_to_start")
#: single-level figures a tiered row does not have: they describe a plan its job does not follow
SINGLE_LEVEL_ONLY = ("effective_stall_min", "young_interval_min", "daly_interval_min", "exact_interval_min",
                     "first_order_waste", "young_min_waste", "waste_fraction_at_optimum", "waste_fraction_at_young",
                     "waste_fraction_at_daly", "p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99",
                     "deadline_approximation_ok")
_CATEGORIES = ("useful", "save", "rework", "restart")
_BANDWIDTHS = ("write_gb_s_per_writer", "aggregate_write_gb_s", "read_gb_s_per_writer", "aggregate_read_gb_s")


@dataclass(frozen=True)
class TierDesign:
    """A validated tier design: ``tiers`` (dicts with every key of :data:`engine.fields.TIER_KEYS`, absent
    ones None, defaults applied to ``every``/``retention``/``copies``/``price_per_gb_month``) and
    ``classes`` (failure class -> share of job failures)."""

    tiers: tuple
    classes: dict

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t["name"] for t in self.tiers)

    def label(self, i: int) -> str:
        return f"tiers ({self.tiers[i]['name']})"


#: a tier's numbers: a stacked design (:func:`stack_designs`) holds each as one value or one per row
_NUMBERS = ("every", "checkpoint_stall_min", "restore_min", "retention", "copies", "price_per_gb_month",
            "restore_failure_probability") + _BANDWIDTHS


def design_structure(design: TierDesign) -> tuple:
    """What designs must share to be planned in one pass (:func:`stack_designs`): the tiers' names, the classes
    each survives, which times and bandwidths each tier states, and the class names (numbers may differ)."""
    return (tuple((t["name"], tuple(t["survives"]), tuple(t[k] is None for k in _NUMBERS)) for t in design.tiers),
            tuple(design.classes))


def stack_designs(designs: Any) -> TierDesign:
    """Designs of one :func:`design_structure` as one design over rows (row ``k`` follows ``designs[k]``): each
    number the designs share stays one value, one that differs becomes an array with one value per row.

    Every design was validated on its own (:func:`tier_design`); the tiered plan (:func:`tiered_columns`) and
    the model take per-row numbers (:mod:`engine.tiers.model` broadcasts over rows), so the rows of many designs
    are planned, their optima searched, in one vectorised pass."""
    designs = list(designs)
    first = designs[0]
    if len(designs) == 1:
        return first

    def merged(values: list) -> Any:
        if values[0] is None:
            return None
        arr = np.asarray(values, dtype=np.float64)
        return values[0] if np.all(arr == arr[0]) else arr

    tiers = []
    for i, t in enumerate(first.tiers):
        tier = dict(t)
        tier.update({k: merged([d.tiers[i][k] for d in designs]) for k in _NUMBERS})
        tiers.append(tier)
    classes = {c: merged([d.classes[c] for d in designs]) for c in first.classes}
    return TierDesign(tuple(tiers), classes)


def _at(value: Any, rows: Any) -> Any:
    """A design's number at the rows ``rows``: one value as it is, a per-row array cut to those rows."""
    return value[rows] if isinstance(value, np.ndarray) else value


def design_at(design: TierDesign, rows: Any) -> TierDesign:
    """The design cut to the rows ``rows`` (a stacked design's per-row numbers; one value stays as it is)."""
    return TierDesign(tuple({k: (_at(v, rows) if k in _NUMBERS else v) for k, v in t.items()} for t in design.tiers),
                      {c: _at(v, rows) for c, v in design.classes.items()})


def checked_figures(cols: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """What the model checks (:mod:`engine.validity`) read of a tiered plan (:func:`tiered_columns`' output):
    its first interval, waste and failures, the first tier's stall, and NaN for the single-level-only
    figures (:data:`SINGLE_LEVEL_ONLY`, a plan the job does not follow). ``plan_setup`` and a tiered
    batch row check the same figures, so they give the same warnings."""
    out = {c: np.asarray(cols[c], dtype=np.float64) for c in ("chosen_interval_min", "waste_fraction",
                                                               "expected_failures")}
    out["checkpoint_stall_min"] = np.asarray(cols["tier1_checkpoint_stall_min"], dtype=np.float64)
    n = out["checkpoint_stall_min"].shape
    out.update({c: np.full(n, np.nan) for c in SINGLE_LEVEL_ONLY})
    return out


def stall_derived(size_gb: Any, derived_stall: Any, stated_stall: Any, tiers: Any = ()) -> np.ndarray:
    """Whether the stall a plan uses comes from the real checkpoint size and a bandwidth, not a measurement
    (the check for a stall measured on a small model then does not apply), per row.

    With tiers: the first tier's stall, derived when the row has a size and the tier states none. Without:
    the setup's derived stall (NaN: none) where the row states no stall of its own (``stated_stall``).
    """
    if len(tiers):
        return ~np.isnan(np.asarray(size_gb, dtype=np.float64)) & (tiers[0].get("checkpoint_stall_min") is None)
    return ~np.asarray(stated_stall, dtype=bool) & ~np.isnan(np.asarray(derived_stall, dtype=np.float64))


def tier_columns(m: int) -> tuple[str, ...]:
    """The per-tier column names of a design of ``m`` tiers, tier by tier."""
    return tuple(f"tier{i + 1}_{c}" for i in range(m) for c in TIER_COLUMNS)


def tier_design(tiers: Any, failure_classes: Any) -> TierDesign:
    """Validate a design once, for every row: raises :class:`InputError` naming the tier and field.

    Each tier needs ``name``, ``every`` and ``survives``, and for its save (restore) time either the
    time or a write (read or write) bandwidth to derive it from; bandwidths must be > 0, ``every``
    and ``retention`` and ``copies`` whole and >= 1, prices >= 0, ``restore_failure_probability`` in [0, 1)
    (default 0); then the rules of
    :func:`engine.tiers.check_design` (nested everies, every class survived by some tier, shares
    summing to 1, ...).
    """
    if tiers is None or failure_classes is None:
        raise InputError("failure_classes" if tiers is not None else "tiers", None,
                         "tiers and failure classes come together: give both, or neither")
    if isinstance(tiers, (str, bytes, Mapping)) or not hasattr(tiers, "__iter__"):
        raise InputError("tiers", tiers, "must be a list of tier tables")
    out = []
    for i, t in enumerate(tiers):
        if not isinstance(t, Mapping):
            raise InputError(f"tiers[{i}]", t, "must be a table with name, every and survives")
        label = f"tiers ({t.get('name', i + 1)})"
        unknown = sorted(str(k) for k in set(t) - set(TIER_KEYS))
        if unknown:
            raise InputError(label, ", ".join(unknown), f"unknown key; a tier holds {', '.join(TIER_KEYS)}")
        missing = [k for k in ("name", "every", "survives") if k not in t]
        if missing:
            raise InputError(label, ", ".join(missing), "missing: a tier needs name, every and survives")
        d = {k: t.get(k) for k in TIER_KEYS}
        for k in ("checkpoint_stall_min", "restore_min"):
            d[k] = check_number(f"{label}.{k}", d[k], "nonnegative")
        for k in _BANDWIDTHS:
            d[k] = check_number(f"{label}.{k}", d[k], "positive")
        d["every"] = check_number(f"{label}.every", d["every"], "count")
        d["retention"] = check_number(f"{label}.retention", 1 if d["retention"] is None else d["retention"], "count")
        d["copies"] = check_number(f"{label}.copies", 1 if d["copies"] is None else d["copies"], "count")
        d["price_per_gb_month"] = check_number(f"{label}.price_per_gb_month", d["price_per_gb_month"] or 0.0, "nonnegative")
        p = d["restore_failure_probability"]
        d["restore_failure_probability"] = check_number(f"{label}.restore_failure_probability", 0.0 if p is None else p,
                                                        "fraction")
        if d["checkpoint_stall_min"] is None and d["write_gb_s_per_writer"] is None and d["aggregate_write_gb_s"] is None:
            raise InputError(f"{label}.checkpoint_stall_min", None, "give it, or the tier's write bandwidth "
                             "(write_gb_s_per_writer or aggregate_write_gb_s) with parameters_b")
        if d["restore_min"] is None and not any(d[k] is not None for k in _BANDWIDTHS):
            raise InputError(f"{label}.restore_min", None, "give it, or the tier's read or write bandwidth "
                             "with parameters_b")
        survives = d["survives"]
        d["survives"] = (survives,) if isinstance(survives, str) else tuple(survives) if isinstance(
            survives, (list, tuple)) else survives
        out.append(d)
    # the structure (names, nested everies, classes): the times are per row, checked there
    check_design([{**_structure(d), "checkpoint_stall_min": 0.0, "restore_min": 0.0} for d in out], failure_classes)
    return TierDesign(tuple(out), {str(c): float(v) for c, v in failure_classes.items()})


def _structure(d: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": d["name"], "every": d["every"], "survives": d["survives"], "retention": d["retention"],
            "price_per_gb_month": d["price_per_gb_month"], "copies": d["copies"],
            "restore_failure_probability": d["restore_failure_probability"]}


def tier_times(design: TierDesign, size_gb: Any, writers: Any, *, problems: Any = None,
               rows: Any = None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each tier's save stall and restore time in minutes per row: (stalls, restores), lists of arrays.

    A stated time is that time; else :func:`engine.setup_table.save_columns` (a synchronous write: the
    tiers' stalls) and :func:`~engine.setup_table.restore_column` of the row's ``size_gb`` with the
    tier's bandwidths (reads default to the tier's write bandwidths). A row without a checkpoint size
    (NaN) cannot derive them: NaN, and with ``problems`` (an :class:`engine.scenario.RowProblems` over
    the positions ``rows``, default all) a problem naming the tier and field.
    """
    from ..setup_table import isolate_refusals, restore_column, save_columns

    size, n_writers = (a.reshape(-1) for a in np.broadcast_arrays(np.atleast_1d(np.asarray(size_gb, dtype=np.float64)),
                                                                   np.atleast_1d(np.asarray(writers, dtype=np.float64))))
    n = size.size
    at = np.arange(n) if rows is None else np.asarray(rows)
    nan = np.full(n, np.nan)
    stalls, restores = [], []
    for i, t in enumerate(design.tiers):
        label = design.label(i)
        for key, out in (("checkpoint_stall_min", stalls), ("restore_min", restores)):
            if t[key] is not None:
                out.append(np.broadcast_to(np.asarray(t[key], dtype=np.float64), (n,)).copy())
                continue
            if key == "checkpoint_stall_min":
                per, agg = t["write_gb_s_per_writer"], t["aggregate_write_gb_s"]
            else:
                per = t["read_gb_s_per_writer"] if t["read_gb_s_per_writer"] is not None else t["write_gb_s_per_writer"]
                agg = t["aggregate_read_gb_s"] if t["aggregate_read_gb_s"] is not None else t["aggregate_write_gb_s"]
            per_, agg_ = (np.nan if per is None else per), (np.nan if agg is None else agg)
            sized = np.flatnonzero(~np.isnan(size))
            values = nan.copy()
            if problems is not None:
                lonely = np.flatnonzero(np.isnan(size))
                if lonely.size:
                    problems.add(at[lonely], lambda _p, lab=label, k=key: InputError(
                        f"{lab}.{k}", None, "give it in the tier, or give parameters_b (the checkpoint size) so that "
                        "it is derived from the tier's bandwidths"))
            if sized.size:
                if key == "checkpoint_stall_min":
                    def compute(r: np.ndarray, per_=per_, agg_=agg_) -> tuple:
                        return (save_columns(size[r], n_writers[r], _at(per_, r), _at(agg_, r), np.nan)[0],)
                else:
                    def compute(r: np.ndarray, per_=per_, agg_=agg_) -> tuple:
                        return (restore_column(size[r], n_writers[r], _at(per_, r), _at(agg_, r)),)
                sink = problems if problems is not None else _Sink()
                (got,) = isolate_refusals(_Through(sink, at), sized, compute, 1)
                values[sized] = got
            out.append(values)
    return stalls, restores


class _Sink:
    """Problems nobody asked for: the first one is raised."""

    def add(self, rows: Any, make: Any) -> None:
        err = make(int(rows[0]))
        raise err if isinstance(err, Exception) else InputError("tiers", None, str(err))


class _Through:
    """A problems recorder seen through a map of positions (``at``: local position -> the recorder's) and a
    rewrite of what is recorded (``rewrite``: the engine's error -> the one the caller's fields name)."""

    def __init__(self, problems: Any, at: Any = None, rewrite: Any = None):
        self.problems, self.at, self.rewrite = problems, at, rewrite

    def add(self, rows: Any, make: Any) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        self.problems.add(rows if self.at is None else self.at[rows],
                          make if self.rewrite is None else (lambda p: self.rewrite(make(p))))


def _job_mtbf_named(err: Any) -> Any:
    """The engine's ``M`` (job MTBF, minutes) as the table's ``job_mtbf_h``."""
    if isinstance(err, InputError) and err.field == "M":
        v = err.value / 60.0 if isinstance(err.value, (int, float)) and math.isfinite(err.value) else err.value
        return InputError("job_mtbf_h", v, err.rule)
    return err


def tiered_columns(design: TierDesign, *, size_gb: Any, writers: Any, job_mtbf_h: Any, restart_other_min: Any,
                   async_write_min: Any, async_slowdown_fraction: Any, interval_min: Any, useful_training_h: Any,
                   gpus: Any, price_per_gpu_hour: Any, problems: Any = None,
                   downtime_min: Any = 0.0) -> dict[str, np.ndarray]:
    """The tiered plan of every row (module notes): column name -> float array, NaN on refused rows.

    Inputs per row (arrays of one length, or scalars): ``size_gb`` (NaN: no checkpoint size),
    ``writers``, ``job_mtbf_h``, ``restart_other_min`` (``R'``), ``async_write_min``,
    ``async_slowdown_fraction``, ``interval_min`` (NaN: choose the optimum), ``useful_training_h``,
    ``gpus``, ``price_per_gpu_hour``. ``problems``: an :class:`engine.scenario.RowProblems` that
    records each refused row (field named: ``tiers (remote).checkpoint_stall_min``, ``M`` ...);
    without it the first problem is raised. ``downtime_min``: the part of ``restart_other_min`` the
    job waits for a node and cannot fail in (the model's ``D``; the rest is exposed).
    """
    args = [np.atleast_1d(np.asarray(a, dtype=np.float64)) for a in (size_gb, writers, job_mtbf_h, restart_other_min,
                                                                      async_write_min, async_slowdown_fraction,
                                                                      interval_min, useful_training_h, gpus,
                                                                      price_per_gpu_hour, downtime_min)]
    size, n_writers, mtbf_h, R, W, s, given_T, useful, gpus_, price, Dn = (
        a.reshape(-1) for a in np.broadcast_arrays(*args))
    n = size.size
    sink = problems if problems is not None else _Sink()
    out = {c: np.full(n, np.nan) for c in TIERED_COLUMNS + tier_columns(len(design.tiers))}
    before = _mask(sink, n)
    stalls, restores = tier_times(design, size, n_writers, problems=sink)
    _check_priced_tiers(design, size, sink)
    rows = np.flatnonzero(~_mask(sink, n) & ~before)
    with np.errstate(over="ignore"):   # a job MTBF beyond float64 in minutes: the model refuses that row
        M = mtbf_h * 60.0
    Rx = np.maximum(R - Dn, 0.0)   # the exposed part of the restart; the wait for a node is downtime
    rows, T, wpw, split = _exact_plan(design, stalls, restores, rows, M, Rx, W, s, given_T, useful, sink, Dn)
    o = _time_and_money(design, restores, rows, T, wpw, split, R, useful, gpus_, price)
    o.update(_tier_figures(design, stalls, restores, rows, T, R, size, o["wall_h"], sink))
    with np.errstate(invalid="ignore"):
        broken = ~np.all([np.isfinite(v) for v in o.values()], axis=0) & ~_mask(sink, n)[rows]
    if broken.any():
        sink.add(rows[broken], lambda _p: InputError("price_per_gpu_hour", float(price[_p]),
                                                     "the plan's money overflows (results must stay within the "
                                                     "float64 range)"))
    keep = ~broken
    for k, v in o.items():
        out[k][rows[keep]] = np.asarray(v, dtype=np.float64)[keep]
    return out


def _check_priced_tiers(design: TierDesign, size: np.ndarray, problems: Any) -> None:
    """A tier with a storage price needs the checkpoint size (as plan_setup says): each row without one is a
    problem of that tier's price."""
    for i, t in enumerate(design.tiers):
        price = np.broadcast_to(np.asarray(t["price_per_gb_month"], dtype=np.float64), size.shape)
        lonely = np.flatnonzero(np.isnan(size) & (price > 0))
        if lonely.size:
            problems.add(lonely, lambda _p, lab=design.label(i), v=t["price_per_gb_month"]: InputError(
                f"{lab}.price_per_gb_month", float(_at(v, _p)), "needs the checkpoint size: give parameters_b"))


def _exact_plan(design: TierDesign, stalls: list, restores: list, rows: np.ndarray, M: np.ndarray, R: np.ndarray,
                W: np.ndarray, s: np.ndarray, given_T: np.ndarray, useful: np.ndarray, problems: Any, D: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The exact model at each row's first interval (the given one, else :func:`best_first_interval`):
    (the rows it answered, T, wall per unit of work, the breakdown's save, rework, restart and failures (all, restarts included) in
    minutes). Rows the model refuses become problems (``M`` named as the table's ``job_mtbf_h``)."""
    from ..setup_table import isolate_refusals

    def tiers_at(d: TierDesign, r: np.ndarray) -> list:
        return [Tier(t["name"], stalls[i][r], restores[i][r], t["every"], t["survives"], t["retention"],
                     t["price_per_gb_month"], t["restore_failure_probability"], t["copies"])
                for i, t in enumerate(d.tiers)]

    def plan(r: np.ndarray) -> tuple:
        here = design_at(design, r)   # a stacked design's numbers at these rows (one value stays one)
        ts = tiers_at(here, r)
        T = given_T[r].copy()
        free = np.isnan(T)
        work = useful[r] * 60.0   # the finite job: a restore failing on every tier sends it back to its start
        if free.any():   # every free row's optimum in one vectorised search, whatever design it follows
            T[free] = best_first_interval(M[r][free], R[r][free], W[r][free], s[r][free],
                                          classes=design_at(here, free).classes,
                                          tiers=tiers_at(design_at(here, free), r[free]), work=work[free])
        wpw = np.asarray(tiered_wall_per_work(T, M[r], R[r], W[r], s[r], tiers=ts, classes=here.classes, D=D[r],
                                              work=work))
        split = tiered_breakdown(work, T, M[r], R[r], W[r], s[r], tiers=ts, classes=here.classes, D=D[r])
        # every failure, restarts included (wall / M, Wald), as engine.evaluate counts them
        return (T, wpw, split["save"], split["rework"], split["restart"], split["failures"], split["failed_restores"],
                split["rollbacks_to_start"])

    T, wpw, *parts = isolate_refusals(_Through(problems, rewrite=_job_mtbf_named), rows, plan, 8)
    answered = ~np.isnan(wpw)
    split = {k: v[answered] for k, v in zip(("save", "rework", "restart", "failures", "failed_restores",
                                              "rollbacks_to_start"), parts)}
    return rows[answered], T[answered], wpw[answered], split


def _time_and_money(design: TierDesign, restores: list, rows: np.ndarray, T: np.ndarray, wpw: np.ndarray,
                    split: dict[str, np.ndarray], R: np.ndarray, useful: np.ndarray, gpus: np.ndarray,
                    price: np.ndarray) -> dict[str, np.ndarray]:
    """The plan's figures of the answered ``rows``: interval, waste, failures, hours by category, GPU-hours and
    compute money (``compute_cost``: the job's GPU time), goodput and the mean restart per failure (over the
    classes)."""
    wall_h = useful[rows] * wpw
    o = {"chosen_interval_min": T, "waste_fraction": 1.0 - 1.0 / wpw, "expected_failures": split["failures"],
         "wall_h": wall_h, "useful_h": useful[rows], "save_h": split["save"] / 60.0,
         "rework_h": split["rework"] / 60.0, "restart_h": split["restart"] / 60.0, "gpus": gpus[rows],
         "goodput": 1.0 / wpw, "failed_restores": split["failed_restores"],
         "rollbacks_to_start": split["rollbacks_to_start"]}
    g, p = gpus[rows], price[rows]
    compute = 0.0
    for k in _CATEGORIES:
        o[f"{k}_gpu_hours"] = o[f"{k}_h"] * g
        o[f"{k}_cost"] = o[f"{k}_h"] * g * p
        compute = compute + o[f"{k}_cost"]
    o["job_gpu_hours"] = g * wall_h
    o["total_gpu_hours"] = o["job_gpu_hours"]   # the spares' GPU-hours are added by the money pass (engine.pipeline)
    o["compute_cost"] = compute
    o["mean_restart_min"] = mean_restart_min(design_at(design, rows), [r[rows] for r in restores], R[rows])
    return o


def mean_restart_min(design: TierDesign, restores: list, R: Any) -> Any:
    """The mean restart per rollback over the classes and their restore outcomes: ``sum_o pi_o (R + the restores
    tried)`` (:func:`engine.tiers.model.restore_outcomes`; with no failing restore, ``sum_j pi_j (R + restore of
    its tier)``)."""
    tiers = check_design([{**_structure(d), "checkpoint_stall_min": 0.0, "restore_min": 0.0} for d in design.tiers],
                         design.classes)
    with np.errstate(under="ignore"):
        q = [np.asarray(t["restore_failure_probability"], dtype=np.float64) ** np.asarray(t["copies"], dtype=np.float64)
             for t in design.tiers]
    if not any(np.any(x) for x in q):
        rec = recovery_index(tiers, design.classes)
        mean_restart = 0.0
        for j, c in enumerate(design.classes):
            mean_restart = mean_restart + design.classes[c] * (R + restores[rec[j]])
        return mean_restart
    outs = restore_outcomes(tiers, list(design.classes), list(design.classes.values()), restores, q, R)
    return sum(p * r for p, r, _, _ in outs)


def _tier_figures(design: TierDesign, stalls: list, restores: list, rows: np.ndarray, T: np.ndarray, R: np.ndarray,
                  size: np.ndarray, wall_h: np.ndarray, problems: Any) -> dict[str, np.ndarray]:
    """Per tier of the answered ``rows`` (:data:`TIER_COLUMNS`): every, interval, stall, restore, restart and
    storage bill over the wall time's months; and ``storage_cost``, all tiers' bills."""
    from .. import storage

    o: dict[str, np.ndarray] = {}
    months = np.asarray(storage.months_from_hours(wall_h), dtype=np.float64)
    sized = ~np.isnan(size[rows])
    storage_total = 0.0
    here = design_at(design, rows)
    for i, t in enumerate(here.tiers):
        every = np.broadcast_to(np.asarray(t["every"], dtype=np.float64), (rows.size,))
        o[f"tier{i + 1}_every"] = every.copy()
        o[f"tier{i + 1}_interval_min"] = T * every
        o[f"tier{i + 1}_checkpoint_stall_min"] = stalls[i][rows]
        o[f"tier{i + 1}_restore_min"] = restores[i][rows]
        o[f"tier{i + 1}_restart_min"] = R[rows] + restores[i][rows]
        bill = np.zeros(rows.size)
        if sized.any():
            bill[sized] = _bill(here, i, size[rows], months, np.flatnonzero(sized), _Through(problems, rows))
        o[f"tier{i + 1}_storage_cost"] = bill
        storage_total = storage_total + bill
    o["storage_cost"] = np.broadcast_to(np.asarray(storage_total, dtype=np.float64), (rows.size,))
    return o


def _bill(design: TierDesign, i: int, size: np.ndarray, months: np.ndarray, at: np.ndarray, problems: Any) -> np.ndarray:
    """Tier ``i``'s storage bill at the positions ``at`` (:func:`engine.storage.storage_cost`); a bill beyond
    the float64 range is the row's problem, naming the tier's largest factor (NaN there)."""
    from .. import storage
    from ..setup_table import isolate_refusals

    t = design.tiers[i]
    factors = {k: t[k] for k in ("retention", "copies", "price_per_gb_month")}
    culprit = max(factors, key=lambda k: float(np.max(np.abs(factors[k]))))
    top = float(np.max(np.abs(factors[culprit])))
    shown = factors[culprit] if np.ndim(factors[culprit]) == 0 and top < 2.0**53 else top
    err = InputError(f"{design.label(i)}.{culprit}", shown, "the tier's storage bill (size x retention x "
                     "copies x months x price per GB-month) overflows the float64 range")

    def compute(r: np.ndarray) -> tuple:
        return (storage.storage_cost(size[r], _at(t["retention"], r), _at(t["price_per_gb_month"], r), months[r],
                                     _at(t["copies"], r)),)

    (got,) = isolate_refusals(_Through(problems, rewrite=lambda _engine_err: err), at, compute, 1)
    return got


def _mask(problems: Any, n: int) -> np.ndarray:
    return problems.mask() if hasattr(problems, "mask") else np.zeros(n, dtype=bool)
