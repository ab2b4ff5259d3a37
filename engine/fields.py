"""The field registry: every input quantity and every rule of ckptplan, declared once.

A :class:`Rule` is what a valid value looks like, written once for every place that checks it:

* ``predicate``: the numpy test (a float array in, a bool mask of valid values out) the engine,
  the scenario tables, the batch reader, the workbook reader and the Excel functions apply;
* ``text``: the human rule, completing "must be ..." in every error message;
* ``excel``: the same condition as an Excel formula over a cell (``{x}``), used by the workbook's
  "Input check" cell and by its data validation where no typed validation is exact;
* ``validation``: the Excel data-validation kind (openpyxl ``DataValidation`` keywords) that
  accepts exactly the values the predicate accepts.

A :class:`Field` is one input of a scenario: its one name (the Python keyword, the table column,
the ``--option`` of the command line, the Excel function argument, the workbook's defined name and
the JSON key: ``checkpoint_stall_min`` everywhere), its unit, label, rule and default. The
:class:`~ckptplan.engine.scenario.Scenario` record, the table validator, the workbook's Inputs sheet
and its data validation, the workbook reader, the Excel functions' argument checks, the batch
reader and the command-line options are all generated from :data:`FIELDS`, so a new field or a
changed rule is one edit here.

This module imports nothing heavy (no numpy at import time): the command line builds its options
from it before any model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

# ---- defaults and limits every surface shares (the command line reads them before any model loads)
#: simulated runs of a Monte Carlo answer when none is given (standard error of a probability <= 0.5 %)
DEFAULT_RUNS = 10_000
#: seed of a Monte Carlo answer when none is given (same seed, same answer)
DEFAULT_SEED = 0
#: most simulated runs one Excel cell may ask for (keeps one cell from freezing Excel)
MAX_RUNS_PER_CELL = 20_000
#: rows evaluated at a time when a batch streams to its output
DEFAULT_CHUNK_ROWS = 200_000
#: most rows a sweep may have unless the caller raises the limit
MAX_SWEEP_ROWS = 5_000_000
#: data rows an Excel sheet holds (1,048,576 rows less the header)
EXCEL_MAX_DATA_ROWS = 1_048_576 - 1


@dataclass(frozen=True)
class Rule:
    """What a valid value is, once for every surface (see the module notes)."""

    key: str
    text: str                                   # completes "must be ...": "> 0", "a whole number >= 1"
    predicate: Callable[[Any], Any]             # float array -> bool mask of valid values (finite input)
    excel: str                                  # Excel condition, TRUE for a valid value; {x} = the cell
    validation: dict[str, str] = field(default_factory=dict)  # Excel data validation; {x} = the first cell

    @property
    def message(self) -> str:
        """The rule as an error message says it: ``must be > 0``."""
        return f"must be {self.text}"

    @property
    def noun(self) -> str:
        """The rule as a noun phrase for labels and prompts: ``a number > 0``."""
        return self.text if self.text[0].isalpha() else f"a number {self.text}"

    def excel_condition(self, ref: str) -> str:
        """The Excel condition over ``ref`` (a cell or a defined name)."""
        return self.excel.format(x=ref)

    def data_validation(self, ref: str) -> dict[str, str]:
        """Keywords for openpyxl's ``DataValidation`` over a range whose first cell is ``ref``."""
        return {k: v.format(x=ref) for k, v in self.validation.items()}


def _whole(a: Any) -> Any:
    # a % 1 == 0 without the slow float modulo (same answer for every float: False for inf and NaN)
    import numpy as np  # loaded by the caller already: this module imports nothing heavy at import time

    return (np.floor(a) == a) & np.isfinite(a)


