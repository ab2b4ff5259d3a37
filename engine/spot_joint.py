"""The capacity comparison (:func:`ckptplan.engine.spot.capacity_policies`) of many jobs at once, each job's numbers
those of its own call."""

from __future__ import annotations

from typing import Any

from .spot import CAPACITY_RUNS, CAPACITY_SEED, capacity_policies

__all__ = ["capacity_policies_many"]


def capacity_policies_many(jobs: list[dict[str, float]], runs: int = CAPACITY_RUNS, seed: int = CAPACITY_SEED
                           ) -> list[dict[str, dict[str, Any]]]:
    """:func:`capacity_policies` ``(**job, runs=runs, seed=seed)`` of every job of ``jobs`` (keyword arguments)."""
    return [capacity_policies(**job, runs=runs, seed=seed) for job in jobs]
