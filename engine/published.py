"""A scenario's text field that names a published figure giving one of its numbers.

``failure_rate_source`` names a published fleet failure rate that gives ``node_mtbf_h``
(:mod:`ckptplan.engine.fleets`); ``preemption_rate_source`` a published spot interruption band that gives
``preemptions_per_node_h`` (:mod:`ckptplan.engine.spot_rates`). Both follow one rule, written here: an empty
source gives nothing, an unknown one is refused (the lookup's rule, naming the source field), and a row that names
a source and also gives a different number (beyond 1e-9 relative) is refused: one figure per quantity.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .errors import InputError

__all__ = ["published_values"]


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or (isinstance(value, str) and not value.strip())


def published_values(sources: Any, given: Any, lookup: Callable[[str], float], source_field: str, value_field: str
                     ) -> tuple[np.ndarray, list[tuple[int, InputError]]]:
    """Each row's number from its ``source_field`` (NaN where empty) and the bad rows (row, error).

    ``sources``: the rows' source names; ``given``: the rows' ``value_field`` as given (None or NaN: not given);
    ``lookup(name)``: the published figure, raising :class:`InputError` for an unknown name (module notes).
    """
    import pandas as pd

    stated = np.asarray(pd.Series(given, dtype=object).map(lambda v: np.nan if v is None else v), dtype=float)
    sources = pd.Series(sources, dtype=object).reset_index(drop=True)
    out = np.full(len(sources), np.nan)
    bad: list[tuple[int, InputError]] = []
    for value in pd.unique(sources):
        if _blank(value):
            continue
        rows = np.flatnonzero((sources == value).to_numpy())
        try:
            figure = lookup(str(value))
        except InputError as exc:
            bad += [(int(p), InputError(source_field, value, exc.rule)) for p in rows]
            continue
        for p in rows:
            if not np.isnan(stated[p]) and abs(stated[p] - figure) > 1e-9 * figure:
                bad.append((int(p), InputError(source_field, value,
                                               f"gives {value_field} = {figure:g}; the row also gives {value_field} = "
                                               f"{stated[p]:g}: give one of them")))
            else:
                out[p] = figure
    return out, bad
