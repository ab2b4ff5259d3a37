"""Plan versus actual: the planned split, bucket differences, attribution that adds up, optimum savings."""

from __future__ import annotations

import json
import math

import pytest

from ckptplan import engine
from ckptplan.engine import InputError
from ckptplan.engine.ettr import ettr_exact
from ckptplan.engine.scenario import Scenario
from ckptplan.engine.variance import BUCKETS, MEASURED_KEYS, plan_vs_actual, planned_inputs, planned_split

WALL = 800.0


@pytest.fixture
def plan() -> Scenario:
    """The seed case: 2-minute stall, 10-minute restart, 128 nodes of 2,560 h (20 h job MTBF), 1,024 GPUs."""
    return Scenario(name="seed", checkpoint_stall_min=2.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=128,
                    gpus_per_node=8, useful_training_h=720.0, price_per_gpu_hour=2.5)


@pytest.fixture
def async_plan() -> Scenario:
    return Scenario(name="async", checkpoint_stall_min=0.5, async_write_min=6.0, async_slowdown_fraction=0.2,
                    restart_min=8.0, job_mtbf_h=12.0, nodes=64, useful_training_h=300.0, price_per_gpu_hour=3.0,
                    currency="EUR")


def _waste(inputs: dict) -> float:
    """1 - exact ETTR of a set of measured-style inputs (independent of the module's own code path)."""
    return 1.0 - ettr_exact(inputs["checkpoint_interval_min"], inputs["checkpoint_stall_min"], inputs["restart_min"],
                            inputs["job_mtbf_h"] * 60.0, inputs["async_write_min"], inputs["async_slowdown_fraction"])


# ------------------------------------------------------------------------------ the planned split


def test_planned_inputs_follow_evaluate(plan):
    row = engine.evaluate(plan).iloc[0]
    p = planned_inputs(plan)
    assert set(p) == set(MEASURED_KEYS)
    assert p["job_mtbf_h"] == 20.0
    assert p["checkpoint_interval_min"] == row["chosen_interval_min"]
    fixed = plan.replace(interval_min=45.0)
    assert planned_inputs(fixed)["checkpoint_interval_min"] == 45.0


def test_planned_split_scales_the_exact_breakdown(plan, async_plan):
    for sc in (plan, async_plan):
        row = engine.evaluate(sc).iloc[0]
        split = planned_split(sc, WALL)
        assert list(split) == list(BUCKETS)
        assert sum(split.values()) == pytest.approx(WALL, rel=1e-13)
        assert split["startup"] == 0.0 and split["idle"] == 0.0
        for bucket, col in (("productive", "useful_h"), ("rework", "rework_h"), ("restart", "restart_h")):
            assert split[bucket] / WALL == pytest.approx(row[col] / row["wall_h"], rel=1e-10)
        assert (split["save_blocking"] + split["async_slowdown"]) / WALL == pytest.approx(
            row["save_h"] / row["wall_h"], rel=1e-10)
    a = planned_split(async_plan, WALL)
    assert a["async_slowdown"] / a["save_blocking"] == pytest.approx(6.0 * 0.2 / 0.5, rel=1e-12)
    assert planned_split(plan, WALL)["async_slowdown"] == 0.0


# ------------------------------------------------------------------------------ plan against actual


@pytest.mark.parametrize("use_none", [False, True])
def test_actual_equal_to_the_plan_gives_no_difference(plan, async_plan, use_none):
    for sc in (plan, async_plan):
        measured = {k: None for k in MEASURED_KEYS} if use_none else planned_inputs(sc)
        res = plan_vs_actual(sc, WALL, measured, planned_split(sc, WALL))
        for row in res.buckets:
            assert abs(row["difference_h"]) < 1e-9 and abs(row["difference_money"]) < 1e-9
        assert abs(res.totals["difference_h"]) < 1e-9
        assert res.explanations == ()
        assert all(abs(v) < 1e-9 for v in res.attribution.values())
        assert (len(res.notes) == len(MEASURED_KEYS)) == use_none  # a note for every fallback


def test_restarts_twice_as_long(plan):
    R2 = 2 * plan.restart_min
    actual = planned_split(plan.replace(restart_min=R2), WALL)
    res = plan_vs_actual(plan, WALL, {**planned_inputs(plan), "restart_min": R2}, actual)
    restart = next(r for r in res.buckets if r["bucket"] == "restart")
    assert restart["difference_h"] > 0
    assert restart["difference_gpu_hours"] == pytest.approx(restart["difference_h"] * 1024, rel=1e-12)
    assert restart["difference_money"] == pytest.approx(restart["difference_h"] * 1024 * 2.5, rel=1e-12)
    (exp,) = res.explanations
    assert exp["input"] == "restart_min" and exp["ratio"] == 2.0
    assert exp["text"].startswith("restarts took 2x the planned 10 min: +") and exp["text"].endswith(" USD")
    assert exp["effect_h"] > 0
    assert exp["effect_money"] == pytest.approx(exp["effect_h"] * 1024 * 2.5, rel=1e-12)
    # the only change is the restart: it explains the whole difference, nothing is left over
    assert exp["effect_h"] == pytest.approx(res.totals["difference_h"], rel=1e-9)
    assert abs(res.attribution["unexplained"]) < 1e-9 and abs(res.attribution["interaction"]) < 1e-12


