"""The restart after a failure as named parts, the pool of hot spare nodes, and how many spares pay.

Restart pipeline
----------------
The restart time ``R`` of :mod:`.waste` is the sum of the phases in :data:`RESTART_PHASES`, in the
order a restart goes through them:

* ``detection_min``     from the failure to the job knowing it (heartbeat or collective timeout);
* ``reallocation_min``  getting a healthy node in place of the failed one (:func:`expected_reallocation_min`);
* ``startup_min``       scheduling, container or image pull, process launch;
* ``init_min``          communicator (NCCL/Gloo) and framework initialisation (:func:`communicator_init_min`);
* ``load_min``          reading the checkpoint back (:func:`engine.storage.restore_time_min`);
* ``warmup_min``        first steps until full speed (compilation, data-loader fill, caches).

The split follows the "badput" buckets of Google's ml-goodput-measurement library (accelerator
initialisation, training preparation, program start-up, data loading, checkpoint restore,
infrastructure recovery), so measured phases map onto it one to one. Every phase adds; none
overlaps another here (a pipeline that loads the checkpoint while communicators initialise has
``R`` below this sum: give the overlapped part once).

Spare pool
----------
The job keeps ``S`` hot spares. A node-replacing failure reaches the job at rate
``lambda = node_replacement_rate_per_h`` (per hour, Poisson) *while the job holds its nodes*; the
failed node goes to repair for ``r = repair_h`` hours and then rejoins the pool. Let ``n`` be the
number of nodes in repair and ``mu = lambda r``. While ``n <= S`` the job holds a full set of nodes
and sends failures at rate ``lambda``: a failure at ``n < S`` takes a free spare (``swap_min``); a
failure at ``n = S`` finds none, ``n`` becomes ``S + 1`` and the job waits, not running and so not
failing, until the first repair completes (``n`` back to ``S``). This is a finite-source repair
system: the state process is exactly Erlang's loss system ``M/G/c/c`` with ``c = S + 1`` servers
(the repair shop; an arrival in state ``c`` is lost: the waiting job sends none), so
[Erlang17; Takacs69; Kleinrock75, ch. 3]::

    pi_n = (mu^n / n!) / sum_{k=0}^{S+1} mu^k / k!,   n = 0 .. S+1

for *any* law of the repair time with mean ``r`` (the insensitivity of the loss system). By
PASTA [Wolff82] a failure sees the time-stationary law restricted to ``n <= S``, so per
node-replacing failure (:func:`spare_free_probability`)::

    P(spare free) = 1 - B(S, mu),   B(S, mu) = (mu^S / S!) / sum_{k=0}^{S} mu^k / k!  (Erlang B)

``B(0, mu) = 1``: without spares a spare is never free. ``B`` comes from the stable recursion
``B(0) = 1, B(k) = mu B(k-1) / (k + mu B(k-1))`` (:func:`erlang_b`; the workbook writes the same
recursion, one helper cell per spare).

When no spare is free the job waits for the first of ``S + 1`` repairs to complete: the failed
node's own (``r``) and the ``S`` already under way. Exponential repair: the minimum of ``S + 1``
exponentials of mean ``r`` is exponential with mean ``r / (S + 1)``. Fixed repair: given the state
the residual repair times of the loss system are i.i.d. with the equilibrium law of the repair time
[Takacs69], uniform on ``(0, r)``, so the wait is the minimum of ``S`` uniforms (below ``r``):
``r Beta(1, S)``, mean ``r / (S + 1)`` too. So the mean reallocation per node-replacing failure is
(:func:`expected_reallocation_min`)::

    E = (1 - B(S, mu)) swap_min + B(S, mu) 60 r / (S + 1)     [min]

(``60 r`` with no spares: the failed node's own repair). Its spread
(:func:`reallocation_sd_min`), with ``w = 60 r / (S + 1)`` and ``V`` the variance of the wait
without a spare, ``w^2`` for exponential repair and ``(60 r)^2 S / ((S + 1)^2 (S + 2))`` for fixed
repair (0 without spares)::

    Var = B (1 - B) (swap_min - w)^2 + B V

The time-average number of nodes in repair is ``sum n pi_n = mu (1 - B(S + 1, mu))``
(:func:`mean_nodes_in_repair`; Little's law on the accepted failures) and the share of the pool's
time the job waits for a node is ``pi_{S+1} = B(S + 1, mu)`` (:func:`pool_waiting_share`). Per
failure (every job-stopping failure, a share ``q = replacement_share`` of which needs a node) the
mean is ``q E`` and the second moment ``q E[X^2]``.

Assumptions and where they break: the job fails at the same rate ``lambda`` whenever it holds its
nodes (computing, saving, restarting) and not at all while it waits for a node; the swap itself is
counted as holding the nodes. It is not (the job cannot fail during a swap either), and that dead
time after every failure that takes a spare makes the failures the pool sees fewer and more regular
than Poisson: the model errs on the pessimistic side by an amount of the order of ``lambda *
swap_min / 60``. The residual is stated and bounded, not modelled: the plan's wall time lies
between the real run's and the real run's ``x (1 + lambda swap_min / 60)``. Why that bound (an
argument, checked by simulation, not a proof): the swaps take at most a share ``lambda swap_min /
60`` of the pool's clock (one swap per failure that takes a spare, such failures at most ``lambda``
per hour), so the model's failure stream on the pool overstates the real one by at most that
factor, and the extra waits it implies cost less than that share of the wall time;
``tests/test_plan_pool_simulation.py`` holds the event simulation of the whole run within
``[plan (1 - lambda swap_min / 60) - 3 SE, plan + 3 SE]`` at 0, 8 and 16 spares (0.32 % measured
against a bound of 0.84 % at 8 spares). Measured by event simulation at the README's example (``mu = 6``, 8 spares, swap
2 min, ``lambda swap = 0.84 %``): no spare free at 12.5 % of node-replacing failures (simulated
12.0 %), a mean wait of 21.7 min (simulated 21.0), the plan's wall time 0.32 % above the simulated
one; at ``mu = 3``, 8 spares, swap 10 min: no spare free at 0.81 % (simulated 0.57 %), a mean wait of
11.2 min (simulated 10.8); exact at ``swap_min = 0`` (``tests/test_pool_simulation.py``,
``tests/test_plan_pool_simulation.py``).
Failures of different nodes are independent and Poisson (the node->job division);
spares do not fail while idle; the steady state is reached (the run is long against ``r``). The
old model (Sherbrooke's ``(S-1, S)`` pool, ``M/G/inf`` by Palm's theorem [Sherbrooke68]) let the
job keep failing while it waited and so overstated both the occupancy and the wait; it is the limit
of this one when waits are rare (``mu`` small against ``S``). With ``swap_min`` above ``60 r / (S+1)``
(a swap slower than a repair return) more spares can lengthen the mean wait: the model takes the
free spare, as a scheduler does.

References
----------
* [Erlang17] A. K. Erlang, "Solution of some problems in the theory of probabilities of significance
  in automatic telephone exchanges", Elektroteknikeren 13, 1917 (the loss formula ``B``).
* [Takacs69] L. Takacs, "On Erlang's formula", Annals of Mathematical Statistics 40(1), 71-78, 1969
  (the loss system's state law for any service law, and the residual service times given the state:
  i.i.d. with the equilibrium law).
* [Kleinrock75] L. Kleinrock, Queueing Systems, Volume 1: Theory, Wiley, 1975 (Erlang's loss system
  ``M/M/m/m`` and the loss formula ``B``, chapter 3 on birth-death systems in equilibrium).
* [Sherbrooke68] C. C. Sherbrooke, "METRIC: A Multi-Echelon Technique for Recoverable Item
  Control", Operations Research 16(1), 122-141, 1968 (Palm's theorem for the ``(S-1, S)`` pool: the
  earlier model here, the limit of rare waits).
* [Wolff82] R. W. Wolff, "Poisson Arrivals See Time Averages", Operations Research 30(2),
  223-231, 1982.
* [Kokolis25] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
  Clusters", HPCA 2025: failure rates per node-day in production clusters, and the cost of
  slow recovery at scale.

Functions broadcast over scalars, numpy arrays and pandas Series (except the table functions,
which take one scenario's scalars) and raise :class:`engine.InputError` on bad input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .gate import as_float_array, check_finite_result, prepare
from .waste import exact_optimal_interval, expected_wall_time

__all__ = ["MAX_MEAN_IN_REPAIR", "REPAIR_LAWS", "RESTART_PHASES", "best_spares", "communicator_init_min", "erlang_b",
           "erlang_b_kernel", "expected_reallocation_min", "mean_nodes_in_repair", "pool_waiting_share",
           "reallocation_sd_min", "restart_pipeline", "restart_pipeline_min", "spare_free_probability", "spares_table"]

#: The named parts of a restart, in the order a restart passes through them.
RESTART_PHASES = ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min", "warmup_min")

#: Most nodes in repair on average (``node_replacement_rate_per_h * repair_h``) the pool model accepts.
MAX_MEAN_IN_REPAIR = 1e6
_MAX_TABLE_ROWS = 1_000_000


def _quiet():
    """numpy's floating-point warnings off: each result is checked (check_finite_result) right after."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