RULES: dict[str, Rule] = {r.key: r for r in (
    Rule("positive", "> 0", lambda a: a > 0, "{x}>0",
         dict(type="decimal", operator="greaterThan", formula1="0")),
    Rule("nonnegative", ">= 0", lambda a: a >= 0, "{x}>=0",
         dict(type="decimal", operator="greaterThanOrEqual", formula1="0")),
    # no typed validation holds [0, 1) exactly ("between" includes its upper end): a custom formula
    Rule("fraction", "a fraction in [0, 1)", lambda a: (a >= 0) & (a < 1), "AND({x}>=0,{x}<1)",
         dict(type="custom", formula1="AND(ISNUMBER({x}),{x}>=0,{x}<1)")),
    Rule("count", "a whole number >= 1", lambda a: (a >= 1) & _whole(a), "AND({x}>=1,{x}=INT({x}))",
         dict(type="whole", operator="greaterThanOrEqual", formula1="1")),
    Rule("seed", "a whole number >= 0", lambda a: (a >= 0) & _whole(a) & (a < 2.0**63),
         "AND({x}>=0,{x}=INT({x}),{x}<2^63)",
         dict(type="custom", formula1="AND(ISNUMBER({x}),{x}>=0,{x}=INT({x}),{x}<2^63)")),
    Rule("runs_per_cell", f"a whole number from 2 to {MAX_RUNS_PER_CELL:,} (the cap keeps one cell from freezing Excel)",
         lambda a: (a >= 2) & (a <= MAX_RUNS_PER_CELL) & _whole(a),
         f"AND({{x}}>=2,{{x}}<={MAX_RUNS_PER_CELL},{{x}}=INT({{x}}))",
         dict(type="whole", operator="between", formula1="2", formula2=str(MAX_RUNS_PER_CELL))),
    Rule("whole", "a whole number >= 0", lambda a: (a >= 0) & _whole(a) & (a < 2.0**53), "AND({x}>=0,{x}=INT({x}))",
         dict(type="whole", operator="greaterThanOrEqual", formula1="0")),
    Rule("share", "a fraction in [0, 1]", lambda a: (a >= 0) & (a <= 1), "AND({x}>=0,{x}<=1)",
         dict(type="decimal", operator="between", formula1="0", formula2="1")),
    Rule("any", "a number", lambda a: a == a, "ISNUMBER({x})"),
    Rule("flag", "0 or 1", lambda a: (a == 0) | (a == 1), "OR({x}=0,{x}=1)",
         dict(type="whole", operator="between", formula1="0", formula2="1")),
    # ckptplan.engine.weibull_schedule.MIN_SHAPE to 1: a failure intensity that falls from the job's start
    Rule("weibull_shape", "a number from 0.2 to 1", lambda a: (a >= 0.2) & (a <= 1), "AND({x}>=0.2,{x}<=1)",
         dict(type="decimal", operator="between", formula1="0.2", formula2="1")),
)}


@dataclass(frozen=True)
class Field:
    """One named quantity: the same name on every surface (see the module notes)."""

    name: str
    unit: str
    label: str
    rule: str                      # key of RULES
    required: bool = False
    default: float | None = None   # None: optional, absent means "not given"
    short: str | None = None       # a command-line alias (the paper's symbol); --help shows both
    sheet_name: str | None = None  # the workbook's defined name, only where ``name`` is also a derived figure's

    @property
    def option(self) -> str:
        """The command-line option: ``--checkpoint-stall-min``."""
        return "--" + self.name.replace("_", "-")

    @property
    def integer(self) -> bool:
        """Whole numbers only (nodes, GPUs per node)."""
        return self.rule in ("count", "whole")

    @property
    def defined_name(self) -> str:
        """The workbook's defined name of the input cell."""
        return self.sheet_name or self.name

    @property
    def check(self) -> Rule:
        return RULES[self.rule]


