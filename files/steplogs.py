"""Step-level job logs: validating a tokenised log into the events table, and a seeded step-level generator.

The format (columns, events, sequence, phases, JSON Lines, the two-table form, limits) is documented
once, in :mod:`ckptplan.files.logs`, which reads files and DataFrames into the tokenised form
(:class:`TokenTable`) validated here. The checks are vectorised (numpy, pyarrow compute) so that a
10^6-row log validates in about a second: per-row checks are array operations, and the sequence
rules run as a loop over the lifecycle, save and phase rows only; step rows are checked against the
state those rows leave. :func:`synthetic_step_log` simulates a job in that format.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..engine.errors import InputError
from ..engine.fitting import ALL_EVENTS, PHASES

__all__ = ["DEFAULT_RESTART_PHASES_MIN", "LogError", "ParsedLog", "RowProblem", "TableSpec", "TokenTable",
           "events_table", "parse_table", "synthetic_step_log"]

_E = {name: i for i, name in enumerate(ALL_EVENTS)}
START, CKPT, INTR, RESTART, END, STEP, SAVE_START, UNBLOCKED, RPHASE, SPHASE = range(len(ALL_EVENTS))  # their order
_MAX_LISTED = 200  # problems listed in a LogError's message (all of them are in .problems)
_MIN_US = -62135596800 * 10**6  # 0001-01-01T00:00:00 in microseconds since 1970-01-01
_MAX_US = 253402300799 * 10**6 + 999999  # 9999-12-31T23:59:59.999999
_ISO = (r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?")
_NAIVE, _AWARE = _ISO + "$", _ISO + r"(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$"
_NUM = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"


# --------------------------------------------------------------------------------------- errors

@dataclass(frozen=True)
class RowProblem:
    """One bad row: ``row`` as numbered in its file (CSV header = 1), the field, its value, the rule;
    ``source`` names the table when a log is read from two tables."""

    row: int
    field: str
    value: Any
    rule: str
    source: str | None = None

    def __str__(self) -> str:
        where = f"{self.source} row {self.row}" if self.source else f"row {self.row}"
        shown = repr(self.value)
        if len(shown) > 80:  # a message quotes a value, never a whole cell of any length
            shown = f"{shown[:77]}... ({len(str(self.value)):,} characters)"
        return f"{where}: {self.field}={shown}: {self.rule}"


class LogError(InputError):
    """A log with bad rows; ``problems`` lists every one (:class:`RowProblem`).

    The message names each row, field, value and rule, one per line (the first 200; ``problems``
    holds them all).
    """

    def __init__(self, source: str, problems: Sequence[RowProblem]):
        self.problems = list(problems)
        self.source = source
        listing = "\n".join(f"  {p}" for p in self.problems[:_MAX_LISTED])
        if len(self.problems) > _MAX_LISTED:
            listing += f"\n  ... and {len(self.problems) - _MAX_LISTED:,} more (LogError.problems lists every one)"
        count, where = len(self.problems), (f" in {source}" if len(repr(source)) > 60 else "")
        super().__init__("interruption log", source, f"{count} bad row{'s' if count != 1 else ''}{where}:\n{listing}")


# ----------------------------------------------------------------------------- tokenised tables

@dataclass
class TokenTable:
    """A log split into cells: ``cells[j]`` the raw text of header column ``j`` for every row."""

    name: str
    header_row: int
    header: list[str]
    rows: np.ndarray
    cells: list[pa.Array]
    nfields: np.ndarray | None = None          # fields per row (CSV); None: cannot have too many
    long_rows: dict[int, list[str]] = field(default_factory=dict)  # row -> every cell, when too many
    problems: list[RowProblem] = field(default_factory=list)       # rows that could not be split (JSON)
    required: tuple[str, ...] | None = None    # overrides the spec's (JSON Lines may leave cause out)


@dataclass(frozen=True)
class TableSpec:
    """Columns of one table: the time column, required and optional columns, old or other spellings,
    whether numbers are seconds since the epoch, and the event every row has (the step table)."""

    time: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    aliases: dict[str, str]
    epoch: bool = False
    event: int | None = None


@dataclass
class ParsedLog:
    """Per-row values of a validated table (columns as numpy arrays), before the sequence check."""

    name: str
    rows: np.ndarray
    us: np.ndarray
    ok: np.ndarray
    aware: bool
    ev: np.ndarray
    cause: pa.Array           # text, kept in Arrow (the events table's column is built from it without a copy)
    stall: np.ndarray
    step: np.ndarray
    phase: np.ndarray
    ignored: list[str]
    notes: list[str]
    problems: list[tuple[int, int, RowProblem]]
    src: np.ndarray | None = None
    names: tuple[str, ...] = ()


def _np(a: pa.Array) -> np.ndarray:
    return a.to_numpy(zero_copy_only=False)


def _blank(n: int) -> pa.Array:
    """``n`` empty cells (a column the table does not have)."""
    return pa.repeat(pa.scalar("", pa.string()), n)


def _numbers(text: pa.Array, mask: np.ndarray) -> np.ndarray:
    """Numbers in the cells where ``mask``, as Python's ``float`` reads them; NaN where not a number.

    Arrow's cast reads every cell where ``mask`` in one pass when it can: what it accepts, Python's ``float``
    reads to the same value (a subset: it refuses spaces, underscores and non-ASCII digits, which ``float``
    takes); when any cell is refused, the cells are sorted by a pattern and the rest read one by one."""
    out = np.full(len(text), np.nan)
    if text.null_count == 0:
        try:
            out[mask] = _np(pc.cast(pc.filter(text, pa.array(mask)), pa.float64()))
            return out
        except (pa.ArrowInvalid, ValueError):
            pass
    fast = _np(pc.match_substring_regex(text, _NUM)) & mask
    try:
        out[fast] = _np(pc.cast(pc.filter(text, pa.array(fast)), pa.float64()))
    except (pa.ArrowInvalid, ValueError):
        fast[:] = False
    for i in np.flatnonzero(mask & ~fast):
        try:
            out[i] = float(text[int(i)].as_py())
        except ValueError:
            pass
    return out


def _arrow_times(text: pa.Array) -> tuple[np.ndarray, bool] | None:
    """(microseconds, aware) when Arrow's ISO 8601 parser reads every cell, all with a UTC offset or all without,
    each within years 1-9999 (in UTC); None otherwise (then :func:`_times` sorts the cells out one kind at a time).

    What Arrow's cast accepts (date, ``T`` or space, hours with optional minutes, seconds and up to six
    fraction digits, then ``Z`` or an offset ``+hh``, ``+hhmm``, ``+hh:mm`` for a UTC-typed cast, none for a
    naive one) is a subset of what ``datetime.fromisoformat`` reads, and to the same instant: a strict parser,
    refusing February 30, hour 24 and second 60 as Python does."""
    if text.null_count or not len(text):
        return None
    for typ, aware in ((pa.timestamp("us", "UTC"), True), (pa.timestamp("us"), False)):
        try:
            us = _np(text.cast(typ).cast(pa.int64()))
        except (pa.ArrowInvalid, ValueError):
            continue
        return (us, aware) if int(us.min()) >= _MIN_US and int(us.max()) <= _MAX_US else None
    return None


def _times(text: pa.Array, epoch: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """(microseconds, parsed, aware, [(index, rule)]) of ISO 8601 cells (and numbers when ``epoch``)."""
    n = len(text)
    quick = _arrow_times(text)
    if quick is not None:
        return quick[0], np.ones(n, bool), np.full(n, quick[1]), []
    us, done, aware = np.zeros(n, np.int64), np.zeros(n, bool), np.zeros(n, bool)
    empty = _np(pc.equal(pc.utf8_length(text), 0))
    for pattern, utc in ((_NAIVE, False), (_AWARE, True)):
        m = _np(pc.match_substring_regex(text, pattern))
        if m.any():
            idx = pd.to_datetime(_np(pc.filter(text, pa.array(m))), format="ISO8601", errors="coerce", utc=utc)
            good = ~np.asarray(idx.isna())
            sel = np.flatnonzero(m)[good]
            us[sel] = pd.DatetimeIndex(idx[good]).as_unit("us").asi8
            done[sel], aware[sel] = True, utc
    bad = [(int(i), "is required") for i in np.flatnonzero(empty)]
    skip = done | empty
    if epoch:
        sec = _numbers(text, ~skip)
        good, far = np.isfinite(sec) & (np.abs(np.nan_to_num(sec)) < 3e11), np.isinf(sec) | (np.abs(sec) >= 3e11)
        us[good], done[good], aware[good] = np.round(sec[good] * 1e6).astype(np.int64), True, True
        bad += [(int(i), "falls outside years 1-9999 (in UTC)") for i in np.flatnonzero(far)]
        skip |= good | far
    for i in np.flatnonzero(~skip).tolist():  # what the fast patterns leave: Python's own parser
        try:
            dt = datetime.fromisoformat(text[i].as_py())
            aware[i] = dt.tzinfo is not None
            dt = dt.astimezone(timezone.utc).replace(tzinfo=None) if aware[i] else dt
        except ValueError:
            bad.append((i, "is not an ISO 8601 timestamp (e.g. 2024-03-01T08:00:00+00:00)"
                        + (" nor seconds since 1970-01-01 UTC" if epoch else "")))
        except OverflowError:
            bad.append((i, "falls outside years 1-9999 when converted to UTC"))
        else:
            us[i], done[i] = (dt - datetime(1970, 1, 1)) // timedelta(microseconds=1), True
    out = done & ((us < _MIN_US) | (us > _MAX_US))
    bad += [(int(i), "falls outside years 1-9999 (in UTC)") for i in np.flatnonzero(out)]
    return us, done & ~out, aware, bad


def _duplicates(t: TokenTable, key: int) -> np.ndarray:
    """Rows that repeat an earlier row cell for cell. Only rows whose column ``key`` (the time) equals
    the previous row's are compared: in a log sorted by time, a repeated row shares its timestamp."""
    same = np.zeros(len(t.rows), bool)
    if len(t.rows) < 2:
        return same
    eq = np.concatenate(([False], _np(pc.equal(t.cells[key][1:], t.cells[key][:-1]))))
    if not eq.any():
        return same
    cand = eq | np.concatenate((eq[1:], [False]))
    keep = pa.array(cand)
    frame = pd.DataFrame({f"c{j}": _np(pc.filter(c, keep)) for j, c in enumerate(t.cells)})
    frame["run"] = np.cumsum(~eq)[cand]
    if t.nfields is not None:
        frame["nf"] = t.nfields[cand]
    same[np.flatnonzero(cand)[frame.duplicated().to_numpy()]] = True
    return same


