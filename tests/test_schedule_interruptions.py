"""Failure phases together with preemptions and a downtime: the schedule's expectation
(engine.schedule_interruptions) against its limits (the failure-phase model, the spot model) and against an
event-by-event simulation written here (not the engine's Monte Carlo)."""

import math

import numpy as np
import pytest

from ckptplan.engine.phases import schedule_expectation
from ckptplan.engine.preemption import preemption_breakdown
from ckptplan.engine.schedule_interruptions import (exposure, interruption_optimal_schedule,
                                                    interruption_schedule_expectation)


def _expect(work, T, C, M, R, starts, factors, P, N, Wc, D=0.0):
    e = exposure(starts, factors, M, P, C, R, D, Wc, N >= C, starts[-1] + 1.0)
    return interruption_schedule_expectation(work, T, e)


def test_no_preemption_no_downtime_is_the_failure_phase_model():
    args = (24_000.0, [33.0, 58.0], 3.0, 600.0, 10.0, [0.0, 4320.0], [3.0, 1.0])
    ref = schedule_expectation(*args)
    got = _expect(*args, math.inf, 0.0, 0.0)
    for key in ("total", "save", "restart", "rework", "failures"):
        assert got[key] == pytest.approx(ref[key], rel=1e-6)
    assert got["wait"] == 0 and got["preemptions"] == 0


def test_preemption_that_loses_its_work_without_a_wait_is_one_more_failure_rate():
    M, P = 600.0, 300.0
    got = _expect(20_000.0, [40.0, 60.0], 3.0, M, 10.0, [0.0, 4320.0], [3.0, 1.0], P, 1.0, 0.0)
    ref = schedule_expectation(20_000.0, [40.0, 60.0], 3.0, M, 10.0, [0.0, 4320.0], [3.0 + M / P, 1.0 + M / P])
    assert got["total"] == pytest.approx(ref["total"], rel=1e-6)
    assert got["failures"] + got["preemptions"] == pytest.approx(ref["failures"], rel=1e-6)


@pytest.mark.parametrize("N", [0.0, 5.0])
def test_one_phase_is_the_spot_model(N):
    got = _expect(20_000.0, [50.0], 3.0, 600.0, 10.0, [0.0], [1.0], 300.0, N, 15.0)
    ref = preemption_breakdown(20_000.0, 50.0, 3.0, 600.0, 10.0, 300.0, N, 15.0)
    for key in ("total", "restart", "wait"):
        assert got[key] == pytest.approx(float(ref[key]), rel=1e-12)


def test_a_boundary_where_nothing_changes_changes_nothing():
    one = _expect(20_000.0, [50.0], 3.0, 600.0, 10.0, [0.0], [1.0], 300.0, 5.0, 15.0, 4.0)
    two = _expect(20_000.0, [50.0, 50.0], 3.0, 600.0, 10.0, [0.0, 2000.0], [1.0, 1.0], 300.0, 5.0, 15.0, 4.0)
    for key in ("total", "save", "restart", "wait", "failures", "preemptions"):
        assert two[key] == pytest.approx(one[key], rel=2e-6)


class _Job:
    """What physically happens (module notes of engine.schedule_interruptions), one run at a time."""

    def __init__(self, starts, factors, M, P, C, R, D, N, Wc, T, rng):
        self.s, self.lam = np.asarray(starts, float), np.asarray(factors, float) / M
        self.pi, self.C, self.R, self.D, self.Wc, self.T = 1.0 / P, C, R, D, Wc, list(T)
        self.keep, self.rng = N >= C, rng

    def _ph(self, t):
        return int(np.searchsorted(self.s, t, side="right") - 1)

    def next_failure(self, t):
        """Walk phase by phase, spending one unit exponential of cumulative rate."""
        need = self.rng.exponential()
        j = self._ph(t)
        while True:
            end = self.s[j + 1] if j + 1 < len(self.s) else math.inf
            if need <= self.lam[j] * (end - t):
                return t + need / self.lam[j]
            need -= self.lam[j] * (end - t)
            t, j = end, j + 1

    def next_preemption(self, t):
        return t + self.rng.exponential(1.0 / self.pi) if self.pi > 0 else math.inf

    def restart(self, t, tally):
        while True:
            f, p = self.next_failure(t), self.next_preemption(t)
            if min(f, p) >= t + self.R:
                return t + self.R
            if f < p:
                tally["failures"] += 1
                t = f + self.D
            else:
                tally["preemptions"] += 1
                t = p + self.Wc

    def run(self, work, rho_last):
        """Wall time, failures, preemptions; the end counted as the constant-rate model does (the work's share
        of its last cycle: the regeneration that credits it, less rho of the last phase times the excess)."""
        t, credit = 0.0, 0.0
        tally = {"failures": 0, "preemptions": 0}
        while True:
            T = self.T[self._ph(t)]
            t0, end = t, t + T + self.C
            f, p = self.next_failure(t), self.next_preemption(t)
            if min(f, p) >= end:
                t, credit = end, credit + T
            elif f < p:
                tally["failures"] += 1
                t = self.restart(f + self.D, tally)
                continue
            else:
                tally["preemptions"] += 1
                if self.keep:
                    credit += min(p - t0, T)
                    t = self.restart(p + self.C + self.Wc, tally)
                else:
                    t = self.restart(p + self.Wc, tally)
                    continue
            if credit >= work:
                return t - rho_last * (credit - work), tally["failures"], tally["preemptions"]


