"""The cells and columns of a scenario table: which columns are numbers or text, numbers written as
text, whole-number columns and their types.

What every reader and writer of scenario tables shares with :mod:`.batch` (:mod:`ckptplan.files.tables`
and :mod:`ckptplan.files.results` read and write them, :mod:`.template_fill` and :mod:`.sweep` build
them). A column is a scenario field (:mod:`.fields`: number or text), a domain column
(``domain{i}_name``/``_mtbf_h``/``_nodes_per_domain``) or none of them; a cell is a number, a
number written as text (``" 1.5 "``, as CSV and Excel hold them), blank, one of :data:`NA_WORDS`, or
anything else (a row error where a number is needed).
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional

import numpy as np
import pandas as pd

from .fields import FIELD_BY_NAME, SETUP_FIELD_BY_NAME, TEXT_FIELDS
from .phases_table import PHASE_COL
from .scenario import DOMAIN_COL as _DOMAIN_COL
from .scenario import is_absent as _is_absent
from .scenario import is_number as _is_number

__all__ = ["INTEGER_RESULT_COLUMNS", "NA_WORDS", "TEXT_DTYPE", "coerce_numeric_text", "column_kind", "in_float_range",
           "int_series", "integer_typed", "is_dask", "is_integer_column", "plain_value", "real_numbers", "text_series",
           "text_values"]

#: words a cell may hold to mean "not given" (case-insensitive), besides blank. Not ``nan``: "not a number" is
#: a value, and a scenario file refuses it (``writers = nan``), so a table cell holding it is a row error too
NA_WORDS = ("na", "n/a", "null", "none")

#: derived columns that hold whole numbers: pandas ``Int64`` in results, int64 in Parquet
INTEGER_RESULT_COLUMNS = ("gpus", "deadline_seed", "mc_runs")

_PANDAS3 = int(pd.__version__.split(".")[0]) >= 3
#: dtype of text columns in results: pandas' default string dtype on pandas 3 (missing = NaN)
TEXT_DTYPE: Any = "str" if _PANDAS3 else object


# ======================================================================================= columns

def column_kind(name: Any) -> Optional[str]:
    """'number', 'text' or None (not a scenario column)."""
    if not isinstance(name, str):
        return None
    if name in FIELD_BY_NAME or name in SETUP_FIELD_BY_NAME:
        return "number"
    if name in TEXT_FIELDS:
        return "text"
    m = _DOMAIN_COL.match(name)
    if m:
        return "text" if m.group(2) == "name" else "number"
    if PHASE_COL.match(name):
        return "number"
    return None


_TIER_EVERY = re.compile(r"^tier\d+_every$")


def is_integer_column(name: Any) -> bool:
    """A column of whole numbers: a count field (``nodes``, ``gpus_per_node``, ``domain{i}_nodes_per_domain``)
    or a whole-number result (:data:`INTEGER_RESULT_COLUMNS`, a tier's ``tier{i}_every``)."""
    if not isinstance(name, str):
        return False
    if name in INTEGER_RESULT_COLUMNS or _TIER_EVERY.match(name) or (name in FIELD_BY_NAME and FIELD_BY_NAME[name].integer) or (
            name in SETUP_FIELD_BY_NAME and SETUP_FIELD_BY_NAME[name].integer):
        return True
    m = _DOMAIN_COL.match(name)
    return bool(m) and m.group(2) == "nodes_per_domain"


def integer_typed(values: pd.Series) -> pd.Series:
    """A float column whose every value is whole (or missing) as pandas ``Int64``; anything else unchanged."""
    if values.dtype.kind != "f":
        return values
    arr = values.to_numpy(dtype=float)
    present = arr[~np.isnan(arr)]
    if not np.isfinite(present).all() or not (np.floor(present) == present).all():
        return values
    return int_series(arr, values.index, values.name)


def int_series(arr: np.ndarray, index: Any, name: Any = None) -> pd.Series:
    """Float values (whole, NaN = missing) as an ``Int64`` Series; float64 if one is beyond int64's range."""
    mask = np.isnan(arr)
    if np.any(np.abs(arr[~mask]) >= 2.0**63):   # e.g. nodes x GPUs per node of 10^19 GPUs: no int64 holds it
        return pd.Series(arr, index=index, name=name, dtype=np.float64)
    ints = np.where(mask, 0.0, arr).astype(np.int64)
    return pd.Series(pd.arrays.IntegerArray(ints, mask), index=index, name=name, copy=False)


# ========================================================================================= cells

def text_series(values: pd.Series) -> pd.Series:
    """The column as text (pandas' string dtype on pandas 3), missing as missing, numbers as their str."""
    if _PANDAS3 and (values.dtype == TEXT_DTYPE or values.dtype.kind == "O"):
        return values.astype(TEXT_DTYPE)
    return pd.Series(text_values(values), index=values.index, dtype=TEXT_DTYPE)


def text_values(values: pd.Series) -> np.ndarray:
    """Object array of str, None where absent (numbers written as text)."""
    obj = values.to_numpy(dtype=object, na_value=None) if values.dtype.kind != "O" else values.to_numpy(dtype=object)
    out = np.empty(len(obj), dtype=object)
    for i, v in enumerate(obj):
        out[i] = None if _is_absent(v) else (v if isinstance(v, str) else str(v))
    return out


def coerce_numeric_text(values: pd.Series) -> pd.Series:
    """Numbers stored as text -> float; blanks and NA words -> NaN; other text kept (a row error later)."""
    if values.dtype.kind in "iufb":
        return values
    obj = values.to_numpy(dtype=object)
    is_str = np.fromiter((isinstance(v, str) for v in obj), dtype=bool, count=len(obj))
    if not is_str.any():
        if all((_is_number(v) and in_float_range(v)) or _is_absent(v) for v in obj):
            return pd.Series(np.array([np.nan if _is_absent(v) else float(v) for v in obj], dtype=float),
                             index=values.index, name=values.name)
        return values
    out = obj.copy()
    stripped = pd.Series(np.where(is_str, obj, ""), dtype=object).str.strip()
    absent = is_str & (stripped.eq("") | stripped.str.lower().isin(NA_WORDS)).to_numpy()
    parsed = pd.to_numeric(stripped.where(is_str & ~absent, None), errors="coerce").to_numpy(dtype=float)
    numeric = is_str & ~absent & ~np.isnan(parsed)
    out[absent] = np.nan
    out[numeric] = parsed[numeric]
    if not (is_str & ~absent & ~numeric).any() and all((_is_number(v) and in_float_range(v)) or _is_absent(v)
                                                       for v in out[~is_str]):
        return pd.Series(out.astype(float), index=values.index, name=values.name)
    return pd.Series(out, index=values.index, name=values.name, dtype=object)


def real_numbers(values: pd.Series) -> np.ndarray:
    """A column as float64: numbers (and numbers written as text) as floats, anything else NaN.

    For columns checked elsewhere (their own rule reports a bad cell): a complex, a boolean, a date or
    an int beyond float range becomes NaN here instead of a numpy cast warning or an OverflowError.
    """
    coerced = coerce_numeric_text(values)
    if coerced.dtype.kind in "iuf":
        return coerced.to_numpy(dtype=np.float64)
    obj = coerced.to_numpy(dtype=object)
    return np.array([float(v) if _is_number(v) and in_float_range(v) else np.nan for v in obj], dtype=np.float64)


def in_float_range(v: Any) -> bool:
    """A number float64 can hold (a Python int such as ``10**400`` cannot: ``float()`` overflows)."""
    try:
        float(v)
    except OverflowError:
        return False
    return True


def plain_value(v: Any) -> Any:
    """A cell as a plain Python value: numpy scalars unwrapped, NaN and pandas' NA as None."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


def is_dask(obj: Any) -> bool:
    """A ``dask.dataframe`` object (told by its type's module: dask itself is never imported here)."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")
