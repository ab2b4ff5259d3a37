"""Choosing a tiered design: the first-order optimum of Benoit et al. and the numeric optimum of the exact model.

Model, symbols and assumptions: :mod:`engine.tiers` (nested tiers, Poisson failures split into
classes, each class restored from the first tier surviving it). A design is the first tier's
compute interval ``T`` and the tiers' ``every`` (tier ``i`` takes every ``every_i``-th save; its
own compute interval is ``T_i = every_i T``).

First order [Benoit17]
----------------------
Per unit of work a level ``l`` pays its own save cost ``C_l`` every ``T_l`` and loses half a
level-``l`` period of work per failure recovered from it (rate ``lambda_l``)::

    overhead = sum_l [ C_l / T_l + lambda_l T_l / 2 ],   minimised per level:  T_l = sqrt(2 C_l / lambda_l)

with ``C_0 = stall_0 + W slowdown`` (the first tier's stall and the write slowdown every save
pays), ``C_l = stall_l`` for the others (their own addition to a save), and ``lambda_l = rho_l / M``
(``rho_l`` the share of failures whose class is restored from tier ``l``). The overhead at the
optimum is ``sum_l sqrt(2 C_l lambda_l)`` (Young's formula per level). It assumes ``C_l << T_l <<
1/lambda_l``, ignores restarts, failures during saves and the write's exposure, and treats the
periods as independent: they must in fact be nested, hence the rounding below. SCR's Markov model
[Moody10] evaluates the same kind of multi-level schedule by states and transitions; the exact
expectation of :mod:`engine.tiers` plays that role here.

* A tier no failure is restored from (``lambda_l = 0``: every class it survives is survived by an
  earlier tier) never pays back its saves: its interval is ``inf``, reported as such, and the
  rounded design writes it as rarely as allowed (``every = MAX_EVERY``).
* The first tier's interval is at least ``W (1 - slowdown)`` (the write must be durable before the
  next save). A first tier that costs nothing (``stall_0 = 0`` and ``W = 0``) would save
  continuously (``T -> 0``), which the model cannot plan: :class:`InputError` on its stall.
* Rounding to a nested design: ``T = T_0``; ``every_l = every_{l-1} max(1, round(T_l / (every_{l-1}
  T)))``, the ratio taken against the previous tier's *rounded* interval so that rounding errors do
  not compound, and capped so that no ``every`` exceeds :data:`MAX_EVERY`.

Numeric optimum of the exact model
----------------------------------
:func:`optimal_tier_intervals` minimises :func:`engine.tiers.tiered_wall_per_work` over ``T`` (a
vectorised golden-section search in ``log T``; for each candidate a bracket of a factor 16 either
side of the first-order ``T`` for its everies, ``sqrt(2 (C_0 + sum_l stall_l / every_l) /
sum_l lambda_l every_l)``, widened when the minimum sits at its edge, searched to a 1.4e-4
bracket, then the winner polished to a 1e-9 bracket; an optimum at the write constraint is
returned exactly at ``T = W (1 - slowdown)``. The objective is flat at its minimum, so its value
is optimal to rounding while ``T`` itself is determined to about 1e-7 relative, as by any search
that compares values) and over the ratios ``every_l / every_{l-1}``:
every combination of ``r - 1, r, r + 1`` (>= 1) around the first-order ratios, then, while a row
improves, the same cube around its new best. It returns a local optimum on the lattice of ratios
(no design one step away in any set of ratios is better), and never a design worse than the
first-order rounded one, which is always a candidate. Rows are designs: 10^5 rows are searched
together whatever their everies (the exact model costs the same for every pattern length). The
objective is assumed unimodal in ``log T`` for fixed everies (true of the single-level model).
Restores that fail (:mod:`engine.tiers.model`, assumption 6) enter through the exact expectation (and the
first-order guess through the shares restored from each tier); with a fallback to the job's start the
objective is the finite job's, so the searches take the job's ``work``.

References
----------
* [Benoit17] A. Benoit, A. Cavelan, V. Le Fevre, Y. Robert, H. Sun, "Towards optimal multi-level
  checkpointing", IEEE Transactions on Computers 66(7), 2017.
* [Moody10] A. Moody, G. Bronevetsky, K. Mohror, B. R. de Supinski, "Design, modeling, and
  evaluation of a scalable multi-level checkpointing system", SC'10.
* [Young74] J. W. Young, CACM 17(9), 1974: ``sqrt(2 C M)``, the one-level case.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..roots import golden_rows
from .model import TierRows, level_ratios, log_wall_per_work, prepare_rows, raise_overflow, tier_label

__all__ = ["MAX_EVERY", "best_first_interval", "first_order_tier_intervals", "optimal_tier_intervals"]

#: the largest ``every`` a designed tier gets (a tier no failure is restored from gets exactly this)
MAX_EVERY = 1000
# golden-section iterations: coarse (bracket 5.5 -> 1.4e-4 in log T), polish (4e-4 -> 1e-9)
_COARSE_ITERS, _POLISH_ITERS, _POLISH_HALF = 22, 27, 2e-4
# bracket: a factor 16 either side of the first-order guess (a factor 4 and 18 iterations, to 5e-4, around a
# guess corrected by a neighbour's optimum); widened by 256 at most _WIDEN times
_SPAN, _WIDEN_BY, _WIDEN = math.log(16.0), math.log(256.0), 6
_NEAR_SPAN, _NEAR_ITERS = math.log(4.0), 18
# rounds of the local search around the best ratios
_MAX_ROUNDS = 64


def _front(M, R, W, slowdown, work) -> list:
    """The job's (name, value, rule) triples of a search; ``work`` (the finite job a fallback to the start needs,
    :mod:`engine.tiers.model`) when given."""
    out = [("M", M, "positive"), ("R", R, "nonnegative"), ("W", W, "nonnegative"), ("slowdown", slowdown, "fraction")]
    return out + ([("work", work, "positive")] if work is not None else [])


def _costs(rows: TierRows) -> list:
    """Each level's own save cost ``C_l``: the first tier's stall plus the write slowdown, then the stalls."""
    return [rows.stalls[0] + rows.W * rows.s] + list(rows.stalls[1:])


def _first_order(rows: TierRows, tiers) -> tuple[np.ndarray, list, list]:
    """(design T, ratios, continuous per-tier intervals) on flat rows."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = [r / rows.M for r in rows.rho]
        cont = [np.where(lm > 0, np.sqrt(2.0 * c / lm), np.inf) for c, lm in zip(_costs(rows), lam)]
    floor = rows.W * (1.0 - rows.s)
    T = np.maximum(cont[0], floor)
    if np.any(T <= 0):
        k = int(np.argmax(T <= 0))
        raise InputError(f"{tier_label(0, tiers[0])}.checkpoint_stall_min", float(rows.stalls[0][k]),
                         "the first tier costs nothing per save (no stall, no asynchronous write): its first-order "
                         "interval is 0, i.e. save continuously, which cannot be planned; give its measured stall")
    ratios, every = [], np.ones_like(T)
    for Tl in cont[1:]:
        with np.errstate(invalid="ignore", over="ignore"):
            r = np.floor(Tl / (every * T) + 0.5)
        r = np.clip(np.where(np.isfinite(r), r, np.inf), 1.0, _cap(every))
        ratios.append(r)
        every = every * r
    return T, ratios, cont


