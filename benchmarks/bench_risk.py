"""Risk, sensitivity and targets at scale against per-row loops (issue 23).

Three measurements, each the vectorised engine function against a loop written here, row by row, over
the engine's one-scenario API (``engine.setup.plan_setup``, ``engine.evaluate``, ``scipy.optimize.brentq``):

1. *Tornado, 20 inputs x 100 designs*: the Llama 3 storage template with 20 input ranges and 100
   designs (each sets or scales one or two of its inputs), ``engine.sensitivity.tornado`` (41 plans per
   design, 4,141 plans) against a loop of ``Design.apply`` + ``plan_setup`` for every plan. The loop runs
   on the first ``--loop-designs`` designs and is scaled to 100 (a plan_setup per plan is linear in plans).
   Agreement: the largest relative difference of total cost over the plans the loop computed.
2. *10^5 input draws*: ``engine.risk.risk_percentiles`` on the seed case with four input ranges
   against a loop that plans each draw with ``plan_setup`` and takes its run's wall time from
   ``engine.wall_distribution.wall_time_quantile`` (one call per draw); the loop runs ``--loop-draws``
   draws and is scaled.
3. *Target over 10^4 scenarios*: the stall that reaches a goodput of 0.95 for 10^4 variants of the seed
   case (nodes 32..512, node MTBF 1,000..8,000 h, restart 2..30 min), ``engine.targets.solve_targets``
   against ``brentq`` on ``engine.evaluate`` per scenario (``--loop-targets`` of them, scaled).
   Agreement: the largest relative difference of the solved stall over the rows both solved.

Run single-threaded:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/bench_risk.py
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ckptplan.engine.designs import Design  # noqa: E402
from ckptplan.engine.fields import SETUP_FIELD_BY_NAME  # noqa: E402
from ckptplan.engine.uncertainty import uncertainty_from_dict  # noqa: E402
from ckptplan.files import load_plan  # noqa: E402

#: 20 input ranges around the storage template's values
RANGES = {
    "node_mtbf_h": [3000, 12000], "useful_training_h": [1000, 1400], "price_per_gpu_hour": [2.0, 3.5],
    "deadline_h": [1200, 1500], "parameters_b": [300, 500], "bytes_per_parameter": [12, 16],
    "extra_state_gb": [0, 200], "write_gb_s_per_writer": [0.5, 2.0], "aggregate_write_gb_s": [1000, 4000],
    "read_gb_s_per_writer": [0.5, 2.0], "aggregate_read_gb_s": [1000, 4000], "detection_min": [0.5, 5],
    "startup_min": [1, 10], "init_min": [0.5, 5], "init_per_1000_nodes_min": [0.2, 3], "warmup_min": [1, 5],
    "spares": [0, 32], "repair_h": [8, 72], "swap_min": [1, 5], "price_per_gb_month": [0.01, 0.05],
}


def _designs(n: int) -> tuple[Design, ...]:
    """``n`` designs: each scales one input of RANGES and sets another (deterministic)."""
    names = list(RANGES)
    out = []
    for i in range(n):
        a, b = names[i % len(names)], names[(7 * i + 3) % len(names)]
        factor = 0.6 + 0.8 * ((i * 37) % 100) / 100
        if SETUP_FIELD_BY_NAME.get(a) is not None and SETUP_FIELD_BY_NAME[a].integer:
            factor = 2.0   # a whole number stays whole
        lo, hi = RANGES[b]
        value = lo + (hi - lo) * ((i * 53) % 100) / 100
        if SETUP_FIELD_BY_NAME.get(b) is not None and SETUP_FIELD_BY_NAME[b].integer:
            value = float(round(value))
        out.append(Design(f"design {i}", set={b: value} if b != a else {}, times={a: factor}))
    return tuple(out)


def _loop_plan(plan, design, field: str, x: float) -> float:
    """One plan of the loop: the baseline with ``field`` = x, the design applied, planned by plan_setup."""
    from ckptplan.engine.setup import plan_setup

    sc, st = plan.scenario, plan.setup
    if field in SETUP_FIELD_BY_NAME:
        st = st.replace(**{field: int(x) if SETUP_FIELD_BY_NAME[field].integer else x})
    elif field == "node_mtbf_h":
        sc = sc.replace(node_mtbf_h=x, failure_rate_source="")
    else:
        sc = sc.replace(**{field: x})
    if design is not None:
        sc, st = design.apply(sc), design.apply_setup(st)
    return plan_setup(sc, st).figures["total_cost"]


def tornado_bench(loop_designs: int) -> dict:
    from ckptplan.engine.sensitivity import tornado

    plan = load_plan("llama3-405b-storage")
    # the designs scale node_mtbf_h: the node MTBF as a number, not from the published rate
    plan = plan.__class__(plan.scenario.replace(failure_rate_source=""), plan.setup, (), plan.origin)
    inputs = uncertainty_from_dict(RANGES, plan.scenario, plan.setup)
    designs = _designs(100)
    t0 = time.perf_counter()
    table = tornado(plan.scenario, plan.setup, designs, inputs, outputs=("total_cost",))
    fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    worst = 0.0
    for design in (None,) + designs[:loop_designs]:
        name = plan.scenario.name if design is None else design.name
        for u in inputs:
            for end, col in ((u.low, "at_low"), (u.high, "at_high")):
                got = table[(table.plan == name) & (table.input == u.field)][col].iloc[0]
                want = _loop_plan(plan, design, u.field, end)
                worst = max(worst, abs(got - want) / abs(want))
    loop = (time.perf_counter() - t0) * 101 / (loop_designs + 1)
    return {"what": "tornado, 20 inputs x 100 designs (4,141 plans)", "fast_s": fast, "loop_s": loop,
            "agreement": f"max rel. diff of total cost {worst:.1e} over {(loop_designs + 1) * 40} plans"}


def draws_bench(loop_draws: int) -> dict:
    from ckptplan.engine.risk import draw_inputs, risk_percentiles
    from ckptplan.engine.setup import plan_setup
    from ckptplan.engine.wall_distribution import wall_time_quantile

    plan = load_plan("seed")
    ranges = {"node_mtbf_h": [1500, 4000], "restart_min": {"dist": "pert", "low": 5, "high": 30},
              "checkpoint_stall_min": [1, 4], "price_per_gpu_hour": {"dist": "uniform", "low": 2.0, "high": 3.0}}
    inputs = uncertainty_from_dict(ranges, plan.scenario, plan.setup)
    t0 = time.perf_counter()
    risk_percentiles(plan.scenario, plan.setup, (), inputs, draws=100_000, seed=0)
    fast = time.perf_counter() - t0
    values = draw_inputs(inputs, loop_draws, seed=5)
    v = np.random.default_rng(6).random(loop_draws)
    t0 = time.perf_counter()
    costs = []
    for i in range(loop_draws):
        sc = plan.scenario.replace(**{k: float(a[i]) for k, a in values.items()})
        f = plan_setup(sc, plan.setup).figures
        wall = wall_time_quantile(v[i], sc.useful_training_h * 60, f["interval_min"], sc.checkpoint_stall_min,
                                  f["job_mtbf_h"] * 60, sc.restart_min) / 60
        costs.append(wall * f["total_cost"] / f["wall_h"])
    loop = (time.perf_counter() - t0) * 100_000 / loop_draws
    from ckptplan.engine.risk import run_figures
    from ckptplan.engine.sensitivity import evaluate_variants, variants

    res = evaluate_variants([(variants(plan.scenario, plan.setup)[0], values)])[0]
    same = run_figures(res, v, tiered=False)["total_cost"]     # the engine on the loop's draws
    worst = float(np.max(np.abs(same - np.array(costs)) / np.array(costs)))
    return {"what": "10^5 input draws, each with one run (seed case, 4 inputs)", "fast_s": fast, "loop_s": loop,
            "agreement": f"max rel. diff of a run's cost {worst:.1e} over {loop_draws} draws"}


def _target_table(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame({"checkpoint_stall_min": 2.0, "restart_min": rng.uniform(2, 30, n),
                         "node_mtbf_h": rng.uniform(1000, 8000, n), "nodes": rng.integers(32, 513, n).astype(float),
                         "useful_training_h": 720.0, "price_per_gpu_hour": 2.5})


def target_bench(loop_targets: int) -> dict:
    from scipy.optimize import brentq

    from ckptplan.engine.scenario import Scenario, evaluate
    from ckptplan.engine.targets import solve_targets

    table = _target_table(10_000)
    t0 = time.perf_counter()
    got = solve_targets(table, "checkpoint_stall_min", "goodput", 0.95)
    fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    worst, both, differ = 0.0, 0, 0
    for i in range(loop_targets):
        row = table.iloc[i]
        sc = Scenario(name="row", checkpoint_stall_min=2.0, restart_min=float(row.restart_min),
                      node_mtbf_h=float(row.node_mtbf_h), nodes=int(row.nodes), useful_training_h=720.0,
                      price_per_gpu_hour=2.5)

        def margin(c: float) -> float:
            return float(evaluate(sc.replace(checkpoint_stall_min=c)).iloc[0]["goodput"]) - 0.95

        lo, hi = 1e-9, 2.0   # a save is never free: the stall stays > 0
        while margin(hi) > 0 and hi < 1e5:
            hi *= 2
        solved = margin(lo) > 0 > margin(hi)
        differ += solved != bool(got["reachable"].iloc[i])
        if solved and got["reachable"].iloc[i]:
            x = brentq(margin, lo, hi, xtol=1e-12, rtol=1e-12)
            worst = max(worst, abs(x - got["checkpoint_stall_min"].iloc[i]) / x)
            both += 1
    loop = (time.perf_counter() - t0) * len(table) / loop_targets
    return {"what": "target: stall for goodput 0.95, 10^4 scenarios", "fast_s": fast, "loop_s": loop,
            "agreement": f"max rel. diff of the stall {worst:.1e} over {both} rows, {differ} of {loop_targets} "
                         "reachable by one only; "
                         f"{int(got['reachable'].sum())} of 10,000 reachable"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loop-designs", type=int, default=10)
    ap.add_argument("--loop-draws", type=int, default=1000)
    ap.add_argument("--loop-targets", type=int, default=300)
    args = ap.parse_args()
    rows = [tornado_bench(args.loop_designs), draws_bench(args.loop_draws), target_bench(args.loop_targets)]
    print(f"{'measurement':52} {'engine (s)':>11} {'per-row loop (s)':>17} {'ratio':>7}  agreement")
    for r in rows:
        print(f"{r['what']:52} {r['fast_s']:11.2f} {r['loop_s']:17.1f} {r['loop_s'] / r['fast_s']:7.0f}  "
              f"{r['agreement']}")


if __name__ == "__main__":
    main()
