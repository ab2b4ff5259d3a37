"""Fitting interruption histories: job MTBF, failure shape, restart, save stall and progress lost.

The input is an *events table*, one row per event of a training job, already validated (reading
and checking a log file is the I/O layer's job): columns :data:`EVENTS_TABLE_COLUMNS` = ``row``
(row number in the source, used in notes), ``timestamp`` (``datetime64``, sorted), ``event`` (one
of :data:`EVENTS`, in an allowed sequence), ``cause`` (text, empty except on interruptions),
``checkpoint_stall_s`` (float seconds on ``checkpoint_saved`` rows, NaN when not measured) and
``step`` (float, NaN when not known). :func:`fit_events` applies every estimator to such a table;
:func:`mtbf_estimate` and :func:`weibull_fit` take plain arrays as well. scipy is imported by the
functions that need it, not by this module.

Semantics
---------
The job is *running* from a ``start`` or ``restart_complete`` row until the next
``interruption`` or ``end`` row: that span is a *run segment*. A ``checkpoint_saved`` row is the
moment a checkpoint became restorable (durable), not when the save began. After an interruption the
job resumes from the last ``checkpoint_saved`` before it. Allowed sequences::

    (not running) --start--> running --checkpoint_saved--> running
    running --interruption--> down --restart_complete--> running
    running --end--> (not running);  down --end--> (not running)   # job given up after a failure
    (not running) --start--> running                               # a later launch

Step-level rows (:data:`DETAIL_EVENTS`: steps, the blocking part of saves, restart and start-up
phases) change none of these definitions: the fit reads the lifecycle rows only, and the table's
last row, whatever its event, closes a segment still open; where the wall time went at step level
is :mod:`.goodput`.

If the history stops while the job is running (no ``end``), the last segment is closed at the last
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
* save stall ``C``: the ``checkpoint_stall_s`` values of ``checkpoint_saved`` rows, in minutes
  (the scenario's ``checkpoint_stall_min``).
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
(censored Weibull MLE, likelihood-ratio test of ``k = 1``). :meth:`LogFit.scenario_overrides`
gives the fitted ``job_mtbf_h``, ``restart_min`` and ``checkpoint_stall_min`` for a
:class:`ckptplan.engine.Scenario`. The job MTBF override replaces the node-derived value: the
history measures the whole job (node, domain, software and network failures alike). Planned
interruptions are not in the scenario model.

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

import math
import sys
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .gate import FLOAT_TINY, as_float_array, check_finite_result, ndim_of

__all__ = ["ALL_EVENTS", "DETAIL_EVENTS", "EVENTS", "EVENTS_TABLE_COLUMNS", "LogFit", "MIN_FAILURES_FOR_SHAPE",
           "MinutesSummary", "MtbfEstimate", "PHASES", "PLANNED_CAUSE", "WeibullFit", "check_confidence", "fit_events",
           "mtbf_estimate", "per_event_min", "run_segments", "summarize_minutes", "weibull_fit"]

EVENTS: tuple[str, ...] = ("start", "checkpoint_saved", "interruption", "restart_complete", "end")
"""The lifecycle events a history is made of (lower case), in the sequence of the module docstring."""
DETAIL_EVENTS: tuple[str, ...] = ("step", "save_start", "save_unblocked", "restart_phase", "startup_phase")
"""Step-level events (finished steps, the blocking part of saves, restart and start-up phases); defined in
``ckptplan.files.logs``, measured by :mod:`.goodput`. The fit reads only :data:`EVENTS` rows, apart from the
last row of the table, which closes a run segment still open when the log stops."""
ALL_EVENTS: tuple[str, ...] = EVENTS + DETAIL_EVENTS
"""Every event an events table may hold."""
PHASES: tuple[str, ...] = ("detection", "reallocation", "startup", "init", "load", "warmup")
"""Restart phases in their order (the ``phase`` of ``restart_phase`` and ``startup_phase`` rows)."""
EVENTS_TABLE_COLUMNS: tuple[str, ...] = ("row", "timestamp", "event", "cause", "checkpoint_stall_s", "step", "phase")
"""The columns of an events table, the input of :func:`run_segments` and :func:`fit_events` (which need
all but ``phase``, the column step-level logs added)."""
_FIT_COLUMNS = EVENTS_TABLE_COLUMNS[:6]
PLANNED_CAUSE = "planned"
"""The cause (case-insensitive) of an interruption that is not a failure."""
MIN_FAILURES_FOR_SHAPE = 10
"""Fewest unplanned failures for which :func:`weibull_fit` reports a shape. With fewer, the
likelihood-ratio interval for ``k`` typically spans from well below to well above 1 and the
asymptotic chi-square calibration of the test is poor (Meeker & Escobar 1998, ch. 8)."""

_SHAPE_SEARCH = (0.01, 100.0)  # bracket for the shape MLE and its interval
_MAX_FAILURES = 1e15  # most failures mtbf_estimate takes: whole numbers stay exact in float64 below 2**53


# ------------------------------------------------------------------------------------- segments

def run_segments(events: pd.DataFrame) -> pd.DataFrame:
    """Run segments of a validated events table (module docstring), one row per segment.

    Columns: ``start_row``, ``end_row`` (row numbers in the file; the last row for a segment still
    open when the log stops), ``start``, ``end`` (timestamps), ``running_h``, ``ended_by``
    (``interruption``, ``end`` or ``log_end``), ``planned`` (interruption with cause planned),
    ``failure`` (ended by an unplanned interruption), ``cause``, ``checkpoints`` (saves in the
    segment), ``lost_h`` (progress lost, NaN unless ended by an interruption) and ``lost_steps``
    (NaN unless both steps are known); see the module docstring for the definitions.
    """
    segs: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for r in _lifecycle(events).itertuples(index=False):
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


def _lifecycle(events: pd.DataFrame) -> pd.DataFrame:
    """The rows of :data:`EVENTS` (step-level rows left out; the whole table when it has none)."""
    keep = events["event"].isin(EVENTS)
    return events if bool(keep.all()) else events[keep]


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
    for r in _lifecycle(events).itertuples(index=False):
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
    for r in _lifecycle(events).itertuples(index=False):
        if r.event == "checkpoint_saved":
            if last is not None:
                gaps.append((r.timestamp - last) / pd.Timedelta(minutes=1))
            last = r.timestamp
        else:  # any other event ends or starts a run segment
            last = None
    return np.asarray(gaps, dtype=float)


# ------------------------------------------------------------------------------------ estimators

def _number(name: str, value: Any, rule: str) -> float:
    """``value`` as a float: one finite real number (no bool, text, date, time span, array, or int beyond the
    float64 range), else :class:`InputError` ``(name, value, rule)``."""
    if isinstance(value, (np.datetime64, np.timedelta64)) or ndim_of(value) != 0:
        raise InputError(name, value, rule)
    try:
        return float(as_float_array(name, value))
    except InputError as err:
        raise InputError(name, err.value, rule) from None


def _quiet():
    """numpy's floating-point warnings off: each result is checked (check_finite_result) right after."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def check_confidence(confidence: Any) -> float:
    """``confidence`` as a float in (0, 1); :class:`InputError` otherwise."""
    rule = "must be a number in (0, 1), e.g. 0.9"
    c = _number("confidence", confidence, rule)
    if not 0 < c < 1:
        raise InputError("confidence", confidence, rule)
    return c


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
    T = _number("running_h", running_h, "must be a finite number of hours > 0")
    if not T > 0:
        raise InputError("running_h", running_h, "must be a finite number of hours > 0")
    whole = f"must be a whole number >= 0 and <= {_MAX_FAILURES:.0e}"
    nf = _number("failures", failures, whole)
    if not (0 <= nf <= _MAX_FAILURES and nf == math.floor(nf)):
        raise InputError("failures", failures, whole)
    from scipy.special import gammaincinv  # here, not at import: the command line starts without scipy

    def chi2_ppf(p: float, df: int) -> np.float64:
        """The chi-square quantile, as ``scipy.stats.chi2.ppf`` computes it (``2 P^-1(df/2, p)``, the inverse of the
        regularized lower incomplete gamma function), without importing all of scipy.stats (0.3-0.6 s)."""
        return 2 * gammaincinv(df / 2, p)

    c = check_confidence(confidence)
    n = int(nf)
    named = {"running_h": np.asarray(T), "failures": np.asarray(float(n))}
    if n == 0:
        with _quiet():
            lower = 2 * np.float64(T) / chi2_ppf(c, 2)
        check_finite_result("running_h", lower, "the lower MTBF bound 2T/chi2 overflows", named)
        return MtbfEstimate(0, T, c, None, float(lower), None,
                            f"no unplanned failures in {T:.4g} running hours: only a one-sided lower bound "
                            f"exists (M >= {lower:.4g} h with {c:.0%} confidence)")
    with _quiet():
        lower = 2 * np.float64(T) / chi2_ppf((1 + c) / 2, 2 * n + 2)
        upper = 2 * np.float64(T) / chi2_ppf((1 - c) / 2, 2 * n)
    check_finite_result("running_h", np.array([lower, upper]), "the MTBF bounds 2T/chi2 overflow", named)
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
    from scipy import special  # here, not at import: the command line starts without scipy

    c = check_confidence(confidence)
    t, f = _durations(running_h, failed)
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
    unit, x, fx = _in_longest_units(t, f)
    k_hat, k_lo, k_hi, lr, p, notes = _shape_mle(x, fx, d, c)
    with _quiet():
        scale_h = unit * (np.sum(x ** k_hat) / d) ** (1.0 / k_hat)
        mean_h = scale_h * special.gamma(1.0 + 1.0 / k_hat)
    if not (np.isfinite(scale_h) and np.isfinite(mean_h)):
        raise InputError("running_h", unit, f"the Weibull scale and mean at the fitted shape {k_hat:.3g} (longest "
                         f"duration {unit:.6g} h) overflow: results must stay within the float64 range "
                         f"(|x| <= {sys.float_info.max:.6g})")
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


