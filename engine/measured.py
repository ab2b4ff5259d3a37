"""Measured goodput: where a training job's wall time went, from its step-level events table.

The input is a validated events table (the file format and its checks: ``ckptplan.files.logs``;
columns :data:`.fitting.EVENTS_TABLE_COLUMNS`). :func:`measure_split` partitions the observed wall
time, first row to last, into productive step time and badput buckets that add up to it exactly
(integer microseconds inside), and measures the planner's inputs from the same rows.

The partition
-------------
Each span between two consecutive rows is classified by the job's state after the first row and
the event of the second:

* ``startup``: from ``start`` to the end of its last ``startup_phase`` row. Without start-up rows,
  the span from ``start`` to the first step (whose row ends both the initialisation and that step)
  is split as ml-goodput-measurement splits a segment's first step: the baseline step time is the
  step, the excess is start-up; a launch without any step is start-up throughout. A log without
  any ``step`` row has no start-up bucket (its running time is work).
* ``save_blocking``: ``save_start`` to ``save_unblocked`` (or to ``checkpoint_saved`` for a
  synchronous save, or to the interruption that cut it); for a save logged by ``checkpoint_saved``
  alone, its ``checkpoint_stall_s`` taken out of the work just before it.
* ``restart_<phase>``: from the interruption, or the previous phase row, to the row that ends the
  phase; ``restart_unsplit``: restart time no phase row covers (to ``restart_complete`` from the
  last phase row, or from the interruption when there is none).
* ``idle``: before a later ``start`` after ``end``, and a job given up while down (``end`` after an
  interruption without restart).
* work: every other span while running (steps, and the time between a step and a save, a failure or
  the end). Work after the restore point of a run segment that an interruption ended is
  ``rework``: the restore point is the ``save_start`` of the last save that became durable in that
  segment (``checkpoint_saved`` of a save logged by that row alone, as in the fit), or the
  segment's start when none did (:mod:`.fitting` defines the same progress lost). That work is
  redone after the restart: the first execution is wasted, the last one is productive.
* ``async_slowdown``: throughput lost while background writes run: ``sum(d) - n * b`` over the
  ``n`` surviving steps that overlap a write window (``save_unblocked`` to ``checkpoint_saved``, or
  to whatever ends a write that never became durable), ``b`` the baseline step time; clipped at 0;
  taken out of the productive time.
* ``idle`` also takes the holes of a log with steps: running time between two consecutive rows longer
  than :data:`HOLE_STEPS` (5) baseline steps, beyond one baseline step (rows lost, a hang, a pause
  nobody logged; a note names each hole's rows, times, length and how far the step column advanced
  across it). A log never invents work where it has no rows; a step's time loses the hole before
  it, so a hole is no slow step either. Without step rows there is no step time to tell a hole from
  a long compute span, and none is looked for.
* productive: the remaining work. ``goodput = productive / wall``, also given as ``ettr``.

A step's time ``d`` runs from the row before it to its row, skipping a ``checkpoint_saved`` that
ends a background write (training ran on through it). Baseline ``b``: the median time of steps
that overlap no write window and are not the first of a launch or a restart (robust to hangs and
warm-up). For a write
of length ``W`` the model of :mod:`.waste` has steps at ``1 - s`` of their speed, so the steps
overlapping it take ``W s`` longer than at full speed, whatever the step length:
``async_slowdown_fraction = sum(excess) / sum(W)`` over durable writes. That uses the median as
the mean full-speed step time, valid for symmetric step-time noise; right-skewed step times (a
tail of slow steps) overstate the excess, which a note flags when the mean of the baseline steps
exceeds their median by more than 5 %.

Measured inputs (``measured``; ``None`` where the log cannot tell)
-----------------------------------------------------------------
``checkpoint_stall_min`` mean blocking part of the saves (:func:`.fitting.per_event_min`, the
estimator ``ckptplan fit`` uses too, and why the mean: the plan is linear in the stall per save; a
note names a right-skewed stall, mean over median by more than 5 %); ``async_write_min`` median
``save_unblocked`` to ``checkpoint_saved`` (0 when every timed save is synchronous);
``async_slowdown_fraction`` as above (0 without write windows); ``restart_min`` mean interruption
to ``restart_complete`` (:func:`.fitting.per_event_min` as well); ``restart_<phase>_min`` median of each phase (median, 10th and 90th
percentiles and count in ``restart_phases_min``); ``checkpoint_interval_min`` median compute time
between consecutive durable saves of a run segment (end of one save's blocking part to the start
of the next, less the throughput the first one's write cost: the model's ``T``); ``job_mtbf_h``
with ``job_mtbf_h_low``/``_high`` from :func:`.fitting.mtbf_estimate` (running time and unplanned
failures as :func:`.fitting.fit_events` counts them); ``failures``; ``baseline_step_s``;
``goodput``. A log that stops without ``end`` is closed at its last row, as the fit does.

Limits: one clock (rows from several hosts need synchronised clocks, or a skew moves time between
buckets; a clock stepping back is refused by the reader, naming both rows; steps of uneven length
are tolerated: the baseline is a median and a hole needs five of them); the job restores the last durable checkpoint (restoring an older one makes the real
rework larger than counted: the step numbers after the restart show it); steps are one process's
view (other ranks' stragglers are inside its step time); stand-alone ``checkpoint_stall_s`` values
are taken as logged; the baseline assumes a stationary step time outside writes (a step time that
drifts, e.g. with a sequence-length schedule, leaks into the excess).

References
----------
* Google, ml-goodput-measurement (github.com/AI-Hypercomputer/ml-goodput-measurement): goodput as
  productive step time over job time; badput buckets accelerator initialisation, training
  preparation, program start-up, data loading, checkpoint save and restore, wasted progress from
  disruption, infrastructure recovery. Here: start-up phases and ``startup`` cover the first three
  (data loading is inside steps), ``save_blocking`` and ``restart_load`` the checkpoint buckets,
  ``rework`` wasted progress, the restart phases infrastructure recovery.
* A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters",
  IEEE HPCA 2025 (arXiv:2410.21680): ETTR, "the ratio of productive runtime to available wallclock
  time of a job run"; its value under the planning model is ``1 - waste_fraction`` (:mod:`.waste`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .fitting import (ALL_EVENTS, PHASES, PLANNED_CAUSE, check_confidence, mtbf_estimate, per_event_min,
                      summarize_minutes)
from .spoken import duration

__all__ = ["BADPUT_BUCKETS", "HOLE_STEPS", "MEASURED_KEYS", "MeasuredSplit", "measure_split"]

BADPUT_BUCKETS: tuple[str, ...] = (
    "startup", "save_blocking", "async_slowdown", "rework", "restart_detection", "restart_reallocation",
    "restart_startup", "restart_init", "restart_load", "restart_warmup", "restart_unsplit", "idle")
"""Every badput bucket, always present in :attr:`MeasuredSplit.badput_h`."""
MEASURED_KEYS: tuple[str, ...] = (
    "checkpoint_stall_min", "async_write_min", "async_slowdown_fraction", "restart_min", "job_mtbf_h",
    "job_mtbf_h_low", "job_mtbf_h_high", "checkpoint_interval_min", "goodput", "failures", "baseline_step_s",
    "running_h", "interruptions", "saves", "steps", "rework_steps") + tuple(f"restart_{p}_min" for p in PHASES)
"""Keys of :attr:`MeasuredSplit.measured`."""

HOLE_STEPS = 5.0
"""A span of running time between two consecutive rows longer than this many baseline step times is a hole in the
log (rows lost, a hang, a pause nobody logged): the part beyond one baseline step is ``idle``, never work."""
_E = {name: i for i, name in enumerate(ALL_EVENTS)}
START, CKPT, INTR, RESTART, END, STEP, SAVE_START, UNBLOCKED, RPHASE, SPHASE = range(10)
IDLE, INIT_BARE, INIT_PHASED, WORK, BLOCK, PENDING, DOWN = range(7)
_CAT = {name: i + 1 for i, name in enumerate(BADPUT_BUCKETS)}  # 0 = work
_H = 3600e6


@dataclass(frozen=True)
class MeasuredSplit:
    """Where the wall time went (hours) and what the log measures; see the module docstring.

    ``badput_h`` has every key of :data:`BADPUT_BUCKETS`; ``productive_h + sum(badput_h) = wall_h``.
    ``restart_phases_min[phase]`` = ``{"median", "p10", "p90", "count"}`` (minutes; ``None`` when
    the phase was never logged). ``notes`` states every gap in the log and every assumption taken.
    """

    source: str
    confidence: float
    wall_h: float
    productive_h: float
    badput_h: dict[str, float]
    goodput: float
    ettr: float
    measured: dict[str, float | None]
    restart_phases_min: dict[str, dict[str, float | None]]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: finite floats or ``None`` (never NaN or infinity)."""
        def clean(o: Any) -> Any:
            if isinstance(o, dict):
                return {k: clean(v) for k, v in o.items()}
            if isinstance(o, (list, tuple)):
                return [clean(v) for v in o]
            if isinstance(o, (float, np.floating)):
                return float(o) if math.isfinite(o) else None
            return int(o) if isinstance(o, np.integer) else o
        return clean(asdict(self))


