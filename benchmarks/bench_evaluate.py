"""``engine.evaluate`` against an independently written lean numpy pass of the same columns, in one run.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_evaluate.py [--rows 1000000] [--repeat 5]
        [--profile 15]

The table: ``--rows`` random scenarios with every kind of column evaluate() reads (async writes, a
correlated failure domain, a chosen interval on half the rows, a deadline, a text name).

The lean pass (:func:`lean`) is what a numpy user would write for the same columns from the table's
float arrays, from the published formulas, importing nothing of the engine: no validation, no
DataFrame. Young's interval [Young74], Daly's [Daly06, eq. 20], the exact optimum of the exponential
model (the root of ``(1 - x) e^(x + c/M) = 1``, Newton from the Lambert-W branch-point series:
:func:`_newton_optimum`), the exact expected wall time, the time breakdown and cost, and the
finite job's wall-time distribution (cumulants of the chain of windows, translated gamma with the
Wilson-Hilferty transform, ``scipy.special.ndtr`` for the normal CDF: :func:`lean_deadline`). It
shares no code with ``ckptplan.engine`` (the module imports it only to time ``engine.evaluate`` and
to compare answers).

Before timing, every derived column of evaluate() is checked against the lean one: relative 1e-9
for the long-run columns (largest seen: 6e-13), and for the deadline columns relative 1e-6
(percentiles; largest seen 4e-8) and absolute 1e-6 (P(finish); largest seen 1e-7): the two compute
the truncated-exponential cumulants differently (engine: a Taylor series below x = 0.5; lean: the
closed forms throughout, which lose digits for short windows), which moves the skewness in its
last digits; the validity flag must agree on every row.

Timed: the calls interleaved (evaluate, lean, evaluate, lean, ...), min and median of each over
``--repeat`` pairs, and the ratio of the minima and of the medians; then the same with each side's
deadline columns replaced by a lookup of its own precomputed answer (the rest: validation, the
long-run formulas, cost, building the frame), and the deadline columns' share of each side as the
difference of the medians. ``--profile N`` prints the top
``N`` entries (own time) of a cProfile of one evaluate() call.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import numpy as np
import pandas as pd
from scipy import special

from ckptplan import engine

__all__ = ["lean", "lean_deadline", "main", "make_table"]


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


def _newton_optimum(a: np.ndarray) -> np.ndarray:
    """x = T*/M of the exact exponential model: the root of ``(1 - x) e^(x + a) = 1`` (a = c/M).

    Start: the branch-point series of ``1 + W0(-e^(-1-a))`` [Corless96, eq. 4.22] in
    ``p = sqrt(2 (1 - e^-a))``; then Newton on ``g(x) = x + a + log(1 - x)`` (decreasing and concave:
    the iterates close in from whichever side, quadratically).
    """
    p = np.sqrt(-2.0 * np.expm1(-a))
    x = p * (1.0 + p * (-1.0 / 3.0 + p * (11.0 / 72.0 + p * (-43.0 / 540.0))))
    x = np.minimum(x, 0.999)
    for _ in range(3):
        x = x + (x + a + np.log1p(-x)) * (1.0 - x) / x
    return x


def _trunc_exp(x: np.ndarray) -> tuple:
    """First three cumulants of Exp(1) conditioned on being < x: ``1 - B``, ``1 - B(B + x)``,
    ``2 - B(B + x)(2B + x)``, ``B = x/(e^x - 1)`` (derivatives of the conditioned CGF). The closed
    forms lose digits for small x (absolute error ~1e-16): where they are used, such x come with
    an attempt count ~x, so the loss stays far below the stated tolerance."""
    B = x / np.expm1(x)
    BB = B * (B + x)
    return 1.0 - B, 1.0 - BB, 2.0 - BB * (2.0 * B + x)


def _compound(n: tuple, v: tuple) -> tuple:
    """Cumulants of a sum of N i.i.d. terms: K_N(K_V(t)) to third order."""
    return (n[0] * v[0], n[1] * v[0] * v[0] + n[0] * v[1],
            n[2] * (v[0] * v[0] * v[0]) + 3.0 * n[1] * v[0] * v[1] + n[0] * v[2])


def _geometric(x: np.ndarray) -> tuple:
    """Cumulants of the failed attempts before one of length x succeeds (failure prob. 1 - e^-x)."""
    E = np.expm1(x)
    e = E + 1.0
    return E, E * e, E * e * (1.0 + 2.0 * E)


def lean_deadline(work, T, C, M, R, W, s, deadline) -> dict[str, np.ndarray]:
    """P(finish by deadline), P50/P90/P99 and the validity flag of the finite job's wall time.

    The published model [Kulkarni87; Chimento93] written from scratch: the job is a chain of windows
    between durable checkpoints; a window of length x (units of M) is retried after each failure,
    each failure costing the time lost (a truncated exponential) plus a restart of length y = R/M
    that itself is retried. The cumulants of the windows add; the wall time's first three moments
    give a translated gamma [Seal77], its quantiles and probability by Wilson-Hilferty [Wilson31].
    No final save: when the job ends before the last async write is durable, the last window runs
    from the checkpoint before. Normal CDF: ``scipy.special.ndtr`` (vectorised).
    """
    n = np.maximum(np.ceil(work / T * (1.0 - 1e-14)), 1.0)
    Tn = np.minimum(work - (n - 1.0) * T, T)
    hidden = W * (1.0 - s)
    skip = (W > 0) & (Tn < hidden) & (n >= 2)
    tail = Tn / (1.0 - s)
    last = n - 1.0 - skip
    fc, ff = (T + C + W) / M, (T + C + W * s) / M                      # a full window: clean, in flow
    lc = np.where(skip, T + C + tail, Tn) / M                         # the last window
    lf = np.where(skip, T - hidden + C + tail, Tn - hidden) / M
    y = R / M
    ky = _trunc_exp(y)
    ny = _geometric(y)
    Ey = ny[0]
    D = (y + ny[0] * ky[0],) + _compound(ny, ky)[1:]                  # a restart, retried until it completes

    def clean(x):                                                     # window started clean: Q = x + sum(Y + D)
        kx = _trunc_exp(x)
        S = _compound(_geometric(x), tuple(a + b for a, b in zip(kx, D)))
        return (x + S[0], S[1], S[2]), kx

    def flow(f, q_clean):                                             # window from a milestone reached in flow
        kf = _trunc_exp(f)
        p = np.exp(-f)
        q = -np.expm1(-f)
        a1 = kf[0] + D[0] + q_clean[0]
        a2 = kf[1] + D[1] + q_clean[1]
        a3 = kf[2] + D[2] + q_clean[2]
        d = a1 - f
        return f + q * d, q * a2 + p * q * d * d, q * a3 + 3.0 * p * q * a2 * d + p * q * (p - q) * (d * d * d)

    Qf, kfc = clean(fc)
    Ql, _ = clean(lc)
    Zf, Zl = flow(ff, Qf), flow(lf, Ql)
    mid = np.maximum(last - 1.0, 0.0)
    k = [np.where(last == 0, Ql[j], Qf[j]) + mid * Zf[j] + np.where(last >= 1, Zl[j], 0.0) for j in range(3)]
    mean, sd = M * k[0], M * np.sqrt(k[1])
    skew = k[2] / (k[1] * np.sqrt(k[1]))
    w0 = (np.where(last == 0, lc, fc) + mid * ff + np.where(last >= 1, lf, 0.0)) * M   # failure-free wall time
    p0 = np.exp(-w0 / M)
    h = skew / 6.0
    out = {}
    for name, pz in (("p50", (0.5, 0.0)), ("p90", (0.9, 1.2815515655446008)), ("p99", (0.99, 2.3263478740408408))):
        v = pz[1] - h
        q = mean + sd * (v + h * v * v + h * h * (v * v * v) / 3.0)
        out[f"wall_{name}"] = np.where(pz[0] <= p0, w0, np.maximum(q, w0))
    t = (deadline - mean) / sd
    a = 1.0 + 3.0 * h * t
    u = np.cbrt(a)
    g = np.where(a > 0, special.ndtr(3.0 * t / (u * u + u + 1.0) + h), np.where(h > 0, 0.0, 1.0))
    out["p_finish_by_deadline"] = np.where(deadline < w0, 0.0, np.maximum(g, p0))
    failures = k[0] / (Ey + 1.0)
    lattice = failures * kfc[1] / (kfc[0] + Ey) ** 2
    ripple = np.exp(-2.0 * np.pi ** 2 * lattice) / (np.pi * np.sqrt(2.0 * np.pi * failures))
    out["ok"] = (((R + T + C + W) / M <= 200.0) & (failures >= 6.0) & (skew <= 2.0) & (ripple <= 0.002)
                 & np.isfinite(k[2]) & np.isfinite(skew))
    return out


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
    exact = np.maximum(M * _newton_optimum(c_eff / M), floor)
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
           "expected_failures": total / M, "wall_h": wall_h}
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
    d = lean_deadline(work, chosen, C, M, R, W, s, col("deadline_h") * 60.0)
    out["p_finish_by_deadline"] = d["p_finish_by_deadline"]
    for q in ("p50", "p90", "p99"):
        out[f"wall_h_{q}"] = d[f"wall_{q}"] / 60.0
    out["deadline_approximation_ok"] = d["ok"]
    return out


DEADLINE = ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99")


def check(table: pd.DataFrame) -> int:
    """Every derived column of evaluate() equals the lean one (tolerances in the module notes); returns the count."""
    got, ref = engine.evaluate(table), lean(table)
    assert list(got.columns) == list(table.columns) + [c for c in ref if c not in table.columns], "column order"
    for name, want in ref.items():
        have = got[name].to_numpy()
        assert have.dtype == want.dtype or name == "gpus", (name, have.dtype, want.dtype)
        if want.dtype == bool:
            assert np.array_equal(have, want), name
        elif name == "p_finish_by_deadline":
            np.testing.assert_allclose(have, want, rtol=0, atol=1e-6, equal_nan=True, err_msg=name)
        else:
            rtol = 1e-6 if name in DEADLINE else 1e-9
            np.testing.assert_allclose(have, want, rtol=rtol, atol=0, equal_nan=True, err_msg=name)
    for name in table.columns:
        assert got[name].equals(table[name]), name
    return len(ref)


def side_by_side(table: pd.DataFrame, repeat: int) -> tuple[list[float], list[float]]:
    """Wall times of evaluate() and of lean(), calls interleaved."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for k, fn in enumerate((engine.evaluate, lean)):
            t0 = time.perf_counter()
            fn(table)
            times[k].append(time.perf_counter() - t0)
    return times


