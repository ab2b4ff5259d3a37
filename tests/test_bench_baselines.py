"""The benchmarks' own baselines compute what the engine computes: ``benchmarks/schedule_reference.py`` (the expected
wall time of a failure-phase schedule, written from the model's equations with no engine import, the quantity the
per-row scipy loop of ``benchmarks/bench_schedules.py`` minimises) against ``engine.phases.schedule_expectation``.

A drift of either side fails here: the rows where the engine's fixed quadrature rule is exact must agree to 1e-9; on a
row where its rule is stated to be within about 1e-6 (a failure-free chain's make-up changes inside a piece), the
difference must be within that and shrink as the engine's rule gets more nodes (it is the rule's, not the model's).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from ckptplan.engine import phases

_path = Path(__file__).resolve().parents[1] / "benchmarks" / "schedule_reference.py"
_spec = importlib.util.spec_from_file_location("schedule_reference", _path)
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)

# (work, intervals, save, job MTBF, restart, phase starts, rate factors), minutes
ENDS_IN_BURN_IN = (2400.0, [40.0, 90.0, 70.0], 3.0, 1500.0, 12.0, [0.0, 2880.0, 12000.0], [4.0, 1.0, 2.0])
SHARED_LATER = (9000.0, [35.0, 80.0, 80.0], 6.0, 2400.0, 20.0, [0.0, 2000.0, 7000.0], [5.0, 1.0, 0.6])
THREE_PHASES = (12000.0, [60.0, 150.0, 45.0], 8.0, 4000.0, 5.0, [0.0, 4000.0, 9000.0], [2.5, 1.0, 3.0])
CHAIN_JUMPS = (9000.0, [35.0, 80.0, 120.0], 6.0, 2400.0, 20.0, [0.0, 2000.0, 7000.0], [5.0, 1.0, 0.6])


@pytest.mark.parametrize("row, end_phase", [(ENDS_IN_BURN_IN, 0), (SHARED_LATER, 2), (THREE_PHASES, 2)])
def test_reference_agrees_with_the_engine(row, end_phase):
    engine = phases.schedule_expectation(*row)
    assert engine["end_phase"] == end_phase   # the rows reach the phases they are meant to
    assert reference.expected_wall_time(*row) == pytest.approx(engine["total"], rel=1e-9)


def test_where_the_engine_rule_is_approximate_it_converges_to_the_reference():
    exact = reference.expected_wall_time(*CHAIN_JUMPS)
    gaps = [abs(phases.schedule_expectation(*CHAIN_JUMPS, nodes=n)["total"] / exact - 1) for n in (24, 384, 1536)]
    assert gaps[0] < 1e-6   # the rule's stated precision (engine/phases.py, module notes)
    assert gaps[2] < 1e-8 and gaps[2] < gaps[0] / 20


@pytest.mark.parametrize("row", [ENDS_IN_BURN_IN, SHARED_LATER, THREE_PHASES, CHAIN_JUMPS])
def test_the_reference_state_at_each_boundary_is_a_whole_distribution(row):
    _, T, C, M, R, starts, factors = row
    for b in starts[1:]:
        assert reference.state_mass(T, C, M, R, starts, factors, b) == pytest.approx(1.0, abs=1e-12)


def test_one_phase_is_dalys_model():
    work, T, C, M, R = 6000.0, 55.0, 4.0, 900.0, 15.0
    daly = M * math.exp(R / M) * math.expm1((T + C) / M) * work / T   # Daly, FGCS 22(3), 2006: the share convention
    assert reference.expected_wall_time(work, [T], C, M, R, [0.0], [1.0]) == pytest.approx(daly, rel=1e-13)
    assert reference.expected_wall_time(work, [T, T], C, M, R, [0.0, 3000.0], [1.0, 1.0]) == pytest.approx(daly,
                                                                                                             rel=1e-12)
