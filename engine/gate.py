"""The gate of every engine function: input coercion, validation and broadcasting.

Every public engine function accepts scalars, numpy arrays and pandas Series alike. This module
turns those into float64 numpy arrays, checks each against a named rule, broadcasts them together
and wraps the result back into the caller's kind (float for all-scalar input, Series carrying the
first Series' index, ndarray otherwise). Bad input raises :class:`InputError`, a ``ValueError``
whose message names the argument, the offending value (and its position in an array) and the rule.

The gate, for every public engine function: types (strings, bytes, None, bools, dicts, sets,
complex numbers, ``Decimal``, dates and time spans, masked elements and ragged nested lists are
refused), finiteness (NaN, inf), magnitude (Python ints and long doubles beyond the float64 range
are refused, not turned into inf), broadcasts that would explode (:data:`MAX_BROADCAST_ELEMENTS`) and
Series on different indexes. A model whose result overflows or underflows raises through
:func:`check_finite_result`, naming the argument and the limit: every number returned is finite.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any, Callable, Mapping, Optional

import numpy as np
import pandas as pd

from .errors import InputError
from .fields import RULES

__all__ = ["FLOAT_MAX", "FLOAT_TINY", "MAX_BROADCAST_ELEMENTS", "as_float_array", "broadcast", "check_finite_result",
           "check_number", "ndim_of", "prepare", "to_float", "wrapper"]

#: the largest finite float64 (every input and every result stays at or below it)
FLOAT_MAX = sys.float_info.max
#: the smallest normal float64: a derived time or rate below it has lost its precision (or underflowed to 0)
FLOAT_TINY = sys.float_info.min
#: most elements a broadcast may create beyond the largest input (an outer product of two long arrays
#: would otherwise allocate gigabytes in the first formula that touches it)
MAX_BROADCAST_ELEMENTS = 10**7

_NUMBERS = "must be a number or an array of numbers"


def as_float_array(name: str, value: Any, rule: str = "any", allow_inf: bool = False) -> np.ndarray:
    """Coerce ``value`` to a float64 array and check it against ``rule``.

    Rejects strings, booleans, ``None``, complex numbers, ``Decimal``, dates and time spans, masked
    elements, ragged nested lists, NaN, numbers beyond the float64 range (``10**400``) and (unless
    ``allow_inf``) infinities, naming the first offending element. Never raises anything but
    :class:`InputError`.
    """
    if isinstance(value, pd.Series):
        raw = value.to_numpy()
    elif isinstance(value, (str, bytes)) or value is None or isinstance(value, (bool, np.bool_)):
        raise InputError(name, value, _NUMBERS)
    else:
        if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
            pos = np.argwhere(np.ma.getmaskarray(value))[0] if np.ndim(value) else None
            raise InputError(name, "masked", "must be a number: masked elements are not numbers (fill them first)",
                             tuple(int(p) for p in pos) if pos is not None else None)
        try:
            raw = np.asarray(value)
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            raise InputError(name, value, f"{_NUMBERS} (nested lists must be rectangular: {exc})") from None
    if raw.dtype.kind in "iu":
        arr = raw.astype(np.float64)
    elif raw.dtype.kind == "f":
        if raw.dtype.itemsize > 8:  # long double: refuse what float64 cannot hold rather than make it inf
            with np.errstate(invalid="ignore"):
                big = np.abs(raw) > FLOAT_MAX
            if big.any():
                pos = tuple(int(i) for i in np.argwhere(big)[0]) if raw.ndim else None
                raise InputError(name, str(raw[pos] if pos else raw[()]),
                                 f"must be within the float64 range (|x| <= {FLOAT_MAX:.6g})", pos)
        arr = raw.astype(np.float64, copy=False)
    else:
        # object/string/bool/complex/date arrays: find the first element that is not a real number
        raw = _objects(name, value)
        flat = raw.reshape(-1) if raw.ndim else raw.reshape(1)
        for i, item in enumerate(flat):
            if (isinstance(item, (bool, np.bool_, np.datetime64, np.timedelta64))
                    or not isinstance(item, numbers.Real)):
                pos = np.unravel_index(i, raw.shape) if raw.ndim else None
                raise InputError(name, item, "must be a number", tuple(int(p) for p in pos) if pos else None)
        try:
            arr = raw.astype(np.float64)
        except (OverflowError, TypeError, ValueError):
            arr = np.empty(raw.shape)
            for i, item in enumerate(flat):
                try:
                    arr.reshape(-1)[i] = float(item)
                except (OverflowError, TypeError, ValueError):
                    pos = np.unravel_index(i, raw.shape) if raw.ndim else None
                    raise InputError(name, _short(item), f"must be within the float64 range (|x| <= {FLOAT_MAX:.6g})",
                                     tuple(int(p) for p in pos) if pos else None) from None
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        _raise_first(name, arr, bad, "must be a finite number" if not allow_inf else "must not be NaN")
    check = RULES[rule]
    with np.errstate(invalid="ignore"):
        bad = ~check.predicate(arr)
    if bad.any():
        _raise_first(name, arr, bad, check.message)
    return arr


def _objects(name: str, value: Any) -> np.ndarray:
    """``value`` as an object array (its elements as given), or InputError for a ragged nesting."""
    try:
        return np.asarray(value.to_numpy() if isinstance(value, pd.Series) else value, dtype=object)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise InputError(name, value, f"{_NUMBERS} ({exc})") from None


def _short(item: Any) -> Any:
    """A huge integer as its magnitude (``~1e400``) rather than 400 digits in a message."""
    if isinstance(item, numbers.Integral) and not isinstance(item, bool):
        digits = len(str(abs(int(item))))
        return f"{'-' if item < 0 else ''}~1e{digits - 1} (an integer of {digits} digits)"
    return item


def _raise_first(name: str, arr: np.ndarray, bad: np.ndarray, rule: str) -> None:
    idx = np.argwhere(bad)[0] if arr.ndim else None
    value = arr[tuple(idx)] if idx is not None else arr[()]
    raise InputError(name, float(value), rule, tuple(int(i) for i in idx) if idx is not None else None)


def broadcast(**arrays: np.ndarray) -> list[np.ndarray]:
    """Broadcast named arrays together, naming them all when their shapes do not fit.

    Refuses a broadcast that would create more than :data:`MAX_BROADCAST_ELEMENTS` elements beyond the
    largest input (e.g. a column against a row of a million values each: 10^12 results), before any
    memory is allocated.
    """
    shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in arrays.items())
    try:
        shape = np.broadcast_shapes(*(np.shape(v) for v in arrays.values()))
    except ValueError:
        raise InputError(
            "shapes", shapes, "arguments must have the same shape or broadcast together (numpy rules)"
        ) from None
    size = int(np.prod(shape, dtype=object))
    if size > max(MAX_BROADCAST_ELEMENTS, *(int(np.size(v)) for v in arrays.values())):
        raise InputError("shapes", shapes, f"broadcast together they make {size:,} values, above the limit of "
                         f"{MAX_BROADCAST_ELEMENTS:,} (MAX_BROADCAST_ELEMENTS) beyond the largest input: evaluate "
                         "them in smaller pieces")
    return list(np.broadcast_arrays(*arrays.values()))


def wrapper(*originals: Any) -> Callable[[Any], Any]:
    """Return a function that gives a result the kind of the caller's inputs.

    A pandas Series among the inputs -> Series with that index; all scalars -> float;
    otherwise an ndarray.
    """
    series = next((v for v in originals if isinstance(v, pd.Series)), None)
    _check_aligned({f"argument {i + 1}": v for i, v in enumerate(originals)})
    all_scalar = all(ndim_of(v) == 0 for v in originals if not isinstance(v, pd.Series)) and series is None

    def wrap(result: np.ndarray, name: str | None = None) -> Any:
        result = np.asarray(result, dtype=np.float64)
        if series is not None and result.shape == (len(series),):
            return pd.Series(result, index=series.index, name=name)
        if all_scalar and result.ndim == 0:
            return float(result)
        return result

    return wrap


def ndim_of(value: Any) -> int:
    """``np.ndim`` of anything (a ragged nested list, which numpy refuses, counts as an array)."""
    try:
        return int(np.ndim(value))
    except (ValueError, TypeError, OverflowError, RecursionError):
        return 1


def check_finite_result(name: str, result: np.ndarray, why: str,
                        inputs: Optional[Mapping[str, np.ndarray]] = None) -> None:
    """Raise instead of returning inf/NaN from a computation that overflowed.

    ``inputs`` (name -> array, broadcastable to ``result``): the values at the first bad position are
    quoted, and where one of them is itself not finite (a unit conversion upstream overflowed) that one
    is named instead. The error names ``name`` with its input value when ``name`` is among ``inputs``.
    """
    bad = ~np.isfinite(result)
    if not np.any(bad):
        return
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if np.ndim(result) else None
    at: dict[str, float] = {}
    for key, arr in (inputs or {}).items():
        try:
            at[key] = float(np.broadcast_to(np.asarray(arr, dtype=np.float64), np.shape(result))[idx or ()])
        except ValueError:
            continue
    for key, v in at.items():
        if not np.isfinite(v):
            raise InputError(key, v, f"must be a finite number: it is outside the float64 range "
                             f"(|x| <= {FLOAT_MAX:.6g}) after a unit conversion", idx)
    value = at[name] if name in at else float(np.asarray(result)[idx] if idx is not None else result)
    quoted = ", ".join(f"{k} = {v:.6g}" for k, v in at.items())
    raise InputError(name, value, f"{why}{' at ' + quoted if quoted else ''} (results must stay within the float64 "
                     f"range, |x| <= {FLOAT_MAX:.6g})", idx)


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


def to_float(value: Any) -> float:
    """A number as a float, a Python int beyond the float64 range as a signed infinity (10**400 -> inf), which
    the finiteness rules then refuse by name."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_number(name: str, value: Any, rule: str) -> float | int | None:
    """One optional number (a table's value, not an array) checked against ``rule``: None stays None, a
    whole-number rule (``count``, ``whole``) gives an int, anything else a float. Refuses booleans, text,
    NaN, infinities and Python ints beyond the float64 range, naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(name, value, "must be a number")
    try:
        v = float(value)
    except OverflowError:  # a Python int beyond float range
        raise InputError(name, value, "must be a finite number (within the float64 range)") from None
    if not math.isfinite(v):
        raise InputError(name, value, "must be a finite number")
    if not bool(RULES[rule].predicate(np.float64(v))):
        raise InputError(name, value, RULES[rule].message)
    return int(v) if rule in ("count", "whole") else v
