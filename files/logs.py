"""Job logs on disk: read a training job's event history into a validated events table.

This module knows the file format, documented here and nowhere else. The statistics on the events
table are in :mod:`ckptplan.engine.fitting` (job MTBF, failure shape, restart, stall, progress
lost) and :mod:`ckptplan.engine.measured` (where the wall time went, step by step); :func:`fit_log`
and :func:`measure_log` read and compute in one call. The checks are in :mod:`.steplogs`.

Log format
----------
One CSV file (UTF-8, an Excel byte-order mark is accepted), header row required; column names
are matched case-insensitively after trimming spaces, in any order:

========================  ========  =================================================================
column                    required  content
========================  ========  =================================================================
``timestamp``             yes       ISO 8601 (``2024-03-01T08:00:00``, ``...+00:00``, ``...Z``,
                                    fractional seconds allowed; what Python's
                                    ``datetime.fromisoformat`` reads). Either every row carries a UTC
                                    offset or none does; naive times are read as one clock without
                                    daylight-saving jumps (use UTC or offsets across a DST change).
                                    Years 1 to 9999 (in UTC when offsets are given).
``event``                 yes       one of the events below (case-insensitive).
``cause``                 yes       free text on ``interruption`` rows (``hardware``, ``software``,
                                    ``network``, ``planned`` ...); empty on every other row. An
                                    interruption with an empty cause counts as an unplanned failure
                                    of unknown cause.
``checkpoint_stall_s``    no        on ``checkpoint_saved`` rows: the blocking stall of that save in
                                    seconds as the job measured it (>= 0); empty elsewhere. The
                                    scenario's ``checkpoint_stall_min`` in seconds.
``step``                  no        training step (whole number >= 0) on any row; required on
                                    ``step`` rows. On lifecycle rows it is used for "steps lost".
``phase``                 no        on ``restart_phase`` and ``startup_phase`` rows (required there):
                                    one of :data:`PHASES`; empty elsewhere.
========================  ========  =================================================================

Events. The lifecycle events every log is made of: ``start``, ``checkpoint_saved`` (the moment a
checkpoint became restorable, i.e. durable, not when the save began), ``interruption``,
``restart_complete``, ``end``. A job may also log, in any subset:

* ``step``: a training step finished (its number in ``step``). A step lasts from the row before
  it to its row, skipping a ``checkpoint_saved`` that ends a background write (training ran on
  through it).
* ``save_start``: a save began; training is blocked from here. ``save_unblocked``: the blocking
  part ended and training resumes while the rest is written in the background, until
  ``checkpoint_saved`` (durable). A synchronous save logs ``save_start`` then
  ``checkpoint_saved``; a ``checkpoint_saved`` alone is timed by its ``checkpoint_stall_s``.
* ``restart_phase``: the END of one phase of a restart; the first phase starts at the
  interruption. Phases, in this order, any subset, each at most once per restart: ``detection``
  (the failure is noticed and the job declared failed), ``reallocation`` (replacement machines
  scheduled and allocated), ``startup`` (processes and containers launched until the training
  program runs), ``init`` (distributed set-up, model and optimizer built, compilation), ``load``
  (checkpoint read and restored), ``warmup`` (until training can run at speed). Time from the last
  phase row to ``restart_complete`` is restart time not split into phases.
* ``startup_phase``: the same at a start, in rows right after ``start`` and before the first step
  or save; the first phase starts at ``start``; every phase but ``detection``. A separate event,
  not ``restart_phase`` rows after ``start``, so that a row alone says whether the job was
  starting or recovering.

Event sequence
--------------
The job is *running* from a ``start`` or ``restart_complete`` row until the next
``interruption`` or ``end`` row. Allowed sequences (anything else is a bad row)::

    (not running) --start--> running [--startup_phase--> running ...]
    running --step | checkpoint_saved--> running
    running --save_start--> blocked --save_unblocked--> running, write pending --checkpoint_saved--> running
    blocked --checkpoint_saved--> running                          # a synchronous save
    running or blocked --interruption--> down [--restart_phase--> down ...] --restart_complete--> running
    running --end--> (not running);  down --end--> (not running)   # job given up after a failure
    (not running) --start--> running                               # a later launch

No step while blocked or down. A ``save_start`` while an earlier write is still pending is allowed:
that save never became durable (the split notes it). Step numbers of ``step`` rows never go back
except after a restore (``start``, ``restart_complete``); other rows are not compared (a
``checkpoint_saved`` row may carry the earlier step its save captured). A log may stop while the
job is running or down (no ``end``); how the fit and the split treat that, and every definition
of their quantities, is in :mod:`ckptplan.engine.fitting` and :mod:`ckptplan.engine.measured`.

Reading rules
-------------
* Rows must be sorted by time (equal timestamps are allowed). A row earlier than the row before it,
  e.g. after a clock stepped back, is an error naming both rows.
* A row repeating an earlier row cell for cell (same timestamp, event and every other cell) is a
  logging artefact: it is dropped and the drop is stated in the events table's
  ``attrs["notes"]`` and in the fit's and the split's notes; it is not an error.
* Other columns are allowed and ignored (listed in the notes). A row with more fields than the
  header is an error (its extra data would be lost); a row with fewer fields has the missing
  trailing fields empty. Empty lines are skipped; they do not shift the row numbers, which are the
  file's line numbers (the header is row 1). For a DataFrame input, row numbers are
  ``position + 2`` (as if written with a header).
* Legacy spelling: a header ``stall_s`` is read as ``checkpoint_stall_s`` (:data:`LEGACY_COLUMNS`);
  a log with both has a duplicate column. Bad values in it are reported as ``checkpoint_stall_s``.
* Size: at most :data:`MAX_LOG_ROWS` data rows (non-empty lines after the header; JSON lines) and
  512 bytes a row on average (a larger file is refused by its size on disk before a byte is
  read). The reader counts as it reads and stops at the first row (or chunk of
  bytes) beyond, refusing the file before parsing anything (split a longer log by time); a
  DataFrame longer than that is refused at once. A line longer than :data:`MAX_LOG_LINE_BYTES`
  (64 KiB) is refused by its row number and length before any parsing; error messages quote at
  most 80 characters of a value.
* Quotes follow RFC 4180: a cell holding a comma, a quote or a line break is quoted, a quote inside
  it doubled. A quote left open to the end of the file (it would swallow every later row into one
  cell) or text after a closing quote is an error, for every command that reads a log.
* Every bad row is collected (header, field count, timestamp, offsets, order, event, cause, stall,
  step, phase, sequence, steps going back) and reported together in one :class:`LogError`, each
  problem naming file, row, field, value and rule. A row that breaks the sequence is reported and
  the job's state is then taken to be what its event implies, so one missing row does not make
  every later row an error. The reader writes nothing anywhere.

JSON Lines
----------
A file ending in ``.jsonl`` or ``.ndjson``, or whose first character is ``{``, is read as JSON
Lines: one object per line, keys the column names above (matched as in CSV), values strings,
numbers or null; a key may be left out where its value is empty, and only ``timestamp`` and
``event`` must appear. Row numbers are line numbers (the first line is row 1); a line that is not
a JSON object is a bad row. :class:`ckptplan.instruments.steplog.StepLogger` writes either form.

Two tables
----------
:func:`read_two_tables` reads what most frameworks can export instead: a step table (columns
``step`` and ``time``) and an interruption table (``time``, ``event``, ``cause``, optionally
``phase``, ``checkpoint_stall_s`` and ``step``) holding every row but the steps. ``time`` is ISO
8601 or seconds since 1970-01-01 UTC (a number; then offsets count as given); ``timestamp`` is
accepted as its name. Each table is checked on its own (bad rows named with their table), then
the steps are merged in by time: a step at the same instant as interruption-table rows goes after
those that let work go on (``start``, phases, ``restart_complete``, ``save_unblocked``,
``checkpoint_saved``) and before the first that stops it (``save_start``, ``interruption``,
``end``). The result is the events table of the merged log, checked as one log; its ``row`` is the
row in the table the event came from (``step`` rows: the step table).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..engine.errors import InputError
from ..engine.fitting import PHASES, LogFit, check_confidence, fit_events
from .steplogs import (END, INTR, SAVE_START, STEP, LogError, ParsedLog, RowProblem, TableSpec, TokenTable, events_table,
                       parse_table, synthetic_step_log)

if TYPE_CHECKING:
    from ..engine.measured import MeasuredSplit

__all__ = ["EXAMPLE_LOG_PARAMS", "LEGACY_COLUMNS", "LogError", "MAX_LOG_LINE_BYTES", "MAX_LOG_ROWS", "OPTIONAL_COLUMNS", "PHASES",
           "REQUIRED_COLUMNS", "RowProblem", "fit_log", "measure_log", "read_log", "read_two_tables", "synthetic_log",
           "synthetic_step_log"]

REQUIRED_COLUMNS: tuple[str, ...] = ("timestamp", "event", "cause")
OPTIONAL_COLUMNS: tuple[str, ...] = ("checkpoint_stall_s", "step", "phase")
LEGACY_COLUMNS: dict[str, str] = {"stall_s": "checkpoint_stall_s"}
"""Old header spellings, read as the documented column (legacy name -> column)."""
MAX_LOG_ROWS = 5_000_000
"""Most data rows a log may have: reading takes about 400 bytes of memory a row at its peak (2 GB here)."""
MAX_LOG_LINE_BYTES = 65_536
"""Longest line of a log (bytes; a row of the format is under 200): a longer one is refused, naming its row, before
any parsing, so a huge cell never reaches a parser or an error message."""

_LOG = TableSpec("timestamp", REQUIRED_COLUMNS, OPTIONAL_COLUMNS, LEGACY_COLUMNS)
_STEPS = TableSpec("time", ("step", "time"), (), {"timestamp": "time"}, epoch=True, event=STEP)
_OTHERS = TableSpec("time", ("time", "event", "cause"), ("phase", "checkpoint_stall_s", "step"),
                {"timestamp": "time", **LEGACY_COLUMNS}, epoch=True)


# -------------------------------------------------------------------------------------- reading

def _cell_text(value: Any) -> str:
    """A DataFrame cell as the text a CSV file would hold ('' for missing)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, (datetime, pd.Timestamp)):
        return value.isoformat()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _texts(values: Any) -> pa.Array:
    """Cells (a list or a DataFrame column) as one string array; all-text columns without a per-cell loop."""
    if isinstance(values, pd.Series):
        if isinstance(values.dtype, pd.StringDtype):
            return pa.array(values.to_numpy(dtype=object, na_value=""), pa.string())
        if pd.api.types.infer_dtype(values, skipna=False) == "string":
            return pa.array(values.to_numpy(dtype=object), pa.string())
        values = values.tolist()
    elif all(type(v) is str for v in values):
        return pa.array(values, pa.string())
    return pa.array([_cell_text(v) for v in values], pa.string())


