"""Monte Carlo of the finite job under any failure law: exponential, Weibull or observed gaps.

The model is the finite job of :mod:`engine.finite` (segments of ``T``, blocking stalls ``C``,
asynchronous writes ``W`` at ``1 - slowdown`` speed, restarts ``R``, a failure at any moment
rolling back to the last durable checkpoint, the job as a chain of windows between milestones;
symbols as there). Simulated run by run instead of taken in expectation, it also holds for
non-exponential failures and gives whole distributions (percentiles, P(finish by a deadline)).

* Failures form a renewal process in wall time, starting at age 0 with the job: after each
  failure a fresh inter-failure time is drawn from the :class:`FailureLaw` (exponential, Weibull
  or resampled observations), always scaled to mean ``M``.
* Two exact samplers, both streaming runs in blocks (memory bounded whatever the runs or the
  failures per run): per window for exponential failures (:mod:`engine.montecarlo_fast`: failed
  attempts per window class are geometric, binomial or negative binomial, each losing a truncated
  exponential time), and per failure for any law (:mod:`engine.gaps`: every inter-failure time
  drawn, all gaps of a chunk of runs processed at once).
* Common random numbers: in the per-failure sampler the failure gaps depend only on (law, ``M``,
  runs, seed), never on the interval, so intervals simulated with the same seed are compared on
  identical failure histories (:func:`engine.deadline.deadline_search` uses it for that).
* :func:`simulate` is exact for the model; its only error is sampling error, measured by
  :func:`standard_error` (means) and :func:`wilson_interval` (proportions).
  :func:`reference_simulation` states the same model event by event in plain Python, on the
  per-failure sampler's gaps (so the two agree run by run).

References
----------
* [Wilson27] E. B. Wilson, "Probable inference, the law of succession, and statistical
  inference", JASA 22(158), 209-212, 1927: the score interval for a proportion.
* [Schroeder10] B. Schroeder, G. Gibson, "A large-scale study of failures in high-performance
  computing systems", IEEE TDSC 7(4), 2010: inter-failure times fit Weibull shapes 0.7-0.8
  (decreasing hazard, i.e. clustered failures), not exponentials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np

from .errors import InputError
from .finite import check_final_save, job_geometry, prepare_job, rollback_sum, failure_free_wall_time, segment_count
from .gaps import MAX_FAILURES_PER_RUN, GapStream, simulate_per_failure
from .gate import as_float_array, prepare
from .montecarlo_fast import simulate_per_window

# refuse simulations whose expected rollbacks per run (exponential model) exceed this
_MAX_EXPECTED_ROLLBACKS = 1e4
# Weibull shapes below this are refused (coefficient of variation ~16 at 0.2)
_MIN_WEIBULL_SHAPE = 0.2
#: most memory a simulation may hold for its per-run results (checked before anything is allocated)
MAX_SIMULATION_BYTES = 1 << 30
#: bytes held per simulated run and interval (wall time, failures, rollbacks, restart time: 8 bytes each),
#: plus the same again once per run for the caller's summary (hours, GPU-hours, money)
BYTES_PER_RUN = 32

__all__ = [
    "BYTES_PER_RUN",
    "as_failure_law",
    "seed_entropy",
    "MAX_SIMULATION_BYTES",
    "FailureLaw",
    "Simulation",
    "check_simulation_size",
    "simulation_bytes",
    "simulate",
    "simulate_intervals",
    "simulate_wall_times",
    "reference_simulation",
    "standard_error",
    "wilson_interval",
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
            from scipy.special import gamma as gamma_fn

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
            from scipy.special import gamma as gamma_fn

            return rng.weibull(self.shape, size) * (M / gamma_fn(1.0 + 1.0 / self.shape))
        samples = np.asarray(self.samples)
        return samples[rng.integers(0, samples.size, size)] * (M / samples.mean())


def as_failure_law(failures: Union[str, FailureLaw, None]) -> FailureLaw:
    """A simulator's ``failures`` argument as a :class:`FailureLaw` (None or ``"exponential"``: the
    exponential law); :class:`InputError` naming what a Weibull or empirical law needs."""
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


def seed_entropy(seed: Any) -> int:
    """A simulator's ``seed`` as the int its streams are spawned from: a whole number >= 0 as it is,
    or one drawn from a numpy ``Generator``."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63))
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError("seed", seed, "must be a whole number >= 0 or a numpy Generator")
    return int(seed)


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
    with np.errstate(over="ignore", invalid="ignore"):
        sd = float(arr.std(ddof=1))
    if not math.isfinite(sd):  # the squares overflow (values near 1e154 and beyond): the same in scaled units
        scale = float(np.max(np.abs(arr)))
        sd = float((arr / scale).std(ddof=1)) * scale
    if not math.isfinite(sd):
        raise InputError("x", float(np.max(np.abs(arr))), "the standard deviation overflows the float64 range")
    return sd / math.sqrt(arr.size)


