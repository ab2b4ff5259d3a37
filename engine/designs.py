"""A design: a named set of changes on top of a baseline scenario.

A planner compares designs ("storage 4x faster", "twice the nodes for the same training") against
the baseline they are editing, so an alternative is not a frozen copy of a scenario but the
baseline plus its changes: each changed input is either *set to* a value or *scaled by* a factor
of the baseline's value (``checkpoint_stall_min`` x 0.25 for storage four times faster). Inputs the
design does not name follow the baseline, whatever the baseline becomes. The planning workbook's
Compare sheet writes the same rule as live formulas (blank = same as the baseline).

Keys are the registry's field names (:data:`ckptplan.engine.fields.FIELDS`), the correlated
domains' ``domain{i}_mtbf_h`` / ``domain{i}_nodes_per_domain`` and the storage and recovery setup's
fields (:data:`ckptplan.engine.fields.SETUP_FIELDS`). A design may also replace the setup's
checkpoint tiers and failure classes (``tiers``, ``failure_classes``): "add an in-memory tier".
A design that sets a stall, background write or restart time states it (it then overrides the one
the setup derives, :mod:`ckptplan.engine.setup`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import InputError
from .gate import to_float
from .fields import FIELD_BY_NAME, SETUP_FIELD_BY_NAME, lookup
from .reliability import FailureDomain
from .scenario import DOMAIN_COL, Scenario, check_scenario, derived_scenario

__all__ = ["COMPARE_COLUMNS", "Design", "compare_designs", "compared_designs", "default_designs", "design_from_dict", "design_from_scenario", "scenario_values"]


@dataclass(frozen=True)
class Design:
    """``set``: field -> value; ``times``: field -> factor of the baseline's value (set wins)."""

    name: str
    set: Mapping[str, float] = field(default_factory=dict)
    times: Mapping[str, float] = field(default_factory=dict)
    tiers: tuple | None = None                     # replaces the setup's tiers (None: keep them)
    failure_classes: Mapping[str, float] | None = None  # replaces the setup's failure classes

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError("design name", self.name, "must be a non-empty text")
        for what in ("set", "times"):
            if not isinstance(getattr(self, what), Mapping):
                raise InputError(f"design {self.name!r}: {what}", getattr(self, what),
                                 "must be a table of field -> number")
        for key, value in {**self.set, **self.times}.items():
            try:
                lookup(key)
            except (KeyError, TypeError):
                raise InputError(f"design {self.name!r}", key, "is not a scenario field") from None
            if _domain_index(key) == 0:
                raise InputError(f"design {self.name!r}", key, "domains are numbered from 1")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(to_float(value)):
                shown = to_float(value) if isinstance(value, int) and not isinstance(value, bool) else value
                raise InputError(f"design {self.name!r}: {key}", shown, "must be a finite number")
        for key, factor in self.times.items():
            if factor <= 0:
                raise InputError(f"design {self.name!r}: {key}", factor, "a factor must be > 0")

    def describe(self) -> str:
        """The changes in words: ``checkpoint_stall_min x0.25; nodes = 256``."""
        parts = [f"{k} = {v:g}" for k, v in self.set.items()]
        parts += [f"{k} x{v:g}" for k, v in self.times.items() if k not in self.set]
        if self.tiers is not None:
            parts.append("tiers: " + " + ".join(str(t.get("name", "?")) for t in self.tiers))
        return "; ".join(parts) or "no change"

    def apply_setup(self, setup: Any) -> Any:
        """The setup (:class:`ckptplan.engine.setup.RecoverySetup`) with this design's setup changes.

        Scenario fields the design sets among the derivable ones (stall, write, restart) become
        stated, so they override the setup's derived values.
        """
        from .setup import DERIVED

        changes: dict[str, Any] = {}
        for key, factor in self.times.items():
            if key in SETUP_FIELD_BY_NAME and key not in self.set:
                old = getattr(setup, key)
                if old is None:
                    raise InputError(f"design {self.name!r}: {key}", factor,
                                     "scales a setup field the baseline does not give; set it instead")
                changes[key] = old * factor
        changes.update({k: v for k, v in self.set.items() if k in SETUP_FIELD_BY_NAME})
        for key, spec in SETUP_FIELD_BY_NAME.items():
            if key in changes and spec.integer and float(changes[key]).is_integer():
                changes[key] = int(changes[key])
        if self.tiers is not None:
            changes["tiers"] = tuple(self.tiers)
        if self.failure_classes is not None:
            changes["failure_classes"] = dict(self.failure_classes)
        stated = set(setup.stated) | {k for k in list(self.set) + list(self.times) if k in DERIVED}
        try:
            return setup.replace(**changes, stated=frozenset(stated))
        except InputError as exc:
            raise InputError(f"design {self.name!r} ({self.describe()}): {exc.field}", exc.value, exc.rule) from None

    def apply(self, base: Scenario) -> Scenario:
        """The baseline with the changes (validated: a change that breaks a rule raises, naming the field)."""
        values = scenario_values(base)
        for key, factor in self.times.items():
            if key in self.set or key in SETUP_FIELD_BY_NAME:
                continue
            if values.get(key) is None:
                raise InputError(f"design {self.name!r}: {key}", factor,
                                 "scales a field the baseline does not give; set it instead")
            values[key] = values[key] * factor
        values.update({k: v for k, v in self.set.items() if k not in SETUP_FIELD_BY_NAME})
        _keep_downtime_share(values, base, set(self.set) | set(self.times))
        changes: dict[str, Any] = {}
        for name, spec in FIELD_BY_NAME.items():
            v = values.get(name)
            if spec.integer and v is not None and float(v).is_integer():
                v = int(v)
            changes[name] = v
        domains = []
        for i in sorted({_domain_index(k) for k in values} - {None}):  # the indices named, not every one below
            mtbf, per = values.get(f"domain{i}_mtbf_h"), values.get(f"domain{i}_nodes_per_domain")
            if mtbf is None and per is None:
                continue
            if mtbf is None or per is None:
                raise InputError(f"design {self.name!r}: domain{i}", None,
                                 f"give both domain{i}_mtbf_h and domain{i}_nodes_per_domain, or neither")
            old = base.domains[i - 1] if i <= len(base.domains) else None
            domains.append(FailureDomain(old.name if old else f"domain{i}", mtbf,
                                         int(per) if float(per).is_integer() else per))
        try:
            return derived_scenario(base, **changes, domains=tuple(domains), name=self.name)   # the changes checked
        except InputError as exc:
            raise InputError(f"design {self.name!r} ({self.describe()}): {exc.field}", exc.value, exc.rule) from None


