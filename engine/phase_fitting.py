"""Failure phases fitted from an interruption history: a rate per phase, its confidence interval, and a
test of whether the rate changed at all.

The job's failures are taken as a Poisson process whose rate is constant within each phase (phase
``j`` from wall hour ``s_j`` after the job's first start to ``s_{j+1}``) and which runs only while the
job runs (time down does not fail). A phase's exposure ``T_j`` is the running time inside its window,
``n_j`` the unplanned interruptions in it. Then (NIST/SEMATECH e-Handbook, ch. 8.1.7 and 8.4.5;
Meeker & Escobar, *Statistical Methods for Reliability Data*, 1998, ch. 7):

* rate ``lambda_j = n_j / T_j`` (maximum likelihood) with the time-censored chi-square interval
  ``chi2((1-c)/2; 2 n_j) / (2 T_j) <= lambda_j <= chi2((1+c)/2; 2 n_j + 2) / (2 T_j)`` (0 below when
  ``n_j = 0``; the bounds are conservative: coverage at least ``c``);
* the rate changed: the likelihood-ratio statistic of one rate for all phases,
  ``G = 2 sum_j n_j ln(lambda_j / lambda)`` with ``lambda = sum n_j / sum T_j``, is chi-square with
  ``K - 1`` degrees of freedom under a constant rate (Cox & Lewis, *The Statistical Analysis of Series
  of Events*, 1966, for the Poisson comparison); the phases are kept (``changed``) when its p-value is
  below ``level``. The boundaries are given, not searched for: searching for the best one would make
  the chi-square level wrong (a constant-rate history would be split too often).

The phases a scenario takes (:meth:`PhaseFit.scenario_phases`): ``job_mtbf_h = 1 / lambda_K`` (the last
phase's rate, the one the job runs at from then on) and ``rate_factor_j = lambda_j / lambda_K``; a
history whose rate did not change gives no phases and ``job_mtbf_h = sum T / sum n``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import InputError

__all__ = ["PhaseFit", "fit_phase_rates", "segments_from_log"]


@dataclass(frozen=True)
class PhaseFit:
    """Rates per phase (per running hour) and the test of a change; see the module notes."""

    starts_h: tuple[float, ...]
    running_h: tuple[float, ...]
    failures: tuple[int, ...]
    rate_per_h: tuple[float, ...]
    rate_low_per_h: tuple[float, ...]
    rate_high_per_h: tuple[float, ...]
    confidence: float
    lr_statistic: float
    p_value: float
    level: float

    @property
    def changed(self) -> bool:
        """The rate changed between phases (the test rejects one rate at ``level``)."""
        return self.p_value < self.level

    def scenario_phases(self) -> dict[str, Any]:
        """``job_mtbf_h`` and ``failure_phases`` for a scenario (none when the rate did not change)."""
        if not self.changed:
            n, T = sum(self.failures), sum(self.running_h)
            return {"job_mtbf_h": T / n if n else None, "failure_phases": []}
        last = self.rate_per_h[-1]
        if last <= 0:
            raise InputError("failures", 0, "the last phase has no failure: its rate (the job MTBF from then on) "
                             "cannot be fitted; merge it with the phase before")
        return {"job_mtbf_h": 1.0 / last,
                "failure_phases": [{"start_h": s, "rate_factor": r / last}
                                   for s, r in zip(self.starts_h, self.rate_per_h)]}


def _check(name: str, values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InputError(name, values, "must be finite numbers >= 0 (hours from the job's first start)")
    return arr


def fit_phase_rates(run_start_h: Sequence[float], run_end_h: Sequence[float], failure_h: Sequence[float],
                    phase_starts_h: Sequence[float], confidence: float = 0.9, level: float = 0.05) -> PhaseFit:
    """Fit a rate per phase from running spans and failure times (module notes).

    ``run_start_h``/``run_end_h``: the spans the job ran, in wall hours from its first start;
    ``failure_h``: the unplanned interruptions, same clock; ``phase_starts_h``: the phases' starts
    (the first must be 0; increasing). ``confidence`` of the intervals, ``level`` of the test.
    """
    from scipy.stats import chi2

    a, b, f = _check("run_start_h", run_start_h), _check("run_end_h", run_end_h), _check("failure_h", failure_h)
    s = _check("phase_starts_h", phase_starts_h)
    if a.size != b.size or np.any(b < a):
        raise InputError("run_end_h", run_end_h, "must pair with run_start_h, each end at or after its start")
    if s.size == 0 or s[0] != 0 or np.any(np.diff(s) <= 0):
        raise InputError("phase_starts_h", phase_starts_h, "must start at 0 and increase")
    if not (0 < confidence < 1) or not (0 < level < 1):
        raise InputError("confidence", confidence, "confidence and level must be in (0, 1)")
    edges = np.append(s, np.inf)
    exposure = np.array([np.sum(np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0, None))
                         for lo, hi in zip(edges[:-1], edges[1:])])
    n = np.histogram(f, bins=edges)[0]
    if np.any(exposure <= 0):
        j = int(np.flatnonzero(exposure <= 0)[0])
        raise InputError("phase_starts_h", float(s[j]), "the job never ran in this phase: no rate can be fitted")
    with np.errstate(over="ignore"):
        rate = n / exposure
        low = np.where(n > 0, chi2.ppf((1 - confidence) / 2, 2 * np.maximum(n, 1)) / (2 * exposure), 0.0)
        high = chi2.ppf((1 + confidence) / 2, 2 * n + 2) / (2 * exposure)
    if not np.all(np.isfinite(high)):
        j = int(np.flatnonzero(~np.isfinite(high))[0])
        raise InputError("phase_starts_h", float(s[j]),
                         f"the job ran only {exposure[j]:.3g} h in this phase: too short to fit a rate")
    pooled = n.sum() / exposure.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(n > 0, n * np.log(rate / pooled), 0.0)
    g = float(2 * terms.sum()) if pooled > 0 else 0.0
    p = float(chi2.sf(g, s.size - 1)) if s.size > 1 else 1.0
    return PhaseFit(tuple(float(x) for x in s), tuple(float(x) for x in exposure), tuple(int(x) for x in n),
                    tuple(float(x) for x in rate), tuple(float(x) for x in low), tuple(float(x) for x in high),
                    float(confidence), g, p, float(level))


def segments_from_log(segments: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(run starts, run ends, failure times), hours from the first start, from
    :func:`ckptplan.engine.fitting.run_segments`'s table (planned interruptions are not failures)."""
    if len(segments) == 0:
        raise InputError("log", "no run segment", "needs at least one start")
    t0 = segments["start"].min()
    start = (segments["start"] - t0).dt.total_seconds().to_numpy() / 3600.0
    end = (segments["end"] - t0).dt.total_seconds().to_numpy() / 3600.0
    failed = segments["failure"].to_numpy(dtype=bool)
    return start, end, end[failed]