#: The scenario's numeric inputs, in the order the workbook's Inputs sheet lists them.
FIELDS: tuple[Field, ...] = (
    Field("checkpoint_stall_min", "min", "Checkpoint stall seen by the training step (blocking part of a save)",
          "nonnegative", required=True, short="-C"),
    Field("async_write_min", "min", "Background write time until the checkpoint is durable (0 = synchronous save)",
          "nonnegative", default=0.0, short="-W"),
    Field("async_slowdown_fraction", "fraction", "Share of training throughput lost while the background write runs",
          "fraction", default=0.0),
    Field("restart_min", "min", "Restart time after each failure (reallocate, download, restart)", "nonnegative",
          default=0.0, short="-R"),
    Field("downtime_min", "min", "Part of restart_min spent waiting for a node, when the job cannot fail (empty = 0, "
          "or the design's reallocation)", "nonnegative", default=0.0),
    Field("node_mtbf_h", "h", "Mean time between failures of one node (independent failures)", "positive"),
    Field("nodes", "nodes", "Nodes in the job", "count", required=True),
    Field("gpus_per_node", "GPUs", "GPUs per node", "count", default=8),
    Field("nonfatal_share", "fraction", "Share of node failures the job survives", "fraction", default=0.0),
    Field("job_mtbf_h", "h", "Job MTBF override, e.g. fitted from a log (empty = from nodes and domains)", "positive",
          sheet_name="job_mtbf_override_h"),
    Field("useful_training_h", "h", "Useful training compute needed (wall hours with no saves or failures)",
          "positive", required=True),
    Field("price_per_gpu_hour", "per GPU-h", "Price per GPU-hour", "nonnegative", required=True),
    Field("interval_min", "min", "Chosen compute interval between saves (empty = exact optimum)", "positive"),
    Field("deadline_h", "h", "Deadline for the run, counted from its start", "positive"),
    Field("runs_per_month", "runs", "Runs per month for monthly figures (empty = back-to-back runs)", "positive"),
    # preemptible (spot) capacity (ckptplan.engine.preemption); empty = on-demand capacity, never preempted
    Field("preemptions_per_h", "per h", "Preemptions of the job per hour it holds its GPUs (spot capacity; "
          "empty = none)", "nonnegative"),
    # a node's rate: the job's is nodes x it, any node's preemption stopping the job (ckptplan.engine.spot_rates)
    Field("preemptions_per_node_h", "per node-h", "Preemptions of one node per hour held (the job's = nodes x this; "
          "empty = none)", "nonnegative"),
    Field("preemption_notice_min", "min", "Notice before a preemption (a save that fits is taken on notice; "
          "empty = none)", "nonnegative"),
    Field("capacity_wait_min", "min", "Wait for capacity after a preemption (no GPUs held; empty = none)",
          "nonnegative"),
    Field("spot_price_per_gpu_hour", "per GPU-h", "Price per GPU-hour of the preemptible capacity the job runs on "
          "(empty = price_per_gpu_hour; that stays the on-demand price)", "nonnegative"),
    # elastic continuation (ckptplan.engine.elastic); read only when on_node_loss = "continue"
    Field("nodes_per_replica", "nodes", "Nodes of one replica, the smallest group that can drop out while the "
          "others train on (empty = all nodes: one replica)", "count"),
    Field("min_replicas", "replicas", "Fewest replicas the job trains on; a failure at this floor stops it and it "
          "restarts (empty = all replicas: every failure stops the job)", "count"),
    Field("shrink_keeps_progress", "0/1", "1 = replicas kept in sync and healed from peers: progress since the last "
          "checkpoint survives a shrink; 0 = a shrink rolls back to the last checkpoint", "flag", default=1),
    Field("shrink_pause_min", "min", "Pause of the whole job to drop a failed replica and go on with fewer",
          "nonnegative", default=0.0),
    Field("regrow_pause_min", "min", "Pause of the whole job to take a replica back once its node is back",
          "nonnegative", default=0.0),
    # a failure intensity that falls from the job's start (ckptplan.engine.weibull_schedule); empty = constant rate
    Field("weibull_shape_from_start", "", "Weibull shape k of the failure intensity from the job's start, never reset "
          "by a failure (< 1: failures cluster early; empty or 1 = constant rate): plans a schedule",
          "weibull_shape"),
)
#: the elastic fields (:mod:`ckptplan.engine.elastic`): the workbook's live formulas plan a job that stops at every
#: failure, so its Inputs sheet holds them in a block of their own, read by the elastic plan's engine values (the
#: Plan sheet's top rows, the Compare sheet's recovery strategies: :mod:`ckptplan.workbook.elastic_block`)
ELASTIC_FIELD_NAMES = ("nodes_per_replica", "min_replicas", "shrink_keeps_progress", "shrink_pause_min",
                       "regrow_pause_min")
#: fields the workbook's sheets cannot plan (they plan a constant failure rate): left off the Inputs sheet, and a
#: scenario that uses them is refused by the workbook by name
NOT_ON_SHEETS = ("weibull_shape_from_start",)
#: what a job does when a node fails (the text field ``on_node_loss``)
ON_NODE_LOSS = ("restart", "continue")
#: the output columns of an elastic plan (:mod:`ckptplan.engine.elastic_table`), the same names in a batch row,
#: ``plan --json`` and ``compare --json``
ELASTIC_OUTPUT_FIELDS: tuple[Field, ...] = (
    Field("replicas", "replicas", "Replicas in the job: nodes / nodes_per_replica", "count"),
    Field("mean_replicas_running", "replicas", "Replicas running on average while the job computes or saves",
          "nonnegative"),
    Field("shrunk_h", "h", "Hours the job computes or saves with a replica out", "nonnegative"),
    Field("expected_shrinks", "shrinks", "Failures per run the job trains on through (shrinks)", "nonnegative"),
    Field("expected_stops", "stops", "Failures per run that stop the job and roll it back (at the floor; every "
          "failure outside a restart when it restarts)", "nonnegative"),
)
FIELD_BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}

