"""The engine as Excel functions (xlwings user-defined functions, ``CKPT_`` prefix).

One module serves every xlwings runtime:

* **Desktop (Windows)**: the xlwings add-in's *Import Functions* reads ``UDF MODULES`` (set it to
  ``workbook.udfs``; ``ckptplan excel-setup FOLDER`` writes the ``xlwings.conf`` that does so).
  xlwings runs desktop UDFs on Windows only; the workbook must be saved as ``.xlsm`` first.
* **xlwings Server / Lite**: the same decorators (``xw.func``, ``xw.arg``, ``xw.ret``); re-export the
  functions from the server project's ``custom_functions`` module
  (``from ckptplan.workbook.udfs import *``), so there is one definition, not two copies. There Excel shows
  them under the add-in's namespace (``XLWINGS.CKPT_WASTE`` by default).

Every function is a thin translation: cells in, engine call, cells out. No model is written here;
each docstring names the engine function it calls (see those for formulas, papers and limits).

What a function accepts (xlwings' converters only run inside Excel, so each function coerces its
own input and works the same when called from Python):

* every numeric argument takes a single value or a range: a number, ``None`` (blank cell), text,
  a bool, a 1-D list, a list of lists (2-D range) or a numpy array. Ranges broadcast with numpy's
  rules, like the engine: a column against a single cell gives a column, a column against a row
  gives a grid. The result has the broadcast shape (list of lists for a 2-D range); a single cell
  (or a 1 x 1 range) gives a single value.
* a bad cell (text, blank, bool, NaN, a value breaking the argument's rule, or a combination the
  engine refuses) gives a readable error string in *that* result cell, e.g.
  ``#CKPT! checkpoint_stall_min: must be >= 0 (got -1)``; the other cells are still computed. A problem with
  the whole call (ranges that do not broadcast, a ragged list) gives one error string. No function
  raises, returns a traceback, or returns NaN.
* an optional argument left out, or given as a single blank cell, takes its default (a blank
  inside a multi-cell range is an error). Domain MTBFs are the exception the workbook also makes:
  a blank means "no such domain". xlwings hands an input cell holding an Excel error (``#N/A``)
  over as a blank, so its message says "got a blank cell" (as text, "got the Excel error #N/A");
  a formula giving "" counts as blank.
* cell budget: at most :data:`MAX_UDF_CELLS` (250,000) cells per argument and per result (the
  broadcast shape of the arguments; CKPT_EVALUATE: the table in and the table out). A bigger call
  (a whole-column reference ``A:A``, a long column against a long row) answers with one
  ``#CKPT! ...: N cells is more than one call takes`` message instead of computing. Bad cells cost
  about what good ones do (messages are built once per distinct value; rules spanning arguments
  are checked on whole arrays before the engine runs), so no range freezes Excel.
  CKPT_DEADLINE_PROB also caps its simulations per call (:data:`MAX_RUNS_PER_CALL` runs,
  :data:`MAX_CASES_PER_CALL` distinct cases).

Units are in the argument names: ``_min`` minutes, ``_h`` hours, ``slowdown`` / ``_share`` a
fraction in [0, 1); money is in the currency of the price given.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import numpy as np
import pandas as pd

from .. import engine
from ..engine import montecarlo as _mc
from ..engine import waste as _waste
from ..engine.fields import DEFAULT_RUNS, DEFAULT_SEED, MAX_RUNS_PER_CELL
from ..engine.cost import CATEGORIES
from ..engine.errors import NEVER_FINISHES
from ..engine.reliability import FailureDomain
from ..engine.fields import FIELD_BY_NAME, TEXT_FIELDS
from ..engine.elastic_table import ELASTIC_COLUMNS, elastic_table
from ..engine.scenario import check_columns, derived_columns, evaluate_each, table_problems
from ..engine.validity import warnings_text
from .cells import (ERROR_PREFIX, MAX_UDF_CELLS, CallError, arg, as_array, budget_text, cell_count, cell_value, choice,
                    describe, elementwise, engine_message, error_text, show, udf)

__all__ = [
    "CKPT_JOB_MTBF",
    "CKPT_JOB_MTBF_DOMAINS",
    "CKPT_EFFECTIVE_STALL",
    "CKPT_YOUNG_INTERVAL",
    "CKPT_DALY_INTERVAL",
    "CKPT_EXACT_INTERVAL",
    "CKPT_WASTE",
    "CKPT_WALL_TIME",
    "CKPT_GPU_HOURS",
    "CKPT_COST",
    "CKPT_COST_BREAKDOWN",
    "CKPT_EVALUATE",
    "CKPT_DEADLINE_PROB",
]

#: most simulated runs one cell of CKPT_DEADLINE_PROB may ask for
MAX_RUNS = MAX_RUNS_PER_CELL
#: most simulated runs one call of CKPT_DEADLINE_PROB may do over all its distinct cases
MAX_RUNS_PER_CALL = 200_000
#: most distinct cases (simulations) one call of CKPT_DEADLINE_PROB may run (each costs ~0.3 ms or more)
MAX_CASES_PER_CALL = 1_000
#: results of CKPT_DEADLINE_PROB's simulations kept in memory (20,000 runs = 160 kB each)
DEADLINE_CACHE_SIZE = 128

# Engine argument names -> Excel argument names (for messages about cross-argument rules)
_WASTE_NAMES = {"T": "interval_min", "C": "checkpoint_stall_min", "M": "job_mtbf_min", "R": "restart_min", "W": "async_write_min",
                "slowdown": "async_slowdown_fraction", "work": "useful_training_h", "D": "downtime_min"}
_DOWNTIME = describe("downtime_min", 0.0)

_ASYNC_C = "For async saves give the effective stall (CKPT_EFFECTIVE_STALL)."


# ------------------------------------------------------------------------------- screens
# The engine refuses a whole call when one cell breaks a rule spanning arguments; these find every
# such cell at once (same condition and message as the engine: tests/test_udf_budget.py pins both),
# so the engine only sees cells it accepts and a refused cell costs no extra engine call.

def _per_cell(mask: np.ndarray, make: Any, *columns: np.ndarray) -> np.ndarray | None:
    """Messages ``make(*values)`` for the cells of ``mask`` (None elsewhere), or None when no cell."""
    if not mask.any():
        return None
    at = np.flatnonzero(mask)
    out = np.full(mask.shape, None, dtype=object)
    out[at] = [make(*cell) for cell in zip(*(c[at].tolist() for c in columns))] if columns else make()
    return out


def _late_writes(T: np.ndarray, W: np.ndarray, s: np.ndarray) -> np.ndarray | None:
    """engine.waste's rule: an async write must be durable before the next save (W (1 - s) <= T)."""
    behind = W * (1.0 - s)
    return _per_cell(behind > T * (1.0 + 1e-12), lambda b, t, w: error_text(
        "async_write_min", f"the background write must be durable before the next save starts: "
        f"W * (1 - slowdown) = {b:.6g} must be <= T = {t:.6g}", show(w)), behind, T, W)