def _too_many(name: str) -> InputError:
    return InputError("log", name, f"has more than MAX_LOG_ROWS = {MAX_LOG_ROWS:,} rows: split it by time and read "
                                   "the parts")


def _lines(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte offsets of each line, without its line break."""
    b = np.frombuffer(data, np.uint8)
    nl = np.flatnonzero(b == 10)
    starts, ends = np.concatenate(([0], nl + 1)), np.concatenate((nl, [len(b)]))
    if len(b) and starts[-1] == len(b):
        starts, ends = starts[:-1], ends[:-1]
    cr = (ends > starts) & (b[np.maximum(ends - 1, 0)] == 13) if len(b) else np.zeros(len(ends), bool)
    return starts, ends - cr


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, refusing it by its size on disk, and as soon as it holds more than MAX_LOG_ROWS non-empty
    data lines or a line longer than MAX_LOG_LINE_BYTES (checked block by block, never a whole line at once)."""
    from .untrusted import check_regular_file

    st = check_regular_file(path, "log")  # a pipe would wait for a writer, a device (/dev/zero) never ends
    limit = 512 * MAX_LOG_ROWS  # rows of a log are far shorter than 512 bytes
    if st.st_size > limit:
        raise InputError("log", str(path), f"is {st.st_size:,} bytes, larger than 512 bytes x MAX_LOG_ROWS = "
                                           f"{limit:,}: split it by time and read the parts")
    chunks: list[bytes] = []
    lines = size = run = 0  # newlines so far, bytes so far, bytes of the line being read
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 24):
                chunks.append(chunk)
                run, breaks = _check_line_lengths(chunk, lines, run, str(path))
                lines, size = lines + breaks, size + len(chunk)
                if size > limit:  # it grew while being read
                    raise InputError("log", str(path), f"is larger than 512 bytes x MAX_LOG_ROWS = {limit:,}")
                if lines > MAX_LOG_ROWS + 1:
                    s, e = _lines(b"".join(chunks))
                    if int((e > s).sum()) > MAX_LOG_ROWS + 1:
                        raise _too_many(str(path))
    except FileNotFoundError:
        raise InputError("log", str(path), "file not found") from None
    except IsADirectoryError:
        raise InputError("log", str(path), "is a directory, not a log file") from None
    return b"".join(chunks)


