"""Checkpoint size, save and restore times from the model and the hardware, and the storage bill.

Units: sizes in decimal gigabytes (``_gb``, 1 GB = 1e9 bytes), bandwidths in decimal GB per
second (``_gb_s``), times in minutes (``_min``), parameter counts in billions (``_b``).

The chain is ``parameters -> bytes -> GB -> seconds -> minutes``:

* size: ``checkpoint_size_gb = parameters_b * bytes_per_parameter + extra_state_gb`` (1e9
  parameters of ``b`` bytes are ``b`` GB). The restorable training state of mixed-precision Adam is
  14 bytes per parameter: 2 (bf16/fp16 weights) + 4 (fp32 master weights) + 4 + 4 (the two fp32
  Adam moments). ZeRO [ZeRO20, section 3.1] counts 2 + 2 + 12 = 16 bytes per parameter of
  *training memory*, but the 2 bytes of gradients are recomputed by the next step and are not part
  of what a checkpoint must hold. Data-loader state, RNG states and the like go in
  ``extra_state_gb``.
* bandwidth: ``writers`` processes (or nodes) write distinct shards in parallel, each at
  ``per_writer_gb_s``, through a shared bottleneck of ``aggregate_gb_s`` (a parallel file system's
  or object store's total, a network link). ``aggregate = inf`` means no shared bottleneck (local
  NVMe, host memory as in in-memory checkpointing [Gemini23]).
* save: a synchronous save blocks training for the whole write; an asynchronous save blocks only
  for the device-to-host copy and writes in the background [PTAsync24: a 7B model's stall per
  checkpoint fell from 148.8 s to 6.3 s]. The two parts feed ``checkpoint_stall_min`` (C) and
  ``async_write_min`` (W) of :mod:`.waste`.

Where it stops being valid: the times are pure transfer times at a sustained bandwidth. They leave
out serialisation, metadata and planning (the "collective" part of a distributed save), file-system
open/commit latency, stragglers (the slowest writer sets the time: use its bandwidth, not the
mean), replicated data-parallel ranks (only the ranks holding distinct shards count as writers)
and contention with other jobs. Measure one save (``ckptplan probe``) and compare before trusting
a planned figure.

References
----------
* [ZeRO20] S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, "ZeRO: Memory Optimizations Toward
  Training Trillion Parameter Models", SC'20 (arXiv:1910.02054): 2 + 2 + 12 bytes per parameter
  for mixed-precision Adam.
* [PTAsync24] "Reducing Model Checkpointing Times by Over 10x with PyTorch Distributed
  Asynchronous Checkpointing", PyTorch blog, 2024: 7B model, training stall 148.8 s -> 6.3 s.
* [Gemini23] Z. Wang et al., "GEMINI: Fast Failure Recovery in Distributed Training with
  In-Memory Checkpoints", SOSP'23: in-memory checkpoints recover about 13x faster than remote
  storage.

Every function broadcasts over scalars, numpy arrays and pandas Series and raises
:class:`engine.InputError` naming the argument, value and rule on bad input.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .errors import InputError
from .gate import as_float_array, broadcast, check_finite_result, prepare, wrapper

__all__ = ["BYTES_PER_PARAMETER", "HOURS_PER_BILLING_MONTH", "SaveTimes", "bytes_per_parameter",
           "checkpoint_size_gb", "effective_bandwidth_gb_s", "months_from_hours", "restore_time_min", "save_times",
           "storage_cost"]

#: Bytes of restorable checkpoint state per model parameter, by training setup.
BYTES_PER_PARAMETER: dict[str, float] = {
    # bf16 weights 2 + fp32 master weights 4 + fp32 Adam m 4 + v 4; ZeRO (SC'20) counts 2 + 2 + 12 in
    # memory, the 2 bytes of gradients are not restorable state
    "mixed-adam": 14.0,
    # fp32 weights 4 + fp32 Adam m 4 + v 4 (ZeRO's 12 bytes of optimizer state without a low-precision copy)
    "fp32-adam": 12.0,
    # fp32 weights 4 + fp32 momentum buffer 4 (SGD with momentum)
    "fp32-sgd-momentum": 8.0,
    # assumption of a common low-memory setup: bf16 weights 2 + bf16 m 2 + bf16 v 2, no fp32 master copy
    "bf16-adam-bf16-moments": 6.0,
    # bf16 weights only (inference / export): NOT restorable training state, training cannot resume from it
    "weights-bf16": 2.0,
}

#: Hours in a billing month: 8,760 h / 12 = 730 h, the month cloud providers price storage by
#: (:data:`engine.cost.HOURS_PER_MONTH` is the calendar-average 730.485 h used for GPU-time figures).
HOURS_PER_BILLING_MONTH = 730.0


class SaveTimes(NamedTuple):
    """The two parts of a save, in minutes: the stall training sees and the background write."""

    checkpoint_stall_min: Any
    async_write_min: Any


def _presets_text() -> str:
    return ", ".join(f"{k!r} ({v:g})" for k, v in BYTES_PER_PARAMETER.items())


def bytes_per_parameter(preset_or_number):
    """Bytes of checkpoint state per parameter: a preset name of :data:`BYTES_PER_PARAMETER` or a number > 0.

    A name returns its preset (a float); a number, array or Series is checked (``> 0``) and returned
    as the caller's kind. An unknown name raises :class:`InputError` listing the presets.
    """
    if isinstance(preset_or_number, str):
        if preset_or_number not in BYTES_PER_PARAMETER:
            raise InputError("bytes_per_parameter", preset_or_number,
                             f"must be a number > 0 or one of the presets {_presets_text()}")
        return BYTES_PER_PARAMETER[preset_or_number]
    (b,), wrap = prepare(("bytes_per_parameter", preset_or_number, "positive"))
    return wrap(b)


def checkpoint_size_gb(parameters_b, bytes_per_parameter=14.0, extra_state_gb=0.0):
    """Checkpoint size in GB: ``parameters_b * bytes_per_parameter + extra_state_gb``.

    ``parameters_b`` in billions, so ``1e9 * b`` bytes are ``b`` GB: Llama 3 405B with
    mixed-precision Adam is 405 x 14 = 5,670 GB. ``bytes_per_parameter`` may be a preset name
    (:data:`BYTES_PER_PARAMETER`; default 14, ``"mixed-adam"``). Assumes the whole restorable state
    is saved once (no replicas counted: data-parallel copies write one shard set); a mixture of
    experts or a model with tied or frozen parts may save less, a sharded optimizer with extra
    buffers more.
    """
    bpp = _resolve_bpp(bytes_per_parameter)
    (p, b, e), wrap = prepare(("parameters_b", parameters_b, "positive"), ("bytes_per_parameter", bpp, "positive"),
                              ("extra_state_gb", extra_state_gb, "nonnegative"))
    with _quiet():
        size = p * b + e
    check_finite_result("parameters_b", size, "the checkpoint size overflows")
    return wrap(size)


def _resolve_bpp(value):
    """A preset name resolved to its number; anything else unchanged (checked by the caller)."""
    return bytes_per_parameter(value) if isinstance(value, str) else value


def _prepare_inf(*specs: tuple[str, Any, str, bool]):
    """:func:`prepare` for specs ``(name, value, rule, allow_inf)``: some bandwidths may be infinite."""
    wrap = wrapper(*(value for _, value, _, _ in specs))  # refuses misaligned Series first
    arrays = {name: as_float_array(name, value, rule, allow_inf=inf) for name, value, rule, inf in specs}
    return broadcast(**arrays), wrap


def _quiet():
    """numpy's floating-point warnings off: each result is checked (check_finite_result) right after."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def _bandwidth(per, n, agg, per_name):
    with _quiet():
        bw = np.minimum(per * n, agg)
    check_finite_result(per_name, bw, "per-writer bandwidth x writers overflows")
    return bw


