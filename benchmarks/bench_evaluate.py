"""``engine.evaluate`` against a lean numpy evaluation of the same formulas, side by side in one run.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_evaluate.py [--rows 1000000] [--repeat 5]

The table: ``--rows`` random scenarios with every kind of column evaluate() reads (async writes, a
correlated failure domain, a chosen interval on half the rows, a deadline, a text name).

The lean version (:func:`lean`) is what a numpy user would write for the same columns from the
table's float arrays: no validation, no DataFrame. It re-implements the reliability, waste, time
breakdown and cost formulas plainly (one ``log M``, one ``exp`` per quantity, shared terms computed
once) and calls two kernels rather than copying them: ``waste._exact_x`` (the Newton iteration for
the exact optimum, 0.1 s of 10^6 rows) and ``wall_distribution.deadline_answers_kernel`` (the analytic deadline
columns, the bulk of the time; that module is its own work item).

Two ratios, the calls interleaved (evaluate, lean, evaluate, lean, ...) and the best of each kept:

1. all columns: evaluate() / lean;
2. without the deadline kernel: both sides run with ``wall_distribution.deadline_answers_kernel`` replaced by a
   lookup of its precomputed result, so the ratio isolates validation, the long-run formulas and
   building the result frame.

Before timing, every column of evaluate() is checked against the lean result to 1e-12 (relative).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from ckptplan import engine
from ckptplan.engine import wall_distribution, waste

__all__ = ["lean", "main", "make_table"]


def make_table(n: int, seed: int = 1) -> pd.DataFrame:
    """``n`` valid random scenarios."""
    rng = np.random.default_rng(seed)
    W = rng.uniform(0, 5, n)
    s = rng.uniform(0, 0.5, n)
    interval = np.where(rng.random(n) < 0.5, np.nan, W + rng.uniform(5, 120, n))
    return pd.DataFrame({
        "name": "s",
        "checkpoint_stall_min": rng.uniform(0.1, 10, n),
        "async_write_min": W,
        "async_slowdown_fraction": s,
        "restart_min": rng.uniform(0, 30, n),
        "node_mtbf_h": rng.uniform(5_000, 50_000, n),
        "nodes": rng.integers(16, 2048, n),
        "gpus_per_node": 8,
        "useful_training_h": rng.uniform(100, 2000, n),
        "price_per_gpu_hour": rng.uniform(1, 4, n),
        "interval_min": interval,
        "deadline_h": rng.uniform(200, 4000, n),
        "domain1_name": "rack",
        "domain1_mtbf_h": rng.uniform(2_000, 20_000, n),
        "domain1_nodes_per_domain": 16,
    })


def lean(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """The columns evaluate() adds, in plain numpy from the table's arrays (see the module notes)."""
    def col(name):
        return table[name].to_numpy(dtype=np.float64)

    C, W, s, R = col("checkpoint_stall_min"), col("async_write_min"), col("async_slowdown_fraction"), col("restart_min")
    nodes, work = col("nodes"), col("useful_training_h") * 60.0
    rate = (1.0 - 0.0) * nodes / col("node_mtbf_h") + np.ceil(nodes / col("domain1_nodes_per_domain")) / col(
        "domain1_mtbf_h")
    job_mtbf_h = 1.0 / rate
    M = job_mtbf_h * 60.0
    c_eff = C + W * s
    young = np.sqrt(2.0 * c_eff * M)
    ratio = c_eff / (2.0 * M)
    daly = np.where(c_eff < 2.0 * M, young * (1.0 + np.sqrt(ratio) / 3.0 + ratio / 9.0) - c_eff, M)
    floor = W * (1.0 - s)
    exact = np.maximum(M * waste._exact_x(c_eff / M), floor)
    given = col("interval_min")
    chosen = np.where(np.isnan(given), exact, given)
    log_m, fixed = np.log(M), (R + C + W) / M

    def log_wall(T):  # log of expected wall time per unit of work, exact exponential model
        return log_m + (fixed + T / M) + np.log(-np.expm1(-(T + c_eff) / M)) - np.log(T)

    lw = log_wall(chosen)
    total = np.exp(np.log(work) + lw)
    segments = work / chosen
    period = chosen + C + W * s  # same association as the model: the rework below is a difference
    failures = segments * -np.expm1(-period / M) * np.exp((chosen + C + W) / M)
    hours = {"useful": work / 60.0, "save": segments * c_eff / 60.0,
             "rework": np.maximum(failures * M - segments * period, 0.0) / 60.0,
             "restart": failures * M * np.expm1(R / M) / 60.0}
    gpus = nodes * col("gpus_per_node")
    price = col("price_per_gpu_hour")
    wall_h = total / 60.0
    out = {"job_mtbf_h": job_mtbf_h, "effective_stall_min": c_eff, "young_interval_min": young,
           "daly_interval_min": daly, "exact_interval_min": exact, "chosen_interval_min": chosen,
           "first_order_waste": c_eff / chosen + chosen / (2.0 * M), "young_min_waste": np.sqrt(2.0 * c_eff / M),
           "waste_fraction": -np.expm1(-lw), "waste_fraction_at_optimum": -np.expm1(-log_wall(exact)),
           "waste_fraction_at_young": -np.expm1(-log_wall(np.maximum(young, floor))),
           "waste_fraction_at_daly": -np.expm1(-log_wall(np.maximum(daly, floor))),
           "expected_failures": failures, "wall_h": wall_h}
    out.update({f"{k}_h": v for k, v in hours.items()})
    out["gpus"] = gpus
    out["total_gpu_hours"] = wall_h * gpus
    out["compute_cost"] = out["total_gpu_hours"] * price
    out["storage_cost"] = out["spare_cost"] = np.zeros(len(work))   # no setup: no storage, no spares
    out["total_cost"] = out["compute_cost"] + out["storage_cost"] + out["spare_cost"]
    for k, v in hours.items():
        out[f"{k}_gpu_hours"] = v * gpus
        out[f"{k}_cost"] = out[f"{k}_gpu_hours"] * price
    out["goodput"] = hours["useful"] / wall_h
    out["cost_per_useful_gpu_hour"] = out["total_cost"] / out["useful_gpu_hours"]
    d = wall_distribution.deadline_answers_kernel(work, chosen, C, M, R, W, s, col("deadline_h") * 60.0)
    out["p_finish_by_deadline"] = d["p_finish_by_deadline"]
    for q in ("p50", "p90", "p99"):
        out[f"wall_h_{q}"] = d[f"wall_{q}"] / 60.0
    out["deadline_approximation_ok"] = d["ok"]
    return out


