"""Building evaluate's result frame from arrays, once: pandas mechanics, apart from :mod:`.scenario`'s models."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["result_frame"]


def result_frame(table: pd.DataFrame, new: dict[str, np.ndarray]) -> pd.DataFrame:
    """The table with the derived columns appended (replacing a column of the same name in place).

    Built once from the arrays: each derived array becomes a column as it is (no copy, no
    consolidation into one 2-D block, which cost more than the formulas on 10^6 rows). With
    copy-on-write (always in pandas >= 3) the table's own columns are shared, not copied: writing
    to either frame copies first. An array that is a view, or listed twice, is copied so that no
    two columns, and no column and the caller's table, share a buffer pandas does not know about.
    """
    cow = _copy_on_write()
    seen: set[int] = set()
    for name, arr in new.items():
        if arr.base is not None or id(arr) in seen:
            new[name] = arr = arr.copy()
        seen.add(id(arr))
    out = table.copy(deep=not cow)
    for name in [k for k in new if k in out.columns]:  # e.g. a job_mtbf_h override: replaced in place
        out[name] = new.pop(name)
    derived = pd.DataFrame(new, index=table.index, copy=False)
    return pd.concat([out, derived], axis=1) if cow else pd.concat([out, derived], axis=1, copy=False)


def _copy_on_write() -> bool:
    """pandas copies on write: always from pandas 3, by option in pandas 2."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    try:
        return pd.get_option("mode.copy_on_write") is True
    except KeyError:  # pragma: no cover - pandas without the option
        return False
