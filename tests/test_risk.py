"""Risk, sensitivity and targets: input ranges, tornado, break-even and targets (engine and CLI), checked
against independent plans (``ckptplan plan --json`` with the input changed, :func:`engine.setup.plan_setup`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ckptplan import engine
from ckptplan.cli import app
from ckptplan.engine.designs import compare_designs
from ckptplan.engine.errors import InputError
from ckptplan.engine.sensitivity import break_even, tornado
from ckptplan.engine.setup import plan_setup
from ckptplan.engine.targets import target
from ckptplan.engine.uncertainty import uncertainty_from_dict
from ckptplan.files import load_plan
from ckptplan.files.scenario_toml import plan_toml
from ckptplan.files.scenarios import template_path

runner = CliRunner()
STORAGE = template_path("llama3-405b-storage.toml")

SEED_RANGES = """
[uncertainty]
node_mtbf_h = [1500, 4000]
restart_min = {dist = "pert", low = 5, high = 30}
checkpoint_stall_min = {dist = "triangular", low = 1, mode = 2, high = 4}
price_per_gpu_hour = {dist = "uniform", low = 2.0, high = 3.0}
"""
STORAGE_RANGES = """
[uncertainty]
node_mtbf_h = [3000, 12000]
aggregate_write_gb_s = {dist = "lognormal", low = 1000, high = 3000}
restart_min = {dist = "pert", low = 20, high = 80}
spares = [0, 32]
"""


def _with_ranges(tmp_path: Path, source: Path, ranges: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(source.read_text(encoding="utf-8") + ranges, encoding="utf-8")
    return path


@pytest.fixture
def seed_file(tmp_path: Path) -> Path:
    return _with_ranges(tmp_path, template_path("seed.toml"), SEED_RANGES, "seed-ranges.toml")


@pytest.fixture
def storage_file(tmp_path: Path) -> Path:
    return _with_ranges(tmp_path, STORAGE, STORAGE_RANGES, "storage-ranges.toml")


# ------------------------------------------------------------------------------------------ input ranges

def test_ranges_are_read_with_their_base_and_written_back(seed_file, tmp_path):
    plan = load_plan(seed_file)
    got = {u.field: u for u in plan.uncertainty}
    assert list(got) == ["node_mtbf_h", "restart_min", "checkpoint_stall_min", "price_per_gpu_hour"]
    assert (got["node_mtbf_h"].dist, got["node_mtbf_h"].low, got["node_mtbf_h"].base) == ("range", 1500, 2560)
    assert got["restart_min"].base == 10 and got["checkpoint_stall_min"].mode == 2
    back = tmp_path / "back.toml"
    back.write_text(plan_toml(plan), encoding="utf-8")
    assert load_plan(back).uncertainty == plan.uncertainty


def test_a_derived_input_ranges_around_the_value_its_setup_derives(storage_file):
    plan = load_plan(storage_file)
    restart = next(u for u in plan.uncertainty if u.field == "restart_min")
    single = plan_setup(plan.scenario, plan.setup.replace(tiers=(), failure_classes={}))
    assert restart.base == pytest.approx(single.scenario.restart_min, rel=1e-12)


@pytest.mark.parametrize("entry, field, rule", [
    ("nodes_typo = [1, 2]", "nodes_typo", "is not a numeric scenario or setup field"),
    ("node_mtbf_h = [3000, 4000]", "uncertainty.node_mtbf_h", "must hold the scenario's value node_mtbf_h = 2560"),
    ("node_mtbf_h = [4000, 1000]", "uncertainty.node_mtbf_h", "must have low < high"),
    ("node_mtbf_h = [1000]", "uncertainty.node_mtbf_h", "must be [low, high]"),
    ("node_mtbf_h = [-5, 3000]", "uncertainty.node_mtbf_h.low", "must be > 0"),
    ("node_mtbf_h = [1000, \"x\"]", "uncertainty.node_mtbf_h.high", "must be a finite number"),
    ("node_mtbf_h = {dist = \"gamma\", low = 1, high = 5000}", "uncertainty.node_mtbf_h.dist", "must be one of"),
    ("node_mtbf_h = {dist = \"pert\", low = 1000, mode = 9000, high = 5000}", "uncertainty.node_mtbf_h.mode",
     "must lie in [low, high]"),
    ("node_mtbf_h = {dist = \"uniform\", low = 1000}", "uncertainty.node_mtbf_h.high", "is required"),
    ("node_mtbf_h = {dist = \"uniform\", low = 1000, high = 5000, mode = 2000}", "uncertainty.node_mtbf_h.mode",
     "unknown key"),
    ("nodes = [100.5, 200]", "uncertainty.nodes.low", "must be a whole number"),
    ("nonfatal_share = {dist = \"lognormal\", low = 0.0, high = 0.5}", "uncertainty.nonfatal_share",
     "a lognormal needs"),
    ("spares = [0, 16]", "uncertainty.spares", "has no value in the scenario"),
])
def test_bad_ranges_name_the_field_the_value_and_the_rule(tmp_path, entry, field, rule):
    path = _with_ranges(tmp_path, template_path("seed.toml"), f"\n[uncertainty]\n{entry}\n", "bad.toml")
    with pytest.raises(InputError) as err:
        load_plan(path)
    assert field in err.value.field and rule in err.value.rule and str(path) in err.value.field


def test_draws_follow_their_distribution(seed_file):
    u = {x.field: x for x in load_plan(seed_file).uncertainty}
    rng = np.random.default_rng(1)
    tri = u["checkpoint_stall_min"].sample(200_000, rng)   # triangular(1, 2, 4): mean 7/3
    assert tri.min() >= 1 and tri.max() <= 4 and tri.mean() == pytest.approx(7 / 3, abs=0.01)
    pert = u["restart_min"].sample(200_000, rng)            # PERT(5, 10, 30): mean (5 + 40 + 30)/6
    assert pert.mean() == pytest.approx(75 / 6, abs=0.05)
    spec = load_plan(_with_ranges(Path(seed_file).parent, template_path("seed.toml"),
                                  "\n[uncertainty]\nnode_mtbf_h = {dist = \"lognormal\", low = 1000, high = 4000}\n",
                                  "logn.toml")).uncertainty[0]
    q = np.quantile(spec.sample(200_000, rng), [0.05, 0.95])
    assert q == pytest.approx([1000, 4000], rel=0.01)


# ------------------------------------------------------------------------------------------ tornado

def _plan_json(*args: str) -> dict:
    res = runner.invoke(app, ["plan", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_seed_tornado_checked_by_hand_against_ckptplan_plan(seed_file):
    plan = load_plan(seed_file)
    t = tornado(plan.scenario, plan.setup, (), plan.uncertainty)
    for field, option in (("node_mtbf_h", "--node-mtbf-h"), ("restart_min", "--restart-min")):
        u = next(x for x in plan.uncertainty if x.field == field)
        for output in ("total_cost", "wall_h", "goodput", "p_finish_by_deadline"):
            low = _plan_json("--scenario", str(seed_file), option, str(u.low))[output]
            high = _plan_json("--scenario", str(seed_file), option, str(u.high))[output]
            row = t[(t.input == field) & (t.output == output)].iloc[0]
            assert row.swing == pytest.approx(low - high, rel=1e-9, abs=1e-12)
    cost = t[t.output == "total_cost"]
    assert list(cost["rank"]) == [1, 2, 3, 4]
    assert (np.diff(cost["swing"].abs().to_numpy()) <= 0).all()        # ranked by the size of the swing
    assert cost["at_base"].iloc[0] == pytest.approx(_plan_json("--scenario", str(seed_file))["total_cost"], rel=1e-12)


def test_storage_tornado_follows_the_setup_and_each_design(storage_file):
    plan = load_plan(storage_file)
    t = tornado(plan.scenario, plan.setup, plan.designs, plan.uncertainty)
    cost = t[t.output == "total_cost"]
    # at base every plan is compare's plan (the derived restart stays derived, the tiers are planned)
    compare = compare_designs(plan.scenario, plan.setup, plan.designs).set_index("name")["total_cost"]
    for name, at_base in cost.groupby("plan")["at_base"].first().items():
        assert at_base == pytest.approx(compare[name], rel=1e-12)
    # by hand, on the baseline: the write bandwidth re-derives the stall; spares re-derive the restart
    for field, option in (("aggregate_write_gb_s", "--aggregate-write-gb-s"), ("spares", "--spares")):
        u = next(x for x in plan.uncertainty if x.field == field)
        low = _plan_json("--scenario", str(storage_file), option, f"{u.low:g}")["total_cost"]
        high = _plan_json("--scenario", str(storage_file), option, f"{u.high:g}")["total_cost"]
        row = cost[(cost.plan == plan.scenario.name) & (cost.input == field)].iloc[0]
        assert row.swing == pytest.approx(low - high, rel=1e-9)
    # a design that sets an input does not swing with it
    assert cost[(cost.plan == "16 hot spares") & (cost.input == "spares")].swing.iloc[0] == 0


def test_sensitivity_cli_json_and_table(storage_file):
    res = runner.invoke(app, ["sensitivity", "--scenario", str(storage_file), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert {r["plan"] for r in data["tornado"]} == {"llama3-405b-storage", "storage 2x faster", "in-memory tier",
                                                   "16 hot spares", "2x nodes, same training"}
    res = runner.invoke(app, ["sensitivity", "-t", "seed", "--range", "node_mtbf_h=1500:4000"])
    assert res.exit_code == 0, res.output
    assert "node_mtbf_h" in res.output and "ranked by the total-cost swing" in res.output
    res = runner.invoke(app, ["sensitivity", "-t", "seed"])
    assert res.exit_code == 2 and "no input ranges" in res.output
    res = runner.invoke(app, ["sensitivity", "-t", "seed", "--range", "node_mtbf_h=1500"])
    assert res.exit_code == 2 and "FIELD=LOW:HIGH" in res.output


# ------------------------------------------------------------------------------------------ break-even

def _saving_by_plan_setup(plan, design, field: str, x: float) -> float:
    """Baseline minus design total cost with ``field`` = x, each planned by plan_setup (no batch path)."""
    sc = plan.scenario.replace(**{field: x}, failure_rate_source="") if field == "node_mtbf_h" else plan.scenario
    st = plan.setup.replace(**{field: int(x)}) if field in ("spares",) else plan.setup
    if field == "nodes":
        sc = plan.scenario.replace(nodes=int(x))
    base = plan_setup(sc, st).figures["total_cost"]
    return base - plan_setup(design.apply(sc), design.apply_setup(st)).figures["total_cost"]


def test_break_even_plugged_back_in_makes_the_saving_zero(storage_file):
    plan = load_plan(storage_file)
    b = break_even(plan.scenario, plan.setup, plan.designs, "node_mtbf_h", 1000, 1e6)
    found = b[b.break_even.notna()]
    assert set(found.design) == {"16 hot spares", "2x nodes, same training"}
    for r in found.itertuples():
        design = next(d for d in plan.designs if d.name == r.design)
        base = plan_setup(plan.scenario.replace(node_mtbf_h=r.break_even, failure_rate_source=""),
                          plan.setup).figures["total_cost"]
        assert abs(_saving_by_plan_setup(plan, design, "node_mtbf_h", r.break_even)) <= 1e-6 * base
        # spares pay off while failures are frequent; twice the nodes only when they are rare
        side, words = {"16 hot spares": ("below", "pays off while node_mtbf_h <"),
                       "2x nodes, same training": ("above", "pays off once node_mtbf_h >")}[r.design]
        assert r.pays_off == side and words in r.why
    always = b[b.design == "in-memory tier"].iloc[0]
    assert always.pays_off == "always" and "whole range" in always.why


def test_break_even_on_whole_numbers_is_the_edge_value(storage_file):
    plan = load_plan(storage_file)
    b = break_even(plan.scenario, plan.setup, plan.designs, "nodes", 64, 4096).set_index("design")
    faster = next(d for d in plan.designs if d.name == "storage 2x faster")
    n = b.loc["storage 2x faster", "break_even"]
    assert n == 2001   # the 2 TB/s store caps 1 GB/s writers only beyond 2,000 nodes
    assert _saving_by_plan_setup(plan, faster, "nodes", n) > 0 >= _saving_by_plan_setup(plan, faster, "nodes", n - 1)


def test_a_design_that_never_pays_off_says_why(storage_file):
    plan = load_plan(storage_file)
    b = break_even(plan.scenario, plan.setup, plan.designs, "price_per_gb_month", 0.0, 100.0)
    row = b[b.design == "2x nodes, same training"].iloc[0]
    assert row.pays_off == "never" and np.isnan(row.break_even)
    assert "never pays off" in row.why and "because" in row.why and "restart_cost +" in row.why


def test_compare_shows_break_even(storage_file):
    res = runner.invoke(app, ["compare", "--scenario", str(storage_file), "--break-even", "node_mtbf_h", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert len(data["designs"]) == 5 and len(data["break_even"]) == 4
    res = runner.invoke(app, ["compare", "--scenario", str(storage_file), "--break-even", "nodes",
                              "--break-even-range", "64:4096"])
    assert res.exit_code == 0, res.output
    assert "storage 2x faster pays off from nodes = 2,001" in res.output


# ------------------------------------------------------------------------------------------ targets

@pytest.mark.parametrize("source, field, goal, value", [
    ("seed", "checkpoint_stall_min", "goodput", 0.95),
    ("seed", "restart_min", "p_finish", 0.9),
    ("seed", "node_mtbf_h", "cost_per_useful_gpu_hour", 2.6),
    (STORAGE, "node_mtbf_h", "goodput", 0.95),
    (STORAGE, "repair_h", "goodput", 0.9),
])
def test_target_plugged_back_in_reaches_the_goal(source, field, goal, value):
    plan = load_plan(source)
    row = target(plan.scenario, plan.setup, field, goal, value)
    assert row["reachable"]
    x = row[field]
    sc, st = plan.scenario, plan.setup
    if field == "repair_h":
        st = st.replace(repair_h=x)
    elif field == "node_mtbf_h":
        sc = sc.replace(node_mtbf_h=x, failure_rate_source="")
    else:
        sc = sc.replace(**{field: x})
    figure = {"goodput": "goodput", "p_finish": "p_finish_by_deadline",
              "cost_per_useful_gpu_hour": "cost_per_useful_gpu_hour"}[goal]
    assert plan_setup(sc, st).figures[figure] == pytest.approx(value, rel=1e-6)


def test_whole_number_target_is_the_first_count_that_reaches_it():
    plan = load_plan(STORAGE)
    row = target(plan.scenario, plan.setup, "spares", "goodput", 0.9)
    n = int(row["spares"])
    assert plan_setup(plan.scenario, plan.setup.replace(spares=n)).figures["goodput"] >= 0.9
    assert plan_setup(plan.scenario, plan.setup.replace(spares=n - 1)).figures["goodput"] < 0.9


def test_unreachable_target_says_why():
    # 131,072 GPUs: the job MTBF is minutes; the restart, not the save, bounds goodput
    plan = load_plan("seed")
    big = plan.scenario.replace(nodes=16384)
    row = target(big, plan.setup, "checkpoint_stall_min", "goodput", 0.95)
    assert not row["reachable"] and np.isnan(row["checkpoint_stall_min"])
    assert row["why"].startswith("not reachable by checkpoint_stall_min alone")
    assert "restarts take" in row["why"] and row["achieved"] < 0.95


def test_target_cli_json_holds_the_answer_under_the_field_name():
    res = runner.invoke(app, ["target", "-t", "seed", "--goodput", "0.95", "--solve", "checkpoint_stall_min", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["checkpoint_stall_min"] == pytest.approx(1.0916, rel=1e-3) and data["reachable"]
    res = runner.invoke(app, ["target", "--scenario", str(STORAGE), "--goodput", "0.95", "--solve",
                              "aggregate_write_gb_s", "--json"])
    data = json.loads(res.output)
    assert data["aggregate_write_gb_s"] is None and not data["reachable"] and "because" in data["why"]
    res = runner.invoke(app, ["target", "-t", "seed", "--goodput", "1.5", "--solve", "restart_min"])
    assert res.exit_code == 2 and "goodput=1.5" in res.output
    res = runner.invoke(app, ["target", "-t", "seed", "--solve", "restart_min"])
    assert res.exit_code == 2 and "exactly one goal" in res.output


# ------------------------------------------------------------------------------------------ percentiles

ASYNC_RANGES = """
[uncertainty]
node_mtbf_h = {dist = "lognormal", low = 1200, high = 5000}
async_write_min = [2, 8]
restart_min = [5, 20]
"""


# The nested reference, written here independently of engine.risk / engine.montecarlo / engine.uncertainty:
# (1) each run draws its inputs with numpy's own samplers from the [uncertainty] table as the docs define it;
# (2) the plan of that draw (interval, stall, job MTBF, restart, write, cost per wall hour) is the engine's
#     deterministic planner's output for those inputs (engine.sensitivity.evaluate_variants), checked below
#     against the draw where the test can say it by hand (no setup: C, R, M = node MTBF / nodes, the GPU bill);
# (3) the run itself is simulated failure by failure in plain Python (_one_run).

def _own_draws(ranges_toml: str, base: dict, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n draws of each input from its distribution, by numpy's samplers (not inverse CDFs)."""
    import tomllib
    from statistics import NormalDist

    out = {}
    for field, spec in tomllib.loads(ranges_toml)["uncertainty"].items():
        if isinstance(spec, list):
            spec = {"dist": "triangular", "low": spec[0], "high": spec[1]}
        lo, hi, mode = float(spec["low"]), float(spec["high"]), float(spec.get("mode", base[field]))
        if spec["dist"] == "triangular":
            x = rng.triangular(lo, mode, hi, n)
        elif spec["dist"] == "pert":   # Beta-PERT, shape 4 (Malcolm et al. 1959; Vose 2008)
            x = lo + (hi - lo) * rng.beta(1 + 4 * (mode - lo) / (hi - lo), 1 + 4 * (hi - mode) / (hi - lo), n)
        elif spec["dist"] == "uniform":
            x = rng.uniform(lo, hi, n)
        else:   # lognormal with low, high its 5th and 95th percentiles
            z = NormalDist().inv_cdf(0.95)
            x = rng.lognormal((np.log(lo) + np.log(hi)) / 2, (np.log(hi) - np.log(lo)) / (2 * z), n)
        out[field] = np.rint(x) if field in ("spares", "nodes") else x
    return out


