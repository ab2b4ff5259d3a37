"""A step-level job logger: the rows ``ckptplan fit`` and the measured goodput split read, written as they happen.

Standard library only (it imports neither ckptplan nor torch): import it, or copy this one file
into a training repository. Each method appends one row of the log format documented in
``ckptplan.files.logs`` and flushes it at once; the file is opened in append mode, so a crash keeps
every earlier row and a restarted job appends to the same log (``fsync=True`` also survives a
machine crash, at the cost of one disk sync per row). Timestamps are the wall clock in UTC, ISO
8601 with microseconds (``2024-03-01T08:00:00.123456+00:00``), taken under the logger's lock, so
rows from several threads (an asynchronous save's completion callback) are written in time order.

From a PyTorch training loop (DCP asynchronous save; ``save_every`` steps between saves)::

    from ckptplan.instruments.steplog import StepLogger
    log = StepLogger("run-log.csv")          # or StepLogger("run-log.jsonl", fmt="jsonl")
    log.start(step)                          # after a failure the new process logs log.restart_complete(step)
    for batch in loader:
        loss = model(batch).loss; loss.backward(); opt.step(); opt.zero_grad(); step += 1
        log.step(step)
        if step % save_every == 0:
            log.save_start(step)                                          # training blocked from here
            future = dcp.async_save(state, checkpoint_id=f"ckpt/{step}")  # returns after staging
            log.save_unblocked(step)                                      # training resumes
            future.add_done_callback(lambda f, s=step: log.checkpoint_saved(step=s))  # durable
    log.end(step)

A synchronous save is ``save_start``, ``torch.save(...)`` (with fsync), ``checkpoint_saved``. The
process that fails cannot log its own interruption: the launcher or supervisor that notices it logs
``interruption(cause, at=...)`` (``at``: when it failed, e.g. the last heartbeat) and
``restart_phase(...)`` as each phase of the restart ends; the restarted program logs
``restart_complete(step)`` when it resumes training. Several processes may append to one file if
each row is one ``write`` (they are: lines well under the pipe-atomic size), but rows must reach
the file in time order, which only one writer guarantees.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "PHASES", "StepLogger"]

COLUMNS = ("timestamp", "event", "cause", "checkpoint_stall_s", "step", "phase")
"""The columns written, in this order (a CSV header row when the file is new)."""
PHASES = ("detection", "reallocation", "startup", "init", "load", "warmup")
"""Restart phases in their order (the same as ``ckptplan.engine.fitting.PHASES``)."""


class StepLogger:
    """Append job events to ``path`` as CSV (``fmt="csv"``, header written when the file is empty) or
    JSON Lines (``fmt="jsonl"``, one object per row, empty fields left out).

    Every method takes ``at`` (a :class:`datetime`; naive means UTC) to log a moment already past,
    and writes one row; ``step`` arguments are whole numbers >= 0. Use as a context manager or call
    :meth:`close`. Raises ``ValueError`` for a bad argument or an existing CSV file whose header is
    not :data:`COLUMNS`.
    """

    def __init__(self, path: str | os.PathLike[str], fmt: str = "csv", fsync: bool = False):
        if fmt not in ("csv", "jsonl"):
            raise ValueError(f"fmt={fmt!r}: must be 'csv' or 'jsonl'")
        self.path, self.fmt, self.fsync = Path(path), fmt, bool(fsync)
        self._lock = threading.Lock()
        if fmt == "csv" and self.path.exists() and self.path.stat().st_size:
            with self.path.open(encoding="utf-8-sig", newline="") as fh:
                header = next(csv.reader(fh), [])
            if tuple(h.strip().lower() for h in header) != COLUMNS:
                raise ValueError(f"{self.path}: existing header {header} is not {list(COLUMNS)}: log to a new file")
        self._fh = self.path.open("a", encoding="utf-8", newline="")
        if fmt == "csv" and self._fh.tell() == 0:
            self._fh.write(",".join(COLUMNS) + "\n")
            self._flush()

    # ------------------------------------------------------------------------------- events
    def start(self, step: int | None = None, at: datetime | None = None) -> None:
        """A launch begins (the job is running from here; initialisation follows)."""
        self._row("start", step=step, at=at)

    def startup_phase(self, phase: str, at: datetime | None = None) -> None:
        """The end of one initialisation phase right after :meth:`start` (not ``detection``)."""
        if phase == "detection":
            raise ValueError("phase='detection' is a restart phase: a first start has no failure to detect")
        self._row("startup_phase", phase=self._phase(phase), at=at)

    def step(self, n: int, at: datetime | None = None) -> None:
        """Training step ``n`` finished."""
        self._row("step", step=n, at=at)

    def save_start(self, step: int | None = None, at: datetime | None = None) -> None:
        """A save begins: training is blocked from here."""
        self._row("save_start", step=step, at=at)

    def save_unblocked(self, step: int | None = None, at: datetime | None = None) -> None:
        """The blocking part of the save ended: training resumes while the write goes on."""
        self._row("save_unblocked", step=step, at=at)

    def checkpoint_saved(self, stall_s: float | None = None, step: int | None = None,
                         at: datetime | None = None) -> None:
        """The checkpoint is durable (restorable). ``stall_s``: its blocking stall, if measured."""
        if stall_s is not None and not (isinstance(stall_s, (int, float)) and math.isfinite(stall_s) and stall_s >= 0):
            raise ValueError(f"stall_s={stall_s!r}: must be a number of seconds >= 0")
        self._row("checkpoint_saved", stall="" if stall_s is None else repr(float(stall_s)), step=step, at=at)

    def interruption(self, cause: str = "", step: int | None = None, at: datetime | None = None) -> None:
        """The job stopped: ``cause`` hardware, software, network, planned ... (empty: unknown failure)."""
        self._row("interruption", cause=str(cause).strip(), step=step, at=at)

    def restart_phase(self, phase: str, at: datetime | None = None) -> None:
        """The end of one phase of the restart (:data:`PHASES`, in order; the first starts at the interruption)."""
        self._row("restart_phase", phase=self._phase(phase), at=at)

    def restart_complete(self, step: int | None = None, at: datetime | None = None) -> None:
        """Training resumes after a restart (``step``: the step restored)."""
        self._row("restart_complete", step=step, at=at)

    def end(self, step: int | None = None, at: datetime | None = None) -> None:
        """The job ends (finished, or given up)."""
        self._row("end", step=step, at=at)

    # ---------------------------------------------------------------------------- plumbing
    @staticmethod
    def _phase(phase: str) -> str:
        if phase not in PHASES:
            raise ValueError(f"phase={phase!r}: must be one of {', '.join(PHASES)}")
        return phase

    def _row(self, event: str, cause: str = "", stall: str = "", step: int | None = None, phase: str = "",
             at: datetime | None = None) -> None:
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            raise ValueError(f"step={step!r}: must be a whole number >= 0")
        if at is not None and not isinstance(at, datetime):
            raise ValueError(f"at={at!r}: must be a datetime")
        with self._lock:
            when = (at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at.astimezone(timezone.utc)) if at \
                else datetime.now(timezone.utc)
            values = (when.isoformat(timespec="microseconds"), event, cause, stall, step, phase)
            if self.fmt == "csv":
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerow("" if v is None else v for v in values)
                line = buf.getvalue()
            else:  # numbers as JSON numbers, empty fields left out
                typed = values[:3] + (float(stall) if stall else None,) + values[4:]
                line = json.dumps({k: v for k, v in zip(COLUMNS, typed) if v not in ("", None)}) + "\n"
            self._fh.write(line)
            self._flush()

    def _flush(self) -> None:
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the file (further rows raise ``ValueError``)."""
        with self._lock:
            self._fh.close()

    def __enter__(self) -> StepLogger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
