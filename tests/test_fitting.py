"""Statistics of interruption histories (ckptplan.engine.fitting): job MTBF bounds, the censored
Weibull shape, and fit_events on an events table. Reading logs and the CLI: test_logs.py."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from ckptplan import engine
from ckptplan.engine import fitting
from ckptplan.engine.fitting import fit_events, mtbf_estimate, weibull_fit
from ckptplan.files.logs import fit_log, read_log, synthetic_log

HEADER = "timestamp,event,cause,checkpoint_stall_s,step\n"


def write(tmp_path: Path, text: str, name: str = "log.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------- job MTBF

def test_synthetic_exponential_log_recovers_mtbf(tmp_path):
    df = synthetic_log(running_h=4000, mtbf_h=20, checkpoint_every_min=120, seed=1)
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    fit = fit_log(path, confidence=0.9)
    assert 150 <= fit.unplanned_failures <= 250
    assert fit.mtbf.lower_h <= 20 <= fit.mtbf.upper_h
    assert fit.mtbf.lower_h < fit.mtbf.mtbf_h < fit.mtbf.upper_h
    assert fit.mtbf.upper_h / fit.mtbf.lower_h < 1.5  # ~200 failures: a tight interval
    assert not fit.shape.clustered
    assert fit.shape.shape_lower <= 1 <= fit.shape.shape_upper


def _exposure_and_failures(rng, mtbf_h, running_h):
    gaps = rng.exponential(mtbf_h, size=int(3 * running_h / mtbf_h) + 50)
    return int(np.searchsorted(np.cumsum(gaps), running_h))


def test_mtbf_interval_coverage_is_about_nominal():
    hits = []
    for seed in range(200):
        n = _exposure_and_failures(np.random.default_rng(seed), 20.0, 4000.0)
        est = mtbf_estimate(4000.0, n, confidence=0.9)
        hits.append(est.lower_h <= 20.0 <= est.upper_h)
    assert 0.8 <= np.mean(hits) <= 0.97


def test_mtbf_with_no_failures_gives_only_a_lower_bound():
    est = mtbf_estimate(100.0, 0, confidence=0.9)
    assert est.mtbf_h is None and est.upper_h is None
    assert est.lower_h == pytest.approx(100.0 / math.log(10))  # 2T / chi2.ppf(0.9, 2) = T / ln(10)
    assert "lower bound" in est.note


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 1 - 1e-9, 1e-6])
def test_mtbf_bounds_are_scipy_stats_chi2_quantiles_to_the_last_bit(confidence):
    """The bounds use the chi-square quantile without importing scipy.stats: the very numbers chi2.ppf gives."""
    for n in (0, 1, 2, 7, 100, 10**4, 10**9):
        est = mtbf_estimate(4000.0, n, confidence=confidence)
        if n == 0:
            assert est.lower_h == 2 * np.float64(4000.0) / stats.chi2.ppf(confidence, 2)
            continue
        assert est.lower_h == 2 * np.float64(4000.0) / stats.chi2.ppf((1 + confidence) / 2, 2 * n + 2)
        assert est.upper_h == 2 * np.float64(4000.0) / stats.chi2.ppf((1 - confidence) / 2, 2 * n)


def test_the_mtbf_bounds_do_not_import_scipy_stats():
    """``ckptplan actual`` needs one chi-square quantile: importing all of scipy.stats for it took 0.3-0.6 s."""
    code = ("import sys; from ckptplan.engine.fitting import mtbf_estimate; e = mtbf_estimate(100.0, 3); "
            "print(e.lower_h, 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == "False" and float(out[0]) > 0


def test_fit_log_without_failures_says_lower_bound_only(tmp_path):
    text = HEADER + ("2024-01-01T00:00:00Z,start,,,\n2024-01-01T01:00:00Z,checkpoint_saved,,20,\n"
                     "2024-01-03T00:00:00Z,end,,,\n")
    fit = fit_log(write(tmp_path, text))
    assert fit.unplanned_failures == 0 and fit.mtbf.mtbf_h is None
    assert fit.mtbf.lower_h == pytest.approx(48.0 / math.log(10))
    assert "job_mtbf_h" not in fit.scenario_overrides() and fit.lost_per_failure_h is None
    assert any("lower bound" in n for n in fit.notes)
    json.dumps(fit.to_dict())  # JSON-ready without NaN


@pytest.mark.parametrize("kwargs, field", [
    (dict(running_h=0.0, failures=1), "running_h"),
    (dict(running_h=10.0, failures=-1), "failures"),
    (dict(running_h=10.0, failures=1.5), "failures"),
    (dict(running_h=10.0, failures=1, confidence=1.0), "confidence"),
])
def test_mtbf_estimate_rejects_bad_input(kwargs, field):
    with pytest.raises(engine.InputError) as err:
        mtbf_estimate(**kwargs)
    assert err.value.field == field


# ----------------------------------------------------------------------------------- Weibull

def _renewal_segments(rng, shape, mtbf_h, running_h):
    """Durations from each restart to failure (Weibull, renewed), the last one censored at running_h."""
    scale = mtbf_h / math.gamma(1 + 1 / shape)
    gaps = scale * rng.weibull(shape, size=int(5 * running_h / mtbf_h) + 50)
    ends = np.cumsum(gaps)
    n = int(np.searchsorted(ends, running_h))
    durations = np.append(gaps[:n], running_h - (ends[n - 1] if n else 0.0))
    return durations, np.append(np.ones(n, bool), False)


def test_weibull_mle_matches_scipy_censored_fit():
    t, failed = _renewal_segments(np.random.default_rng(5), 0.7, 20.0, 1500.0)
    t = np.append(t, [3.0, 40.0])  # two more censored segments (e.g. planned interruptions)
    failed = np.append(failed, [False, False])
    ours = weibull_fit(t, failed)
    data = stats.CensoredData(uncensored=t[failed], right=t[~failed])
    k, _, scale = stats.weibull_min.fit(data, floc=0)
    assert ours.shape == pytest.approx(k, rel=1e-3)
    assert ours.scale_h == pytest.approx(scale, rel=1e-3)
    assert ours.censored == (~failed).sum() and ours.failures == failed.sum()


def test_clustered_log_is_flagged():
    df = synthetic_log(running_h=4000, mtbf_h=20, shape=0.5, checkpoint_every_min=240, seed=3,
                       timespec="microseconds")
    fit = fit_log(df)
    w = fit.shape
    assert w.clustered and w.verdict.startswith("clustered")
    assert w.shape_lower <= 0.5 <= w.shape_upper < 1
    assert w.p_value_exponential < 0.1


def test_exponential_log_is_not_flagged():
    fit = fit_log(synthetic_log(running_h=4000, mtbf_h=20, shape=1.0, checkpoint_every_min=240, seed=4))
    assert not fit.shape.clustered
    assert fit.shape.verdict.startswith("consistent with exponential")
    assert fit.shape.shape_lower <= 1 <= fit.shape.shape_upper


def test_shape_interval_coverage_false_alarms_and_power():
    covered, false_alarm, detected = [], [], []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        w = weibull_fit(*_renewal_segments(rng, 1.0, 20.0, 1000.0), confidence=0.9)
        covered.append(w.shape_lower <= 1.0 <= w.shape_upper)
        false_alarm.append(w.clustered)
        if seed < 50:
            detected.append(weibull_fit(*_renewal_segments(rng, 0.5, 20.0, 1000.0), confidence=0.9).clustered)
    assert 0.8 <= np.mean(covered) <= 0.97
    assert np.mean(false_alarm) <= 0.1  # one-sided 5 % test
    assert np.mean(detected) >= 0.9


def test_weibull_needs_enough_failures():
    t = np.array([5.0, 9.0, 14.0, 2.0, 30.0, 11.0, 7.0, 3.0, 22.0, 50.0])
    failed = np.array([True] * 9 + [False])
    w = weibull_fit(t, failed, min_failures=10)
    assert w.verdict == "insufficient data" and w.shape is None and w.p_value_exponential is None
    assert "9 unplanned" in w.note
    assert weibull_fit(t, np.ones(10, bool), min_failures=10).shape is not None


def test_weibull_zero_length_failure_is_not_estimable():
    t = np.array([0.0] + [float(i) for i in range(1, 15)])
    w = weibull_fit(t, np.ones(15, bool))
    assert w.verdict == "insufficient data" and "running time 0" in w.note


def test_weibull_rejects_mismatched_input():
    with pytest.raises(engine.InputError):
        weibull_fit([1.0, 2.0], [True])
    with pytest.raises(engine.InputError):
        weibull_fit([1.0, -2.0], [True, True])



# ------------------------------------------------------------------------------- fit_events

def test_fit_events_fits_an_events_table_without_reading_anything():
    events = read_log(synthetic_log(running_h=500, mtbf_h=12, checkpoint_every_min=60, planned_every_h=100, seed=2))
    assert tuple(events.columns) == fitting.EVENTS_TABLE_COLUMNS
    fit = fit_events(events, "my job", confidence=0.9)
    assert fit.source == "my job" and fit.rows == len(events)
    expected = fit_log(synthetic_log(running_h=500, mtbf_h=12, checkpoint_every_min=60, planned_every_h=100, seed=2))
    assert fit.to_dict() | {"source": None} == expected.to_dict() | {"source": None}
    json.dumps(fit.to_dict())


@pytest.mark.parametrize("events, confidence, field", [
    ("log.csv", 0.9, "events"),
    (None, 0.9, "events"),
    ("drop", 0.9, "events"),
    ("ok", 1.5, "confidence"),
    ("zero", 0.9, "interruption log"),
])
def test_fit_events_rejects_bad_input(events, confidence, field):
    table = read_log(synthetic_log(running_h=50, mtbf_h=12, seed=1))
    if events == "drop":
        events = table.drop(columns=["checkpoint_stall_s"])
    elif events == "ok":
        events = table
    elif events == "zero":  # every row at one instant: no running time
        events = table.assign(timestamp=table["timestamp"].iloc[0])
    with pytest.raises(engine.InputError) as err:
        fit_events(events, "src", confidence)
    assert err.value.field == field


def test_importing_the_fitter_does_not_import_scipy():
    code = "import sys, ckptplan.engine.fitting; print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