# (work, T per phase, C, M, R, starts, factors, P, N, Wc, D): a burn-in on spot capacity with a notice that fits the
# save; one whose notice does not; a rate that rises mid-run with a downtime after every failure
MC_CASES = [
    (6_000.0, [30.0, 50.0], 3.0, 500.0, 10.0, [0.0, 1500.0], [3.0, 1.0], 400.0, 5.0, 20.0, 0.0),
    (6_000.0, [30.0, 50.0], 3.0, 500.0, 10.0, [0.0, 1500.0], [3.0, 1.0], 400.0, 1.0, 20.0, 0.0),
    (6_000.0, [60.0, 35.0], 3.0, 700.0, 8.0, [0.0, 2500.0], [1.0, 2.5], 500.0, 5.0, 10.0, 6.0),
]


@pytest.mark.parametrize("case", MC_CASES)
def test_expectation_agrees_with_an_event_by_event_simulation(case):
    work, T, C, M, R, starts, factors, P, N, Wc, D = case
    got = _expect(work, T, C, M, R, starts, factors, P, N, Wc, D)
    last = M / factors[-1]
    rho_last = _expect(1.0, [T[-1]], C, last, R, [0.0], [1.0], P, N, Wc, D)["total"]
    job = _Job(starts, factors, M, P, C, R, D, N, Wc, T, np.random.default_rng(7))
    runs = np.array([job.run(work, rho_last) for _ in range(3000)])
    for col, key in ((0, "total"), (1, "failures"), (2, "preemptions")):
        mean, se = runs[:, col].mean(), runs[:, col].std(ddof=1) / math.sqrt(len(runs))
        assert abs(got[key] - mean) < 3 * se, (key, got[key], mean, se)


def test_optimal_schedule_never_costs_more_than_one_interval():
    best = interruption_optimal_schedule(20_000.0, 3.0, 600.0, 10.0, [0.0, 4320.0], [3.0, 1.0], 300.0, 5.0, 15.0)
    assert best["schedule"]["total"] <= best["single"]["total"] * (1 + 1e-9)
    assert best["intervals"][0] < best["intervals"][1]   # shorter intervals in the burn-in


# --- the scenario table: the limits reproduce today's plans exactly, and the combination goes through ---

from ckptplan import engine  # noqa: E402

BASE = dict(name="t", checkpoint_stall_min=3.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=256,
            useful_training_h=300.0, price_per_gpu_hour=2.0, deadline_h=400.0)
PHASES = [{"start_h": 0, "rate_factor": 3}, {"start_h": 72, "rate_factor": 1}]
SPOT = dict(preemptions_per_h=0.1, preemption_notice_min=4.0, capacity_wait_min=20.0, spot_price_per_gpu_hour=0.8)
FIGURES = ("wall_h", "expected_failures", "save_h", "restart_h", "rework_h", "total_cost", "waste_fraction",
           "chosen_interval_min", "p_finish_by_deadline", "wall_h_p50", "wall_h_p90")


def _row(**kw):
    return engine.evaluate(engine.Scenario(**{**BASE, **kw})).iloc[0]


def test_zero_preemption_rate_is_todays_phase_plan_exactly():
    today, zero = _row(failure_phases=PHASES), _row(failure_phases=PHASES, **{**SPOT, "preemptions_per_h": 0.0})
    for key in FIGURES + ("schedule1_interval_min", "schedule2_interval_min", "single_interval_wall_h"):
        assert zero[key] == today[key], key


