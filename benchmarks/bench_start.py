"""Start-up: how long a user waits for ``ckptplan --help``, ``plan`` and ``actual``, against importing numpy.

Each command runs as a whole new process, the commands interleaved A B C D A B C D ... so that the
machine's drift hits all of them alike; the medians and the ratios of medians are printed. The
reference is ``python -c "import numpy"`` (and ``import numpy, pandas``) measured in the same run.
``ckptplan actual LOG`` reads a small step-level log (``synthetic_step_log``: 6 h of 10 s steps, written
to a temporary directory first) against the seed plan; ``import numpy, pandas, scipy.stats`` is the
reference for what importing ``scipy.stats`` would add to it.

    python benchmarks/bench_start.py [--runs 15] [--tree OLD_CHECKOUT]

``--tree DIR`` also times ``python -m ckptplan --help`` / ``plan`` run from DIR, e.g. a checkout of
an older commit (``git worktree add /tmp/old REV``), whose top-level packages then shadow the
installed ones: the before/after comparison. ``python -X importtime -m ckptplan --help`` shows
where the remaining time goes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]


def _time(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "COLUMNS": "100"})
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", type=Path, help="an older checkout to time as well (python -m ckptplan from it)")
    args = parser.parse_args()
    py = sys.executable
    neutral = Path("/")  # the installed package, with no checkout on sys.path
    log = Path(tempfile.mkdtemp(prefix="ckptplan-bench-start-")) / "steps.csv"
    subprocess.run([py, "-c", "import sys; from ckptplan.files.logs import synthetic_step_log; synthetic_step_log("
                    "running_h=6.0, mtbf_h=3.0, step_s=10.0, checkpoint_every_min=30.0, checkpoint_stall_s=20.0, "
                    "seed=1).to_csv(sys.argv[1], index=False)", str(log)], cwd=neutral, check=True)
    commands = {
        "import numpy": ([py, "-c", "import numpy"], neutral),
        "import numpy, pandas": ([py, "-c", "import numpy, pandas"], neutral),
        "import ..., scipy.stats": ([py, "-c", "import numpy, pandas, scipy.stats"], neutral),
        "ckptplan --help": ([py, "-m", "ckptplan", "--help"], neutral),
        "ckptplan plan": ([py, "-m", "ckptplan", "plan"], neutral),
        "ckptplan actual LOG": ([py, "-m", "ckptplan", "actual", str(log)], neutral),
    }
    if args.tree:
        commands["old tree: ckptplan --help"] = ([py, "-m", "ckptplan", "--help"], args.tree.resolve())
        commands["old tree: ckptplan plan"] = ([py, "-m", "ckptplan", "plan"], args.tree.resolve())
    try:
        for cmd, cwd in commands.values():  # warm-up: file cache, .pyc files
            _time(cmd, cwd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (cmd, cwd) in commands.items():
                times[name].append(_time(cmd, cwd))
    finally:
        shutil.rmtree(log.parent)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"{args.runs} interleaved runs each, whole processes, wall seconds (median, min-max)")
    for name, ts in times.items():
        print(f"  {name:<28} {med[name]:.3f}  ({min(ts):.3f}-{max(ts):.3f})")
    numpy, both = med["import numpy"], med["import numpy, pandas"]
    print("ratios of medians")
    for name in commands:
        if name.startswith(("ckptplan", "old tree")):
            print(f"  {name:<28} / import numpy = {med[name] / numpy:.2f}   / import numpy, pandas = "
                  f"{med[name] / both:.2f}")


if __name__ == "__main__":
    main()
