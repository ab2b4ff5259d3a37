"""Preemptible capacity: no preemption is today's plan exactly; the exact expectation agrees with an
event-by-event Monte Carlo; a notice that fits the save costs no rework; the spot price bills the GPU-hours."""

import numpy as np
import pytest

from ckptplan import engine, files
from ckptplan.engine import preemption as PR
from ckptplan.engine.preemption_montecarlo import simulate_preemptible


@pytest.mark.parametrize("C,M,R", [(3.0, 600.0, 10.0), (0.5, 90.0, 0.0), (20.0, 300.0, 45.0)])
def test_no_preemption_is_dalys_model_exactly(C, M, R):
    T = float(engine.exact_optimal_interval(C, M))
    got = PR.preemption_breakdown(12_000.0, T, C, M, R, np.inf, 2.0, 30.0)
    ref = engine.time_breakdown(12_000.0, T, C, M, R)
    for key in ("total", "save", "rework", "restart", "failures"):
        assert float(got[key]) == ref[key]
    assert float(got["wait"]) == 0 and float(got["preemptions"]) == 0
    assert float(PR.preemption_optimal_interval(C, M, R, np.inf, 2.0, 30.0)) == T


def test_zero_preemption_rate_reproduces_todays_plan():
    seed = files.load_scenario("seed")
    plain = engine.evaluate(seed).iloc[0]
    zero = engine.evaluate(seed.replace(preemptions_per_h=0.0, preemption_notice_min=2.0, capacity_wait_min=30.0,
                                        spot_price_per_gpu_hour=0.5)).iloc[0]
    for key in plain.index:
        if key in ("preemptions_per_h", "preemption_notice_min", "capacity_wait_min", "spot_price_per_gpu_hour"):
            continue
        a, b = plain[key], zero[key]
        assert a == b or (a != a and b != b), key


# (C, M, R, P, N, Wc): notice fits the save; notice too short; rare failures, frequent preemptions
CASES = [(3.0, 600.0, 10.0, 120.0, 5.0, 20.0), (3.0, 600.0, 10.0, 120.0, 2.0, 20.0),
         (1.0, 3000.0, 5.0, 60.0, 2.0, 10.0)]


@pytest.mark.parametrize("case", CASES)
def test_exact_expectation_agrees_with_monte_carlo(case):
    C, M, R, P, N, Wc = case
    T = float(PR.preemption_optimal_interval(C, M, R, P, N, Wc))
    cyc = PR.preemption_cycle(T, C, M, R, P, N, Wc)
    sim = simulate_preemptible(T, C, M, R, P, N, Wc, runs=4000, cycles=50, seed=5)
    work = sim["work"]
    for key, model in (("wall", cyc["time"]), ("failures", cyc["failures"]), ("preemptions", cyc["preemptions"]),
                       ("wait", cyc["wait"]), ("restart", cyc["restart"])):
        x = sim[key]
        est = x.sum() / work.sum()                                         # ratio estimator, per unit of work
        se = np.sqrt(np.sum((x - est * work) ** 2) / (x.size - 1) / x.size) / work.mean()
        assert abs(est - model / cyc["work"]) < 3 * se, (key, est, model / cyc["work"], se)


def test_a_notice_that_fits_the_save_costs_no_rework():
    # failures all but absent: what is lost is lost to preemptions
    T, C, M, R, P, Wc = 60.0, 3.0, 1e12, 10.0, 120.0, 20.0
    kept = PR.preemption_breakdown(6000.0, T, C, M, R, P, 3.0, Wc)
    lost = PR.preemption_breakdown(6000.0, T, C, M, R, P, 2.9, Wc)
    assert float(kept["rework"]) < 1e-6 * float(kept["total"])
    assert float(lost["rework"]) > 0.1 * 6000.0
    # on notice the interval is planned for failures alone: long
    assert float(PR.preemption_optimal_interval(C, 600.0, R, P, 3.0, Wc)) > float(
        PR.preemption_optimal_interval(C, 600.0, R, P, 2.9, Wc))


