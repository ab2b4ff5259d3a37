"""ckptplan engine: how often a training job should checkpoint, and what it costs.

The engine knows nothing of Excel. Every public function takes scalars, numpy arrays or pandas
Series alike, broadcasts them, and raises :class:`InputError` (a ``ValueError``) naming the
argument, the value and the rule on bad input. See ``shared/DESIGN.md`` for the data flow.
"""

from ._inputs import InputError
from . import batch, deadline, logs, probe  # probe imports torch only when a probe runs
from .cost import compare_plans, goodput, gpu_hours, money
from .deadline import (
    FailureLaw,
    best_segment_count,
    deadline_report,
    deadline_search,
    finite_expected_wall_time,
    simulate,
    simulate_wall_times,
)
from .logs import fit_log
from .reliability import (
    FailureDomain,
    domains_spanned,
    job_failure_rate_per_h,
    job_mtbf,
    job_mtbf_with_domains,
    node_mtbf_from_gpus,
)
from .scenario import (
    FIELDS,
    Scenario,
    evaluate,
    list_templates,
    load_scenario,
    scenario_from_dict,
    scenario_to_dict,
    to_table,
    validate_table,
)
from .waste import (
    daly_interval,
    effective_stall,
    exact_optimal_interval,
    expected_wall_time,
    first_order_waste,
    time_breakdown,
    waste_fraction,
    young_interval,
    young_min_waste,
)

__all__ = [name for name in dir() if not name.startswith("_")]