def _downtime_over(R: np.ndarray, Dn: np.ndarray) -> np.ndarray | None:
    """engine.scenario's rule: the downtime is a part of the restart (downtime_min <= restart_min)."""
    return _per_cell(Dn > R * (1.0 + 1e-12), lambda d, r: error_text(
        "downtime_min", f"must be <= restart_min = {r:.6g} (it is the part of the restart the job spends waiting "
        "without its nodes)", show(d)), Dn, R)


def exposed(R: np.ndarray, Dn: np.ndarray) -> np.ndarray:
    """The restart the job can fail in (engine.waste's ``R``): ``restart_min - downtime_min``, never below 0."""
    return np.maximum(R - Dn, 0.0)


def _merge(*screens: np.ndarray | None) -> np.ndarray | None:
    """One array of messages from several screens, the first screen's message winning."""
    out = None
    for found in reversed(screens):
        if found is None:
            continue
        if out is None:
            out = found
        else:
            here = found.astype(bool)
            out[here] = found[here]
    return out


# ------------------------------------------------------------------------------- reliability

@udf()
def CKPT_JOB_MTBF(node_mtbf_h, nodes):
    """Job MTBF in hours = node MTBF / nodes (independent node failures; any node stops the job).

    Calls :func:`engine.job_mtbf`. Units: hours in, hours out (x 60 for the ``job_mtbf_min`` of the
    interval functions). Assumes independent exponential node failures; wrong for correlated
    failures (racks, power domains): use CKPT_JOB_MTBF_DOMAINS. Reference: 2,560 h per node gives
    20 h at 128 nodes.
    """
    specs = [arg("node_mtbf_h", node_mtbf_h), arg("nodes", nodes)]
    return elementwise(specs, engine.job_mtbf, {"node_mtbf": "node_mtbf_h"})


@udf(domain1_mtbf_h=describe("domain1_mtbf_h") + " Blank = no domain.",
     domain2_mtbf_h="Optional. " + describe("domain2_mtbf_h") + " Blank = none.",
     domain3_mtbf_h="Optional. " + describe("domain3_mtbf_h") + " Blank = none.")
