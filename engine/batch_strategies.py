"""The recovery strategies of each batch row side by side (``evaluate_rows(..., strategies=True)``, ``ckptplan batch
--strategies``): wait for a node, hot spares, elastic, elastic + spares.

Each row that evaluated is planned the way ``ckptplan compare`` plans a scenario file
(:func:`ckptplan.engine.strategies.recovery_strategies`): the row's scenario fields and setup fields as it gives
them (a stall or restart the row states overrides the one its setup derives, as in a file), with the batch's
tier design. So a row's strategy columns are ``compare``'s figures for the same scenario, to rounding. For
each strategy ``key`` of :data:`ckptplan.engine.fields.STRATEGY_KEYS` the columns ``{key}_{name}`` of
:data:`ckptplan.engine.fields.STRATEGY_FIELDS` (the deadline ones when the row has ``deadline_h``), and
``cheapest_strategy``: the key of the lowest ``total_cost``.

A row that cannot be priced this way is an error row naming the field: no ``nodes_per_replica`` (the replicas
the elastic strategies drop), no ``repair_h`` or a stated ``reallocation_min`` (the spare pool decides how long
a node takes to come back), correlated domains or failure phases (the elastic plan does not model them).
Planning is per row (four plans and a spare search each; with a deadline the elastic strategies are simulated,
:mod:`ckptplan.engine.elastic_montecarlo`): seconds per row, not the vectorised pace of the rest of a batch.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .errors import InputError
from .fields import FIELD_BY_NAME, SETUP_FIELD_BY_NAME, STRATEGY_FIELDS, STRATEGY_KEYS, TEXT_FIELDS
from .scenario import RowProblems

__all__ = ["STRATEGY_COLUMNS", "row_plan", "strategy_columns"]

#: every strategy column, strategy by strategy, then ``cheapest_strategy``
STRATEGY_COLUMNS = tuple(f"{k}_{f.name}" for k in STRATEGY_KEYS for f in STRATEGY_FIELDS) + ("cheapest_strategy",)
_DEADLINE_PARTS = ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "total_cost_p50", "total_cost_p90")


def _blank(v: Any) -> bool:
    if v is None or v is pd.NA:
        return True
    if isinstance(v, str):
        return not v.strip()
    try:
        return bool(np.isnan(v))
    except TypeError:
        return False


def _value(name: str, v: Any) -> Any:
    """A cell as the scenario or setup record takes it: text as text, whole numbers as int, others float."""
    if name in TEXT_FIELDS or isinstance(v, str):
        return str(v).strip()
    field = FIELD_BY_NAME.get(name) or SETUP_FIELD_BY_NAME.get(name)
    x = float(v)
    return int(x) if field is not None and field.integer and x == int(x) else x


def row_plan(row: Mapping[str, Any], tiers: Any = None, failure_classes: Any = None) -> tuple[Any, Any]:
    """(Scenario, RecoverySetup) of one table row as a scenario file would give them (module notes)."""
    from .setup import DERIVED, setup_from_dict, with_placeholder_stall
    from .scenario import scenario_from_dict

    cells = {str(k): v for k, v in row.items() if not _blank(v)}
    for name, v in cells.items():
        if re.match(r"(domain|phase)\d+_", name):
            raise InputError(name, v, "must be empty to price the recovery strategies (--strategies): the elastic "
                             "plan does not model correlated domains or failure phases")
    scenario = {k: _value(k, v) for k, v in cells.items() if k in FIELD_BY_NAME or k == "name"}
    scenario.setdefault("name", "row")
    setup = {k: _value(k, v) for k, v in cells.items() if k in SETUP_FIELD_BY_NAME}
    if tiers is not None:
        setup["tiers"] = tiers
    if failure_classes is not None:
        setup["failure_classes"] = failure_classes
    stated = [k for k in DERIVED if k in scenario]
    plan_setup = setup_from_dict(setup, stated=stated, origin="row")
    return scenario_from_dict(with_placeholder_stall(scenario, plan_setup), origin="row"), plan_setup


def strategy_columns(table: pd.DataFrame, positions: np.ndarray, problems: RowProblems, tiers: Any = None,
                     failure_classes: Any = None) -> dict[str, np.ndarray]:
    """:data:`STRATEGY_COLUMNS` of the table's rows (NaN / empty where a row is not priced); ``table``: the rows as
    given (before any setup fills them), ``positions``: the rows that evaluated. A row that cannot be priced
    becomes a problem (module notes)."""
    from .strategies import recovery_strategies

    n = len(table)
    out: dict[str, Any] = {c: np.full(n, np.nan) for c in STRATEGY_COLUMNS[:-1]}
    out["cheapest_strategy"] = np.full(n, "", dtype=object)
    records = table.to_dict("records")
    for p in positions.tolist():
        try:
            scenario, setup = row_plan(records[p], tiers, failure_classes)
            frame = recovery_strategies(scenario, setup)
        except ValueError as exc:
            problems.add([p], lambda _p, m=str(exc): f"strategies: {m}")
            continue
        for key, r in zip(STRATEGY_KEYS, frame.to_dict("records")):
            for f in STRATEGY_FIELDS:
                if f.name in r:
                    out[f"{key}_{f.name}"][p] = r[f.name]
        out["cheapest_strategy"][p] = STRATEGY_KEYS[int(np.argmin(frame["total_cost"].to_numpy()))]
    return out