# ------------------------------------------------------------------------------ restart pipeline

def communicator_init_min(nodes, init_fixed_min, init_per_1000_nodes_min=0.0):
    """Communicator start-up time: ``init_fixed_min + init_per_1000_nodes_min * nodes / 1000`` minutes.

    Assumption: the time grows linearly with the number of ranks (the rendezvous exchanges every
    rank's address through one store). That is crude: tree-based bootstraps grow more slowly,
    eager all-to-all connection set-up or a contended key-value store faster. Fit the two
    coefficients to start-ups measured at two or more scales and extrapolate little beyond them.
    """
    (n, f, k), wrap = prepare(("nodes", nodes, "count"), ("init_fixed_min", init_fixed_min, "nonnegative"),
                              ("init_per_1000_nodes_min", init_per_1000_nodes_min, "nonnegative"))
    with _quiet():
        out = f + k * n / 1000.0
    check_finite_result("init_per_1000_nodes_min", out, "the initialisation time overflows")
    return wrap(out)


def restart_pipeline(**parts: Any) -> dict[str, Any]:
    """Each restart phase and their sum ``restart_min``, in minutes (a dict; values of the caller's kind).

    Keywords: the names of :data:`RESTART_PHASES` (each >= 0; a missing phase is 0). Any other
    keyword raises :class:`InputError`. ``restart_min`` is the ``R`` of :mod:`.waste`: the phases
    are taken as sequential (see the module notes).
    """
    for name, value in parts.items():
        if name not in RESTART_PHASES:
            raise InputError(name, value, f"is not a restart phase: the phases are {', '.join(RESTART_PHASES)}")
    arrays, wrap = prepare(*((p, parts.get(p, 0.0), "nonnegative") for p in RESTART_PHASES))
    total = np.zeros(np.shape(arrays[0]))
    with _quiet():
        for a in arrays:
            total = total + a
    check_finite_result("restart_min", total, "the sum of the restart phases overflows")
    out = {p: wrap(np.array(a), p) for p, a in zip(RESTART_PHASES, arrays)}
    out["restart_min"] = wrap(total, "restart_min")
    return out


