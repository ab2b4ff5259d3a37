"""The one error every surface reports: a field, the value it was given, and the rule it broke."""

from __future__ import annotations

from typing import Any

__all__ = ["InputError", "show"]


class InputError(ValueError):
    """Invalid input: carries ``field`` (argument name), ``value`` and ``rule``.

    ``str(err)`` reads ``field[position]=value: rule``, e.g. ``C=-2.5: must be >= 0``.
    """

    def __init__(self, field: str, value: Any, rule: str, position: tuple | None = None):
        self.field = field
        self.value = value
        self.rule = rule
        self.position = position
        where = "" if not position else "[" + ", ".join(str(i) for i in position) + "]"
        super().__init__(f"{field}{where}={show(value)}: {rule}")


def show(value: Any) -> str:
    """A value as an error message shows it (floats in full, long text cut at 60 characters)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy scalar
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
