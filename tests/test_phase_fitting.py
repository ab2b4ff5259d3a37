"""Failure phases fitted from an interruption history: a generated burn-in is fitted back within its
intervals, a constant-rate history is split about as often as the test's level, and a real events table
goes through."""

import numpy as np
import pytest

from ckptplan import engine
from ckptplan.engine.phase_fitting import fit_phase_rates


def _history(rng, rates, starts, horizon_h, restart_h=0.2):
    """Failure times of a job running from 0 to horizon_h, down restart_h after each failure (the
    downtime does not fail), the rate piecewise constant in wall hours."""
    t, runs_a, runs_b, fails = 0.0, [], [], []
    edges = list(starts[1:]) + [np.inf]
    while t < horizon_h:
        j = int(np.searchsorted(starts, t, side="right") - 1)
        gap = rng.exponential(1.0 / rates[j])
        if t + gap >= edges[j]:          # no failure before the phase ends: memoryless, redraw there
            runs_a.append(t)
            runs_b.append(min(edges[j], horizon_h))
            t = edges[j]
            continue
        if t + gap >= horizon_h:
            runs_a.append(t)
            runs_b.append(horizon_h)
            break
        runs_a.append(t)
        runs_b.append(t + gap)
        fails.append(t + gap)
        t = t + gap + restart_h
    return np.array(runs_a), np.array(runs_b), np.array(fails)


def test_burn_in_is_fitted_back_within_its_intervals():
    rng = np.random.default_rng(3)
    starts, rates = [0.0, 72.0], [0.3, 0.1]
    covered, changed, trials = np.zeros(2), 0, 200
    for _ in range(trials):
        a, b, f = _history(rng, rates, starts, 720.0)
        fit = fit_phase_rates(a, b, f, starts, confidence=0.9)
        covered += [lo <= r <= hi for lo, r, hi in zip(fit.rate_low_per_h, rates, fit.rate_high_per_h)]
        changed += fit.changed
    assert np.all(covered / trials >= 0.85)       # 90 % intervals (conservative) cover the truth
    assert changed / trials > 0.9                 # a 3x burn-in over 3 days is seen
    phases = fit.scenario_phases()
    assert phases["failure_phases"][0]["rate_factor"] == pytest.approx(3.0, rel=0.6)
    sc = engine.Scenario(name="fitted", checkpoint_stall_min=2.0, nodes=128, useful_training_h=100.0,
                         price_per_gpu_hour=2.0, **phases)
    assert len(sc.failure_phases) == 2


def test_constant_rate_history_is_split_about_at_the_tests_level():
    rng = np.random.default_rng(11)
    trials, level = 400, 0.05
    splits = sum(fit_phase_rates(*_history(rng, [0.1, 0.1], [0.0, 72.0], 720.0), [0.0, 72.0],
                                 level=level).changed for _ in range(trials))
    # binomial(400, 0.05): mean 20, sd 4.4; the chi-square approximation may be a little off
    assert splits / trials < 2.5 * level
    assert splits > 0


def test_no_change_gives_no_phases_and_bad_input_is_named():
    fit = fit_phase_rates([0.0], [100.0], [10.0, 50.0, 90.0], [0.0, 50.0])
    assert not fit.changed and fit.scenario_phases() == {"job_mtbf_h": 100.0 / 3, "failure_phases": []}
    with pytest.raises(engine.InputError, match="phase_starts_h"):
        fit_phase_rates([0.0], [100.0], [10.0], [5.0, 50.0])
    with pytest.raises(engine.InputError, match="never ran"):
        fit_phase_rates([0.0], [40.0], [10.0], [0.0, 50.0])


def test_a_phase_too_short_for_a_finite_rate_is_named_without_a_warning():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(engine.InputError, match="too short to fit a rate"):
            fit_phase_rates([0.0], [100.0], [50.0], [0.0, 1e-320])


def test_fit_command_reports_phases():
    import json

    from typer.testing import CliRunner

    from ckptplan import files
    from ckptplan.cli import app

    log = str(files.template_path("example-interruption-log.csv"))
    res = CliRunner().invoke(app, ["fit", log, "--phase-starts-h", "24", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)["failure_phases"]
    assert out["starts_h"] == [0.0, 24.0] and sum(out["failures"]) == 7
    assert out["changed"] is False and out["scenario"]["failure_phases"] == []
    bad = CliRunner().invoke(app, ["fit", log, "--phase-starts-h", "x"])
    assert bad.exit_code == 2 and "--phase-starts-h" in bad.output
