"""``batch --capacity``: spot, on-demand and the on-demand fallback of many spot rows, and the spot Monte Carlo's runs/s.

    cd /tmp && OMP_NUM_THREADS=1 python /path/to/checkout/benchmarks/bench_capacity_batch.py [--rows 200] [--loop-rows 10]

Timed side by side in one run, CPU seconds (``time.process_time``):

1. the spot Monte Carlo's runs/s: ``simulate_capacity`` of the seed scenario on spot capacity (720 h of training,
   1,024 GPUs, 0.05 preemptions an hour, 2-minute notice, 15-minute wait, 778 h deadline), 4,000 runs, per policy;
2. the capacity comparison of ``--rows`` spot rows (12-48 h of training, 0.05-0.5 preemptions an hour, notice
   0-3 min, wait 0-30 min, deadline 5-40 % above the training), 4,000 runs per policy as compare:
   ``evaluate_rows(table, capacity=True)`` (the rows simulated together), against
   a. the baseline: a per-row loop written here, without the engine's simulation kernels: its own event
      simulation of the three policies (vectorised over one row's runs, its own random numbers) and its own
      threshold search; the intervals and the on-demand expected wall time per unit of work it switches on are
      the plan's (``capacity_job``: the inputs of a simulation, not the simulation). Agreement: each row's mean
      cost and P(finish by the deadline) of the three policies against the engine's, in standard errors of the
      difference (the fallback simulated at the engine's threshold);
   b. for the history: the engine's own per-row call (``capacity_policies``, what ``compare`` runs), scaled.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from ckptplan import engine, files
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.spot import CAPACITY_RUNS, CAPACITY_SEED, capacity_policies
from ckptplan.engine.spot_montecarlo import capacity_job, simulate_capacity

__all__ = ["baseline_policies", "baseline_sim", "main", "table"]

P = time.process_time


def table(rows: int, seed: int = 11) -> pd.DataFrame:
    """``rows`` spot scenarios around the seed template (module notes)."""
    rng = np.random.default_rng(seed)
    base = engine.to_table([files.load_plan("seed").scenario])
    t = pd.concat([base] * rows, ignore_index=True)
    t["useful_training_h"] = rng.uniform(12, 48, rows)
    t["preemptions_per_h"] = np.exp(rng.uniform(np.log(0.05), np.log(0.5), rows))
    t["preemption_notice_min"] = rng.uniform(0, 3, rows)
    t["capacity_wait_min"] = rng.uniform(0, 30, rows)
    t["spot_price_per_gpu_hour"] = rng.uniform(0.6, 1.5, rows)
    t["deadline_h"] = t["useful_training_h"] * rng.uniform(1.05, 1.4, rows)
    return t


# ----------------------------------------------------------------------------------------- the baseline

def baseline_sim(job: dict, policy: str, threshold: float, runs: int, rng: np.random.Generator) -> tuple:
    """(wall, cost, finished) of ``runs`` jobs, event by event, written from the model's notes: segments of T
    compute then a save of C (the last segment without one); a failure loses the work since the last save, then a
    downtime D (billed) and a restart R; a preemption (spot only) saves on notice when N >= C (keeps the work
    done, billed C), then a wait Wc without GPUs and a restart; a restart is itself interrupted the same way. The
    fallback moves to on-demand (a restart, none at the start) when deadline - t - left rho_od < threshold."""
    work, C, M, R, Pm, N, Wc, D = (job[k] for k in ("work", "C", "M", "R", "P", "N", "Wc", "D"))
    t, cost, left = np.zeros(runs), np.zeros(runs), np.full(runs, float(work))
    on_spot = np.full(runs, policy != "on-demand")
    price = lambda s: np.where(s, job["spot_price"], job["price"])  # noqa: E731

    def restart(ix: np.ndarray) -> None:
        while ix.size:
            s = on_spot[ix]
            f = rng.exponential(M, ix.size)
            p = np.where(s, rng.exponential(Pm, ix.size), np.inf)
            hit = np.minimum(f, p)
            fine = hit >= R
            dt = np.where(fine, R, hit)
            t[ix] += dt
            cost[ix] += dt * price(s)
            was_pre = ~fine & (p < f)
            was_fail = ~fine & ~was_pre
            t[ix[was_pre]] += Wc
            t[ix[was_fail]] += D
            cost[ix[was_fail]] += D * price(s[was_fail])
            ix = ix[~fine]

    live = np.arange(runs)
    for _ in range(10_000_000):
        if not live.size:
            break
        if policy == "fallback":
            go = live[on_spot[live] & (job["deadline"] - t[live] - left[live] * job["rho_od"] < threshold)]
            on_spot[go] = False
            restart(go[t[go] > 0])
        s = on_spot[live]
        T = np.where(s, job["T_spot"], job["T_od"])
        final = left[live] <= T
        need = np.where(final, left[live], T + C)
        f = rng.exponential(M, live.size)
        p = np.where(s, rng.exponential(Pm, live.size), np.inf)
        hit = np.minimum(f, p)
        done = hit >= need
        dt = np.where(done, need, hit)
        t[live] += dt
        cost[live] += dt * price(s)
        left[live[done]] -= np.where(final[done], left[live[done]], T[done])
        pre = ~done & (p < f)
        if N >= C:
            ix = live[pre]
            left[ix] -= np.minimum(hit[pre], T[pre])
            t[ix] += C
            cost[ix] += C * job["spot_price"]
        t[live[pre]] += Wc
        fail = ~done & ~pre
        t[live[fail]] += D
        cost[live[fail]] += D * price(s[fail])
        out = live[~done]
        restart(out[left[out] > 0])
        live = live[left[live] > 1e-9]
    return t, cost, left <= 1e-9


def baseline_policies(job: dict, runs: int, seed: int) -> dict:
    """Per policy (wall, cost, finished) and the fallback's threshold: the least slack (bisection) whose chance of
    finishing by the deadline reaches on-demand's, searched on common random numbers."""
    sims = {p: baseline_sim(job, p, 0.0, runs, np.random.default_rng(seed)) for p in ("on-demand", "spot")}
    on_time = lambda s: float(np.mean(s[2] & (s[0] <= job["deadline"])))  # noqa: E731
    target = on_time(sims["on-demand"])
    lo, hi = 0.0, job["deadline"]
    while hi - lo >= 1e-3 * max(job["deadline"], 1.0):
        mid = 0.5 * (lo + hi)
        ok = on_time(baseline_sim(job, "fallback", mid, runs, np.random.default_rng(seed))) >= target
        lo, hi = (lo, mid) if ok else (mid, hi)
    sims["fallback"] = baseline_sim(job, "fallback", hi, runs, np.random.default_rng(seed))
    return {"sims": sims, "threshold": hi}


