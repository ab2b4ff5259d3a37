"""Checkpoint probe: measure what a save and a restore cost, and prove a checkpoint resumes training.

The planner's inputs ``checkpoint_stall_min`` (C), ``async_write_min`` (W) and
``async_slowdown_fraction`` (s) are usually guessed. :func:`run_probe` measures them on a small real
training loop (PyTorch, CPU; the loop and its configuration: :mod:`.trainer`) and
:func:`.audit.audit_checkpoint` checks what an existing checkpoint holds.

What :func:`run_probe` measures, per save method (``torch_save``: ``torch.save`` to a temporary file,
``fsync``, rename, directory ``fsync``; ``dcp_sync``: ``torch.distributed.checkpoint.save`` with
``FileSystemWriter(sync_files=True)``; ``dcp_async``: ``torch.distributed.checkpoint.async_save``,
thread executor, the writer's blocking CPU staging copy):

* ``checkpoint_stall_s``: the time the training loop is blocked by the save call (C). For the
  synchronous methods that is the whole save until the files are fsynced; for ``dcp_async`` it is
  the state-dict collection and staging copy until ``async_save`` returns.
* ``async_write_s``: background write until the checkpoint is durable (W): from ``async_save``'s
  return until its future completes (DCP fsyncs every data file and ``.metadata``) and the directory
  entry is fsynced. 0 for synchronous methods.
* ``async_slowdown_fraction``: share of training throughput lost while the background write runs
  (s), the engine's definition ``1 - baseline_step_time / step_time_during_write``, computed as work
  accounting: each training step that overlaps the write window contributes the overlapping share
  of its duration as completed work; ``s = 1 - work_done / (W / baseline_step_s)``, clipped to
  [0, 0.99]. Steps are assumed to progress uniformly; 0 when no step overlapped the write.
* ``size_bytes``: bytes of the checkpoint's files on disk (``st_size`` summed).
* restore in a fresh process (:mod:`.restore`): ``restore_with_startup_s`` from launching the
  process to the state loaded, ``restore_s`` without interpreter start-up and ``import torch``, and
  the parts (:class:`.restore.RestoreTiming`).

Resume verification: the parent trains ``T`` steps without interruption and records every loss and
the final parameters. A child restores a checkpoint taken at step ``S < T``, trains to ``T`` and
reports its losses and parameters; on CPU in deterministic mode (``torch.use_deterministic_algorithms``,
fixed thread count) a complete checkpoint gives bit-identical losses and parameters. Deliberately
incomplete checkpoints (``torch.save`` without the optimizer, RNG, data position or LR-scheduler
state, :data:`VARIANTS`) show which missing piece breaks continuation and by how much.

Limits: CPU only (no device-to-host copy, no GPU contention); a single process (no collectives,
no sharding, no rank coordination); local filesystem: ``fsync`` is requested, but what it guarantees
depends on the device and the filesystem; the restore reads may be served from the page cache: the
probe asks the kernel to drop the checkpoint's cached pages first (``posix_fadvise(DONTNEED)``,
best effort, not verifiable). Figures are for the probe's model: a real job's stall scales with
its checkpoint size and storage bandwidth (``write_mb_per_s`` helps extrapolate). The restore
excludes what a real restart also pays (rescheduling, container start, collective set-up), so it is
only a lower bound for ``restart_min``; the probe never writes it into a scenario.

``import ckptplan.instruments.probe`` does not import torch: torch is imported when a probe runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import math
import os
import platform
import shutil
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..engine.errors import InputError
from ..files.atomic import sync_folder as _fsync_dir  # one folder fsync for every writer
from .disk import disk_usage, remove
from .restore import ResumeCheck, compare_resume, run_restore_child
from .trainer import DCP_WARNING, ProbeConfig, Trainer, import_torch

__all__ = ["VARIANTS", "MethodSummary", "ProbeResult", "SaveMeasurement", "run_probe"]

#: the incomplete checkpoints of the resume verification: name -> the top-level key left out
VARIANTS: dict[str, str] = {
    "no_optimizer": "optimizer",
    "no_rng": "rng",
    "no_data_position": "data_position",
    "no_lr_scheduler": "lr_scheduler",
}
_ASYNC_TIMEOUT_S = 600.0  # longest wait for a background write to become durable


# ================================================================================ measurements

@dataclass(frozen=True)
class SaveMeasurement:
    """One timed save. Times in seconds (``perf_counter``), sizes in bytes."""

    method: str
    index: int                    #: n-th save of this method
    path: str                     #: the checkpoint (only the latest per method is kept, and only with ``keep``)
    step: int                     #: training step the checkpoint holds
    checkpoint_stall_s: float     #: training blocked by the save call (C)
    async_write_s: float          #: background write until durable (W); 0 for synchronous methods
    total_s: float                #: save call start until durable (= checkpoint_stall_s + async_write_s)
    size_bytes: int               #: bytes of the checkpoint's files on disk
    files: int                    #: files making up the checkpoint
    overlap_steps: int            #: training steps that overlapped the background write
    step_during_write_s: float | None  #: mean duration of those steps (None: none overlapped)
    async_slowdown_fraction: float  #: share of throughput lost while the write ran (s)

    @property
    def write_mb_per_s(self) -> float:
        return self.size_bytes / 1e6 / self.total_s


@dataclass(frozen=True)
class MethodSummary:
    """Medians over a method's saves; the restore and resume check of its latest checkpoint."""

    method: str
    saves: int
    checkpoint_stall_s: float
    async_write_s: float
    total_s: float
    async_slowdown_fraction: float
    size_bytes: int
    write_mb_per_s: float
    resume: ResumeCheck | None

    def scenario_overrides(self) -> dict[str, float]:
        """The scenario fields this method measures, in the engine's units (minutes, fraction)."""
        return {
            "checkpoint_stall_min": self.checkpoint_stall_s / 60.0,
            "async_write_min": self.async_write_s / 60.0,
            "async_slowdown_fraction": self.async_slowdown_fraction,
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


# ------------------------------------------------------------------------------------- saving

def _save_torch(trainer: Trainer, path: Path) -> float:
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


def _save_dcp_sync(trainer: Trainer, path: Path) -> float:
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


def _timed_save(trainer: Trainer, method: str, path: Path, baseline_step_s: float, gap_steps: int,
                index: int) -> SaveMeasurement:
    step = trainer.step
    log = trainer.step_log  # a StepLogger or None: the save's rows (save_start ... checkpoint_saved)
    if method != "torch_save":
        import torch.distributed.checkpoint  # noqa: F401  (the first import is not part of a save's stall)
    if log is not None:
        log.save_start(step)
    if method in ("torch_save", "dcp_sync"):
        stall = (_save_torch if method == "torch_save" else _save_dcp_sync)(trainer, path)
        if log is not None:
            log.checkpoint_saved(stall_s=stall, step=step)
        write, work, overlapped, during = 0.0, 0.0, 0, None
    else:
        import torch.distributed.checkpoint as dcp
        done: list[float] = []

        def durable(_future: Any) -> None:  # runs in the writer thread when the write has finished
            _fsync_dir(path)
            _fsync_dir(path.parent)
            if log is not None and _future.exception() is None:
                log.checkpoint_saved(stall_s=stall, step=step)
            done.append(time.perf_counter())

        t0 = time.perf_counter()
        state = trainer.state_dcp()
        future = dcp.async_save(state, storage_writer=dcp.FileSystemWriter(str(path), sync_files=True),
                                no_dist=True)
        t_return = time.perf_counter()
        stall = t_return - t0
        if log is not None:
            log.save_unblocked(step)
        future.add_done_callback(durable)
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
    size, files = disk_usage(path)
    return SaveMeasurement(method=method, index=index, path=str(path), step=step, checkpoint_stall_s=stall,
                           async_write_s=write, total_s=stall + write, size_bytes=size, files=files,
                           overlap_steps=overlapped, step_during_write_s=during,
                           async_slowdown_fraction=_slowdown(work, write, baseline_step_s, overlapped))


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
              progress: Callable[[str], None] | None = None, step_log: str | Path | None = None) -> ProbeResult:
    """Train the toy model, time saves by each method, restore in fresh processes, verify resumes.

    ``directory``: where checkpoints are written (the storage you want to measure); default: a new
    temporary directory. The probe writes into a new ``ckptplan-probe-*`` folder inside it and
    removes that folder at the end unless ``keep``. Raises :class:`.trainer.TorchMissingError` without
    PyTorch and :class:`InputError` for a bad configuration or directory. See the module docstring
    for what each figure means and its limits.

    ``step_log``: a file the training loop then logs to with :class:`.steplog.StepLogger` (JSON Lines
    for a ``.jsonl`` name, else CSV; appended to): ``start``, the trainer's build as the ``init``
    start-up phase, every step, each timed save (``save_start``; ``save_unblocked`` for ``dcp_async``;
    ``checkpoint_saved`` with the probe's own stall in ``checkpoint_stall_s``, for ``dcp_async`` when
    the write is durable) and ``end`` after the last timed save's gap steps. The resume-verification
    training after that is not logged. Read it with ``ckptplan.files.logs.measure_log``.
    """
    cfg = config or ProbeConfig()
    if not isinstance(cfg, ProbeConfig):
        raise InputError("config", type(cfg).__name__, "must be a ckptplan.instruments.trainer.ProbeConfig")
    torch = import_torch()
    say = progress or (lambda _msg: None)
    if directory is not None:
        directory = Path(directory)
        if not directory.is_dir():
            raise InputError("directory", str(directory), "must be an existing directory")
    log = None
    if step_log is not None:
        if not Path(step_log).parent.is_dir():
            raise InputError("step_log", str(step_log), "its folder must exist")
        from .steplog import StepLogger
        log = StepLogger(step_log, fmt="jsonl" if Path(step_log).suffix.lower() in (".jsonl", ".ndjson") else "csv")
    work = Path(tempfile.mkdtemp(prefix="ckptplan-probe-", dir=directory))
    try:
        with warnings.catch_warnings(), _torch_settings(torch):
            warnings.filterwarnings("ignore", message=DCP_WARNING)
            return _probe(cfg, torch, work, say, log)
    finally:
        if log is not None:
            log.close()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _probe(cfg: ProbeConfig, torch: Any, work: Path, say: Callable[[str], None], log: Any = None) -> ProbeResult:
    ckpt_dir = work / "checkpoints"
    ckpt_dir.mkdir()
    if log is not None:
        log.start(0)
    trainer = Trainer(cfg)
    if log is not None:
        log.startup_phase("init")
        trainer.step_log = log
    say(f"model: {trainer.parameters:,} parameters; burn-in and baseline")
    baseline, p90, state_bytes = _baseline(trainer, cfg)
    saves, latest = _timed_saves(trainer, cfg, ckpt_dir, baseline, say)
    if log is not None:
        trainer.step_log = None
        log.end(trainer.step)
    variant_paths: dict[str, Path] = {}
    if cfg.verify and cfg.variants:
        full = trainer.state_plain()
        for name, key in VARIANTS.items():
            p = ckpt_dir / f"variant-{name}.pt"
            torch.save({k: v for k, v in full.items() if k != key}, p)
            variant_paths[name] = p
        del full
    trainer.run_until(trainer.step + cfg.resume_steps)
    checks, by_method = _verify(cfg, trainer, work, latest, variant_paths, say) if cfg.verify else ([], {})
    return ProbeResult(
        config=cfg, date_utc=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        torch_version=torch.__version__, python_version=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        checkpoint_dir=str(work), parameters=trainer.parameters, state_bytes=state_bytes,
        baseline_step_s=baseline, baseline_step_p90_s=p90, final_step=trainer.step, saves=saves,
        methods=_summaries(cfg, saves, by_method), resume_checks=checks, notes=_notes(cfg, saves, checks, state_bytes))


