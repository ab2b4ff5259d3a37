"""Monte Carlo of a job on preemptible capacity, event by event (written apart from
:mod:`ckptplan.engine.preemption`, which it checks).

Each run follows the job through ``cycles`` checkpoints. From a checkpoint it computes ``T`` and saves
``C``; the next failure and the next preemption are drawn (exponential, the two processes independent,
both running only while the job holds its GPUs). A failure first: the work since the checkpoint is
lost, a restart ``R`` follows (a failure during it restarts it; a preemption during it means a wait
``Wc`` and a new restart). A preemption first: with a notice ``N >= C`` the job saves what it has done
(``min(elapsed, T)`` of work, the save takes ``C``), else it loses it; then it waits ``Wc`` and restarts.
"""

from __future__ import annotations

import numpy as np

__all__ = ["simulate_preemptible"]


def _restart(rng, t, lam, pi, R, Wc, tallies):
    """Restart every run of ``t`` (in place); a failure during it restarts it, a preemption waits first."""
    todo = np.arange(t.size)
    while todo.size:
        fail = rng.exponential(1.0 / lam, todo.size)
        pre = rng.exponential(1.0 / pi, todo.size) if pi > 0 else np.full(todo.size, np.inf)
        first = np.minimum(fail, pre)
        done = first >= R
        t[todo[done]] += R
        tallies["restart"][todo[done]] += R
        hit = todo[~done]
        t[hit] += first[~done]
        tallies["restart"][hit] += first[~done]
        waited = hit[pre[~done] < fail[~done]]
        t[waited] += Wc
        tallies["wait"][waited] += Wc
        todo = hit


def simulate_preemptible(T, C, M, R, P, N, Wc, runs=4000, cycles=50, seed=0):
    """Per run: wall time, work checkpointed, failures, preemptions and capacity wait over ``cycles`` cycles."""
    rng = np.random.default_rng(seed)
    lam, pi = 1.0 / M, (0.0 if not np.isfinite(P) else 1.0 / P)
    keep = N >= C
    t = np.zeros(runs)
    tallies = {k: np.zeros(runs) for k in ("work", "failures", "preemptions", "restart", "wait")}
    for _ in range(cycles):
        active = np.arange(runs)
        while active.size:
            fail = rng.exponential(1.0 / lam, active.size)
            pre = rng.exponential(1.0 / pi, active.size) if pi > 0 else np.full(active.size, np.inf)
            first = np.minimum(fail, pre)
            ok = first >= T + C
            t[active[ok]] += T + C
            tallies["work"][active[ok]] += T
            by_pre = ~ok & (pre < fail)
            by_fail = ~ok & ~by_pre
            f_idx, p_idx = active[by_fail], active[by_pre]
            t[f_idx] += first[by_fail]
            tallies["failures"][f_idx] += 1
            t[p_idx] += first[by_pre]
            tallies["preemptions"][p_idx] += 1
            if keep:
                tallies["work"][p_idx] += np.minimum(first[by_pre], T)
                t[p_idx] += C
            t[p_idx] += Wc
            tallies["wait"][p_idx] += Wc
            back = np.concatenate([f_idx, p_idx])
            sub = t[back]
            sub_tallies = {k: v[back] for k, v in tallies.items()}
            _restart(rng, sub, lam, pi, R, Wc, sub_tallies)
            t[back] = sub
            for k in ("restart", "wait"):
                tallies[k][back] = sub_tallies[k]
            # a cycle ends at a periodic save, or at a save on notice; else the attempt is retried
            active = np.concatenate([f_idx, p_idx[~np.full(p_idx.size, keep)]])
    return {"wall": t, **tallies}
