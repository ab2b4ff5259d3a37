"""A batch of spot rows with deadlines: the simulated deadline figures of every row (issue 25).

    cd /tmp && OMP_NUM_THREADS=1 python /path/to/checkout/benchmarks/bench_spot_batch.py [--rows 1000] [--loop-rows 100]

``evaluate_rows`` of a table whose every row runs on spot capacity and gives a deadline simulates each row's job
(``DEFAULT_RUNS`` runs, ``DEFAULT_SEED``; :mod:`ckptplan.engine.preemption_table`). Before, one
``simulate_capacity(job, "spot")`` call per row; now ``simulate_spot_jobs`` runs all rows' jobs together, each
row's numbers the same. Timed, interleaved, CPU seconds (``time.process_time``):

1. the simulations alone: ``simulate_spot_jobs`` over every row's job, against the per-row loop of
   ``simulate_capacity`` on the first ``--loop-rows`` jobs, scaled to all rows (the loop is what the engine did
   before: a before/after history, not an independent baseline; the event loop checks of the model are in
   tests/test_preemption.py). Every row's wall times, costs and finished flags are checked equal first.
2. the whole ``evaluate_rows`` call on the table (the simulations plus the plans).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from ckptplan import engine, files
from ckptplan.engine.batch import evaluate_rows
from ckptplan.engine.fields import DEFAULT_RUNS, DEFAULT_SEED
from ckptplan.engine.spot_montecarlo import capacity_job, simulate_capacity, simulate_spot_jobs

__all__ = ["jobs_of", "main", "table"]


def table(rows: int, seed: int = 7) -> pd.DataFrame:
    """``rows`` spot scenarios around the seed template: 24-240 h of training, 0.02-0.5 preemptions an hour,
    notice 0-3 min, a wait for capacity 0-30 min, a deadline 5-40 % above the training time."""
    rng = np.random.default_rng(seed)
    base = engine.to_table([files.load_plan("seed").scenario])
    t = pd.concat([base] * rows, ignore_index=True)
    t["useful_training_h"] = rng.uniform(24, 240, rows)
    t["preemptions_per_h"] = np.exp(rng.uniform(np.log(0.02), np.log(0.5), rows))
    t["preemption_notice_min"] = rng.uniform(0, 3, rows)
    t["capacity_wait_min"] = rng.uniform(0, 30, rows)
    t["spot_price_per_gpu_hour"] = 1.0
    t["deadline_h"] = t["useful_training_h"] * rng.uniform(1.05, 1.4, rows)
    return t


def jobs_of(res: pd.DataFrame, t: pd.DataFrame) -> list[dict]:
    """Each row's job as preemption_table builds it (minutes, the chosen interval)."""
    jobs = []
    for i in range(len(t)):
        r, s = res.iloc[i], t.iloc[i]
        job = capacity_job(float(r["useful_h"]) * 60.0, float(r["checkpoint_stall_min"]), float(r["job_mtbf_h"]) * 60.0,
                           float(r["restart_min"]), 60.0 / float(s["preemptions_per_h"]),
                           float(s["preemption_notice_min"]), float(s["capacity_wait_min"]), float(s["deadline_h"]) * 60.0,
                           1.0, 1.0, float(r["gpus"]))
        job["T_spot"] = float(r["chosen_interval_min"])
        jobs.append(job)
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--loop-rows", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    t = table(args.rows)
    res = evaluate_rows(t)
    assert (res["status"] == "ok").all(), res.loc[res["status"] != "ok", "error"].head()
    jobs = jobs_of(res, t)
    k = min(args.loop_rows, len(jobs))
    P = time.process_time
    together, loop = [], []
    for _ in range(args.repeat):
        t0 = P()
        sims = simulate_spot_jobs(jobs, runs=DEFAULT_RUNS, seed=DEFAULT_SEED)
        together.append(P() - t0)
        t0 = P()
        one = [simulate_capacity(job, "spot", runs=DEFAULT_RUNS, seed=DEFAULT_SEED) for job in jobs[:k]]
        loop.append((P() - t0) * len(jobs) / k)
    for a, b in zip(one, sims):
        assert all(np.array_equal(a[key], b[key]) for key in ("wall", "cost", "finished"))
    p = np.array([np.mean(np.where(s["finished"], s["wall"], np.inf) <= j["deadline"]) for s, j in zip(sims, jobs)])
    assert np.allclose(p, res["p_finish_by_deadline"].to_numpy(), rtol=0, atol=0)
    t0 = P()
    evaluate_rows(t)
    whole = P() - t0
    print(f"{len(jobs):,} spot rows with deadlines, {DEFAULT_RUNS:,} runs each (rows checked equal: {k})")
    print(f"  simulate_spot_jobs, all rows together   {min(together):8.2f} s CPU")
    print(f"  simulate_capacity per row (scaled)      {min(loop):8.2f} s CPU  ({k} rows timed)")
    print(f"  per row / together                      {min(loop) / min(together):8.2f}x")
    print(f"  evaluate_rows of the whole table        {whole:8.2f} s CPU")


if __name__ == "__main__":
    main()
