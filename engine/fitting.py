"""Interruption logs: read a training job's event history and fit M, R, C and the failure shape.

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
``stall_s``               no        on ``checkpoint_saved`` rows: the blocking stall of that save in
                                    seconds as the job measured it (>= 0); empty elsewhere.
``step``                  no        training step (whole number >= 0) on any row; used only for
                                    "steps lost".
========================  ========  =================================================================

Other columns are allowed and ignored (the fit lists them in its notes). Rows must be sorted by
time (equal timestamps are allowed). A row with more fields than the header is an error (its
extra data would be lost); a row with fewer fields has the missing trailing fields empty. Empty
lines are skipped; they do not shift the row numbers, which are the file's line numbers (the header
is row 1). For a DataFrame input, row numbers are ``position + 2`` (as if written with a header).

Semantics
---------
The job is *running* from a ``start`` or ``restart_complete`` row until the next
``interruption`` or ``end`` row: that span is a *run segment*. A ``checkpoint_saved`` row is the
moment a checkpoint became restorable (durable), not when the save began. After an interruption the
job resumes from the last ``checkpoint_saved`` before it. Allowed sequences (anything else is a bad
row)::

    (not running) --start--> running --checkpoint_saved--> running
    running --interruption--> down --restart_complete--> running
    running --end--> (not running);  down --end--> (not running)   # job given up after a failure
    (not running) --start--> running                               # a later launch

If the log stops while the job is running (no ``end``), the last segment is closed at the last
row's timestamp (add an ``end`` row at the export time to count the running time after the last
event); if it stops while the job is down, that interruption has no restart time. Both are stated
in :attr:`LogFit.notes`.

``planned`` interruptions (cause equal to ``planned``, case-insensitive) are maintenance, upgrades
or deliberate restarts, not failures: they are left out of the failure count (so out of the MTBF
and the Weibull failures; their run segment is a censored observation) but their restart time
counts in the restart statistics and the progress they lose counts in the progress lost.

Definitions (``T`` running time in hours, ``n`` unplanned interruptions)
----------------------------------------------------------------------
* running time ``T``: the sum of all run-segment lengths (wall time minus time down and time
  between an ``end`` and the next ``start``). Save stalls are running time.
* restart time ``R``: from each interruption to the next ``restart_complete`` (planned ones
  included), in minutes.
* save stall ``C``: the ``stall_s`` values of ``checkpoint_saved`` rows, in minutes.
* progress lost by an interruption: the running time from the *restore point* to the interruption,
  where the restore point is the last ``checkpoint_saved`` in the same run segment or, if the
  segment has none, the segment's own start (whatever state the segment started from is what the
  job restores again, so everything the segment computed is lost). Because ``checkpoint_saved``
  marks durability, an asynchronous save whose state was captured earlier makes this a lower bound
  by up to the write time. Steps lost: the step on the interruption row minus the step at the
  restore point (when both rows carry a step).
* checkpoint interval: running time between consecutive ``checkpoint_saved`` rows of the same run
  segment (compute plus stall), in minutes.

Estimators: :func:`mtbf_estimate` (exponential MLE with chi-square bounds), :func:`weibull_fit`
(censored Weibull MLE, likelihood-ratio test of ``k = 1``); both take plain arrays as well.
:func:`fit_log` reads a log and applies them; :meth:`LogFit.scenario_overrides` gives the
fitted ``job_mtbf_h``, ``restart_min`` and ``checkpoint_stall_min`` for a :class:`engine.Scenario`.
The job MTBF override replaces the node-derived value: the log measures the whole job (node,
domain, software and network failures alike). Planned interruptions are not in the scenario model.

References
----------
* NIST/SEMATECH e-Handbook of Statistical Methods, ch. 8 "Assessing Product Reliability":
  exponential (HPP) model, MTBF point estimate ``T/n`` and chi-square confidence bounds for a
  time-terminated (time-censored) test, ``2T/chi2((1+c)/2; 2n+2) <= M <= 2T/chi2((1-c)/2; 2n)``;
  with no failures only the lower bound ``2T/chi2(c; 2)``.
* W. Q. Meeker, L. A. Escobar, *Statistical Methods for Reliability Data*, Wiley 1998: ch. 7
  (exponential, chi-square bounds), ch. 8 (Weibull maximum likelihood with right censoring,
  likelihood-ratio confidence intervals).
* J. F. Lawless, *Statistical Models and Methods for Lifetime Data*, 2nd ed., Wiley 2003, ch. 5
  (Weibull with censored data; profile likelihood for the shape).
* R. Sundberg, "Comparison of confidence procedures for type I censored exponential lifetimes",
  Stockholm University 2000: the 2n+2 / 2n degrees of freedom are conservative (coverage >= nominal).
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ._inputs import InputError

EVENTS: tuple[str, ...] = ("start", "checkpoint_saved", "interruption", "restart_complete", "end")
REQUIRED_COLUMNS: tuple[str, ...] = ("timestamp", "event", "cause")
OPTIONAL_COLUMNS: tuple[str, ...] = ("stall_s", "step")
PLANNED_CAUSE = "planned"
MIN_FAILURES_FOR_SHAPE = 10
"""Fewest unplanned failures for which :func:`weibull_fit` reports a shape. With fewer, the
likelihood-ratio interval for ``k`` typically spans from well below to well above 1 and the
asymptotic chi-square calibration of the test is poor (Meeker & Escobar 1998, ch. 8)."""

_SHAPE_SEARCH = (0.01, 100.0)  # bracket for the shape MLE and its interval


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
    (lower case), ``cause`` (trimmed, as written), ``stall_s`` (float, NaN when empty) and ``step``
    (float, NaN when empty); ``attrs`` holds ``source``, ``aware`` (offsets given) and
    ``ignored_columns``.

    Every bad row is collected (empty file, missing or duplicate column, row with too many fields,
    malformed or missing timestamp, mixed offset/no-offset timestamps, timestamps out of order,
    unknown event, cause or stall on the wrong row, bad stall or step, events out of sequence) and
    reported together in one :class:`LogError`. A row whose event breaks the sequence is reported
    and the job's state is then taken to be what that event implies, so one missing row does not
    make every later row an error.
    """
    name, header_row, header, rows = _records(source)
    problems: list[RowProblem] = []
    names = [h.strip().lower() for h in header]
    seen: dict[str, int] = {}
    for i, col in enumerate(names):
        if col in seen and col:
            problems.append(RowProblem(header_row, "header", header[i],
                                       f"duplicate column (also column {seen[col] + 1})"))
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
        stall_text = cell(cells, "stall_s")
        if stall_text:
            if event and event != "checkpoint_saved":
                problems.append(RowProblem(row, "stall_s", stall_text, "is only given on checkpoint_saved rows"))
            else:
                try:
                    stall = float(stall_text)
                except ValueError:
                    stall = math.nan
                if not (math.isfinite(stall) and stall >= 0):
                    problems.append(RowProblem(row, "stall_s", stall_text, "must be a number of seconds >= 0"))
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
                        "stall_s": stall, "step": step})
    if problems:
        raise LogError(name, problems)
    events = pd.DataFrame(out, columns=["row", "timestamp", "event", "cause", "stall_s", "step"])
    events["timestamp"] = pd.to_datetime(events["timestamp"], utc=bool(aware))
    events.attrs.update(source=name, aware=bool(aware), ignored_columns=ignored, final_state=state)
    return events