def _quantiles(v: np.ndarray) -> dict[str, float | None]:
    if not len(v):
        return {"median": None, "p10": None, "p90": None, "count": 0}
    p10, med, p90 = np.percentile(v, [10, 50, 90])
    return {"median": float(med), "p10": float(p10), "p90": float(p90), "count": int(len(v))}


def _codes(column: pd.Series, names: tuple[str, ...]) -> np.ndarray:
    """Index of each cell in ``names`` (-1 when not there): one hash pass, then a lookup per distinct value."""
    codes, uniques = pd.factorize(column)
    lookup = np.array([names.index(u) if u in names else -1 for u in uniques] + [-1], np.int64)
    return lookup[codes]


def _median(v: Any) -> float | None:
    v = np.asarray(v, float)
    return float(np.median(v)) if len(v) else None


def measure_split(events: pd.DataFrame, source: str = "events", confidence: float = 0.9) -> MeasuredSplit:
    """The measured split of a validated events table (module docstring). ``confidence`` is the level
    of the job-MTBF interval. Raises :class:`InputError` for a bad ``confidence``, a table that is
    not an events table, or one with a single instant (no wall time)."""
    c = check_confidence(confidence)
    t, ev, phase, stall, cause = _event_columns(events, source)
    notes: list[str] = []
    has_steps = bool((ev == STEP).any())
    walk = _walk(ev, cause, events, notes)
    L = np.diff(t)
    m, nxt = walk.mode_after[:-1], ev[1:]
    cat = _categories(m, nxt, phase, has_steps, notes)
    steps = _step_times(t, ev, walk, has_steps, notes)
    extra_startup, extra_block, legacy = _carved(L, cat, m, nxt, has_steps, steps.baseline_s, walk.saves, stall, notes)
    extra_idle = _holes(events, L, cat, extra_startup + extra_block, steps, notes)
    badput_us, productive, step_lost = _badput(t, L, cat, (extra_startup, extra_block, extra_idle), walk.segs, steps)
    wall = int(t[-1] - t[0])
    assert productive + sum(badput_us.values()) == wall
    saved = _save_figures(t, stall, walk, legacy, steps, notes)
    restart_min, phases_min = _restart_figures(t, ev, phase, walk.restarts, notes)
    running_us, failures, mtbf, low, high = _job_mtbf(t, walk.segs, c, notes)
    stalls = summarize_minutes(saved["blocking"])
    if stalls is not None and stalls.mean_min > 1.05 * stalls.median_min:
        notes.append(f"save stalls are right-skewed (mean {duration(stalls.mean_min)}, median {duration(stalls.median_min)}, "
                     f"90th percentile {duration(stalls.p90_min)}): checkpoint_stall_min is the mean, the expected "
                     "stall per save the plan needs")
    if not walk.saves:
        notes.append("no saves logged: checkpoint stall, write time and interval not measured")
    elif not saved["timed"]:
        notes.append("no save_start rows: the background write time of the saves is not measured")
    if not has_steps:
        notes.append("no step rows: running time between events is work (productive or rework); no baseline step "
                     "time, async slowdown or start-up split")
    goodput = productive / wall
    measured: dict[str, float | None] = {
        "checkpoint_stall_min": per_event_min(saved["blocking"]),
        "async_write_min": _median(saved["writes"]) if saved["timed"] else None,
        "async_slowdown_fraction": saved["slowdown"],
        "restart_min": per_event_min(restart_min),
        "job_mtbf_h": mtbf, "job_mtbf_h_low": low, "job_mtbf_h_high": high,
        "checkpoint_interval_min": _median(saved["gaps"]), "goodput": goodput, "failures": failures,
        "baseline_step_s": steps.baseline_s, "running_h": running_us / _H, "interruptions": len(walk.restarts),
        "saves": sum(1 for s in walk.saves if s.get("durable") is not None), "steps": int(len(steps.rows)),
        "rework_steps": int(step_lost.sum()),
        **{f"restart_{p}_min": phases_min[p]["median"] for p in PHASES}}
    return MeasuredSplit(source=source, confidence=c, wall_h=wall / _H, productive_h=productive / _H,
                         badput_h={k: v / _H for k, v in badput_us.items()}, goodput=goodput, ettr=goodput,
                         measured=measured, restart_phases_min=phases_min, notes=tuple(notes))