#: the recovery strategies a batch prices side by side (``ckptplan batch --strategies``), as column prefixes, in
#: the order of :data:`ckptplan.engine.strategies.STRATEGIES`: wait for a node, hot spares, elastic, elastic + spares
STRATEGY_KEYS = ("wait", "spares", "elastic", "elastic_spares")
#: each strategy's columns, ``{key}_{name}`` (:func:`strategy_field`); the last three only with a deadline
STRATEGY_FIELDS: tuple[Field, ...] = (
    Field("spares", "nodes", "Hot spare nodes held beside the job", "whole"),
    Field("interval_min", "min", "Interval between saves (compute time)", "positive"),
    Field("wall_h", "h", "Expected wall hours", "nonnegative"),
    Field("expected_failures", "failures", "Failures per run, every one counted", "nonnegative"),
    Field("expected_stops", "stops", "Failures per run that stop the job and roll it back", "nonnegative"),
    Field("mean_replicas_running", "replicas", "Replicas running on average while the job computes or saves",
          "nonnegative"),
    Field("total_cost", "money", "Everything the plan pays: compute + storage + spares", "nonnegative"),
    Field("cost_per_useful_gpu_hour", "money/GPU-h", "Total cost per useful GPU-hour", "nonnegative"),
    Field("p_finish_by_deadline", "probability", "P(the job finishes by deadline_h)", "share"),
    Field("wall_h_p50", "h", "Median wall hours", "nonnegative"),
    Field("wall_h_p90", "h", "90th percentile of the wall hours", "nonnegative"),
    Field("total_cost_p50", "money", "Median total cost", "nonnegative"),
    Field("total_cost_p90", "money", "90th percentile of the total cost", "nonnegative"),
)


def strategy_field(key: str, part: str) -> Field:
    """The registry entry of batch column ``{key}_{part}`` (``key`` in :data:`STRATEGY_KEYS`, ``part`` a
    :data:`STRATEGY_FIELDS` name)."""
    base = next(f for f in STRATEGY_FIELDS if f.name == part)
    label = {"wait": "Wait for a node", "spares": "Hot spares", "elastic": "Elastic",
             "elastic_spares": "Elastic + spares"}[key]
    return Field(f"{key}_{part}", base.unit, f"{label}: {base.label}", base.rule)

#: the capacity policies a batch prices side by side (``ckptplan batch --capacity``), as column prefixes, in the
#: order of ``compare --json``'s ``capacity.policies`` (keys ``on-demand``, ``spot``, ``fallback``)
CAPACITY_KEYS = ("on_demand", "spot", "fallback")
#: each policy's columns, ``{key}_{name}`` (:func:`capacity_field`), the names of ``compare --json``'s figures
CAPACITY_FIELDS: tuple[Field, ...] = (
    Field("p_finish_by_deadline", "probability", "P(the job finishes by deadline_h), simulated", "share"),
    Field("wall_h_p50", "h", "Median wall hours (waits for capacity included)", "nonnegative"),
    Field("wall_h_p90", "h", "90th percentile of the wall hours", "nonnegative"),
    Field("cost_p50", "money", "Median cost: GPU-hours held x their price (spot or on-demand)", "nonnegative"),
    Field("cost_p90", "money", "90th percentile of the cost", "nonnegative"),
    Field("mean_cost", "money", "Mean cost over the simulated runs", "nonnegative"),
    Field("interval_min", "min", "Interval between saves (compute time) the policy runs at (with failure phases or "
          "a Weibull shape from the start: its schedule's first)", "positive"),
)
#: the fallback policy's own columns, ``fallback_{name}``
CAPACITY_FALLBACK_FIELDS: tuple[Field, ...] = (
    Field("threshold_min", "min", "Move to on-demand when the time left less the work left (at on-demand's expected "
          "overheads) falls below this: the least slack on time as often as on-demand", "nonnegative"),
    Field("target_p_finish", "probability", "The chance of finishing by the deadline the threshold is searched for "
          "(on-demand's)", "share"),
)
#: the comparison's text columns: name -> (label, "" when the row is not compared)
CAPACITY_TEXT_FIELDS: dict[str, str] = {
    "cheapest_capacity_on_time": "The policy (on_demand, spot, fallback) of the lowest mean_cost among those on time "
                                 "at least as often as on-demand",
    "capacity_note": "Why a row's capacity columns are blank, or what its comparison assumed",
}


