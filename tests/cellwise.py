"""Cell-by-cell comparison of what an Excel host gets back (nested lists of cells), shared by the add-in tests."""

from __future__ import annotations

import math
from typing import Any, Iterator

__all__ = ["cells_of", "same"]


def cells_of(value: Any) -> Iterator[Any]:
    """Every cell of a result, row by row (a single value is one cell)."""
    if isinstance(value, list):
        for item in value:
            yield from cells_of(item)
    else:
        yield value


def same(a: Any, b: Any, nan_equal: bool = False) -> bool:
    """Cell-by-cell equality of two results: same shape, same type, floats exactly (the same code on the same
    numbers); ``nan_equal``: two NaN cells count as equal."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            same(x, y, nan_equal) for x, y in zip(a, b))
    if nan_equal and isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b
