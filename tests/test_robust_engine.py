"""The engine's boundaries (issue 25, "Robustness"): what is not a scenario, a table with a column twice, odd
types in designs, designs whose changes the plan cannot see, and work bounded by the input's meaning, not
its digits (a ten-digit domain index, 8,000 failure classes, 60 or 1,000 tiers)."""

from __future__ import annotations

import math
import time

import pandas as pd
import pytest

from ckptplan import engine, files
from ckptplan.engine import InputError
from ckptplan.engine.designs import Design, compare_designs, design_from_scenario, scenario_values
from ckptplan.engine.montecarlo_tiers import MAX_PERIOD_SAVES, simulate_tiers
from ckptplan.engine.setup import TIERED_PLAN_UNUSED, plan_setup, setup_from_dict, split_setup
from ckptplan.engine.tiers import check_design
from ckptplan.engine.tiers.model import MAX_TIERS, recovery_index

SEED = files.load_scenario("seed")
SEED_DICT = engine.scenario_to_dict(SEED)


@pytest.mark.parametrize("value", [None, 0, "seed", {"nodes": 128}, [SEED], 3.5])
def test_what_is_not_a_scenario_is_an_input_error_naming_the_argument(value):
    """Before: AttributeError / TypeError from deep inside (``'NoneType' object has no attribute 'name'``)."""
    calls = [lambda: compare_designs(value), lambda: plan_setup(value), lambda: scenario_values(value),
             lambda: design_from_scenario(value, SEED), lambda: design_from_scenario(SEED, value),
             lambda: engine.scenario_to_dict(value)]
    for call in calls:
        with pytest.raises(InputError) as err:
            call()
        assert err.value.field in ("scenario", "base", "other", "sc")


@pytest.mark.parametrize("value", [None, 0, "seed", SEED, [None], [SEED, "x"]])
def test_to_table_takes_a_list_of_scenarios_only(value):
    with pytest.raises(InputError):
        engine.to_table(value)


@pytest.mark.parametrize("value", [None, 3, "nodes = 1", [("nodes", 1)]])
def test_dict_readers_refuse_what_is_no_table(value):
    for call in (lambda: engine.scenario_from_dict(value), lambda: split_setup(value), lambda: setup_from_dict(value)):
        with pytest.raises(InputError, match="must be a table"):
            call()


def test_a_table_with_a_column_twice_is_refused_naming_it():
    """Before: ``'DataFrame' object has no attribute 'dtype'`` (a duplicated label selects a frame)."""
    table = engine.to_table([SEED])
    twice = pd.concat([table, table[["nodes"]]], axis=1)
    for call in (engine.evaluate, engine.validate_table):
        with pytest.raises(InputError, match="appears more than once") as err:
            call(twice)
        assert err.value.value == "nodes"
    from ckptplan.engine.batch import evaluate_rows

    with pytest.raises(InputError, match="appears more than once"):
        evaluate_rows(twice)


@pytest.mark.parametrize("value", [["meta-rsc1"], 5, {"a": 1}])
def test_a_text_field_holding_no_text_is_refused(value):
    """Before: ``failure_rate_source = ["..."]`` ended in ``TypeError: unhashable type: 'list'``."""
    with pytest.raises(InputError, match="must be text") as err:
        engine.scenario_from_dict({**SEED_DICT, "failure_rate_source": value})
    assert err.value.field == "failure_rate_source"


def test_a_design_number_beyond_float_range_is_refused_as_a_scenario_field_is():
    """Before: ``OverflowError: int too large to convert to float`` from ``math.isfinite``."""
    with pytest.raises(InputError) as as_field:
        engine.scenario_from_dict({**SEED_DICT, "nodes": 10**400})
    with pytest.raises(InputError) as in_design:
        Design("d", set={"nodes": 10**400})
    assert in_design.value.value == as_field.value.value == math.inf
    assert "must be a finite number" in str(in_design.value) and "must be a finite number" in str(as_field.value)


def test_a_ten_digit_domain_index_is_planned_in_no_time():
    """Before: the design's domains were rebuilt by counting from 1 to the largest index (10^10 steps)."""
    d = Design("far domain", set={"domain9999999999_mtbf_h": 5000.0, "domain9999999999_nodes_per_domain": 4})
    t0 = time.perf_counter()
    sc = d.apply(SEED)
    assert time.perf_counter() - t0 < 5  # a bound on the work, not a timing of it: 10^10 steps take hours
    assert len(sc.domains) == 1 and sc.domains[0].mtbf_h == 5000.0 and sc.domains[0].nodes_per_domain == 4
    with pytest.raises(InputError, match="numbered from 1"):
        Design("zero", set={"domain0_mtbf_h": 5.0, "domain0_nodes_per_domain": 2})