def restart_pipeline_min(detection_min=0.0, reallocation_min=0.0, startup_min=0.0, init_min=0.0, load_min=0.0,
                         warmup_min=0.0):
    """Restart time in minutes: the sum of the phases of :data:`RESTART_PHASES` (see :func:`restart_pipeline`)."""
    return restart_pipeline(detection_min=detection_min, reallocation_min=reallocation_min, startup_min=startup_min,
                            init_min=init_min, load_min=load_min, warmup_min=warmup_min)["restart_min"]


# ------------------------------------------------------------------------------ spare pool

def erlang_b(spares, mean_in_repair):
    """Erlang's loss formula ``B(S, mu) = (mu^S / S!) / sum_{k<=S} mu^k / k!`` [Erlang17].

    The chance that a node-replacing failure finds every one of ``S = spares`` spares taken (module
    notes). ``B(0, mu) = 1``; ``B(S, 0) = 0`` for ``S >= 1``; decreasing in ``S``. Computed by the
    recursion ``B(k) = mu B(k-1) / (k + mu B(k-1))`` from ``B(0) = 1`` (every step in ``(0, 1]``,
    no overflow, relative error a few ulps per step), which the workbook writes cell by cell; where
    ``S`` lies beyond ``mu + 40 sqrt(mu) + 60`` (the Poisson mass above ``S`` below 1e-300) it is
    the Poisson probability ``exp(S log mu - mu - lgamma(S + 1))`` directly, to keep the work bounded.
    """
    (S, mu), wrap = prepare(("spares", spares, "whole"), ("mean_in_repair", mean_in_repair, "nonnegative"))
    _check_mean(mu, "mean_in_repair", mu)
    return wrap(erlang_b_kernel(S, mu))