def CKPT_JOB_MTBF_DOMAINS(node_mtbf_h, nodes, domain1_mtbf_h, domain1_nodes_per_domain, nonfatal_share=0.0,
                          domain2_mtbf_h=None, domain2_nodes_per_domain=None,
                          domain3_mtbf_h=None, domain3_nodes_per_domain=None):
    """Job MTBF in hours with correlated failure domains: 1 / ((1 - nonfatal) nodes / node MTBF + sum ceil(nodes / per domain) / domain MTBF).

    Calls :func:`engine.job_mtbf_with_domains` (rate model in
    :func:`engine.reliability.job_failure_rate_per_h`). The job is packed into
    ``ceil(nodes / nodes_per_domain)`` domains of each kind; a domain outage always stops the job.
    Node MTBF must then count only the failures that are not domain events. Up to three domain
    kinds, as on the workbook's Inputs sheet; a blank domain MTBF means "no such domain" (a domain
    MTBF without its nodes per domain is an error). Hours in, hours out.
    """
    specs = [arg("node_mtbf_h", node_mtbf_h), arg("nodes", nodes),
             arg("nonfatal_share", nonfatal_share, default=0.0)]
    pairs = (("domain1_mtbf_h", domain1_mtbf_h, "domain1_nodes_per_domain", domain1_nodes_per_domain),
             ("domain2_mtbf_h", domain2_mtbf_h, "domain2_nodes_per_domain", domain2_nodes_per_domain),
             ("domain3_mtbf_h", domain3_mtbf_h, "domain3_nodes_per_domain", domain3_nodes_per_domain))
    for mtbf_name, mtbf, per_name, per in pairs:
        # blank domain MTBF: no such domain (never fails); blank nodes per domain: checked below
        specs += [arg(mtbf_name, mtbf, blank=np.inf), arg(per_name, per, blank=np.nan)]
    names = {"node_mtbf_h": "node_mtbf_h", "nodes": "nodes", "nonfatal_share": "nonfatal_share"}
    for i, (mtbf_name, _, per_name, _) in enumerate(pairs, start=1):
        names.update({f"domain{i}.mtbf_h": mtbf_name, f"domain{i}.nodes_per_domain": per_name})

    def screen(m, n, share, *domain_columns):  # the workbook's rule: both or neither
        found = []
        for i, (mtbf_name, _, per_name, _) in enumerate(pairs):
            dm, dn = domain_columns[2 * i], domain_columns[2 * i + 1]
            found.append(_per_cell(np.isnan(dn) & np.isfinite(dm), lambda: error_text(
                per_name, f"is required when {mtbf_name} is given", show(None))))
        return _merge(*found)

    def compute(m, n, share, *domain_columns):
        domains = []
        for i, (mtbf_name, _, per_name, _) in enumerate(pairs):
            dm, dn = domain_columns[2 * i], domain_columns[2 * i + 1]
            missing = np.isnan(dn)
            if np.any(missing & np.isfinite(dm)):  # the workbook's rule: both or neither
                raise engine.InputError(per_name, None, f"is required when {mtbf_name} is given")
            domains.append(FailureDomain(f"domain{i + 1}", dm, np.where(missing, 1.0, dn)))
        return engine.job_mtbf_with_domains(m, n, domains, share)

    return elementwise(specs, compute, names, screen)


# ------------------------------------------------------------------------------- intervals

@udf()
def CKPT_EFFECTIVE_STALL(checkpoint_stall_min, async_write_min=0.0, async_slowdown_fraction=0.0):
    """Compute time lost per save, minutes: stall + write x slowdown (what Young and Daly take as C for async saves).

    Calls :func:`engine.effective_stall`. An async save with no blocking stall still costs
    ``async_write_min x slowdown`` of compute and delays the moment the checkpoint is restorable.
    """
    specs = [arg("checkpoint_stall_min", checkpoint_stall_min), arg("async_write_min", async_write_min, default=0.0),
             arg("async_slowdown_fraction", async_slowdown_fraction, default=0.0)]
    return elementwise(specs, engine.effective_stall, _WASTE_NAMES)


@udf(checkpoint_stall_min=describe("checkpoint_stall_min") + " " + _ASYNC_C)
def CKPT_YOUNG_INTERVAL(checkpoint_stall_min, job_mtbf_min):
    """Young's checkpoint interval sqrt(2 x stall x MTBF), minutes (Young 1974).

    Calls :func:`engine.young_interval`. Minimises the first-order waste ``C/T + T/(2M)``; needs
    ``stall << interval << MTBF`` and ignores restarts and failures during saves. Reference: stall
    2 min, MTBF 1,200 min gives 69.3 min.
    """
    specs = [arg("checkpoint_stall_min", checkpoint_stall_min), arg("job_mtbf_min", job_mtbf_min)]
    return elementwise(specs, engine.young_interval, _WASTE_NAMES)


