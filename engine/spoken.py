"""Quantities in the words a planner reads: one formatter for every surface that prints a time (the
console, the engine's advice notes), so "2.83 s" and "40.6 min" read the same everywhere. Machine
outputs (``--json``, tables) keep each field's own unit.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["duration"]


def duration(minutes: Any) -> str:
    """A time in the unit a person would say it: seconds below a minute, minutes below two hours ("every
    68 min", "a 90 min restart"), hours from there on, above a day too (runs, deadlines and MTBFs are
    budgeted in hours). Three significant digits, one decimal from 100 h (``2.83 s``, ``40.6 min``,
    ``3.09 h``, ``1,484.9 h``); "-" for none.

    Every console surface prints its durations with this; ``--json`` keeps each field's own unit.
    """
    if minutes is None or not math.isfinite(float(minutes)):
        return "-"
    m = float(minutes)
    if abs(m) < 1:
        return f"{m * 60:.3g} s"
    if abs(m) < 120:
        return f"{m:.3g} min"
    hours = m / 60
    if abs(hours) < 100:
        return f"{hours:.3g} h"
    return f"{hours:,.1f}".removesuffix(".0") + " h"