def erlang_b_kernel(S, mu):
    """:func:`erlang_b` on validated arrays (whole ``S >= 0``, ``0 <= mu <= MAX_MEAN_IN_REPAIR``)."""
    from scipy.special import gammaln

    S, mu = np.broadcast_arrays(np.asarray(S, dtype=np.float64), np.asarray(mu, dtype=np.float64))
    shape = S.shape
    S, mu = S.ravel(), mu.ravel()
    out = np.ones(S.size)
    far = S > mu + 40.0 * np.sqrt(mu) + 60.0
    with _quiet():
        out[far] = np.where(mu[far] > 0, np.exp(S[far] * np.log(mu[far]) - mu[far] - gammaln(S[far] + 1.0)), 0.0)
    near = np.flatnonzero(~far)
    order = near[np.argsort(-S[near], kind="stable")]   # most spares first: the rows still stepping are a prefix
    steps, m, b = S[order], mu[order], np.ones(order.size)
    top = int(steps[0]) if steps.size else 0
    # rows still stepping at step k: those with S >= k, a prefix of the order
    active = np.searchsorted(-steps, -np.arange(1, top + 1, dtype=np.float64), side="right")
    mb, den = np.empty(order.size), np.empty(order.size)
    for k, n in enumerate(active.tolist(), start=1):
        np.multiply(m[:n], b[:n], out=mb[:n])
        np.add(mb[:n], k, out=den[:n])
        np.divide(mb[:n], den[:n], out=b[:n])
    out[order] = b
    return out.reshape(shape)


def _pool_inputs(rate, repair_h, spares):
    return [("node_replacement_rate_per_h", rate, "nonnegative"), ("repair_h", repair_h, "nonnegative"),
            ("spares", spares, "whole")]


def _check_mean(mu, field, value):
    bad = ~(mu <= MAX_MEAN_IN_REPAIR)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
        raise InputError(field, float(np.broadcast_to(value, np.shape(mu))[idx]),
                         f"node_replacement_rate_per_h x repair_h = {float(np.asarray(mu)[idx]):.6g} nodes in repair "
                         f"on average: must be <= {MAX_MEAN_IN_REPAIR:.0e} (the pool model means nothing there)",
                         tuple(int(i) for i in idx) or None)


def _mean_in_repair(lam, r):
    with np.errstate(over="ignore"):
        mu = lam * r
    _check_mean(mu, "node_replacement_rate_per_h", lam)
    return mu