def check(table: pd.DataFrame) -> int:
    """Every derived column of evaluate() equals the lean one to 1e-12 (relative); returns the column count."""
    got, ref = engine.evaluate(table), lean(table)
    assert list(got.columns) == list(table.columns) + [c for c in ref if c not in table.columns], "column order"
    for name, want in ref.items():
        have = got[name].to_numpy()
        assert have.dtype == want.dtype or name == "gpus", (name, have.dtype, want.dtype)
        if want.dtype == bool:
            assert np.array_equal(have, want), name
        else:
            np.testing.assert_allclose(have, want, rtol=1e-12, atol=0, equal_nan=True, err_msg=name)
    for name in table.columns:
        assert got[name].equals(table[name]), name
    return len(ref)


def side_by_side(table: pd.DataFrame, repeat: int) -> tuple[float, float]:
    """Best wall time of evaluate() and of lean(), calls interleaved."""
    best = [np.inf, np.inf]
    for _ in range(repeat):
        for k, fn in enumerate((engine.evaluate, lean)):
            t0 = time.perf_counter()
            fn(table)
            best[k] = min(best[k], time.perf_counter() - t0)
    return best[0], best[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    table = make_table(args.rows)
    ncols = check(table)
    print(f"rows: {args.rows:,}; {ncols} derived columns equal to 1e-12")
    t_eval, t_lean = side_by_side(table, args.repeat)
    print(f"all columns        evaluate {t_eval:7.3f} s   lean {t_lean:7.3f} s   ratio {t_eval / t_lean:5.2f}x")
    real = wall_distribution.deadline_answers_kernel
    cache: dict[str, dict] = {}

    def cached(*a, **kw):  # the deadline kernel's answer for this table, computed once
        if "v" not in cache:
            cache["v"] = real(*a, **kw)
        return {k: v.copy() for k, v in cache["v"].items()}

    wall_distribution.deadline_answers_kernel = cached
    try:
        t_eval2, t_lean2 = side_by_side(table, args.repeat)
    finally:
        wall_distribution.deadline_answers_kernel = real
    print(f"without deadline   evaluate {t_eval2:7.3f} s   lean {t_lean2:7.3f} s   ratio {t_eval2 / t_lean2:5.2f}x")
    print(f"overhead of evaluate over lean: {t_eval - t_lean:+.3f} s (all), {t_eval2 - t_lean2:+.3f} s (no deadline)")


if __name__ == "__main__":
    main()
