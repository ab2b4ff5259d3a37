"""Excel cells in, engine arrays out, and back: the coercion every ``CKPT_`` function shares.

xlwings' converters run only inside Excel, so each function coerces what Excel (or a Python caller)
can send itself: a number, ``None`` (blank cell), text, a bool, a 1-D list, a list of lists (2-D
range) or a numpy array. Each argument is checked against its rule in the field registry
(:func:`ckptplan.engine.fields.lookup`: an argument's name is the registry's name), a bad cell gets
a readable ``#CKPT! name: rule (got value)`` string in *that* result cell, and the other cells are
still computed. :func:`udf` registers a function with xlwings (desktop, Server and Lite share the
decorators) and makes it never raise. Every argument's description in Excel's function wizard is
generated from the registry (label, unit, rule, default) unless the function gives its own.

Cost: whole arrays, never a Python step per good cell. A range of plain numbers becomes a float
array in one C pass, rules are the registry's numpy predicates, the result is the float array's
``tolist()`` when no cell failed. Bad cells cost about what good ones do: cells are sorted by type in
bulk, a message is built once per distinct (rule, value) and placed in every cell showing it. A rule
spanning arguments that the engine enforces by refusing the whole call is screened per cell before
the engine runs (:func:`elementwise`'s ``screen``); a refusal no screen foresaw is isolated by
splitting the cells, at most :data:`MAX_RETRIES` extra engine calls per call.

Cell budget: :data:`MAX_UDF_CELLS` (250,000) cells per argument and per result. A bigger call (a
whole column ``A:A`` is 1,048,576 cells; a column against a row broadcasts to millions) answers with
one readable ``#CKPT!`` message instead of computing, so no call freezes Excel.
"""

from __future__ import annotations

import functools
import gc
import inspect
import math
import numbers
import re
import struct
from itertools import chain, repeat
from typing import Any, Callable

import numpy as np
import pandas as pd
import xlwings as xw

from ..engine.errors import BLANK
from ..engine.fields import Rule, lookup

__all__ = ["CATEGORY", "ERROR_PREFIX", "EXCEL_ERRORS", "MAX_RETRIES", "MAX_UDF_CELLS", "RANGE_NOTE", "REQUIRED",
           "CallError", "arg", "as_array", "budget_text", "cell_count", "cell_numbers", "cell_value", "choice",
           "describe", "elementwise", "engine_message", "error_text", "is_blank", "messages", "never_raise", "shaped",
           "show", "udf"]

ERROR_PREFIX = "#CKPT!"
CATEGORY = "ckptplan"  # the Excel function-wizard category (desktop add-in)

#: most cells one argument of a CKPT_ call may hold, and most cells its result may have (the
#: broadcast shape of its arguments); a bigger call answers with one #CKPT! message (:func:`budget_text`)
MAX_UDF_CELLS = 250_000
#: most extra engine calls a range call spends isolating cells the engine refuses that no screen foresaw
MAX_RETRIES = 256
#: the sentence :func:`udf` adds to the description of every function that takes ranges
RANGE_NOTE = (f"Ranges: at most {MAX_UDF_CELLS:,} cells per argument and per result; a bigger call gives one "
              "#CKPT! message (split the range).")
#: the error values Excel shows in a cell (xlwings hands them over as blank cells, or as this text)
EXCEL_ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA",
                          "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!", "#CONNECT!", "#BUSY!", "#UNKNOWN!"})

REQUIRED = object()      # a blank cell is an error (the default for every argument)


class CallError(Exception):
    """A problem with the whole call (one message for the call, not per cell)."""


# ------------------------------------------------------------------------------- messages

def error_text(name: str, rule: str, shown: str) -> str:
    return f"{ERROR_PREFIX} {name}: {rule} (got {shown})"


