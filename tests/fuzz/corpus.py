"""Shared pieces of the fuzz and fault-injection suite (tests/fuzz): the tally of cases per area,
hostile values for the engine, hostile option texts and files for the command line, and the check
every command-line run must pass.

Imported by ``conftest.py`` and the test modules as ``corpus`` (pytest puts this folder on
``sys.path``: the tests have no ``__init__.py``).
"""

from __future__ import annotations

import collections
import decimal
import fractions
import json
import math
import os
import re
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np
import pandas as pd

__all__ = ["AREAS", "CASES", "FAILURES", "HOSTILE_NUMBERS", "HOSTILE_TEXT", "Outcome", "check_output_dir",
           "check_run", "count", "summary_line", "snapshot"]

# ----------------------------------------------------------------------------------------- tally

#: the areas the summary line reports, in its order
AREAS = ("engine", "cli", "files", "plans", "logs", "audit", "xlsx", "parquet")
CASES: collections.Counter = collections.Counter()
FAILURES: collections.Counter = collections.Counter()
XFAILED: collections.Counter = collections.Counter()


def count(area: str, n: int = 1) -> None:
    """``n`` more cases tried in ``area`` (one of :data:`AREAS`)."""
    assert area in AREAS, area
    CASES[area] += n


def summary_line() -> str:
    """``fuzz: engine 1200 cases, cli 340 cases, files 80 cases, 0 failures`` (+ known bugs left as xfail)."""
    parts = ", ".join(f"{a} {CASES[a]} cases" for a in AREAS)
    failed = sum(FAILURES.values())
    detail = f" ({', '.join(f'{a} {FAILURES[a]}' for a in AREAS if FAILURES[a])})" if failed else ""
    known = sum(XFAILED.values())
    tail = f", {known} known bugs left as strict xfail" if known else ""
    return f"fuzz: {parts}, {failed} failure{'s' if failed != 1 else ''}{detail}{tail}"


# ---------------------------------------------------------------------------- engine: values

HUGE_INT = 10**400
#: values every numeric argument of the engine gets at some point: each must give a finite answer
#: or an InputError naming the argument (never another exception, never inf/NaN)
HOSTILE_NUMBERS: tuple = (
    0, 0.0, -0.0, -1, -1e-300, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 1e-12, 0.5, 1 - 1e-16, 1.0, 2, 3.5,
    1e6, 2**53 + 1, 1e15, 1e100, 1e300, 1.7976931348623157e308, float("nan"), float("inf"), float("-inf"),
    HUGE_INT, -HUGE_INT, 2**64, True, False, np.bool_(True), None, "1", "", b"1", 1 + 2j, 1 + 0j, np.complex128(1),
    decimal.Decimal("1.5"), decimal.Decimal("NaN"), fractions.Fraction(1, 3), np.datetime64("2024-01-01"),
    np.timedelta64(3, "m"), {"a": 1}, {1, 2}, [[1.0], [2.0, 3.0]], [[1.0, "x"]], [], [1.0, None], np.float16(2.0),
    np.longdouble(10) ** 400 if np.finfo(np.longdouble).max > 1e400 else np.float64(1e308),
    np.ma.masked_array([1.0, 2.0], mask=[False, True]), object(), pd.NA, pd.Timestamp("2024-01-01"),
    np.array([1.0, np.nan]), np.array(["1"]), np.array([2.0, 3.0, 4.0]),
)


# ------------------------------------------------------------------------------- CLI: texts

#: option values a user (or a script) can type: each must end in a clean answer or a clean refusal
HOSTILE_TEXT: tuple[str, ...] = (
    "nan", "inf", "-inf", "-1", "0", "-0", "1e308", "1.8e308", "1e-320", "5e-324", "1e400", "1" + "0" * 400,
    "abc", "", " 2 ", "1,5", "0x10", "\uff11", "2e", "--", "=HYPERLINK(\"http://evil.example\",\"x\")",
    "\x1b[31mred\x1b[0m", "[red]markup[/red]", "+1e3", "1_000", "NaN", "Infinity", "9" * 40,
)
#: text that must come back literally, never acted on: markup, ANSI escapes, formulas, controls
HOSTILE_NAMES: tuple[str, ...] = (
    "[bold red]boom[/]", "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\", "\x1b[2J\x1b[31mred",
    "=HYPERLINK(\"http://evil.example\",\"x\")", "+cmd|' /C calc'!A0", "@SUM(1+1)*cmd", "-2+3",
    "line\rover", "bidi \u202eevil\u202c", "tab\there", "null\x00byte", "\u0085next", "x" * 300,
)


# ---------------------------------------------------------------------------- CLI: the check

_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+|"
    r"^[A-Z]\w*(Error|Exception|Warning): |RuntimeWarning|DeprecationWarning|FutureWarning|"
    r"[Dd]uring handling of the above exception", re.M)
#: lines a clean refusal or a clean answer may print to stderr
_STDERR_OK = ("error:", "warning:", "note:", "wrote ", "checkpoints kept", "not restorable", "stopped",
              "Usage:", "Try '", "\u256d", "\u2502", "\u2570", " ")


@dataclass
class Outcome:
    """One command-line run: arguments, exit code, stdout, stderr and the exception (in-process runs)."""

    args: list
    code: int
    stdout: str
    stderr: str
    exception: Optional[BaseException] = None
    warned: list = field(default_factory=list)

    def __str__(self) -> str:
        return (f"ckptplan {' '.join(map(repr, self.args))} -> exit {self.code}\n--- stdout\n{self.stdout[-1500:]}\n"
                f"--- stderr\n{self.stderr[-1500:]}\n--- exception {self.exception!r}")


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"JSON holds {name}")


