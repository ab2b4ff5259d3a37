"""A failure rate that changes over the run with asynchronous saves: the schedule's exact expectation.

The single-level asynchronous model (:func:`ckptplan.engine.waste.expected_wall_time`): a save blocks training for
``C``, then its write runs ``W`` in the background while training runs at ``1 - slowdown`` of its speed; the
checkpoint is restorable only once durable, so a failure during the write falls back to the previous one. From a
durable moment in steady state (the previous write's ``W (1 - slowdown)`` of work already done) the next is
reached after ``P = T + C + W slowdown`` of wall time; after a restore (no write pending) after
``L = T + C + W``. With failures of rate ``1/M`` (restarts ``R`` restarted by a failure) that gives
``E = M exp(R/M) exp(L/M) (1 - exp(-P/M)) work / T``.

Here the failure rate is the piecewise-constant ``lambda(t) = f_j / M`` of the failure phases
(:mod:`ckptplan.engine.phases`) and the interval ``T_j`` the one of the phase the job is in at a durable moment or
a restore (when the next interval starts). The regeneration points are of two kinds: a durable moment (*N*: the
next one ``P`` later unless a failure strikes) and a restore (*A*: ``L`` later). Per phase, ``rho_j`` is the
expected wall time from an *N* point to the next, per ``T_j`` of work (the formula above, per unit of work), and
``psi_j`` the expected reward to the next *N* point less ``rho_j`` times the work credited: 0 at an *N* point,
``psi_A = tau_A - rho_j T_j`` at a restore (``tau_A``: the expected time from a restore to the next durable moment,
``(1 - q_L)(1/lambda + R') / q_L + L``-type closed form: :func:`_phase_constants`), closed form for an attempt
under way (started ``x`` ago, of either kind) and a restart under way. The martingale argument of
:mod:`ckptplan.engine.phases` then gives the work done per phase and the expected wall time
``s_K + rho_K w(s_K) + E psi_K(state at s_K)``.

The state at a boundary ``b``: restarts start at the failure rate (the job is always exposed), restores complete at
``lambda(u) exp(-(H(u + R) - H(u)))`` (``u`` the restart's start); an *A* attempt under way at ``b`` started at such
a completion; an *N* attempt's start is a durable moment reached along a chain of successful attempts whose root is
a restore (one ``L`` step, then ``P`` steps) or the job's start; its mass is summed over these chains with the
survival to ``b`` (midpoint quadrature over the last attempt's length, the only numerical step, as
:mod:`ckptplan.engine.phases`).

Conventions and validity: the job starts as the steady state does (its first interval takes ``P``: the constant-rate
asynchronous model's convention, so one phase is that model exactly); the last interval is counted as its share of
a full one; exponential gaps within a phase; every interval at least the part of the write it overlaps,
``T_j >= W (1 - slowdown)`` (:func:`ckptplan.engine.waste.check_async_write`); a downtime or preemptions are not
modelled with it. The job's expected state at a boundary is carried across it as certain, so the next phase is
entered only when at least one interval ``T_j`` of work is expected to be left at its start; a boundary inside the
job's expected last interval is treated as after its end (the phase-boundary rule of :mod:`ckptplan.engine.phases`'
notes, which say what it leaves out: the runs a failure pushes past such a boundary do see the next phase).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .errors import InputError
from .phases import search_intervals, settle_tail

__all__ = ["async_optimal_schedule", "async_schedule_expectation"]

_NQUAD = 4000


class _Rate:
    def __init__(self, starts: np.ndarray, rates: np.ndarray):
        self.s, self.lam = starts, rates
        self.Hs = np.concatenate([[0.0], np.cumsum(rates[:-1] * np.diff(starts))])

    def phase(self, t: Any) -> Any:
        return np.maximum(self.s.searchsorted(t, side="right") - 1, 0)

    def H(self, t: Any) -> Any:
        t = np.asarray(t, dtype=float)
        j = self.phase(t)
        return self.Hs[j] + self.lam[j] * (t - self.s[j])


def _phase_constants(lam: np.ndarray, T: np.ndarray, C: float, R: float, W: float, sd: float) -> dict[str, Any]:
    """Per phase: rewards (time, failures, save, restart) from an *N* point to the next, ``rho`` and ``psi_A``."""
    P, L = T + C + W * sd, T + C + W
    nfr = np.expm1(lam * R)                       # failures within one restart sequence
    Rr = nfr / lam                                # its expected time
    after_fail = np.stack([Rr, 1.0 + nfr, 0 * Rr, Rr], axis=1)
    qP, qL = np.exp(-lam * P), np.exp(-lam * L)
    save = C + W * sd
    unit = np.array([1.0, 0, 0, 0])
    attempt_L = np.outer(-np.expm1(-lam * L) / lam, unit) + (1 - qL)[:, None] * after_fail \
        + np.outer(qL * save, np.array([0, 0, 1.0, 0]))
    tau_A = attempt_L / qL[:, None]               # from a restore to the next durable moment (geometric attempts)
    from_N = np.outer(-np.expm1(-lam * P) / lam, unit) + (1 - qP)[:, None] * (after_fail + tau_A) \
        + np.outer(qP * save, np.array([0, 0, 1.0, 0]))
    rho = from_N / T[:, None]
    return {"P": P, "L": L, "Rr": Rr, "after_fail": after_fail, "rho": rho, "psi_A": tau_A - rho * T[:, None],
            "save": save}


def _chains(rate: _Rate, T: np.ndarray, k: dict[str, Any], R: float, b: float, x: np.ndarray) -> np.ndarray:
    """Mass (with the survival to ``b``) of the durable moments at ``x``: chains of successful attempts back to a
    restore (one ``L`` step) or to the job's start's chain (handled apart)."""
    P, L = k["P"], k["L"]
    Hb = rate.H(b)
    dens = np.zeros(x.size)
    idx, cur = np.arange(x.size), x.copy()
    while cur.size:
        for Lp in np.unique(L):                     # the attempt before was the first after a restore
            y = cur - Lp
            m = y >= R
            m[m] &= L[rate.phase(y[m])] == Lp
            u = y[m] - R
            np.add.at(dens, idx[m], rate.lam[rate.phase(u)] * np.exp(-(Hb - rate.H(u))))
        ni, nt = [], []
        for Pp in np.unique(P):                     # or a steady one, itself started at a durable moment
            prev = cur - Pp
            m = prev >= 0
            m[m] &= P[rate.phase(prev[m])] == Pp
            ni.append(idx[m])
            nt.append(prev[m])
        idx, cur = np.concatenate(ni), np.concatenate(nt)
    return dens


def _window(rate: _Rate, length: np.ndarray, b: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Midpoints and widths of the starts ``x`` whose attempt (of the phase's ``length``) is under way at ``b``."""
    pieces = [(max(float(rate.s[p]), b - float(length[p])), min(float(rate.s[p + 1]) if p + 1 < len(rate.s) else b, b))
              for p in range(len(rate.s))]
    pieces = [(lo, hi) for lo, hi in pieces if hi > lo]
    total = sum(hi - lo for lo, hi in pieces)
    xs, ws = [np.zeros(0)], [np.zeros(0)]
    for lo, hi in pieces:
        n = max(8, int(round(nodes * (hi - lo) / total)))
        xs.append(lo + (hi - lo) / n * (np.arange(n) + 0.5))
        ws.append(np.full(n, (hi - lo) / n))
    return np.concatenate(xs), np.concatenate(ws)


