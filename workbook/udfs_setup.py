"""The storage and recovery setup as Excel functions: checkpoint size, save and restore times, the restart
pipeline, the spare pool, a tier's interval and a plan's total cost (``CKPT_`` prefix, xlwings).

The companion of :mod:`.udfs`, with its conventions (:mod:`.cells`): argument names are the field
registry's (:mod:`ckptplan.engine.fields`), and so are their rules and their descriptions in Excel's
function wizard; a bad cell gets a readable ``#CKPT!`` message in its own result cell and the
others are computed; ranges broadcast; nothing raises; at most 250,000 cells per argument and per
result. Each function is a thin translation over the engine function its docstring names, on the
same numbers, so a cell equals what ``ckptplan plan`` (:func:`engine.setup.plan_setup`) derives.

Blank cells: an optional argument left out or blank is the engine's "not given", in a range too
(each blank cell on its own): a blank per-writer bandwidth leaves the aggregate as the only limit
(each writer gets aggregate / writers), a blank aggregate is no shared limit (one of the two must be
given), a blank device-to-host bandwidth is a synchronous save, a blank restart part is 0, a blank
``replacement_share`` is 1 and blank ``spares`` 0. A required argument blank is an error.

Hosts: the desktop add-in imports this module beside :mod:`.udfs` (``UDF MODULES`` =
``ckptplan.workbook.udfs;ckptplan.workbook.udfs_setup``); xlwings Server re-exports both
(``from ckptplan.workbook.udfs import *`` and ``from ckptplan.workbook.udfs_setup import *``);
xlwings Lite's ``main.py`` (:mod:`.lite`) wraps both. Units are in the names: ``_gb`` decimal GB,
``_gb_s`` GB/s, ``_min`` minutes, ``_h`` hours.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..engine import setup_table as _table
from ..engine.fields import lookup
from ..engine.storage import BYTES_PER_PARAMETER
from .cells import (ERROR_PREFIX, arg, describe, elementwise, error_text, show,
                    udf)

__all__ = [
    "CKPT_CHECKPOINT_SIZE_GB",
    "CKPT_SAVE_STALL_MIN",
    "CKPT_ASYNC_WRITE_MIN",
    "CKPT_RESTORE_MIN",
    "CKPT_RESTART_PIPELINE_MIN",
    "CKPT_SPARE_FREE_PROBABILITY",
    "CKPT_REALLOCATION_MIN",
    "CKPT_TIER_INTERVAL_MIN",
    "CKPT_TOTAL_COST",
]

_BLANK = np.nan   # a blank cell of an optional argument: the engine's None (engine.setup_table's NaN)

# engine argument names -> the Excel argument names
_STORAGE_NAMES = {"size_gb": "checkpoint_size_gb", "readers": "writers", "read_gb_s_per_reader": "read_gb_s_per_writer"}
_POOL_NAMES = {"node_replacement_rate_per_h": "job_mtbf_h"}
_JOB_MTBF_H = (f"{lookup('job_mtbf_min').label}, hours (e.g. CKPT_JOB_MTBF): {lookup('job_mtbf_h').check.noun}.")


def _optional(name: str, note: str) -> str:
    return (describe(name, None) + " " + note)[:255]


def _blank_or(name: str, value: Any):
    """An optional argument whose blank cells (alone or in a range) are the engine's None (NaN)."""
    return arg(name, value, blank=_BLANK)