def test_spot_price_bills_the_gpu_hours_held():
    sc = files.load_scenario("seed").replace(preemptions_per_h=0.2, preemption_notice_min=2.0, capacity_wait_min=30.0,
                                             spot_price_per_gpu_hour=0.9)
    r = engine.evaluate(sc).iloc[0]
    held = r["wall_h"] - r["capacity_wait_h"]
    assert r["capacity_wait_h"] > 0 and r["expected_preemptions"] > 0
    assert r["total_gpu_hours"] == pytest.approx(held * r["gpus"])
    assert r["total_cost"] == pytest.approx(held * r["gpus"] * 0.9)
    assert r["useful_h"] + r["save_h"] + r["rework_h"] + r["restart_h"] == pytest.approx(held)


def test_preemptions_refused_where_not_modelled():
    seed = files.load_scenario("seed")
    # failure phases and a Weibull shape from the start on spot capacity are planned together
    # (tests/test_schedule_interruptions.py); asynchronous saves with preemptions are not
    with pytest.raises(engine.InputError, match="async_write_min"):
        engine.evaluate(seed.replace(preemptions_per_h=0.2, async_write_min=1.0))
    with pytest.raises(engine.InputError, match="preemptions_per_h"):
        engine.deadline_report(seed.replace(preemptions_per_h=0.2), runs=100)


def test_batch_rows_with_and_without_preemptions(tmp_path):
    from typer.testing import CliRunner

    from ckptplan.cli import app

    src = tmp_path / "rows.csv"
    src.write_text("name,checkpoint_stall_min,restart_min,node_mtbf_h,nodes,useful_training_h,price_per_gpu_hour,"
                   "preemptions_per_h,preemption_notice_min,capacity_wait_min,spot_price_per_gpu_hour\n"
                   "ondemand,2,10,2560,128,720,2.5,,,,\nspot,2,10,2560,128,720,2.5,0.1,2,20,1.0\n"
                   "bad,2,10,2560,128,720,2.5,-1,2,20,1.0\n")
    out = tmp_path / "out.csv"
    res = CliRunner().invoke(app, ["batch", str(src), "-o", str(out)])
    assert res.exit_code == 3, res.output
    import pandas as pd

    d = pd.read_csv(out)
    plain = engine.evaluate(files.load_scenario("seed").replace(deadline_h=None)).iloc[0]
    assert d.loc[0, "wall_h"] == pytest.approx(plain["wall_h"], rel=1e-12) and d.loc[0, "capacity_wait_h"] == 0
    assert d.loc[1, "expected_preemptions"] > 0 and d.loc[1, "total_cost"] < d.loc[0, "total_cost"]
    assert d.loc[2, "status"] == "error" and "preemptions_per_h" in d.loc[2, "error"]


def _spot_walls(work, T, C, M, R, P, N, Wc, runs, seed):
    """An event-by-event spot job, one run at a time (written here, not the engine's vectorised loop): compute T
    (or what is left: no final save), save C; a failure loses the work since the checkpoint and restarts R (a
    failure during it restarts it, a preemption waits Wc first); a preemption saves on notice (N >= C: the work
    done is kept, the save takes C) or loses it, then waits Wc and restarts."""
    rng = np.random.default_rng(seed)
    out = np.empty(runs)
    for i in range(runs):
        t, left = 0.0, work
        while left > 1e-9:
            seg = min(T, left)
            length = seg if seg == left else T + C
            f, p = rng.exponential(M), rng.exponential(P)
            if min(f, p) >= length:
                t, left = t + length, left - seg
                continue
            t += min(f, p)
            if p < f:
                if N >= C:
                    left -= min(p, seg)
                    t += C
                t += Wc
            if left <= 1e-9:
                break
            while True:                      # the restart
                f, p = rng.exponential(M), rng.exponential(P)
                if min(f, p) >= R:
                    t += R
                    break
                t += min(f, p) + (Wc if p < f else 0.0)
        out[i] = t
    return out