def _pool(rate, repair_h, spares, *more):
    """Validated, broadcast ``(mu, r, S, *more)`` and the result wrapper."""
    (lam, r, S, *rest), wrap = prepare(*_pool_inputs(rate, repair_h, spares), *more)
    return (_mean_in_repair(lam, r), r, S, *rest), wrap


def spare_free_probability(node_replacement_rate_per_h, repair_h, spares):
    """Probability that a node-replacing failure finds a spare free: ``1 - B(S, mu)``, ``mu = rate * repair_h``.

    ``B`` is Erlang's loss formula (:func:`erlang_b`): exact in steady state for Poisson failures
    that stop while the job waits for a node, and any repair-time law (module notes). 0 without
    spares; non-decreasing in ``spares``.
    """
    (mu, _r, S), wrap = _pool(node_replacement_rate_per_h, repair_h, spares)
    return wrap(1.0 - erlang_b_kernel(S, mu))


def _wait_terms(mu, r, S):
    """(B, w): the chance no spare is free and the mean wait for a repair then, in minutes."""
    B = erlang_b_kernel(S, mu)
    with _quiet():
        w = 60.0 * r / (S + 1.0)
    return B, w


def expected_reallocation_min(node_replacement_rate_per_h, repair_h, spares, swap_min):
    """Expected time to get a replacement node per node-replacing failure, in minutes, with ``spares`` hot spares.

    ``(1 - B(S, mu)) swap_min + B(S, mu) 60 repair_h / (S + 1)`` with ``mu = node_replacement_rate_per_h
    * repair_h`` and ``B`` Erlang's loss formula (derivation, assumptions and limits in the module
    notes): the swap when a spare is free, else the first of ``S + 1`` repairs to complete (mean
    ``repair_h / (S + 1)`` for fixed and for exponential repair). ``60 repair_h`` without spares;
    tends to ``swap_min`` with many. Non-increasing in ``spares`` while ``swap_min <= 60 repair_h /
    (spares + 1)``.
    """
    (mu, r, S, swap), wrap = _pool(node_replacement_rate_per_h, repair_h, spares, ("swap_min", swap_min, "nonnegative"))
    B, w = _wait_terms(mu, r, S)
    with _quiet():
        out = (1.0 - B) * swap + B * w
    check_finite_result("repair_h", out, "the expected reallocation overflows")
    return wrap(out)


#: the repair-time laws :func:`reallocation_sd_min` knows (the mean answers do not depend on it)
REPAIR_LAWS = ("fixed", "exponential")


def reallocation_sd_min(node_replacement_rate_per_h, repair_h, spares, swap_min, repair_law="fixed"):
    """Standard deviation of the reallocation per node-replacing failure, in minutes.

    ``sqrt(B (1 - B) (swap_min - w)^2 + B V)`` with ``B = B(S, mu)``, ``w = 60 repair_h / (S + 1)``
    and ``V`` the variance of the wait when no spare is free: ``w^2`` for exponential repair (the
    minimum of ``S + 1`` exponentials), ``(60 repair_h)^2 S / ((S + 1)^2 (S + 2))`` for fixed repair
    (the minimum of ``S`` residuals uniform on ``(0, repair_h)``: ``repair_h Beta(1, S)``; 0 without
    spares). ``repair_law``: one of :data:`REPAIR_LAWS` (the only argument that does not broadcast).
    """
    if repair_law not in REPAIR_LAWS:
        raise InputError("repair_law", repair_law, f"must be one of {', '.join(REPAIR_LAWS)}")
    (mu, r, S, swap), wrap = _pool(node_replacement_rate_per_h, repair_h, spares, ("swap_min", swap_min, "nonnegative"))
    B, w = _wait_terms(mu, r, S)
    with _quiet():
        full = 60.0 * r
        V = w * w if repair_law == "exponential" else full * full * S / ((S + 1.0) ** 2 * (S + 2.0))
        out = np.sqrt(B * (1.0 - B) * (swap - w) ** 2 + B * V)
    check_finite_result("repair_h", out, "the spread of the reallocation overflows")
    return wrap(out)


