"""Elastic continuation: a job of replicas that trains on with fewer of them while failed nodes come back.

Systems modelled: torchft (PyTorch, 2025: fault-tolerant data-parallel training; a failed replica group
drops out of the quorum, the others keep stepping, and a returning group heals from a live peer),
Oobleck (Jang et al., "Oobleck: Resilient Distributed Training of Large Models Using Pipeline
Templates", SOSP'23: redundant pipeline replicas reconfigure to fewer pipelines instead of restarting)
and ReCycle (Gandhi et al., "ReCycle: Resilient Training of Large DNNs using Pipeline Adaptation",
SOSP'24: the surviving data-parallel peers absorb a failed one's work).

Symbols (one time unit, minutes on every surface): ``n`` replicas (``nodes / nodes_per_replica``), ``K = n -
min_replicas`` the most replicas that may be out while the job runs on, ``lambda = 1/M`` the job's failure
rate with every replica running (``M`` the job MTBF), ``rho`` the mean time until a failed replica's node is
back (``downtime_min``: the spare pool's wait for a node per failure, :mod:`engine.recovery`), ``T`` compute
(wall) time between saves, ``C`` save stall, ``R`` the exposed restart and ``D = rho`` its unexposed wait for a
node (:mod:`engine.waste`), ``P_s`` and ``P_g`` the shrink and regrow pauses.

What happens (the model, exact under these assumptions):

* The replicas out, ``k = 0 .. K``, follow a continuous-time chain. A failure strikes one of the ``n - k``
  running replicas' nodes at rate ``lambda_k = lambda (n - k) / n`` (independent node failures, the
  node->job division) and takes that replica out (``k + 1``; a *shrink*, pause ``P_s``). Each replica out
  gets its node back after an exponential time of mean ``rho`` (rate ``k / rho``; a *regrow*, pause
  ``P_g``). A failure at ``k = K`` (the floor) *stops* the job: it rolls back to the last checkpoint and
  restarts as today, ``D`` waiting for a node, then ``R`` exposed to failures at rate ``lambda_K``, and
  resumes at ``k = K``. ``min_replicas = n`` (``K = 0``) is today's plan.
* Data parallelism: a step takes the same time on fewer replicas and does ``(n - k) / n`` of the work, so
  throughput is proportional to the replicas running; saves come every ``T`` of compute wall time (every so
  many steps).
* Progress since the last checkpoint survives a shrink when the framework keeps replicas in sync and heals
  a returning one from a live peer (torchft; ``shrink_keeps_progress = 1``); otherwise (``0``) every shrink
  rolls the job back to the last checkpoint, and it continues on fewer replicas without a restart.
* The pauses and the stop's restart freeze the chain (no failure, no return during them: pauses are
  seconds to minutes against hours between events); a restart's own failures are counted as today.

Exact expectation (renewal-reward over *attempts*: from a checkpoint, or a rollback, to the next checkpoint
or rollback). With ``G`` the chain's sub-generator inside an attempt (returns, and shrinks when progress
survives them; every event that rolls back is a killing rate ``kappa``), ``Theta = diag((n - k)/n)``,
``L = T + C``, per start state (Van Loan's block exponentials [VanLoan78]):

* occupancy ``U = int_0^L e^{Gt} dt`` (expected time in each state), end law ``E = e^{GL}``;
* work kept ``J = int_0^T e^{Gt} Theta e^{G(T-t)} dt e^{GC} 1`` (the work of an attempt that reaches its save);
* the next attempt's start: ``E`` (after a save) plus ``U kappa`` (after a rollback), rows summing to 1.

``pi`` the stationary law of the start states; per attempt the time is ``pi (U 1 + pauses + stops x
(e^{lambda_K R} D + (e^{lambda_K R} - 1) / lambda_K))``, the work ``pi J``, and the expected wall time of
``work`` is ``work x time / (pi J)`` (the steady-state convention of Daly's model, FGCS 22(3), 2006). With
``K = 0`` this is Daly's expectation with downtime exactly: ``(M + D) e^{R/M} (e^{(T+C)/M} - 1) work / T``
(:func:`engine.waste.expected_wall_time`; tested). The optimum interval minimises it (golden section on
``log T``). When shrinks keep progress the chain inside an attempt is a birth-death chain, similar to a
symmetric matrix, so one eigendecomposition per row serves every interval; otherwise the blocks are
exponentiated by scaling and squaring (:func:`_expm`).

Every failure is counted once (``failures``): Wald's identity with the running nodes' time-varying rate,
``E[failures] = E[int lambda_k(t) dt]`` over the exposed time (:func:`elastic_breakdown`); the finite job's
Monte Carlo, which also gives the deadline answers, is :mod:`engine.elastic_montecarlo`.

Where it stops being valid: node failures that are not exponential or not independent (a correlated
domain takes several replicas at once: refused); return times that are not exponential (a fixed repair
time returns nodes more regularly: the simulation in ``tests/test_elastic.py`` moves the wall time by 0.05 and
0.1 % at two points of its grid, 3 % +- 2.6 % at a third with few returns per run); a shared spare
pool makes returns depend on each other (``rho`` is the pool's mean wait for a job that stops while it
waits, :mod:`engine.recovery`; exact without spares or with a free spare always there, approximate
between, since an elastic job keeps drawing spares while shrunk); synchronous saves only (async writes
refused); pipeline-parallel replicas whose throughput is not proportional to their number (Oobleck's
templates lose a little more); at most :data:`MAX_REPLICAS_OUT` replicas out (one chain state each).

References
----------
* torchft, PyTorch (2025), https://github.com/pytorch/torchft: per-step quorum, replica groups that drop
  out and heal from peers.
* [Oobleck23] I. Jang, Z. Yang, Z. Zhang, X. Jin, M. Chowdhury, SOSP'23.
* [ReCycle24] S. Gandhi, M. Zhao, A. Skiadopoulos, C. Kozyrakis, SOSP'24.
* [VanLoan78] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE Trans.
  Automatic Control 23(3), 395-404, 1978.

Functions broadcast over scalars, numpy arrays and pandas Series and raise :class:`engine.InputError`.
"""