def capacity_field(key: str, part: str) -> Field:
    """The registry entry of batch column ``{key}_{part}`` (``key`` in :data:`CAPACITY_KEYS`, ``part`` a
    :data:`CAPACITY_FIELDS` name, or for ``fallback`` a :data:`CAPACITY_FALLBACK_FIELDS` one)."""
    parts = CAPACITY_FIELDS + (CAPACITY_FALLBACK_FIELDS if key == "fallback" else ())
    base = next(f for f in parts if f.name == part)
    label = {"on_demand": "All on-demand", "spot": "All spot", "fallback": "Spot, on-demand fallback"}[key]
    return Field(f"{key}_{part}", base.unit, f"{label}: {base.label}", base.rule)


#: The storage and recovery setup (all optional; :mod:`ckptplan.engine.setup`): what a checkpoint
#: holds and what it is written to, the parts of a restart, the spare pool and the price of storage.
#: A stall or restart the scenario states itself (measured by the probe or fitted from a log)
#: overrides the one derived from these.
SETUP_FIELDS: tuple[Field, ...] = (
    Field("parameters_b", "billion", "Model parameters", "positive"),
    Field("bytes_per_parameter", "B/param", "Bytes per parameter of the restorable state "
          "(14 = bf16 weights + fp32 master weights + two fp32 Adam moments)", "positive", default=14.0),
    Field("extra_state_gb", "GB", "Extra state in every checkpoint (data loader, RNG)", "nonnegative", default=0.0),
    Field("writers", "writers", "Writers saving shards in parallel (empty = nodes)", "count"),
    Field("write_gb_s_per_writer", "GB/s", "Write bandwidth of one writer", "positive"),
    Field("aggregate_write_gb_s", "GB/s", "Storage system's aggregate write bandwidth (empty = no shared limit)",
          "positive"),
    Field("read_gb_s_per_writer", "GB/s", "Read bandwidth of one reader at restore (empty = the write figure)",
          "positive"),
    Field("aggregate_read_gb_s", "GB/s", "Storage system's aggregate read bandwidth (empty = the write figure)",
          "positive"),
    Field("d2h_gb_s_per_writer", "GB/s", "Device-to-host copy bandwidth per writer of an async save "
          "(empty = synchronous save)", "positive"),
    Field("detection_min", "min", "Restart part: detecting the failure", "nonnegative"),
    Field("reallocation_min", "min", "Restart part: getting a replacement node (empty with repair_h = spare pool)",
          "nonnegative"),
    Field("startup_min", "min", "Restart part: job and container start", "nonnegative"),
    Field("init_min", "min", "Restart part: communicator initialisation, fixed part", "nonnegative"),
    Field("init_per_1000_nodes_min", "min", "Restart part: communicator initialisation per 1,000 nodes",
          "nonnegative"),
    Field("load_min", "min", "Restart part: loading the checkpoint (empty = size / read bandwidth)", "nonnegative"),
    Field("warmup_min", "min", "Restart part: warm-up until full speed", "nonnegative"),
    Field("spares", "nodes", "Hot spare nodes held beside the job (billed while the job runs)", "whole"),
    Field("repair_h", "h", "Time a failed node takes to come back into the pool", "positive"),
    Field("swap_min", "min", "Time to swap in a free spare", "nonnegative", default=0.0),
    Field("replacement_share", "fraction", "Share of failures that need a node replaced", "share", default=1.0),
    Field("price_per_gb_month", "per GB-month", "Price of checkpoint storage per GB-month (single-level saves)",
          "nonnegative", default=0.0),
    Field("retention", "copies", "Checkpoints kept (the latest k; single-level saves)", "count", default=1),
)
SETUP_FIELD_BY_NAME: dict[str, Field] = {f.name: f for f in SETUP_FIELDS}

