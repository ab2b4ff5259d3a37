"""Excel cells in, engine arrays out, and back: the coercion every ``CKPT_`` function shares.

xlwings' converters run only inside Excel, so each function coerces what Excel (or a Python caller)
can send itself: a number, ``None`` (blank cell), text, a bool, a 1-D list, a list of lists (2-D
range) or a numpy array. Each argument is checked against its rule in the field registry
(:func:`ckptplan.engine.fields.lookup`: an argument's name is the registry's name), a bad cell gets
a readable ``#CKPT! name: rule (got value)`` string in *that* result cell, and the other cells are
still computed. :func:`udf` registers a function with xlwings (desktop, Server and Lite share the
decorators) and makes it never raise. Every argument's description in Excel's function wizard is
generated from the registry (label, unit, rule, default) unless the function gives its own.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import numbers
import re
from typing import Any, Callable

import numpy as np
import pandas as pd
import xlwings as xw

from ..engine.fields import Rule, lookup

__all__ = ["CATEGORY", "ERROR_PREFIX", "REQUIRED", "CallError", "arg", "as_array", "cell_numbers", "cell_value", "choice",
           "describe", "elementwise", "never_raise", "engine_message", "error_text", "is_blank", "shaped", "show", "udf"]

ERROR_PREFIX = "#CKPT!"
CATEGORY = "ckptplan"  # the Excel function-wizard category (desktop add-in)



REQUIRED = object()      # a blank cell is an error (the default for every argument)


class CallError(Exception):
    """A problem with the whole call (one message for the call, not per cell)."""


# ------------------------------------------------------------------------------- messages

def error_text(name: str, rule: str, shown: str) -> str:
    return f"{ERROR_PREFIX} {name}: {rule} (got {shown})"


def show(item: Any) -> str:
    """How a cell value appears in an error message."""
    if item is None or (isinstance(item, str) and item == ""):
        return "a blank cell"
    if isinstance(item, (bool, np.bool_)):
        return "TRUE" if item else "FALSE"
    if isinstance(item, str):
        text = item if len(item) <= 30 else item[:27] + "..."
        return f"text {text!r}"
    if isinstance(item, numbers.Real):
        v = float(item)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "infinity" if v > 0 else "-infinity"
        return f"{v:.10g}"
    return f"a {type(item).__name__}"


def engine_message(exc: ValueError, names: dict[str, str]) -> str:
    """An engine InputError as a cell message, with the engine's argument named as in Excel."""
    field = getattr(exc, "field", None)
    if field is None:
        return f"{ERROR_PREFIX} {exc}"
    if field == "columns":  # a table-wide problem: the value is the column's name
        return f"{ERROR_PREFIX} table: column {getattr(exc, 'value', '')!r}: {getattr(exc, 'rule', exc)}"
    value = getattr(exc, "value", None)
    return error_text(names.get(field, field), getattr(exc, "rule", str(exc)), show(value))


# ------------------------------------------------------------------------------- coercion

def as_array(name: str, value: Any) -> np.ndarray:
    """Whatever Excel (or a Python caller) passed, as a numpy array.

    numpy arrays keep their dtype; Python values and nested lists become object arrays holding
    the original objects (``np.asarray`` without ``dtype=object`` would silently turn ``TRUE``
    into 1 and numbers into strings).
    """
    if isinstance(value, (pd.Series, pd.DataFrame)):
        value = value.to_numpy()
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, (list, tuple)):
        try:
            arr = np.asarray(value, dtype=object)
        except ValueError:  # ragged nesting that numpy cannot even hold as objects
            raise CallError(f"{ERROR_PREFIX} {name}: a range must be rectangular (every row as long as the first)") from None
    else:
        arr = np.empty((), dtype=object)
        arr[()] = value
    if arr.ndim > 2:
        raise CallError(f"{ERROR_PREFIX} {name}: must be a single cell or a range (at most 2 dimensions)")
    if arr.size == 0:
        raise CallError(f"{ERROR_PREFIX} {name}: the range is empty")
    if arr.dtype == object and any(issubclass(t, (list, tuple, np.ndarray)) for t in set(map(type, arr.reshape(-1)))):
        raise CallError(f"{ERROR_PREFIX} {name}: a range must be rectangular (every row as long as the first)")
    return arr


# element types that are plain numbers (bool is deliberately absent: type(True) is bool)
_PLAIN_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32, np.int16, np.int8,
                            np.uint64, np.uint32, np.uint16, np.uint8})


def is_blank(value: Any) -> bool:
    """True for a blank cell, alone or as a 1 x 1 range (an omitted or blank optional argument)."""
    if value is None or (isinstance(value, str) and value == ""):
        return True
    if isinstance(value, (list, tuple)) and len(value) == 1:
        return is_blank(value[0])
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype == object:
        return is_blank(value.reshape(-1)[0])
    return False