def _one_run(rng: np.random.Generator, work: float, T: float, C: float, M: float, R: float, W: float,
             s: float) -> float:
    """Wall minutes of one run: exponential failure gaps (mean M); segments of T minutes of work, each ended by
    a blocking save of C minutes and, with W > 0, a write of W minutes in the background during which compute
    runs at 1 - s of its speed (a save is restorable when its write ends; compute waits for the write before
    the next save); a failure loses the work since the last restorable save and costs a restart of R minutes
    (a failure during the restart starts it again); no save after the last segment. Without a background
    write the whole save cycles before the next failure are taken in one step (the same timeline)."""
    n = int(np.ceil(work / T - 1e-12))
    lengths = [T] * (n - 1) + [work - (n - 1) * T]
    t, fail, durable = 0.0, rng.exponential(M), 0
    while True:
        k, write_end = durable, None    # resume from the last restorable save
        while True:
            seg, last = lengths[k], k == n - 1
            if write_end is not None:   # the previous save's write still runs
                slow_end = t + seg / (1 - s)
                if slow_end < write_end and last:
                    if fail <= slow_end:
                        break
                    return slow_end
                if fail <= write_end:
                    break
                durable = k             # that save is restorable now
                end = write_end if slow_end < write_end else write_end + seg - (write_end - t) * (1 - s)
                write_end = None
            else:
                if W == 0 and not last:   # whole save cycles before the next failure, at once (same timeline)
                    m = min(int((fail - t) // (T + C)), n - 1 - k)
                    if m > 0:
                        t, k = t + m * (T + C), k + m
                        durable = k
                        continue
                end = t + seg
            if fail <= end:
                break
            t = end
            if last:
                return t
            if fail <= t + C:
                break
            t += C
            k += 1
            if W > 0:
                write_end = t + W
            else:
                durable = k
        t = fail                        # a failure: restart (again if a failure interrupts it)
        while True:
            gap = rng.exponential(M)
            if gap > R:
                fail, t = t + gap, t + R
                break
            t += gap


@pytest.mark.parametrize("source, ranges", [(template_path("seed.toml"), SEED_RANGES), (STORAGE, STORAGE_RANGES),
                                            (template_path("async-save.toml"), ASYNC_RANGES)])
def test_input_monte_carlo_matches_a_nested_simulation_within_sampling_error(tmp_path, source, ranges):
    import tomllib

    from ckptplan.engine.risk import risk_percentiles
    from ckptplan.engine.sensitivity import evaluate_variants, variants

    plan = load_plan(_with_ranges(tmp_path, source, ranges, "ranges.toml"))
    fast = risk_percentiles(plan.scenario, plan.setup, (), plan.uncertainty, draws=50_000, seed=1,
                            probabilities=(0.1, 0.5, 0.9)).iloc[0]
    n = 2500
    rng = np.random.default_rng(2026)
    baseline = variants(plan.scenario, plan.setup)[0]
    base = tomllib.loads(source.read_text(encoding="utf-8"))["scenario"]
    own = evaluate_variants([(baseline, {})])[0].iloc[0]
    for field in ("node_mtbf_h", "restart_min"):   # named by a failure-rate source / derived by the storage setup
        base.setdefault(field, float(own[field]))
    draws = _own_draws(ranges, base, n, rng)
    res = evaluate_variants([(baseline, draws)])[0]
    col = {c: res[c].to_numpy(dtype=float) for c in res.columns if c in (
        "chosen_interval_min", "checkpoint_stall_min", "job_mtbf_h", "restart_min", "total_cost", "wall_h")}
    if source != STORAGE:   # no storage setup: the plan takes the drawn inputs as they are
        for field in ("checkpoint_stall_min", "restart_min"):
            np.testing.assert_allclose(col[field], draws.get(field, base[field]), rtol=1e-12)
        np.testing.assert_allclose(col["job_mtbf_h"], draws["node_mtbf_h"] / base["nodes"], rtol=1e-12)
        gpu_bill = base["nodes"] * base["gpus_per_node"] * draws.get("price_per_gpu_hour", base["price_per_gpu_hour"])
        np.testing.assert_allclose(col["total_cost"] / col["wall_h"], gpu_bill, rtol=1e-9)
    W = draws.get("async_write_min", np.full(n, float(base.get("async_write_min", 0.0))))
    s = float(base.get("async_slowdown_fraction", 0.0))
    wall_h = np.array([_one_run(rng, base["useful_training_h"] * 60.0, col["chosen_interval_min"][i],
                                col["checkpoint_stall_min"][i], col["job_mtbf_h"][i] * 60.0, col["restart_min"][i],
                                W[i], s) for i in range(n)]) / 60.0
    slow = {"wall_h": wall_h, "total_cost": wall_h * col["total_cost"] / col["wall_h"]}
    for fig in ("wall_h", "total_cost"):
        for p in (0.1, 0.5, 0.9):
            # the share of simulated runs below the fast P-percentile is p, within its sampling error
            share = float(np.mean(slow[fig] <= fast[f"{fig}_p{p * 100:g}"]))
            se = np.sqrt(p * (1 - p) * (1 / n + 1 / 50_000))
            assert abs(share - p) <= 4 * se, (fig, p, share)
        assert fast[f"mean_{fig}"] == pytest.approx(np.mean(slow[fig]), rel=4 * np.std(slow[fig]) / np.sqrt(n)
                                                    / np.mean(slow[fig]))


def test_probability_a_design_beats_the_baseline(seed_file):
    from ckptplan.engine.designs import Design
    from ckptplan.engine.risk import risk_percentiles

    plan = load_plan(seed_file)
    same = Design("same job", set={"gpus_per_node": 8})
    cheaper = Design("half price", times={"price_per_gpu_hour": 0.5})
    r = risk_percentiles(plan.scenario, plan.setup, (same, cheaper), plan.uncertainty, draws=20_000, seed=3)
    r = r.set_index("plan")
    assert np.isnan(r.loc[plan.scenario.name, "p_beats_baseline"])
    assert abs(r.loc["same job", "p_beats_baseline"] - 0.5) < 4 * np.sqrt(0.25 / 20_000)   # only the failures differ
    assert r.loc["half price", "p_beats_baseline"] == 1.0
    base = r.loc[plan.scenario.name]
    assert base.total_cost_p10 < base.total_cost_p50 < base.total_cost_p90


def test_risk_cli(storage_file):
    res = runner.invoke(app, ["risk", "--scenario", str(storage_file), "--draws", "2000", "--start", "2026-01-05",
                              "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    plans = {p["plan"]: p for p in data["plans"]}
    assert plans["in-memory tier"]["failure_randomness"] is False
    assert plans["llama3-405b-storage"]["finish_p50"].startswith("2026-")
    res = runner.invoke(app, ["risk", "--scenario", str(storage_file), "--draws", "1"])
    assert res.exit_code == 2 and "draws=1" in res.output


# ------------------------------------------------------------------------------------------ Excel functions

def _excel_plan(path: Path) -> tuple[list, list]:
    """A plan file's scenario and setup as the two ranges an Excel function takes (names, values), as Excel
    sends them: lists of one-cell rows, a blank value as None."""
    from ckptplan.engine.scenario import scenario_to_dict

    plan = load_plan(path)
    fields = {k: v for k, v in scenario_to_dict(plan.scenario).items() if k not in ("domains", "description", "source")}
    fields.update(plan.setup.columns())
    for derived in plan.setup.derives():
        fields[derived] = None   # blank: derived from the setup, as the workbook's Inputs sheet leaves it
    names = [[k] for k in fields]
    return names, [[v] for v in fields.values()]


def test_excel_functions_equal_the_engine(storage_file):
    from ckptplan.workbook.udfs_risk import CKPT_BREAK_EVEN, CKPT_TARGET, CKPT_TORNADO

    plan = load_plan(storage_file)
    names, values = _excel_plan(storage_file)
    inputs = [u for u in plan.uncertainty if u.dist == "range"]
    got = CKPT_TORNADO(names, values, [[u.field] for u in inputs], [[u.low] for u in inputs],
                       [[u.high] for u in inputs])
    want = tornado(plan.scenario, plan.setup, (), inputs)
    want = want[want.output == "total_cost"]
    assert got[0] == ["input", "low", "high", "total_cost at low", "total_cost at high", "swing"]
    assert [r[0] for r in got[1:]] == list(want["input"])
    assert [r[5] for r in got[1:]] == pytest.approx(list(want["swing"]), rel=1e-12)
    # a design as a column beside the names: 16 spares, everything else the baseline's
    design = [[16] if n == ["spares"] else [None] for n in names]
    value = CKPT_BREAK_EVEN(names, values, design, "node_mtbf_h", 1000, 1e6)
    spares = next(d for d in plan.designs if d.name == "16 hot spares")
    assert value == pytest.approx(break_even(plan.scenario, plan.setup, (spares,), "node_mtbf_h", 1000, 1e6)
                                  .iloc[0]["break_even"], rel=1e-9)
    # the fewest spares whose plan (plan_setup, one count at a time) reaches goodput 0.9
    fewest = next(n for n in range(64) if plan_setup(plan.scenario, plan.setup.replace(spares=n))
                  .figures["goodput"] >= 0.9)
    assert CKPT_TARGET(names, values, "spares", "goodput", 0.9) == fewest == 11
    text = CKPT_TARGET(names, values, "aggregate_write_gb_s", "goodput", 0.95)
    assert text.startswith("not reachable by aggregate_write_gb_s alone")


@pytest.mark.parametrize("call, message", [
    (lambda f: f.CKPT_TORNADO([["nodes"]], [[128], [1]], [["nodes"]], [[64]], [[256]]), "as many cells as names"),
    (lambda f: f.CKPT_TORNADO([["bogus"]], [[1]], [["nodes"]], [[64]], [[256]]), "bogus=1.0: unknown field"),
    (lambda f: f.CKPT_TORNADO([["nodes"]], [["many"]], [["nodes"]], [[64]], [[256]]), "nodes: must be a number"),
    (lambda f: f.CKPT_TARGET(*_SEED_CELLS, "checkpoint_stall_min", "goodput", 1.5), "goodput=1.5: must be a fraction"),
    (lambda f: f.CKPT_TARGET(*_SEED_CELLS, "stall", "goodput", 0.9), "is not a numeric scenario or setup field"),
    (lambda f: f.CKPT_TORNADO(*_SEED_CELLS, [["node_mtbf_h"]], [[3000]], [[4000]]), "must hold the scenario's value"),
    (lambda f: f.CKPT_BREAK_EVEN(*_SEED_CELLS, [[None]] * 6, "node_mtbf_h", 5000, 100), "lo < hi"),
])
def test_excel_functions_answer_bad_input_in_the_cell(call, message):
    from ckptplan.workbook import udfs_risk

    got = call(udfs_risk)
    assert isinstance(got, str) and got.startswith("#CKPT!") and message in got


_SEED_CELLS = ([["checkpoint_stall_min"], ["restart_min"], ["node_mtbf_h"], ["nodes"], ["useful_training_h"],
                ["price_per_gpu_hour"]], [[2.0], [10.0], [2560.0], [128], [720.0], [2.5]])


# ------------------------------------------------------------------------------------------ the workbook

@pytest.mark.parametrize("fixture", ["seed_file", "storage_file"])
def test_workbook_sensitivity_sheet_is_live_and_equals_the_engine(fixture, request, tmp_path):
    from dataclasses import replace

    from openpyxl import load_workbook

    from ckptplan.workbook.recalc import error_cells, recalculate, soffice

    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    source = request.getfixturevalue(fixture)
    out = tmp_path / "plan.xlsx"
    res = runner.invoke(app, ["workbook", "--scenario", str(source), "-o", str(out), "--no-deadline"])
    assert res.exit_code == 0, res.output
    plan = load_plan(source)
    # a planner's edits: the GPU price and the node MTBF's low on the Inputs sheet (its Low column), a setup
    # input's high (spares) on the Sensitivity sheet
    wb = load_workbook(out)

    def put(name: str, value: float) -> None:
        sheet, cell = list(wb.defined_names[name].destinations)[0]
        assert (sheet == "Inputs") == (name != "spares_high"), name
        wb[sheet][cell.replace("$", "")] = value

    put("price_per_gpu_hour", 3.0)
    lows, highs = {"node_mtbf_h": 1200.0 if fixture == "seed_file" else 2500.0}, {}
    put("node_mtbf_h_low", lows["node_mtbf_h"])
    if fixture == "storage_file":
        highs["spares"] = 20.0
        put("spares_high", highs["spares"])
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    got_plain, got_edited = recalculate([out, edited], tmp_path / "recalc")
    edited_inputs = tuple(replace(u, low=lows.get(u.field, u.low), high=highs.get(u.field, u.high))
                          for u in plan.uncertainty)
    for path, scenario, inputs in ((got_plain, plan.scenario, plan.uncertainty),
                                   (got_edited, plan.scenario.replace(price_per_gpu_hour=3.0), edited_inputs)):
        assert error_cells(path) == []
        values = load_workbook(path, data_only=True)["Sensitivity"]
        want = tornado(scenario, plan.setup, (), inputs).set_index(["input", "output"])
        rows = {values.cell(row=r, column=1).value: r for r in range(5, 5 + len(inputs))}
        assert set(rows) == {u.field for u in inputs}
        for field, r in rows.items():
            for j, output in enumerate(("total_cost", "wall_h", "goodput", "p_finish_by_deadline")):
                w = want.loc[(field, output)]
                for d, key in enumerate(("at_low", "at_high", "swing")):
                    value = values.cell(row=r, column=4 + 3 * j + d).value
                    assert value == pytest.approx(w[key], rel=1e-9, abs=1e-9 if output != "total_cost" else 1e-3), \
                        (field, output, key)
        ranks = [values.cell(row=r, column=17).value for r in sorted(rows.values())]
        assert sorted(ranks) == list(range(1, len(rows) + 1))
        _check_spider(values, scenario, plan.setup, inputs)
        _check_design_swings(values, source, path is got_edited)
    charts = load_workbook(out)["Sensitivity"]._charts
    assert len(charts) == 2 and len(charts[1].series) == len(plan.uncertainty)   # the tornado and the spider


def _check_design_swings(values, source, edited: bool) -> None:
    """The designs' block: each design's swings equal ``ckptplan sensitivity --json`` of the file (1e-9), in its
    rank of the total-cost swing; the status up to date, or after the edits OUT OF DATE naming each edited cell."""
    res = runner.invoke(app, ["sensitivity", "--scenario", str(source), "--json"])
    assert res.exit_code == 0, res.output
    want = {(r["plan"], r["input"], r["output"]): r for r in json.loads(res.output)["tornado"]}
    if "sensitivity_designs_status" not in values.parent.defined_names:   # a file without designs: none to swing
        assert not any(p != json.loads(res.output)["baseline"] for p, _, _ in want)
        return
    status = values.parent.defined_names["sensitivity_designs_status"]
    sheet, ref = list(status.destinations)[0]
    end = values[ref.replace("$", "")].row
    head = next(r for r in range(1, end) if values.cell(row=r, column=1).value == "Design / input")
    seen, plan_name, position = set(), None, 0
    for r in range(head + 1, end):
        label = values.cell(row=r, column=1).value
        if values.cell(row=r, column=2).value is None:   # a design's label row
            plan_name, position = label.split(": ", 1)[1], 0
            seen.add(plan_name)
            continue
        position += 1
        assert want[(plan_name, label, "total_cost")]["rank"] == position, (plan_name, label)
        for j, output in enumerate(("total_cost", "wall_h", "goodput", "p_finish_by_deadline")):
            w = want[(plan_name, label, output)]["swing"]
            got = values.cell(row=r, column=4 + j).value
            assert (got is None) if w is None else got == pytest.approx(w, rel=1e-9, abs=1e-9), (plan_name, label, output)
    designs = {p for p, _, _ in want} - {json.loads(res.output)["baseline"]}
    assert seen == designs
    text = values[ref.replace("$", "")].value
    if not edited:
        assert text == "up to date"
    else:
        assert text.startswith("OUT OF DATE") and all(name in text for name in ("price_per_gpu_hour",
                                                                               "node_mtbf_h_low", "spares_high"))


def _check_spider(values, scenario, setup, inputs) -> None:
    """The spider's table: each input at low, halfway to the base, base, halfway to the high and high, and the
    total cost there equal to the engine's plan at those values (the halfway points planned as a tornado of
    the narrower range), the base at the Plan sheet's total cost."""
    from dataclasses import replace

    from ckptplan.engine.uncertainty import base_values

    now = base_values(scenario, setup, [u.field for u in inputs])   # the base as edited on the Inputs sheet
    inputs = tuple(replace(u, base=float(now[u.field])) for u in inputs)
    head = 5 + len(inputs) + 21
    assert values.cell(row=head, column=1).value == "Spider: input"
    spider = {values.cell(row=r, column=1).value: r for r in range(head + 1, head + 1 + len(inputs))}
    base_cost = float(tornado(scenario, setup, (), inputs, outputs=("total_cost",))["at_base"].iloc[0])
    for u in inputs:
        r = spider[u.field]
        got = [values.cell(row=r, column=c).value for c in range(2, 17)]
        mid_lo, mid_hi = (u.low + u.base) / 2, (u.base + u.high) / 2
        if u.integer:
            mid_lo, mid_hi = float(np.floor(mid_lo + 0.5)), float(np.floor(mid_hi + 0.5))   # half up
        assert got[:5] == pytest.approx([u.low, mid_lo, u.base, mid_hi, u.high], rel=1e-12)
        assert got[5:10] == pytest.approx([100 * x / u.base for x in got[:5]], rel=1e-12)
        narrow = tornado(scenario, setup, (), (replace(u, low=mid_lo, high=mid_hi),), outputs=("total_cost",)).iloc[0]
        wide = tornado(scenario, setup, (), (u,), outputs=("total_cost",)).iloc[0]
        want = [wide["at_low"], narrow["at_low"], base_cost, narrow["at_high"], wide["at_high"]]
        assert got[10:] == pytest.approx(want, rel=1e-9), u.field


def _ranges(plan) -> dict:
    return {u.field: (u.dist, u.low, u.high, u.mode) for u in plan.uncertainty}


def test_workbook_ranges_round_trip_through_the_inputs_sheet(storage_file, tmp_path):
    """The Inputs sheet's Low / High / Shape / Mode columns (a setup input's on the Sensitivity sheet) hold the
    [uncertainty] table: an unedited workbook reads back the same table, an edited one the edits, and
    `workbook --from` carries them into the next workbook and its scenario file."""
    from openpyxl import load_workbook

    from ckptplan.workbook.read import WorkbookInputError, read_plan

    out = tmp_path / "plan.xlsx"
    assert runner.invoke(app, ["workbook", "--scenario", str(storage_file), "-o", str(out), "--no-deadline"]
                         ).exit_code == 0
    plan = load_plan(storage_file)
    assert _ranges(read_plan(out)) == _ranges(plan)
    wb = load_workbook(out)

    def put(name: str, value, book=wb) -> None:
        sheet, cell = list(book.defined_names[name].destinations)[0]
        book[sheet][cell.replace("$", "")] = value

    put("node_mtbf_h_low", 2500.0)
    put("price_per_gpu_hour_low", 2.0)          # a new range, typed on the Inputs sheet with a shape and mode
    put("price_per_gpu_hour_high", 4.0)
    put("price_per_gpu_hour_dist", "pert")
    put("price_per_gpu_hour_mode", 2.2)
    put("spares_high", 20)
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    want = {**_ranges(plan), "node_mtbf_h": ("range", 2500.0, 12000.0, None),
            "price_per_gpu_hour": ("pert", 2.0, 4.0, 2.2), "spares": ("range", 0.0, 20.0, None)}
    assert _ranges(read_plan(edited)) == want
    again, toml = tmp_path / "again.xlsx", tmp_path / "again.toml"
    res = runner.invoke(app, ["workbook", "--from", str(edited), "-o", str(again), "--no-deadline",
                              "--emit-scenario", str(toml)])
    assert res.exit_code == 0, res.output
    assert _ranges(load_plan(toml)) == want == _ranges(read_plan(again))
    assert "price_per_gpu_hour" in [load_workbook(again)["Sensitivity"].cell(row=r, column=1).value
                                    for r in range(5, 10)]
    # bad cells: named by sheet, cell, name and rule
    put("node_mtbf_h_low", 9000.0)
    put("spares_high", "=1+1")
    wb.save(edited)
    with pytest.raises(WorkbookInputError) as info:
        read_plan(edited)
    problems = {p[2]: p for p in info.value.problems}
    assert problems["node_mtbf_h_low"][0] == "Inputs" and "low <= base <= high" in problems["node_mtbf_h_low"][4]
    assert problems["spares_high"][0] == "Sensitivity" and "formula" in problems["spares_high"][4]


def test_tiered_design_gets_a_p_finish_swing_from_its_simulation(storage_file):
    """A tiered design's P(finish) swing (NaN before): the tiered Monte Carlo of `ckptplan plan` at low and at
    high (plan_setup with the design applied, the input changed), paired with the cost swing of the same plans."""
    plan = load_plan(storage_file)
    tier = next(d for d in plan.designs if d.tiers)
    inputs = tuple(u for u in plan.uncertainty if u.field in ("node_mtbf_h", "spares"))
    t = tornado(plan.scenario, plan.setup, (tier,), inputs, outputs=("p_finish_by_deadline", "total_cost"))
    rows = t[(t.plan == tier.name) & (t.output == "p_finish_by_deadline")].set_index("input")
    sc, st = tier.apply(plan.scenario), tier.apply_setup(plan.setup)
    assert rows["at_base"].iloc[0] == pytest.approx(plan_setup(sc, st).figures["p_finish_by_deadline"])
    for u in inputs:
        ends = []
        for x in (u.low, u.high):
            if u.field == "spares":
                ends.append(plan_setup(sc, st.replace(spares=int(x))).figures["p_finish_by_deadline"])
            else:
                ends.append(plan_setup(sc.replace(node_mtbf_h=x, failure_rate_source=None, job_mtbf_h=None),
                                       st).figures["p_finish_by_deadline"])
        row = rows.loc[u.field]
        assert (row["at_low"], row["at_high"]) == (pytest.approx(ends[0]), pytest.approx(ends[1]))
        assert row["swing"] == pytest.approx(ends[0] - ends[1])
        assert not np.isnan(row["swing"])
    # more nodes' MTBF finishes more often: the low end cannot beat the high end
    assert rows.loc["node_mtbf_h", "swing"] < 0


# ------------------------------------------------------------------ failure domains' numbers as input ranges

DOMAIN_FILE = """
[scenario]
name = "power-domains"
checkpoint_stall_min = 2.0
restart_min = 15.0
node_mtbf_h = 2560.0
nodes = 256
gpus_per_node = 8
useful_training_h = 360.0
price_per_gpu_hour = 2.50
deadline_h = 420.0

[[scenario.domains]]
name = "power domain"
mtbf_h = 20000.0
nodes_per_domain = 16

[uncertainty]
domain1_mtbf_h = [5000, 80000]
domain1_nodes_per_domain = {dist = "pert", low = 8, high = 32}
node_mtbf_h = [1500, 4000]
"""


@pytest.fixture
def domain_file(tmp_path: Path) -> Path:
    path = tmp_path / "domains.toml"
    path.write_text(DOMAIN_FILE, encoding="utf-8")
    return path


def _with_domain(sc, **changes):
    """The scenario with its first failure domain's numbers changed (a new FailureDomain, not the engine's path)."""
    from dataclasses import replace

    return sc.replace(domains=(replace(sc.domains[0], **changes),) + tuple(sc.domains[1:]))


def test_domain_ranges_swing_the_plan_with_the_domain_changed(domain_file):
    """A failure domain's MTBF and size take ranges in a scenario file; their tornado swing is the plan with the
    domain itself changed (engine.evaluate of a scenario holding the new domain) at low minus at high."""
    plan = load_plan(domain_file)
    assert [u.field for u in plan.uncertainty] == ["domain1_mtbf_h", "domain1_nodes_per_domain", "node_mtbf_h"]
    t = tornado(plan.scenario, plan.setup, (), plan.uncertainty, outputs=("total_cost",)).set_index("input")
    for field, part, (lo, hi) in (("domain1_mtbf_h", "mtbf_h", (5000.0, 80000.0)),
                                  ("domain1_nodes_per_domain", "nodes_per_domain", (8, 32))):
        at = [engine.evaluate(_with_domain(plan.scenario, **{part: x})).iloc[0]["total_cost"] for x in (lo, hi)]
        assert t.loc[field, "at_low"] == pytest.approx(at[0], rel=1e-9)
        assert t.loc[field, "swing"] == pytest.approx(at[0] - at[1], rel=1e-9)
    assert t.loc["domain1_mtbf_h", "swing"] > 0   # more frequent domain outages cost more
    bad = domain_file.read_text(encoding="utf-8").replace("domain1_mtbf_h = [5000, 80000]", "domain2_mtbf_h = [1, 2]")
    domain_file.write_text(bad, encoding="utf-8")
    with pytest.raises(InputError, match="domain2_mtbf_h has no value in the scenario"):
        load_plan(domain_file)


def test_domain_ranges_in_batch_columns_equal_the_engine(domain_file, tmp_path):
    """domain1_mtbf_h_low / _high batch columns: the row's percentiles are engine.risk of its scenario with that
    range (1e-9)."""
    from ckptplan.engine.risk import risk_percentiles

    plan = load_plan(domain_file)
    rows = tmp_path / "rows.csv"
    rows.write_text("name,domain1_name,domain1_mtbf_h,domain1_nodes_per_domain,domain1_mtbf_h_low,domain1_mtbf_h_high\n"
                    "a,power domain,20000,16,5000,80000\nb,power domain,10000,16,4000,20000\n", encoding="utf-8")
    plain = tmp_path / "base.toml"
    plain.write_text(DOMAIN_FILE.split("[uncertainty]")[0], encoding="utf-8")
    res = runner.invoke(app, ["batch", str(rows), "-o", str(tmp_path / "out.csv"), "-t", str(plain),
                              "--risk-draws", "300"])
    assert res.exit_code == 0, res.output
    import pandas as pd

    out = pd.read_csv(tmp_path / "out.csv").set_index("name")
    for name, mtbf, lo, hi in (("a", 20000.0, 5000, 80000), ("b", 10000.0, 4000, 20000)):
        sc = _with_domain(plan.scenario, mtbf_h=mtbf).replace(name=name)
        inputs = uncertainty_from_dict({"domain1_mtbf_h": [lo, hi]}, sc, plan.setup)
        want = risk_percentiles(sc, plan.setup, (), inputs, draws=300).iloc[0]
        for q in (10, 50, 90):
            assert out.loc[name, f"risk_total_cost_p{q}"] == pytest.approx(want[f"total_cost_p{q}"], rel=1e-9)
        assert out.loc[name, "top_swing_input"] == "domain1_mtbf_h"


def test_domain_ranges_on_the_inputs_sheet_are_live_and_read_back(domain_file, tmp_path):
    """The Inputs sheet gives the domain's numbers Low / High / Shape / Mode cells; after an edit of the domain's
    MTBF and of its low, the Sensitivity sheet's swings equal the engine's tornado in LibreOffice (1e-9), and
    `workbook --from` reads the edited range back."""
    from dataclasses import replace

    from openpyxl import load_workbook

    from ckptplan.workbook.read import read_plan
    from ckptplan.workbook.recalc import error_cells, recalculate, soffice

    out = tmp_path / "plan.xlsx"
    res = runner.invoke(app, ["workbook", "--scenario", str(domain_file), "-o", str(out), "--no-deadline"])
    assert res.exit_code == 0, res.output
    plan = load_plan(domain_file)
    assert _ranges(read_plan(out)) == _ranges(plan)
    wb = load_workbook(out)

    def put(name: str, value) -> None:
        sheet, cell = list(wb.defined_names[name].destinations)[0]
        assert sheet == "Inputs", name
        wb[sheet][cell.replace("$", "")] = value

    put("domain1_mtbf_h", 30000.0)
    put("domain1_mtbf_h_low", 10000.0)
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    inputs = tuple(replace(u, low=10000.0, base=30000.0) if u.field == "domain1_mtbf_h" else u
                   for u in plan.uncertainty)
    assert _ranges(read_plan(edited)) == {**_ranges(plan), "domain1_mtbf_h": ("range", 10000.0, 80000.0, None)}
    if soffice() is None:
        pytest.skip("LibreOffice not installed (scripts/test.sh installs it)")
    (got,) = recalculate([edited], tmp_path / "recalc")
    assert error_cells(got) == []
    values = load_workbook(got, data_only=True)["Sensitivity"]
    want = tornado(_with_domain(plan.scenario, mtbf_h=30000.0), plan.setup, (), inputs).set_index(["input", "output"])
    rows = {values.cell(row=r, column=1).value: r for r in range(5, 5 + len(inputs))}
    assert set(rows) == {u.field for u in inputs}
    for field, r in rows.items():
        for j, output in enumerate(("total_cost", "wall_h", "goodput", "p_finish_by_deadline")):
            w = want.loc[(field, output)]
            for d, key in enumerate(("at_low", "at_high", "swing")):
                assert values.cell(row=r, column=4 + 3 * j + d).value == pytest.approx(
                    w[key], rel=1e-9, abs=1e-9 if output != "total_cost" else 1e-3), (field, output, key)


def test_risk_cli_gives_any_percentile(seed_file):
    """`ckptplan risk --percentile P` (repeatable): the engine's percentiles at those probabilities, in the JSON and
    as the table's columns; a percentile outside (0, 100) is refused by name."""
    from ckptplan.engine.risk import risk_percentiles

    res = runner.invoke(app, ["risk", "--scenario", str(seed_file), "--draws", "500", "--percentile", "5",
                              "--percentile", "97.5", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["plans"][0]
    plan = load_plan(seed_file)
    want = risk_percentiles(plan.scenario, plan.setup, plan.designs, plan.uncertainty, draws=500,
                            probabilities=(0.05, 0.975)).iloc[0]
    for key in ("total_cost_p5", "total_cost_p97.5", "wall_h_p5", "wall_h_p97.5"):
        assert got[key] == pytest.approx(want[key], rel=1e-12)
    assert "finish_p97.5" in got and "total_cost_p50" not in got
    table = runner.invoke(app, ["risk", "--scenario", str(seed_file), "--draws", "500", "--percentile", "97.5"])
    assert table.exit_code == 0 and "P97.5" in table.output
    bad = runner.invoke(app, ["risk", "--scenario", str(seed_file), "--percentile", "100"])
    assert bad.exit_code != 0 and "--percentile=100" in bad.output and "Traceback" not in bad.output