def _state(rate: _Rate, T: np.ndarray, k: dict[str, Any], R: float, b: float, nodes: int) -> dict[str, np.ndarray]:
    """Attempts (start, kind, mass) and restarts (elapsed, mass) under way at ``b``."""
    Hb = rate.H(b)
    t = 0.0                                          # the failure-free path: durable moments P apart from 0
    while t + k["P"][int(rate.phase(t))] <= b:
        t += k["P"][int(rate.phase(t))]
    xn, wn = _window(rate, k["P"], b, nodes)
    mn = _chains(rate, T, k, R, b, xn) * wn
    xa, wa = _window(rate, k["L"], b, nodes)
    ok = xa >= R
    ma = np.where(ok, rate.lam[rate.phase(np.maximum(xa - R, 0))] * np.exp(-(Hb - rate.H(np.maximum(xa - R, 0)))), 0.0)
    span = min(R, b)
    y = span / nodes * (np.arange(nodes) + 0.5) if span > 0 else np.zeros(0)
    rm = rate.lam[rate.phase(b - y)] * np.exp(-(Hb - rate.H(b - y))) * (span / nodes) if span > 0 else np.zeros(0)
    return {"start": np.concatenate([[t], xn, xa]), "steady": np.concatenate([[True], np.ones(xn.size, bool),
                                                                              np.zeros(xa.size, bool)]),
            "mass": np.concatenate([[float(np.exp(-Hb))], mn, ma * wa]), "rst_y": y, "rst_m": rm}


def _potential(rate: _Rate, T: np.ndarray, k: dict[str, Any], st: dict[str, np.ndarray], b: float, q: int,
               C: float, W: float, sd: float, R: float) -> np.ndarray:
    """E psi_q(state at ``b``), every reward."""
    lam = rate.lam[q]
    Tp = T[rate.phase(st["start"])]
    length = Tp + C + W * np.where(st["steady"], sd, 1.0)
    d = length - (b - st["start"])
    fail = -np.expm1(-lam * d)
    ok = 1.0 - fail
    m = st["mass"]
    back = k["after_fail"][q] + k["psi_A"][q]
    out = np.array([np.dot(m, fail) / lam, 0.0, np.dot(m, ok) * k["save"], 0.0]) + np.dot(m, fail) * back
    out[0] -= k["rho"][q][0] * np.dot(m, ok * Tp)
    out[1:] -= k["rho"][q][1:] * np.dot(m, ok * Tp)
    rf = -np.expm1(-lam * (R - st["rst_y"]))
    rm = st["rst_m"]
    out += np.array([np.dot(rm, rf) / lam, 0.0, 0.0, np.dot(rm, rf) / lam]) + np.dot(rm, rf) * k["after_fail"][q] \
        + np.sum(rm) * k["psi_A"][q]
    return out