def test_a_single_phase_is_todays_spot_plan_exactly():
    today, one = _row(**SPOT), _row(failure_phases=[{"start_h": 0, "rate_factor": 1}], **SPOT)
    for key in FIGURES + ("expected_preemptions", "capacity_wait_h"):
        assert one[key] == today[key], key
    assert one["schedule1_interval_min"] == today["chosen_interval_min"]


def test_phases_on_spot_capacity_through_the_table():
    row = _row(failure_phases=PHASES, **SPOT)
    spot, phased = _row(**SPOT), _row(failure_phases=PHASES)
    assert row["schedule1_interval_min"] < row["schedule2_interval_min"]
    assert row["wall_h"] > max(spot["wall_h"], phased["wall_h"])       # both kinds of interruption
    assert row["wall_h"] <= row["single_interval_wall_h"] * (1 + 1e-9)
    billed_h = row["wall_h"] - row["capacity_wait_h"]
    assert row["capacity_wait_h"] > 0 and row["expected_preemptions"] > 0
    assert row["total_cost"] == pytest.approx(billed_h * row["gpus"] * 0.8, rel=1e-9)
    # the deadline answer is the schedule's simulation: its median near the expectation
    assert row["wall_h_p50"] == pytest.approx(row["wall_h"], rel=0.02)


