"""CKPT_SCHEDULE and CKPT_SPOT_PLAN as each host calls them: the desktop module (xlwings: ranges as lists of
lists, scalars, None for blanks) and xlwings Lite's main.py (the same wrappers the add-in loads), equal to the
engine's plan (`plan --json`'s schedule, engine.evaluate); bad arguments answer with one readable message."""

from __future__ import annotations

import pytest

from ckptplan import engine
from ckptplan.engine.phases import FailurePhase
from ckptplan.workbook import lite as L
from ckptplan.workbook import udfs_risk as R

NAMES = [["checkpoint_stall_min"], ["restart_min"], ["node_mtbf_h"], ["nodes"], ["useful_training_h"],
         ["price_per_gpu_hour"], ["deadline_h"]]
VALUES = [[2.0], [10.0], [2560.0], [128], [200.0], [2.5], [None]]
BASE = engine.Scenario(name="plan", checkpoint_stall_min=2.0, restart_min=10.0, node_mtbf_h=2560.0, nodes=128,
                       useful_training_h=200.0, price_per_gpu_hour=2.5)


def _main_module():
    """main.py as xlwings Lite runs it (its functions wrap this checkout's)."""
    namespace: dict = {"__name__": "main"}
    exec(compile(L.main_py("0"), "main.py", "exec"), namespace)
    return namespace


HOSTS = {"desktop": lambda: vars(R), "lite": _main_module}


@pytest.mark.parametrize("host", HOSTS)
def test_schedule_spills_the_engines_schedule(host):
    f = HOSTS[host]()["CKPT_SCHEDULE"]
    row = engine.evaluate(BASE.replace(failure_phases=(FailurePhase(0.0, 3.0), FailurePhase(72.0, 1.0)))).iloc[0]
    want = [["start_h", "rate_factor", "interval_min"], [0.0, 3.0, row["schedule1_interval_min"]],
            [72.0, 1.0, row["schedule2_interval_min"]], ["wall_h", None, row["wall_h"]],
            ["single_interval_min", None, row["single_interval_min"]],
            ["single_interval_wall_h", None, row["single_interval_wall_h"]]]
    assert f(NAMES, VALUES, [[0], [72]], [[3], [1]]) == want          # columns
    assert f(NAMES, VALUES, [0, 72], [3, 1]) == want                  # 1-D lists
    assert f(NAMES, VALUES, [[0, 72]], [[3, 1]]) == want              # rows
    assert f(NAMES, VALUES, [[0], [72], [None]], [[3], [1], [None]]) == want   # a blank pair below: skipped
    # one phase starting later: a phase at 0 with the constant rate ahead of it (as plan --json)
    late = f(NAMES, VALUES, 48, 2)
    one = engine.evaluate(BASE.replace(failure_phases=(FailurePhase(48.0, 2.0),))).iloc[0]
    assert late[1][:2] == [0.0, 1.0] and late[2] == [48.0, 2.0, one["schedule2_interval_min"]]


@pytest.mark.parametrize("host", HOSTS)
def test_spot_plan_spills_the_engines_plan(host):
    f = HOSTS[host]()["CKPT_SPOT_PLAN"]
    names = NAMES + [["preemptions_per_h"], ["preemption_notice_min"], ["capacity_wait_min"],
                     ["spot_price_per_gpu_hour"]]
    values = VALUES[:-1] + [[240.0], [0.1], [2.5], [20.0], [0.9]]
    got = f(names, values)
    row = engine.evaluate(BASE.replace(deadline_h=240.0, preemptions_per_h=0.1, preemption_notice_min=2.5,
                                       capacity_wait_min=20.0, spot_price_per_gpu_hour=0.9)).iloc[0]
    assert got[0] == ["figure", "value"]
    assert [r[0] for r in got[1:]] == list(R.SPOT_FIGURES)
    for key, value in got[1:]:
        assert value == pytest.approx(row[key], rel=1e-12), key   # plan_setup's one total, as `plan`
    assert 0 < got[-1][1] <= 1                                        # P(finish), simulated
    no_deadline = f(names, VALUES + [[0.1], [2.5], [20.0], [0.9]])
    assert no_deadline[-1] == ["p_finish_by_deadline", None]          # blank: no deadline given


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("call, message", [
    (lambda f: f["CKPT_SCHEDULE"](NAMES, VALUES, [[0], [72]], [[3]]), "rate_factors: must have one cell per start"),
    (lambda f: f["CKPT_SCHEDULE"](NAMES, VALUES, [[0], [None]], [[3], [1]]), "give both cells of a phase"),
    (lambda f: f["CKPT_SCHEDULE"](NAMES, VALUES, [[0], [-5]], [[3], [1]]), "start_h=-5.0: must be a finite number"),
    (lambda f: f["CKPT_SCHEDULE"](NAMES, VALUES, [[10], [5]], [[3], [1]]), "must be greater than the previous"),
    (lambda f: f["CKPT_SCHEDULE"](NAMES, VALUES, [["day 3"]], [[3]]), "starts_h: must be a number"),
    (lambda f: f["CKPT_SCHEDULE"](NAMES, VALUES, None, None), "give at least one phase"),
    (lambda f: f["CKPT_SCHEDULE"](NAMES, VALUES, 0, 0), "rate_factor=0.0: must be a finite number > 0"),
    (lambda f: f["CKPT_SPOT_PLAN"](NAMES, VALUES), "preemptions_per_h: must be given and > 0"),
    (lambda f: f["CKPT_SPOT_PLAN"](NAMES + [["preemptions_per_h"]], VALUES + [[-1]]), "preemptions_per_h=-1.0"),
    (lambda f: f["CKPT_SPOT_PLAN"](NAMES + [["preemptions_per_h"], ["async_write_min"]], VALUES + [[0.1], [3]]),
     "async_write_min"),
    (lambda f: f["CKPT_SPOT_PLAN"](NAMES + [["preemptions_per_h"]], VALUES), "as many cells as names"),
])
def test_bad_arguments_answer_in_the_cell(host, call, message):
    got = call(HOSTS[host]())
    assert isinstance(got, str) and got.startswith("#CKPT! ") and message in got, got
    assert len(got) <= 255