@udf(checkpoint_stall_min=describe("checkpoint_stall_min") + " " + _ASYNC_C)
def CKPT_DALY_INTERVAL(checkpoint_stall_min, job_mtbf_min):
    """Daly's higher-order checkpoint interval, minutes (Daly 2006): sqrt(2CM)(1 + sqrt(C/2M)/3 + C/18M) - C, or M when C >= 2M.

    Calls :func:`engine.daly_interval`. Accounts for failures during saves; tends to Young's
    interval when the stall is small against the MTBF. Reference: 5-minute dump, 24 h MTBF gives
    117 min.
    """
    specs = [arg("checkpoint_stall_min", checkpoint_stall_min), arg("job_mtbf_min", job_mtbf_min)]
    return elementwise(specs, engine.daly_interval, _WASTE_NAMES)


@udf()
def CKPT_EXACT_INTERVAL(checkpoint_stall_min, job_mtbf_min, async_write_min=0.0, async_slowdown_fraction=0.0):
    """Exact optimum interval of Daly's complete model, minutes: M (1 + W0(-exp(-1 - Ceff/M))), Ceff = stall + write x slowdown.

    Calls :func:`engine.exact_optimal_interval` (Lambert W; never below ``write x (1 - slowdown)``,
    so the async write is durable before the next save). Restart time does not move the optimum.
    Exponential failures. Reference: stall 2 min, MTBF 1,200 min gives 67.96 min.
    """
    specs = [arg("checkpoint_stall_min", checkpoint_stall_min), arg("job_mtbf_min", job_mtbf_min),
             arg("async_write_min", async_write_min, default=0.0), arg("async_slowdown_fraction", async_slowdown_fraction, default=0.0)]
    return elementwise(specs, engine.exact_optimal_interval, _WASTE_NAMES)


# ------------------------------------------------------------------------------- waste and time

_EXACT, _FIRST_ORDER = 0.0, 1.0


@udf(restart_min=describe("restart_min", 0.0) + " Ignored by the first-order model.",
     model='Optional. "exact" (default): share of wall time, Daly 2006 complete model; "first_order": C/T + T/2M.',
     downtime_min=_DOWNTIME)
def CKPT_WASTE(interval_min, checkpoint_stall_min, job_mtbf_min, restart_min=0.0, async_write_min=0.0, async_slowdown_fraction=0.0, model="exact",
               downtime_min=0.0):
    """Checkpoint waste at an interval. "exact": share of wall time lost to saves, rework and restarts; "first_order": Young's C/T + T/(2M).

    ``exact`` calls :func:`engine.waste_fraction` (exponential failures striking compute, saves and
    restarts; async writes must finish before the next save: ``write x (1 - slowdown) <= interval``).
    ``first_order`` calls :func:`engine.first_order_waste` with the effective stall
    (:func:`engine.effective_stall`); it is a share of compute time, leaves out restarts and is
    valid only for ``stall << interval << MTBF``. Results are fractions (format as %).
    """
    specs = [arg("interval_min", interval_min), arg("checkpoint_stall_min", checkpoint_stall_min),
             arg("job_mtbf_min", job_mtbf_min), arg("restart_min", restart_min, default=0.0),
             arg("async_write_min", async_write_min, default=0.0), arg("async_slowdown_fraction", async_slowdown_fraction, default=0.0),
             choice("model", model, {"exact": _EXACT, "first_order": _FIRST_ORDER}, "exact"),
             arg("downtime_min", downtime_min, default=0.0)]

    def compute(T, C, M, R, W, s, code, Dn):
        out = np.empty(T.shape)
        exact = code == _EXACT
        if exact.all():
            return engine.waste_fraction(T, C, M, exposed(R, Dn), W, s, Dn)
        if exact.any():
            e = exact
            out[e] = engine.waste_fraction(T[e], C[e], M[e], exposed(R[e], Dn[e]), W[e], s[e], Dn[e])
        first = ~exact
        if first.any():
            c_eff = engine.effective_stall(C[first], W[first], s[first])
            out[first] = engine.first_order_waste(T[first], c_eff, M[first])
        return out

    def screen(T, C, M, R, W, s, code, Dn):  # the exact model refuses late writes; first order does not
        exact = code == _EXACT
        return _merge(_late_writes(T if exact.all() else np.where(exact, T, np.inf), W, s),
                      _downtime_over(R, np.where(exact, Dn, 0.0)))

    return elementwise(specs, compute, _WASTE_NAMES, screen)