def _cap(every):
    return np.maximum(1.0, np.floor(MAX_EVERY / every))


def _wrap_int(wrap, arr, shape):
    out = wrap(arr.reshape(shape))
    if isinstance(out, float):
        return int(out)
    return out.astype(np.int64)


def first_order_tier_intervals(M, *, tiers: Sequence[Any], classes: Mapping[str, Any], W=0.0, slowdown=0.0):
    """First-order per-tier intervals [Benoit17] and the nested design they round to (module notes).

    Returns a dict: ``interval_<tier>`` the continuous optimum ``sqrt(2 C_l / lambda_l)`` of each
    tier (compute time between its saves; ``inf`` for a tier no failure is restored from),
    ``T`` the rounded design's first interval (``max(interval_<first>, W (1 - slowdown))``),
    ``every_<tier>`` its integer everies and ``first_order_overhead`` = ``sum_l sqrt(2 C_l lambda_l)``
    (the first-order waste per unit of work at the continuous optimum). The tiers' own ``every`` are
    ignored (they are what is chosen).
    """
    tiers, _, f, rows, shape, wrap = prepare_rows(tiers, classes, [("M", M, "positive"), ("W", W, "nonnegative"),
                                                              ("slowdown", slowdown, "fraction")])
    T, ratios, cont = _first_order(rows, tiers)
    out = {"T": wrap(T.reshape(shape))}
    every = np.ones_like(T)
    for i, t in enumerate(tiers):
        every = every * ratios[i - 1] if i else every
        out[f"interval_{t.name}"] = wrap(cont[i].reshape(shape))
        out[f"every_{t.name}"] = _wrap_int(wrap, every, shape)
    overhead = sum(np.sqrt(2.0 * c * r / rows.M) for c, r in zip(_costs(rows), rows.rho))
    out["first_order_overhead"] = wrap(overhead.reshape(shape))
    return out


