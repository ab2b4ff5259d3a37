"""The test simulations' restart loop, written once (no engine code): what happens from a failure until the job
runs again."""

from __future__ import annotations

import random


def recover(rng: random.Random, D: float, restart: float, M: float) -> tuple[float, int]:
    """(time, failures) from a failure until the job runs again: the downtime ``D`` (waiting for a node, holding
    none: no failure), then the exposed ``restart``, itself restarted by every failure during it."""
    t, n = 0.0, 0
    while True:
        t += D
        gap = rng.expovariate(1.0 / M)
        if gap >= restart:
            return t + restart, n
        t += gap
        n += 1
