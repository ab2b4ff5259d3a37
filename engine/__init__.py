"""ckptplan.engine: how often a training job should checkpoint, and what it costs. Models only.

The engine knows nothing of files, Excel, PyTorch or the terminal. Every public function takes
scalars, numpy arrays or pandas Series alike, broadcasts them, and raises :class:`InputError` (a
``ValueError``) naming the argument, the value and the rule on bad input. Every input field and
rule is declared once in :mod:`ckptplan.engine.fields`.

Submodules load when first used (``from ckptplan import engine`` costs almost nothing), so the
command line starts fast:

* :mod:`.fields` the registry of fields and rules; :mod:`.errors` :class:`InputError`;
* :mod:`.waste` Young, Daly, the exact model and async saves; :mod:`.reliability` job MTBF from
  nodes, GPUs and correlated failure domains; :mod:`.cost` GPU-hours, money, comparisons;
* :mod:`.scenario` the scenario record and table, and :func:`evaluate`;
* :mod:`.finite` the exact expectation of a finite job; :mod:`.montecarlo` its simulation under
  any failure law; :mod:`.deadline` deadline answers for a scenario;
* :mod:`.uncertainty` input ranges; :mod:`.sensitivity` tornado and break-even; :mod:`.targets` the input
  a goal needs; :mod:`.risk` P10/P50/P90 in money (:mod:`.roots` their vectorised root finding);
* :mod:`.batch` many scenarios at once, each row with its status; :mod:`.sweep` grids of scenarios,
  streamed in chunks; :mod:`.fitting` job MTBF, failure shape,
  restart and stall from an interruption log's events (reading the file: ``ckptplan.files.logs``).
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import InputError

# public name -> submodule that defines it (loaded on first access)
_EXPORTS: dict[str, str] = {
    # waste
    "young_interval": "waste", "daly_interval": "waste", "first_order_waste": "waste",
    "young_min_waste": "waste", "effective_stall": "waste", "expected_wall_time": "waste",
    "waste_fraction": "waste", "exact_optimal_interval": "waste", "time_breakdown": "waste",
    # reliability
    "job_mtbf": "reliability", "node_mtbf_from_gpus": "reliability", "FailureDomain": "reliability",
    "domains_spanned": "reliability", "job_failure_rate_per_h": "reliability",
    "job_mtbf_with_domains": "reliability",
    # cost
    "gpu_hours": "cost", "money": "cost", "goodput": "cost", "compare_plans": "cost",
    # scenario
    "Scenario": "scenario", "evaluate": "scenario", "scenario_from_dict": "scenario",
    "scenario_to_dict": "scenario", "to_table": "scenario", "validate_table": "scenario",
    # registry
    "FIELDS": "fields", "FIELD_BY_NAME": "fields", "RULES": "fields",
    # finite jobs, Monte Carlo, deadline answers
    "best_segment_count": "finite", "finite_expected_wall_time": "finite",
    "FailureLaw": "montecarlo", "simulate": "montecarlo", "simulate_wall_times": "montecarlo",
    "simulate_intervals": "montecarlo",
    "deadline_report": "deadline", "deadline_search": "deadline",
    # log fitting
    "fit_events": "fitting", "mtbf_estimate": "fitting", "weibull_fit": "fitting",
}
_SUBMODULES = ("batch", "cost", "deadline", "designs", "errors", "ettr", "fields", "finite", "fitting", "fleets", "gaps",
               "measured", "montecarlo", "montecarlo_fast", "montecarlo_tiers", "recovery", "reliability", "risk", "roots",
               "scenario", "sensitivity", "setup", "spot_rates", "storage", "sweep", "targets", "tiers", "uncertainty", "validity",
               "variance", "waste", "wall_distribution")

__all__ = [
    "InputError",
    "young_interval", "daly_interval", "first_order_waste", "young_min_waste", "effective_stall",
    "expected_wall_time", "waste_fraction", "exact_optimal_interval", "time_breakdown",
    "job_mtbf", "node_mtbf_from_gpus", "FailureDomain", "domains_spanned", "job_failure_rate_per_h",
    "job_mtbf_with_domains",
    "gpu_hours", "money", "goodput", "compare_plans",
    "Scenario", "evaluate", "scenario_from_dict", "scenario_to_dict", "to_table", "validate_table",
    "FIELDS", "FIELD_BY_NAME", "RULES",
    "best_segment_count", "finite_expected_wall_time", "FailureLaw", "simulate", "simulate_wall_times",
    "simulate_intervals",
    "deadline_report", "deadline_search",
    "fit_events", "mtbf_estimate", "weibull_fit",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
