"""Restores that fail (issue 22, point 4): a tier's copy may be corrupt or incomplete.

Checked against an event-by-event simulation written here from the physical description, not from the
engine's Monte Carlo: a job of whole saves on nested tiers; a failure (exponential, mean ``M``, during
compute, a save or a restart) of a class drawn with its share; the job tries the tiers whose copies survive
that class in order, each replica of a tier's checkpoint corrupt on its own with the tier's
``restore_failure_probability`` (an attempt fails when every replica is corrupt), each attempt costing
its restore time; it rolls back to the first good copy, or to the job's start when none is; a failure
during the restart starts the same restart again. Every failure is counted.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ckptplan.engine.errors import InputError
from ckptplan.engine.montecarlo_tiers import simulate_tiers as simulate_tiers_engine
from ckptplan.engine.tiers import model as tm
from ckptplan.engine.tiers import optimum as opt
from restart_loop import recover

# ------------------------------------------------------------------ p = 0 is today's model, bit for bit

#: figures of the grid below computed by the code at b2ee1b0 (before restores could fail), as float.hex
BEFORE = ['0x1.86f1c436826efp+0', '0x1.41aad0ac7e9a6p+0', '0x1.3918a81a9053dp+0', '0x1.921584d79e407p+4', '0x1.921584d79e407p+4', '0x1.7e79645773cf9p+4', '0x1.6faf61631bc73p+8', '0x1.0f641967bb740p+8', '0x1.7e79645773cf9p+4', '0x1.c200000000000p+9', '0x1.c200000000000p+9', '0x1.7700000000000p+12', '0x1.d73137acad738p+12', '0x1.439a78033d51ep+5', '0x1.13145e832a20ap+20', '0x1.c7e0000000000p+11', '0x1.a176aa6e66f50p+15', '0x1.1acb0c922d8c1p+1', '0x1.d6c9d0ee997e8p+0', '0x1.f271037018421p+0', '0x1.263e22951fee6p+6', '0x1.263e22951fee6p+6', '0x1.0a3de7d45400ap+6', '0x1.7cdb1cbecaabdp+11', '0x1.e3a09570ec098p+9', '0x1.0a3de7d45400ap+6', '0x1.fe00000000000p+9', '0x1.c200000000000p+9', '0x1.7700000000000p+12', '0x1.58d0d086c16bbp+13', '0x1.a586ff13c0ffdp+4', '0x1.91bfbe06bd341p+20', '0x1.53f8000000000p+13', '0x1.b7dc0e2acb1bep+18', '0x1.2e82ab59df7c8p+0', '0x1.312faeebd7075p+0', '0x1.6d33a2c2870cep+0', '0x1.7d7b9aa6ccc87p+4', '0x1.c9c78661c28a2p+2', '0x1.0b09b90e5c25ep+4', '0x1.02d99eadf28b7p+4', '0x1.bbbe3497e8ef1p+2', '0x1.b6a33be3d02b5p+7', '0x1.69bdfae2cbcc0p+9', '0x1.71c92bd3ecc74p+4', '0x1.a400000000000p+7', '0x1.e000000000000p+5', '0x1.2c00000000000p+7', '0x1.7700000000000p+12', '0x1.bf0cd93b77faep+12', '0x1.63dd8aabae371p+3', '0x1.059672986003ap+20', '0x1.b000000000000p+11', '0x1.fb754dc3af258p+14', '0x1.c13c300c552c9p+0', '0x1.ee8862033b48ep+0', '0x1.b57aeeaaa8cc8p+1', '0x1.35153d42050d0p+6', '0x1.72e649826c760p+4', '0x1.b0b755c2d3df0p+5', '0x1.9a37d80d31a4dp+5', '0x1.5f9d949d98442p+4', '0x1.5e071eb8fbd8ep+11', '0x1.338c706c7bd50p+11', '0x1.2503512dfee37p+6', '0x1.4a00000000000p+8', '0x1.e000000000000p+5', '0x1.2c00000000000p+7', '0x1.7700000000000p+12', '0x1.6a34e3c95debap+13', '0x1.0b26597d15693p+3', '0x1.a89c81b428098p+20', '0x1.6830000000000p+13', '0x1.98df744b3716cp+18', '0x1.2f393e5187106p+0', '0x1.49d175c0d3756p+0', '0x1.e57a3a681bdd6p+0', '0x1.9c45d3310852dp+4', '0x1.20974708b906cp+3', '0x1.9c45d3310852dp+3', '0x1.eeba30a13d302p+1', '0x1.90a24a8a7aa88p+3', '0x1.18719a9422a92p+3', '0x1.e0c2bfd95ffd6p+1', '0x1.b4748465c076cp+7', '0x1.53d8bd691ef5cp+10', '0x1.90a24a8a7aa88p+4', '0x1.3100000000000p+7', '0x1.e000000000000p+4', '0x1.e000000000000p+5', '0x1.f400000000000p+5', '0x1.7700000000000p+12', '0x1.e321d37d75c11p+12', '0x1.c3234c9321d52p+2', '0x1.1ab516b33f70bp+20', '0x1.d620000000000p+11', '0x1.f6f56cee1dc98p+14', '0x1.db26031d68457p+0', '0x1.405e477d0e41dp+1', '0x1.5ee1947e55545p+3', '0x1.9075d95c51d20p+6', '0x1.18527e8d6c796p+5', '0x1.9075d95c51d20p+5', '0x1.e08d6b3b95626p+3', '0x1.7e0765b212473p+5', '0x1.0b6b93fca6650p+5', '0x1.ca6f46d5af88ap+3', '0x1.bc8cad84fafdfp+11', '0x1.4445deade2458p+12', '0x1.7e0765b212473p+6', '0x1.1080000000000p+8', '0x1.e000000000000p+4', '0x1.e000000000000p+5', '0x1.f400000000000p+5', '0x1.7700000000000p+12', '0x1.d54a1ab82fe28p+13', '0x1.61c0135c0a46ap+2', '0x1.1297568ec4feap+21', '0x1.d708000000000p+13', '0x1.05ac40c4befbap+19']


def _grid():
    Tier = tm.Tier
    yield [Tier("pfs", 3.0, 10.0, 1, ("any",))], {"any": 1.0}
    yield ([Tier("mem", 0.2, 1.0, 1, ("process",)), Tier("pfs", 4.0, 12.0, 8, ("process", "node"))],
           {"process": 0.7, "node": 0.3})
    yield ([Tier("mem", 0.1, 0.5, 1, ("process",)), Tier("peer", 0.8, 3.0, 4, ("process", "node")),
            Tier("pfs", 5.0, 15.0, 24, ("process", "node", "rack"))], {"process": 0.5, "node": 0.35, "rack": 0.15})


def _figures(with_zero: bool) -> list[float]:
    out: list[float] = []
    for tiers, cls in _grid():
        if with_zero:   # the new fields stated at their neutral values: no restore fails, whatever the copies
            tiers = [tm.Tier(**{**t.__dict__, "restore_failure_probability": 0.0, "copies": 2}) for t in tiers]
        for (M, R, W, s, D) in [(300.0, 5.0, 0.0, 0.0, 0.0), (120.0, 2.0, 4.0, 0.1, 30.0)]:
            T = np.array([7.0, 20.0, 55.0])
            out += list(np.atleast_1d(tm.tiered_wall_per_work(T, M, R, W, s, tiers=tiers, classes=cls, D=D)))
            b = tm.tiered_breakdown(6000.0, 20.0, M, R, W, s, tiers=tiers, classes=cls, D=D)
            out += [float(b[k]) for k in sorted(b) if k not in ("failed_restores", "rollbacks_to_start")]
            assert b["failed_restores"] == 0.0 and b["rollbacks_to_start"] == 0.0
            out.append(float(opt.best_first_interval(M, R, W, s, tiers=tiers, classes=cls)))
            sim = simulate_tiers_engine(3000.0, 20.0, M, R, W, s, tiers=tiers, classes=cls, runs=300, seed=7, D=D)
            out += [float(sim.wall.sum()), float(sim.failures.sum()), float(sim.restart_time.sum())]
    return out


@pytest.mark.parametrize("with_zero", [False, True])
def test_no_failing_restore_is_the_model_before_them_to_the_bit(with_zero):
    """Expectation, breakdown, optimum and the engine's Monte Carlo (same seed, same draws) equal, bit for bit,
    what the code computed before restores could fail, with the new fields absent or at p = 0 (2 copies)."""
    assert [v.hex() for v in _figures(with_zero)] == BEFORE


# ------------------------------------------------------------------ an independent event-by-event simulation


def simulate(saves: int, T: float, M: float, R: float, D: float, tiers: list, classes: dict, runs: int, seed: int):
    """Per run (wall, failures, rollbacks to the start, failed attempts) of the physical description (module notes).
    tiers: (stall, restore, every, survives, p, copies) tuples."""
    rng = random.Random(seed)
    names, shares = list(classes), list(classes.values())
    walls, fails, starts, bad = [], [], [], []
    for _ in range(runs):
        t, n, durable, s0, b0 = 0.0, 0, 0, 0, 0
        while durable < saves:
            k = durable + 1
            seg = T + sum(st for st, _, e, _, _, _ in tiers if k % e == 0)
            gap = rng.expovariate(1.0 / M)
            if gap >= seg:
                t, durable = t + seg, k
                continue
            t, n = t + gap, n + 1
            cls = rng.choices(names, shares)[0]
            restart, back = R, 0
            for _, restore, every, survives, p, copies in tiers:
                if cls not in survives:
                    continue
                restart += restore                          # the attempt reads this tier's copy
                if any(rng.random() >= p for _ in range(copies)):   # some replica is intact
                    back = durable // every * every
                    break
                b0 += 1
            else:
                s0 += 1                                     # no intact copy: back to the start
            durable = back
            dt, dn = recover(rng, D, restart, M)
            t, n = t + dt, n + dn
        walls.append(t)
        fails.append(n)
        starts.append(s0)
        bad.append(b0)
    return [np.asarray(v, dtype=float) for v in (walls, fails, starts, bad)]


def _se(a: np.ndarray, want: float, count: bool) -> float:
    """Standard error of ``a``'s mean; for a count of rare events at least the Poisson one of the expected mean (a
    sample of 3,000 runs with a handful of events underestimates its own spread)."""
    var = float(a.var(ddof=1))
    return math.sqrt(max(var, want if count else 0.0, 1e-24) / a.size)


_DESIGNS = {
    "one tier": ([(2.0, 6.0, 1, ("any",))], {"any": 1.0}, 8),
    "two tiers": ([(0.3, 1.0, 1, ("process",)), (4.0, 9.0, 4, ("process", "node"))], {"process": 0.7, "node": 0.3}, 8),
    "three tiers": ([(0.2, 0.5, 1, ("process",)), (1.0, 3.0, 2, ("process", "node")),
                     (5.0, 12.0, 6, ("process", "node", "rack"))], {"process": 0.5, "node": 0.35, "rack": 0.15}, 4),
}
_CASES = [(d, p, c) for d in _DESIGNS for p in (0.0, 0.05, 0.3) for c in (1, 2) if p or c == 1]


@pytest.mark.parametrize("design, p, copies", _CASES)
def test_expectation_agrees_with_an_event_simulation(design, p, copies):
    """Expectation (wall, every failure, rollbacks to the start, failed attempts) within 3 standard errors of the
    simulation, and of the engine's Monte Carlo; expected failures = exposed time / M (Wald)."""
    spec, classes, patterns = _DESIGNS[design]
    T, M, R, D = 10.0, 300.0, 4.0, (20.0 if design == "two tiers" else 0.0)
    # a tier's p decreasing with its durability: the remote store's copy is the hardest to corrupt
    tiers = [(st, rs, e, sv, p / (1 + i), copies if i == 0 else 1) for i, (st, rs, e, sv) in enumerate(spec)]
    K = tiers[-1][2]
    saves = patterns * K
    model = [tm.Tier(f"t{i}", st, rs, e, sv, restore_failure_probability=q, copies=c)
             for i, (st, rs, e, sv, q, c) in enumerate(tiers)]
    work = saves * T
    b = tm.tiered_breakdown(work, T, M, R, tiers=model, classes=classes, D=D)
    assert b["failures"] == pytest.approx(b["wall"] / (M + D), rel=1e-12)
    assert b["useful"] + b["save"] + b["rework"] + b["restart"] == pytest.approx(b["wall"], rel=1e-12)
    wall, fails, starts, bad = simulate(saves, T, M, R, D, tiers, classes, runs=3000, seed=17)
    for got, want, count in ((wall, b["wall"], False), (fails, b["failures"], False),
                             (starts, b["rollbacks_to_start"], True), (bad, b["failed_restores"], True)):
        se = _se(got, want, count)
        assert abs(got.mean() - want) <= 3 * se, (design, p, copies, got.mean(), se, want)
    sim = simulate_tiers_engine(work, T, M, R, tiers=model, classes=classes, runs=3000, seed=23, final_save=True, D=D)
    for got, want, count in ((sim.wall, b["wall"], False), (sim.failures, b["failures"], False),
                             (sim.rollbacks_to_start, b["rollbacks_to_start"], True),
                             (sim.failed_restores, b["failed_restores"], True)):
        se = _se(np.asarray(got, dtype=float), want, count)
        assert abs(got.mean() - want) <= 3 * se, (design, p, copies, got.mean(), se, want)
    assert np.array_equal(sum(sim.recoveries.values()) + sim.rollbacks_to_start, sim.rollbacks)


