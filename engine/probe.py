"""Checkpoint probe: measure what a save and a restore cost, and prove a checkpoint resumes training.

The planner's inputs ``checkpoint_stall_min`` (C), ``async_write_min`` (W) and
``async_slowdown_fraction`` (s) are usually guessed. :func:`run_probe` measures them on a small real
training loop (PyTorch, CPU) and :func:`audit_checkpoint` checks what an existing checkpoint holds.

What :func:`run_probe` measures, per save method (``torch_save``: ``torch.save`` to a temporary file,
``fsync``, rename, directory ``fsync``; ``dcp_sync``: ``torch.distributed.checkpoint.save`` with
``FileSystemWriter(sync_files=True)``; ``dcp_async``: ``torch.distributed.checkpoint.async_save``,
thread executor, the writer's blocking CPU staging copy):

* ``stall_s``: the time the training loop is blocked by the save call (C). For the synchronous
  methods that is the whole save until the files are fsynced; for ``dcp_async`` it is the state-dict
  collection and staging copy until ``async_save`` returns.
* ``write_s``: background write until the checkpoint is durable (W): from ``async_save``'s return
  until its future completes (DCP fsyncs every data file and ``.metadata``) and the directory entry
  is fsynced. 0 for synchronous methods.
* ``slowdown_fraction``: share of training throughput lost while the background write runs (s),
  the engine's definition ``1 - baseline_step_time / step_time_during_write``, computed as work
  accounting: each training step that overlaps the write window contributes the overlapping share
  of its duration as completed work; ``s = 1 - work_done / (W / baseline_step_s)``, clipped to
  [0, 0.99]. Steps are assumed to progress uniformly; 0 when no step overlapped the write.
* ``size_bytes``: bytes of the checkpoint's files on disk (``st_size`` summed).
* restore in a fresh process (a ``python -c`` child that imports torch, loads this file by path and
  restores the latest checkpoint): ``restore_with_startup_s`` from launching the process to the state
  loaded (interpreter start-up and ``import torch`` included), ``restore_s`` without them (data, model
  and optimizer construction + reading + ``load_state_dict``), and the parts; the probe's own set-up
  in the child (deterministic mode) is timed apart and left out (:class:`RestoreTiming`). The child's
  clock and the parent's are ``time.monotonic`` (system-wide on Linux).

Resume verification: the parent trains ``T`` steps without interruption and records every loss and
the final parameters. A child restores a checkpoint taken at step ``S < T``, trains to ``T`` and
reports its losses and parameters; on CPU in deterministic mode (``torch.use_deterministic_algorithms``,
fixed thread count) a complete checkpoint gives bit-identical losses and parameters. Deliberately
incomplete checkpoints (``torch.save`` without the optimizer, RNG, data position or LR-scheduler
state) show which missing piece breaks continuation and by how much. The toy training is built so
that each piece matters: Adam (optimizer moments), dropout (global RNG), a per-epoch shuffled data
stream (position = epoch and batch), a warm-up + cosine LR schedule (scheduler state).

Limits: CPU only (no device-to-host copy, no GPU contention); a single process (no collectives,
no sharding, no rank coordination); local filesystem: ``fsync`` is requested, but what it guarantees
depends on the device and the filesystem; the restore reads may be served from the page cache: the
probe asks the kernel to drop the checkpoint's cached pages first (``posix_fadvise(DONTNEED)``,
best effort, not verifiable). Figures are for the probe's model: a real job's stall scales with
its checkpoint size and storage bandwidth (``write_mb_per_s`` helps extrapolate). The restore
excludes what a real restart also pays (rescheduling, container start, collective set-up), so it is
only a lower bound for ``restart_min``; the probe never writes it into a scenario.

:func:`audit_checkpoint` never executes code from the file: it reads the pickle stream with an
unpickler that resolves no global at all (every global becomes an inert placeholder) and refuses any
file that references a global outside a small allowlist of tensor, container and numpy-array
rebuilders, because ``torch.load(weights_only=False)`` would call it. This also avoids
``torch.distributed.checkpoint.FileSystemReader.read_metadata``, which in PyTorch 2.13 reads
``.metadata`` with a plain ``pickle.load`` (it would run a hostile payload). The audit needs no torch.

``import engine.probe`` does not import torch: torch is imported when a probe runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import io
import json
import math
import os
import pickle
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

try:
    from ._inputs import InputError
except ImportError:  # loaded standalone by the restore child (see _CHILD_CODE): no engine package
    class InputError(ValueError):  # type: ignore[no-redef]
        def __init__(self, field: str, value: Any, rule: str, position: tuple | None = None):
            self.field, self.value, self.rule, self.position = field, value, rule, position
            super().__init__(f"{field}={value!r}: {rule}")


METHODS: tuple[str, ...] = ("torch_save", "dcp_sync", "dcp_async")
#: restorable-state pieces, in the order of the workbook's Readiness sheet
PIECES: tuple[str, ...] = ("model", "optimizer", "step", "data_position", "rng", "lr_scheduler", "grad_scaler")
WHY: dict[str, str] = {
    "model": "Without the weights there is nothing to resume.",
    "optimizer": "A fresh optimizer (no moments, no step counts) changes the trajectory after restore.",
    "step": "Schedules, logging and data position key off the global step.",
    "data_position": "Without it the job re-reads or skips data: silently different training.",
    "rng": "Dropout, sampling and data order diverge from the uninterrupted run.",
    "lr_scheduler": "A restarted schedule re-warms or jumps the learning rate.",
    "grad_scaler": "fp16 loss scaling: a reset scaler can overflow or underflow the first steps "
                   "(not needed for fp32 or bf16 training).",
}
#: the incomplete checkpoints of the resume verification: name -> the top-level key left out
VARIANTS: dict[str, str] = {
    "no_optimizer": "optimizer",
    "no_rng": "rng",
    "no_data_position": "data_position",
    "no_lr_scheduler": "lr_scheduler",
}
_DCP_WARNING = "torch.distributed is disabled"
_ASYNC_TIMEOUT_S = 600.0  # DCP's single-process notice (no process group)


class TorchMissingError(ImportError):
    """PyTorch is needed for the probe and is not installed."""


def torch_available() -> bool:
    """Whether ``import torch`` would succeed (without importing it)."""
    import importlib.util
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # e.g. sys.modules["torch"] = None (import blocked)
        return False


def _torch():
    try:
        import torch
    except ImportError:
        raise TorchMissingError(
            "PyTorch is not installed: the probe needs it (pip install 'ckptplan[torch]'; a CPU build is enough)"
        ) from None
    return torch


# =============================================================================== configuration

@dataclass(frozen=True)
class ProbeConfig:
    """What the probe trains and how it measures. Validated on creation (:class:`InputError`).

    Model: an MLP ``features -> hidden (x layers, GELU + dropout) -> classes``; state on disk is
    about ``3 x 4 bytes`` per parameter (fp32 weights + Adam's two moments).
    """

    hidden: int = 256             #: hidden width of the MLP
    layers: int = 2               #: hidden layers (>= 1)
    features: int = 32            #: input features of the synthetic data
    classes: int = 10             #: output classes
    batch: int = 32               #: samples per step
    samples: int = 2048           #: synthetic data set size (batches per epoch = samples // batch)
    dropout: float = 0.1          #: dropout probability (> 0: it is what makes the RNG state matter)
    lr: float = 1e-3              #: peak learning rate (Adam)
    warmup_steps: int = 5         #: linear warm-up, then cosine decay to 10 % over ``schedule_steps``
    schedule_steps: int = 1000    #: horizon of the cosine schedule
    seed: int = 0                 #: seeds the data, the initialisation, dropout and data order
    threads: int = 1              #: torch intra-op threads (fixed: part of determinism)
    burn_in_steps: int = 3        #: untimed steps before the baseline
    baseline_steps: int = 20      #: timed steps without a save: the baseline step time
    saves_per_method: int = 2     #: timed saves per method (methods interleaved)
    gap_steps: int = 3            #: steps after a save is durable before the next one
    resume_steps: int = 8         #: steps the incomplete variants continue (and the run goes on after the last save)
    methods: tuple[str, ...] = METHODS
    verify: bool = True           #: restore in fresh processes: restore time + resume verification
    variants: bool = True         #: also run the deliberately incomplete checkpoints
    evict_page_cache: bool = True  #: ask the kernel to drop the checkpoint's pages before a restore

    def __post_init__(self) -> None:
        methods = self.methods
        if isinstance(methods, str):
            methods = tuple(m.strip() for m in methods.split(",") if m.strip())
        object.__setattr__(self, "methods", tuple(methods))
        ints = {"hidden": 1, "layers": 1, "features": 1, "classes": 2, "batch": 1, "samples": 1,
                "warmup_steps": 1, "schedule_steps": 1, "seed": 0, "threads": 1, "burn_in_steps": 0,
                "baseline_steps": 2, "saves_per_method": 1, "gap_steps": 1, "resume_steps": 1}
        for name, low in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InputError(name, v, "must be a whole number")
            if v < low:
                raise InputError(name, v, f"must be >= {low}")
        if self.samples < 2 * self.batch:
            raise InputError("samples", self.samples, f"must be >= 2 x batch = {2 * self.batch} "
                                                      "(at least two batches per epoch, so a data position means something)")
        for name in ("dropout", "lr"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError(name, v, "must be a finite number")
        if not 0 < self.dropout < 1:
            raise InputError("dropout", self.dropout, "must be in (0, 1): dropout is what makes the RNG state matter")
        if self.lr <= 0:
            raise InputError("lr", self.lr, "must be > 0")
        if not self.methods:
            raise InputError("methods", self.methods, f"give at least one of {', '.join(METHODS)}")
        for m in self.methods:
            if m not in METHODS:
                raise InputError("methods", m, f"unknown save method; known: {', '.join(METHODS)}")
        if len(set(self.methods)) != len(self.methods):
            raise InputError("methods", ",".join(self.methods), "each method at most once")
        for name in ("verify", "variants", "evict_page_cache"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(name, getattr(self, name), "must be true or false")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["methods"] = list(self.methods)
        return d


# ============================================================================ the toy training

def _lr_lambda(warmup_steps: int, schedule_steps: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, schedule_steps - warmup_steps))
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))
    return factor


def _deterministic(torch: Any, cfg: ProbeConfig) -> None:
    """Deterministic CPU kernels and a fixed thread count (in 2.13 the first call imports
    ``torch._inductor``, over a second: a cost of the verification, kept out of the restore time)."""
    if not torch.are_deterministic_algorithms_enabled():
        torch.use_deterministic_algorithms(True)
    torch.set_num_threads(cfg.threads)


class _Trainer:
    """Model, optimizer, LR schedule and a seeded, shuffled data stream; deterministic on CPU.

    Built the same way in the parent and in every restore child (as a restarted job rebuilds from
    its configuration), so only the checkpoint can carry state from one to the other.
    """

    def __init__(self, cfg: ProbeConfig):
        torch = _torch()
        self.torch, self.cfg = torch, cfg
        _deterministic(torch, cfg)
        gen = torch.Generator().manual_seed(cfg.seed)
        self.x = torch.randn(cfg.samples, cfg.features, generator=gen)
        teacher = torch.randn(cfg.features, cfg.classes, generator=gen)
        noise = 0.5 * torch.randn(cfg.samples, cfg.classes, generator=gen)
        self.y = (self.x @ teacher + noise).argmax(dim=1)
        torch.manual_seed(cfg.seed)  # the global generator: initialisation, then dropout
        nn = torch.nn
        blocks: list[Any] = []
        width = cfg.features
        for _ in range(cfg.layers):
            blocks += [nn.Linear(width, cfg.hidden), nn.GELU(), nn.Dropout(cfg.dropout)]
            width = cfg.hidden
        blocks.append(nn.Linear(width, cfg.classes))
        self.model = nn.Sequential(*blocks)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, _lr_lambda(cfg.warmup_steps, cfg.schedule_steps))
        self.step = 0
        self.epoch = 0
        self.batch_in_epoch = 0
        self.batches_per_epoch = cfg.samples // cfg.batch
        self._perm_epoch = -1
        self._perm = None
        self.losses: list[float] = []  # losses[k] = loss of the step that took the run from k to k + 1

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def _order(self):
        if self._perm_epoch != self.epoch:
            g = self.torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + 7919 * (self.epoch + 1))
            self._perm = self.torch.randperm(self.cfg.samples, generator=g)
            self._perm_epoch = self.epoch
        return self._perm

    def train_step(self) -> tuple[float, float]:
        """One step; returns its (start, end) ``perf_counter`` times."""
        t0 = time.perf_counter()
        if self.batch_in_epoch >= self.batches_per_epoch:
            self.epoch += 1
            self.batch_in_epoch = 0
        b, B = self.batch_in_epoch, self.cfg.batch
        idx = self._order()[b * B:(b + 1) * B]
        self.model.train()
        self.opt.zero_grad(set_to_none=True)
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x[idx]), self.y[idx])
        loss.backward()
        self.opt.step()
        self.sched.step()
        self.batch_in_epoch += 1
        self.step += 1
        self.losses.append(float(loss.detach()))
        return t0, time.perf_counter()

    def run_until(self, step: int) -> None:
        while self.step < step:
            self.train_step()

    # ---- checkpoint state
    def _common_state(self) -> dict[str, Any]:
        return {
            "lr_scheduler": self.sched.state_dict(),
            "step": self.step,
            "data_position": {"epoch": self.epoch, "batch": self.batch_in_epoch},
            "rng": {"torch": self.torch.get_rng_state()},
        }

    def state_plain(self) -> dict[str, Any]:
        """The classic ``torch.save`` layout (every value loadable with ``weights_only=True``)."""
        return {"model": self.model.state_dict(), "optimizer": self.opt.state_dict(), **self._common_state()}

    def state_dcp(self) -> dict[str, Any]:
        """DCP layout: model and optimizer state keyed by parameter name (``get_state_dict``)."""
        from torch.distributed.checkpoint.state_dict import get_state_dict
        model_sd, optim_sd = get_state_dict(self.model, self.opt)
        return {"model": model_sd, "optimizer": optim_sd, **self._common_state()}

    def _apply_common(self, state: dict[str, Any]) -> list[str]:
        loaded = []
        if "lr_scheduler" in state:
            self.sched.load_state_dict(state["lr_scheduler"])
            loaded.append("lr_scheduler")
        if "step" in state:
            self.step = int(state["step"])
            loaded.append("step")
        if "data_position" in state:
            self.epoch = int(state["data_position"]["epoch"])
            self.batch_in_epoch = int(state["data_position"]["batch"])
            loaded.append("data_position")
        if "rng" in state:
            self.torch.set_rng_state(state["rng"]["torch"])
            loaded.append("rng")
        return loaded

    def restore(self, path: str, fmt: str) -> list[str]:
        """Load what the checkpoint holds; pieces it lacks keep their fresh-start values."""
        if fmt == "torch":
            state = self.torch.load(path, map_location="cpu", weights_only=True)
            self.model.load_state_dict(state["model"])
            loaded = ["model"]
            if "optimizer" in state:
                self.opt.load_state_dict(state["optimizer"])
                loaded.append("optimizer")
            return loaded + self._apply_common(state)
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict
        template = self.state_dcp()
        dcp.load(template, checkpoint_id=path, no_dist=True)
        set_state_dict(self.model, self.opt, model_state_dict=template["model"], optim_state_dict=template["optimizer"])
        return ["model", "optimizer"] + self._apply_common(template)


# ================================================================================ measurements

@dataclass(frozen=True)
class SaveMeasurement:
    """One timed save. Times in seconds (``perf_counter``), sizes in bytes."""

    method: str
    index: int                    #: n-th save of this method
    path: str                     #: the checkpoint (only the latest per method is kept, and only with ``keep``)
    step: int                     #: training step the checkpoint holds
    stall_s: float                #: training blocked by the save call (C)
    write_s: float                #: background write until durable (W); 0 for synchronous methods
    total_s: float                #: save call start until durable (= stall_s + write_s)
    size_bytes: int               #: bytes of the checkpoint's files on disk
    files: int                    #: files making up the checkpoint
    overlap_steps: int            #: training steps that overlapped the background write
    step_during_write_s: float | None  #: mean duration of those steps (None: none overlapped)
    slowdown_fraction: float      #: share of throughput lost while the write ran (s)

    @property
    def write_mb_per_s(self) -> float:
        return self.size_bytes / 1e6 / self.total_s


@dataclass(frozen=True)
class RestoreTiming:
    """A restore in a fresh process (seconds).

    ``restore_s`` = ``build_s + load_s``: from the restore code's start (torch imported) to the state
    loaded. ``restore_with_startup_s`` = ``interpreter_start_s + torch_import_s + restore_s``: from
    launching the process to the state loaded. Both leave out ``harness_setup_s`` (loading the probe
    module and switching on deterministic mode for the verification), which a real restore does not pay.
    """

    interpreter_start_s: float    #: process launch to the first statement (fork/exec, interpreter, site)
    torch_import_s: float         #: ``import torch`` (+ ``torch.distributed.checkpoint`` for DCP)
    harness_setup_s: float        #: excluded from the restore figures
    build_s: float                #: building data, model, optimizer and schedule
    load_s: float                 #: reading the checkpoint and applying it (load_state_dict)
    restore_s: float
    restore_with_startup_s: float
    page_cache_eviction_requested: bool


@dataclass(frozen=True)
class ResumeCheck:
    """A checkpoint restored in a fresh process, continued to the reference run's last step and
    compared with the uninterrupted run (losses and final parameters, exactly)."""

    name: str                     #: ``complete (<method>)`` or a :data:`VARIANTS` name
    source: str                   #: save method or ``torch_save`` for the variants
    checkpoint: str               #: the restored checkpoint (kept only with ``keep``)
    missing: tuple[str, ...]      #: pieces deliberately left out
    restored_step: int
    steps_continued: int
    identical: bool               #: losses and parameters bit-identical to the uninterrupted run
    losses_identical: bool
    params_identical: bool
    max_abs_param_diff: float
    max_abs_loss_diff: float
    first_divergent_step: int | None  #: first step whose loss differs (None: none)
    final_loss_reference: float
    final_loss_resumed: float
    pieces_loaded: tuple[str, ...]
    timing: RestoreTiming

    @property
    def verdict(self) -> str:
        if self.identical:
            return "bit-identical"
        if self.losses_identical:
            return "same losses, parameters differ"
        return f"diverges from step {self.first_divergent_step}"


@dataclass(frozen=True)
class MethodSummary:
    """Medians over a method's saves; the restore and resume check of its latest checkpoint."""

    method: str
    saves: int
    stall_s: float
    write_s: float
    total_s: float
    slowdown_fraction: float
    size_bytes: int
    write_mb_per_s: float
    resume: ResumeCheck | None

    def scenario_overrides(self) -> dict[str, float]:
        """The scenario fields this method measures, in the engine's units (minutes, fraction)."""
        return {
            "checkpoint_stall_min": self.stall_s / 60.0,
            "async_write_min": self.write_s / 60.0,
            "async_slowdown_fraction": self.slowdown_fraction,
        }


@dataclass
class ProbeResult:
    """Everything one probe run measured; :meth:`to_dict` is JSON-ready."""

    config: ProbeConfig
    date_utc: str
    torch_version: str
    python_version: str
    platform: str
    checkpoint_dir: str           #: the probe's folder (removed after the run unless ``keep``)
    parameters: int
    state_bytes: int              #: model + optimizer tensors in memory
    baseline_step_s: float        #: median step time without a save
    baseline_step_p90_s: float
    final_step: int               #: last step of the uninterrupted reference run
    saves: list[SaveMeasurement]
    methods: dict[str, MethodSummary]
    resume_checks: list[ResumeCheck]
    notes: list[str] = field(default_factory=list)

    def scenario_overrides(self, method: str = "dcp_async") -> dict[str, float]:
        if method not in self.methods:
            raise InputError("method", method, f"was not probed; probed: {', '.join(self.methods)}")
        return self.methods[method].scenario_overrides()

    def to_dict(self) -> dict[str, Any]:
        def conv(o: Any) -> Any:
            if dataclasses.is_dataclass(o) and not isinstance(o, type):
                d = {f.name: conv(getattr(o, f.name)) for f in dataclasses.fields(o)}
                for extra in ("write_mb_per_s", "verdict"):
                    if hasattr(type(o), extra) and isinstance(getattr(type(o), extra), property):
                        d[extra] = getattr(o, extra)
                return d
            if isinstance(o, dict):
                return {k: conv(v) for k, v in o.items()}
            if isinstance(o, (list, tuple)):
                return [conv(v) for v in o]
            if isinstance(o, float) and not math.isfinite(o):
                return None  # JSON has no infinity: null = not comparable (e.g. shapes differ)
            return o
        d = conv(self)
        d["config"] = self.config.to_dict()
        d["scenario_overrides"] = {m: s.scenario_overrides() for m, s in self.methods.items()}
        return d


# ------------------------------------------------------------------------------------- helpers

def _disk_usage(path: Path) -> tuple[int, int]:
    """(bytes, files) of a file or of every file under a directory (``st_size``)."""
    if path.is_file():
        return path.stat().st_size, 1
    total = files = 0
    for p in sorted(path.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
            files += 1
    return total, files


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _evict(path: Path) -> bool:
    """Ask the kernel to drop the cached pages of the checkpoint's files (best effort)."""
    if not hasattr(os, "posix_fadvise"):
        return False
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    ok = True
    for p in files:
        try:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        except OSError:
            ok = False
    return ok


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _save_torch(trainer: _Trainer, path: Path) -> float:
    """``torch.save`` to a temporary file, fsync, rename, fsync the directory. Returns the stall."""
    t0 = time.perf_counter()
    state = trainer.state_plain()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        trainer.torch.save(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)
    return time.perf_counter() - t0


def _save_dcp_sync(trainer: _Trainer, path: Path) -> float:
    import torch.distributed.checkpoint as dcp
    t0 = time.perf_counter()
    state = trainer.state_dcp()
    dcp.save(state, storage_writer=dcp.FileSystemWriter(str(path), sync_files=True), no_dist=True)
    _fsync_dir(path)
    _fsync_dir(path.parent)
    return time.perf_counter() - t0


def _overlap_work(steps: list[tuple[float, float]], start: float, end: float) -> tuple[float, int, float | None]:
    """(work in steps done inside [start, end], steps overlapping it, their mean duration)."""
    work, durations = 0.0, []
    for s, e in steps:
        overlap = min(e, end) - max(s, start)
        if overlap > 0 and e > s:
            work += overlap / (e - s)
            durations.append(e - s)
    return work, len(durations), (statistics.fmean(durations) if durations else None)


def _slowdown(work: float, window_s: float, baseline_step_s: float, overlapped: int) -> float:
    if overlapped == 0 or window_s <= 0:
        return 0.0
    expected = window_s / baseline_step_s
    return min(0.99, max(0.0, 1.0 - work / expected))


def _timed_save(trainer: _Trainer, method: str, path: Path, baseline_step_s: float, gap_steps: int,
                index: int) -> SaveMeasurement:
    step = trainer.step
    if method == "torch_save":
        stall = _save_torch(trainer, path)
        write, work, overlapped, during = 0.0, 0.0, 0, None
    elif method == "dcp_sync":
        stall = _save_dcp_sync(trainer, path)
        write, work, overlapped, during = 0.0, 0.0, 0, None
    else:
        import torch.distributed.checkpoint as dcp
        done: list[float] = []

        def durable(_future: Any) -> None:  # runs in the writer thread when the write has finished
            _fsync_dir(path)
            _fsync_dir(path.parent)
            done.append(time.perf_counter())

        t0 = time.perf_counter()
        state = trainer.state_dcp()
        future = dcp.async_save(state, storage_writer=dcp.FileSystemWriter(str(path), sync_files=True),
                                no_dist=True)
        t_return = time.perf_counter()
        future.add_done_callback(durable)
        stall = t_return - t0
        step_times: list[tuple[float, float]] = []
        while not done:  # train until the write is durable (the callback has fsynced the directory)
            step_times.append(trainer.train_step())
            if step_times[-1][1] - t_return > _ASYNC_TIMEOUT_S:
                raise RuntimeError(f"dcp.async_save to {path} did not finish within {_ASYNC_TIMEOUT_S:.0f} s")
        exc = future.exception()
        if exc is not None:
            raise RuntimeError(f"dcp.async_save failed: {exc}") from exc
        write = done[0] - t_return
        work, overlapped, during = _overlap_work(step_times, t_return, done[0])
    for _ in range(gap_steps):
        trainer.train_step()
    size, files = _disk_usage(path)
    return SaveMeasurement(method=method, index=index, path=str(path), step=step, stall_s=stall, write_s=write,
                           total_s=stall + write, size_bytes=size, files=files, overlap_steps=overlapped,
                           step_during_write_s=during,
                           slowdown_fraction=_slowdown(work, write, baseline_step_s, overlapped))


# ------------------------------------------------------------------------ fresh-process restore

# The restore child: stamps the clock before anything is imported, imports torch, loads this file
# by path (no ``engine`` package import, so none of ckptplan's own dependencies are timed), restores.
_CHILD_CODE = (
    "import time; _t0 = time.monotonic()\n"
    "import sys, importlib.util\n"
    "import torch; _t1 = time.monotonic()\n"
    "_spec = importlib.util.spec_from_file_location('_ckptplan_probe_child', sys.argv[1])\n"
    "_mod = importlib.util.module_from_spec(_spec); sys.modules[_spec.name] = _mod\n"
    "_spec.loader.exec_module(_mod)\n"
    "_mod._restore_child(sys.argv[2], {'python_start': _t0, 'torch_imported': _t1, 'module_ready': time.monotonic()})\n"
)


def _restore_child(spec_file: str, stamps: dict[str, float]) -> None:
    """Entry point of the restore child (see :data:`_CHILD_CODE`)."""
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    if spec["format"] == "dcp":  # library import: counted with ``import torch``, not as restore work
        import torch.distributed.checkpoint  # noqa: F401
        import torch.distributed.checkpoint.state_dict  # noqa: F401
    stamps = {**stamps, "libraries_imported": time.monotonic()}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_DCP_WARNING)
        cfg = ProbeConfig(**{**spec["config"], "methods": tuple(spec["config"]["methods"])})
        _deterministic(_torch(), cfg)
        t_setup = time.monotonic()
        trainer = _Trainer(cfg)
        t_built = time.monotonic()
        loaded = trainer.restore(spec["checkpoint"], spec["format"])
        t_loaded = time.monotonic()
        restored_step = trainer.step
        trainer.run_until(int(spec["until_step"]))
    trainer.torch.save({
        "stamps": {**stamps, "setup": t_setup, "built": t_built, "loaded": t_loaded},
        "restored_step": restored_step,
        "loaded": loaded,
        "losses": trainer.losses,
        "model": trainer.model.state_dict(),
    }, spec["result"])


def _run_child(cfg: ProbeConfig, checkpoint: Path, fmt: str, until_step: int, workdir: Path, tag: str,
               evict: bool) -> tuple[dict[str, Any], RestoreTiming]:
    torch = _torch()
    result_path = workdir / f"child-{tag}.pt"
    spec_path = workdir / f"child-{tag}.json"
    spec_path.write_text(json.dumps({"config": cfg.to_dict(), "checkpoint": str(checkpoint), "format": fmt,
                                     "until_step": until_step, "result": str(result_path)}), encoding="utf-8")
    evicted = _evict(checkpoint) if evict else False
    launch = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _CHILD_CODE, str(Path(__file__).resolve()), str(spec_path)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
        raise RuntimeError(f"restore child for {checkpoint} failed (exit {proc.returncode}):\n{tail}")
    out = torch.load(result_path, map_location="cpu", weights_only=True)
    st = out["stamps"]
    interpreter = st["python_start"] - launch
    torch_import = (st["torch_imported"] - st["python_start"]) + (st["libraries_imported"] - st["module_ready"])
    build, load = st["built"] - st["setup"], st["loaded"] - st["built"]
    timing = RestoreTiming(
        interpreter_start_s=interpreter, torch_import_s=torch_import,
        harness_setup_s=(st["module_ready"] - st["torch_imported"]) + (st["setup"] - st["libraries_imported"]),
        build_s=build, load_s=load,
        restore_s=build + load, restore_with_startup_s=interpreter + torch_import + build + load,
        page_cache_eviction_requested=evicted,
    )
    result_path.unlink(missing_ok=True)
    spec_path.unlink(missing_ok=True)
    return out, timing


def _compare(name: str, source: str, checkpoint: Path, missing: tuple[str, ...], out: dict[str, Any],
             timing: RestoreTiming, ref_losses: list[float], ref_params: dict[str, Any]) -> ResumeCheck:
    torch = _torch()
    start = int(out["restored_step"])
    resumed_tail = [float(v) for v in out["losses"]]  # the child records only the steps after its restore
    reference = ref_losses[start:]
    n = min(len(reference), len(resumed_tail))
    first = next((start + i + 1 for i in range(n) if reference[i] != resumed_tail[i]), None)
    if first is None and len(reference) != len(resumed_tail):
        first = start + n + 1
    loss_diff = max((abs(a - b) for a, b in zip(reference, resumed_tail)), default=0.0)
    if len(reference) != len(resumed_tail):
        loss_diff = math.inf
    params_identical, param_diff = True, 0.0
    model = out["model"]
    for key, ref in ref_params.items():
        got = model.get(key)
        if got is None or got.shape != ref.shape:
            params_identical, param_diff = False, math.inf
            continue
        if not torch.equal(got, ref):
            params_identical = False
            param_diff = max(param_diff, float((got.double() - ref.double()).abs().max()))
    losses_identical = first is None
    return ResumeCheck(
        name=name, source=source, checkpoint=str(checkpoint), missing=missing, restored_step=start,
        steps_continued=len(ref_losses) - start, identical=losses_identical and params_identical,
        losses_identical=losses_identical, params_identical=params_identical,
        max_abs_param_diff=param_diff, max_abs_loss_diff=loss_diff, first_divergent_step=first,
        final_loss_reference=ref_losses[-1], final_loss_resumed=resumed_tail[-1] if resumed_tail else math.nan,
        pieces_loaded=tuple(out["loaded"]), timing=timing,
    )


# ======================================================================================== probe

@contextlib.contextmanager
def _torch_settings(torch: Any):
    """Restore the caller's thread count and determinism flag after the probe."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def run_probe(config: ProbeConfig | None = None, directory: str | Path | None = None, keep: bool = False,
              progress: Callable[[str], None] | None = None) -> ProbeResult:
    """Train the toy model, time saves by each method, restore in fresh processes, verify resumes.

    ``directory``: where checkpoints are written (the storage you want to measure); default: a new
    temporary directory. The probe writes into a new ``ckptplan-probe-*`` folder inside it and
    removes that folder at the end unless ``keep``. Raises :class:`TorchMissingError` without
    PyTorch and :class:`InputError` for a bad configuration or directory. See the module docstring
    for what each figure means and its limits.
    """
    cfg = config or ProbeConfig()
    if not isinstance(cfg, ProbeConfig):
        raise InputError("config", type(cfg).__name__, "must be an engine.probe.ProbeConfig")
    torch = _torch()
    say = progress or (lambda _msg: None)
    if directory is not None:
        directory = Path(directory)
        if not directory.is_dir():
            raise InputError("directory", str(directory), "must be an existing directory")
    work = Path(tempfile.mkdtemp(prefix="ckptplan-probe-", dir=directory))
    try:
        with warnings.catch_warnings(), _torch_settings(torch):
            warnings.filterwarnings("ignore", message=_DCP_WARNING)
            return _probe(cfg, torch, work, say)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _probe(cfg: ProbeConfig, torch: Any, work: Path, say: Callable[[str], None]) -> ProbeResult:
    ckpt_dir = work / "checkpoints"
    ckpt_dir.mkdir()
    trainer = _Trainer(cfg)
    say(f"model: {trainer.parameters:,} parameters; burn-in and baseline")
    for _ in range(cfg.burn_in_steps):
        trainer.train_step()
    base = [e - s for s, e in (trainer.train_step() for _ in range(cfg.baseline_steps))]
    baseline = statistics.median(base)
    p90 = sorted(base)[min(len(base) - 1, int(math.ceil(0.9 * len(base))) - 1)]
    state = trainer.state_plain()
    state_bytes = sum(t.numel() * t.element_size() for t in _tensors(state["model"]))
    state_bytes += sum(t.numel() * t.element_size() for t in _tensors(state["optimizer"]))
    del state

    saves: list[SaveMeasurement] = []
    latest: dict[str, tuple[Path, int]] = {}
    for i in range(cfg.saves_per_method):
        for method in cfg.methods:
            path = ckpt_dir / (f"{method}-{i}.pt" if method == "torch_save" else f"{method}-{i}")
            say(f"save {i + 1}/{cfg.saves_per_method}: {method}")
            m = _timed_save(trainer, method, path, baseline, cfg.gap_steps, i)
            saves.append(m)
            if method in latest:
                _remove(latest[method][0])
            latest[method] = (path, m.step)

    variant_paths: dict[str, Path] = {}
    if cfg.verify and cfg.variants:
        full = trainer.state_plain()
        for name, key in VARIANTS.items():
            p = ckpt_dir / f"variant-{name}.pt"
            torch.save({k: v for k, v in full.items() if k != key}, p)
            variant_paths[name] = p
        del full
    trainer.run_until(trainer.step + cfg.resume_steps)
    final_step = trainer.step
    ref_losses = list(trainer.losses)
    ref_params = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}

    checks: list[ResumeCheck] = []
    by_method: dict[str, ResumeCheck] = {}
    if cfg.verify:
        child_dir = work / "children"
        child_dir.mkdir()
        for method, (path, step) in latest.items():
            say(f"restore {method} checkpoint (step {step}) in a fresh process, continue to step {final_step}")
            out, timing = _run_child(cfg, path, "torch" if method == "torch_save" else "dcp", final_step,
                                     child_dir, method, cfg.evict_page_cache)
            check = _compare(f"complete ({method})", method, path, (), out, timing, ref_losses, ref_params)
            checks.append(check)
            by_method[method] = check
        for name, path in variant_paths.items():
            say(f"restore incomplete checkpoint {name} in a fresh process")
            out, timing = _run_child(cfg, path, "torch", final_step, child_dir, name, cfg.evict_page_cache)
            checks.append(_compare(name, "torch_save", path, (VARIANTS[name],), out, timing, ref_losses, ref_params))

    summaries: dict[str, MethodSummary] = {}
    for method in cfg.methods:
        ms = [s for s in saves if s.method == method]
        total = statistics.median(s.total_s for s in ms)
        size = int(statistics.median(s.size_bytes for s in ms))
        summaries[method] = MethodSummary(
            method=method, saves=len(ms), stall_s=statistics.median(s.stall_s for s in ms),
            write_s=statistics.median(s.write_s for s in ms), total_s=total,
            slowdown_fraction=statistics.median(s.slowdown_fraction for s in ms), size_bytes=size,
            write_mb_per_s=size / 1e6 / total, resume=by_method.get(method))

    notes = [
        "CPU-only single-process measurement; a GPU job adds the device-to-host copy to the stall and "
        "shares storage bandwidth between ranks.",
        f"Stall and write scale with checkpoint size and storage bandwidth: the probe's state is "
        f"{state_bytes / 1e6:.3g} MB in memory; extrapolate with the MB/s column, not the seconds.",
        "Restore times are a lower bound for restart_min: a real restart also reschedules, starts "
        "containers and sets up collectives. The probe never writes restart_min.",
    ]
    if any(s.method == "dcp_async" and s.overlap_steps == 0 for s in saves):
        notes.append("Some async writes finished before the next training step began: their slowdown is 0 "
                     "by definition (nothing ran alongside them); use a larger model to measure it.")
    if cfg.verify and cfg.evict_page_cache and not all(c.timing.page_cache_eviction_requested for c in checks):
        notes.append("The page-cache eviction request failed for some checkpoints: their restore may read "
                     "from memory.")
    return ProbeResult(
        config=cfg, date_utc=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        torch_version=torch.__version__, python_version=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        checkpoint_dir=str(work), parameters=trainer.parameters, state_bytes=state_bytes,
        baseline_step_s=baseline, baseline_step_p90_s=p90, final_step=final_step, saves=saves,
        methods=summaries, resume_checks=checks, notes=notes)


def _tensors(obj: Any) -> Iterable[Any]:
    torch = _torch()
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


# ============================================================================= checkpoint audit
#
# Key-name heuristics (case-insensitive, matched against one component of a key path: nested dict
# keys of a torch.save file, dot-separated parts of a DCP key). A piece is "present" when a
# matching key holds something (for model/optimizer: tensors), "missing" when the checkpoint is a
# mapping whose every top-level key is accounted for and none matches, "unknown" when the file's
# root is not a mapping, or unrecognised top-level keys might hold the piece under another name.
#
#   model          model, models, model_state(_dict), state_dict, module, net, network, weights,
#                  params, parameters, ema, ema_model; or: parameter-like tensors (*.weight, *.bias,
#                  running_mean/var) outside the other pieces (a bare model state_dict)
#   optimizer      optim, optimizer(s), opt, optim_state(_dict), optimizer_state(s)(_dict), opt_state;
#                  or a mapping with 'state' and 'param_groups' (torch.optim). "unknown" when it
#                  holds no per-parameter tensors (never stepped, or a stateless optimizer)
#   step           step(s), global_step, iteration(s), iter(s), num_steps, train_step, num_updates,
#                  tokens_seen, num_tokens, total_tokens: outside optimizer/scheduler/scaler state
#   data_position  [train_](data|dataloader(s)|data_loader|loader|sampler|data_sampler|data_iter|
#                  data_iterator)[_state|_states|_position|_pos], dataset_state, batch_idx, batch_index,
#                  consumed_samples, consumed_train_samples, consumed_tokens, samples_seen,
#                  data_offset; an 'epoch' counter alone is "unknown" (no position within the epoch)
#   rng            any key containing 'rng' or 'random'; or a 5056-element uint8 tensor (the torch
#                  CPU generator state)
#   lr_scheduler   any key containing 'sched'; or a mapping with 'last_epoch' and 'base_lrs'
#   grad_scaler    any key containing 'scaler', or amp, loss_scale(r); or a mapping with 'scale' and
#                  'growth_factor' (torch.amp.GradScaler)

_NAME_RULES: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"(model|models|model_state|model_state_dict|state_dict|module|net|network|weights|"
                        r"params|parameters|ema|ema_model)"),
    "optimizer": re.compile(r"(optim|optimizer|optimizers|opt|optim_state|optim_state_dict|optimizer_state|"
                            r"optimizer_states|optimizer_state_dict|opt_state)"),
    "step": re.compile(r"(step|steps|global_step|globalstep|iteration|iterations|iter|iters|num_steps|train_step|"
                       r"num_updates|tokens_seen|num_tokens|total_tokens)"),
    "data_position": re.compile(r"((train_)?(data|dataloader|dataloaders|data_loader|loader|sampler|data_sampler|"
                                r"data_iter|data_iterator)(_state|_states|_position|_pos)?|dataset_state|"
                                r"batch_idx|batch_index|consumed_samples|consumed_train_samples|consumed_tokens|"
                                r"samples_seen|data_offset)"),
}
_SEARCH_RULES: dict[str, re.Pattern[str]] = {
    "rng": re.compile(r"rng|random"),
    "lr_scheduler": re.compile(r"sched"),
    "grad_scaler": re.compile(r"scaler|amp_scal|^amp$|^loss_scaler?$"),
}
_PARAM_LEAVES = {"weight", "bias", "running_mean", "running_var", "in_proj_weight", "in_proj_bias"}
_BENIGN_TOP = re.compile(r"(config|cfg|args|hparams|hyper_parameters|hparams_name|hparams_type|meta|metadata|"
                         r"version|.*_version|format|format_version|epoch|epochs|best_.*|metrics|loss|val_loss|"
                         r"timestamp|time|date|name|arch|model_name|model_args|seed|world_size|git_.*|notes)")
_TORCH_CPU_RNG_BYTES = 5056

_DTYPE_BYTES = {
    "float32": 4, "float": 4, "float64": 8, "double": 8, "float16": 2, "half": 2, "bfloat16": 2,
    "int64": 8, "long": 8, "int32": 4, "int": 4, "int16": 2, "short": 2, "int8": 1, "uint8": 1,
    "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1, "complex64": 8, "cfloat": 8, "complex128": 16,
    "cdouble": 16, "complex32": 4, "chalf": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1, "qint8": 1, "quint8": 1, "qint32": 4,
}
_STORAGE_BYTES = {
    "FloatStorage": ("float32", 4), "DoubleStorage": ("float64", 8), "HalfStorage": ("float16", 2),
    "BFloat16Storage": ("bfloat16", 2), "LongStorage": ("int64", 8), "IntStorage": ("int32", 4),
    "ShortStorage": ("int16", 2), "CharStorage": ("int8", 1), "ByteStorage": ("uint8", 1),
    "BoolStorage": ("bool", 1), "ComplexFloatStorage": ("complex64", 8), "ComplexDoubleStorage": ("complex128", 16),
    "UntypedStorage": ("uint8", 1),
}
# globals a checkpoint may reference: what torch.load(weights_only=True) accepts for plain state dicts,
# numpy array/scalar reconstruction (numpy RNG states), and DCP's metadata records. Anything else is
# code that torch.load(weights_only=False) would run, so the audit refuses the file.
_ALLOWED_EXACT = {
    "collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.frozenset",
    "builtins.bytearray", "builtins.slice", "builtins.complex", "_codecs.encode",
    "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_meta_tensor_no_storage", "torch._tensor._rebuild_from_type_v2",
    "torch.nn.parameter.Parameter", "torch._tensor.Tensor", "torch.Tensor", "torch.Size", "torch.device",
    "torch.serialization._get_layout", "torch.storage.UntypedStorage", "torch.storage.TypedStorage",
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
    "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath",
    "torch.distributed.checkpoint.metadata.Metadata",
    "torch.distributed.checkpoint.metadata.TensorStorageMetadata",
    "torch.distributed.checkpoint.metadata.BytesStorageMetadata",
    "torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
    "torch.distributed.checkpoint.metadata.TensorProperties",
    "torch.distributed.checkpoint.metadata.MetadataIndex",
    "torch.distributed.checkpoint.metadata.StorageMeta",
    "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
    "torch.distributed.checkpoint.filesystem._StorageInfo",
}
_ALLOWED_PATTERNS = (
    re.compile(r"torch\.(" + "|".join(_STORAGE_BYTES) + r")"),
    re.compile(r"torch\.(" + "|".join(_DTYPE_BYTES) + r"|strided|sparse_coo|sparse_csr|sparse_csc|_mkldnn)"),
    re.compile(r"numpy\.dtypes\.(Bool|U?Int(8|16|32|64)|U?Byte|U?Short|U?Long|U?LongLong|Float(16|32|64)|"
               r"Complex(64|128)|Half|Double|Float|LongDouble|CLongDouble|CDouble|CFloat)DType"),
)
_MAX_PICKLE_BYTES = 256 * 2**20
_MAX_NODES = 2_000_000


def _allowed(name: str) -> bool:
    return name in _ALLOWED_EXACT or any(p.fullmatch(name) for p in _ALLOWED_PATTERNS)


class _Opaque:
    """Inert stand-in for whatever a pickle global would build: records arguments and state only."""

    _global = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> "_Opaque":
        obj = object.__new__(cls)
        obj.args, obj.kwargs, obj.state, obj.items, obj.listitems = args, kwargs, None, {}, []
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.items[key] = value

    def append(self, value: Any) -> None:
        self.listitems.append(value)

    def extend(self, values: Iterable[Any]) -> None:
        self.listitems.extend(values)

    def state_dict(self) -> dict[str, Any]:
        """Attribute dict from the pickled state (dict, or (dict, slots dict))."""
        s = self.state
        if isinstance(s, dict):
            return s
        if isinstance(s, tuple) and len(s) == 2:
            out: dict[str, Any] = {}
            for part in s:
                if isinstance(part, dict):
                    out.update(part)
            return out
        return {}


@dataclass(frozen=True)
class _StorageRef:
    key: str
    dtype: str
    itemsize: int
    numel: int


class _InertUnpickler(pickle.Unpickler):
    """Unpickler that resolves no global: each becomes an :class:`_Opaque` subclass named after it."""

    def __init__(self, file: Any):
        super().__init__(file)
        self.globals_seen: set[str] = set()
        self.storages: dict[str, _StorageRef] = {}
        self._classes: dict[str, type] = {}

    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        self.globals_seen.add(full)
        if full not in self._classes:
            self._classes[full] = type("Opaque:" + full, (_Opaque,), {"_global": full})
        return self._classes[full]

    def persistent_load(self, pid: Any) -> Any:
        # torch.save: ('storage', storage_type, key, location, numel[, view metadata])
        if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
            stype = getattr(pid[1], "_global", "?").rsplit(".", 1)[-1]
            dtype, size = _STORAGE_BYTES.get(stype, ("unknown", 1))
            ref = _StorageRef(str(pid[2]), dtype, size, int(pid[4]) if isinstance(pid[4], int) else 0)
            self.storages[ref.key] = ref
            return ref
        raise pickle.UnpicklingError(f"unsupported persistent id {str(pid)[:60]}")


def _inert_load(data: bytes, what: str, path: Path) -> tuple[Any, _InertUnpickler, int]:
    """Unpickle ``data`` inertly; returns (object, unpickler, bytes consumed). Refuses unsafe globals."""
    stream = io.BytesIO(data)
    up = _InertUnpickler(stream)
    try:
        obj = up.load()
    except RecursionError:
        raise InputError("checkpoint", str(path), f"{what} nests too deeply to inspect") from None
    except Exception as exc:  # noqa: BLE001 -- any failure of the inert parse is a malformed file
        raise InputError("checkpoint", str(path),
                         f"{what} is truncated or not a valid pickle ({type(exc).__name__}: {exc}); nothing was executed"
                         ) from None
    unsafe = sorted(g for g in up.globals_seen if not _allowed(g))
    if unsafe:
        raise InputError("checkpoint", str(path),
                         f"{what} references code outside the tensor/container allowlist ({', '.join(unsafe[:6])}"
                         f"{', ...' if len(unsafe) > 6 else ''}): torch.load(weights_only=False) would run it, so "
                         "the file is treated as hostile and not inspected further; nothing was executed")
    return obj, up, stream.tell()


@dataclass(frozen=True)
class _Leaf:
    kind: str        # tensor | number | bool | none | str | bytes | sequence | mapping | object
    nbytes: int = 0
    numel: int = 0
    dtype: str = ""
    value: Any = None
    storage: str = ""


def _tensor_leaf(op: _Opaque) -> _Leaf | None:
    g = op._global
    args = op.args
    if g in ("torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v3") \
            and args and isinstance(args[0], _StorageRef):
        ref = args[0]
        shape = args[2] if len(args) > 2 else ()
        shape = shape.args[0] if isinstance(shape, _Opaque) and shape.args else shape
        numel = math.prod(int(d) for d in shape) if isinstance(shape, (tuple, list)) else 0
        return _Leaf("tensor", numel * ref.itemsize, numel, ref.dtype, storage=ref.key)
    if g in ("torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state") and args:
        inner = args[0]
        return _tensor_leaf(inner) if isinstance(inner, _Opaque) else None
    if g == "torch._tensor._rebuild_from_type_v2" and len(args) > 2 and isinstance(args[0], type) \
            and issubclass(args[0], _Opaque) and isinstance(args[2], tuple):
        inner = args[0](*args[2])  # inert: an _Opaque subclass only records its arguments
        return _tensor_leaf(inner)
    return None


def _walk(obj: Any, source: Path) -> list[tuple[tuple[str, ...], _Leaf]]:
    """Leaves of an inertly unpickled object as (key path, leaf); mappings and lists are descended."""
    out: list[tuple[tuple[str, ...], _Leaf]] = []
    seen: set[int] = set()
    stack: list[tuple[tuple[str, ...], Any]] = [((), obj)]
    while stack:
        if len(out) > _MAX_NODES:
            raise InputError("checkpoint", str(source), f"has more than {_MAX_NODES:,} entries: too large to audit")
        path, o = stack.pop()
        if len(path) > 40:
            out.append((path, _Leaf("object", value="(nested too deeply)")))
            continue
        if isinstance(o, _Opaque):
            leaf = _tensor_leaf(o)
            if leaf is not None:
                out.append((path, leaf))
                continue
            if o._global in ("collections.OrderedDict", "collections.Counter"):
                mapping: Any = dict(o.items)
                if o.args and isinstance(o.args[0], list):
                    mapping.update(p for p in o.args[0] if isinstance(p, tuple) and len(p) == 2)
                o = mapping
            else:
                out.append((path, _Leaf("object", value=o._global)))
                continue
        if isinstance(o, (dict, list, tuple)):
            if id(o) in seen:
                out.append((path, _Leaf("object", value="(shared reference)")))
                continue
            seen.add(id(o))
        if isinstance(o, dict):
            if not o:
                out.append((path, _Leaf("mapping")))
            for k, v in o.items():
                stack.append((path + (_key(k),), v))
        elif isinstance(o, (list, tuple)):
            if all(isinstance(v, (int, float, bool, str, type(None))) for v in o):
                out.append((path, _Leaf("sequence", numel=len(o))))
            else:
                for i, v in enumerate(o):
                    stack.append((path + (str(i),), v))
        elif isinstance(o, bool):
            out.append((path, _Leaf("bool", value=o)))
        elif isinstance(o, (int, float)):
            out.append((path, _Leaf("number", value=o)))
        elif o is None:
            out.append((path, _Leaf("none")))
        elif isinstance(o, str):
            out.append((path, _Leaf("str", value=o[:80])))
        elif isinstance(o, (bytes, bytearray)):
            out.append((path, _Leaf("bytes", nbytes=len(o))))
        elif isinstance(o, _StorageRef):
            out.append((path, _Leaf("tensor", o.numel * o.itemsize, o.numel, o.dtype, storage=o.key)))
        else:
            out.append((path, _Leaf("object", value=type(o).__name__)))
    out.reverse()
    return out


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, (int, float, bool)):
        return str(k)
    return f"<{getattr(k, '_global', type(k).__name__)}>"


# ------------------------------------------------------------------------------------- reports

@dataclass(frozen=True)
class PieceStatus:
    """One restorable-state piece: ``present``, ``missing`` or ``unknown``, with the keys found."""

    piece: str
    status: str
    evidence: str
    why: str


@dataclass(frozen=True)
class AuditReport:
    """What a checkpoint holds, read without executing anything from it."""

    path: str
    format: str                   #: torch.save (zip) | torch.save (legacy) | pickle | DCP directory
    size_bytes: int               #: bytes on disk
    files: int
    tensors: int
    tensor_bytes: int             #: bytes of tensor data the checkpoint declares
    top_level_keys: tuple[str, ...]
    complete: bool                #: every tensor record the structure refers to exists with its full size
    completeness: str
    pieces: tuple[PieceStatus, ...]
    globals_referenced: tuple[str, ...]
    notes: tuple[str, ...]

    def status(self, piece: str) -> str:
        return next(p.status for p in self.pieces if p.piece == piece)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(p.piece for p in self.pieces if p.status == "missing")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["missing"] = list(self.missing)
        return d


def audit_checkpoint(path: str | Path) -> AuditReport:
    """Report which restorable-state pieces a checkpoint holds (see the heuristics above).

    ``path``: a ``torch.save`` file (zip or legacy format, or a plain pickle) or a
    ``torch.distributed.checkpoint`` directory. Nothing from the file is executed or imported;
    tensor data is not read (only its declared size is checked against the records on disk).
    Raises :class:`InputError` (field ``checkpoint``) for a missing, malformed, truncated or
    hostile file, naming what is wrong.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("checkpoint", str(path), "does not exist")
    if path.is_dir():
        return _audit_dcp(path)
    size = path.stat().st_size
    if size == 0:
        raise InputError("checkpoint", str(path), "is empty (0 bytes): a save that never wrote, or a truncated file")
    notes: list[str] = []
    if zipfile.is_zipfile(path):
        fmt, (obj, up, records_ok, completeness) = "torch.save (zip)", _read_zip(path)
    else:
        data = path.read_bytes() if size <= _MAX_PICKLE_BYTES else None
        if data is None:
            raise InputError("checkpoint", str(path), f"is a {size / 2**20:.0f} MiB non-zip file: too large for the "
                                                      "legacy-format audit (re-save with torch.save's default zip format)")
        if data[:4] == b"PK\x03\x04":
            raise InputError("checkpoint", str(path), "is a truncated or damaged zip archive (no central directory): "
                                                      "a torch.save that did not finish")
        if data[:1] != b"\x80":
            raise InputError("checkpoint", str(path), "is neither a torch.save zip archive nor a pickle "
                                                      "(no pickle protocol header): not a checkpoint this audit reads")
        fmt, obj, up, records_ok, completeness = _read_legacy(path, data)
    leaves = _walk(obj, path)
    tensors = {leaf.storage or str(i): leaf for i, (p, leaf) in enumerate(leaves) if leaf.kind == "tensor"}
    pieces, top = _classify(obj, leaves)
    if any(g.startswith("numpy.") for g in up.globals_seen):
        notes.append("Holds numpy arrays (e.g. a numpy RNG state): torch.load(weights_only=True) refuses the file "
                     "unless numpy's array rebuilders are allowlisted (torch.serialization.add_safe_globals).")
    return AuditReport(
        path=str(path), format=fmt, size_bytes=size, files=1,
        tensors=sum(1 for _, leaf in leaves if leaf.kind == "tensor"),
        tensor_bytes=sum(leaf.nbytes for leaf in tensors.values()),
        top_level_keys=top, complete=records_ok, completeness=completeness, pieces=pieces,
        globals_referenced=tuple(sorted(up.globals_seen)), notes=tuple(notes))


def _read_zip(path: Path) -> tuple[Any, _InertUnpickler, bool, str]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError("checkpoint", str(path), f"is a damaged zip archive ({exc})") from None
    with zf:
        pkls = [i for i in zf.infolist() if i.filename.endswith("/data.pkl") and i.filename.count("/") == 1]
        if len(pkls) != 1:
            raise InputError("checkpoint", str(path), "is a zip archive but not a torch.save checkpoint "
                                                      "(expected exactly one <name>/data.pkl record)")
        info = pkls[0]
        if info.file_size > _MAX_PICKLE_BYTES:
            raise InputError("checkpoint", str(path), f"declares a {info.file_size / 2**20:.0f} MiB data.pkl: too large to audit")
        try:
            with zf.open(info) as fh:
                data = fh.read(_MAX_PICKLE_BYTES + 1)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError) as exc:
            raise InputError("checkpoint", str(path), f"has an unreadable data.pkl record ({exc})") from None
        obj, up, _ = _inert_load(data, "data.pkl", path)
        prefix = info.filename.split("/")[0]
        sizes = {i.filename: i.file_size for i in zf.infolist()}
        problems = []
        for key, ref in sorted(up.storages.items()):
            name = f"{prefix}/data/{key}"
            need = ref.numel * ref.itemsize
            if name not in sizes:
                problems.append(f"record {name} missing")
            elif sizes[name] < need:
                problems.append(f"record {name} holds {sizes[name]} bytes, needs {need}")
    if problems:
        return obj, up, False, "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else "")
    return obj, up, True, f"all {len(up.storages)} tensor records present with their full size"


