"""Elastic continuation in a scenario table: the rules of its fields and what :func:`ckptplan.engine.scenario.evaluate`
changes for the rows with ``on_node_loss = "continue"`` (:mod:`ckptplan.engine.elastic`'s model).

Rules (every row that gives the fields): ``on_node_loss`` is ``restart`` (empty: today's) or ``continue``;
``nodes`` is a whole number of replicas (``nodes_per_replica`` divides it); ``1 <= min_replicas <=
replicas``; at most :data:`~ckptplan.engine.elastic.MAX_REPLICAS_OUT` replicas out. A continuing row cannot
also have correlated failure domains (a domain failure takes several replicas at once), asynchronous saves,
preemptions or failure phases (not modelled together): refused by name.

A continuing row with a floor below its replica count gets the elastic plan: its exact optimum interval
(chosen too unless the row gives one), its wall time and its split (``rework_h`` holds the throughput lost
while shrunk, ``restart_h`` every pause), its failures, its waste figures, and the columns of
:data:`ELASTIC_COLUMNS` (:data:`ckptplan.engine.fields.ELASTIC_OUTPUT_FIELDS`). The replica time is the
wait for a node, ``downtime_min`` (the spare pool's, with a storage and recovery setup). The analytic
deadline figures hold for a job that stops at every failure: a continuing row with a deadline gets them
simulated instead (:mod:`ckptplan.engine.elastic_montecarlo` at the chosen interval, the default runs and seed,
``deadline_approximation_ok`` True: no approximation to check); without a deadline they are empty (NaN). Every other row, ``restart`` or a floor at all replicas, is today's plan, computed by today's code
(the same numbers); a table with a continuing row carries the columns for every row (a restarting row: its
replicas all running, no shrink, every failure outside a restart a stop); so does a table where a row gives
``nodes_per_replica`` (``ckptplan compare`` prices restarting and continuing side by side).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .elastic import (MAX_REPLICAS_OUT, elastic_breakdown_kernel, elastic_optimal_interval_kernel)
from .errors import InputError
from .fields import DEFAULT_RUNS, DEFAULT_SEED, ELASTIC_FIELD_NAMES, ELASTIC_OUTPUT_FIELDS, FIELD_BY_NAME, ON_NODE_LOSS

__all__ = ["ELASTIC_COLUMNS", "ElasticPlan", "continuing", "elastic_plan", "elastic_row_problems", "elastic_table",
           "refuse_elastic"]

#: the columns :func:`ckptplan.engine.scenario.evaluate` adds to a table with a continuing row
ELASTIC_COLUMNS = tuple(f.name for f in ELASTIC_OUTPUT_FIELDS)


def continuing(values: Any) -> np.ndarray:
    """Mask of the rows whose ``on_node_loss`` says ``continue`` (a column of text, blanks restart)."""
    return np.fromiter(((isinstance(v, str) and v.strip().lower() == "continue") for v in values), dtype=bool,
                       count=len(values))


def _replicas(eff: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    per = np.where(np.isnan(eff["nodes_per_replica"]), eff["nodes"], eff["nodes_per_replica"])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):   # a subnormal per: refused by its rule
        n = eff["nodes"] / per
    return n, np.where(np.isnan(eff["min_replicas"]), n, eff["min_replicas"])


def elastic_row_problems(table: pd.DataFrame, eff: dict[str, np.ndarray], ok: dict[str, np.ndarray],
                         problems: Any) -> None:
    """Record every row breaking an elastic rule (module notes); sets ``eff["on_node_loss"]`` (1.0 =
    continue, 0.0 = restart) for :func:`elastic_plan`."""
    n_rows = len(table)
    if "on_node_loss" not in table.columns and "nodes_per_replica" not in table.columns \
            and "min_replicas" not in table.columns:
        eff["on_node_loss"] = np.zeros(n_rows)          # no elastic input: every row restarts (today's plan)
        return
    raw = table["on_node_loss"].to_numpy(dtype=object) if "on_node_loss" in table.columns else np.full(n_rows, None)
    for p in range(n_rows):
        v = raw[p]
        blank = (not v.strip()) if isinstance(v, str) else (v is None or v is pd.NA or v is pd.NaT or (
            isinstance(v, (float, np.floating)) and np.isnan(v)))
        if not blank and not (isinstance(v, str) and v.strip().lower() in ON_NODE_LOSS):
            problems.add([p], lambda _p, v=v: InputError("on_node_loss", v, "must be restart or continue"))
    cont = continuing(raw)
    eff["on_node_loss"] = cont.astype(float)
    if not ("nodes_per_replica" in table.columns or "min_replicas" in table.columns or cont.any()):
        return
    good = ok["nodes"] & ok["nodes_per_replica"] & ok["min_replicas"]
    n, floor = _replicas(eff)
    with np.errstate(invalid="ignore"):
        rules = (
            (good & (eff["nodes_per_replica"] > eff["nodes"]), "nodes_per_replica",
             lambda p: f"must be <= nodes = {eff['nodes'][p]:.0f}"),
            (good & ~np.isnan(eff["nodes_per_replica"]) & (np.floor(n) != n), "nodes_per_replica",
             lambda p: f"must divide nodes = {eff['nodes'][p]:.0f} (the job is a whole number of replicas)"),
            (good & (np.floor(n) == n) & (floor > n), "min_replicas",
             lambda p: f"must be <= the replicas, nodes / nodes_per_replica = {n[p]:.0f}"),
            (good & cont & (np.floor(n) == n) & (floor <= n) & (n - floor > MAX_REPLICAS_OUT), "min_replicas",
             lambda p: f"must be >= replicas - {MAX_REPLICAS_OUT} = {n[p] - MAX_REPLICAS_OUT:.0f}: the plan solves "
                       f"one state per replica out, at most {MAX_REPLICAS_OUT}"),
        )
        for bad, field, rule in rules:
            for p in np.flatnonzero(bad):
                problems.add([p], lambda _p, f=field, r=rule(p): InputError(f, float(eff[f][_p]), r))
    _not_together(table, eff, cont, problems)


def _not_together(table: pd.DataFrame, eff: dict[str, np.ndarray], cont: np.ndarray, problems: Any) -> None:
    """A continuing row with what the elastic model does not hold: refused by name."""
    if not cont.any():
        return
    checks = [("async_write_min", eff["async_write_min"] > 0, "must be 0 with on_node_loss = continue (the elastic "
               "plan is for synchronous saves)"),
              ("preemptions_per_h", np.nan_to_num(eff["preemptions_per_h"]) > 0, "must be empty or 0 with "
               "on_node_loss = continue (preemptions and elastic continuation are not modelled together)")]
    for c in table.columns:
        if str(c).startswith("domain") and str(c).endswith("_mtbf_h") and c in eff:
            checks.append((str(c), ~np.isnan(eff[c]), "must be empty with on_node_loss = continue: a correlated "
                           "domain's failure takes several replicas out at once, which the elastic plan does not model"))
        if str(c).startswith("phase") and str(c).endswith("_start_h") and c in eff:
            checks.append((str(c), ~np.isnan(eff[c]), "must be empty with on_node_loss = continue (failure phases "
                           "and elastic continuation are not modelled together)"))
    for field, bad, rule in checks:
        for p in np.flatnonzero(cont & bad):
            problems.add([p], lambda _p, f=field, r=rule: InputError(f, float(eff[f][_p]), r))


class ElasticPlan:
    """The continuing rows of a table (floor below their replica count) and their model inputs, in minutes."""

    def __init__(self, rows: np.ndarray, n_rows: int, args: dict[str, np.ndarray], replicas: np.ndarray,
                 work: np.ndarray):
        self.rows, self.n_rows, self.args, self.replicas, self.work = rows, n_rows, args, replicas, work

    def _model(self, T: np.ndarray, work: np.ndarray | None = None) -> dict[str, np.ndarray]:
        a = self.args
        w = np.ones(T.shape) if work is None else work
        return elastic_breakdown_kernel(w, T, a["C"], a["M"], a["R"], a["D"], a["n"], a["K"], a["keep"], a["Ps"],
                                        a["Pg"])

    def intervals(self, intervals: dict[str, np.ndarray], chosen_given: np.ndarray) -> dict[str, np.ndarray]:
        """The exact (and, unless given, chosen) interval of the continuing rows: the elastic optimum."""
        a, r = self.args, self.rows
        self.best = elastic_optimal_interval_kernel(a["C"], a["M"], a["R"], a["D"], a["n"], a["K"], a["keep"],
                                                    a["Ps"], a["Pg"], upper=self.work[r])
        out = dict(intervals)
        for key in ("exact_interval_min", "chosen_interval_min"):
            out[key] = np.array(out[key], dtype=float, copy=True)
        out["exact_interval_min"][r] = self.best
        free = np.isnan(chosen_given[r])
        out["chosen_interval_min"][r[free]] = self.best[free]
        return out

    def parts(self, parts: dict[str, np.ndarray], chosen: np.ndarray) -> dict[str, np.ndarray]:
        """The time breakdown with the elastic model's figures in the continuing rows."""
        r = self.rows
        b = self._model(chosen[r], self.work[r])
        out = {k: np.array(v, dtype=float, copy=True) for k, v in parts.items()}
        for key in ("useful", "save", "rework", "restart", "total", "failures"):
            out[key][r] = b[key]
        out["rollbacks"][r] = b["stops"]
        self.b = b
        return out

    def simulated_deadline(self, chosen: np.ndarray, deadline_h: np.ndarray) -> dict[str, np.ndarray]:
        """P(finish by the deadline) and the wall time's P50 / P90 / P99 (hours) of the continuing rows with a
        deadline, simulated at the chosen interval (:func:`ckptplan.engine.elastic_montecarlo.simulate_elastic`, no
        final save as the analytic answer of the other rows,
        :data:`~ckptplan.engine.fields.DEFAULT_RUNS` runs, seed :data:`~ckptplan.engine.fields.DEFAULT_SEED`);
        NaN for the rows without one."""
        from .elastic_montecarlo import simulate_elastic

        a = self.args
        out = {key: np.full(chosen.size, np.nan) for key in ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90",
                                                              "wall_h_p99")}
        for p in np.flatnonzero(~np.isnan(deadline_h)):
            sim = simulate_elastic(self.work[self.rows[p]], chosen[p], a["C"][p], a["M"][p], a["R"][p], a["D"][p],
                                   a["n"][p], a["n"][p] - a["K"][p], a["keep"][p], a["Ps"][p], a["Pg"][p],
                                   runs=DEFAULT_RUNS, seed=DEFAULT_SEED, final_save=False)
            out["p_finish_by_deadline"][p] = float(np.mean(sim.wall <= deadline_h[p] * 60.0))
            for q in (50, 90, 99):
                out[f"wall_h_p{q}"][p] = float(np.quantile(sim.wall, q / 100.0)) / 60.0
        return out

    def columns(self, new: dict[str, np.ndarray], intervals: dict[str, np.ndarray],
                parts: dict[str, np.ndarray], deadline_h: np.ndarray) -> dict[str, np.ndarray]:
        """The continuing rows' waste and deadline figures and the added columns (every row)."""
        r, b = self.rows, self.b
        out = {k: np.array(new[k], copy=True) for k in new}
        out["waste_fraction"][r] = 1.0 - b["useful"] / b["total"]
        for key, T in (("waste_fraction_at_optimum", self.best), ("waste_fraction_at_young",
                       intervals["young_interval_min"][r]), ("waste_fraction_at_daly", intervals["daly_interval_min"][r])):
            out[key][r] = 1.0 - 1.0 / self._model(T)["total"]
        for key, values in self.simulated_deadline(chosen=intervals["chosen_interval_min"][r],
                                                   deadline_h=deadline_h[r]).items():
            out[key][r] = values             # no analytic answer for an elastic job: simulated (module notes)
        out["deadline_approximation_ok"][r] = ~np.isnan(deadline_h[r])   # simulated: no approximation to check
        out["replicas"] = self.replicas.copy()
        out["mean_replicas_running"] = self.replicas.copy()
        out["mean_replicas_running"][r] = b["mean_replicas_running"]
        out["shrunk_h"] = np.zeros(self.n_rows)
        out["shrunk_h"][r] = b["shrunk"] / 60.0
        out["expected_shrinks"] = np.zeros(self.n_rows)
        out["expected_shrinks"][r] = b["shrinks"]
        out["expected_stops"] = np.array(parts["rollbacks"], dtype=float, copy=True)
        return out