def wilson_interval(successes, runs, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion [Wilson27].

    ``(p + z^2/(2n) -+ z sqrt(p(1-p)/n + z^2/(4n^2))) / (1 + z^2/n)`` with ``p = successes/n`` and
    ``z`` the two-sided normal quantile for ``confidence``. Unlike ``p -+ z SE`` it stays inside
    [0, 1] and does not collapse to a point when ``p`` is 0 or 1. Assumes independent runs.
    """
    from scipy.special import ndtri   # the normal quantile (scipy.stats.norm.ppf), without scipy.stats' import

    n = as_float_array("runs", runs, "count")
    k = as_float_array("successes", successes, "nonnegative")
    for name, arr, given in (("runs", n, runs), ("successes", k, successes)):
        if arr.ndim:
            raise InputError(name, given, "must be a single number (one proportion per call)")
    if np.any(k > n):
        raise InputError("successes", float(np.max(k)), f"must be <= runs = {float(np.max(n)):g}")
    conf = as_float_array("confidence", confidence, "fraction")
    if conf.ndim:
        raise InputError("confidence", confidence, "must be a single number")
    if not conf > 0:
        raise InputError("confidence", float(conf), "must be in (0, 1)")
    z = ndtri(0.5 + conf / 2.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(np.maximum(centre - half, 0.0)), float(np.minimum(centre + half, 1.0))


def simulation_bytes(runs: int, intervals: int = 1) -> int:
    """Memory a simulation of ``runs`` runs at ``intervals`` intervals holds for its results (bytes)."""
    return int(runs) * BYTES_PER_RUN * (int(intervals) + 1)


def check_simulation_size(runs: Any, intervals: int = 1) -> None:
    """Refuse, before anything is allocated, a simulation whose results would exceed :data:`MAX_SIMULATION_BYTES`.

    ``runs`` runs at ``intervals`` intervals hold :func:`simulation_bytes` bytes (the per-run results
    of every interval and one summary); :class:`InputError` on ``runs`` naming the estimate and the limit.
    """
    r = as_float_array("runs", runs, "count")
    if r.ndim:
        raise InputError("runs", runs, "must be a single whole number")
    need = float(r) * BYTES_PER_RUN * (int(intervals) + 1)
    if need > MAX_SIMULATION_BYTES:
        most = MAX_SIMULATION_BYTES // (BYTES_PER_RUN * (int(intervals) + 1))
        raise InputError("runs", int(r) if float(r) < 2.0**63 else float(r),
                         f"{float(r):,.0f} runs at {intervals} interval(s) would hold about {need / 2**30:,.3g} GiB of "
                         f"results, above the limit of {MAX_SIMULATION_BYTES / 2**30:g} GiB (MAX_SIMULATION_BYTES): "
                         f"use at most {most:,} runs")


def _scalar_inputs(work, T, C, M, R, W, slowdown, runs):
    (work_, T_, C_, W_, s_), _ = prepare_job(work, T, C, W, slowdown)
    (M_, R_, runs_), _ = prepare(("M", M, "positive"), ("R", R, "nonnegative"), ("runs", runs, "count"))
    for name, value in (("work", work), ("T", T), ("C", C), ("M", M), ("R", R), ("W", W), ("slowdown", slowdown),
                        ("runs", runs)):
        if np.ndim(value):
            raise InputError(name, value, "must be a single number: the simulator runs one configuration "
                             "(loop over configurations, with the same seed for common random numbers)")
    return float(work_), float(T_), float(C_), float(M_), float(R_), float(W_), float(s_), int(runs_)


def _expected_rollbacks_guard(work, T, C, M, R, W, s, final_save) -> None:
    rb = float(rollback_sum(job_geometry(*np.broadcast_arrays(work, T, C, W, s), final_save), np.asarray(M)))
    if not rb <= _MAX_EXPECTED_ROLLBACKS:
        raise InputError("M", M, f"failures are so frequent against T + C + W = {T + C + W:.6g} that a run "
                         f"would need about {rb:.3g} restarts (exponential estimate, limit "
                         f"{_MAX_EXPECTED_ROLLBACKS:g}): shorten the interval or check M")
    # each rollback's restart is itself retried on failure: exp(R/M) attempts on average (exponential estimate)
    with np.errstate(over="ignore"):
        attempts = rb * math.exp(min(R / M, 700.0))
    if not attempts <= MAX_FAILURES_PER_RUN:
        raise InputError("R", R, f"the restart (R/M = {R / M:.4g}) fails so often that a run would see about "
                         f"{attempts:.3g} failures (exponential estimate, limit {MAX_FAILURES_PER_RUN:g}): "
                         "shorten the restart or check M")


_METHODS = ("auto", "per_window", "per_failure")


def _check_method(method: Any, law: FailureLaw) -> str:
    if not isinstance(method, str) or method not in _METHODS:
        raise InputError("method", method, "must be 'auto', 'per_window' or 'per_failure'")
    if method == "per_window" and not law.is_exponential:
        raise InputError("method", method, f"per-window sampling needs exponential failures, not {law.describe()}: "
                         "use 'per_failure' (or 'auto')")
    if method == "auto":
        return "per_window" if law.is_exponential else "per_failure"
    return method


def _gap_stream(law: FailureLaw, M: float, runs: int, seed: int) -> GapStream:
    """The failure gaps of :func:`simulate` (``method="per_failure"``) and :func:`reference_simulation`."""
    return GapStream(lambda rng, size: law.draw(rng, M, size), runs, seed)


def _downtime(D: Any) -> float:
    """The downtime after every failure (``D``: one number >= 0)."""
    d = as_float_array("D", D, "nonnegative")
    if d.ndim:
        raise InputError("D", f"array of shape {d.shape}", "must be a single number (one job per simulation)")
    return float(d)


def _add_downtime(wall: np.ndarray, failures: np.ndarray, restart: np.ndarray, D: float):
    """(wall, restart) with the downtime ``D`` after each failure: the failure clock stops while the job waits
    (it holds no nodes), so the run simulated on exposed time is unchanged and each failure adds ``D``."""
    if D == 0.0:
        return wall, restart
    return wall + D * failures, restart + D * failures


def simulate(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, runs=10000, seed=0,
             failures: Union[str, FailureLaw] = "exponential", final_save=False, method: str = "auto",
             D=0.0) -> Simulation:
    """Monte Carlo of the finite job (model in :mod:`engine.finite`), vectorised over runs.

    Returns a :class:`Simulation` with one wall time, failure count and restart time per run.
    Reproducible: the result depends only on the inputs and ``seed`` (an int, or a numpy
    ``Generator`` from which an int seed is drawn). Runs are simulated in blocks, so memory stays
    bounded (a few MiB besides the four result arrays) whatever the runs or failures per run.

    ``method`` chooses the sampler; both are exact for the model, their only error is sampling
    error (:meth:`Simulation.standard_error`):

    * ``"per_window"`` (exponential failures only; the default for them): per class of windows, the
      number of failed attempts (geometric, binomial, negative binomial) and the time each loses (a
      truncated exponential), summed per run (:mod:`engine.montecarlo_fast`). Fastest; its random
      numbers depend on the interval, so same-seed simulations of different intervals are
      independent samples, not paired ones.
    * ``"per_failure"`` (any failure law; the default for non-exponential ones): every inter-failure
      time is drawn from a stream that depends only on (law, ``M``, runs, seed), never on ``T``
      (:mod:`engine.gaps`), so intervals simulated with the same seed are compared on identical
      failure histories (common random numbers). :func:`reference_simulation` states the same model
      event by event on the same gaps and agrees with it run by run.
    * ``"auto"``: ``"per_window"`` for exponential failures (Weibull ``k = 1`` included), else
      ``"per_failure"``.

    ``D``: a downtime after every failure (restarts' included) before its restart, during which the
    job holds no nodes and cannot fail (waiting for a node): the failure clock stops, so the run on
    exposed time is the one simulated and each failure adds ``D`` to the wall and restart time
    (exact for every failure law whose clock counts exposed time only). ``R`` is the exposed restart.

    Refuses (``InputError`` on ``M``) configurations whose exponential estimate of rollbacks per run
    exceeds 10^4, (on ``R``) restarts that fail so often that a run would see more than 10^6
    failures, (on ``failures``) per-failure runs that reach 10^6 failures, and (on ``runs``, before
    anything is allocated) runs whose results would exceed :data:`MAX_SIMULATION_BYTES`
    (:func:`check_simulation_size`).
    """
    work_, T_, C_, M_, R_, W_, s_, runs_ = _scalar_inputs(work, T, C, M, R, W, slowdown, runs)
    check_simulation_size(runs_)
    final_save = check_final_save(final_save)
    law = as_failure_law(failures)
    how = _check_method(method, law)
    _expected_rollbacks_guard(work_, T_, C_, M_, R_, W_, s_, final_save)
    g = {key: float(v) for key, v in job_geometry(*np.broadcast_arrays(work_, T_, C_, W_, s_), final_save).items()}
    seed_ = seed_entropy(seed)
    if how == "per_window":
        wall, n_fail, n_roll, restart = simulate_per_window(g, M_, R_, runs_, seed_)
    else:
        (wall, n_fail, n_roll, restart), = simulate_per_failure([g], R_, _gap_stream(law, M_, runs_, seed_))
    failure_free = float(failure_free_wall_time(work_, T_, C_, W_, s_, final_save))
    wall, restart = _add_downtime(wall, n_fail, restart, _downtime(D))
    return Simulation(wall=wall, failures=n_fail, rollbacks=n_roll, restart_time=restart, failure_free=failure_free)


def simulate_intervals(work, intervals, C, M, R=0.0, W=0.0, slowdown=0.0, runs=10000, seed=0,
                       failures: Union[str, FailureLaw] = "exponential", final_save=False,
                       progress: Optional[Callable[[int, int], None]] = None, D=0.0) -> list[Simulation]:
    """:func:`simulate` with ``method="per_failure"`` at every interval of ``intervals``, on one stream.

    The same results, run by run, as calling ``simulate(work, T, ..., seed=seed,
    method="per_failure")`` for each ``T``: every interval sees identical failure histories (common
    random numbers), and each chunk of failure gaps is drawn once for all of them.
    ``progress(runs done, runs)`` is called after each block of runs. ``D``: downtime after every
    failure, as :func:`simulate`.
    """
    d = _downtime(D)
    Ts = np.asarray(as_float_array("intervals", intervals, "positive"), dtype=np.float64).reshape(-1)
    if Ts.size < 1:
        raise InputError("intervals", intervals, "needs at least one interval")
    check_simulation_size(runs, Ts.size)
    checked = [_scalar_inputs(work, float(T), C, M, R, W, slowdown, runs) for T in Ts]
    final_save = check_final_save(final_save)
    law = as_failure_law(failures)
    geometries, free = [], []
    for work_, T_, C_, M_, R_, W_, s_, runs_ in checked:
        _expected_rollbacks_guard(work_, T_, C_, M_, R_, W_, s_, final_save)
        geometries.append({key: float(v) for key, v in
                           job_geometry(*np.broadcast_arrays(work_, T_, C_, W_, s_), final_save).items()})
        free.append(float(failure_free_wall_time(work_, T_, C_, W_, s_, final_save)))
    work_, _, C_, M_, R_, W_, s_, runs_ = checked[0]
    outs = simulate_per_failure(geometries, R_, _gap_stream(law, M_, runs_, seed_entropy(seed)), progress=progress)
    return [Simulation(*_with_downtime_tuple(w, f, r, rt, d), failure_free=ff) for (w, f, r, rt), ff in zip(outs, free)]


def _with_downtime_tuple(wall, failures, rollbacks, restart, D: float) -> tuple:
    wall, restart = _add_downtime(wall, failures, restart, D)
    return wall, failures, rollbacks, restart


def simulate_wall_times(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, runs=10000, seed=0,
                        failures: Union[str, FailureLaw] = "exponential", final_save=False,
                        return_failures: bool = False, method: str = "auto", D=0.0):
    """Simulated wall times of ``runs`` independent runs (array), see :func:`simulate`.

    With ``return_failures=True`` returns ``(wall_times, failure_counts)`` (failures during restarts
    included). The standard error of the mean is :func:`standard_error` ``(wall_times)``.
    """
    sim = simulate(work, T, C, M, R, W, slowdown, runs, seed, failures, final_save, method, D)
    return (sim.wall, sim.failures) if return_failures else sim.wall


def reference_simulation(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, runs=1000, seed=0,
                         failures: Union[str, FailureLaw] = "exponential", final_save=False, D=0.0) -> Simulation:
    """The same model as :func:`simulate`, one run and one phase at a time in plain Python.

    A straightforward, independent statement of the model used to check the vectorised simulator
    (tests) and as the baseline of ``benchmarks/bench_deadline.py``. It walks the timeline phase by
    phase (compute overlapped with a write, compute at full speed, stall, idle wait for a write,
    restart), marks a checkpoint durable when its write ends, and on failure returns to the last
    durable checkpoint. With the same seed it sees the same failure gaps as
    ``simulate(..., method="per_failure")``, so the two agree run by run up to float rounding (the
    default per-window sampler for exponential failures agrees with it in distribution only).
    Slow: about 100x :func:`simulate` per run.
    """
    work_, T_, C_, M_, R_, W_, s_, runs_ = _scalar_inputs(work, T, C, M, R, W, slowdown, runs)
    check_simulation_size(runs_)
    final_save = check_final_save(final_save)
    law = as_failure_law(failures)
    _expected_rollbacks_guard(work_, T_, C_, M_, R_, W_, s_, final_save)
    stream = _gap_stream(law, M_, runs_, seed_entropy(seed))
    n = int(segment_count(work_, T_))
    lengths = [T_] * (n - 1) + [min(work_ - (n - 1) * T_, T_)]
    wall = np.empty(runs_)
    n_fail = np.empty(runs_, dtype=np.int64)
    n_roll = np.empty(runs_, dtype=np.int64)
    restart = np.empty(runs_)
    for r in range(runs_):
        wall[r], n_fail[r], n_roll[r], restart[r] = _reference_run(stream.run(r), lengths, C_, R_, W_, s_, final_save)
    failure_free = float(failure_free_wall_time(work_, T_, C_, W_, s_, final_save))
    wall, restart = _add_downtime(wall, n_fail, restart, _downtime(D))
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