def _check_line_lengths(chunk: bytes, lines: int, run: int, name: str) -> tuple[int, int]:
    """Refuse a line longer than MAX_LOG_LINE_BYTES in ``chunk`` (after ``lines`` line breaks and ``run`` bytes of
    the line it continues), naming its row and length, quoting none of it. Returns the bytes of the line left open
    and the chunk's line breaks."""
    nl = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
    lengths = np.diff(np.concatenate(([-1 - run], nl, [len(chunk)]))) - 1  # every line of the chunk, the last open
    over = np.flatnonzero(lengths > MAX_LOG_LINE_BYTES)
    if len(over):
        k = int(over[0])
        raise InputError("log", name, f"row {lines + k + 1} is over {MAX_LOG_LINE_BYTES:,} bytes long "
                                      f"({int(lengths[k]):,} bytes{' so far' if k == len(nl) else ''}; a log row is a "
                                      "timestamp, an event and a few short cells): refusing the file")
    return int(lengths[-1]), len(nl)


def _arrow_read_csv(data: bytes, seconds: float = 10.0, **options: Any) -> pa.Table:
    """``pyarrow.csv.read_csv`` of ``data``, returning only once Arrow's worker threads have dropped the Python
    buffer over it (its reference count back to what it was; at most ``seconds`` of waiting).

    A threaded read returns while read-ahead tasks on Arrow's thread pool still hold the buffer (a third of the
    reads of a 6,000-row log, measured here). The last of them to drop it runs the buffer's destructor on that
    worker thread, which takes the GIL; if the interpreter is finalising by then (a refusal right after the read:
    a bad header exits within milliseconds), Python ends the thread inside a C++ destructor and the process aborts
    ("terminate called without an active exception", exit 134)."""
    import time

    import pyarrow.csv as pacsv

    held = sys.getrefcount(data)  # measured in this frame, compared in this frame
    try:
        return pacsv.read_csv(pa.py_buffer(data), **options)
    finally:
        deadline = time.monotonic() + seconds
        while sys.getrefcount(data) > held and time.monotonic() < deadline:
            time.sleep(0.0002)  # releases the GIL the worker's destructor needs