def effective_bandwidth_gb_s(per_writer_gb_s, writers, aggregate_gb_s=np.inf):
    """Bandwidth a save reaches: ``min(per_writer_gb_s * writers, aggregate_gb_s)`` in GB/s.

    ``writers`` (whole number >= 1) write distinct shards in parallel, each no faster than
    ``per_writer_gb_s`` (> 0, finite: a node's NIC or disk); together no faster than
    ``aggregate_gb_s`` (> 0; ``inf`` = no shared bottleneck, e.g. local NVMe or host memory).
    Assumes equal shards and no stragglers: with unequal shards the largest shard over its writer's
    bandwidth sets the time.
    """
    (per, n, agg), wrap = _prepare_inf(("per_writer_gb_s", per_writer_gb_s, "positive", False),
                                       ("writers", writers, "count", False),
                                       ("aggregate_gb_s", aggregate_gb_s, "positive", True))
    return wrap(_bandwidth(per, n, agg, "per_writer_gb_s"))


def _minutes(size, bw, name):
    with _quiet():
        t = size / bw / 60.0
    check_finite_result(name, t, "the transfer time overflows")
    return t


def save_times(size_gb, writers, write_gb_s_per_writer, aggregate_write_gb_s=np.inf, async_save=False,
               d2h_gb_s_per_writer=None) -> SaveTimes:
    """Stall and background write of one save, in minutes: ``SaveTimes(checkpoint_stall_min, async_write_min)``.

    With ``B = min(write_gb_s_per_writer * writers, aggregate_write_gb_s)``
    (:func:`effective_bandwidth_gb_s`):

    * synchronous (``async_save=False``): ``stall = size_gb / B / 60``, ``write = 0``: training
      waits for the whole write.
    * asynchronous (``async_save=True``): ``stall = size_gb / (d2h_gb_s_per_writer * writers) / 60``
      (each writer copies its shard from device to host memory, all in parallel) and
      ``write = size_gb / B / 60`` (the background write from host memory, during which training
      runs; see ``W`` and ``slowdown`` in :mod:`.waste`). This split is what asynchronous
      checkpointing buys [PTAsync24: 148.8 s -> 6.3 s of stall for a 7B model].

    Assumptions: sustained bandwidths, equal shards; the host has room for a pinned copy of each
    shard; an asynchronous write finishes before the next save starts (checked by :mod:`.waste`).
    Leaves out serialisation and coordination overheads (see the module notes).
    ``d2h_gb_s_per_writer`` is required for an asynchronous save (PCIe device-to-host copy rates
    of tens of GB/s per GPU are typical; measure yours).
    """
    if not isinstance(async_save, (bool, np.bool_)):
        raise InputError("async_save", async_save, "must be True or False")
    if async_save and d2h_gb_s_per_writer is None:
        raise InputError("d2h_gb_s_per_writer", None,
                         "must be given (a number > 0) for an asynchronous save: the stall is the device-to-host copy")
    specs = [("size_gb", size_gb, "nonnegative", False), ("writers", writers, "count", False),
             ("write_gb_s_per_writer", write_gb_s_per_writer, "positive", False),
             ("aggregate_write_gb_s", aggregate_write_gb_s, "positive", True)]
    if d2h_gb_s_per_writer is not None:
        specs.append(("d2h_gb_s_per_writer", d2h_gb_s_per_writer, "positive", False))
    arrays, wrap = _prepare_inf(*specs)
    size, n, per, agg = arrays[:4]
    write = _minutes(size, _bandwidth(per, n, agg, "write_gb_s_per_writer"), "write_gb_s_per_writer")
    if not async_save:
        return SaveTimes(wrap(write), wrap(np.zeros_like(write)))
    d2h = arrays[4]
    stall = _minutes(size, _bandwidth(d2h, n, np.inf, "d2h_gb_s_per_writer"), "d2h_gb_s_per_writer")
    return SaveTimes(wrap(stall), wrap(write))


