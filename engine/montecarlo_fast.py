"""Per-window Monte Carlo of the finite job for exponential failures: counts per window, not per failure.

The default path of :func:`engine.montecarlo.simulate` when failures are exponential. Model and
window lengths: :mod:`engine.finite` (a chain of windows ``0 .. last``; window 0 starts clean at
the job's start, windows ``1 .. last`` start in flow; a failure rolls back to the window's start,
after which the window is retried clean, each failure followed by a restart ``R`` that is itself
retried on failure).

Exponential failures are memoryless, so every attempt at a window of length ``L`` (and every
restart attempt) fails independently with probability ``1 - exp(-L/M)``, and the time it loses
before failing is exponential truncated to ``[0, L)``: ``-M log(1 - U (1 - exp(-L/M)))`` for a
uniform ``U``. A run is therefore a sum of independent pieces, sampled per class of windows with
numpy's samplers, vectorised over a block of runs:

* window 0 (length ``c0``: ``full_clean``, or ``last_clean`` when it is the only window):
  failed attempts ``N0 ~ Geometric(exp(-c0/M)) - 1``;
* the ``last - 1`` full windows in flow: failed flow attempts ``F ~ Binomial(last - 1,
  1 - exp(-full_flow/M))``; each is retried clean until success, in all ``NegativeBinomial(F,
  exp(-full_clean/M))`` more failures;
* the last window (``last >= 1``): its flow attempt fails with probability ``1 - exp(-last_flow/M)``,
  then ``Geometric(exp(-last_clean/M)) - 1`` clean failures;
* restarts: one per rollback (``rollbacks`` = all the failures above), failed restart attempts
  ``NegativeBinomial(rollbacks, exp(-R/M))``;
* the time lost: one truncated exponential per failure of each class, summed per run.

``wall = (successful attempts: c0 + (last - 1 - F) full_flow + F full_clean + last_flow or
last_clean) + lost time + R * rollbacks + time lost in failed restarts``. The distribution of
(wall, failures, rollbacks, restart time) is exactly the model's; the random numbers are not the
gaps of :mod:`engine.gaps`, so the two paths agree in distribution, not run by run.

Random numbers: block ``b`` of ``WINDOW_BLOCK`` runs draws from ``SeedSequence(seed,
spawn_key=(b,))``, counts first (in the order above), then the lost times class by class in
pieces of at most ``PIECE`` uniforms (memory bounded whatever the failures per run). They depend
on the interval: two intervals simulated with the same seed share the per-block seeds, not their
failure histories (use :mod:`engine.gaps` for common random numbers).
"""

from __future__ import annotations

import math

import numpy as np

# runs per block, and uniforms drawn at once for the lost times (a 2 MiB buffer)
WINDOW_BLOCK = 8192
PIECE = 2**18

__all__ = ["simulate_per_window"]


def simulate_per_window(g: dict[str, float], M: float, R: float, runs: int, seed: int) -> tuple[np.ndarray, ...]:
    """Wall time, failures, rollbacks and restart time of every run (arrays), window class by class.

    ``g``: the job's geometry (:func:`engine.finite.job_geometry`, as floats). Exponential failures
    with mean ``M``, restart ``R``. See the module notes.
    """
    wall = np.empty(runs)
    n_fail = np.empty(runs, dtype=np.int64)
    n_roll = np.empty(runs, dtype=np.int64)
    restart = np.empty(runs)
    buf = np.empty(min(PIECE, max(runs, 1) * 64))
    for b, lo in enumerate(range(0, runs, WINDOW_BLOCK)):
        rows = min(WINDOW_BLOCK, runs - lo)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(b,)))
        sl = slice(lo, lo + rows)
        wall[sl], n_fail[sl], n_roll[sl], restart[sl] = _block(g, M, R, rows, rng, buf)
    return wall, n_fail, n_roll, restart


def _survive(L: float, M: float) -> float:
    """P(no failure during L) = exp(-L/M)."""
    return math.exp(-L / M)


def _block(g, M, R, rows, rng, buf):
    last, fc, ff, lc, lf = int(g["last"]), g["full_clean"], g["full_flow"], g["last_clean"], g["last_flow"]
    zeros = np.zeros(rows, dtype=np.int64)
    if last == 0:                               # a single window, clean from the start
        n0 = rng.geometric(_survive(lc, M), rows) - 1
        rolls = n0
        wall = np.full(rows, lc)
        lost = [(n0, lc)]
    else:
        n0 = rng.geometric(_survive(fc, M), rows) - 1
        middle = last - 1
        flow_fails = rng.binomial(middle, -math.expm1(-ff / M), rows) if middle > 0 else zeros
        retries = _negative_binomial(rng, flow_fails, _survive(fc, M))
        last_fail = (rng.random(rows) < -math.expm1(-lf / M)).astype(np.int64)
        last_retries = zeros.copy()
        hit = np.flatnonzero(last_fail)
        if hit.size:
            last_retries[hit] = rng.geometric(_survive(lc, M), hit.size) - 1
        rolls = n0 + flow_fails + retries + last_fail + last_retries
        wall = fc + (middle - flow_fails) * ff + flow_fails * fc + np.where(last_fail > 0, lc, lf)
        lost = [(n0 + retries, fc), (flow_fails, ff), (last_fail, lf), (last_retries, lc)]
    restart_fails = _negative_binomial(rng, rolls, _survive(R, M)) if R > 0 else zeros
    for counts, L in lost:
        _add_lost_time(wall, rng, counts, L, M, buf)
    restart = R * rolls.astype(np.float64)
    if R > 0:
        _add_lost_time(restart, rng, restart_fails, R, M, buf)
    wall += restart
    return wall, rolls + restart_fails, rolls, restart


def _negative_binomial(rng: np.random.Generator, n: np.ndarray, p: float) -> np.ndarray:
    """Failures before the ``n``-th success (0 where ``n`` is 0), success probability ``p``."""
    out = np.zeros(n.size, dtype=np.int64)
    pos = np.flatnonzero(n)
    if pos.size and p < 1.0:
        out[pos] = rng.negative_binomial(n[pos], p)
    return out


def _add_lost_time(acc: np.ndarray, rng: np.random.Generator, counts: np.ndarray, L: float, M: float,
                   buf: np.ndarray) -> None:
    """``acc[r] +=`` the sum of ``counts[r]`` exponential times truncated to ``[0, L)``, mean-``M`` law.

    Inverse transform ``-M log(1 - U q)``, ``q = 1 - exp(-L/M)``; uniforms drawn in pieces of
    ``len(buf)`` and summed per run in stream order (run by run, as the counts say).
    """
    ends = np.cumsum(counts)
    total = int(ends[-1]) if ends.size else 0
    if total == 0 or L <= 0:
        return
    starts = ends - counts
    q = -math.expm1(-L / M)
    for p0 in range(0, total, buf.size):
        p1 = min(p0 + buf.size, total)
        x = buf[: p1 - p0]
        rng.random(out=x)
        x *= -q
        x += 1.0
        np.log(x, out=x)
        # runs with draws in [p0, p1): from the one holding p0 to the last one starting before p1
        first = int(np.searchsorted(ends, p0, side="right"))
        stop = int(np.searchsorted(starts, p1, side="left"))
        sel = first + np.flatnonzero(counts[first:stop])
        seg = np.maximum(starts[sel], p0) - p0
        acc[sel] += np.add.reduceat(x, seg) * -M