def _baseline(trainer: Trainer, cfg: ProbeConfig) -> tuple[float, float, int]:
    """After the burn-in steps, the baseline step time (median and 90th percentile of the baseline steps, s) and
    the bytes of the model's and optimizer's state."""
    for _ in range(cfg.burn_in_steps):
        trainer.train_step()
    base = [e - s for s, e in (trainer.train_step() for _ in range(cfg.baseline_steps))]
    baseline = statistics.median(base)
    p90 = sorted(base)[min(len(base) - 1, int(math.ceil(0.9 * len(base))) - 1)]
    state = trainer.state_plain()
    state_bytes = sum(t.numel() * t.element_size() for t in _tensors(state["model"]))
    state_bytes += sum(t.numel() * t.element_size() for t in _tensors(state["optimizer"]))
    return baseline, p90, state_bytes


def _timed_saves(trainer: Trainer, cfg: ProbeConfig, ckpt_dir: Path, baseline: float, say: Callable[[str], None]
                 ) -> tuple[list[SaveMeasurement], dict[str, tuple[Path, int]]]:
    """Every method's timed saves, in turns (the previous checkpoint of a method removed once the next is
    written): (the measurements, each method's latest checkpoint and its step)."""
    saves: list[SaveMeasurement] = []
    latest: dict[str, tuple[Path, int]] = {}
    for i in range(cfg.saves_per_method):
        for method in cfg.methods:
            path = ckpt_dir / (f"{method}-{i}.pt" if method == "torch_save" else f"{method}-{i}")
            say(f"save {i + 1}/{cfg.saves_per_method}: {method}")
            m = _timed_save(trainer, method, path, baseline, cfg.gap_steps, i)
            saves.append(m)
            if method in latest:
                remove(latest[method][0])
            latest[method] = (path, m.step)
    return saves, latest


