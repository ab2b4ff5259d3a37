"""The failure-phase schedule on the console and in ``plan --json`` (views of :mod:`ckptplan.engine.phases_table`'s
columns; the engine plans, this only shows)."""

from __future__ import annotations

import math
from typing import Any

from .common import console, duration

__all__ = ["print_schedule", "schedule_json"]


def _slots(row: Any) -> list[int]:
    out, i = [], 1
    while f"schedule{i}_interval_min" in row.index:
        if math.isfinite(float(row[f"schedule{i}_interval_min"])):
            out.append(i)
        i += 1
    return out


def schedule_json(row: Any) -> dict[str, Any]:
    """``schedule`` (a list of ``{start_h, interval_min}``, the schedule planned), ``single_interval_min`` and
    ``single_interval_wall_h`` when the row has a schedule; nothing otherwise."""
    slots = _slots(row)
    if not slots:
        return {}
    return {"schedule": [{"start_h": float(row[f"schedule{i}_start_h"]),
                          "interval_min": float(row[f"schedule{i}_interval_min"]),
                          "rate_factor": float(row[f"schedule{i}_rate_factor"])} for i in slots],
            "single_interval_min": float(row["single_interval_min"]),
            "single_interval_wall_h": float(row["single_interval_wall_h"])}


def print_schedule(row: Any) -> bool:
    """The schedule table of a row with failure phases (False, nothing printed, for a constant rate)."""
    from rich.table import Table

    slots = _slots(row)
    if len(slots) < 2:
        return False
    t = Table(title="Checkpoint schedule: the failure rate changes over the run (exact expectation, "
                    "Daly's model per phase)", title_justify="left")
    for col in ("from (wall)", "failure rate", "job MTBF", "save every"):
        t.add_column(col, justify="right")
    for i in slots:
        factor = float(row[f"schedule{i}_rate_factor"])
        t.add_row(duration(row[f"schedule{i}_start_h"] * 60), f"{factor:g}x",
                  duration(row["job_mtbf_h"] * 60 / factor), duration(row[f"schedule{i}_interval_min"]))
    console.print(t)
    single, wall = float(row["single_interval_wall_h"]), float(row["wall_h"])
    gpus, price = float(row["gpus"]), float(row["price_per_gpu_hour"])
    console.print(f"schedule: expected wall {duration(wall * 60)}, waste {row['waste_fraction']:.2%}; best single "
                  f"interval {duration(row['single_interval_min'])}: {duration(single * 60)} "
                  f"(the schedule saves {duration((single - wall) * 60)}, "
                  f"{(single - wall) * gpus * price:,.0f} {row['currency']})", highlight=False)
    return True
