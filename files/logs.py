"""Interruption logs on disk: read a training job's event history into a validated events table.

This module knows the file format; the statistics on the events table (run segments, job MTBF,
failure shape, restart, stall, progress lost) are in :mod:`ckptplan.engine.fitting`.
:func:`fit_log` reads a log and fits it in one call.

Log format
----------
One CSV file (UTF-8, an Excel byte-order mark is accepted), header row required; column names
are matched case-insensitively after trimming spaces, in any order:

========================  ========  =================================================================
column                    required  content
========================  ========  =================================================================
``timestamp``             yes       ISO 8601 (``2024-03-01T08:00:00``, ``...+00:00``, ``...Z``,
                                    fractional seconds allowed). Either every row carries a UTC
                                    offset or none does; naive times are read as one clock without
                                    daylight-saving jumps (use UTC or offsets across a DST change).
``event``                 yes       ``start``, ``checkpoint_saved``, ``interruption``,
                                    ``restart_complete`` or ``end`` (case-insensitive).
``cause``                 yes       free text on ``interruption`` rows (``hardware``, ``software``,
                                    ``network``, ``planned`` ...); empty on every other row. An
                                    interruption with an empty cause counts as an unplanned failure
                                    of unknown cause.
``checkpoint_stall_s``    no        on ``checkpoint_saved`` rows: the blocking stall of that save in
                                    seconds as the job measured it (>= 0); empty elsewhere. The
                                    scenario's ``checkpoint_stall_min`` in seconds.
``step``                  no        training step (whole number >= 0) on any row; used only for
                                    "steps lost".
========================  ========  =================================================================

Legacy spelling: a header ``stall_s`` (the name used by earlier versions of this format) is read as
``checkpoint_stall_s`` (:data:`LEGACY_COLUMNS`); a log with both columns has a duplicate column.
Bad values in it are reported under the name ``checkpoint_stall_s``.

Other columns are allowed and ignored (the fit lists them in its notes). Rows must be sorted by
time (equal timestamps are allowed). A row with more fields than the header is an error (its
extra data would be lost); a row with fewer fields has the missing trailing fields empty. Empty
lines are skipped; they do not shift the row numbers, which are the file's line numbers (the header
is row 1). For a DataFrame input, row numbers are ``position + 2`` (as if written with a header).

Event sequence
--------------
The job is *running* from a ``start`` or ``restart_complete`` row until the next
``interruption`` or ``end`` row. A ``checkpoint_saved`` row is the moment a checkpoint became
restorable (durable), not when the save began. Allowed sequences (anything else is a bad row)::

    (not running) --start--> running --checkpoint_saved--> running
    running --interruption--> down --restart_complete--> running
    running --end--> (not running);  down --end--> (not running)   # job given up after a failure
    (not running) --start--> running                               # a later launch

A log may stop while the job is running or down (no ``end``); how the fit treats that, and every
definition of the fitted quantities, is in :mod:`ckptplan.engine.fitting`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..engine.errors import InputError
from ..engine.fitting import EVENTS, EVENTS_TABLE_COLUMNS, LogFit, check_confidence, fit_events

__all__ = ["EXAMPLE_LOG_PARAMS", "LEGACY_COLUMNS", "LogError", "OPTIONAL_COLUMNS", "REQUIRED_COLUMNS", "RowProblem",
           "fit_log", "read_log", "synthetic_log"]

REQUIRED_COLUMNS: tuple[str, ...] = ("timestamp", "event", "cause")
OPTIONAL_COLUMNS: tuple[str, ...] = ("checkpoint_stall_s", "step")
LEGACY_COLUMNS: dict[str, str] = {"stall_s": "checkpoint_stall_s"}
"""Old header spellings, read as the documented column (legacy name -> column)."""


# --------------------------------------------------------------------------------------- errors

@dataclass(frozen=True)
class RowProblem:
    """One bad row: ``row`` as numbered in the file (header = 1), the field, its value, the rule."""

    row: int
    field: str
    value: Any
    rule: str

    def __str__(self) -> str:
        return f"row {self.row}: {self.field}={self.value!r}: {self.rule}"


class LogError(InputError):
    """An interruption log with bad rows; ``problems`` lists every one (:class:`RowProblem`).

    The message names each row, field, value and rule, one per line.
    """

    def __init__(self, source: str, problems: Sequence[RowProblem]):
        self.problems = list(problems)
        self.source = source
        listing = "\n".join(f"  {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__("interruption log", source,
                         f"{count} bad row{'s' if count != 1 else ''}:\n{listing}")


# -------------------------------------------------------------------------------------- reading

def _cell_text(value: Any) -> str:
    """A DataFrame cell as the text a CSV file would hold ('' for missing)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, (datetime, pd.Timestamp)):
        return value.isoformat()
    return str(value)


