"""The spare pool (Erlang's loss system) over many designs, vectorised, against a per-row loop.

    OMP_NUM_THREADS=1 python benchmarks/bench_pool.py [--rows 100000] [--max-spares 64] [--repeat 3]

Designs: ``--rows`` random pools: mean nodes in repair ``mu`` log-uniform in [1e-3, 50], spares
uniform in 0 .. ``--max-spares``, repair 2-72 h, swap 0-10 min.

The engine: :func:`engine.recovery.spare_free_probability`, :func:`engine.recovery.expected_reallocation_min`
and :func:`engine.recovery.reallocation_sd_min` on all rows in one call each. The baseline, written here
independently of the engine: a plain-Python loop, one row at a time, running Erlang's recursion
``B(k) = mu B(k-1) / (k + mu B(k-1))`` itself and the same three figures from it. Before timing, the two are
checked equal (relative 1e-12). The best of ``--repeat`` is kept; the loop and the engine are interleaved.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402

from ckptplan.engine import recovery  # noqa: E402

from _timing import best_of  # noqa: E402

__all__ = ["designs", "loop", "main", "vectorised"]


def designs(rows: int, max_spares: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    repair = rng.uniform(2.0, 72.0, rows)
    mu = np.exp(rng.uniform(math.log(1e-3), math.log(50.0), rows))
    return {"rate": mu / repair, "repair_h": repair, "spares": rng.integers(0, max_spares + 1, rows).astype(float),
            "swap": rng.uniform(0.0, 10.0, rows)}


def vectorised(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    free = recovery.spare_free_probability(d["rate"], d["repair_h"], d["spares"])
    wait = recovery.expected_reallocation_min(d["rate"], d["repair_h"], d["spares"], d["swap"])
    sd = recovery.reallocation_sd_min(d["rate"], d["repair_h"], d["spares"], d["swap"])
    return free, wait, sd


def loop(d: dict[str, np.ndarray]) -> tuple[list[float], list[float], list[float]]:
    """One row at a time in plain Python: Erlang's recursion, then the free chance, mean and spread (fixed repair)."""
    free, wait, sd = [], [], []
    for lam, r, s, swap in zip(d["rate"].tolist(), d["repair_h"].tolist(), d["spares"].tolist(), d["swap"].tolist()):
        mu, S = lam * r, int(s)
        b = 1.0
        for k in range(1, S + 1):
            b = mu * b / (k + mu * b)
        w = 60.0 * r / (S + 1)
        v = (60.0 * r) ** 2 * S / ((S + 1) ** 2 * (S + 2))
        free.append(1.0 - b)
        wait.append((1.0 - b) * swap + b * w)
        sd.append(math.sqrt(b * (1.0 - b) * (swap - w) ** 2 + b * v))
    return free, wait, sd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--max-spares", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    d = designs(a.rows, a.max_spares)
    for mine, theirs in zip(vectorised(d), loop(d)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-300)
    t_vec, t_loop = [], []
    for _ in range(a.repeat):
        t_vec.append(best_of(lambda: vectorised(d), 1))
        t_loop.append(best_of(lambda: loop(d), 1))
    v, lp = min(t_vec), min(t_loop)
    print(f"{a.rows:,} pools, spares 0..{a.max_spares}: vectorised {v:.3f} s ({a.rows / v:,.0f} rows/s), "
          f"per-row loop {lp:.3f} s ({a.rows / lp:,.0f} rows/s), loop / vectorised = {lp / v:.1f}x")


if __name__ == "__main__":
    main()
