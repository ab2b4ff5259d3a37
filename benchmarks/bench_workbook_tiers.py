"""A tiered baseline's workbook: what planning its tiers live on every sheet costs, beside the same plan as one level.

    python benchmarks/bench_workbook_tiers.py [--runs 3]

The storage template with its in-memory design's tiers and failure classes made the baseline's (as the tests do).
For that plan and for the same plan without tiers (one level: the seed's and the shipped templates' case) it times
``build_workbook`` and ``save`` (the cached values of every formula cell included; no Deadline Monte Carlo) and
counts the formula cells per sheet (the cache evaluator skips a sheet above
``workbook.evaluate.MAX_CACHED_CELLS_PER_SHEET``). Prints min and median seconds and the ratio tiered / one level.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def _plans():
    from ckptplan import files

    plan = files.load_plan("llama3-405b-storage")
    memory = next(d for d in plan.designs if d.tiers)
    tiered = replace(plan, setup=plan.setup.replace(tiers=memory.tiers, failure_classes=memory.failure_classes),
                     designs=tuple(d for d in plan.designs if d is not memory))
    return {"tiered": tiered, "one level": replace(tiered, setup=tiered.setup.replace(tiers=(), failure_classes={}))}


def _once(plan, path: Path) -> tuple[float, dict[str, int]]:
    from ckptplan import workbook
    from ckptplan.workbook.build import save

    t0 = time.perf_counter()
    built = workbook.build_workbook(plan.scenario, setup=plan.setup, designs=plan.designs)
    save(built.workbook, path)
    seconds = time.perf_counter() - t0
    cells = {ws.title: sum(c.data_type == "f" for row in ws.iter_rows() for c in row) for ws in built.workbook.worksheets}
    return seconds, cells


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    plans, times, cells = _plans(), {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):   # interleaved: both share the machine's load
            for name, plan in plans.items():
                seconds, cells[name] = _once(plan, Path(tmp) / "b.xlsx")
                times.setdefault(name, []).append(seconds)
    for name, ts in times.items():
        print(f"{name:10s} build + save: min {min(ts):.2f} s, median {statistics.median(ts):.2f} s, "
              f"formula cells {sum(cells[name].values()):,}")
    print(f"ratio tiered / one level (median): {statistics.median(times['tiered']) / statistics.median(times['one level']):.1f}x")
    for sheet in cells["tiered"]:
        print(f"  {sheet:20s} {cells['one level'].get(sheet, 0):>8,} -> {cells['tiered'][sheet]:>8,} formula cells")


if __name__ == "__main__":
    main()