def test_scaling_a_value_the_baseline_does_not_give_is_refused_not_ignored():
    for key in ("job_mtbf_h", "domain3_mtbf_h"):
        with pytest.raises(InputError, match="scales a field the baseline does not give"):
            Design("x", times={key: 2.0}).apply(SEED)


def test_a_change_a_tiered_plan_cannot_see_carries_a_note():
    """Before: "checkpoint_stall_min x0.5" on a tiered plan ranked at +0 USD with no word."""
    pf = files.load_plan("llama3-405b-storage")
    tiered = next(d for d in pf.designs if d.tiers is not None)
    st, sc = tiered.apply_setup(pf.setup), tiered.apply(pf.scenario)
    designs = [Design("half stall", times={"checkpoint_stall_min": 0.5}), Design("no write", times={"async_write_min": 3.0}),
               Design("16 spares", set={"spares": 16})]
    table = compare_designs(sc, st, designs).set_index("name")
    assert table.loc["half stall", "total_cost_change"] == 0
    assert ("checkpoint_stall_min is not used by a tiered plan (each tier has its own stall)"
            in table.loc["half stall", "changes"] == f"checkpoint_stall_min x0.5 (note: checkpoint_stall_min is not used "
            f"by a tiered plan ({TIERED_PLAN_UNUSED['checkpoint_stall_min']}))")
    assert table.loc["no write", "total_cost_change"] == 0
    assert "async_write_min stays 0.0: no change" in table.loc["no write", "changes"]
    assert "note" not in table.loc["16 spares", "changes"] and table.loc["16 spares", "total_cost_change"] < 0
    # on a single-level plan the same stall change is seen: no note
    single = compare_designs(pf.scenario, pf.setup, [Design("half stall", times={"checkpoint_stall_min": 0.5})])
    assert "note" not in single.set_index("name").loc["half stall", "changes"]


def _tiers(n: int, every=lambda i: 2**i) -> list[dict]:
    return [dict(name=f"t{i}", checkpoint_stall_min=1.0, restore_min=1.0, every=every(i), survives=["a"])
            for i in range(n)]


@pytest.mark.parametrize("n", [MAX_TIERS + 1, 60, 1000])
def test_more_tiers_than_the_model_walks_are_refused_by_count(n):
    """Before: 60 nested tiers asked for a 4 EiB array, 1,000 ended in RecursionError."""
    with pytest.raises(InputError, match="MAX_TIERS"):
        check_design(_tiers(n, lambda i: 1), {"a": 1.0})
    pf_setup = files.load_plan("seed").setup.replace(tiers=tuple(_tiers(n, lambda i: 2**min(i, 59))),
                                                     failure_classes={"a": 1.0})
    with pytest.raises(InputError, match="MAX_TIERS"):
        plan_setup(SEED, pf_setup)


def test_a_tier_pattern_longer_than_the_simulator_tabulates_is_refused_before_allocating():
    tiers = _tiers(3, lambda i: [1, 1024, 1 << 21][i])
    with pytest.raises(InputError, match="MAX_PERIOD_SAVES") as err:
        simulate_tiers(10_000.0, 60.0, 1200.0, tiers=tiers, classes={"a": 1.0}, runs=10)
    assert err.value.field == "tiers[2] (t2).every" and (1 << 21) > MAX_PERIOD_SAVES
    ok = simulate_tiers(10_000.0, 60.0, 1200.0, tiers=_tiers(2, lambda i: [1, 4][i]), classes={"a": 1.0}, runs=50)
    assert ok.wall.shape == (50,) and (ok.wall >= 10_000.0).all()


def test_failure_classes_are_checked_in_linear_time():
    """8,000 classes took 25 s (a list scan per class and tier); twice the classes must cost about twice the
    work. Counted in comparisons, not timed: a set lookup is one probe per class."""
    def design(n: int):
        classes = {f"c{i}": 1.0 / n for i in range(n)}
        names = list(classes)
        return [dict(name="a", checkpoint_stall_min=1, restore_min=1, every=1, survives=names[: n // 2]),
                dict(name="b", checkpoint_stall_min=1, restore_min=1, every=4, survives=names)], classes

    class Counting(str):
        eq = 0

        def __eq__(self, other):
            Counting.eq += 1
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    counts = []
    for n in (1000, 2000):
        tiers, classes = design(n)
        classes = {Counting(c): v for c, v in classes.items()}
        Counting.eq = 0
        checked = check_design(tiers, classes)
        assert recovery_index(checked, classes)[: 2] == [0, 0] and recovery_index(checked, classes)[-1] == 1
        counts.append(Counting.eq)
    assert counts[1] <= 2.5 * max(counts[0], 1), counts  # quadratic would be 4x