# ------------------------------------------------------------------------------ per-row checks

def parse_table(t: TokenTable, spec: TableSpec) -> ParsedLog:
    """Header and per-row checks (``rank`` orders a row's problems as the fields are read)."""
    col, ignored = _header(t, spec)
    notes: list[str] = []
    t = _without_duplicates(t, col[spec.time], notes)
    n = len(t.rows)
    check = _RowChecks(t, col)
    if t.nfields is not None:
        for i in np.flatnonzero(t.nfields > len(t.header)):
            check.add(i, 0, "row", ",".join(t.long_rows.get(int(t.rows[i]), [])), f"has {t.nfields[i]} fields but "
                      f"the header has {len(t.header)}")
    us, ok, is_aware = _timestamps(check, spec)
    ev = _event_codes(check, spec, n)
    known = ev >= 0
    cause_t = check.text("cause")
    cause = cause_t if cause_t is not None else _blank(n)
    for i in np.flatnonzero((_np(pc.binary_length(cause)) > 0) & known & (ev != INTR)).tolist():
        check.add(i, 3, "cause", cause[i].as_py(), "is only given on interruption rows")
    stall = _stalls(check, ev, known, n)
    step = _step_numbers(check, ev, n)
    phase = _phase_codes(check, ev, known, n)
    return ParsedLog(t.name, t.rows, us, ok, is_aware, ev, cause, stall, step, phase, ignored, notes, check.problems)