def cell_numbers(name: str, value: Any, rule: Rule, blank: Any = REQUIRED) -> tuple[np.ndarray, np.ndarray]:
    """Coerce one argument cell by cell: float values and an object array of error strings.

    ``errors`` holds None where the cell is good. ``rule``: the registry's rule of the argument
    (:mod:`ckptplan.engine.fields`). ``blank``: the value a blank cell stands for, or ``REQUIRED`` (a
    blank is an error).
    """
    arr = _plain_range(value)  # the usual case, a range of numbers: converted without an object array
    if arr is None:
        arr = as_array(name, value)
        if arr.dtype == object and set(map(type, arr.reshape(-1))) <= _PLAIN_NUMBERS:
            arr = arr.astype(np.float64)
    errors = np.full(arr.shape, None, dtype=object)
    if arr.dtype.kind in "fiu":
        values = arr.astype(np.float64)
        checked = np.ones(arr.shape, dtype=bool)
    else:
        values = np.full(arr.shape, np.nan)
        checked = np.zeros(arr.shape, dtype=bool)
        flat_v, flat_e, flat_c = values.reshape(-1), errors.reshape(-1), checked.reshape(-1)
        for i, item in enumerate(arr.reshape(-1)):
            if item is None or (isinstance(item, str) and item == ""):
                if blank is REQUIRED:
                    flat_e[i] = error_text(name, "must be a number", show(item))
                else:
                    flat_v[i] = blank
            elif isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Real):
                flat_e[i] = error_text(name, "must be a number", show(item))
            else:
                flat_v[i] = float(item)
                flat_c[i] = True
    text = rule.message
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values)
        good = rule.predicate(values)
    if checked.all() and finite.all() and np.all(good):  # every cell a valid number: no error to write
        return values, _no_errors(values.shape)
    flat_v, flat_e = values.reshape(-1), errors.reshape(-1)  # views: writes reach the arrays
    for i in np.flatnonzero(checked & ~finite):
        flat_e[i] = error_text(name, "must be a finite number", show(flat_v[i]))
    for i in np.flatnonzero(checked & finite & ~good):
        flat_e[i] = error_text(name, text, show(flat_v[i]))
    return values, errors


def _plain_range(value: Any) -> np.ndarray | None:
    """A list of plain numbers, or a rectangular list of lists of them, as a float array; None for
    anything else (text, blanks, bools, ragged or deeper nesting: :func:`as_array` then decides)."""
    if type(value) is not list or not value:
        return None
    if type(value[0]) is list:
        width = len(value[0])
        if not width or not set(map(type, value)) <= {list}:
            return None
        try:
            flat = [x for (x,) in value] if width == 1 else list(itertools.chain.from_iterable(value))
        except ValueError:  # a row of another length
            return None
        if len(flat) != width * len(value) or (width > 1 and set(map(len, value)) != {width}):
            return None
        shape: tuple = (len(value), width)
    else:
        flat, shape = value, (len(value),)
    if not set(map(type, flat)) <= _PLAIN_NUMBERS:
        return None
    return np.array(flat, dtype=np.float64).reshape(shape)


def _no_errors(shape: tuple) -> np.ndarray:
    """An all-None error array of ``shape`` (read-only, one element broadcast: :func:`elementwise`
    recognises it without looking at every cell)."""
    return np.broadcast_to(np.array(None, dtype=object), shape)


def _has_errors(errors: np.ndarray) -> bool:
    if errors.size > 1 and not any(errors.strides) and errors.reshape(-1)[0] is None:
        return False  # :func:`_no_errors`
    return bool(np.not_equal(errors, None).any())


def arg(name: str, value: Any, default: Any = REQUIRED, blank: Any = REQUIRED):
    """:func:`cell_numbers` for the argument ``name``, checked against its registry rule
    (:func:`ckptplan.engine.fields.lookup`: the argument names are the registry's names); an
    optional argument given as a single blank cell takes ``default``."""
    if default is not REQUIRED and is_blank(value):
        value = default
    return (name,) + cell_numbers(name, value, lookup(name).check, blank)


def choice(name: str, value: Any, choices: dict[str, float], default: str):
    """A text argument (e.g. the model) as float codes, element-wise, with the same error handling."""
    if is_blank(value):
        value = default
    arr = as_array(name, value)
    codes = np.full(arr.shape, np.nan)
    errors = np.full(arr.shape, None, dtype=object)
    allowed = " or ".join(f'"{c}"' for c in choices)
    for idx in np.ndindex(arr.shape):
        item = arr[idx]
        key = re.sub(r"[\s-]+", "_", item.strip().lower()) if isinstance(item, str) else None
        if key in choices:
            codes[idx] = choices[key]
        else:
            errors[idx] = error_text(name, f"must be {allowed}", show(item))
    return name, codes, errors


# ------------------------------------------------------------------------------- evaluation