def _event_columns(events: pd.DataFrame, source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                                pd.Series]:
    """The events table checked and as arrays: (timestamps in microseconds, event codes, phase codes (-1: none),
    logged stalls in seconds, causes)."""
    need = ("row", "timestamp", "event", "cause", "checkpoint_stall_s", "step")
    if not isinstance(events, pd.DataFrame) or any(col not in events.columns for col in need):
        raise InputError("events", type(events).__name__ if not isinstance(events, pd.DataFrame)
                         else list(events.columns), f"must be an events table with columns {', '.join(need)}")
    n = len(events)
    t = pd.DatetimeIndex(events["timestamp"]).as_unit("us").asi8.astype(np.int64)
    if n < 2 or t[-1] <= t[0]:
        raise InputError("events", source, "spans no wall time (fewer than two instants): nothing to split")
    ev = _codes(events["event"], ALL_EVENTS)
    if (ev < 0).any():
        raise InputError("events", events["event"].iloc[int(np.argmax(ev < 0))], "unknown event: read the log with "
                         "ckptplan.files.logs.read_log first")
    phase = _codes(events["phase"], PHASES) if "phase" in events.columns else np.full(n, -1)
    return t, ev, phase, events["checkpoint_stall_s"].to_numpy(float), events["cause"]


@dataclass
class _Walk:
    """What the walk over the lifecycle, save and phase rows finds (:func:`_walk`)."""

    mode_after: np.ndarray    # the mode after every row (a step continues the mode before it: work or a pending write)
    segs: list                # run segments: [start row, end row, ended_by, planned, capture row]
    saves: list               # dicts: start, unblock, durable rows, seg, legacy (checkpoint_saved alone), cut
    windows: list             # (save_unblocked row, row that ends the write, durable)
    restarts: list            # (interruption row, restart_complete row or None)
    abandoned: int            # saves whose write never became durable