def _header(t: TokenTable, spec: TableSpec) -> tuple[dict[str, int], list[str]]:
    """(column name -> its index, the header cells ignored): refuses a duplicate column, a missing required one
    and a header without data rows, every problem of the header at once."""
    spelled = [h.strip().lower() for h in t.header]
    names = [spec.aliases.get(h, h) for h in spelled]
    required = t.required if t.required is not None else spec.required
    hp: list[RowProblem] = []
    seen: dict[str, int] = {}
    for i, c in enumerate(names):
        if c in seen and c:
            alias = {spelled[i], spelled[seen[c]]} & spec.aliases.keys()
            legacy = f"; {alias.pop()} is the legacy spelling of {c}" if alias else ""
            hp.append(RowProblem(t.header_row, "header", t.header[i],
                                 f"duplicate column (also column {seen[c] + 1}{legacy})"))
        seen.setdefault(c, i)
    missing = [c for c in required if c not in seen]
    if missing:
        hp.append(RowProblem(t.header_row, "header", ",".join(t.header),
                             f"missing required column(s) {', '.join(missing)}; required: {', '.join(spec.required)}; "
                             f"optional: {', '.join(spec.optional) or 'none'}"))
    if hp:
        raise LogError(t.name, hp)
    if not len(t.rows) and not t.problems:
        raise LogError(t.name, [RowProblem(t.header_row, "header", ",".join(t.header),
                                           "the log has a header but no data rows")])
    col = {c: seen[c] for c in spec.required + spec.optional if c in seen}
    ignored = [t.header[i].strip() or f"(unnamed column {i + 1})" for i, c in enumerate(names)
               if c not in col or seen[c] != i]
    return col, ignored


def _without_duplicates(t: TokenTable, time_col: int, notes: list[str]) -> TokenTable:
    """The table without its exact duplicate rows (a note lists them)."""
    dup = _duplicates(t, time_col)
    if not dup.any():
        return t
    rows = t.rows[dup]
    listed = ", ".join(str(r) for r in rows[:10]) + (", ..." if len(rows) > 10 else "")
    notes.append(f"dropped {len(rows)} exact duplicate row(s) (rows {listed}): each repeats an earlier row cell "
                 "for cell, as a logger that wrote a row twice leaves it")
    keep = pa.array(~dup)
    return replace(t, rows=t.rows[~dup], cells=[pc.filter(c, keep) for c in t.cells],
                   nfields=None if t.nfields is None else t.nfields[~dup])


class _RowChecks:
    """What the per-row checks share: a column's trimmed cells, and the problems found as (row, rank, problem)."""

    def __init__(self, t: TokenTable, col: dict[str, int]):
        self.t, self.col, self.rows = t, col, t.rows
        self.problems: list[tuple[int, int, RowProblem]] = [(p.row, -1, p) for p in t.problems]

    def add(self, i: np.ndarray | int, rank: int, fld: str, value: Any, rule: str) -> None:
        self.problems.append((int(self.rows[i]), rank, RowProblem(int(self.rows[i]), fld, value, rule)))

    def text(self, c: str) -> pa.Array | None:
        return pc.utf8_trim_whitespace(self.t.cells[self.col[c]]) if c in self.col else None


