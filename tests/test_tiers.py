"""Tiered (multi-level) checkpointing: the exact expectation, its optimum, its validation and its Monte Carlo."""

import math
import tomllib

import mpmath
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize, minimize_scalar

from ckptplan.engine import InputError, finite as fin, montecarlo as mc, tiers as tm, waste
from ckptplan.engine.montecarlo_tiers import TieredSimulation, simulate_tiers
from ckptplan.engine.tiers import MAX_EVERY
from ckptplan.engine.tiers import model as tiers_model

# ------------------------------------------------------------------ an independent statement of the model


def _direct(T, M, R, W, s, stalls, restores, every, survives, shares, drop_run=False, num=float):
    """Wall per unit of work by the position-by-position recursion, as written in the model (O(K) per design).

    ``drop_run``: the 1/lambda term removed (only the restarts contribute): the restart time per work.
    ``num``: the number type (float, or mpmath.mpf for the extreme cases).
    """
    exp, expm1 = (math.exp, math.expm1) if num is float else (mpmath.exp, mpmath.expm1)
    lam = 1 / num(M)
    m, K = len(stalls), every[-1]
    total = sum(shares.values())
    pi = {c: num(v) / total for c, v in shares.items()}
    rec = {c: next(i for i in range(m) if c in survives[i]) for c in shares}
    rexp = {c: expm1(lam * (R + restores[rec[c]])) / lam for c in shares}
    const = (0 if drop_run else 1 / lam) + sum(pi[c] * rexp[c] for c in shares)
    AS, AF = [], []
    for p in range(K):
        C = sum(stalls[i] for i in range(m) if (p + 1) % every[i] == 0)
        L, P = T + C + W, T + C + W * s
        a, K0 = 0, const
        for c in shares:
            k = every[rec[c]]
            q = (p // k) * k
            if q == p:
                a += pi[c]
            else:
                K0 += pi[c] * (AF[q] + sum(AS[q + 1:p]))
        B = K0 / (a * exp(-lam * L) + (1 - a) * exp(-lam * P))
        AS.append(-expm1(-lam * P) * B)
        AF.append(-expm1(-lam * L) * B)
    return sum(AS) / (K * T)


def _random_design(rng, m=None):
    m = m or int(rng.integers(1, 5))
    names = [f"c{j}" for j in range(int(rng.integers(1, 4)))]
    shares = dict(zip(names, (float(v) for v in rng.dirichlet(np.ones(len(names))))))
    every = [1]
    for _ in range(1, m):
        every.append(every[-1] * int(rng.integers(1, 5)))       # ratios 1 .. 4, ratio 1 included
    survives = [tuple(c for c in names if rng.random() < 0.5) or (names[int(rng.integers(len(names)))],)
                for _ in range(m - 1)] + [tuple(names)]          # some tiers restore nothing (rho = 0)
    stalls, restores = list(rng.uniform(0, 5, m)), list(rng.uniform(0, 10, m))
    T, M, R, s = rng.uniform(1, 100), rng.uniform(20, 2000), rng.uniform(0, 20), rng.uniform(0, 0.9)
    W = min(rng.uniform(0, T), T / (1 - s)) if rng.random() < 0.6 else 0.0
    tiers = [tm.Tier(f"t{i}", stalls[i], restores[i], every[i], survives[i]) for i in range(m)]
    return tiers, shares, (T, M, R, W, s), (stalls, restores, every, survives, shares)


# ------------------------------------------------------------------ one tier: the single-level exact model

GRID = [(T, C, M, R, rest, W, s) for T in (5.0, 60.0, 400.0) for C in (0.0, 2.0, 30.0) for M in (30.0, 300.0, 5000.0)
        for R, rest in ((0.0, 0.0), (5.0, 3.0), (40.0, 0.0)) for W, s in ((0.0, 0.0), (4.0, 0.3), (5.0, 0.0))]


def test_one_tier_is_the_single_level_exact_model_over_a_grid():
    T, C, M, R, rest, W, s = (np.array(v) for v in zip(*GRID))
    shares = {"process": 0.25, "node": 0.5, "rack": 0.25}
    tiers = [dict(name="pfs", checkpoint_stall_min=C, restore_min=rest, every=1, survives=list(shares))]
    ref = np.exp(waste.log_wall_per_work(T, C, M, R + rest, W, s))
    got = tm.tiered_wall_per_work(T, M, R, W, s, tiers=tiers, classes=shares)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    # waste = 1 - 1/wall_per_work: near 0 its absolute precision is that of wall per work near 1 (a few ulp)
    np.testing.assert_allclose(tm.tiered_waste_fraction(T, M, R, W, s, tiers=tiers, classes=shares),
                               waste.waste_fraction(T, C, M, R + rest, W, s), rtol=1e-12, atol=2e-15)
    work = 1000.0 * T
    total = waste.expected_wall_time(work, T, C, M, R + rest, W, s)
    np.testing.assert_allclose(tm.tiered_expected_wall_time(work, T, M, R, W, s, tiers=tiers, classes=shares), total,
                               rtol=1e-12, atol=0)
    got, ref = tm.tiered_breakdown(work, T, M, R, W, s, tiers=tiers, classes=shares), \
        waste.time_breakdown(work, T, C, M, R + rest, W, s)
    for mine, theirs in (("useful", "useful"), ("save", "save"), ("restart", "restart"), ("wall", "total"),
                         ("rollbacks", "rollbacks"), ("failures", "failures")):
        np.testing.assert_allclose(got[mine], ref[theirs], rtol=1e-12, atol=1e-300, err_msg=mine)
    np.testing.assert_allclose(got["rework"], ref["rework"], rtol=0, atol=1e-12 * total.max())  # a difference
    np.testing.assert_allclose(got["failures"], total / M, rtol=1e-12)
    np.testing.assert_allclose(got["save_pfs"], work / T * C, rtol=1e-12)


def test_one_tier_keeps_the_callers_kind():
    shares = {"any": 1.0}
    tiers = [tm.Tier("disk", pd.Series([2.0, 8.0], index=["a", "b"]), 1.0, 1, ("any",))]
    M = pd.Series([600.0, 300.0], index=["a", "b"])
    out = tm.tiered_wall_per_work(60.0, M, 5.0, 10.0, 0.2, tiers=tiers, classes=shares)
    assert isinstance(out, pd.Series) and list(out.index) == ["a", "b"]
    ref = np.exp(waste.log_wall_per_work(np.full(2, 60.0), np.array([2.0, 8.0]), M.to_numpy(), np.full(2, 6.0),
                                          np.full(2, 10.0), np.full(2, 0.2)))
    np.testing.assert_allclose(out.to_numpy(), ref, rtol=1e-12)
    split = tm.tiered_breakdown(6000.0, 60.0, M, 5.0, 10.0, 0.2, tiers=tiers, classes=shares)
    assert all(isinstance(v, pd.Series) for v in split.values())
    scalar = tm.tiered_waste_fraction(60.0, 600.0, 5.0, tiers=[tm.Tier("disk", 2.0, 1.0, 1, ("any",))], classes=shares)
    assert isinstance(scalar, float)
    assert scalar == pytest.approx(waste.waste_fraction(60.0, 2.0, 600.0, 6.0), rel=1e-12)
    arr = tm.tiered_wall_per_work(np.array([[30.0], [60.0]]), np.array([300.0, 600.0]), tiers=[tm.Tier(
        "disk", 2.0, 0.0, 1, ("any",))], classes=shares)
    assert isinstance(arr, np.ndarray) and arr.shape == (2, 2)


# ------------------------------------------------------------------ several tiers: the recursion, both numerics


def test_hierarchical_evaluation_equals_the_position_by_position_recursion():
    rng = np.random.default_rng(11)
    for _ in range(150):
        tiers, shares, (T, M, R, W, s), model = _random_design(rng)
        got = tm.tiered_wall_per_work(T, M, R, W, s, tiers=tiers, classes=shares)
        assert got == pytest.approx(_direct(T, M, R, W, s, *model), rel=1e-12)


def test_rows_with_different_everies_in_one_call():
    rng = np.random.default_rng(3)
    n = 60
    e2 = rng.integers(1, 4, n)
    e3 = e2 * rng.integers(1, 7, n)
    tiers = [tm.Tier("mem", rng.uniform(0, 1, n), rng.uniform(0, 2, n), 1, ("p",)),
             tm.Tier("ssd", rng.uniform(0, 3, n), rng.uniform(0, 5, n), e2, ("p", "n")),
             tm.Tier("pfs", rng.uniform(0, 9, n), rng.uniform(0, 9, n), e3, ("p", "n", "r"))]
    sh = rng.dirichlet(np.ones(3), n)
    shares = {"p": sh[:, 0], "n": sh[:, 1], "r": 1.0 - sh[:, 0] - sh[:, 1]}
    T, M, R, s = rng.uniform(1, 100, n), rng.uniform(20, 3000, n), rng.uniform(0, 30, n), rng.uniform(0, 0.9, n)
    W = rng.uniform(0, 1, n) * T
    got = tm.tiered_wall_per_work(T, M, R, W, s, tiers=tiers, classes=shares)
    for k in range(n):
        ref = _direct(T[k], M[k], R[k], W[k], s[k], [t.checkpoint_stall_min[k] for t in tiers],
                      [t.restore_min[k] for t in tiers], [1, int(e2[k]), int(e3[k])], [t.survives for t in tiers],
                      {c: v[k] for c, v in shares.items()})
        assert got[k] == pytest.approx(ref, rel=1e-12)


def test_log_space_path_agrees_and_takes_over_where_floats_overflow():
    rng = np.random.default_rng(5)
    for _ in range(40):
        tiers, shares, (T, M, R, W, s), _ = _random_design(rng)
        _, _, f, rows, _, _ = tiers_model.prepare_rows(tiers, shares, tiers_model.job_specs(T, M, R, W, s))
        ratios = tiers_model.level_ratios(rows.every)
        lin, log = tiers_model.log_wall_per_work(f["T"], rows, ratios), tiers_model.log_wall_per_work(f["T"], rows, ratios, force_log=True)
        assert math.exp(lin[0]) == pytest.approx(math.exp(log[0]), rel=1e-12)
    # (L/M up to 7000): floats overflow; the log-space kernel matches a 40-digit recursion
    mpmath.mp.dps = 40
    for T, M, R, W, s, stalls, restores, every in [(300, 1.0, 5, 40, 0.3, [1, 2, 50], [1, 2, 3], [1, 3, 6]),
                                                   (50, 1.0, 800, 0, 0, [0.5, 3], [1, 9], [1, 4]),
                                                   (5, 0.1, 1, 2, 0.5, [1, 1, 1], [1, 1, 1], [1, 10, 100])]:
        names = ["p", "n", "r"][:len(stalls)]
        survives = [tuple(names[:i + 1]) for i in range(len(stalls))]
        shares = {c: 1.0 / len(names) for c in names}
        tiers = [tm.Tier(f"t{i}", stalls[i], restores[i], every[i], survives[i]) for i in range(len(stalls))]
        _, _, f, rows, _, _ = tiers_model.prepare_rows(tiers, shares, tiers_model.job_specs(T, M, R, W, s))
        got = tiers_model.log_wall_per_work(f["T"], rows, tiers_model.level_ratios(rows.every))[0]
        ref = mpmath.log(_direct(T, M, R, W, s, stalls, restores, every, survives,
                                 {c: mpmath.mpf(1) / len(names) for c in names}, num=mpmath.mpf))
        assert got == pytest.approx(float(ref), rel=1e-13)
        assert tm.tiered_waste_fraction(T, M, R, W, s, tiers=tiers, classes=shares) == 1.0  # finite, never NaN
        with pytest.raises(InputError) as err:
            tm.tiered_expected_wall_time(1000.0, T, M, R, W, s, tiers=tiers, classes=shares)
        assert err.value.field == "M" and "overflows" in str(err.value)


def test_breakdown_adds_up_and_its_restart_is_the_recursion_without_the_run_term():
    rng = np.random.default_rng(8)
    for _ in range(60):
        tiers, shares, (T, M, R, W, s), model = _random_design(rng)
        K = model[2][-1]
        work = 7 * K * T
        b = tm.tiered_breakdown(work, T, M, R, W, s, tiers=tiers, classes=shares)
        assert b["rework"] >= 0
        assert b["useful"] + b["save"] + b["rework"] + b["restart"] == pytest.approx(b["wall"], rel=1e-11)
        assert b["restart"] == pytest.approx(work * _direct(T, M, R, W, s, *model, drop_run=True), rel=1e-10)
        assert b["wall"] == pytest.approx(tm.tiered_expected_wall_time(work, T, M, R, W, s, tiers=tiers,
                                                                       classes=shares), rel=1e-14)
        stalls_per_pattern = sum(st * K / e for st, e in zip(model[0], model[2]))
        assert b["save"] == pytest.approx(work / (K * T) * (stalls_per_pattern + K * W * s), rel=1e-12)
        for t, e in zip(tiers, model[2]):
            assert b[f"save_{t.name}"] == pytest.approx(t.checkpoint_stall_min * work / (T * e), rel=1e-12)
        assert b["failures"] == pytest.approx(b["wall"] / M, rel=1e-14)
        assert sum(b[f"failures_{c}"] for c in shares) == pytest.approx(b["failures"], rel=1e-12)
        assert sum(b[f"recoveries_{t.name}"] for t in tiers) == pytest.approx(b["rollbacks"], rel=1e-12)
        assert b["rollbacks"] <= b["failures"] * (1 + 1e-12)


# ------------------------------------------------------------------ design checks

CLASSES = {"process": 0.6, "node": 0.3, "rack": 0.1}


def _tiers(changes=None):
    base = [dict(name="mem", checkpoint_stall_min=0.1, restore_min=0.5, every=1, survives=["process"]),
            dict(name="host-memory", checkpoint_stall_min=0.5, restore_min=2.0, every=2, survives=["process", "node"]),
            dict(name="pfs", checkpoint_stall_min=5.0, restore_min=10.0, every=8, survives=["process", "node", "rack"])]
    for (i, key), value in (changes or {}).items():
        base[i][key] = value
    return base


@pytest.mark.parametrize("tiers, classes, field, words", [
    (_tiers({(1, "survives"): []}), CLASSES, "tiers[1] (host-memory).survives", "at least one failure class"),
    (_tiers({(1, "survives"): ["process", "cosmic-ray"]}), CLASSES, "tiers[1] (host-memory).survives",
     "['process', 'node', 'rack']"),
    (_tiers({(2, "survives"): ["process", "node"]}), CLASSES, "classes['rack']", "could never be recovered"),
    (_tiers({(1, "every"): 0}), CLASSES, "tiers[1] (host-memory).every", "whole number >= 1"),
    (_tiers({(1, "every"): 2.5}), CLASSES, "tiers[1] (host-memory).every", "whole number >= 1"),
    (_tiers({(2, "every"): 5}), CLASSES, "tiers[2] (pfs).every", "whole multiple of the previous tier's every"),
    (_tiers({(0, "every"): 2}), CLASSES, "tiers[0] (mem).every", "first tier must take every save"),
    (_tiers({(2, "retention"): 0}), CLASSES, "tiers[2] (pfs).retention", "whole number >= 1"),
    (_tiers({(1, "checkpoint_stall_min"): -0.5}), CLASSES, "tiers[1] (host-memory).checkpoint_stall_min", ">= 0"),
    (_tiers({(1, "checkpoint_stall_min"): math.nan}), CLASSES, "tiers[1] (host-memory).checkpoint_stall_min",
     "finite"),
    (_tiers({(2, "restore_min"): -1.0}), CLASSES, "tiers[2] (pfs).restore_min", ">= 0"),
    (_tiers({(2, "price_per_gb_month"): -1.0}), CLASSES, "tiers[2] (pfs).price_per_gb_month", ">= 0"),
    (_tiers({(1, "name"): "mem"}), CLASSES, "tiers[1] (mem).name", "unique"),
    (_tiers({(1, "name"): ""}), CLASSES, "tiers[1].name", "non-empty"),
    (_tiers(), {"process": 0.6, "node": 0.3, "rack": 0.2}, "classes", "must sum to 1"),
    (_tiers(), {"process": 0.7, "node": 0.3, "rack": 0.0}, "classes['rack']", "> 0"),
    (_tiers(), {"process": 1.5, "node": 0.3, "rack": 0.1}, "classes['process']", "(0, 1]"),
    (_tiers({(1, "every"): [2, 3]}), CLASSES, "tiers[2] (pfs).every", "whole multiple"),
])
def test_bad_designs_name_the_tier_and_field(tiers, classes, field, words):
    with pytest.raises(InputError) as err:
        tm.check_design(tiers, classes)
    assert err.value.field == field
    assert field in str(err.value) and words in str(err.value)
    with pytest.raises(InputError):   # every public function checks the design
        tm.tiered_wall_per_work(20.0, 300.0, tiers=tiers, classes=classes)


def test_tiers_from_a_toml_file_and_bad_tables():
    doc = tomllib.loads("""
        [[tiers]]
        name = "host-memory"
        checkpoint_stall_min = 0.05
        restore_min = 0.5
        every = 1
        survives = ["process"]

        [[tiers]]
        name = "pfs"
        checkpoint_stall_min = 4.0
        restore_min = 12.0
        every = 10
        survives = ["process", "node"]
        retention = 3
        price_per_gb_month = 0.02
    """)
    tiers = tm.check_design(tm.tiers_from_dicts(doc["tiers"]), {"process": 0.8, "node": 0.2})
    assert [t.name for t in tiers] == ["host-memory", "pfs"] and tiers[1].retention == 3
    assert tiers[1].survives == ("process", "node")
    assert tm.recovery_tier(doc["tiers"], {"process": 0.8, "node": 0.2}) == {"process": "host-memory", "node": "pfs"}
    rates = tm.class_rates_per_tier(100.0, doc["tiers"], {"process": 0.8, "node": 0.2})
    assert rates == {"host-memory": pytest.approx(0.008), "pfs": pytest.approx(0.002)}
    with pytest.raises(InputError, match=r"tiers\[1\] \(pfs\)=.*replicas.*unknown key"):
        tm.tiers_from_dicts([doc["tiers"][0], {**doc["tiers"][1], "replicas": 2}])
    with pytest.raises(InputError, match=r"tiers\[0\] \(host-memory\)=.*every.*missing"):
        tm.tiers_from_dicts([{k: v for k, v in doc["tiers"][0].items() if k != "every"}])
    with pytest.raises(InputError, match="W"):   # the write must be durable before the next save
        tm.tiered_wall_per_work(5.0, 100.0, 0.0, 10.0, 0.2, tiers=doc["tiers"], classes={"process": 0.8, "node": 0.2})


# ------------------------------------------------------------------ first order and the numeric optimum


def test_first_order_matches_a_numeric_minimisation_of_the_papers_overhead():
    rng = np.random.default_rng(21)
    for _ in range(25):
        M, W, s = rng.uniform(30, 3000), rng.uniform(0, 3), rng.uniform(0, 0.5)
        stall = rng.uniform(0.01, 10, 3)
        shares = dict(zip(("process", "node", "rack"), rng.dirichlet(np.ones(3))))
        tiers = [tm.Tier(n, stall[i], 1.0, 1, tuple(list(shares)[:i + 1])) for i, n in enumerate(("mem", "ssd", "pfs"))]
        C = np.array([stall[0] + W * s, stall[1], stall[2]])
        lam = np.array(list(shares.values())) / M

        def overhead(logT):   # Benoit et al.: sum over levels of C/T + lambda T / 2
            T = np.exp(logT)
            return float(np.sum(C / T + lam * T / 2))

        res = minimize(overhead, np.log(np.sqrt(C * M)), method="Nelder-Mead",
                       options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000, "maxfev": 40000})
        got = tm.first_order_tier_intervals(M, tiers=tiers, classes=shares, W=W, slowdown=s)
        for i, n in enumerate(("mem", "ssd", "pfs")):
            assert got[f"interval_{n}"] == pytest.approx(math.exp(res.x[i]), rel=1e-6)
        assert got["first_order_overhead"] == pytest.approx(res.fun, rel=1e-9)
        assert got["T"] == pytest.approx(max(got["interval_mem"], W * (1 - s)), rel=1e-15)