def test_a_second_copy_lowers_the_cost_and_the_start_grows_with_the_job():
    """p ** copies: a second replica of a corruptible local copy recovers most of what it lost; a fallback to the
    start makes the wall time per unit of work grow with the job (it is constant without one)."""
    cls = {"process": 0.8, "node": 0.2}

    def design(p, copies):
        return [tm.Tier("local", 0.3, 1.0, 1, ("process",), restore_failure_probability=p, copies=copies),
                tm.Tier("pfs", 4.0, 10.0, 10, ("process", "node"))]
    walls = [float(tm.tiered_expected_wall_time(6000.0, 20.0, 300.0, 5.0, tiers=design(p, c), classes=cls))
             for p, c in ((0.0, 1), (0.3, 1), (0.3, 2))]
    assert walls[0] < walls[2] < walls[1]
    one = [tm.Tier("only", 2.0, 5.0, 1, ("any",), restore_failure_probability=0.1)]
    per_work = [float(tm.tiered_wall_per_work(30.0, 600.0, 5.0, tiers=one, classes={"any": 1.0}, work=w))
                for w in (600.0, 6000.0, 60000.0)]
    assert per_work[0] < per_work[1] < per_work[2]
    with pytest.raises(InputError, match="work"):
        tm.tiered_wall_per_work(30.0, 600.0, 5.0, tiers=one, classes={"any": 1.0})
    with pytest.raises(InputError, match=r"restore_failure_probability.*\[0, 1\)"):
        tm.tiered_wall_per_work(30.0, 600.0, tiers=[tm.Tier("only", 2.0, 5.0, 1, ("any",),
                                                             restore_failure_probability=1.0)], classes={"any": 1.0})
    with pytest.raises(InputError, match="copies"):
        tm.check_design([tm.Tier("only", 2.0, 5.0, 1, ("any",), copies=0)], {"any": 1.0})