def restore_time_min(size_gb, readers, read_gb_s_per_reader, aggregate_read_gb_s=np.inf):
    """Time to read a checkpoint back, in minutes: ``size_gb / min(read_gb_s_per_reader * readers, aggregate_read_gb_s) / 60``.

    The ``load_min`` part of a restart (:mod:`.recovery`). Same assumptions as
    :func:`save_times`; a restore that reads every shard from one place (e.g. each rank reading the
    full replicated state) has ``readers`` = the ranks reading distinct data, and a restore from
    peers' host memory [Gemini23] has ``aggregate_read_gb_s = inf``. Leaves out the
    host-to-device copy and state re-sharding.
    """
    (size, n, per, agg), wrap = _prepare_inf(("size_gb", size_gb, "nonnegative", False),
                                             ("readers", readers, "count", False),
                                             ("read_gb_s_per_reader", read_gb_s_per_reader, "positive", False),
                                             ("aggregate_read_gb_s", aggregate_read_gb_s, "positive", True))
    return wrap(_minutes(size, _bandwidth(per, n, agg, "read_gb_s_per_reader"), "read_gb_s_per_reader"))


def storage_cost(size_gb, retention, price_per_gb_month, months, copies=1):
    """Money for keeping checkpoints: ``size_gb * retention * copies * months * price_per_gb_month``.

    ``retention`` checkpoints kept at any time (whole number >= 1: the newest, plus older ones for
    rollback), each stored as ``copies`` replicas (whole number >= 1; e.g. 2 for a second region),
    for ``months`` billing months (:func:`months_from_hours`). Assumes the store is always full
    (``retention`` checkpoints from the start: an upper bound for the first ``retention``
    intervals), a flat per-GB-month price, and no request, egress or early-deletion fees, which
    object stores charge separately.
    """
    (size, k, price, m, c), wrap = prepare(("size_gb", size_gb, "nonnegative"), ("retention", retention, "count"),
                                           ("price_per_gb_month", price_per_gb_month, "nonnegative"),
                                           ("months", months, "nonnegative"), ("copies", copies, "count"))
    with _quiet():
        cost = size * k * c * m * price
    check_finite_result("size_gb", cost, "the storage cost overflows")
    return wrap(cost)


def months_from_hours(h):
    """Billing months in ``h`` hours: ``h / 730`` (8,760 h a year / 12 = :data:`HOURS_PER_BILLING_MONTH`)."""
    (h_,), wrap = prepare(("h", h, "nonnegative"))
    return wrap(h_ / HOURS_PER_BILLING_MONTH)
