"""Reference arithmetic the benchmarks compare the engine with, written here from the models' equations (no engine import).

``x_bisect``: a phase's exact optimum over ``M`` (the root of ``(1 - x) exp(x + c) = 1``), by bisection.

``expected_wall_time``: the exact expected wall time of a failure-phase schedule, for one scenario, from the model stated
in the module notes of ``engine/phases.py`` (not from its code):

* failures are a Poisson process of rate ``lam(t) = f_j / M`` on ``[s_j, s_{j+1})`` (wall time from the job's start);
  they strike compute, saves and restarts alike; ``H(t)`` is the rate integrated from 0;
* a segment started in phase ``j`` computes ``T_j`` then saves ``C`` (``S_j = T_j + C`` of wall time) and keeps that
  interval when it straddles a boundary; a failure costs a restart ``R`` (restarted by a failure during it) and the
  segment's work;
* within a phase, Daly's renewal model (FGCS 22(3), 2006): a fresh segment of phase ``j`` takes in expectation
  ``a_j = (exp(lam_j S_j) - 1) exp(lam_j R) / lam_j`` of wall time per ``T_j`` checkpointed, ``rho_j = a_j / T_j``;
* ``psi_j(state)`` = expected time until the next fresh segment start under phase ``j``'s rate, less ``rho_j`` times
  the work checkpointed by then; for a segment that still needs ``d`` of wall time and checkpoints ``T'``, or a restart
  that still needs ``d``:
  ``E_j (1 - exp(-lam_j d)) - a_j (T'/T_j) exp(-lam_j d)`` and ``E_j (1 - exp(-lam_j d))``, ``E_j = exp(lam_j R)/lam_j``;
* optional stopping on ``t + rho_j w + psi_j`` over phase ``j``: work checkpointed in it
  ``dw_j = (s_{j+1} - s_j + E psi_j(at s_{j+1}) - E psi_j(at s_j)) / rho_j``; the job enters phase ``j + 1`` only when
  ``dw_j < w - T_j`` (``w`` the work left at ``s_j``: at least one interval of work left at the boundary), else its
  expected wall time is ``s_j + rho_j w + E psi_j(at s_j)`` (the last segment counted as its share).

The state at a boundary ``b``, for a job still running: a restart in progress whose failure struck at ``b - y``
(density ``lam(b - y) exp(-(H(b) - H(b - y)))``, ``y < R``), or the segment in progress at the end of the failure-free
chain of segments from the last fresh start ``c``: the job's start (mass ``exp(-H(b))``) or the end of a restart
(density ``lam(c - R) exp(-(H(b) - H(c - R)))``, ``R <= c < b``). Here that integral over ``c`` is done exactly: ``c``
is cut wherever the chain's make-up changes (which segment crosses each phase's end) and wherever ``c - R`` changes
phase; on each piece the integrand is a sum of exponentials of ``c``, integrated in closed form. No quadrature rule,
hence no nodes: where the engine's fixed rule is exact the two agree to rounding; where a chain's make-up changes inside
one of the engine's pieces its rule is off by up to a few 1e-7 of the wall time (its module notes: within about 1e-6)
and closes on this figure as its nodes grow (``tests/test_bench_baselines.py``).
"""

from __future__ import annotations

import math

import numpy as np

#: a chain start within this many of its segments of a phase's end (or the boundary) counts as on it (the job's start
#: only; every other chain start is spread over an interval of ``c``, where a single point has no weight)
ON_IT = 1e-9


def x_bisect(c: float) -> float:
    """The root in (0, 1) of (1 - x) exp(x + c) = 1 (a phase's exact optimum over M), by bisection."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if (1 - mid) * math.exp(mid + c) > 1:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _exp_integral(beta: np.ndarray, lo: np.ndarray, hi: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Integral of exp(beta u + shift) over u in (lo, hi) (0 when empty), elementwise."""
    width = np.maximum(hi - lo, 0.0)
    bw = beta * width
    ratio = np.where(np.abs(bw) < 1e-12, width * (1 + bw / 2), np.expm1(bw) / np.where(beta == 0, 1.0, beta))
    return np.where(width > 0, np.exp(beta * lo + shift) * ratio, 0.0)