from __future__ import annotations


import numpy as np

from .errors import InputError
from .gate import check_finite_result, prepare
from .roots import golden_rows

__all__ = ["MAX_REPLICAS_OUT", "elastic_breakdown", "elastic_breakdown_kernel", "elastic_optimal_interval",
           "elastic_optimal_interval_kernel"]

#: most replicas out the chain holds (``replicas - min_replicas``): one state each, solved exactly
MAX_REPLICAS_OUT = 64
#: a return time below this (minutes) is a node back at once
_INSTANT = 1e-300
#: golden-section steps on log T (a bracket of ln(3e5) ~ 12.6 shrinks to ~6e-8: the interval to 1e-7,
#: where the expected wall time is flat to ~1e-14)
_STEPS = 40


def _quiet():
    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def _chain(n, K, lam, rho, keep, m):
    """Per row (arrays of length N) the sub-generator G (N, m, m), the kill rates kappa (N, m), the next start
    after a kill (N, m, m: row i = law of the next start after a kill in state i), the rates of returns,
    shrinks and stops per state (N, m) each, and throughput theta (N, m). ``m`` states 0 .. m-1."""
    N = n.shape[0]
    i = np.arange(m, dtype=float)[None, :]
    theta = (n[:, None] - i) / n[:, None]
    fail = lam[:, None] * theta
    bounce = (rho == 0) & (K >= 1)            # a node back at once: a shrink and an immediate regrow
    with _quiet():
        ret = np.where(rho[:, None] > 0, i / rho[:, None], 0.0)
    floor = (i == (m - 1))
    stop = np.where(floor & ~bounce[:, None], fail, 0.0)
    shrink = np.where(floor, np.where(bounce[:, None], fail, 0.0), fail)   # failures that do not stop the job
    keep_ = keep[:, None] > 0
    G = np.zeros((N, m, m))
    idx = np.arange(m)
    if m > 1:
        G[:, idx[1:], idx[:-1]] = ret[:, 1:]                                  # regrow: k -> k - 1
        up = np.where(keep_, shrink[:, :-1], 0.0)                             # a shrink that keeps progress
        G[:, idx[:-1], idx[1:]] = up
    kill = stop + np.where(keep_, 0.0, shrink)                               # every event that rolls back
    if m > 1:
        out_rate = ret + np.where(keep_ & ~floor, shrink, 0.0) + kill
    else:
        out_rate = kill
    G[:, idx, idx] = -out_rate
    nxt = np.zeros((N, m, m))
    nxt[:, idx, np.minimum(idx + 1, m - 1)] = 1.0                             # a shrink that rolls back: k + 1
    nxt[:, m - 1, :] = 0.0
    nxt[:, m - 1, m - 1] = 1.0                                                # a stop resumes at the floor
    if np.any(bounce):
        nxt[bounce, 0, :] = 0.0
        nxt[bounce, 0, 0] = 1.0                                               # a bounce at 0 stays at 0
    return G, kill, nxt, ret, shrink, stop, theta


