"""Plan passes and validations per surface: how many times each step of the plan pipeline runs.

    OMP_NUM_THREADS=1 python benchmarks/bench_plan_passes.py

Counts, for each surface run on the ``llama3-405b-storage`` template (baseline + its four designs, one of
them tiered), the calls of the pipeline's steps:

* ``validations``: :func:`engine.scenario.table_problems` (every table validation goes through it, a
  :class:`Scenario`'s when it is made included: ``plan``, ``compare`` and the CLI ``workbook`` count the
  template's load; the ``workbook`` row gets a scenario loaded before counting);
* ``setup passes``: derivations of a setup over a table (``engine.setup_table``'s column pass);
* ``evaluate passes``: :func:`engine.evaluate`'s model pass over a table (``_evaluate_valid``);
* ``tiered passes``: the tiered plan over a table (:func:`engine.tiers.table.tiered_columns`);
* ``optimum searches``: :func:`engine.tiers.optimum.best_first_interval` calls (each one a vectorised
  golden-section search over its rows).

Surfaces: ``plan --json``, ``compare --json``, ``batch`` of the five plans as rows (the tiered design's
rows with ``tiers=``), ``sweep`` over three node counts, ``CKPT_TOTAL_COST`` over a range of five
cells, the workbook of the template with its designs (``workbook.write_workbook``), and ``ckptplan workbook -t``
of the template (the command: the load, the Deadline sheet's simulations and the setup's single-level plan
included). Counting wraps the functions wherever a module holds them (no timing: counts only).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import collections  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from typer.testing import CliRunner  # noqa: E402

import ckptplan.engine.scenario as scenario_mod  # noqa: E402
import ckptplan.engine.setup_table as setup_table_mod  # noqa: E402
import ckptplan.engine.tiers.optimum as optimum_mod  # noqa: E402
import ckptplan.engine.tiers.table as tier_table_mod  # noqa: E402
from ckptplan.cli import app  # noqa: E402
from ckptplan.engine.batch import evaluate_rows  # noqa: E402
from ckptplan.engine.scenario import to_table  # noqa: E402
from ckptplan.files import load_plan  # noqa: E402
from ckptplan.workbook.udfs_setup import CKPT_TOTAL_COST  # noqa: E402

__all__ = ["count", "main"]

TEMPLATE = "llama3-405b-storage"
COUNTED = {"validations": (scenario_mod, "table_problems"),
           "setup passes": (setup_table_mod, "_compute" if hasattr(setup_table_mod, "_compute") else "setup_columns"),
           "evaluate passes": (scenario_mod, "_evaluate_valid"),
           "tiered passes": (tier_table_mod, "tiered_columns"),
           "optimum searches": (optimum_mod, "best_first_interval")}


def count(fn) -> dict[str, int]:
    """Run ``fn()`` with every counted function wrapped in every ``ckptplan`` module that holds it."""
    calls: collections.Counter = collections.Counter()
    patched = []
    for label, (module, name) in COUNTED.items():
        original = getattr(module, name)

        def wrapper(*args, _orig=original, _label=label, **kwargs):
            calls[_label] += 1
            return _orig(*args, **kwargs)

        for mod in [m for k, m in list(sys.modules.items()) if k.startswith("ckptplan") and m is not None]:
            for attr, value in list(vars(mod).items()):
                if value is original:
                    patched.append((mod, attr, value))
                    setattr(mod, attr, wrapper)
    try:
        fn()
    finally:
        for mod, attr, value in reversed(patched):
            setattr(mod, attr, value)
    return {label: calls[label] for label in COUNTED}


def _cli(*args: str) -> None:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code in (0, 3), res.output


def _surfaces(tmp: Path) -> dict:
    plan = load_plan(TEMPLATE)
    # the batch: the baseline and each single-level design as rows with setup columns, the tiered design on its own
    rows, tiered = [], None
    for name in [None] + [d.name for d in plan.designs]:
        p = plan.with_design(name) if name else plan
        if p.setup.tiers:
            tiered = p
            continue
        rows.append({**to_table([p.scenario]).iloc[0].to_dict(), **p.setup.columns()})
    import pandas as pd

    table = pd.DataFrame(rows)
    for c in ("checkpoint_stall_min", "async_write_min", "restart_min", "downtime_min"):
        table[c] = float("nan")   # derived by each row's setup
    ttable = pd.DataFrame([{**to_table([tiered.scenario]).iloc[0].to_dict(), **tiered.setup.columns()}])
    for c in ("checkpoint_stall_min", "async_write_min", "restart_min", "downtime_min"):
        ttable[c] = float("nan")

    def batch() -> None:
        evaluate_rows(table, extra_columns="keep")
        evaluate_rows(ttable, extra_columns="keep", tiers=tiered.setup.tiers,
                      failure_classes=tiered.setup.failure_classes)

    def udf() -> None:
        col = [[2048], [1024], [4096], [512], [8192]]
        out = CKPT_TOTAL_COST(1166.4, col, 3.09, 2.5, None, None, 8, None, None, 0.0, 405.0, 14.0, 0.0, None, 1.0,
                              2000.0, 1.0, 2000.0, None, 2.0, None, 3.0, 1.0, 1.0, None, 2.0, 8, 24.0, 2.0, 0.78,
                              0.02, 3)
        assert all(isinstance(v[0], float) for v in out), out

    def book() -> None:
        from ckptplan import workbook

        workbook.write_workbook(tmp / "book.xlsx", plan.scenario, force=True, setup=plan.setup, designs=plan.designs)

    return {
        "plan --json": lambda: _cli("plan", "-t", TEMPLATE, "--json"),
        "compare --json": lambda: _cli("compare", "-t", TEMPLATE, "--json"),
        "batch (5 plans)": batch,
        "sweep (3 node counts)": lambda: _cli("sweep", "-t", TEMPLATE, "--nodes", "1024,2048,4096", "-o",
                                              str(tmp / "sweep.csv"), "--force"),
        "CKPT_TOTAL_COST (5 cells)": udf,
        "workbook (template + 4 designs)": book,
        "ckptplan workbook -t (command)": lambda: _cli("workbook", "-t", TEMPLATE, "-o", str(tmp / "cli.xlsx"),
                                                        "--force"),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        surfaces = _surfaces(Path(tmp))
        for fn in surfaces.values():   # warm imports: every module loaded before counting
            fn()
        out = {name: count(fn) for name, fn in surfaces.items()}
    width = max(map(len, out))
    print(f"{'surface':<{width}}  " + "  ".join(f"{k:>16}" for k in COUNTED))
    for name, counts in out.items():
        print(f"{name:<{width}}  " + "  ".join(f"{counts[k]:>16}" for k in COUNTED))
    if "--json" in sys.argv:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
