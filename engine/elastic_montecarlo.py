"""Monte Carlo of a finite elastic job: replicas fail and drop out, nodes come back, the job pauses, rolls back
and stops at its floor, run by run (the model of :mod:`engine.elastic`, made finite).

What one run does (minutes; symbols of :mod:`engine.elastic`):

* The job starts with every replica running (``k = 0`` out) and no work saved. It computes in segments of
  ``T`` compute wall time, each followed by a save stalling ``C``; while ``k`` replicas are out a minute of
  compute does ``(n - k) / n`` minutes of full-throughput work. Work is committed when its save completes.
  The last segment computes only until ``work`` is reached and then saves (``final_save``, the default and
  the expectation's convention: the work is durable when the job ends, so a job of ``work = N T`` that never
  shrinks is the expectation's job of ``N`` segments), or ends there (``final_save=False``: the convention of
  the deadline answers, :func:`engine.montecarlo.simulate`'s default).
* Failures strike the running replicas' nodes at rate ``lambda (n - k) / n``, ``lambda = 1 / M``; each replica
  out gets its node back after an exponential time of mean ``rho = D`` (rate ``k / rho``). A failure with
  ``k < K`` shrinks (``k + 1``, pause ``P_s``); a return regrows (``k - 1``, pause ``P_g``). With
  ``shrink_keeps_progress = 0`` a shrink rolls the job back to its last checkpoint (it continues, from there,
  on fewer replicas). A node back at once (``D = 0``, ``K >= 1``) is a shrink and a regrow, ``k`` stays 0.
* A failure at the floor (``k = K``) stops the job: it rolls back to the last checkpoint, waits ``D`` for a
  node, then restarts for ``R`` exposed to failures at ``lambda_K = lambda (n - K) / n``; a failure of the
  restart waits ``D`` again and restarts again; it then resumes at ``k = K``. ``K = 0`` is today's job.
  The wait is fixed (``D``, as :func:`engine.montecarlo.simulate` takes it); returns are exponential (the
  chain's assumption; fixed returns move the answer by the residual stated in :mod:`engine.elastic`).
* Pauses and restarts freeze the replicas' chain: no failure and no return during them (what the expectation
  assumes); the nodes are exposed while the job computes, saves and restarts, not while it waits for a node
  or pauses.

Every failure is counted once (shrinks, stops and failures of restarts), and each run also records
``exposure``, the integral of the running nodes' failure rate over its wall time. Wald's identity for the
Poisson process of node failures thinned to the exposed time says ``E[failures] = E[exposure]`` whatever the
path (the rate changes with ``k``; the wall time, not only ``wall / M``); :mod:`engine.elastic`'s
``failures`` is that expectation per unit of work, and with ``K = 0`` and ``D = 0`` it is ``wall / M``.

Against the expectation (:func:`engine.elastic.elastic_breakdown`, a steady-state rate times ``work``) the
finite job differs by a start effect (it starts with every replica running, not in the chain's stationary
law: at most about ``rho`` minutes of the shrunk throughput, relatively ``~ rho / wall``) and an end effect
(its last segment is shorter): both vanish relative to the wall time as the job grows, and are exactly zero
when ``K = 0`` and ``work`` is a whole number of segments. ``tests/test_elastic_montecarlo.py`` checks the
mean against the expectation within 3 standard errors on a grid of long jobs, and against an event-by-event
simulation written in the test.

Sampling: exact for this model. Failures and returns are memoryless, so each round every live run draws the
time to its next failure or return, ``Exp(lambda_k + k / rho)`` (which one: a failure with probability
``lambda_k / (lambda_k + k / rho)``), and runs deterministically until then: it finishes its segment, commits
it, skips the whole failure-free segments that fit before the event at once (each commits ``(n - k) / n x T``
of work), and either ends the job or meets the event inside the next segment. So a round is one failure or
return per run, however many saves lie between. A stop's restart failures are drawn at once
(``Geometric(e^{-lambda_K R}) - 1`` failures, each losing a time exponential truncated to ``[0, R)``). Runs go in
blocks of :data:`ELASTIC_BLOCK`, vectorised over the live runs of a block; block ``b`` draws from
``SeedSequence(seed, spawn_key=(b,))``: same seed, same runs (a run's numbers depend on its block, not only on
its seed: a different run count regroups them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .elastic import check_elastic, elastic_breakdown_kernel
from .errors import InputError
from .finite import check_final_save
from .gate import as_float_array
from .montecarlo import Simulation, check_simulation_size, seed_entropy

__all__ = ["ELASTIC_BLOCK", "MAX_EVENTS_PER_RUN", "ElasticSimulation", "simulate_elastic"]

#: runs simulated together (one event per round each)
ELASTIC_BLOCK = 8192
#: most expected events (failures and returns) per run the simulation accepts: beyond it a run takes too long to
#: simulate event by event, refused by name before anything runs
MAX_EVENTS_PER_RUN = 2_000_000
#: a node back within this (minutes) is back at once (as :mod:`engine.elastic` takes it)
_INSTANT = 1e-300
#: committed work within this relative distance of the job's work finishes it (rounding of the last segment)
_DONE_RTOL = 1e-12


@dataclass(frozen=True)
class ElasticSimulation(Simulation):
    """:class:`engine.montecarlo.Simulation` of an elastic job, plus per run: ``shrinks`` (failures that took a
    replica out, or bounced one with a node back at once), ``stops`` (failures at the floor: rollbacks and
    restarts; also ``rollbacks``), ``regrows`` (replicas back), ``shrunk_time`` (time computing or saving with
    a replica out), ``exposure`` (the integral of the running nodes' failure rate over the run: its expectation
    equals the expected failures, Wald's identity) and ``pause_time`` (shrink and regrow pauses; with the
    stops' restarts and waits they make ``restart_time``)."""

    shrinks: np.ndarray
    stops: np.ndarray
    regrows: np.ndarray
    shrunk_time: np.ndarray
    exposure: np.ndarray
    pause_time: np.ndarray


@dataclass(frozen=True)
class _Job:
    work: float
    T: float
    C: float
    lam: float
    R: float
    D: float
    n: float
    K: int           # replicas that may be out (0 when a node is back at once: every failure bounces)
    bounce: bool     # D = 0 and K >= 1: a failure is a shrink and an immediate regrow
    keep: bool
    final_save: bool
    Ps: float
    Pg: float


def _check(work, T, C, M, R, D, replicas, min_replicas, keep, Ps, Pg, runs, seed,
           final_save) -> tuple[_Job, int, int]:
    vals = {}
    for name, value, rule in (("useful_training_min", work, "positive"), ("T", T, "positive"), ("C", C, "nonnegative"),
                              ("M", M, "positive"), ("R", R, "nonnegative"), ("D", D, "nonnegative"),
                              ("replicas", replicas, "count"), ("min_replicas", min_replicas, "count"),
                              ("shrink_keeps_progress", keep, "flag"), ("shrink_pause_min", Ps, "nonnegative"),
                              ("regrow_pause_min", Pg, "nonnegative")):
        arr = as_float_array(name, value, rule)
        if arr.ndim:
            raise InputError(name, value, "must be a single number (one job per simulation)")
        vals[name] = float(arr)
    if vals["min_replicas"] < 1:
        raise InputError("min_replicas", vals["min_replicas"], "must be >= 1")
    check_elastic(np.array([vals["replicas"]]), np.array([vals["min_replicas"]]),
                  np.array([vals["shrink_keeps_progress"]]))
    r = as_float_array("runs", runs, "count")
    if r.ndim or r < 2:
        raise InputError("runs", runs, "must be a single whole number >= 2")
    check_simulation_size(r)
    seed_ = seed_entropy(seed)
    D_ = 0.0 if vals["D"] < _INSTANT else vals["D"]
    K = int(vals["replicas"] - vals["min_replicas"])
    job = _Job(work=vals["useful_training_min"], T=vals["T"], C=vals["C"], lam=1.0 / vals["M"], R=vals["R"], D=D_,
               n=vals["replicas"], K=K if D_ > 0 else 0, bounce=D_ == 0 and K >= 1,
               keep=vals["shrink_keeps_progress"] > 0, Ps=vals["shrink_pause_min"], Pg=vals["regrow_pause_min"],
               final_save=check_final_save(final_save))
    _check_events(job, vals["M"], K)
    return job, int(r), seed_


def _check_events(job: _Job, M: float, K: int) -> None:
    """Refuse a job whose expected events per run exceed :data:`MAX_EVENTS_PER_RUN` (or whose expectation
    overflows: the job does not finish), by name."""
    one = np.ones(1)
    b = elastic_breakdown_kernel(one * job.work, one * job.T, one * job.C, one * M, one * job.R, one * job.D,
                                 one * job.n, one * K, one * job.keep, one * job.Ps, one * job.Pg)
    events = 2.0 * float(b["failures"][0])          # a round per failure or return (saves are skipped over)
    if not events <= MAX_EVENTS_PER_RUN:
        raise InputError("useful_training_min", job.work, f"gives about {events:.3g} events (failures and returns) "
                         f"per run: at most {MAX_EVENTS_PER_RUN:,} are simulated event by event (a shorter job or "
                         "fewer failures)")


def simulate_elastic(work, T, C, M, R=0.0, D=0.0, replicas=1, min_replicas=1, shrink_keeps_progress=1,
                     shrink_pause_min=0.0, regrow_pause_min=0.0, runs=10000, seed=0,
                     final_save=True) -> ElasticSimulation:
    """Simulate ``runs`` finite elastic jobs (module notes; minutes): wall time, failures, stops, shrinks and the
    rest per run (:class:`ElasticSimulation`). ``work`` of full-throughput compute, saves every ``T`` of compute
    wall time stalling ``C``, job MTBF ``M`` with every replica running, a stop's exposed restart ``R`` after a
    wait ``D`` for a node (also the mean time until a replica out is back), ``replicas`` and ``min_replicas``
    (the floor; equal: today's job), ``shrink_keeps_progress`` (1: a shrink keeps the work since the last
    checkpoint), pauses to shrink and regrow, ``final_save`` (the last segment saved). Same seed, same runs."""
    job, runs_, seed_ = _check(work, T, C, M, R, D, replicas, min_replicas, shrink_keeps_progress, shrink_pause_min,
                               regrow_pause_min, runs, seed, final_save)
    keys = ("wall", "failures", "stops", "shrinks", "regrows", "restart", "shrunk", "exposure", "pauses")
    out = {k: np.empty(runs_) for k in keys}
    for b, lo in enumerate(range(0, runs_, ELASTIC_BLOCK)):
        rows = min(ELASTIC_BLOCK, runs_ - lo)
        rng = np.random.default_rng(np.random.SeedSequence(seed_, spawn_key=(b,)))
        got = _block(job, rows, rng)
        for k in keys:
            out[k][lo:lo + rows] = got[k]
    segments = max(math.ceil(job.work / job.T * (1.0 - _DONE_RTOL)), 1)
    saves = segments if job.final_save else segments - 1
    return ElasticSimulation(wall=out["wall"], failures=out["failures"], rollbacks=out["stops"],
                             restart_time=out["restart"], failure_free=job.work + saves * job.C,
                             shrinks=out["shrinks"], stops=out["stops"], regrows=out["regrows"],
                             shrunk_time=out["shrunk"], exposure=out["exposure"], pause_time=out["pauses"])


def _block(job: _Job, rows: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One block of runs, round by round: every live run advances to its next failure or return (or its end)."""
    keys = ("wall", "failures", "stops", "shrinks", "regrows", "restart", "shrunk", "exposure", "pauses")
    res = {k: np.zeros(rows) for k in keys}
    st = {k: np.zeros(rows) for k in keys + ("k", "pos", "sleft", "pending", "done")}
    st.update(saving=np.zeros(rows, dtype=bool), last=np.zeros(rows, dtype=bool))
    ids = np.arange(rows)
    while ids.size:
        fin = _round(job, st, rng)
        if fin.any():
            for k in keys:
                res[k][ids[fin]] = st[k][fin]
            live = ~fin
            ids = ids[live]
            st = {k: v[live] for k, v in st.items()}
    return res


def _segment(job: _Job, st: dict[str, np.ndarray], theta: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per run, in its current segment: the compute time left ``c`` (0 while saving), whether the segment is the
    job's last (its compute reaches the work) and the time ``t1`` until its work is committed (or the job ends)."""
    saving = st["saving"]
    with np.errstate(divide="ignore"):
        need = (job.work - st["done"] - st["pending"]) / theta
    c = np.where(saving, 0.0, np.minimum(job.T - st["pos"], need))
    last = np.where(saving, st["last"], need <= job.T - st["pos"])
    save = np.where(last & (not job.final_save), 0.0, job.C)
    t1 = np.where(saving, st["sleft"], c + save)
    return c, last, save, t1


def _elapse(st: dict[str, np.ndarray], m: np.ndarray, e: np.ndarray, fail: np.ndarray) -> None:
    """Rows ``m`` (mask) run for ``e`` with their replicas unchanged: wall time, exposure and shrunk time."""
    st["wall"][m] += e
    st["exposure"][m] += fail[m] * e
    st["shrunk"][m] += np.where(st["k"][m] > 0, e, 0.0)


def _within(st: dict[str, np.ndarray], m: np.ndarray, e: np.ndarray, theta, c, last, save) -> None:
    """Rows ``m`` advance ``e`` inside their segment (``e`` below its ``t1``): compute, then into the save."""
    comp = np.minimum(e, c[m])
    st["pending"][m] += theta[m] * comp
    st["pos"][m] += comp
    saving = st["saving"][m]
    st["sleft"][m] = np.where(saving, st["sleft"][m] - e, save[m] - (e - comp))
    st["last"][m] = last[m]
    st["saving"][m] = saving | (e > c[m])


def _round(job: _Job, st: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Advance every run of ``st`` (arrays, modified in place) to its next failure or return, through every save
    before it (whole failure-free segments at once); the mask of the runs that finished first."""
    k = st["k"]
    theta = (job.n - k) / job.n
    fail = job.lam * theta
    back = k / job.D if job.D > 0 else np.zeros(k.shape)
    dt = rng.standard_exponential(k.size) / (fail + back)
    u = rng.random(k.size)
    c, last, save, t1 = _segment(job, st, theta)
    commit = dt >= t1
    fin = commit & last
    _elapse(st, commit, t1[commit], fail)
    st["done"][commit] += st["pending"][commit] + theta[commit] * c[commit]
    st["done"][fin] = job.work
    on = commit & ~fin                     # committed a segment: skip the whole ones before the event
    if on.any():
        rest = dt[on] - t1[on]
        st["pending"][on], st["pos"][on], st["sleft"][on] = 0.0, 0.0, 0.0
        st["saving"][on], st["last"][on] = False, False
        per = theta[on] * job.T
        left = np.maximum(np.ceil((job.work - st["done"][on]) / per * (1.0 - _DONE_RTOL)), 1.0)
        whole = np.minimum(np.floor(rest / (job.T + job.C)), left - 1.0)
        _elapse(st, on, whole * (job.T + job.C), fail)
        st["done"][on] += whole * per
        rest -= whole * (job.T + job.C)
        c, last, save, t1 = _segment(job, st, theta)
        ends = np.zeros(k.size, dtype=bool)
        ends[on] = rest >= t1[on]          # the job's last segment ends before the event
        dt[on] = rest
        _elapse(st, ends, t1[ends], fail)
        st["done"][ends] = job.work
        fin |= ends
    inside = ~commit | (on & ~fin)
    _within(st, inside, dt[inside], theta, c, last, save)
    _elapse(st, inside, dt[inside], fail)
    hit = np.flatnonzero(~fin)
    is_fail = u[hit] * (fail[hit] + back[hit]) < fail[hit]
    _failures(job, st, rng, hit[is_fail])
    ret = hit[~is_fail]
    k[ret] -= 1
    st["regrows"][ret] += 1
    for key in ("wall", "pauses", "restart"):
        st[key][ret] += job.Pg
    return fin


def _failures(job: _Job, st: dict[str, np.ndarray], rng: np.random.Generator, idx: np.ndarray) -> None:
    """Failures at ``idx``: a shrink (or a bounce), or at the floor a stop and its restart."""
    if idx.size == 0:
        return
    st["failures"][idx] += 1
    k = st["k"]
    stop = idx[k[idx] >= job.K] if not job.bounce else idx[:0]
    shrink = np.setdiff1d(idx, stop, assume_unique=True)
    if shrink.size:
        pause = job.Ps + (job.Pg if job.bounce else 0.0)
        st["shrinks"][shrink] += 1
        st["wall"][shrink] += pause
        st["pauses"][shrink] += pause
        st["restart"][shrink] += pause
        if not job.bounce:
            k[shrink] += 1
        else:
            st["regrows"][shrink] += 1
        if not job.keep:
            _rollback(st, shrink)
    if stop.size:
        st["stops"][stop] += 1
        _rollback(st, stop)
        lost, again, exposed = _restarts(job, rng, stop.size)
        st["failures"][stop] += again
        st["wall"][stop] += lost
        st["restart"][stop] += lost
        st["exposure"][stop] += exposed


def _rollback(st: dict[str, np.ndarray], idx: np.ndarray) -> None:
    """Runs ``idx`` lose the work since their last checkpoint and start its segment again."""
    for key in ("pending", "pos", "sleft"):
        st[key][idx] = 0.0
    st["saving"][idx] = False
    st["last"][idx] = False


def _restarts(job: _Job, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` stops' recoveries: (time, failures of the restart, exposure). Each attempt waits ``D`` and runs
    ``R`` exposed at ``lambda_K``; a failure loses a time exponential truncated to ``[0, R)`` and tries again."""
    lam_K = job.lam * (job.n - job.K) / job.n
    if job.R <= 0 or lam_K <= 0:
        return np.full(count, job.D + job.R), np.zeros(count), np.full(count, lam_K * job.R)
    q = -math.expm1(-lam_K * job.R)                  # P(a restart attempt fails)
    again = rng.geometric(1.0 - q, count) - 1        # q < 1: a job whose restarts never succeed is refused first
    total = int(again.sum())
    lost = np.zeros(count)
    if total:
        x = -np.log1p(-rng.random(total) * q) / lam_K   # exponential truncated to [0, R)
        lost = np.bincount(np.repeat(np.arange(count), again), weights=x, minlength=count)
    exposed = lost + job.R
    return (again + 1) * job.D + exposed, again.astype(float), lam_K * exposed