#: keys a ``[[tiers]]`` table may hold (``name``, ``every`` and ``survives`` are required; the save
#: and restore times are given or derived from the checkpoint size and the tier's bandwidths)
TIER_KEYS = ("name", "every", "survives", "checkpoint_stall_min", "restore_min", "write_gb_s_per_writer",
             "aggregate_write_gb_s", "read_gb_s_per_writer", "aggregate_read_gb_s", "retention", "copies",
             "price_per_gb_month", "restore_failure_probability")

#: a ``[[tiers]]`` table's numbers (the keys of :data:`TIER_KEYS` besides ``name`` and ``survives``): unit, meaning,
#: rule; an absent one takes its default (None: derived, see :mod:`ckptplan.engine.tiers.table`)
TIER_FIELDS: tuple[Field, ...] = (
    Field("every", "saves", "The tier takes every k-th save (1 for the first tier; a multiple of the previous tier's)",
          "count"),
    Field("checkpoint_stall_min", "min", "Stall the tier adds to a save (empty = size / write bandwidth)",
          "nonnegative"),
    Field("restore_min", "min", "Time to load the tier's copy (empty = size / read bandwidth)", "nonnegative"),
    Field("write_gb_s_per_writer", "GB/s", "Write bandwidth per writer to the tier", "positive"),
    Field("aggregate_write_gb_s", "GB/s", "Aggregate write bandwidth of the tier", "positive"),
    Field("read_gb_s_per_writer", "GB/s", "Read bandwidth per reader (empty = the write's)", "positive"),
    Field("aggregate_read_gb_s", "GB/s", "Aggregate read bandwidth (empty = the write's)", "positive"),
    Field("retention", "checkpoints", "Checkpoints the tier keeps (the latest k)", "count", default=1),
    Field("copies", "replicas", "Replicas of each checkpoint (e.g. 2: one more on a peer node); billed, and a "
          "restore fails only when every replica does (p ** copies, replicas independent)", "count", default=1),
    Field("price_per_gb_month", "per GB-month", "Price of the tier's storage per GB-month", "nonnegative",
          default=0.0),
    Field("restore_failure_probability", "probability", "Chance that restoring one replica of the tier's copy fails "
          "(corrupt or incomplete); the restore then falls back to the next tier surviving the failure, or to the "
          "job's start (all progress lost)", "fraction", default=0.0),
)

#: The scenario's text fields: name -> (label, default).
TEXT_FIELDS: dict[str, tuple[str, str | None]] = {
    "name": ("Scenario name", None),
    "description": ("What the scenario describes", ""),
    "source": ("Where its figures come from", ""),
    "currency": ("Currency of the price and of every money figure", "USD"),
    "failure_rate_source": ("Published fleet failure rate giving node_mtbf_h (see `ckptplan failure-rates`; "
                            "empty = node_mtbf_h as given)", ""),
    "preemption_rate_source": ("Published spot interruption band giving preemptions_per_node_h (see `ckptplan "
                               "preemption-rates`; empty = as given)", ""),
    "on_node_loss": ("What the job does when a node fails: restart (stop, roll back, restart) or continue (train on "
                     "fewer replicas while the node comes back; ckptplan.engine.elastic)", "restart"),
}

#: A correlated failure domain's numbers; a table holds domain ``i`` as ``domain{i}_{name}`` columns
#: (and ``domain{i}_name`` text). The workbook offers :data:`DOMAIN_SLOTS` domains.
DOMAIN_FIELDS: tuple[Field, ...] = (
    Field("mtbf_h", "h", "MTBF of one domain (empty = no such domain)", "positive"),
    Field("nodes_per_domain", "nodes", "nodes per domain", "count"),
)
DOMAIN_SLOTS = 3


def domain_field(i: int, part: str) -> Field:
    """The registry entry of table column ``domain{i}_{part}`` (``part``: mtbf_h, nodes_per_domain)."""
    base = next(f for f in DOMAIN_FIELDS if f.name == part)
    return Field(f"domain{i}_{part}", base.unit, f"Correlated domain {i}: {base.label}", base.rule)