# ------------------------------------------------------------------------------------- segments

def run_segments(events: pd.DataFrame) -> pd.DataFrame:
    """Run segments of a validated log (:func:`read_log`), one row per segment.

    Columns: ``start_row``, ``end_row`` (row numbers in the file; the last row for a segment still
    open when the log stops), ``start``, ``end`` (timestamps), ``running_h``, ``ended_by``
    (``interruption``, ``end`` or ``log_end``), ``planned`` (interruption with cause planned),
    ``failure`` (ended by an unplanned interruption), ``cause``, ``checkpoints`` (saves in the
    segment), ``lost_h`` (progress lost, NaN unless ended by an interruption) and ``lost_steps``
    (NaN unless both steps are known); see the module docstring for the definitions.
    """
    segs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for r in events.itertuples(index=False):
        if r.event in ("start", "restart_complete"):
            cur = {"start_row": r.row, "start": r.timestamp, "restore": r.timestamp, "restore_step": r.step,
                   "checkpoints": 0}
        elif r.event == "checkpoint_saved":
            cur["restore"], cur["restore_step"] = r.timestamp, r.step
            cur["checkpoints"] += 1
        elif r.event == "interruption" or (r.event == "end" and cur is not None):
            segs.append(_close(cur, r, "interruption" if r.event == "interruption" else "end"))
            cur = None
    if cur is not None:
        last = next(events.tail(1).itertuples(index=False))
        segs.append(_close(cur, last, "log_end"))
    cols = ["start_row", "end_row", "start", "end", "running_h", "ended_by", "planned", "failure", "cause",
            "checkpoints", "lost_h", "lost_steps"]
    return pd.DataFrame(segs, columns=cols)