def _durations(running_h: Any, failed: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`weibull_fit`'s data checked: (durations >= 0 in hours, whether each ended in a failure)."""
    if ndim_of(running_h) == 0:
        raise InputError("running_h", running_h, "must be a non-empty 1-D array of durations (h)")
    t = as_float_array("running_h", running_h).reshape(-1)
    if t.size == 0:
        raise InputError("running_h", running_h, "must be a non-empty 1-D array of durations (h)")
    try:
        f = np.asarray(failed).reshape(-1) if ndim_of(failed) else None
    except (ValueError, TypeError, OverflowError, RecursionError):
        f = None
    if f is None or f.shape != t.shape or f.dtype.kind != "b":
        raise InputError("failed", failed, f"must be a boolean array with the same length as running_h ({t.size})")
    bad = t < 0
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError("running_h", float(t[i]), "must be finite and >= 0", (i,))
    return t, f


def _in_longest_units(t: np.ndarray, f: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(the longest duration, the durations over it, whether each failed), censored durations of 0 left out (they
    add nothing to the likelihood): the fit works on ``x <= 1``, where ``x**k`` cannot overflow."""
    keep = f | (t > 0)  # a censored duration of 0 adds nothing to the likelihood
    unit = float(t[keep].max())  # fit in units of the longest duration: x <= 1, no overflow of x**k
    with _quiet():
        x, fx = t[keep] / unit, f[keep]
    if x[fx].min() < FLOAT_TINY:
        i = int(np.flatnonzero(f & (t == t[f].min()))[0])
        raise InputError("running_h", float(t[i]), f"the shortest failure time over the longest duration ({unit:.6g} h) "
                         f"must be >= {FLOAT_TINY:.6g} (the smallest normal float64): the durations span too wide a "
                         "range to fit", (i,))
    return unit, x, fx


def _shape_mle(x: np.ndarray, fx: np.ndarray, d: int, c: float
               ) -> tuple[float, float | None, float | None, float, float, list[str]]:
    """The censored Weibull MLE of the shape on scaled durations: (k_hat, the profile-likelihood interval's ends
    at confidence ``c`` (None beyond the search range), the LR statistic of ``k = 1``, its p-value, notes)."""
    from scipy import optimize, stats  # here, not at import: the command line starts without scipy

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
    return k_hat, k_lo, k_hi, lr, p, notes


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
    v = as_float_array("values_min", values_min).reshape(-1)
    if v.size == 0:
        return None
    with _quiet():
        figures = np.array([v.mean(), np.median(v), np.percentile(v, 90), v.max()])
        if not np.isfinite(figures).all():  # a sum or difference overflowed: the figures of v / max|v|, scaled back
            scale = np.abs(v).max()
            u = v / scale
            figures = np.array([u.mean(), np.median(u), np.percentile(u, 90), u.max()]) * scale
    check_finite_result("values_min", figures, "the summary (mean, median, 90th percentile) overflows")
    return MinutesSummary(int(v.size), *(float(x) for x in figures))


def per_event_min(values_min: Any) -> float | None:
    """The planning input a log gives for a per-event time (save stall, restart): the **mean** of the
    events' minutes (``None`` without any). The one estimator of ``checkpoint_stall_min`` and
    ``restart_min`` for :func:`fit_events` (``ckptplan fit``) and :mod:`.measured` (``ckptplan actual``),
    so the same log gives the same stall and restart through both.

    Why the mean and not the median: the planning model's waste is linear in the stall and the
    restart per event (``C/T``, ``R/M``), so its expectation needs the expected time per event; a few
    slow saves (a congested file system) do cost their full time, and ``saves x mean`` is exactly the
    save bucket the measured split counts. The median is robust to those saves precisely by leaving
    their cost out: with a right-skewed stall it plans too little waste. The median and the 90th
    percentile stay in :class:`MinutesSummary` for judging the skew (and the split notes a skewed stall).
    """
    summary = summarize_minutes(values_min)
    return None if summary is None else summary.mean_min


# ------------------------------------------------------------------------------------------- fit

@dataclass(frozen=True)
class LogFit:
    """Everything :func:`fit_events` estimates from one log (units in the names; ``None`` = not estimable).

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

        Means, not medians (:func:`per_event_min` says why; ``ckptplan actual`` uses the same
        estimator); the medians and 90th percentiles are in the fit for judging skew.
        """
        out: dict[str, float] = {}
        if self.mtbf.mtbf_h is not None:
            out["job_mtbf_h"] = self.mtbf.mtbf_h
        if self.restart is not None:
            out["restart_min"] = self.restart.mean_min  # per_event_min: the same estimator as ckptplan actual
        if self.stall is not None:
            out["checkpoint_stall_min"] = self.stall.mean_min
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (no NaN: missing figures are ``None``), with ``scenario_overrides``."""
        data = asdict(self)
        data["notes"] = list(self.notes)
        data["scenario_overrides"] = self.scenario_overrides()
        return data


def fit_events(events: pd.DataFrame, source: str, confidence: float = 0.9) -> LogFit:
    """Estimate job MTBF, failure shape, restart, stall and progress lost from a validated events
    table (module docstring) read from ``source`` (the name the fit and its errors carry).

    * job MTBF: :func:`mtbf_estimate` with ``T`` = running hours, ``n`` = unplanned interruptions;
    * shape: :func:`weibull_fit` of run-segment lengths, segments ending in an unplanned
      interruption as failures, every other segment (planned interruption, ``end``, log end)
      right-censored;
    * restart, stall and checkpoint interval: :func:`summarize_minutes`;
    * progress lost: module docstring.

    The table is not validated again: only its columns are checked. Raises :class:`InputError` for
    a bad ``confidence``, a missing column or a table without running time.
    """
    c = check_confidence(confidence)
    if not isinstance(events, pd.DataFrame):
        raise InputError("events", type(events).__name__, "must be a pandas DataFrame (an events table)")
    missing = [col for col in _FIT_COLUMNS if col not in events.columns]
    if missing:
        raise InputError("events", list(events.columns), f"missing column(s) {', '.join(missing)}; an events "
                                                         f"table has {', '.join(EVENTS_TABLE_COLUMNS)}")
    segs = run_segments(events)
    running_h = float(segs["running_h"].sum())
    if not running_h > 0:
        raise InputError("interruption log", source, "has no running time (every run segment has length 0): "
                                                     "nothing to fit")
    n = int(segs["failure"].sum())
    interrupted = segs[segs["ended_by"] == "interruption"]
    notes: list[str] = []
    restarts, unrestarted = _restart_minutes(events)
    stalls = events.loc[events["event"] == "checkpoint_saved", "checkpoint_stall_s"].to_numpy(dtype=float)
    measured = stalls[~np.isnan(stalls)] / 60.0
    if (segs["ended_by"] == "log_end").any():
        notes.append(f"the log stops while the job is running: the last run segment is closed at the last row "
                     f"(row {int(segs['end_row'].iloc[-1])}); add an 'end' row to count running time after it")
    if unrestarted:
        notes.append(f"{unrestarted} interruption(s) without a restart_complete (job ended or log stopped while "
                     "down): no restart time for them")
    checkpoints = int((events["event"] == "checkpoint_saved").sum())
    if measured.size == 0:
        notes.append("no checkpoint_stall_s values on checkpoint_saved rows: save stall not estimated"
                     if checkpoints else "no checkpoint_saved rows: save stall and checkpoint interval not estimated")
    elif measured.size < checkpoints:
        notes.append(f"checkpoint_stall_s given on {measured.size} of {checkpoints} checkpoint_saved rows")
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
        source=source, confidence=c, rows=len(events),
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