def test_surfaces_carry_the_combination_or_refuse_it_by_name(tmp_path):
    import json

    from typer.testing import CliRunner

    from ckptplan.cli import app

    toml = tmp_path / "s.toml"
    toml.write_text("\n".join([f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in
                               {**BASE, **SPOT}.items()]) + "\n" + "".join(
        f"[[failure_phases]]\nstart_h = {p['start_h']}\nrate_factor = {p['rate_factor']}\n" for p in PHASES))
    row = _row(failure_phases=PHASES, **SPOT)
    res = CliRunner().invoke(app, ["plan", "--scenario", str(toml), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [s["interval_min"] for s in out["schedule"]] == [row["schedule1_interval_min"], row["schedule2_interval_min"]]
    for key in ("wall_h", "expected_preemptions", "capacity_wait_h", "total_cost", "p_finish_by_deadline"):
        assert out[key] == pytest.approx(float(row[key]), rel=1e-12), key
    text = CliRunner().invoke(app, ["plan", "--scenario", str(toml)]).output
    assert "on spot capacity" in text and "preemptions expected" in text
    # the workbook cannot show it: refused by name, nothing written
    res = CliRunner().invoke(app, ["workbook", "--scenario", str(toml), "-o", str(tmp_path / "w.xlsx"), "--no-deadline"])
    assert res.exit_code == 2 and "preemptions_per_h" in res.output and "not together" in res.output
    assert not (tmp_path / "w.xlsx").exists()
    down = tmp_path / "d.toml"
    down.write_text(toml.read_text().replace("preemptions_per_h = 0.1", "downtime_min = 4.0"))
    res = CliRunner().invoke(app, ["workbook", "--scenario", str(down), "-o", str(tmp_path / "w.xlsx"), "--no-deadline"])
    assert res.exit_code == 2 and "downtime_min" in res.output
    asyn = tmp_path / "a.toml"
    asyn.write_text(toml.read_text().replace("preemptions_per_h = 0.1", "async_write_min = 4.0"))
    res = CliRunner().invoke(app, ["workbook", "--scenario", str(asyn), "-o", str(tmp_path / "w.xlsx"), "--no-deadline"])
    assert res.exit_code == 2 and "async_write_min" in res.output and "synchronous" in res.output
    spot_down = tmp_path / "sd.toml"
    spot_down.write_text(toml.read_text().split("[[failure_phases]]")[0] + "downtime_min = 4.0\n")
    res = CliRunner().invoke(app, ["workbook", "--scenario", str(spot_down), "-o", str(tmp_path / "w.xlsx"),
                                   "--no-deadline"])
    assert res.exit_code == 0, res.output   # without phases the Spot sheet plans a downtime (test_workbook_recalc)
    assert (tmp_path / "w.xlsx").exists()
    # a batch row is the same plan
    table = engine.to_table([engine.Scenario(**BASE, **SPOT, failure_phases=PHASES)])
    batch = engine.evaluate(table).iloc[0]
    for key in ("wall_h", "total_cost", "expected_preemptions", "schedule2_interval_min"):
        assert batch[key] == pytest.approx(float(row[key]), rel=1e-12)
    # the UDF of the schedule takes the spot fields among its names
    from ckptplan.workbook.udfs_risk import CKPT_SCHEDULE

    names = [[k] for k in BASE if k not in ("name",)] + [[k] for k in SPOT]
    values = [[v] for k, v in BASE.items() if k != "name"] + [[v] for v in SPOT.values()]
    spilled = CKPT_SCHEDULE(names, values, [[0], [72]], [[3], [1]])
    assert spilled[2][2] == pytest.approx(row["schedule2_interval_min"], rel=1e-12)
    assert spilled[3] == ["wall_h", None, pytest.approx(row["wall_h"], rel=1e-12)]


# --- a downtime on spot capacity (the constant-rate spot model with D) ---

@pytest.mark.parametrize("N", [0.0, 5.0])
def test_spot_model_with_a_downtime_is_the_one_phase_schedule(N):
    got = _expect(20_000.0, [50.0], 3.0, 600.0, 6.0, [0.0], [1.0], 300.0, N, 15.0, 4.0)
    ref = preemption_breakdown(20_000.0, 50.0, 3.0, 600.0, 6.0, 300.0, N, 15.0, 4.0)
    for key in ("total", "restart", "wait"):
        assert got[key] == pytest.approx(float(ref[key]), rel=1e-12)
    # zero downtime is today's spot model, bit for bit
    plain = preemption_breakdown(20_000.0, 50.0, 3.0, 600.0, 6.0, 300.0, N, 15.0)
    zero = preemption_breakdown(20_000.0, 50.0, 3.0, 600.0, 6.0, 300.0, N, 15.0, 0.0)
    assert all(float(plain[k]) == float(zero[k]) for k in plain)


@pytest.mark.parametrize("N", [0.5, 5.0])
def test_spot_with_a_downtime_agrees_with_an_event_by_event_simulation(N):
    work, T, C, M, R, P, Wc, D = 6_000.0, 45.0, 3.0, 400.0, 6.0, 300.0, 15.0, 8.0
    ref = preemption_breakdown(work, T, C, M, R, P, N, Wc, D)
    rho = float(preemption_breakdown(1.0, T, C, M, R, P, N, Wc, D)["total"])
    job = _Job([0.0], [1.0], M, P, C, R, D, N, Wc, [T], np.random.default_rng(11))
    runs = np.array([job.run(work, rho)[0] for _ in range(3000)])
    se = runs.std(ddof=1) / math.sqrt(len(runs))
    assert abs(float(ref["total"]) - runs.mean()) < 3 * se, (float(ref["total"]), runs.mean(), se)


def test_spot_with_a_downtime_through_the_table():
    plain = _row(**SPOT)
    down = _row(**SPOT, downtime_min=4.0)           # 4 of the 10 restart minutes without nodes
    assert down["wall_h"] < plain["wall_h"]          # fewer failures strike the shorter exposed restart
    assert down["restart_h"] > 0 and down["capacity_wait_h"] > 0
    e = preemption_breakdown(300 * 60.0, down["chosen_interval_min"], 3.0, down["job_mtbf_h"] * 60, 6.0, 600.0, 4.0,
                             20.0, 4.0)
    assert down["wall_h"] == pytest.approx(float(e["total"]) / 60, rel=1e-12)
    assert down["wall_h_p50"] == pytest.approx(down["wall_h"], rel=0.02)   # the deadline simulation has it too
    zero = _row(**SPOT, downtime_min=0.0)
    for key in FIGURES + ("expected_preemptions", "capacity_wait_h"):
        assert zero[key] == plain[key], key
    phased = _row(**SPOT, downtime_min=4.0, failure_phases=PHASES)    # all three together
    assert phased["wall_h"] > down["wall_h"] and phased["schedule1_interval_min"] < phased["schedule2_interval_min"]


# --- a downtime with a Weibull intensity from the job's start ---

class _WeibullJob(_Job):
    """The same job, failures of cumulative intensity (t / eta)^k from its start (never reset)."""

    def __init__(self, k, M, *args, **kw):
        super().__init__(*args, **kw)
        self.k, self.eta = k, M / math.gamma(1.0 + 1.0 / k)

    def next_failure(self, t):
        return self.eta * ((t / self.eta) ** self.k + self.rng.exponential()) ** (1.0 / self.k)


def test_weibull_with_a_downtime_agrees_with_an_event_by_event_simulation():
    from ckptplan.engine.waste import expected_wall_time
    from ckptplan.engine.weibull_schedule import weibull_expectation

    work, C, M, R, D, k = 6_000.0, 3.0, 500.0, 6.0, 8.0, 0.6
    starts, T = [0.0, 300.0, 2000.0], [25.0, 40.0, 60.0]
    got = weibull_expectation(work, starts, T, C, M, R, k, D=D)
    eta = M / math.gamma(1.0 + 1.0 / k)
    local = 1.0 / ((k / eta) * (got["total"] / eta) ** (k - 1))       # the mean gap at the job's end
    rho = float(expected_wall_time(1.0, T[-1], C, local, R, D=D))
    job = _WeibullJob(k, M, starts, [1.0, 1.0, 1.0], M, math.inf, C, R, D, 0.0, 0.0, T, np.random.default_rng(5))
    runs = np.array([job.run(work, rho) for _ in range(3000)])
    for col, key in ((0, "total"), (1, "failures")):
        mean, se = runs[:, col].mean(), runs[:, col].std(ddof=1) / math.sqrt(len(runs))
        assert abs(got[key] - mean) < 3 * se, (key, got[key], mean, se)


def test_weibull_with_a_downtime_through_the_table():
    plain = _row(weibull_shape_from_start=0.7)
    zero = _row(weibull_shape_from_start=0.7, downtime_min=0.0)
    for key in FIGURES + ("schedule1_interval_min", "schedule2_interval_min"):
        assert zero[key] == plain[key], key
    down = _row(weibull_shape_from_start=0.7, downtime_min=4.0)
    assert down["schedule1_interval_min"] < down["schedule2_interval_min"]
    assert down["wall_h"] <= down["single_interval_wall_h"] * (1 + 1e-9)
    assert down["wall_h_p50"] == pytest.approx(down["wall_h"], rel=0.02)
    flat = _row(weibull_shape_from_start=1.0, downtime_min=4.0)      # shape 1: today's constant rate with D
    today = _row(downtime_min=4.0)
    for key in FIGURES:
        assert flat[key] == today[key], key


# --- preemptions with a Weibull intensity from the job's start (the spot model on the Weibull grid) ---

@pytest.mark.parametrize("N,D", [(0.5, 0.0), (5.0, 0.0), (5.0, 6.0)])
def test_weibull_with_preemptions_agrees_with_an_event_by_event_simulation(N, D):
    """A notice shorter than the save (every preemption rolls back), one that covers it (no rework), and the latter
    with a downtime after every failure: the expectation against the job simulated here, within 3 standard errors."""
    from ckptplan.engine.weibull_schedule import weibull_expectation

    work, C, M, R, k, P, Wc = 6_000.0, 3.0, 500.0, 6.0, 0.6, 400.0, 15.0
    starts, T = [0.0, 300.0, 2000.0], [25.0, 40.0, 60.0]
    got = weibull_expectation(work, starts, T, C, M, R, k, D=D, P=P, N=N, Wc=Wc)
    eta = M / math.gamma(1.0 + 1.0 / k)
    local = 1.0 / ((k / eta) * (got["total"] / eta) ** (k - 1))       # the mean gap at the job's end
    rho = float(preemption_breakdown(1.0, T[-1], C, local, R, P, N, Wc, D)["total"])
    job = _WeibullJob(k, M, starts, [1.0, 1.0, 1.0], M, P, C, R, D, N, Wc, T, np.random.default_rng(5))
    runs = np.array([job.run(work, rho) for _ in range(3000)])
    for col, key in ((0, "total"), (1, "failures"), (2, "preemptions")):
        mean, se = runs[:, col].mean(), runs[:, col].std(ddof=1) / math.sqrt(len(runs))
        assert abs(got[key] - mean) < 3 * se, (key, got[key], mean, se)
    assert got["wait"] == pytest.approx(got["preemptions"] * Wc, rel=1e-9)


def test_weibull_on_spot_capacity_through_the_table():
    plain = _row(weibull_shape_from_start=0.7)
    zero = _row(weibull_shape_from_start=0.7, **{**SPOT, "preemptions_per_h": 0.0})   # no preemption: today's plan
    for key in FIGURES + ("schedule1_interval_min", "schedule2_interval_min", "single_interval_wall_h"):
        assert zero[key] == plain[key], key
    row, spot = _row(weibull_shape_from_start=0.7, **SPOT), _row(**SPOT)
    assert row["schedule1_interval_min"] < row["schedule2_interval_min"]
    assert row["wall_h"] > plain["wall_h"]                                   # preemptions on top of the failures
    assert row["expected_failures"] < spot["expected_failures"]             # a falling intensity: fewer than flat
    assert row["wall_h"] <= row["single_interval_wall_h"] * (1 + 1e-9)
    assert row["capacity_wait_h"] > 0 and row["expected_preemptions"] > 0
    billed_h = row["wall_h"] - row["capacity_wait_h"]
    assert row["total_cost"] == pytest.approx(billed_h * row["gpus"] * 0.8, rel=1e-9)
    assert row["capacity_wait_h"] == pytest.approx(row["expected_preemptions"] * 20.0 / 60.0, rel=1e-9)
    # the deadline answer is the schedule's simulation (the one event loop, the Weibull draw): its median near
    assert row["wall_h_p50"] == pytest.approx(row["wall_h"], rel=0.02)
    flat = _row(weibull_shape_from_start=1.0, **SPOT)                   # shape 1: today's spot plan
    for key in FIGURES + ("expected_preemptions", "capacity_wait_h"):
        assert flat[key] == spot[key], key


def test_surfaces_carry_weibull_on_spot_capacity_or_refuse_it_by_name(tmp_path):
    import json

    import pandas as pd
    from typer.testing import CliRunner

    from ckptplan.cli import app
    from ckptplan.workbook.udfs_risk import CKPT_SCHEDULE, CKPT_SPOT_PLAN, SPOT_FIGURES

    extra = {**SPOT, "weibull_shape_from_start": 0.7}
    row = _row(**extra)
    toml = tmp_path / "s.toml"
    toml.write_text("\n".join([f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in
                               {**BASE, **extra}.items()]) + "\n")
    res = CliRunner().invoke(app, ["plan", "--scenario", str(toml), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [s["interval_min"] for s in out["schedule"]] == [row[f"schedule{i}_interval_min"]
                                                            for i in range(1, len(out["schedule"]) + 1)]
    for key in ("wall_h", "expected_preemptions", "capacity_wait_h", "total_cost", "p_finish_by_deadline",
                "wall_h_p90"):
        assert out[key] == pytest.approx(float(row[key]), rel=1e-12), key
    # a batch row is the same plan
    src = tmp_path / "rows.csv"
    pd.DataFrame([{**BASE, **extra}]).to_csv(src, index=False)
    res = CliRunner().invoke(app, ["batch", str(src), "-o", str(tmp_path / "out.csv")])
    assert res.exit_code == 0, res.output
    d = pd.read_csv(tmp_path / "out.csv").iloc[0]
    for key in ("wall_h", "total_cost", "expected_preemptions", "capacity_wait_h", "schedule2_interval_min"):
        assert d[key] == pytest.approx(float(row[key]), rel=1e-12), key
    # the workbook cannot show a Weibull schedule: refused by name, nothing written
    res = CliRunner().invoke(app, ["workbook", "--scenario", str(toml), "-o", str(tmp_path / "w.xlsx"), "--no-deadline"])
    assert res.exit_code != 0 and "weibull_shape_from_start" in res.output
    assert not (tmp_path / "w.xlsx").exists()
    # the spot UDF carries it; the schedule UDF (failure phases) refuses a shape beside its phases by name
    names = [[k] for k in BASE if k != "name"] + [[k] for k in extra]
    values = [[v] for k, v in BASE.items() if k != "name"] + [[v] for v in extra.values()]
    spilled = CKPT_SPOT_PLAN(names, values)
    for key, value in spilled[1:]:
        assert key in SPOT_FIGURES and value == pytest.approx(float(row[key]), rel=1e-12), key
    refused = CKPT_SCHEDULE(names, values, [[0], [72]], [[3], [1]])
    assert isinstance(refused, str) and "weibull_shape_from_start" in refused
    # the spot / on-demand / fallback comparison runs spot on the schedule plan reports on spot capacity
    res = CliRunner().invoke(app, ["compare", "--scenario", str(toml), "--json"])
    assert res.exit_code == 0, res.output
    policies = json.loads(res.output)["capacity"]["policies"]
    assert [(w["start_h"], w["interval_min"]) for w in policies["spot"]["schedule"]] == pytest.approx(
        [(w["start_h"], w["interval_min"]) for w in out["schedule"]], rel=1e-12)


def test_async_saves_with_preemptions_stay_refused_by_name_with_a_weibull_shape():
    with pytest.raises(engine.InputError, match="async_write_min"):
        _row(weibull_shape_from_start=0.7, async_write_min=4.0, **SPOT)


# --- asynchronous saves under failure phases (engine.schedule_async) ---

def test_async_one_phase_is_the_single_level_async_model_and_a_flat_boundary_changes_nothing():
    from ckptplan.engine.schedule_async import async_schedule_expectation
    from ckptplan.engine.waste import time_breakdown

    one = async_schedule_expectation(20_000.0, [45.0], 1.0, 600.0, 10.0, 8.0, 0.2, [0.0], [1.0])
    two = async_schedule_expectation(20_000.0, [45.0, 45.0], 1.0, 600.0, 10.0, 8.0, 0.2, [0.0, 3000.0], [1.0, 1.0])
    ref = time_breakdown(20_000.0, 45.0, 1.0, 600.0, 10.0, 8.0, 0.2)
    for key in ("total", "save", "rework", "restart", "failures"):
        assert one[key] == pytest.approx(float(ref[key]), rel=1e-12)
        assert two[key] == pytest.approx(float(ref[key]), rel=1e-9)


def _async_run(rng, work, starts, factors, M, T_by, C, R, W, sd, rho_last):
    """One job with asynchronous saves, event by event: from a durable checkpoint in steady state the next one is
    durable after the rest of the interval, the blocking save and the write (training on, slowed, during the write:
    T + C + W sd in all); after a restore no write is pending (T + C + W). A failure before the write is durable
    falls back to the previous checkpoint. The job starts as the steady state does; its end is counted as the
    constant-rate model counts it (the work's share of its last cycle)."""
    s, lam = np.asarray(starts), np.asarray(factors) / M

    def ph(t):
        return int(np.searchsorted(s, t, side="right") - 1)

    def next_failure(t):
        need, j = rng.exponential(), ph(t)
        while True:
            end = s[j + 1] if j + 1 < len(s) else math.inf
            if need <= lam[j] * (end - t):
                return t + need / lam[j]
            need -= lam[j] * (end - t)
            t, j = end, j + 1

    t, credit, steady, fails = 0.0, 0.0, True, 0
    while True:
        T = T_by[ph(t)]
        end = t + T + C + W * (sd if steady else 1.0)
        f = next_failure(t)
        if f >= end:
            t, credit, steady = end, credit + T, True
            if credit >= work:
                return t - rho_last * (credit - work), fails
            continue
        fails += 1
        t = f
        while True:                                    # the restart, restarted by a failure
            g = next_failure(t)
            if g >= t + R:
                t += R
                break
            fails += 1
            t = g
        steady = False


@pytest.mark.parametrize("starts,factors,T", [([0.0, 1500.0], [3.0, 1.0], [30.0, 50.0]),
                                              ([0.0, 2000.0], [1.0, 2.5], [60.0, 35.0])])
def test_async_expectation_agrees_with_an_event_by_event_simulation(starts, factors, T):
    from ckptplan.engine.schedule_async import async_schedule_expectation
    from ckptplan.engine.waste import expected_wall_time

    work, C, M, R, W, sd = 6_000.0, 1.0, 500.0, 8.0, 12.0, 0.25
    got = async_schedule_expectation(work, T, C, M, R, W, sd, starts, factors)
    rho = float(expected_wall_time(1.0, T[-1], C, M / factors[-1], R, W, sd))
    rng = np.random.default_rng(3)
    runs = np.array([_async_run(rng, work, starts, factors, M, T, C, R, W, sd, rho) for _ in range(3000)])
    for col, key in ((0, "total"), (1, "failures")):
        mean, se = runs[:, col].mean(), runs[:, col].std(ddof=1) / math.sqrt(len(runs))
        assert abs(got[key] - mean) < 3 * se, (key, got[key], mean, se)


def test_weibull_with_async_saves_agrees_with_an_event_by_event_simulation():
    from ckptplan.engine.waste import expected_wall_time
    from ckptplan.engine.weibull_schedule import weibull_expectation

    work, C, M, R, W, sd, k = 6_000.0, 1.0, 500.0, 8.0, 12.0, 0.25, 0.6
    starts, T = [0.0, 300.0, 2000.0], [25.0, 40.0, 60.0]
    got = weibull_expectation(work, starts, T, C, M, R, k, W=W, slowdown=sd)
    eta = M / math.gamma(1.0 + 1.0 / k)
    local = 1.0 / ((k / eta) * (got["total"] / eta) ** (k - 1))
    rho = float(expected_wall_time(1.0, T[-1], C, local, R, W, sd))
    rng = np.random.default_rng(9)

    def run():
        # the event loop of _async_run with this intensity (cumulative (t/eta)^k, never reset)
        def ph(t):
            return int(np.searchsorted(starts, t, side="right") - 1)

        def nf(t):
            return eta * ((t / eta) ** k + rng.exponential()) ** (1.0 / k)

        t, credit, steady, fails = 0.0, 0.0, True, 0
        while True:
            Tn = T[ph(t)]
            end = t + Tn + C + W * (sd if steady else 1.0)
            f = nf(t)
            if f >= end:
                t, credit, steady = end, credit + Tn, True
                if credit >= work:
                    return t - rho * (credit - work), fails
                continue
            fails, t = fails + 1, f
            while True:
                g = nf(t)
                if g >= t + R:
                    t += R
                    break
                fails, t = fails + 1, g
            steady = False

    runs = np.array([run() for _ in range(3000)])
    for col, key in ((0, "total"), (1, "failures")):
        mean, se = runs[:, col].mean(), runs[:, col].std(ddof=1) / math.sqrt(len(runs))
        assert abs(got[key] - mean) < 3 * se, (key, got[key], mean, se)


def test_async_schedules_through_the_table():
    asyn = dict(checkpoint_stall_min=1.0, async_write_min=8.0, async_slowdown_fraction=0.2)
    today = _row(**asyn)
    one = _row(**asyn, failure_phases=[{"start_h": 0, "rate_factor": 1}])
    for key in ("wall_h", "expected_failures", "save_h", "restart_h", "rework_h", "total_cost"):
        assert one[key] == pytest.approx(today[key], rel=1e-12), key
    phased = _row(**asyn, failure_phases=PHASES)
    assert phased["schedule1_interval_min"] < phased["schedule2_interval_min"]
    assert phased["wall_h"] <= phased["single_interval_wall_h"] * (1 + 1e-9)
    assert phased["wall_h_p50"] == pytest.approx(phased["wall_h"], rel=0.02)
    sync = _row(**{**asyn, "async_write_min": 0.0}, failure_phases=PHASES)      # no write: today's phase plan
    plain = _row(checkpoint_stall_min=1.0, failure_phases=PHASES)
    for key in FIGURES:
        assert sync[key] == plain[key], key
    weib = _row(**asyn, weibull_shape_from_start=0.7)
    assert weib["wall_h"] <= weib["single_interval_wall_h"] * (1 + 1e-9)
    assert weib["wall_h_p50"] == pytest.approx(weib["wall_h"], rel=0.02)
    for key in ("wall_h", "total_cost"):                                          # shape 1: today's async plan
        assert _row(**asyn, weibull_shape_from_start=1.0)[key] == today[key]
    with pytest.raises(engine.InputError, match="async_write_min"):              # not with a downtime as well
        _row(**asyn, failure_phases=PHASES, downtime_min=4.0)


@pytest.mark.parametrize("field,value", [("preemptions_per_h", 0.1), ("downtime_min", 4.0), ("async_write_min", 4.0)])
def test_an_edited_workbook_with_phases_refuses_the_combination_by_name(tmp_path, field, value):
    """A planner adds spot capacity, a downtime or a background write to a workbook with failure phases: `--from`
    refuses it by name (the sheets plan each apart), writing nothing."""
    from openpyxl import load_workbook
    from typer.testing import CliRunner

    from ckptplan import workbook
    from ckptplan.cli import app

    book = tmp_path / "phased.xlsx"
    workbook.write_workbook(book, engine.Scenario(**{**BASE, "deadline_h": None}, failure_phases=PHASES))
    wb = load_workbook(book)
    sheet, ref = next(iter(wb.defined_names[field].destinations))
    wb[sheet][ref.replace("$", "")].value = value
    wb.save(tmp_path / "edited.xlsx")
    res = CliRunner().invoke(app, ["workbook", "--from", str(tmp_path / "edited.xlsx"), "-o", str(tmp_path / "o.xlsx"),
                                   "--no-deadline"])
    assert res.exit_code == 2 and field in res.output, res.output
    assert not (tmp_path / "o.xlsx").exists()
