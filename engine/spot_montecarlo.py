"""The finite job on spot, on-demand or fallback capacity, run by run (:mod:`ckptplan.engine.spot`'s Monte Carlo; its
module notes say what happens and where the switching rule comes from). Apart from :mod:`ckptplan.engine.spot` so
that the scenario table (:mod:`ckptplan.engine.preemption_table`, the deadline answer on spot capacity) can run it
without importing what plans a scenario."""

from __future__ import annotations

from typing import Any

import numpy as np

from .preemption import preemption_optimal_interval
from .waste import exact_optimal_interval_kernel, expected_wall_time

__all__ = ["SPOT_BLOCK", "capacity_job", "simulate_capacity", "simulate_capacity_jobs", "simulate_spot_jobs"]

#: most runs (jobs x runs) one pass of :func:`simulate_spot_jobs` holds (about 150 bytes each)
SPOT_BLOCK = 1 << 16   # a few jobs of 10,000 runs: the arrays stay in the caches
#: most random numbers :func:`simulate_spot_jobs` keeps to share between jobs (8 bytes each): every job starts the
#: same stream (the same seed), so its first numbers are drawn once; a job that needs more draws the rest itself
SHARED_DRAWS = 1 << 23


def simulate_capacity(job: dict[str, float], policy: str, threshold: float = 0.0, runs: int = 4000,
                      seed: int = 0) -> dict[str, np.ndarray]:
    """Wall time and cost of ``runs`` jobs under ``policy`` (``spot``, ``on-demand``, ``fallback`` with
    ``threshold`` minutes of slack). ``job``: ``work``, ``C``, ``M``, ``R``, ``P``, ``N``, ``Wc``, ``T_spot``,
    ``T_od``, ``rho_od``, ``deadline``, ``price``, ``spot_price`` (per GPU-minute x GPUs), minutes; ``D`` (the
    downtime after every failure, billed as the plan's restart time, 0 when absent).

    Each run, one segment (or the rest of the last) per round: the failure and preemption times drawn (a run on
    on-demand capacity sees no preemption); a segment done moves the work on; a preemption with a notice that
    covers the save ``N >= C`` keeps the work done and pays the save, then waits ``Wc`` for capacity; a failure
    pays the downtime ``D``; either restarts (``R``, during which both can strike again). A fallback moves to
    on-demand capacity (restoring there) when the deadline less the time so far less the rest of the work at
    on-demand's pace ``rho_od`` falls below ``threshold``. Runs still going at 50x the deadline plus 50x the work at
    that pace are given up (``finished`` False). One job of :func:`simulate_capacity_jobs`."""
    return simulate_capacity_jobs([job], [policy], [threshold], runs, seed)[0]


def capacity_job(work, C, M, R, P, N, Wc, deadline, price, spot_price, gpus, D=0.0, phase_starts=None,
                 phase_factors=None, weibull_shape=None) -> dict[str, Any]:
    """The job :func:`simulate_capacity` runs (minutes; prices per GPU-hour, GPUs): intervals and on-demand rho.

    ``phase_starts`` (wall minutes from the job's start) and ``phase_factors``: failure phases; ``weibull_shape``: a
    Weibull intensity from the start (below 1). A failure rate that changes is run on the policies' schedules
    (:mod:`ckptplan.engine.capacity_schedules`: the job gains ``schedule``, and ``T_od``/``T_spot`` are the
    schedules' first intervals); a constant one (none given, or phases all at one factor) is the job of old."""
    from .capacity_schedules import capacity_schedules, failure_process

    M, s, f, k = failure_process(M, phase_starts, phase_factors, weibull_shape)
    if s or k is not None:
        sched = capacity_schedules(work, C, M, R, P, N, Wc, D, s, f, k)
        return {"work": work, "C": C, "M": M, "R": R, "P": P, "N": N, "Wc": Wc, "D": D, "deadline": deadline,
                "T_od": float(sched["T_od_by"][0]), "T_spot": float(sched["T_spot_by"][0]),
                "rho_od": sched["rho_od"], "price": price * gpus / 60.0, "spot_price": spot_price * gpus / 60.0,
                "schedule": sched}
    T_od = float(exact_optimal_interval_kernel(np.float64(C), np.float64(M), np.float64(0.0), np.float64(0.0)))
    return {"work": work, "C": C, "M": M, "R": R, "P": P, "N": N, "Wc": Wc, "D": D, "deadline": deadline,
            "T_od": T_od, "T_spot": float(preemption_optimal_interval(C, M, R, P, N, Wc, D)),
            "rho_od": float(expected_wall_time(1.0, T_od, C, M, R, D=D)),
            "price": price * gpus / 60.0, "spot_price": spot_price * gpus / 60.0}


