"""The tiered model vectorised over designs against a per-row loop, and the tiered Monte Carlo's speed, in one run.

    OMP_NUM_THREADS=1 python benchmarks/bench_tiers.py [--rows 100000] [--loop-rows 200] [--runs 100000]

Designs: ``--rows`` random three-tier designs (host memory, local SSD, parallel file system; process,
node and rack failures with random shares; random stalls, restores, ``M``, ``R``, ``W``, slowdown).

1. Expectation: :func:`engine.tiers.tiered_wall_per_work` on all rows in one call, against the same
   function called row by row with scalars (``--loop-rows`` rows, the time scaled to ``--rows``).
2. Optimum: :func:`engine.tiers.optimal_tier_intervals` (numeric optimum of ``T`` and the everies) in
   one call against the same, row by row.
   The calls are interleaved (vectorised, loop, vectorised, loop ...) and the best of ``--repeat`` kept;
   before timing, the loop's answers are checked equal to the vectorised ones (1e-12; everies exactly).
3. Monte Carlo: :func:`engine.montecarlo_tiers.simulate_tiers` on a 30-day job (work 43,200 min,
   ``M`` = 180 min, ``R`` = 10 min, a three-tier design at its optimum): runs per second, its mean
   against the exact expectation, and beside it :func:`engine.montecarlo.simulate` (both samplers) on
   the one-tier job with the same first tier, for scale.
4. Compiled baseline (when numba is installed; it is not a dependency of ckptplan): the same tiered
   job simulated by :func:`compiled_loop`, an event loop per run written here from the model's
   description (:mod:`engine.montecarlo_tiers` notes: Poisson failures of mean gap ``M``, each
   failure's class drawn by its share and rolled back to the last checkpoint of the first tier
   surviving it, a restart of ``R`` + that tier's restore restarted by any failure, the job ending
   when its final save is durable), one failure per step, jumping from failure to failure with
   one pattern's prefix sums; compiled by numba (random numbers from numpy's PCG64 generator and its
   ziggurat exponential, which numba compiles into the loop), importing nothing of the engine. It draws other
   random numbers than the engine, so it is checked in distribution: its mean wall time and mean
   failures within 4 standard errors of the engine's simulation, a two-sample KS test on the wall
   times (p > 0.001), and its mean within 4 SE of the exact expectation. Then timed interleaved with
   ``simulate_tiers`` (``--repeat`` pairs, min and median; the JIT compilation is done before). The
   same loop with one tier and one class is the compiled baseline of ``montecarlo.simulate`` on the
   one-tier job.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ckptplan.engine import montecarlo as mc  # noqa: E402
from ckptplan.engine import tiers as tm  # noqa: E402
from ckptplan.engine.montecarlo_tiers import simulate_tiers  # noqa: E402

__all__ = ["compiled_loop", "designs", "main", "row"]

NAMES = ("mem", "ssd", "pfs")


def designs(n: int, seed: int = 1) -> dict:
    """``n`` random three-tier designs as arrays (keyword arguments of the tiered functions, less ``T``)."""
    rng = np.random.default_rng(seed)
    sh = rng.dirichlet([3.0, 2.0, 1.0], n)
    e2 = rng.integers(1, 4, n)
    return {
        "M": np.exp(rng.uniform(math.log(30.0), math.log(3000.0), n)), "R": rng.uniform(0, 20, n),
        "W": rng.uniform(0, 5, n), "slowdown": rng.uniform(0, 0.5, n),
        "tiers": [tm.Tier("mem", rng.uniform(0.01, 0.5, n), rng.uniform(0.1, 2, n), 1, ("process",)),
                  tm.Tier("ssd", rng.uniform(0.1, 3, n), rng.uniform(0.5, 5, n), e2, ("process", "node")),
                  tm.Tier("pfs", rng.uniform(1, 20, n), rng.uniform(2, 30, n), e2 * rng.integers(2, 30, n),
                          ("process", "node", "rack"))],
        "classes": {"process": sh[:, 0], "node": sh[:, 1], "rack": 1.0 - sh[:, 0] - sh[:, 1]},
        "T": rng.uniform(5, 60, n),
    }


def row(d: dict, k: int) -> dict:
    """Design ``k`` of :func:`designs` with scalar numbers."""
    def at(v):
        return float(v[k]) if np.ndim(v) else v
    return {"M": at(d["M"]), "R": at(d["R"]), "W": at(d["W"]), "slowdown": at(d["slowdown"]), "T": at(d["T"]),
            "tiers": [tm.Tier(t.name, at(t.checkpoint_stall_min), at(t.restore_min), int(at(t.every)), t.survives)
                      for t in d["tiers"]],
            "classes": {c: at(v) for c, v in d["classes"].items()}}


def _expectation(d):
    return tm.tiered_wall_per_work(d["T"], d["M"], d["R"], d["W"], d["slowdown"], tiers=d["tiers"],
                                   classes=d["classes"])


def _optimum(d):
    return tm.optimal_tier_intervals(d["M"], d["R"], d["W"], d["slowdown"], tiers=d["tiers"], classes=d["classes"])


def check(d: dict, sample: list[int]) -> None:
    """The loop's answers equal the vectorised ones (1e-12; everies exactly)."""
    wpw, opt = _expectation(d), _optimum(d)
    for k in sample:
        r = row(d, k)
        assert abs(_expectation(r) / wpw[k] - 1) <= 1e-12, k
        one = _optimum(r)
        assert all(one[f"every_{n}"] == opt[f"every_{n}"][k] for n in NAMES), k
        assert abs(one["T"] / opt["T"][k] - 1) <= 1e-12 and abs(one["wall_per_work"] / opt["wall_per_work"][k] - 1) <= 1e-12