# ----------------------------------------------------------------------------------------------- main

def _row_args(res: pd.Series, t: pd.Series) -> dict:
    return dict(work=float(t["useful_training_h"]) * 60.0, C=float(t["checkpoint_stall_min"]),
                M=float(res["job_mtbf_h"]) * 60.0, R=float(t["restart_min"]), P=60.0 / float(t["preemptions_per_h"]),
                N=float(t["preemption_notice_min"]), Wc=float(t["capacity_wait_min"]),
                deadline=float(t["deadline_h"]) * 60.0, price=float(t["price_per_gpu_hour"]),
                spot_price=float(t["spot_price_per_gpu_hour"]), gpus=float(res["gpus"]), D=0.0)


def runs_per_second(runs: int) -> None:
    """Runs/s of each policy on the seed scenario at a constant failure rate, with the burn-in of
    examples/seed-burn-in.toml (3x for 72 h) and with a Weibull shape 0.7 from the start: the same job otherwise
    (the schedules planned before the clock starts; their planning time printed apart). A shape below 1 with the
    same mean time to the first failure thins failures out over the run (fewer events per run than the constant
    rate), so its runs/s is not the cost of the same events."""
    plan = files.load_plan("seed").scenario
    M = 2560.0 / 128 * 60.0
    args = (plan.useful_training_h * 60.0, 2.0, M, 10.0, 60.0 / 0.05, 2.0, 15.0, 778.0 * 60.0, 2.5, 1.0, 1024.0)
    print(f"spot Monte Carlo, seed scenario (720 h, 1,024 GPUs, 0.05 preemptions/h), {runs:,} runs, runs/s:")
    print(f"  {'policy':10s} {'constant':>10s} {'burn-in':>10s} {'Weibull':>10s}")
    jobs = []
    for extra in ({}, dict(phase_starts=[0.0, 72 * 60.0], phase_factors=[3.0, 1.0]), dict(weibull_shape=0.7)):
        t0 = P()
        jobs.append(capacity_job(*args, **extra))
        print(f"  (job and schedules {P() - t0:.2f} s CPU)")
    for policy, th in (("on-demand", 0.0), ("spot", 0.0), ("fallback", 600.0)):
        best = [np.inf] * len(jobs)
        for _ in range(3):                                # interleaved, the best of three each
            for i, job in enumerate(jobs):
                t0 = P()
                simulate_capacity(job, policy, th, runs=runs, seed=0)
                best[i] = min(best[i], P() - t0)
        rates = [runs / b for b in best]
        print(f"  {policy:10s} " + " ".join(f"{r:10,.0f}" for r in rates)
              + f"   (burn-in / constant {rates[1] / rates[0]:.2f}, Weibull / constant {rates[2] / rates[0]:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--loop-rows", type=int, default=10)
    ap.add_argument("--runs", type=int, default=CAPACITY_RUNS)
    ap.add_argument("--runs-only", action="store_true", help="only the runs/s of the spot Monte Carlo")
    args = ap.parse_args()
    runs_per_second(args.runs)
    if args.runs_only:
        return
    t = table(args.rows)
    t0 = P()
    out = evaluate_rows(t, capacity=True, capacity_runs=args.runs)
    joint = P() - t0
    assert (out["status"] == "ok").all(), out.loc[out["status"] != "ok", "error"].head()
    plain = P()
    evaluate_rows(t)
    plain = P() - plain
    k = min(args.loop_rows, args.rows)
    t0 = P()
    engine_rows = [capacity_policies(**_row_args(out.iloc[i], t.iloc[i]), runs=args.runs, seed=CAPACITY_SEED)
                   for i in range(k)]
    engine_loop = (P() - t0) * args.rows / k
    t0 = P()
    base = [baseline_policies(capacity_job(**_row_args(out.iloc[i], t.iloc[i])), args.runs, 12345 + i)
            for i in range(k)]
    base_loop = (P() - t0) * args.rows / k
    z = {"on_demand": [], "spot": [], "fallback": []}
    zp = {"on_demand": [], "spot": [], "fallback": []}
    for i in range(k):
        job = capacity_job(**_row_args(out.iloc[i], t.iloc[i]))
        sims = dict(base[i]["sims"])
        sims["fallback"] = baseline_sim(job, "fallback", out["fallback_threshold_min"][i], args.runs,
                                        np.random.default_rng(777 + i))
        for key, name in (("on_demand", "on-demand"), ("spot", "spot"), ("fallback", "fallback")):
            ref = simulate_capacity(job, name, out["fallback_threshold_min"][i], runs=args.runs, seed=CAPACITY_SEED)
            assert ref["cost"].mean() == out[f"{key}_mean_cost"][i] == engine_rows[i][name]["mean_cost"]
            w, c, f = sims[name]
            se = np.sqrt(c.var() / args.runs + ref["cost"].var() / args.runs)
            z[key].append((c.mean() - ref["cost"].mean()) / se if se > 0 else 0.0)
            pb, pe = float(np.mean(f & (w <= job["deadline"]))), out[f"{key}_p_finish_by_deadline"][i]
            sp = np.sqrt((pb * (1 - pb) + pe * (1 - pe)) / args.runs)
            zp[key].append((pb - pe) / sp if sp > 0 else 0.0)
    thr = np.array([b["threshold"] for b in base]) - out["fallback_threshold_min"].to_numpy()[:k]
    print(f"\n{args.rows} spot rows with deadlines, three policies, {args.runs:,} runs each")
    print(f"  batch --capacity (evaluate_rows, rows together)     {joint:8.2f} s CPU  "
          f"(the plans alone: {plain:.2f} s)")
    print(f"  baseline per-row loop, own simulation (scaled)      {base_loop:8.2f} s CPU  ({k} rows timed)")
    print(f"  engine per-row capacity_policies (scaled)           {engine_loop:8.2f} s CPU")
    print(f"  baseline / batch                                    {base_loop / joint:8.2f}x")
    print(f"  engine per-row / batch                              {engine_loop / joint:8.2f}x")
    print(f"agreement on the {k} rows timed (baseline minus engine, in standard errors of the difference):")
    for key in z:
        print(f"  {key:10s} mean cost: max |z| {np.max(np.abs(z[key])):.2f}, mean z {np.mean(z[key]):+.2f};  "
              f"P(on time): max |z| {np.max(np.abs(zp[key])):.2f}")
    print(f"  fallback threshold (own search minus engine's): median {np.median(thr):+.1f} min, "
          f"max |.| {np.max(np.abs(thr)):.1f} min")


if __name__ == "__main__":
    main()
