"""Timing helper shared by the benchmark scripts (run them as `python benchmarks/NAME.py`)."""

import time


def best_of(fn, repeat=3):
    """Best wall time of ``repeat`` calls of ``fn`` (seconds): the least disturbed by the neighbours."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
