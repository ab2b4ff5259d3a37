"""10^4 tiered designs planned in one pass, against planning them one at a time and an independent per-row search.

    OMP_NUM_THREADS=1 python benchmarks/bench_tiered_designs.py [--designs 10000] [--loop-rows 300] [--repeat 2]

Designs: the ``llama3-405b-storage`` template's "in-memory tier" design (host memory + remote store, three
failure classes), each of the ``--designs`` with its own node count (512 .. 4,096), host-memory write
bandwidth (5 .. 50 GB/s per writer), remote ``every`` (2 .. 20) and class shares, so every design has its
own tier stalls, restores, pattern and optimum (spare pool and deadline left out: they are not the tiered
optimum). Each is a ``(scenario, setup)`` pair.

* ``pipeline``: :func:`engine.setup.plan_setups` of all pairs: one table pass, the designs stacked (one
  structure) and every optimum searched in one vectorised golden-section pass (timed on all designs);
* ``baseline``: an independent per-row optimum written here without the engine's kernels: the exact
  renewal recursion of the tiered model position by position (Benoit et al. 2017's nested tiers; the
  expectation of :mod:`engine.tiers.model`'s notes, written from the notes, not from the kernel) and a
  golden-section search in log T per row (plain Python floats), on ``--loop-rows`` designs, scaled;
* ``before`` (``--before SECONDS``): the per-design loop this replaced, timed on ``--loop-rows`` designs at
  the commit before (``git stash``) and passed in, scaled.

Before timing, the baseline's interval and waste are checked against the pipeline's (interval 1e-6
relative: the objective is flat at its minimum; waste 1e-9). The best of ``--repeat`` is kept.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ckptplan.engine.setup import plan_setups  # noqa: E402
from ckptplan.files import load_plan  # noqa: E402

__all__ = ["designs", "main", "wall_per_work", "optimum"]


def designs(n: int, seed: int = 5) -> list:
    """``n`` (scenario, setup) pairs of the in-memory tier design, each with its own numbers."""
    plan = load_plan("llama3-405b-storage").with_design("in-memory tier")
    rng = np.random.default_rng(seed)
    sc0 = plan.scenario.replace(deadline_h=None)
    st0 = plan.setup.replace(repair_h=None, spares=None, swap_min=None, replacement_share=None)
    out = []
    for _ in range(n):
        host, remote = (dict(t) for t in st0.tiers)
        host["write_gb_s_per_writer"] = host["read_gb_s_per_writer"] = float(np.round(rng.uniform(5, 50), 2))
        remote["every"] = int(rng.integers(2, 21))
        process, correlated = float(np.round(rng.uniform(0.1, 0.4), 3)), float(np.round(rng.uniform(0.01, 0.05), 3))
        classes = {"process": process, "node": round(1.0 - process - correlated, 6), "correlated": correlated}
        classes["node"] = 1.0 - classes["process"] - classes["correlated"]
        out.append((sc0.replace(nodes=int(rng.integers(512, 4097))),
                    st0.replace(tiers=(host, remote), failure_classes=classes)))
    return out


# ------------------------------------------------------------------------------ the independent baseline

def wall_per_work(T: float, M: float, R: float, stalls: list, restores: list, every: list, shares: list,
                  recover: list) -> float:
    """Expected wall time per unit of work of nested tiers, position by position (synchronous saves, no downtime).

    ``stalls``/``restores``/``every`` per tier; ``shares`` per class and ``recover`` its tier. Over the pattern
    of ``K = every[-1]`` saves: from durable ``p`` to ``p + 1`` in flow takes ``A_S(p) = f(P) B(p)``, just
    after a restore ``A_F(p) = f(P) B(p)`` (no background write: ``L = P``), ``f(X) = 1 - exp(-X/M)``, and
    ``B(p) = M + sum_j pi_j [Rexp_j + Back_j(p)]``: a class-``j`` failure restarts (``Rexp_j = M expm1(R_j/M)``,
    ``R_j = R + restore of its tier``) and redoes from its tier's newest copy ``q = floor(p/k) k``."""
    K = every[-1]
    c = M + sum(pi * M * math.expm1((R + restores[t]) / M) for pi, t in zip(shares, recover))
    a_s, a_f = [], []
    total = 0.0
    for p in range(K):
        stall = sum(s for s, e in zip(stalls, every) if (p + 1) % e == 0)
        f = -math.expm1(-(T + stall) / M)
        k0, here = c, 0.0
        for pi, t in zip(shares, recover):
            q = (p // every[t]) * every[t]
            if q == p:
                here += pi
            else:
                k0 += pi * (a_f[q] + sum(a_s[q + 1:p]))
        # B = k0 + (here f + (1 - here) f) B: the current position's time is in Back either way
        b = k0 / (1.0 - f)
        a_s.append(f * b)
        a_f.append(f * b)
        total += f * b
    return total / (K * T)


def optimum(M: float, R: float, stalls: list, restores: list, every: list, shares: list, recover: list,
            steps: int = 90) -> tuple[float, float]:
    """(T, waste) at the minimum of :func:`wall_per_work` over T: golden-section search in log T on a bracket a
    factor 64 either side of Young's interval of the first tier."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    centre = math.log(math.sqrt(2.0 * max(stalls[0], 1e-9) * M))
    lo, hi = centre - math.log(64.0), centre + math.log(64.0)

    def f(x: float) -> float:
        return wall_per_work(math.exp(x), M, R, stalls, restores, every, shares, recover)

    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = f(d)
    x = c if fc <= fd else d
    return math.exp(x), 1.0 - 1.0 / min(fc, fd)


def baseline(plans: list, pairs: list) -> list:
    """The independent optimum of each plan's design, from its inputs (stalls, restores, M, the restart)."""
    out = []
    for plan, (_, st) in zip(plans, pairs):
        f, tiers = plan.figures, plan.tiers
        names = list(st.failure_classes)
        recover = [next(i for i, t in enumerate(tiers) if c in t["survives"]) for c in names]
        R = tiers[0]["restart_min"] - tiers[0]["restore_min"]
        out.append(optimum(f["job_mtbf_h"] * 60.0, R, [t["checkpoint_stall_min"] for t in tiers],
                           [t["restore_min"] for t in tiers], [t["every"] for t in tiers],
                           [st.failure_classes[c] for c in names], recover))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--designs", type=int, default=10000)
    ap.add_argument("--loop-rows", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--before", type=float, default=None, help="seconds of the old loop on --loop-rows designs")
    ap.add_argument("--only-loop", action="store_true", help="time plan_setups on --loop-rows designs and stop")
    a = ap.parse_args()
    pairs = designs(a.designs)
    sample = pairs[:a.loop_rows]
    if a.only_loop:   # the figure passed as --before, run at the commit before
        t = time.perf_counter()
        plan_setups(sample)
        print(f"plan_setups of {len(sample)} designs: {time.perf_counter() - t:.3f} s")
        return
    plans = plan_setups(pairs)
    ref = baseline(plans[:a.loop_rows], sample)
    dT = max(abs(p.figures["interval_min"] / T - 1.0) for p, (T, _) in zip(plans, ref))
    dw = max(abs(p.figures["waste_fraction"] - w) for p, (_, w) in zip(plans, ref))
    assert dT < 1e-6 and dw < 1e-9, (dT, dw)
    best = {"pipeline": math.inf, "baseline": math.inf}
    scale = a.designs / a.loop_rows
    for _ in range(a.repeat):
        t = time.perf_counter()
        plan_setups(pairs)
        best["pipeline"] = min(best["pipeline"], time.perf_counter() - t)
        t = time.perf_counter()
        baseline(plans[:a.loop_rows], sample)
        best["baseline"] = min(best["baseline"], (time.perf_counter() - t) * scale)
    print(f"{a.designs:,} tiered designs (everies 2..20, {len(set(p.figures['interval_min'] for p in plans)):,} "
          f"distinct optima); baseline agrees: interval {dT:.1e} relative, waste {dw:.1e} absolute")
    print(f"  pipeline (plan_setups, one pass): {best['pipeline']:.2f} s ({a.designs / best['pipeline']:,.0f} designs/s)")
    print(f"  independent per-row search (Python, scaled from {a.loop_rows}): {best['baseline']:.1f} s, "
          f"ratio {best['baseline'] / best['pipeline']:.1f}x")
    if a.before is not None:
        before = a.before * scale
        print(f"  before: plan_setups one design at a time (scaled from {a.loop_rows}): {before:.1f} s, "
              f"ratio {before / best['pipeline']:.1f}x")


if __name__ == "__main__":
    main()