#: Taylor terms of the matrix exponential after scaling to a norm <= 1/2 (the remainder below 1e-16)
_TAYLOR = 14


def _expm(A):
    """``exp(A)`` of each matrix of a (N, k, k) stack: scaling and squaring with a Taylor series [Moler03],
    vectorised over the stack (scipy's expm loops over it in Python).

    [Moler03] C. Moler, C. Van Loan, "Nineteen dubious ways to compute the exponential of a matrix, twenty-five
    years later", SIAM Review 45(1), 3-49, 2003 (method 3, scaling and squaring)."""
    norm = np.abs(A).sum(axis=2).max(axis=1)
    with _quiet():
        s = np.maximum(np.ceil(np.log2(np.maximum(norm, 1e-300) / 0.5)), 0.0).astype(int)
    X = A / (2.0 ** s)[:, None, None]
    k = A.shape[1]
    eye = np.eye(k)
    out = eye + X / _TAYLOR
    for j in range(_TAYLOR - 1, 0, -1):     # Horner: I + X/1 (I + X/2 (I + ... ))
        out = eye + (X @ out) / j
    for step in range(int(s.max()) if s.size else 0):
        more = s > step
        out[more] = out[more] @ out[more]
    return out


def _save_block(G, C):
    """``(e^{GC}, int_0^C e^{Gt} dt)`` for (N, m, m) sub-generators and (N,) save times (Van Loan)."""
    N, m, _ = G.shape
    B = np.zeros((N, 2 * m, 2 * m))
    B[:, :m, :m] = G
    B[:, :m, m:] = np.eye(m)
    small = _expm(B * C[:, None, None])
    return small[:, :m, :m], small[:, :m, m:]


def _attempt(G, theta, T, save):
    """(U, E, J) of the module notes, for (N, m, m) sub-generators, (N,) times T and the save's block."""
    expm = _expm
    N, m, _ = G.shape
    eye = np.broadcast_to(np.eye(m), (N, m, m))
    A = np.zeros((N, 3 * m, 3 * m))
    A[:, :m, :m] = G
    A[:, :m, m:2 * m] = theta[:, :, None] * np.eye(m)
    A[:, m:2 * m, m:2 * m] = G
    A[:, m:2 * m, 2 * m:] = eye
    big = expm(A * T[:, None, None])
    E_T, X, F_T = big[:, :m, :m], big[:, :m, m:2 * m], big[:, m:2 * m, 2 * m:]
    E_C, F_C = save
    E = E_T @ E_C
    U = F_T + E_T @ F_C
    J = (X @ E_C).sum(axis=2)
    return np.maximum(U, 0.0), np.maximum(E, 0.0), np.maximum(J, 0.0)


def _spectral(G):
    """``(P, lam, Q)`` with ``G = P diag(lam) Q``, ``Q = P^{-1}``, for (N, m, m) birth-death sub-generators (every
    up and down rate > 0): ``S G S^{-1}`` is symmetric with ``s_{k+1} = s_k sqrt(up_k / down_{k+1})``, so one
    symmetric eigendecomposition per row gives every exponential and integral at any time [Kleinrock75, the
    reversible birth-death chain]."""
    up = np.diagonal(G, offset=1, axis1=1, axis2=2)
    down = np.diagonal(G, offset=-1, axis1=1, axis2=2)
    N, m, _ = G.shape
    logs = np.zeros((N, m))
    logs[:, 1:] = np.cumsum(0.5 * (np.log(up) - np.log(down)), axis=1)
    logs -= logs.max(axis=1, keepdims=True)
    sc = np.exp(logs)
    H = G * sc[:, :, None] / sc[:, None, :]
    H = 0.5 * (H + np.transpose(H, (0, 2, 1)))
    lam, V = np.linalg.eigh(H)
    return V / sc[:, :, None], lam, np.transpose(V, (0, 2, 1)) * sc[:, None, :]