def profile(table: pd.DataFrame, top: int) -> str:
    """cProfile of one evaluate() call: the ``top`` entries by own time."""
    prof = cProfile.Profile()
    prof.runcall(engine.evaluate, table)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N entries of a profile")
    args = ap.parse_args()
    table = make_table(args.rows)
    ncols = check(table)
    print(f"rows: {args.rows:,}; {ncols} derived columns equal (long-run 1e-9 rel, deadline 1e-6)")
    t_eval, t_lean = side_by_side(table, args.repeat)
    for label, f in (("min", min), ("median", statistics.median)):
        print(f"{label:6s}  evaluate {f(t_eval):7.3f} s   lean {f(t_lean):7.3f} s   ratio {f(t_eval) / f(t_lean):5.2f}x")
    # the same two passes with each side's deadline columns replaced by a lookup of its own answer:
    # the ratio of the rest (validation, long-run formulas, cost, the frame)
    import ckptplan.engine.wall_distribution as wd  # only to swap the engine's kernel for its cached answer
    real_engine, real_lean = wd.deadline_answers_kernel, globals()["lean_deadline"]

    def cached(fn):
        memo: dict = {}

        def lookup(*a, **kw):
            if "v" not in memo:
                memo["v"] = fn(*a, **kw)
            return {k: v.copy() for k, v in memo["v"].items()}
        return lookup

    wd.deadline_answers_kernel, globals()["lean_deadline"] = cached(real_engine), cached(real_lean)
    try:
        r_eval, r_lean = side_by_side(table, args.repeat)
    finally:
        wd.deadline_answers_kernel, globals()["lean_deadline"] = real_engine, real_lean
    for label, f in (("min", min), ("median", statistics.median)):
        print(f"{label:6s}  without the deadline columns: evaluate {f(r_eval):7.3f} s   lean {f(r_lean):7.3f} s   "
              f"ratio {f(r_eval) / f(r_lean):5.2f}x")
    print(f"deadline columns (difference, medians): evaluate {statistics.median(t_eval) - statistics.median(r_eval):.3f} s"
          f"   lean {statistics.median(t_lean) - statistics.median(r_lean):.3f} s")
    if args.profile:
        print(profile(table, args.profile))


if __name__ == "__main__":
    main()
