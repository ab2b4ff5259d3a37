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
from .fields import COST_FIELDS, COST_PARTS, GPU_HOURS_PARTS, SETUP_FIELDS, TIER_KEYS

from .gate import check_number
from .scenario import Scenario, check_mapping
from .spot_rates import scenario_preemptions_per_h
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

#: the setup's fields (table columns of the pipeline, not columns of a plan's row)
SETUP_FIELD_NAMES = frozenset(f.name for f in SETUP_FIELDS)

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

    The pairs are one table (:func:`engine.to_table` and the setups' fields as columns), planned by
    :func:`engine.pipeline.plan_table`, the pipeline every surface calls (a batch row and a plan of the same
    scenario are the same code): the setup derived for every row at once, one :func:`engine.evaluate`, the
    tiered rows of designs of one structure planned and their optima searched together, the money once.
    Tables are per shape of scenario (failure domains, failure phases, preemptions). Each plan is then
    finished from its row (notes, tiers, the best spare count, a tiered plan's Monte Carlo deadline). The
    first pair the engine refuses raises, naming the field.
    """
    checked = [_checked(scenario, setup) for scenario, setup in pairs]
    groups: dict[tuple, list[int]] = {}
    for i, (sc, _) in enumerate(checked):
        groups.setdefault((len(sc.domains), len(sc.failure_phases), bool(scenario_preemptions_per_h(sc))), []).append(i)
    plans: list[Any] = [None] * len(checked)
    for members in groups.values():
        for i, plan in zip(members, _planned_group([checked[i] for i in members])):
            plans[i] = plan
    for plan in plans:
        if isinstance(plan, Exception):
            raise plan
    return plans


def _checked(scenario: Scenario, setup: Any) -> tuple[Scenario, Any]:
    """A pair checked at the boundary: a :class:`Scenario`, a :class:`RecoverySetup` (None: none), and what the
    tiered model cannot plan refused by name."""
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
    return scenario, st


def _pairs_table(checked: list[tuple[Scenario, Any]]) -> tuple[Any, dict[str, np.ndarray]]:
    """The pairs as one scenario table with the setups' fields as columns, and the mask of the derivable
    cells each scenario states (:data:`DERIVED`: a stated value wins over the setup's)."""
    from .scenario import to_table

    table = to_table([sc for sc, _ in checked])
    for f in SETUP_FIELDS:
        values = [getattr(st, f.name) for _, st in checked]
        if any(v is not None for v in values):
            table[f.name] = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    stated = {name: np.array([name in st.stated for _, st in checked], dtype=bool) for name in DERIVED}
    return table, stated


def _stacked_designs(checked: list[tuple[Scenario, Any]]) -> tuple[list, np.ndarray, list]:
    """The tier designs of the pairs: (designs of one structure stacked, :func:`engine.tiers.table.stack_designs`;
    each pair's stacked design, -1 without tiers; each pair's own validated design, None without tiers)."""
    from .tiers.table import design_structure, stack_designs, tier_design

    own = [tier_design(st.tiers, st.failure_classes) if st.tiers else None for _, st in checked]
    shapes: dict[tuple, list[int]] = {}
    for i, d in enumerate(own):
        if d is not None:
            shapes.setdefault(design_structure(d), []).append(i)
    rows = np.full(len(checked), -1)
    stacked = []
    for k, members in enumerate(shapes.values()):
        stacked.append(stack_designs([own[i] for i in members]))
        rows[members] = k
    return stacked, rows, own


def _planned_group(checked: list[tuple[Scenario, Any]]) -> list[Any]:
    """The plans of pairs of one shape (an exception in place of a pair the engine refuses)."""
    from .pipeline import plan_table
    from .scenario import scenarios_job_mtbf_h
    from .validity import model_warnings

    table, stated = _pairs_table(checked)
    try:
        designs, design_rows, own = _stacked_designs(checked)
    except InputError:
        return [_alone(pair) for pair in checked]
    pools = [st.repair_h is not None for _, st in checked]   # the spare pool needs the job's failure rate
    mtbf = np.where(pools, scenarios_job_mtbf_h([sc for sc, _ in checked]), np.nan) if any(pools) else None
    planned = plan_table(table, designs=designs, design_rows=design_rows, stated=stated, extra_columns="keep",
                         setup=True, job_mtbf_h=mtbf, scenarios=[sc for sc, _ in checked])
    # what the model checks read: the validated inputs and the plan (a tiered row's checks its own figures)
    warned = model_warnings({**planned.eff, **planned.res})
    rows = _Rows(planned)
    out: list[Any] = []
    for i, (sc, st) in enumerate(checked):
        errs = planned.problems.by_row.get(i)
        if errs:
            out.append(_refusal(errs[0], sc, planned.table, i))
            continue
        try:
            out.append(_finished(sc, st, own[i], planned, i, rows, tuple(warned[i])))
        except InputError as exc:
            out.append(exc)
    return out


def _alone(pair: tuple[Scenario, Any]) -> Any:
    """A pair's design refused: the pair's own error (each pair's design validated on its own)."""
    from .tiers.table import tier_design

    try:
        if pair[1].tiers:
            tier_design(pair[1].tiers, pair[1].failure_classes)
    except InputError as exc:
        return exc
    return _planned_group([pair])[0]


def _refusal(err: Any, sc: Scenario, table: Any, i: int) -> Exception:
    """A refused pair's error as the engine raises it: the recorded :class:`InputError`, else (a refusal the
    batch records as text) the engine's own, raised again by :func:`engine.evaluate` on the scenario."""
    if isinstance(err, Exception):
        return err
    from .scenario import evaluate

    try:
        evaluate(_derived_scenario(sc, table, i))
    except (ValueError, InputError) as exc:
        return exc
    return InputError("scenario", sc.name, str(err))


def _derived_scenario(sc: Scenario, table: Any, i: int, checked: bool = False) -> Scenario:
    """The scenario with the stall, write, restart and downtime the pipeline filled in (row ``i`` of ``table``, a
    DataFrame or the row's values); ``checked``: the pipeline validated the row (not checked again,
    :func:`engine.scenario.validated_copy`)."""
    from .scenario import validated_copy

    changes = {}
    for name in DERIVED:
        if isinstance(table, Mapping):
            v = table.get(name)
        else:
            v = table[name].iloc[i] if name in table.columns else None
        if v is not None and v == v and float(v) != getattr(sc, name):
            changes[name] = float(v)
    if not changes:
        return sc
    return validated_copy(sc, **changes) if checked else sc.replace(**changes)


def _value(cols: Mapping[str, Any], key: str, i: int) -> float | None:
    v = float(cols[key][i])
    return None if math.isnan(v) else v


def _notes(sc: Scenario, st: Any, sizes: dict[str, Any], parts: dict[str, float], spare: dict[str, Any]) -> list[str]:
    """What the plan says about a stated value that overrides a derived one."""
    notes = []
    for name, key in (("checkpoint_stall_min", "derived_checkpoint_stall_min"),
                      ("async_write_min", "derived_async_write_min")):
        if sizes[key] is not None and name in st.stated:
            notes.append(f"{name} = {getattr(sc, name):g} is stated: it overrides the {duration(sizes[key])} "
                         "derived from the checkpoint size and bandwidth")
    if parts and st.reallocation_min is not None and spare["pool_reallocation_min"] is not None:
        share = st.replacement_share if st.replacement_share is not None else 1.0
        notes.append(f"reallocation_min = {st.reallocation_min:g} is stated: it overrides the spare pool's "
                     f"expected {duration(share * spare['pool_reallocation_min'])}")
    if parts and "restart_min" in st.stated:
        notes.append(f"restart_min = {sc.restart_min:g} is stated: it overrides the pipeline's "
                     f"{duration(sum(parts.values()))}")
    if st.tiers and not parts:
        notes.append(f"restart_min = {sc.restart_min:g} is taken as the restart without the checkpoint load; "
                     "each tier adds its own restore time")
    return notes


def _finished(sc: Scenario, st: Any, design: Any, planned: Any, i: int, rows: Any,
              warnings: tuple[str, ...]) -> SetupPlan:
    """The plan of pair ``i`` from its row of the planned table (``rows``: the rows as :func:`engine.evaluate`
    lays them out; ``warnings``: its model checks): single-level or tiered, then the money."""
    cols, res = planned.setup["setup"], planned.res
    sizes = {k: _value(cols, k, i) for k in ("checkpoint_size_gb", "derived_checkpoint_stall_min",
                                             "derived_async_write_min", "derived_restore_min")}
    parts = {p: _value(cols, f"part_{p}", i) or 0.0 for p in PARTS} \
        if not math.isnan(cols["restart_pipeline_min"][i]) else {}
    spare = {"spares": st.spares or 0, **{k: _value(cols, k, i) for k in POOL_FIGURES}}
    row = rows.values(i, tiered=design is not None)
    base = _derived_scenario(sc, row, i, checked=True)
    notes = _notes(base, st, sizes, parts, spare)
    if design is not None:
        figures, tiers = _tiered(base, design, res, i)
    else:
        figures, tiers = _single(base, st, row, sizes, parts)
        tiers[0]["storage_cost"] = float(res["storage_cost"][i])
    figures.update(_money(base, st, figures, res, i, sizes, spare))
    figures.update(_best_spares(base, st, parts, figures, notes, tiered=design is not None))
    row.update({f.name: figures[f.name] for f in COST_FIELDS})   # the plan's money: total_cost is everything it pays
    row["stall_derived"] = float(res["stall_derived"][i])
    return SetupPlan(base, rows.series(row, i), figures, tuple(tiers), parts, tuple(notes), warnings)


class _Rows:
    """The planned table's rows as :func:`engine.evaluate` gives them: the scenario's columns (the setup's stall,
    write and restart filled in) and the single-level plan's (a tiered plan's row keeps them: its own figures
    are the plan's), then the plan's money and ``stall_derived``; the layout is settled once per table."""

    def __init__(self, planned: Any):
        import pandas as pd

        from .pipeline import is_extra_column
        from .scenario import derived_columns

        self.planned = planned
        table = planned.table
        self.inputs = [c for c in table.columns if c not in SETUP_FIELD_NAMES]
        self.cells = table[self.inputs].to_numpy(dtype=object)
        self.derived = [c for c in derived_columns() if c not in self.inputs] + [
            c for c in planned.res if is_extra_column(c)]
        self.overlap = [c for c in derived_columns() if c in self.inputs]   # job_mtbf_h: the one each row used
        keys = self.inputs + self.derived + [f.name for f in COST_FIELDS] + ["stall_derived"]
        self.index = pd.Index(list(dict.fromkeys(keys)))

    def values(self, i: int, tiered: bool) -> dict[str, Any]:
        src = self.planned.single if tiered else self.planned.res
        out = dict(zip(self.inputs, self.cells[i]))
        out.update({c: src[c][i] for c in self.overlap})
        out.update({c: src[c][i] for c in self.derived if c in src})
        flag = out.get("deadline_approximation_ok")   # evaluate's one yes/no column: a table pass holds it as a number
        if flag is not None and flag == flag:
            out["deadline_approximation_ok"] = bool(flag)
        return out

    def series(self, values: dict[str, Any], i: int) -> Any:
        import pandas as pd

        return pd.Series([values.get(k) for k in self.index], index=self.index, name=i, dtype=object)


def _money(base: Scenario, st: Any, figures: dict[str, Any], res: Mapping[str, Any], i: int, sizes: dict[str, Any],
           spare: dict[str, Any]) -> dict[str, Any]:
    """The plan's figures besides the model's, read from its row: what the setup derives, the restart used, the
    spares, the GPU-hours of job and spares, and the money the pipeline summed (:func:`engine.pipeline.setup_figures`:
    compute by category, storage, spares, ``total_cost``, the cost per useful GPU-hour)."""
    hours = {k: float(res[k][i]) for k in GPU_HOURS_PARTS["total_gpu_hours"] + ("total_gpu_hours",)}
    money = {k: float(res[k][i]) for k in (*COST_PARTS["compute_cost"], "compute_cost", "storage_cost", "total_cost",
                                           "cost_per_useful_gpu_hour")}
    money["spare_cost"] = float(res["spare_cost"][i])
    return {
        **sizes, "restart_min": float(base.restart_min) if not st.tiers else figures["restart_min"],
        "spares": spare["spares"], **{k: spare[k] for k in POOL_FIGURES},
        **hours, **money, "currency": base.currency,
    }


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
        if key in row:
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


def _tiered(base: Scenario, design: Any, res: Mapping[str, Any], i: int) -> tuple[dict[str, Any], list[dict]]:
    """A multi-level plan, read from row ``i`` of the pipeline's tiered pass (:func:`engine.pipeline.tiered_pass`:
    the tiers' exact expectation at the numeric optimum), and its P(finish by the deadline) by the tiered Monte Carlo."""
    from .tiers import Tier

    v = {k: float(a[i]) for k, a in res.items() if k.startswith("tier") or k in (
        "chosen_interval_min", "waste_fraction", "wall_h", "useful_h", "save_h", "rework_h", "restart_h", "gpus",
        "goodput", "expected_failures", "mean_restart_min", "failed_restores", "rollbacks_to_start", "job_mtbf_h",
        "restart_other_min")}
    T, W, s = v["chosen_interval_min"], float(base.async_write_min), float(base.async_slowdown_fraction)
    figures = {
        "name": base.name, "job_mtbf_h": v["job_mtbf_h"], "checkpoint_stall_min": v["tier1_checkpoint_stall_min"],
        "async_write_min": W, "interval_min": T, "waste_fraction": v["waste_fraction"], "wall_h": v["wall_h"],
        "useful_h": v["useful_h"], "save_h": v["save_h"], "rework_h": v["rework_h"], "restart_h": v["restart_h"],
        "gpus": v["gpus"], "goodput": v["goodput"], "expected_failures": v["expected_failures"],
        "restart_min": v["mean_restart_min"], "failed_restores": v["failed_restores"],
        "rollbacks_to_start": v["rollbacks_to_start"],
    }
    tiers = []
    for k, t in enumerate(design.tiers):
        p = f"tier{k + 1}_"
        tiers.append({"name": t["name"], "checkpoint_stall_min": v[p + "checkpoint_stall_min"],
                      "restore_min": v[p + "restore_min"], "every": int(t["every"]), "survives": list(t["survives"]),
                      "retention": t["retention"], "price_per_gb_month": t["price_per_gb_month"], "copies": t["copies"],
                      "restore_failure_probability": t["restore_failure_probability"],
                      "interval_min": v[p + "interval_min"], "restart_min": v[p + "restart_min"],
                      "storage_cost": v[p + "storage_cost"]})
    tier_objs = [Tier(t["name"], t["checkpoint_stall_min"], t["restore_min"], t["every"], tuple(t["survives"]),
                      restore_failure_probability=t["restore_failure_probability"], copies=t["copies"]) for t in tiers]
    figures["p_finish_by_deadline"] = _tiered_deadline(base, T, v["job_mtbf_h"] * 60.0, v["restart_other_min"], W, s,
                                                       tier_objs, design.classes, float(base.downtime_min))
    return figures, tiers



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