def elastic_table(table: pd.DataFrame) -> bool:
    """Whether :func:`ckptplan.engine.scenario.evaluate` adds :data:`ELASTIC_COLUMNS` to this table: a row continues
    on node loss or gives ``nodes_per_replica`` (as :func:`elastic_plan` decides)."""
    cont = continuing(table["on_node_loss"].to_numpy(dtype=object)) if "on_node_loss" in table.columns else [False]
    given = pd.to_numeric(table["nodes_per_replica"], errors="coerce").notna().to_numpy() \
        if "nodes_per_replica" in table.columns else [False]
    return bool(np.any(cont) or np.any(given))


def elastic_plan(table: pd.DataFrame, cols: dict[str, np.ndarray], M: np.ndarray, R: np.ndarray, D: np.ndarray,
                 work: np.ndarray) -> ElasticPlan | None:
    """The rows with ``on_node_loss = "continue"`` (None when no row continues or gives ``nodes_per_replica``: the
    plan is today's; a restarting row with replicas gets the columns, its plan today's). ``cols``:
    the validated columns (with ``on_node_loss`` from :func:`elastic_row_problems`); ``M``, ``R``, ``D``,
    ``work`` in minutes."""
    cont = cols.get("on_node_loss")
    if cont is None or not (np.any(cont > 0) or np.any(~np.isnan(cols["nodes_per_replica"]))):
        return None
    n, floor = _replicas(cols)
    rows = np.flatnonzero((cont > 0) & (floor < n))
    args = {"C": cols["checkpoint_stall_min"][rows], "M": M[rows], "R": R[rows], "D": D[rows], "n": n[rows],
            "K": (n - floor)[rows], "keep": cols["shrink_keeps_progress"][rows],
            "Ps": cols["shrink_pause_min"][rows], "Pg": cols["regrow_pause_min"][rows]}
    return ElasticPlan(rows, len(table), args, n, work)


def refuse_elastic(scenario: Any, surface: str) -> None:
    """Raise :class:`InputError` when ``scenario`` continues on node loss or gives an elastic field (other than
    its default) and ``surface`` plans a job that stops at every failure (the workbook): refused by name, never
    left out silently."""
    if getattr(scenario, "on_node_loss", "restart") == "continue":
        raise InputError("on_node_loss", "continue", f"{surface} plans a job that stops at every failure: plan "
                         "elastic continuation with `ckptplan plan`, `compare` or `batch`")
    for name in ELASTIC_FIELD_NAMES:
        value = getattr(scenario, name, None)
        if value is not None and value != FIELD_BY_NAME[name].default:
            raise InputError(name, value, f"is an elastic continuation field, which {surface} does not hold: "
                             "leave it out here, or plan it with `ckptplan plan`, `compare` or `batch`")