_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def _read_legacy(path: Path, data: bytes) -> tuple[str, Any, _InertUnpickler, bool, str]:
    first, up, used = _inert_load(data, "the pickle stream", path)
    if first != _LEGACY_MAGIC:
        return "pickle", first, up, True, "plain pickle: no separate tensor records to check"
    pos = used
    for what in ("protocol version", "system info"):
        _, _, n = _inert_load(data[pos:], f"the legacy header ({what})", path)
        pos += n
    obj, up2, n = _inert_load(data[pos:], "the legacy object pickle", path)
    pos += n
    keys, _, n = _inert_load(data[pos:], "the legacy storage-key list", path)
    pos += n
    # each storage: 8-byte element count, then the data (itemsize x count)
    need = sum(ref.numel * ref.itemsize + 8 for ref in up2.storages.values())
    have = len(data) - pos
    up2.globals_seen |= up.globals_seen
    if not isinstance(keys, list) or have < need:
        return "torch.save (legacy)", obj, up2, False, f"tensor data holds {have} bytes, the structure needs {need}"
    return "torch.save (legacy)", obj, up2, True, f"all {len(up2.storages)} storages present with their full size"


def _audit_dcp(path: Path) -> AuditReport:
    meta = path / ".metadata"
    data_files = sorted(p.name for p in path.iterdir() if p.is_file() and p.suffix == ".distcp")
    if not meta.is_file():
        if data_files:
            raise InputError("checkpoint", str(path), f"is an incomplete DCP checkpoint: {len(data_files)} .distcp data "
                                                      "file(s) but no .metadata (the save never finished; not restorable)")
        raise InputError("checkpoint", str(path), "is a directory without a DCP .metadata file: not a checkpoint this "
                                                  "audit reads")
    raw = meta.read_bytes()
    if not raw:
        raise InputError("checkpoint", str(path), ".metadata is empty (0 bytes): the save did not finish")
    if len(raw) > _MAX_PICKLE_BYTES:
        raise InputError("checkpoint", str(path), ".metadata is too large to audit")
    md, up, _ = _inert_load(raw, ".metadata", path)
    if not (isinstance(md, _Opaque) and md._global == "torch.distributed.checkpoint.metadata.Metadata"):
        raise InputError("checkpoint", str(path), ".metadata does not hold a DCP Metadata record")
    fields_ = md.state_dict()
    sdm = fields_.get("state_dict_metadata")
    if not isinstance(sdm, dict):
        raise InputError("checkpoint", str(path), ".metadata has no state_dict_metadata mapping")
    leaves: list[tuple[tuple[str, ...], _Leaf]] = []
    for fqn, entry in sdm.items():
        keypath = tuple(str(fqn).split("."))
        g = getattr(entry, "_global", "")
        if g.endswith("TensorStorageMetadata"):
            st = entry.state_dict()
            size = st.get("size")
            shape = size.args[0] if isinstance(size, _Opaque) and size.args else ()
            numel = math.prod(int(d) for d in shape) if isinstance(shape, (tuple, list)) else 0
            props = st.get("properties")
            dtype = _dcp_dtype(props)
            leaves.append((keypath, _Leaf("tensor", numel * _DTYPE_BYTES.get(dtype, 1), numel, dtype)))
        elif g.endswith("BytesStorageMetadata"):
            leaves.append((keypath, _Leaf("object", value="bytes item (pickled, not read)")))
        else:
            leaves.append((keypath, _Leaf("object", value=g or type(entry).__name__)))
    # completeness: every storage record must fit in its file
    storage = fields_.get("storage_data")
    problems: list[str] = []
    need: dict[str, int] = {}
    if isinstance(storage, dict):
        for info in storage.values():
            st = info.state_dict() if isinstance(info, _Opaque) else {}
            rel, off, length = st.get("relative_path"), st.get("offset"), st.get("length")
            if isinstance(rel, str) and isinstance(off, int) and isinstance(length, int):
                need[rel] = max(need.get(rel, 0), off + length)
            else:
                problems.append("a storage record has no file/offset/length")
    else:
        problems.append(".metadata lists no storage records")
    for rel, n in sorted(need.items()):
        f = path / rel
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            problems.append(f"record points outside the checkpoint ({rel})")
        elif not f.is_file():
            problems.append(f"{rel} missing")
        elif f.stat().st_size < n:
            problems.append(f"{rel} holds {f.stat().st_size} bytes, the records need {n}")
    size_on_disk, files = _disk_usage(path)
    pieces, top = _classify(None, leaves)
    return AuditReport(
        path=str(path), format="DCP directory", size_bytes=size_on_disk, files=files,
        tensors=sum(1 for _, leaf in leaves if leaf.kind == "tensor"),
        tensor_bytes=sum(leaf.nbytes for _, leaf in leaves if leaf.kind == "tensor"),
        top_level_keys=top, complete=not problems,
        completeness=("; ".join(problems[:5]) if problems else
                      f"all {len(need)} data file(s) present and long enough for the {len(storage)} records"),
        pieces=pieces, globals_referenced=tuple(sorted(up.globals_seen)),
        notes=("DCP bytes items (non-tensor values) are pickles that dcp.load unpickles with "
               "weights_only=False: load DCP checkpoints only from trusted sources.",))


