"""Preemptible capacity in a scenario table: what :func:`ckptplan.engine.scenario.evaluate` changes for the rows
with ``preemptions_per_h > 0`` (:mod:`ckptplan.engine.preemption`'s model).

For such a row: the exact optimum interval is the one for failures plus preemptions (checkpoint on
notice when ``preemption_notice_min >= checkpoint_stall_min``), the chosen interval too unless the row
chooses one; the wall time and its parts are the model's; ``capacity_wait_h`` (waiting for capacity
after preemptions, no GPUs held) is part of ``wall_h`` but of no GPU-hour; the GPU-hours are billed at
``spot_price_per_gpu_hour`` (``price_per_gpu_hour`` when it is empty); ``expected_preemptions`` counts
the preemptions of attempts. The analytic deadline figures hold for failures alone: for these rows the
deadline figures (``p_finish_by_deadline``, ``wall_h_p50/p90/p99``) are simulated instead, the finite job on
spot capacity at the chosen interval (:func:`ckptplan.engine.spot_montecarlo.simulate_capacity`, policy ``spot``,
``DEFAULT_RUNS`` runs, ``DEFAULT_SEED``; all such rows of a table simulated together by
:func:`~ckptplan.engine.spot_montecarlo.simulate_spot_jobs`, the same numbers), when the row has a deadline (NaN
otherwise);
``deadline_approximation_ok`` is True for the simulated rows (no approximation to check), False without a deadline. ``ckptplan compare`` adds on-demand and
the fallback policy. Columns added for every row of a
table with such a row: ``expected_preemptions`` and ``capacity_wait_h`` (0 without preemptions).
A row with failure phases or a Weibull shape from the start as well is planned by its schedule
(:mod:`ckptplan.engine.schedule_interruptions`, on the Weibull grid for a shape: the schedule's figures, its simulated
deadline answer, its wait and preemptions; the money here). A downtime (``downtime_min``, part of ``restart_min``) is
the model's wait for a node after every failure (no failure in it, billed as restart time). Preemptions with
asynchronous saves are refused (not modelled together).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import cost
from .errors import NEVER_FINISHES, InputError
from .fields import DEFAULT_RUNS, DEFAULT_SEED
from .preemption import preemption_breakdown, preemption_optimal_interval

__all__ = ["MAX_INTERRUPTIONS", "PREEMPTION_COLUMNS", "PreemptionPlan", "preemption_plan", "spot_price"]

#: most failures and preemptions one run may expect: beyond, the job does not finish in any sense a plan means
#: (and simulating it would not end); refused by name
MAX_INTERRUPTIONS = 10_000

#: the columns :func:`ckptplan.engine.scenario.evaluate` adds to a table with a preempted row
PREEMPTION_COLUMNS = ("expected_preemptions", "capacity_wait_h")


class PreemptionPlan:
    """The preempted rows of a table and their model inputs (minutes); :func:`preemption_plan` builds it."""

    def __init__(self, rows: np.ndarray, n: int, args: dict[str, np.ndarray], labels: Any):
        self.rows, self.n, self.args, self.labels = rows, n, args, labels
        self.wait = np.zeros(n)
        self.preemptions = np.zeros(n)
        self.scheduled = np.zeros(rows.size, dtype=bool)

    def take_schedules(self, schedules: Any) -> None:
        """The rows that also have failure phases take their wait and preemptions from their schedule
        (:mod:`ckptplan.engine.schedule_interruptions`); their deadline figures and one-interval wall time are the
        schedule's (:class:`ckptplan.engine.phases_table.PhaseSchedules`), left as they are by :meth:`columns`."""
        pos = {int(r): i for i, r in enumerate(self.rows)}
        for r, plan in zip(schedules.rows, schedules.plans):
            if int(r) in pos and "wait" in plan:
                self.wait[r], self.preemptions[r] = plan["wait"], plan["preemptions"]
                self.scheduled[pos[int(r)]] = True

    def intervals(self, intervals: dict[str, np.ndarray], chosen_given: np.ndarray) -> dict[str, np.ndarray]:
        """The exact (and, unless given, chosen) interval of the preempted rows: the model's optimum."""
        a = self.args
        best = preemption_optimal_interval(a["C"], a["M"], a["R"], a["P"], a["N"], a["Wc"], a["D"])
        out = dict(intervals)
        for key in ("exact_interval_min", "chosen_interval_min"):
            out[key] = np.array(out[key], dtype=float, copy=True)
        out["exact_interval_min"][self.rows] = best
        self.best = best
        free = np.isnan(chosen_given[self.rows])
        out["chosen_interval_min"][self.rows[free]] = best[free]
        return out

    def parts(self, parts: dict[str, np.ndarray], work: np.ndarray, chosen: np.ndarray) -> dict[str, np.ndarray]:
        """The time breakdown with the model's figures in the preempted rows."""
        a, r = self.args, self.rows
        b = preemption_breakdown(work[r], chosen[r], a["C"], a["M"], a["R"], a["P"], a["N"], a["Wc"], a["D"])
        many = b["failures"] + b["preemptions"] > MAX_INTERRUPTIONS
        if many.any():
            p = int(np.flatnonzero(many)[0])
            raise InputError(f"row {self.labels[r[p]]}: preemptions_per_h", float(a["rate"][p]),
                             f"{NEVER_FINISHES} (about {float(b['failures'][p] + b['preemptions'][p]):.3g} failures "
                             f"and preemptions expected in one run, more than {MAX_INTERRUPTIONS:,})")
        bad = ~np.isfinite(b["total"]) | ~np.isfinite(b["wait"]) | ~np.isfinite(chosen[r])
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            raise InputError(f"row {self.labels[r[p]]}: preemptions_per_h", float(a["rate"][p]),
                             f"{NEVER_FINISHES} (failures and preemptions come faster than a save and a restart: "
                             "the expected wall time overflows)")
        out = {k: np.array(v, dtype=float, copy=True) for k, v in parts.items()}
        for key in ("useful", "save", "rework", "restart", "total", "failures"):
            out[key][r] = b[key]
        self.wait[r], self.preemptions[r] = b["wait"], b["preemptions"]
        at_best = preemption_breakdown(work[r], self.best, a["C"], a["M"], a["R"], a["P"], a["N"], a["Wc"], a["D"])
        self.waste_at_best = 1.0 - at_best["useful"] / at_best["total"]
        self.wall_at_best_h = at_best["total"] / 60.0
        return out

    def columns(self, new: dict[str, np.ndarray], gpus: np.ndarray, price: np.ndarray,
                deadline_h: np.ndarray) -> dict[str, np.ndarray]:
        """The preempted rows' money (billed hours, spot price), waste, deadline figures and the added columns."""
        r = self.rows
        out = {k: np.array(new[k], copy=True) for k in new}
        wait_h = self.wait / 60.0
        billed = {cat: out[f"{cat}_h"][r] for cat in cost.CATEGORIES}
        money = cost.plan_money(billed, out["wall_h"][r] - wait_h[r], gpus[r], price[r])
        for key, values in money.items():
            out[key][r] = values
        out["goodput"][r] = out["useful_h"][r] / (out["wall_h"][r] - wait_h[r])
        out["cost_per_useful_gpu_hour"][r] = out["total_cost"][r] / out["useful_gpu_hours"][r]
        out["waste_fraction"][r] = 1.0 - out["useful_h"][r] / out["wall_h"][r]
        out["waste_fraction_at_optimum"][r] = self.waste_at_best
        own = ~self.scheduled                 # rows with failure phases keep their schedule's figures
        if "single_interval_wall_h" in out:   # a table with failure phases elsewhere: this row's one interval
            out["single_interval_wall_h"][r[own]] = self.wall_at_best_h[own]
        for key, values in self.simulated_deadline(out, gpus, price, deadline_h).items():
            out[key][r[own]] = values[own]    # no analytic answer with preemptions: simulated (module notes)
        out["deadline_approximation_ok"][r[own]] = ~np.isnan(deadline_h[r[own]])   # simulated: nothing to check
        out["expected_preemptions"] = self.preemptions
        out["capacity_wait_h"] = wait_h
        return out


    def simulated_deadline(self, new: dict[str, np.ndarray], gpus: np.ndarray, price: np.ndarray,
                           deadline_h: np.ndarray) -> dict[str, np.ndarray]:
        """The deadline figures of the preempted rows with a deadline, simulated at the chosen interval (module
        notes); NaN for the rows without one."""
        from .spot_montecarlo import capacity_job, simulate_spot_jobs

        a, r = self.args, self.rows
        out = {key: np.full(r.size, np.nan) for key in ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99")}
        given = np.flatnonzero(~np.isnan(deadline_h[r]) & ~self.scheduled)
        jobs = []
        for p in given:
            row = r[p]
            job = capacity_job(float(new["useful_h"][row]) * 60.0, float(a["C"][p]), float(a["M"][p]), float(a["R"][p]),
                               float(a["P"][p]), float(a["N"][p]), float(a["Wc"][p]), float(deadline_h[row]) * 60.0,
                               float(price[row]), float(price[row]), float(gpus[row]), float(a["D"][p]))
            job["T_spot"] = float(new["chosen_interval_min"][row])
            jobs.append(job)
        # every row's runs at once, each row's numbers those of simulate_capacity(job, "spot", DEFAULT_RUNS, DEFAULT_SEED)
        for p, job, sim in zip(given, jobs, simulate_spot_jobs(jobs, runs=DEFAULT_RUNS, seed=DEFAULT_SEED)):
            wall = np.where(sim["finished"], sim["wall"], np.inf)   # a run given up never finishes
            out["p_finish_by_deadline"][p] = float(np.mean(wall <= job["deadline"]))
            for q in (50, 90, 99):
                out[f"wall_h_p{q}"][p] = float(np.percentile(wall, q)) / 60.0
        return out


def preemption_plan(table: pd.DataFrame, cols: dict[str, np.ndarray], M: np.ndarray) -> PreemptionPlan | None:
    """The rows with ``preemptions_per_h > 0`` (None when there is none: the plan is today's)."""
    rate = cols["preemptions_per_h"]
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero(rate > 0)
    if rows.size == 0:
        return None
    for name, bad, rule in (
            ("async_write_min", cols["async_write_min"][rows] > 0, "must be 0 with preemptions (checkpoint on "
             "notice is modelled for synchronous saves)"),):
        if np.any(bad):
            p = rows[int(np.flatnonzero(bad)[0])]
            raise InputError(f"row {table.index[p]}: {name}", float(cols[name][p]), rule)
    with np.errstate(over="ignore"):   # a subnormal rate: a mean time between preemptions beyond any float,
        P = 60.0 / rate[rows]          # inf, which the model reads as no preemption (what such a rate means)
    D = np.nan_to_num(cols["downtime_min"][rows], nan=0.0) if "downtime_min" in cols else np.zeros(rows.size)
    args = {"C": cols["checkpoint_stall_min"][rows], "M": M[rows], "R": np.maximum(cols["restart_min"][rows] - D, 0.0),
            "rate": rate[rows], "P": P, "N": np.nan_to_num(cols["preemption_notice_min"][rows], nan=0.0),
            "Wc": np.nan_to_num(cols["capacity_wait_min"][rows], nan=0.0), "D": D}
    return PreemptionPlan(rows, len(table), args, table.index)


def spot_price(cols: dict[str, np.ndarray]) -> np.ndarray:
    """The price a row pays per GPU-hour: its spot price where it runs on preemptible capacity and gives one."""
    return np.where(np.isnan(cols["spot_price_per_gpu_hour"]), cols["price_per_gpu_hour"],
                    cols["spot_price_per_gpu_hour"])
