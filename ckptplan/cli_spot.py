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
    fb = capacity["policies"]["fallback"]
    console.print(f"fallback: move to on-demand when the time left less the work left (at on-demand's expected "
                  f"overheads) falls below {duration(fb['threshold_min'])}, the least slack that is on time as often "
                  f"as on-demand ({fb['target_p_finish']:.1%})", highlight=False)
