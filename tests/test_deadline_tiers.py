"""The tiered plan's deadline answer (engine.deadline_tiers) is the plan's own tiered Monte Carlo, summarised.

With the plan's runs and seed, its P(finish by the deadline) is ``plan_setup``'s ``p_finish_by_deadline`` (one
simulation, two surfaces); the simulated mean wall time lies within 4 standard errors of the tiered model's exact
expectation; a plan without tiers or without a deadline is refused by name.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ckptplan import files
from ckptplan.engine.deadline_tiers import tiered_deadline_report
from ckptplan.engine.errors import InputError
from ckptplan.engine.setup import DEADLINE_RUNS, plan_setup


def _tiered():
    plan = files.load_plan("llama3-405b-storage")
    memory = next(d for d in plan.designs if d.tiers)
    setup = plan.setup.replace(tiers=memory.tiers, failure_classes=memory.failure_classes)
    return replace(plan, setup=setup)


def test_the_report_is_the_plans_own_simulation_and_agrees_with_the_exact_expectation():
    plan = _tiered()
    sc = plan.scenario.replace(deadline_h=1357.0)   # near the expected wall time: P(finish) strictly inside (0, 1)
    report = tiered_deadline_report(sc, plan.setup, runs=DEADLINE_RUNS, seed=0)
    assert 0.05 < report["p_finish"] < 0.95
    assert report["p_finish"] == plan_setup(sc, plan.setup).figures["p_finish_by_deadline"]
    assert abs(report["wall_h_mean"] - report["expected_wall_h"]) <= 4 * report["wall_h_mean_se"]
    assert report["p_finish_low"] <= report["p_finish"] <= report["p_finish_high"]
    assert report["wall_h_p50"] <= report["wall_h_p90"] <= report["wall_h_p99"]


def test_refused_by_name_without_tiers_or_a_deadline():
    plan = _tiered()
    with pytest.raises(InputError, match="deadline_h"):
        tiered_deadline_report(plan.scenario.replace(deadline_h=None), plan.setup)
    with pytest.raises(InputError, match="tiers"):
        tiered_deadline_report(plan.scenario, plan.setup.replace(tiers=(), failure_classes={}))