@udf(downtime_min=_DOWNTIME)
def CKPT_WALL_TIME(useful_training_h, interval_min, checkpoint_stall_min, job_mtbf_min, restart_min=0.0, async_write_min=0.0, async_slowdown_fraction=0.0,
                   downtime_min=0.0):
    """Expected wall hours to finish the training: (M + D) e^(R/M) (e^((T+C)/M) - 1) work/T (Daly 2006; Bougeret et al. 2011), async saves included.

    Calls :func:`engine.expected_wall_time` with ``useful_training_h x 60`` minutes and returns hours.
    Long-run expectation for exponential failures; for a deadline or clustered failures use
    CKPT_DEADLINE_PROB (Monte Carlo).
    """
    specs = [arg("useful_training_h", useful_training_h), arg("interval_min", interval_min),
             arg("checkpoint_stall_min", checkpoint_stall_min), arg("job_mtbf_min", job_mtbf_min),
             arg("restart_min", restart_min, default=0.0),
             arg("async_write_min", async_write_min, default=0.0), arg("async_slowdown_fraction", async_slowdown_fraction, default=0.0),
             arg("downtime_min", downtime_min, default=0.0)]

    def compute(work, T, C, M, R, W, s, Dn):
        return np.asarray(engine.expected_wall_time(work * 60.0, T, C, M, exposed(R, Dn), W, s, Dn)) / 60.0

    return elementwise(specs, compute, _WASTE_NAMES, _wall_screen)


def _wall_screen(work, T, C, M, R, W, s, Dn):
    """engine.expected_wall_time's refusals: late writes, a downtime above the restart, then a wall time beyond
    floating point (``R`` the whole restart, ``Dn`` its downtime)."""
    late = _merge(_late_writes(T, W, s), _downtime_over(R, Dn))
    with np.errstate(all="ignore"):   # the engine's own kernel and limit (same bits)
        log_total = np.asarray(_waste.log_wall_per_work(T, C, M, exposed(R, Dn), W, s, Dn)) + np.log(work * 60.0)
        huge = np.isfinite(log_total) & (log_total > _waste.MAX_LOG)  # NaN, inf: the engine's
    if late is not None:
        huge &= ~late.astype(bool)
    over = _per_cell(huge, lambda ratio, m: error_text(
        "job_mtbf_min", f"{NEVER_FINISHES} (restart + interval + save = {ratio:.4g} job MTBFs: the expected wall time "
        "overflows)", show(m)), (T + C + W + R) / M, M)
    return _merge(late, over)


# ------------------------------------------------------------------------------- cost

@udf()
def CKPT_GPU_HOURS(wall_h, gpus):
    """GPU-hours = wall hours x GPUs: the GPUs are held (and billed) whatever they are doing.

    Calls :func:`engine.gpu_hours`.
    """
    specs = [arg("wall_h", wall_h), arg("gpus", gpus)]
    return elementwise(specs, engine.gpu_hours, {})


@udf()
def CKPT_COST(gpu_hours, price_per_gpu_hour):
    """Cost = GPU-hours x price per GPU-hour, in the currency of the price.

    Calls :func:`engine.money`.
    """
    specs = [arg("gpu_hours", gpu_hours), arg("price_per_gpu_hour", price_per_gpu_hour)]
    return elementwise(specs, engine.money, {})


BREAKDOWN_HEADER = ["category", "hours", "GPU-hours", "cost"]
#: the last row sums the job's four categories: its wall hours, ``job_gpu_hours`` and ``compute_cost`` (no spares,
#: no storage; ``total_gpu_hours`` and ``total_cost`` add those, :mod:`engine.fields`)
BREAKDOWN_ROWS = (*CATEGORIES, "compute")


