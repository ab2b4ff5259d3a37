"""Failure phases and preemptible capacity, measured side by side in one run.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_phases.py [--rows 100000] [--parts 123456]

1. Per-phase optimum intervals (the schedule's starting point, each phase's exact optimum
   ``M_j (1 + W0(-exp(-1 - C/M_j)))``) for ``--rows`` scenarios of three phases, vectorised through
   the engine, against a per-row loop that solves ``(1 - x) exp(x + c) = 1`` by bisection with ``math``
   (``schedule_reference.x_bisect`` beside this script, not the engine's series and Newton steps); the answers are
   compared.
2. The exact polished schedule (``engine.phases.optimal_schedule``), per row: seconds per scenario
   (it is not vectorised across scenarios: a Nelder-Mead search per row).
3. The preemption optimum (``engine.preemption.preemption_optimal_interval``, vectorised golden-section
   search) for ``--rows`` scenarios, against a per-row loop of ``scipy.optimize.minimize_scalar`` on a
   renewal-reward ratio written here from the model's definition; the answers are compared.
4. The spot/on-demand/fallback Monte Carlo (``engine.spot.simulate_capacity``): simulated runs per second.
5. The Weibull schedule (``engine.weibull_schedule.optimal_weibull_schedule``: windows, a scale search and the
   best single interval, each on the piecewise-grid expectation), per row: seconds per scenario.
6. The expected wall time of a Weibull schedule (``engine.weibull_schedule.weibull_expectation``) against a
   per-row event-by-event Monte Carlo written here (power-law failures drawn by inverting ``(t/eta)^k``, no
   engine code) run until its standard error is 1e-4 of the wall time (the grid's stated tolerance): seconds
   per scenario for each, and their difference in standard errors.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _timing import best_of
from schedule_reference import x_bisect

from ckptplan.engine import phases, preemption, spot, waste, weibull_schedule


def _rho(T: float, C: float, M: float, R: float, P: float, N: float, Wc: float) -> float:
    """Wall time per unit of work on preemptible capacity, by renewal-reward over one cycle, written from the
    definitions with numerical integration (scipy.integrate.quad), not the engine's closed forms."""
    from scipy.integrate import quad

    lam, pi = 1 / M, 1 / P
    th = lam + pi
    S = T + C
    q = math.exp(-th * S)
    keep = N >= C
    Rr = (math.exp(th * R) - 1) * (1 / th + pi / th * Wc)
    pf, pp = lam / th * (1 - q), pi / th * (1 - q)
    e = q + (pp if keep else 0)
    time = (quad(lambda y: th * math.exp(-th * y) * y, 0, S)[0] + S * q + pf * Rr + pp * ((C if keep else 0) + Wc + Rr)) / e
    work = (q * T + (pi * quad(lambda y: min(y, T) * math.exp(-th * y), 0, S, points=[T])[0] if keep else 0)) / e
    return time / work


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--loop-rows", type=int, default=2_000, help="rows for the per-row loops")
    ap.add_argument("--schedule-rows", type=int, default=5, help="rows for the exact polished schedule")
    ap.add_argument("--runs", type=int, default=4_000, help="Monte Carlo runs")
    ap.add_argument("--parts", default="123456", help="which of the measurements to run, e.g. 56")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    n, k = args.rows, 3
    C = rng.uniform(0.5, 10, n)
    M = rng.uniform(300, 6000, n)
    F = rng.uniform(0.3, 5, (n, k))

    if "1" in args.parts:
        _per_phase(args, C, M, F, n, k)
    if "2" in args.parts:
        _schedule(args, C, M, F)
    if "3" in args.parts:
        _preemption(args, rng, C, M, n)
    if "4" in args.parts:
        _spot(args)
    if "5" in args.parts or "6" in args.parts:
        _weibull(args, rng)


def _per_phase(args, C, M, F, n, k) -> None:
    def per_phase(c, m):   # the engine's kernel behind phases.per_phase_optima, on whole columns
        return waste.exact_optimal_interval_kernel(c, m, np.zeros_like(c), np.zeros_like(c))

    t_vec = best_of(lambda: np.column_stack([per_phase(C, M / F[:, j]) for j in range(k)]))
    vec = np.column_stack([per_phase(C, M / F[:, j]) for j in range(k)])
    m = min(args.loop_rows, n)

    def loop():
        return [[(M[i] / F[i, j]) * x_bisect(C[i] * F[i, j] / M[i]) for j in range(k)] for i in range(m)]

    t_loop = best_of(loop, repeat=1) * n / m
    err = np.max(np.abs(np.array(loop()) - vec[:m]) / vec[:m])
    print(f"1. per-phase optima, {n:,} scenarios x {k} phases: vectorised {n / t_vec:,.0f} scenarios/s, "
          f"per-row loop {n / t_loop:,.0f} scenarios/s (scaled from {m:,}): ratio {t_loop / t_vec:,.0f}x; "
          f"largest relative difference {err:.1e}")


def _schedule(args, C, M, F) -> None:
    s = args.schedule_rows
    t_sched = best_of(lambda: [phases.optimal_schedule(200 * 60.0, C[i], M[i], 10.0, [0.0, 4320.0, 20000.0],
                                                       list(F[i])) for i in range(s)], repeat=1) / s
    print(f"2. exact polished schedule (3 phases, 200 h job): {t_sched:.2f} s per scenario (not vectorised)")


