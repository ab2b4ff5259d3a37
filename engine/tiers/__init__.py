"""Multi-level (tiered) checkpointing: saves to several tiers, failures of several classes.

* :mod:`.model` the design (:class:`Tier`, :func:`check_design`) and the exact expected wall time of
  nested tiers under Poisson failures split into classes (its notes state the model);
* :mod:`.optimum` choosing a design: Benoit et al.'s first-order per-tier intervals and the numeric
  optimum of the exact model (:func:`optimal_tier_intervals`, :func:`best_first_interval`);
* :mod:`.table` the tiered plan on table rows, what :func:`engine.setup.plan_setup` and a tiered batch
  use (imported on its own: ``from ckptplan.engine.tiers.table import tier_design``).

The names below are the model's and the optimum's public functions, importable from here.
"""

from __future__ import annotations

from .model import (Tier, check_design, class_rates_per_tier, recovery_tier, tiered_breakdown,
                    tiered_expected_wall_time, tiered_wall_per_work, tiered_waste_fraction, tiers_from_dicts)
from .optimum import MAX_EVERY, best_first_interval, first_order_tier_intervals, optimal_tier_intervals

__all__ = ["MAX_EVERY", "Tier", "best_first_interval", "check_design", "class_rates_per_tier",
           "first_order_tier_intervals", "optimal_tier_intervals", "recovery_tier", "tiered_breakdown",
           "tiered_expected_wall_time", "tiered_wall_per_work", "tiered_waste_fraction", "tiers_from_dicts"]
