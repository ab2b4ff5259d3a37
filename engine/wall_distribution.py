"""The finite job's wall time as a distribution: exact moments, P(finish by a deadline), percentiles.

:mod:`engine.finite` gives the exact *expected* wall time of the finite job for exponential
failures; :mod:`engine.montecarlo` simulates its whole distribution. This module gives the
distribution without simulation: the exact mean, variance and third central moment of the wall
time, and from them P(finish by a deadline) and any percentile by a translated-gamma
approximation, in closed form (vectorised; the workbook writes the same formulas in Excel).
Model, symbols and windows exactly as :mod:`engine.finite` (segments ``T``, stall ``C``, async
write ``W`` at ``1 - slowdown`` speed, restart ``R``, failures at rate ``1/M`` striking compute,
saves, writes and restarts alike, ``final_save`` optional). One time unit of the caller's choosing.

Derivation (exponential failures)
---------------------------------
Lengths below are in units of ``M``: ``x = c/M`` for a window, ``y = R/M`` for the restart. The
job is a chain of windows between milestones (:mod:`engine.finite`); by memorylessness each
window's completion time is independent of the others, so the cumulants of the wall time are the
sums of the windows' cumulants (mean, variance and third central moment are the first three).

* *Time to a failure inside an attempt of length x*: ``Y ~ Exp(1)`` conditioned on ``Y < x``; its
  cumulants, with ``B = x/(e^x - 1)``, are ``k1 = 1 - B``, ``k2 = 1 - B(B + x)``,
  ``k3 = 2 - B(B + x)(2B + x)`` (derivatives of its cumulant generating function
  ``log(1/(1 - t)) + log((1 - e^{-(1-t)x})/(1 - e^{-x}))``). Below ``x = 0.5`` their Taylor series
  (Bernoulli numbers, to ``x^14``) replace the closed forms, which cancel there.
* *Failures before success*: attempts of length ``x`` fail independently with probability
  ``1 - e^{-x}``, so their number ``N`` is geometric with cumulants ``E``, ``E e^x``,
  ``E e^x (1 + 2E)``, ``E = e^x - 1``.
* *Restart* ``D`` (a restart of length ``y`` retried until one completes [Kulkarni87;
  Chimento93]): ``D = y + sum_{i<=N_y} Y_i``, a random sum. For ``S = sum_{i<=N} V_i`` the
  cumulant generating function is ``K_N(K_V(t))``, so ``s1 = n1 v1``, ``s2 = n2 v1^2 + n1 v2``,
  ``s3 = n3 v1^3 + 3 n2 v1 v2 + n1 v3`` (cumulants ``n`` of ``N``, ``v`` of ``V``). With a
  downtime ``delta`` (in units of ``M``: the wait for a node after every failure, during which the
  job cannot fail; :func:`engine.waste.expected_wall_time`'s ``D``) before the restart and before
  each retry: ``D = delta + y + sum_{i<=N_y} (Y_i + delta)``, the same random sum with ``v1 + delta``,
  plus ``delta``; its mean is ``e^y (1 + delta) - 1``, and every mean below gains the factor
  ``1 + delta`` on its exposed part (Wald: each failure costs one ``delta``).
* *Clean window* ``Q(x)`` (started right after a restart, or at the job's start): ``Q = x + S``
  with ``V = Y_x + D``. Its mean is ``e^y (e^x - 1)`` and, for ``R = 0``, its variance the classic
  ``e^{2x} - 1 - 2x e^x`` of the completion time of a task restarted from scratch after each
  failure [Kulkarni87; Chimento93].
* *Flow window* ``Z`` (from a milestone reached without failure, length ``f``, clean length
  ``c``): it ends after ``f`` with probability ``p = e^{-f}``; otherwise it takes
  ``A = Y_f + D + Q(c)``. For this two-point mixture, with ``q = 1 - p`` and
  ``d = E[A] - f``: mean ``f + q d``, variance ``q a2 + p q d^2``, third central moment
  ``q a3 + 3 p q a2 d + p q (p - q) d^3``.
* The job: the first window clean, the ``last - 1`` full windows and the last window in flow
  (lengths in :func:`engine.finite.failure_free_wall_time`). The mean equals
  :func:`engine.finite.finite_expected_wall_time` (computed by the same expression).

Every term above is a sum of non-negative parts (no cancellation) except the mixture's last; the
moments are exact up to rounding (relative ~1e-12 for windows of 1e-3 M and longer).

From moments to probabilities
-----------------------------
With mean ``mu``, standard deviation ``sigma`` and skewness ``g``, the wall time is approximated
by a translated gamma distribution with the same three moments [Seal77] (``a + Gamma(4/g^2)``
scaled), whose quantiles are taken from the Wilson-Hilferty cube-root normal approximation
[Wilson31] (the "WH" approximation of risk theory [Pentikainen87]). With ``h = g/6``, ``z`` the
standard normal quantile of ``p`` and ``v = z - h``::

    wall_p = mu + sigma * (v + h v^2 + h^2 v^3 / 3)

which agrees with the Cornish-Fisher expansion ``mu + sigma (z + h (z^2 - 1))`` to first order in
``g`` [Cornish37] but stays monotone for any skewness. Its exact inverse gives the probability:
``t = (deadline - mu)/sigma``, ``u = (1 + 3 h t)^(1/3)``, ``P = Phi(3 t / (u^2 + u + 1) + h)``
(``P = 0`` where ``1 + 3 h t <= 0``, below the gamma's support). Then the two facts known
exactly: the job never finishes before its failure-free wall time ``w0`` (``P = 0`` there), and it
finishes at exactly ``w0`` with probability ``e^{-w0/M}`` (no failure at all), so
``P >= e^{-w0/M}`` from ``w0`` on and every percentile below that probability is ``w0``.
P(finish by the ``p``-quantile) is ``p``: the two answers are consistent.

Validity range (the flag of :func:`wall_time_approximation_ok`)
--------------------------------------------------------------
Checked against the Monte Carlo (10^5 runs, ``tests/test_wall_distribution.py``,
``benchmarks/bench_wall_distribution.py``): within 1 percentage point of P(finish) for deadlines
from the P10 to the P90, and P50/P90/P99 within 0.1 standard deviation of the simulated ones
(the largest differences found: ``benchmarks/RESULTS.md``), when all of these hold:

* at least :data:`MIN_FAILURES` expected failures per run (a sum of few window times is not
  near-normal, and the no-failure atom ``e^{-m}`` is large);
* skewness at most :data:`MAX_SKEWNESS`;
* restarts not so much longer than the windows that the wall time clusters on a lattice of
  "k failures" steps: ``ripple = exp(-2 pi^2 m s^2/J^2) / (pi sqrt(2 pi m))`` at most
  :data:`MAX_RIPPLE`, with ``m`` the expected failures, ``J`` the mean time one failure costs in
  a full window (time lost plus restart) and ``s`` the standard deviation of the time lost. This
  is the first Fourier term of a lattice of span ``J`` smoothed by ``m`` such spreads (the lattice
  correction of the Edgeworth expansion [Feller71, ch. XVI]); the spread of failed restarts is left
  out, so it errs on the safe side. With ``R = 0`` it is negligible; with ``R`` several times the
  interval and few failures it is not;
* ``(R + T + C + W)/M <= ``:data:`MAX_EXPONENT` (beyond, the moments overflow: no answer; NaN in
  :func:`engine.evaluate`'s columns, an :class:`InputError` from the functions below).

Failures so rare that the spread of the wall time underflows (a job MTBF of 10^100 h): the wall
time is its failure-free value, variance and skewness 0, P(finish) 1 from the failure-free time on.

Exponential failures only: for Weibull, empirical or clustered failures use the Monte Carlo.

References
----------
* [Kulkarni87] V. G. Kulkarni, V. F. Nicola, K. S. Trivedi, "The completion time of a job on
  multimode systems", Adv. Appl. Prob. 19(4), 932-954, 1987: completion times under restart.
* [Chimento93] P. F. Chimento, K. S. Trivedi, "The completion time of programs on processors
  subject to failure and repair", IEEE Trans. Computers 42(10), 1184-1194, 1993.
* [Seal77] H. L. Seal, "Approximations to risk theory's F(x, t) by means of the gamma
  distribution", ASTIN Bulletin 9(1-2), 213-218, 1977: the translated gamma.
* [Wilson31] E. B. Wilson, M. M. Hilferty, "The distribution of chi-square", PNAS 17(12),
  684-688, 1931: the cube-root normal approximation of the gamma.
* [Pentikainen87] T. Pentikainen, "Approximative evaluation of the distribution function of
  aggregate claims", ASTIN Bulletin 17(1), 15-39, 1987: WH and other approximations compared.
* [Cornish37] E. A. Cornish, R. A. Fisher, "Moments and cumulants in the specification of
  distributions", Rev. Int. Stat. Inst. 5(4), 307-320, 1937.
* [Feller71] W. Feller, "An Introduction to Probability Theory and Its Applications", vol. II,
  2nd ed., Wiley, 1971, ch. XVI: Edgeworth expansions, lattice distributions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import waste
from .errors import InputError
from .finite import MAX_SEGMENTS, check_final_save, job_geometry
from .gate import as_float_array, prepare

__all__ = [
    "BLOCK_ROWS",
    "deadline_answers_kernel",
    "MAX_EXPONENT",
    "MAX_RIPPLE",
    "MAX_SKEWNESS",
    "MIN_FAILURES",
    "QUANTILES",
    "SERIES_BELOW",
    "SERIES_K1",
    "SERIES_K2",
    "SERIES_K3",
    "deadline_answer",
    "finish_probability",
    "wall_time_approximation_ok",
    "wall_time_moments",
    "wall_time_quantile",
]

#: validity range of the approximation (module notes)
MIN_FAILURES = 6.0
MAX_SKEWNESS = 2.0
MAX_RIPPLE = 0.002
#: (R + T + C + W)/M above this: the third moment would overflow; no answer (NaN)
MAX_EXPONENT = 200.0
#: below this x the truncated-exponential cumulants use their Taylor series
SERIES_BELOW = 0.5
#: Taylor coefficients in powers of u = x^2: k1 = x/2 + u*H1(u), k2 = u*H2(u), k3 = u^2*H3(u)
SERIES_K1 = (-1 / 12, 1 / 720, -1 / 30240, 1 / 1209600, -1 / 47900160, 691 / 1307674368000, -1 / 74724249600)
SERIES_K2 = (1 / 12, -1 / 240, 1 / 6048, -1 / 172800, 1 / 5322240, -691 / 118879488000, 1 / 5748019200)
SERIES_K3 = (1 / 120, -1 / 1512, 1 / 28800, -1 / 665280, 691 / 11887948800, -1 / 479001600)
#: the percentiles evaluate() reports, with their standard normal quantiles (statistics.NormalDist().inv_cdf)
QUANTILES = {0.5: 0.0, 0.9: 1.2815515655446008, 0.99: 2.3263478740408408}

#: rows per block of :func:`deadline_answers_kernel`: the kernel's temporaries (a few dozen arrays of this length)
#: stay in a core's cache instead of streaming through memory once per operation
BLOCK_ROWS = 8192


# ------------------------------------------------------------------------------ the moments

def _horner(coefs: tuple, u: np.ndarray) -> np.ndarray:
    """``sum(coefs[i] u^i)`` by Horner's rule, in place (the first step ``c + u*0`` is ``c``)."""
    out = np.full_like(u, coefs[-1])
    for c in reversed(coefs[:-1]):
        out *= u
        out += c
    return out


