"""Effective training time ratio (ETTR): the field's first-order estimate and the exact model's value.

ETTR is the share of a job's wall-clock time that buys training progress that survives
[Kokolis25: "the ratio of productive runtime to available wallclock time of a job run"]; in this
package's terms it is ``1 - waste fraction`` = goodput = useful / expected wall time.

Symbols (one time unit of the caller's choosing, used consistently):

* ``interval``         ``dt`` compute interval between two checkpoints (``T`` in :mod:`.waste`);
* ``checkpoint_stall`` ``w`` checkpoint write time that blocks training (``C``);
* ``restart``          ``u0`` time to get going again after an interruption: reallocation,
  initialisation, loading the checkpoint (``R``);
* ``job_mtbf``         mean time between job-stopping failures, ``1 / (N r)`` for ``N`` nodes that
  each fail at rate ``r`` (``M``).

First-order estimate [Kokolis25, section on the analytical approximation of E[ETTR]]::

    E[ETTR] ~ (1 - N r (u0 + dt/2)) / (1 + w/dt)
            = (1 - (u0 + dt/2) / M) / (1 + w/dt)

Each failure costs the restart ``u0`` and, on average, half an interval of lost work; each
interval of ``dt`` useful work costs ``w`` of blocking save. The paper's estimator also carries the
expected queueing time after each interruption (``q``); it is left out here (set ``q = 0``, or add
it to ``restart`` if the job waits in a queue after each failure). The paper states its regime:
``r`` about 5e-3 failures per node-day, ``dt`` about an hour, ``u0`` 5 to 20 minutes and
``1/(N r) >= 0.1`` day, and reports the estimate within 5 % of a Monte Carlo there.

Exact value: :func:`ettr_exact` = ``1 - waste_fraction`` of the exact exponential model
(:func:`engine.waste.expected_wall_time`, [Daly06]): failures during saves and restarts, restarts
that are themselves interrupted, and asynchronous writes included.

Where the two agree, measured by :func:`ettr_agreement_summary` on :func:`ettr_agreement_grid`
(275 points: ``load = (dt + w + u0)/M`` from 0.005 to 1, ``w/dt`` in {0, 0.01, 0.03, 0.1, 0.3},
``u0/dt`` in {0, 0.1, 0.3, 1, 3}; differences first-order - exact in ETTR points)::

    load <=   whole grid: max |difference| (relative)   w/dt <= 0.1 and u0 <= dt
    0.05      0.0043 (0.57 %)                           0.0019 (0.21 %)
    0.10      0.0082 (1.13 %)                           0.0034 (0.39 %)
    0.20      0.0152 (2.19 %)                           0.0103 (1.20 %)
    0.30      0.0314 (4.09 %)                           0.0228 (2.85 %)
    0.50      0.0827 (12.8 %)                           0.0605 (8.8 %)
    1.00      0.2908 (69.9 %)                           0.2175 (46.5 %)

So: within about 1 % up to ``load = 0.1`` everywhere on the grid, and up to ``load = 0.2`` in
the formula's own regime (``w << dt``, ``u0`` no longer than ``dt``); about 2 % at 0.2 with a
stall of 30 % of the interval.

Sign, honestly: it depends on which term dominates. The first-order form leaves out the rework of
failures that strike during the save (about ``w dt / (2 M (dt + w))`` of ETTR), so it
*overestimates* when the stall is a large share of the interval (the largest overestimate on the
grid is +0.031, at ``w/dt = 0.3``); it leaves out every second-order term of the exponentials
(restarts that are themselves interrupted, failures compounding: order ``load**2``), so it
*underestimates* when the restart is long and as the load grows. Up to ``load = 0.2`` about half
the grid is under and half over; beyond ``load = 0.3`` the underestimate dominates and grows
fast (down to -0.083 at 0.5 and -0.29 at 1.0, while no overestimate exceeds +0.031).

The first-order value is returned as computed, never clipped: where ``u0 + dt/2 >= M`` it is zero
or negative, which means the approximation has broken down (the exact ETTR stays in ``(0, 1]``).

References
----------
* [Kokolis25] A. Kokolis, M. Kuchnik, J. Hoffman, A. Kumar, P. Malani, F. Ma, Z. DeVito,
  S. Sengupta, K. Saladi, C.-J. Wu, "Revisiting Reliability in Large-Scale Machine Learning
  Research Clusters", IEEE HPCA 2025 (doi:10.1109/HPCA61900.2025.00096; arXiv:2410.21680).
* [Daly06] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
  dumps", Future Generation Computer Systems 22(3), 303-312, 2006.

Every function broadcasts over scalars, numpy arrays and pandas Series and raises
:class:`engine.InputError` naming the argument, value and rule on bad input.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import waste
from .gate import check_finite_result, prepare

__all__ = ["AGREEMENT_LOADS", "AGREEMENT_RESTART_RATIOS", "AGREEMENT_STALL_RATIOS", "ettr_agreement_grid",
           "ettr_agreement_summary", "ettr_exact", "ettr_first_order"]


def ettr_first_order(interval, checkpoint_stall, restart, job_mtbf):
    """First-order expected ETTR [Kokolis25]: ``(1 - (restart + interval/2)/job_mtbf) / (1 + checkpoint_stall/interval)``.

    ``N r = 1/job_mtbf``; all times in one unit. Assumes exponential failures, ``w << dt << M``
    and ``u0 << M`` (the paper's regime: see the module notes); no queueing time. Within about
    0.01 of the exact ETTR while ``(interval + checkpoint_stall + restart)/job_mtbf <= 0.1`` (and
    up to 0.2 when ``checkpoint_stall <= interval/10`` and ``restart <= interval``), about 0.015
    up to 0.2; beyond, it underestimates more and more (measured: :func:`ettr_agreement_summary`).

    Not clipped: returns zero or a negative number where ``restart + interval/2 >= job_mtbf``,
    which means the approximation has broken down, not that the job makes no progress (use
    :func:`ettr_exact`).
    """
    (T_, C_, R_, M_), wrap = prepare(("interval", interval, "positive"),
                                     ("checkpoint_stall", checkpoint_stall, "nonnegative"),
                                     ("restart", restart, "nonnegative"), ("job_mtbf", job_mtbf, "positive"))
    out = _first_order(T_, C_, R_, M_)
    check_finite_result("job_mtbf", out, "(restart + interval/2)/job_mtbf overflows: the first-order ETTR is out "
                        "of range",
                        {"interval": T_, "checkpoint_stall": C_, "restart": R_, "job_mtbf": M_})
    return wrap(out)


def _quiet():
    """numpy's floating-point warnings off: each result is checked (check_finite_result) right after."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def _first_order(T_, C_, R_, M_):
    with _quiet():
        return (1.0 - (R_ + T_ / 2.0) / M_) / (1.0 + C_ / T_)


def ettr_exact(interval, checkpoint_stall, restart, job_mtbf, async_write=0.0, slowdown=0.0):
    """Exact expected ETTR for exponential failures: ``1 - waste_fraction`` = useful / expected wall.

    From :func:`engine.waste.waste_fraction` with ``T = interval``, ``C = checkpoint_stall``,
    ``R = restart``, ``M = job_mtbf``, ``W = async_write``, ``slowdown``; in ``(0, 1]``. The
    long-run (steady-state) value: assumptions and limits as :func:`engine.waste.expected_wall_time`
    (the background write must be durable before the next save: ``W (1 - slowdown) <= T``).
    """
    (T_, C_, R_, M_, W_, s_), wrap = prepare(
        ("interval", interval, "positive"), ("checkpoint_stall", checkpoint_stall, "nonnegative"),
        ("restart", restart, "nonnegative"), ("job_mtbf", job_mtbf, "positive"),
        ("async_write", async_write, "nonnegative"), ("slowdown", slowdown, "fraction"),
    )
    waste.check_async_write(T_, W_, s_)
    out = _exact(T_, C_, R_, M_, W_, s_)
    check_finite_result("job_mtbf", out, "the exact ETTR cannot be computed: (interval + checkpoint_stall + "
                        "async_write + restart)/job_mtbf is out of range",
                        {"interval": T_, "checkpoint_stall": C_, "restart": R_, "job_mtbf": M_, "async_write": W_})
    return wrap(out)


def _exact(T_, C_, R_, M_, W_, s_):
    # exp(-log(wall per work)) = work / wall, computed in log space (finite where the wall overflows; a
    # subnormal job_mtbf gives log = inf and ETTR 0, the limit, as waste_fraction gives 1)
    with _quiet():
        return np.exp(-waste.log_wall_per_work(T_, C_, M_, R_, W_, s_))


#: loads ``(interval + checkpoint_stall + restart) / job_mtbf`` of the default agreement grid
AGREEMENT_LOADS: tuple[float, ...] = (0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0)
#: ``checkpoint_stall / interval`` of the default agreement grid (the formula assumes w << dt)
AGREEMENT_STALL_RATIOS: tuple[float, ...] = (0.0, 0.01, 0.03, 0.1, 0.3)
#: ``restart / interval`` of the default agreement grid
AGREEMENT_RESTART_RATIOS: tuple[float, ...] = (0.0, 0.1, 0.3, 1.0, 3.0)

_GRID_COLUMNS = ["load", "stall_ratio", "restart_ratio", "interval", "checkpoint_stall", "restart", "job_mtbf",
                 "first_order", "exact", "difference", "relative_difference"]


def ettr_agreement_grid(loads=AGREEMENT_LOADS, stall_ratios=AGREEMENT_STALL_RATIOS,
                        restart_ratios=AGREEMENT_RESTART_RATIOS, job_mtbf: float = 1.0) -> pd.DataFrame:
    """First-order against exact ETTR on a grid: one row per (load, stall ratio, restart ratio).

    ``load = (interval + checkpoint_stall + restart) / job_mtbf``, ``stall_ratio =
    checkpoint_stall / interval``, ``restart_ratio = restart / interval``; so ``interval = load M /
    (1 + stall_ratio + restart_ratio)``. Synchronous saves. Columns: those three, ``interval``,
    ``checkpoint_stall``, ``restart``, ``job_mtbf``, ``first_order``, ``exact``, ``difference``
    (first-order - exact, in ETTR points: negative = the first-order form underestimates) and
    ``relative_difference`` (difference / exact).
    """
    combos = [(load, sr, rr) for load in loads for sr in stall_ratios for rr in restart_ratios]
    if not combos:
        return pd.DataFrame(columns=_GRID_COLUMNS)
    load, sr, rr = (np.array(col, dtype=np.float64) for col in zip(*combos))
    (load_, sr_, rr_, M_), _ = prepare(("loads", load, "positive"), ("stall_ratios", sr, "nonnegative"),
                                       ("restart_ratios", rr, "nonnegative"), ("job_mtbf", job_mtbf, "positive"))
    with _quiet():
        T = load_ * M_ / (1.0 + sr_ + rr_)
        C, R = sr_ * T, rr_ * T
    first = _first_order(T, C, R, M_)
    zero = np.zeros_like(T)
    exact = _exact(T, C, R, M_, zero, zero)
    with _quiet():
        difference = first - exact
        relative = difference / exact
    check_finite_result("job_mtbf", relative, "the agreement grid cannot be computed at this job_mtbf (an interval "
                        "underflows or overflows)", {"loads": load_, "job_mtbf": M_, "interval": T})
    return pd.DataFrame({"load": load_, "stall_ratio": sr_, "restart_ratio": rr_, "interval": T,
                         "checkpoint_stall": C, "restart": R, "job_mtbf": M_.astype(np.float64),
                         "first_order": first, "exact": exact, "difference": difference,
                         "relative_difference": relative}, columns=_GRID_COLUMNS)


def ettr_agreement_summary(grid: pd.DataFrame | None = None, bands=(0.05, 0.1, 0.2, 0.5, 1.0)) -> pd.DataFrame:
    """Worst disagreement of :func:`ettr_agreement_grid` up to each load band.

    One row per band: ``max_load``, ``max_abs_difference``, ``max_abs_relative_difference``,
    ``min_difference`` and ``max_difference`` (signed, ETTR points: negative = the first-order
    form underestimates), ``share_underestimated`` (rows with difference < 0).
    """
    grid = ettr_agreement_grid() if grid is None else grid
    out = []
    for band in bands:
        part = grid[grid["load"] <= band * (1 + 1e-12)]
        if part.empty:
            continue
        d = part["difference"]
        out.append({"max_load": float(band), "max_abs_difference": float(d.abs().max()),
                    "max_abs_relative_difference": float(part["relative_difference"].abs().max()),
                    "min_difference": float(d.min()), "max_difference": float(d.max()),
                    "share_underestimated": float((d < 0).mean())})
    return pd.DataFrame(out)
