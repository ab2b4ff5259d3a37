"""``ckptplan workbook`` for the seed template against ``ckptplan plan``: whole processes, then where the time goes.

    cd /tmp && python /path/to/checkout/benchmarks/bench_workbook_seed.py [--runs 5] [--parts 3]

1. Whole processes, interleaved (workbook, plan, workbook --no-deadline, workbook, ...), each run's
   CPU time (user + system, from ``os.wait4``'s resource usage) and wall time; min and median of
   each, and the ratios workbook / plan (the issue-25 target: 2x) and workbook --no-deadline / plan.
   The baseline is ``ckptplan plan`` itself: the target is stated against it. Both write their
   output to a temporary folder, which is also the working directory (a checkout in the working
   directory would shadow the interpreter's ``ckptplan``).
   ``--bytecode``: the children keep their compiled bytecode in a temporary folder (``PYTHONPYCACHEPREFIX``, the
   warm-up writes it), as an installed package does; without it they inherit the environment (with
   ``PYTHONDONTWRITEBYTECODE`` set, every module of a checkout is compiled from source at each start, which
   costs the workbook command, importing more of the package, more than ``plan``).
2. ``--parts N``: N in-process runs of the same workbook command with wall-clock wrappers around
   the named parts (the Monte Carlo at the chosen interval and its search, ``build_workbook``, the
   formula evaluator ``workbook.evaluate.cached_values``, the save), each as a share of the time
   from the first import.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "parts", "whole_process"]

_PARTS = '''
import sys, time
t_start = time.perf_counter()
import ckptplan.cli as cli
import ckptplan.engine.deadline as ed
import ckptplan.workbook.build as wb
spent = {}
def wrap(mod, name, key):
    fn = getattr(mod, name)
    def timed(*a, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - t0
    setattr(mod, name, timed)
wrap(ed, "deadline_report", "Monte Carlo at the chosen interval (deadline_report)")
wrap(ed, "deadline_search", "Monte Carlo search over intervals (deadline_search)")
wrap(wb, "build_workbook", "build_workbook")
wrap(wb, "cached_values", "formula evaluator (cached_values)")  # the name build.save calls
wrap(wb, "save", "save, evaluator included")
t_cmd = time.perf_counter()
sys.argv = ["ckptplan", "workbook", "-o", sys.argv[1], "--force"]
try:
    cli.main()
except SystemExit:
    pass
total = time.perf_counter() - t_start
print(f"PARTS total {total:.3f} before-command {t_cmd - t_start:.3f}")
for k, v in spent.items():
    print(f"PARTS {k}\\t{v:.3f}")
'''


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one whole process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def whole_process(runs: int, tmp: Path, bytecode: bool = False) -> dict[str, list[tuple[float, float]]]:
    """Interleaved whole-process runs of the three commands (one warm-up each, not counted)."""
    env = None
    if bytecode:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    py = [sys.executable, "-m", "ckptplan"]
    cmds = {"workbook": py + ["workbook", "-o", str(tmp / "a.xlsx"), "--force"],
            "plan": py + ["plan"],
            "workbook --no-deadline": py + ["workbook", "--no-deadline", "-o", str(tmp / "b.xlsx"), "--force"]}
    for cmd in cmds.values():
        _run(cmd, tmp, env)
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(runs):
        for k, cmd in cmds.items():
            out[k].append(_run(cmd, tmp, env))
    return out


def parts(n: int, tmp: Path) -> None:
    """Print the named parts' wall time of ``n`` in-process workbook runs."""
    for i in range(n):
        res = subprocess.run([sys.executable, "-c", _PARTS, str(tmp / "p.xlsx")], cwd=tmp, capture_output=True,
                             text=True, check=True)
        lines = [ln[6:] for ln in res.stdout.splitlines() if ln.startswith("PARTS ")]
        total = float(lines[0].split()[1])
        print(f"run {i + 1}: {lines[0]} s")
        for ln in lines[1:]:
            name, sec = ln.split("\t")
            print(f"  {name:55s} {float(sec):6.2f} s  {float(sec) / total:4.0%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--parts", type=int, default=0, metavar="N")
    ap.add_argument("--bytecode", action="store_true", help="children keep compiled bytecode (as installed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        res = whole_process(args.runs, tmp, args.bytecode)
        print(f"whole processes, {args.runs} interleaved runs each{', bytecode kept' if args.bytecode else ''}: "
              "CPU s min / median, wall s min / median")
        for k, v in res.items():
            cpu, wall = [c for c, _ in v], [w for _, w in v]
            print(f"  {k:24s} cpu {min(cpu):6.2f} {statistics.median(cpu):6.2f}   "
                  f"wall {min(wall):6.2f} {statistics.median(wall):6.2f}")
        for k in ("workbook", "workbook --no-deadline"):
            pairs = [a[0] / b[0] for a, b in zip(res[k], res["plan"])]
            wpairs = [a[1] / b[1] for a, b in zip(res[k], res["plan"])]
            print(f"  {k} / plan: CPU {statistics.median(pairs):.2f}x (pairs {min(pairs):.2f}-{max(pairs):.2f}), "
                  f"wall {statistics.median(wpairs):.2f}x (pairs {min(wpairs):.2f}-{max(wpairs):.2f})")
        if args.parts:
            parts(args.parts, tmp)


if __name__ == "__main__":
    main()
