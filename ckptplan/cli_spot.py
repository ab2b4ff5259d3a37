"""Spot, on-demand or spot with an on-demand fallback, in ``ckptplan compare`` (a view of
:func:`ckptplan.engine.spot.scenario_capacity`)."""

from __future__ import annotations

from typing import Any

from .common import console, duration, literal

__all__ = ["print_capacity"]

_LABELS = {"on-demand": "all on-demand", "spot": "all spot", "fallback": "spot, on-demand fallback"}


def print_capacity(capacity: dict[str, Any], currency: str) -> None:
    """The three capacity policies side by side."""
    from rich.table import Table

    t = Table(title=f"Capacity against the deadline {duration(capacity['deadline_h'] * 60)} "
                    f"({capacity['runs']:,} simulated runs each, seed {capacity['seed']}; {literal(currency)})",
              title_justify="left")
    for col in ("capacity", "interval", "P(on time)", "wall P50", "wall P90", "cost P50", "cost P90"):
        t.add_column(col, justify="left" if col == "capacity" else "right")
    for name, f in capacity["policies"].items():
        t.add_row(_LABELS[name], duration(f["interval_min"]), f"{f['p_finish_by_deadline']:.1%}",
                  duration(f["wall_h_p50"] * 60), duration(f["wall_h_p90"] * 60), f"{f['cost_p50']:,.0f}",
                  f"{f['cost_p90']:,.0f}")
    console.print(t)
    _print_schedules(capacity["policies"])
    fb = capacity["policies"]["fallback"]
    console.print(f"fallback: move to on-demand when the time left less the work left (at on-demand's expected "
                  f"overheads) falls below {duration(fb['threshold_min'])}, the least slack that is on time as often "
                  f"as on-demand ({fb['target_p_finish']:.1%})", highlight=False)


def _print_schedules(policies: dict[str, Any]) -> None:
    """The on-demand and spot schedules of a failure rate that changes over the run (nothing for a constant rate):
    the table's interval is each schedule's first."""
    if "schedule" not in policies["spot"]:
        return
    for name, label in (("on-demand", "on-demand"), ("spot", "spot (the fallback until it moves)")):
        windows = ", ".join(f"{duration(w['interval_min'])} from "
                            + (duration(w["start_h"] * 60) if w["start_h"] > 0 else "the start")
                            for w in policies[name]["schedule"])
        console.print(f"{label} saves every {windows} (the failure rate changes over the run; the table's interval "
                      "is the first)", highlight=False)
