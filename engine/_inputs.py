"""Input coercion, validation and broadcasting shared by every engine function.

Every public engine function accepts scalars, numpy arrays and pandas Series alike. This module
turns those into float64 numpy arrays, checks each against a named rule, broadcasts them together
and wraps the result back into the caller's kind (float for all-scalar input, Series carrying the
first Series' index, ndarray otherwise). Bad input raises :class:`InputError`, a ``ValueError``
whose message names the argument, the offending value (and its position in an array) and the rule.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np
import pandas as pd

from .errors import InputError
from .fields import RULES

__all__ = ["as_float_array", "broadcast", "check_finite_result", "prepare", "wrapper"]


def as_float_array(name: str, value: Any, rule: str = "any", allow_inf: bool = False) -> np.ndarray:
    """Coerce ``value`` to a float64 array and check it against ``rule``.

    Rejects strings, booleans, ``None``, NaN and (unless ``allow_inf``) infinities, naming the
    first offending element.
    """
    if isinstance(value, pd.Series):
        raw = value.to_numpy()
    elif isinstance(value, (str, bytes)) or value is None or isinstance(value, bool):
        raise InputError(name, value, "must be a number or an array of numbers")
    else:
        raw = np.asarray(value)
    if raw.dtype.kind in "iuf":
        arr = raw.astype(np.float64, copy=False)
    else:
        # object/string/bool arrays: find the first element that is not a real number
        raw = np.asarray(value.to_numpy() if isinstance(value, pd.Series) else value, dtype=object)
        flat = raw.reshape(-1) if raw.ndim else raw.reshape(1)
        for i, item in enumerate(flat):
            if isinstance(item, bool) or isinstance(item, np.bool_) or not isinstance(item, numbers.Real):
                pos = np.unravel_index(i, raw.shape) if raw.ndim else None
                raise InputError(name, item, "must be a number", tuple(int(p) for p in pos) if pos else None)
        arr = raw.astype(np.float64)
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        _raise_first(name, arr, bad, "must be a finite number" if not allow_inf else "must not be NaN")
    check = RULES[rule]
    with np.errstate(invalid="ignore"):
        bad = ~check.predicate(arr)
    if bad.any():
        _raise_first(name, arr, bad, check.message)
    return arr


def _raise_first(name: str, arr: np.ndarray, bad: np.ndarray, rule: str) -> None:
    idx = np.argwhere(bad)[0] if arr.ndim else None
    value = arr[tuple(idx)] if idx is not None else arr[()]
    raise InputError(name, float(value), rule, tuple(int(i) for i in idx) if idx is not None else None)


def broadcast(**arrays: np.ndarray) -> list[np.ndarray]:
    """Broadcast named arrays together, naming them all when their shapes do not fit."""
    try:
        return list(np.broadcast_arrays(*arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in arrays.items())
        raise InputError(
            "shapes", shapes, "arguments must have the same shape or broadcast together (numpy rules)"
        ) from None


def wrapper(*originals: Any) -> Callable[[Any], Any]:
    """Return a function that gives a result the kind of the caller's inputs.

    A pandas Series among the inputs -> Series with that index; all scalars -> float;
    otherwise an ndarray.
    """
    series = next((v for v in originals if isinstance(v, pd.Series)), None)
    _check_aligned({f"argument {i + 1}": v for i, v in enumerate(originals)})
    all_scalar = all(np.ndim(v) == 0 for v in originals if not isinstance(v, pd.Series)) and series is None

    def wrap(result: np.ndarray, name: str | None = None) -> Any:
        result = np.asarray(result, dtype=np.float64)
        if series is not None and result.shape == (len(series),):
            return pd.Series(result, index=series.index, name=name)
        if all_scalar and result.ndim == 0:
            return float(result)
        return result

    return wrap


def check_finite_result(name: str, result: np.ndarray, why: str) -> None:
    """Raise instead of returning inf/NaN from a computation that overflowed."""
    bad = ~np.isfinite(result)
    if np.any(bad):
        idx = np.argwhere(bad)[0] if np.ndim(result) else None
        raise InputError(name, float(np.asarray(result)[tuple(idx)] if idx is not None else result), why,
                         tuple(int(i) for i in idx) if idx is not None else None)


def _check_aligned(named: dict[str, Any]) -> None:
    """Refuse pandas Series whose indexes differ: values are paired by position, which would silently
    pair the wrong rows (align them first, e.g. ``a, b = a.align(b)``)."""
    series = {name: v for name, v in named.items() if isinstance(v, pd.Series)}
    if len(series) < 2:
        return
    (first, ref), *rest = series.items()
    for name, s in rest:
        if not s.index.equals(ref.index):
            raise InputError(name, f"Series with index {list(s.index[:3])}...",
                             f"must have the same index as {first} ({list(ref.index[:3])}...): values are paired "
                             "by position, so align the Series first (a, b = a.align(b))")


def prepare(*specs: tuple[str, Any, str]) -> tuple[list[np.ndarray], Callable[[Any], Any]]:
    """Validate ``(name, value, rule)`` triples, broadcast them, and give the result wrapper.

    pandas Series with different indexes are refused (:func:`_check_aligned`), never paired by position.
    """
    _check_aligned({name: value for name, value, _ in specs})
    arrays = {name: as_float_array(name, value, rule) for name, value, rule in specs}
    return broadcast(**arrays), wrapper(*(value for _, value, _ in specs))
