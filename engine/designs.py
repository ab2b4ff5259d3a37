"""A design: a named set of changes on top of a baseline scenario.

A planner compares designs ("storage 4x faster", "twice the nodes for the same training") against
the baseline they are editing, so an alternative is not a frozen copy of a scenario but the
baseline plus its changes: each changed input is either *set to* a value or *scaled by* a factor
of the baseline's value (``checkpoint_stall_min`` x 0.25 for storage four times faster). Inputs the
design does not name follow the baseline, whatever the baseline becomes. The planning workbook's
Compare sheet writes the same rule as live formulas (blank = same as the baseline).

Keys are the registry's field names (:data:`ckptplan.engine.fields.FIELDS`) and the correlated
domains' ``domain{i}_mtbf_h`` / ``domain{i}_nodes_per_domain``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import InputError
from .fields import FIELD_BY_NAME, lookup
from .reliability import FailureDomain
from .scenario import Scenario

__all__ = ["Design", "default_designs", "design_from_scenario", "scenario_values"]


@dataclass(frozen=True)
class Design:
    """``set``: field -> value; ``times``: field -> factor of the baseline's value (set wins)."""

    name: str
    set: Mapping[str, float] = field(default_factory=dict)
    times: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, value in {**self.set, **self.times}.items():
            try:
                lookup(key)
            except KeyError:
                raise InputError(f"design {self.name!r}", key, "is not a scenario field") from None
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise InputError(f"design {self.name!r}: {key}", value, "must be a finite number")
        for key, factor in self.times.items():
            if factor <= 0:
                raise InputError(f"design {self.name!r}: {key}", factor, "a factor must be > 0")

    def describe(self) -> str:
        """The changes in words: ``checkpoint_stall_min x0.25; nodes = 256``."""
        parts = [f"{k} = {v:g}" for k, v in self.set.items()]
        parts += [f"{k} x{v:g}" for k, v in self.times.items() if k not in self.set]
        return "; ".join(parts) or "no change"

    def apply(self, base: Scenario) -> Scenario:
        """The baseline with the changes (validated: a change that breaks a rule raises, naming the field)."""
        values = scenario_values(base)
        for key, factor in self.times.items():
            if key not in self.set and values.get(key) is not None:
                values[key] = values[key] * factor
        values.update(self.set)
        changes: dict[str, Any] = {}
        for name, spec in FIELD_BY_NAME.items():
            v = values.get(name)
            if spec.integer and v is not None and float(v).is_integer():
                v = int(v)
            changes[name] = v
        domains = []
        for i in range(1, 1 + max([0] + [int(k[6:k.index("_")]) for k in values if k.startswith("domain")])):
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
            return base.replace(**changes, domains=tuple(domains), name=self.name)
        except InputError as exc:
            raise InputError(f"design {self.name!r} ({self.describe()}): {exc.field}", exc.value, exc.rule) from None


def scenario_values(sc: Scenario) -> dict[str, Any]:
    """A scenario's numbers keyed by field name, with domain ``i`` as ``domain{i}_mtbf_h`` and
    ``domain{i}_nodes_per_domain`` (None where not given): the keys a design changes."""
    values = {name: getattr(sc, name) for name in FIELD_BY_NAME}
    for i, dom in enumerate(sc.domains, start=1):
        values[f"domain{i}_mtbf_h"] = dom.mtbf_h
        values[f"domain{i}_nodes_per_domain"] = dom.nodes_per_domain
    return values


def design_from_scenario(base: Scenario, other: Scenario, name: str | None = None) -> Design:
    """The design that turns ``base`` into ``other``: every input that differs, set to ``other``'s value.

    An input ``other`` leaves empty where ``base`` has one cannot be written as a change (a design
    sets values, it does not blank them): refused, naming the input.
    """
    a, b = scenario_values(base), scenario_values(other)
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
