"""The storage and recovery setup of a plan, and what it costs: the design itself as the input.

A :class:`Scenario` says how long a save stalls (``checkpoint_stall_min``) and a restart takes
(``restart_min``). A :class:`RecoverySetup` says what those come from, in the planner's own terms:

* **what a checkpoint holds and where it goes**: ``parameters_b`` x ``bytes_per_parameter`` (+
  ``extra_state_gb``) is the checkpoint size (:func:`engine.storage.checkpoint_size_gb`); written
  by ``writers`` (default: one per node) at ``write_gb_s_per_writer`` each, capped by the storage
  system's ``aggregate_write_gb_s``; an async save blocks only for the device-to-host copy
  (``d2h_gb_s_per_writer``) and writes in the background (:func:`engine.storage.save_times`);
* **checkpoint tiers** (multi-level): ``tiers`` (host memory, local disk, remote store ...), each with
  its own save cost, ``every`` (takes every k-th save), restore time, retention, copies and price
  per GB-month, and the failure ``failure_classes`` (name -> share of job failures) whose failures
  its copy survives (:mod:`engine.tiers`);
* **the restart pipeline**: detection, reallocation, start-up, communicator initialisation (a
  fixed part and a part per 1,000 nodes), checkpoint load and warm-up (:mod:`engine.recovery`);
  with ``repair_h`` the reallocation comes from a pool of ``spares`` hot spare nodes
  (:func:`engine.recovery.expected_reallocation_min`), whose GPU-hours are billed;
* **storage money**: retained copies x size x months x price per GB-month.

Rule of precedence: a stall, background write or restart time the scenario *states* (measured by
``ckptplan probe``, fitted from a log, or typed by the planner) overrides the one derived here;
:attr:`SetupPlan.notes` says so. A setup with no field given leaves the scenario as it is, and a
scenario without tiers is planned exactly as :func:`engine.scenario.evaluate` plans it (same
numbers), with the storage and spare money added.

The plan of a setup (:func:`plan_setup`) gives the per-tier intervals, the waste, wall hours,
GPU-hours (job and spares), the compute cost split (useful / save / rework / restart), storage and
spare cost, the total and the cost per useful GPU-hour, and the chance to finish by the deadline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, make_dataclass, replace
from typing import Any, Mapping

import numpy as np

from .errors import InputError
from .fields import COST_FIELDS, COST_PARTS, SETUP_FIELDS, TIER_KEYS
from .gate import check_number
from .scenario import Scenario, check_mapping
from .spoken import duration

__all__ = ["ONE_TIER_ADVICE", "PLACEHOLDER_STALL_MIN", "POOL_FIGURES", "RecoverySetup", "SetupPlan", "TIERED_PLAN_UNUSED", "TIER_KEYS",
           "check_single_level_keys", "plan_setup", "plan_setups", "setup_from_dict", "setup_keys", "split_setup",
           "with_placeholder_stall"]

#: scenario fields a setup can derive (the scenario's own value wins when it states one); ``downtime_min`` (the
#: restart's wait for a node, which the job cannot fail in) comes with a derived ``restart_min`` only
DERIVED = ("checkpoint_stall_min", "async_write_min", "restart_min", "downtime_min")


#: the stall a scenario record holds until its setup's derived one replaces it (a record needs one;
#: no figure is ever computed from it: :func:`plan_setup` derives the stall)
PLACEHOLDER_STALL_MIN = 1.0


def with_placeholder_stall(fields: dict, setup: Any) -> dict:
    """A scenario file's (or table row's) fields with :data:`PLACEHOLDER_STALL_MIN` where it states no stall and
    its setup derives one (a checkpoint size and a write bandwidth, or tiers carrying their own stalls)."""
    if "checkpoint_stall_min" in fields or not (setup.tiers or setup.parameters_b is not None and (
            setup.write_gb_s_per_writer is not None or setup.aggregate_write_gb_s is not None)):
        return fields
    return {**fields, "checkpoint_stall_min": PLACEHOLDER_STALL_MIN}


#: the restart parts, in pipeline order (``init_per_1000_nodes_min`` is folded into ``init_min``)
PARTS = ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min", "warmup_min")

#: the spare pool's figures a plan reports (:mod:`engine.recovery`; None without a pool): per node-replacing failure
#: the chance a spare is free, the mean wait for a node and its standard deviation (fixed repair times), the
#: time-average nodes in repair and the share of the pool's time the job waits for a node
POOL_FIGURES = ("spare_free_probability", "pool_reallocation_min", "reallocation_sd_min", "mean_nodes_in_repair",
                "pool_waiting_share")

#: runs of the tiered Monte Carlo behind a tiered plan's P(finish by deadline)
DEADLINE_RUNS = 2000


def _post_init(self) -> None:
    for f in SETUP_FIELDS:
        object.__setattr__(self, f.name, check_number(f.name, getattr(self, f.name), f.rule))
    if isinstance(self.tiers, (str, bytes, dict)) or not hasattr(self.tiers, "__iter__"):
        raise InputError("tiers", self.tiers, "must be a list of tier tables")
    tiers = []
    for i, t in enumerate(self.tiers):
        if not isinstance(t, Mapping):
            raise InputError(f"tiers[{i}]", t, "must be a table with name, every and survives")
        unknown = sorted(set(t) - set(TIER_KEYS))
        if unknown:
            raise InputError(f"tiers[{i}] ({t.get('name', '?')})", ", ".join(unknown),
                             f"unknown key; a tier holds {', '.join(TIER_KEYS)}")
        tiers.append(dict(t))
    object.__setattr__(self, "tiers", tuple(tiers))
    classes = self.failure_classes
    if not isinstance(classes, Mapping):
        raise InputError("failure_classes", classes, "must be a table of class name -> share of job failures")
    for name, share in classes.items():
        check_number(f"failure_classes.{name}", share, "share")
    object.__setattr__(self, "failure_classes", dict(classes))
    if self.tiers and not self.failure_classes:
        raise InputError("failure_classes", "{}", "tiers need failure classes: a table of class name -> share of "
                         "job failures, naming what each tier's copy survives")
    if self.failure_classes and not self.tiers:
        raise InputError("tiers", "[]", "failure classes without tiers: give the tiers whose copies survive them")
    object.__setattr__(self, "stated", frozenset(self.stated))


def _setup_class() -> type:
    spec: list[Any] = [(f.name, Any, field(default=f.default)) for f in SETUP_FIELDS]
    spec += [("tiers", tuple, field(default=())), ("failure_classes", Mapping, field(default_factory=dict)),
             ("stated", frozenset, field(default=frozenset()))]
    doc = ("The storage and recovery setup of a plan (see :mod:`ckptplan.engine.setup`); every field optional:\n"
           + "".join(f"\n* ``{f.name}`` ({f.unit}): {f.label}" for f in SETUP_FIELDS)
           + "\n* ``tiers``: ``[[tiers]]`` tables (:data:`TIER_KEYS`)\n* ``failure_classes``: class -> share"
           + "\n* ``stated``: the scenario fields the scenario states itself (they override derived ones)")
    return make_dataclass("RecoverySetup", spec, frozen=True, namespace={
        "__post_init__": _post_init, "__doc__": doc, "__module__": __name__,
        "replace": lambda self, **changes: replace(self, **changes),
        "given": lambda self: bool(self.columns()) or bool(self.tiers), "columns": _columns, "derives": _derives})


def _columns(self: Any) -> dict[str, Any]:
    """The setup's fields as table columns: each one given and not its default -> its value (what a batch
    or sweep over this setup fills on every row)."""
    return {f.name: getattr(self, f.name) for f in SETUP_FIELDS if getattr(self, f.name) not in (None, f.default)}


def _derives(self: Any) -> frozenset[str]:
    """The scenario fields (of :data:`DERIVED`) this setup derives per row: a table over it takes them from
    each row's own setup, not from the base's one value (none when the setup gives nothing)."""
    return frozenset(c for c in DERIVED if c not in self.stated) if self.given() else frozenset()


RecoverySetup = _setup_class()


def setup_keys() -> tuple[str, ...]:
    """Keys of a scenario file that belong to the setup rather than to the scenario record."""
    return tuple(f.name for f in SETUP_FIELDS) + ("tiers", "failure_classes")


def split_setup(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A scenario file's table split into (scenario keys, setup keys)."""
    keys = set(setup_keys())
    check_mapping(data, "scenario")
    check_single_level_keys(data)
    return ({k: v for k, v in data.items() if k not in keys}, {k: v for k, v in data.items() if k in keys})