def _domain_index(key: str) -> int | None:
    """``i`` of a ``domain{i}_*`` key (None for any other key)."""
    m = DOMAIN_COL.match(key) if isinstance(key, str) else None
    return int(m.group(1)) if m else None


def _keep_downtime_share(values: dict[str, Any], base: Scenario, changed: set[str]) -> None:
    """A design that changes ``restart_min`` but not ``downtime_min`` keeps the downtime's share of the restart
    (a restart twice as fast waits half as long for a node), in place."""
    if "restart_min" in changed and "downtime_min" not in changed and base.downtime_min and base.restart_min:
        values["downtime_min"] = base.downtime_min * (values["restart_min"] / base.restart_min)


def scenario_values(sc: Scenario) -> dict[str, Any]:
    """A scenario's numbers keyed by field name, with domain ``i`` as ``domain{i}_mtbf_h`` and
    ``domain{i}_nodes_per_domain`` (None where not given): the keys a design changes."""
    values = {name: getattr(check_scenario(sc), name) for name in FIELD_BY_NAME}
    for i, dom in enumerate(sc.domains, start=1):
        values[f"domain{i}_mtbf_h"] = dom.mtbf_h
        values[f"domain{i}_nodes_per_domain"] = dom.nodes_per_domain
    return values


def design_from_scenario(base: Scenario, other: Scenario, name: str | None = None) -> Design:
    """The design that turns ``base`` into ``other``: every input that differs, set to ``other``'s value.

    An input ``other`` leaves empty where ``base`` has one cannot be written as a change (a design
    sets values, it does not blank them): refused, naming the input.
    """
    a, b = scenario_values(check_scenario(base, "base")), scenario_values(check_scenario(other, "other"))
    changes = {}
    for key in list(a) + [k for k in b if k not in a]:
        if a.get(key) == b.get(key):
            continue
        if b.get(key) is None:
            raise InputError(f"alternative {other.name!r}: {key}", None,
                             f"is empty where the baseline has {a.get(key)!r}: a design can only set values")
        changes[key] = float(b[key])
    return Design(name or other.name, set=changes)