def _preemption(args, rng, C, M, n) -> None:
    R = rng.uniform(0, 30, n)
    P = rng.uniform(60, 3000, n)
    N = rng.choice([0.5, 2.0], n)
    Wc = rng.uniform(0, 60, n)
    t_pv = best_of(lambda: preemption.preemption_optimal_interval(C, M, R, P, N, Wc))
    pv = preemption.preemption_optimal_interval(C, M, R, P, N, Wc)
    from scipy.optimize import minimize_scalar

    mm = min(args.loop_rows // 4, n)

    def ploop():
        return [math.exp(minimize_scalar(lambda lt, i=i: _rho(math.exp(lt), C[i], M[i], R[i], P[i], N[i], Wc[i]),
                                         bounds=(math.log(pv[i] / 20), math.log(pv[i] * 20)), method="bounded",
                                         options={"xatol": 1e-7}).x) for i in range(mm)]

    t_pl = best_of(ploop, repeat=1) * n / mm
    perr = np.max(np.abs(np.array(ploop()) - pv[:mm]) / pv[:mm])
    print(f"3. preemption optimum, {n:,} scenarios: vectorised {n / t_pv:,.0f} scenarios/s, per-row scipy loop "
          f"{n / t_pl:,.0f} scenarios/s (scaled from {mm:,}): ratio {t_pl / t_pv:,.0f}x; largest relative "
          f"difference {perr:.1e}")


def _spot(args) -> None:
    job = spot.capacity_job(720 * 60.0, 2.0, 1200.0, 10.0, 1200.0, 2.0, 30.0, 800 * 60.0, 2.5, 1.0, 1024)
    for policy in ("on-demand", "spot", "fallback"):
        t_mc = best_of(lambda: spot.simulate_capacity(job, policy, 1170.0, runs=args.runs, seed=0), repeat=2)
        print(f"4. spot Monte Carlo ({policy}, seed scenario, 720 h job): {args.runs / t_mc:,.0f} runs/s")


def _mc_weibull(work, starts, Ts, C, M, R, k, runs, rng):
    """Wall times of ``runs`` jobs, event by event, vectorised over runs (written here, not the engine's)."""
    eta = M / math.gamma(1 + 1 / k)
    t, left, wall = np.zeros(runs), np.full(runs, work), np.full(runs, np.nan)
    origin, share, T = np.zeros(runs), np.ones(runs), np.zeros(runs)
    last = np.zeros(runs, dtype=bool)
    live = np.arange(runs)
    while live.size:
        new = live[~last[live]]
        T[new] = Ts[np.searchsorted(starts, t[new], side="right") - 1]
        fin = new[left[new] <= T[new]]
        last[fin], origin[fin], share[fin] = True, t[fin], left[fin] / T[fin]
        fail = eta * ((t[live] / eta) ** k + rng.standard_exponential(live.size)) ** (1 / k)
        end = t[live] + T[live] + C
        ok = fail >= end
        t[live[ok]] = end[ok]
        left[live[ok & ~last[live]]] -= T[live[ok & ~last[live]]]
        done = live[ok & last[live]]
        wall[done] = origin[done] + share[done] * (t[done] - origin[done])
        hit = live[~ok]
        t[hit] = fail[~ok]
        while hit.size:
            again = eta * ((t[hit] / eta) ** k + rng.standard_exponential(hit.size)) ** (1 / k)
            up = again >= t[hit] + R
            t[hit[up]] += R
            t[hit[~up]] = again[~up]
            hit = hit[~up]
        live = live[np.isnan(wall[live])]
    return wall


def _weibull(args, rng) -> None:
    s = args.schedule_rows
    cases = [(rng.uniform(24, 200) * 60.0, rng.uniform(1, 8), rng.uniform(200, 2000), rng.uniform(2, 20),
              rng.uniform(0.5, 0.9)) for _ in range(s)]
    t_plan = best_of(lambda: [weibull_schedule.optimal_weibull_schedule(*c) for c in cases], repeat=1) / s
    print(f"5. Weibull schedule (windows, scale search, best single interval): {t_plan:.2f} s per scenario "
          f"(not vectorised)")
    plans = [weibull_schedule.optimal_weibull_schedule(*c) for c in cases]
    t_exp = best_of(lambda: [weibull_schedule.weibull_expectation(*c[:1], p["starts"], p["intervals"], *c[1:])
                             for c, p in zip(cases, plans)], repeat=1) / s
    t_mc, gaps = 0.0, []
    for c, p in zip(cases, plans):
        work, C, M, R, k = c
        import time

        t0, walls = time.perf_counter(), []
        exact = p["schedule"]["total"]
        while True:   # batches of 20,000 runs until the standard error reaches 1e-4 of the wall time
            walls.append(_mc_weibull(work, p["starts"], p["intervals"], C, M, R, k, 20_000, rng))
            w = np.concatenate(walls)
            se = w.std(ddof=1) / math.sqrt(w.size)
            if se <= 1e-4 * exact or w.size >= 2_000_000:
                break
        t_mc += time.perf_counter() - t0
        gaps.append((w.mean() - exact) / se)
    print(f"6. Weibull schedule's expected wall time: engine {t_exp:.2f} s per scenario, per-row Monte Carlo to a "
          f"standard error of 1e-4 {t_mc / s:.2f} s per scenario: ratio {t_mc / s / t_exp:,.1f}x; engine minus "
          f"Monte Carlo in standard errors: {', '.join(f'{-g:+.2f}' for g in gaps)}")


if __name__ == "__main__":
    main()