def async_schedule_expectation(work: float, intervals: Sequence[float], C: float, M: float, R: float, W: float,
                               slowdown: float, starts: Sequence[float], factors: Sequence[float],
                               nodes: int = _NQUAD) -> dict[str, float]:
    """Expected wall time of ``work`` under the schedule with asynchronous saves, and where it goes: ``total``,
    ``useful``, ``save`` (stalls and throughput lost to writes), ``rework``, ``restart``, ``failures`` and
    ``end_phase`` (module notes; one time unit). One phase is :func:`ckptplan.engine.waste.time_breakdown`."""
    T = np.asarray(intervals, dtype=float)
    if np.any(W * (1.0 - slowdown) > T * (1 + 1e-12)):
        raise InputError("async_write_min", W, "the background write must be durable before the next save starts: "
                         "W * (1 - slowdown) must be <= every interval of the schedule")
    rate = _Rate(np.asarray(starts, dtype=float), np.asarray(factors, dtype=float) / M)
    k = _phase_constants(rate.lam, T, C, R, W, slowdown)
    w, acc, psi_start = float(work), np.zeros(4), np.zeros(4)
    K = len(rate.s)
    for j in range(K):
        if j < K - 1:
            b = float(rate.s[j + 1])
            st = _state(rate, T, k, R, b, nodes)
            psi_end = _potential(rate, T, k, st, b, j, C, W, slowdown, R)
            dw = (b - rate.s[j] + psi_end[0] - psi_start[0]) / k["rho"][j][0]
            if dw < w - T[j]:   # an interval of work left to enter the next phase (engine.phases' notes)
                acc += k["rho"][j] * dw + psi_start - psi_end
                acc[0] = b
                w -= dw
                psi_start = _potential(rate, T, k, st, b, j + 1, C, W, slowdown, R)
                continue
        tot = acc + k["rho"][j] * w + psi_start
        out = {"total": float(tot[0]), "useful": float(work), "failures": float(tot[1]), "save": float(tot[2]),
               "restart": float(tot[3]), "end_phase": j}
        out["rework"] = max(out["total"] - out["useful"] - out["save"] - out["restart"], 0.0)
        return out
    raise AssertionError("unreachable: the last phase always ends the job")  # pragma: no cover


def async_optimal_schedule(work: float, C: float, M: float, R: float, W: float, slowdown: float,
                           starts: Sequence[float], factors: Sequence[float], fixed: Any = None) -> dict[str, Any]:
    """The schedule with the least expected wall time with asynchronous saves, and the best single interval (the
    search of :func:`ckptplan.engine.phases.optimal_schedule`, from each phase's own exact asynchronous optimum,
    :func:`ckptplan.engine.waste.exact_optimal_interval`, every interval kept at least ``W (1 - slowdown)``; ``fixed``: the stated intervals, NaN where optimised)."""
    from scipy.optimize import minimize_scalar

    from .waste import exact_optimal_interval_kernel

    if C <= 0 and W * slowdown <= 0:
        raise InputError("checkpoint_stall_min", C, "must be > 0 with failure phases (a free save has no optimum)")
    factors = np.asarray(factors, dtype=float)
    Mj = M / factors
    own = np.asarray(exact_optimal_interval_kernel(np.full_like(Mj, C), Mj, np.full_like(Mj, W),
                                                   np.full_like(Mj, slowdown)), dtype=float)
    floor = W * (1.0 - slowdown)

    def f(log_t: np.ndarray) -> float:
        T = np.exp(np.clip(log_t, -50.0, 50.0))
        if np.any(T < floor):
            return np.inf
        with np.errstate(all="ignore"):
            v = async_schedule_expectation(work, T, C, M, R, W, slowdown, starts, factors, 400)["total"]
        return v if np.isfinite(v) else np.inf

    lo, hi = np.log(max(own.min() / 4.0, floor)), np.log(own.max() * 4.0)
    res1 = minimize_scalar(lambda v: f(np.full(len(own), v)), bounds=(lo, hi), method="bounded",
                           options={"xatol": 1e-6})
    single = float(np.exp(res1.x))
    T = search_intervals(f, own, single, fixed)
    chosen = async_schedule_expectation(work, T, C, M, R, W, slowdown, starts, factors)
    T = settle_tail(T, own, chosen["end_phase"], fixed)
    return {"intervals": T, "single_interval": single, "per_phase": own, "schedule": chosen,
            "single": async_schedule_expectation(work, np.full(len(own), single), C, M, R, W, slowdown, starts,
                                                 factors)}
