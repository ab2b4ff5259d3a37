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
Failures that need a node replaced reach the job at rate ``lambda = node_replacement_rate_per_h``
(Poisson). The job keeps ``S`` hot spares; a replaced node goes to repair for ``repair_h`` hours
and then rejoins the pool. The pool is Sherbrooke's ``(S-1, S)`` inventory of repairable items
[Sherbrooke68]: by Palm's theorem the number ``N`` of nodes in repair is Poisson with mean
``mu = lambda * repair_h`` in steady state, whatever the law of the repair time (``M/G/inf``
insensitivity), and by PASTA [Wolff82] an arriving failure sees that same law. A spare is free iff
``N < S``, with probability ``P(N <= S - 1)`` (:func:`spare_free_probability`).

* A spare is free: the job takes it (``swap_min``) or a node back from repair if sooner:
  ``min(swap_min, 60 * repair_h / (N + 1))``.
* No spare is free: the job waits for the first node back from repair. With deterministic repair,
  given ``N`` the ``N`` residual repair times are i.i.d. uniform on ``(0, repair_h)``
  (M/D/inf), and the failed node's own repair takes ``repair_h``; the first of these ``N + 1``
  returns after ``E[wait | N] = repair_h / (N + 1)`` hours.

So the expected reallocation per replacement is (:func:`expected_reallocation_min`)::

    E = sum_n P(N = n) * (min(swap_min, 60 repair_h / (n+1)) if n < S else 60 repair_h / (n+1))

With no spares, ``E = 60 repair_h E[1/(N+1)] = 60 repair_h (1 - exp(-mu)) / mu``. ``E`` is
non-increasing in ``S`` (each added spare lowers one term).

Approximations and where they stop being valid: the occupancy ignores the job's own waiting (a
job stalled without a spare stops failing and so stops sending nodes to repair; accurate when
``mu`` is small against ``S`` or when waits are rare) and treats the replacement stream as
Poisson at a constant rate. ``min(swap, E[wait])`` bounds ``E[min(swap, wait)]`` from above
(Jensen; min is concave), so the spared case is slightly pessimistic. The uniform residuals hold
for deterministic repair only; for spread-out repair times the residuals follow the equilibrium
law and the wait without a spare is longer (the occupancy, and so the spare-free probability,
stay exact). Every job-stopping failure in :func:`spares_table` is taken to need a node
replaced; if only a share ``q`` does, the mean reallocation per failure is ``q`` times the one
here.

References
----------
* [Sherbrooke68] C. C. Sherbrooke, "METRIC: A Multi-Echelon Technique for Recoverable Item
  Control", Operations Research 16(1), 122-141, 1968 (Palm's theorem for the ``(S-1, S)`` pool).
* [Wolff82] R. W. Wolff, "Poisson Arrivals See Time Averages", Operations Research 30(2),
  223-231, 1982.
* [Kokolis25] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
  Clusters", HPCA 2025: failure rates per node-day in production clusters, and the cost of
  slow recovery at scale.