# ------------------------------------------------------------------------------ numeric optimum


def _objective(rows: TierRows, ratios: list):
    def f(x):
        v = log_wall_per_work(np.exp(x), rows, ratios)
        return np.where(np.isnan(v), np.inf, v)
    return f


def _golden(f, a, b, iters):
    """Golden-section search for the minimum of ``f`` on ``[a, b]`` (:func:`engine.roots.golden_rows`): (best x,
    f(best x))."""
    _, _, c, d, fc, fd = golden_rows(f, a, b, iters)
    pick = fc <= fd
    return np.where(pick, c, d), np.where(pick, fc, fd)


def _guess(rows: TierRows, ratios: list):
    """First-order ``T`` for fixed everies: ``sqrt(2 sum_l C_l/every_l / sum_l lambda_l every_l)``."""
    every = [np.ones_like(rows.M)] + list(itertools.accumulate(ratios, np.multiply))
    num = sum(c / e for c, e in zip(_costs(rows), every))
    den = sum(r * e for r, e in zip(rows.rho, every)) / rows.M
    return np.sqrt(2.0 * num / den)


def _search(rows: TierRows, ratios: list, shift=None):
    """Coarse search over log T for every row at the given ratios: (log T, objective).

    The bracket is centred on the first-order ``T`` for these everies (:func:`_guess`), moved by
    ``shift`` (log of exact / first-order optimum seen at a neighbouring design, if known), and
    widened when the minimum sits at an edge (not at the write constraint).
    """
    with np.errstate(divide="ignore"):
        floor = np.log(rows.W * (1.0 - rows.s))       # -inf for a synchronous save
    with np.errstate(divide="ignore"):
        centre = np.log(_guess(rows, ratios)) + (0.0 if shift is None else shift)
    half, iters = (_SPAN, _COARSE_ITERS) if shift is None else (_NEAR_SPAN, _NEAR_ITERS)
    lo = np.maximum(centre - half, floor)
    hi = np.maximum(centre + half, lo + half)
    x, fx = _golden(_objective(rows, ratios), lo, hi, iters)
    for _ in range(_WIDEN):
        tol = 0.01 * (hi - lo)
        up, down = x > hi - tol, (x < lo + tol) & (lo > floor)
        edge = np.flatnonzero(up | down)
        if not edge.size:
            break
        sub = rows.take(edge)
        nlo = np.where(up[edge], hi[edge] - 1.0, np.maximum(lo[edge] - _WIDEN_BY, floor[edge]))
        nhi = np.where(up[edge], hi[edge] + _WIDEN_BY, lo[edge] + 1.0)
        nx, nf = _golden(_objective(sub, [r[edge] for r in ratios]), nlo, nhi, _COARSE_ITERS)
        better = nf < fx[edge]
        x[edge], fx[edge] = np.where(better, nx, x[edge]), np.where(better, nf, fx[edge])
        lo[edge], hi[edge] = nlo, nhi
    return x, fx


def _candidate(base: list, offset) -> list:
    """Ratios ``base + offset`` (scalars or per-row arrays), clipped to [1, the cap keeping every <= MAX_EVERY]."""
    out, every = [], np.ones_like(base[0])
    for r, o in zip(base, offset):
        r = np.clip(r + o, 1.0, _cap(every))
        out.append(r)
        every = every * r
    return out


def _try(rows: TierRows, state: dict, idx: np.ndarray, ratios: list) -> np.ndarray:
    """Search ``ratios`` (per row of ``idx``) over T; keep improvements in ``state``; return the mask improved."""
    shift = state["shift"][idx] if "shift" in state else None
    x, fx = _search(rows.take(idx), ratios, shift)
    better = fx < state["f"][idx]
    win = idx[better]
    state["f"][win], state["x"][win] = fx[better], x[better]
    for k, r in enumerate(ratios):
        state["ratios"][k][win] = r[better]
    if "shift" not in state:
        state["shift"] = x - np.log(_guess(rows.take(idx), ratios))
    return better