class _Process:
    """One scenario: phase starts ``s``, rates ``lam``, intervals ``T``, segments ``S``; ``H`` the integrated rate."""

    def __init__(self, T, C, M, R, starts, factors):
        self.s = [float(x) for x in starts]
        self.lam = [float(f) / M for f in factors]
        self.T = [float(t) for t in T]
        self.S = [t + C for t in self.T]
        self.R = float(R)
        self.cum = [0.0]
        for j in range(1, len(self.s)):
            self.cum.append(self.cum[-1] + self.lam[j - 1] * (self.s[j] - self.s[j - 1]))
        # Daly's constants per phase: E (time a failure costs until the next fresh start, its restarts included),
        # a (wall time per successful segment from a fresh start), rho (per unit of work)
        self.E = [math.exp(lam * self.R) / lam for lam in self.lam]
        self.a = [math.expm1(lam * S) * E for lam, S, E in zip(self.lam, self.S, self.E)]
        self.rho = [a / T for a, T in zip(self.a, self.T)]

    def phase(self, t: float) -> int:
        """The phase wall time ``t`` lies in."""
        j = 0
        while j + 1 < len(self.s) and self.s[j + 1] <= t:
            j += 1
        return j

    def H(self, t: float) -> float:
        j = self.phase(t)
        return self.cum[j] + self.lam[j] * (t - self.s[j])

    def phase_end(self, t: int, b: float) -> float:
        return min(self.s[t + 1], b) if t + 1 < len(self.s) else b

    def chain_pieces(self, off: float, prev: int, width: float, b: float) -> list[tuple]:
        """Segment starts ``y = u + off`` for ``u`` in ``(0, width)`` (``prev``: the phase of the segment that ended at
        ``y``), each followed along its failure-free chain to ``b``: pieces ``(lo, hi, delta, i)`` of ``u`` on which the
        segment in progress at ``b`` still needs ``u + delta`` of wall time and was started in phase ``i``. All cuts are
        made in ``u`` (each threshold computed once), so a piece never straddles one."""
        out, todo = [], [(0.0, width, off, prev)]
        while todo:
            lo, hi, off, prev = todo.pop()
            if not hi > lo:
                continue
            cut_b = b - off
            if lo >= cut_b:   # the first start at or after b: the segment in progress at b ends there
                out.append((lo, hi, off - b, prev))
                continue
            if hi > cut_b:
                todo += [(lo, cut_b, off, prev), (cut_b, hi, off, prev)]
                continue
            t = max(j for j in range(len(self.s)) if self.s[j] - off <= lo)   # the phase of the start y = lo + off
            if t + 1 < len(self.s) and hi > self.s[t + 1] - off:
                cut = self.s[t + 1] - off
                todo += [(lo, cut, off, prev), (cut, hi, off, prev)]
                continue
            end, St = self.phase_end(t, b), self.S[t]
            # k segments of phase t take a start y to its first start at or after the phase's end, for
            # y in [end - k St, end - (k - 1) St)
            for k in range(max(math.ceil((end - off - hi) / St), 1), math.ceil((end - off - lo) / St) + 1):
                todo.append((max(lo, end - k * St - off), min(hi, end - (k - 1) * St - off), off + k * St, t))
        return out

    def start_chain(self, b: float) -> tuple[float, int]:
        """(wall time the segment in progress at ``b`` still needs, the phase it started in) on the failure-free path
        from the job's start (starts within ON_IT segments of a phase's end, or of ``b``, count as on it)."""
        y, t = 0.0, 0
        while True:
            end, St = self.phase_end(t, b), self.S[t]
            k = math.ceil((end - y) / St - ON_IT)
            if k > (b - y) / St + ON_IT:   # the first start past the phase's end lies beyond b
                return y + k * St - b, t
            y += k * St
            if end == b:                   # the chain lands on b: a segment of the next phase starts there
                return self.S[t + 1], t + 1
            t = max(t + 1, self.phase(y))

    def psi(self, q: int, d: np.ndarray, i: int | None) -> np.ndarray:
        """psi_q of a segment started in phase ``i`` that still needs ``d`` (``i`` None: a restart that still needs d)."""
        gain = 0.0 if i is None else self.a[q] * self.T[i] / self.T[q]
        return self.E[q] - (self.E[q] + gain) * np.exp(-self.lam[q] * np.asarray(d))