@udf(note="", downtime_min=_DOWNTIME)
def CKPT_COST_BREAKDOWN(useful_training_h, interval_min, checkpoint_stall_min, job_mtbf_min, restart_min, async_write_min, async_slowdown_fraction, gpus,
                        price_per_gpu_hour, downtime_min=0.0):
    """Where the time and money go: a 6 x 4 table (header; useful, save, rework, restart, compute) x (hours, GPU-hours, cost);
    the compute row is the job's sum (wall hours, ``job_gpu_hours``, ``compute_cost``).

    Calls :func:`engine.time_breakdown` (exact model, minutes) and converts with
    :func:`engine.gpu_hours` and :func:`engine.money`, as :func:`engine.evaluate` does. Single
    values only (one scenario per call; a multi-cell range is an error). Spills in Excel 365; in
    older Excel enter it as an array formula over 6 rows x 4 columns.
    """
    specs = [arg("useful_training_h", useful_training_h), arg("interval_min", interval_min),
             arg("checkpoint_stall_min", checkpoint_stall_min), arg("job_mtbf_min", job_mtbf_min),
             arg("restart_min", restart_min), arg("async_write_min", async_write_min),
             arg("async_slowdown_fraction", async_slowdown_fraction), arg("gpus", gpus),
             arg("price_per_gpu_hour", price_per_gpu_hour), arg("downtime_min", downtime_min, default=0.0)]
    for name, values, errors in specs:
        if values.size != 1:
            return error_text(name, "must be a single cell (one scenario per call)", f"a range of {values.size} cells")
        if errors.reshape(-1)[0] is not None:
            return errors.reshape(-1)[0]
    work, T, C, M, R, W, s, g, price, Dn = (float(v.reshape(-1)[0]) for _, v, _ in specs)
    over = _downtime_over(np.array([R]), np.array([Dn]))
    if over is not None:
        return over[0]
    try:
        parts = engine.time_breakdown(work * 60.0, T, C, M, max(R - Dn, 0.0), W, s, Dn)
    except ValueError as exc:
        return engine_message(exc, _WASTE_NAMES)
    table = [list(BREAKDOWN_HEADER)]
    for cat in BREAKDOWN_ROWS:
        hours = parts["total" if cat == "compute" else cat] / 60.0
        gpu_h = engine.gpu_hours(hours, g)
        table.append([cat, float(hours), float(gpu_h), float(engine.money(gpu_h, price))])
    if not all(math.isfinite(x) for row in table[1:] for x in row[1:]):
        return f"{ERROR_PREFIX} result: not a finite number (the model breaks down for these inputs)"
    return table


# ------------------------------------------------------------------------------- scenario tables

_DOMAIN_COLUMN = re.compile(r"^domain\d+_(name|mtbf_h|nodes_per_domain)$")


def _table(table: Any) -> pd.DataFrame:
    """A scenario table (DataFrame from xlwings' converter, or rows with a header row) as a DataFrame.

    Text that is empty (a formula returning "") counts as a blank cell. The index is the data row
    number (1 = first row under the header), so engine messages name the row as the user sees it.
    """
    if isinstance(table, pd.DataFrame):
        if cell_count(table) > MAX_UDF_CELLS:
            raise CallError(budget_text("table", cell_count(table)))
        rows = [list(table.columns)] + table.astype(object).to_numpy().tolist()
    else:
        arr = as_array("table", table)
        if arr.ndim != 2 or arr.shape[0] < 2:
            raise CallError(f"{ERROR_PREFIX} table: must be a range with a header row (column names) and at "
                             "least one row of data")
        rows = arr.tolist()
    header = rows[0]
    for col in header:
        if not isinstance(col, str) or not col.strip():
            raise CallError(f"{ERROR_PREFIX} table: every header cell must hold a column name (got {show(col)})")
    header = [c.strip() for c in header]
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise CallError(f"{ERROR_PREFIX} table: column {col!r} appears twice")
        seen.add(col)
        if col not in FIELD_BY_NAME and col not in TEXT_FIELDS and not _DOMAIN_COLUMN.match(col):
            raise CallError((f"{ERROR_PREFIX} table: unknown column {col!r}; use scenario fields such as "
                              "checkpoint_stall_min, nodes, node_mtbf_h (see ckptplan.engine.fields.FIELDS), name, "
                              "currency, or domainN_mtbf_h / domainN_nodes_per_domain")[:255])
    data = [[None if (isinstance(v, str) and v == "") else v for v in row] for row in rows[1:]]
    frame = pd.DataFrame(data, columns=header)
    frame.index = pd.RangeIndex(1, len(frame) + 1)
    return frame




_TABLE_NOTE = (f"Tables: at most {MAX_UDF_CELLS:,} cells in and out (rows x columns); a bigger table gives one "
               "#CKPT! message (split it).")


@udf(ret={"index": False}, note=_TABLE_NOTE,
      table={"convert": pd.DataFrame, "index": False, "header": True,
             "doc": "Scenario table with a header row of engine field names (checkpoint_stall_min, nodes, ...), one scenario per row."})
