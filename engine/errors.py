"""The one error every surface reports: a field, the value it was given, and the rule it broke."""

from __future__ import annotations

from typing import Any

__all__ = ["BLANK", "NEVER_FINISHES", "InputError", "show"]

#: what every surface says when failures come so often that the expected wall time overflows: what is
#: wrong and what to do, in a planner's words (the Plan sheet's Model check says the same)
NEVER_FINISHES = ("the job would never finish: it fails faster than it can save and restart; shorten the restart "
                  "and the save, or make failures rarer (fewer or more reliable nodes)")


class _Blank:
    """The value of a table cell left blank (or holding an NA word): shown as ``blank``."""

    def __repr__(self) -> str:
        return "blank"


#: the ``value`` of an :class:`InputError` about a blank table cell (``useful_training_h: blank: is required``)
BLANK = _Blank()


class InputError(ValueError):
    """Invalid input: carries ``field`` (argument name), ``value`` and ``rule``.

    ``str(err)`` reads ``field[position]=value: rule``, e.g. ``C=-2.5: must be >= 0``; a value that was not
    given reads ``field: not given: rule``, a blank table cell (:data:`BLANK`) ``field: blank: rule`` (never
    Python's ``None``).
    """

    def __init__(self, field: str, value: Any, rule: str, position: tuple | None = None):
        self.field = field
        self.value = value
        self.rule = rule
        self.position = position
        where = "" if not position else "[" + ", ".join(str(i) for i in position) + "]"
        if value is None or value is BLANK:
            super().__init__(f"{field}{where}: {'blank' if value is BLANK else 'not given'}: {rule}")
        else:
            super().__init__(f"{field}{where}={show(value)}: {rule}")


def show(value: Any) -> str:
    """A value as an error message shows it (floats in full, long text cut at 60 characters)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy scalar
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