#: A ``[[failure_phases]]`` table's numbers (:mod:`ckptplan.engine.phases`): from ``start_h`` on, the job's failure
#: rate is ``rate_factor`` times the constant-rate model's; a table holds phase ``i`` as ``phase{i}_{name}`` columns,
#: phases numbered from 1 in order of their start. ``interval_min`` is optional (the others are required): the planner
#: states the interval of that phase (save every this many minutes of compute started in it), fixed while the plan
#: optimises the phases that state none; it wins over the scenario-wide ``interval_min`` for its phase.
PHASE_FIELDS: tuple[Field, ...] = (
    Field("start_h", "h", "Start of a failure phase, wall hours from the job's start", "nonnegative"),
    Field("rate_factor", "x", "Job failure rate from the phase's start, as a multiple of the constant-rate model's",
          "positive"),
    Field("interval_min", "min", "Save every: the compute interval the planner states for the phase (blank: optimised)",
          "positive"),
)
#: the :data:`PHASE_FIELDS` a phase must give (``interval_min`` is optional)
PHASE_REQUIRED: tuple[str, ...] = ("start_h", "rate_factor")


def phase_field(i: int, part: str) -> Field:
    """The registry entry of table column ``phase{i}_{part}`` (``part``: start_h, rate_factor, interval_min)."""
    base = next(f for f in PHASE_FIELDS if f.name == part)
    return Field(f"phase{i}_{part}", base.unit, f"Failure phase {i}: {base.label}", base.rule)


#: Named quantities that are arguments of the Excel functions (and engine functions) without being
#: scenario inputs: same name, unit and rule on every surface.
QUANTITIES: tuple[Field, ...] = (
    Field("job_mtbf_min", "min", "Job MTBF (mean time between job-stopping failures)", "positive"),
    Field("effective_stall_min", "min", "Effective stall per save (blocking + throughput lost to the write)",
          "nonnegative"),
    Field("wall_h", "h", "Wall hours the job holds its GPUs", "nonnegative"),
    Field("gpus", "GPUs", "GPUs the job holds (nodes x GPUs per node)", "count"),
    Field("gpu_hours", "GPU-h", "GPU-hours", "nonnegative"),
    Field("runs", "runs", "Simulated runs", "runs_per_cell"),
    Field("seed", "", "Random seed (same seed, same answer)", "seed"),
    Field("checkpoint_size_gb", "GB", "Checkpoint size (CKPT_CHECKPOINT_SIZE_GB)", "nonnegative"),
    Field("share_restored", "fraction", "Share of job failures restored from this tier (its copy is the first "
          "to survive them)", "share"),
    Field("weibull_shape", "", "Weibull shape k of the time between failures (1 = exponential; < 1 clustered)",
          "positive"),
)


#: The money of a plan (outputs, in the scenario's currency), one meaning per name on every surface: the
#: engine's tables (``evaluate``, a batch or sweep row, ``plan_setup``), ``ckptplan plan``/``compare``/
#: ``batch``/``sweep`` and the Excel functions. Each sum is its :data:`COST_PARTS`; a scenario without a
#: storage and recovery setup pays no storage and no spares (both 0), so its total is its compute cost.
COST_FIELDS: tuple[Field, ...] = (
    Field("useful_cost", "money", "GPU time of the useful training x price", "nonnegative"),
    Field("save_cost", "money", "GPU time stalled by saves (and slowed by background writes) x price", "nonnegative"),
    Field("rework_cost", "money", "GPU time redoing the work failures lost x price", "nonnegative"),
    Field("restart_cost", "money", "GPU time spent restarting after failures x price", "nonnegative"),
    Field("compute_cost", "money", "The job's GPU time x price: useful + save + rework + restart", "nonnegative"),
    Field("storage_cost", "money", "Checkpoint storage: copies kept x size x months x price per GB-month (0 without a "
          "setup)", "nonnegative"),
    Field("spare_cost", "money", "Hot spare nodes held beside the job: their GPU-hours x price (0 without a setup)",
          "nonnegative"),
    Field("total_cost", "money", "Everything the plan pays: compute + storage + spares", "nonnegative"),
    Field("cost_per_useful_gpu_hour", "money/GPU-h", "Total cost per useful GPU-hour: total_cost / (GPUs x useful "
          "hours)", "nonnegative"),
)
#: what each money sum is made of (every name a :data:`COST_FIELDS` entry)
COST_PARTS: dict[str, tuple[str, ...]] = {
    "compute_cost": ("useful_cost", "save_cost", "rework_cost", "restart_cost"),
    "total_cost": ("compute_cost", "storage_cost", "spare_cost"),
}