def test_attribution_adds_up_to_the_total(plan, async_plan):
    for sc in (plan, async_plan):
        p = planned_inputs(sc)
        measured = {"checkpoint_stall_min": p["checkpoint_stall_min"] * 1.7, "async_write_min": 9.0,
                    "async_slowdown_fraction": 0.3, "restart_min": p["restart_min"] * 2.3,
                    "job_mtbf_h": p["job_mtbf_h"] * 0.6, "checkpoint_interval_min": p["checkpoint_interval_min"] * 1.4}
        actual = {"productive": 610.0, "save_blocking": 40.0, "async_slowdown": 12.0, "rework": 70.0,
                  "restart": 35.0, "startup": 0.75, "idle": 2.5}
        res = plan_vs_actual(sc, WALL, measured, actual)
        assert sum(res.attribution.values()) == pytest.approx(res.totals["difference_h"], abs=1e-9)
        assert res.attribution["startup"] == 0.75 and res.attribution["idle"] == 2.5
        assert {e["input"] for e in res.explanations} == set(MEASURED_KEYS)
        # each part is the one-at-a-time substitution against the plan, checked through the ETTR function
        for e in res.explanations:
            alone = _waste({**p, e["input"]: e["measured"]}) - _waste(p)
            assert e["effect_h"] == pytest.approx(alone * WALL, rel=1e-9, abs=1e-9)
            assert res.attribution[e["input"]] == e["effect_h"]
        model = (_waste(measured) - _waste(p)) * WALL
        assert res.totals["model_difference_h"] == pytest.approx(model, rel=1e-9)
        effects = sum(e["effect_h"] for e in res.explanations)
        assert res.attribution["interaction"] == pytest.approx(model - effects, abs=1e-9)
        planned_waste = sum(v for k, v in planned_split(sc, WALL).items() if k != "productive")
        assert res.totals["difference_h"] == pytest.approx(sum(actual.values()) - 610.0 - planned_waste, rel=1e-12)
        # the bucket table adds up too
        assert sum(r["difference_h"] for r in res.buckets) == pytest.approx(sum(actual.values()) - WALL, abs=1e-9)


def test_explanation_sentences(plan):
    p = planned_inputs(plan)
    res = plan_vs_actual(plan, WALL, {"job_mtbf_h": 10.0, "async_write_min": 5.0, "async_slowdown_fraction": 0.1},
                         planned_split(plan, WALL))
    by = {e["input"]: e for e in res.explanations}
    assert by["job_mtbf_h"]["text"].startswith("the job MTBF was 0.5x the planned 20 h: +")
    assert by["async_write_min"]["ratio"] is None  # the plan had no background write
    assert by["async_write_min"]["text"].startswith("background writes took 5 min where the plan had none: +")
    assert by["async_slowdown_fraction"]["ratio"] is None
    assert "10%" in by["async_slowdown_fraction"]["text"]
    assert by["job_mtbf_h"]["effect_h"] > 0
    # unmeasured inputs fall back to the plan, with a note each
    assert res.measured_inputs["restart_min"] == p["restart_min"]
    assert any(n.startswith("restart_min not measured") for n in res.notes)


def test_result_is_json_safe_and_finite(async_plan):
    res = plan_vs_actual(async_plan, 500.0, {"restart_min": 30.0, "async_write_min": 0.0},
                         {"productive": 420.0, "save_blocking": 5.0, "async_slowdown": 9.0, "rework": 40.0,
                          "restart": 20.0, "startup": 1.0, "idle": 5.0})
    data = res.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text)["currency"] == "EUR"

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, float):
            assert math.isfinite(v)

    walk(data)
    frame = res.to_frame()
    assert list(frame.index) == list(BUCKETS)
    assert frame.loc["idle", "difference_money"] == pytest.approx(5.0 * 64 * 8 * 3.0)


def test_interval_below_the_durability_floor_is_noted(async_plan):
    res = plan_vs_actual(async_plan, WALL, {"checkpoint_interval_min": 2.0}, planned_split(async_plan, WALL))
    assert any("durability floor" in n for n in res.notes)
    assert res.optimum_savings["interval_used_min"] == pytest.approx(6.0 * 0.8)


# ------------------------------------------------------------------------------ what the optimum would have saved


