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

Baselines, independent of the reader (peer libraries on the same file, calls interleaved with
``read_log``, min and median of ``--repeat`` each):

* ``pandas.read_csv`` + timestamp parsing: ``pd.read_csv(path)`` (the C parser; numbers inferred) and
  ``pd.to_datetime(..., format="ISO8601", utc=True)`` on the timestamp column: what a pandas user
  does to get the same columns, with no checks at all;
* ``pyarrow.csv.read_csv`` with the timestamp column typed ``timestamp[us, UTC]`` (Arrow parses the
  ISO 8601 text itself; two threads where the machine has them), to an Arrow table.

Before timing, each baseline's timestamps, step numbers and stalls are checked equal to
``read_log``'s (timestamps exactly, to the microsecond; numbers exactly, NaN where empty), and its
event names equal read_log's after lower-casing, so the ratio compares the same columns.
``--profile N`` prints the top ``N`` entries (own time) of a cProfile of one ``read_log``.

Rows per second count every row of the log (steps and the rest). Times are for this machine, one
process; they drift with other load on a shared box.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
import statistics
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
from _timing import best_of

from ckptplan.engine.fitting import fit_events
from ckptplan.engine.measured import measure_split
from ckptplan.files.logs import read_log, synthetic_step_log

__all__ = ["arrow_baseline", "main", "pandas_baseline"]


def pandas_baseline(path: Path) -> pd.DataFrame:
    """The log as a pandas user reads it: read_csv, then the timestamps parsed (UTC)."""
    df = pd.read_csv(path, keep_default_na=False, na_values={"checkpoint_stall_s": [""], "step": [""]})
    df["timestamp"] = pd.to_datetime(df["timestamp"], format="ISO8601", utc=True)
    return df


def arrow_baseline(path: Path) -> pa.Table:
    """The log as an Arrow user reads it: one pyarrow.csv.read_csv with the timestamp column typed."""
    opts = pacsv.ConvertOptions(column_types={"timestamp": pa.timestamp("us", tz="UTC"),
                                              "checkpoint_stall_s": pa.float64(), "step": pa.float64()})
    return pacsv.read_csv(path, convert_options=opts)


def same_columns(events: pd.DataFrame, path: Path) -> None:
    """Both baselines give read_log's timestamps, steps, stalls and event names."""
    def us(ts: pd.Series) -> np.ndarray:
        return ts.dt.as_unit("us").astype("int64").to_numpy()

    want_us = us(events["timestamp"])
    pdf = pandas_baseline(path)
    tab = arrow_baseline(path)
    sides = {"pandas": (us(pdf["timestamp"]),
                        pdf["step"].to_numpy(np.float64), pdf["checkpoint_stall_s"].to_numpy(np.float64),
                        pdf["event"].str.lower().to_numpy()),
             "arrow": (tab["timestamp"].cast(pa.int64()).to_numpy(), tab["step"].to_numpy(),
                       tab["checkpoint_stall_s"].to_numpy(), np.asarray(tab["event"].to_pylist(), dtype=object))}
    for name, (us, step, stall, event) in sides.items():
        assert np.array_equal(us, want_us), f"{name}: timestamps"
        np.testing.assert_array_equal(step, events["step"].to_numpy(np.float64), err_msg=f"{name}: step")
        np.testing.assert_array_equal(stall, events["checkpoint_stall_s"].to_numpy(np.float64),
                                      err_msg=f"{name}: stall")
        assert np.array_equal(np.asarray([str(e).lower() for e in event], dtype=object),
                              events["event"].to_numpy(dtype=object)), f"{name}: events"


def interleaved(fns: dict, repeat: int) -> dict[str, list[float]]:
    """Wall times of each function, called in turn ``repeat`` times."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000, help="running time in 1 s steps, less ~2 %% rework")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N entries of a profile")
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
        same_columns(events, path)
        times = interleaved({"read_log": lambda: read_log(path), "pandas": lambda: pandas_baseline(path),
                             "arrow": lambda: arrow_baseline(path)}, args.repeat)
        t_read = min(times["read_log"])
        t_split = best_of(lambda: measure_split(events), args.repeat)
        t_fit = best_of(lambda: fit_events(events, str(path)), args.repeat)
        split = measure_split(events)
        print("")
        print("| step | time (best of %d) | rows/s |" % args.repeat)
        print("| --- | ---: | ---: |")
        for name, sec in (("read_log (CSV -> validated events table)", t_read), ("measure_split", t_split),
                          ("read + split", t_read + t_split), ("fit_events (context)", t_fit)):
            print(f"| {name} | {sec:.3f} s | {rows / sec / 1e6:.2f} M |")
        print("")
        print("| reader | min | median | read_log / it (min) | (median) |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, label in (("read_log", "read_log"), ("pandas", "pandas.read_csv + to_datetime"),
                            ("arrow", "pyarrow.csv.read_csv (timestamp typed)")):
            lo, med = min(times[name]), statistics.median(times[name])
            r_lo, r_med = min(times["read_log"]) / lo, statistics.median(times["read_log"]) / med
            print(f"| {label} | {lo:.3f} s | {med:.3f} s | {r_lo:.2f}x | {r_med:.2f}x |")
        m = split.measured
        print("")
        print(f"split: goodput {split.goodput:.4f}; C {m['checkpoint_stall_min'] * 60:.2f} s (20), W "
              f"{m['async_write_min'] * 60:.2f} s (60), s {m['async_slowdown_fraction']:.4f} (0.2), baseline step "
              f"{m['baseline_step_s']:.4f} s (1), job MTBF {m['job_mtbf_h']:.3g} h [{m['job_mtbf_h_low']:.3g}, "
              f"{m['job_mtbf_h_high']:.3g}] (24)")
        if args.profile:
            prof = cProfile.Profile()
            prof.runcall(read_log, path)
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(args.profile)
            print(buf.getvalue())
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