def CKPT_EVALUATE(table):
    """Every derived figure of each scenario row: the table with job MTBF, intervals, waste, hours, GPU-hours and cost columns added.

    Calls :func:`engine.evaluate` (see it and ``ckptplan.engine.fields.FIELDS`` for the columns, units
    and rules). Header names: scenario fields, ``name``/``description``/``source``/``currency`` and
    ``domainN_mtbf_h``/``domainN_nodes_per_domain``; an unknown name is an error (a typo would be
    ignored silently otherwise). A bad row gets the reason in each of its result columns, the
    other rows are evaluated; empty rows stay empty. The last column, ``warnings``, says where a
    row leaves its models' range (:mod:`ckptplan.engine.validity`; empty when it does not).
    Returns a header row plus one row per input row (spills).
    """
    frame = _table(table)
    blank_row = frame.isna().all(axis=1).to_numpy()
    data = frame[~blank_row]
    if data.empty:
        return f"{ERROR_PREFIX} table: no data rows"
    try:
        check_columns(data)
    except ValueError as exc:  # the whole table, not one row
        return engine_message(exc, {})
    derived = [c for c in derived_columns() if c not in frame.columns]
    if elastic_table(frame):   # the engine adds the elastic figures (engine.elastic_table.elastic_plan): so do we
        derived += [c for c in ELASTIC_COLUMNS if c not in frame.columns]
    derived += ["warnings"]
    header = list(frame.columns) + derived
    if (len(frame) + 1) * len(header) > MAX_UDF_CELLS:
        return budget_text("result", (len(frame) + 1) * len(header))
    bad = _refused_rows(data)  # every row rule on whole columns: refused rows cost no extra engine call
    parts, refused = evaluate_each(data[~data.index.isin(list(bad))]) if len(bad) < len(data) else ([], {})
    bad.update({label: error_text(str(getattr(exc, "field", "")), getattr(exc, "rule", str(exc)),
                                  show(getattr(exc, "value", None))) for label, exc in refused.items()})
    results = pd.concat(parts) if parts else None
    if results is not None and len(results):  # the rows that leave the models' range say so (engine.validity)
        results["warnings"] = warnings_text(results)
    else:
        results = None
    # column by column: each result column's cells in one pass, then the rows
    full = results.reindex(frame.index) if results is not None else None
    columns = [_column_cells(full[c]) if full is not None and c in full.columns else [None] * len(frame)
               for c in header]
    out: list[list[Any]] = [header] + list(map(list, zip(*columns)))
    if bad:  # the inputs as given; every result column (job_mtbf_h too) carries the reason
        given = [_column_cells(frame[c]) for c in frame.columns]
        results_too = set(derived_columns()) | set(ELASTIC_COLUMNS) | {"warnings"}
        for label, position in zip(bad, frame.index.get_indexer(list(bad)).tolist()):
            message = bad[label]
            out[position + 1] = ([message if c in results_too else given[j][position] for j, c in enumerate(frame.columns)]
                                 + [message] * len(derived))
    for position in np.flatnonzero(blank_row).tolist():
        out[position + 1] = [None] * len(header)
    return out


def _refused_rows(data: pd.DataFrame) -> dict[Any, str]:
    """Rows a rule refuses (engine.scenario.table_problems, as engine.evaluate applies them): label ->
    the message evaluate would give the row alone (its first problem)."""
    _, _, problems = table_problems(data)
    bad = {}
    for position, found in sorted(problems.by_row.items()):
        label, first = data.index[position], found[0]
        bad[label] = (error_text(f"row {label}: {first.field}", first.rule, show(first.value))
                      if isinstance(first, ValueError) else f"{ERROR_PREFIX} row {label}: {first}")
    return bad


def _column_cells(column: pd.Series) -> list[Any]:
    """A column's values as Excel cells (:func:`cell_value`, vectorised by dtype)."""
    values = column.to_numpy()
    if values.dtype.kind == "f":
        return [None if v != v else v for v in values.tolist()]
    if values.dtype.kind in "iu":
        return [float(v) for v in values.tolist()]
    if values.dtype.kind == "b":
        return values.tolist()
    return list(map(cell_value, values.tolist()))


# ------------------------------------------------------------------------------- deadline

@functools.lru_cache(maxsize=DEADLINE_CACHE_SIZE)
def _simulated_walls(work_min: float, T: float, C: float, M: float, R: float, W: float, s: float,
                     runs: int, seed: int, weibull_shape: float, D: float = 0.0) -> np.ndarray:
    """Simulated wall times (minutes) of ``runs`` runs, cached on the inputs (read-only array); ``R`` the exposed
    restart, ``D`` the downtime after every failure."""
    law = "exponential" if weibull_shape == 1.0 else _mc.FailureLaw.weibull(weibull_shape)
    walls = np.asarray(_mc.simulate_wall_times(work_min, T, C, M, R, W, s, runs, seed, law, D=D))
    walls.setflags(write=False)
    return walls


