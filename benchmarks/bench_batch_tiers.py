"""A batch whose rows follow a tier design, against planning the same rows one by one, in one run.

    OMP_NUM_THREADS=1 python benchmarks/bench_batch_tiers.py [--rows 20000] [--loop-rows 100] [--repeat 3]

Rows: ``--rows`` scenarios of the ``llama3-405b-storage`` template with its "in-memory tier" design
(two tiers, three failure classes), each with its own node count (256 .. 8,192), model size (7 ..
1,000 B parameters) and node MTBF, so every row has its own tier stalls, restart pipeline, spare pool
and optimum. Batch: :func:`engine.batch.evaluate_rows` with ``tiers=`` (one vectorised call), against
two loops over ``--loop-rows`` rows (times scaled to ``--rows``):

1. the same call on one-row tables (what looping over the batch API row by row costs);
2. :func:`engine.setup.plan_setup` row by row, the deadline dropped (a tiered plan's P(finish) is a
   2,000-run Monte Carlo the batch does not run); it also searches the cheapest spare count, which
   the batch does not: an upper bound on what planning scenarios one at a time costs.

Before timing, both loops' design cost and first-tier interval are checked equal to the batch's
(1e-12). The calls are interleaved and the best of ``--repeat`` kept; the ratios are what the shared
machine's drift leaves comparable.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ckptplan.engine.batch import evaluate_rows  # noqa: E402
from ckptplan.engine.setup import plan_setup  # noqa: E402
from ckptplan.engine.template_fill import fill_from_template  # noqa: E402
from ckptplan.files import load_plan  # noqa: E402

__all__ = ["main", "rows"]


def rows(n: int, seed: int = 1) -> pd.DataFrame:
    """``n`` rows: nodes, parameters and node MTBF drawn at random (the rest from the template)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"nodes": rng.integers(256, 8193, n), "parameters_b": np.round(rng.uniform(7, 1000, n), 1),
                         "node_mtbf_h": np.round(rng.uniform(4000, 50000, n), 0)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--loop-rows", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    plan = load_plan("llama3-405b-storage").with_design("in-memory tier")
    table, fill = fill_from_template(rows(a.rows), plan.scenario, "llama3-405b-storage", setup=plan.setup)
    options = {"tiers": fill.tiers, "failure_classes": fill.failure_classes}
    sample = list(range(a.loop_rows))
    scenarios = [plan.scenario.replace(nodes=int(r.nodes), node_mtbf_h=float(r.node_mtbf_h), failure_rate_source=None,
                                       deadline_h=None) for r in table.iloc[sample].itertuples()]
    ones = [table.iloc[[k]] for k in sample]
    setups = [plan.setup.replace(parameters_b=float(p)) for p in table["parameters_b"].iloc[sample]]

    def batch() -> pd.DataFrame:
        return evaluate_rows(table, **options)

    def rows_one_by_one() -> list:
        return [evaluate_rows(one, **options) for one in ones]

    def plans_one_by_one() -> list:
        return [plan_setup(sc, st) for sc, st in zip(scenarios, setups)]

    got = batch()
    assert (got["status"] == "ok").all(), got["error"].iloc[0]
    for k, one, p in zip(sample, rows_one_by_one(), plans_one_by_one()):
        for cost, interval in ((one["total_cost"].iloc[0], one["chosen_interval_min"].iloc[0]),
                               (p.figures["total_cost"], p.figures["interval_min"])):
            assert abs(got["total_cost"].iloc[k] / cost - 1) < 1e-12, k
            assert abs(got["chosen_interval_min"].iloc[k] / interval - 1) < 1e-12, k
    best = {"batch": float("inf"), "rows": float("inf"), "plans": float("inf")}
    scale = a.rows / a.loop_rows
    for _ in range(a.repeat):
        for key, fn, factor in (("batch", batch, 1.0), ("rows", rows_one_by_one, scale), ("plans", plans_one_by_one, scale)):
            t = time.perf_counter()
            fn()
            best[key] = min(best[key], (time.perf_counter() - t) * factor)
    print(f"rows {a.rows:,}: batch with tiers {best['batch']:.2f} s ({a.rows / best['batch']:,.0f} rows/s)")
    print(f"  evaluate_rows one row at a time: {best['rows']:.1f} s (scaled from {a.loop_rows} rows), "
          f"ratio {best['rows'] / best['batch']:,.0f}x")
    print(f"  plan_setup one scenario at a time (no deadline): {best['plans']:.1f} s (scaled from {a.loop_rows} rows), "
          f"ratio {best['plans'] / best['batch']:,.0f}x")


if __name__ == "__main__":
    main()