def _timestamps(check: _RowChecks, spec: TableSpec) -> tuple[np.ndarray, np.ndarray, bool]:
    """(microseconds, parsed and in order, whether the log's times carry a UTC offset): every row an offset or
    none, rows sorted by time."""
    rows = check.rows
    ts = check.text(spec.time)
    us, ok, aware, bad = _times(ts, spec.epoch)
    for i, rule in bad:
        check.add(i, 1, "timestamp", ts[i].as_py(), rule)
    ref = np.flatnonzero(ok)
    is_aware = bool(aware[ref[0]]) if len(ref) else False
    if len(ref):
        for i in ref[aware[ref] != is_aware]:
            a = bool(aware[i])
            check.add(i, 1, "timestamp", ts[int(i)].as_py(), f"{'has' if a else 'has no'} UTC offset but row "
                      f"{rows[ref[0]]} {'has one' if is_aware else 'has none'}: give an offset on every row or on none")
        ok[ref[aware[ref] != is_aware]] = False
        ref = np.flatnonzero(ok)
        back = np.flatnonzero(us[ref[1:]] < us[ref[:-1]])
        for j in back:
            i, p = int(ref[j + 1]), int(ref[j])
            check.add(i, 1, "timestamp", ts[i].as_py(), f"is earlier than row {rows[p]} ({ts[p].as_py()}): rows must "
                      "be sorted by time (if the clock stepped back, e.g. an NTP correction or another host's clock, "
                      "fix the rows after the step)")
    return us, ok, is_aware


def _event_codes(check: _RowChecks, spec: TableSpec, n: int) -> np.ndarray:
    """Each row's event code (:data:`ckptplan.engine.fitting.ALL_EVENTS` order; -1: unknown, a problem); the
    step table's rows are all steps."""
    if spec.event is not None:
        return np.full(n, spec.event, np.int8)
    raw = check.text("event")
    enc = pc.dictionary_encode(pc.utf8_lower(raw))
    lookup = np.array([_E.get(v, -1) for v in enc.dictionary.to_pylist()], np.int8)
    ev = lookup[_np(enc.indices).astype(np.int64)] if n else np.zeros(0, np.int8)
    for i in np.flatnonzero(ev < 0):
        check.add(i, 2, "event", raw[int(i)].as_py(), f"unknown event; expected one of {', '.join(ALL_EVENTS)}")
    return ev


def _stalls(check: _RowChecks, ev: np.ndarray, known: np.ndarray, n: int) -> np.ndarray:
    """``checkpoint_stall_s`` of each checkpoint_saved row (NaN elsewhere, or when not a number >= 0)."""
    stall = np.full(n, np.nan)
    if "checkpoint_stall_s" not in check.col:
        return stall
    st = check.text("checkpoint_stall_s")
    given = _np(pc.greater(pc.utf8_length(st), 0))
    for i in np.flatnonzero(given & known & (ev != CKPT)):
        check.add(i, 4, "checkpoint_stall_s", st[int(i)].as_py(), "is only given on checkpoint_saved rows")
    given &= ~known | (ev == CKPT)
    stall = _numbers(st, given)
    badv = given & ~(np.isfinite(stall) & (stall >= 0))
    for i in np.flatnonzero(badv):
        check.add(i, 4, "checkpoint_stall_s", st[int(i)].as_py(), "must be a number of seconds >= 0")
    stall[badv] = np.nan
    return stall


def _step_numbers(check: _RowChecks, ev: np.ndarray, n: int) -> np.ndarray:
    """Each row's step number (NaN when not given or not a whole number >= 0); required on step rows."""
    stx = check.text("step") if "step" in check.col else _blank(n)
    given = _np(pc.greater(pc.utf8_length(stx), 0))
    step = _numbers(stx, given)
    with np.errstate(invalid="ignore"):
        badv = given & ~(np.isfinite(step) & (step >= 0) & (step == np.floor(step)))
    for i in np.flatnonzero(badv):
        check.add(i, 5, "step", stx[int(i)].as_py(), "must be a whole number >= 0")
    step[badv] = np.nan
    for i in np.flatnonzero(~given & (ev == STEP)):
        check.add(i, 5, "step", "", "is required on step rows (the number of the step that finished)")
    return step


def _phase_codes(check: _RowChecks, ev: np.ndarray, known: np.ndarray, n: int) -> np.ndarray:
    """Each phase row's phase (index in PHASES; -1 elsewhere): required there, given nowhere else, and no
    detection phase in a first start-up."""
    phase = np.full(n, -1, np.int8)
    ph_rows = (ev == RPHASE) | (ev == SPHASE)
    ptx = pc.utf8_lower(check.text("phase")) if "phase" in check.col else _blank(n)
    given = _np(pc.greater(pc.utf8_length(ptx), 0))
    for i in np.flatnonzero(given & known & ~ph_rows):
        check.add(i, 6, "phase", ptx[int(i)].as_py(), "is only given on restart_phase and startup_phase rows")
    for i in np.flatnonzero(ph_rows):
        p = ptx[int(i)].as_py()
        if p in PHASES and not (p == "detection" and ev[i] == SPHASE):
            phase[i] = PHASES.index(p)
        else:
            check.add(i, 6, "phase", p, "detection is a restart phase: a first start has no failure to detect"
                      if p == "detection" else f"unknown phase; expected one of {', '.join(PHASES)}" if p
                      else f"is required on {ALL_EVENTS[ev[i]]} rows: one of {', '.join(PHASES)}")
    return phase


# ------------------------------------------------------------------------------- the sequence

_STATES = ("idle", "running", "down")