#: what a single-level plan (no tiers) says to a per-tier field given at the scenario's top level
ONE_TIER_ADVICE = ("a single-level plan is one tier: give it as one [[tiers]] table (every = 1, survives = every "
                   "failure class, e.g. [failure_classes] any = 1.0) with this field; its plan is then the tiered "
                   "model's, which prices a restore that fails (back to the job's start)")


def check_single_level_keys(data: Mapping[str, Any]) -> None:
    """Refuse, by name, a tier's ``restore_failure_probability`` stated on a scenario without tiers (the single-level
    model cannot carry it; :data:`ONE_TIER_ADVICE`)."""
    if "restore_failure_probability" in data:
        raise InputError("restore_failure_probability", data["restore_failure_probability"], ONE_TIER_ADVICE)


def setup_from_dict(data: Mapping[str, Any], stated: Any = (), origin: str = "scenario") -> Any:
    """A :class:`RecoverySetup` from a file's setup keys (``stated``: scenario fields the file states)."""
    check_mapping(data, origin)
    try:
        return RecoverySetup(**{k: v for k, v in data.items()}, stated=frozenset(s for s in stated if s in DERIVED))
    except TypeError as exc:
        raise InputError(origin, str(exc), "unknown setup key") from None


@dataclass(frozen=True)
class SetupPlan:
    """The plan of one scenario with its setup (:func:`plan_setup`); ``to_dict`` is JSON-ready."""

    scenario: Any                  # the scenario with the derived stall, write and restart filled in
    row: Any                       # engine.evaluate's row of that scenario (single-level figures), the plan's money
    figures: dict[str, Any]        # headline figures (see plan_setup)
    tiers: tuple[dict[str, Any], ...] = ()
    restart_parts_min: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()   # where the plan leaves its model's range (engine.validity)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.figures)
        out["tiers"] = [dict(t) for t in self.tiers]
        out["restart_parts_min"] = dict(self.restart_parts_min)
        out["notes"] = list(self.notes)
        out["warnings"] = list(self.warnings)
        return _finite(out)


