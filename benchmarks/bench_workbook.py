"""Time to generate planning workbooks, measured side by side in one run.

    python benchmarks/bench_workbook.py [--rows 10000] [--recalc]

1. the default workbook (seed template, no Deadline sheet: the Monte Carlo is timed elsewhere);
2. the same workbook with a Scenarios sheet of ``--rows`` formula rows (every derived figure a live
   formula of its row, ~50 formula cells per row);
3. with ``--recalc``: LibreOffice headless recalculation of file 2, and a check that its last row
   equals the engine.
4. the share of (1) spent computing the cached values of every formula cell
   (:mod:`ckptplan.workbook.evaluate`), timed beside building and saving the same workbook without them.
Prints seconds, formula cells per second and the ratios.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from ckptplan import engine
from ckptplan import files
from ckptplan import workbook


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--recalc", action="store_true")
    args = ap.parse_args()
    seed = files.load_scenario("seed")
    rng = np.random.default_rng(0)
    table = engine.to_table([seed] * args.rows)
    table["checkpoint_stall_min"] = rng.uniform(0.2, 5, args.rows)
    table["nodes"] = rng.choice([64, 128, 256, 512, 1024], args.rows)
    table["name"] = [f"s{i}" for i in range(args.rows)]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        small = workbook.write_workbook(Path(tmp) / "default.xlsx", seed)
        t_default = time.perf_counter() - t0
        t0 = time.perf_counter()
        big = workbook.write_workbook(Path(tmp) / "big.xlsx", seed, scenarios=table)
        t_big = time.perf_counter() - t0
        cells = sum(1 for c in big.checks if c.sheet == "Scenarios")
        size_mb = (Path(tmp) / "big.xlsx").stat().st_size / 1e6
        print(f"default workbook           : {t_default:7.2f} s  ({len(small.checks)} engine-checked formula cells)")
        print(f"+ Scenarios, {args.rows:,} rows   : {t_big:7.2f} s  ({cells:,} engine-checked formula cells in Scenarios, "
              f"{size_mb:.1f} MB, {args.rows / (t_big - t_default):,.0f} rows/s)")
        print(f"ratio big / default        : {t_big / t_default:7.1f}x")
        from ckptplan.workbook.evaluate import cached_values

        built = workbook.build_workbook(seed)
        t0 = time.perf_counter()
        built.workbook.save(Path(tmp) / "plain.xlsx")
        t_save = time.perf_counter() - t0
        t0 = time.perf_counter()
        values = cached_values(built.workbook)
        t_cache = time.perf_counter() - t0
        n = sum(len(v) for v in values.values())
        print(f"cached values, default     : {t_cache:7.3f} s for {n:,} formula cells "
              f"({t_cache / n * 1e3:.3f} ms a cell); {t_cache / t_save:.1f}x the plain openpyxl save")
        if args.recalc:
            from openpyxl import load_workbook
            from ckptplan.workbook.recalc import recalculate
            t0 = time.perf_counter()
            out = recalculate([Path(tmp) / "big.xlsx"], Path(tmp) / "out")[0]
            t_lo = time.perf_counter() - t0
            ws = load_workbook(out, data_only=True, read_only=True)["Scenarios"]
            want = engine.evaluate(table).iloc[-1]
            got = {c.key: ws[c.cell].value for c in big.checks if c.sheet == "Scenarios" and c.context == ("scenarios", args.rows - 1)}
            worst = max(abs(got[k] - want[k]) / max(abs(want[k]), 1e-300) for k in got)
            print(f"LibreOffice recalculation  : {t_lo:7.2f} s  (last row vs engine: max relative difference {worst:.1e})")


if __name__ == "__main__":
    main()
