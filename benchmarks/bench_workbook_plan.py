"""The storage template's workbook: whole-command time against an earlier checkout, and the plan passes it runs.

    python benchmarks/bench_workbook_plan.py --before-python /path/to/old/checkout/venv/bin/python [--runs 5]
        [--command workbook|plan] [--passes-only]

1. ``ckptplan workbook -t llama3-405b-storage`` (the command a planner runs, Deadline Monte Carlo included;
   ``--command plan``: ``ckptplan plan -t llama3-405b-storage``) timed as a whole process with this
   checkout's Python and with ``--before-python`` (an interpreter whose ``ckptplan`` is the earlier
   checkout, e.g. a virtualenv with ``pip install -e`` of it), runs interleaved so both sides share the
   machine's load; prints min and median seconds and the ratio.
2. The plan passes one workbook runs in this checkout, counted from a profile of ``workbook.build_workbook``
   of the template with its designs: calls of the engine's entry points ``plan_setup`` (one scenario),
   ``plan_setups`` (several in one pass), ``evaluate`` and ``validate_table``. Both sides write the same
   template to a temporary folder; nothing of either is imported into the other.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEMPLATE = "llama3-405b-storage"


def _command(python: str, out: Path, command: str = "workbook") -> list[str]:
    args = ["workbook", "-t", TEMPLATE, "-o", str(out), "--force"] if command == "workbook" else ["plan", "-t", TEMPLATE]
    code = f"import sys\nfrom ckptplan.cli import main\nsys.argv = ['ckptplan'] + {args!r}\nmain()\n"
    return [python, "-c", code]


def _time(python: str, out: Path, command: str = "workbook") -> float:
    t0 = time.perf_counter()
    # run in the output folder: a checkout in the working directory would shadow the interpreter's ckptplan
    subprocess.run(_command(python, out, command), check=True, capture_output=True, cwd=out.parent)
    return time.perf_counter() - t0


def count_passes() -> dict[str, int]:
    """Calls of the engine's plan entry points while this checkout builds the template's workbook (read from
    a profile of the build, so calls through names imported elsewhere count too)."""
    import cProfile
    import pstats

    from ckptplan import files, workbook

    plan = files.load_plan(TEMPLATE)
    prof = cProfile.Profile()
    prof.runcall(workbook.build_workbook, plan.scenario, setup=plan.setup, designs=plan.designs)
    counts = {"plan_setup": 0, "plan_setups": 0, "evaluate": 0, "validate_table": 0}
    for (path, _, func), (_, calls, *_rest) in pstats.Stats(prof).stats.items():
        if func in counts and "/engine/" in path.replace("\\", "/"):
            counts[func] += calls
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before-python", default=None, help="Python whose ckptplan is the earlier checkout")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--command", choices=("workbook", "plan"), default="workbook")
    ap.add_argument("--passes-only", action="store_true", help="only count this checkout's plan passes")
    args = ap.parse_args()
    if args.passes_only:
        print("plan passes in one build_workbook of the template with its designs (this checkout): "
              + ", ".join(f"{k} {v}" for k, v in count_passes().items()))
        return
    if not args.before_python:
        ap.error("--before-python is needed to time the command (or give --passes-only)")
    now, before = {"now": [], "before": []}, None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):   # interleaved: the two sides see the same neighbours
            now["before"].append(_time(args.before_python, Path(tmp) / "before.xlsx", args.command))
            now["now"].append(_time(sys.executable, Path(tmp) / "now.xlsx", args.command))
    before = now.pop("before")
    after = now["now"]
    print(f"ckptplan {args.command} -t {TEMPLATE}, {args.runs} interleaved runs each (whole process, seconds):")
    print(f"  before: min {min(before):.2f}  median {statistics.median(before):.2f}")
    print(f"  now:    min {min(after):.2f}  median {statistics.median(after):.2f}")
    print(f"  ratio now / before: {min(after) / min(before):.2f} (min), "
          f"{statistics.median(after) / statistics.median(before):.2f} (median)")
    counts = count_passes()
    print("plan passes in one build_workbook of the template with its designs (this checkout): "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