def mean_nodes_in_repair(node_replacement_rate_per_h, repair_h, spares):
    """Time-average number of nodes in repair: ``sum n pi_n = mu (1 - B(S + 1, mu))`` (module notes).

    Below ``mu = rate * repair_h`` (what it would be if the job kept failing while it waits): the
    failures the waiting job does not send are missing from the repair shop.
    """
    (mu, _r, S), wrap = _pool(node_replacement_rate_per_h, repair_h, spares)
    return wrap(mu * (1.0 - erlang_b_kernel(S + 1.0, mu)))


def pool_waiting_share(node_replacement_rate_per_h, repair_h, spares):
    """Share of the time the job waits for a node (every spare taken, one node short): ``pi_{S+1} = B(S + 1, mu)``.

    Time measured on the pool's clock (the job holding its nodes or waiting for one); module notes.
    """
    (mu, _r, S), wrap = _pool(node_replacement_rate_per_h, repair_h, spares)
    return wrap(erlang_b_kernel(S + 1.0, mu))


# ------------------------------------------------------------------------------ how many spares

_WASTE_NAMES = {"work": "useful_training_h", "T": "T_min", "C": "checkpoint_stall_min", "M": "job_mtbf_min",
                "R": "restart_min", "W": "async_write_min", "slowdown": "async_slowdown_fraction"}


def _scalar(name: str, value: Any, rule: str) -> float:
    arr = as_float_array(name, value, rule)
    if arr.ndim != 0:
        raise InputError(name, f"array of shape {arr.shape}",
                         "must be a single number: the spares table describes one scenario (call it once per row)")
    return float(arr)