def _sequence(p: ParsedLog) -> str:
    """Check the event sequence (file-format docstring); adds to ``p.problems``; returns the final state."""
    ev, rows = p.ev, p.rows
    label = ((lambda i: f"{p.names[p.src[i]]} row {rows[i]}") if p.src is not None else (lambda i: f"row {rows[i]}"))

    def add(i: int, rank: int, fld: str, value: Any, rule: str) -> None:
        src = p.names[p.src[i]] if p.src is not None else None
        p.problems.append((i if src else int(rows[i]), rank, RowProblem(int(rows[i]), fld, value, rule, src)))

    ctrl = np.flatnonzero((ev >= 0) & (ev != STEP))
    state, ok_after, why_after = _control_rows(p, ctrl, label, add)
    _step_rows(p, ctrl, ok_after, why_after, label, add)
    return _STATES[state]


def _control_rows(p: ParsedLog, ctrl: np.ndarray, label: Any, add: Any) -> tuple[int, np.ndarray, list[str]]:
    """The lifecycle, save and phase rows against the job's state: (the final state, whether a step may follow
    each of them, and why not)."""
    ev = p.ev
    steps_upto = np.cumsum(ev == STEP)
    state, since, sub, save_at, open_init, last_phase, phase_at = 0, -1, 0, -1, False, -1, -1
    ok_after = np.zeros(len(ctrl), bool)
    why_after: list[str] = []
    prev = -1
    for k, i in enumerate(ctrl.tolist()):
        e = int(ev[i])
        if prev >= 0 and steps_upto[i] > steps_upto[prev] or prev < 0 and steps_upto[i] > 0:
            open_init = False
        prev = i
        name = ALL_EVENTS[e]
        where = f"(job {_STATES[state]} since {label(since)})" if since >= 0 else "(before the first start)"
        rule = None
        if e == START:
            if state != 0:
                rule = f"start while the job is {_STATES[state]} {where}: start only begins a job that is not running"
            state, since, sub, open_init, last_phase = 1, i, 0, True, -1
        elif e in (CKPT, SAVE_START, UNBLOCKED):
            if state != 1:
                rule = f"{name} while the job is not running {where}"
            elif e == SAVE_START and sub == 2:
                rule = (f"save_start while the save begun at {label(save_at)} still blocks training: log "
                        "save_unblocked (or checkpoint_saved) first")
            elif e == UNBLOCKED and sub != 2:
                rule = "save_unblocked without a save_start before it (a save's blocking part begins at save_start)"
            sub = {CKPT: 0, SAVE_START: 2, UNBLOCKED: 3}[e] if state == 1 else sub
            save_at = i if e == SAVE_START else save_at
            open_init = False
        elif e == INTR:
            if state != 1:
                rule = f"interruption while the job is not running {where}"
            state, since, sub, last_phase = 2, i, 0, -1
        elif e == RESTART:
            if state != 2:
                rule = f"restart_complete without a preceding interruption {where}"
            state, since, sub, open_init = 1, i, 0, False
        elif e == END:
            if state == 0:
                rule = f"end while no job is running {where}"
            state, since, sub = 0, i, 0
        else:  # restart_phase, startup_phase
            inside = state == 2 if e == RPHASE else (state == 1 and open_init)
            if not inside:
                rule = (f"restart_phase outside a restart {where}: restart phases come between an interruption "
                        "and its restart_complete" if e == RPHASE else f"startup_phase outside a start-up {where}: "
                        "start-up phases come right after start, before the first step or save")
            elif p.phase[i] >= 0 and p.phase[i] <= last_phase:
                add(i, 7, "phase", PHASES[p.phase[i]], f"comes after {PHASES[last_phase]} ({label(phase_at)}): "
                    f"phases are logged in the order {', '.join(PHASES)}, each at most once, at the end of each phase")
            if p.phase[i] >= 0:
                last_phase, phase_at = int(p.phase[i]), i
        if rule:
            add(i, 7, "event", name, rule)
        ok_after[k] = state == 1 and sub != 2
        if state != 1:
            why_after.append("step while the job is not running " + (
                f"(job {_STATES[state]} since {label(since)})" if since >= 0 else "(before the first start)"))
        else:
            why_after.append(f"step while the save begun at {label(save_at)} blocks training: log save_unblocked (or "
                             "checkpoint_saved for a synchronous save) before the next step" if sub == 2 else "")
    return state, ok_after, why_after


def _step_rows(p: ParsedLog, ctrl: np.ndarray, ok_after: np.ndarray, why_after: list[str], label: Any,
               add: Any) -> None:
    """Each step while the job runs and no save blocks it, and step numbers never going back between two
    restores (start, restart_complete)."""
    ev = p.ev
    srows = np.flatnonzero(ev == STEP)
    k = np.searchsorted(ctrl, srows) - 1
    bad = (k < 0) | ~ok_after[np.maximum(k, 0)] if len(ctrl) else np.ones(len(srows), bool)
    for i, kk in zip(srows[bad].tolist(), k[bad].tolist()):
        add(i, 7, "event", "step", why_after[kk] if kk >= 0 else
            "step while the job is not running (before the first start)")
    # step numbers: never backwards between two restores (start, restart_complete)
    seg = np.cumsum((ev == START) | (ev == RESTART))
    have = srows[np.isfinite(p.step[srows])]
    back = np.flatnonzero((seg[have[1:]] == seg[have[:-1]]) & (p.step[have[1:]] < p.step[have[:-1]]))
    for j in back.tolist():
        i, q = int(have[j + 1]), int(have[j])
        add(i, 8, "step", str(int(p.step[i])), f"is lower than step {int(p.step[q])} at {label(q)} with no restore in "
            "between: step numbers go back only after start or restart_complete")