def side_by_side(d: dict, rows: list[dict], fn, repeat: int) -> tuple[float, float]:
    """Best time of ``fn`` on all rows at once and of the loop over ``rows`` (scalars), calls interleaved."""
    best = [math.inf, math.inf]
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(d)
        best[0] = min(best[0], time.perf_counter() - t0)
        t0 = time.perf_counter()
        for r in rows:
            fn(r)
        best[1] = min(best[1], time.perf_counter() - t0)
    return best[0], best[1]


def _loop_source(runs, rng, n, T, M, R, stall, every_of, restore_of, cum_shares):
    """Tiered job, synchronous saves, final save: per run, failure to failure (see the module notes).

    ``stall[j]`` stall of save ``k`` with ``k % K == j`` (``K = len(stall)``); ``every_of[c]``,
    ``restore_of[c]``: every and restore time of the tier class ``c`` is restored from.
    ``rng`` a numpy ``Generator`` (numba compiles its PCG64 and ziggurat exponential into the loop).
    Returns the wall time and the failure count of each run.
    """
    K = stall.size
    pre = np.zeros(K + 1)          # wall time from checkpoint 0 to checkpoint j, failure-free, j = 0 .. K
    for j in range(1, K + 1):
        pre[j] = pre[j - 1] + T + stall[j % K]
    wall = np.empty(runs)
    fails = np.zeros(runs, np.int64)
    end = (n // K) * pre[K] + pre[n % K]
    for r in range(runs):
        t = 0.0
        d = 0
        f = 0
        gap = M * rng.standard_exponential()
        while True:
            at = (d // K) * pre[K] + pre[d % K]        # failure-free clock of checkpoint d
            if gap >= end - at:                         # no failure before the final save is durable
                t += end - at
                break
            t += gap
            tau = at + gap
            q = int(math.floor(tau / pre[K]))
            rest = tau - q * pre[K]
            lo, hi = 0, K                               # largest j with pre[j] <= rest: binary search
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if pre[mid] <= rest:
                    lo = mid
                else:
                    hi = mid - 1
            j = lo
            v = max(min(q * K + j, n), d)              # last checkpoint made durable before the failure
            f += 1
            u = rng.random()                      # the failure's class, by its share
            c = 0
            while c < cum_shares.size - 1 and u >= cum_shares[c]:
                c += 1
            d = (v // every_of[c]) * every_of[c]        # rolled back to that tier's last checkpoint
            rd = R + restore_of[c]
            while True:                                 # the restart, restarted by any failure
                g = M * rng.standard_exponential()
                if g >= rd:                             # the rest of that gap runs the job (memoryless)
                    t += rd
                    gap = g - rd
                    break
                t += g
                f += 1
                rng.random()                      # that failure's class (it restores nothing new)
        wall[r] = t
        fails[r] = f
    return wall, fails


def compiled_loop():
    """The compiled event loop (numba ``njit`` of :func:`_loop_source`), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=False)(_loop_source)


def _agree(name, loop_wall, loop_fails, sim_wall, sim_fails, exact=None) -> str:
    from scipy import stats
    se = math.sqrt(loop_wall.var() / loop_wall.size + sim_wall.var() / sim_wall.size)
    z = (loop_wall.mean() - sim_wall.mean()) / se
    sef = math.sqrt(loop_fails.var() / loop_fails.size + sim_fails.var() / sim_fails.size)
    zf = (loop_fails.mean() - sim_fails.mean()) / sef
    ks = stats.ks_2samp(loop_wall, sim_wall).pvalue
    assert abs(z) < 4 and abs(zf) < 4 and ks > 1e-3, (name, z, zf, ks)
    msg = f"{name}: compiled loop vs engine, mean wall {z:+.2f} SE, mean failures {zf:+.2f} SE, KS p = {ks:.2f}"
    if exact is not None:
        ze = (loop_wall.mean() - exact) / (loop_wall.std() / math.sqrt(loop_wall.size))
        assert abs(ze) < 4, (name, ze)
        msg += f"; loop mean vs exact {ze:+.2f} SE"
    return msg


def monte_carlo(runs: int, repeat: int) -> None:
    work, M, R = 720.0 * 60.0, 180.0, 10.0
    tiers = [tm.Tier("mem", 0.2, 0.5, 1, ("process",)), tm.Tier("ssd", 1.0, 3.0, 1, ("process", "node")),
             tm.Tier("pfs", 4.0, 9.0, 1, ("process", "node", "rack"))]
    classes = {"process": 0.6, "node": 0.3, "rack": 0.1}
    opt = tm.optimal_tier_intervals(M, R, tiers=tiers, classes=classes)
    every = [opt[f"every_{n}"] for n in NAMES]
    tiers = [tm.Tier(t.name, t.checkpoint_stall_min, t.restore_min, e, t.survives) for t, e in zip(tiers, every)]
    T = opt["T"]
    patterns = max(1, round(work / (every[-1] * T)))
    work = patterns * every[-1] * T                    # whole patterns: the expectation's job exactly
    exact = tm.tiered_expected_wall_time(work, T, M, R, tiers=tiers, classes=classes)
    best = {"tiered": math.inf, "per_window": math.inf, "per_failure": math.inf}
    for _ in range(repeat):
        t0 = time.perf_counter()
        sim = simulate_tiers(work, T, M, R, tiers=tiers, classes=classes, runs=runs, seed=1, final_save=True)
        best["tiered"] = min(best["tiered"], time.perf_counter() - t0)
        for method in ("per_window", "per_failure"):
            t0 = time.perf_counter()
            mc.simulate(work, T, 0.2, M, R + 0.5, runs=runs, seed=1, final_save=True, method=method)
            best[method] = min(best[method], time.perf_counter() - t0)
    z = (sim.mean() - exact) / sim.standard_error()
    print(f"Monte Carlo: work {work:,.0f} min, M {M:g}, T {T:.2f}, everies {every}, {sim.failures.mean():.0f} "
          f"failures per run; mean {sim.mean():,.1f} vs exact {exact:,.1f} ({z:+.2f} SE)")
    for name, t in best.items():
        label = "simulate_tiers (3 tiers)" if name == "tiered" else f"montecarlo.simulate {name} (1 tier)"
        print(f"  {label:38s} {runs / t:12,.0f} runs/s  ({t:.2f} s for {runs:,} runs)")
    compiled(runs, repeat, work, T, M, R, tiers, classes, exact, sim)


def compiled(runs, repeat, work, T, M, R, tiers, classes, exact, sim) -> None:
    """The engine's simulators against the compiled event loop, checked in distribution, then interleaved."""
    loop = compiled_loop()
    if loop is None:
        print("compiled baseline: numba is not installed (pip install numba), skipped")
        return
    n = max(math.ceil(work / T * (1.0 - 1e-14)), 1)
    K = max(t.every for t in tiers)
    stall = np.array([sum(t.checkpoint_stall_min for t in tiers if k % t.every == 0) for k in range(K)])
    names = list(classes)
    first = [next(t for t in tiers if c in t.survives) for c in names]
    every_of = np.array([t.every for t in first], np.int64)
    restore_of = np.array([t.restore_min for t in first])
    cum = np.cumsum([classes[c] for c in names]) / sum(classes.values())
    one = (np.array([0.2]), np.array([1], np.int64), np.array([0.5]), np.array([1.0]))
    loop(10, np.random.default_rng(0), n, T, M, R, stall, every_of, restore_of, cum)          # JIT compilation, not timed
    w3, f3 = loop(runs, np.random.default_rng(7), n, T, M, R, stall, every_of, restore_of, cum)
    print("  " + _agree("3 tiers", w3, f3, sim.wall, sim.failures, exact))
    s1 = mc.simulate(work, T, 0.2, M, R + 0.5, runs=runs, seed=1, final_save=True, method="per_failure")
    w1, f1 = loop(runs, np.random.default_rng(7), n, T, M, R, *one)
    print("  " + _agree("1 tier", w1, f1, s1.wall, s1.failures))
    fns = {"simulate_tiers": lambda: simulate_tiers(work, T, M, R, tiers=tiers, classes=classes, runs=runs, seed=1,
                                                    final_save=True),
           "compiled 3 tiers": lambda: loop(runs, np.random.default_rng(7), n, T, M, R, stall, every_of, restore_of, cum),
           "simulate per_window": lambda: mc.simulate(work, T, 0.2, M, R + 0.5, runs=runs, seed=1, final_save=True),
           "simulate per_failure": lambda: mc.simulate(work, T, 0.2, M, R + 0.5, runs=runs, seed=1, final_save=True,
                                                       method="per_failure"),
           "compiled 1 tier": lambda: loop(runs, np.random.default_rng(7), n, T, M, R, *one)}
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    print(f"  interleaved, {repeat} runs each, {runs:,} simulated runs a call: min / median seconds")
    for k, v in times.items():
        print(f"  {k:24s} {min(v):7.3f} {statistics.median(v):7.3f}")
    for a, b in (("simulate_tiers", "compiled 3 tiers"), ("simulate per_window", "compiled 1 tier"),
                 ("simulate per_failure", "compiled 1 tier")):
        print(f"  ratio {a} / {b}: {min(times[a]) / min(times[b]):.2f}x (min), "
              f"{statistics.median(times[a]) / statistics.median(times[b]):.2f}x (median)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--loop-rows", type=int, default=200)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    d = designs(args.rows)
    sample = list(range(0, args.rows, max(1, args.rows // args.loop_rows)))[: args.loop_rows]
    check(d, sample[:20])
    rows = [row(d, k) for k in sample]
    print(f"designs: {args.rows:,} (loop: {len(rows)} rows, its time scaled to {args.rows:,}); loop answers equal "
          "to 1e-12, everies exactly")
    for label, fn in (("expectation (tiered_wall_per_work)", _expectation),
                      ("optimum (optimal_tier_intervals)", _optimum)):
        vec, loop = side_by_side(d, rows, fn, args.repeat)
        scaled = loop * args.rows / len(rows)
        print(f"{label:36s} vectorised {vec:8.3f} s   loop {scaled:10.1f} s (scaled)   ratio {scaled / vec:8.0f}x")
    monte_carlo(args.runs, args.repeat)


if __name__ == "__main__":
    main()