def _cube(rows: TierRows, state: dict, idx: np.ndarray, cube, seen=None) -> np.ndarray:
    """Every ratio +-1 (all combinations) around the current best of the rows ``idx``; return the mask improved.

    ``seen``: per ratio, the centre of the cube each row searched last; its corners are skipped.
    """
    base = [r[idx].copy() for r in state["ratios"]]
    improved = np.zeros(idx.size, dtype=bool)
    for off in cube:
        todo = np.arange(idx.size) if seen is None else np.flatnonzero(
            np.any([np.abs(b + o - c) > 1 for b, o, c in zip(base, off, seen)], axis=0))
        if todo.size:
            improved[todo] |= _try(rows, state, idx[todo], _candidate([b[todo] for b in base], off))
    return improved


def _optimise(rows: TierRows, tiers) -> dict:
    """The numeric optimum on flat rows: dict of T, ratios, objective (log wall per work), and the first-order design.

    Ratios: the cube of +-1 around the first-order ratios; then, for the rows whose best left the
    centre, a line search along that move with doubling steps and a new cube around where it stops,
    until a cube finds nothing better (a local optimum of the lattice of ratios).
    """
    n, m = rows.M.size, len(tiers)
    T_fo, ratios_fo, _ = _first_order(rows, tiers)
    f_fo = log_wall_per_work(T_fo, rows, ratios_fo)
    if m == 1:
        x, fx = _search(rows, [])
        state = {"x": x, "f": fx, "ratios": []}
    else:
        state = {"x": np.full(n, np.nan), "f": np.full(n, np.inf), "ratios": [r.copy() for r in ratios_fo]}
        cube = [off for off in itertools.product((-1.0, 0.0, 1.0), repeat=m - 1) if any(off)]
        everyone = np.arange(n)
        _try(rows, state, everyone, ratios_fo)
        start = [r.copy() for r in state["ratios"]]
        _cube(rows, state, everyone, cube)
        active = np.flatnonzero(np.any([a != b for a, b in zip(state["ratios"], start)], axis=0))
        for _ in range(_MAX_ROUNDS):
            if not active.size:
                break
            direction = [np.sign(a[active] - b[active]) for a, b in zip(state["ratios"], start)]
            centre = [b[active] for b in start]
            step, line = np.ones(active.size), np.arange(active.size)
            while line.size:                          # doubling steps while the objective falls
                base = [r[active[line]] for r in state["ratios"]]
                better = _try(rows, state, active[line], _candidate(base, [d[line] * step[line] for d in direction]))
                line = line[better]
                step[line] *= 2.0
            start = [r.copy() for r in state["ratios"]]
            active = active[_cube(rows, state, active, cube, seen=centre)]
    # polish the winner's T to 1e-9 relative, then never worse than the first-order rounded design
    with np.errstate(divide="ignore"):
        floor = np.log(rows.W * (1.0 - rows.s))
        lo = np.maximum(state["x"] - _POLISH_HALF, floor)
        px, pf = _golden(_objective(rows, state["ratios"]), lo, np.maximum(state["x"] + _POLISH_HALF, lo), _POLISH_ITERS)
    better = pf < state["f"]
    state["x"], state["f"] = np.where(better, px, state["x"]), np.where(better, pf, state["f"])
    T = np.exp(state["x"])
    # an optimum at the write constraint: the search only approaches it, so try the bound itself
    near = np.flatnonzero(state["x"] - floor < 1e-6)
    if near.size:
        f_floor = log_wall_per_work(rows.W[near] * (1.0 - rows.s[near]), rows.take(near), [r[near] for r in state["ratios"]])
        win = f_floor <= state["f"][near]
        T[near[win]], state["f"][near[win]] = rows.W[near[win]] * (1.0 - rows.s[near[win]]), f_floor[win]
    keep_fo = f_fo <= state["f"]
    state["T"] = np.where(keep_fo, T_fo, T)
    state["f"] = np.where(keep_fo, f_fo, state["f"])
    state["ratios"] = [np.where(keep_fo, a, b) for a, b in zip(ratios_fo, state["ratios"])]
    state.update(T_fo=T_fo, f_fo=f_fo)
    return state


