"""Monte Carlo of a finite job under the tiered (multi-level) checkpoint model, one failure per round.

Model: :mod:`engine.tiers` (nested tiers, failure classes restored from the first tier surviving
them, restarts ``R + restore_min`` restarted by any failure), made finite with the conventions of
:mod:`engine.finite` and :func:`engine.montecarlo.simulate`:

* ``n = ceil(work / T)`` segments, the last one ``work - (n-1) T`` (possibly shorter); save ``k``
  (after segment ``k``) stalls for the stalls of the tiers with ``k % every == 0``; the save after
  the last segment happens only with ``final_save`` (then the job ends when it is durable).
* The job starts at save 0 (on every tier) with no write pending; failures form a Poisson process
  starting with the job (exponential gaps of mean ``M``; each failure's class drawn with the shares).
* Windows between durable checkpoints, as :func:`engine.finite.failure_free_wall_time` lays them
  out, with each save's own stall: from durable ``d`` the next one is ``T + C_{d+1} + W`` away just
  after a restart (or at the start) and ``T + C_{d+1} + W slowdown`` in flow. Without a final save
  the last window is ``T_n`` (``T_n - W (1 - slowdown)`` in flow), or, when the job ends before the
  write of checkpoint ``n-1`` is durable, runs from checkpoint ``n-2``.
* A class-``j`` failure in the window from durable ``d`` rolls back to ``floor(d / k(j)) k(j)``
  (``k(j)`` the every of its tier); the restart then runs ``R + restore_min`` of that tier and is
  restarted by any failure; after it, the window is run clean.
* Restores that fail (:mod:`engine.tiers`, assumption 6): when a tier's ``restore_failure_probability``
  is above 0, each rollback draws its outcome along the class's chain (attempt ``n`` fails with ``q =
  p ** copies`` of its tier): it rolls back to the first tier whose attempt succeeds, or to the job's
  start (milestone 0) when all fail, and its restart runs ``R`` plus every restore tried; a failure
  during the restart restarts it with the same outcome. The draw (one uniform per rollback, after the
  class's) is made only when some ``q > 0``, so designs without failing restores draw exactly as before.

Sampling (exact for the model; its only error is sampling error, :func:`engine.montecarlo.standard_error`):
runs go in blocks of :data:`TIER_BLOCK`; in each round every live run of a block draws one
exponential gap and either finishes (the gap exceeds the failure-free time left), fails somewhere
(the window found by inverting the cumulative window lengths, which repeat every pattern: a search
in one pattern's prefix sums) or fails or completes its restart (the rest of the gap then runs the
job from the restored checkpoint, clean). So each round advances every live run by exactly one failure
(or its end), and memory is a few arrays per block whatever the failures per run. Block ``b`` draws
from ``SeedSequence(seed, spawn_key=(b,))``: gaps, then one uniform per failure for its class.

With one tier surviving every class it is the model of :func:`engine.montecarlo.simulate` (which
samples it differently: the two agree in distribution). Against :func:`engine.tiers.tiered_expected_wall_time`
a job of ``N`` whole patterns with ``final_save=True`` has mean exactly the expectation plus the
start effect ``M exp(y) expm1(W (1 - slowdown)/M)`` (:mod:`engine.tiers`): its first window is
run clean. Exponential failures only (the tiered closed form assumes them too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import InputError
from .finite import SEGMENT_RTOL, check_final_save
from .gate import as_float_array
from .montecarlo import Simulation, seed_entropy
from .tiers.model import (check_design, job_specs, level_ratios, log_wall_per_work, prepare_rows, recovery_index,
                          restore_outcomes, tier_label)

__all__ = ["MAX_PERIOD_SAVES", "TIER_BLOCK", "TieredSimulation", "simulate_tiers"]

MAX_PERIOD_SAVES = 1 << 20
"""Most saves in one period of the outermost tier (its ``every``) the simulator tabulates (two float arrays of
that length): a larger ``every`` is refused by name before anything is allocated."""
#: runs simulated together (one failure per round each)
TIER_BLOCK = 8192
# refuse configurations whose expected failures per run exceed this, and runs that reach the second
_MAX_EXPECTED_FAILURES = 1e4
_MAX_ROUNDS = 10**6


@dataclass(frozen=True)
class TieredSimulation(Simulation):
    """:class:`engine.montecarlo.Simulation` of a tiered job, plus per-run counts by class and by tier.

    ``class_failures[name]`` failures of that class (restarts included; they sum to ``failures``);
    ``recoveries[tier]`` rollbacks restored from that tier (with ``rollbacks_to_start`` they sum to
    ``rollbacks``); ``failed_restores`` restore attempts that failed, ``rollbacks_to_start`` rollbacks
    whose every attempt failed (per run).
    """

    class_failures: dict
    recoveries: dict
    failed_restores: np.ndarray
    rollbacks_to_start: np.ndarray


@dataclass(frozen=True)
class _Job:
    T: float
    M: float
    R: float
    W: float
    s: float
    stall: np.ndarray         # stall of save k, by k % K (K = the last tier's every)
    pre: np.ndarray           # sum of the flow lengths of full windows 0 .. j-1, j = 0 .. K (repeats every pattern)
    cum_shares: np.ndarray    # per class, cumulative shares (last exactly 1)
    every_of: np.ndarray      # per class: every of the tier it is restored from
    restart_of: np.ndarray    # per class: R + that tier's restore time
    tier_of: np.ndarray       # per class: index of that tier
    n_tiers: int
    last: int                 # window that ends the job
    clean_last: float
    flow_last: float
    fcum_last: float          # sum of the flow lengths of full windows 0 .. last-1
    bucket: float = 0.0       # width of the buckets of one pattern's clock, a third of its shortest window (or 0)
    near: np.ndarray | None = None  # per bucket: the window its start falls in (at most K - 1), and that window's
    near_lo: np.ndarray | None = None  # two ends pre[near], pre[near + 1]: a searchsorted in three comparisons
    near_hi: np.ndarray | None = None
    outcomes: Any = None      # with failing restores, per class and outcome: (cumulative chance, every, restart,
                              # tier (-1: the start), failed attempts), 2-D arrays; None: every restore succeeds

    def fcum(self, v):
        """Sum of the flow lengths of full windows ``0 .. v-1`` (integer array ``v``)."""
        q, r = np.divmod(v, self.pre.size - 1)
        return q * self.pre[-1] + self.pre[r]


def _job(work, T, M, R, W, s, stalls, every, restores, shares, rec, final_save) -> _Job:
    n = max(math.ceil(work / T * (1.0 - SEGMENT_RTOL)), 1)
    Tn = min(work - (n - 1) * T, T)
    a = W * (1.0 - s)
    stall = lambda k: float(sum(st for st, e in zip(stalls, every) if k % e == 0))  # noqa: E731
    if final_save:
        last, clean, flow = n - 1, Tn + stall(n) + W, max(Tn - a, 0.0) + stall(n) + W
    elif W > 0 and Tn < a and n >= 2:   # the job ends before checkpoint n-1 is durable
        tail = Tn / (1.0 - s)
        last, clean, flow = n - 2, T + stall(n - 1) + tail, T - a + stall(n - 1) + tail
    else:
        last, clean, flow = n - 1, Tn, Tn - a
    K = int(every[-1])
    j = np.arange(K + 1)
    pre = (j * (T - a + W) + sum(st * (j // e) for st, e in zip(stalls, every))).astype(float)
    cum = np.cumsum(shares) / np.sum(shares)
    cum[-1] = 1.0
    rec = np.asarray(rec)
    every_, restores_ = np.asarray(every, np.int64), np.asarray(restores, float)
    ks = np.arange(K)
    per_save = sum((st * (ks % e == 0) for st, e in zip(stalls, every)), np.zeros(K))  # stall(k), vectorised
    job = _Job(T, M, R, W, s, per_save, pre, cum, every_[rec], R + restores_[rec], rec,
               len(every), last, clean, flow, 0.0)
    h = float(np.diff(pre).min()) / 3.0  # windows are at least T long in flow
    buckets = math.ceil(pre[-1] / h) + 1 if h > 0 else math.inf
    if buckets <= max(64, 16 * (K + 1)):
        near = np.minimum(np.searchsorted(pre, np.arange(buckets) * h, side="right") - 1, K - 1)
        job = replace(job, bucket=h, near=near, near_lo=pre[near], near_hi=pre[near + 1])
    return replace(job, fcum_last=float(job.fcum(np.int64(last))))


def _outcome_table(job: _Job, tiers, names, rows) -> _Job:
    """The job with its restore outcomes (:func:`engine.tiers.model.restore_outcomes`) when a restore can fail."""
    q = [float(v[0]) for v in rows.q]
    if not any(q):
        return job
    outs = restore_outcomes(tiers, names, [float(v[0]) for v in rows.shares], [float(v[0]) for v in rows.restores],
                            q, job.R)
    width = len(tiers) + 1
    cum, every, restart, tier, failed = (np.zeros((len(names), width)) for _ in range(5))
    at = 0
    for j, c in enumerate(names):
        n = sum(1 for t in tiers if c in t.survives) + 1
        chunk = outs[at:at + n]
        at += n
        p = np.array([o[0] for o in chunk]) / float(rows.shares[j][0])
        cum[j, :n] = np.cumsum(p)
        cum[j, n - 1:] = 2.0                         # the last outcome takes the rest (and the padding never wins)
        for k, (_, r, i, f) in enumerate(chunk):
            every[j, k] = job.last + 1 if i is None else float(rows.every[i][0])
            restart[j, k], tier[j, k], failed[j, k] = r, len(tiers) if i is None else i, f
    return replace(job, outcomes=(cum, every.astype(np.int64), restart, tier.astype(np.int64), failed.astype(np.int64)))


def _check_scalars(named: Mapping[str, Any]) -> None:
    for name, value in named.items():
        if np.ndim(value):
            raise InputError(name, value, "must be a single number: the simulator runs one configuration "
                             "(loop over configurations, with the same seed for common random numbers)")


def simulate_tiers(work, T, M, R=0.0, W=0.0, slowdown=0.0, *, tiers: Sequence[Any], classes: Mapping[str, Any],
                   runs=10000, seed=0, final_save=False, D=0.0) -> TieredSimulation:
    """Monte Carlo of the finite tiered job (module notes), vectorised over runs in blocks.

    Returns a :class:`TieredSimulation`: per run the wall time, failures (restarts included),
    rollbacks, restart time, failures by class and rollbacks by tier; ``mean()`` and
    ``standard_error()`` as :class:`engine.montecarlo.Simulation`. Reproducible for a given ``seed``
    (an int, or a numpy ``Generator`` an int seed is drawn from). Every input a single number.
    Refuses (``InputError`` on ``M``) configurations expecting more than 10^4 failures per run.
    ``D``: a downtime after every failure, before its restart, in which the job cannot fail (the wait
    for a node): the runs are simulated on exposed time and each failure adds ``D`` to the wall and
    restart time (``R`` is the exposed restart).
    """
    tiers = check_design(tiers, classes)
    named = {"work": work, "T": T, "M": M, "R": R, "W": W, "slowdown": slowdown, "runs": runs, "D": D}
    for i, t in enumerate(tiers):
        lab = tier_label(i, t)
        named.update({f"{lab}.checkpoint_stall_min": t.checkpoint_stall_min, f"{lab}.restore_min": t.restore_min,
                      f"{lab}.every": t.every, f"{lab}.restore_failure_probability": t.restore_failure_probability,
                      f"{lab}.copies": t.copies})
    named.update({f"classes[{c!r}]": v for c, v in classes.items()})
    _check_scalars(named)
    final_save = check_final_save(final_save)
    runs_ = int(as_float_array("runs", runs, "count"))
    _, names, f, rows, _, _ = prepare_rows(tiers, classes, job_specs(T, M, R, W, slowdown, work))
    every = [int(e[0]) for e in rows.every]
    log_wall = log_wall_per_work(f["T"], rows, level_ratios(rows.every))[0] + math.log(float(f["work"][0]))
    expected = math.exp(min(log_wall, 700.0)) / float(f["M"][0])
    if not expected <= _MAX_EXPECTED_FAILURES:
        start = (" or restores fail so often that failures send the job back to its start (lower a tier's "
                 "restore_failure_probability, or add copies)") if float(np.asarray(rows.eps).reshape(-1)[0]) > 0 else ""
        raise InputError("M", float(f["M"][0]), f"failures are so frequent against the saves{start} that a run would "
                         f"see about {expected:.3g} failures (limit {_MAX_EXPECTED_FAILURES:g}): shorten T or check M")
    if every[-1] > MAX_PERIOD_SAVES:  # the pattern tables below hold one entry per save of the outermost period
        lab = tier_label(len(tiers) - 1, tiers[-1])
        raise InputError(f"{lab}.every", every[-1], f"the simulator tabulates one pattern of {every[-1]:,} saves; at "
                         f"most MAX_PERIOD_SAVES = {MAX_PERIOD_SAVES:,} (a tier written that rarely is never "
                         "restored from in practice)")
    job = _job(float(f["work"][0]), float(f["T"][0]), float(f["M"][0]), float(f["R"][0]), float(f["W"][0]),
               float(f["slowdown"][0]), [float(v[0]) for v in rows.stalls], every, [float(v[0]) for v in rows.restores],
               [float(v[0]) for v in rows.shares], recovery_index(tiers, classes), final_save)
    job = _outcome_table(job, tiers, names, rows)
    seed_ = seed_entropy(seed)
    wall, fails, rolls, rtime = np.empty(runs_), np.empty(runs_, np.int64), np.empty(runs_, np.int64), np.empty(runs_)
    by_class = np.zeros((runs_, len(names)), np.int64)
    by_tier = np.zeros((runs_, len(tiers) + 1), np.int64)   # the last column: rollbacks to the job's start
    bad = np.zeros(runs_, np.int64)
    for b, lo in enumerate(range(0, runs_, TIER_BLOCK)):
        sl = slice(lo, min(lo + TIER_BLOCK, runs_))
        rng = np.random.default_rng(np.random.SeedSequence(seed_, spawn_key=(b,)))
        wall[sl], fails[sl], rolls[sl], rtime[sl], by_class[sl], by_tier[sl], bad[sl] = _block(
            job, sl.stop - sl.start, rng)
    free = _remaining(job, np.zeros(1, np.int64))[0][0]
    down = float(as_float_array("D", D, "nonnegative"))
    if down:
        wall, rtime = wall + down * fails, rtime + down * fails
    return TieredSimulation(wall=wall, failures=fails, rollbacks=rolls, restart_time=rtime, failure_free=float(free),
                            class_failures={c: by_class[:, j] for j, c in enumerate(names)},
                            recoveries={t.name: by_tier[:, i] for i, t in enumerate(tiers)}, failed_restores=bad,
                            rollbacks_to_start=by_tier[:, -1])


def _remaining(job: _Job, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From milestone ``w`` (reached clean): failure-free time to the job's end, its first window, ``fcum(w+1)``.

    A run leaves a milestone only clean (the job's start, or a restart): no write is pending.
    """
    q, r = np.divmod(w + 1, job.pre.size - 1)
    f1 = q * job.pre[-1] + job.pre[r]
    at_last = w == job.last
    first = np.where(at_last, job.clean_last, job.T + job.W + job.stall[r])
    return first + np.where(at_last, 0.0, job.fcum_last - f1 + job.flow_last), first, f1


