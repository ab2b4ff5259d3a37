"""Finite jobs, deadlines and non-exponential failures: exact finite-job expectation and Monte Carlo.

:func:`engine.waste.expected_wall_time` is a long-run (steady-state) figure: it scales the cost of
one full interval by ``work/T``. A real job is finite: it has ``n = ceil(work/T)`` segments, the
last one possibly shorter, no save after the final step (unless asked), and its first segment
starts with no background write pending. It may have a deadline, and its failures need not be
exponential. This module answers those questions.

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
  failure a fresh inter-failure time is drawn from the :class:`FailureLaw` (exponential, Weibull
  or resampled observations), always scaled to mean ``M``.

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
* [Wilson27] E. B. Wilson, "Probable inference, the law of succession, and statistical
  inference", JASA 22(158), 209-212, 1927: the score interval for a proportion.
* [Schroeder10] B. Schroeder, G. Gibson, "A large-scale study of failures in high-performance
  computing systems", IEEE TDSC 7(4), 2010: inter-failure times fit Weibull shapes 0.7-0.8
  (decreasing hazard, i.e. clustered failures), not exponentials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np
import pandas as pd
from scipy.special import gamma as gamma_fn

from . import cost, waste
from ._inputs import InputError, as_float_array, prepare
from .scenario import Scenario, evaluate

# relative tolerance when counting segments: work/T = 3 + 1e-15 is 3 segments, not 4
_SEGMENT_RTOL = 1e-14
# best_segment_count searches n up to this (the segment count stays exact with _SEGMENT_RTOL)
_MAX_SEGMENTS = 1e12
# gaps are generated in blocks of this many failures per run (see _GapStream)
_BLOCK = 16
# refuse simulations whose expected rollbacks per run (exponential model) exceed this
_MAX_EXPECTED_ROLLBACKS = 1e4
# memory allowed for the stored failure histories (see _GapStream)
_MAX_GAP_BYTES = 2**30
# Weibull shapes below this are refused (coefficient of variation ~16 at 0.2)
_MIN_WEIBULL_SHAPE = 0.2

__all__ = [
    "FailureLaw",
    "Simulation",
    "DeadlineSearch",
    "segment_count",
    "failure_free_wall_time",
    "finite_expected_wall_time",
    "finite_expected_rollbacks",
    "best_segment_count",
    "simulate",
    "simulate_wall_times",
    "reference_simulation",
    "standard_error",
    "wilson_interval",
    "deadline_report",
    "deadline_search",
]


# ------------------------------------------------------------------------------- failure laws

@dataclass(frozen=True)
class FailureLaw:
    """Distribution of the time between failures; its mean is always set by ``M``.

    The law gives the *shape*; every draw is scaled so that the mean is the ``M`` passed to the
    simulator (the job MTBF of a scenario). Build one with:

    * ``FailureLaw.exponential()``: memoryless failures, the assumption of every closed-form model.
    * ``FailureLaw.weibull(shape)``: Weibull with shape ``k`` and scale ``M / Gamma(1 + 1/k)`` (so
      the mean is ``M``). ``k = 1`` is the exponential; ``k < 1`` (decreasing hazard) models infant
      mortality and clustered failures (HPC logs fit ``k`` of 0.7-0.8 [Schroeder10]); ``k > 1``
      wear-out. Shapes below 0.2 are refused (see ``_MIN_WEIBULL_SHAPE``).
    * ``FailureLaw.empirical(times)``: observed inter-failure times, resampled with replacement
      and rescaled by ``M / mean(times)`` (their unit therefore does not matter; pass ``M`` equal
      to their mean in the simulation's unit to use them as observed).

    Failures form a renewal process: the job starts at age 0 and every failure draws a fresh,
    independent time to the next one. Superposed independent non-exponential processes (many
    nodes) are not renewal processes; treating the job's failures as one renewal process with the
    job MTBF is an approximation outside the exponential case.
    """

    kind: str = "exponential"
    shape: Optional[float] = None
    samples: Optional[tuple] = None

    def __post_init__(self) -> None:
        if self.kind not in ("exponential", "weibull", "empirical"):
            raise InputError("failures", self.kind, "unknown failure law: use 'exponential', "
                             "FailureLaw.weibull(shape) or FailureLaw.empirical(times)")
        if self.kind == "weibull":
            if self.shape is None:
                raise InputError("weibull_shape", None, "a Weibull law needs a shape k > 0")
            k = as_float_array("weibull_shape", self.shape, "positive")
            if k.ndim:
                raise InputError("weibull_shape", self.shape, "must be a single number")
            if not k >= _MIN_WEIBULL_SHAPE:
                raise InputError("weibull_shape", float(k), f"must be >= {_MIN_WEIBULL_SHAPE:g}: smaller shapes "
                                 "put the mean in astronomically rare long gaps and nearly all failures in bursts "
                                 "of near-zero gaps, which a Monte Carlo cannot estimate (HPC logs fit about 0.7-0.8)")
            object.__setattr__(self, "shape", float(k))
        if self.kind == "empirical":
            if self.samples is None:
                raise InputError("failure_times", None, "an empirical law needs observed inter-failure times")
            arr = as_float_array("failure_times", self.samples, "positive")
            if arr.ndim != 1 or arr.size < 1:
                raise InputError("failure_times", self.samples, "must be a non-empty 1-D list of inter-failure times")
            object.__setattr__(self, "samples", tuple(float(x) for x in arr))

    @classmethod
    def exponential(cls) -> "FailureLaw":
        return cls("exponential")

    @classmethod
    def weibull(cls, shape: float) -> "FailureLaw":
        return cls("weibull", shape=shape)

    @classmethod
    def empirical(cls, times: Sequence[float]) -> "FailureLaw":
        return cls("empirical", samples=times)

    @property
    def is_exponential(self) -> bool:
        """True when the law is exactly exponential (Weibull ``k = 1`` included)."""
        return self.kind == "exponential" or (self.kind == "weibull" and self.shape == 1.0)

    @property
    def coefficient_of_variation(self) -> float:
        """Standard deviation / mean of the inter-failure time (1 for the exponential).

        Weibull: ``sqrt(Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1)``; empirical: of the samples.
        Above 1 failures cluster (heavier tail than exponential).
        """
        if self.kind == "exponential":
            return 1.0
        if self.kind == "weibull":
            k = self.shape
            return math.sqrt(gamma_fn(1 + 2 / k) / gamma_fn(1 + 1 / k) ** 2 - 1)
        s = np.asarray(self.samples)
        return float(s.std() / s.mean())

    def describe(self) -> str:
        if self.kind == "weibull":
            return f"Weibull (shape k = {self.shape:g}, mean = job MTBF)"
        if self.kind == "empirical":
            return f"empirical ({len(self.samples)} observed gaps, rescaled to the job MTBF)"
        return "exponential (mean = job MTBF)"

    def draw(self, rng: np.random.Generator, M: float, size: Any) -> np.ndarray:
        """Inter-failure times with mean ``M``, shape ``size``."""
        if self.kind == "exponential":
            return rng.exponential(M, size)
        if self.kind == "weibull":
            return rng.weibull(self.shape, size) * (M / gamma_fn(1.0 + 1.0 / self.shape))
        samples = np.asarray(self.samples)
        return samples[rng.integers(0, samples.size, size)] * (M / samples.mean())


def _as_law(failures: Union[str, FailureLaw, None]) -> FailureLaw:
    if failures is None or (isinstance(failures, str) and failures == "exponential"):
        return FailureLaw.exponential()
    if isinstance(failures, FailureLaw):
        return failures
    if isinstance(failures, str) and failures == "weibull":
        raise InputError("failures", failures, "a Weibull law needs its shape: FailureLaw.weibull(shape)")
    if isinstance(failures, str) and failures == "empirical":
        raise InputError("failures", failures, "an empirical law needs its data: FailureLaw.empirical(times)")
    raise InputError("failures", failures, "unknown failure law: use 'exponential', "
                     "FailureLaw.weibull(shape) or FailureLaw.empirical(times)")


class _GapStream:
    """Inter-failure times for ``runs`` independent runs, the same for every checkpoint plan.

    The ``i``-th failure gap of run ``r`` is ``block(i // B)[i % B, r]``, block ``b`` drawn from a
    generator seeded with ``SeedSequence(seed, spawn_key=(b,))``. The gaps therefore depend only on
    (law, M, runs, seed), never on the interval or on how far a run got: simulations of different
    intervals with the same seed see the same failure epochs (common random numbers).
    Memory: 8 bytes x runs x (largest failure count of any run, rounded up to 16), at most 1 GiB
    (:class:`InputError` on ``runs`` beyond).
    """

    def __init__(self, law: FailureLaw, M: float, runs: int, seed: int):
        self.law, self.M, self.runs, self.seed = law, M, runs, seed
        self.blocks: list[np.ndarray] = []

    def _block(self, b: int) -> np.ndarray:
        if (b + 1) * _BLOCK * self.runs * 8 > _MAX_GAP_BYTES:
            raise InputError("runs", self.runs, f"a run reached {b * _BLOCK} failures: storing the failure "
                             f"histories would take more than {_MAX_GAP_BYTES / 2**30:g} GiB; use fewer runs, "
                             "or check M, the interval and the failure law")
        while len(self.blocks) <= b:
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(len(self.blocks),)))
            self.blocks.append(self.law.draw(rng, self.M, (_BLOCK, self.runs)))
        return self.blocks[b]

    def take(self, ids: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Gap number ``j[i]`` of run ``ids[i]``."""
        if ids.size == 0:
            return np.empty(0)
        b = j // _BLOCK
        lo, hi = int(b.min()), int(b.max())
        if lo == hi:
            return self._block(lo)[j - lo * _BLOCK, ids]
        out = np.empty(ids.size)
        for bb in range(lo, hi + 1):
            m = b == bb
            out[m] = self._block(bb)[j[m] - bb * _BLOCK, ids[m]]
        return out

    def run(self, r: int) -> Iterator[float]:
        """The gaps of run ``r`` one by one (for the per-event reference simulation)."""
        i = 0
        while True:
            yield float(self._block(i // _BLOCK)[i % _BLOCK, r])
            i += 1


def _seed_entropy(seed: Any) -> int:
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63))
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError("seed", seed, "must be a whole number >= 0 or a numpy Generator")
    return int(seed)


# ----------------------------------------------------------------------------- job geometry

def _geometry(work, T, C, W, s, final_save: bool) -> dict[str, np.ndarray]:
    """Segment count and window lengths of the finite job (arrays already validated/broadcast).

    Returns ``n`` segments, ``last`` = index of the window that ends the job (windows
    ``0 .. last-1`` start at durable checkpoints 0..last-1 and reach the next one), and the window
    lengths ``full_clean``, ``full_flow`` (full segments) and ``last_clean``, ``last_flow``.
    """
    n = np.maximum(np.ceil(work / T * (1.0 - _SEGMENT_RTOL)), 1.0)
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


def _prepare_job(work, T, C, W, s, M=None, R=None):
    """Validate and broadcast a job (with ``M`` / ``R`` when given); checks the async constraint.

    Returns the arrays in the order work, T, C, [M], [R], W, slowdown and the result wrapper.
    """
    specs = [("work", work, "positive"), ("T", T, "positive"), ("C", C, "nonnegative")]
    specs += [("M", M, "positive")] if M is not None else []
    specs += [("R", R, "nonnegative")] if R is not None else []
    specs += [("W", W, "nonnegative"), ("slowdown", s, "fraction")]
    arrays, wrap = prepare(*specs)
    waste._validate_async(arrays[1], arrays[-2], arrays[-1])
    return arrays, wrap


def _check_final_save(final_save: Any) -> bool:
    if not isinstance(final_save, (bool, np.bool_)):
        raise InputError("final_save", final_save, "must be True or False")
    return bool(final_save)


def segment_count(work, T):
    """Number of segments ``n = ceil(work / T)`` (last one ``work - (n-1) T``, possibly shorter).

    A relative tolerance of 1e-14 absorbs rounding (``work / (work/3)`` is 3 segments, not 4).
    """
    (work_, T_), wrap = prepare(("work", work, "positive"), ("T", T, "positive"))
    return wrap(np.maximum(np.ceil(work_ / T_ * (1.0 - _SEGMENT_RTOL)), 1.0))


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
    (work_, T_, C_, W_, s_), wrap = _prepare_job(work, T, C, W, slowdown)
    g = _geometry(work_, T_, C_, W_, s_, _check_final_save(final_save))
    first = np.where(g["last"] == 0, g["last_clean"], g["full_clean"])
    rest = np.maximum(g["last"] - 1.0, 0.0) * g["full_flow"] + np.where(g["last"] >= 1, g["last_flow"], 0.0)
    return wrap(first + rest)


def _check_overflow(result: np.ndarray, M_: np.ndarray, why: str) -> None:
    """Raise :class:`InputError` on ``M`` (its value, position) where ``result`` is not finite."""
    bad = ~np.isfinite(result)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
        raise InputError("M", float(np.broadcast_to(M_, bad.shape)[idx]), why, tuple(int(i) for i in idx) or None)


def _rollback_sum(g: dict[str, np.ndarray], M_: np.ndarray) -> np.ndarray:
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
    (work_, T_, C_, M_, W_, s_), wrap = _prepare_job(work, T, C, W, slowdown, M)
    g = _geometry(work_, T_, C_, W_, s_, _check_final_save(final_save))
    out = _rollback_sum(g, M_)
    _check_overflow(out, M_, "the expected number of failures overflows: (T + C + W)/M is too large")
    return wrap(out)


def finite_expected_wall_time(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, final_save=False):
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
    """
    (work_, T_, C_, M_, R_, W_, s_), wrap = _prepare_job(work, T, C, W, slowdown, M, R)
    g = _geometry(work_, T_, C_, W_, s_, _check_final_save(final_save))
    with np.errstate(over="ignore", invalid="ignore"):
        total = M_ * np.exp(R_ / M_) * _rollback_sum(g, M_)
    _check_overflow(total, M_, "the expected wall time overflows: (T + C + W + R)/M is so large "
                    "that the job would essentially never finish")
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
        return _rollback_sum(_geometry(work_, work_ / n, C_, zero, zero, False), M_)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = A * b / A1 - 2.0
        n_s = np.where(denom > 0, b / denom, np.inf)
    n_s = np.clip(n_s, 1.0, _MAX_SEGMENTS)
    lo = np.maximum(np.ceil(n_s), 1.0)
    # upper bound for the convex search: any candidate's g bounds the optimum
    ref = np.maximum(np.round(b / np.maximum(np.asarray(waste.exact_optimal_interval(c, 1.0)), 1e-300)), 1.0)
    ref = np.minimum(np.maximum(ref, lo), _MAX_SEGMENTS)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = np.maximum(b, (g(ref) - A * b) / A1 + math.e) + 1.0
    hi = np.clip(np.where(np.isfinite(hi), np.ceil(hi), _MAX_SEGMENTS), lo, _MAX_SEGMENTS)
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


# -------------------------------------------------------------------------------- simulation

@dataclass(frozen=True)
class Simulation:
    """Per-run results of :func:`simulate` (time unit of the inputs).

    ``wall`` wall time to finish; ``failures`` all failures (also those during restarts);
    ``rollbacks`` failures outside restarts (= restarts completed); ``restart_time`` time spent
    restarting, interrupted restarts included. ``failure_free`` is the job's wall time with no
    failure (:func:`failure_free_wall_time`), so ``wall - failure_free - restart_time`` is rework:
    lost compute, lost saves and the full writes re-run after restarts.
    """

    wall: np.ndarray
    failures: np.ndarray
    rollbacks: np.ndarray
    restart_time: np.ndarray
    failure_free: float

    @property
    def runs(self) -> int:
        return int(self.wall.size)

    def mean(self) -> float:
        return float(self.wall.mean())

    def standard_error(self) -> float:
        """Standard error of :meth:`mean` (see :func:`standard_error`)."""
        return standard_error(self.wall)

    def quantile(self, q):
        return np.quantile(self.wall, q)


def standard_error(x) -> float:
    """Standard error of the mean of independent draws: ``std(x, ddof=1) / sqrt(len(x))``.

    Assumes the draws are independent and identically distributed (true across simulated runs;
    not across intervals simulated with the same seed, which share their failures on purpose).
    """
    arr = as_float_array("x", x)
    if arr.ndim != 1 or arr.size < 2:
        raise InputError("x", x, "needs a 1-D array of at least 2 values")
    return float(arr.std(ddof=1) / math.sqrt(arr.size))


def wilson_interval(successes, runs, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion [Wilson27].

    ``(p + z^2/(2n) -+ z sqrt(p(1-p)/n + z^2/(4n^2))) / (1 + z^2/n)`` with ``p = successes/n`` and
    ``z`` the two-sided normal quantile for ``confidence``. Unlike ``p -+ z SE`` it stays inside
    [0, 1] and does not collapse to a point when ``p`` is 0 or 1. Assumes independent runs.
    """
    from scipy.stats import norm

    n = as_float_array("runs", runs, "count")
    k = as_float_array("successes", successes, "nonnegative")
    if np.any(k > n):
        raise InputError("successes", float(np.max(k)), f"must be <= runs = {float(np.max(n)):g}")
    conf = as_float_array("confidence", confidence, "fraction")
    if not conf > 0:
        raise InputError("confidence", float(conf), "must be in (0, 1)")
    z = norm.ppf(0.5 + conf / 2.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(np.maximum(centre - half, 0.0)), float(np.minimum(centre + half, 1.0))


def _scalar_inputs(work, T, C, M, R, W, slowdown, runs):
    (work_, T_, C_, W_, s_), _ = _prepare_job(work, T, C, W, slowdown)
    (M_, R_, runs_), _ = prepare(("M", M, "positive"), ("R", R, "nonnegative"), ("runs", runs, "count"))
    for name, value in (("work", work), ("T", T), ("C", C), ("M", M), ("R", R), ("W", W), ("slowdown", slowdown),
                        ("runs", runs)):
        if np.ndim(value):
            raise InputError(name, value, "must be a single number: the simulator runs one configuration "
                             "(loop over configurations, with the same seed for common random numbers)")
    return float(work_), float(T_), float(C_), float(M_), float(R_), float(W_), float(s_), int(runs_)


def _expected_rollbacks_guard(work, T, C, M, R, W, s, final_save) -> None:
    rb = float(_rollback_sum(_geometry(*np.broadcast_arrays(work, T, C, W, s), final_save), np.asarray(M)))
    if not rb <= _MAX_EXPECTED_ROLLBACKS:
        raise InputError("M", M, f"failures are so frequent against T + C + W = {T + C + W:.6g} that a run "
                         f"would need about {rb:.3g} restarts (exponential estimate, limit "
                         f"{_MAX_EXPECTED_ROLLBACKS:g}): shorten the interval or check M")


def simulate(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, runs=10000, seed=0,
             failures: Union[str, FailureLaw] = "exponential", final_save=False) -> Simulation:
    """Monte Carlo of the finite job (model in the module notes), vectorised over runs.

    Returns a :class:`Simulation` with one wall time, failure count and restart time per run.
    Reproducible: the failures come from ``seed`` alone (an int, or a numpy ``Generator`` from which
    an int seed is drawn) and do not depend on ``T``, so simulating several intervals with the same
    seed compares them on identical failure histories (common random numbers).

    Algorithm: each run is a chain of windows between milestones (module notes). A run holds the
    time left until its next failure; a window succeeds if that time exceeds the window's length.
    After a success the run jumps over as many identical full windows as fit before the failure
    (``ceil(clock / f) - 1`` of them) in one step, so a loop iteration costs one failure per run,
    not one segment: the loop runs about (largest failure count) times over arrays of the
    still-running runs. A failure adds the time to it, then restarts until one lasts ``R``.

    Exact for the model; its only error is sampling error (:meth:`Simulation.standard_error`).
    Refuses (``InputError`` on ``M``) configurations whose exponential estimate of rollbacks per run
    exceeds 10^4. :func:`reference_simulation` runs the same model event by event in plain Python.
    """
    work_, T_, C_, M_, R_, W_, s_, runs_ = _scalar_inputs(work, T, C, M, R, W, slowdown, runs)
    final_save = _check_final_save(final_save)
    law = _as_law(failures)
    _expected_rollbacks_guard(work_, T_, C_, M_, R_, W_, s_, final_save)
    g = {key: float(v) for key, v in _geometry(*np.broadcast_arrays(work_, T_, C_, W_, s_), final_save).items()}
    stream = _GapStream(law, M_, runs_, _seed_entropy(seed))
    last = int(g["last"])
    fc, ff, lc, lf = g["full_clean"], g["full_flow"], g["last_clean"], g["last_flow"]

    wall = np.empty(runs_)
    n_fail = np.empty(runs_, dtype=np.int64)
    n_roll = np.empty(runs_, dtype=np.int64)
    restart = np.empty(runs_)

    ids = np.arange(runs_)
    k = np.zeros(runs_, dtype=np.int64)           # index of the last durable checkpoint (window start)
    clean = np.ones(runs_, dtype=bool)            # no write pending at the window start
    t = np.zeros(runs_)                           # wall time so far
    j = np.zeros(runs_, dtype=np.int64)           # index of the current failure gap
    clock = stream.take(ids, j)                   # time left until the next failure
    fails = np.zeros(runs_, dtype=np.int64)
    rolls = np.zeros(runs_, dtype=np.int64)
    rtime = np.zeros(runs_)

    while ids.size:
        at_end = k == last
        w = np.where(at_end, np.where(clean, lc, lf), np.where(clean, fc, ff))
        ok = clock > w
        t += np.where(ok, w, 0.0)
        clock -= np.where(ok, w, 0.0)
        done = ok & at_end
        adv = ok & ~at_end
        k += adv
        clean &= ~adv
        # jump over the full flow windows that end before the next failure
        if last > 1:
            room = np.where(adv, last - k, 0)
            hops = np.minimum(np.maximum(np.ceil(clock / ff) - 1.0, 0.0), room).astype(np.int64)
            t += hops * ff
            clock -= hops * ff
            k += hops
        if done.any():
            fin = ids[done]
            wall[fin], n_fail[fin], n_roll[fin], restart[fin] = t[done], fails[done], rolls[done], rtime[done]
            keep = ~done
            ids, k, clean, t, j, clock, fails, rolls, rtime = (
                ids[keep], k[keep], clean[keep], t[keep], j[keep], clock[keep], fails[keep], rolls[keep], rtime[keep])
        if not ids.size:
            break
        # failures: every run whose next window is longer than its time to failure
        at_end = k == last
        w = np.where(at_end, np.where(clean, lc, lf), np.where(clean, fc, ff))
        hit = np.flatnonzero(clock <= w)
        if hit.size:
            t[hit] += clock[hit]
            fails[hit] += 1
            rolls[hit] += 1
            j[hit] += 1
            gap = stream.take(ids[hit], j[hit])
            short = gap <= R_
            while short.any():           # failures during the restart start it again
                s_idx = hit[short]
                t[s_idx] += gap[short]
                rtime[s_idx] += gap[short]
                fails[s_idx] += 1
                j[s_idx] += 1
                gap[short] = stream.take(ids[s_idx], j[s_idx])
                short = gap <= R_
            t[hit] += R_
            rtime[hit] += R_
            clock[hit] = gap - R_
            clean[hit] = True
    failure_free = float(failure_free_wall_time(work_, T_, C_, W_, s_, final_save))
    return Simulation(wall=wall, failures=n_fail, rollbacks=n_roll, restart_time=restart, failure_free=failure_free)


def simulate_wall_times(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, runs=10000, seed=0,
                        failures: Union[str, FailureLaw] = "exponential", final_save=False,
                        return_failures: bool = False):
    """Simulated wall times of ``runs`` independent runs (array), see :func:`simulate`.

    With ``return_failures=True`` returns ``(wall_times, failure_counts)`` (failures during restarts
    included). The standard error of the mean is :func:`standard_error` ``(wall_times)``.
    """
    sim = simulate(work, T, C, M, R, W, slowdown, runs, seed, failures, final_save)
    return (sim.wall, sim.failures) if return_failures else sim.wall


def reference_simulation(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, runs=1000, seed=0,
                         failures: Union[str, FailureLaw] = "exponential", final_save=False) -> Simulation:
    """The same model as :func:`simulate`, one run and one phase at a time in plain Python.

    A straightforward, independent statement of the model used to check the vectorised simulator
    (tests) and as the baseline of ``benchmarks/bench_deadline.py``. It walks the timeline phase by
    phase (compute overlapped with a write, compute at full speed, stall, idle wait for a write,
    restart), marks a checkpoint durable when its write ends, and on failure returns to the last
    durable checkpoint. With the same seed it sees the same failure gaps as :func:`simulate`, so
    the two agree run by run up to float rounding. Slow: about 100x :func:`simulate` per run.
    """
    work_, T_, C_, M_, R_, W_, s_, runs_ = _scalar_inputs(work, T, C, M, R, W, slowdown, runs)
    final_save = _check_final_save(final_save)
    law = _as_law(failures)
    _expected_rollbacks_guard(work_, T_, C_, M_, R_, W_, s_, final_save)
    stream = _GapStream(law, M_, runs_, _seed_entropy(seed))
    n = int(segment_count(work_, T_))
    lengths = [T_] * (n - 1) + [min(work_ - (n - 1) * T_, T_)]
    wall = np.empty(runs_)
    n_fail = np.empty(runs_, dtype=np.int64)
    n_roll = np.empty(runs_, dtype=np.int64)
    restart = np.empty(runs_)
    for r in range(runs_):
        wall[r], n_fail[r], n_roll[r], restart[r] = _reference_run(stream.run(r), lengths, C_, R_, W_, s_, final_save)
    failure_free = float(failure_free_wall_time(work_, T_, C_, W_, s_, final_save))
    return Simulation(wall=wall, failures=n_fail, rollbacks=n_roll, restart_time=restart, failure_free=failure_free)


class _Failed(Exception):
    pass


def _reference_run(gaps: Iterator[float], lengths: list[float], C: float, R: float, W: float, s: float,
                   final_save: bool) -> tuple[float, int, int, float]:
    n = len(lengths)
    t = 0.0
    clock = next(gaps)
    failures = rollbacks = 0
    restart_time = 0.0
    durable = 0                 # segments covered by the last durable checkpoint

    def spend(d: float) -> None:
        nonlocal t, clock
        if clock <= d:
            raise _Failed
        t += d
        clock -= d

    while True:
        done_segments = durable   # compute resumes from the last durable checkpoint
        pending = 0.0             # time left of a background write (0: none pending)
        try:
            while True:
                seg = lengths[done_segments]
                last = done_segments + 1 == n
                if pending > 0:   # compute at reduced speed while the previous write runs
                    overlap = min(pending, seg / (1.0 - s))
                    spend(overlap)
                    seg -= overlap * (1.0 - s)
                    pending -= overlap
                    if pending > 0:            # the segment's compute finished before the write
                        if last and not final_save:
                            return t, failures, rollbacks, restart_time
                        spend(pending)         # idle until the previous write is durable
                        seg = 0.0
                    pending = 0.0
                    durable = done_segments    # the previous checkpoint is now restorable
                spend(max(seg, 0.0))           # the rest of the segment at full speed
                done_segments += 1
                if last and not final_save:
                    return t, failures, rollbacks, restart_time
                spend(C)                       # blocking stall
                if W > 0:
                    if last:                   # final save: wait for its write to be durable
                        spend(W)
                        return t, failures, rollbacks, restart_time
                    pending = W
                else:
                    durable = done_segments
                    if last:
                        return t, failures, rollbacks, restart_time
        except _Failed:
            t += clock
            failures += 1
            rollbacks += 1
            while True:          # restart, again from scratch if a failure interrupts it
                clock = next(gaps)
                if clock > R:
                    break
                t += clock
                restart_time += clock
                failures += 1
            t += R
            restart_time += R
            clock -= R


# ------------------------------------------------------------------------- scenario answers

@dataclass(frozen=True)
class _Job:
    """A scenario's job in minutes (the simulator's unit)."""

    name: str
    currency: str
    work: float
    C: float
    M: float
    R: float
    W: float
    s: float
    T: float
    deadline: float
    exact_T: float
    gpus: float
    price: float


def _job(scenario: Scenario, deadline_h, interval_min) -> _Job:
    if not isinstance(scenario, Scenario):
        raise InputError("scenario", type(scenario).__name__, "must be a ckptplan.engine.Scenario (e.g. ckptplan.files.load_scenario('seed'))")
    changes = {}
    if deadline_h is not None:
        changes["deadline_h"] = float(as_float_array("deadline_h", deadline_h, "positive"))
    if interval_min is not None:
        changes["interval_min"] = float(as_float_array("interval_min", interval_min, "positive"))
    sc = scenario.replace(**changes) if changes else scenario
    if sc.deadline_h is None:
        raise InputError("deadline_h", None, "is required: give deadline_h or set it in the scenario")
    if sc.deadline_h < sc.useful_training_h:
        raise InputError("deadline_h", float(sc.deadline_h),
                         f"must be >= useful_training_h = {sc.useful_training_h:g} h: the job needs that much "
                         "compute even with no saves and no failures")
    row = evaluate(sc).iloc[0]
    return _Job(name=sc.name, currency=sc.currency, work=sc.useful_training_h * 60.0, C=sc.checkpoint_stall_min,
                M=float(row["job_mtbf_h"]) * 60.0, R=sc.restart_min, W=sc.async_write_min,
                s=sc.async_slowdown_fraction, T=float(row["chosen_interval_min"]), deadline=sc.deadline_h * 60.0,
                exact_T=float(row["exact_interval_min"]), gpus=float(row["gpus"]), price=sc.price_per_gpu_hour)


def _check_runs_seed(runs, seed):
    r = as_float_array("runs", runs, "count")
    if r.ndim or r < 2:
        raise InputError("runs", runs, "must be a single whole number >= 2")
    _seed_entropy(seed)
    return int(r)


def _summary(sim: Simulation, job: _Job, T: float, law: FailureLaw, final_save: bool) -> dict[str, Any]:
    """Deadline figures of one simulated interval (hours, GPU-hours, money)."""
    wall_h = sim.wall / 60.0
    hits = int(np.count_nonzero(sim.wall <= job.deadline))
    p = hits / sim.runs
    lo, hi = wilson_interval(hits, sim.runs)
    gpu_h = np.asarray(cost.gpu_hours(wall_h, job.gpus))
    money = np.asarray(cost.money(gpu_h, job.price))
    q50, q90, q99 = np.quantile(wall_h, [0.5, 0.9, 0.99])
    exact_h = None
    if law.is_exponential:
        exact_h = float(finite_expected_wall_time(job.work, T, job.C, job.M, job.R, job.W, job.s, final_save)) / 60.0
    restart_h = float(sim.restart_time.mean()) / 60.0
    save_h = (sim.failure_free - job.work) / 60.0
    return {
        "interval_min": T,
        "segments": int(segment_count(job.work, T)),
        "p_finish": p,
        "p_finish_se": math.sqrt(p * (1 - p) / sim.runs),
        "p_finish_low": lo,
        "p_finish_high": hi,
        "wall_h_mean": float(wall_h.mean()),
        "wall_h_mean_se": standard_error(wall_h),
        "wall_h_p50": float(q50),
        "wall_h_p90": float(q90),
        "wall_h_p99": float(q99),
        "expected_wall_h_exact": exact_h,
        "failure_free_wall_h": sim.failure_free / 60.0,
        "failures_mean": float(sim.failures.mean()),
        "useful_h": job.work / 60.0,
        "save_h": save_h,
        "restart_h": restart_h,
        "rework_h": float(wall_h.mean()) - sim.failure_free / 60.0 - restart_h,
        "gpu_hours_mean": float(gpu_h.mean()),
        "gpu_hours_p90": float(np.quantile(gpu_h, 0.9)),
        "cost_mean": float(money.mean()),
        "cost_p90": float(np.quantile(money, 0.9)),
    }


def deadline_report(scenario: Scenario, deadline_h=None, interval_min=None, runs=10000, seed=0,
                    failures: Union[str, FailureLaw] = "exponential", final_save=False) -> dict[str, Any]:
    """Will the job finish by its deadline, and what will it cost? Monte Carlo of one interval.

    ``deadline_h`` defaults to ``scenario.deadline_h`` (error if neither is given) and must be at
    least ``useful_training_h``. ``interval_min`` defaults to the scenario's chosen interval (its
    ``interval_min``, else the exact long-run optimum). Job MTBF from :func:`engine.evaluate`
    (``job_mtbf_h``; failure domains and non-fatal shares folded into one failure process).

    Returns a dict (units in the keys): ``p_finish`` = P(wall <= deadline) with its standard error
    ``sqrt(p(1-p)/runs)`` and 95 % Wilson interval ``p_finish_low``/``p_finish_high``
    (:func:`wilson_interval`); ``wall_h_mean`` (+ ``_se``), ``wall_h_p50/p90/p99``;
    ``expected_wall_h_exact`` (:func:`finite_expected_wall_time`, exponential laws only, else None);
    ``long_run_wall_h`` (:func:`engine.expected_wall_time`); the mean split ``useful_h``, ``save_h``
    (failure-free overhead), ``restart_h``, ``rework_h``; ``gpu_hours_mean``/``_p90`` and
    ``cost_mean``/``cost_p90`` (``gpus = nodes * gpus_per_node`` at ``price_per_gpu_hour``; the bill
    runs while the job holds its GPUs, restarts included).
    """
    job = _job(scenario, deadline_h, interval_min)
    runs_ = _check_runs_seed(runs, seed)
    law = _as_law(failures)
    final_save = _check_final_save(final_save)
    sim = simulate(job.work, job.T, job.C, job.M, job.R, job.W, job.s, runs_, seed, law, final_save)
    out = {"name": job.name, "currency": job.currency, "failure_law": law.describe(), "runs": runs_,
           "deadline_h": job.deadline / 60.0, "job_mtbf_h": job.M / 60.0, "gpus": job.gpus,
           "exact_optimum_interval_min": job.exact_T,
           "long_run_wall_h": float(waste.expected_wall_time(job.work, job.T, job.C, job.M, job.R, job.W, job.s)) / 60.0}
    out.update(_summary(sim, job, job.T, law, final_save))
    return out


@dataclass(frozen=True)
class DeadlineSearch:
    """Result of :func:`deadline_search` (intervals in minutes, wall in hours, money in ``currency``).

    ``candidates``: one row per interval simulated (the columns of :func:`deadline_report`'s
    per-interval figures). ``best_probability``: the row with the highest ``p_finish`` (ties: lower
    mean cost). ``cheapest_meeting_target``: the row with the lowest mean cost among those with
    ``p_finish >= target``, or None. ``exact_optimum_interval_min``: the long-run optimum
    (:func:`engine.exact_optimal_interval`); ``finite_optimum_segments`` / ``_interval_min``: the
    finite-job optimum for synchronous exponential failures (:func:`best_segment_count`; None for
    async saves). ``notes``: plain-language remarks where these differ materially.
    """

    name: str
    currency: str
    deadline_h: float
    target: float
    runs: int
    failure_law: str
    candidates: pd.DataFrame
    best_probability: dict
    cheapest_meeting_target: Optional[dict]
    exact_optimum_interval_min: float
    finite_optimum_segments: Optional[int]
    finite_optimum_interval_min: Optional[float]
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "currency": self.currency, "deadline_h": self.deadline_h, "target": self.target,
            "runs": self.runs, "failure_law": self.failure_law,
            "exact_optimum_interval_min": self.exact_optimum_interval_min,
            "finite_optimum_segments": self.finite_optimum_segments,
            "finite_optimum_interval_min": self.finite_optimum_interval_min,
            "best_probability": self.best_probability, "cheapest_meeting_target": self.cheapest_meeting_target,
            "notes": list(self.notes),
            "candidates": [_jsonable(r) for r in self.candidates.to_dict(orient="records")],
        }


def _jsonable(row: dict) -> dict:
    return {k: (None if v is None or (isinstance(v, float) and math.isnan(v)) else
                int(v) if isinstance(v, (np.integer,)) else float(v) if isinstance(v, (np.floating,)) else v)
            for k, v in row.items()}


def _default_grid(job: _Job, finite_T: Optional[float], points: int = 25) -> np.ndarray:
    floor = job.W * (1.0 - job.s)
    lo = max(job.exact_T / 4.0, floor, 1e-3)
    hi = max(min(job.exact_T * 4.0, job.work), lo)
    grid = np.geomspace(lo, hi, points)
    extra = [job.exact_T] + ([finite_T] if finite_T is not None else [])
    return np.unique(np.concatenate([grid, [x for x in extra if x >= floor]]))


def deadline_search(scenario: Scenario, deadline_h=None, target=0.9, intervals_min=None, runs=10000, seed=0,
                    failures: Union[str, FailureLaw] = "exponential", final_save=False,
                    progress: Optional[Callable[[int, int], None]] = None) -> DeadlineSearch:
    """Which interval gives the best chance of meeting the deadline, and which is cheapest at ``target``?

    Simulates every interval in ``intervals_min`` (default: 25 geometrically spaced points from a
    quarter to four times the long-run exact optimum, capped at the whole job, plus the exact and
    finite-job optima) with the same seed, so all candidates see the same failure histories
    (common random numbers: differences between intervals are not blurred by independent noise).
    Picks the interval maximising P(finish by deadline) and the one minimising expected cost
    subject to ``P(finish by deadline) >= target``; reports them beside the long-run optimum
    (:func:`engine.exact_optimal_interval`, which minimises expected wall time of an endless job)
    and, for synchronous saves, the finite-job optimum (:func:`best_segment_count`).

    The grid optimum is only as fine as the grid and as precise as ``runs`` allows (each row has its
    standard errors); a flat optimum means nearby intervals are equally good. A note flags a
    material difference: interval off by > 10 % and the gain over the long-run optimum larger than
    two paired standard errors; also short jobs (fewer than 20 MTBFs of work) and heavy-tailed
    failure laws (coefficient of variation > 1), where the long-run formula is least reliable.
    ``progress(done, total)`` is called after each interval (e.g. to drive a progress bar).
    """
    job = _job(scenario, deadline_h, None)
    runs_ = _check_runs_seed(runs, seed)
    law = _as_law(failures)
    final_save = _check_final_save(final_save)
    tgt = float(as_float_array("target", target, "fraction"))
    if not tgt > 0:
        raise InputError("target", tgt, "must be a probability in (0, 1)")
    finite_n = finite_T = None
    if job.W == 0:
        finite_n = int(best_segment_count(job.work, job.C, job.M, job.R))
        finite_T = job.work / finite_n
    if intervals_min is None:
        grid = _default_grid(job, finite_T)
    else:
        grid = np.unique(as_float_array("intervals_min", intervals_min, "positive").reshape(-1))
        floor = job.W * (1.0 - job.s)
        if np.any(grid < floor):
            raise InputError("intervals_min", float(grid[grid < floor][0]),
                             f"must be >= async_write_min * (1 - async_slowdown_fraction) = {floor:.6g} "
                             "(the write must be durable before the next save)")
    grid = np.append(grid[~np.isclose(grid, job.exact_T, rtol=1e-12)], job.exact_T)  # exact optimum always in
    grid.sort()
    rows, walls = [], []
    for i, T in enumerate(grid):
        sim = simulate(job.work, float(T), job.C, job.M, job.R, job.W, job.s, runs_, seed, law, final_save)
        rows.append(_summary(sim, job, float(T), law, final_save))
        walls.append(sim.wall)
        if progress is not None:
            progress(i + 1, len(grid))
    table = pd.DataFrame(rows)
    order = np.lexsort((table["cost_mean"].to_numpy(), -table["p_finish"].to_numpy()))
    best = table.iloc[int(order[0])].to_dict()
    meeting = table[table["p_finish"] >= tgt]
    cheapest = meeting.loc[meeting["cost_mean"].idxmin()].to_dict() if len(meeting) else None

    ref = int(np.flatnonzero(np.isclose(grid, job.exact_T, rtol=1e-12))[0])
    notes = _notes(job, law, grid, walls, ref, table, best, cheapest, tgt, finite_n, finite_T)
    return DeadlineSearch(name=job.name, currency=job.currency, deadline_h=job.deadline / 60.0, target=tgt,
                          runs=runs_, failure_law=law.describe(), candidates=table,
                          best_probability=_jsonable(best), cheapest_meeting_target=_jsonable(cheapest) if cheapest else None,
                          exact_optimum_interval_min=job.exact_T, finite_optimum_segments=finite_n,
                          finite_optimum_interval_min=finite_T, notes=notes)


def _paired_gain(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of ``x - y`` over the same runs (common random numbers)."""
    d = x - y
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def _notes(job, law, grid, walls, ref, table, best, cheapest, target, finite_n, finite_T) -> list[str]:
    notes: list[str] = []
    T_ref = job.exact_T
    ref_row = table.iloc[ref]
    i_best = int(np.flatnonzero(grid == best["interval_min"])[0])
    dp, dp_se = _paired_gain((walls[i_best] <= job.deadline).astype(float), (walls[ref] <= job.deadline).astype(float))
    if abs(best["interval_min"] / T_ref - 1) > 0.10 and dp > 2 * dp_se and dp > 0:
        notes.append(f"To maximise the chance of meeting the {job.deadline / 60:g} h deadline, save every "
                     f"{best['interval_min']:.1f} min rather than at the long-run optimum {T_ref:.1f} min: "
                     f"P(finish) rises from {ref_row['p_finish']:.1%} to {best['p_finish']:.1%}.")
    if cheapest is None:
        notes.append(f"No interval tried reaches P(finish) >= {target:.0%}; the best is {best['p_finish']:.1%} "
                     f"at {best['interval_min']:.1f} min. Move the deadline, shorten saves or restarts, or add margin.")
    else:
        i_c = int(np.flatnonzero(grid == cheapest["interval_min"])[0])
        dc, dc_se = _paired_gain(walls[ref], walls[i_c])
        if abs(cheapest["interval_min"] / T_ref - 1) > 0.10 and (ref_row["p_finish"] < target or dc > 2 * dc_se):
            why = (f"the long-run optimum {T_ref:.1f} min reaches only {ref_row['p_finish']:.1%}"
                   if ref_row["p_finish"] < target else
                   f"it costs {(ref_row['cost_mean'] - cheapest['cost_mean']):,.0f} {job.currency} less on average "
                   f"than the long-run optimum {T_ref:.1f} min")
            notes.append(f"Cheapest interval with P(finish) >= {target:.0%}: {cheapest['interval_min']:.1f} min; {why}.")
    spans = job.work / job.M
    if finite_T is not None and abs(finite_T / T_ref - 1) > 0.05:
        notes.append(f"The job is short against its MTBF ({spans:.1f} MTBFs of work): the finite-job optimum is "
                     f"{finite_n} segments of {finite_T:.1f} min, not the long-run {T_ref:.1f} min.")
    elif spans < 20:
        notes.append(f"The job spans only {spans:.1f} MTBFs of work: long-run averages understate the spread; "
                     "read the simulated percentiles and P(finish), not the means.")
    if law.coefficient_of_variation > 1.0 + 1e-9:
        notes.append(f"Failures are more clustered than exponential ({law.describe()}, coefficient of variation "
                     f"{law.coefficient_of_variation:.2f}): the long-run optimum assumes exponential failures; "
                     "trust the simulated figures.")
    return notes