def _verify(cfg: ProbeConfig, trainer: Trainer, work: Path, latest: dict[str, tuple[Path, int]],
            variant_paths: dict[str, Path], say: Callable[[str], None]
            ) -> tuple[list[ResumeCheck], dict[str, ResumeCheck]]:
    """Each method's latest checkpoint and each incomplete variant restored in a fresh process and run to the
    trainer's final step, against its uninterrupted losses and parameters: (every check, each method's)."""
    final_step = trainer.step
    ref_losses = list(trainer.losses)
    ref_params = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    checks: list[ResumeCheck] = []
    by_method: dict[str, ResumeCheck] = {}
    child_dir = work / "children"
    child_dir.mkdir()
    for method, (path, step) in latest.items():
        say(f"restore {method} checkpoint (step {step}) in a fresh process, continue to step {final_step}")
        out, timing = run_restore_child(cfg, path, "torch" if method == "torch_save" else "dcp", final_step,
                                        child_dir, method, cfg.evict_page_cache)
        check = compare_resume(f"complete ({method})", method, path, (), out, timing, ref_losses, ref_params)
        checks.append(check)
        by_method[method] = check
    for name, path in variant_paths.items():
        say(f"restore incomplete checkpoint {name} in a fresh process")
        out, timing = run_restore_child(cfg, path, "torch", final_step, child_dir, name, cfg.evict_page_cache)
        checks.append(compare_resume(name, "torch_save", path, (VARIANTS[name],), out, timing, ref_losses, ref_params))
    return checks, by_method


def _summaries(cfg: ProbeConfig, saves: list[SaveMeasurement], by_method: dict[str, ResumeCheck]
               ) -> dict[str, MethodSummary]:
    """Per method: the medians of its saves, its write rate and its resume check."""
    summaries: dict[str, MethodSummary] = {}
    for method in cfg.methods:
        ms = [s for s in saves if s.method == method]
        total = statistics.median(s.total_s for s in ms)
        size = int(statistics.median(s.size_bytes for s in ms))
        summaries[method] = MethodSummary(
            method=method, saves=len(ms), checkpoint_stall_s=statistics.median(s.checkpoint_stall_s for s in ms),
            async_write_s=statistics.median(s.async_write_s for s in ms), total_s=total,
            async_slowdown_fraction=statistics.median(s.async_slowdown_fraction for s in ms), size_bytes=size,
            write_mb_per_s=size / 1e6 / total, resume=by_method.get(method))
    return summaries


def _notes(cfg: ProbeConfig, saves: list[SaveMeasurement], checks: list[ResumeCheck], state_bytes: int) -> list[str]:
    """What the figures do not say: the probe's limits, and the measurements that lack something."""
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
    return notes


def _tensors(obj: Any) -> Iterable[Any]:
    torch = import_torch()
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)