def _walk(ev: np.ndarray, cause: pd.Series, events: pd.DataFrame, notes: list[str]) -> _Walk:
    """The sequence, over lifecycle, save and phase rows (steps only end an initialisation), closed at the log's
    end (a note says how when it stops while the job is down or running); then the mode after every row."""
    n = len(ev)
    is_step = ev == STEP
    ctrl = np.flatnonzero(~is_step)
    mode_ctrl, walk, mode, save = _walk_rows(ev, cause, ctrl)
    if save is not None and save.get("unblock") is not None:
        walk.windows.append((save["unblock"], n - 1, False))
        walk.saves.append(save)
        walk.abandoned += 1
    if mode == DOWN:
        last = int(events["row"].iloc[walk.restarts[-1][0]])
        notes.append(f"the log stops while the job is down (after row {last}): "
                     "that restart has no restart_complete, its time so far is counted by phase")
    elif walk.segs and walk.segs[-1][1] is None:
        walk.segs[-1][1] = n - 1
        notes.append(f"the log stops while the job is running: the last run segment is closed at the last row "
                     f"(row {int(events['row'].iloc[-1])}); add an 'end' row to count running time after it")
    # mode after every row: a step continues the mode before it (work, or a pending write)
    last_ctrl = np.searchsorted(ctrl, np.arange(n), "right") - 1
    mode_after = np.where(last_ctrl >= 0, mode_ctrl[np.maximum(last_ctrl, 0)], IDLE)
    mode_after[is_step & (mode_after != PENDING)] = WORK
    # a control row after steps that ended an initialisation leaves the mode the loop gave it
    walk.mode_after = mode_after
    return walk