def _csv_fast(data: bytes, name: str) -> TokenTable | None:
    """A CSV file without quotes or lone carriage returns, split by pyarrow (one line = one row)."""
    import pyarrow.csv as pacsv

    if b'"' in data or b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None
    starts, ends = _lines(data)
    if not len(starts) or ends[0] <= starts[0]:
        return None
    header = next(csv.reader([data[starts[0]:ends[0]].decode("utf-8-sig")]))
    lines = np.flatnonzero(ends > starts) + 1
    names = [f"c{j}" for j in range(len(header))]
    for threads in (True, False):  # row numbers of bad rows are known only single-threaded
        bad: list[tuple[int | None, str]] = []

        def handler(row: Any) -> str:
            bad.append((row.number, row.text))
            return "skip"

        table = _arrow_read_csv(data, read_options=pacsv.ReadOptions(
            use_threads=threads, column_names=names, skip_rows=1), parse_options=pacsv.ParseOptions(
            quote_char=False, escape_char=False, newlines_in_values=False, ignore_empty_lines=True,
            invalid_row_handler=handler), convert_options=pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False))
        if not bad:
            break
    rows = np.delete(lines[1:], [n - 2 for n, _ in bad]) if bad else lines[1:]
    if len(rows) != table.num_rows or any(n is None for n, _ in bad):
        return None
    cells = [table.column(j).combine_chunks() for j in range(len(names))]
    nfields = np.full(len(rows), len(header))
    long_rows: dict[int, list[str]] = {}
    if bad:
        split = [next(csv.reader([text])) for _, text in bad]
        extra_rows = np.array([lines[n - 1] for n, _ in bad])
        order = np.argsort(np.concatenate((rows, extra_rows)), kind="stable")
        cells = [pa.concat_arrays([c, pa.array([r[j] if j < len(r) else "" for r in split], pa.string())]).take(
            pa.array(order)) for j, c in enumerate(cells)]
        nfields = np.concatenate((nfields, [len(r) for r in split]))[order]
        long_rows = {int(row): r for row, r in zip(extra_rows, split) if len(r) > len(header)}
        rows = np.concatenate((rows, extra_rows))[order]
    return TokenTable(name, int(lines[0]), header, rows.astype(np.int64), cells, nfields, long_rows)