def _frame(p: ParsedLog) -> pd.DataFrame:
    """The events table (:data:`ckptplan.engine.fitting.EVENTS_TABLE_COLUMNS`) of a checked table."""
    ts = pd.Series(p.us.view("datetime64[us]"))
    if p.aware:
        ts = ts.dt.tz_localize("UTC")

    def text(words: tuple[str, ...], code: np.ndarray) -> pd.Series:  # code -1: empty; Arrow strings, no copy
        return pd.Series(pa.array(words + ("",)).take(pa.array(np.where(code < 0, len(words), code))), dtype="str")

    return pd.DataFrame({
        "row": p.rows.astype(np.int64), "timestamp": ts, "event": text(ALL_EVENTS, p.ev),
        "cause": pd.Series(p.cause, dtype="str"), "checkpoint_stall_s": p.stall, "step": p.step,
        "phase": text(PHASES, p.phase)})


def events_table(p: ParsedLog) -> pd.DataFrame:
    """Sequence check, then every problem in row order as one :class:`LogError`, or the events table."""
    final = _sequence(p)
    if p.problems:
        p.problems.sort(key=lambda x: (x[0], x[1]))
        raise LogError(p.name, [x[2] for x in p.problems])
    events = _frame(p)
    events.attrs.update(source=p.name, aware=p.aware, ignored_columns=p.ignored, final_state=final, notes=p.notes)
    return events


# ------------------------------------------------------------------------- synthetic step logs

DEFAULT_RESTART_PHASES_MIN: dict[str, float] = {"detection": 3.0, "reallocation": 6.0, "startup": 2.0, "init": 3.0,
                                                "load": 2.0, "warmup": 1.0}
"""Mean minutes of each restart phase in :func:`synthetic_step_log` (17 min in all; assumed, not measured)."""
_CAUSES, _CAUSE_SHARES = ("hardware", "software", "network"), (0.78, 0.14, 0.08)


