"""Finite jobs: exact expected wall time and best segment count for exponential failures.

:func:`engine.waste.expected_wall_time` is a long-run (steady-state) figure: it scales the cost of
one full interval by ``work/T``. A real job is finite: it has ``n = ceil(work/T)`` segments, the
last one possibly shorter, no save after the final step (unless asked), and its first segment
starts with no background write pending. This module gives the exact expectation of that finite
job (no randomness); :mod:`engine.montecarlo` simulates the same model under any failure law, and
:mod:`engine.deadline` answers a scenario's deadline questions with both.

Symbols (one time unit of the caller's choosing, as in :mod:`engine.waste`):

* ``work`` useful compute the job needs; ``T`` compute between saves; ``C`` blocking stall per
  save; ``M`` mean time between failures; ``R`` restart time; ``W`` background write time of an
  asynchronous save, during which training runs at ``1 - slowdown`` of its speed (``W = 0``: a
  synchronous save). ``a = W (1 - slowdown)`` is the compute done while a write runs.

The model (the same one :func:`engine.waste.expected_wall_time` assumes, made finite)
-----------------------------------------------------------------------------------------
* Segments ``T_1 .. T_n``: ``n = ceil(work/T)``, all ``T`` except ``T_n = work - (n-1) T``. After
  each segment a save blocks training for ``C``; the save after the last segment happens only if
  ``final_save`` (default ``False``: the job is done when its last step is).
* Asynchronous saves (``W > 0``): after the stall, a background write runs for ``W`` while
  training continues at ``1 - slowdown`` of its speed; the checkpoint is restorable (durable) only
  when the write ends. The write must be durable before the next save starts:
  ``W (1 - slowdown) <= T`` (else :class:`InputError`). A short last segment may finish while the
  previous write still runs: without a final save the job simply ends (that checkpoint is never
  needed); with a final save the job idles until the previous write is durable, then stalls ``C``
  and waits ``W`` for its own write. After a restart no write is pending.
* A failure at any moment (compute, stall, write, restart) loses everything since the last
  durable checkpoint; a restart of length ``R`` follows, and a failure during the restart starts
  it again. Compute then resumes from the last durable checkpoint.
* Failures form a renewal process in wall time, starting at age 0 with the job: after each
  failure a fresh inter-failure time is drawn, with mean ``M``. The exact formulas of this module
  assume exponential (memoryless) gaps; :class:`engine.montecarlo.FailureLaw` gives the others.

Windows (how both the exact formula and the simulator see the model)
--------------------------------------------------------------------
Between two milestones (durable checkpoints, then the job's end) the job runs a *window*. From a
milestone reached without failure ("flow") the next one is ``f`` away; from the same milestone just
after a restart ("clean", or the job's start) it is ``c`` away, because no write is pending and the
next write must run in full. For a full segment ``c = T + C + W`` and ``f = T + C + W*slowdown``;
the last window (see :func:`failure_free_wall_time` for its lengths) ends the job. A failure inside
a window rolls back to its starting milestone, so the job is a chain of windows, each retried
clean until it succeeds.

References
----------
* [Daly06] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
  dumps", FGCS 22(3), 303-312, 2006: the renewal argument behind the exponential expectation.
* [Bougeret11] M. Bougeret et al., "Checkpointing strategies for parallel jobs", SC'11: exact
  expectations and optimal segment counts for finite jobs under exponential failures.
* [Wald45] A. Wald, "Sequential tests of statistical hypotheses", Ann. Math. Stat. 16(2), 1945:
  Wald's identity, ``E[failures] = E[wall time] / M`` for Poisson failures and a stopping time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import waste
from .errors import NEVER_FINISHES, InputError
from .gate import as_float_array, check_finite_result, prepare

#: relative tolerance when counting segments: work/T = 3 + 1e-15 is 3 segments, not 4
SEGMENT_RTOL = 1e-14
#: best_segment_count searches n up to this (the segment count stays exact with SEGMENT_RTOL)
MAX_SEGMENTS = 1e12

__all__ = [
    "MAX_SEGMENTS",
    "SEGMENT_RTOL",
    "check_final_save",
    "job_geometry",
    "prepare_job",
    "rollback_sum",
    "segment_count",
    "failure_free_wall_time",
    "finite_expected_wall_time",
    "finite_expected_rollbacks",
    "best_segment_count",
]


# ----------------------------------------------------------------------------- job geometry

def job_geometry(work, T, C, W, s, final_save: bool) -> dict[str, np.ndarray]:
    """Segment count and window lengths of the finite job (arrays already validated/broadcast).

    Returns ``n`` segments, ``last`` = index of the window that ends the job (windows
    ``0 .. last-1`` start at durable checkpoints 0..last-1 and reach the next one), and the window
    lengths ``full_clean``, ``full_flow`` (full segments) and ``last_clean``, ``last_flow``.
    """
    # an overflow is inf here (a subnormal T from a subnormal work divides by 0): every caller checks it
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        n = np.maximum(np.ceil(work / T * (1.0 - SEGMENT_RTOL)), 1.0)
        T_n = np.minimum(work - (n - 1.0) * T, T)
        a = W * (1.0 - s)
        full_clean = T + C + W
        full_flow = T + C + W * s
        if final_save:
            skip = np.zeros(np.shape(n), dtype=bool)
            last_clean = T_n + C + W
            last_flow = np.maximum(T_n - a, 0.0) + C + W
        else:
            # the job ends before the write of checkpoint n-1 is durable: that checkpoint never counts,
            # and the last window runs from checkpoint n-2 to the end
            skip = (W > 0) & (T_n < a) & (n >= 2)
            tail = T_n / (1.0 - s)  # wall time of the last segment at reduced speed during the write
            last_clean = np.where(skip, T + C + tail, T_n)
            last_flow = np.where(skip, T - a + C + tail, T_n - a)
        return {"n": n, "last": n - 1.0 - skip, "T_n": T_n, "full_clean": full_clean, "full_flow": full_flow,
                "last_clean": last_clean, "last_flow": last_flow}


_ABSENT = object()  # "no such argument" (None is a value the caller may pass, and is refused)


def prepare_job(work, T, C, W, s, M=_ABSENT, R=_ABSENT):
    """Validate and broadcast a job (with ``M`` / ``R`` when given); checks the async constraint and
    that the segment count ``work/T`` stays countable (at most :data:`MAX_SEGMENTS`).

    Returns the arrays in the order work, T, C, [M], [R], W, slowdown and the result wrapper.
    """
    specs = [("work", work, "positive"), ("T", T, "positive"), ("C", C, "nonnegative")]
    specs += [("M", M, "positive")] if M is not _ABSENT else []
    specs += [("R", R, "nonnegative")] if R is not _ABSENT else []
    specs += [("W", W, "nonnegative"), ("slowdown", s, "fraction")]
    arrays, wrap = prepare(*specs)
    waste.check_async_write(arrays[1], arrays[-2], arrays[-1])
    _check_segments(arrays[0], arrays[1])
    return arrays, wrap


def _check_segments(work_, T_) -> None:
    """Refuse jobs of more than :data:`MAX_SEGMENTS` segments: beyond it ``work - (n-1) T`` (the last
    segment) is lost to rounding, and the finite job is the long-run one anyway."""
    with np.errstate(over="ignore"):
        n = work_ / T_
    bad = ~(n <= MAX_SEGMENTS)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if np.ndim(bad) else None
        T_at = float(np.broadcast_to(T_, np.shape(bad))[idx or ()])
        raise InputError("T", T_at, f"work / T = {float(np.asarray(n)[idx or ()]):.6g} segments is above the limit of "
                         f"{MAX_SEGMENTS:.0e}: the finite job cannot be counted segment by segment (use the long-run "
                         "model, engine.expected_wall_time)", idx)


def check_final_save(final_save: Any) -> bool:
    """``final_save`` as a bool; :class:`InputError` unless it is one."""
    if not isinstance(final_save, (bool, np.bool_)):
        raise InputError("final_save", final_save, "must be True or False")
    return bool(final_save)


def segment_count(work, T):
    """Number of segments ``n = ceil(work / T)`` (last one ``work - (n-1) T``, possibly shorter).

    A relative tolerance of 1e-14 absorbs rounding (``work / (work/3)`` is 3 segments, not 4).
    """
    (work_, T_), wrap = prepare(("work", work, "positive"), ("T", T, "positive"))
    _check_segments(work_, T_)
    return wrap(np.maximum(np.ceil(work_ / T_ * (1.0 - SEGMENT_RTOL)), 1.0))


def failure_free_wall_time(work, T, C, W=0.0, slowdown=0.0, final_save=False):
    """Wall time of the finite job when nothing fails: the least wall time it can take.

    ``first + (last - 1) * f + last_flow`` over the windows of the model (module notes), i.e.
    ``work + (n - 1)(C + W*slowdown)`` for synchronous or full-segment async jobs without a final
    save, plus the final save (``C + W`` idle) when ``final_save``. Lengths of the last window with
    ``a = W (1 - slowdown)`` and ``T_n`` the last segment:

    * no final save: clean ``T_n``, flow ``T_n - a``; if ``T_n < a`` (the job ends while the write
      of checkpoint ``n-1`` is still running) the last window starts at checkpoint ``n-2``: clean
      ``T + C + T_n/(1 - slowdown)``, flow ``T - a + C + T_n/(1 - slowdown)``;
    * final save: clean ``T_n + C + W``, flow ``max(T_n - a, 0) + C + W``.
    """
    (work_, T_, C_, W_, s_), wrap = prepare_job(work, T, C, W, slowdown)
    g = job_geometry(work_, T_, C_, W_, s_, check_final_save(final_save))
    first = np.where(g["last"] == 0, g["last_clean"], g["full_clean"])
    with np.errstate(over="ignore", invalid="ignore"):
        out = first + np.maximum(g["last"] - 1.0, 0.0) * g["full_flow"] + np.where(g["last"] >= 1, g["last_flow"], 0.0)
    check_finite_result("C", out, "the failure-free wall time work + (n - 1)(C + W*slowdown) overflows",
                        {"C": C_, "W": W_, "work": work_, "T": T_})
    return wrap(out)


def _check_overflow(result: np.ndarray, M_: np.ndarray, why: str) -> None:
    """Raise :class:`InputError` on ``M`` (its value, position) where ``result`` is not finite."""
    bad = ~np.isfinite(result)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
        raise InputError("M", float(np.broadcast_to(M_, bad.shape)[idx]), why, tuple(int(i) for i in idx) or None)


def rollback_sum(g: dict[str, np.ndarray], M_: np.ndarray) -> np.ndarray:
    """Expected number of failures outside restarts (exponential): the bracket of the formula."""
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.where(g["last"] == 0, np.expm1(g["last_clean"] / M_), np.expm1(g["full_clean"] / M_))
        mid = np.where(g["last"] > 1, (g["last"] - 1.0) * np.exp(g["full_clean"] / M_) * -np.expm1(-g["full_flow"] / M_), 0.0)
        end = np.where(g["last"] >= 1, np.exp(g["last_clean"] / M_) * -np.expm1(-g["last_flow"] / M_), 0.0)
        return first + mid + end


def finite_expected_rollbacks(work, T, C, M, W=0.0, slowdown=0.0, final_save=False):
    """Expected number of failures that roll the job back (failures during restarts excluded).

    The bracket of :func:`finite_expected_wall_time`: ``E[wall] = M exp(R/M) * rollbacks``. The
    expected number of *all* failures, restarts included, is ``E[wall] / M`` [Wald45] (each
    rollback is followed by ``exp(R/M) - 1`` failed restart attempts on average).
    Exponential failures only; assumptions as :func:`finite_expected_wall_time`.
    """
    (work_, T_, C_, M_, W_, s_), wrap = prepare_job(work, T, C, W, slowdown, M)
    g = job_geometry(work_, T_, C_, W_, s_, check_final_save(final_save))
    out = rollback_sum(g, M_)
    _check_overflow(out, M_, "the expected number of failures overflows: (T + C + W)/M is too large")
    return wrap(out)


def finite_expected_wall_time(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, final_save=False, D=0.0):
    """Expected wall time of the finite job, exact for exponential failures (any ``work``, sync or async).

    With the windows of the model (module notes; lengths in :func:`failure_free_wall_time`), the
    first window starting clean (length ``c_0``) and windows ``1 .. K`` starting in flow (clean
    length ``c_k``, flow length ``f_k``)::

        E = M * exp(R/M) * [ (exp(c_0/M) - 1) + sum_{k=1..K} exp(c_k/M) * (1 - exp(-f_k/M)) ]

    Synchronously (``c = f = L_i``, ``L_i = T_i + C`` for saved segments, ``L_n = T_n`` without a
    final save) this is ``M exp(R/M) sum_i (exp(L_i/M) - 1)``. Asynchronously with a final save and
    ``work = n T``: ``M exp(R/M) [(exp(L0/M) - 1) + (n-1) exp(L0/M)(1 - exp(-P/M))]``,
    ``L0 = T + C + W``, ``P = T + C + W*slowdown``: it exceeds the long-run
    :func:`engine.waste.expected_wall_time` by exactly ``M exp(R/M)(exp(W (1-slowdown)/M) - 1)``
    because the first segment starts with no write pending (its window is ``L0``, not ``P``: the
    first checkpoint is exposed for the whole write); with ``W = 0`` the two agree.

    Derivation (renewal over milestones [Daly06; Bougeret11]): a window of length ``c`` started
    clean takes ``(exp(c/M) - 1)(M + M(exp(R/M) - 1))`` on average (each failure costs the time to
    it, ``M`` per attempt in expectation, plus a restart that is itself retried on failure,
    ``M(exp(R/M) - 1)``). A window started in flow succeeds with probability ``exp(-f/M)``; on
    failure (after ``M(1 - exp(-f/M))`` expected time) it pays a restart and a clean window ``c`` to
    the same milestone; summing gives ``M exp(R/M) exp(c/M)(1 - exp(-f/M))``.

    Exact for every case of the model: ragged last segment, with or without final save, sync or
    async. Assumes exponential (memoryless) failures, striking during compute, saves, writes and
    restarts alike; ``W (1 - slowdown) <= T``. For other failure laws use :func:`simulate`.

    ``D``: a downtime after every failure during which the job cannot fail (waiting for a node;
    :func:`engine.waste.expected_wall_time`): the leading ``M`` becomes ``M + D`` (Wald: the exposed
    run is unchanged and each of its ``exposed / M`` failures adds ``D``).
    """
    (work_, T_, C_, M_, R_, W_, s_), wrap = prepare_job(work, T, C, W, slowdown, M, R)
    D_ = as_float_array("D", D, "nonnegative")
    g = job_geometry(work_, T_, C_, W_, s_, check_final_save(final_save))
    with np.errstate(over="ignore", invalid="ignore"):
        total = (M_ + D_) * np.exp(R_ / M_) * rollback_sum(g, M_)
    _check_overflow(total, M_, f"{NEVER_FINISHES} ((T + C + W + R)/M is so large that the expected wall "
                    "time overflows)")
    return wrap(total)


def best_segment_count(work, C, M, R=0.0):
    """Number of equal segments ``n`` minimising :func:`finite_expected_wall_time` (sync, no final save).

    With ``T = work/n``, ``b = work/M``, ``c = C/M`` and ``A = exp(c)``::

        E(n) = M exp(R/M) g(n),   g(n) = (n - 1)(exp(c + b/n) - 1) + exp(b/n) - 1

    ``R`` scales ``E`` and does not move the optimum. Over real ``n >= 1``,
    ``g''(n) = exp(b/n) (b/n^3) [A b - (A - 1)(b/n + 2)]``: the bracket increases with ``n``, so
    ``g`` is concave below ``n_s = b / (A b/(A - 1) - 2)`` and convex above (concave everywhere when
    ``A b <= 2 (A - 1)``). The integer minimum is therefore ``1``, ``floor(n_s)``, or the first
    ``n >= ceil(n_s)`` with ``g(n + 1) >= g(n)``, found by bisection on that difference (the convex
    part; an upper bound follows from ``g(n) >= n (A - 1) + A b - e (A - 1)`` for ``n >= b``).
    Exact for exponential failures, up to float rounding of ``g`` (ties within ~1e-15 relative may
    go either way); searched up to 10^12 segments. Needs ``C > 0`` (free saves would ask for
    infinitely many). Compare with
    ``work / engine.exact_optimal_interval(C, M)``: the two agree when the job spans many MTBFs.
    """
    (work_, C_, M_, R_), wrap = prepare(("work", work, "positive"), ("C", C, "positive"), ("M", M, "positive"),
                                        ("R", R, "nonnegative"))
    b, c = work_ / M_, C_ / M_
    with np.errstate(over="ignore"):
        A1 = np.expm1(c)    # A - 1
    A = A1 + 1.0

    zero = np.zeros_like(b)

    def g(n):  # the bracket of finite_expected_wall_time at T = work/n (sync, no final save)
        return rollback_sum(job_geometry(work_, work_ / n, C_, zero, zero, False), M_)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = A * b / A1 - 2.0
        n_s = np.where(denom > 0, b / denom, np.inf)
    n_s = np.clip(n_s, 1.0, MAX_SEGMENTS)
    lo = np.maximum(np.ceil(n_s), 1.0)
    # upper bound for the convex search: any candidate's g bounds the optimum
    ref = np.maximum(np.round(b / np.maximum(np.asarray(waste.exact_optimal_interval(c, 1.0)), 1e-300)), 1.0)
    ref = np.minimum(np.maximum(ref, lo), MAX_SEGMENTS)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = np.maximum(b, (g(ref) - A * b) / A1 + math.e) + 1.0
    hi = np.clip(np.where(np.isfinite(hi), np.ceil(hi), MAX_SEGMENTS), lo, MAX_SEGMENTS)
    # bisection for the first n in [lo, hi] with g(n + 1) - g(n) >= 0
    for _ in range(64):
        active = lo < hi
        if not np.any(active):
            break
        mid = np.floor((lo + hi) / 2.0)
        here = g(mid)
        rising = np.isfinite(here) & (g(mid + 1.0) >= here)   # overflow: far left of the optimum
        hi = np.where(active & rising, mid, hi)
        lo = np.where(active & ~rising, mid + 1.0, lo)
    candidates = np.stack(np.broadcast_arrays(np.ones_like(lo), np.maximum(np.floor(n_s), 1.0), lo))
    values = np.stack([g(cand) for cand in candidates])
    pick = np.argmin(values, axis=0)[None]
    best = np.take_along_axis(candidates, pick, axis=0)[0]
    _check_overflow(np.take_along_axis(values, pick, axis=0)[0], M_,
                    "the expected wall time overflows at every segment count: (work + C)/M is too large")
    return wrap(best)
