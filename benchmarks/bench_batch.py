"""Batch throughput: a 10^6-row sweep to Parquet and CSV, 10^4 rows to XLSX, in process and on Dask.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_batch.py [--rows 1000000]
        [--xlsx-rows 10000] [--workers 2] [--markdown /tmp/results_batch.md]

What is timed (closed-form columns only, no Monte Carlo; every row goes through validation,
engine.evaluate, the model-validity checks and the status/error/warnings columns of
engine.batch.evaluate_rows; whole-number columns are written as int64), over the seed template:

1. in process: the grid built and evaluated in memory (``engine.sweep.sweep``), then the same sweep
   streamed in 200k-row chunks to Parquet and to CSV (``workbook.results.write_results`` of
   ``engine.sweep.iter_results(grid)``, what ``ckptplan sweep -o`` runs), and 10^4 rows to XLSX
   (openpyxl write-only: Excel Table, formats);
2. on a ``dask.distributed`` LocalCluster (``--workers`` processes, one thread each): the grid built
   and evaluated on the workers (``sweep_dask``), (a) computed and reduced to a row count there
   (compute only, no transfer), (b) streamed to the client and written to Parquet and to CSV,
   exactly as ``ckptplan sweep --scheduler dask`` does.

Prints rows/second for each and the in-process / Dask ratios, then checks that the Dask Parquet
file equals the in-process one.

First, the writers against their libraries (``--writers-only`` stops after this): the evaluated
results held in memory (10^6 rows; 10^4 for XLSX) written by ``workbook.results.write_results``
(summary, atomic replace, CSV neutralisation, int64 whole-number columns, the styled Excel Table)
against the library alone on the same frame: ``pyarrow.csv.write_csv`` and
``pyarrow.parquet.write_table`` (zstd) of ``pyarrow.Table.from_pandas(frame)``, and an openpyxl
write-only workbook fed the same values as plain Python rows (no styles, no Table). Calls
interleaved (library, ours, library, ours, ...), best of ``--repeat`` each. Cluster start-up is reported apart and not counted. Timings are
best of ``--repeat`` for the compute and Parquet comparisons, single runs otherwise. Absolute
times drift on a shared machine; the ratios are measured side by side in one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import math

import numpy as np
import pandas as pd

from ckptplan.engine import sweep as es
from ckptplan.engine.fields import DEFAULT_CHUNK_ROWS
from ckptplan.files import load_scenario
from ckptplan.files.results import file_frame
from ckptplan.workbook.results import write_results

__all__ = ["axes_for", "main", "writer_ratios"]

BASE = load_scenario("seed")

AXES_1M = dict(  # 10 x 10 x 100 x 100 = 10^6 rows
    checkpoint_stall_min="0.5:5:+0.5",
    nodes="16:8192:x2",
    restart_min="1:100:+1",
    price_per_gpu_hour="1:10.9:+0.1",
)


def axes_for(rows: int) -> dict:
    """Axes whose product is ``rows`` (a multiple of 100) from the 10^6 grid's shapes."""
    if rows == 1_000_000:
        return dict(AXES_1M)
    if rows % 100:
        raise SystemExit("--rows must be a multiple of 100")
    return dict(checkpoint_stall_min="0.5:5:+0.5", nodes="16:8192:x2",
                restart_min=f"1:{rows // 100}:+1")