def _position(job: _Job, tau: np.ndarray) -> np.ndarray:
    """Largest window index ``v`` with ``fcum(v) <= tau`` (to rounding): one pattern's prefix sums, searched.

    The search: the pattern's clock cut into buckets a third of its shortest window wide, so that between a
    bucket's start and any point of it or the next bucket lies at most one window boundary; from the window of the
    bucket's start, one comparison with each end of that window gives the answer ``searchsorted(pre, rest,
    "right") - 1`` would give, exactly (the bucket found by rounding may be one off either way). Patterns whose
    windows differ too much in length for a small table use searchsorted itself."""
    K = job.pre.size - 1
    k = np.floor(tau / job.pre[-1])
    rest = tau - k * job.pre[-1]
    if job.near is None:
        return (k * K).astype(np.int64) + np.searchsorted(job.pre, rest, side="right") - 1
    b = np.minimum((rest * (1.0 / job.bucket)).astype(np.int64), job.near.size - 1)
    b[b < 0] = 0
    j = job.near[b] - (rest < job.near_lo[b]) + (rest >= job.near_hi[b])
    return (k * K).astype(np.int64) + j


def _block(job: _Job, rows: int, rng: np.random.Generator):
    """One block of runs, one failure per round (module notes). Returns the per-run arrays.

    A run holds its milestone ``w`` and ``g = fcum(w)``, where ``w`` is on the clock of windows run in flow.
    From a clean start at ``w`` the failure-free time left is ``fcum_last + flow_last + a - g`` (``a = W (1 -
    slowdown)``: what a clean first window adds to a flow one), and a failure ``x`` into it falls at ``g + x - a``
    on that clock: the window it falls in, clipped to ``[w, last]``, is the last durable checkpoint. A run in a
    restart holds the restart's length in ``rdur`` (0 while it runs the job). Failures and rollbacks are counted
    by class and by tier (flat indices into the per-run rows); their totals are the row sums.
    """
    n_cls, n_tier = job.cum_shares.size, job.n_tiers
    n_tier += 1   # the last column counts rollbacks to the job's start (every restore tried failed)
    out = (np.empty(rows), np.empty(rows), np.empty((rows, n_cls), np.int64), np.empty((rows, n_tier), np.int64),
           np.empty(rows, np.int64))
    a = job.W * (1.0 - job.s)
    end = job.fcum_last + job.flow_last + a  # failure-free clock of the job's end, plus a (the clean first window)
    short_last = job.clean_last != job.flow_last + a  # a final save longer in flow than clean: its own length
    idx = np.arange(rows)
    t, rtime, rdur, g = np.zeros(rows), np.zeros(rows), np.zeros(rows), np.zeros(rows)
    w = np.zeros(rows, np.int64)
    restarting = np.zeros(rows, bool)
    cls_n, tier_n = np.zeros((rows, n_cls), np.int64), np.zeros((rows, n_tier), np.int64)
    bad = np.zeros(rows, np.int64)
    for _ in range(_MAX_ROUNDS):
        if not idx.size:
            break
        x = rng.exponential(job.M, idx.size)
        # restarts: a gap no longer than the restart interrupts it; otherwise the job resumes, clean
        if restarting.any():
            spent = np.minimum(x, rdur)
            t += spent
            rtime += spent
            restarting &= x <= rdur
            x -= spent
            rdur *= restarting
        # running: finish, or fail in some window (a restart that failed again has x = 0 left: not done)
        left = end - g if not short_last else np.where(w == job.last, job.clean_last, end - g)
        done = x > left
        t += np.where(done, left, x)
        hit = np.flatnonzero(~done)
        u = rng.random(hit.size)
        cls = np.zeros(hit.size, np.int64)
        for share in job.cum_shares[:-1]:  # the class by its share: searchsorted(cum_shares[:-1], u, "right")
            cls += u >= share
        cls_n.reshape(-1)[hit * n_cls + cls] += 1
        run = ~restarting[hit]
        pos, c = hit[run], cls[run]
        durable = np.clip(_position(job, g[pos] + x[pos] - a), w[pos], job.last)
        k, dur, tier = job.every_of[c], job.restart_of[c], job.tier_of[c]
        if job.outcomes is not None:     # which restore succeeds (module notes): one uniform per rollback
            cum, every_o, restart_o, tier_o, failed_o = job.outcomes
            o = np.sum(rng.random(pos.size)[:, None] >= cum[c], axis=1)
            k, dur, tier = every_o[c, o], restart_o[c, o], tier_o[c, o]
            bad[pos] += failed_o[c, o]
        w[pos] = durable = durable // k * k
        g[pos] = job.fcum(durable)
        restarting[pos], rdur[pos] = True, dur
        tier_n.reshape(-1)[pos * n_tier + tier] += 1
        if done.any():
            fin = np.flatnonzero(done)
            for o_, v in zip(out, (t, rtime, cls_n, tier_n, bad)):
                o_[idx[fin]] = v[fin]
            keep = ~done
            idx, t, rtime, rdur, g, w, restarting, cls_n, tier_n, bad = (
                v[keep] for v in (idx, t, rtime, rdur, g, w, restarting, cls_n, tier_n, bad))
    else:
        raise InputError("M", job.M, f"a run reached {_MAX_ROUNDS:,} failures: failures are far too frequent")
    wall, rtime, by_class, by_tier, failed = out
    return wall, by_class.sum(axis=1), by_tier.sum(axis=1), rtime, by_class, by_tier, failed