Functions broadcast over scalars, numpy arrays and pandas Series (except the table functions,
which take one scenario's scalars) and raise :class:`engine.InputError` on bad input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .gate import as_float_array, check_finite_result, prepare
from .waste import exact_optimal_interval, expected_wall_time

__all__ = ["MAX_MEAN_IN_REPAIR", "RESTART_PHASES", "best_spares", "communicator_init_min", "expected_reallocation_min",
           "restart_pipeline", "restart_pipeline_min", "spare_free_probability", "spares_table"]

#: The named parts of a restart, in the order a restart passes through them.
RESTART_PHASES = ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min", "warmup_min")

#: Most nodes in repair on average (``node_replacement_rate_per_h * repair_h``) the pool model accepts.
MAX_MEAN_IN_REPAIR = 1e6
# the Poisson sum keeps n within [lo, hi], each tail holding < 1e-16 of the mass (Chernoff/Bernstein bounds)
_TAIL_LOG = 2.0 * math.log(1e16)
_BUDGET = 2_000_000  # array cells evaluated at a time
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

def _pool_inputs(rate, repair_h, spares):
    specs = [("node_replacement_rate_per_h", rate, "nonnegative"), ("repair_h", repair_h, "nonnegative"),
             ("spares", spares, "whole")]
    return specs


def _mean_in_repair(lam, r):
    with np.errstate(over="ignore"):
        mu = lam * r
    bad = ~(mu <= MAX_MEAN_IN_REPAIR)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
        raise InputError("node_replacement_rate_per_h", float(np.asarray(lam)[idx]),
                         f"node_replacement_rate_per_h x repair_h = {float(np.asarray(mu)[idx]):.6g} nodes in repair "
                         f"on average: must be <= {MAX_MEAN_IN_REPAIR:.0e} (the pool model means nothing there)",
                         tuple(int(i) for i in idx) or None)
    return mu


def spare_free_probability(node_replacement_rate_per_h, repair_h, spares):
    """Probability that a failure finds a spare free: ``P(N < S)``, ``N ~ Poisson(rate * repair_h)``.

    ``= Q(S, mu)`` (the regularised upper incomplete gamma function) for ``S >= 1``; 0 without
    spares. Exact in steady state for Poisson replacements and any repair-time law (Palm's
    theorem; see the module notes for what the model leaves out). Non-decreasing in ``spares``.
    """
    from scipy.special import gammaincc

    (lam, r, S), wrap = prepare(*_pool_inputs(node_replacement_rate_per_h, repair_h, spares))
    mu = _mean_in_repair(lam, r)
    p = np.where(S >= 1, gammaincc(np.maximum(S, 1.0), mu), 0.0)
    return wrap(p)


def expected_reallocation_min(node_replacement_rate_per_h, repair_h, spares, swap_min):
    """Expected time to get a replacement node, in minutes, with ``spares`` hot spares.

    ``sum_n P(N=n) * (min(swap_min, 60 repair_h/(n+1)) if n < spares else 60 repair_h/(n+1))``,
    ``N ~ Poisson(mu)``, ``mu = node_replacement_rate_per_h * repair_h`` (derivation, assumptions and
    limits in the module notes). Without spares it equals ``60 repair_h (1 - exp(-mu)) / mu``
    (``60 repair_h`` at ``mu = 0``); with many spares it tends to ``min(swap_min, ...)``.
    Non-increasing in ``spares``.

    Numerics: the sum runs over ``n`` in a window around ``mu`` outside which each Poisson tail
    holds < 1e-16 of the mass; the probabilities come from the ratio recurrence
    ``p(n) / p(n-1) = mu / n`` summed in log space and normalised over the window, so they keep
    full relative precision for large ``mu`` (no ``exp(-mu)`` underflow, no ``log n!``
    cancellation). The same ``n`` are summed in the same order for every ``spares``, so the
    result is non-increasing in ``spares`` to the last bit.
    """
    (lam, r, S, swap), wrap = prepare(*_pool_inputs(node_replacement_rate_per_h, repair_h, spares),
                                      ("swap_min", swap_min, "nonnegative"))
    mu = _mean_in_repair(lam, r)
    with _quiet():
        out = _reallocation(np.asarray(mu, dtype=np.float64), r, S, swap)
    check_finite_result("repair_h", out, "the expected reallocation overflows")
    return wrap(out)


def _reallocation(mu, r, S, swap):
    """:func:`expected_reallocation_min` on validated, broadcast arrays."""
    shape = np.shape(mu)
    mu, r, S, swap = (np.ravel(np.asarray(a, dtype=np.float64)) for a in (mu, r, S, swap))
    out = np.empty(mu.size)
    hi = np.ceil(mu + (_TAIL_LOG / 3.0 + np.sqrt(_TAIL_LOG ** 2 / 9.0 + 4.0 * _TAIL_LOG * mu)) / 2.0)
    lo = np.maximum(0.0, np.floor(mu - np.sqrt(_TAIL_LOG * mu)))
    width = (hi - lo + 1.0).astype(np.int64)
    order = np.argsort(width, kind="stable")  # similar widths together: little padding per chunk
    sorted_width = width[order]
    i = 0
    while i < mu.size:
        j = min(mu.size, i + max(1, _BUDGET // int(sorted_width[i])))
        if (j - i) * int(sorted_width[j - 1]) > _BUDGET:
            j = i + max(1, _BUDGET // int(sorted_width[j - 1]))
        idx = order[i:j]
        out[idx] = _window_sum(mu[idx], r[idx], S[idx], swap[idx], lo[idx], hi[idx], int(sorted_width[j - 1]))
        i = j
    return out.reshape(shape)


def _window_sum(mu, r, S, swap, lo, hi, width):
    """The Poisson-weighted sum over n in [lo, hi] for a chunk of rows (see expected_reallocation_min)."""
    n = lo[:, None] + np.arange(width, dtype=np.float64)[None, :]
    inside = n <= hi[:, None]
    m = mu[:, None]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        # log p(n) - log p(lo) = sum_{k=lo+1}^{n} log(mu/k), each term as -log1p((k - mu)/mu): full precision
        step = np.where((n > lo[:, None]) & inside, -np.log1p((n - m) / m), 0.0)
        step = np.where(m > 0, step, np.where(n > 0, -np.inf, 0.0))  # mu = 0: all mass at n = 0
    logq = np.cumsum(step, axis=1)
    logq = np.where(inside, logq, -np.inf)
    logq -= logq.max(axis=1, keepdims=True)
    q = np.exp(logq)
    wait = 60.0 * r[:, None] / (n + 1.0)
    f = np.where(n < S[:, None], np.minimum(swap[:, None], wait), wait)
    # sequential sums (cumsum): the same terms in the same order for every S, so monotone in S
    return np.cumsum(q * f, axis=1)[:, -1] / np.cumsum(q, axis=1)[:, -1]


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
    the same for every S since the restart time does not move the optimum); ``wall_h`` from the
    exact model ``expected_wall_time(useful_training_h * 60, T, C, M, R, W, s) / 60``;
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
    free = spare_free_probability(lam, r, S)
    realloc = expected_reallocation_min(lam, r, S, swap)
    R = other + share * realloc
    try:
        wall_h = expected_wall_time(work_h * 60.0, T, C, M, R, W, s) / 60.0
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
        "spare_free_probability": free,
        "reallocation_min": realloc,
        "restart_min": R,
        "T_min": np.full(S.shape, T),
        "wall_h": wall_h,
        "gpu_hours": gpu_hours,
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
