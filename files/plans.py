"""Plan files: a scenario with its storage and recovery setup and the designs to compare.

What a scenario file's parsed document means (:func:`plan_from_data`); reading the file is
:mod:`ckptplan.files.scenarios`' (:func:`~ckptplan.files.scenarios.load_plan`). A scenario file (TOML)
holds, besides the ``[scenario]`` fields:

* the setup's fields (:data:`ckptplan.engine.fields.SETUP_FIELDS`: ``parameters_b``,
  ``bytes_per_parameter``, bandwidths, restart parts, ``spares`` ...) in the same ``[scenario]`` table;
* ``[[scenario.tiers]]`` (or top-level ``[[tiers]]``) tables: ``name``, ``every``, ``survives`` and
  the tier's save and restore times or the bandwidths they are derived from
  (:data:`ckptplan.engine.fields.TIER_KEYS`);
* ``[scenario.failure_classes]`` (or top-level ``[failure_classes]``): class name -> share of job
  failures (shares sum to 1);
* ``[[scenario.failure_phases]]`` (or top-level ``[[failure_phases]]``): ``start_h``, ``rate_factor``, a job
  failure rate that changes over the run (:mod:`ckptplan.engine.phases`);
* ``[[designs]]`` tables: named changes to compare (``name``, ``set``, ``times``, ``tiers``,
  ``failure_classes``; :class:`ckptplan.engine.designs.Design`);
* an ``[uncertainty]`` table (or ``[scenario.uncertainty]``): input ranges, field = ``[low, high]`` or
  a distribution table (:mod:`ckptplan.engine.uncertainty`), around the plan's own values.

``checkpoint_stall_min`` may be left out when the setup derives it (checkpoint size and write
bandwidth); a stall, write or restart the file states overrides the derived one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.errors import InputError
from ..engine.setup import PLACEHOLDER_STALL_MIN as _PLACEHOLDER

__all__ = ["PLACEHOLDER_STALL_MIN", "PlanFile", "plan_from_data"]

#: the stall a scenario record holds until its setup's derived one replaces it
#: (:data:`ckptplan.engine.setup.PLACEHOLDER_STALL_MIN`: a batch row planned as a file takes it too)
PLACEHOLDER_STALL_MIN = _PLACEHOLDER


@dataclass(frozen=True)
class PlanFile:
    """What a scenario file holds: the scenario as stated, its setup, its designs (may be empty)."""

    scenario: Any      # engine.Scenario, with a placeholder stall of 0 when the setup derives it
    setup: Any         # engine.setup.RecoverySetup
    designs: tuple     # engine.designs.Design, in file order
    origin: str
    uncertainty: tuple = ()   # engine.uncertainty.UncertainInput: the [uncertainty] table's input ranges

    def with_design(self, name: str) -> "PlanFile":
        """The baseline with its ``[[designs]]`` entry ``name`` applied (scenario and setup), as its own plan.

        What ``ckptplan batch``/``sweep --design NAME`` use as the base of every row. Raises
        :class:`InputError` naming the file's designs when none is called ``name``.
        """
        from dataclasses import replace

        found = [d for d in self.designs if d.name == name]
        if not found:
            names = ", ".join(repr(d.name) for d in self.designs) or "none"
            raise InputError(f"{self.origin}: design", name, f"is not one of the file's [[designs]] ({names})")
        design = found[0]
        return replace(self, scenario=design.apply(self.scenario), setup=design.apply_setup(self.setup), designs=())

    def planned_scenario(self) -> Any:
        """The scenario with the stall, write and restart the setup derives (what single-level surfaces use)."""
        from ..engine.setup import plan_setup

        if not self.setup.given():
            return self.scenario
        if self.setup.tiers:
            raise InputError(f"{self.origin}: tiers", len(self.setup.tiers),
                             "this command plans single-level checkpoints: plan a scenario with checkpoint tiers "
                             "with `ckptplan plan` or `ckptplan compare`")
        return plan_setup(self.scenario, self.setup).scenario


def plan_from_data(data: dict[str, Any], origin: str = "scenario") -> PlanFile:
    """A :class:`PlanFile` from a parsed TOML document (or a plain dict of the same shape)."""
    from ..engine.designs import design_from_dict
    from ..engine.scenario import scenario_from_dict
    from ..engine.setup import DERIVED, setup_from_dict, split_setup, with_placeholder_stall

    if not isinstance(data, dict):
        raise InputError(origin, type(data).__name__, "must be a table")
    table = data.get("scenario", data)
    if not isinstance(table, dict):
        raise InputError(f"{origin}: scenario", table, "must be a table")
    table = dict(table)
    for key in ("tiers", "failure_classes", "uncertainty", "failure_phases"):
        if key in data and "scenario" in data:
            if key in table:
                raise InputError(f"{origin}: {key}", "given twice", f"give {key} at the top level or in [scenario], not both")
            table[key] = data[key]
    raw_uncertainty = table.pop("uncertainty", None)
    fields, setup_data = split_setup(table)
    setup_data = {k: v for k, v in setup_data.items()}
    stated = [k for k in DERIVED if k in fields]
    setup = setup_from_dict(setup_data, stated=stated, origin=origin)
    fields = with_placeholder_stall(fields, setup)   # plan_setup derives the stall (not stated), or the tiers carry it
    scenario = scenario_from_dict(fields, origin=origin)
    raw_designs = data.get("designs", [])
    if isinstance(raw_designs, dict) or not isinstance(raw_designs, list):
        raise InputError(f"{origin}: designs", raw_designs, "must be a list of [[designs]] tables")
    designs = tuple(design_from_dict(d, origin=f"{origin}: designs[{i}]") for i, d in enumerate(raw_designs))
    from ..engine.uncertainty import uncertainty_from_dict

    uncertainty = uncertainty_from_dict(raw_uncertainty, scenario, setup, origin=origin)
    return PlanFile(scenario, setup, designs, origin, uncertainty)