def _segments_part(pr: _Process, b: float, J: int, qs: tuple[int, ...]) -> tuple[float, list[float]]:
    """Mass and E psi_q of the segments in progress at ``b`` whose last fresh start was the end of a restart."""
    mass, out = 0.0, [0.0] * len(qs)
    for p in range(J + 1):
        e, Sp = pr.phase_end(p, b), pr.S[p]
        pieces = pr.chain_pieces(e, p, Sp, b)   # c = e - k Sp + u: the chain's first start at or after e is e + u
        cuts = sorted({max(pr.s[p], pr.R), e} | {x + pr.R for x in pr.s if max(pr.s[p], pr.R) < x + pr.R < e})
        for cl, ch in zip(cuts[:-1], cuts[1:]):
            if not ch > cl:
                continue
            r = pr.phase(cl - pr.R)   # the failure's phase
            lr = pr.lam[r]
            log_A = math.log(lr) - (pr.H(b) - pr.H(ch - pr.R))   # m(c) = A exp(lr (c - ch))
            k = np.arange(max(math.ceil((e - ch) / Sp), 1), math.ceil((e - cl) / Sp) + 1)
            u_lo, u_hi = np.maximum(0.0, cl - e + k * Sp), np.minimum(Sp, ch - e + k * Sp)
            log_g = log_A + lr * (e - k * Sp - ch)
            for lo, hi, delta, i in pieces:
                a, z = np.maximum(lo, u_lo), np.minimum(hi, u_hi)
                whole = float(np.sum(_exp_integral(lr, a, z, log_g)))
                mass += whole
                for n, q in enumerate(qs):
                    lq = pr.lam[q]
                    decay = np.sum(_exp_integral(lr - lq, a, z, log_g - lq * delta))
                    gain = pr.a[q] * pr.T[i] / pr.T[q]
                    out[n] += float(pr.E[q] * whole - (pr.E[q] + gain) * decay)
    return mass, out


def _restarts_part(pr: _Process, b: float, J: int, qs: tuple[int, ...]) -> tuple[float, list[float]]:
    """Mass and E psi_q of the restarts in progress at ``b`` (the failure struck at ``b - y``, ``y < R``)."""
    mass, out = 0.0, [0.0] * len(qs)
    top = min(pr.R, b)
    for t in range(J + 1):   # the phase the failure struck in
        lo, hi = max(0.0, b - pr.phase_end(t, b)), min(top, b - pr.s[t])
        if not hi > lo:
            continue
        lt = pr.lam[t]
        log_d = math.log(lt) - (pr.H(b) - pr.H(b - lo))   # density(lo + v) = exp(log_d - lt v)
        m = float(_exp_integral(-lt, 0.0, hi - lo, log_d))
        mass += m
        for n, q in enumerate(qs):
            lq = pr.lam[q]
            decay = float(_exp_integral(lq - lt, 0.0, hi - lo, log_d - lq * (pr.R - lo)))
            out[n] += pr.E[q] * (m - decay)
    return mass, out


def boundary_psi(pr: _Process, b: float, qs: tuple[int, ...]) -> tuple[float, list[float]]:
    """(total probability mass of the state at ``b``, E psi_q(state at b) for each q in ``qs``)."""
    J = pr.phase(b) - 1
    d, i = pr.start_chain(b)
    m0 = math.exp(-pr.H(b))
    m1, seg = _segments_part(pr, b, J, qs)
    m2, res = _restarts_part(pr, b, J, qs)
    return m0 + m1 + m2, [m0 * float(pr.psi(q, d, i)) + x + y for q, x, y in zip(qs, seg, res)]


def expected_wall_time(work: float, intervals, C: float, M: float, R: float, starts, factors) -> float:
    """Expected wall time of ``work`` under the schedule ``intervals`` (one per phase; module notes)."""
    pr = _Process(intervals, C, M, R, starts, factors)
    w, psi_start = float(work), 0.0
    for j in range(len(pr.s)):
        if j + 1 < len(pr.s):
            b = pr.s[j + 1]
            _, (psi_end, psi_next) = boundary_psi(pr, b, (j, j + 1))
            dw = (b - pr.s[j] + psi_end - psi_start) / pr.rho[j]
            if dw < w - pr.T[j]:   # at least one interval of work left at the boundary: phase j + 1 is entered
                w, psi_start = w - dw, psi_next
                continue
        return pr.s[j] + pr.rho[j] * w + psi_start
    raise AssertionError("unreachable: the last phase ends the job")


def state_mass(intervals, C: float, M: float, R: float, starts, factors, b: float) -> float:
    """Total probability of the job's state at wall time ``b`` as integrated here (1 when the integral is right)."""
    pr = _Process(intervals, C, M, R, starts, factors)
    return boundary_psi(pr, float(b), (0,))[0]
