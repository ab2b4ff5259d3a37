"""The fuzz suite's tally: cases tried and failures per area, printed as one line after the run.

``fuzz: engine 1200 cases, cli 340 cases, files 80 cases, 0 failures`` (areas: tests/fuzz/README.md).
Each test counts its cases with ``corpus.count(area, n)``; a failed test counts as a failure of its
module's area. Any failure fails the build like every other test.
"""

from __future__ import annotations

from pathlib import Path

import corpus  # this folder is on sys.path (pytest's default import mode, no __init__.py)
import pytest

_AREA_OF_MODULE = {"test_engine_fuzz": "engine", "test_cli_hostile": "cli", "test_files_hostile": "files",
                   "test_plans_hostile": "plans", "test_logs_hostile": "logs", "test_audit_hostile": "audit",
                   "test_xlsx_hostile": "xlsx", "test_parquet_hostile": "parquet"}


def _area(nodeid: str) -> str | None:
    path = nodeid.split("::", 1)[0]
    if "fuzz" not in Path(path).parts:
        return None
    return _AREA_OF_MODULE.get(Path(path).stem)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    area = _area(report.nodeid)
    if area is None:
        return
    if hasattr(report, "wasxfail"):
        if report.when == "call" and report.skipped:
            corpus.XFAILED[area] += 1
        elif report.failed:  # an xfail(strict=True) that passed: its bug was fixed, the marker must go
            corpus.FAILURES[area] += 1
        return
    if report.failed:
        corpus.FAILURES[area] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if any(corpus.CASES.values()) or any(corpus.FAILURES.values()):
        terminalreporter.write_line(corpus.summary_line())