def _walk_rows(ev: np.ndarray, cause: pd.Series, ctrl: np.ndarray) -> tuple[np.ndarray, _Walk, int, Any]:
    """The walk itself: (the mode after each control row, what it found, the mode and the open save at the end)."""
    steps_upto = np.cumsum(ev == STEP)
    mode_ctrl = np.zeros(len(ctrl), np.int64)
    w = _Walk(np.zeros(0, np.int64), [], [], [], [], 0)
    mode, seg, save, prev = IDLE, None, None, -1
    for k, i in enumerate(ctrl.tolist()):
        e = ev[i]
        if mode in (INIT_BARE, INIT_PHASED) and steps_upto[i] > (steps_upto[prev] if prev >= 0 else 0):
            mode = WORK
        prev = i
        if e != CKPT and save is not None and save.get("unblock") is not None and e != UNBLOCKED:
            w.windows.append((save["unblock"], i, False))   # a pending write that never became durable
            w.saves.append(save)
            w.abandoned += 1
            save = None
        if e == START:
            mode, seg = INIT_BARE, [i, None, "log_end", False, i]
            w.segs.append(seg)
        elif e == SPHASE:
            mode = INIT_PHASED
        elif e == SAVE_START:
            save = {"start": i, "unblock": None, "seg": seg}
            mode = BLOCK
        elif e == UNBLOCKED:
            save["unblock"] = i
            mode = PENDING
        elif e == CKPT:
            if save is None:
                save = {"start": None, "unblock": None, "legacy": True, "seg": seg}
            elif save["unblock"] is not None:
                w.windows.append((save["unblock"], i, True))
            save["durable"] = i
            w.saves.append(save)
            seg[4] = save["start"] if save["start"] is not None else i
            save, mode = None, WORK
        elif e == INTR:
            if save is not None and save["unblock"] is None:
                w.saves.append({**save, "cut": True})   # blocking part cut by the failure
            save = None
            seg[1], seg[2], seg[3] = i, "interruption", str(cause.iloc[i]).strip().lower() == PLANNED_CAUSE
            w.restarts.append((i, None))
            mode = DOWN
        elif e == RESTART:
            w.restarts[-1] = (w.restarts[-1][0], i)
            mode, seg = WORK, [i, None, "log_end", False, i]
            w.segs.append(seg)
        elif e == END:
            if mode != DOWN and seg is not None:
                seg[1], seg[2] = i, "end"
            save, mode = None, IDLE
        mode_ctrl[k] = mode
    return mode_ctrl, w, mode, save


def _categories(m: np.ndarray, nxt: np.ndarray, phase: np.ndarray, has_steps: bool, notes: list[str]) -> np.ndarray:
    """The bucket of each interval between two rows (0: work), from the mode after its first row ``m`` and the
    event that ends it ``nxt``."""
    cat = np.full(len(m), _CAT["idle"])
    work = (m == WORK) | (m == PENDING) | (m == INIT_PHASED) & (nxt != SPHASE) | (m == INIT_BARE) & (not has_steps)
    cat[work] = 0
    cat[(m == BLOCK)] = _CAT["save_blocking"]
    cat[(m == INIT_PHASED) & (nxt == SPHASE) | (m == INIT_BARE) & has_steps] = _CAT["startup"]
    down = m == DOWN
    for p, name in enumerate(PHASES):
        cat[down & (nxt == RPHASE) & (phase[1:] == p)] = _CAT[f"restart_{name}"]
    cat[down & (nxt == RESTART)] = _CAT["restart_unsplit"]
    if (down & (nxt == END)).any():
        notes.append(f"{int((down & (nxt == END)).sum())} job(s) ended while down (no restart): that down time is idle")
    return cat


@dataclass
class _Steps:
    """Step rows and their times (:func:`_step_times`)."""

    rows: np.ndarray          # the step rows
    from_rows: np.ndarray     # the row each step's time starts at (the boundary before it)
    d_us: np.ndarray          # each step's time since the boundary before it (microseconds; holes taken out)
    in_window: np.ndarray     # each step inside a write window
    window_of: np.ndarray     # per row: the write window it is in (-1: none)
    baseline_s: float | None  # median step time outside write windows and launches