def check_run(out: Outcome, codes: Iterable[int] = (0, 2), json_out: Optional[bool] = None) -> None:
    """Every run of the command line: a clean answer or a clean refusal.

    * no exception escaped (in-process: ``exception`` is None or a SystemExit), no traceback and no
      Python warning anywhere in stdout or stderr, no ESC character (terminal escape) in either;
    * the exit code is one of ``codes``; a refusal says why on stderr, every line an ``error:`` (one line
      per problem), a note, or click's usage box;
    * ``--json`` answers are JSON without ``NaN``/``Infinity``.
    """
    assert out.exception is None or isinstance(out.exception, SystemExit), f"exception escaped: {out}"
    for stream, text in (("stdout", out.stdout), ("stderr", out.stderr)):
        assert not _TRACEBACK.search(text), f"traceback or Python warning on {stream}: {out}"
        assert "\x1b" not in text, f"ESC character on {stream}: {out}"
    runtime = [w for w in out.warned if issubclass(w.category, RuntimeWarning)]
    assert not runtime, f"Python warnings: {[str(w.message) for w in runtime]} in {out}"
    assert out.code in tuple(codes), f"unexpected exit code: {out}"
    if out.code not in (0, 3):  # 3: results written, the failed rows listed with the summary
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert lines, f"a refusal without a word on stderr: {out}"
        bad = [ln for ln in lines if not ln.startswith(_STDERR_OK)]
        assert not bad, f"stderr lines that are no clean message: {bad!r} in {out}"
        if out.code == 2 and not any(ln.startswith("Usage:") for ln in lines):
            assert any(ln.startswith("error:") for ln in lines), f"exit 2 without an error line: {out}"
    wants_json = json_out if json_out is not None else "--json" in out.args
    if wants_json and out.code in (0, 3):
        try:
            json.loads(out.stdout, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"--json printed no JSON ({exc}): {out}") from None


# ------------------------------------------------------------------------ files and folders

_TEMP = re.compile(r"^\..+\.ckptplan-[a-z0-9_]{8}\.tmp(\.[A-Za-z0-9]{1,16})?$")


def snapshot(folder: Path) -> dict[str, tuple]:
    """What a folder holds: relative path -> (kind, size, mtime_ns, inode), links not followed."""
    out = {}
    for root, dirs, names in os.walk(folder):
        for n in dirs + names:
            p = Path(root) / n
            st = os.lstat(p)
            kind = ("dir" if stat.S_ISDIR(st.st_mode) else "fifo" if stat.S_ISFIFO(st.st_mode) else
                    "link" if stat.S_ISLNK(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other")
            out[str(p.relative_to(folder))] = (kind, st.st_size if kind == "file" else 0, st.st_mtime_ns, st.st_ino)
    return out


def check_output_dir(folder: Path, before: dict, out: Outcome, outputs: Iterable[str] = ()) -> None:
    """After a run in ``folder``: no temporary left, nothing but ``outputs`` new or changed, no output
    written on a refusal (batch/sweep exit 3 writes its results), nothing not a regular file replaced,
    and every output written complete (it loads)."""
    after = snapshot(folder)
    temps = [p for p in after if _TEMP.match(Path(p).name) or p.endswith(".tmp")]
    assert not temps, f"temporary files left: {temps} after {out}"
    outputs = set(outputs)
    for p, (kind, *_rest) in before.items():
        if kind != "file":
            assert p in after and after[p][0] == kind, f"{p} ({kind}) was replaced or removed by {out}"
    changed = {p for p in after if p not in before or (after[p] != before[p] and after[p][0] == "file")}
    stray = {p for p in changed if p not in outputs and not any(p.startswith(o + os.sep) for o in outputs)}
    assert not stray, f"files written that are no output: {sorted(stray)} by {out}"
    if out.code not in (0, 3):
        new = {p for p in changed if p in outputs}
        assert not new, f"a refused run wrote {sorted(new)}: {out}"
    for p in changed & outputs:
        _check_complete(folder / p, out)


def _check_complete(path: Path, out: Outcome) -> None:
    """An output file as written must load whole (not half-written)."""
    if path.is_dir():
        return
    suffix = path.suffix.lower()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if suffix == ".csv":
            pd.read_csv(path, comment=None)
        elif suffix == ".xlsx":
            import zipfile

            with zipfile.ZipFile(path) as z:
                assert z.testzip() is None, f"{path} is a damaged zip: {out}"
        elif suffix == ".parquet":
            pd.read_parquet(path)
        elif suffix == ".toml":
            from ckptplan import files

            files.load_scenario(path)
    assert path.stat().st_size > 0, f"{path} is empty: {out}"


def finite_frame(df: pd.DataFrame, allow_nan: Iterable[str] = ()) -> list[str]:
    """The numeric columns of ``df`` holding a value that is not finite (NaN allowed in ``allow_nan``)."""
    bad = []
    for c in df.columns:
        if df[c].dtype.kind not in "fiu":
            continue
        v = df[c].to_numpy(dtype=float)
        if c in allow_nan:
            v = v[~np.isnan(v)]
        if not np.isfinite(v).all():
            bad.append(c)
    return bad


def is_finite_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)