def _records(source: str | Path | pd.DataFrame) -> tuple[str, int, list[str], list[tuple[int, list[str]]]]:
    """(source name, header row number, header cells, [(row number, cells), ...])."""
    if isinstance(source, pd.DataFrame):
        header = [str(c) for c in source.columns]
        rows = [(i + 2, [_cell_text(v) for v in values])
                for i, values in enumerate(source.itertuples(index=False, name=None))]
        return "DataFrame", 1, header, rows
    if not isinstance(source, (str, Path)):
        raise InputError("log", type(source).__name__, "must be a CSV file path or a pandas DataFrame")
    path = Path(source)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            records = [(reader.line_num, cells) for cells in reader]
    except FileNotFoundError:
        raise InputError("log", str(path), "file not found") from None
    except IsADirectoryError:
        raise InputError("log", str(path), "is a directory, not a CSV file") from None
    except UnicodeDecodeError as exc:
        raise InputError("log", str(path), f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise InputError("log", str(path), f"is not a readable CSV file ({exc})") from None
    records = [(line, cells) for line, cells in records if cells]  # empty lines carry nothing
    if not records:
        raise LogError(str(path), [RowProblem(1, "header", "", "empty file: a header row is required "
                                              f"({', '.join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)})")])
    (header_row, header), rows = records[0], records[1:]
    return str(path), header_row, header, rows


def _parse_timestamp(text: str) -> datetime:
    """ISO 8601 text -> datetime (Python >= 3.11 accepts 'Z', the basic format and fractions);
    times with an offset are converted to UTC."""
    dt = datetime.fromisoformat(text)
    return dt.astimezone(timezone.utc) if dt.tzinfo is not None else dt


def read_log(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Read and validate an interruption log (format in the module docstring).

    Returns one row per event, in file order, with columns ``row`` (row number in the file),
    ``timestamp`` (``datetime64``; converted to UTC when the log carries offsets), ``event``
    (lower case), ``cause`` (trimmed, as written), ``checkpoint_stall_s`` (float, NaN when empty) and
    ``step`` (float, NaN when empty), i.e. :data:`ckptplan.engine.fitting.EVENTS_TABLE_COLUMNS`, the
    table :func:`ckptplan.engine.fitting.fit_events` takes; ``attrs`` holds ``source``, ``aware``
    (offsets given) and ``ignored_columns``. A legacy ``stall_s`` header is read as
    ``checkpoint_stall_s`` (:data:`LEGACY_COLUMNS`).

    Every bad row is collected (empty file, missing or duplicate column, row with too many fields,
    malformed or missing timestamp, mixed offset/no-offset timestamps, timestamps out of order,
    unknown event, cause or stall on the wrong row, bad stall or step, events out of sequence) and
    reported together in one :class:`LogError`. A row whose event breaks the sequence is reported
    and the job's state is then taken to be what that event implies, so one missing row does not
    make every later row an error.
    """
    name, header_row, header, rows = _records(source)
    problems: list[RowProblem] = []
    spelled = [h.strip().lower() for h in header]
    names = [LEGACY_COLUMNS.get(h, h) for h in spelled]  # legacy spellings -> documented column
    seen: dict[str, int] = {}
    for i, col in enumerate(names):
        if col in seen and col:
            alias = {spelled[i], spelled[seen[col]]} & LEGACY_COLUMNS.keys()
            legacy = f"; {alias.pop()} is the legacy spelling of {col}" if alias else ""
            problems.append(RowProblem(header_row, "header", header[i],
                                       f"duplicate column (also column {seen[col] + 1}{legacy})"))
        seen.setdefault(col, i)
    missing = [c for c in REQUIRED_COLUMNS if c not in seen]
    if missing:
        problems.append(RowProblem(header_row, "header", ",".join(header),
                                   f"missing required column(s) {', '.join(missing)}; required: "
                                   f"{', '.join(REQUIRED_COLUMNS)}; optional: {', '.join(OPTIONAL_COLUMNS)}"))
    if problems:
        raise LogError(name, problems)
    if not rows:
        raise LogError(name, [RowProblem(header_row, "header", ",".join(header),
                                         "the log has a header but no data rows")])
    col = {c: seen[c] for c in REQUIRED_COLUMNS + OPTIONAL_COLUMNS if c in seen}
    ignored = [header[i].strip() or f"(unnamed column {i + 1})" for i, c in enumerate(names)
               if c not in col or seen[c] != i]

    out: list[dict[str, Any]] = []
    aware: bool | None = None
    aware_row = 0
    prev: tuple[int, str, datetime] | None = None  # last row with a usable timestamp
    state, state_row = "idle", 0  # idle | running | down

    def cell(cells: list[str], key: str) -> str:
        i = col.get(key)
        return cells[i].strip() if i is not None and i < len(cells) else ""

    for row, cells in rows:
        bad_before = len(problems)
        if len(cells) > len(header):
            problems.append(RowProblem(row, "row", ",".join(cells),
                                       f"has {len(cells)} fields but the header has {len(header)}"))
        # -- timestamp
        ts_text = cell(cells, "timestamp")
        ts: datetime | None = None
        if not ts_text:
            problems.append(RowProblem(row, "timestamp", ts_text, "is required"))
        else:
            try:
                ts = _parse_timestamp(ts_text)
            except ValueError:
                problems.append(RowProblem(row, "timestamp", ts_text,
                                           "is not an ISO 8601 timestamp (e.g. 2024-03-01T08:00:00+00:00)"))
        if ts is not None:
            has_tz = ts.tzinfo is not None
            if aware is None:
                aware, aware_row = has_tz, row
            elif has_tz != aware:
                problems.append(RowProblem(
                    row, "timestamp", ts_text,
                    f"{'has' if has_tz else 'has no'} UTC offset but row {aware_row} "
                    f"{'has one' if aware else 'has none'}: give an offset on every row or on none"))
                ts = None
        if ts is not None:
            if prev is not None and ts < prev[2]:
                problems.append(RowProblem(row, "timestamp", ts_text,
                                           f"is earlier than row {prev[0]} ({prev[1]}): rows must be sorted by time"))
            prev = (row, ts_text, ts)
        # -- event, cause, stall, step
        event = cell(cells, "event").lower()
        if event not in EVENTS:
            problems.append(RowProblem(row, "event", cell(cells, "event"),
                                       f"unknown event; expected one of {', '.join(EVENTS)}"))
            event = ""
        cause = cell(cells, "cause")
        if cause and event and event != "interruption":
            problems.append(RowProblem(row, "cause", cause, "is only given on interruption rows"))
        stall = math.nan
        stall_text = cell(cells, "checkpoint_stall_s")
        if stall_text:
            if event and event != "checkpoint_saved":
                problems.append(RowProblem(row, "checkpoint_stall_s", stall_text,
                                           "is only given on checkpoint_saved rows"))
            else:
                try:
                    stall = float(stall_text)
                except ValueError:
                    stall = math.nan
                if not (math.isfinite(stall) and stall >= 0):
                    problems.append(RowProblem(row, "checkpoint_stall_s", stall_text,
                                               "must be a number of seconds >= 0"))
                    stall = math.nan
        step = math.nan
        step_text = cell(cells, "step")
        if step_text:
            try:
                step = float(step_text)
            except ValueError:
                step = math.nan
            if not (math.isfinite(step) and step >= 0 and step == math.floor(step)):
                problems.append(RowProblem(row, "step", step_text, "must be a whole number >= 0"))
                step = math.nan
        # -- sequence
        if event:
            where = f"(job {state} since row {state_row})" if state_row else "(before the first start)"
            rule = None
            if event == "start":
                if state != "idle":
                    rule = f"start while the job is {state} {where}: start only begins a job that is not running"
                state, state_row = "running", row
            elif event == "checkpoint_saved":
                if state != "running":
                    rule = f"checkpoint_saved while the job is not running {where}"
            elif event == "interruption":
                if state != "running":
                    rule = f"interruption while the job is not running {where}"
                state, state_row = "down", row
            elif event == "restart_complete":
                if state != "down":
                    rule = f"restart_complete without a preceding interruption {where}"
                state, state_row = "running", row
            elif event == "end":
                if state == "idle":
                    rule = f"end while no job is running {where}"
                state, state_row = "idle", row
            if rule:
                problems.append(RowProblem(row, "event", event, rule))
        if len(problems) == bad_before:
            out.append({"row": row, "timestamp": ts, "event": event, "cause": cause,
                        "checkpoint_stall_s": stall, "step": step})
    if problems:
        raise LogError(name, problems)
    events = pd.DataFrame(out, columns=list(EVENTS_TABLE_COLUMNS))
    events["timestamp"] = pd.to_datetime(events["timestamp"], utc=bool(aware))
    events.attrs.update(source=name, aware=bool(aware), ignored_columns=ignored, final_state=state)
    return events


# ------------------------------------------------------------------------------------------- fit

def fit_log(source: str | Path | pd.DataFrame, confidence: float = 0.9) -> LogFit:
    """Read a log (:func:`read_log`) and fit it (:func:`ckptplan.engine.fitting.fit_events`): job MTBF,
    failure shape, restart, stall, progress lost. Columns the reader ignored are listed first in the
    fit's ``notes``.

    Raises :class:`LogError` listing every bad row, :class:`InputError` for a bad ``confidence`` (checked
    before the log is read), an unreadable file or a log without running time.
    """
    c = check_confidence(confidence)
    events = read_log(source)
    fit = fit_events(events, events.attrs["source"], c)
    ignored = events.attrs["ignored_columns"]
    if ignored:
        fit = replace(fit, notes=(f"ignored column(s): {', '.join(ignored)}",) + fit.notes)
    return fit


# ---------------------------------------------------------------------------- synthetic history

EXAMPLE_LOG_PARAMS: dict[str, Any] = dict(
    running_h=96.0, mtbf_h=14.0, shape=1.0, checkpoint_every_min=180.0, checkpoint_stall_s=45.0,
    restart_min=12.0, planned_every_h=60.0, steps_per_h=450.0, seed=7, start="2024-03-04T08:00:00+00:00",
    timespec="seconds")
"""Parameters of ``templates/example-interruption-log.csv`` (a synthetic history, not a measured
one). Regenerate it with::

    python -c "from ckptplan.files import logs as L; L.synthetic_log(**L.EXAMPLE_LOG_PARAMS).to_csv(
        'templates/example-interruption-log.csv', index=False)"
"""

_CAUSES = ("hardware", "software", "network")
_CAUSE_SHARES = (0.78, 0.14, 0.08)  # ~78 % hardware as in Llama 3 (2024, sec. 3.3.4); split of the rest assumed


def synthetic_log(*, running_h: float, mtbf_h: float, shape: float = 1.0, checkpoint_every_min: float = 60.0,
                  checkpoint_stall_s: float = 30.0, restart_min: float = 10.0, planned_every_h: float | None = None,
                  steps_per_h: float = 600.0, seed: int = 0, start: str = "2024-03-01T00:00:00+00:00",
                  timespec: str = "seconds") -> pd.DataFrame:
    """A simulated job history in the log format (every column text, as read from a CSV file).

    The job runs for ``running_h`` hours of running time. After each (re)start the time to the next
    unplanned failure is Weibull with shape ``shape`` and mean ``mtbf_h`` (scale
    ``mtbf_h / Gamma(1 + 1/shape)``; ``shape = 1`` is exponential, a Poisson process in running
    time); planned interruptions, if ``planned_every_h`` is given, arrive as an independent Poisson
    process with that mean spacing. Whichever comes first ends the run segment (restarts renew
    both). Saves are synchronous: within a segment the job computes ``checkpoint_every_min``, then
    stalls for a gamma-distributed time of mean ``checkpoint_stall_s`` (shape 8; the value written in
    the ``checkpoint_stall_s`` column), after which the checkpoint is durable (``checkpoint_saved``);
    the interval between saves is compute plus stall. Restarts take a gamma-distributed time of mean
    ``restart_min`` (shape 4). Failure causes: hardware 78 %,
    software 14 %, network 8 %. The step advances ``steps_per_h`` per running hour and goes back to
    the last checkpoint's step after a restart. Timestamps are truncated to ``timespec``
    (:meth:`datetime.isoformat`); with ``"seconds"`` a failure within a second of a restart gets a
    zero-length segment, so use ``"microseconds"`` for very clustered (``shape << 1``) simulations.
    """
    checks = (("running_h", running_h), ("mtbf_h", mtbf_h), ("shape", shape),
              ("checkpoint_every_min", checkpoint_every_min), ("steps_per_h", steps_per_h))
    for name, value in checks:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
            raise InputError(name, value, "must be a finite number > 0")
    for name, value in (("checkpoint_stall_s", checkpoint_stall_s), ("restart_min", restart_min)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value >= 0):
            raise InputError(name, value, "must be a finite number >= 0")
    if planned_every_h is not None and not (isinstance(planned_every_h, (int, float)) and planned_every_h > 0):
        raise InputError("planned_every_h", planned_every_h, "must be a number > 0 or None")
    if timespec not in ("seconds", "milliseconds", "microseconds"):
        raise InputError("timespec", timespec, "must be 'seconds', 'milliseconds' or 'microseconds'")
    try:
        clock = datetime.fromisoformat(start)
    except (TypeError, ValueError):
        raise InputError("start", start, "must be an ISO 8601 timestamp") from None
    from scipy import special  # here, not at import: the command line starts without scipy

    rng = np.random.default_rng(seed)
    scale_h = mtbf_h / special.gamma(1.0 + 1.0 / shape)
    rows: list[tuple[str, str, str, str, str]] = []

    def emit(at: datetime, event: str, cause: str = "", stall: str = "", step: float | None = None) -> None:
        rows.append((at.isoformat(timespec=timespec), event, cause, stall, "" if step is None else str(int(step))))

    done_h, step_restored = 0.0, 0
    emit(clock, "start", step=0)
    while True:
        ttf_h = scale_h * rng.weibull(shape)
        planned_h = rng.exponential(planned_every_h) if planned_every_h else math.inf
        remaining_h = running_h - done_h
        finished = remaining_h <= min(ttf_h, planned_h)
        seg_h = remaining_h if finished else min(ttf_h, planned_h)
        # synchronous saves: compute checkpoint_every_min, stall, durable; repeat while inside the segment
        at_min, saves = 0.0, 0
        while True:
            stall_min = (float(rng.gamma(8.0, checkpoint_stall_s / 8.0)) / 60.0 if checkpoint_stall_s > 0
                         else 0.0)
            if at_min + checkpoint_every_min + stall_min >= seg_h * 60.0:
                break
            at_min += checkpoint_every_min + stall_min
            saves += 1
            emit(clock + timedelta(minutes=at_min), "checkpoint_saved", stall=f"{stall_min * 60.0:.1f}",
                 step=step_restored + math.floor(saves * checkpoint_every_min / 60.0 * steps_per_h))
        compute_h = min(seg_h - (at_min - saves * checkpoint_every_min) / 60.0,
                        (saves + 1) * checkpoint_every_min / 60.0)  # no progress during a save's stall
        step_end = step_restored + math.floor(compute_h * steps_per_h)
        step_restored += math.floor(saves * checkpoint_every_min / 60.0 * steps_per_h)
        clock += timedelta(hours=seg_h)
        done_h += seg_h
        if finished:
            emit(clock, "end", step=step_end)
            break
        cause = "planned" if planned_h < ttf_h else str(rng.choice(_CAUSES, p=_CAUSE_SHARES))
        emit(clock, "interruption", cause=cause, step=step_end)
        clock += timedelta(minutes=float(rng.gamma(4.0, restart_min / 4.0)) if restart_min > 0 else 0.0)
        emit(clock, "restart_complete", step=step_restored)
    return pd.DataFrame(rows, columns=list(REQUIRED_COLUMNS + OPTIONAL_COLUMNS))