def deadline_cache_info():
    """Hits, misses and size of CKPT_DEADLINE_PROB's simulation cache (``functools.lru_cache``)."""
    return _simulated_walls.cache_info()


def deadline_cache_clear() -> None:
    _simulated_walls.cache_clear()


@udf(deadline_h=describe("deadline_h") + " At least useful_training_h.", downtime_min=_DOWNTIME)
def CKPT_DEADLINE_PROB(useful_training_h, deadline_h, interval_min, checkpoint_stall_min, job_mtbf_min, restart_min=0.0, async_write_min=0.0,
                       async_slowdown_fraction=0.0, runs=DEFAULT_RUNS, seed=DEFAULT_SEED, weibull_shape=1.0, downtime_min=0.0):
    """Probability the training finishes by the deadline: Monte Carlo of the finite job, seeded and cached.

    Share of simulated runs whose wall time is <= the deadline, from
    :func:`ckptplan.engine.montecarlo.simulate_wall_times` (the model of :mod:`ckptplan.engine.finite`: finite job,
    last segment possibly short, no save after the last step, failures during saves, writes and
    restarts; the same figure as ``p_finish`` of :func:`engine.deadline.deadline_report`). At most
    20,000 runs per cell, 200,000 per call and 1,000 distinct cases per call (cells over a cap get
    its message); the simulation of identical inputs is cached (deadlines in a range share one
    simulation). Standard error sqrt(p(1-p)/runs).
    """
    specs = [arg("useful_training_h", useful_training_h), arg("deadline_h", deadline_h),
             arg("interval_min", interval_min), arg("checkpoint_stall_min", checkpoint_stall_min),
             arg("job_mtbf_min", job_mtbf_min), arg("restart_min", restart_min, default=0.0),
             arg("async_write_min", async_write_min, default=0.0), arg("async_slowdown_fraction", async_slowdown_fraction, default=0.0),
             arg("runs", runs, default=DEFAULT_RUNS), arg("seed", seed, default=DEFAULT_SEED),
             arg("weibull_shape", weibull_shape, default=1.0), arg("downtime_min", downtime_min, default=0.0)]
    names = dict(_WASTE_NAMES, runs="runs", seed="seed", weibull_shape="weibull_shape")

    def screen(work, deadline, T, C, M, R, W, s, n, seed_, shape, Dn):
        return _merge(_per_cell(deadline < work, lambda d, w: error_text(
            "deadline_h", f"must be >= useful_training_h = {w:g} h: the job needs that much compute even with no saves "
            "and no failures", show(d)), deadline, work), _downtime_over(R, Dn))

    def compute(work, deadline, T, C, M, R_whole, W, s, n, seed_, shape, Dn):
        R = exposed(R_whole, Dn)
        # one simulation per distinct case, in the order of the cases' first cells (the caps are
        # deterministic); the cells of a case share it
        out = np.full(work.shape, np.nan)
        refused = np.full(work.shape, None, dtype=object)
        keys = np.column_stack([work * 60.0, T, C, M, R, W, s, n, seed_, shape, Dn]) + 0.0  # -0.0 is 0.0
        _, first, case = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        case = case.reshape(-1)
        by_case = np.argsort(case, kind="stable")
        bounds = np.searchsorted(case[by_case], np.arange(first.size + 1))
        used = cases = 0
        for c in np.argsort(first, kind="stable").tolist():
            cells = by_case[bounds[c]:bounds[c + 1]]
            i = int(first[c])
            key = (float(keys[i, 0]), float(T[i]), float(C[i]), float(M[i]), float(R[i]), float(W[i]), float(s[i]),
                   int(n[i]), int(seed_[i]), float(shape[i]), float(Dn[i]))
            if used + key[7] > MAX_RUNS_PER_CALL:
                refused[cells] = error_text("runs", f"this call already simulates {used:,} runs; the limit is "
                                            f"{MAX_RUNS_PER_CALL:,} per call: split the range or lower runs", show(key[7]))
                continue
            if cases >= MAX_CASES_PER_CALL:
                refused[cells] = (f"{ERROR_PREFIX} range: this call already simulates {cases:,} distinct cases; the "
                                  f"limit is {MAX_CASES_PER_CALL:,} per call: split the range")
                continue
            used, cases = used + key[7], cases + 1
            try:
                walls = _simulated_walls(*key)
            except ValueError as exc:  # the engine refuses this case (e.g. a write that is never durable)
                refused[cells] = engine_message(exc, names)
                continue
            below = np.searchsorted(np.sort(walls), deadline[cells] * 60.0, side="right")
            out[cells] = below / walls.size
        return out, refused

    return elementwise(specs, compute, names, screen)