def default_designs(base: Scenario) -> tuple[Design, ...]:
    """The Compare sheet's starting alternatives: faster storage, twice the nodes, faster restarts."""
    return (
        Design("storage 4x faster", times={"checkpoint_stall_min": 0.25}),
        Design("2x nodes, same training", times={"nodes": 2.0, "useful_training_h": 0.5}),
        Design("restarts 2x faster", times={"restart_min": 0.5}),
    )


def design_from_dict(data: Mapping[str, Any], origin: str = "designs") -> Design:
    """A design from a ``[[designs]]`` table: ``name``, ``set``, ``times``, ``tiers``, ``failure_classes``."""
    if not isinstance(data, Mapping):
        raise InputError(origin, data, "must be a table with name and set, times, tiers or failure_classes")
    known = ("name", "set", "times", "tiers", "failure_classes")
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise InputError(f"{origin} ({data.get('name', '?')})", ", ".join(unknown),
                         f"unknown key; a design holds {', '.join(known)}")
    tiers = data.get("tiers")
    if tiers is not None and (isinstance(tiers, (str, bytes, Mapping)) or not hasattr(tiers, "__iter__")):
        raise InputError(f"{origin} ({data.get('name', '?')}).tiers", tiers, "must be a list of tier tables")
    return Design(data.get("name", ""), set=data.get("set", {}), times=data.get("times", {}),
                  tiers=tuple(tiers) if tiers is not None else None, failure_classes=data.get("failure_classes"))


def _described(design: Design, base: Scenario, sc: Scenario, st: Any, su: Any) -> str:
    """The design's changes in words, with a note for each change the plan cannot see: a field the tiered plan
    does not read (:data:`ckptplan.engine.setup.TIERED_PLAN_UNUSED`), or a change that leaves the value as it was
    (a factor of 0, a value set to the baseline's): such a design ranks at +0 by saying why, never silently."""
    from .setup import TIERED_PLAN_UNUSED

    keys = list(dict.fromkeys(list(design.set) + list(design.times)))
    before, after = scenario_values(base), scenario_values(sc)
    notes = []
    for key in keys:
        if su.tiers and key in TIERED_PLAN_UNUSED:
            notes.append(f"{key} is not used by a tiered plan ({TIERED_PLAN_UNUSED[key]})")
        elif key in SETUP_FIELD_BY_NAME:
            if getattr(st, key) == getattr(su, key):
                notes.append(f"{key} stays {getattr(st, key)!r}: no change")
        elif before.get(key) == after.get(key):
            notes.append(f"{key} stays {before.get(key)!r}: no change")
    return design.describe() + "".join(f" (note: {n})" for n in notes)


#: the columns of :func:`compare_designs`, in order
COMPARE_COLUMNS = ("name", "changes", "interval_min", "tier_intervals", "waste_fraction", "wall_h", "job_gpu_hours",
                   "spare_gpu_hours", "total_gpu_hours", "compute_cost", "storage_cost", "spare_cost", "total_cost", "cost_per_useful_gpu_hour",
                   "p_finish_by_deadline", "total_cost_change", "wall_h_change", "baseline")


def _schedule_text(row: Any) -> str:
    """A schedule planned for a rate that changes over the run (phases, a Weibull shape from the start) as
    ``from-0h 39.9 min, from-1.16h 54.3 min`` ("" for one interval at a constant rate)."""
    slots, i = [], 1
    while f"schedule{i}_interval_min" in row.index and row[f"schedule{i}_interval_min"] == row[f"schedule{i}_interval_min"]:
        slots.append(i)
        i += 1
    shape = row.get("weibull_shape_from_start", math.nan)
    if len(slots) < 2 and not shape < 1:
        return ""
    return ", ".join(f"from-{row[f'schedule{i}_start_h']:.3g}h {row[f'schedule{i}_interval_min']:.1f} min" for i in slots)


