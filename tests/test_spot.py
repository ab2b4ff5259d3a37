"""Spot, on-demand and spot with an on-demand fallback: the fallback is on time as often as on-demand in a
fresh Monte Carlo and pays less; the policies reach compare --json."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.engine import spot

from spot_reference import simulate_capacity_loop

JOB = dict(work=100 * 60.0, C=2.0, M=600.0, R=10.0, P=300.0, N=2.0, Wc=30.0, deadline=125 * 60.0, price=2.5,
           spot_price=1.0, gpus=64)


def test_fallback_meets_its_deadline_probability_in_a_fresh_monte_carlo():
    found = spot.capacity_policies(**JOB, runs=3000, seed=1)
    od, fb, sp = found["on-demand"], found["fallback"], found["spot"]
    assert od["p_finish_by_deadline"] > 0.99 and sp["p_finish_by_deadline"] < 0.9
    job = spot.capacity_job(*(JOB[k] for k in ("work", "C", "M", "R", "P", "N", "Wc", "deadline", "price", "spot_price",
                                       "gpus")))
    runs = 6000
    fresh = spot.simulate_capacity(job, "fallback", fb["threshold_min"], runs=runs, seed=99)
    p = np.mean(fresh["finished"] & (fresh["wall"] <= JOB["deadline"]))
    t = fb["target_p_finish"]
    se = np.sqrt(t * (1 - t) / 3000 + p * (1 - p) / runs)   # the target is itself a 3,000-run estimate
    assert p >= t - 3 * se - 1.0 / 3000
    assert fb["mean_cost"] < od["mean_cost"]          # it runs on spot until it must not
    assert fb["mean_cost"] > sp["mean_cost"]


def test_policies_without_preemptions_are_the_same_job():
    job = spot.capacity_job(*(dict(JOB, P=np.inf, spot_price=2.5)[k] for k in ("work", "C", "M", "R", "P", "N", "Wc",
                                                                         "deadline", "price", "spot_price", "gpus")))
    a = spot.simulate_capacity(job, "spot", runs=2000, seed=3)
    b = spot.simulate_capacity(job, "on-demand", runs=2000, seed=3)
    assert np.allclose(a["wall"].mean(), b["wall"].mean(), rtol=0.01)


def test_compare_reports_the_three_policies():
    res = CliRunner().invoke(app, ["compare", "--json", "--preemptions-per-h", "0.2", "--preemption-notice-min", "2",
                                   "--capacity-wait-min", "30", "--spot-price-per-gpu-hour", "1.0",
                                   "--useful-training-h", "50", "--deadline-h", "60"])
    assert res.exit_code == 0, res.output
    cap = json.loads(res.output)["capacity"]
    assert set(cap["policies"]) == {"on-demand", "spot", "fallback"}
    assert cap["policies"]["fallback"]["p_finish_by_deadline"] >= cap["policies"]["fallback"]["target_p_finish"]


@pytest.mark.parametrize("shared", [1 << 23, 5_000])
def test_spot_jobs_together_are_each_jobs_own_simulation(monkeypatch, shared):
    """simulate_spot_jobs (the batch's many spot rows at once) gives, run by run, every job's numbers of the one-job
    loop it was written from (tests/spot_reference.py): saves on notice or not, a wait for capacity or none, no restart, no preemption, a short last segment,
    a downtime after failures, jobs split over several passes, and jobs that draw past the shared numbers."""
    from ckptplan.engine import spot_montecarlo

    keys = ("work", "C", "M", "R", "P", "N", "Wc", "deadline", "price", "spot_price", "gpus")
    variants = [JOB, dict(JOB, N=0.5), dict(JOB, Wc=0.0), dict(JOB, R=0.0), dict(JOB, P=np.inf),
                dict(JOB, work=7 * 60.0 + 13.0, deadline=9 * 60.0, M=90.0, P=45.0), dict(JOB, D=25.0, M=120.0)]
    jobs = []
    for i, v in enumerate(variants):
        job = spot.capacity_job(*(v[k] for k in keys), v.get("D", 0.0))
        if i == 2:
            job["T_spot"] = 97.3   # a row that chose its own interval
        jobs.append(job)
    monkeypatch.setattr(spot_montecarlo, "SPOT_BLOCK", 2 * 700)   # two jobs a pass: three passes
    monkeypatch.setattr(spot_montecarlo, "SHARED_DRAWS", shared)
    together = spot_montecarlo.simulate_spot_jobs(jobs, runs=700, seed=11)
    for job, got in zip(jobs, together):
        want = simulate_capacity_loop(job, "spot", runs=700, seed=11)
        for key in ("wall", "cost", "finished"):
            assert np.array_equal(got[key], want[key]), key