#: The GPU-hours of a plan (outputs), one meaning per name on every surface, as :data:`COST_FIELDS` for money:
#: ``total_gpu_hours`` is every GPU-hour the plan holds (the job's and its hot spares'), ``job_gpu_hours`` the
#: job's alone (its GPUs x the hours it holds them: a preemptible plan holds none while waiting for capacity).
#: Each sum is its :data:`GPU_HOURS_PARTS`; a scenario without spares has ``spare_gpu_hours`` = 0.
GPU_HOURS_FIELDS: tuple[Field, ...] = (
    Field("useful_gpu_hours", "GPU-h", "GPU-hours of the useful training", "nonnegative"),
    Field("save_gpu_hours", "GPU-h", "GPU-hours stalled by saves (and slowed by background writes)", "nonnegative"),
    Field("rework_gpu_hours", "GPU-h", "GPU-hours redoing the work failures lost", "nonnegative"),
    Field("restart_gpu_hours", "GPU-h", "GPU-hours spent restarting after failures", "nonnegative"),
    Field("job_gpu_hours", "GPU-h", "The job's GPU-hours: useful + save + rework + restart (GPUs x hours held)",
          "nonnegative"),
    Field("spare_gpu_hours", "GPU-h", "Hot spare nodes' GPU-hours: spares x GPUs per node x hours held (0 without "
          "spares)", "nonnegative"),
    Field("total_gpu_hours", "GPU-h", "Every GPU-hour the plan holds: job + spares", "nonnegative"),
)
#: what each GPU-hour sum is made of (every name a :data:`GPU_HOURS_FIELDS` entry)
GPU_HOURS_PARTS: dict[str, tuple[str, ...]] = {
    "job_gpu_hours": ("useful_gpu_hours", "save_gpu_hours", "rework_gpu_hours", "restart_gpu_hours"),
    "total_gpu_hours": ("job_gpu_hours", "spare_gpu_hours"),
}


def lookup(name: str) -> Field:
    """The registry entry of a field, a domain column or a named quantity; ``KeyError`` if none."""
    if name in FIELD_BY_NAME:
        return FIELD_BY_NAME[name]
    if name in SETUP_FIELD_BY_NAME:
        return SETUP_FIELD_BY_NAME[name]
    for q in QUANTITIES:
        if q.name == name:
            return q
    if name.startswith("domain"):
        head, _, part = name[len("domain"):].partition("_")
        if head.isdigit() and part in {f.name for f in DOMAIN_FIELDS}:
            return domain_field(int(head), part)
    if name.startswith("phase"):
        head, _, part = name[len("phase"):].partition("_")
        if head.isdigit() and part in {f.name for f in PHASE_FIELDS}:
            return phase_field(int(head), part)
    for key in CAPACITY_KEYS:
        parts = CAPACITY_FIELDS + (CAPACITY_FALLBACK_FIELDS if key == "fallback" else ())
        if name.startswith(key + "_") and name[len(key) + 1:] in {f.name for f in parts}:
            return capacity_field(key, name[len(key) + 1:])
    for key in sorted(STRATEGY_KEYS, key=len, reverse=True):   # elastic_spares_ before elastic_
        if name.startswith(key + "_") and name[len(key) + 1:] in {f.name for f in STRATEGY_FIELDS}:
            return strategy_field(key, name[len(key) + 1:])
    raise KeyError(name)


__all__ = ["CAPACITY_FALLBACK_FIELDS", "CAPACITY_FIELDS", "CAPACITY_KEYS", "CAPACITY_TEXT_FIELDS", "COST_FIELDS", "COST_PARTS", "DEFAULT_CHUNK_ROWS", "DEFAULT_RUNS", "DEFAULT_SEED", "DOMAIN_FIELDS",
           "DOMAIN_SLOTS", "ELASTIC_FIELD_NAMES", "ELASTIC_OUTPUT_FIELDS", "EXCEL_MAX_DATA_ROWS", "FIELDS", "FIELD_BY_NAME", "Field", "GPU_HOURS_FIELDS", "GPU_HOURS_PARTS", "MAX_RUNS_PER_CELL",
           "MAX_SWEEP_ROWS", "ON_NODE_LOSS", "PHASE_FIELDS", "PHASE_REQUIRED", "QUANTITIES", "RULES", "Rule", "SETUP_FIELDS", "SETUP_FIELD_BY_NAME", "STRATEGY_FIELDS", "STRATEGY_KEYS", "TEXT_FIELDS",
           "TIER_FIELDS", "TIER_KEYS", "capacity_field", "domain_field", "lookup", "phase_field", "strategy_field"]