def _check_number(name: str, value: Any, low: float, strict: bool, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < low or (strict and value == low) or value >= high:
        rng = f"{'>' if strict else '>='} {low:g}" + (f" and < {high:g}" if high < math.inf else "")
        raise InputError(name, value, f"must be a finite number {rng}")
    return float(value)


def _phases(name: str, phases: Any, allowed: tuple[str, ...] = PHASES) -> list[tuple[int, float]]:
    if not isinstance(phases, dict) or any(k not in allowed for k in phases):
        raise InputError(name, phases, f"must map phases ({', '.join(allowed)}) to mean minutes")
    return [(PHASES.index(k), _check_number(f"{name}[{k}]", phases[k], 0.0, False) * 60.0)
            for k in PHASES if k in phases]


def synthetic_step_log(*, running_h: float, mtbf_h: float, step_s: float, checkpoint_every_min: float,
                       checkpoint_stall_s: float, async_write_s: float = 0.0, async_slowdown_fraction: float = 0.0,
                       restart_phases_min: dict[str, float] | None = None,
                       startup_phases_min: dict[str, float] | None = None, planned_every_h: float | None = None,
                       jitter: float = 0.1, seed: int = 0, start: str = "2024-03-01T00:00:00+00:00",
                       log_phases: bool = True, log_save_windows: bool = True) -> pd.DataFrame:
    """A simulated step-level job history in the log format (every column text, as read from CSV).

    The model of the planner's Monte Carlo (:mod:`ckptplan.engine.montecarlo`), walked event by event:

    * the job runs ``running_h`` hours of running time; unplanned failures arrive at job MTBF
      ``mtbf_h`` as a Poisson process in running time (exponential times, renewed at each restart),
      planned interruptions (cause ``planned``), if ``planned_every_h`` is given, as an independent
      one. Running time is what :func:`ckptplan.engine.fitting.fit_events` counts: failures strike
      during steps, saves and start-up, not during restarts (a log cannot record a failure while the
      job is down; with restarts much shorter than ``mtbf_h`` the difference is negligible);
    * a step needs ``step_s`` seconds of full-speed compute; after the first step that completes
      ``checkpoint_every_min`` minutes of compute since the last save, a save blocks training for
      ``C = checkpoint_stall_s`` (rows ``save_start``, then ``save_unblocked``), then writes in the
      background for ``W = async_write_s`` while steps run at ``1 - s`` of their speed
      (``s = async_slowdown_fraction``) and is durable at its end (``checkpoint_saved``, carrying
      the step the save captured); with ``W = 0`` the save is synchronous (``save_start``,
      ``checkpoint_saved``). ``W (1 + jitter)(1 - s)`` must not exceed the save interval;
    * a failure rolls back to the last durable checkpoint (the restart's ``restart_complete`` row
      carries its step; a segment without one restores the step it started from); the restart takes
      the phases of ``restart_phases_min`` (default :data:`DEFAULT_RESTART_PHASES_MIN`), each logged
      as a ``restart_phase`` row at its end unless ``log_phases`` is false; ``startup_phases_min``
      adds ``startup_phase`` rows after the first ``start``;
    * every duration (step, C, W, phase) is its nominal value times ``1 + jitter * U(-1, 1)``,
      independently: symmetric, so each nominal value is both the mean and the median.

    Timestamps UTC with microseconds (``...Z``), from ``start`` (ISO 8601) at step 0; causes as
    :func:`.logs.synthetic_log`. ``log_save_windows=False`` leaves out ``save_start`` and
    ``save_unblocked``, the stall then only in ``checkpoint_stall_s`` (the older form of the log).
    """
    job = _generator_job(running_h=running_h, mtbf_h=mtbf_h, step_s=step_s, checkpoint_every_min=checkpoint_every_min,
                         checkpoint_stall_s=checkpoint_stall_s, async_write_s=async_write_s,
                         async_slowdown_fraction=async_slowdown_fraction, restart_phases_min=restart_phases_min,
                         startup_phases_min=startup_phases_min, planned_every_h=planned_every_h, jitter=jitter)
    try:
        t0 = pd.Timestamp(start)
    except (TypeError, ValueError):
        raise InputError("start", start, "must be an ISO 8601 timestamp") from None
    t0_us = int(np.datetime64((t0.tz_convert("UTC").tz_localize(None) if t0.tzinfo else t0).to_datetime64(), "us")
                .astype(np.int64))
    rng = np.random.default_rng(seed)
    out = _EventRows()
    clock, done, step0, first = 0.0, 0.0, 0, True
    out.add([0.0], [START], [0])
    while True:
        ttf, planned = rng.exponential(job.mtbf_s), (rng.exponential(job.planned_s) if job.planned_s else math.inf)
        remaining = job.run_s - done
        cut = min(ttf, planned, remaining)
        ph = [(k, m * job.jittered(rng)) for k, m in (job.startup if first else [])]
        pt = np.cumsum([x for _, x in ph]) if ph else np.zeros(0)
        keep = pt <= cut
        out.add(clock + pt[keep], [SPHASE] * int(keep.sum()), [-1] * int(keep.sum()),
                phases=[k for (k, _), kk in zip(ph, keep) if kk])
        begin = float(pt[-1]) if len(pt) else 0.0
        restore, last = step0, step0
        if begin < cut:
            restore, last = _run_segment(job, rng, out, clock, begin, cut, step0, log_save_windows)
        clock += cut
        done += cut
        if remaining <= min(ttf, planned):
            out.add([clock], [END], [last])
            break
        cause = "planned" if planned < ttf else str(rng.choice(_CAUSES, p=_CAUSE_SHARES))
        out.add([clock], [INTR], [last], causes=[cause])
        dur = np.array([m * job.jittered(rng) for _, m in job.restart])
        at = clock + np.cumsum(dur)
        if log_phases and len(job.restart):
            out.add(at, [RPHASE] * len(job.restart), [-1] * len(job.restart), phases=[k for k, _ in job.restart])
        clock += float(dur.sum())
        out.add([clock], [RESTART], [restore])
        step0, first = restore, False
    return out.frame(t0_us)


@dataclass(frozen=True)
class _GeneratorJob:
    """:func:`synthetic_step_log`'s job, checked, in seconds; restart and start-up phases as (phase index, s)."""

    run_s: float
    mtbf_s: float
    d_s: float
    every_s: float
    c_s: float
    w_s: float
    s: float
    jit: float
    planned_s: float | None
    restart: list
    startup: list

    def jittered(self, rng: np.random.Generator, size: Any = None) -> Any:
        """``1 + jitter * U(-1, 1)``: the factor of each nominal duration (one draw, or ``size``)."""
        return 1.0 + self.jit * rng.uniform(-1.0, 1.0, size)


def _generator_job(*, running_h: Any, mtbf_h: Any, step_s: Any, checkpoint_every_min: Any, checkpoint_stall_s: Any,
                   async_write_s: Any, async_slowdown_fraction: Any, restart_phases_min: Any, startup_phases_min: Any,
                   planned_every_h: Any, jitter: Any) -> _GeneratorJob:
    """:func:`synthetic_step_log`'s arguments checked: each a finite number in its range, the write ending before
    the next save, at most 5e7 steps."""
    run_s = _check_number("running_h", running_h, 0.0, True) * 3600.0
    mtbf_s = _check_number("mtbf_h", mtbf_h, 0.0, True) * 3600.0
    d_s = _check_number("step_s", step_s, 0.0, True)
    every_s = _check_number("checkpoint_every_min", checkpoint_every_min, 0.0, True) * 60.0
    c_s = _check_number("checkpoint_stall_s", checkpoint_stall_s, 0.0, False)
    w_s = _check_number("async_write_s", async_write_s, 0.0, False)
    s = _check_number("async_slowdown_fraction", async_slowdown_fraction, 0.0, False, 1.0)
    jit = _check_number("jitter", jitter, 0.0, False, 1.0)
    planned_s = None if planned_every_h is None else _check_number("planned_every_h", planned_every_h, 0.0, True) * 3600
    restart = _phases("restart_phases_min", DEFAULT_RESTART_PHASES_MIN if restart_phases_min is None
                      else restart_phases_min)
    startup = _phases("startup_phases_min", startup_phases_min or {}, PHASES[1:])
    if w_s * (1 + jit) * (1 - s) > every_s:
        raise InputError("async_write_s", w_s, f"W (1 + jitter)(1 - s) = {w_s * (1 + jit) * (1 - s):.6g} s must "
                         f"not exceed the save interval {every_s:.6g} s: the write ends before the next save")
    if run_s / (d_s * (1 - jit)) > 5e7:
        raise InputError("step_s", step_s, "gives more than 5e7 steps over running_h: use longer steps")
    return _GeneratorJob(run_s, mtbf_s, d_s, every_s, c_s, w_s, s, jit, planned_s, restart, startup)


class _EventRows:
    """The generated rows, block by block in time order: (times in s, event codes, steps, stalls, causes, phases)."""

    def __init__(self) -> None:
        self.parts: list[tuple] = []

    def add(self, times: Any, codes: Any, steps: Any, stalls: Any = None, causes: Any = None,
            phases: Any = None) -> None:
        m = len(times)
        self.parts.append((np.asarray(times, float), np.asarray(codes, np.int8), np.asarray(steps, np.int64),
                           np.full(m, np.nan) if stalls is None else np.asarray(stalls, float),
                           np.full(m, "", object) if causes is None else np.asarray(causes, object),
                           np.full(m, -1, np.int8) if phases is None else np.asarray(phases, np.int8)))

    def frame(self, t0_us: int) -> pd.DataFrame:
        """The log as text cells (as read from CSV), timestamps UTC with microseconds from ``t0_us``."""
        t, codes, steps, stalls, causes, phases = (np.concatenate([p[i] for p in self.parts]) for i in range(6))
        us = (t0_us + np.round(t * 1e6).astype(np.int64)).astype("datetime64[us]")
        stall_text = np.full(len(t), "", object)
        have = np.isfinite(stalls)
        stall_text[have] = [f"{x:.6f}" for x in stalls[have]]
        return pd.DataFrame({
            "timestamp": np.datetime_as_string(us, unit="us", timezone="UTC"),
            "event": np.asarray(ALL_EVENTS, object)[codes], "cause": causes, "checkpoint_stall_s": stall_text,
            "step": np.where(steps >= 0, steps.astype(str), ""),
            "phase": np.asarray(PHASES + ("",), object)[phases]}).astype("str")


def _run_segment(job: _GeneratorJob, rng: np.random.Generator, out: _EventRows, clock: float, begin: float,
                 cut: float, step0: int, log_save_windows: bool) -> tuple[int, int]:
    """The steps and saves of one run segment, from ``begin`` (after start-up) to ``cut`` (a failure or the end),
    added to ``out``: (the step a restart restores, the last step finished)."""
    d_s, every_s, c_s, w_s, s, jit = job.d_s, job.every_s, job.c_s, job.w_s, job.s, job.jit
    n = int((cut - begin) / (d_s * (1 - jit))) + 2
    cw = np.cumsum(d_s * job.jittered(rng, n))  # compute done at the end of each step, at full speed
    idx, pos = [], 0.0
    while (i := int(np.searchsorted(cw, pos + every_s, "left"))) < n:
        idx.append(i)  # a save after the first step that completes every_s of compute
        pos = cw[i]
    sidx = np.asarray(idx, np.int64)
    cj, wj = c_s * job.jittered(rng, len(sidx)), w_s * job.jittered(rng, len(sidx))
    k = np.searchsorted(sidx, np.arange(n), "left")  # saves before each step
    j = np.maximum(k - 1, 0)
    cum_c, cum_sw = (np.concatenate(([0.0], np.cumsum(x))) for x in (cj, s * wj))
    part = s / (1 - s) * np.minimum(cw - cw[sidx[j]], (1 - s) * wj[j]) if len(sidx) else 0.0
    end = begin + cw + cum_c[k] + np.where(k > 0, cum_sw[j] + part, 0.0)  # wall time at each step's end
    ns = int(np.searchsorted(end, cut, "right"))
    ss = end[sidx]
    un, cap = ss + cj, step0 + sidx + 1
    du = un + wj
    sv, ub, durable = ss <= cut, (un <= cut) & (w_s > 0), du <= cut
    restore, last = (int(cap[durable][-1]) if durable.any() else step0), step0 + ns
    tt = np.concatenate((end[:ns], ss[sv], un[ub], du[durable]))
    kk = np.concatenate((3.0 * np.arange(ns), 3.0 * sidx[sv] + 1, 3.0 * sidx[ub] + 2, 3.0 * sidx[durable] + 2
                         if w_s == 0 else 3.0 * np.searchsorted(end, du[durable], "right") - 0.5))
    cc = np.repeat([STEP, SAVE_START, UNBLOCKED, CKPT], [ns, sv.sum(), ub.sum(), durable.sum()])
    st = np.concatenate((step0 + 1 + np.arange(ns), cap[sv], cap[ub], cap[durable]))
    stl = np.concatenate((np.full(len(tt) - int(durable.sum()), np.nan), cj[durable]))
    o = np.lexsort((kk, tt))
    o = o[log_save_windows | ~np.isin(cc[o], (SAVE_START, UNBLOCKED))]
    out.add(clock + tt[o], cc[o], st[o], stl[o])
    return restore, last
