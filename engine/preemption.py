"""Preemptible (spot) capacity: preemptions beside failures, checkpoint on notice, and the interval for both.

Symbols (one time unit of the caller's choosing): ``T`` compute interval, ``C`` save stall, ``M`` job
MTBF of failures (rate ``lambda = 1/M``), ``R`` restart, ``P`` mean time between preemptions of the
job (rate ``pi = 1/P``; ``P = inf`` none), ``N`` the preemption notice, ``Wc`` the wait for capacity
after a preemption (no GPUs are held, so none are billed, while waiting).

What happens: failures and preemptions arrive as independent Poisson processes while the job holds
its GPUs (computing, saving, restarting). A failure loses the work since the last checkpoint and costs
a restart. A preemption with a notice at least the save stall (``N >= C``) is met by a checkpoint on
notice: the work done so far is kept, the save takes ``C`` (its few minutes are not exposed to
failures), then the job waits ``Wc`` for capacity and restarts; with a shorter notice it rolls back
like a failure and then waits ``Wc``. A failure (a restart's too) is followed by a downtime ``D`` before the
restart (waiting for a node without a full set of them: the job cannot fail or be preempted in it,
Bougeret et al., SC'11; ``D = 0`` the whole restart exposed). After a restart the job starts a fresh interval from its last
checkpoint (periodic or on notice). AWS announces a spot interruption two minutes ahead, GCP spot VMs
30 s (their documentation), so whether a save fits the notice decides which case applies.

Exact expectation (renewal-reward over *cycles*, from one checkpoint to the next; the constant-rate
model's convention of counting work in fractions of a cycle, as :func:`ckptplan.engine.waste.expected_wall_time`):
with ``theta = lambda + pi``, ``S = T + C``, ``q = exp(-theta S)``, ``k = [N >= C]``, an attempt ends by
a failure with probability ``(lambda/theta)(1 - q)``, by a preemption ``(pi/theta)(1 - q)``; a restart,
itself restarted by a failure (after a downtime) and by a preemption (after a wait), takes
``R' = (exp(theta R) - 1)(1/theta + (lambda/theta) D + (pi/theta) Wc)``. A cycle ends with probability
``e = q + k (pi/theta)(1 - q)`` per attempt, so per cycle::

    time = [(1 - q)/theta + (lambda/theta)(1 - q)(D + R') + (pi/theta)(1 - q)(k C + Wc + R')] / e
    work = [q T + k pi I] / e,   I = int_0^S min(y, T) exp(-theta y) dy

and the expected wall time of ``work`` is ``work * time / work_per_cycle``. With ``pi = 0`` this is Daly's
model (FGCS 22(3), 2006) exactly (with ``D``, Bougeret et al.'s ``(M + D)`` form), and
:func:`preemption_breakdown` returns :func:`ckptplan.engine.waste.time_breakdown`'s numbers unchanged.
The interval minimising it (:func:`preemption_optimal_interval`) is found by a golden-section search on
``log T`` (vectorised; with checkpoints on notice and rare failures it grows long: preemptions cost no
rework, so saves are needed against failures only).

Validity: exponential gaps for both processes (a spot market's preemptions cluster in practice:
Wu et al., "Can't Be Late", NSDI'24, measure traces), the notice save always completes, one job-level
preemption rate (a job of n nodes each preempted at rate r has ``pi = n r`` if any node's preemption
stops the job). :mod:`ckptplan.engine.preemption_montecarlo` simulates the same process event by event.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .roots import golden_rows
from .waste import exact_optimal_interval_kernel, time_breakdown_kernel

__all__ = ["INTERVAL_RTOL", "STEPS", "preemption_breakdown", "preemption_cycle", "preemption_optimal_interval"]


def _integral_min(theta: Any, T: Any, S: Any) -> Any:
    """``int_0^S min(y, T) exp(-theta y) dy``."""
    eT = np.exp(-theta * T)
    head = (-np.expm1(-theta * T) - theta * T * eT) / theta ** 2
    return head + T * (eT - np.exp(-theta * S)) / theta


def _partial_save(theta: Any, T: Any, C: Any) -> Any:
    """``int_T^{T+C} (y - T) exp(-theta y) dy``: the part of a periodic save a preemption cuts short."""
    return np.exp(-theta * T) * (-np.expm1(-theta * C) - theta * C * np.exp(-theta * C)) / theta ** 2


def preemption_cycle(T: Any, C: Any, M: Any, R: Any, P: Any, N: Any, Wc: Any, D: Any = 0.0) -> dict[str, Any]:
    """Expectations per cycle (module notes): ``time``, ``work``, ``failures`` and ``preemptions`` (in
    attempts), ``save`` (periodic, on notice, and a periodic save a kept preemption cut short), ``restart``
    (the downtime after every failure included), ``wait``. Arrays broadcast; ``P > 0``."""
    T, C, M, R, P, N, Wc, D = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (T, C, M, R, P, N, Wc, D)))
    lam, pi = 1.0 / M, 1.0 / P
    theta = lam + pi
    S = T + C
    q = np.exp(-theta * S)
    miss = -np.expm1(-theta * S)
    keep = (N >= C).astype(float)
    pf, pp = lam / theta * miss, pi / theta * miss
    grow = np.expm1(theta * R)
    restart_one = grow / theta                      # restart time of one restart sequence
    wait_one = grow * (pi / theta) * Wc             # capacity waits inside it (preemptions during restarts)
    down_one = grow * (lam / theta) * D             # downtimes inside it (failures during restarts)
    R_all = restart_one + wait_one + down_one
    e = q + keep * pp
    out = {
        "time": (miss / theta + pf * (D + R_all) + pp * (keep * C + Wc + R_all)) / e,
        "work": (q * T + keep * pi * _integral_min(theta, T, S)) / e,
        "failures": pf / e,
        "preemptions": pp / e,
        "save": (q * C + keep * (pp * C + pi * _partial_save(theta, T, C))) / e,
        "restart": ((pf + pp) * (restart_one + down_one) + pf * D) / e,
        "wait": (pp * Wc + (pf + pp) * wait_one) / e,
    }
    return out


def preemption_breakdown(work: Any, T: Any, C: Any, M: Any, R: Any, P: Any, N: Any, Wc: Any, D: Any = 0.0
                         ) -> dict[str, Any]:
    """Expected wall time of ``work`` and where it goes, failures and preemptions (module notes).

    Returns ``total``, ``useful``, ``save``, ``rework``, ``restart``, ``wait`` (for capacity, no GPUs
    held), ``failures``, ``preemptions``. ``P = inf`` (no preemption) gives
    :func:`ckptplan.engine.waste.time_breakdown`'s numbers exactly (``wait`` and ``preemptions`` 0).
    """
    work, T, C, M, R, P, N, Wc, D = np.broadcast_arrays(*(np.asarray(x, dtype=float)
                                                          for x in (work, T, C, M, R, P, N, Wc, D)))
    zeros = np.zeros(work.shape)
    base = time_breakdown_kernel(work, T, C, M, R, zeros, zeros, D)
    none = ~np.isfinite(P)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cyc = preemption_cycle(T, C, M, R, np.where(none, 1.0, P), N, Wc, D)
        k = work / cyc["work"]
        out = {key: k * cyc[key] for key in ("failures", "preemptions", "save", "restart", "wait")}
        out["total"] = k * cyc["time"]
    out["useful"] = work
    with np.errstate(invalid="ignore", over="ignore"):   # rows out of range are refused by the caller (preemption_table)
        out["rework"] = np.maximum(out["total"] - work - out["save"] - out["restart"] - out["wait"], 0.0)
    for key in ("total", "save", "rework", "restart", "failures", "useful"):
        out[key] = np.where(none, base[key], out[key])
    for key in ("wait", "preemptions"):
        out[key] = np.where(none, 0.0, out[key])
    return out


#: golden-section steps on log T (the bracket shrinks by 0.618 each: 80 steps reach rounding); the workbook's
#: Spot sheet writes the same steps as rows
STEPS = 80
#: how closely the optimum interval is determined: near it the expected wall time is flat to rounding, so intervals
#: within about sqrt(machine epsilon) relative of each other are equally good (their objectives agree to the last
#: bits); a surface that searches again (the workbook's Spot sheet) finds the interval to this relative tolerance
INTERVAL_RTOL = 1e-6


def preemption_optimal_interval(C: Any, M: Any, R: Any, P: Any, N: Any, Wc: Any, D: Any = 0.0) -> Any:
    """The interval minimising the expected wall time per unit of work (golden-section search on ``log T``
    between ``sqrt(2 C / rate) / 1000`` and ``x 1000``, ``rate`` the rate of events that cost rework:
    failures, and preemptions unless they are met on notice). Arrays broadcast."""
    C, M, R, P, N, Wc, D = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (C, M, R, P, N, Wc, D)))
    keep = N >= C
    losing = 1.0 / M + np.where(keep | ~np.isfinite(P), 0.0, 1.0 / np.where(np.isfinite(P), P, 1.0))
    young = np.sqrt(2.0 * C / losing)
    lo, hi = np.log(young / 1000.0), np.log(young * 1000.0)

    def f(log_t: Any) -> Any:
        T = np.exp(log_t)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            cyc = preemption_cycle(T, C, M, R, P, N, Wc, D)
            v = np.log(cyc["time"]) - np.log(cyc["work"])
        return np.where(np.isfinite(v), v, np.inf)

    a, b, *_ = golden_rows(f, lo, hi, STEPS)
    none = ~np.isfinite(P)   # no preemption: the closed form (Lambert W), exactly the constant-rate optimum
    exact = exact_optimal_interval_kernel(C, M, np.zeros(C.shape), np.zeros(C.shape))
    return np.where(none, exact, np.exp((a + b) / 2.0))