def timed(fn, repeat: int = 1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _plain_rows(frame: pd.DataFrame) -> list[list]:
    """The frame's values as plain Python columns (None for NaN and blanks): what openpyxl gets."""
    cols = []
    for c in frame.columns:
        s = frame[c]
        if s.dtype.kind in "iuf":
            a = s.to_numpy(dtype=float, na_value=np.nan)
            cols.append([v if math.isfinite(v) else None for v in a.tolist()])
        else:
            cols.append([None if v is None or v != v or v == "" else v for v in s.to_numpy(dtype=object)])
    return cols


def same_numbers(ours: pd.DataFrame, tmp: Path, small_frame: pd.DataFrame) -> None:
    """Every library's file holds the same numbers as ours: the numeric columns read back equal
    (CSV: all rows exactly, NaN as blank; XLSX: the first 200 rows of the Results sheet to 1e-15 relative:
    openpyxl writes some floats one unit in the last place off)."""
    numeric = [c for c in ours.columns if ours[c].dtype.kind in "if"]
    for name in ("lib.csv", "lib.polars.csv"):
        if (tmp / name).exists():
            lib = pd.read_csv(tmp / name, low_memory=False)
            for c in numeric:
                np.testing.assert_array_equal(lib[c].to_numpy(float), ours[c].to_numpy(float), err_msg=f"{name}: {c}")
    from openpyxl import load_workbook
    want = {c: small_frame[c] for c in small_frame.columns if small_frame[c].dtype.kind in "if"}
    for name in ("ours.xlsx", "lib.xlsx", "lib.xw.xlsx"):
        if not (tmp / name).exists():
            continue
        wb = load_workbook(tmp / name, read_only=True, data_only=True)
        ws = wb["Results"] if "Results" in wb.sheetnames else wb.worksheets[0]
        it = ws.iter_rows(values_only=True)
        header = list(next(it))
        for r, row in zip(range(200), it):
            for c, col in want.items():
                v, w = row[header.index(str(c))], float(col.iloc[r])
                assert (v is None and not math.isfinite(w)) or math.isclose(v, w, rel_tol=1e-15), (name, c, r, v, w)
        wb.close()


def writer_ratios(rows: int, xlsx_rows: int, repeat: int, tmp: Path) -> list[tuple[str, float, float]]:
    """(label, our seconds, library seconds) for CSV, Parquet and XLSX (see the module notes)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    from openpyxl import Workbook

    res = es.sweep(BASE, **axes_for(rows), max_rows=rows)
    frame = file_frame(res)
    small = es.sweep(BASE, **axes_for(xlsx_rows), max_rows=xlsx_rows)
    small_frame = file_frame(small)

    def lib_csv():
        pacsv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), str(tmp / "lib.csv"))

    def lib_parquet():
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), str(tmp / "lib.parquet"), compression="zstd")

    def lib_xlsx():
        wb = Workbook(write_only=True)
        ws = wb.create_sheet("Results")
        ws.append([str(c) for c in small_frame.columns])
        for row in zip(*_plain_rows(small_frame)):
            ws.append(row)
        wb.save(tmp / "lib.xlsx")

    def lib_polars():
        import polars as pl
        pl.from_pandas(frame).write_csv(tmp / "lib.polars.csv")

    def lib_xlsxwriter():
        import xlsxwriter
        wb = xlsxwriter.Workbook(str(tmp / "lib.xw.xlsx"), {"constant_memory": True, "nan_inf_to_errors": True})
        ws = wb.add_worksheet("Results")
        ws.write_row(0, 0, [str(c) for c in small_frame.columns])
        for r, row in enumerate(zip(*_plain_rows(small_frame)), start=1):
            ws.write_row(r, 0, row)
        wb.close()

    cases = [
        (f"CSV, {rows:,} rows: write_results / pyarrow.csv.write_csv", lib_csv,
         lambda: write_results(res, tmp / "ours.csv", force=True)),
        (f"Parquet, {rows:,} rows: write_results / pyarrow.parquet.write_table", lib_parquet,
         lambda: write_results(res, tmp / "ours.parquet", force=True)),
        (f"XLSX, {xlsx_rows:,} rows: write_results / openpyxl write-only", lib_xlsx,
         lambda: write_results(small, tmp / "ours.xlsx", force=True)),
    ]
    try:
        import polars  # noqa: F401  (optional peer library, not a ckptplan dependency)
        cases.insert(1, (f"CSV, {rows:,} rows: write_results / polars write_csv", lib_polars,
                         lambda: write_results(res, tmp / "ours.csv", force=True)))
    except ImportError:
        print("polars not installed: its CSV baseline skipped")
    try:
        import xlsxwriter  # noqa: F401  (optional peer library)
        cases.append((f"XLSX, {xlsx_rows:,} rows: write_results / xlsxwriter constant_memory", lib_xlsxwriter,
                      lambda: write_results(small, tmp / "ours.xlsx", force=True)))
    except ImportError:
        print("xlsxwriter not installed: its XLSX baseline skipped")
    out = []
    for label, lib, ours in cases:
        t_lib, t_ours = [], []
        for _ in range(repeat):
            t_lib.append(timed(lib)[0])
            t_ours.append(timed(ours)[0])
        best_lib, best_ours = min(t_lib), min(t_ours)
        med = statistics.median(t_ours) / statistics.median(t_lib)
        out.append((label, best_ours, best_lib))
        print(f"{label:<66} {best_ours:7.2f} s vs {best_lib:7.2f} s  ratio {best_ours / best_lib:5.2f}x (min), "
              f"{med:5.2f}x (median)", flush=True)
    back = pd.read_csv(tmp / "ours.csv", low_memory=False)
    assert len(back) == rows and back["nodes"].dtype.kind == "i", "CSV: rows or integer nodes lost"
    same_numbers(back, tmp, small_frame)
    for p in tmp.glob("lib.*"):
        p.unlink()
    for p in tmp.glob("ours.*"):
        p.unlink()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--xlsx-rows", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk-rows", type=int, default=DEFAULT_CHUNK_ROWS)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--markdown", type=Path, default=None, help="also write the figures as Markdown here")
    ap.add_argument("--writers-only", action="store_true", help="only the writers against their libraries")
    args = ap.parse_args()

    axes = axes_for(args.rows)
    grid = es.sweep_grid(BASE, **axes)
    assert grid.rows == args.rows
    n = grid.rows
    tmp = Path(tempfile.mkdtemp(prefix="bench_batch_"))
    rows: list[tuple[str, float, int, str]] = []  # (label, seconds, rows, note)

    def record(label: str, seconds: float, count: int, note: str = "") -> None:
        rows.append((label, seconds, count, note))
        print(f"{label:<58} {seconds:8.2f} s  {count / seconds:>12,.0f} rows/s  {note}", flush=True)

    def fresh(name: str) -> Path:
        p = tmp / name
        p.unlink(missing_ok=True)
        return p

    print(f"{n:,}-row sweep {axes}; chunks of {args.chunk_rows:,} rows; machine: {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, pandas {pd.__version__}")

    # ------------------------------------------------------------- writers against their libraries
    writers = writer_ratios(n, args.xlsx_rows, args.repeat, tmp)
    if args.writers_only:
        tmp.rmdir()
        return

    # ------------------------------------------------------------------ in process
    t_mem, res = timed(lambda: es.sweep(BASE, **axes, max_rows=n), args.repeat)
    assert len(res) == n and (res["status"] == "ok").all()
    ncols = res.shape[1]
    del res
    record("in process: build + evaluate in memory (sweep)", t_mem, n, f"{ncols} columns")

    def local_to(path: Path):
        return write_results(es.iter_results(grid, chunk_rows=args.chunk_rows), path)

    t_lp, s = timed(lambda: local_to(fresh("local.parquet")), args.repeat)
    assert s.rows == n and s.errors == 0
    record("in process: evaluate + write Parquet (streamed)", t_lp, n,
           f"{(tmp / 'local.parquet').stat().st_size / 1e6:,.0f} MB")
    t_lc, s = timed(lambda: local_to(fresh("local.csv")), 1)
    record("in process: evaluate + write CSV (streamed)", t_lc, n, f"{(tmp / 'local.csv').stat().st_size / 1e6:,.0f} MB")

    xgrid = es.sweep_grid(BASE, **axes_for(args.xlsx_rows))
    t_x, s = timed(lambda: write_results(es.iter_results(xgrid, chunk_rows=args.chunk_rows), fresh("small.xlsx")), 1)
    assert s.rows == args.xlsx_rows
    record(f"in process: evaluate + write XLSX ({args.xlsx_rows:,} rows, Table + formats)", t_x, args.xlsx_rows,
           f"{(tmp / 'small.xlsx').stat().st_size / 1e6:,.1f} MB")

    # ------------------------------------------------------------------------ Dask
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask/distributed not installed: Dask comparison skipped")
        return
    t0 = time.perf_counter()
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        t_start = time.perf_counter() - t0
        print(f"LocalCluster: {args.workers} worker processes x 1 thread, started in {t_start:.1f} s (not counted)")

        def dask_count() -> int:
            lazy = es.sweep_dask(BASE, **axes, partition_rows=args.chunk_rows)
            return int(lazy.map_partitions(len).sum().compute())

        t_dc, count = timed(dask_count, args.repeat)
        assert count == n
        record("Dask: build + evaluate on workers (compute only)", t_dc, n)
        t_dp, s = timed(lambda: write_results(es.sweep_dask(BASE, **axes, partition_rows=args.chunk_rows),
                                              fresh("dask.parquet")), args.repeat)
        assert s.rows == n and s.errors == 0
        record("Dask: evaluate on workers + stream to client, Parquet", t_dp, n)
        t_dcsv, s = timed(lambda: write_results(es.sweep_dask(BASE, **axes, partition_rows=args.chunk_rows),
                                                fresh("dask.csv")), 1)
        record("Dask: evaluate on workers + stream to client, CSV", t_dcsv, n)

    a = pd.read_parquet(tmp / "local.parquet")
    b = pd.read_parquet(tmp / "dask.parquet")
    same = a.equals(b)
    print(f"Dask Parquet == in-process Parquet: {same}")
    ratios = [
        ("evaluate only: in-process (in memory) / Dask (on workers)", t_mem / t_dc),
        ("to Parquet: in-process / Dask", t_lp / t_dp),
        ("to CSV: in-process / Dask", t_lc / t_dcsv),
    ]
    for label, r in ratios:
        print(f"{label:<58} {r:5.2f}x  ({'Dask faster' if r > 1 else 'in-process faster'})")
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()

    if args.markdown:
        lines = [
            f"Date: {dt.date.today().isoformat()}. Command:", "",
            "    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_batch.py "
            + " ".join(sys.argv[1:]), "",
            f"{n:,}-row sweep ({' x '.join(str(len(v)) for v in grid.axes.values())} over "
            f"{', '.join(grid.axes)}), closed-form columns ({ncols} per row), no Monte Carlo; "
            f"{os.cpu_count()} cores; Dask: LocalCluster, {args.workers} worker processes x 1 thread "
            f"(start-up {t_start:.1f} s, not counted); chunks/partitions of {args.chunk_rows:,} rows. "
            f"Best of {args.repeat} for evaluate-only and Parquet, single runs otherwise.", "",
            "| path | rows | time | rows/s | note |", "| --- | ---: | ---: | ---: | --- |",
        ]
        lines += [f"| {label} | {count:,} | {sec:.2f} s | {count / sec:,.0f} | {note} |" for label, sec, count, note in rows]
        lines += ["", "| ratio (in-process time / Dask time) | value |", "| --- | ---: |"]
        lines += [f"| {label} | {r:.2f}x |" for label, r in ratios]
        lines += ["", "| writer (ours / library, same frame) | ours | library | ratio |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {label} | {a:.2f} s | {b:.2f} s | {a / b:.2f}x |" for label, a, b in writers]
        lines += ["", f"Dask Parquet file equal to the in-process one: {same}."]
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {args.markdown}")


if __name__ == "__main__":
    main()