@pytest.mark.parametrize("notice", [0.5, 5.0])
def test_plan_deadline_on_spot_is_simulated_and_agrees_with_an_event_loop(notice):
    """plan's P(finish by the deadline) on spot capacity (simulated, DEFAULT_RUNS runs) against an event loop
    written here, within 4 standard errors of the two estimates."""
    sc = engine.Scenario(name="spot", nodes=8, node_mtbf_h=40.0, checkpoint_stall_min=3.0, restart_min=6.0,
                         useful_training_h=12.0, price_per_gpu_hour=2.0, preemptions_per_h=0.4,
                         preemption_notice_min=notice, capacity_wait_min=15.0, spot_price_per_gpu_hour=0.8,
                         deadline_h=16.0)
    r = engine.evaluate(sc).iloc[0]
    assert r["deadline_approximation_ok"] and 0.05 < r["p_finish_by_deadline"] < 0.95
    walls = _spot_walls(12.0 * 60, r["chosen_interval_min"], 3.0, r["job_mtbf_h"] * 60, 6.0, 150.0, notice, 15.0,
                        runs=3000, seed=7)
    p = np.mean(walls <= 16.0 * 60)
    se = np.sqrt(p * (1 - p) / 3000 + r["p_finish_by_deadline"] * (1 - r["p_finish_by_deadline"]) / 10_000)
    assert abs(p - r["p_finish_by_deadline"]) < 4 * se
    assert r["wall_h_p50"] * 60 == pytest.approx(np.percentile(walls, 50), rel=0.02)
    assert engine.evaluate(sc.replace(deadline_h=None)).iloc[0][["p_finish_by_deadline", "wall_h_p90"]].isna().all()
    with pytest.raises(engine.InputError, match="preemptions_per_h"):   # interrupted beyond any plan
        engine.evaluate(sc.replace(preemptions_per_h=1000.0, preemption_notice_min=0.0))


def test_plan_json_says_how_the_deadline_was_answered():
    from typer.testing import CliRunner

    from ckptplan.cli import app

    args = ["plan", "-t", "seed", "--deadline-h", "800", "--json"]
    import json

    spot = json.loads(CliRunner().invoke(app, args + ["--preemptions-per-h", "0.05"]).stdout)
    plain = json.loads(CliRunner().invoke(app, args).stdout)
    assert (spot["deadline_method"], spot["deadline_runs"], spot["deadline_seed"]) == ("simulated", 10_000, 0)
    assert plain["deadline_method"] == "analytic" and "deadline_runs" not in plain


def test_batch_carries_schedules_beside_spot_rows():
    """A table with a phased row and a spot row: the phased row carries its schedule columns, the spot row's best
    single interval and its wall time are the preemption model's (not the constant-rate model's)."""
    import pandas as pd

    t = pd.DataFrame({"name": ["ph", "spot"], "checkpoint_stall_min": [2.0, 2.0], "restart_min": [10.0, 10.0],
                      "node_mtbf_h": [2560.0, 2560.0], "nodes": [128, 128], "useful_training_h": [200.0, 200.0],
                      "price_per_gpu_hour": [3.0, 3.0], "phase1_start_h": [0.0, np.nan],
                      "phase1_rate_factor": [3.0, np.nan], "phase2_start_h": [72.0, np.nan],
                      "phase2_rate_factor": [1.0, np.nan], "preemptions_per_h": [np.nan, 0.1]})
    d = engine.evaluate(t)
    assert (d.loc[0, "schedule2_start_h"], d.loc[0, "schedule2_rate_factor"]) == (72.0, 1.0)
    assert d.loc[0, "schedule1_interval_min"] < d.loc[0, "schedule2_interval_min"]
    assert d.loc[1, "single_interval_min"] == d.loc[1, "exact_interval_min"]
    assert d.loc[1, "single_interval_wall_h"] == pytest.approx(d.loc[1, "wall_h"], rel=1e-12)