def _step_times(t: np.ndarray, ev: np.ndarray, walk: _Walk, has_steps: bool, notes: list[str]) -> _Steps:
    """Step times, which steps run during a write, and the baseline step time (notes when there is none, or
    when step times are right-skewed)."""
    n = len(t)
    mode_after = walk.mode_after
    boundary = ~((ev == CKPT) & (np.concatenate(([IDLE], mode_after[:-1])) == PENDING))
    lastb = np.maximum.accumulate(np.where(boundary, np.arange(n), -1))
    srows = np.flatnonzero(ev == STEP)
    from_row = lastb[np.maximum(srows - 1, 0)]
    d_us = t[srows] - t[from_row]
    first = np.isin(ev[from_row], (START, RESTART, SPHASE))
    in_win = np.zeros(n + 1, np.int64)
    wid = np.full(n, -1)
    for w, (u, close, durable) in enumerate(walk.windows):
        stop = close + 1 + (durable and close + 1 < n and ev[close + 1] == STEP)
        in_win[u + 1] += 1
        in_win[stop] -= 1
        wid[u + 1:stop] = w
    in_win = np.cumsum(in_win)[:n] > 0
    step_in_win = in_win[srows]
    base = d_us[~first & ~step_in_win] / 1e6
    b = float(np.median(base)) if len(base) else None
    if b is None and has_steps:
        notes.append("no step outside write windows and launches: no baseline step time, so no async slowdown "
                     "and no split of the first step after start")
    elif b is not None and base.mean() > 1.05 * b and step_in_win.any():
        notes.append(f"step times are right-skewed (mean {base.mean():.4g} s, median {b:.4g} s outside writes): the "
                     "async slowdown, measured against the median, may be overstated")
    return _Steps(srows, from_row, d_us, step_in_win, wid, b)


def _carved(L: np.ndarray, cat: np.ndarray, m: np.ndarray, nxt: np.ndarray, has_steps: bool, b: float | None,
            saves: list, stall: np.ndarray, notes: list[str]) -> tuple[np.ndarray, np.ndarray, list]:
    """What is carved out of work intervals: (start-up time of a launch's first step without start-up rows (that
    interval becomes work, in place in ``cat``), blocking time of saves logged by checkpoint_saved alone, those
    saves)."""
    # first step of a launch without start-up rows: baseline is the step, the rest start-up
    extra_startup = np.zeros(len(L), np.int64)
    bare_first = (m == INIT_BARE) & has_steps & (nxt == STEP)
    if bare_first.any():
        keep = np.minimum(L[bare_first], int(round(b * 1e6))) if b is not None else 0
        extra_startup[bare_first] = L[bare_first] - keep
        cat[bare_first] = 0
        notes.append(f"{int(bare_first.sum())} launch(es) without startup_phase rows: start-up is the time from start "
                     "to the first step less one baseline step (ml-goodput-measurement's first-step rule)")
    # stand-alone checkpoint_saved rows: the logged stall is taken out of the work just before
    extra_block = np.zeros(len(L), np.int64)
    legacy = [s for s in saves if s.get("legacy")]
    carved = 0
    for s in legacy:
        i = s["durable"]
        if i > 0 and np.isfinite(stall[i]) and cat[i - 1] == 0:
            want = int(round(stall[i] * 1e6))
            extra_block[i - 1] = min(want, L[i - 1] - extra_startup[i - 1])
            carved += want > extra_block[i - 1]
    if legacy:
        given = sum(np.isfinite(stall[s["durable"]]) for s in legacy)
        notes.append(f"{len(legacy)} save(s) logged by checkpoint_saved alone: blocking time from checkpoint_stall_s "
                     f"({given} of them give it; the others count as work, their write time unknown)")
    if carved:
        notes.append(f"{carved} checkpoint_stall_s value(s) exceed the time since the row before: capped at it")
    return extra_startup, extra_block, legacy


