"""The Storage & recovery sheet's tier figures with restores that fail, against an event-by-event simulation.

The sheet's first-order rows (share restored from each tier, rollback rate, first-order interval and every) take
each tier's ``restore_failure_probability`` and ``copies`` as the tiered plan does (``q = p ** copies``, a class
trying the tiers surviving it in order): tests/test_storage_sheet.py recalculates them in LibreOffice against
:func:`engine.tiers.class_rates_per_tier` and :func:`engine.tiers.first_order_tier_intervals`. Here those engine
figures meet a simulation written from the physics alone (no engine code): a job saving every ``T`` to a host-memory
tier (two replicas, each corrupt with probability 0.5, independently) and every ``k``-th save to a remote store, hit
by process failures (host memory survives) and node losses (it does not), restarting through ``tests/restart_loop``.

* the share of rollbacks restored from each tier is the engine's (the sheet's "Share restored here") within 3
  standard errors, and differs from the share a first order blind to failed restores would use;
* the mean wall time of whole patterns is the engine's tiered expectation at the first-order design within 3
  standard errors;
* the first order that counts failed restores chooses a design the exact expectation prices no worse than the one
  a first order blind to them chooses.
"""

from __future__ import annotations

import math
import random

import pytest

from ckptplan.engine.tiers import class_rates_per_tier, first_order_tier_intervals, tiered_wall_per_work
from restart_loop import recover

M, R = 60.0, 2.0                                    # job MTBF and restart (min)
P_COPY, COPIES = 0.5, 2                             # each host-memory replica corrupt with 0.5: q = 0.25
CLASSES = {"process": 0.6, "node": 0.4}
LOCAL = dict(name="host-memory", every=1, survives=["process"], checkpoint_stall_min=0.2, restore_min=0.5,
             restore_failure_probability=P_COPY, copies=COPIES)
REMOTE = dict(name="remote", every=1, survives=["process", "node"], checkpoint_stall_min=2.0, restore_min=3.0)


def _design(blind: bool = False) -> tuple[float, int]:
    """(T, every of the remote tier) of the first-order design (``blind``: as if every restore succeeded)."""
    local = dict(LOCAL, restore_failure_probability=0.0) if blind else LOCAL
    fo = first_order_tier_intervals(M, tiers=[local, REMOTE], classes=CLASSES)
    return float(fo["T"]), int(fo["every_remote"])


def _run(rng: random.Random, T: float, k: int, patterns: int) -> tuple[float, int, int]:
    """One job of ``patterns`` x ``k`` saves: (wall time, rollbacks restored from host memory, from remote)."""
    t, n, target, local, remote = 0.0, 0, patterns * k, 0, 0
    while n < target:
        window = T + LOCAL["checkpoint_stall_min"] + (REMOTE["checkpoint_stall_min"] if (n + 1) % k == 0 else 0.0)
        gap = rng.expovariate(1.0 / M)
        if gap >= window:
            t, n = t + window, n + 1
            continue
        t += gap
        tried = 0.0
        if rng.random() < CLASSES["process"]:       # host memory survives: try its replicas first
            tried += LOCAL["restore_min"]
            if not all(rng.random() < P_COPY for _ in range(COPIES)):
                local += 1
                t += recover(rng, 0.0, R + tried, M)[0]
                continue                             # back to the last save, n
        tried += REMOTE["restore_min"]
        remote += 1
        t += recover(rng, 0.0, R + tried, M)[0]
        n = (n // k) * k                             # back to the last remote copy
    return t, local, remote


@pytest.fixture(scope="module")
def simulated():
    T, k = _design()
    rng = random.Random(20261205)
    runs = [_run(rng, T, k, 40) for _ in range(1500)]
    return T, k, runs


def test_share_restored_from_each_tier_is_the_simulations(simulated):
    _, _, runs = simulated
    local, remote = sum(r[1] for r in runs), sum(r[2] for r in runs)
    n = local + remote
    got = local / n
    want = class_rates_per_tier(1.0, tiers=[LOCAL, REMOTE], classes=CLASSES)["host-memory"]
    se = math.sqrt(want * (1 - want) / n)
    assert want == pytest.approx(0.6 * (1 - P_COPY ** COPIES), rel=1e-12)
    assert abs(got - want) < 3 * se, (got, want, se)
    blind = class_rates_per_tier(1.0, tiers=[dict(LOCAL, restore_failure_probability=0.0), REMOTE],
                                 classes=CLASSES)["host-memory"]
    assert abs(got - blind) > 10 * se   # the share a first order ignoring failed restores would use is not it


def test_wall_time_is_the_tiered_expectation_at_the_first_order_design(simulated):
    T, k, runs = simulated
    walls = [r[0] for r in runs]
    mean = sum(walls) / len(walls)
    se = math.sqrt(sum((w - mean) ** 2 for w in walls) / (len(walls) - 1) / len(walls))
    remote = dict(REMOTE, every=k)
    want = 40 * k * T * float(tiered_wall_per_work(T, M, R, tiers=[LOCAL, remote], classes=CLASSES))
    assert abs(mean - want) < 3 * se, (mean, want, se)


def test_counting_failed_restores_gives_a_design_no_worse():
    def exact(design):
        T, k = design
        return float(tiered_wall_per_work(T, M, R, tiers=[LOCAL, dict(REMOTE, every=k)], classes=CLASSES))

    aware, blind = _design(), _design(blind=True)
    assert aware != blind   # fewer restores from host memory: its interval grows, the remote's shrinks
    assert exact(aware) <= exact(blind)