def _csv_slow(text: str, name: str) -> TokenTable:
    """Any CSV file (quoted fields, line breaks inside quotes), with Python's csv module in its strict mode: a
    quote left open to the end of the file (it would swallow every later row into one cell) or text after a
    closing quote is refused, naming the row where the field began, for every reader of a log alike."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    header_row, rows, nfields, long_rows = 0, [], [], {}
    columns: list[list[str]] = []
    try:
        for cells in reader:
            if not cells:
                continue  # empty lines carry nothing
            if header is None:
                header, header_row, columns = cells, reader.line_num, [[] for _ in cells]
                continue
            if len(rows) >= MAX_LOG_ROWS:
                raise _too_many(name)
            rows.append(reader.line_num)
            nfields.append(len(cells))
            if len(cells) > len(header):
                long_rows[reader.line_num] = cells
            for j, col in enumerate(columns):
                col.append(cells[j] if j < len(cells) else "")
    except csv.Error as exc:
        began = (rows[-1] + 1 if rows else header_row + 1) if header is not None else 1
        where = (f"a quoted field opened in row {began} or after is not closed before the end of the file"
                 if str(exc).startswith("unexpected end") else f"row {reader.line_num}: {exc}")
        raise InputError("log", name, f"is not a readable CSV file ({where}; a cell holding a quote "
                                      'is written "like ""this""")') from None
    if header is None:
        raise LogError(name, [RowProblem(1, "header", "", "empty file: a header row is required "
                                                          f"({', '.join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)})")])
    return TokenTable(name, header_row, header, np.asarray(rows, np.int64), [pa.array(c, pa.string()) for c in columns],
                  np.asarray(nfields, np.int64), long_rows)


def _jsonl(text: str, name: str) -> TokenTable:
    """JSON Lines: the union of the objects' keys is the header; a missing key is an empty cell."""
    columns: dict[str, list[Any]] = {}
    rows: list[int] = []
    problems: list[RowProblem] = []
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(rows) + len(problems) >= MAX_LOG_ROWS:
            raise _too_many(name)
        try:
            obj = json.loads(line)
        except ValueError as exc:
            problems.append(RowProblem(line_no, "row", line.strip()[:80], f"is not valid JSON ({exc})"))
            continue
        except RecursionError:  # arrays or objects nested deeper than the parser's stack: no log row nests at all
            problems.append(RowProblem(line_no, "row", line.strip()[:80], "is nested too deep: one flat JSON object "
                                                                          "per line"))
            continue
        if not isinstance(obj, dict):
            problems.append(RowProblem(line_no, "row", line.strip()[:80], "is not a JSON object: one object per line"))
            continue
        for key in obj:
            if key not in columns:
                columns[key] = [None] * len(rows)
        rows.append(line_no)
        for key, values in columns.items():
            values.append(obj.get(key))
    if not rows and not problems:
        raise LogError(name, [RowProblem(1, "row", "", "empty file: one JSON object per line is required")])
    return TokenTable(name, rows[0] if rows else 1, list(columns), np.asarray(rows, np.int64),
                  [_texts(v) for v in columns.values()], problems=problems, required=("timestamp", "event"))