def elementwise(specs: list[tuple[str, np.ndarray, np.ndarray]], compute: Callable[..., Any],
                 names: dict[str, str]) -> Any:
    """Broadcast the coerced arguments, compute the good cells, put error strings in the bad ones.

    ``compute(*columns)`` gets one 1-D float array per argument (the good cells only) and calls the
    engine. When the engine refuses some of them (a rule that spans arguments, such as the async
    write having to finish before the next save), the cells are split in halves until each refused
    cell is isolated, so one bad row never blanks out the good ones (cost: a few extra engine calls
    per refused cell). ``names`` maps the engine's argument names to the Excel ones.
    """
    try:
        shape = np.broadcast_shapes(*(values.shape for _, values, _ in specs))
    except ValueError:
        shapes = ", ".join(f"{name} {'x'.join(map(str, v.shape)) or 'single cell'}" for name, v, _ in specs)
        raise CallError(f"{ERROR_PREFIX} shapes: ranges must have the same size, or be single cells, "
                         f"or be a row against a column ({shapes})") from None
    size = int(np.prod(shape))
    columns = [np.broadcast_to(values, shape).reshape(-1) for _, values, _ in specs]
    errors = np.full(size, None, dtype=object)
    bad = np.zeros(size, dtype=bool)
    for _, _, errs in reversed(specs):  # the first argument's error wins
        if not _has_errors(errs):
            continue
        flat = np.broadcast_to(errs, shape).reshape(-1)
        here = flat.astype(bool)  # error strings are never empty; None is False
        errors[here] = flat[here]
        bad |= here
    results = np.full(size, np.nan)

    def solve(idx: np.ndarray) -> None:
        try:
            with np.errstate(all="ignore"):
                part = columns if idx.size == size else [c[idx] for c in columns]  # every cell: no gather
                result = np.asarray(compute(*part), dtype=np.float64).reshape(-1)
        except ValueError as exc:  # engine.InputError and its relatives
            if idx.size == 1:
                errors[idx[0]] = engine_message(exc, names)
                bad[idx[0]] = True
                return
            half = idx.size // 2
            solve(idx[:half])
            solve(idx[half:])
            return
        results[idx] = result
        broken = idx[~np.isfinite(result)]
        if broken.size:
            errors[broken] = f"{ERROR_PREFIX} result: not a finite number (the model breaks down for these inputs)"
            bad[broken] = True

    good = np.flatnonzero(~bad)
    if good.size:
        solve(good)
    if not bad.any():  # numbers only: straight from the float array
        return shaped(results, shape)
    out = results.astype(object)
    out[bad] = errors[bad]
    return shaped(out, shape)


def shaped(out: np.ndarray, shape: tuple) -> Any:
    """A single value for one cell, else nested lists of the broadcast shape."""
    if out.size == 1:
        return out.reshape(-1).tolist()[0]  # a Python value (a float array's element is a numpy float)
    return out.reshape(shape).tolist()


def never_raise(f: Callable, name: str, *args: Any) -> Any:
    """``f(*args)``, with a whole-call problem or any unexpected exception as one readable cell text:
    a cell must show a message, never a traceback."""
    try:
        return f(*args)
    except CallError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001
        return f"{ERROR_PREFIX} {name}: unexpected {type(exc).__name__}: {exc}"[:255]


def udf(ret: dict | None = None, **arguments: str | dict) -> Callable[[Callable], Callable]:
    """Register a function with xlwings (``xw.func`` / ``xw.arg`` / ``xw.ret``) and make it never raise.

    Every argument asks xlwings for a 2-D list (``ndim=2``, so a column stays a column) and is
    described in Excel's function wizard by :func:`describe` (from the registry); a keyword gives
    an argument its own description (a string) or converter options (a dict, with ``doc``). On Linux the decorators are no-ops; under Windows and xlwings Server
    they register the function. Any unexpected exception becomes an error string in the cell.
    """
    def decorate(f: Callable) -> Callable:
        @functools.wraps(f)
        def safe(*args: Any) -> Any:
            return never_raise(f, f.__name__, *args)

        # xlwings shows the docstring in Excel (desktop: its first 255 characters): drop the indent
        safe.__doc__ = inspect.cleandoc(f.__doc__ or f.__name__)
        wrapped: Callable = safe
        if ret is not None:
            wrapped = xw.ret(**ret)(wrapped)
        params = inspect.signature(f).parameters
        for name in reversed(list(params)):
            spec = arguments.get(name) or describe(name, params[name].default)
            options = {"ndim": 2, "doc": spec} if isinstance(spec, str) else dict(spec)
            wrapped = xw.arg(name, **options)(wrapped)
        return xw.func(category=CATEGORY)(wrapped)

    return decorate



def cell_value(v: Any) -> Any:
    """A DataFrame value as an Excel cell: Python float / str / None (never NaN)."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Real):
        v = float(v)
        return None if math.isnan(v) else v
    return v



def describe(name: str, default: Any = inspect.Parameter.empty) -> str:
    """An argument's description in Excel's function wizard, from the registry: label, unit, rule,
    and "Optional ... default" when it has one."""
    field = lookup(name)
    unit = {"min": "minutes", "h": "hours"}.get(field.unit, field.unit)
    shown = unit and unit != "fraction" and unit.lower() not in field.label.lower()
    text = f"{field.label}" + (f", {unit}" if shown else "") + f": {field.check.noun}."
    if default is not inspect.Parameter.empty:
        text = f"Optional. {text} Default {default:g}." if isinstance(default, (int, float)) else f"Optional. {text}"
    return text[:255]