def _phi(x, t):
    """``(e^{x t} - 1) / x`` (``t`` at ``x = 0``), for ``x <= 0``."""
    with _quiet():
        return np.where(x * t < -1e-300, np.expm1(x * t) / np.where(x == 0, 1.0, x), t)


def _attempt_spectral(pre, theta, T, C):
    """(U, E, J) of the module notes from :func:`_spectral`'s decomposition (no matrix exponential)."""
    P, lam, Q = pre
    L = (T + C)[:, None]
    E = (P * np.exp(lam * L)[:, None, :]) @ Q
    U = (P * _phi(lam, L)[:, None, :]) @ Q
    W = (Q * theta[:, None, :]) @ P                                    # Q Theta P in the eigenbasis
    hi = np.maximum(lam[:, :, None], lam[:, None, :])
    gap = -np.abs(lam[:, :, None] - lam[:, None, :])
    Tb = T[:, None, None]
    phi2 = np.exp(hi * Tb) * _phi(gap, Tb)                             # int_0^T e^{l_i t} e^{l_j (T - t)} dt
    ones = Q.sum(axis=2) * np.exp(lam * C[:, None])                    # e^{Lambda C} Q 1
    J = np.einsum("nai,ni->na", P, np.einsum("nij,nj->ni", W * phi2, ones))
    return np.maximum(U, 0.0), np.maximum(E, 0.0), np.maximum(J, 0.0)


def _stationary(P):
    """Stationary law of each (N, m, m) stochastic matrix (rows sum to 1)."""
    N, m, _ = P.shape
    if m == 1:
        return np.ones((N, 1))
    A = np.transpose(P, (0, 2, 1)) - np.eye(m)
    A[:, -1, :] = 1.0
    b = np.zeros((N, m))
    b[:, -1] = 1.0
    return np.maximum(np.linalg.solve(A, b[:, :, None])[:, :, 0], 0.0)


def _per_attempt(T, C, M, R, D, n, K, keep, Ps, Pg, cache=None):
    """Long-run figures per attempt for rows of one chain size (module notes): a dict of (N,) arrays.
    ``cache``: a dict kept across calls on the same rows with other intervals (the chain and the save's
    block do not depend on T)."""
    m = int(np.where(D > 0, K, 0).max()) + 1 if D.size else 1
    lam = 1.0 / M
    symmetric = m > 1 and bool(np.all(keep > 0))   # a birth-death chain: one eigendecomposition serves every T
    if cache is None or "chain" not in cache:
        chain = _chain(n, K, lam, D, keep, m)
        built = (chain, _spectral(chain[0]) if symmetric else _save_block(chain[0], C))
        if cache is not None:
            cache["chain"] = built
    else:
        built = cache["chain"]
    (G, kill, nxt, ret, shrink, stop, theta), pre = built
    U, E, J = _attempt_spectral(pre, theta, T, C) if symmetric else _attempt(G, theta, T, pre)
    P = E + np.einsum("nai,ni,nij->naj", U, kill, nxt)
    P /= P.sum(axis=2, keepdims=True)
    pi = _stationary(P)
    occ = np.einsum("na,nai->ni", pi, U)                                      # time in each state per attempt
    lam_K = lam * (n - np.where(D > 0, K, 0)) / n
    with _quiet():
        grow = np.expm1(lam_K * R)
        restart_one = np.where(lam_K > 0, grow / lam_K, R)
    stops = (occ * stop).sum(axis=1)
    returns = (occ * ret).sum(axis=1)
    shrinks = (occ * shrink).sum(axis=1)
    bounce = (D == 0) & (K >= 1)
    pauses = shrinks * Ps + np.where(bounce, shrinks * Pg, returns * Pg)
    stop_time = stops * ((grow + 1.0) * D + restart_one)
    i = np.arange(m, dtype=float)[None, :]
    return {
        "active": occ.sum(axis=1), "work": (pi * J).sum(axis=1), "saves": (pi * E.sum(axis=2)).sum(axis=1),
        "pauses": pauses, "stop_time": stop_time, "stops": stops, "shrinks": shrinks,
        "failures": (occ * lam[:, None] * theta).sum(axis=1) + stops * grow,
        "replica_time": (occ * (n[:, None] - i)).sum(axis=1), "shrunk": occ[:, 1:].sum(axis=1),
    }