def test_the_optimum_includes_failing_restores():
    """The best first interval of a design whose restores can fail minimises the finite job's expectation (no
    neighbouring interval does better) and is shorter than without failing restores (a rollback costs more)."""
    cls = {"process": 0.8, "node": 0.2}
    tiers = [tm.Tier("local", 0.3, 1.0, 1, ("process",), restore_failure_probability=0.3),
             tm.Tier("pfs", 4.0, 10.0, 10, ("process", "node"), restore_failure_probability=0.05)]
    work = 20000.0
    T = float(opt.best_first_interval(300.0, 5.0, tiers=tiers, classes=cls, work=work))
    f = lambda x: float(tm.tiered_expected_wall_time(work, x, 300.0, 5.0, tiers=tiers, classes=cls))  # noqa: E731
    assert f(T) <= min(f(T * 0.99), f(T * 1.01))
    plain = [tm.Tier("local", 0.3, 1.0, 1, ("process",)), tm.Tier("pfs", 4.0, 10.0, 10, ("process", "node"))]
    assert T < float(opt.best_first_interval(300.0, 5.0, tiers=plain, classes=cls))
    best = opt.optimal_tier_intervals(300.0, 5.0, tiers=tiers, classes=cls, work=work)
    assert best["wall_per_work"] * work <= f(T) * (1 + 1e-12)


