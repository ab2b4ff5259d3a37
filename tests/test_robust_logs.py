"""Logs read by one reader under one rule, with bounded work (issue 25, "Robustness"): an unterminated quote
refused by fit and actual alike, a log over the size limit refused by its size on disk, a huge cell refused
by its row and length (never quoted whole), JSON nested too deep a bad row, and no process abort after a
refusal that follows a threaded Arrow read within milliseconds."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ckptplan import files
from ckptplan.cli import app
from ckptplan.engine import InputError
from ckptplan.files import logs
from ckptplan.files.logs import LogError, fit_log, measure_log, read_log

runner = CliRunner()
HEAD = "timestamp,event,cause,checkpoint_stall_s\n"
BODY = ("2024-03-04T08:00:00,start,,\n2024-03-04T09:00:00,interruption,{cause},\n"
        "2024-03-04T09:10:00,restart_complete,,\n2024-03-04T12:00:00,checkpoint_saved,,30\n2024-03-04T15:00:00,end,,\n")


def _write(tmp_path: Path, text: str | bytes, name: str = "log.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


@pytest.mark.parametrize("cause, rule", [('"hw,', "is not closed before the end of the file"),
                                         ('"hw"x', "row 3: ',' expected after")])
def test_a_broken_quote_is_refused_by_fit_and_actual_alike(tmp_path, cause, rule):
    """Before: the open quote swallowed every later row into one cell and both commands answered for the part
    before it (a log of 60 min instead of 7 h)."""
    path = _write(tmp_path, HEAD + BODY.format(cause=cause))
    for reader in (read_log, fit_log, measure_log):
        with pytest.raises(InputError, match=rule):
            reader(path)
    outs = [runner.invoke(app, [command, str(path)]) for command in ("fit", "actual")]
    assert [o.exit_code for o in outs] == [2, 2]
    assert outs[0].stderr == outs[1].stderr and rule.split(":")[-1].strip() in outs[0].stderr
    assert read_log(_write(tmp_path, HEAD + BODY.format(cause='"hw, ""node 7"""'), "ok.csv"))["cause"].iloc[1] == \
        'hw, "node 7"'


def test_the_reader_returns_only_when_arrow_has_let_go_of_the_bytes(monkeypatch):
    """The cause of the exit-134 abort after a refused header: a threaded pyarrow read returned while its
    worker threads still held the Python buffer over the bytes (about a third of the reads here); the last
    one to drop it took the GIL in the buffer's destructor while the interpreter was finalising. The fast
    reader now waits for the release: the bytes' reference count is back when it returns, every time."""
    import time

    naps = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (naps.append(s), real_sleep(s)))
    data = files.template_path("example-step-log.csv").read_bytes()
    for _ in range(40):
        before = sys.getrefcount(data)
        table = logs._csv_fast(data, "example")  # noqa: SLF001  (the reader's own tokeniser, the unit under test)
        assert table is not None and len(table.cells[0]) > 5000
        assert sys.getrefcount(data) == before
    assert len(naps) < 40 * 1000  # it waits for the release, not for its time-out (50,000 naps of 0.2 ms a read)


def test_a_duplicated_header_column_exits_2_in_real_processes(tmp_path):
    src = files.template_path("example-step-log.csv").read_text().splitlines()
    path = _write(tmp_path, "\n".join([src[0] + ",stall_s"] + [line + ",1" for line in src[1:]]) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "ckptplan", "actual", str(path)], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "duplicate column" in proc.stderr and "terminate called" not in proc.stderr


def test_a_log_over_the_size_limit_is_refused_by_its_size_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as fh:
        fh.truncate(512 * logs.MAX_LOG_ROWS + 1)  # sparse: nothing to read, but the size says no

    def no_open(*args, **kwargs):
        raise AssertionError("the log was opened")

    monkeypatch.setattr(Path, "open", no_open)
    with pytest.raises(InputError, match=r"2,560,000,001 bytes, larger than"):
        read_log(path)


@pytest.mark.parametrize("quoted", [False, True])
def test_a_huge_cell_is_refused_by_its_row_without_reading_it_whole_or_quoting_it(tmp_path, quoted):
    cell = "x" * (20 << 20)
    path = _write(tmp_path, HEAD + '2024-03-04T08:00:00,start,,\n2024-03-04T09:00:00,interruption,'
                  + (f'"{cell}"' if quoted else cell) + ",\n2024-03-04T10:00:00,end,,\n")
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as err:
            read_log(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "row 3 is over 65,536 bytes long" in str(err.value) and len(str(err.value)) < 300
    assert peak < 60 << 20  # one 16 MB block read (and its line scan), not the 20 MB cell parsed into columns
    if quoted:
        out = runner.invoke(app, ["actual", str(path)])
        assert out.exit_code == 2 and len(out.stderr) < 400


def test_an_error_quotes_at_most_80_characters_of_a_value(tmp_path):
    path = _write(tmp_path, HEAD + f"{'9' * 30_000},start,,\n2024-03-04T15:00:00,end,,\n")
    with pytest.raises(LogError) as err:
        read_log(path)
    assert len(str(err.value)) < 400 and "(30,000 characters)" in str(err.value)


@pytest.mark.parametrize("depth", [20_000, 100_000])
def test_json_nested_deep_is_a_bad_row_or_a_too_long_one(tmp_path, depth):
    head = '{"timestamp": "2024-03-04T08:00:00", "event": "start"}\n'
    path = _write(tmp_path, head + "[" * depth + "]" * depth + "\n", "deep.jsonl")
    with pytest.raises(InputError) as err:
        read_log(path)
    assert ("nested too deep" if 2 * depth <= logs.MAX_LOG_LINE_BYTES else "row 2 is over") in str(err.value)
    out = runner.invoke(app, ["fit", str(path)])
    assert out.exit_code == 2 and out.exception is None or isinstance(out.exception, SystemExit)
