"""A failure rate that changes over the run together with preemptions and a downtime: the schedule's exact expectation.

What happens (one time unit of the caller's choosing; the symbols of :mod:`ckptplan.engine.phases` and
:mod:`ckptplan.engine.preemption`): hardware failures strike at the piecewise-constant rate ``lambda(t) = f_j / M``
of the failure phases (wall time from the job's start); preemptions at the constant rate ``pi = 1 / P`` (the job-level
``preemptions_per_h``: the spot market's rate, which the phases, a statement about the fleet's hardware, do not scale);
both only while the job holds its GPUs (computing, saving, restarting). A segment uses the interval ``T_j`` of the
phase it starts in (:mod:`ckptplan.engine.phases`' policy). A failure loses the work since the last checkpoint, then
the job waits a downtime ``D`` (no full set of nodes: it cannot fail or be preempted, [Bougeret11]) and restarts
(``R``, exposed). A preemption during a segment with a notice ``N >= C`` is met by a save on notice (the work done
so far, at most ``T``, is kept; the save takes ``C``), otherwise it rolls back like a failure; either way the job then
waits ``Wc`` for capacity (no GPUs held) and restarts. A preemption during a restart costs the wait and a new
restart; a failure during a restart costs ``D`` and a new restart. So the unexposed stretches are ``D`` after a
failure, ``U = k C + Wc`` after a preemption of a segment (``k = [N >= C]``), ``Wc`` after a preemption of a
restart.

**The expectation** is :mod:`ckptplan.engine.phases`' martingale argument with this process inside a phase: from a
fresh segment start (the regeneration point: after a save, after a restore) each reward (wall time, failures,
preemptions, save, restart and downtime, capacity wait) per unit of work credited is ``rho_j`` (renewal-reward over
one attempt, the attempt's expectations in closed form, as :func:`ckptplan.engine.preemption.preemption_cycle`,
with the downtime after every failure: the restart sequence from a restart start takes
``(exp(theta R) - 1)(1 + lambda D + pi Wc) / theta``, ``theta = lambda + pi``), and ``t + rho_j w(t) + psi_j(state)``
is a martingale while phase ``j`` lasts (``psi_j`` the expected reward to the next regeneration less ``rho_j`` times
the work credited until then, in closed form for every state: a segment in progress started ``x`` ago, with its
interval; a restart, a downtime, a capacity wait in progress). The work credited in phase ``j`` is
``(L_j + E psi_j(end) - E psi_j(start)) / rho_j`` and the expected wall time ``s_K + rho_K w(s_K) + E psi_K``.

The state at a boundary ``b`` needs the density of restart starts ``r(t)``. Unlike the failures-only model (where
the job is always exposed, so restarts start at the failure rate), it depends on the chance the job is exposed,
``X(t)``, and in a restart, ``P(t)``; neither depends on the schedule (the unexposed stretches and the restart have
fixed lengths), and they solve the delay equations::

    r(t)  = lambda(t - D) X(t - D) + pi (X - P)(t - U) + pi P(t - Wc)
    X'(t) = r(t) - theta(t) X(t)
    P'(t) = r(t) - theta(t) P(t) - r(t - R) exp(-(Theta(t) - Theta(t - R)))

(``X(0) = 1``, ``P(0) = 0``, nothing before 0; ``Theta`` the cumulative ``theta``), integrated once per scenario on a uniform grid (an exponential integrator: the ``-theta`` terms exact, the
rest by the trapezoid rule) (:data:`GRID_STEPS` steps per shortest delay or mean time between interruptions;
the one numerical step besides the boundary quadrature of :mod:`ckptplan.engine.phases`). With ``pi = 0`` and
``D = 0`` the job is always exposed, ``X = 1`` and ``r = lambda`` exactly. The segment starts near ``b`` are the
restore completions ``r(u) exp(-(Theta(u + R) - Theta(u)))`` carried along chains of successful segments (and the one
interruption-free path from the job's start), as in :mod:`ckptplan.engine.phases`.

Assumptions and validity: exponential gaps within a phase for both processes, independent; the notice save always
completes; the last segment is counted as its share of a full one (the constant-rate models' convention: the wall
time is that of the work's share of its last cycle); the job is assumed still running when a phase begins, and a
phase is entered only with at least one interval of work expected to be left (:mod:`ckptplan.engine.phases`' notes). One phase is :func:`ckptplan.engine.preemption.preemption_breakdown`'s process (with the downtime), no
preemption and no downtime :func:`ckptplan.engine.phases.schedule_expectation`'s. The tests hold it to an
event-by-event simulation within 3 standard errors; :mod:`ckptplan.engine.schedule_interruptions_montecarlo`
simulates it for the deadline answer.

[Bougeret11] Bougeret, Casanova, Rabie, Robert, Vivien, "Checkpointing strategies for parallel jobs", SC'11.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .errors import InputError
from .phases import search_intervals, settle_tail

__all__ = ["GRID_STEPS", "MAX_GRID", "REWARDS", "Exposure", "exposure", "interruption_optimal_schedule",
           "interruption_schedule_expectation"]

#: grid steps per shortest positive delay (D, U, Wc, R) or mean time between interruptions at the highest rate
GRID_STEPS = 64
#: most grid points of the delay equations (a finer step past this is coarsened to it)
MAX_GRID = 400_000
#: the rewards carried: wall time, failures, preemptions, save time, exposed restart time, capacity wait, downtime
REWARDS = ("time", "failures", "preemptions", "save", "restart", "wait", "down")
_NQUAD = 4000


class Exposure:
    """The process of a scenario (rates, lengths) and the solution of its delay equations (module notes)."""

    def __init__(self, starts: Any, factors: Any, M: float, P: float, C: float, R: float, D: float, Wc: float,
                 keep: bool, horizon: float):
        self.s = np.asarray(starts, dtype=float)
        self.lam = np.asarray(factors, dtype=float) / M
        self.pi = 0.0 if not np.isfinite(P) else 1.0 / P
        self.C, self.R, self.D, self.Wc, self.k = float(C), float(R), float(D), float(Wc), float(keep)
        self.U = self.k * self.C + self.Wc
        self.Hs = np.concatenate([[0.0], np.cumsum(self.lam[:-1] * np.diff(self.s))])
        self._solve(max(float(horizon), 1e-9))

    def phase(self, t: Any) -> Any:
        return np.maximum(self.s.searchsorted(t, side="right") - 1, 0)

    def Theta(self, t: Any) -> Any:
        """Cumulative failure and preemption rate from 0 to ``t``."""
        t = np.asarray(t, dtype=float)
        j = self.phase(t)
        return self.Hs[j] + self.lam[j] * (t - self.s[j]) + self.pi * t

    def _solve(self, horizon: float) -> None:
        theta_max = float(self.lam.max()) + self.pi
        scales = [v for v in (self.R, self.D, self.U, self.Wc, 1.0 / theta_max) if v > 0]
        h = max(min(scales) / GRID_STEPS, horizon / MAX_GRID)
        n = int(np.ceil(horizon / h)) + 2
        t = np.arange(n) * h
        self.t, self.h = t, h
        lam_t = self.lam[self.phase(t)]
        theta = lam_t + self.pi
        surv_R = np.exp(-(self.Theta(t) - self.Theta(np.maximum(t - self.R, 0.0))))
        lam_D = np.where(t >= self.D, self.lam[self.phase(np.maximum(t - self.D, 0.0))], 0.0)
        X, P, r = np.zeros(n), np.zeros(n), np.zeros(n)
        pi, D, U, Wc, R = self.pi, self.D, self.U, self.Wc, self.R
        dd, du, dw, dr = D / h, U / h, Wc / h, R / h

        def lag(a: np.ndarray, i: int, d: float) -> float:
            x = i - d
            if x < 0:
                return 0.0
            lo = int(x)
            f = x - lo
            return a[lo] * (1.0 - f) + (a[lo + 1] * f if f > 0 else 0.0)

        def rate_in(i: int, x: float, p: float) -> float:
            # r(t_i) with the undelayed terms taken from (x, p), the current values
            out = lam_D[i] * (x if D == 0 else lag(X, i, dd))
            out += pi * ((x - p) if U == 0 else lag(X, i, du) - lag(P, i, du))
            out += pi * (p if Wc == 0 else lag(P, i, dw))
            return out

        X[0] = 1.0
        r[0] = rate_in(0, 1.0, 0.0)
        decay = np.exp(-theta * h)
        gain = -np.expm1(-theta * h) / theta          # int_0^h exp(-theta s) ds: stable however stiff the rate
        # exponential integrator (the -theta terms exact), the other terms by the trapezoid rule: a predictor step
        # with r at the step's start, then r at its end from the predicted values
        for i in range(n - 1):
            back0 = lag(r, i, dr) * surv_R[i] if R > 0 else 0.0
            back1 = lag(r, i + 1, dr) * surv_R[i + 1] if R > 0 else 0.0
            E, G = decay[i], gain[i]
            xp = X[i] * E + G * r[i]
            pp = P[i] * E + G * (r[i] - back0) if R > 0 else 0.0
            X[i + 1], P[i + 1] = xp, pp
            r1 = rate_in(i + 1, xp, pp)
            X[i + 1] = X[i] * E + G * 0.5 * (r[i] + r1)
            P[i + 1] = P[i] * E + G * 0.5 * (r[i] - back0 + r1 - back1) if R > 0 else 0.0
            r[i + 1] = rate_in(i + 1, X[i + 1], P[i + 1])
        self.X, self.P, self.r = X, P, r

    def at(self, name: str, u: Any) -> Any:
        """``X``, ``P`` or ``r`` at times ``u`` (0 before the job's start; linear between grid points)."""
        u = np.asarray(u, dtype=float)
        return np.where(u < 0, 0.0, np.interp(u, self.t, getattr(self, name)))


def exposure(starts: Sequence[float], factors: Sequence[float], M: float, P: float, C: float, R: float, D: float,
             Wc: float, keep: bool, horizon: float) -> Exposure:
    """The delay equations of the module notes solved up to ``horizon`` (the last phase boundary)."""
    return Exposure(starts, factors, M, P, C, R, D, Wc, keep, horizon)


def _chain(e: Exposure) -> dict[str, np.ndarray]:
    """Per phase: each reward of a restart sequence from a restart start (``RC``) and after each event."""
    lam, pi = e.lam, e.pi
    theta = lam + pi
    g = np.expm1(theta * e.R) / theta
    rc = np.stack([g * (1 + lam * e.D + pi * e.Wc), g * lam, g * pi, 0 * g, g, g * pi * e.Wc, g * lam * e.D], axis=1)
    after_fail = rc + np.array([e.D, 1, 0, 0, 0, 0, e.D])
    after_pre_seg = rc + np.array([e.U, 0, 1, e.k * e.C, 0, e.Wc, 0])
    after_pre_rst = rc + np.array([e.Wc, 0, 1, 0, 0, e.Wc, 0])
    return {"rc": rc, "af": after_fail, "aps": after_pre_seg, "apr": after_pre_rst, "theta": theta}


def _segment(e: Exposure, ch: dict[str, np.ndarray], q: int, x: np.ndarray, Tp: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """(rewards to the next regeneration, work credited until then) of segments in progress: started ``x`` ago with
    interval ``Tp``, under phase ``q``'s rates. Rewards: one row per reward of :data:`REWARDS`."""
    lam, pi, th = e.lam[q], e.pi, ch["theta"][q]
    d = Tp + e.C - x
    m = -np.expm1(-th * d)
    ok = 1.0 - m
    rew = (np.outer(np.array([1.0, 0, 0, 0, 0, 0, 0]), m / th) + np.outer(ch["af"][q], lam / th * m)
           + np.outer(ch["aps"][q], pi / th * m) + np.outer(np.array([0, 0, 0, e.C, 0, 0, 0]), ok))
    a = np.clip(Tp - x, 0.0, d)
    ea = np.exp(-th * a)
    J = x * (1.0 - ea) / th + (-np.expm1(-th * a) - th * a * ea) / th ** 2 + Tp * (ea - np.exp(-th * d)) / th
    return rew, ok * Tp + e.k * pi * J


def _rho(e: Exposure, ch: dict[str, np.ndarray], T: np.ndarray) -> np.ndarray:
    """Each reward per unit of work, phase by phase (rows: phases)."""
    out = []
    for q in range(len(e.s)):
        rew, cred = _segment(e, ch, q, np.zeros(1), np.array([T[q]]))
        out.append(rew[:, 0] / cred[0])
    return np.array(out)


def _state(e: Exposure, T: np.ndarray, b: float, nodes: int) -> dict[str, np.ndarray]:
    """The job's state at ``b`` (segments, restarts, downtimes, waits in progress, with their masses)."""
    S = T + e.C
    Tb = e.Theta(b)
    # the interruption-free path: segments back to back from 0
    t = 0.0
    while True:
        nxt = t + S[int(e.phase(t))]
        if nxt > b:
            break
        t = nxt
    starts, masses = [t], [float(np.exp(-Tb))]
    pieces = [(max(float(e.s[p]), b - float(S[p])), min(float(e.s[p + 1]) if p + 1 < len(e.s) else b, b))
              for p in range(len(e.s))]
    pieces = [(lo, hi) for lo, hi in pieces if hi > lo]
    total = sum(hi - lo for lo, hi in pieces)
    xs, ws = [], []
    for lo, hi in pieces:
        k = max(8, int(round(nodes * (hi - lo) / total)))
        xs.append(lo + (hi - lo) / k * (np.arange(k) + 0.5))
        ws.append(np.full(k, (hi - lo) / k))
    x, width = np.concatenate(xs), np.concatenate(ws)
    dens = np.zeros(x.size)
    idx, cur = np.arange(x.size), x.copy()
    while cur.size:
        ok = cur >= e.R
        if ok.any():
            u = cur[ok] - e.R
            np.add.at(dens, idx[ok], e.at("r", u) * np.exp(-(Tb - e.Theta(u))))
        ni, nt = [], []
        for Sp in np.unique(S):
            prev = cur - Sp
            m = prev >= 0
            m[m] &= S[e.phase(prev[m])] == Sp
            ni.append(idx[m])
            nt.append(prev[m])
        idx, cur = np.concatenate(ni), np.concatenate(nt)
    out = {"start": np.concatenate([starts, x]), "mass": np.concatenate([masses, dens * width])}

    def window(length: float) -> tuple[np.ndarray, np.ndarray]:
        span = min(length, b)
        if span <= 0:
            return np.zeros(0), np.zeros(0)
        y = span / nodes * (np.arange(nodes) + 0.5)
        return y, np.full(nodes, span / nodes)

    y, w = window(e.R)
    out["rst_y"], out["rst_m"] = y, e.at("r", b - y) * np.exp(-(Tb - e.Theta(b - y))) * w
    y, w = window(e.D)
    out["down_y"], out["down_m"] = y, e.lam[e.phase(b - y)] * e.at("X", b - y) * w
    y, w = window(e.U)
    out["ps_y"], out["ps_m"] = y, e.pi * (e.at("X", b - y) - e.at("P", b - y)) * w
    y, w = window(e.Wc)
    out["pr_y"], out["pr_m"] = y, e.pi * e.at("P", b - y) * w
    return out


def _potential(e: Exposure, ch: dict[str, np.ndarray], st: dict[str, np.ndarray], b: float, q: int, T: np.ndarray,
               rho: np.ndarray) -> np.ndarray:
    """E psi_q(state at ``b``) for every reward."""
    Tp = T[e.phase(st["start"])]
    rew, cred = _segment(e, ch, q, b - st["start"], Tp)
    out = rew @ st["mass"] - rho[q] * np.dot(cred, st["mass"])
    lam, pi, th = e.lam[q], e.pi, ch["theta"][q]
    rc = ch["rc"][q]
    m = -np.expm1(-th * (e.R - st["rst_y"]))
    restart = (np.outer(np.array([1.0, 0, 0, 0, 1.0, 0, 0]), m / th) + np.outer(ch["af"][q], lam / th * m)
               + np.outer(ch["apr"][q], pi / th * m))
    out = out + restart @ st["rst_m"]
    for key, ys, length, parts in (("down_m", st["down_y"], e.D, None), ("ps_m", st["ps_y"], e.U, "seg"),
                                   ("pr_m", st["pr_y"], e.Wc, "rst")):
        left = length - ys
        block = np.zeros((7, ys.size))
        block[0] = left
        if parts is None:
            block[6] = left
        elif parts == "seg":
            block[3] = np.maximum(e.k * e.C - ys, 0.0)
            block[5] = np.minimum(e.Wc, left)
        else:
            block[5] = left
        out = out + block @ st[key] + rc * np.sum(st[key])
    return out


def interruption_schedule_expectation(work: float, intervals: Sequence[float], e: Exposure,
                                      nodes: int = _NQUAD) -> dict[str, float]:
    """Expected wall time of ``work`` under the schedule and where it goes (module notes): ``total``, ``useful``,
    ``save`` (periodic and on notice), ``rework``, ``restart`` (exposed restarts and downtime), ``wait`` (for
    capacity, no GPUs held), ``failures``, ``preemptions`` (restarts' included) and ``end_phase``. ``e``:
    :func:`exposure` of the scenario, solved up to the last phase boundary at least."""
    T = np.asarray(intervals, dtype=float)
    ch = _chain(e)
    rho = _rho(e, ch, T)
    w, acc, psi_start = float(work), np.zeros(7), np.zeros(7)
    K = len(e.s)
    for j in range(K):
        if j < K - 1:
            b = float(e.s[j + 1])
            st = _state(e, T, b, nodes)
            psi_end = _potential(e, ch, st, b, j, T, rho)
            dw = (b - e.s[j] + psi_end[0] - psi_start[0]) / rho[j][0]
            if dw < w - T[j]:   # an interval of work left to enter the next phase (engine.phases' notes)
                acc += rho[j] * dw + psi_start - psi_end
                acc[0] = b
                w -= dw
                psi_start = _potential(e, ch, st, b, j + 1, T, rho)
                continue
        tot = acc + rho[j] * w + psi_start
        out = {"total": float(tot[0]), "useful": float(work), "save": float(tot[3]),
               "restart": float(tot[4] + tot[6]), "wait": float(tot[5]), "failures": float(tot[1]),
               "preemptions": float(tot[2]), "end_phase": j}
        out["rework"] = max(out["total"] - out["useful"] - out["save"] - out["restart"] - out["wait"], 0.0)
        return out
    raise AssertionError("unreachable: the last phase always ends the job")  # pragma: no cover


def interruption_optimal_schedule(work: float, C: float, M: float, R: float, starts: Sequence[float],
                                  factors: Sequence[float], P: float, N: float, Wc: float, D: float = 0.0,
                                  fixed: Any = None) -> dict[str, Any]:
    """The schedule with the least expected wall time under failure phases, preemptions and a downtime, and the best
    single interval (the search of :func:`ckptplan.engine.phases.optimal_schedule`: from each phase's own optimum
    for failures plus preemptions, :func:`ckptplan.engine.preemption.preemption_optimal_interval`, and from the best
    single interval, Nelder-Mead on the logarithms, keeping the best seen). Returns ``intervals``,
    ``single_interval``, ``per_phase``, ``schedule`` and ``single`` (expectations) and ``exposure``. ``fixed``: the
    intervals the planner states, NaN where optimised (:func:`ckptplan.engine.phases.search_intervals`)."""
    from scipy.optimize import minimize_scalar

    from .preemption import preemption_optimal_interval

    if C <= 0:
        raise InputError("checkpoint_stall_min", C, "must be > 0 with failure phases (a free save has no optimum)")
    starts, factors = np.asarray(starts, dtype=float), np.asarray(factors, dtype=float)
    e = exposure(starts, factors, M, P, C, R, D, Wc, N >= C, float(starts[-1]) + 1.0)
    own = np.asarray(preemption_optimal_interval(C, M / factors, R, P, N, Wc), dtype=float)

    def f(log_t: np.ndarray) -> float:
        T = np.exp(np.clip(log_t, -50.0, 50.0))
        with np.errstate(all="ignore"):
            v = interruption_schedule_expectation(work, T, e, 400)["total"]
        return v if np.isfinite(v) else np.inf

    lo, hi = np.log(own.min() / 4.0), np.log(own.max() * 4.0)
    res1 = minimize_scalar(lambda v: f(np.full(len(own), v)), bounds=(lo, hi), method="bounded",
                           options={"xatol": 1e-6})
    single = float(np.exp(res1.x))
    T = search_intervals(f, own, single, fixed)
    chosen = interruption_schedule_expectation(work, T, e)
    T = settle_tail(T, own, chosen["end_phase"], fixed)
    return {"intervals": T, "single_interval": single, "per_phase": own, "schedule": chosen, "exposure": e,
            "single": interruption_schedule_expectation(work, np.full(len(own), single), e)}