def _close(cur: dict[str, Any], r: Any, ended_by: str) -> dict[str, Any]:
    interrupted = ended_by == "interruption"
    planned = interrupted and r.cause.lower() == PLANNED_CAUSE
    lost_h = (r.timestamp - cur["restore"]) / pd.Timedelta(hours=1) if interrupted else math.nan
    lost_steps = r.step - cur["restore_step"] if interrupted else math.nan
    return {"start_row": cur["start_row"], "end_row": r.row, "start": cur["start"], "end": r.timestamp,
            "running_h": (r.timestamp - cur["start"]) / pd.Timedelta(hours=1), "ended_by": ended_by,
            "planned": planned, "failure": interrupted and not planned,
            "cause": r.cause if interrupted else "", "checkpoints": cur["checkpoints"],
            "lost_h": lost_h, "lost_steps": lost_steps}


def _restart_minutes(events: pd.DataFrame) -> tuple[np.ndarray, int]:
    """Restart durations (min) from each interruption to the next restart_complete, and the number
    of interruptions never followed by one (job ended, or log stopped, while down)."""
    out, pending, unrestarted = [], None, 0
    for r in events.itertuples(index=False):
        if r.event == "interruption":
            pending = r.timestamp
        elif r.event == "restart_complete":
            out.append((r.timestamp - pending) / pd.Timedelta(minutes=1))
            pending = None
        elif r.event == "end" and pending is not None:
            unrestarted += 1
            pending = None
    if pending is not None:
        unrestarted += 1
    return np.asarray(out, dtype=float), unrestarted


def _checkpoint_gaps_min(events: pd.DataFrame) -> np.ndarray:
    """Running minutes between consecutive checkpoint_saved rows of the same run segment."""
    gaps, last = [], None
    for r in events.itertuples(index=False):
        if r.event == "checkpoint_saved":
            if last is not None:
                gaps.append((r.timestamp - last) / pd.Timedelta(minutes=1))
            last = r.timestamp
        else:  # any other event ends or starts a run segment
            last = None
    return np.asarray(gaps, dtype=float)


# ------------------------------------------------------------------------------------ estimators

def _check_confidence(confidence: Any) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.integer, np.floating)) \
            or not (0 < float(confidence) < 1):
        raise InputError("confidence", confidence, "must be a number in (0, 1), e.g. 0.9")
    return float(confidence)


@dataclass(frozen=True)
class MtbfEstimate:
    """Exponential MTBF estimate; ``None`` where a figure does not exist (see :func:`mtbf_estimate`)."""

    failures: int
    running_h: float
    confidence: float
    mtbf_h: float | None
    lower_h: float | None
    upper_h: float | None
    note: str