# ------------------------------------------------------------------ surfaces

_TOML = """
[scenario]
name = "corruptible local copy"
nodes = 1024
gpus_per_node = 8
node_mtbf_h = 5000
useful_training_h = 720
price_per_gpu_hour = 2.5
restart_min = 5
[failure_classes]
process = 0.7
node = 0.3
[[tiers]]
name = "local"
every = 1
checkpoint_stall_min = 0.1
restore_min = 1.5
survives = ["process"]
restore_failure_probability = 0.3
[[tiers]]
name = "pfs"
every = 20
checkpoint_stall_min = 3
restore_min = 20
survives = ["process", "node"]
[[designs]]
name = "second copy"
[[designs.tiers]]
name = "local"
every = 1
checkpoint_stall_min = 0.1
restore_min = 1.5
survives = ["process"]
restore_failure_probability = 0.3
copies = 2
[[designs.tiers]]
name = "pfs"
every = 20
checkpoint_stall_min = 3
restore_min = 20
survives = ["process", "node"]
"""


def _file(tmp_path, text=_TOML, name="corrupt.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_plan_json_compare_and_batch_carry_the_field(tmp_path):
    """A TOML tier's restore_failure_probability reaches plan --json (each tier, failed_restores, rollbacks_to_start),
    compare (a design changing copies ranks by its own cost) and a batch over the template (same figures as plan)."""
    import json

    import pandas as pd
    from typer.testing import CliRunner

    from ckptplan import files
    from ckptplan.cli import app

    path = _file(tmp_path)
    run = CliRunner().invoke(app, ["plan", "-t", str(path), "--json"])
    assert run.exit_code == 0, run.output
    d = json.loads(run.output)
    assert [(t["restore_failure_probability"], t["copies"]) for t in d["tiers"]] == [(0.3, 1), (0.0, 1)]
    assert d["failed_restores"] > 0 and d["rollbacks_to_start"] == 0.0
    plain = CliRunner().invoke(app, ["plan", "-t", str(_file(tmp_path, _TOML.replace(
        "restore_failure_probability = 0.3\n[[tiers]]", "[[tiers]]"), "plain.toml")), "--json"])
    assert json.loads(plain.output)["total_cost"] < d["total_cost"]
    cmp = CliRunner().invoke(app, ["compare", "-t", str(path), "--json"])
    assert cmp.exit_code == 0, cmp.output
    rows = {r["name"]: r for r in json.loads(cmp.output)["designs"]}
    assert rows["second copy"]["total_cost"] < rows["corruptible local copy"]["total_cost"]
    table = tmp_path / "rows.csv"
    pd.DataFrame({"name": ["as planned"], "nodes": [1024]}).to_csv(table, index=False)
    out = tmp_path / "out.csv"
    res = CliRunner().invoke(app, ["batch", str(table), "-t", str(path), "-o", str(out)])
    assert res.exit_code == 0, res.output
    row = pd.read_csv(out).iloc[0]
    assert row["failed_restores"] == pytest.approx(d["failed_restores"], rel=1e-12)
    assert row["total_cost"] == pytest.approx(d["total_cost"], rel=1e-12)
    assert files.load_plan(str(path)).setup.tiers[0]["restore_failure_probability"] == 0.3


def test_a_single_level_scenario_refuses_it_by_name(tmp_path):
    from typer.testing import CliRunner

    from ckptplan.cli import app

    text = ('[scenario]\nname = "x"\nnodes = 8\nnode_mtbf_h = 5000\nuseful_training_h = 10\nprice_per_gpu_hour = 1\n'
            'checkpoint_stall_min = 1\nrestart_min = 2\nrestore_failure_probability = 0.1\n')
    run = CliRunner().invoke(app, ["plan", "-t", str(_file(tmp_path, text))])
    assert run.exit_code != 0 and "restore_failure_probability" in run.output and "[[tiers]]" in run.output
    assert "Traceback" not in run.output
    bad = _TOML.replace("restore_failure_probability = 0.3\n[[tiers]]", "restore_failure_probability = 1.5\n[[tiers]]")
    run = CliRunner().invoke(app, ["plan", "-t", str(_file(tmp_path, bad))])
    assert run.exit_code != 0 and "restore_failure_probability" in run.output and "[0, 1)" in run.output


def test_the_spare_pool_figures_are_in_the_plan():
    """plan_setup (hence plan --json) gives the pool's spread, time-average nodes in repair and waiting share, the
    engine's closed forms (engine.recovery) for the llama3-405b-storage pool."""
    from ckptplan import files
    from ckptplan.engine import recovery
    from ckptplan.engine.setup import plan_setup

    plan = files.load_plan("llama3-405b-storage")
    f = plan_setup(plan.scenario, plan.setup).figures
    st = plan.setup
    pool = (st.replacement_share / f["job_mtbf_h"], st.repair_h, st.spares)
    assert f["reallocation_sd_min"] == pytest.approx(recovery.reallocation_sd_min(*pool, st.swap_min), rel=1e-12)
    assert f["mean_nodes_in_repair"] == pytest.approx(recovery.mean_nodes_in_repair(*pool), rel=1e-12)
    assert f["pool_waiting_share"] == pytest.approx(recovery.pool_waiting_share(*pool), rel=1e-12)
    assert f["pool_reallocation_min"] == pytest.approx(recovery.expected_reallocation_min(*pool, st.swap_min))
    assert 0 < f["pool_waiting_share"] < 1 and 0 < f["mean_nodes_in_repair"] < st.spares + 1