def show(item: Any) -> str:
    """How a cell value appears in an error message (never long, never raises)."""
    if type(item) is float and item - item == 0.0:  # the usual case: a finite float
        return f"{item:.10g}"
    if item is None or item is BLANK or (isinstance(item, str) and item == ""):
        return "a blank cell"
    if isinstance(item, (bool, np.bool_)):
        return "TRUE" if item else "FALSE"
    if isinstance(item, str):
        if item in EXCEL_ERRORS:
            return f"the Excel error {item}"
        text = item if len(item) <= 30 else item[:27] + "..."
        return f"text {text!r}"
    if isinstance(item, numbers.Real):
        try:
            v = float(item)
        except (OverflowError, ValueError, TypeError):
            return "a number too large" if isinstance(item, numbers.Integral) else f"a {type(item).__name__}"
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "infinity" if v > 0 else "-infinity"
        return f"{v:.10g}"
    return f"a {type(item).__name__}"


def messages(name: str, rule: str, items: list) -> list[str]:
    """``error_text(name, rule, show(item))`` for each item, built once per distinct item."""
    keys = list(zip(map(type, items), items))  # TRUE and 1 are equal keys otherwise
    try:
        texts = {key: error_text(name, rule, show(key[1])) for key in set(keys)}
    except TypeError:  # an unhashable cell (a dict): each cell on its own
        return [error_text(name, rule, show(item)) for item in items]
    return list(map(texts.__getitem__, keys))


def _number_messages(name: str, rule: str, values: np.ndarray) -> np.ndarray:
    """:func:`error_text` for float cells, one text per distinct value (object array)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)  # -0 and 0 apart, as shown
    _, first, where = np.unique(bits, return_index=True, return_inverse=True)
    return np.array([error_text(name, rule, show(v)) for v in values[first].tolist()], dtype=object)[where.reshape(-1)]


def engine_message(exc: ValueError, names: dict[str, str]) -> str:
    """An engine InputError as a cell message, with the engine's argument named as in Excel."""
    field = getattr(exc, "field", None)
    if field is None:
        return f"{ERROR_PREFIX} {exc}"[:255]
    if field == "columns":  # a table-wide problem: the value is the column's name
        return f"{ERROR_PREFIX} table: column {getattr(exc, 'value', '')!r}: {getattr(exc, 'rule', exc)}"
    value = getattr(exc, "value", None)
    return error_text(names.get(field, field), getattr(exc, "rule", str(exc)), show(value))


def budget_text(what: str, cells: int) -> str:
    """The message of a call over :data:`MAX_UDF_CELLS` (``what``: the argument, or ``result``)."""
    return (f"{ERROR_PREFIX} {what}: {cells:,} cells is more than one call takes ({MAX_UDF_CELLS:,}); "
            "split the range into smaller ranges")


# ------------------------------------------------------------------------------- coercion

def cell_count(value: Any) -> int:
    """How many cells ``value`` holds, read from its outer shape only (no cell is looked at)."""
    if isinstance(value, (np.ndarray, pd.Series, pd.DataFrame)):
        return int(value.size)
    first = value[0] if isinstance(value, (list, tuple)) and value else None
    return len(value) * (len(first) or 1) if isinstance(first, (list, tuple, np.ndarray)) else \
        len(value) if isinstance(value, (list, tuple)) else 1


def as_array(name: str, value: Any) -> np.ndarray:
    """Whatever Excel (or a Python caller) passed, as a numpy array.

    numpy arrays keep their dtype; Python values and nested lists become object arrays holding
    the original objects (``np.asarray`` without ``dtype=object`` would silently turn ``TRUE``
    into 1 and numbers into strings). More than :data:`MAX_UDF_CELLS` cells is a :class:`CallError`.
    """
    if cell_count(value) > MAX_UDF_CELLS:
        raise CallError(budget_text(name, cell_count(value)))
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
    if arr.dtype == object and not _CONTAINERS.isdisjoint(map(type, arr.reshape(-1).tolist())):
        raise CallError(f"{ERROR_PREFIX} {name}: a range must be rectangular (every row as long as the first)")
    return arr


_CONTAINERS = frozenset({list, tuple, np.ndarray})  # a cell holding one: the range was not rectangular


# element types that are plain numbers (bool is deliberately absent: type(True) is bool)
_PLAIN_NUMBERS = frozenset({float, int, np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
                            np.uint64, np.uint32, np.uint16, np.uint8})