def compare_designs(scenario: Scenario, setup: Any = None, designs: Any = None) -> Any:
    """The baseline and each design planned side by side, cheapest first (a pandas DataFrame):
    :func:`compared_designs`' table."""
    return compared_designs(scenario, setup, designs)[0]


def compared_designs(scenario: Scenario, setup: Any = None, designs: Any = None) -> tuple[Any, list]:
    """(:func:`compare_designs`' table, the plans: the baseline's then each design's
    :class:`engine.setup.SetupPlan`, in the order given), so a surface that shows more of the baseline's plan
    than the table does not plan it again.

    The baseline and each design planned side by side, cheapest first (a pandas DataFrame).

    Each design is applied to the baseline scenario and its setup (:meth:`Design.apply`,
    :meth:`Design.apply_setup`) and planned by :func:`ckptplan.engine.setup.plan_setup`. Columns
    (:data:`COMPARE_COLUMNS`): the plan's interval (the first tier's), every tier's interval as text
    (``host-memory 12.0 min, remote 120.0 min``; a schedule as ``from-0h 39.9 min, from-1.16h 54.3 min``), the changes in words (with a note for a change the
    plan cannot see: a field a tiered plan does not read, a change that leaves a value as it was), waste, wall hours, GPU-hours (job and spares),
    compute (the job's GPU time), storage and spare cost, their sum ``total_cost`` (everything the plan
    pays), the cost per useful GPU-hour (total / useful GPU-hours), P(finish by the
    deadline) (NaN without a deadline), and the change of total cost and wall hours against the
    baseline (``baseline`` marks its row). ``designs`` None: :func:`default_designs`.
    """
    import pandas as pd

    from .setup import RecoverySetup, plan_setups

    check_scenario(scenario)
    st = setup if setup is not None else RecoverySetup()
    if designs is not None and (isinstance(designs, (str, bytes, Mapping)) or not hasattr(designs, "__iter__")):
        raise InputError("designs", type(designs).__name__, "must be a list of Design")
    designs = tuple(default_designs(scenario) if designs is None else designs)
    for i, d in enumerate(designs):
        if not isinstance(d, Design):
            raise InputError(f"designs[{i}]", type(d).__name__, "must be a Design (a [[designs]] table: "
                                                                "engine.designs.design_from_dict)")
    names = [scenario.name] + [d.name for d in designs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError("designs", dupes[0], "design names must be unique and differ from the baseline's name")
    pairs = [(scenario, st)] + [(d.apply(scenario), d.apply_setup(st)) for d in designs]
    rows = []
    plans = plan_setups(pairs)   # one pass for all
    for design, (sc, su), plan in zip((None,) + designs, pairs, plans):
        f = plan.figures
        rows.append({
            "name": scenario.name if design is None else design.name,
            "changes": "baseline" if design is None else _described(design, scenario, sc, st, su),
            "interval_min": f["interval_min"],
            "tier_intervals": _schedule_text(plan.row) or ", ".join(f"{t['name']} {t['interval_min']:.1f} min"
                                                                   for t in plan.tiers),
            "waste_fraction": f["waste_fraction"], "wall_h": f["wall_h"],
            **{k: f[k] for k in ("job_gpu_hours", "spare_gpu_hours", "total_gpu_hours", "compute_cost", "storage_cost", "spare_cost", "total_cost",
                                 "cost_per_useful_gpu_hour")},
            "p_finish_by_deadline": f["p_finish_by_deadline"], "baseline": design is None,
        })
    table = pd.DataFrame(rows)
    base = table.iloc[0]
    table["total_cost_change"] = table["total_cost"] - base["total_cost"]
    table["wall_h_change"] = table["wall_h"] - base["wall_h"]
    table = table.sort_values("total_cost", kind="stable").reset_index(drop=True)
    return table[list(COMPARE_COLUMNS)], plans
