"""Elastic continuation on the command line: the line ``ckptplan plan`` prints for an elastic plan and the
recovery strategies ``ckptplan compare`` prices side by side (views of :mod:`ckptplan.engine.elastic_table` and
:func:`ckptplan.engine.strategies.recovery_strategies`)."""

from __future__ import annotations

import math
from typing import Any

from .common import console, duration, literal

__all__ = ["elastic_json", "print_elastic", "print_strategies"]


def elastic_json(row: Any) -> dict[str, Any]:
    """The elastic figures of an evaluated row, JSON-ready ({} for a table without an elastic row)."""
    from .engine.elastic_table import ELASTIC_COLUMNS

    if "replicas" not in row.index:
        return {}
    out: dict[str, Any] = {k: float(row[k]) for k in ELASTIC_COLUMNS}
    out["on_node_loss"] = str(row["on_node_loss"])
    return out


def print_elastic(row: Any) -> None:
    """One line for an elastic plan: replicas, the floor, what a shrink keeps, and what the run is expected to see."""
    if "replicas" not in row.index or str(row.get("on_node_loss", "")) != "continue":
        return
    n = int(row["replicas"])
    floor = n if math.isnan(row["min_replicas"]) else int(row["min_replicas"])
    per = int(row["nodes"]) // n
    kept = "progress kept on a shrink" if row["shrink_keeps_progress"] == 1 else "a shrink rolls back to the last checkpoint"
    console.print(f"elastic: {n} replicas of {per} nodes, training on down to {floor} ({kept}; pauses "
                  f"{duration(row['shrink_pause_min'])} to shrink, {duration(row['regrow_pause_min'])} to regrow; a node "
                  f"back after {duration(row['downtime_min'])} on average): {row['mean_replicas_running']:.3f} replicas "
                  f"running on average, {row['shrunk_h']:,.1f} h shrunk, {row['expected_shrinks']:,.1f} shrinks and "
                  f"{row['expected_stops']:,.2f} stops per run", highlight=False)
    if floor < n:
        console.print("elastic: rework includes the throughput lost while shrunk, restart every pause; a deadline "
                      "is answered by simulating the elastic job (`ckptplan deadline` searches the interval)",
                      highlight=False)


def print_strategies(table: Any, currency: str) -> None:
    """The recovery strategies side by side, cheapest first."""
    from rich import box

    from .common import print_rows

    best = table["total_cost"].min()
    deadline = "p_finish_by_deadline" in table.columns
    cur = literal(currency)
    cells = [(literal(str(r.strategy)), str(int(r.spares)), duration(r.interval_min), f"{r.waste_fraction:.2%}",
              f"{r.wall_h:,.1f}", f"{r.mean_replicas_running:,.2f}", f"{r.expected_stops:,.1f}",
              f"{r.spare_cost:,.0f}", f"[bold]{r.total_cost:,.0f}[/]", f"{r.total_cost - best:+,.0f}")
             + ((_pct(r.p_finish_by_deadline), _num(r.total_cost_p50), _num(r.total_cost_p90)) if deadline else ())
             for r in table.sort_values("total_cost").itertuples()]
    head = ("strategy", "spares", "interval", "waste", "wall h", "replicas running", "stops", f"spares ({cur})",
            f"total cost ({cur})", "vs cheapest") + (("P(finish)", f"P50 cost ({cur})", f"P90 cost ({cur})")
                                                      if deadline else ())
    print_rows("Recovery strategies (wait for a node / hot spares / train on fewer replicas), cheapest first", head,
               cells, box=box.SIMPLE_HEAD)
    if deadline:
        console.print("P(finish) and the cost percentiles: analytic for the strategies that stop at every failure, "
                      "simulated for the elastic ones (as `ckptplan plan` gives each)", highlight=False)


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1%}"


def _num(x: float) -> str:
    return "-" if x != x else f"{x:,.0f}"
