"""Step logs and interruption logs, CSV and JSON Lines, with every malformation the suite can think of, through
``fit`` and ``actual`` (area "logs").

The base logs are a slice of the shipped step log (steps, saves, a restart with phases) and the shipped
interruption log. Each malformation is applied to the rows as text, then written as CSV and as JSON Lines, and
each file goes through both commands: a clean answer or one clean refusal (:func:`corpus.check_run`), nothing
written (:func:`corpus.check_output_dir`), and the two commands agree on whether the file is a log at all (one
reader, one rule: a file ``fit`` refuses as malformed, ``actual`` refuses too).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_hostile import run_case

from ckptplan import files

_STEP = files.template_path("example-step-log.csv").read_text(encoding="utf-8").splitlines()
_INTR = files.template_path("example-interruption-log.csv").read_text(encoding="utf-8").splitlines()
#: a slice with steps, saves and a restart: the first interruption and 40 rows after it
_CUT = next(i for i, line in enumerate(_STEP) if ",interruption," in line) + 40
STEP_LOG = [_STEP[0]] + _STEP[1:_CUT]
INTR_LOG = _INTR


def _swap(rows: list[str], i: int, j: int) -> list[str]:
    rows = list(rows)
    rows[i], rows[j] = rows[j], rows[i]
    return rows


def _cell(rows: list[str], column: str, value: str, where: int = 5) -> list[str]:
    head = rows[0].split(",")
    k = head.index(column)
    out = list(rows)
    cells = out[where].split(",")
    cells[k] = value
    out[where] = ",".join(cells)
    return out


MUTATIONS = {
    "as is": lambda r: r,
    "no header": lambda r: r[1:],
    "header only": lambda r: r[:1],
    "header twice": lambda r: r[:1] + r,
    "duplicated column": lambda r: [r[0] + ",step"] + [x + ",1" for x in r[1:]],
    "legacy and new stall column": lambda r: [r[0] + ",stall_s"] + [x + "," for x in r[1:]],
    "missing event column": lambda r: [r[0].replace("event", "what")] + r[1:],
    "extra field in a row": lambda r: r[:4] + [r[4] + ",extra"] + r[5:],
    "short row": lambda r: r[:4] + [r[4].split(",")[0]] + r[5:],
    "rows out of order": lambda r: _swap(r, 3, 9),
    "clock stepped back an hour": lambda r: r[:6] + [r[6].replace("T0", "T0", 1).replace(r[6][11:13], "%02d" % max(
        int(r[6][11:13]) - 1, 0), 1)] + r[7:] if r[6][11:13].isdigit() else r,
    "mixed offsets": lambda r: r[:3] + [r[3].replace("Z", "", 1)] + r[4:],
    "bad timestamp": lambda r: _cell(r, "timestamp", "yesterday"),
    "timestamp year 0": lambda r: _cell(r, "timestamp", "0000-01-01T00:00:00Z"),
    "unknown event": lambda r: _cell(r, "event", "explode"),
    "event case": lambda r: _cell(r, "event", r[5].split(",")[1].upper()),
    "stall nan": lambda r: _cell(r, "checkpoint_stall_s", "nan", next(i for i, x in enumerate(r) if
                                                                      ",checkpoint_saved," in x)),
    "stall 1e400": lambda r: _cell(r, "checkpoint_stall_s", "1e400", next(i for i, x in enumerate(r) if
                                                                          ",checkpoint_saved," in x)),
    "stall negative": lambda r: _cell(r, "checkpoint_stall_s", "-5", next(i for i, x in enumerate(r) if
                                                                          ",checkpoint_saved," in x)),
    "step 400 digits": lambda r: _cell(r, "step", "9" * 400),
    "step fraction": lambda r: _cell(r, "step", "1.5"),
    "step goes back": lambda r: _cell(r, "step", "0", 8),
    "cause on a step": lambda r: _cell(r, "cause", "hardware"),
    "unterminated quote": lambda r: r[:5] + [r[5] + ',"open'] + r[6:],
    "text after a quote": lambda r: r[:5] + [r[5].replace(",", ',"x"y', 1)] + r[6:],
    "quoted newline cell": lambda r: _cell(r, "cause", '"hard\nware"', next(i for i, x in enumerate(r) if
                                                                            ",interruption," in x)),
    "nul byte": lambda r: r[:5] + [r[5] + "\x00"] + r[6:],
    "cr only line ends": lambda r: ["\r".join(r)],
    "blank lines": lambda r: [x for line in r for x in (line, "")],
    "exact duplicate rows": lambda r: r[:6] + [r[5]] * 3 + r[6:],
    "a 3 hour hole": lambda r: r[:20] + r[200:] if len(r) > 220 else r,
    "one row": lambda r: r[:2],
    "same instant": lambda r: r[:1] + [r[1]] + [r[1].replace(",start,", ",end,")],
    "70 KB cell": lambda r: _cell(r, "cause", "x" * 70_000, next(i for i, x in enumerate(r) if ",interruption," in x)),
    "markup and escapes in a cause": lambda r: _cell(r, "cause", "[bold red]x[/] \x1b[31mred =HYPERLINK(1)",
                                                     next(i for i, x in enumerate(r) if ",interruption," in x)),
}


def _as_jsonl(rows: list[str]) -> str:
    """The rows as JSON Lines (cells as strings; a row that is no CSV line becomes a line of its own text)."""
    import csv
    import io

    if not rows:
        return ""
    out = []
    try:
        head = next(csv.reader([rows[0]]))
        parsed = list(csv.reader(io.StringIO("\n".join(rows[1:]), newline=""), strict=True))
    except csv.Error:
        return "\n".join(rows) + "\n"  # what no CSV reader splits: as text lines, each a bad JSON line
    for cells in parsed:
        out.append(json.dumps({h: c for h, c in zip(head, cells) if c != ""}))
    return "\n".join(out) + "\n"


CASES = [(log, name, fmt) for log in ("step", "interruption") for name in MUTATIONS for fmt in ("csv", "jsonl")]


@pytest.mark.parametrize("log, name, fmt", CASES, ids=[f"{a} {b} {c}" for a, b, c in CASES])
def test_hostile_logs(tmp_path: Path, log: str, name: str, fmt: str):
    rows = MUTATIONS[name](STEP_LOG if log == "step" else INTR_LOG)
    text = "\n".join(rows) + "\n" if fmt == "csv" else _as_jsonl(rows)
    path = tmp_path / f"log.{fmt}"
    path.write_text(text, encoding="utf-8")
    fit = run_case("fit", [str(path), "--json"], tmp_path, area="logs")
    actual = run_case("actual", [str(path), "--json"], tmp_path, area="logs")
    if fit.code == 2 and "bad row" in fit.stderr or "readable CSV" in fit.stderr or "is over" in fit.stderr:
        assert actual.code == 2, f"fit refused the file as malformed, actual answered: {fit} {actual}"
    if name in ("unterminated quote", "text after a quote") and fmt == "csv":
        assert fit.code == actual.code == 2 and "readable CSV" in actual.stderr, actual
    if name == "a 3 hour hole" and log == "step" and actual.code == 0:
        assert "hole" in actual.stdout, "a hole in a step log was counted as work without a note"