_NUMBER, _BLANK, _TEXT, _BOOL, _OTHER = range(5)
_KINDS = {**{t: _NUMBER for t in _PLAIN_NUMBERS}, type(None): _BLANK, str: _TEXT, np.str_: _TEXT,
          bool: _BOOL, np.bool_: _BOOL}


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
    if type(value) in _PLAIN_NUMBERS:  # a single number
        cells = [value], ()
    else:  # the usual case, a range of numbers: one C pass, no object array
        cells = _flatten(value)
    values = None if cells is None else _pack(*cells)
    errors = checked = None
    if values is None:
        found = None if cells is None else _sort_cells(name, *cells, blank=blank)
        if found is None:  # not a list (of lists) as Excel sends, or one holding lists: numpy decides
            arr = as_array(name, value)
            if arr.dtype.kind in "fiu":
                values = arr.astype(np.float64)
            else:
                found = _sort_cells(name, arr.reshape(-1).tolist(), arr.shape, arr.dtype, blank=blank)
        if values is None:
            if found is None:
                raise CallError(f"{ERROR_PREFIX} {name}: a range must be rectangular (every row as long as the first)")
            values, errors, checked = found
    finite = np.isfinite(values)
    if finite.all():
        good = rule.predicate(values)
        if (checked is None or checked.all()) and good.all():  # every cell valid: no error to write
            return values, _no_errors(values.shape)
    else:
        with np.errstate(invalid="ignore"):
            good = rule.predicate(values)
    if errors is None:
        errors = np.full(values.shape, None, dtype=object)
    flat_v, flat_e = values.reshape(-1), errors.reshape(-1)  # views: writes reach the arrays
    ok = np.ones(values.size, dtype=bool) if checked is None else checked.reshape(-1)
    finite = finite.reshape(-1)
    broken = np.flatnonzero(ok & ~finite)
    if broken.size:
        flat_e[broken] = _number_messages(name, "must be a finite number", flat_v[broken])
    refused = np.flatnonzero(ok & finite & ~good.reshape(-1))
    if refused.size:
        flat_e[refused] = _number_messages(name, rule.message, flat_v[refused])
    return values, errors


def _flatten(value: Any) -> tuple[list, tuple] | None:
    """The cells of a list, or of a rectangular list of lists (rows), as one flat list and the
    range's shape; None for anything else (numpy arrays, ragged rows: :func:`as_array` decides)."""
    if type(value) is not list or not value or len(value) > MAX_UDF_CELLS:
        return None
    first = value[0]
    if type(first) not in (list, tuple):
        return value, (len(value),)
    width = len(first)
    if not width or len(value) * width > MAX_UDF_CELLS:
        return None
    try:
        if width == 1:
            flat = [x for (x,) in value]  # fails on a row of another length
        else:
            flat = list(chain.from_iterable(value))
            if len(flat) != width * len(value) or set(map(len, value)) != {width}:
                return None
    except (TypeError, ValueError):
        return None
    return flat, (len(value), width)


def _pack(flat: list, shape: tuple) -> np.ndarray | None:
    """Plain numbers as a float array in one C pass; None if a cell is anything else.

    ``struct.pack`` of doubles takes every real number and refuses text, blanks and lists; a bool
    passes it as 0 or 1, so only cells holding exactly 0 or 1 have their type looked at.
    """
    try:
        values = np.frombuffer(struct.pack(f"{len(flat)}d", *flat), dtype=np.float64)
    except Exception:  # noqa: BLE001 (text, a blank, a list, a number too large: the careful path)
        return None
    maybe_bool = (values == 0.0) | (values == 1.0)
    if maybe_bool.any():
        maybe_bool = np.flatnonzero(maybe_bool)
        cells = flat if 4 * maybe_bool.size > values.size else map(flat.__getitem__, maybe_bool.tolist())
        if not set(map(type, cells)) <= _PLAIN_NUMBERS:
            return None
    return values.reshape(shape)