def mtbf_estimate(running_h: float, failures: int, confidence: float = 0.9) -> MtbfEstimate:
    """Job MTBF ``M = T/n`` with two-sided chi-square bounds for a time-terminated observation.

    ``T`` running hours, ``n`` failures, ``c`` confidence::

        M_hat   = T / n
        M_lower = 2T / chi2.ppf((1 + c)/2, 2n + 2)
        M_upper = 2T / chi2.ppf((1 - c)/2, 2n)           (n >= 1)
        n = 0:  M_hat and M_upper do not exist; M_lower = 2T / chi2.ppf(c, 2)  (one-sided, level c)

    Assumes failures form a homogeneous Poisson process in running time (constant rate, i.e.
    exponential times between failures, independent of the restarts) and that the observation
    stopped at a time fixed independently of the failures (time-terminated). The 2n+2 degrees of
    freedom of the lower bound make the interval conservative: its coverage is at least ``c``
    (Sundberg 2000). Breaks when the rate changes over the log (early-life clustering, a fleet that
    ages or is repaired, changing job size): check :func:`weibull_fit` and split the log.
    References: NIST/SEMATECH e-Handbook ch. 8 (HPP/exponential MTBF bounds); Meeker & Escobar
    (1998) ch. 7.
    """
    if isinstance(running_h, bool) or not isinstance(running_h, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(running_h) and running_h > 0):
        raise InputError("running_h", running_h, "must be a finite number of hours > 0")
    if isinstance(failures, bool) or not isinstance(failures, (int, np.integer, float, np.floating)) \
            or not (math.isfinite(failures) and failures >= 0 and failures == math.floor(failures)):
        raise InputError("failures", failures, "must be a whole number >= 0")
    c = _check_confidence(confidence)
    n, T = int(failures), float(running_h)
    if n == 0:
        lower = 2 * T / stats.chi2.ppf(c, 2)
        return MtbfEstimate(0, T, c, None, float(lower), None,
                            f"no unplanned failures in {T:.4g} running hours: only a one-sided lower bound "
                            f"exists (M >= {lower:.4g} h with {c:.0%} confidence)")
    lower = 2 * T / stats.chi2.ppf((1 + c) / 2, 2 * n + 2)
    upper = 2 * T / stats.chi2.ppf((1 - c) / 2, 2 * n)
    return MtbfEstimate(n, T, c, T / n, float(lower), float(upper),
                        f"exponential MLE T/n; two-sided {c:.0%} chi-square bounds, time-terminated")


@dataclass(frozen=True)
class WeibullFit:
    """Censored Weibull fit of running time to failure; ``None`` where not estimable."""

    failures: int
    censored: int
    confidence: float
    shape: float | None
    shape_lower: float | None
    shape_upper: float | None
    scale_h: float | None
    mean_h: float | None
    lr_statistic: float | None
    p_value_exponential: float | None
    clustered: bool
    verdict: str
    note: str