def _table(source: Any, fmt: str | None, what: str = "log") -> TokenTable:
    """Split a path (CSV or JSON Lines) or a DataFrame into a :class:`TokenTable`."""
    if fmt not in (None, "csv", "jsonl"):
        raise InputError("fmt", fmt, "must be 'csv', 'jsonl' or None (from the file)")
    if isinstance(source, pd.DataFrame):
        if len(source) > MAX_LOG_ROWS:
            raise _too_many(f"{what} DataFrame")
        header = [str(c) for c in source.columns]
        cells = [_texts(source.iloc[:, j]) for j in range(len(header))]
        name = "DataFrame" if what == "log" else f"{what} DataFrame"
        return TokenTable(name, 1, header, np.arange(2, len(source) + 2, dtype=np.int64), cells)
    if not isinstance(source, (str, Path)):
        raise InputError(what, type(source).__name__, "must be a file path (CSV or JSON Lines) or a pandas DataFrame")
    path = Path(source)
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError("log", str(path), f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if fmt == "jsonl" or fmt is None and (path.suffix.lower() in (".jsonl", ".ndjson") or re.match(r"\s*\{", text)):
        return _jsonl(text, str(path))
    if not text or text.isspace():  # (not text.strip(): a copy of the whole text)
        raise LogError(str(path), [RowProblem(1, "header", "", "empty file: a header row is required "
                                                               f"({', '.join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)})")])
    return _csv_fast(data, str(path)) or _csv_slow(text, str(path))


def read_log(source: str | Path | pd.DataFrame, fmt: str | None = None) -> pd.DataFrame:
    """Read and validate a job log (format in the module docstring): CSV, JSON Lines or a DataFrame.

    Returns one row per event, in file order, with columns ``row`` (row number in the file),
    ``timestamp`` (``datetime64[us]``; UTC when the log carries offsets), ``event`` (lower case),
    ``cause`` (trimmed, as written), ``checkpoint_stall_s`` and ``step`` (float, NaN when empty) and
    ``phase`` (lower case, empty when none), i.e. :data:`ckptplan.engine.fitting.EVENTS_TABLE_COLUMNS`,
    the table :func:`ckptplan.engine.fitting.fit_events` and :func:`ckptplan.engine.measured.measure_split`
    take; ``attrs`` holds ``source``, ``aware`` (offsets given), ``ignored_columns``, ``final_state``
    (idle, running or down) and ``notes`` (dropped duplicate rows). ``fmt`` forces ``"csv"`` or
    ``"jsonl"`` for a path (default: from the suffix and the first character).

    Raises :class:`LogError` listing every bad row, :class:`InputError` for an unreadable file or
    one beyond :data:`MAX_LOG_ROWS`.
    """
    return events_table(parse_table(_table(source, fmt), _LOG))


def _merge(steps: ParsedLog, other: ParsedLog) -> ParsedLog:
    """One table from a step table and an interruption table, each already sorted by time. A step at
    the same instant as interruption-table rows goes after those that open work (start, restart,
    phases, save_unblocked, checkpoint_saved) and before the first that ends it (save_start,
    interruption, end)."""
    it = other.us
    closing = np.isin(other.ev, (SAVE_START, INTR, END))
    idx = np.where(closing, np.arange(len(it)), len(it))
    first_closing = np.append(np.minimum.accumulate(idx[::-1])[::-1], len(it))
    left, right = np.searchsorted(it, steps.us, "left"), np.searchsorted(it, steps.us, "right")
    at = np.minimum(first_closing[left], right)
    key = np.concatenate((at, np.arange(len(it))))
    kind = np.concatenate((np.zeros(len(at), np.int8), np.ones(len(it), np.int8)))
    order = np.lexsort((kind, key))

    def cat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate((a, b))[order]

    cause = pa.concat_arrays([steps.cause, other.cause]).take(pa.array(order))

    return ParsedLog(f"{steps.name} + {other.name}", cat(steps.rows, other.rows), cat(steps.us, other.us),
                   cat(steps.ok, other.ok), other.aware, cat(steps.ev, other.ev), cause,
                   cat(steps.stall, other.stall), cat(steps.step, other.step), cat(steps.phase, other.phase),
                   steps.ignored + other.ignored, steps.notes + other.notes, [],
                   cat(np.zeros(len(at), np.int8), np.ones(len(it), np.int8)), (steps.name, other.name))


def read_two_tables(steps: str | Path | pd.DataFrame, interruptions: str | Path | pd.DataFrame,
                    fmt: str | None = None) -> pd.DataFrame:
    """Merge a step table and an interruption table (module docstring, "Two tables") into the
    validated events table of :func:`read_log`. Bad rows of both tables are reported together,
    each named with its table; then the merged log is checked as one (sequence, steps going back)."""
    a, b = parse_table(_table(steps, fmt, "steps"), _STEPS), parse_table(_table(interruptions, fmt, "interruptions"), _OTHERS)
    for i in np.flatnonzero(b.ev == STEP):
        b.problems.append((int(b.rows[i]), 2, RowProblem(int(b.rows[i]), "event", "step",
                                                         "step rows belong in the step table")))
    if len(a.rows) and len(b.rows) and a.ok.any() and b.ok.any() and a.aware != b.aware:
        i = int(np.flatnonzero(b.ok)[0])
        b.problems.append((int(b.rows[i]), 1, RowProblem(int(b.rows[i]), "time", "", (
            f"{'has' if b.aware else 'has no'} UTC offset but the step table's times "
            f"{'have one' if a.aware else 'have none'}: give offsets (or epoch seconds) in both tables or neither"))))
    problems = [replace(p, source=t.name) for t in (a, b) for _, _, p in sorted(t.problems, key=lambda x: x[:2])]
    if problems:
        raise LogError(f"{a.name} + {b.name}", problems)
    return events_table(_merge(a, b))


# ------------------------------------------------------------------------------------- results

def _reader_notes(events: pd.DataFrame) -> tuple[str, ...]:
    ignored = events.attrs.get("ignored_columns", [])
    return ((f"ignored column(s): {', '.join(ignored)}",) if ignored else ()) + tuple(events.attrs.get("notes", ()))


def _read_any(source: Any, fmt: str | None) -> pd.DataFrame:
    if isinstance(source, tuple) and len(source) == 2:
        return read_two_tables(*source, fmt=fmt)
    return read_log(source, fmt)


def fit_log(source: str | Path | pd.DataFrame, confidence: float = 0.9) -> LogFit:
    """Read a log (:func:`read_log`) and fit it (:func:`ckptplan.engine.fitting.fit_events`): job MTBF,
    failure shape, restart, stall, progress lost. Columns the reader ignored and rows it dropped are
    listed first in the fit's ``notes``.

    Raises :class:`LogError` listing every bad row, :class:`InputError` for a bad ``confidence`` (checked
    before the log is read), an unreadable file or a log without running time.
    """
    c = check_confidence(confidence)
    events = read_log(source)
    fit = fit_events(events, events.attrs["source"], c)
    notes = _reader_notes(events)
    return replace(fit, notes=notes + fit.notes) if notes else fit


def measure_log(source: Any, confidence: float = 0.9, fmt: str | None = None) -> MeasuredSplit:
    """Read a log and split its wall time (:func:`ckptplan.engine.measured.measure_split`): productive
    time, badput buckets, goodput (ETTR) and the measured planning inputs. ``source`` is what
    :func:`read_log` takes, or a pair ``(steps, interruptions)`` for :func:`read_two_tables`.
    Columns the reader ignored and rows it dropped are listed first in the split's ``notes``."""
    from ..engine.measured import measure_split

    c = check_confidence(confidence)
    events = _read_any(source, fmt)
    split = measure_split(events, events.attrs["source"], c)
    notes = _reader_notes(events)
    return replace(split, notes=notes + split.notes) if notes else split


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
    return pd.DataFrame(rows, columns=["timestamp", "event", "cause", "checkpoint_stall_s", "step"])