def _holes(events: pd.DataFrame, L: np.ndarray, cat: np.ndarray, carved: np.ndarray, steps: _Steps,
           notes: list[str]) -> np.ndarray:
    """Per interval, the running time of a hole counted idle (microseconds): the work beyond one baseline step in
    an interval longer than :data:`HOLE_STEPS` baseline steps; each hole named in a note (rows, time, length, the
    steps the rows say passed). The steps' times lose it too (a step after a hole is not a slow step). Without a
    baseline step time (no step rows) nothing can tell a hole from work: none is found."""
    idle = np.zeros(len(L), np.int64)
    b = steps.baseline_s
    if b is None or not len(L):
        return idle
    b_us = max(1, int(round(b * 1e6)))
    work = np.where(cat == 0, L - carved, 0)
    holes = np.flatnonzero(work > HOLE_STEPS * b_us)
    if not len(holes):
        return idle
    idle[holes] = work[holes] - b_us
    cum = np.concatenate(([0], np.cumsum(idle)))
    steps.d_us = steps.d_us - (cum[steps.rows] - cum[steps.from_rows])  # a step's time spans from_rows .. its row
    rows, when, step = events["row"].to_numpy(), events["timestamp"], events["step"].to_numpy(float)
    shown = []
    for i in holes[:3]:
        advance = step[i + 1] - step[i]
        said = f"; the step column advances by {advance:.0f}" if np.isfinite(advance) and advance > 1 else ""
        shown.append(f"row {int(rows[i])} ({when.iloc[i].isoformat()}) to row {int(rows[i + 1])} "
                     f"({when.iloc[i + 1].isoformat()}): {L[i] / _H:.4g} h{said}")
    more = f"; and {len(holes) - 3} more" if len(holes) > 3 else ""
    notes.append(f"{len(holes)} hole(s) in the log: running time without a row for over {HOLE_STEPS:g} baseline "
                 f"steps ({b:.4g} s), counted idle beyond one step ({idle.sum() / _H:.4g} h in all), never productive: "
                 + "; ".join(shown) + more)
    return idle


def _badput(t: np.ndarray, L: np.ndarray, cat: np.ndarray, carved: tuple[np.ndarray, np.ndarray, np.ndarray],
            segs: list, steps: _Steps) -> tuple[dict[str, int], int, np.ndarray]:
    """(badput by bucket, productive time, in microseconds; whether each step was lost): rework is the work after
    the restore point of the segments an interruption ended, the async slowdown the surviving steps' excess over
    the baseline inside write windows."""
    extra_startup, extra_block, extra_idle = carved
    work_len = np.where(cat == 0, L - extra_startup - extra_block - extra_idle, 0)
    lost_mark = np.zeros(len(t), np.int64)
    for s0, end, ended_by, _, capture in segs:
        if ended_by == "interruption":
            lost_mark[capture] += 1
            lost_mark[end] -= 1
    lost = np.cumsum(lost_mark)[:-1] > 0
    rework_us = int(work_len[lost].sum())
    surviving = int(work_len[~lost].sum())
    step_lost = lost[steps.rows - 1]
    async_us = 0
    b = steps.baseline_s
    if b is not None and steps.in_window.any():
        sel = steps.in_window & ~step_lost
        async_us = int(round(max(0.0, float(steps.d_us[sel].sum()) / 1e6 - b * int(sel.sum())) * 1e6))
        async_us = min(async_us, surviving)
    productive = surviving - async_us
    badput_us = {name: int(L[cat == _CAT[name]].sum()) for name in BADPUT_BUCKETS}
    badput_us["startup"] += int(extra_startup.sum())
    badput_us["save_blocking"] += int(extra_block.sum())
    badput_us["idle"] += int(extra_idle.sum())
    badput_us["rework"], badput_us["async_slowdown"] = rework_us, async_us
    return badput_us, productive, step_lost


def _save_figures(t: np.ndarray, stall: np.ndarray, walk: _Walk, legacy: list, steps: _Steps,
                  notes: list[str]) -> dict[str, Any]:
    """What the saves measure: ``blocking`` and ``writes`` (minutes, per save), ``slowdown`` (the async slowdown,
    None when not measured), ``gaps`` (compute between saves, minutes) and ``timed`` (saves with save_start)."""
    saves, windows = walk.saves, walk.windows
    timed = [s for s in saves if s.get("start") is not None and not s.get("cut")]
    blocking = [(t[s["unblock"] if s["unblock"] is not None else s["durable"]] - t[s["start"]]) / 60e6 for s in timed]
    blocking += [stall[s["durable"]] / 60 for s in legacy if np.isfinite(stall[s["durable"]])]
    writes = [(t[s["durable"]] - t[s["unblock"]]) / 60e6 if s["unblock"] is not None else 0.0 for s in timed
              if s.get("durable") is not None]
    excess = _window_excess(walk, steps)
    s_hat = _slowdown(t, windows, excess, notes)
    if walk.abandoned:
        notes.append(f"{walk.abandoned} save(s) never became durable (a new save, a failure or the log's end came "
                     "first): their steps count in async_slowdown but not in the measured write time")
    gaps = []
    by_seg: dict[int, list[dict[str, Any]]] = {}
    for s in saves:
        if s.get("durable") is not None and s["seg"] is not None:
            by_seg.setdefault(id(s["seg"]), []).append(s)
    for group in by_seg.values():
        for a, z in zip(group, group[1:]):
            end_a = a["unblock"] if a["unblock"] is not None else a["durable"]
            begin_z = t[z["start"]] if z["start"] is not None else t[z["durable"]] - (
                int(round(stall[z["durable"]] * 1e6)) if np.isfinite(stall[z["durable"]]) else 0)
            lost_a = (excess.get(a["unblock"]) or 0.0) if a["unblock"] is not None else 0.0
            gaps.append(((begin_z - t[end_a]) / 1e6 - lost_a) / 60)
    return {"blocking": blocking, "writes": writes, "slowdown": s_hat, "gaps": gaps, "timed": timed}