def simulate_spot_jobs(jobs: list[dict[str, float]], runs: int = 4000, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """:func:`simulate_capacity` ``(job, "spot", runs=runs, seed=seed)`` for every job of ``jobs``, the jobs
    simulated together (what a table of many spot rows with deadlines asks; :func:`simulate_capacity_jobs`)."""
    return simulate_capacity_jobs(jobs, ["spot"] * len(jobs), np.zeros(len(jobs)), runs, seed)


class _Stream:
    """The numbers every job's generator draws (``default_rng(seed).exponential(1.0)``, one after another): the
    first :data:`SHARED_DRAWS` kept and shared, the rest drawn by each job's own generator."""

    def __init__(self, seed: int):
        self.seed = seed
        self.shared = np.zeros(0)
        self.source = np.random.default_rng(seed)

    def own(self) -> Any:
        """A job's own generator, placed after the shared numbers."""
        gen = np.random.default_rng(self.seed)
        if self.shared.size:
            gen.exponential(1.0, self.shared.size)
        return gen

    def take(self, start: int, k: int) -> np.ndarray | None:
        """Numbers ``start`` .. ``start + k`` of the stream, or None past the shared part."""
        end = start + k
        if end > self.shared.size and self.shared.size < SHARED_DRAWS:
            grow = min(SHARED_DRAWS, max(end, 2 * self.shared.size)) - self.shared.size
            self.shared = np.concatenate([self.shared, self.source.exponential(1.0, grow)])
        return self.shared[start:end] if end <= self.shared.size else None


def simulate_capacity_jobs(jobs: list[dict[str, float]], policies: list[str], thresholds: list[float] | np.ndarray,
                           runs: int = 4000, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """:func:`simulate_capacity` ``(jobs[i], policies[i], thresholds[i], runs, seed)`` for every ``i``, the jobs
    simulated together: a table's rows, a threshold search's candidates (:func:`ckptplan.engine.spot.capacity_policies`).

    Each job draws from its own generator seeded with ``seed`` (its runs still going, in run order: failures, then
    preemptions; a fallback's moves' restarts first, then the restarts' pairs), so a job's runs are the same
    whichever jobs share the call; every other step is one array operation over all jobs' runs still going (at most
    :data:`SPOT_BLOCK` runs at a time), on arrays that shrink as runs end instead of indexing full ones. Jobs of
    about as many segments go together: their runs end in the same rounds. ``tests/spot_reference.py`` keeps the
    one-job loop this was written from; the tests hold the two equal run by run."""
    runs = int(runs)
    out: list[Any] = [None] * len(jobs)
    per = max(1, SPOT_BLOCK // max(runs, 1))
    stream = _Stream(seed)
    order = sorted(range(len(jobs)), key=lambda i: float(jobs[i]["work"]) / float(jobs[i]["T_spot"]))
    for lo in range(0, len(jobs), per):
        group = order[lo:lo + per]
        sims = _CapacityGroup([jobs[i] for i in group], [policies[i] for i in group],
                              [float(thresholds[i]) for i in group], runs, stream).run()
        for i, sim in zip(group, sims):
            out[i] = sim
    return out


class _CapacityGroup:
    """The runs of a few jobs, flattened job by job, as :func:`simulate_capacity` steps them: one segment (or the
    rest of the last) per round. Each run carries its job's inputs (``self.job``): whether it is on spot capacity now
    (``spot``), its job's spot and on-demand interval and price, and for a fallback its threshold; a round is plain
    array operations, and the arrays shrink when runs end."""

    KEYS = ("T", "C", "price", "M", "P", "R", "Wc", "D", "cap", "save")

    def __init__(self, jobs: list[dict[str, float]], policies: list[str], thresholds: list[float], runs: int,
                 stream: _Stream):
        def col(key: str) -> np.ndarray:
            return np.array([float(j[key]) for j in jobs])

        g = len(jobs)
        self.g, self.runs = g, runs
        C = col("C")
        per_job = {"T": col("T_spot"), "C": C, "price": col("spot_price"), "M": col("M"), "P": col("P"),
                   "R": col("R"), "Wc": col("Wc"), "save": col("N") >= C,     # a save on notice keeps the work done
                   "D": np.array([float(j.get("D", 0.0)) for j in jobs]),  # the downtime after a failure (billed)
                   "cap": 50.0 * col("deadline") + 50.0 * col("work") * col("rho_od")}   # given up this late
        self.job = {k: np.repeat(per_job[k], runs) for k in self.KEYS}
        self.stream = stream
        self.drawn = np.zeros(g, dtype=np.int64)             # numbers each job has drawn
        self.gens: list[Any] = [None] * g                    # a job's own generator, once past the shared numbers
        self.count = np.full(g, runs)                        # runs still going, per job
        self.where = np.arange(g * runs)                     # each run's place in the output
        self.t, self.bill = np.zeros(g * runs), np.zeros(g * runs)
        self.left = np.repeat(col("work"), runs)
        self.wall, self.cost, self.rest = np.zeros(g * runs), np.zeros(g * runs), np.zeros(g * runs)
        per_job = {"T_od": [j["T_od"] for j in jobs], "od_price": [j["price"] for j in jobs],
                   "deadline": [j["deadline"] for j in jobs], "rho_od": [j["rho_od"] for j in jobs],
                   "threshold": thresholds, "fallback": [p == "fallback" for p in policies],
                   "spot": [p != "on-demand" for p in policies]}
        for k, v in per_job.items():
            self.job[k] = np.repeat(np.array(v, dtype=bool if k in ("fallback", "spot") else float), runs)
        self.hazard = [j["schedule"]["next_failure"] if "schedule" in j else None for j in jobs]
        self.timed = any(h is not None for h in self.hazard)
        if self.timed:                                       # each run's schedules, padded with windows at +inf
            self.job.update(_schedule_columns(jobs, runs))

    def draw(self, count: np.ndarray, M: np.ndarray, P: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(failure, preemption) times, from wall time ``t``, of runs grouped by job, ``count`` of each job in order:
        each job's generator draws its runs' failures, then their preemptions, as ``_draw`` does. A job whose failure
        rate changes turns its unit draws ``E`` into the next failure after ``t`` (its ``next_failure(t, E)``)."""
        n = int(count.sum())
        fail, pre = np.empty(n), np.empty(n)
        lo = 0
        for i in np.flatnonzero(count):
            m = int(count[i])
            u = self.numbers(i, 2 * m)
            fail[lo:lo + m], pre[lo:lo + m] = u[:m], u[m:]
            if self.timed:
                at = t[lo:lo + m]
                hz = self.hazard[i]
                fail[lo:lo + m] = u[:m] * M[lo:lo + m] if hz is None else hz(at, u[:m]) - at
            lo += m
        if not self.timed:
            fail *= M
        pre *= P
        return fail, pre

    def numbers(self, i: int, k: int) -> np.ndarray:
        """The next ``k`` numbers job ``i``'s generator draws."""
        start = int(self.drawn[i])
        self.drawn[i] += k
        u = self.stream.take(start, k)
        if u is not None:
            return u
        if self.gens[i] is None:
            self.gens[i] = self.stream.own()
        shared = self.stream.shared.size
        head = self.stream.shared[start:] if start < shared else np.zeros(0)
        return np.concatenate([head, self.gens[i].exponential(1.0, start + k - max(start, shared))])

    def run(self) -> list[dict[str, np.ndarray]]:
        while self.t.size:
            self.round()
        n = self.runs
        return [{"wall": self.wall[i * n:(i + 1) * n], "cost": self.cost[i * n:(i + 1) * n],
                 "finished": self.rest[i * n:(i + 1) * n] <= 1e-9} for i in range(self.g)]

    def round(self) -> None:
        """One round of :func:`simulate_capacity`'s loop over every run still going."""
        job = self.job
        spot = job["spot"]
        if job["fallback"].any():
            move = np.flatnonzero(job["fallback"] & spot & (job["deadline"] - self.t - self.left * job["rho_od"]
                                                           < job["threshold"]))
            spot[move] = False
            self.restart(move[self.t[move] > 0])            # moving: restore on on-demand capacity
        t, bill, left = self.t, self.bill, self.left
        if self.timed:                                      # the interval of the window the segment starts in
            T = self.windows(spot, t)
        else:
            T = np.where(spot, job["T"], job["T_od"])
        last = left <= T
        length = np.where(last, left, T + job["C"])
        fail, pre = self.draw(self.count, job["M"], job["P"], t)
        pre = np.where(spot, pre, np.inf)
        first = np.minimum(fail, pre)
        price = np.where(spot, job["price"], job["od_price"])
        ok = first >= length
        step = np.where(ok, length, first)
        t += step
        bill += step * price
        np.copyto(left, left - np.where(last, left, T), where=ok)
        by_pre = np.flatnonzero(~ok & (pre < fail))
        p = by_pre[job["save"][by_pre]]
        left[p] -= np.minimum(first[p], T[p])
        t[p] += job["C"][p]
        bill[p] += job["C"][p] * job["price"][p]
        t[by_pre] += job["Wc"][by_pre]
        down = np.flatnonzero(~ok & (pre >= fail))
        t[down] += job["D"][down]
        bill[down] += job["D"][down] * price[down]
        hit = np.flatnonzero(~ok)
        self.restart(hit[left[hit] > 0])
        self.settle()

    def windows(self, spot: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Each run's interval: its capacity's schedule at wall time ``t`` (one schedule looked up when all runs are
        on one capacity)."""
        job = self.job
        if spot.all():
            return _window(job["S_spot"], job["T_spot_by"], t)
        if not spot.any():
            return _window(job["S_od"], job["T_od_by"], t)
        return np.where(spot, _window(job["S_spot"], job["T_spot_by"], t), _window(job["S_od"], job["T_od_by"], t))

    def settle(self) -> None:
        """Record the runs that ended (finished, or given up at the cap) and drop them from the arrays."""
        active = (self.left > 1e-9) & (self.t < self.job["cap"])
        if not active.all():
            done = np.flatnonzero(~active)
            dst = self.where[done]
            self.wall[dst], self.cost[dst], self.rest[dst] = self.t[done], self.bill[done], self.left[done]
            self.count -= np.bincount(dst // self.runs, minlength=self.g)
            keep = np.flatnonzero(active)
            self.where = self.where[keep]
            self.t, self.bill, self.left = self.t[keep], self.bill[keep], self.left[keep]
            self.job = {k: v[keep] for k, v in self.job.items()}

    def restart(self, idx: np.ndarray) -> None:
        """``_restart`` of the runs at ``idx`` (in place), each on the capacity it is on now."""
        job, t, bill = self.job, self.t, self.bill
        while idx.size:
            count = np.bincount(self.where[idx] // self.runs, minlength=self.g)
            fail, pre = self.draw(count, job["M"][idx], job["P"][idx], t[idx])
            spot = job["spot"][idx]
            pre = np.where(spot, pre, np.inf)
            first = np.minimum(fail, pre)
            R = job["R"][idx]
            done = first >= R
            step = np.where(done, R, first)
            t[idx] += step
            bill[idx] += step * np.where(spot, job["price"][idx], job["od_price"][idx])
            waited = ~done & (pre < fail)
            t[idx[waited]] += job["Wc"][idx[waited]]
            gone = ~done & ~waited
            down = idx[gone]                                # a failure: the downtime before the next restart
            t[down] += job["D"][down]
            bill[down] += job["D"][down] * np.where(spot[gone], job["price"][down], job["od_price"][down])
            idx = idx[~done & (t[idx] < job["cap"][idx])]


def _schedule_columns(jobs: list[dict[str, Any]], runs: int) -> dict[str, np.ndarray]:
    """Each run's window starts and intervals on spot (``S_spot``, ``T_spot_by``) and on-demand (``S_od``,
    ``T_od_by``) capacity, runs x windows, padded with windows that start at +inf; a constant-rate job: one window."""
    cols = {"S_spot": [], "T_spot_by": [], "S_od": [], "T_od_by": []}
    for j in jobs:
        sc = j.get("schedule") or {"starts_spot": [0.0], "T_spot_by": [j["T_spot"]], "starts_od": [0.0],
                                   "T_od_by": [j["T_od"]]}
        for key, src in (("S_spot", "starts_spot"), ("T_spot_by", "T_spot_by"), ("S_od", "starts_od"),
                         ("T_od_by", "T_od_by")):
            cols[key].append(np.asarray(sc[src], dtype=float))
    K = max(len(a) for v in cols.values() for a in v)
    out = {}
    for key, v in cols.items():
        fill = np.inf if key.startswith("S_") else np.nan
        out[key] = np.repeat(np.array([np.concatenate([a, np.full(K - len(a), fill)]) for a in v]), runs, axis=0)
    return out


def _window(starts: np.ndarray, intervals: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Each run's interval of the window its wall time ``t`` is in (the last window starting at or before ``t``, as
    :func:`ckptplan.engine.phases_montecarlo.simulate_events` picks a segment's interval)."""
    out = intervals[:, 0]
    for k in range(1, starts.shape[1]):               # a few windows: one comparison each
        out = np.where(starts[:, k] <= t, intervals[:, k], out)
    return out