def weibull_fit(running_h: Any, failed: Any, confidence: float = 0.9,
                min_failures: int = MIN_FAILURES_FOR_SHAPE) -> WeibullFit:
    """Weibull shape ``k`` of the running time from a (re)start to the next unplanned failure.

    Data: one duration ``t_i`` per run segment, ``failed[i]`` True when it ended in an unplanned
    failure, False when it is right-censored (ended by a planned interruption, ``end`` or the end of
    the log). Model ``F(t) = 1 - exp(-(t/lam)^k)``; censored log-likelihood (``d`` failures)::

        l(k, lam) = sum_failed log f(t_i; k, lam) + sum_censored log S(t_i; k, lam)

    maximised over ``lam`` in closed form, ``lam(k)^k = sum_all t_i^k / d``, and over ``k`` with
    :func:`scipy.optimize.minimize_scalar` (densities from :data:`scipy.stats.weibull_min`). Test of
    exponential failures: ``LR = 2 (l(k_hat) - l(1))`` against ``chi2(1)``; the interval for ``k``
    is the profile-likelihood interval ``{k: 2 (l(k_hat) - l_p(k)) <= chi2.ppf(c, 1)}``.

    ``clustered`` is True when ``k_hat < 1`` and the LR test rejects ``k = 1`` at level ``1 - c``;
    equivalently the interval's upper end is below 1 (a one-sided test at ``(1 - c)/2``: 5 % for
    ``c = 0.9``). It means failures come sooner after a restart than an exponential model predicts
    (a bad node returned to service, an early-life software fault), so Young/Daly intervals, which
    assume a constant rate, understate the risk just after restarts: use the Monte Carlo with a
    Weibull failure model. ``k > 1`` significant is reported as ``wear-out``.

    Assumes each restart renews the failure process (independent, identically distributed times
    from each restart) and non-informative censoring. Fewer than ``min_failures`` failures, or a
    failure at time 0 (an interruption with the same timestamp as the restart before it: the
    likelihood has no maximum at ``k > 0``; use finer timestamps), gives ``verdict =
    "insufficient data"`` and no numbers. The chi-square calibration is asymptotic; with 10-20
    failures the test is approximate. References: Meeker & Escobar (1998) ch. 8; Lawless (2003) ch. 5.
    """
    c = _check_confidence(confidence)
    t = np.asarray(running_h, dtype=float).reshape(-1) if np.ndim(running_h) else None
    f = np.asarray(failed).reshape(-1) if np.ndim(failed) else None
    if t is None or t.size == 0:
        raise InputError("running_h", running_h, "must be a non-empty 1-D array of durations (h)")
    if f is None or f.shape != t.shape or f.dtype.kind != "b":
        raise InputError("failed", failed, f"must be a boolean array with the same length as running_h ({t.size})")
    bad = ~(np.isfinite(t) & (t >= 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError("running_h", float(t[i]), "must be finite and >= 0", (i,))
    if isinstance(min_failures, bool) or not isinstance(min_failures, (int, np.integer)) or min_failures < 2:
        raise InputError("min_failures", min_failures, "must be a whole number >= 2")
    d = int(f.sum())
    censored = int((~f).sum())

    def insufficient(why: str) -> WeibullFit:
        return WeibullFit(d, censored, c, None, None, None, None, None, None, None, False,
                          "insufficient data", why)

    if d < min_failures:
        return insufficient(f"{d} unplanned failure(s); the Weibull shape needs at least {min_failures}")
    zero = int(((t <= 0) & f).sum())
    if zero:
        return insufficient(f"{zero} failure(s) at running time 0 (interruption at the same timestamp as the "
                            "restart before it): the Weibull likelihood is degenerate; log finer timestamps")
    keep = f | (t > 0)  # a censored duration of 0 adds nothing to the likelihood
    unit = float(t[keep].max())  # fit in units of the longest duration: x <= 1, no overflow of x**k
    x, fx = t[keep] / unit, f[keep]
    xf, xc = x[fx], x[~fx]

    def profile(k: float) -> float:
        lam = (np.sum(x ** k) / d) ** (1.0 / k)
        return float(stats.weibull_min.logpdf(xf, k, scale=lam).sum()
                     + stats.weibull_min.logsf(xc, k, scale=lam).sum())

    lo, hi = np.log(_SHAPE_SEARCH[0]), np.log(_SHAPE_SEARCH[1])
    res = optimize.minimize_scalar(lambda u: -profile(math.exp(u)), bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-10})
    k_hat = math.exp(res.x)
    l_hat = profile(k_hat)
    notes = []
    if k_hat < _SHAPE_SEARCH[0] * 1.01 or k_hat > _SHAPE_SEARCH[1] * 0.99:
        notes.append(f"shape estimate at the search limit {_SHAPE_SEARCH}: the data hardly constrain it")
    lr = max(0.0, 2.0 * (l_hat - profile(1.0)))
    p = float(stats.chi2.sf(lr, 1))
    crit = float(stats.chi2.ppf(c, 1))

    def excess(k: float) -> float:
        return 2.0 * (l_hat - profile(k)) - crit

    k_lo = k_hi = None
    if excess(_SHAPE_SEARCH[0]) > 0 and k_hat > _SHAPE_SEARCH[0]:
        k_lo = float(optimize.brentq(excess, _SHAPE_SEARCH[0], k_hat, xtol=1e-10))
    else:
        notes.append(f"lower end of the shape interval below {_SHAPE_SEARCH[0]}")
    if excess(_SHAPE_SEARCH[1]) > 0 and k_hat < _SHAPE_SEARCH[1]:
        k_hi = float(optimize.brentq(excess, k_hat, _SHAPE_SEARCH[1], xtol=1e-10))
    else:
        notes.append(f"upper end of the shape interval above {_SHAPE_SEARCH[1]}")
    scale_h = unit * (np.sum(x ** k_hat) / d) ** (1.0 / k_hat)
    mean_h = scale_h * special.gamma(1.0 + 1.0 / k_hat)
    significant = p < 1.0 - c
    clustered = bool(significant and k_hat < 1.0)
    if clustered:
        verdict = "clustered (k < 1): failures come sooner after restarts than exponential"
    elif significant and k_hat > 1.0:
        verdict = "wear-out (k > 1): failures come later after restarts than exponential"
    else:
        verdict = "consistent with exponential (k = 1 not rejected)"
    notes.insert(0, f"censored Weibull MLE over {d} failures and {censored} censored segments; "
                    f"{c:.0%} profile-likelihood interval; LR test of k = 1")
    return WeibullFit(d, censored, c, float(k_hat), k_lo, k_hi, float(scale_h), float(mean_h), float(lr), p,
                      clustered, verdict, "; ".join(notes))


@dataclass(frozen=True)
class MinutesSummary:
    """Count, mean, median, 90th percentile (numpy linear interpolation) and maximum, in minutes."""

    count: int
    mean_min: float
    median_min: float
    p90_min: float
    max_min: float


def summarize_minutes(values_min: Any) -> MinutesSummary | None:
    """:class:`MinutesSummary` of an array of minutes; ``None`` for an empty array."""
    v = np.asarray(values_min, dtype=float).reshape(-1)
    if v.size == 0:
        return None
    return MinutesSummary(int(v.size), float(v.mean()), float(np.median(v)), float(np.percentile(v, 90)),
                          float(v.max()))


# ------------------------------------------------------------------------------------------- fit

@dataclass(frozen=True)
class LogFit:
    """Everything :func:`fit_log` estimates from one log (units in the names; ``None`` = not estimable).

    ``observed_h`` wall time from the first to the last row; ``running_h`` the sum of run segments
    (``running_share = running_h / observed_h``); ``failure_causes`` counts unplanned
    interruptions by cause (lower case, ``unknown`` when empty); ``lost_h`` progress lost over all
    interruptions, ``lost_h_unplanned`` over the failures only, ``lost_share = lost_h / running_h``,
    ``lost_per_failure_h = lost_h_unplanned / failures``; ``lost_steps`` total steps lost when every
    interruption and its restore point carry a step.
    """

    source: str
    confidence: float
    rows: int
    first_timestamp: str
    last_timestamp: str
    observed_h: float
    running_h: float
    running_share: float
    run_segments: int
    checkpoints: int
    interruptions: int
    unplanned_failures: int
    planned_interruptions: int
    failure_causes: dict[str, int]
    mtbf: MtbfEstimate
    shape: WeibullFit
    restart: MinutesSummary | None
    stall: MinutesSummary | None
    checkpoint_interval: MinutesSummary | None
    lost_h: float
    lost_h_unplanned: float
    lost_share: float
    lost_per_failure_h: float | None
    lost_steps: int | None
    notes: tuple[str, ...]

    def scenario_overrides(self) -> dict[str, float]:
        """Scenario fields the log estimates: ``job_mtbf_h`` (``T/n``), ``restart_min`` (mean
        restart) and ``checkpoint_stall_min`` (mean stall), each only when estimable.

        Means, not medians, because the planning model is an expectation that is linear in the
        restart and stall per event; the medians and 90th percentiles are in the fit for judging skew.
        """
        out: dict[str, float] = {}
        if self.mtbf.mtbf_h is not None:
            out["job_mtbf_h"] = self.mtbf.mtbf_h
        if self.restart is not None:
            out["restart_min"] = self.restart.mean_min
        if self.stall is not None:
            out["checkpoint_stall_min"] = self.stall.mean_min
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (no NaN: missing figures are ``None``), with ``scenario_overrides``."""
        data = asdict(self)
        data["notes"] = list(self.notes)
        data["scenario_overrides"] = self.scenario_overrides()
        return data


def fit_log(source: str | Path | pd.DataFrame, confidence: float = 0.9) -> LogFit:
    """Read a log (:func:`read_log`) and estimate job MTBF, failure shape, restart, stall, progress lost.

    * job MTBF: :func:`mtbf_estimate` with ``T`` = running hours, ``n`` = unplanned interruptions;
    * shape: :func:`weibull_fit` of run-segment lengths, segments ending in an unplanned
      interruption as failures, every other segment (planned interruption, ``end``, log end)
      right-censored;
    * restart, stall and checkpoint interval: :func:`summarize_minutes`;
    * progress lost: module docstring.

    Raises :class:`LogError` listing every bad row, :class:`InputError` for a bad ``confidence`` or
    a log without running time.
    """
    c = _check_confidence(confidence)
    events = read_log(source)
    segs = run_segments(events)
    name = events.attrs["source"]
    running_h = float(segs["running_h"].sum())
    if not running_h > 0:
        raise InputError("interruption log", name, "has no running time (every run segment has length 0): "
                                                   "nothing to fit")
    n = int(segs["failure"].sum())
    interrupted = segs[segs["ended_by"] == "interruption"]
    notes: list[str] = []
    restarts, unrestarted = _restart_minutes(events)
    stalls = events.loc[events["event"] == "checkpoint_saved", "stall_s"].to_numpy(dtype=float)
    measured = stalls[~np.isnan(stalls)] / 60.0
    if events.attrs["ignored_columns"]:
        notes.append(f"ignored column(s): {', '.join(events.attrs['ignored_columns'])}")
    if (segs["ended_by"] == "log_end").any():
        notes.append(f"the log stops while the job is running: the last run segment is closed at the last row "
                     f"(row {int(segs['end_row'].iloc[-1])}); add an 'end' row to count running time after it")
    if unrestarted:
        notes.append(f"{unrestarted} interruption(s) without a restart_complete (job ended or log stopped while "
                     "down): no restart time for them")
    checkpoints = int((events["event"] == "checkpoint_saved").sum())
    if measured.size == 0:
        notes.append("no stall_s values on checkpoint_saved rows: save stall not estimated"
                     if checkpoints else "no checkpoint_saved rows: save stall and checkpoint interval not estimated")
    elif measured.size < checkpoints:
        notes.append(f"stall_s given on {measured.size} of {checkpoints} checkpoint_saved rows")
    mtbf = mtbf_estimate(running_h, n, c)
    if n == 0:
        notes.append(mtbf.note)
    shape = weibull_fit(segs["running_h"].to_numpy(dtype=float), segs["failure"].to_numpy(dtype=bool), c)
    steps = interrupted["lost_steps"].to_numpy(dtype=float)
    lost_steps = int(steps.sum()) if steps.size and not np.isnan(steps).any() else None
    if lost_steps is not None and (steps < 0).any():
        notes.append("some interruptions carry a step below the step of their restore point: check the step column")
    causes: dict[str, int] = {}
    for cause in interrupted.loc[interrupted["failure"], "cause"]:
        key = cause.strip().lower() or "unknown"
        causes[key] = causes.get(key, 0) + 1
    lost_h = float(interrupted["lost_h"].sum())
    lost_unplanned = float(interrupted.loc[interrupted["failure"], "lost_h"].sum())
    first, last = events["timestamp"].iloc[0], events["timestamp"].iloc[-1]
    observed_h = (last - first) / pd.Timedelta(hours=1)
    return LogFit(
        source=name, confidence=c, rows=len(events),
        first_timestamp=first.isoformat(), last_timestamp=last.isoformat(),
        observed_h=float(observed_h), running_h=running_h,
        running_share=float(running_h / observed_h),  # observed_h >= running_h > 0
        run_segments=len(segs), checkpoints=checkpoints,
        interruptions=len(interrupted), unplanned_failures=n,
        planned_interruptions=int(interrupted["planned"].sum()), failure_causes=causes,
        mtbf=mtbf, shape=shape,
        restart=summarize_minutes(restarts), stall=summarize_minutes(measured),
        checkpoint_interval=summarize_minutes(_checkpoint_gaps_min(events)),
        lost_h=lost_h, lost_h_unplanned=lost_unplanned, lost_share=lost_h / running_h,
        lost_per_failure_h=lost_unplanned / n if n else None, lost_steps=lost_steps,
        notes=tuple(notes))


# ---------------------------------------------------------------------------- synthetic history

EXAMPLE_LOG_PARAMS: dict[str, Any] = dict(
    running_h=96.0, mtbf_h=14.0, shape=1.0, checkpoint_every_min=180.0, stall_s=45.0, restart_min=12.0,
    planned_every_h=60.0, steps_per_h=450.0, seed=7, start="2024-03-04T08:00:00+00:00", timespec="seconds")
"""Parameters of ``templates/example-interruption-log.csv`` (a synthetic history, not a measured
one). Regenerate it with::

    python -c "import engine.logs as L; L.synthetic_log(**L.EXAMPLE_LOG_PARAMS).to_csv(
        'templates/example-interruption-log.csv', index=False)"