def test_first_order_rounding_unused_tiers_and_a_free_first_tier():
    shares = {"process": 0.5, "node": 0.5}
    tiers = [tm.Tier("mem", 0.5, 1.0, 1, ("process",)), tm.Tier("ssd", 2.0, 2.0, 1, ("process", "node")),
             tm.Tier("copy", 3.0, 2.0, 1, ("process", "node"))]     # restores nothing: ssd comes first
    got = tm.first_order_tier_intervals(100.0, tiers=tiers, classes=shares)
    T1, T2 = math.sqrt(2 * 0.5 * 100 / 0.5), math.sqrt(2 * 2.0 * 100 / 0.5)
    assert got["T"] == pytest.approx(T1) and got["interval_ssd"] == pytest.approx(T2)
    assert got["every_ssd"] == max(1, math.floor(T2 / T1 + 0.5)) and got["interval_copy"] == math.inf
    assert got["every_copy"] == got["every_ssd"] * (MAX_EVERY // got["every_ssd"]) <= MAX_EVERY
    with pytest.raises(InputError) as err:
        tm.first_order_tier_intervals(100.0, tiers=[tm.Tier("mem", 0.0, 1.0, 1, ("process", "node"))], classes=shares)
    assert err.value.field == "tiers[0] (mem).checkpoint_stall_min" and "continuously" in str(err.value)
    # a free stall with an asynchronous write: the write's own constraint is the floor
    got = tm.first_order_tier_intervals(100.0, tiers=[tm.Tier("mem", 0.0, 1.0, 1, ("process", "node"))],
                                        classes=shares, W=4.0, slowdown=0.0)
    assert got["T"] == 4.0


def _random_three_tier(rng, n):
    tiers = [dict(name="mem", checkpoint_stall_min=rng.uniform(0.01, 0.5, n), restore_min=rng.uniform(0.1, 2, n),
                  every=1, survives=["process"]),
             dict(name="ssd", checkpoint_stall_min=rng.uniform(0.1, 3, n), restore_min=rng.uniform(0.5, 5, n),
                  every=1, survives=["process", "node"]),
             dict(name="pfs", checkpoint_stall_min=rng.uniform(1, 20, n), restore_min=rng.uniform(2, 30, n),
                  every=1, survives=["process", "node", "rack"])]
    sh = rng.dirichlet([3, 2, 1], n)
    classes = {"process": sh[:, 0], "node": sh[:, 1], "rack": 1.0 - sh[:, 0] - sh[:, 1]}
    M = np.exp(rng.uniform(np.log(30), np.log(3000), n))
    return tiers, classes, M, rng.uniform(0, 20, n), rng.uniform(0, 5, n), rng.uniform(0, 0.5, n)


def _at(tiers, T, e2, e3, M, R, W, s, classes):
    ts = [dict(t) for t in tiers]
    ts[1]["every"], ts[2]["every"] = e2, e3
    return tm.tiered_wall_per_work(T, M, R, W, s, tiers=ts, classes=classes)


def test_numeric_optimum_is_never_worse_than_the_first_order_design():
    rng = np.random.default_rng(7)
    tiers, classes, M, R, W, s = _random_three_tier(rng, 1000)
    opt = tm.optimal_tier_intervals(M, R, W, s, tiers=tiers, classes=classes)
    fo = tm.first_order_tier_intervals(M, tiers=tiers, classes=classes, W=W, slowdown=s)
    at_opt = _at(tiers, opt["T"], opt["every_ssd"], opt["every_pfs"], M, R, W, s, classes)
    at_fo = _at(tiers, fo["T"], fo["every_ssd"], fo["every_pfs"], M, R, W, s, classes)
    np.testing.assert_allclose(opt["wall_per_work"], at_opt, rtol=1e-13)
    np.testing.assert_allclose(opt["first_order_waste_fraction"], 1 - 1 / at_fo, rtol=1e-12)
    assert np.all(at_opt <= at_fo * (1 + 1e-14))
    assert np.mean(at_opt < at_fo * (1 - 1e-6)) > 0.5          # and usually strictly better
    assert np.all(opt["every_mem"] == 1) and np.all(opt["every_pfs"] % opt["every_ssd"] == 0)
    assert np.all(opt["T"] >= W * (1 - s))
    # optimal in T: a step of 1e-4 either way does not help
    for step in (1 + 1e-4, 1 - 1e-4):
        T2 = np.maximum(opt["T"] * step, W * (1 - s))
        assert np.all(_at(tiers, T2, opt["every_ssd"], opt["every_pfs"], M, R, W, s, classes) >= at_opt * (1 - 1e-13))


def test_numeric_optimum_against_brute_force_and_row_by_row():
    rng = np.random.default_rng(17)
    tiers, classes, M, R, W, s = _random_three_tier(rng, 6)
    opt = tm.optimal_tier_intervals(M, R, W, s, tiers=tiers, classes=classes)
    for k in range(6):
        tk = [{**t, "checkpoint_stall_min": t["checkpoint_stall_min"][k], "restore_min": t["restore_min"][k]}
              for t in tiers]
        ck = {c: v[k] for c, v in classes.items()}
        one = tm.optimal_tier_intervals(M[k], R[k], W[k], s[k], tiers=tk, classes=ck)
        assert (one["every_ssd"], one["every_pfs"]) == (opt["every_ssd"][k], opt["every_pfs"][k])
        assert one["T"] == pytest.approx(opt["T"][k], rel=1e-12) and isinstance(one["every_pfs"], int)
        best = math.inf
        e2, r3 = one["every_ssd"], one["every_pfs"] // one["every_ssd"]
        for a in range(max(1, e2 - 2), e2 + 3):
            for b in {max(1, int(r3 * x)) for x in np.linspace(0.5, 2.0, 16)} | set(range(max(1, r3 - 2), r3 + 3)):
                lo = math.log(max(W[k] * (1 - s[k]), 1e-3) * (1 + 1e-9))
                res = minimize_scalar(lambda x: _at(tk, math.exp(x), a, a * b, M[k], R[k], W[k], s[k], ck),
                                      bounds=(lo, math.log(10 * M[k])), method="bounded", options={"xatol": 1e-10})
                best = min(best, res.fun)
        assert one["wall_per_work"] <= best * (1 + 1e-10)


def test_adding_a_memory_tier_never_raises_the_optimised_waste():
    rng = np.random.default_rng(31)
    n = 300
    p = rng.uniform(0.3, 0.9, n)
    classes = {"process": p, "node": 1.0 - p}
    C, rest = rng.uniform(1, 20, n), rng.uniform(2, 30, n)
    M, R, W = np.exp(rng.uniform(np.log(60), np.log(5000), n)), rng.uniform(0, 20, n), rng.uniform(0, 5, n)
    # cheap: every save, a memory-only one too, pays the write slowdown W s; keep it, and the stall, <= 1% of C
    s = rng.uniform(0, 1, n) * np.minimum(0.5, 0.01 * C / W)
    pfs = dict(name="pfs", checkpoint_stall_min=C, restore_min=rest, every=1, survives=["process", "node"])
    memory = dict(name="memory", checkpoint_stall_min=C * rng.uniform(0.001, 0.01, n),
                  restore_min=rest * rng.uniform(0.0, 1.0, n), every=1, survives=["process"])
    alone = tm.optimal_tier_intervals(M, R, W, s, tiers=[pfs], classes=classes)
    both = tm.optimal_tier_intervals(M, R, W, s, tiers=[memory, pfs], classes=classes)
    assert np.all(both["waste_fraction"] <= alone["waste_fraction"])
    # the single tier's optimum is the exact single-level optimum (waste.exact_optimal_interval): the same value to
    # rounding; the place only to ~1e-7, as near a flat minimum no search that compares values can do better
    exact_T = waste.exact_optimal_interval(C, M, W, s)
    np.testing.assert_allclose(alone["T"], exact_T, rtol=1e-6)
    at_exact = np.exp(waste.log_wall_per_work(exact_T, C, M, R + rest, W, s))
    assert np.all(alone["wall_per_work"] <= at_exact * (1 + 1e-14))


# ------------------------------------------------------------------ Monte Carlo


def _start_effect(M, R, W, s, tiers, classes):
    """Exact excess of a finite job over the steady-state expectation: its first window runs clean."""
    rec = tm.recovery_tier(tiers, classes)
    restore = {t["name"]: t["restore_min"] for t in tiers}
    c = sum(p * M * math.exp((R + restore[rec[k]]) / M) for k, p in classes.items())
    return c * math.expm1(W * (1 - s) / M)


@pytest.mark.parametrize("case", [
    (1000.0, 60.0, 300.0, 5.0, 20.0, 0.2, True),      # async, whole segments, final save
    (1010.0, 60.0, 300.0, 5.0, 20.0, 0.2, False),     # ragged last segment
    (965.0, 60.0, 300.0, 5.0, 20.0, 0.2, False),      # the job ends while the last write runs
    (600.0, 50.0, 100.0, 10.0, 50.0, 0.0, False),     # W (1 - s) = T
    (40.0, 60.0, 30.0, 5.0, 20.0, 0.2, False),        # a single segment
])
def test_one_tier_simulation_is_the_single_level_simulation(case):
    work, T, M, R, W, s, final_save = case
    tiers = [tm.Tier("pfs", 2.0, 3.0, 1, ("a", "b"))]
    sim = simulate_tiers(work, T, M, R, W, s, tiers=tiers, classes={"a": 0.4, "b": 0.6}, runs=20000, seed=1,
                         final_save=final_save)
    ref = mc.simulate(work, T, 2.0, M, R + 3.0, W, s, runs=20000, seed=2, final_save=final_save)
    exact = fin.finite_expected_wall_time(work, T, 2.0, M, R + 3.0, W, s, final_save=final_save)
    assert isinstance(sim, TieredSimulation) and sim.runs == 20000
    assert abs(sim.mean() - exact) < 3 * sim.standard_error()
    assert abs(sim.mean() - ref.mean()) < 3 * math.hypot(sim.standard_error(), ref.standard_error())
    assert sim.failure_free == pytest.approx(fin.failure_free_wall_time(work, T, 2.0, W, s, final_save), rel=1e-14)
    assert sim.wall.min() >= sim.failure_free * (1 - 1e-12)
    np.testing.assert_allclose(sim.wall[sim.failures == 0], sim.failure_free, rtol=1e-12)
    rb = fin.finite_expected_rollbacks(work, T, 2.0, M, W, s, final_save=final_save)
    assert abs(sim.rollbacks.mean() - rb) < 3 * mc.standard_error(sim.rollbacks.astype(float))


MEM, PARTNER, PFS = (dict(name="mem", checkpoint_stall_min=0.2, restore_min=0.5, every=1, survives=["process"]),
                     dict(name="partner", checkpoint_stall_min=1.0, restore_min=3.0, every=2,
                          survives=["process", "node"]),
                     dict(name="pfs", checkpoint_stall_min=4.0, restore_min=9.0, every=6,
                          survives=["process", "node", "rack"]))
MC_GRID = [  # tiers, classes, T, M, R, W, slowdown, patterns
    ([MEM, {**PFS, "every": 4, "survives": ["process", "node"]}], {"process": 0.7, "node": 0.3}, 20.0, 150.0, 5.0,
     4.0, 0.2, 10),
    ([MEM, PARTNER, PFS], {"process": 0.5, "node": 0.35, "rack": 0.15}, 15.0, 120.0, 6.0, 3.0, 0.3, 6),
    ([MEM, PARTNER, PFS], {"process": 0.2, "node": 0.2, "rack": 0.6}, 15.0, 400.0, 2.0, 0.0, 0.0, 8),
    ([{**MEM, "survives": ["process", "node"]}, {**PARTNER, "every": 1, "survives": ["node"]},   # restores nothing
      {**PFS, "every": 3}], {"process": 0.3, "node": 0.3, "rack": 0.4}, 25.0, 200.0, 10.0, 10.0, 0.5, 12),
    ([MEM, {**PFS, "every": 5, "survives": ["process", "node"]}], {"process": 0.9, "node": 0.1}, 30.0, 60.0, 1.0,
     25.0, 0.1, 4),
]


@pytest.mark.parametrize("case_id", range(len(MC_GRID)))
def test_tiered_simulation_matches_the_expectation_within_3_se(case_id):
    tiers, classes, T, M, R, W, s, patterns = MC_GRID[case_id]
    work = patterns * tiers[-1]["every"] * T           # whole patterns, the last save taken: the expectation's job
    sim = simulate_tiers(work, T, M, R, W, s, tiers=tiers, classes=classes, runs=20000, seed=100 + case_id,
                         final_save=True)
    exact = tm.tiered_expected_wall_time(work, T, M, R, W, s, tiers=tiers, classes=classes)
    exact += _start_effect(M, R, W, s, tiers, classes)
    assert abs(sim.mean() - exact) < 3 * sim.standard_error()
    # each failure's class is drawn with the shares: sum(N_j - pi_j N) is a martingale, variance pi_j (1 - pi_j) E[N]
    # (Wald's second identity). 13 such checks over the grid: 3.4 SE keeps their joint false alarms at 1% (Bonferroni)
    for c, p in classes.items():
        assert abs(np.sum(sim.class_failures[c] - p * sim.failures)) < 3.4 * math.sqrt(p * (1 - p) * sim.failures.sum())
    # Wald: all failures = wall time / M
    d = sim.failures - sim.wall / M
    assert abs(d.mean()) < 3 * mc.standard_error(d)
    np.testing.assert_array_equal(sum(sim.class_failures.values()), sim.failures)
    np.testing.assert_array_equal(sum(sim.recoveries.values()), sim.rollbacks)
    rec = tm.recovery_tier(tiers, classes)
    unused = set(t["name"] for t in tiers) - set(rec.values())
    assert all(sim.recoveries[name].sum() == 0 for name in unused)


def test_simulation_is_reproducible_and_takes_one_configuration():
    tiers, classes, T, M, R, W, s, _ = MC_GRID[1]
    a = simulate_tiers(500.0, T, M, R, W, s, tiers=tiers, classes=classes, runs=9000, seed=4)
    np.testing.assert_array_equal(a.wall, simulate_tiers(500.0, T, M, R, W, s, tiers=tiers, classes=classes,
                                                         runs=9000, seed=4).wall)
    assert not np.array_equal(a.wall, simulate_tiers(500.0, T, M, R, W, s, tiers=tiers, classes=classes,
                                                     runs=9000, seed=5).wall)
    with pytest.raises(InputError, match="single number"):
        simulate_tiers(500.0, [T, T], M, tiers=tiers, classes=classes, runs=10)
    with pytest.raises(InputError) as err:
        simulate_tiers(1e6, 1000.0, 1.0, tiers=tiers, classes=classes, runs=10)
    assert err.value.field == "M"


@pytest.mark.parametrize(("stalls", "every", "W", "s"), [
    ((0.2, 1.0, 4.0), (1, 3, 12), 0.0, 0.0), ((0.2, 1.0, 4.0), (1, 3, 12), 6.0, 0.3), ((2.0,), (1,), 0.0, 0.0),
    ((0.5, 3.0), (1, 7), 9.0, 0.9), ((0.1, 1000.0), (1, 2), 0.0, 0.0)])
def test_the_simulators_window_search_is_searchsorted_exactly(stalls, every, W, s):
    """The tiered Monte Carlo finds the window a failure falls in from a table of buckets and two comparisons
    (or searchsorted, when the windows differ too much in length for a small table): the very index searchsorted
    on the pattern's prefix sums gives, at every window boundary, one float step either side, and anywhere."""
    from ckptplan.engine import montecarlo_tiers as mct

    job = mct._job(5000.0, 1.0 if stalls[-1] > 100 else 10.0, 100.0, 1.0, W, s, list(stalls), list(every),
                   [1.0] * len(every), [1.0], [len(every) - 1], True)
    assert (job.near is None) == (stalls[-1] > 100)
    pre, P, K = job.pre, job.pre[-1], job.pre.size - 1
    bounds = (np.arange(40)[:, None] * P + pre[None, :]).ravel()
    tau = np.concatenate((bounds, np.nextafter(bounds, -np.inf), np.nextafter(bounds, np.inf),
                          np.random.default_rng(5).uniform(-P, 40 * P, 100_000)))
    k = np.floor(tau / P)
    want = (k * K).astype(np.int64) + np.searchsorted(pre, tau - k * P, side="right") - 1
    assert np.array_equal(mct._position(job, tau), want)
