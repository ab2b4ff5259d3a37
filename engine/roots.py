"""Bracketed root finding over many rows at once: one vectorised function call per step for every row.

Break-even values (:mod:`engine.sensitivity`) and targets (:mod:`engine.targets`) ask, for each of
many rows, where a function of one input crosses zero. Each evaluation of the function is a batch
of engine plans (a table, one row per candidate), so the solver asks for all rows' next points in
one call rather than running a scalar solver row by row.

:func:`solve_rows` is the Illinois variant of regula falsi (Dowell and Jarratt, BIT 11, 1971:
superlinear, order about 1.44, and it keeps the bracket), with a bisection step whenever the
secant point falls outside the middle 90 % of the bracket, so it never does worse than bisection
by more than a constant factor. Stops when ``|g| <= ftol`` (absolute, per row) or the bracket is
narrower than ``xtol`` (relative); whole-number inputs are bisected on the integers until the two
ends are neighbours (the answer is then the end on the far side of the sign change: the first
whole value where ``g >= 0``, the end of the last bracket on the non-negative side).

:func:`golden_rows` is golden-section search for a minimum (Kiefer, Proc. AMS 4(3), 1953), every row's
bracket shrunk by ``INVPHI`` per step with one call of the objective for all rows; the optimal intervals
of the tiered, elastic and preemption plans use it (the workbook writes the same steps as rows).

:func:`first_bracket` finds, on a grid of candidates per row, the pair of neighbours nearest to a
start value across which the function changes sign (a monotone function has at most one).

Assumptions: ``g`` is continuous on the bracket (for whole numbers: any function) and the ends
have opposite signs (or one is zero). Where ``g`` is not monotone the solver finds one crossing,
not all of them.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["INVPHI", "first_bracket", "golden_rows", "solve_rows"]

#: the golden-section ratio ``(sqrt 5 - 1) / 2``
INVPHI = (5.0 ** 0.5 - 1.0) / 2.0


def solve_rows(g: Callable[[np.ndarray, np.ndarray], np.ndarray], lo: Any, hi: Any, g_lo: Any, g_hi: Any, *,
               ftol: Any = 0.0, xtol: float = 1e-13, integer: bool = False, max_steps: int = 200) -> np.ndarray:
    """The root of ``g`` in ``[lo, hi]`` for every row (``g(x, rows)``: the function at ``x`` for the rows
    ``rows``, one call per step for all rows still open). ``g_lo``/``g_hi``: ``g`` at the ends, of opposite
    signs (or zero). ``ftol``: per-row absolute tolerance on ``|g|`` (not used for whole numbers, which
    stop only when the ends are neighbours). Returns the roots (module notes)."""
    a, b = np.array(lo, dtype=float), np.array(hi, dtype=float)
    fa, fb = np.array(g_lo, dtype=float), np.array(g_hi, dtype=float)
    ftol = np.broadcast_to(np.asarray(ftol, dtype=float), a.shape)
    root = np.where(fa == 0, a, np.where(fb == 0, b, np.nan))
    open_ = np.isnan(root)
    side = np.zeros(a.shape, dtype=np.int8)        # which end stayed last step (Illinois halves its value)
    for _ in range(max_steps):
        rows = np.flatnonzero(open_)
        if not len(rows):
            break
        x = _next_points(a[rows], b[rows], fa[rows], fb[rows], integer)
        fx = np.asarray(g(x, rows), dtype=float)
        done = np.abs(fx) <= ftol[rows] if not integer else np.zeros(len(rows), dtype=bool)
        root[rows[done]] = x[done]
        same_a = np.sign(fx) == np.sign(fa[rows])
        for take, end, fend, other, code in ((same_a, a, fa, fb, 1), (~same_a, b, fb, fa, 2)):
            r = rows[take & ~done]
            end[r], fend[r] = x[take & ~done], fx[take & ~done]
            if not integer:   # Illinois: the end kept twice in a row has its value halved
                kept = r[side[r] == code]
                other[kept] *= 0.5
                side[r] = code
        open_[rows[done]] = False
        width = b - a
        if integer:
            closed = open_ & (width <= 1)
            root[closed] = np.where(fb[closed] >= 0, b[closed], a[closed])
        else:
            closed = open_ & (np.abs(width) <= xtol * np.maximum(np.abs(a), np.abs(b)))
            root[closed] = np.where(np.abs(fa[closed]) <= np.abs(fb[closed]), a[closed], b[closed])
        open_ &= ~closed
    return root


def _next_points(a: np.ndarray, b: np.ndarray, fa: np.ndarray, fb: np.ndarray, integer: bool) -> np.ndarray:
    """The next point of every open row: the secant point inside the middle 90 % of the bracket, else the
    middle; the integer middle for whole numbers."""
    mid = 0.5 * (a + b)
    if integer:
        return np.floor(mid)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = b - fb * (b - a) / (fb - fa)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    inside = np.isfinite(x) & (x > lo + 0.05 * (hi - lo)) & (x < hi - 0.05 * (hi - lo))
    return np.where(inside, x, mid)


def first_bracket(grid: np.ndarray, values: np.ndarray, start: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the neighbours ``(k, k + 1)`` of the grid (rows x candidates, ascending; NaN values skipped)
    across which ``values`` change sign (or one is zero), the pair nearest to ``start``; ``k = -1`` where
    there is none. Returns (k, found)."""
    n, m = grid.shape
    k = np.full(n, -1)
    best = np.full(n, np.inf)
    valid = ~np.isnan(values)
    sign = np.sign(values)
    start = np.broadcast_to(np.asarray(start, dtype=float), (n,))
    for j in range(m - 1):   # a few dozen candidates: the loop is over the grid, not the rows
        # both neighbours answered (a refused candidate, NaN, brackets nothing)
        crosses = valid[:, j] & valid[:, j + 1] & (sign[:, j] * sign[:, j + 1] <= 0)
        dist = np.minimum(np.abs(grid[:, j] - start), np.abs(grid[:, j + 1] - start))
        inside = (grid[:, j] <= start) & (start <= grid[:, j + 1])
        dist = np.where(inside, 0.0, dist)
        better = crosses & (dist < best)
        k[better], best[better] = j, dist[better]
    return k, k >= 0


def golden_rows(f: Callable[[np.ndarray], np.ndarray], a: Any, b: Any, steps: int) -> tuple[np.ndarray, ...]:
    """Golden-section search for the minimum of ``f`` on ``[a, b]``, every row at once (module notes).

    ``f`` maps an array of points (one per row) to their objective values (``inf`` where undefined); ``steps``
    shrinks each bracket by ``INVPHI ** steps``. Returns the last bracket and its two inner points with their
    values, ``(a, b, c, d, f(c), f(d))``: the caller takes the middle ``(a + b) / 2`` or the better inner point.
    Assumes ``f`` unimodal on the bracket (else a local minimum)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    c, d = b - INVPHI * (b - a), a + INVPHI * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        left = fc <= fd                       # the minimum is in [a, d]: d <- c, one new point c
        a, b = np.where(left, a, c), np.where(left, d, b)
        x = np.where(left, b - INVPHI * (b - a), a + INVPHI * (b - a))
        fx = f(x)
        c, d, fc, fd = np.where(left, x, d), np.where(left, c, x), np.where(left, fx, fd), np.where(left, fc, fx)
    return a, b, c, d, fc, fd