def _sort_cells(name: str, items: list, shape: tuple, dtype: Any = None, *,
                blank: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The careful path: cells sorted by type in bulk (values, errors, mask of number cells).

    Numbers become floats; blanks (None, "") the ``blank`` value or an error; text, bools and
    anything else an error, its message built once per distinct value. None when a cell holds a
    list (the range is not rectangular, or deeper than 2 dimensions).
    """
    values = np.full(len(items), np.nan)
    errors = np.full(len(items), None, dtype=object)
    if dtype is not None and dtype.kind not in "OUSb":  # datetimes, complex numbers: not numbers
        errors[:] = error_text(name, "must be a number", f"a {dtype.name} value")
        return values.reshape(shape), errors.reshape(shape), np.zeros(shape, dtype=bool)
    types = list(map(type, items))
    if not _CONTAINERS.isdisjoint(types):
        return None
    kinds = np.fromiter(map(_KINDS.get, types, repeat(_OTHER)), dtype=np.int8, count=len(items))
    for i in np.flatnonzero(kinds == _OTHER).tolist():  # subclasses, Fractions, Decimals, ...: one by one
        item = items[i]
        if isinstance(item, (bool, np.bool_)):
            kinds[i] = _BOOL
        elif isinstance(item, numbers.Real) or (isinstance(item, numbers.Number) and
                                                not isinstance(item, numbers.Complex)):  # Decimal
            kinds[i] = _NUMBER
        elif isinstance(item, str):
            kinds[i] = _TEXT
    text = np.flatnonzero(kinds == _TEXT)
    if text.size:
        empty = text[np.fromiter(map(len, map(items.__getitem__, text.tolist())), dtype=np.int64, count=text.size) == 0]
        kinds[empty] = _BLANK
    number = np.flatnonzero(kinds == _NUMBER)
    if number.size:
        cells = list(map(items.__getitem__, number.tolist()))
        try:
            values[number] = np.array(cells, dtype=np.float64)
        except (OverflowError, ValueError, TypeError):  # a number float() refuses (an int beyond 1e308)
            values[number] = [_as_float(x) for x in cells]
    blanks = kinds == _BLANK
    if blank is REQUIRED:
        errors[blanks] = error_text(name, "must be a number", "a blank cell")
    else:
        values[blanks] = blank
    others = np.flatnonzero((kinds != _NUMBER) & (kinds != _BLANK))
    if others.size:
        errors[others] = messages(name, "must be a number", list(map(items.__getitem__, others.tolist())))
    return values.reshape(shape), errors.reshape(shape), (kinds == _NUMBER).reshape(shape)


def _as_float(x: Any) -> float:
    try:
        return float(x)
    except OverflowError:  # an int beyond 1e308
        return math.inf if x > 0 else -math.inf
    except (ValueError, TypeError):  # Decimal("sNaN")
        return math.nan


def _no_errors(shape: tuple) -> np.ndarray:
    """An all-None error array of ``shape`` (read-only, one element broadcast: :func:`elementwise`
    recognises it without looking at every cell)."""
    if shape not in _NO_ERRORS:
        if len(_NO_ERRORS) > 64:
            _NO_ERRORS.clear()
        _NO_ERRORS[shape] = np.broadcast_to(np.array(None, dtype=object), shape)
    return _NO_ERRORS[shape]


_NO_ERRORS: dict[tuple, np.ndarray] = {}


def _has_errors(errors: np.ndarray) -> bool:
    if errors is _NO_ERRORS.get(errors.shape) or (errors.size > 1 and not any(errors.strides)
                                                  and errors.reshape(-1)[0] is None):
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
    """A text argument (e.g. the model) as float codes, element-wise, with the same error handling
    (each distinct cell is read once)."""
    if is_blank(value):
        value = default
    allowed = " or ".join(f'"{c}"' for c in choices)

    def read(item: Any) -> tuple[float, Any]:
        code = choices.get(re.sub(r"[\s-]+", "_", item.strip().lower())) if isinstance(item, str) else None
        return (np.nan, error_text(name, f"must be {allowed}", show(item))) if code is None else (code, None)

    if isinstance(value, str) and read(value)[1] is None:  # one good cell
        return name, np.array(read(value)[0]), _no_errors(())
    arr = as_array(name, value)
    items = arr.reshape(-1).tolist()
    keys = list(zip(map(type, items), items))
    try:
        table = {key: read(key[1]) for key in set(keys)}
        resolved = list(map(table.__getitem__, keys))
    except TypeError:  # an unhashable cell: every cell on its own
        resolved = list(map(read, items))
    codes = np.array([c for c, _ in resolved], dtype=np.float64).reshape(arr.shape)
    errors = np.array([e for _, e in resolved] + [None], dtype=object)[:-1].reshape(arr.shape)
    return name, codes, errors


# ------------------------------------------------------------------------------- evaluation

def elementwise(specs: list[tuple[str, np.ndarray, np.ndarray]], compute: Callable[..., Any],
                names: dict[str, str], screen: Callable[..., Any] | None = None) -> Any:
    """Broadcast the coerced arguments, compute the good cells, put error strings in the bad ones.

    ``compute(*columns)`` gets one 1-D float array per argument (the good cells only) and calls the
    engine; it returns the results, or ``(results, refused)`` with ``refused`` an object array of
    messages (None where the cell is good). ``screen(*columns)`` (optional, same columns) returns
    such an array of messages for the cells the engine would refuse for a rule spanning arguments
    (or None when none): those cells get their message and the engine sees only the others. When
    the engine still refuses some cells, the cells are split in halves until each refused cell is
    isolated, at most :data:`MAX_RETRIES` extra engine calls, so one bad row never blanks out the
    good ones. ``names`` maps the engine's argument names to the Excel ones.
    """
    shapes = {values.shape for _, values, _ in specs} - {()}
    try:
        shape = (shapes.pop() if shapes else ()) if len(shapes) < 2 else np.broadcast_shapes(*shapes)
    except ValueError:
        shapes = ", ".join(f"{name} {'x'.join(map(str, v.shape)) or 'single cell'}" for name, v, _ in specs)
        raise CallError(f"{ERROR_PREFIX} shapes: ranges must have the same size, or be single cells, "
                         f"or be a row against a column ({shapes})") from None
    size = math.prod(shape)
    if size > MAX_UDF_CELLS:
        raise CallError(budget_text("result", size))
    columns = [values.reshape(-1) if values.shape == shape else np.broadcast_to(values, shape).reshape(-1)
               for _, values, _ in specs]
    first = screened = None
    if not any(_has_errors(errs) for _, _, errs in specs):  # the usual case: every cell valid so far
        with np.errstate(all="ignore"):
            screened = refused = None if screen is None else screen(*columns)
        if refused is None:
            first = _attempt(compute, columns)
            if isinstance(first, np.ndarray) and first.dtype == np.float64 and first.size == size \
                    and np.isfinite(first).all():
                return shaped(first, shape)
    errors = np.full(size, None, dtype=object)
    bad = np.zeros(size, dtype=bool)
    for _, _, errs in reversed(specs):  # the first argument's error wins
        if not _has_errors(errs):
            continue
        flat = np.broadcast_to(errs, shape).reshape(-1)
        here = flat.astype(bool)  # error strings are never empty; None is False
        errors[here] = flat[here]
        bad |= here
    if screen is not None and first is None and not bad.all():
        good = np.flatnonzero(~bad)
        if screened is None:
            with np.errstate(all="ignore"):
                screened = screen(*(columns if good.size == size else [c[good] for c in columns]))
        _refuse(good, screened, errors, bad)
    results = np.full(size, np.nan)
    good = np.flatnonzero(~bad)
    if good.size:
        _solve(compute, columns, good, names, results, errors, bad, first)
    if not bad.any():  # numbers only: straight from the float array
        return shaped(results, shape)
    out = results.astype(object)
    out[bad] = errors[bad]
    return shaped(out, shape)


def _refuse(idx: np.ndarray, refused: Any, errors: np.ndarray, bad: np.ndarray) -> None:
    """Put the messages of ``refused`` (object array over the cells ``idx``, None = good) in place."""
    refused = np.asarray(refused, dtype=object).reshape(-1)
    hit = refused.astype(bool)  # None (no refusal at all, or for this cell) is False
    if hit.any():
        errors[idx[hit]] = refused[hit]
        bad[idx[hit]] = True


_BROKEN = f"{ERROR_PREFIX} result: not a finite number (the model breaks down for these inputs)"


def _attempt(compute: Callable[..., Any], part: list[np.ndarray]) -> Any:
    """``compute(*part)``: its results (an array, or a tuple with the refused cells), or the
    ``ValueError`` the engine raised."""
    try:
        with np.errstate(all="ignore"):
            got = compute(*part)
    except ValueError as exc:  # engine.InputError and its relatives
        return exc
    return got if isinstance(got, tuple) else np.asarray(got, dtype=np.float64).reshape(-1)


def _solve(compute: Callable[..., Any], columns: list[np.ndarray], good: np.ndarray, names: dict[str, str],
           results: np.ndarray, errors: np.ndarray, bad: np.ndarray, first: Any = None) -> None:
    """Compute the cells ``good``, isolating the ones the engine refuses (see :func:`elementwise`);
    ``first``: the outcome of :func:`_attempt` on every cell, when already known."""
    size = columns[0].size if columns else 0
    retries = 0
    pending = [good]
    while pending:
        idx = pending.pop()
        if first is not None and idx.size == size:
            got, first = first, None
        else:
            got = _attempt(compute, columns if idx.size == size else [c[idx] for c in columns])  # all: no gather
        if isinstance(got, ValueError):
            message = engine_message(got, names)
            if idx.size == 1:
                errors[idx[0]], bad[idx[0]] = message, True
            elif retries >= MAX_RETRIES:
                errors[idx] = (f"{ERROR_PREFIX} range: the engine refused too many cells of this range to find "
                               f"each one; one of them: {message[len(ERROR_PREFIX) + 1:]}")[:255]
                bad[idx] = True
            else:
                retries += 2
                pending += [idx[idx.size // 2:], idx[:idx.size // 2]]  # the first half first
            continue
        got, refused = got if isinstance(got, tuple) else (got, None)
        result = np.asarray(got, dtype=np.float64).reshape(-1)
        results[idx] = result
        _refuse(idx, refused, errors, bad)
        broken = idx[~np.isfinite(result) & ~bad[idx]]
        if broken.size:
            errors[broken] = _BROKEN
            bad[broken] = True


def shaped(out: np.ndarray, shape: tuple) -> Any:
    """A single value for one cell, else nested lists of the broadcast shape."""
    if out.size == 1:
        return out.reshape(-1).tolist()[0]  # a Python value (a float array's element is a numpy float)
    # one list per row: the garbage collector would walk the young lists many times over meanwhile
    collecting = gc.isenabled()
    gc.disable()
    try:
        return out.reshape(shape).tolist()
    finally:
        if collecting:
            gc.enable()


def never_raise(f: Callable, name: str, *args: Any) -> Any:
    """``f(*args)``, with a whole-call problem or any unexpected exception as one readable cell text:
    a cell must show a message, never a traceback."""
    try:
        return f(*args)
    except CallError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001
        return f"{ERROR_PREFIX} {name}: unexpected {type(exc).__name__}: {exc}"[:255]


def udf(ret: dict | None = None, note: str = RANGE_NOTE, **arguments: str | dict) -> Callable[[Callable], Callable]:
    """Register a function with xlwings (``xw.func`` / ``xw.arg`` / ``xw.ret``) and make it never raise.

    Every argument asks xlwings for a 2-D list (``ndim=2``, so a column stays a column) and is
    described in Excel's function wizard by :func:`describe` (from the registry); a keyword gives
    an argument its own description (a string) or converter options (a dict, with ``doc``). On
    Linux the decorators are no-ops; under Windows and xlwings Server they register the function.
    Any unexpected exception becomes an error string in the cell.
    ``note`` ends the function's description (default: the cell budget, :data:`RANGE_NOTE`).
    """
    def decorate(f: Callable) -> Callable:
        @functools.wraps(f)
        def safe(*args: Any) -> Any:
            return never_raise(f, f.__name__, *args)

        # xlwings shows the docstring in Excel (desktop: its first 255 characters): drop the indent
        safe.__doc__ = inspect.cleandoc(f.__doc__ or f.__name__) + (f"\n\n{note}" if note else "")
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
