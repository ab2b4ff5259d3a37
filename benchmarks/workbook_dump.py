"""Every cell of the generated workbooks, to compare two checkouts: same values, formulas, cached values, styles.

    python benchmarks/workbook_dump.py OUT [--python PY]      generate and dump (PY's ckptplan; default: this one)
    python benchmarks/workbook_dump.py --compare OLD NEW      compare two dumps

Generates ``ckptplan workbook`` for the seed (with the Deadline sheet, ``--no-deadline``, ``--with-udfs``) and
every shipped template, then writes per workbook a JSON of every cell: the formula or value, the cached value
(``load_workbook(data_only=True)``), type, number format, font, fill, alignment, border, protection; per sheet its
merged ranges, data-validation count, conditional formats, column and row dimensions; the defined names. A
speed change that must not change any output is checked by dumping before and after and comparing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

__all__ = ["compare", "dump", "main"]

TEMPLATES = ("async-save", "dense-7b-256-gpus", "fast-storage", "llama3-405b-storage", "llama3-405b", "power-domains")


def _cell(c, v) -> list[str]:
    value = repr((c.value.ref, c.value.text)) if type(c.value).__name__ == "ArrayFormula" else repr(c.value)
    return [value, repr(v), c.data_type, c.number_format, repr(c.font), repr(c.fill), repr(c.alignment),
            repr(c.border), repr(c.protection)]


def _sheet(ws, wsv) -> dict:
    cells = {}
    for row in ws.iter_rows():
        for c in row:
            v = wsv[c.coordinate].value
            if c.value is None and v is None and not c.has_style:
                continue
            cells[c.coordinate] = _cell(c, v)
    return {"cells": cells, "merged": sorted(map(str, ws.merged_cells.ranges)),
            "dv": len(ws.data_validations.dataValidation),
            "cf": repr([(str(k.sqref), [r.formula for r in v]) for k, v in ws.conditional_formatting._cf_rules.items()]),
            "dims": repr({k: (v.width, v.hidden) for k, v in ws.column_dimensions.items()}),
            "rows": repr({k: (v.height, v.hidden) for k, v in ws.row_dimensions.items()})}


def dump(out: Path, python: str) -> None:
    from openpyxl import load_workbook

    out.mkdir(parents=True, exist_ok=True)
    cases = {"seed": [], "seed-nodl": ["--no-deadline"], "seed-udfs": ["--with-udfs"]}
    cases.update({t: ["-t", t] for t in TEMPLATES})
    for name, args in cases.items():
        f = out / f"{name}.xlsx"
        subprocess.run([python, "-m", "ckptplan", "workbook", "-o", str(f), "--force", *args], check=True,
                       capture_output=True, cwd=out)
        wf, wv = load_workbook(f), load_workbook(f, data_only=True)
        d = {ws.title: _sheet(ws, wv[ws.title]) for ws in wf.worksheets}
        d["_names"] = sorted((n, str(v.attr_text)) for n, v in wf.defined_names.items())
        (out / f"{name}.json").write_text(json.dumps(d, sort_keys=True))


def compare(old: Path, new: Path) -> bool:
    same, total = True, 0
    for f in sorted(old.glob("*.json")):
        a, b = json.loads(f.read_text()), json.loads((new / f.name).read_text())
        n = sum(len(s["cells"]) for k, s in a.items() if k != "_names")
        total += n
        print(f"{f.stem}: {n:,} cells {'identical' if a == b else 'DIFFERENT'}")
        same &= a == b
    print(f"{total:,} cells in all: {'identical' if same else 'DIFFERENT'}")
    return same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", type=Path)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = ap.parse_args()
    if args.compare:
        raise SystemExit(0 if compare(*args.compare) else 1)
    dump(args.out, args.python)


if __name__ == "__main__":
    main()
