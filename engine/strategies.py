"""Recovery strategies side by side: wait for a node, hot spares, elastic continuation, elastic + spares.

For a scenario whose job is made of replicas (``nodes_per_replica``, ``min_replicas`` below the replica
count: :mod:`ckptplan.engine.elastic`) and whose setup models the spare pool (``repair_h`` given, the
reallocation not stated: :mod:`ckptplan.engine.recovery`), each strategy is the same plan with two inputs
changed: ``on_node_loss`` (``restart``: the job stops at every failure and waits for a node; ``continue``:
it trains on fewer replicas while the node comes back) and ``spares`` (0, or the setup's count; when the
setup holds none, the cheapest count for the restarting job). Each is planned by
:func:`ckptplan.engine.setup.plan_setup` at its own optimum interval (unless the scenario chooses one), so
the money is what ``ckptplan plan`` says for it.

With a deadline (``deadline_h``) each strategy also gets its deadline answer, as ``ckptplan plan`` gives it:
``p_finish_by_deadline`` and the wall time's ``wall_h_p50`` / ``wall_h_p90`` (analytic for the strategies that
stop at every failure, simulated for the elastic ones, :mod:`ckptplan.engine.elastic_montecarlo`), and the
total cost at those percentiles, ``total_cost_p50`` / ``total_cost_p90``: every part of the total (compute,
spares, storage by the month) is billed per wall hour, so the total's percentile is the total at the wall
time's percentile, ``total_cost x wall_h_pXX / wall_h`` (the mean total over the mean wall time).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .errors import InputError
from .scenario import Scenario

__all__ = ["DEADLINE_COLUMNS", "STRATEGIES", "elastic_fields_set", "recovery_strategies"]

#: the strategies, in the order they are listed: (name, on_node_loss, with spares)
STRATEGIES = (("wait for a node", "restart", False), ("hot spares", "restart", True),
              ("elastic", "continue", False), ("elastic + spares", "continue", True))


def elastic_fields_set(scenario: Scenario) -> bool:
    """The scenario is made of replicas and may train on fewer (``nodes_per_replica`` given, a floor below
    the replica count): what makes ``ckptplan compare`` price the strategies."""
    if scenario.nodes_per_replica is None:
        return False
    n = scenario.nodes // scenario.nodes_per_replica
    return n > 1 and (scenario.min_replicas is None or scenario.min_replicas < n) and (
        scenario.min_replicas is not None or scenario.on_node_loss == "continue")


def recovery_strategies(scenario: Scenario, setup: Any) -> pd.DataFrame:
    """One row per strategy of :data:`STRATEGIES` (module notes): ``strategy``, ``on_node_loss``, ``spares``,
    ``interval_min``, ``waste_fraction``, ``wall_h``, ``expected_failures``, ``mean_replicas_running``,
    ``expected_stops``, ``compute_cost``, ``spare_cost``, ``total_cost``, ``cost_per_useful_gpu_hour``; with a
    deadline also :data:`DEADLINE_COLUMNS`. Without ``min_replicas`` the elastic strategies train on down to one
    replica fewer than the job runs (the least elastic floor), as ``ckptplan compare`` and ``batch --strategies``
    say."""
    from .setup import RecoverySetup, plan_setup

    if not isinstance(scenario, Scenario):
        raise InputError("scenario", type(scenario).__name__, "must be a Scenario")
    if not isinstance(setup, RecoverySetup) or setup.repair_h is None or setup.reallocation_min is not None:
        raise InputError("repair_h", None if not isinstance(setup, RecoverySetup) else setup.repair_h,
                         "must be given (and reallocation_min left empty) to price spares against elastic "
                         "continuation: the spare pool decides how long a node takes to come back")
    if scenario.nodes_per_replica is None:
        raise InputError("nodes_per_replica", None, "must be given to price elastic continuation (the smallest "
                         "group of nodes that can drop out)")
    if scenario.min_replicas is None:
        n = scenario.nodes // scenario.nodes_per_replica
        scenario = scenario.replace(min_replicas=max(n - 1, 1))
    wait = plan_setup(scenario.replace(on_node_loss="restart"), setup.replace(spares=0))
    spares = setup.spares or wait.figures.get("best_spares") or 0
    rows = []
    for name, mode, with_spares in STRATEGIES:
        planned = wait if (mode, with_spares) == ("restart", False) else plan_setup(
            scenario.replace(on_node_loss=mode), setup.replace(spares=spares if with_spares else 0))
        f, row = planned.figures, planned.row
        rows.append({"strategy": name, "on_node_loss": mode, "spares": int(f["spares"]),
                     "interval_min": f["interval_min"], "waste_fraction": f["waste_fraction"], "wall_h": f["wall_h"],
                     "expected_failures": f["expected_failures"],
                     "mean_replicas_running": float(row["mean_replicas_running"]),
                     "expected_stops": float(row["expected_stops"]), "compute_cost": f["compute_cost"],
                     "spare_cost": f["spare_cost"], "total_cost": f["total_cost"],
                     "cost_per_useful_gpu_hour": f["cost_per_useful_gpu_hour"]})
        if scenario.deadline_h is not None:
            rows[-1].update(_deadline(row, f))
    return pd.DataFrame(rows)


#: the deadline columns of :func:`recovery_strategies` (a scenario with ``deadline_h``)
DEADLINE_COLUMNS = ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "total_cost_p50", "total_cost_p90")


def _deadline(row: Any, f: dict[str, Any]) -> dict[str, float]:
    """One strategy's deadline answer (module notes): P(finish), the wall time's and the total cost's P50 / P90."""
    out = {k: float(row[k]) for k in ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90")}
    for q in ("p50", "p90"):
        out[f"total_cost_{q}"] = f["total_cost"] * out[f"wall_h_{q}"] / f["wall_h"]
    return out
