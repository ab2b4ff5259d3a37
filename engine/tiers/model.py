"""Multi-level (tiered) checkpointing: the exact expectation for nested tiers and failure classes.

A save may write to several *tiers* (host memory, local disk, a partner node, the parallel file
system, object storage): cheap tiers often, durable ones rarely. A failure of *class* ``j`` (a
process crash, a node loss, a rack or storage outage) makes the job restart from the newest copy
on the fastest tier whose copies survive that class. Time unit: minutes for ``T``, stalls,
restores, ``R`` and ``W``; ``M`` (the job MTBF) in the same unit.

Model (every statement an assumption; the expectation below is exact under them)
--------------------------------------------------------------------------------
1. *Saves.* A save follows every ``T`` of useful compute. Save ``n`` writes tier ``i`` iff
   ``n % every_i == 0``; ``every_0 = 1`` and each ``every_i`` is a whole multiple of the previous
   one (nested tiers, as [Benoit17] and SCR [Moody10] assume). Its blocking stall is the sum of the
   ``checkpoint_stall_min`` of the tiers it writes. The job's start counts as save 0, on every tier.
2. *Asynchronous writes* (as :mod:`engine.waste`): after the stall a background write of ``W``
   runs while training keeps ``1 - slowdown`` of its throughput; all copies of a save become
   durable together, ``W`` after the stall; ``W (1 - slowdown) <= T``. After a restart no write
   is pending.
3. *Failures*: Poisson with rate ``lambda = 1/M`` during compute, stalls, writes and restarts
   alike; each failure's class drawn independently with the class shares ``pi_j`` (normalised to
   sum exactly 1; given shares must sum to 1 within 1e-9), so class ``j`` has rate ``pi_j / M``.
4. *Recovery*: a class-``j`` failure rolls back to the newest durable copy on the first tier (in
   list order, hence the smallest ``every``) surviving ``j``: tier ``t(j)``, ``k(j) = every_t(j)``,
   position ``q_j(p) = floor(p / k(j)) k(j)``. The restart costs ``R_j = R + restore_min[t(j)]``; a
   failure of any class during a restart restarts it from the same checkpoint, so it takes
   ``Rexp_j = expm1(lambda R_j) / lambda`` on average.
5. *Copies a recovery needs exist*: a restore from position ``q`` leaves ``q`` readable on every
   tier (as at the job's start). Exact when survival is nested (each tier survives every class
   its finer tiers survive) and a restart re-populates the finer tiers (as SCR fetches the
   checkpoint back into its cache); otherwise the model is optimistic. Retention and price do not enter
   (storage cost elsewhere); bandwidth contention between tiers and failures outside the classes are
   not modelled.
6. *Restores that fail* (a corrupt or incomplete copy: Megatron-LM issue 5281, where a corrupt local
   replica made a job restart 44 times at about 90 s each). Restoring tier ``i``'s copy fails with
   ``q_i = p_i ** copies_i`` (``p_i`` = ``restore_failure_probability``; the ``copies`` replicas of a
   checkpoint, e.g. one on a peer node, fail *independently* of each other, of the failure that caused the
   restart and of earlier attempts: correlated corruption, e.g. a bug writing every replica wrong, makes
   this optimistic). A class-``j`` failure tries the tiers surviving ``j`` in list order (its *chain*);
   each attempt costs that tier's ``restore_min``; the first that succeeds is the rollback position; when
   every attempt fails the job goes back to its *start*: all progress lost, the restart having paid ``R``
   plus every attempt. So each class splits into outcomes ``o`` with shares ``pi_o`` (chain attempt ``n``
   succeeds: ``pi_j q_(0) .. q_(n-1) (1 - q_(n))``; all fail: ``pi_j prod q``) and restarts ``R_o = R +
   sum of the restores tried`` (:func:`restore_outcomes`). A failure during a restart restarts it with the
   same outcome (the copies found corrupt stay corrupt and are tried again, as in the issue above), so
   ``Rexp_o = expm1(lambda R_o) / lambda``. ``p = 0`` on every tier is today's model, bit for bit.

Exact expectation (renewal over the pattern of ``K = every_last`` saves [Daly06; Benoit17])
------------------------------------------------------------------------------------------
Position ``p = 0 .. K-1`` counts saves since the last one that wrote every tier. For the segment
``p -> p+1``: stall ``C_{p+1}`` (tiers with ``(p+1) % every_i == 0``), steady window
``P_p = T + C_{p+1} + W slowdown``, window after a restore ``L_p = T + C_{p+1} + W``. With
``A_S(p)`` (``A_F(p)``) the expected time from durable ``p`` to durable ``p+1`` in flow (just after a
restore), ``f_X = 1 - exp(-lambda X)``::

    A_S(p) = f_{P_p} B(p),  A_F(p) = f_{L_p} B(p),
    B(p) = 1/lambda + sum_j pi_j [Rexp_j + Back_j(p)],
    Back_j(p) = A_F(p) if q_j(p) = p, else A_F(q) + sum_{r=q+1}^{p-1} A_S(r) + A_S(p)   (q = q_j(p))

so with ``a = sum_{q_j(p)=p} pi_j``, ``b = 1 - a`` and ``K0`` the terms known from earlier
positions, ``B = K0 / (a exp(-lambda L_p) + b exp(-lambda P_p))`` (``1 - a f_L - b f_P`` written
without cancellation). Wall per unit of work ``= sum_p A_S(p) / (K T)``. With one tier surviving
every class it is :func:`engine.waste.expected_wall_time`'s exact model.

Restore outcomes enter as classes do: ``rho_i`` is the share of rollbacks restored from tier ``i`` and
``c = 1/lambda + sum_o pi_o Rexp_o``. A rollback to the start (share ``eps = sum of the all-fail
outcomes``) returns to the pattern's start, as the last tier does, and also redoes every earlier
pattern: with ``S_{n-1}`` the expected time to complete patterns ``1 .. n-1``, its ``Back`` is the last
tier's plus ``S_{n-1}`` (the redo starts just after a restore, as the last tier's rollback does, so the
terms match exactly). The recursion is linear in its constant, so pattern ``n`` costs ``span (c + eps
S_{n-1})`` and ``S_N = c span ((1 + x)^N - 1) / x`` with ``x = eps span``: the job's wall time grows
geometrically with its ``N = work / (K T)`` patterns (exact for whole patterns; the expectation scales
``work`` continuously, as without fallbacks). So with ``eps > 0`` the wall time per unit of work needs
``work`` and is ``exp(y) M span / (K T) x ((1 + x)^N - 1) / (N x)``; Wald's count of failures and the
breakdown (``rollbacks = exposed / c``: a restart episode of mean ``c - 1/lambda`` follows each failure
outside restarts) hold unchanged.

Evaluation in ``O(m^2)`` array operations whatever ``K`` (``m`` tiers)
-------------------------------------------------------------------------------
The recursion is linear in ``c = 1/lambda + sum_j pi_j Rexp_j`` and, inside a level-``i`` block
(the ``every_i`` positions from a multiple of ``every_i``), in its first ``K0``: a block is two
numbers per (start level ``H``, end level ``G``), ``span = (sum of A_S) / K0`` and ``first =
(A_F - A_S of its first position) / K0``. Level 0 (one position, ``D = a_H e^{-L_G/M} +
b_H e^{-P_G/M}``): ``span = f_P / D``, ``first = e^{-P/M} (1 - e^{-W(1-s)/M}) / D``. A level-``i``
block of ratio ``r = every_i / every_{i-1}`` chains its level-``(i-1)`` blocks: the first (start
``H``, end ``i-1``), ``r - 2`` middle ones (``i-1``, ``i-1``) and the last (``i-1``, ``G``); a
sub-block starting ``s`` after the block's start has ``K0 = w + rho s``, ``w = 1 +
rho_{i..H} first``, ``rho = rho_{>= i}`` (``rho_i`` the share of classes recovered from tier
``i``), so the middle ones sum as a geometric series ``s_{r-1} = s_1 (1 + x)^{r-2} + span w
((1 + x)^{r-2} - 1)/x``, ``x = span rho`` (a series below ``(r-2) x = 1e-4``). The pattern is
the top block (``m-1``, ``m-1``) and costs ``c span``. Every term is positive: no cancellation.
Values are computed in floating point first; rows whose span leaves ``[1e-290, 1e290]`` are redone
in log space (``logaddexp``), so :func:`tiered_waste_fraction` stays finite where the wall time
overflows; the wall time then raises :class:`InputError` on ``M`` (as :mod:`engine.waste` does).

Where it stops being valid: failures that are not Poisson (clustered gaps, Weibull shape < 1:
use :mod:`engine.montecarlo` for one tier), classes that are correlated in time, tiers that fail
on their own, and finite jobs: :func:`tiered_expected_wall_time` scales the pattern by
``work / (K T)`` like :mod:`engine.waste`; a job of whole patterns that starts with no write pending
and waits for its last save takes exactly that plus ``c expm1(W (1 - slowdown) / M)`` (its first
checkpoint is exposed for the whole write), see :mod:`engine.montecarlo_tiers`.

References
----------
* [Benoit17] A. Benoit, A. Cavelan, V. Le Fevre, Y. Robert, H. Sun, "Towards optimal multi-level
  checkpointing", IEEE Transactions on Computers 66(7), 2017.
* [Moody10] A. Moody, G. Bronevetsky, K. Mohror, B. R. de Supinski, "Design, modeling, and
  evaluation of a scalable multi-level checkpointing system", SC'10 (SCR; a Markov model of it).
* [Daly06] J. T. Daly, FGCS 22(3), 2006: the renewal argument of the single-level exact model.
* [Wald45] A. Wald, Ann. Math. Stat. 16(2), 1945: expected failures = wall time / M.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from itertools import accumulate
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..gate import as_float_array, broadcast, prepare
from ..waste import MAX_LOG, check_async_write

__all__ = ["MAX_TIERS", "SHARE_TOL", "Tier", "TierRows", "check_design", "class_rates_per_tier", "job_specs", "level_ratios",
           "log_wall_per_work", "prepare_rows", "raise_overflow", "recovery_index", "recovery_tier", "tier_label",
           "tiered_breakdown", "tiered_expected_wall_time", "tiered_wall_per_work", "tiered_waste_fraction",
           "tiers_from_dicts"]

#: tolerance on the sum of the class shares
SHARE_TOL = 1e-9
#: most tiers a design may have: multi-level schemes use two to four (SCR, Benoit et al. 2017); the exact model
#: walks the levels recursively and its pattern is the product of the levels' ratios
MAX_TIERS = 16
# the floating-point kernel's answer is trusted in this range; outside, the log-space kernel redoes the row
_LINEAR_RANGE = (1e-290, 1e290)
# rows evaluated at a time: the kernel's temporaries (128 KiB each) stay in cache, about 3x faster than 10^5 at once
_CHUNK = 16384


@dataclass(frozen=True)
class Tier:
    """One checkpoint tier (see the module notes). Numeric fields: scalars or arrays over rows.

    ``checkpoint_stall_min`` (>= 0) stall it adds to a save that writes to it; ``restore_min`` (>= 0)
    time to load its copy; ``every`` (whole, >= 1; 1 for the first tier, a multiple of the previous
    tier's) it takes every k-th save; ``survives`` the failure classes whose failures leave its copy
    readable; ``retention`` (checkpoints kept) and ``price_per_gb_month`` serve the storage bill;
    ``restore_failure_probability`` (in [0, 1)) the chance that restoring one copy fails (corrupt or
    incomplete) and ``copies`` (whole, >= 1) the independent replicas of each checkpoint: a restore from
    the tier fails when every replica does, ``p ** copies`` (module notes, assumption 6).
    """

    name: str
    checkpoint_stall_min: Any
    restore_min: Any
    every: Any
    survives: tuple[str, ...]
    retention: int = 1
    price_per_gb_month: float = 0.0
    restore_failure_probability: Any = 0.0
    copies: Any = 1


_REQUIRED = ("name", "checkpoint_stall_min", "restore_min", "every", "survives")
_KEYS = tuple(f.name for f in fields(Tier))


def tiers_from_dicts(items: Sequence[Mapping[str, Any]]) -> tuple[Tier, ...]:
    """Tiers from plain tables with :class:`Tier`'s keys (e.g. TOML ``[[tiers]]``), in order.

    Unknown or missing keys raise :class:`InputError` naming the tier; a ``survives`` given as one
    string is one class. Values are checked by :func:`check_design`, which needs the classes.
    """
    if isinstance(items, (str, bytes, Mapping)) or not hasattr(items, "__iter__"):
        raise InputError("tiers", items, "must be a list of tier tables")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Tier):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            raise InputError(f"tiers[{i}]", item, f"must be a table with the keys {', '.join(_REQUIRED)}")
        label = f"tiers[{i}] ({item.get('name', '?')})"
        unknown = sorted(str(k) for k in item if k not in _KEYS)
        if unknown:
            raise InputError(label, ", ".join(unknown), f"unknown key; a tier holds {', '.join(_KEYS)}")
        missing = [k for k in _REQUIRED if k not in item]
        if missing:
            raise InputError(label, ", ".join(missing), "missing key(s): a tier needs " + ", ".join(_REQUIRED))
        survives = item["survives"]
        out.append(Tier(**{**item, "survives": (survives,) if isinstance(survives, str) else survives}))
    return tuple(out)


def tier_label(i: int, t: Tier) -> str:
    """How messages name tier ``i``: ``tiers[1] (host-memory)``."""
    return f"tiers[{i}] ({t.name})"


def check_design(tiers: Sequence[Any], classes: Mapping[str, Any]) -> tuple[Tier, ...]:
    """Validate a tiered design; return its tiers as :class:`Tier` (dicts accepted, see :func:`tiers_from_dicts`).

    Raises :class:`InputError` naming the tier and field (``tiers[1] (host-memory).every``) or the
    class: empty or repeated names; a stall or restore negative or not finite; ``every`` not a
    whole number >= 1, not 1 for the first tier, or not a whole multiple of the previous tier's
    (nested saves); ``retention`` < 1; a negative price; a tier surviving no class or an unknown
    one; a class no tier survives; a share outside (0, 1] or shares not summing to 1 within 1e-9.
    """
    tiers = tiers_from_dicts(tiers)
    if not tiers:
        raise InputError("tiers", "[]", "needs at least one tier")
    if len(tiers) > MAX_TIERS:
        raise InputError("tiers", f"{len(tiers):,} tiers", f"at most MAX_TIERS = {MAX_TIERS} tiers (multi-level "
                                                            "checkpointing uses two to four)")
    names = _check_classes(classes)
    known = set(names)
    seen: set[str] = set()
    out = []
    prev = None
    for i, t in enumerate(tiers):
        if not isinstance(t.name, str) or not t.name.strip():
            raise InputError(f"tiers[{i}].name", t.name, "must be a non-empty text")
        if t.name in seen:
            raise InputError(f"{tier_label(i, t)}.name", t.name, "tier names must be unique")
        seen.add(t.name)
        lab = tier_label(i, t)
        as_float_array(f"{lab}.checkpoint_stall_min", t.checkpoint_stall_min, "nonnegative")
        as_float_array(f"{lab}.restore_min", t.restore_min, "nonnegative")
        as_float_array(f"{lab}.price_per_gb_month", t.price_per_gb_month, "nonnegative")
        as_float_array(f"{lab}.retention", t.retention, "count")
        as_float_array(f"{lab}.restore_failure_probability", t.restore_failure_probability, "fraction")
        as_float_array(f"{lab}.copies", t.copies, "count")
        every = as_float_array(f"{lab}.every", t.every, "count")
        if prev is None and np.any(every != 1):
            raise InputError(f"{lab}.every", t.every, "the first tier must take every save (every = 1)")
        if prev is not None:
            e, p = broadcast(**{f"{lab}.every": every, f"{prev[0]}.every": prev[1]})
            bad = e % p != 0
            if np.any(bad):
                pos = tuple(int(k) for k in np.argwhere(bad)[0]) if bad.ndim else None
                raise InputError(f"{lab}.every", float(e[pos] if pos else e), (
                    f"must be a whole multiple of the previous tier's every ({float(p[pos] if pos else p):g}, "
                    f"{prev[0]}): tiers are nested, every save to a tier also writes the tiers before it, as "
                    "Benoit et al. (2017) and SCR assume"), pos)
        survives = t.survives
        if isinstance(survives, str):
            survives = (survives,)
        if not isinstance(survives, (list, tuple)) or not survives:
            raise InputError(f"{lab}.survives", survives, f"must name at least one failure class (of {names}): a copy "
                             "that no failure leaves readable can never be restored")
        for c in survives:
            if not isinstance(c, str) or c not in known:
                listed = names if len(names) <= 20 else f"{str(names[:20])[:-1]}, ... ({len(names):,} classes)]"
                raise InputError(f"{lab}.survives", c, f"is not a failure class; the classes are {listed}")
        out.append(replace(t, survives=tuple(dict.fromkeys(survives))))
        prev = (lab, every)
    covered = set().union(*(t.survives for t in out))  # one pass over the tiers, not one per class
    for c in names:
        if c not in covered:
            raise InputError(f"classes[{c!r}]", classes[c],
                             f"a failure of class {c!r} could never be recovered: no tier survives it")
    return tuple(out)


def _check_classes(classes: Any) -> list[str]:
    if not isinstance(classes, Mapping) or not classes:
        raise InputError("classes", classes, "must be a non-empty table of failure class name -> share of failures")
    shares = []
    for c, v in classes.items():
        if not isinstance(c, str) or not c.strip():
            raise InputError("classes", c, "class names must be non-empty texts")
        arr = as_float_array(f"classes[{c!r}]", v, "positive")
        if np.any(arr > 1):
            raise InputError(f"classes[{c!r}]", float(np.max(arr)), "a share must be in (0, 1]")
        shares.append(arr)
    total = np.sum(broadcast(**{f"classes[{c!r}]": v for c, v in zip(classes, shares)}), axis=0)
    bad = np.abs(total - 1.0) > SHARE_TOL
    if np.any(bad):
        pos = tuple(int(k) for k in np.argwhere(bad)[0]) if bad.ndim else None
        raise InputError("classes", float(total[pos] if pos else total),
                         f"the shares of {list(classes)} must sum to 1 (within {SHARE_TOL:g})", pos)
    return list(classes)


def recovery_index(tiers: tuple[Tier, ...], classes: Mapping[str, Any]) -> list[int]:
    """For each class, the first tier surviving it (the smallest ``every``, tiers being nested)."""
    first: dict[str, int] = {}
    for i, t in enumerate(tiers):
        for c in t.survives:
            first.setdefault(c, i)
    return [first[c] for c in classes]


def recovery_tier(tiers: Sequence[Any], classes: Mapping[str, Any]) -> dict[str, str]:
    """Class name -> name of the tier its failures restore from: the first listed tier surviving it."""
    tiers = check_design(tiers, classes)
    return {c: tiers[i].name for c, i in zip(classes, recovery_index(tiers, classes))}


# ------------------------------------------------------------------------------------ inputs


@dataclass
class TierRows:
    """A design's validated numbers as flat float arrays (one element per row)."""

    M: np.ndarray
    W: np.ndarray
    s: np.ndarray
    stalls: list
    restores: list
    every: list
    shares: list      # normalised to sum 1
    rho: list         # share of rollbacks to each tier's position (the kernel's; the last tier's includes eps)
    y: np.ndarray     # log(sum_o pi_o exp(R_o / M)) = log(lambda c), over the restore outcomes o
    D: Any = 0.0      # downtime after every failure (unexposed: the job cannot fail in it); 0 or a flat array
    eps: Any = 0.0    # share of rollbacks whose every restore failed: back to the job's start (0 or a flat array)
    work: Any = None  # the job's useful work (flat array), needed when eps > 0; None: not given
    restored: Any = None   # per tier, the share of rollbacks restored from it (rho without eps); None: rho
    failed: Any = 0.0      # expected failed restore attempts per rollback
    q: Any = None          # per tier, the chance a restore from it fails (p ** copies)

    def take(self, sel) -> "TierRows":
        def cut(v):
            if isinstance(v, list):
                return [a[sel] for a in v]
            return v[sel] if isinstance(v, np.ndarray) and v.ndim else v
        return TierRows(*(cut(getattr(self, f.name)) for f in fields(self)))


def prepare_rows(tiers, classes, front):
    """Validate the design and ``front`` = [(name, value, rule), ...] with the tiers' numbers.

    Returns (tiers, class names, dict of flat front arrays, :class:`TierRows`, shape, wrap). A ``work``
    in ``front`` is kept on the rows (the finite job a failed-restore fallback to the start needs).
    """
    tiers = check_design(tiers, classes)
    names = list(classes)
    specs = list(front)
    for i, t in enumerate(tiers):
        lab = tier_label(i, t)
        specs += [(f"{lab}.checkpoint_stall_min", t.checkpoint_stall_min, "nonnegative"),
                  (f"{lab}.restore_min", t.restore_min, "nonnegative"), (f"{lab}.every", t.every, "count"),
                  (f"{lab}.restore_failure_probability", t.restore_failure_probability, "fraction"),
                  (f"{lab}.copies", t.copies, "count")]
    specs += [(f"classes[{c!r}]", classes[c], "positive") for c in names]
    arrays, wrap = prepare(*specs)
    shape = arrays[0].shape
    flat = [np.ascontiguousarray(a, dtype=np.float64).reshape(-1) for a in arrays]
    out = {name: a for (name, _, _), a in zip(front, flat)}
    m, k = len(tiers), len(front)
    stalls, restores, every = flat[k:k + 5 * m:5], flat[k + 1:k + 5 * m:5], flat[k + 2:k + 5 * m:5]
    with np.errstate(under="ignore"):
        q = [p ** c for p, c in zip(flat[k + 3:k + 5 * m:5], flat[k + 4:k + 5 * m:5])]
    raw = flat[k + 5 * m:]
    total = np.sum(raw, axis=0)
    shares = [v / total for v in raw]
    M = out.get("M", np.ones_like(total))
    R = out.get("R", np.zeros_like(total))
    W, s = out.get("W", np.zeros_like(total)), out.get("slowdown", np.zeros_like(total))
    if "T" in out:
        check_async_write(out["T"], W, s)
    outs = restore_outcomes(tiers, names, shares, restores, q, R)
    zero = np.zeros_like(total)
    restored = [sum((o[0] for o in outs if o[2] == i), zero) for i in range(m)]
    eps = sum((o[0] for o in outs if o[2] is None), zero)
    rho = restored[:-1] + [restored[-1] + eps]
    failed = sum((o[0] * o[3] for o in outs), zero)
    rows = TierRows(M, W, s, stalls, restores, every, shares, rho, _log_restart_factor(M, outs),
                    D=out.get("D", 0.0), eps=eps, work=out.get("work"), restored=restored, failed=failed, q=q)
    return tiers, names, out, rows, shape, wrap


def restore_outcomes(tiers, names, shares, restores, q, R) -> list:
    """Every (class, restore outcome) of a rollback: ``(share, restart, tier index or None, failed attempts)``.

    A class-``j`` failure tries the tiers surviving ``j`` in order (its chain, from :func:`recovery_index`'s tier);
    attempt ``n`` (tier ``i``) succeeds with ``1 - q_i`` (``q_i = p_i ** copies_i``) after the ``n`` before it failed:
    share ``pi_j q_(chain 0) .. q_(chain n-1) (1 - q_i)``, restart ``R + restore`` of every tier tried. When all
    fail (share ``pi_j prod q``) the job goes back to its start (tier None), having paid every attempt. With every
    ``q = 0`` the first outcome of each class is exactly today's (share ``pi_j``, restart ``R + restore``).
    """
    outs = []
    for j, c in enumerate(names):
        chain = [i for i, t in enumerate(tiers) if c in t.survives]
        reach, restart = shares[j], R + restores[chain[0]]
        for n, i in enumerate(chain):
            if n:
                restart = restart + restores[i]
            outs.append((reach * (1.0 - q[i]), restart, i, float(n)))
            reach = reach * q[i]
        outs.append((reach, restart, None, float(len(chain))))
    return outs


def _log_restart_factor(M, outs):
    """``y = log(sum_o pi_o exp(R_o/M))`` over the restore outcomes (log1p form; log-sum-exp when huge), so
    ``c = M exp(y)``; an outcome of share 0 adds exactly nothing."""
    with np.errstate(over="ignore", invalid="ignore"):
        z = [r / M for _, r, _, _ in outs]
        top = np.max([np.where(p > 0, x, -np.inf) for (p, _, _, _), x in zip(outs, z)], axis=0)
        small = np.log1p(sum(np.where(p > 0, p * np.expm1(x), 0.0) for (p, _, _, _), x in zip(outs, z)))
        big = top + np.log(sum(np.where(p > 0, p * np.exp(x - top), 0.0) for (p, _, _, _), x in zip(outs, z)))
    return np.where(top < 700.0, small, big)


def class_rates_per_tier(M, tiers: Sequence[Any], classes: Mapping[str, Any]) -> dict[str, Any]:
    """Tier name -> ``lambda_i``: the rate of failures recovered from tier ``i`` (``sum of its classes' shares / M``).

    Zero for a tier from which nothing is ever restored (every class it survives is survived by an
    earlier tier). Per unit of ``M``'s time unit.
    """
    tiers, _, front, rows, shape, wrap = prepare_rows(tiers, classes, [("M", M, "positive")])
    return {t.name: wrap((r / front["M"]).reshape(shape)) for t, r in zip(tiers, rows.restored)}


# ------------------------------------------------------------------------------------ kernel


class _Lin:
    """Plain floating-point arithmetic on positive numbers."""

    one = 1.0
    add, mul, div = staticmethod(np.add), staticmethod(np.multiply), staticmethod(np.divide)

    @staticmethod
    def lin(x):
        return x

    @staticmethod
    def exp_neg(z):
        return np.exp(-z)

    @staticmethod
    def one_minus_exp_neg(z):
        return -np.expm1(-z)

    @staticmethod
    def geo(x, n):
        """``((1+x)^n, sum_{k<n} (1+x)^k)``."""
        z = n * np.log1p(x)
        small = n * x < 1e-4
        return np.exp(z), np.where(small, _geo_series(x, n), np.expm1(z) / np.where(small, 1.0, x))

    @staticmethod
    def log(v):
        return np.log(v)


class _Log:
    """The same arithmetic on the logarithms of the numbers."""

    one = 0.0
    add, mul, div = staticmethod(np.logaddexp), staticmethod(np.add), staticmethod(np.subtract)

    @staticmethod
    def lin(x):
        return np.log(x)

    @staticmethod
    def exp_neg(z):
        return -z

    @staticmethod
    def one_minus_exp_neg(z):
        return np.log(-np.expm1(-z))

    @staticmethod
    def geo(lx, n):
        x = np.exp(lx)
        z = n * np.logaddexp(0.0, lx)
        small = n * x < 1e-4
        big = z + np.log(-np.expm1(-z)) - lx
        return z, np.where(n == 0, -np.inf, np.where(small, np.log(_geo_series(x, n)), big))

    @staticmethod
    def log(v):
        return v


def _geo_series(x, n):
    """``sum_{k<n} (1+x)^k`` for ``n x < 1e-4`` (Taylor in ``x``, error below 1e-18 relative)."""
    return n * (1.0 + (n - 1.0) * x / 2.0 * (1.0 + (n - 2.0) * x / 3.0 * (1.0 + (n - 3.0) * x / 4.0)))


def _span(be, T, M, W, s, stalls, rho, ratios):
    """Span of the whole pattern per unit ``K0`` (module notes), in ``be``'s representation.

    Blocks are computed on demand from the top one (level ``m-1``, start and end level ``m-1``), so
    only the (start, end) level pairs a design can have are evaluated.
    """
    m = len(stalls)
    zero = np.zeros_like(T)
    Cg = list(accumulate(stalls))
    a = [be.lin(v) for v in accumulate(rho)]
    b = [be.lin(sum(rho[H + 1:], zero)) for H in range(m)]
    exposed = be.one_minus_exp_neg(W * (1.0 - s) / M)
    memo: dict = {}

    def window(g):           # e^{-P/M}, e^{-L/M}, 1 - e^{-P/M} and the write's exposure of a save of level g
        if ("w", g) not in memo:
            p = (T + Cg[g] + W * s) / M
            eP = be.exp_neg(p)
            memo["w", g] = eP, be.exp_neg((T + Cg[g] + W) / M), be.one_minus_exp_neg(p), be.mul(eP, exposed)
        return memo["w", g]

    def level(i):            # per level: ratio masks, rho_{>= i}, and the geometric sums of the middle blocks
        if ("l", i) not in memo:
            r = ratios[i - 1]
            one = r == 1
            up = be.lin(sum(rho[i:], zero))
            power, geo = be.geo(be.mul(block(i - 1, i - 1, i - 1)[0], up), np.maximum(r - 2.0, 0.0))
            memo["l", i] = one, bool(one.any()), up, power, geo
        return memo["l", i]

    def block(i, H, g):      # (span, first) of a level-i block starting at level H, ending at level g
        if (i, H, g) in memo:
            return memo[i, H, g]
        if i == 0:
            eP, eL, fP, lost = window(g)
            D = be.add(be.mul(a[H], eL), be.mul(b[H], eP))
            out = be.div(fP, D), be.div(lost, D)
        elif np.all(ratios[i - 1] == 1):
            out = block(i - 1, H, g)
        else:
            one, any_one, up, power, geo = level(i)
            s0, d0 = block(i - 1, H, i - 1)
            mid, last = block(i - 1, i - 1, i - 1)[0], block(i - 1, i - 1, g)[0]
            w = be.add(be.one, be.mul(be.lin(sum(rho[i:H + 1], zero)), d0))
            s_mid = be.add(be.mul(s0, power), be.mul(be.mul(mid, w), geo))
            s_r = be.add(be.mul(s_mid, be.add(be.one, be.mul(last, up))), be.mul(last, w))
            out = s_r, d0
            if any_one:
                prev = block(i - 1, H, g)
                out = np.where(one, prev[0], s_r), np.where(one, prev[1], d0)
        memo[i, H, g] = out
        return out

    return block(m - 1, m - 1, m - 1)[0]


def _log_span(T, rows: TierRows, ratios, force_log: bool = False):
    """log of the pattern's span: floating point first, log space for the rows out of range."""
    args = (rows.M, rows.W, rows.s, rows.stalls, rows.rho)
    with np.errstate(all="ignore"):
        if force_log:
            return _span(_Log, T, *args, ratios)
        lin = _span(_Lin, T, *args, ratios)
        bad = ~((lin > _LINEAR_RANGE[0]) & (lin < _LINEAR_RANGE[1]))
        out = np.log(lin)
        if np.any(bad):
            sub = rows.take(bad)
            out[bad] = _span(_Log, T[bad], sub.M, sub.W, sub.s, sub.stalls, sub.rho, [r[bad] for r in ratios])
    return out


def level_ratios(every: list) -> list:
    """Each tier's ``every`` over the previous tier's (whole numbers >= 1, tiers being nested), per row."""
    return [every[i] / every[i - 1] for i in range(1, len(every))]


def log_wall_per_work(T, rows: TierRows, ratios, force_log: bool = False):
    """log of the expected wall time per unit of work (flat arrays), in chunks of rows that stay in cache."""
    if T.size > _CHUNK:
        out = np.empty_like(T)
        for lo in range(0, T.size, _CHUNK):
            sl = slice(lo, lo + _CHUNK)
            out[sl] = log_wall_per_work(T[sl], rows.take(sl), [r[sl] for r in ratios], force_log)
        return out
    K = np.prod(ratios, axis=0) if ratios else np.ones_like(T)
    span = _log_span(T, rows, ratios, force_log)
    # the downtime after every failure: the wall time is the exposed time x (M + D) / M (Wald; engine.waste)
    out = np.log(rows.M + rows.D) + rows.y + span - np.log(K) - np.log(T)
    eps = np.asarray(rows.eps)
    if np.any(eps > 0):
        out = out + _log_start_factor(eps, span, rows.work, K * T)
    return out


def _log_start_factor(eps, log_span, work, pattern):
    """log of ``((1 + x)^N - 1) / (N x)``, ``x = eps span``, ``N = work / (K T)`` (module notes, fallback to the
    start); exactly 0 where ``eps = 0``."""
    if work is None:
        raise InputError("work", None, "a restore that can fail on every tier sends the job back to its start, so "
                         "the wall time depends on the job's length: give the useful work")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_x = np.log(eps) + log_span
        N = work / pattern
        g = N * np.logaddexp(0.0, log_x)                # N log(1 + x), = log (1 + x)^N
        corr = g + np.log(-np.expm1(-g)) - log_x - np.log(N)
    return np.where(eps > 0, corr, 0.0)


def raise_overflow(log_value, M, shape, what: str) -> None:
    """:class:`InputError` on ``M`` at the first row whose ``log_value`` (a log of ``what``) overflows float64."""
    bad = ~(log_value <= MAX_LOG)
    if np.any(bad):
        k = int(np.argmax(bad))
        pos = tuple(int(i) for i in np.unravel_index(k, shape)) if shape else None
        raise InputError("M", float(M[k]), f"the expected {what} overflows (log = {float(log_value[k]):.4g}): failures "
                         "are so frequent against the pattern's saves and restarts that the job would essentially "
                         "never finish", pos)


# ------------------------------------------------------------------------------------ public


def job_specs(T, M, R, W, slowdown, work=None, D=0.0):
    """The job's (name, value, rule) triples for :func:`prepare_rows`: ``work`` (when given), T, M, R, W, slowdown, D
    (``R`` the exposed restart, ``D`` the downtime after every failure)."""
    spec = [("work", work, "positive")] if work is not None else []
    return spec + [("T", T, "positive"), ("M", M, "positive"), ("R", R, "nonnegative"), ("W", W, "nonnegative"),
                   ("slowdown", slowdown, "fraction"), ("D", D, "nonnegative")]


def tiered_wall_per_work(T, M, R=0.0, W=0.0, slowdown=0.0, *, tiers, classes, D=0.0, work=None):
    """Expected wall time per unit of useful work, exact for the tiered model (module notes).

    ``sum_p A_S(p) / (K T)`` over the pattern of ``K = every_last`` saves; ``>= 1``. Broadcasts over
    rows (``T``, ``M``, ``R``, ``W``, ``slowdown`` and the tiers' and classes' numbers); raises
    :class:`InputError` on ``M`` when it overflows. One tier surviving every class: ``exp`` of
    :func:`engine.waste.log_wall_per_work` (``R`` + the tier's ``restore_min`` as the restart).
    ``D``: a downtime after every failure, before its restart, in which the job cannot fail (the
    wait for a node): the exposed process is unchanged and each of its ``exposed / M`` failures
    adds ``D``, so the leading ``M`` becomes ``M + D`` (as :func:`engine.waste.expected_wall_time`).
    ``work``: the job's useful work, needed (and only used) when a restore can fail on every tier a class
    falls back to (the job's start; module notes): the wall time per unit of work then grows with it.
    """
    _, _, f, rows, shape, wrap = prepare_rows(tiers, classes, job_specs(T, M, R, W, slowdown, work, D))
    lw = log_wall_per_work(f["T"], rows, level_ratios(rows.every))
    raise_overflow(lw, f["M"], shape, "wall time per unit of work")
    return wrap(np.exp(lw).reshape(shape))


def tiered_waste_fraction(T, M, R=0.0, W=0.0, slowdown=0.0, *, tiers, classes, D=0.0, work=None):
    """Share of the expected wall time not spent on useful work: ``1 - 1 / wall_per_work``.

    In ``[0, 1)``; computed from the log of :func:`tiered_wall_per_work`, so it stays finite (near
    1) where the wall time itself would overflow.
    """
    _, _, f, rows, shape, wrap = prepare_rows(tiers, classes, job_specs(T, M, R, W, slowdown, work, D))
    return wrap(-np.expm1(-log_wall_per_work(f["T"], rows, level_ratios(rows.every))).reshape(shape))


def tiered_expected_wall_time(work, T, M, R=0.0, W=0.0, slowdown=0.0, *, tiers, classes, D=0.0):
    """Expected wall time for ``work`` of useful compute: ``work / (K T)`` patterns x the pattern's expectation.

    The steady-state scaling of :func:`engine.waste.expected_wall_time` (``work`` need not be whole
    patterns). A finite job of whole patterns that starts with no write pending and waits for its
    last save takes exactly this plus ``M exp(y) expm1(W (1 - slowdown)/M)`` with ``exp(y) = sum_j
    pi_j exp(R_j/M)`` (module notes). Raises :class:`InputError` on ``M`` when it overflows.
    """
    _, _, f, rows, shape, wrap = prepare_rows(tiers, classes, job_specs(T, M, R, W, slowdown, work, D))
    lw = log_wall_per_work(f["T"], rows, level_ratios(rows.every)) + np.log(f["work"])
    raise_overflow(lw, f["M"], shape, "wall time")
    return wrap(np.exp(lw).reshape(shape))


def tiered_breakdown(work, T, M, R=0.0, W=0.0, slowdown=0.0, *, tiers, classes, D=0.0) -> dict[str, Any]:
    """Where the expected wall time of :func:`tiered_expected_wall_time` goes (dict of the caller's kind).

    * ``useful`` = ``work``;  ``wall`` the expected wall time.
    * ``save`` = ``(work/(K T)) sum_p (C_{p+1} + W slowdown)``: stalls and write slowdown of the
      saves that count; ``save_<tier>`` = the tier's stall x its saves (``work / (T every)``), so
      ``save = sum of save_<tier> + (work/T) W slowdown``.
    * ``restart`` = the recursion with ``c`` replaced by ``sum_j pi_j Rexp_j`` (the ``1/lambda``
      term removed). The expectation is linear in ``c``, so this is ``wall (1 - 1/(lambda c))``:
      restarts, interrupted ones included; with a downtime ``D`` (``wall`` then the exposed time
      ``x (M + D)/M``) the exposed restarts plus ``D x failures``.
    * ``rollbacks`` = ``exposed / c``: failures outside restarts (:func:`engine.waste.time_breakdown`'s
      ``rollbacks``); ``failures`` = ``exposed / M`` (``= wall / (M + D)``): all failures, restarts
      included [Wald45]; ``failures_<class>`` = ``pi_j failures``; ``recoveries_<tier>`` = rollbacks
      restored from it (fallbacks included), ``rollbacks_to_start`` = ``eps rollbacks`` (every restore
      failed), ``failed_restores`` = the restore attempts that failed (each one paid its restore time).
    * ``rework`` = ``rollbacks M - useful - save`` = ``wall - useful - save - restart`` (>= 0): lost
      compute, lost saves and the writes re-run after restarts; written as in
      :func:`engine.waste.time_breakdown` (clipped at 0 against rounding).
    """
    tiers, names, f, rows, shape, wrap = prepare_rows(tiers, classes, job_specs(T, M, R, W, slowdown, work, D))
    work_, T_, M_, D_ = f["work"], f["T"], f["M"], f["D"]
    log_wall = log_wall_per_work(T_, rows, level_ratios(rows.every)) + np.log(work_)
    raise_overflow(log_wall, M_, shape, "wall time")
    wall = np.exp(log_wall)
    log_exposed = log_wall - np.log1p(D_ / M_)   # the time the job holds its nodes (it fails only then)
    exposed = np.exp(log_exposed)
    per_tier = {f"save_{t.name}": st * work_ / (T_ * e) for t, st, e in zip(tiers, rows.stalls, rows.every)}
    save = sum(per_tier.values()) + work_ / T_ * rows.W * rows.s
    rollbacks = np.exp(log_exposed - np.log(M_) - rows.y)
    failures = exposed / M_
    out = {"useful": work_, "save": save, "rework": np.maximum(rollbacks * M_ - (work_ + save), 0.0),
           "restart": exposed * -np.expm1(-rows.y) + D_ * failures, "wall": wall, "failures": failures,
           "rollbacks": rollbacks}
    out.update(per_tier)
    out.update({f"failures_{c}": p * failures for c, p in zip(names, rows.shares)})
    out.update({f"recoveries_{t.name}": r * rollbacks for t, r in zip(tiers, rows.restored)})
    out["rollbacks_to_start"] = rows.eps * rollbacks
    out["failed_restores"] = rows.failed * rollbacks
    return {k: wrap(np.broadcast_to(v, work_.shape).reshape(shape)) for k, v in out.items()}