def optimal_tier_intervals(M, R=0.0, W=0.0, slowdown=0.0, *, tiers: Sequence[Any], classes: Mapping[str, Any],
                           work=None):
    """The design (``T`` and integer everies) minimising the exact expected wall time (module notes).

    Vectorised over rows (every numeric input may be an array or Series of designs; the tiers' own
    ``every`` are ignored). Returns a dict: ``T``, ``every_<tier>`` (integers), ``interval_<tier>``
    (``every T``), ``wall_per_work`` and ``waste_fraction`` at the optimum, and ``first_order_T``,
    ``first_order_waste_fraction`` of the first-order rounded design
    (:func:`first_order_tier_intervals`), which the optimum never does worse than. Raises
    :class:`InputError` on ``M`` when even the optimum's wall time per work overflows. ``work``: the
    job's useful work, needed when a restore can fail on every tier a class tries (the fallback to the
    start, :mod:`engine.tiers.model`): the objective is then the finite job's expectation per unit of work.
    """
    tiers, _, f, rows, shape, wrap = prepare_rows(tiers, classes, _front(M, R, W, slowdown, work))
    st = _optimise(rows, tiers)
    raise_overflow(st["f"], f["M"], shape, "wall time per unit of work at the optimum")
    T = st["T"]
    out: dict[str, Any] = {"T": wrap(T.reshape(shape))}
    every = np.ones_like(T)
    for i, t in enumerate(tiers):
        every = every * st["ratios"][i - 1] if i else every
        out[f"every_{t.name}"] = _wrap_int(wrap, every, shape)
        out[f"interval_{t.name}"] = wrap((every * T).reshape(shape))
    out["wall_per_work"] = wrap(np.exp(st["f"]).reshape(shape))
    out["waste_fraction"] = wrap(-np.expm1(-st["f"]).reshape(shape))
    out["first_order_T"] = wrap(st["T_fo"].reshape(shape))
    out["first_order_waste_fraction"] = wrap(-np.expm1(-st["f_fo"]).reshape(shape))
    return out



def _polish(rows: TierRows, ratios: list, x, fx):
    """The search's best log T polished to a 1e-9 bracket, and the write constraint tried exactly: (T, objective)."""
    with np.errstate(divide="ignore"):
        floor = np.log(rows.W * (1.0 - rows.s))
        lo = np.maximum(x - _POLISH_HALF, floor)
        px, pf = _golden(_objective(rows, ratios), lo, np.maximum(x + _POLISH_HALF, lo), _POLISH_ITERS)
    better = pf < fx
    x, fx = np.where(better, px, x), np.where(better, pf, fx)
    T = np.exp(x)
    near = np.flatnonzero(x - floor < 1e-6)
    if near.size:   # an optimum at the write constraint: the search only approaches it
        f_floor = log_wall_per_work(rows.W[near] * (1.0 - rows.s[near]), rows.take(near), [r[near] for r in ratios])
        win = f_floor <= fx[near]
        T[near[win]], fx[near[win]] = rows.W[near[win]] * (1.0 - rows.s[near[win]]), f_floor[win]
    return T, fx


def best_first_interval(M, R=0.0, W=0.0, slowdown=0.0, *, tiers: Sequence[Any], classes: Mapping[str, Any],
                        work=None):
    """The first tier's compute interval ``T`` minimising the exact expected wall time, the tiers' own ``every`` kept.

    What a plan whose tiers state their ``every`` uses (:func:`engine.setup.plan_setup`, the tiered batch
    columns of :mod:`engine.tiers.table`): the search of :func:`optimal_tier_intervals` over ``log T``
    only (bracket around the first-order ``T`` for these everies, widened at an edge, polished to a
    1e-9 bracket; an optimum at the write constraint returned exactly at ``W (1 - slowdown)``).
    Vectorised over rows (every numeric input, the tiers' stalls and restores included). Returns ``T``
    (the caller's kind). Raises :class:`InputError` on ``M`` when even the optimum's wall time overflows.
    ``work`` as :func:`optimal_tier_intervals` (needed only when a restore can fail on every tier tried).
    """
    tiers, _, f, rows, shape, wrap = prepare_rows(tiers, classes, _front(M, R, W, slowdown, work))
    ratios = level_ratios(rows.every)
    with np.errstate(divide="ignore", invalid="ignore"):
        zero = (_guess(rows, ratios) <= 0) & (rows.W * (1.0 - rows.s) <= 0)
    if np.any(zero):
        k = int(np.argmax(zero))
        raise InputError(f"{tier_label(0, tiers[0])}.checkpoint_stall_min", float(rows.stalls[0][k]),
                         "the tiers cost nothing per save (no stall, no asynchronous write): the best interval is 0, "
                         "i.e. save continuously, which cannot be planned; give the measured stalls")
    x, fx = _search(rows, ratios)
    T, fx = _polish(rows, ratios, x, fx)
    raise_overflow(fx, f["M"], shape, "wall time per unit of work at the optimum")
    return wrap(T.reshape(shape))
