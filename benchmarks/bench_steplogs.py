"""Reading and splitting a step-level job log of about 10^6 steps: rows per second, read and split separately.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_steplogs.py [--steps 1000000] [--repeat 3]

The log is generated first (``ckptplan.files.logs.synthetic_step_log``: 1 s steps, a save every
30 min with a 20 s blocking stall and a 60 s background write at 20 % slowdown, job MTBF 24 h,
restarts in six phases, seed 1) and written as CSV to a temporary directory (removed at the end).
Timed, best of ``--repeat``:

* read: ``read_log(path)``: the file's bytes, split into cells (pyarrow's CSV reader), every
  per-row check, the sequence check and the events table;
* split: ``engine.measured.measure_split(events)`` on that table (scipy already imported by a first
  untimed call, as in any session that has split a log before);
* the fit, ``engine.fitting.fit_events(events)``, for context (it reads the lifecycle rows only).

Rows per second count every row of the log (steps and the rest). Times are for this machine, one
process; they drift with other load on a shared box.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from _timing import best_of

from ckptplan.engine.fitting import fit_events
from ckptplan.engine.measured import measure_split
from ckptplan.files.logs import read_log, synthetic_step_log

__all__ = ["main"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000, help="running time in 1 s steps, less ~2 %% rework")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"pyarrow {pa.__version__}, {platform.machine()}")
    work = Path(tempfile.mkdtemp(prefix="ckptplan-bench-steplogs-"))
    try:
        t0 = time.perf_counter()
        log = synthetic_step_log(running_h=args.steps * 1.02 / 3600.0, mtbf_h=24.0, step_s=1.0,
                                 checkpoint_every_min=30.0, checkpoint_stall_s=20.0, async_write_s=60.0,
                                 async_slowdown_fraction=0.2, seed=1)
        t = time.perf_counter() - t0
        path = work / "steps.csv"
        log.to_csv(path, index=False)
        rows, size = len(log), path.stat().st_size
        counts = log["event"].value_counts()
        print(f"log: {rows:,} rows ({int(counts.get('step', 0)):,} steps, {int(counts.get('checkpoint_saved', 0))} "
              f"saves, {int(counts.get('interruption', 0))} interruptions), {size / 1e6:.1f} MB CSV; generated in "
              f"{t:.2f} s")
        del log
        events = read_log(path)
        measure_split(events)  # first call imports scipy (the MTBF bounds): not part of the timing
        t_read = best_of(lambda: read_log(path), args.repeat)
        t_split = best_of(lambda: measure_split(events), args.repeat)
        t_fit = best_of(lambda: fit_events(events, str(path)), args.repeat)
        split = measure_split(events)
        print("")
        print("| step | time (best of %d) | rows/s |" % args.repeat)
        print("| --- | ---: | ---: |")
        for name, sec in (("read_log (CSV -> validated events table)", t_read), ("measure_split", t_split),
                          ("read + split", t_read + t_split), ("fit_events (context)", t_fit)):
            print(f"| {name} | {sec:.3f} s | {rows / sec / 1e6:.2f} M |")
        m = split.measured
        print("")
        print(f"split: goodput {split.goodput:.4f}; C {m['checkpoint_stall_min'] * 60:.2f} s (20), W "
              f"{m['async_write_min'] * 60:.2f} s (60), s {m['async_slowdown_fraction']:.4f} (0.2), baseline step "
              f"{m['baseline_step_s']:.4f} s (1), job MTBF {m['job_mtbf_h']:.3g} h [{m['job_mtbf_h_low']:.3g}, "
              f"{m['job_mtbf_h_high']:.3g}] (24)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