def _grouped(T, C, M, R, D, n, K, keep, Ps, Pg, cache=None):
    """:func:`_per_attempt` over rows of any chain size (grouped by size and by what a shrink keeps, so each
    group is one batched solve)."""
    size = np.where(D > 0, K, 0) * 2 + (keep > 0)
    out: dict[str, np.ndarray] = {}
    for m in np.unique(size):
        rows = np.flatnonzero(size == m)
        part = _per_attempt(*(a[rows] for a in (T, C, M, R, D, n, K, keep, Ps, Pg)),
                            cache=None if cache is None else cache.setdefault(int(m), {}))
        for key, v in part.items():
            out.setdefault(key, np.empty(T.shape))[rows] = v
    return out


def elastic_breakdown_kernel(work, T, C, M, R, D, n, K, keep, Ps, Pg, cache=None):
    """:func:`elastic_breakdown` on validated 1-d arrays of one length (``K <= MAX_REPLICAS_OUT``); ``cache``: a
    dict reused across calls that change only ``T`` and ``work``."""
    if T.size == 0:
        return {k: np.empty(0) for k in ("useful", "total", "save", "restart", "rework", "failures", "stops",
                                         "shrinks", "shrunk", "mean_replicas_running")}
    D = np.where(D < _INSTANT, 0.0, D)      # a node back within 1e-300 min is back at once (1/D would overflow)
    with _quiet():
        a = _grouped(T, C, M, R, D, n, K, keep, Ps, Pg, cache)
        attempts = work / a["work"]
        total = attempts * (a["active"] + a["pauses"] + a["stop_time"])
        save = attempts * a["saves"] * C
        restart = attempts * (a["pauses"] + a["stop_time"])
        out = {"useful": work, "total": total, "save": save, "restart": restart,
               "rework": np.maximum(total - work - save - restart, 0.0),
               "failures": attempts * a["failures"], "stops": attempts * a["stops"],
               "shrinks": attempts * a["shrinks"], "shrunk": attempts * a["shrunk"],
               "mean_replicas_running": a["replica_time"] / a["active"]}
    check_finite_result("M", total, "the expected wall time overflows: the job does not finish (failures come "
                        "faster than it can save and restart)", {"M": M, "T": T, "R": R, "work": work})
    return out


def _inputs(work, T, C, M, R, D, replicas, min_replicas, keep, Ps, Pg):
    (work_, T_, C_, M_, R_, D_, n_, f_, k_, s_, g_), wrap = prepare(
        ("useful_training_min", work, "positive"), ("T", T, "positive"), ("C", C, "nonnegative"),
        ("M", M, "positive"), ("R", R, "nonnegative"), ("D", D, "nonnegative"), ("replicas", replicas, "count"),
        ("min_replicas", min_replicas, "count"), ("shrink_keeps_progress", keep, "flag"),
        ("shrink_pause_min", Ps, "nonnegative"), ("regrow_pause_min", Pg, "nonnegative"))
    arrays = [np.atleast_1d(a).astype(float) for a in np.broadcast_arrays(work_, T_, C_, M_, R_, D_, n_, f_, k_, s_, g_)]
    shape = np.broadcast_shapes(*(np.shape(a) for a in (work_, T_, C_, M_, R_, D_, n_, f_, k_, s_, g_)))
    flat = [a.ravel() for a in arrays]
    check_elastic(flat[6], flat[7], flat[8])
    return flat, shape, wrap


def check_elastic(replicas, min_replicas, keep) -> None:
    """Refuse floors above the replica count, more than :data:`MAX_REPLICAS_OUT` replicas out and flags not 0/1."""
    for bad, field, values, rule in (
            (min_replicas > replicas, "min_replicas", min_replicas, "must be <= the replicas (nodes / nodes_per_replica)"),
            (replicas - min_replicas > MAX_REPLICAS_OUT, "min_replicas", min_replicas,
             f"must be >= replicas - {MAX_REPLICAS_OUT}: the plan solves one state per replica out, at most "
             f"{MAX_REPLICAS_OUT} (raise the floor; below it the chance of so many out at once is what matters)"),
            (keep > 1, "shrink_keeps_progress", keep, "must be 0 (a shrink rolls back to the last checkpoint) or 1 "
             "(replicas kept in sync: progress survives a shrink)")):
        if np.any(bad):
            p = int(np.flatnonzero(np.atleast_1d(bad))[0])
            raise InputError(field, float(np.atleast_1d(values)[p]), rule)