def _both_blank(first: str, second: str, why: str):
    """A screen: the cells where ``first`` and ``second`` are both blank (NaN) get one message."""
    def screen(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        hit = np.isnan(a) & np.isnan(b)
        if not hit.any():
            return None
        out = np.full(a.shape, None, dtype=object)
        out[hit] = error_text(first, f"give it or {second} ({why})", show(None))
        return out
    return screen


# ------------------------------------------------------------------------------- size, save, restore

def _presets(value: Any) -> Any:
    """Preset names of :data:`engine.storage.BYTES_PER_PARAMETER` ("mixed-adam") as their numbers, cell by cell."""
    def one(v: Any) -> Any:
        return BYTES_PER_PARAMETER.get(v.strip().lower(), v) if isinstance(v, str) else v
    if isinstance(value, str):
        return one(value)
    if isinstance(value, list):
        return [[one(v) for v in row] if isinstance(row, list) else one(row) for row in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in "OU":
        return np.vectorize(one, otypes=[object])(value.astype(object))
    return value


_PRESETS = ", ".join(f'"{k}" {v:g}' for k, v in list(BYTES_PER_PARAMETER.items())[:3])


@udf(bytes_per_parameter=(describe("bytes_per_parameter", 14.0) + f" Or a preset: {_PRESETS} ...")[:255])
def CKPT_CHECKPOINT_SIZE_GB(parameters_b, bytes_per_parameter=14.0, extra_state_gb=0.0):
    """Checkpoint size in GB = parameters (billions) x bytes per parameter + extra state (14 B = mixed-precision Adam).

    Calls :func:`engine.storage.checkpoint_size_gb`. 1e9 parameters of b bytes are b GB: Llama 3
    405B with mixed-precision Adam is 405 x 14 = 5,670 GB. ``bytes_per_parameter`` may be a preset
    name of ``engine.storage.BYTES_PER_PARAMETER`` ("mixed-adam" 14, "fp32-adam" 12, ...).
    """
    from ..engine.storage import checkpoint_size_gb

    specs = [arg("parameters_b", parameters_b),
             arg("bytes_per_parameter", _presets(bytes_per_parameter), default=14.0, blank=14.0),
             arg("extra_state_gb", extra_state_gb, default=0.0, blank=0.0)]
    return elementwise(specs, checkpoint_size_gb, {})


_SAVE_DOCS = dict(
    checkpoint_size_gb=describe("checkpoint_size_gb"),
    writers=describe("writers").replace(" (empty = nodes)", ""),
    write_gb_s_per_writer=describe("write_gb_s_per_writer") + " Blank = the aggregate is the only limit.",
    aggregate_write_gb_s=_optional("aggregate_write_gb_s", "Give it or the per-writer figure."),
    d2h_gb_s_per_writer=_optional("d2h_gb_s_per_writer", "Given = an asynchronous save."))


def _save(which: int, size, writers, per, agg, d2h):
    specs = [arg("checkpoint_size_gb", size), arg("writers", writers), _blank_or("write_gb_s_per_writer", per),
             _blank_or("aggregate_write_gb_s", agg), _blank_or("d2h_gb_s_per_writer", d2h)]
    screen = _both_blank("write_gb_s_per_writer", "aggregate_write_gb_s", "a save needs a bandwidth")

    def compute(s, n, p, a, d):
        return _table.save_columns(s, n, p, a, d)[which]

    return elementwise(specs, compute, _STORAGE_NAMES, lambda s, n, p, a, d: screen(p, a))


@udf(**_SAVE_DOCS)
def CKPT_SAVE_STALL_MIN(checkpoint_size_gb, writers, write_gb_s_per_writer, aggregate_write_gb_s=None,
                        d2h_gb_s_per_writer=None):
    """Stall of one save in minutes: size / MIN(per writer x writers, aggregate) / 60; async: size / (device-to-host x writers) / 60.

    Calls :func:`engine.storage.save_times` with the setup's bandwidth rule
    (:func:`engine.setup_table.bandwidth_columns`, as ``plan_setup``): a blank per-writer bandwidth
    leaves the aggregate as the only limit, a blank aggregate is no shared limit. Synchronous unless
    ``d2h_gb_s_per_writer`` is given. Pure transfer time: leaves out serialisation, metadata and
    stragglers (measure one save with ``ckptplan probe``).
    """
    return _save(0, checkpoint_size_gb, writers, write_gb_s_per_writer, aggregate_write_gb_s, d2h_gb_s_per_writer)


@udf(**_SAVE_DOCS)
def CKPT_ASYNC_WRITE_MIN(checkpoint_size_gb, writers, write_gb_s_per_writer, aggregate_write_gb_s=None,
                         d2h_gb_s_per_writer=None):
    """Background write of an async save in minutes: size / MIN(per writer x writers, aggregate) / 60; 0 for a synchronous save (blank d2h).

    Calls :func:`engine.storage.save_times` (the ``async_write_min`` of a scenario; the same
    arguments as CKPT_SAVE_STALL_MIN, whose stall is the blocking part). Training runs meanwhile;
    the write must be durable before the next save.
    """
    return _save(1, checkpoint_size_gb, writers, write_gb_s_per_writer, aggregate_write_gb_s, d2h_gb_s_per_writer)


@udf(checkpoint_size_gb=describe("checkpoint_size_gb"),
     writers=describe("writers").replace(" (empty = nodes)", "") + " Readers at restore.",
     read_gb_s_per_writer=describe("read_gb_s_per_writer").replace(" (empty = the write figure)", "")
     + " Blank = the aggregate is the only limit.",
     aggregate_read_gb_s=_optional("aggregate_read_gb_s", "Give it or the per-reader figure.").replace(
         " (empty = the write figure)", ""))
def CKPT_RESTORE_MIN(checkpoint_size_gb, writers, read_gb_s_per_writer, aggregate_read_gb_s=None):
    """Restore time in minutes: size / MIN(per reader x readers, aggregate) / 60 (the load part of a restart).

    Calls :func:`engine.storage.restore_time_min` with the setup's bandwidth rule (as
    CKPT_SAVE_STALL_MIN). Leaves out the host-to-device copy and re-sharding.
    """
    specs = [arg("checkpoint_size_gb", checkpoint_size_gb), arg("writers", writers),
             _blank_or("read_gb_s_per_writer", read_gb_s_per_writer), _blank_or("aggregate_read_gb_s", aggregate_read_gb_s)]
    screen = _both_blank("read_gb_s_per_writer", "aggregate_read_gb_s", "a restore needs a bandwidth")
    return elementwise(specs, _table.restore_column, _STORAGE_NAMES, lambda s, n, p, a: screen(p, a))


# ------------------------------------------------------------------------------- restart and spares

_PARTS = ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min", "warmup_min")


@udf(**{p: describe(p, 0.0).replace(" (empty with repair_h = spare pool)", "").replace(
    " (empty = size / read bandwidth)", "") + " Blank = 0." for p in _PARTS},
     init_per_1000_nodes_min=describe("init_per_1000_nodes_min", 0.0) + " Needs nodes.",
     nodes=describe("nodes", None) + " Only with init_per_1000_nodes_min.")
def CKPT_RESTART_PIPELINE_MIN(detection_min=0.0, reallocation_min=0.0, startup_min=0.0, init_min=0.0, load_min=0.0,
                              warmup_min=0.0, init_per_1000_nodes_min=0.0, nodes=None):
    """Restart time in minutes: detection + reallocation + start-up + init (+ per 1,000 nodes x nodes / 1,000) + load + warm-up.

    Calls :func:`engine.recovery.communicator_init_min` and :func:`engine.recovery.restart_pipeline_min`,
    the phases taken as sequential (a pipeline that overlaps them restarts faster). The load is
    CKPT_RESTORE_MIN; the reallocation from a spare pool is CKPT_REALLOCATION_MIN.
    """
    from ..engine import recovery

    specs = [arg(p, v, default=0.0, blank=0.0) for p, v in zip(_PARTS, (
        detection_min, reallocation_min, startup_min, init_min, load_min, warmup_min))]
    specs += [arg("init_per_1000_nodes_min", init_per_1000_nodes_min, default=0.0, blank=0.0),
              _blank_or("nodes", nodes)]

    def screen(*columns):
        per, n = columns[6], columns[7]
        hit = (per > 0) & np.isnan(n)
        if not hit.any():
            return None
        out = np.full(per.shape, None, dtype=object)
        out[hit] = error_text("nodes", "is required when init_per_1000_nodes_min > 0", show(None))
        return out

    def compute(d, r, s, i, ld, w, per, n):
        init = recovery.communicator_init_min(np.where(np.isnan(n), 1.0, n), i, per)
        return recovery.restart_pipeline_min(d, r, s, init, ld, w)

    return elementwise(specs, compute, {"init_fixed_min": "init_min"}, screen)


_POOL_DOCS = dict(job_mtbf_h=_JOB_MTBF_H,
                  replacement_share=describe("replacement_share") + " Blank = 1.",
                  spares=describe("spares") + " Blank = 0.")


def _pool(job_mtbf_h, replacement_share, repair_h, spares, *swap_min):
    from ..engine import recovery

    specs = [arg("job_mtbf_h", job_mtbf_h), arg("replacement_share", replacement_share, default=1.0, blank=1.0),
             arg("repair_h", repair_h), arg("spares", spares, default=0.0, blank=0.0)]
    specs += [arg("swap_min", s, default=0.0, blank=0.0) for s in swap_min]   # the reallocation: one more argument

    def screen(m, share, r, *_):  # engine.recovery's rule, named as here
        mu = share / m * r
        hit = ~(mu <= recovery.MAX_MEAN_IN_REPAIR)
        if not hit.any():
            return None
        out = np.full(m.shape, None, dtype=object)
        out[hit] = [error_text("repair_h", f"replacement_share / job_mtbf_h x repair_h = {x:.6g} nodes in repair on "
                               f"average: must be <= {recovery.MAX_MEAN_IN_REPAIR:.0e} (the pool model means nothing "
                               "there)", show(v)) for x, v in zip(mu[hit].tolist(), r[hit].tolist())]
        return out

    def compute(m, share, r, s, *swap):
        rate = share / m   # failures needing a replacement, per hour (engine.setup: replacement_share / job MTBF)
        if swap:
            return recovery.expected_reallocation_min(rate, r, s, swap[0])
        return recovery.spare_free_probability(rate, r, s)

    return elementwise(specs, compute, _POOL_NAMES, screen)


@udf(**_POOL_DOCS)
def CKPT_SPARE_FREE_PROBABILITY(job_mtbf_h, replacement_share, repair_h, spares):
    """Probability a node-replacing failure finds a hot spare free: 1 - Erlang B(spares, replacement share / job MTBF x repair_h).

    Calls :func:`engine.recovery.spare_free_probability` (Erlang's loss system: the job does not fail
    while it waits for a node; exact in steady state for any repair-time law). 0 without spares.
    """
    return _pool(job_mtbf_h, replacement_share, repair_h, spares)


@udf(**_POOL_DOCS)
def CKPT_REALLOCATION_MIN(job_mtbf_h, replacement_share, repair_h, spares, swap_min=0.0):
    """Expected minutes to get a replacement node from a pool of hot spares (a free spare: swap_min; none: wait for a repair).

    Calls :func:`engine.recovery.expected_reallocation_min`, the reallocation part a restart gets
    from the pool in ``plan_setup``: (1 - B) swap_min + B 60 repair_h / (spares + 1), B = Erlang B
    (with spares 0: the full repair, 60 repair_h). Fixed or exponential repair alike.
    """
    return _pool(job_mtbf_h, replacement_share, repair_h, spares, swap_min)


# ------------------------------------------------------------------------------- a tier's interval

@udf(checkpoint_stall_min=describe("checkpoint_stall_min").replace(" (blocking part of a save)", "")
     + " This tier's own cost per save (the first tier: + write x slowdown).",
     share_restored=describe("share_restored"), job_mtbf_h=_JOB_MTBF_H)
def CKPT_TIER_INTERVAL_MIN(checkpoint_stall_min, share_restored, job_mtbf_h):
    """First-order compute interval of one checkpoint tier, minutes: sqrt(2 stall / rate), rate = share restored / (job MTBF x 60).

    Calls :func:`engine.tiers.optimum.first_order_tier_intervals` (Benoit et al., IEEE TC 66(7),
    2017: each level minimises its own stall / T + rate T / 2; with share 1, Young's interval).
    Assumes stall << interval << MTBF / share; the tiers' nested design: ``ckptplan plan``.
    """
    specs = [arg("checkpoint_stall_min", checkpoint_stall_min), arg("share_restored", share_restored),
             arg("job_mtbf_h", job_mtbf_h)]

    def screen(c, share, m):
        out = np.full(c.shape, None, dtype=object)
        out[c == 0] = error_text("checkpoint_stall_min", "must be > 0: a tier whose saves cost nothing would save "
                                 "continuously", show(0.0))
        out[(share == 0) & (c > 0)] = error_text("share_restored", "must be > 0: a tier no failure is restored from "
                                                 "never pays back its saves", show(0.0))
        return out if out.astype(bool).any() else None

    return elementwise(specs, _tier_interval, {"M": "job_mtbf_h"}, screen)


def _tier_interval(stall: np.ndarray, share: np.ndarray, job_mtbf_h: np.ndarray) -> np.ndarray:
    """One tier's first-order interval: the first of two tiers, its failures the class ``restored``."""
    from ..engine.tiers import Tier
    from ..engine.tiers.optimum import first_order_tier_intervals

    out = np.full(stall.shape, np.nan)
    alone = share == 1.0
    for rows, classes in ((alone, {"restored": 1.0}), (~alone, {"restored": share[~alone], "other": 1.0 - share[~alone]})):
        if not rows.any():
            continue
        tiers = [Tier("tier", stall[rows], 0.0, 1, ("restored",))] + (
            [Tier("rest", 0.0, 0.0, 1, ("other",))] if "other" in classes else [])
        out[rows] = first_order_tier_intervals(job_mtbf_h[rows] * 60.0, tiers=tiers, classes=classes)["interval_tier"]
    return out


# ------------------------------------------------------------------------------- a plan's total cost

#: CKPT_TOTAL_COST's arguments after the four required ones: (name, Python default)
TOTAL_COST_OPTIONAL: tuple[tuple[str, Any], ...] = (
    ("checkpoint_stall_min", None), ("restart_min", None), ("gpus_per_node", 8), ("interval_min", None),
    ("async_write_min", None), ("async_slowdown_fraction", 0.0), ("parameters_b", None), ("bytes_per_parameter", 14.0),
    ("extra_state_gb", 0.0), ("writers", None), ("write_gb_s_per_writer", None), ("aggregate_write_gb_s", None),
    ("read_gb_s_per_writer", None), ("aggregate_read_gb_s", None), ("d2h_gb_s_per_writer", None),
    ("detection_min", None), ("reallocation_min", None), ("startup_min", None), ("init_min", None),
    ("init_per_1000_nodes_min", None), ("load_min", None), ("warmup_min", None), ("spares", None), ("repair_h", None),
    ("swap_min", 0.0), ("replacement_share", 1.0), ("price_per_gb_month", 0.0), ("retention", 1), ("downtime_min", None))
_TOTAL_COST_REQUIRED = ("useful_training_h", "nodes", "job_mtbf_h", "price_per_gpu_hour")
_TOTAL_COST_DOCS = {"job_mtbf_h": _JOB_MTBF_H,
                "checkpoint_stall_min": _optional("checkpoint_stall_min", "Blank = derived from the size and bandwidths."),
                "async_write_min": _optional("async_write_min", "Blank = derived (0 for a synchronous save)."),
                "restart_min": _optional("restart_min", "Blank = the sum of the parts given (else 0)."),
                "downtime_min": _optional("downtime_min", "Blank = the reallocation part of a restart from the parts "
                                          "(else 0).")}


def _total_cost_message(err: Any) -> str:
    field = getattr(err, "field", None)
    if field is None:
        return f"{ERROR_PREFIX} {err}"[:255]
    return error_text(re.sub(r"^row \S+: ", "", str(field)), getattr(err, "rule", str(err)), show(err.value))[:255]


@udf(**_TOTAL_COST_DOCS)
def CKPT_TOTAL_COST(useful_training_h, nodes, job_mtbf_h, price_per_gpu_hour, checkpoint_stall_min=None,
                    restart_min=None, gpus_per_node=8, interval_min=None, async_write_min=None,
                    async_slowdown_fraction=0.0, parameters_b=None, bytes_per_parameter=14.0, extra_state_gb=0.0,
                    writers=None, write_gb_s_per_writer=None, aggregate_write_gb_s=None, read_gb_s_per_writer=None,
                    aggregate_read_gb_s=None, d2h_gb_s_per_writer=None, detection_min=None, reallocation_min=None,
                    startup_min=None, init_min=None, init_per_1000_nodes_min=None, load_min=None, warmup_min=None,
                    spares=None, repair_h=None, swap_min=0.0, replacement_share=1.0, price_per_gb_month=0.0,
                    retention=1, downtime_min=None):
    """Total cost of a single-level plan, everything it pays: compute (useful, save, rework, restart) + storage + spares.

    Calls :func:`engine.pipeline.plan_table`, the plan pipeline of ``ckptplan plan`` and ``batch`` (``plan_setup``
    of each cell, with the setup's fields): a blank stall, write or restart is derived from the setup (size and
    bandwidths; the restart parts and the spare pool), a given one wins; the exact optimum interval
    unless ``interval_min``; exponential failures at ``job_mtbf_h``; spares billed for the whole
    run. Money in the currency of the prices. Arguments: the scenario's, then the setup's (blank =
    not given; see ``ckptplan.engine.fields.SETUP_FIELDS``).
    """
    values = dict(zip(_TOTAL_COST_REQUIRED + tuple(n for n, _ in TOTAL_COST_OPTIONAL), (
        useful_training_h, nodes, job_mtbf_h, price_per_gpu_hour, checkpoint_stall_min, restart_min, gpus_per_node,
        interval_min, async_write_min, async_slowdown_fraction, parameters_b, bytes_per_parameter, extra_state_gb,
        writers, write_gb_s_per_writer, aggregate_write_gb_s, read_gb_s_per_writer, aggregate_read_gb_s,
        d2h_gb_s_per_writer, detection_min, reallocation_min, startup_min, init_min, init_per_1000_nodes_min,
        load_min, warmup_min, spares, repair_h, swap_min, replacement_share, price_per_gb_month, retention,
        downtime_min)))
    specs = [arg(name, values[name]) for name in _TOTAL_COST_REQUIRED]
    specs += [arg(name, values[name], blank=_BLANK) for name, _ in TOTAL_COST_OPTIONAL]
    names = [name for name, _, _ in specs]

    def compute(*columns):
        import pandas as pd

        from ..engine.pipeline import plan_table

        planned = plan_table(pd.DataFrame(dict(zip(names, columns))), setup=True)
        refused = np.full(len(columns[0]), None, dtype=object)
        for p, errs in planned.problems.by_row.items():
            refused[p] = _total_cost_message(errs[0])
        return planned.res["total_cost"], refused

    return elementwise(specs, compute, {})