def test_optimum_savings(plan, async_plan):
    for sc in (plan, async_plan):
        p = planned_inputs(sc)
        actual = planned_split(sc, WALL)
        measured = {**p, "checkpoint_stall_min": p["checkpoint_stall_min"] * 3, "job_mtbf_h": p["job_mtbf_h"] / 2}
        C, W, s = measured["checkpoint_stall_min"], measured["async_write_min"], measured["async_slowdown_fraction"]
        M = measured["job_mtbf_h"] * 60
        best = engine.exact_optimal_interval(C, M, W, s)
        # the interval the plan chose is now off the optimum: something to save
        res = plan_vs_actual(sc, WALL, measured, actual)
        o = res.optimum_savings
        assert o["wall_h_saved"] > 0 and o["optimal_interval_min"] == best
        work = actual["productive"] * 60
        used = engine.expected_wall_time(work, p["checkpoint_interval_min"], C, M, measured["restart_min"], W, s)
        at_best = engine.expected_wall_time(work, best, C, M, measured["restart_min"], W, s)
        assert o["wall_h_saved"] == pytest.approx((used - at_best) / 60, rel=1e-9)
        assert o["gpu_hours_saved"] == pytest.approx(o["wall_h_saved"] * res.gpus, rel=1e-12)
        assert o["money_saved"] == pytest.approx(o["gpu_hours_saved"] * res.price_per_gpu_hour, rel=1e-12)
        # used the optimum: nothing to save
        res0 = plan_vs_actual(sc, WALL, {**measured, "checkpoint_interval_min": best}, actual)
        assert res0.optimum_savings["wall_h_saved"] == 0.0 and res0.optimum_savings["money_saved"] == 0.0
        # any other interval saves >= 0
        for factor in (0.3, 0.9, 1.1, 4.0):
            r = plan_vs_actual(sc, WALL, {**measured, "checkpoint_interval_min": best * factor}, actual)
            assert r.optimum_savings["wall_h_saved"] >= 0


def test_no_productive_hours_saves_nothing(plan):
    actual = dict.fromkeys(BUCKETS, 0.0)
    actual["restart"] = 10.0
    res = plan_vs_actual(plan, 10.0, {}, actual)
    assert res.optimum_savings["wall_h_saved"] == 0.0
    assert any("no productive hours" in n for n in res.notes)


# ------------------------------------------------------------------------------ bad input names the key


def _good_actual():
    return dict.fromkeys(BUCKETS, 1.0)


@pytest.mark.parametrize("actual, field", [
    ({**dict.fromkeys(BUCKETS, 1.0), "rework": -0.5}, "actual_h.rework"),
    ({**dict.fromkeys(BUCKETS, 1.0), "coffee": 1.0}, "actual_h.coffee"),
    ({k: 1.0 for k in BUCKETS if k != "idle"}, "actual_h.idle"),
    ({**dict.fromkeys(BUCKETS, 1.0), "restart": "2h"}, "actual_h.restart"),
    ({**dict.fromkeys(BUCKETS, 1.0), "restart": None}, "actual_h.restart"),
    ({**dict.fromkeys(BUCKETS, 1.0), "startup": True}, "actual_h.startup"),
    ({**dict.fromkeys(BUCKETS, 1.0), "productive": float("nan")}, "actual_h.productive"),
    ({**dict.fromkeys(BUCKETS, 1.0), "productive": float("inf")}, "actual_h.productive"),
    ([1.0] * 7, "actual_h"),
])
def test_bad_actual_hours(plan, actual, field):
    with pytest.raises(InputError) as err:
        plan_vs_actual(plan, 10.0, {}, actual)
    assert err.value.field == field


@pytest.mark.parametrize("measured, field", [
    ({"restart_min": -1.0}, "measured.restart_min"),
    ({"restart": 5.0}, "measured.restart"),
    ({"job_mtbf_h": 0.0}, "measured.job_mtbf_h"),
    ({"async_slowdown_fraction": 1.0}, "measured.async_slowdown_fraction"),
    ({"checkpoint_stall_min": "2"}, "measured.checkpoint_stall_min"),
    ({"checkpoint_interval_min": float("nan")}, "measured.checkpoint_interval_min"),
    ("restart_min=5", "measured"),
])
def test_bad_measured_inputs(plan, measured, field):
    with pytest.raises(InputError) as err:
        plan_vs_actual(plan, 10.0, measured, _good_actual())
    assert err.value.field == field


@pytest.mark.parametrize("wall", [0.0, -5.0, "10", None, float("nan")])
def test_bad_wall_hours(plan, wall):
    with pytest.raises(InputError) as err:
        plan_vs_actual(plan, wall, {}, _good_actual())
    assert err.value.field == "wall_h"
    with pytest.raises(InputError):
        planned_split(plan, wall)


def test_a_plan_must_be_a_scenario():
    with pytest.raises(InputError) as err:
        plan_vs_actual({"checkpoint_stall_min": 2.0}, 10.0, {}, _good_actual())
    assert err.value.field == "scenario"