def _series(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The truncated-exponential cumulants by their Taylor series (for ``x <`` :data:`SERIES_BELOW`)."""
    u = x * x
    return x / 2.0 + u * _horner(SERIES_K1, u), u * _horner(SERIES_K2, u), u * u * _horner(SERIES_K3, u)


def _closed(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The truncated-exponential cumulants in closed form, ``B = x/(e^x - 1)`` (module notes)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        B = x / np.expm1(x)
        BB = B * (B + x)
        return 1.0 - B, 1.0 - BB, 2.0 - BB * (2.0 * B + x)


def _truncated_exp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cumulants (units of M) of the time to a failure that strikes within an attempt of length x.

    One branch per element: the series where ``x <`` :data:`SERIES_BELOW`, the closed forms elsewhere
    (NaN included), each computed only on its own elements."""
    small = x < SERIES_BELOW
    if small.all():
        return _series(x)
    if not small.any():
        return _closed(x)
    out = (np.empty_like(x), np.empty_like(x), np.empty_like(x))
    for part, rows in ((_series, small), (_closed, ~small)):
        for o, v in zip(out, part(x[rows])):
            o[rows] = v
    return out


def _random_sum(n, v):
    """Cumulants of a sum of N i.i.d. terms V (cumulants n of N, v of V): K_N(K_V(t))."""
    v0v0 = v[0] * v[0]   # products, not ** (numpy's power is ~100x slower than a multiply for a cube)
    return n[0] * v[0], n[1] * v0v0 + n[0] * v[1], n[2] * (v0v0 * v[0]) + 3.0 * n[1] * v[0] * v[1] + n[0] * v[2]


def _attempts(g: dict[str, np.ndarray], M: np.ndarray, R: np.ndarray) -> tuple:
    """The attempt lengths in units of M and their truncated-exponential cumulants: ``(xc, kc, xf, kf)``.

    ``xc`` stacks the clean lengths of the full and last windows and the restart (0, 1, 2); ``xf`` the flow
    lengths of the full and last windows. Without background writes the flow lengths are the clean ones
    (a synchronous table): their cumulants are not computed twice."""
    xc = np.stack(np.broadcast_arrays(g["full_clean"], g["last_clean"], R)) / M
    kc = _truncated_exp(xc)
    if np.array_equal(g["full_flow"], g["full_clean"]) and np.array_equal(g["last_flow"], g["last_clean"]):
        return xc, kc, xc[:2], tuple(a[:2] for a in kc)
    xf = np.stack(np.broadcast_arrays(g["full_flow"], g["last_flow"], R)[:2]) / M
    return xc, kc, xf, _truncated_exp(xf)


def _cumulants(g: dict[str, np.ndarray], M: np.ndarray, R: np.ndarray, Dn: Any = 0.0) -> dict[str, np.ndarray]:
    """Cumulants of the job's wall time (units of M, M^2, M^3) and the parts of the ripple indicator.

    The attempt lengths (:func:`_attempts`) are stacked on a first axis. ``Dn``: the downtime after every
    failure (unexposed, time unit of ``M``).
    """
    last = g["last"]
    with np.errstate(over="ignore", invalid="ignore"):
        x, k, xf, kf = _attempts(g, M, R)
        e, E = np.exp(x), np.expm1(x)
        n = (E, E * e, E * e * (1.0 + 2.0 * E))              # failed attempts before a success: geometric
        dm = Dn / M                                           # the downtime in MTBFs
        ey = e[2] * (1.0 + dm)
        restart = _random_sum(tuple(a[2] for a in n), (k[0][2] + dm,) + tuple(a[2] for a in k[1:]))
        D = (E[2] + dm * e[2], restart[1], restart[2])         # delta + y + n1 (k1 + delta) = e^y (1 + delta) - 1
        V = tuple(a[:2] + b for a, b in zip(k, D))            # one failure of a clean window: time lost + restart
        S = _random_sum(tuple(a[:2] for a in n), V)
        Q = (E[:2] * ey, S[1], S[2])                          # clean windows: full, last
        p, q = np.exp(-xf), -np.expm1(-xf)
        A2, A3 = kf[1] + D[1] + Q[1], kf[2] + D[2] + Q[2]     # after a failure in a flow window
        d = (Q[0] - xf) + kf[0] + D[0]
        Z = (e[:2] * q * ey, q * A2 + p * q * d * d, q * A3 + 3.0 * p * q * A2 * d + p * q * (p - q) * (d * d * d))
        mid = np.maximum(last - 1.0, 0.0)
        cum = [np.where(last == 0, Q[j][1], Q[j][0]) + mid * Z[j][0] + np.where(last >= 1, Z[j][1], 0.0)
               for j in range(3)]
    return {"k1": cum[0], "k2": cum[1], "k3": cum[2], "cost_mean": V[0][0], "cost_var": k[1][0], "ey": ey}


def _scaled(k: np.ndarray, M: np.ndarray, power: int) -> np.ndarray:
    """``M^power k``; where ``M^power`` overflows while the moment is tiny, the product step by step."""
    Mp = M * M if power == 2 else M * M * M
    fine = np.isfinite(Mp)
    if np.all(fine):
        return Mp * k
    stepped = k
    for _ in range(power):
        stepped = stepped * M
    return np.where(fine, Mp * k, stepped)


def _skewness(k2: np.ndarray, k3: np.ndarray) -> np.ndarray:
    """``k3 / k2^1.5``; where ``k2^1.5`` underflows (failures almost never happen) the same ratio in two steps,
    0 for a degenerate law."""
    skew = k3 / (k2 * np.sqrt(k2))
    fine = np.isfinite(skew)
    if np.all(fine):
        return skew
    return np.where(fine, skew, np.where(k2 > 0, (k3 / k2) / np.sqrt(k2), 0.0))


def _kernel(work, T, C, M, R, W, s, final_save: bool, D: Any = 0.0) -> dict[str, np.ndarray]:
    """Moments and validity of validated, broadcast arrays (time unit of the inputs; NaN where out of range);
    ``R`` the exposed restart, ``D`` the downtime after every failure."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        g = job_geometry(work, T, C, W, s, final_save)
        c = _cumulants(g, M, R, D)
        in_range = ((R + T + C + W) / M <= MAX_EXPONENT) & (g["n"] <= MAX_SEGMENTS)
        mean = M * c["k1"]
        var, third = _scaled(c["k2"], M, 2), _scaled(c["k3"], M, 3)
        skew = _skewness(c["k2"], c["k3"])
        failures = c["k1"] / c["ey"]     # failures outside restarts: E[wall] / (M e^{R/M} (1 + D/M)), engine.finite
        lattice = failures * c["cost_var"] / c["cost_mean"] ** 2
        ripple = np.exp(-2.0 * math.pi ** 2 * lattice) / (math.pi * np.sqrt(2.0 * math.pi * failures))
        first = np.where(g["last"] == 0, g["last_clean"], g["full_clean"])
        w0 = first + np.maximum(g["last"] - 1.0, 0.0) * g["full_flow"] + np.where(g["last"] >= 1, g["last_flow"], 0.0)
    ok_numbers = (in_range & np.isfinite(c["k3"]) & np.isfinite(skew) & (c["k2"] >= 0) & np.isfinite(mean)
                  & np.isfinite(var) & np.isfinite(third) & np.isfinite(w0))
    all_ok = bool(np.all(ok_numbers))

    def answer(v: np.ndarray) -> np.ndarray:
        return v if all_ok else np.where(ok_numbers, v, np.nan)

    out = {"mean": answer(mean), "variance": answer(var), "third_central_moment": answer(third),
           "skewness": answer(skew), "failure_free": w0, "p_no_failure": np.exp(-w0 / M), "expected_failures": failures,
           "ripple": answer(np.where(np.isfinite(ripple), ripple, 1.0)), "_in_range": in_range}
    with np.errstate(invalid="ignore"):
        out["ok"] = ok_numbers & (failures >= MIN_FAILURES) & (skew <= MAX_SKEWNESS) & (ripple <= MAX_RIPPLE)
    return out


# ----------------------------------------------------------------- from moments to answers

def _quantile(m: dict[str, np.ndarray], p, z, h=None, sd=None) -> np.ndarray:
    """Translated-gamma (Wilson-Hilferty) quantile at probability p (standard normal quantile z); ``h`` (the
    skewness / 6) and ``sd`` (the standard deviation) when the caller has them already."""
    h = m["skewness"] / 6.0 if h is None else h
    sd = np.sqrt(m["variance"]) if sd is None else sd
    v = z - h
    q = m["mean"] + sd * (v + h * v * v + h * h * (v * v * v) / 3.0)
    q = np.where(p <= m["p_no_failure"], m["failure_free"], np.maximum(q, m["failure_free"]))
    return np.where(np.isnan(m["mean"]), np.nan, q)


def _normal_cdf(z: np.ndarray) -> np.ndarray:
    """Phi(z) = erfc(-z/sqrt(2))/2, vectorised (NaN stays NaN)."""
    from scipy import special  # here, not at import: the command line starts without scipy

    return 0.5 * special.erfc(-np.asarray(z, dtype=np.float64) / math.sqrt(2.0))


def _probability(m: dict[str, np.ndarray], deadline) -> np.ndarray:
    """P(wall <= deadline): translated gamma (Wilson-Hilferty) with the exact no-failure atom and minimum."""
    h = m["skewness"] / 6.0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        t = (deadline - m["mean"]) / np.sqrt(m["variance"])
        a = 1.0 + 3.0 * h * t
        u = np.cbrt(a)
        z = 3.0 * t / (u * u + u + 1.0) + h
    inside = a > 0
    gamma = np.where(inside, _normal_cdf(np.where(inside, z, 0.0)), np.where(h > 0, 0.0, 1.0))
    # no spread at all (failures so rare that the variance underflows): a step at the mean
    flat = m["variance"] == 0
    if np.any(flat):
        gamma = np.where(flat, np.where(deadline >= m["mean"], 1.0, 0.0), gamma)
    p = np.where(deadline < m["failure_free"], 0.0, np.maximum(gamma, m["p_no_failure"]))
    return np.where(np.isnan(m["mean"]), np.nan, p)


def _given_probability(m: dict[str, np.ndarray], deadline: np.ndarray) -> np.ndarray:
    """:func:`_probability` on the rows that give a deadline, NaN on the others (nothing computed for them)."""
    given = ~np.isnan(deadline)
    if np.all(given):
        return _probability(m, deadline)
    out = np.full(np.shape(deadline), np.nan)
    if np.any(given):
        keys = ("mean", "variance", "skewness", "failure_free", "p_no_failure")
        out[given] = _probability({k: np.broadcast_to(m[k], out.shape)[given] for k in keys}, deadline[given])
    return out


def _answers(work, T, C, M, R, W, s, deadline, D, final_save: bool) -> dict[str, np.ndarray]:
    """:func:`deadline_answers_kernel` on one block of 1-d arrays of one length."""
    m = _kernel(work, T, C, M, R, W, s, final_save, D)
    out = {"p_finish_by_deadline": _given_probability(m, deadline)}
    with np.errstate(over="ignore", invalid="ignore"):
        h, sd = m["skewness"] / 6.0, np.sqrt(m["variance"])
        for p, z in QUANTILES.items():
            q = _quantile(m, p, z, h, sd)
            out[f"wall_p{round(p * 100)}"] = np.where(np.isfinite(q), q, np.nan)  # overflowed: no answer either
    out["ok"] = m["ok"]
    return out


def deadline_answers_kernel(work, T, C, M, R, W, s, deadline, final_save: bool = False, D: Any = 0.0
                            ) -> dict[str, np.ndarray]:
    """What evaluate() reports (no final save): P(finish by deadline) (NaN without one), P50/P90/P99, ok.
    ``R`` the exposed restart, ``D`` the downtime after every failure.

    Element by element, in blocks of :data:`BLOCK_ROWS` (the same numbers as one pass over the whole
    arrays, computed where they stay in cache); P(finish) only on the rows that give a deadline."""
    arrays = [np.asarray(a, dtype=np.float64) for a in np.broadcast_arrays(work, T, C, M, R, W, s, deadline, D)]
    shape = arrays[0].shape
    flat = [a.ravel() for a in arrays]
    size = flat[0].size
    if size <= BLOCK_ROWS:
        return {k: v.reshape(shape) for k, v in _answers(*flat, final_save).items()}
    out: dict[str, np.ndarray] = {}
    for start in range(0, size, BLOCK_ROWS):
        block = slice(start, start + BLOCK_ROWS)
        for k, v in _answers(*(a[block] for a in flat), final_save).items():
            if k not in out:
                out[k] = np.empty(size, dtype=v.dtype)
            out[k][block] = v
    return {k: v.reshape(shape) for k, v in out.items()}


# ------------------------------------------------------------------------------ public API

def _answered(m: dict[str, np.ndarray], M: np.ndarray, T: np.ndarray, *results: np.ndarray) -> dict[str, np.ndarray]:
    """The kernel's figures for a public function: :class:`InputError` where there is no answer (NaN).

    ``evaluate()`` reports such rows as NaN (a row of a table); a function called for an answer raises,
    naming the argument and the limit.
    """
    in_range = m.pop("_in_range")
    bad = np.isnan(m["mean"])
    for r in results:
        bad = bad | ~np.isfinite(r)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if np.ndim(bad) else None
        at = idx or ()
        if not np.broadcast_to(in_range, np.shape(bad))[at]:
            n = np.broadcast_to(T, np.shape(bad))[at]
            raise InputError("M", float(np.broadcast_to(M, np.shape(bad))[at]),
                             f"(R + T + C + W)/M is above MAX_EXPONENT = {MAX_EXPONENT:g} (or work/T above "
                             f"{MAX_SEGMENTS:.0e} segments, T = {float(n):.6g}): the wall time's moments overflow, so "
                             "there is no analytic answer; use the Monte Carlo (engine.montecarlo.simulate)", idx)
        raise InputError("M", float(np.broadcast_to(M, np.shape(bad))[at]),
                         "the wall time's moments cannot be computed in float64 for these inputs: use the Monte "
                         "Carlo (engine.montecarlo.simulate)", idx)
    return m

def _prepare(work, T, C, M, R, W, slowdown, final_save, extra=()):
    """Validate and broadcast (work, T, C, M, R, W, slowdown, *extra); check the async constraint."""
    arrays, wrap = prepare(("work", work, "positive"), ("T", T, "positive"), ("C", C, "nonnegative"),
                           ("M", M, "positive"), ("R", R, "nonnegative"), ("W", W, "nonnegative"),
                           ("slowdown", slowdown, "fraction"), *extra)
    waste.check_async_write(arrays[1], arrays[5], arrays[6])
    return arrays, wrap, check_final_save(final_save)


def wall_time_moments(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, final_save=False) -> dict[str, Any]:
    """Exact moments of the finite job's wall time for exponential failures (derivation: module notes).

    Returns a dict (each value the kind of the inputs, time unit of the inputs): ``mean`` (equal to
    :func:`engine.finite.finite_expected_wall_time`), ``variance``, ``third_central_moment``,
    ``skewness``, ``failure_free`` (the least wall time, :func:`engine.finite.failure_free_wall_time`),
    ``p_no_failure`` (``exp(-failure_free/M)``, the chance it is reached), ``expected_failures``
    (failures outside restarts), ``ripple`` (lattice indicator, module notes) and ``ok`` (1.0 where
    the approximations of :func:`finish_probability` and :func:`wall_time_quantile` are inside
    their validity range, else 0.0). Raises :class:`InputError` (on ``M``) where ``(R + T + C + W)/M >``
    :data:`MAX_EXPONENT` (the moments overflow) or the moments cannot be computed in float64.
    Assumptions as :func:`engine.finite.finite_expected_wall_time`: exponential failures striking
    compute, saves, writes and restarts alike; ``W (1 - slowdown) <= T``.
    """
    (work_, T_, C_, M_, R_, W_, s_), wrap, fs = _prepare(work, T, C, M, R, W, slowdown, final_save)
    m = _answered(_kernel(work_, T_, C_, M_, R_, W_, s_, fs), M_, T_)
    return {k: wrap(v.astype(np.float64)) for k, v in m.items()}


def finish_probability(deadline, work, T, C, M, R=0.0, W=0.0, slowdown=0.0, final_save=False):
    """P(the finite job finishes by ``deadline``), exponential failures, no simulation.

    Translated-gamma approximation with the Wilson-Hilferty transform over the exact mean, variance
    and skewness of :func:`wall_time_moments`, 0 before the failure-free wall time and at least
    ``exp(-failure_free/M)`` after it (module notes). Within 1 percentage point of a 10^5-run Monte
    Carlo where :func:`wall_time_approximation_ok` holds (``benchmarks/RESULTS.md``); a planning
    figure elsewhere. ``deadline`` in the unit of the other times, counted from the job's start.
    Raises :class:`InputError` (on ``M``) where ``(R + T + C + W)/M >`` :data:`MAX_EXPONENT`.
    """
    (work_, T_, C_, M_, R_, W_, s_, d_), wrap, fs = _prepare(
        work, T, C, M, R, W, slowdown, final_save, (("deadline", deadline, "positive"),))
    m = _kernel(work_, T_, C_, M_, R_, W_, s_, fs)
    p = _probability(m, d_)
    _answered(m, M_, T_, p)
    return wrap(p)


def wall_time_quantile(p, work, T, C, M, R=0.0, W=0.0, slowdown=0.0, final_save=False):
    """The wall time the finite job finishes by with probability ``p`` (e.g. 0.9 for the P90).

    ``mu + sigma (v + h v^2 + h^2 v^3/3)``, ``h = skewness/6``, ``v = z_p - h`` (translated gamma,
    Wilson-Hilferty; module notes), never below the failure-free wall time, and equal to it for
    ``p <= exp(-failure_free/M)``. The exact inverse of :func:`finish_probability`. ``p`` in (0, 1).
    Validity as :func:`finish_probability`.
    """
    pp = as_float_array("p", p, "fraction")
    if np.any(pp <= 0):
        raise InputError("p", float(np.min(pp)), "must be a probability in (0, 1)")
    (work_, T_, C_, M_, R_, W_, s_, p_), wrap, fs = _prepare(
        work, T, C, M, R, W, slowdown, final_save, (("p", p, "fraction"),))
    from statistics import NormalDist  # loaded only here: evaluate() needs just the constants of QUANTILES

    z = np.asarray(np.frompyfunc(NormalDist().inv_cdf, 1, 1)(p_), dtype=np.float64)
    m = _kernel(work_, T_, C_, M_, R_, W_, s_, fs)
    with np.errstate(over="ignore", invalid="ignore"):
        q = _quantile(m, p_, z)
    _answered(m, M_, T_, q)
    return wrap(q)


def deadline_answer(deadline, work, T, C, M, R=0.0, W=0.0, slowdown=0.0, final_save=False) -> dict[str, Any]:
    """The analytic deadline answer in one call: P(finish by ``deadline``), P50/P90/P99, validity.

    Returns a dict (values the kind of the inputs): ``p_finish`` (:func:`finish_probability`),
    ``wall_p50``, ``wall_p90``, ``wall_p99`` (:func:`wall_time_quantile`, time unit of the inputs)
    and ``ok`` (:func:`wall_time_approximation_ok`, bool). What :func:`engine.evaluate` reports
    per scenario (there with ``final_save=False`` and the scenario's chosen interval).
    """
    (work_, T_, C_, M_, R_, W_, s_, d_), wrap, fs = _prepare(
        work, T, C, M, R, W, slowdown, final_save, (("deadline", deadline, "positive"),))
    a = deadline_answers_kernel(work_, T_, C_, M_, R_, W_, s_, d_, fs)
    if not all(np.all(np.isfinite(a[k])) for k in ("p_finish_by_deadline", "wall_p50", "wall_p90", "wall_p99")):
        m = _kernel(work_, T_, C_, M_, R_, W_, s_, fs)
        _answered(m, M_, T_, a["p_finish_by_deadline"], a["wall_p50"], a["wall_p90"], a["wall_p99"])
    out = {"p_finish": wrap(a["p_finish_by_deadline"])}
    out.update({k: wrap(a[k]) for k in ("wall_p50", "wall_p90", "wall_p99")})
    ok = wrap(a["ok"].astype(np.float64))
    out["ok"] = bool(ok) if isinstance(ok, float) else ok.astype(bool)
    return out


def wall_time_approximation_ok(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, final_save=False):
    """True where :func:`finish_probability` and :func:`wall_time_quantile` are inside their validity range.

    At least :data:`MIN_FAILURES` expected failures, skewness at most :data:`MAX_SKEWNESS`, lattice
    ripple at most :data:`MAX_RIPPLE` and ``(R + T + C + W)/M <=`` :data:`MAX_EXPONENT` (module
    notes). A bool for scalar inputs, a bool array or Series otherwise.
    """
    (work_, T_, C_, M_, R_, W_, s_), wrap, fs = _prepare(work, T, C, M, R, W, slowdown, final_save)
    out = wrap(_kernel(work_, T_, C_, M_, R_, W_, s_, fs)["ok"].astype(np.float64))
    return bool(out) if isinstance(out, float) else out.astype(bool)