def _dcp_dtype(props: Any) -> str:
    if not isinstance(props, _Opaque):
        return "unknown"
    st = props.state
    candidates = list(st) if isinstance(st, tuple) else list(props.state_dict().values())
    for c in candidates:
        name = getattr(c, "_global", "")
        if name.startswith("torch.") and name[6:] in _DTYPE_BYTES:
            return name[6:]
    return "unknown"


def _classify(root: Any, leaves: list[tuple[tuple[str, ...], _Leaf]]) -> tuple[tuple[PieceStatus, ...], tuple[str, ...]]:
    """Apply the key-name heuristics to the leaves; returns the pieces and the top-level keys."""
    rootless = [(p, leaf) for p, leaf in leaves if p]
    if not rootless:  # the root itself is a leaf: a bare tensor, a number, an unknown object
        kind = leaves[0][1].kind if leaves else "nothing"
        what = f"the file holds a single {kind}, not a mapping of named state"
        return tuple(PieceStatus(pc, "unknown", what, WHY[pc]) for pc in PIECES), ()
    top = tuple(dict.fromkeys(p[0] for p, _ in rootless))
    if isinstance(root, (list, tuple)):
        what = "the file's root is a list, not a mapping of named state"
        return tuple(PieceStatus(pc, "unknown", what, WHY[pc]) for pc in PIECES), top

    def lower(p: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(c.lower() for c in p)

    prefixes: set[tuple[str, ...]] = set()
    children: dict[tuple[str, ...], set[str]] = {}
    for p, _ in rootless:
        lp = lower(p)
        for i in range(1, len(lp) + 1):
            prefixes.add(lp[:i])
            children.setdefault(lp[:i - 1], set()).add(lp[i - 1])

    def under(p: tuple[str, ...], roots: set[tuple[str, ...]]) -> bool:
        return any(p[:len(r)] == r for r in roots)

    def named(piece: str, max_depth: int = 3) -> set[tuple[str, ...]]:
        out = set()
        for pre in prefixes:
            if len(pre) <= max_depth:
                comp = pre[-1]
                if piece in _NAME_RULES and _NAME_RULES[piece].fullmatch(comp):
                    out.add(pre)
                elif piece in _SEARCH_RULES and _SEARCH_RULES[piece].search(comp):
                    out.add(pre)
        return outermost(out)

    def structural(required: tuple[str, ...], any_of: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
        """Prefixes whose children include every ``required`` key and (if given) one of ``any_of``."""
        return {pre for pre, kids in children.items()
                if all(n in kids for n in required) and (not any_of or any(a in kids for a in any_of))}

    low_leaves = [(lower(p), leaf) for p, leaf in rootless]
    def outermost(roots: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
        return {r for r in roots if not any(r != o and r[:len(o)] == o for o in roots)}

    def holds_something(roots: set[tuple[str, ...]]) -> bool:
        return any(under(p, roots) and not (lf.kind in ("mapping", "none") or (lf.kind == "sequence" and lf.numel == 0))
                   for p, lf in low_leaves)

    optim = outermost(named("optimizer") | structural(("state", "param_groups")))
    sched = outermost(named("lr_scheduler") | structural(("last_epoch",), ("base_lrs", "_step_count")))
    scaler = outermost(named("grad_scaler") | structural(("scale",), ("growth_factor", "_growth_tracker")))
    claimed = optim | sched | scaler
    model_named = {r for r in named("model") if not under(r, claimed)}
    result: dict[str, PieceStatus] = {}

    # model
    model_tensors = [(p, lf) for p, lf in low_leaves if lf.kind == "tensor" and under(p, model_named)]
    if model_tensors:
        roots = ", ".join(sorted("/".join(r) for r in model_named if any(p[:len(r)] == r for p, _ in model_tensors)))
        result["model"] = PieceStatus("model", "present",
                                      f"{roots}: {len(model_tensors)} tensors, {_mb(sum(l.nbytes for _, l in model_tensors))}",
                                      WHY["model"])
    else:
        loose = [(p, lf) for p, lf in low_leaves if lf.kind == "tensor" and p[-1].rsplit(".", 1)[-1] in _PARAM_LEAVES
                 and not under(p, claimed)]
        if loose:
            result["model"] = PieceStatus("model", "present", f"{len(loose)} parameter-like tensors (*.weight, *.bias) "
                                          f"outside other pieces, {_mb(sum(l.nbytes for _, l in loose))}", WHY["model"])
            model_named = {p[:1] for p, _ in loose}
    claimed_all = claimed | model_named

    # optimizer
    if optim:
        opt_tensors = [lf for p, lf in low_leaves if lf.kind == "tensor" and under(p, optim)]
        names = ", ".join(sorted("/".join(r) for r in optim))
        if opt_tensors:
            result["optimizer"] = PieceStatus("optimizer", "present",
                                              f"{names}: {len(opt_tensors)} state tensors, {_mb(sum(l.nbytes for l in opt_tensors))}",
                                              WHY["optimizer"])
        else:
            result["optimizer"] = PieceStatus("optimizer", "unknown", f"{names} holds no per-parameter state tensors "
                                              "(never stepped, or a stateless optimizer such as plain SGD)", WHY["optimizer"])

    def scalar_evidence(roots: set[tuple[str, ...]]) -> str:
        """Key paths, with the values of numeric leaves at or just under them (at most 4)."""
        parts = []
        for r in sorted(roots):
            here = [(p, lf) for p, lf in low_leaves if p[:len(r)] == r and len(p) <= len(r) + 1]
            vals = [("/".join(p[len(r):]) or "", lf.value) for p, lf in here if lf.kind in ("number", "bool")]
            if vals and vals[0][0] == "":
                parts.append(f"{'/'.join(r)} = {vals[0][1]}")
            elif vals:
                inner = ", ".join(f"{k} = {v}" for k, v in vals[:4]) + (", ..." if len(vals) > 4 else "")
                parts.append(f"{'/'.join(r)} ({inner})")
            else:
                parts.append("/".join(r))
        return ", ".join(parts)

    def empty(piece: str, roots: set[tuple[str, ...]]) -> None:
        result[piece] = PieceStatus(piece, "missing", f"{', '.join(sorted('/'.join(r) for r in roots))} is empty", WHY[piece])

    # step
    steps = {r for r in named("step") if not under(r, claimed_all)}
    if steps and not holds_something(steps):
        empty("step", steps)
    elif steps:
        result["step"] = PieceStatus("step", "present", scalar_evidence(steps), WHY["step"])
    # data position
    data = {r for r in named("data_position") if not under(r, claimed_all)}
    if data and not holds_something(data):
        empty("data_position", data)
    elif data:
        result["data_position"] = PieceStatus("data_position", "present", scalar_evidence(data), WHY["data_position"])
    else:
        epochs = {pre for pre in prefixes if len(pre) <= 2 and pre[-1] in ("epoch", "epochs") and not under(pre, claimed_all)}
        if epochs:
            result["data_position"] = PieceStatus("data_position", "unknown",
                                                  f"only an epoch counter ({scalar_evidence(epochs)}): a mid-epoch "
                                                  "resume also needs the position within the epoch", WHY["data_position"])
    # rng
    rng = {r for r in named("rng") if not under(r, claimed_all)}
    if rng and not holds_something(rng):
        empty("rng", rng)
    elif rng:
        result["rng"] = PieceStatus("rng", "present", ", ".join(sorted("/".join(r) for r in rng)), WHY["rng"])
    else:
        gens = [p for p, lf in low_leaves if lf.kind == "tensor" and lf.dtype == "uint8"
                and lf.numel == _TORCH_CPU_RNG_BYTES and not under(p, claimed_all)]
        if gens:
            result["rng"] = PieceStatus("rng", "present", f"{'/'.join(gens[0])}: a {_TORCH_CPU_RNG_BYTES}-byte uint8 "
                                        "tensor (torch CPU generator state)", WHY["rng"])
    if sched and not holds_something(sched):
        empty("lr_scheduler", sched)
    elif sched:
        result["lr_scheduler"] = PieceStatus("lr_scheduler", "present", ", ".join(sorted("/".join(r) for r in sched)),
                                             WHY["lr_scheduler"])
    if scaler and not holds_something(scaler):
        empty("grad_scaler", scaler)
    elif scaler:
        result["grad_scaler"] = PieceStatus("grad_scaler", "present", ", ".join(sorted("/".join(r) for r in scaler)),
                                            WHY["grad_scaler"])

    accounted = {r[0] for pc in (optim, sched, scaler, model_named, steps, data, rng) for r in pc if r}
    unrecognised = [k for k in top if k.lower() not in accounted and not _BENIGN_TOP.fullmatch(k.lower())]
    for pc in PIECES:
        if pc in result:
            continue
        if unrecognised:
            shown = ", ".join(unrecognised[:5]) + (" ..." if len(unrecognised) > 5 else "")
            result[pc] = PieceStatus(pc, "unknown", f"no key with a recognised name; unrecognised keys ({shown}) "
                                     "may hold it", WHY[pc])
        else:
            result[pc] = PieceStatus(pc, "missing", "no key with a recognised name", WHY[pc])
    return tuple(result[pc] for pc in PIECES), top


def _mb(n: int) -> str:
    return f"{n / 1e6:.3g} MB"