"""

_CAUSES = ("hardware", "software", "network")
_CAUSE_SHARES = (0.78, 0.14, 0.08)  # ~78 % hardware as in Llama 3 (2024, sec. 3.3.4); split of the rest assumed


def synthetic_log(*, running_h: float, mtbf_h: float, shape: float = 1.0, checkpoint_every_min: float = 60.0,
                  stall_s: float = 30.0, restart_min: float = 10.0, planned_every_h: float | None = None,
                  steps_per_h: float = 600.0, seed: int = 0, start: str = "2024-03-01T00:00:00+00:00",
                  timespec: str = "seconds") -> pd.DataFrame:
    """A simulated job history in the log format (every column text, as read from a CSV file).

    The job runs for ``running_h`` hours of running time. After each (re)start the time to the next
    unplanned failure is Weibull with shape ``shape`` and mean ``mtbf_h`` (scale
    ``mtbf_h / Gamma(1 + 1/shape)``; ``shape = 1`` is exponential, a Poisson process in running
    time); planned interruptions, if ``planned_every_h`` is given, arrive as an independent Poisson
    process with that mean spacing. Whichever comes first ends the run segment (restarts renew
    both). Saves are synchronous: within a segment the job computes ``checkpoint_every_min``, then
    stalls for a gamma-distributed time of mean ``stall_s`` (shape 8), after which the checkpoint is
    durable (``checkpoint_saved``); the interval between saves is compute plus stall. Restarts take
    a gamma-distributed time of mean ``restart_min`` (shape 4). Failure causes: hardware 78 %,
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
    for name, value in (("stall_s", stall_s), ("restart_min", restart_min)):
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
            stall_min = float(rng.gamma(8.0, stall_s / 8.0)) / 60.0 if stall_s > 0 else 0.0
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
    return pd.DataFrame(rows, columns=["timestamp", "event", "cause", "stall_s", "step"])