def _window_excess(walk: _Walk, steps: _Steps) -> dict[int, float | None]:
    """Per write window (keyed by its save_unblocked row): its steps' time beyond the baseline, in seconds (None:
    no step in it); empty without a baseline or windows."""
    b, windows = steps.baseline_s, walk.windows
    if b is None or not windows:
        return {}
    w_of = steps.window_of[steps.rows]
    inside = w_of >= 0
    total = np.bincount(w_of[inside], weights=steps.d_us[inside], minlength=len(windows)) / 1e6
    count = np.bincount(w_of[inside], minlength=len(windows))
    return {u: float(total[w] - b * count[w]) if count[w] else None for w, (u, _, _) in enumerate(windows)}


def _slowdown(t: np.ndarray, windows: list, excess: dict[int, float | None], notes: list[str]) -> float | None:
    """The async slowdown: the excess step time over the durable write windows' length (0 without a durable
    window; None when none of them holds a step to measure; clipped to [0, 0.99] against step-time noise)."""
    durable_w = [(u, close) for u, close, dur in windows if dur]
    s_hat: float | None = 0.0
    if durable_w:
        pairs = [(excess.get(u), (t[close] - t[u]) / 1e6) for u, close in durable_w]
        known = [(x, w) for x, w in pairs if x is not None]
        if not known:
            s_hat = None
            notes.append("write windows hold no steps or no baseline step time: async slowdown not measured")
        else:
            total_w = sum(w for _, w in known)
            s_hat = float(sum(x for x, _ in known) / total_w) if total_w > 0 else 0.0
            if not 0 <= s_hat <= 0.99:
                notes.append(f"measured async slowdown {s_hat:.4g} clipped to [0, 0.99] (step-time noise)")
                s_hat = min(0.99, max(0.0, s_hat))
    return s_hat


def _restart_figures(t: np.ndarray, ev: np.ndarray, phase: np.ndarray, restarts: list, notes: list[str]
                     ) -> tuple[list[float], dict[str, dict[str, float | None]]]:
    """(each completed restart's time in minutes, each restart phase's quantiles in minutes)."""
    restart_min = [(t[z] - t[a]) / 60e6 for a, z in restarts if z is not None]
    phases_min = {}
    prow = np.flatnonzero(ev == RPHASE)
    for p, name in enumerate(PHASES):
        r = prow[phase[prow] == p]
        phases_min[name] = _quantiles((t[r] - t[r - 1]) / 60e6)
    no_phase = sum(1 for a, z in restarts if z is not None and not ((prow > a) & (prow < z)).any())
    if no_phase:
        notes.append(f"{no_phase} restart(s) without restart_phase rows: their time is restart_unsplit")
    return restart_min, phases_min


def _job_mtbf(t: np.ndarray, segs: list, c: float, notes: list[str]
              ) -> tuple[int, int, float | None, float | None, float | None]:
    """(running time in microseconds, unplanned failures, the job MTBF and its interval in hours; None without
    running time)."""
    running_us = sum(int(t[z] - t[a]) for a, z, *_ in segs if z is not None)
    failures = sum(1 for sg in segs if sg[2] == "interruption" and not sg[3])
    low = high = mtbf = None
    if running_us > 0:
        est = mtbf_estimate(running_us / _H, failures, c)
        mtbf, low, high = est.mtbf_h, est.lower_h, est.upper_h
        if failures == 0:
            notes.append(est.note)
    else:
        notes.append("no running time: job MTBF not estimated")
    return running_us, failures, mtbf, low, high