def spares_table(*, nodes, gpus_per_node, spares_max, node_replacement_rate_per_h, repair_h, swap_min,
                 restart_other_min, useful_training_h, T_min, checkpoint_stall_min, job_mtbf_min, async_write_min=0.0,
                 async_slowdown_fraction=0.0, price_per_gpu_hour, replacement_share=1.0,
                 storage_cost_per_wall_h=0.0) -> pd.DataFrame:
    """Cost of a run for each number of hot spares ``S = 0 .. spares_max`` (one row each).

    Per row: ``spare_free_probability`` and ``reallocation_min`` (the pool model, module notes);
    ``restart_min = restart_other_min + replacement_share * reallocation_min`` (the other phases of
    :data:`RESTART_PHASES`; only the share of failures that need a node replaced waits for one); ``T_min`` (given, or :func:`engine.waste.exact_optimal_interval`,
    the same for every S since neither the restart nor the downtime moves the optimum); ``wall_h`` from
    the exact model ``expected_wall_time(useful_training_h * 60, T, C, M, restart_other_min, W, s,
    D) / 60`` with the wait for a node as the downtime ``D = replacement_share * reallocation_min``
    (the job cannot fail while it waits; the other phases are exposed);
    ``gpu_hours = (nodes + S) * gpus_per_node * wall_h`` (the spares are held, and paid, for the
    whole run), ``spare_gpu_hours = S * gpus_per_node * wall_h``,
    ``total_cost = gpu_hours * price_per_gpu_hour + storage_cost_per_wall_h * wall_h`` (everything the
    run pays: the job's GPU time, the spares' and the checkpoint storage, which a bill per GB-month makes
    proportional to the wall time) and ``cost_per_useful_gpu_hour = total_cost /
    (nodes * gpus_per_node * useful_training_h)``.

    Units: ``job_mtbf_min``, ``T_min``, ``checkpoint_stall_min``, ``async_write_min``,
    ``swap_min``, ``restart_other_min`` in minutes; ``repair_h``, ``useful_training_h`` in hours;
    ``node_replacement_rate_per_h`` per hour for the whole job (at most the job's failure rate
    ``60 / job_mtbf_min`` if only job-stopping failures consume spares).

    Assumptions: those of the pool (module notes) and of :func:`engine.waste.expected_wall_time`
    (exponential failures; the mean restart time stands for every restart, which understates the
    wall time a little when restarts vary a lot against ``job_mtbf_min``). Spares add GPU-hours
    but no failures (hot spares idle, not in the job). Scalars only.
    """
    lam = _scalar("node_replacement_rate_per_h", node_replacement_rate_per_h, "nonnegative")
    r = _scalar("repair_h", repair_h, "nonnegative")
    swap = _scalar("swap_min", swap_min, "nonnegative")
    smax = _scalar("spares_max", spares_max, "whole")
    if smax >= _MAX_TABLE_ROWS:
        raise InputError("spares_max", smax, f"must be < {_MAX_TABLE_ROWS:,} (one table row per spare count)")
    n = _scalar("nodes", nodes, "count")
    g = _scalar("gpus_per_node", gpus_per_node, "count")
    other = _scalar("restart_other_min", restart_other_min, "nonnegative")
    work_h = _scalar("useful_training_h", useful_training_h, "positive")
    C = _scalar("checkpoint_stall_min", checkpoint_stall_min, "nonnegative")
    M = _scalar("job_mtbf_min", job_mtbf_min, "positive")
    W = _scalar("async_write_min", async_write_min, "nonnegative")
    s = _scalar("async_slowdown_fraction", async_slowdown_fraction, "fraction")
    price = _scalar("price_per_gpu_hour", price_per_gpu_hour, "nonnegative")
    share = _scalar("replacement_share", replacement_share, "share")
    storage = _scalar("storage_cost_per_wall_h", storage_cost_per_wall_h, "nonnegative")
    if T_min is None:
        T = float(exact_optimal_interval(C, M, W, s))
        if T <= 0:
            raise InputError("checkpoint_stall_min", C, "must be > 0 when T_min is not given: with saves that cost "
                             "nothing the optimal interval is 0 (give T_min)")
    else:
        T = _scalar("T_min", T_min, "positive")

    S = np.arange(int(smax) + 1, dtype=np.float64)
    realloc = expected_reallocation_min(lam, r, S, swap)
    down = share * realloc   # the wait for a node: downtime, the job cannot fail in it
    try:  # the other phases are exposed
        wall_h = expected_wall_time(work_h * 60.0, T, C, M, other, W, s, down) / 60.0
    except InputError as err:  # name the table's argument, not the model's symbol
        raise InputError(_WASTE_NAMES.get(err.field, err.field), err.value, err.rule) from err
    with _quiet():
        gpu_hours = (n + S) * g * wall_h
        cost = gpu_hours * price + storage * wall_h
        per_useful = cost / (n * g * work_h)
    check_finite_result("price_per_gpu_hour", cost, "the cost overflows")
    check_finite_result("useful_training_h", per_useful, "the cost per useful GPU-hour overflows",
                        {"useful_training_h": np.asarray(work_h), "price_per_gpu_hour": np.asarray(price)})
    return pd.DataFrame({
        "spares": S.astype(np.int64),
        "spare_free_probability": spare_free_probability(lam, r, S),
        "reallocation_min": realloc,
        "restart_min": other + down,
        "T_min": np.full(S.shape, T), "wall_h": wall_h, "gpu_hours": gpu_hours,
        "spare_gpu_hours": S * g * wall_h,
        "total_cost": cost,
        "cost_per_useful_gpu_hour": per_useful,
    })


def best_spares(**kwargs: Any) -> pd.Series:
    """The row of :func:`spares_table` (same keywords) with the lowest ``cost_per_useful_gpu_hour``.

    Ties go to fewer spares. The search covers ``0 .. spares_max`` only: if the answer is
    ``spares_max``, raise it and look again.
    """
    table = spares_table(**kwargs)
    return table.loc[table["cost_per_useful_gpu_hour"].idxmin()]