def elastic_breakdown(work, T, C, M, R, D, replicas, min_replicas, shrink_keeps_progress=1, shrink_pause_min=0.0,
                      regrow_pause_min=0.0):
    """Expected wall time of ``work`` for an elastic job and where it goes (module notes; minutes).

    Returns a dict: ``total``, ``useful``, ``save``, ``rework`` (lost work and the throughput lost while
    shrunk), ``restart`` (stops' restarts and waits, and every pause), ``failures`` (all of them: shrinks,
    stops and failures of restarts), ``stops``, ``shrinks``, ``shrunk`` (time running with a replica out) and
    ``mean_replicas_running`` (over the time the job computes or saves). ``min_replicas = replicas`` is
    :func:`engine.waste.time_breakdown` with downtime ``D`` (the same numbers to rounding).

    ``failures`` counts every failure once, the count :mod:`engine.elastic_montecarlo` counts. The job's failure
    rate depends on the replicas running, so ``wall / M`` does not hold; Wald's identity with the time-varying
    rate does: node failures are a Poisson process on the time the running nodes are exposed, so

        E[failures] = E[ integral over the wall time of lambda_k(t) x 1(exposed at t) dt ]
                    = sum_k occ_k lambda (n - k) / n  +  stops (e^{lambda_K R} - 1)

    with ``occ_k`` the expected time computing or saving with ``k`` out and ``lambda_K R`` a stop's exposed restart
    (each failed restart attempt one more failure, Daly's restart term). The nodes are exposed while the job
    computes, saves and restarts; not while it waits ``D`` for a node (it holds no node to lose) and not during a
    shrink or regrow pause (the chain's assumption: pauses are short against ``M``). With every replica running
    and no wait (``K = 0``, ``D = 0``) it is ``wall / M``. Tested against the Monte Carlo's count and its
    integral of the rate, and against an event-by-event simulation (``tests/test_elastic_montecarlo.py``).
    """
    flat, shape, wrap = _inputs(work, T, C, M, R, D, replicas, min_replicas, shrink_keeps_progress,
                                shrink_pause_min, regrow_pause_min)
    work_, T_, C_, M_, R_, D_, n_, f_, k_, s_, g_ = flat
    out = elastic_breakdown_kernel(work_, T_, C_, M_, R_, D_, n_, n_ - f_, k_, s_, g_)
    return {k: wrap(v.reshape(shape)) for k, v in out.items()}


def elastic_optimal_interval_kernel(C, M, R, D, n, K, keep, Ps, Pg, upper=None):
    """:func:`elastic_optimal_interval` on validated 1-d arrays (``upper``: the longest interval searched)."""
    young = np.sqrt(2.0 * C * M)
    lo = np.log(young / 30.0)
    hi = np.log(young * 1e4 if upper is None else np.maximum(np.minimum(young * 1e4, upper), young))
    one = np.ones(C.shape)
    cache: dict = {}

    def f(log_t):
        b = elastic_breakdown_kernel(one, np.exp(log_t), C, M, R, D, n, K, keep, Ps, Pg, cache)
        return np.where(np.isfinite(b["total"]), b["total"], np.inf)

    a, b, *_ = golden_rows(f, lo, hi, _STEPS)
    return np.exp((a + b) / 2.0)


def elastic_optimal_interval(C, M, R, D, replicas, min_replicas, shrink_keeps_progress=1, shrink_pause_min=0.0,
                             regrow_pause_min=0.0):
    """The compute interval minimising the elastic expected wall time per unit of work (module notes; golden
    section on ``log T`` between Young's ``sqrt(2 C M)`` / 30 and x 10^4; the stop rate of a low floor is small,
    so the optimum can be much longer than Young's). ``C > 0``."""
    flat, shape, wrap = _inputs(1.0, 1.0, C, M, R, D, replicas, min_replicas, shrink_keeps_progress,
                                shrink_pause_min, regrow_pause_min)
    _, _, C_, M_, R_, D_, n_, f_, k_, s_, g_ = flat
    if np.any(C_ <= 0):
        raise InputError("C", 0.0, "must be > 0 for an optimum interval (a free save is taken continuously)")
    return wrap(elastic_optimal_interval_kernel(C_, M_, R_, D_, n_, n_ - f_, k_, s_, g_).reshape(shape))
