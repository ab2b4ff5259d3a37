"""The elastic Monte Carlo (engine.elastic_montecarlo) against the expectation (engine.elastic) and against an
event-by-event simulation of a finite elastic job written here, independently of the engine: each replica out
carries its own return time, a stop's restart is retried attempt by attempt, and every failure is counted."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ckptplan.engine import InputError, elastic
from ckptplan.engine import montecarlo as mc
from ckptplan.engine.elastic_montecarlo import simulate_elastic


def _one_job(rng, work, T, C, M, R, D, n, K, keep, Ps, Pg):
    """One finite job: (wall, failures, integral of the running nodes' failure rate)."""
    lam = 1.0 / M
    out: list[float] = []                  # chain-clock times at which each replica out is back
    clock = wall = exposed = 0.0
    fails = 0
    done = pending = 0.0
    t_in = 0.0                             # time into the current segment (compute, then save)
    saving = False
    while True:
        running = n - len(out)
        rate = lam * running / n
        to_fail = rng.expovariate(rate)
        to_back = min(out) - clock if out else math.inf
        if not saving:
            to_phase = min(T - t_in, (work - done - pending) * n / running)
        else:
            to_phase = T + C - t_in
        step = min(to_fail, to_back, to_phase)
        clock += step
        wall += step
        exposed += rate * step
        if not saving:
            pending += step * running / n
        t_in += step
        if step == to_phase:
            if not saving:
                saving, t_in = True, T         # compute over (the segment, or the job's work): save
                if work - done - pending < 1e-9 * work:
                    pending = work - done
                continue
            done += pending                    # saved: the work is safe
            pending, t_in, saving = 0.0, 0.0, False
            if done >= work * (1 - 1e-12):
                return wall, fails, exposed
            continue
        if step == to_back:
            out.remove(min(out))
            wall += Pg
            continue
        fails += 1
        if D == 0 and K >= 1:                  # a node back at once: shrink and regrow on the spot
            wall += Ps + Pg
        elif len(out) < K:                     # shrink: one replica out until its node is back
            out.append(clock + rng.expovariate(1.0 / D))
            wall += Ps
        else:                                  # the floor: stop, roll back, wait for a node, restart
            pending, t_in, saving = 0.0, 0.0, False
            rate_k = lam * (n - len(out)) / n
            while True:
                wall += D
                hit = rng.expovariate(rate_k) if rate_k > 0 else math.inf
                if hit >= R:
                    wall += R
                    exposed += rate_k * R
                    break
                wall += hit
                exposed += rate_k * hit
                fails += 1
            continue
        if not keep:
            pending, t_in, saving = 0.0, 0.0, False


def _event_sim(runs, seed, **kw):
    rng = random.Random(seed)
    got = np.array([_one_job(rng, **kw) for _ in range(runs)])
    return got[:, 0], got[:, 1], got[:, 2]


def _se(x):
    return float(np.std(x, ddof=1) / math.sqrt(len(x)))


def _engine(kw, runs, seed):
    return simulate_elastic(kw["work"], kw["T"], kw["C"], kw["M"], kw["R"], kw["D"], kw["n"], kw["n"] - kw["K"],
                            kw["keep"], kw["Ps"], kw["Pg"], runs=runs, seed=seed)


GRID = [
    # (n, K, keep, D, Ps, Pg)
    (8, 0, 1, 60.0, 1.0, 2.0),    # the floor at every replica: today's job
    (8, 1, 1, 60.0, 1.0, 2.0),
    (8, 1, 0, 60.0, 1.0, 2.0),
    (8, 3, 1, 200.0, 0.5, 0.5),
    (8, 3, 0, 200.0, 0.5, 0.5),
    (4, 3, 1, 400.0, 3.0, 1.0),   # floor of one replica
    (16, 2, 0, 30.0, 0.0, 0.0),
    (6, 2, 1, 0.0, 1.0, 1.0),     # a node back at once (many spares, instant swap)
]


@pytest.mark.parametrize("n,K,keep,D,Ps,Pg", GRID)
def test_mean_wall_and_failures_match_the_expectation(n, K, keep, D, Ps, Pg):
    """A long job (1,000 segments): the start and end effects are below a standard error, so the finite job's
    mean is the expectation within 3 standard errors; so are the failures, and (Wald) the failures and the
    integral of the running nodes' failure rate have the same mean."""
    kw = dict(work=60000.0, T=60.0, C=4.0, M=300.0, R=15.0, D=D, n=n, K=K, keep=keep, Ps=Ps, Pg=Pg)
    sim = _engine(kw, 3000, 11 + n + 10 * K + keep)
    b = elastic.elastic_breakdown(kw["work"], 60.0, 4.0, 300.0, 15.0, D, n, n - K, keep, Ps, Pg)
    assert abs(sim.wall.mean() - b["total"]) < 3 * _se(sim.wall), (sim.wall.mean(), b["total"])
    assert abs(sim.failures.mean() - b["failures"]) < 3 * _se(sim.failures)
    assert abs(sim.stops.mean() - b["stops"]) < 3 * _se(sim.stops) + 1e-9
    assert abs(sim.shrinks.mean() - b["shrinks"]) < 3 * _se(sim.shrinks) + 1e-9
    # the shrunk time carries the start effect most: the job starts with every replica running, so it lags the
    # stationary share of shrunk time by about the time to the first failure, M, times that share
    share = b["shrunk"] / b["total"]
    assert abs(sim.shrunk_time.mean() - b["shrunk"]) < 3 * _se(sim.shrunk_time) + 300.0 * share + 1e-9
    gap = sim.failures - sim.exposure
    assert abs(gap.mean()) < 3 * _se(gap) + 1e-9


@pytest.mark.parametrize("n,K,keep,D,Ps,Pg", GRID)
def test_monte_carlo_matches_an_event_by_event_simulation(n, K, keep, D, Ps, Pg):
    kw = dict(work=6000.0, T=60.0, C=4.0, M=300.0, R=15.0, D=D, n=n, K=K, keep=keep, Ps=Ps, Pg=Pg)
    wall, fails, exposed = _event_sim(400, 3 + n + K, **kw)
    sim = _engine(kw, 4000, 5 + n + K)
    for ours, theirs in ((sim.wall, wall), (sim.failures, fails), (sim.exposure, exposed)):
        se = math.hypot(_se(ours), _se(theirs))
        assert abs(ours.mean() - theirs.mean()) < 3 * se + 1e-9, (ours.mean(), theirs.mean(), se)
    # the event simulation's own Wald check: every failure counted, failures = integral of the rate
    assert abs((fails - exposed).mean()) < 3 * _se(fails - exposed) + 1e-9


def test_expected_failures_are_wall_over_job_mtbf_when_every_minute_is_exposed():
    """No wait for a node, no pause: every minute of the wall time is exposed at the job's rate 1/M, so the
    expected failures are wall / M exactly, in the plan and run by run in the simulation."""
    kw = dict(work=6000.0, T=60.0, C=4.0, M=300.0, R=15.0, D=0.0, n=8, K=0, keep=1, Ps=0.0, Pg=0.0)
    sim = _engine(kw, 2000, 4)
    np.testing.assert_allclose(sim.exposure, sim.wall / 300.0, rtol=1e-9)
    b = elastic.elastic_breakdown(6000.0, 60.0, 4.0, 300.0, 15.0, 0.0, 8, 8, 1)
    assert b["failures"] == pytest.approx(b["total"] / 300.0, rel=1e-12)
    assert abs(sim.failures.mean() - b["failures"]) < 3 * _se(sim.failures)


def test_floor_at_every_replica_is_todays_monte_carlo_in_distribution():
    """Today's job with its final save (the elastic job saves its last segment too)."""
    sim = simulate_elastic(6000.0, 60.0, 4.0, 300.0, 15.0, 60.0, 8, 8, runs=20000, seed=9)
    today = mc.simulate(6000.0, 60.0, 4.0, 300.0, 15.0, runs=20000, seed=9, final_save=True, D=60.0)
    for a, b in ((sim.wall, today.wall), (sim.failures, today.failures), (sim.rollbacks, today.rollbacks)):
        assert abs(a.mean() - b.mean()) < 3 * math.hypot(_se(a), _se(b))
    for q in (0.1, 0.5, 0.9):
        assert np.quantile(sim.wall, q) == pytest.approx(np.quantile(today.wall, q), rel=0.01)
    assert sim.failure_free == today.failure_free


def test_without_a_final_save_it_is_todays_deadline_job():
    sim = simulate_elastic(6000.0, 60.0, 4.0, 300.0, 15.0, 60.0, 8, 8, runs=20000, seed=8, final_save=False)
    today = mc.simulate(6000.0, 60.0, 4.0, 300.0, 15.0, runs=20000, seed=8, D=60.0)
    assert sim.failure_free == today.failure_free
    for a, b in ((sim.wall, today.wall), (sim.failures, today.failures)):
        assert abs(a.mean() - b.mean()) < 3 * math.hypot(_se(a), _se(b))


def test_same_seed_same_runs():
    args = (6000.0, 60.0, 4.0, 300.0, 15.0, 200.0, 8, 5, 0, 0.5, 0.5)
    a, b = simulate_elastic(*args, runs=9000, seed=3), simulate_elastic(*args, runs=9000, seed=3)
    c = simulate_elastic(*args, runs=9000, seed=4)
    np.testing.assert_array_equal(a.wall, b.wall)
    np.testing.assert_array_equal(a.failures, b.failures)
    assert not np.array_equal(a.wall, c.wall)


def test_split_adds_up_and_progress_kept_is_cheaper():
    kw = dict(work=6000.0, T=60.0, C=4.0, M=300.0, R=15.0, D=200.0, n=8, K=3, Ps=0.5, Pg=0.5)
    kept = _engine(dict(kw, keep=1), 4000, 2)
    lost = _engine(dict(kw, keep=0), 4000, 2)
    assert lost.wall.mean() > kept.wall.mean() + 3 * math.hypot(_se(kept.wall), _se(lost.wall))
    for sim in (kept, lost):
        assert np.all(sim.wall >= sim.failure_free + sim.restart_time - 1e-6)
        assert np.all(sim.failures == sim.shrinks + sim.stops + (sim.failures - sim.shrinks - sim.stops))
        assert np.all(sim.failures >= sim.shrinks + sim.stops)


@pytest.mark.parametrize("kw,field", [
    (dict(min_replicas=9), "min_replicas"),
    (dict(min_replicas=0), "min_replicas"),
    (dict(shrink_keeps_progress=2), "shrink_keeps_progress"),
    (dict(M=-1.0), "M"),
    (dict(runs=1), "runs"),
    (dict(T=[60.0, 30.0]), "T"),
    (dict(work=6e9), "useful_training_min"),        # about 4e7 events per run: refused before it runs
    (dict(M=float("nan")), "M"),
    (dict(D="60"), "D"),
    (dict(shrink_pause_min=float("inf")), "shrink_pause_min"),
    (dict(seed=-1), "seed"),
    (dict(final_save="yes"), "final_save"),
    (dict(M=1e-3, R=30.0, min_replicas=8), "M"),     # restarts that never succeed: the expectation overflows
])
def test_bad_inputs_are_refused_by_name(kw, field):
    args = dict(work=6000.0, T=60.0, C=4.0, M=300.0, R=15.0, D=60.0, replicas=8, min_replicas=6, runs=10)
    args.update(kw)
    with pytest.raises(InputError) as err:
        simulate_elastic(**args)
    assert err.value.field == field


# ----------------------------------------------------------------------------------- the deadline answers

from ckptplan.engine import evaluate  # noqa: E402
from ckptplan.engine.fields import DEFAULT_RUNS, DEFAULT_SEED  # noqa: E402
from ckptplan.files import load_plan  # noqa: E402

ELASTIC = dict(nodes_per_replica=16, min_replicas=6, on_node_loss="continue", shrink_pause_min=1.0,
               regrow_pause_min=2.0, shrink_keeps_progress=0, restart_min=70.0, downtime_min=60.0)


def _scenario(**changes):
    return load_plan("seed").scenario.replace(**ELASTIC, **changes)


def test_plan_simulates_the_elastic_deadline_answer():
    sc = _scenario(deadline_h=772.0)
    row = evaluate(sc).iloc[0]
    sim = simulate_elastic(sc.useful_training_h * 60, row["chosen_interval_min"], 2.0, row["job_mtbf_h"] * 60, 10.0,
                           60.0, 8, 6, 0, 1.0, 2.0, runs=DEFAULT_RUNS, seed=DEFAULT_SEED, final_save=False)
    assert row["p_finish_by_deadline"] == float(np.mean(sim.wall <= 772.0 * 60))
    assert 0.0 < row["p_finish_by_deadline"] < 1.0
    for q in (50, 90, 99):
        assert row[f"wall_h_p{q}"] == pytest.approx(np.quantile(sim.wall, q / 100) / 60, rel=1e-12)
    assert bool(row["deadline_approximation_ok"])
    # the simulated mean is the plan's expectation within the simulation's error and the start/end effects
    assert abs(sim.wall.mean() / 60 - row["wall_h"]) < 3 * _se(sim.wall) / 60 + sc.checkpoint_stall_min / 60
    no_deadline = evaluate(_scenario(deadline_h=None)).iloc[0]
    assert np.isnan(no_deadline["p_finish_by_deadline"]) and not bool(no_deadline["deadline_approximation_ok"])


def test_plan_json_and_deadline_command_say_the_same_probability():
    from typer.testing import CliRunner

    from ckptplan.cli import app

    args = ["--nodes-per-replica", "16", "--min-replicas", "6", "--on-node-loss", "continue", "--downtime-min", "60",
            "--restart-min", "70", "--shrink-pause-min", "1", "--regrow-pause-min", "2", "--deadline-h", "772"]
    import json

    plan = json.loads(CliRunner().invoke(app, ["plan", *args, "--json"]).output)
    assert plan["deadline_method"] == "simulated" and plan["deadline_runs"] == DEFAULT_RUNS
    out = CliRunner().invoke(app, ["deadline", *args, "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)["report"]
    assert report["on_node_loss"] == "continue" and report["expected_wall_h_exact"] is None
    assert report["p_finish"] == plan["p_finish_by_deadline"]
    assert report["wall_h_p90"] == pytest.approx(plan["wall_h_p90"], rel=1e-12)
    assert report["long_run_wall_h"] == pytest.approx(plan["wall_h"], rel=1e-12)
    assert json.loads(out.output)["analytic"] is None
    text = CliRunner().invoke(app, ["plan", *args])
    assert "simulated, training on fewer replicas" in text.output


def test_deadline_refuses_a_failure_law_the_elastic_model_does_not_hold():
    from ckptplan.engine.deadline import deadline_report
    from ckptplan.engine.montecarlo import FailureLaw

    with pytest.raises(InputError) as err:
        deadline_report(_scenario(deadline_h=760.0), runs=100, failures=FailureLaw.weibull(0.7))
    assert err.value.field == "failures"


def test_deadline_search_covers_the_elastic_job():
    from ckptplan.engine.deadline import deadline_report, deadline_search

    sc = _scenario(deadline_h=772.0)
    search = deadline_search(sc, runs=400, seed=3, intervals_min=[600.0, 1200.0])
    report = deadline_report(sc, runs=400, seed=3)
    chosen = search.candidates.set_index("interval_min").loc[search.chosen_interval_min]
    assert chosen["p_finish"] == report["p_finish"] and chosen["wall_h_p90"] == report["wall_h_p90"]
    assert search.finite_optimum_segments is None


def test_compare_gives_each_strategy_its_deadline_answer():
    from ckptplan.engine.setup import plan_setup
    from ckptplan.engine.strategies import DEADLINE_COLUMNS, recovery_strategies

    plan = load_plan("llama3-405b-storage")
    sc = plan.scenario.replace(nodes_per_replica=16, min_replicas=124, shrink_pause_min=1.0, regrow_pause_min=1.0)
    table = recovery_strategies(sc, plan.setup).set_index("strategy")
    assert set(DEADLINE_COLUMNS) <= set(table.columns)
    elastic_row = table.loc["elastic + spares"]
    planned = plan_setup(sc.replace(on_node_loss="continue"), plan.setup.replace(spares=int(elastic_row["spares"])))
    assert elastic_row["p_finish_by_deadline"] == planned.row["p_finish_by_deadline"]
    for q in ("p50", "p90"):
        assert elastic_row[f"total_cost_{q}"] == pytest.approx(
            planned.figures["total_cost"] * planned.row[f"wall_h_{q}"] / planned.figures["wall_h"], rel=1e-12)
    assert table.loc["hot spares", "p_finish_by_deadline"] == plan_setup(sc, plan.setup).row["p_finish_by_deadline"]
    no_deadline = recovery_strategies(sc.replace(deadline_h=None), plan.setup)
    assert not set(DEADLINE_COLUMNS) & set(no_deadline.columns)