def _finite(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _derived(sc: Scenario, st: Any, job_mtbf_h: float | None) -> dict[str, Any]:
    """What the setup derives for this scenario, through :mod:`engine.setup_table` (one row): the
    single-level derivation is written once, on columns. None for a figure the setup does not give.

    A bad setup value raises the first problem, naming the field (not a table row).
    """
    import pandas as pd

    from .scenario import RowProblems
    from .setup_table import setup_columns

    row = {"nodes": sc.nodes, "gpus_per_node": sc.gpus_per_node}
    row.update({f.name: getattr(st, f.name) for f in SETUP_FIELDS if getattr(st, f.name) is not None})
    problems = RowProblems(1)
    cols = setup_columns(pd.DataFrame([row]), job_mtbf_h, problems=problems)
    if problems.by_row:
        raise problems.by_row[0][0]
    return {k: (None if np.isnan(v[0]) else float(v[0])) for k, v in cols.items()}


def _restart_parts(st: Any, derived: dict[str, Any], notes: list[str]) -> tuple[dict[str, float], dict[str, Any]]:
    """The restart pipeline's parts (minutes) and the spare pool's figures; empty if no part is given."""
    spare: dict[str, Any] = {"spares": st.spares or 0, **{k: derived[k] for k in POOL_FIGURES}}
    if derived["restart_pipeline_min"] is None:
        return {}, spare
    parts = {p: derived[f"part_{p}"] or 0.0 for p in PARTS}
    if st.reallocation_min is not None and derived["pool_reallocation_min"] is not None:
        share = st.replacement_share if st.replacement_share is not None else 1.0
        notes.append(f"reallocation_min = {st.reallocation_min:g} is stated: it overrides the spare pool's "
                     f"expected {duration(share * derived['pool_reallocation_min'])}")
    return parts, spare


def plan_setup(scenario: Scenario, setup: Any = None) -> SetupPlan:
    """Plan ``scenario`` with its storage and recovery ``setup`` (see the module notes).

    Figures (minutes, hours, GPU-hours, the scenario's currency): ``checkpoint_size_gb``,
    ``checkpoint_stall_min`` / ``async_write_min`` / ``restart_min`` as used (and the derived
    ones), ``job_mtbf_h``, ``interval_min`` (the first tier's compute interval), ``waste_fraction``,
    ``wall_h``, ``useful_h`` / ``save_h`` / ``rework_h`` / ``restart_h``, ``gpus``, ``spares``,
    ``job_gpu_hours``, ``spare_gpu_hours``, ``total_gpu_hours``, ``useful_cost`` / ``save_cost`` /
    ``rework_cost`` / ``restart_cost`` (their sum ``compute_cost``: the job's GPU time), ``storage_cost``,
    ``spare_cost``, ``total_cost`` (everything the plan pays: compute + storage + spares,
    :data:`engine.fields.COST_FIELDS`), ``cost_per_useful_gpu_hour`` (total / useful GPU-hours), ``goodput``,
    ``p_finish_by_deadline``. The plan's ``row`` carries the same money.
    ``tiers``: per tier ``name``, ``every``, ``interval_min``, ``checkpoint_stall_min``,
    ``restore_min``, ``restart_min`` (pipeline with this tier's load), ``retention``, ``copies``,
    ``storage_cost`` (single-level plans list one tier, ``checkpoint``).
    """
    return plan_setups([(scenario, setup)])[0]


def plan_setups(pairs: Any) -> list[SetupPlan]:
    """:func:`plan_setup` of several ``(scenario, setup)`` pairs (a baseline and its designs) in one pass.

    Each pair's derived scenario is settled first; then the scenarios are evaluated together, one
    :func:`engine.evaluate` over a table of them (scenarios of the same shape: failure domains, failure
    phases, preemptions), and each plan is finished from its row. The figures are :func:`plan_setup`'s,
    pair by pair; the first pair the engine refuses raises, naming the field.
    """
    prepared = [_prepared(scenario, setup) for scenario, setup in pairs]
    rows = _evaluated([p[1] for p in prepared])
    return [_finished(*p, row) for p, row in zip(prepared, rows)]


def _prepared(scenario: Scenario, setup: Any) -> tuple:
    """A pair checked and its derived scenario settled: ``(setup, scenario, sizes, parts, spare, notes)``."""
    st = setup if setup is not None else RecoverySetup()
    if not isinstance(scenario, Scenario):
        raise InputError("scenario", type(scenario).__name__, "must be a Scenario")
    if not isinstance(st, RecoverySetup):
        raise InputError("setup", type(st).__name__, "must be a RecoverySetup")
    if st.tiers:
        from .phases import refuse_phases

        refuse_phases(scenario, "the multi-level (tiers) model")
        if scenario.on_node_loss == "continue":
            raise InputError("on_node_loss", "continue", "the multi-level (tiers) model plans a job that stops at "
                             "every failure: plan elastic continuation single-level (leave out the tiers)")
    notes: list[str] = []
    base, sizes, parts, spare = _derived_scenario(scenario, st, notes)
    return st, base, sizes, parts, spare, notes


def _evaluated(scenarios: list[Scenario]) -> list[Any]:
    """:func:`engine.evaluate`'s row of each scenario: one table pass per group of scenarios whose tables have
    the same columns (failure domains, failure phases, preemptions); a group the engine refuses is evaluated
    scenario by scenario, so the error names the field of the first one refused, as a single plan does."""
    from .scenario import evaluate

    groups: dict[tuple, list[int]] = {}
    for i, sc in enumerate(scenarios):
        key = (len(sc.domains), len(sc.failure_phases), bool(sc.preemptions_per_h))
        groups.setdefault(key, []).append(i)
    rows: list[Any] = [None] * len(scenarios)
    for members in groups.values():
        try:
            table = evaluate([scenarios[i] for i in members])
        except ValueError:
            table = None
        for j, i in enumerate(members):
            rows[i] = evaluate(scenarios[i]).iloc[0] if table is None else table.iloc[j]
    return rows


def _finished(st: Any, base: Scenario, sizes: dict[str, Any], parts: dict[str, float], spare: dict[str, Any],
              notes: list[str], row: Any) -> SetupPlan:
    """The plan of a settled pair from its evaluated row: single-level or tiered, then the money."""
    if st.tiers:
        figures, tiers, checked = _tiered(base, st, row, parts, sizes, notes)
    else:
        figures, tiers = _single(base, st, row, sizes, parts)
        checked = {}
        _single_level_bills(tiers, sizes, figures["wall_h"])   # a tiered plan's bills come with its tiers
    figures.update(_money(base, st, figures, tiers, sizes, spare))
    figures.update(_best_spares(base, st, parts, figures, notes, tiered=bool(st.tiers)))
    from .tiers.table import stall_derived

    row = row.copy()   # the plan's money (one meaning per name: total_cost is everything the plan pays)
    for f in COST_FIELDS:
        row[f.name] = figures[f.name]
    # a stall derived from the real checkpoint size was not measured on a small model
    size, derived = (math.nan if sizes[k] is None else sizes[k] for k in ("checkpoint_size_gb",
                                                                          "derived_checkpoint_stall_min"))
    row["stall_derived"] = float(stall_derived(size, derived, "checkpoint_stall_min" in st.stated, st.tiers))
    return SetupPlan(base, row, figures, tuple(tiers), parts, tuple(notes), _warnings(row, checked))


def _derived_scenario(scenario: Scenario, st: Any, notes: list[str]) -> tuple[Scenario, dict[str, Any],
                                                                              dict[str, float], dict[str, Any]]:
    """The scenario with the stall, background write and restart its setup derives (one the scenario states
    wins, and a note says so): (that scenario, what the setup derives, the restart pipeline's parts, the spare
    pool's figures).

    Every derived field is settled first, then the scenario is changed (and checked) once; it is evaluated
    with the others of its pass (:func:`plan_setups`)."""
    from .scenario import scenario_job_mtbf_h

    # the spare pool needs the job's failure rate (the stall and restart do not change it)
    job_mtbf_h = scenario_job_mtbf_h(scenario) if st.repair_h is not None else None
    sizes = _derived(scenario, st, job_mtbf_h)
    changes: dict[str, Any] = {}
    for name, key in (("checkpoint_stall_min", "derived_checkpoint_stall_min"),
                      ("async_write_min", "derived_async_write_min")):
        derived = sizes[key]
        if derived is None:
            continue
        if name in st.stated:
            notes.append(f"{name} = {getattr(scenario, name):g} is stated: it overrides the {duration(derived)} "
                         "derived from the checkpoint size and bandwidth")
        else:
            changes[name] = derived
    parts, spare = _restart_parts(st, sizes, notes)
    if parts:
        pipeline = sum(parts.values())
        if "restart_min" in st.stated:
            notes.append(f"restart_min = {scenario.restart_min:g} is stated: it overrides the pipeline's "
                         f"{duration(pipeline)}")
        else:
            # the wait for a node is downtime: the job holds no full set of nodes, so it cannot fail then
            restart = {"restart_min": pipeline}
            if "downtime_min" not in st.stated:
                restart["downtime_min"] = parts["reallocation_min"]
            changes.update({k: v for k, v in restart.items() if v != getattr(scenario, k)})
    base = scenario.replace(**changes) if changes else scenario
    return base, sizes, parts, spare


def _single_level_bills(tiers: list[dict], sizes: dict[str, Any], wall_h: float) -> None:
    """Each tier's ``storage_cost`` over the plan's months (0 without a checkpoint size), in place; a storage
    price without a checkpoint size is refused."""
    from .storage import months_from_hours, storage_cost

    months = float(months_from_hours(wall_h))
    for t in tiers:
        size = sizes["checkpoint_size_gb"]
        if t["price_per_gb_month"] and size is None:
            raise InputError(f"tiers ({t['name']}).price_per_gb_month", t["price_per_gb_month"],
                             "needs the checkpoint size: give parameters_b")
        t["storage_cost"] = (float(storage_cost(size, t["retention"], t["price_per_gb_month"], months, t["copies"]))
                             if size is not None else 0.0)


def _money(base: Scenario, st: Any, figures: dict[str, Any], tiers: list[dict], sizes: dict[str, Any],
           spare: dict[str, Any]) -> dict[str, Any]:
    """The plan's figures besides the model's: what the setup derives, the restart used, the spares, the
    GPU-hours of job and spares, the money (compute by category, storage, spares, :data:`engine.fields.COST_PARTS`'
    sums) and the cost per useful GPU-hour."""
    spares = spare["spares"]
    wall_h = figures["wall_h"] - figures.get("capacity_wait_h", 0.0)  # no GPUs held while waiting for capacity
    price = base.price_per_gpu_hour
    if base.preemptions_per_h and base.spot_price_per_gpu_hour is not None:  # engine.preemption_table's rule
        price = base.spot_price_per_gpu_hour
    job_gpu_h = figures["gpus"] * wall_h
    spare_gpu_h = spares * base.gpus_per_node * wall_h
    money = {f"{k}_cost": figures[f"{k}_h"] * figures["gpus"] * price for k in ("useful", "save", "rework", "restart")}
    money["storage_cost"] = sum(t["storage_cost"] for t in tiers)
    money["spare_cost"] = spare_gpu_h * price
    for key in ("compute_cost", "total_cost"):   # useful + save + rework + restart; compute + storage + spares
        money[key] = sum(money[k] for k in COST_PARTS[key])
    useful_gpu_h = figures["gpus"] * base.useful_training_h
    return {
        "checkpoint_size_gb": sizes["checkpoint_size_gb"],
        "derived_checkpoint_stall_min": sizes["derived_checkpoint_stall_min"],
        "derived_async_write_min": sizes["derived_async_write_min"],
        "derived_restore_min": sizes["derived_restore_min"],
        "restart_min": float(base.restart_min) if not st.tiers else figures["restart_min"],
        "spares": spares, **{k: spare[k] for k in POOL_FIGURES},
        "job_gpu_hours": job_gpu_h, "spare_gpu_hours": spare_gpu_h, "total_gpu_hours": job_gpu_h + spare_gpu_h,
        **money, "cost_per_useful_gpu_hour": money["total_cost"] / useful_gpu_h, "currency": base.currency,
    }


def _warnings(row: Any, checked: dict[str, Any]) -> tuple[str, ...]:
    """:func:`engine.validity.model_warnings` of the plan; ``checked``: what a tiered plan's checks read instead
    of the single-level row (:func:`engine.tiers.table.checked_figures`), as a tiered batch row's do."""
    from .validity import model_warnings

    check = row.copy()
    for c, v in checked.items():
        check[c] = float(np.asarray(v).reshape(-1)[0])
    return tuple(model_warnings(check.to_frame().T)[0])


def _best_spares(base: Scenario, st: Any, parts: dict[str, float], figures: dict[str, Any],
                 notes: list[str], tiered: bool) -> dict[str, Any]:
    """The number of hot spares with the lowest cost per useful GPU-hour (:func:`engine.recovery.best_spares`).

    Searched over 0 .. max(64, 4 x the spares given) with the single-level exact model at each
    count's optimum interval (the restart without its reallocation is the pipeline's other parts),
    the plan's storage bill scaled to each count's wall hours (a bill per GB-month grows with them);
    only when the spare pool is modelled (``repair_h`` given, reallocation not stated).
    """
    if st.repair_h is None or st.reallocation_min is not None or not parts:
        return {"best_spares": None, "best_spares_cost_per_useful_gpu_hour": None}
    replicas = figures.get("replicas", 1.0)
    if base.on_node_loss == "continue" and base.min_replicas is not None and base.min_replicas < replicas:
        return _best_spares_elastic(base, st, parts, figures, notes)
    from .recovery import best_spares

    top = max(64, 4 * (st.spares or 0))
    best = best_spares(nodes=base.nodes, gpus_per_node=base.gpus_per_node, spares_max=top,
                       node_replacement_rate_per_h=(st.replacement_share if st.replacement_share is not None else 1.0)
                       / figures["job_mtbf_h"], repair_h=st.repair_h, swap_min=st.swap_min or 0.0,
                       restart_other_min=sum(v for k, v in parts.items() if k != "reallocation_min"),
                       useful_training_h=base.useful_training_h, T_min=None,
                       checkpoint_stall_min=float(base.checkpoint_stall_min), job_mtbf_min=figures["job_mtbf_h"] * 60.0,
                       async_write_min=float(base.async_write_min),
                       async_slowdown_fraction=float(base.async_slowdown_fraction),
                       price_per_gpu_hour=float(base.price_per_gpu_hour),
                       replacement_share=st.replacement_share if st.replacement_share is not None else 1.0,
                       storage_cost_per_wall_h=figures["storage_cost"] / figures["wall_h"])
    n = int(best["spares"])
    if n == top:
        notes.append(f"the cheapest spare count is at the top of the range searched ({top}): it may be higher")
    if tiered:
        notes.append("the best spare count is found with the single-level model")
    return {"best_spares": n, "best_spares_cost_per_useful_gpu_hour": float(best["cost_per_useful_gpu_hour"])}


def _best_spares_elastic(base: Scenario, st: Any, parts: dict[str, float], figures: dict[str, Any],
                         notes: list[str]) -> dict[str, Any]:
    """:func:`_best_spares` for an elastic plan: each spare count's wait for a node (the pool,
    :func:`engine.recovery.expected_reallocation_min`) as the replicas' return time, the elastic plan at its
    optimum interval (:mod:`engine.elastic`), the spares' GPU-hours and the storage bill per wall hour added."""
    from .recovery import expected_reallocation_min
    from .scenario import evaluate

    top = max(64, 4 * (st.spares or 0))
    share = st.replacement_share if st.replacement_share is not None else 1.0
    S = np.arange(top + 1, dtype=float)
    wait = share * expected_reallocation_min(share / figures["job_mtbf_h"], st.repair_h, S, st.swap_min or 0.0)
    other = sum(v for k, v in parts.items() if k != "reallocation_min")
    rows = evaluate([base.replace(downtime_min=float(d), restart_min=other + float(d), interval_min=None,
                                  deadline_h=None) for d in wait])     # the mean cost: no deadline simulation
    storage_per_h = figures["storage_cost"] / figures["wall_h"]
    wall = rows["wall_h"].to_numpy()
    cost = rows["compute_cost"].to_numpy() + S * base.gpus_per_node * wall * base.price_per_gpu_hour \
        + storage_per_h * wall
    per_useful = cost / (figures["gpus"] * base.useful_training_h)
    n = int(np.argmin(per_useful))
    if n == top:
        notes.append(f"the cheapest spare count is at the top of the range searched ({top}): it may be higher")
    return {"best_spares": n, "best_spares_cost_per_useful_gpu_hour": float(per_useful[n])}


def _single(base: Scenario, st: Any, row: Any, sizes: dict[str, Any],
            parts: dict[str, float]) -> tuple[dict[str, Any], list[dict]]:
    """A plan without tiers: engine.evaluate's numbers, one implicit tier for the storage bill."""
    keys = ("job_mtbf_h", "waste_fraction", "wall_h", "useful_h", "save_h", "rework_h", "restart_h", "gpus",
            "goodput", "expected_failures")
    figures = {k: float(row[k]) for k in keys}
    figures.update(name=base.name, checkpoint_stall_min=float(base.checkpoint_stall_min),
                   async_write_min=float(base.async_write_min), interval_min=float(row["chosen_interval_min"]),
                   p_finish_by_deadline=float(row["p_finish_by_deadline"]))
    from .elastic_table import ELASTIC_COLUMNS

    for key in ("expected_preemptions", "capacity_wait_h", *ELASTIC_COLUMNS):   # engine.preemption_table, elastic_table
        if key in row.index:
            figures[key] = float(row[key])
    restore = parts.get("load_min") if parts else sizes["derived_restore_min"]
    tier = {"name": "checkpoint", "every": 1, "interval_min": float(row["chosen_interval_min"]),
            "checkpoint_stall_min": float(base.checkpoint_stall_min), "restore_min": restore,
            "restart_min": float(base.restart_min), "retention": st.retention or 1, "copies": 1,
            "price_per_gb_month": st.price_per_gb_month or 0.0}
    return figures, [tier]


TIERED_PLAN_UNUSED: dict[str, str] = {
    "checkpoint_stall_min": "each tier has its own stall",
}
"""Scenario fields a tiered plan (a setup with ``tiers``) does not read, and why: a design that changes one
changes nothing there, and says so (:func:`ckptplan.engine.designs.compare_designs`)."""


def _tiered(base: Scenario, st: Any, row: Any, parts: dict[str, float], sizes: dict[str, Any],
            notes: list[str]) -> tuple[dict[str, Any], list[dict], dict[str, Any]]:
    """A multi-level plan: the tiers' exact expectation at the numeric optimum, through
    :func:`engine.tiers.table.tiered_columns` on one row (the batch's tiered columns are the same code)."""
    from .tiers import Tier
    from .tiers.table import checked_figures, tier_design, tiered_columns

    design = tier_design(st.tiers, st.failure_classes)
    size = sizes["checkpoint_size_gb"]
    # the restart without its load: each class adds the load from the tier it restores from
    other = (sum(v for k, v in parts.items() if k != "load_min") if parts else float(base.restart_min))
    if not parts:
        notes.append(f"restart_min = {base.restart_min:g} is taken as the restart without the checkpoint load; "
                     "each tier adds its own restore time")
    if "restart_min" in st.stated and parts:
        other = float(base.restart_min)
    W, s = float(base.async_write_min), float(base.async_slowdown_fraction)
    cols = tiered_columns(design, size_gb=math.nan if size is None else size, writers=st.writers or base.nodes,
                          job_mtbf_h=float(row["job_mtbf_h"]), restart_other_min=other, async_write_min=W,
                          async_slowdown_fraction=s,
                          interval_min=math.nan if base.interval_min is None else float(base.interval_min),
                          useful_training_h=float(base.useful_training_h), gpus=float(row["gpus"]),
                          price_per_gpu_hour=float(base.price_per_gpu_hour), downtime_min=float(base.downtime_min))
    v = {k: float(a[0]) for k, a in cols.items()}
    T = v["chosen_interval_min"]
    figures = {
        "name": base.name, "job_mtbf_h": float(row["job_mtbf_h"]), "checkpoint_stall_min": v["tier1_checkpoint_stall_min"],
        "async_write_min": W, "interval_min": T, "waste_fraction": v["waste_fraction"], "wall_h": v["wall_h"],
        "useful_h": v["useful_h"], "save_h": v["save_h"], "rework_h": v["rework_h"], "restart_h": v["restart_h"],
        "gpus": v["gpus"], "goodput": v["goodput"], "expected_failures": v["expected_failures"],
        "restart_min": v["mean_restart_min"], "failed_restores": v["failed_restores"],
        "rollbacks_to_start": v["rollbacks_to_start"],
    }
    tiers = []
    for i, t in enumerate(design.tiers):
        k = f"tier{i + 1}_"
        tiers.append({"name": t["name"], "checkpoint_stall_min": v[k + "checkpoint_stall_min"],
                      "restore_min": v[k + "restore_min"], "every": int(t["every"]), "survives": list(t["survives"]),
                      "retention": t["retention"], "price_per_gb_month": t["price_per_gb_month"], "copies": t["copies"],
                      "restore_failure_probability": t["restore_failure_probability"],
                      "interval_min": v[k + "interval_min"], "restart_min": v[k + "restart_min"],
                      "storage_cost": v[k + "storage_cost"]})
    tier_objs = [Tier(t["name"], t["checkpoint_stall_min"], t["restore_min"], t["every"], tuple(t["survives"]),
                      restore_failure_probability=t["restore_failure_probability"], copies=t["copies"]) for t in tiers]
    figures["p_finish_by_deadline"] = _tiered_deadline(base, T, float(row["job_mtbf_h"]) * 60.0, other, W, s, tier_objs,
                                                       design.classes, float(base.downtime_min))
    return figures, tiers, checked_figures(cols)


def _tiered_deadline(base: Scenario, T: float, M: float, R: float, W: float, s: float, tier_objs: Any,
                     classes: Mapping[str, float], D: float = 0.0) -> float:
    """P(finish by the deadline) of a tiered plan, from the tiered Monte Carlo (NaN without a deadline); ``R``
    the restart without the load, ``D`` its downtime part."""
    if base.deadline_h is None:
        return math.nan
    from .montecarlo_tiers import simulate_tiers

    sim = simulate_tiers(base.useful_training_h * 60.0, T, M, max(R - D, 0.0), W, s, tiers=tier_objs, classes=classes,
                         runs=DEADLINE_RUNS, seed=0, D=D)
    return float(np.mean(np.asarray(sim.wall) <= base.deadline_h * 60.0))

