"""Monte Carlo that scales: today's samplers against the one they replace, side by side in one run.

Job: 30 days of useful compute (work = 720 h = 43,200 min) at a job MTBF of 3 h (M = 180 min),
C = 2 min, R = 10 min, T = the exact long-run optimum (25.5 min, 1,694 segments), exponential
failures, no final save: about 300 failures per run.

* ``per_window``: :func:`engine.montecarlo.simulate`'s default for exponential failures (counts of
  failed attempts per class of windows, a truncated exponential per failure, in blocks of runs);
* ``per_failure``: ``simulate(..., method="per_failure")`` (every gap drawn, chunks of gaps and
  blocks of runs at once; what :func:`engine.deadline.deadline_search` uses);
* ``old``: the simulator these replace, copied below unchanged in substance (one numpy loop step per
  failure over all runs, failure histories stored in memory up to 1 GiB).

It prints: the time of 10^5 runs for each (best of ``--repeat``) and the ratios; agreement (the
per-failure sampler against :func:`engine.montecarlo.reference_simulation` run by run, the
per-window one against the per-failure one in distribution, both against the exact mean); the
peak memory (``ru_maxrss``) of a fresh process simulating 10^6 runs with each new sampler, beside
that of a process that only imports the simulator; with ``--before-rev REV`` the wall time of
``ckptplan workbook -t llama3-405b`` with this tree against the same tree whose Monte Carlo files
(``CHANGED``) are taken from git revision ``REV``, whole processes interleaved.

    OMP_NUM_THREADS=1 python benchmarks/bench_montecarlo.py [--runs 100000] [--before-rev REV]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from ckptplan import engine  # noqa: E402
from ckptplan.engine import finite as fin  # noqa: E402
from ckptplan.engine import montecarlo as mc  # noqa: E402

__all__ = ["main", "old_simulate"]

REPO = Path(__file__).resolve().parents[1]
WORK, C, M, R = 720.0 * 60.0, 2.0, 180.0, 10.0
# the files of the Monte Carlo change: taken from --before-rev for the "before" tree (new ones removed)
CHANGED = ("engine/montecarlo.py", "engine/deadline.py", "engine/finite.py", "workbook/deadline_sheet.py")
NEW = ("engine/gaps.py", "engine/montecarlo_fast.py")
# where each folder installs (pyproject's package-dir)
PACKAGE_DIRS = {"ckptplan": "ckptplan", "engine": "ckptplan/engine", "workbook": "ckptplan/workbook",
                "templates": "ckptplan/templates", "files": "ckptplan/files", "instruments": "ckptplan/instruments"}


# --------------------------------------------------------------- the simulator being replaced

_OLD_BLOCK = 16
_OLD_MAX_GAP_BYTES = 2**30


class _OldGapStream:
    """The old failure histories: (16, runs) blocks of gaps, kept for the whole simulation."""

    def __init__(self, M: float, runs: int, seed: int):
        self.M, self.runs, self.seed, self.blocks = M, runs, seed, []

    def _block(self, b: int) -> np.ndarray:
        if (b + 1) * _OLD_BLOCK * self.runs * 8 > _OLD_MAX_GAP_BYTES:
            raise MemoryError(f"a run reached {b * _OLD_BLOCK} failures: the stored failure histories would "
                              "take more than 1 GiB (the old simulator refuses)")
        while len(self.blocks) <= b:
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(len(self.blocks),)))
            self.blocks.append(rng.exponential(self.M, (_OLD_BLOCK, self.runs)))
        return self.blocks[b]

    def take(self, ids: np.ndarray, j: np.ndarray) -> np.ndarray:
        if ids.size == 0:
            return np.empty(0)
        b = j // _OLD_BLOCK
        lo, hi = int(b.min()), int(b.max())
        if lo == hi:
            return self._block(lo)[j - lo * _OLD_BLOCK, ids]
        out = np.empty(ids.size)
        for bb in range(lo, hi + 1):
            m = b == bb
            out[m] = self._block(bb)[j[m] - bb * _OLD_BLOCK, ids[m]]
        return out


def old_simulate(work, T, C, M, R, runs, seed, W=0.0, s=0.0, final_save=False):
    """The replaced ``simulate`` (exponential failures): wall times and failure counts per run."""
    g = {key: float(v) for key, v in fin.job_geometry(*np.broadcast_arrays(work, T, C, W, s), final_save).items()}
    stream = _OldGapStream(M, runs, seed)
    last = int(g["last"])
    fc, ff, lc, lf = g["full_clean"], g["full_flow"], g["last_clean"], g["last_flow"]
    wall = np.empty(runs)
    n_fail = np.empty(runs, dtype=np.int64)
    ids = np.arange(runs)
    k = np.zeros(runs, dtype=np.int64)
    clean = np.ones(runs, dtype=bool)
    t = np.zeros(runs)
    j = np.zeros(runs, dtype=np.int64)
    clock = stream.take(ids, j)
    fails = np.zeros(runs, dtype=np.int64)
    while ids.size:
        at_end = k == last
        w = np.where(at_end, np.where(clean, lc, lf), np.where(clean, fc, ff))
        ok = clock > w
        t += np.where(ok, w, 0.0)
        clock -= np.where(ok, w, 0.0)
        done = ok & at_end
        adv = ok & ~at_end
        k += adv
        clean &= ~adv
        if last > 1:
            room = np.where(adv, last - k, 0)
            hops = np.minimum(np.maximum(np.ceil(clock / ff) - 1.0, 0.0), room).astype(np.int64)
            t += hops * ff
            clock -= hops * ff
            k += hops
        if done.any():
            fin_ = ids[done]
            wall[fin_], n_fail[fin_] = t[done], fails[done]
            keep = ~done
            ids, k, clean, t, j, clock, fails = ids[keep], k[keep], clean[keep], t[keep], j[keep], clock[keep], fails[keep]
        if not ids.size:
            break
        at_end = k == last
        w = np.where(at_end, np.where(clean, lc, lf), np.where(clean, fc, ff))
        hit = np.flatnonzero(clock <= w)
        if hit.size:
            t[hit] += clock[hit]
            fails[hit] += 1
            j[hit] += 1
            gap = stream.take(ids[hit], j[hit])
            short = gap <= R
            while short.any():
                s_idx = hit[short]
                t[s_idx] += gap[short]
                fails[s_idx] += 1
                j[s_idx] += 1
                gap[short] = stream.take(ids[s_idx], j[s_idx])
                short = gap <= R
            t[hit] += R
            clock[hit] = gap - R
            clean[hit] = True
    return wall, n_fail


# ------------------------------------------------------------------------------- helpers

def _best_of(repeat: int, fn):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, result


def _peak_of(code: str) -> tuple[float, float, float, str]:
    """(peak RSS MB: VmHWM, ru_maxrss; wall s; stdout) of a fresh python process running ``code``.

    ``VmHWM`` (/proc/self/status) is the process's own high-water mark. ``ru_maxrss`` also counts the
    parent's resident size at the fork (Linux keeps it across exec), which is why the memory
    processes run first, while this benchmark is still small.
    """
    probe = code + ("\nimport resource\nhwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]"
                    "\nprint('PEAK', hwm[0] if hwm else -1, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd="/")
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    hwm_kb, maxrss_kb = (int(v) for v in next(ln.split()[1:] for ln in out.stdout.splitlines() if ln.startswith("PEAK")))
    return hwm_kb / 1024.0, maxrss_kb / 1024.0, wall, out.stdout


def _site(root: Path, rev: str | None) -> Path:
    """An installed-layout copy of this tree under ``root``; with ``rev``, ``CHANGED`` from git ``rev``."""
    site = root / ("before" if rev else "after")
    for folder, dest in PACKAGE_DIRS.items():
        shutil.copytree(REPO / folder, site / dest, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    if rev:
        for name in NEW:
            folder, base = name.split("/")
            (site / PACKAGE_DIRS[folder] / base).unlink(missing_ok=True)
        for name in CHANGED:
            folder, base = name.split("/")
            text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{name}"], capture_output=True, text=True,
                                  check=True).stdout
            (site / PACKAGE_DIRS[folder] / base).write_text(text, encoding="utf-8")
    return site


def _workbook(site: Path, out: Path) -> tuple[float, float]:
    """(wall s, CPU s) of ``ckptplan workbook -t llama3-405b`` run from ``site``."""
    code = (f"import sys\nsys.path.insert(0, {str(site)!r})\nsys.argv = ['ckptplan', 'workbook', '-t', 'llama3-405b', "
            f"'-o', {str(out)!r}, '--force']\nfrom ckptplan.cli import main\nmain()\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, env={**os.environ, "COLUMNS": "100"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# ---------------------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000, help="runs for the timed simulations")
    ap.add_argument("--repeat", type=int, default=3, help="timings per sampler (best is reported)")
    ap.add_argument("--check-runs", type=int, default=2_000, help="runs for the run-by-run check")
    ap.add_argument("--million", type=int, default=1_000_000, help="runs for the peak-memory processes (0: skip)")
    ap.add_argument("--old-million", action="store_true", help="also run the old simulator on --million runs "
                    "(it refuses after its 1 GiB of stored histories, ~1.4 GB peak)")
    ap.add_argument("--before-rev", help="git revision whose CHANGED files make the 'before' workbook tree")
    ap.add_argument("--workbook-repeat", type=int, default=3, help="interleaved runs of each workbook command")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    T = float(engine.exact_optimal_interval(C, M))
    exact = float(fin.finite_expected_wall_time(WORK, T, C, M, R))
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, load {os.getloadavg()[0]:.2f}")
    print(f"job: work {WORK:g} min, T {T:.2f} min ({int(fin.segment_count(WORK, T))} segments), C {C:g}, M {M:g}, "
          f"R {R:g} min, exponential failures; exact mean wall {exact:.1f} min")

    # 1. 10^6 runs: peak memory of fresh processes (first, while this process is small)
    if args.million:
        base, base_rss, _, _ = _peak_of("import ckptplan.engine.montecarlo")
        print(f"{args.million:,} runs in a fresh process (peak RSS: VmHWM / ru_maxrss; a process that only imports "
              f"the simulator: {base:.0f} / {base_rss:.0f} MB):")
        for method in ("per_window", "per_failure"):
            code = (f"from ckptplan.engine import montecarlo as mc\nsim = mc.simulate({WORK}, {T!r}, {C}, {M}, {R}, "
                    f"runs={args.million}, seed={args.seed}, method={method!r})\nprint('MEAN', sim.mean(), sim.standard_error())")
            peak, peak_rss, wall, out = _peak_of(code)
            mean, se = (float(v) for v in next(ln.split()[1:] for ln in out.splitlines() if ln.startswith("MEAN")))
            print(f"  {method:<12} peak {peak:6.0f} / {peak_rss:6.0f} MB, {wall:6.1f} s (process), "
                  f"mean wall {mean:.1f} min ({(mean - exact) / se:+.2f} SE from exact)")
        if args.old_million:
            code = (f"import sys\nsys.path.insert(0, {str(REPO / 'benchmarks')!r})\nimport bench_montecarlo as b\n"
                    f"try:\n    b.old_simulate({WORK}, {T!r}, {C}, {M}, {R}, {args.million}, {args.seed})\n"
                    "    print('old: completed')\nexcept MemoryError as e:\n    print('old:', e)\n")
            peak, peak_rss, wall, out = _peak_of(code)
            print(f"  {'old':<12} peak {peak:6.0f} / {peak_rss:6.0f} MB, {wall:6.1f} s (process): "
                  f"{next(line for line in out.splitlines() if line.startswith('old'))}")

    # 2. agreement
    n = args.check_runs
    pf = mc.simulate(WORK, T, C, M, R, runs=n, seed=args.seed, method="per_failure")
    ref = mc.reference_simulation(WORK, T, C, M, R, runs=n, seed=args.seed)
    worst = float(np.max(np.abs(pf.wall - ref.wall) / ref.wall))
    print(f"per_failure vs reference_simulation, {n:,} runs run by run: max relative wall difference {worst:.1e}, "
          f"failure counts identical: {bool(np.array_equal(pf.failures, ref.failures))}")
    pvalues = []
    for s in range(4):
        a = mc.simulate_wall_times(WORK, T, C, M, R, runs=20_000, seed=args.seed + s, method="per_window")
        b = mc.simulate_wall_times(WORK, T, C, M, R, runs=20_000, seed=args.seed + 100 + s, method="per_failure")
        pvalues.append(stats.ks_2samp(a, b).pvalue)
    print("per_window vs per_failure, 4 seeds x 20,000 runs: KS p-values " + ", ".join(f"{p:.2f}" for p in pvalues))

    # 3. speed on 10^5 runs
    runs = args.runs
    t_old, all_old, (w_old, _) = _best_of(args.repeat, lambda: old_simulate(WORK, T, C, M, R, runs, args.seed))
    t_win, all_win, win = _best_of(args.repeat, lambda: mc.simulate(WORK, T, C, M, R, runs=runs, seed=args.seed))
    t_pf, all_pf, pfs = _best_of(args.repeat, lambda: mc.simulate(WORK, T, C, M, R, runs=runs, seed=args.seed,
                                                                  method="per_failure"))
    print(f"{runs:,} runs, best of {args.repeat} (all):")
    for name, best, every, wall in (("old simulate", t_old, all_old, w_old), ("per_window (default)", t_win, all_win,
                                    win.wall), ("per_failure", t_pf, all_pf, pfs.wall)):
        z = (wall.mean() - exact) / mc.standard_error(wall)
        print(f"  {name:<22} {best:7.3f} s  ({', '.join(f'{t:.3f}' for t in every)})  mean {wall.mean():.1f} min, "
              f"{z:+.2f} SE from exact")
    print(f"ratios: old / per_window = {t_old / t_win:.1f}x, old / per_failure = {t_old / t_pf:.1f}x "
          f"(mean failures per run {win.failures.mean():.1f})")

    # 4. the llama3-405b workbook, before and after
    if args.before_rev:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            sites = {"before": _site(root, args.before_rev), "after": _site(root, None)}
            for site in sites.values():
                _workbook(site, root / "warm.xlsx")          # .pyc files, file cache
            times = {name: [] for name in sites}
            for _ in range(args.workbook_repeat):
                for name, site in sites.items():
                    times[name].append(_workbook(site, root / f"{name}.xlsx"))
        med = {name: (statistics.median(w for w, _ in ts), statistics.median(c for _, c in ts))
               for name, ts in times.items()}
        print(f"ckptplan workbook -t llama3-405b, {args.workbook_repeat} interleaved runs each (median wall / CPU s; "
              f"'before' = this tree with {', '.join(CHANGED)} from {args.before_rev}):")
        for name, ts in times.items():
            print(f"  {name:<7} {med[name][0]:6.2f} s wall ({', '.join(f'{w:.2f}' for w, _ in ts)}), "
                  f"{med[name][1]:6.2f} s CPU")
        print(f"ratio before / after: {med['before'][0] / med['after'][0]:.1f}x wall, "
              f"{med['before'][1] / med['after'][1]:.1f}x CPU")


if __name__ == "__main__":
    main()
