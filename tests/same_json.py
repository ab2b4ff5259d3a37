"""Equal plan JSON, as the round-trip tests compare it (written once)."""

from __future__ import annotations

import pytest


def same_json(a, b, where="") -> None:
    """Equal JSON: numbers to 1e-9 relative, everything else exactly (``where``: the path, in the message)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            same_json(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same_json(x, y, f"{where}[{i}]")
    elif isinstance(a, (int, float)) and not isinstance(a, bool):
        assert b == pytest.approx(a, rel=1e-9, abs=1e-12), where
    else:
        assert a == b, where
