"""Files out and files in, hardened (issue 16): exclusive and atomic outputs, no writes to pipes or
devices, clean-up on SIGTERM/SIGHUP/SIGKILL, several outputs all or none, a full disk, CSV injection in
headers, sweep size limits; CSV separators and decimal commas, shifted rows, bounded untrusted
inputs (.csv, .xlsx, .parquet, .toml) and strict JSON."""

from __future__ import annotations

import csv
import io
import math
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan import cli_batch
from ckptplan.cli import app as main_app
from ckptplan.engine import sweep as es
from ckptplan.files import atomic
from ckptplan.files import results as fr
from ckptplan.files import tables as ft
from ckptplan.files import untrusted
from ckptplan.workbook import results as wr

runner = CliRunner()
SEED = files.load_scenario("seed")
FIELDS_CSV = "name,checkpoint_stall_min,node_mtbf_h,nodes,useful_training_h,price_per_gpu_hour,restart_min"
SLOW_SWEEP = ["sweep", "--nodes", "1:20000:+1", "--deadline", "--runs", "500", "--chunk-rows", "100"]


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    cli_batch.register(a)
    return a


def cli(args: list[str], timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    """``python -m ckptplan ARGS`` in a fresh process (what a user's shell runs)."""
    return subprocess.run([sys.executable, "-m", "ckptplan", *args], capture_output=True, text=True, timeout=timeout,
                          **kwargs)


def ours(folder: Path) -> list[Path]:
    """Temporary files of our naming in ``folder``."""
    return [p for p in folder.iterdir() if atomic.TEMP_PATTERN.match(p.name)]


def wait_for_temp(folder: Path, proc: subprocess.Popen, timeout: float = 30) -> Path:
    """The temporary file of a running writer, once it holds data (so the signal lands mid-write)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in folder.iterdir():
            if p.name.endswith(".tmp") and p.stat().st_size > 0:
                return p
        if proc.poll() is not None:
            pytest.fail(f"the writer ended before writing: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail("no temporary file appeared")


# ============================================================================ 1. exclusive creation

def test_two_writers_racing_for_one_new_file_exactly_one_wins(tmp_path):
    out = tmp_path / "r.csv"
    barrier = threading.Barrier(2, timeout=20)
    outcome: dict[int, str] = {}

    def writer(k: int) -> None:
        def write(tmp: Path) -> None:
            tmp.write_text(f"writer {k}\n")
            barrier.wait()  # both passed every check and hold a complete temporary: now they race

        try:
            atomic.atomic_write(out, write)
            outcome[k] = "won"
        except FileExistsError as exc:
            outcome[k] = str(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(v == "won" for v in outcome.values()) == [False, True], outcome
    winner = next(k for k, v in outcome.items() if v == "won")
    loser = next(v for v in outcome.values() if v != "won")
    assert "exists" in loser and "--force" in loser
    assert out.read_text() == f"writer {winner}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"]


RACE = """
import os, sys, time
from pathlib import Path
import ckptplan.files.atomic as atomic
folder, out = Path(sys.argv[1]), sys.argv[2]
seal = atomic._seal
def held(temp, plan):  # written and synced: wait here until both processes are
    seal(temp, plan)
    (folder / f"ready-{os.getpid()}").touch()
    end = time.time() + 20
    while not (folder / "go").exists() and time.time() < end:
        time.sleep(0.01)
atomic._seal = held
sys.argv = ["ckptplan", "sweep", "--nodes", "64,128", "-o", out]
from ckptplan.cli import main
main()
"""


def test_two_cli_runs_racing_for_one_output_one_wins_the_other_exits_2(tmp_path):
    sync = tmp_path / "sync"
    sync.mkdir()
    out = tmp_path / "out.csv"
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(sync), str(out)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    end = time.time() + 30
    while len(list(sync.glob("ready-*"))) < 2 and time.time() < end and all(p.poll() is None for p in procs):
        time.sleep(0.05)
    ready = len(list(sync.glob("ready-*")))
    (sync / "go").touch()
    done = [p.communicate(timeout=60) for p in procs]
    assert ready == 2, done
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], done
    err = next(e for p, (_, e) in zip(procs, done) if p.returncode == 2)
    assert "exists" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert len(fr.read_results(out)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv", "sync"]


def test_a_filesystem_without_hard_links_is_a_clear_error(tmp_path, monkeypatch):
    def no_links(src, dst, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(atomic.os, "link", no_links)
    with pytest.raises(atomic.OutputError, match="no hard links.*--force"):
        atomic.atomic_write_text(tmp_path / "a.txt", "x")
    assert list(tmp_path.iterdir()) == []
    atomic.atomic_write_text(tmp_path / "a.txt", "x", force=True)  # --force: a plain rename
    assert (tmp_path / "a.txt").read_text() == "x"


# ===================================================================== 2. what may be replaced

def test_pipes_devices_and_folders_are_never_written_force_or_not(tmp_path, app):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    folder = tmp_path / "dir.csv"
    folder.mkdir()
    for target, kind in ((fifo, "named pipe"), (folder, "directory")):
        for force in (False, True):
            with pytest.raises(atomic.OutputTypeError, match=kind):
                atomic.atomic_write_text(target, "data", force=force)
        res = runner.invoke(app, ["sweep", "--nodes", "64,128", "-o", str(target), "--force"])
        assert res.exit_code == 2 and kind in res.output and "Traceback" not in res.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and folder.is_dir() and not any(folder.iterdir())
    for force in (False, True):  # checked only: never written, not even in a failing test
        with pytest.raises(atomic.OutputTypeError, match="character device"):
            atomic.check_destination("/dev/null", force=force)
    to_null = tmp_path / "null.csv"
    to_null.symlink_to("/dev/null")
    res = runner.invoke(app, ["sweep", "--nodes", "64,128", "-o", str(to_null), "--force"])
    assert res.exit_code == 2 and "character device" in res.output
    res = runner.invoke(app, ["sweep", "--nodes", "64,128", "-o", str(tmp_path / "no" / "such" / "r.csv")])
    assert res.exit_code == 2 and "does not exist: create the folder first" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.csv", "fifo.csv", "null.csv"]


def test_a_link_to_a_regular_file_is_followed_with_force_and_kept(tmp_path):
    real = tmp_path / "data" / "results.csv"
    real.parent.mkdir()
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "results.csv"
    link.symlink_to(real)
    with pytest.raises(atomic.OutputExistsError):
        atomic.atomic_write_text(link, "new")
    atomic.atomic_write_text(link, "new", force=True)
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the replaced file's mode is kept
    dangling = tmp_path / "gone.csv"
    dangling.symlink_to(tmp_path / "missing.csv")
    with pytest.raises(atomic.OutputExistsError):
        atomic.atomic_write_text(dangling, "x")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        atomic.atomic_write_text(dangling, "x", force=True)
    assert not (tmp_path / "missing.csv").exists()


# ================================================================ 3. signals and stale temporaries

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_mid_write_leave_no_output_and_no_temporary(tmp_path, sig):
    out = tmp_path / "big.csv"
    proc = subprocess.Popen([sys.executable, "-m", "ckptplan", *SLOW_SWEEP, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_temp(tmp_path, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert f"stopped by {signal.Signals(sig).name}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_sigkill_leaves_no_output_and_the_next_run_removes_the_temporary(tmp_path):
    out = tmp_path / "big.csv"
    proc = subprocess.Popen([sys.executable, "-m", "ckptplan", *SLOW_SWEEP, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_temp(tmp_path, proc)
    proc.kill()
    proc.communicate(timeout=60)
    assert not out.exists()  # complete or absent: never partial
    (left,) = ours(tmp_path)
    assert left.name.startswith(".big.csv.ckptplan-") and left.name.endswith(".tmp")
    hours_ago = time.time() - atomic.STALE_TEMP_SECONDS - 60
    os.utime(left, (hours_ago, hours_ago))  # the next run comes hours later
    res = cli(["sweep", "--nodes", "64,128", "-o", str(out)])
    assert res.returncode == 0, res.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["big.csv"]


def test_only_stale_unlocked_temporaries_of_our_naming_are_cleaned(tmp_path):
    import fcntl

    old = time.time() - atomic.STALE_TEMP_SECONDS - 60
    names = {"stale": ".a.csv.ckptplan-abcd1234.tmp", "fresh": ".a.csv.ckptplan-efgh5678.tmp",
             "locked": ".b.xlsx.ckptplan-ijkl9012.tmp", "helper": ".c.xlsx.ckptplan-mnop3456.tmp.cache",
             "foreign": ".a.csv.x1y2z3.tmp", "user": "notes.tmp"}
    for key, name in names.items():
        (tmp_path / name).write_text(key)
        if key != "fresh":
            os.utime(tmp_path / name, (old, old))
    with open(tmp_path / names["locked"]) as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # a writer still at work, for hours
        atomic.atomic_write_text(tmp_path / "new.txt", "x")
        left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["new.txt", names["fresh"], names["locked"], names["foreign"], names["user"]])


def test_terminate_on_signals_raises_terminated_and_restores_the_handlers():
    from ckptplan.files.signals import Terminated, terminate_on_signals

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as info:
        with terminate_on_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    assert info.value.code == 143 and str(info.value) == "stopped by SIGTERM"
    assert signal.getsignal(signal.SIGTERM) == before


# ===================================================================== 4. several outputs: all or none

def test_atomic_write_many_lands_all_or_none(tmp_path, monkeypatch):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"

    def crash(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic.atomic_write_many([(a, lambda t: t.write_text("A")), (b, crash)])
    assert list(tmp_path.iterdir()) == []
    # the second name is taken while the temporaries are written: the first new file is taken back
    def late(tmp: Path) -> None:
        tmp.write_text("B")
        b.write_text("someone else's")

    with pytest.raises(atomic.OutputExistsError):
        atomic.atomic_write_many([(a, lambda t: t.write_text("A")), (b, late)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"] and b.read_text() == "someone else's"
    # --force, a rename fails half way: both old files are put back as they were
    a.write_text("old A")
    b.write_text("old B")
    real_replace, calls = os.replace, []

    def flaky(src, dst, *args, **kwargs):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(atomic.os, "replace", flaky)
    with pytest.raises(atomic.OutputError, match="b.txt.*Input/output error"):
        atomic.atomic_write_many([(a, lambda t: t.write_text("new A")), (b, lambda t: t.write_text("new B"))], force=True)
    assert (a.read_text(), b.read_text()) == ("old A", "old B")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_excel_setup_writes_all_its_files_or_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    folder = tmp_path / "lite"
    folder.mkdir()
    (folder / "main.py").write_text("my main")
    (folder / "requirements.txt").write_text("my requirements")
    real_replace, calls = os.replace, []

    def flaky(src, dst, *args, **kwargs):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", flaky)
    res = runner.invoke(main_app, ["excel-setup", "--lite", "--no-workbook", "--force", str(folder)])
    assert res.exit_code == 2 and "No space left on device" in res.output, res.output
    assert (folder / "main.py").read_text() == "my main"
    assert (folder / "requirements.txt").read_text() == "my requirements"
    assert sorted(p.name for p in folder.iterdir()) == ["main.py", "requirements.txt"]
    monkeypatch.setattr(os, "replace", real_replace)
    res = runner.invoke(main_app, ["excel-setup", "--lite", "--no-workbook", "--force", str(folder)])
    assert res.exit_code == 0 and "def " in (folder / "main.py").read_text()


# ===================================================================================== 5. full disk

@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (root); elsewhere a 256 KiB file-size limit on the child process (EFBIG, not ENOSPC)."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = hasattr(os, "geteuid") and os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], capture_output=True).returncode == 0

    def limit() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.RLIM_INFINITY))

    try:
        yield folder, None if mounted else limit
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], capture_output=True)


@pytest.mark.parametrize("suffix", [".xlsx", ".csv"])
def test_a_full_disk_is_one_clean_error_and_leaves_nothing(small_disk, suffix):
    folder, preexec = small_disk
    res = cli(["sweep", "--nodes", "1:1000:+1", "-o", str(folder / f"out{suffix}")], preexec_fn=preexec)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"cannot write {folder / f'out{suffix}'}: " in line
    assert ("No space left on device" in line) if preexec is None else ("too large" in line)
    assert os.listdir(folder) == []


# ================================================================================= 6. CSV injection

def test_csv_output_neutralises_header_names_and_every_text_cell(tmp_path, app):
    src = tmp_path / "in.csv"
    src.write_text('name,checkpoint_stall_min,"=HYPERLINK(""http://x"",""y"")",@cmd,-x,+y,ok\n'
                   "=1+1,1,=2+2,@a,-b,+c,plain\n")
    out = tmp_path / "out.csv"
    res = runner.invoke(app, ["batch", str(src), "-o", str(out), "--keep-extra"])
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(io.StringIO(out.read_text())))
    header = rows[0]
    for name in ('=HYPERLINK("http://x","y")', "@cmd", "-x", "+y"):
        assert "'" + name in header, header
    for cell in [c for row in rows for c in row]:
        try:
            float(cell)
        except ValueError:
            assert not cell.startswith(fr.CSV_INJECTION_PREFIXES), cell
    frame = pd.DataFrame({"=a": ["x"], "b": ["@y"]})
    assert list(fr.neutralise_csv_text(frame).columns) == ["'=a", "b"] and list(frame.columns) == ["=a", "b"]


# ===================================================================================== 7. sweep size

def test_sweep_refuses_a_grid_beyond_the_limit_before_any_work(tmp_path, app, monkeypatch):
    def started(*args, **kwargs):
        raise RuntimeError("evaluation started")

    monkeypatch.setattr(es, "iter_results", started)
    out = tmp_path / "huge.csv"
    res = runner.invoke(app, ["sweep", "--nodes", "1:1000:+1", "--checkpoint-stall-min", "0.01:10:+0.01",
                              "--restart-min", "1:1000:+1", "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert "1,000 x 1,000 x 1,000 = 1,000,000,000 rows" in res.output
    assert f"limit of {engine.fields.MAX_SWEEP_ROWS:,} rows" in res.output and "--max-rows" in res.output
    res = runner.invoke(app, ["sweep", "--nodes", "64,128,256", "--max-rows", "2", "-o", str(out)])
    assert res.exit_code == 2 and "limit of 2 rows" in res.output
    assert list(tmp_path.iterdir()) == []


# ============================================================================ 8. CSV separators

SEMICOLON = ("name;checkpoint_stall_min;node_mtbf_h;nodes;useful_training_h;price_per_gpu_hour;restart_min\n"
             "a;1,5;2560;128;720;2,5;10\n"
             "b;0,75;1.234,5;64;720;3;7,5\n")
POINTS = (FIELDS_CSV + "\n" + "a,1.5,2560,128,720,2.5,10\n" + "b,0.75,1234.5,64,720,3,7.5\n")


def test_semicolons_and_decimal_commas_read_as_excel_writes_them(tmp_path, app):
    (tmp_path / "eu.csv").write_text(SEMICOLON, encoding="utf-8-sig")
    (tmp_path / "us.csv").write_text(POINTS)
    (tmp_path / "tab.csv").write_text(POINTS.replace(",", "\t"))
    eu, us, tab = (ft.read_scenarios(tmp_path / f"{n}.csv") for n in ("eu", "us", "tab"))
    assert eu["checkpoint_stall_min"].tolist() == [1.5, 0.75]
    assert eu["node_mtbf_h"].tolist() == [2560.0, 1234.5] and eu["restart_min"].tolist() == [10.0, 7.5]
    for other in (us, tab):
        pd.testing.assert_frame_equal(eu, other, check_like=True)
    res = runner.invoke(app, ["batch", str(tmp_path / "eu.csv"), "-o", str(tmp_path / "out.csv")])
    assert res.exit_code == 0, res.output
    assert fr.read_results(tmp_path / "out.csv")["price_per_gpu_hour"].tolist() == [2.5, 3.0]


def test_plain_and_quoted_files_read_the_same(tmp_path):
    """A file without quotes goes through pandas' parser, one with quotes through the csv module: same table."""
    plain = FIELDS_CSV + "\r\n" + "a,1.5,2560,128,720,2.5,10\r\n" + "\r\n" + "b,0.5,2560,64,720,2.5,\r\n"
    quoted = plain.replace("a,1.5", '"a",1.5')
    (tmp_path / "plain.csv").write_text(plain, newline="")
    (tmp_path / "quoted.csv").write_text(quoted, newline="")
    assert untrusted.plain_csv_layout(tmp_path / "plain.csv", ",", 7)
    assert not untrusted.plain_csv_layout(tmp_path / "quoted.csv", ",", 7)
    a, b = ft.read_scenarios(tmp_path / "plain.csv"), ft.read_scenarios(tmp_path / "quoted.csv")
    pd.testing.assert_frame_equal(a, b)
    assert list(a.index) == [1, 3] and a["restart_min"].isna().tolist() == [False, True]
    semi = tmp_path / "semi.csv"  # a quoted name holding the separator, decimal commas around it
    semi.write_text('name;checkpoint_stall_min\n"x; y";1,5\n')
    t = ft.read_scenarios(semi)
    assert t["name"].tolist() == ["x; y"] and t["checkpoint_stall_min"].tolist() == [1.5]
    lone_cr = tmp_path / "cr.csv"  # a carriage return alone ends a line for pandas: the csv module reads it
    lone_cr.write_bytes(b"name,nodes\ra,1\rb,2\r")
    assert not untrusted.plain_csv_layout(lone_cr, ",", 2)
    assert ft.read_scenarios(lone_cr)["nodes"].tolist() == [1, 2]


def test_rows_with_shifted_columns_are_never_evaluated(tmp_path, app):
    extra = tmp_path / "extra.csv"  # decimal commas in a comma-separated file: one field too many on every row
    extra.write_text(FIELDS_CSV + "\n" + "a,1,5,2560,128,720,2.5,10\n" + "b,2,0,2560,128,720,2.5,10\n")
    with pytest.raises(engine.InputError, match=r"extra.csv', row 1 \(line 2\): has 8 fields but the header has 7"):
        ft.read_scenarios(extra)
    fewer = tmp_path / "fewer.csv"
    fewer.write_text(FIELDS_CSV + "\n" + "a,1.5,2560,128,720,2.5,10\n\n" + "b,1.5,2560,128,720,2.5\n")
    with pytest.raises(engine.InputError, match=r"fewer.csv', row 3 \(line 4\): has 6 fields but the header has 7"):
        ft.read_scenarios(fewer)
    res = runner.invoke(app, ["batch", str(extra), "-o", str(tmp_path / "out.csv")])
    assert res.exit_code == 2 and "8 fields" in res.output and "decimal comma" in res.output
    assert not (tmp_path / "out.csv").exists()
    trailing = tmp_path / "trailing.csv"  # an empty field after the last column shifts nothing
    trailing.write_text(FIELDS_CSV + ",\n" + "a,1.5,2560,128,720,2.5,10,\n" + "b,1.5,2560,128,720,2.5,10\n")
    assert ft.read_scenarios(trailing)["restart_min"].tolist() == [10.0, 10.0]


def test_ambiguous_separators_are_refused_or_given(tmp_path, app):
    mixed = tmp_path / "mixed.csv"
    mixed.write_text(SEMICOLON.replace("2,5;10", "2.5;10"))
    with pytest.raises(engine.InputError, match=r"mixes decimal points \(row 1, price_per_gpu_hour = '2.5'\) and "
                                                r"decimal commas \(row 1, checkpoint_stall_min = '1,5'\)"):
        ft.read_scenarios(mixed)
    grouped = tmp_path / "grouped.csv"
    grouped.write_text("name;node_mtbf_h\na;2.560\n")
    with pytest.raises(engine.InputError, match="could be written with a decimal point or a thousands separator.*--decimal"):
        ft.read_scenarios(grouped)
    assert ft.read_scenarios(grouped, decimal=",")["node_mtbf_h"].tolist() == [2560.0]
    assert ft.read_scenarios(grouped, decimal=".")["node_mtbf_h"].tolist() == [2.56]
    res = runner.invoke(app, ["batch", str(grouped), "--decimal", ",", "-o", str(tmp_path / "o.csv")])
    assert res.exit_code == 0, res.output
    both = tmp_path / "both.csv"
    both.write_text("name,nodes;x\na,1;2\n")
    with pytest.raises(engine.InputError, match="splits on ',' and ';'.*--delimiter"):
        ft.read_scenarios(both)
    assert list(ft.read_scenarios(both, delimiter=";").columns) == ["name,nodes", "x"]


# ======================================================================= 9. untrusted inputs bounded

def test_a_200_mb_column_name_is_refused_quickly(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as fh:
        fh.write(b"name,")
        block = b"a" * (1 << 20)
        for _ in range(200):
            fh.write(block)
        fh.write(b"\nx,1\n")
    started = time.perf_counter()
    with pytest.raises(engine.InputError) as info:
        ft.read_scenarios(path)
    assert time.perf_counter() - started < 5
    msg = str(info.value)
    assert str(path) in msg and "line 1" in msg and "10,000 characters" in msg and len(msg) < 500


def _xlsx(path: Path, rows: list[list]) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Scenarios"
    for row in rows:
        ws.append(row)
    wb.save(path)
    return path


def _rezip(src: Path, dst: Path, replace: dict) -> Path:
    """A copy of the package with some parts replaced (bytes, or a callable writing into the open member)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            new = replace.get(item.filename)
            if callable(new):
                with zout.open(item.filename, "w", force_zip64=True) as fh:
                    new(fh)
            else:
                zout.writestr(item.filename, zin.read(item.filename) if new is None else new)
    return dst


def test_long_header_names_and_cells_are_refused_naming_the_cell(tmp_path, app):
    long = "x" * 20_000
    path = _xlsx(tmp_path / "h.xlsx", [["name", long], ["a", 1]])
    with pytest.raises(engine.InputError, match=r"h.xlsx', sheet 'Scenarios', header cell B1: holds 20,000 characters, "
                                                r"above the limit of 10,000"):
        ft.read_scenarios(path)
    res = runner.invoke(app, ["batch", str(path), "-o", str(tmp_path / "o.csv")])
    assert res.exit_code == 2 and len(res.output) < 600, res.output[:300]
    path = _xlsx(tmp_path / "c.xlsx", [["name", "nodes"], [long, 1]])
    with pytest.raises(engine.InputError, match=r"c.xlsx', sheet 'Scenarios', cell A2: holds 20,000 characters"):
        ft.read_scenarios(path)
    (tmp_path / "c.csv").write_text(f"name,nodes\n{long},1\n")
    with pytest.raises(engine.InputError, match=r"c.csv', row 1, column name: holds 20,000 characters"):
        ft.read_scenarios(tmp_path / "c.csv")


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet", ".toml"])
def test_row_count_is_bounded_before_the_work(tmp_path, suffix, app):
    table = engine.to_table([SEED.replace(name=f"s{i}") for i in range(5)])
    path = wr.write_scenarios(table, tmp_path / f"t{suffix}")
    with pytest.raises(engine.InputError, match="more than 3 data rows.*--max-rows"):
        ft.read_scenarios(path, max_rows=3)
    assert len(ft.read_scenarios(path, max_rows=5)) == 5
    res = runner.invoke(app, ["batch", str(path), "--max-rows", "4", "-o", str(tmp_path / "o.csv")])
    assert res.exit_code == 2 and "more than 4 data rows" in res.output


_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def _with_shared_strings(tmp_path: Path, name: str, sst: object, index_of_b: int = 3) -> Path:
    """A workbook whose text cells are shared strings (name, nodes, a, b), as Excel writes them."""
    good = _xlsx(tmp_path / "inline.xlsx", [["name", "nodes"], ["a", 1], ["b", 2]])
    cells = [[("A1", "s", 0), ("B1", "s", 1)], [("A2", "s", 2), ("B2", "n", 1)], [("A3", "s", index_of_b), ("B3", "n", 2)]]
    rows = "".join(f'<row r="{k}">' + "".join(f'<c r="{r}" t="{t}"><v>{v}</v></c>' if t == "s" else
                                             f'<c r="{r}"><v>{v}</v></c>' for r, t, v in row) + "</row>"
                   for k, row in enumerate(cells, start=1))
    sheet = f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{_MAIN}"><sheetData>{rows}</sheetData></worksheet>'
    with zipfile.ZipFile(good) as zf:
        types = zf.read("[Content_Types].xml").decode()
    types = types.replace("</Types>", '<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
                          'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>')
    if sst is None:
        sst = (f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{_MAIN}" count="4" uniqueCount="4"><si><t>name</t>'
               "</si><si><t>nodes</t></si><si><t>a</t></si><si><t>b</t></si></sst>").encode()
    out = _rezip(good, tmp_path / name, {"xl/worksheets/sheet1.xml": sheet.encode(), "[Content_Types].xml": types.encode()})
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as zf:
        if callable(sst):
            with zf.open("xl/sharedStrings.xml", "w", force_zip64=True) as fh:
                sst(fh)
        else:
            zf.writestr("xl/sharedStrings.xml", sst)
    return out


def test_shared_strings_are_read(tmp_path):
    table = ft.read_scenarios(_with_shared_strings(tmp_path, "ok.xlsx", None))
    assert table["name"].tolist() == ["a", "b"] and table["nodes"].tolist() == [1, 2]


def test_a_400_mb_shared_string_in_a_small_xlsx_is_refused_before_openpyxl(tmp_path):
    block = b"a" * (1 << 20)

    def huge(fh) -> None:
        fh.write(f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{_MAIN}" count="4" uniqueCount="4"><si><t>name'
                 '</t></si><si><t>nodes</t></si><si><t>'.encode())
        for _ in range(400):
            fh.write(block)
        fh.write(b"</t></si><si><t>b</t></si></sst>")

    bomb = _with_shared_strings(tmp_path, "bomb.xlsx", huge)
    assert bomb.stat().st_size < 1_000_000
    started = time.perf_counter()
    with pytest.raises(engine.InputError, match=r"shared-strings part xl/sharedStrings.xml unpacks to 419,43\d,\d\d\d "
                                                r"bytes \(limit 134,217,728\)"):
        ft.read_scenarios(bomb)
    assert time.perf_counter() - started < 5


def test_damaged_workbooks_are_clear_errors(tmp_path):
    damaged = _with_shared_strings(tmp_path, "index.xlsx", None, index_of_b=999)
    with pytest.raises(engine.InputError, match=r"index.xlsx.*sheet row 3.*shared string the workbook does not hold"):
        ft.read_scenarios(damaged)
    good = _xlsx(tmp_path / "good.xlsx", [["name", "nodes"], ["a", 1], ["b", 2]])
    # a DTD hidden behind a long comment (past the first 64 KB) is still found
    with zipfile.ZipFile(good) as zf:
        book = zf.read("xl/workbook.xml")
    body = book.split(b"?>", 1)[1] if book.startswith(b"<?xml") else book
    hidden = (b'<?xml version="1.0"?><!--' + b"x" * 100_000 + b'--><!DOCTYPE l [<!ENTITY l "lol">]>' + body)
    unsafe = _rezip(good, tmp_path / "dtd.xlsx", {"xl/workbook.xml": hidden})
    with pytest.raises(engine.InputError, match="refused as unsafe XML"):
        ft.read_scenarios(unsafe)


def test_a_defined_name_beyond_the_sheet_is_a_clear_error(tmp_path):
    from ckptplan import workbook

    plan = tmp_path / "plan.xlsx"
    workbook.write_workbook(plan, SEED, deadline=None)
    with zipfile.ZipFile(plan) as zf:
        book = zf.read("xl/workbook.xml").decode()
    moved = book.replace("'Inputs'!$B$6<", "'Inputs'!$B$2000000<")
    assert moved != book
    bad = _rezip(plan, tmp_path / "bad.xlsx", {"xl/workbook.xml": moved.encode()})
    res = runner.invoke(main_app, ["workbook", "--from", str(bad), "-o", str(tmp_path / "out.xlsx"), "--no-deadline"])
    assert res.exit_code == 2, res.output
    assert "bad.xlsx" in res.output and "'checkpoint_stall_min'" in res.output and "beyond the sheet" in res.output
    assert not (tmp_path / "out.xlsx").exists()


def test_scenario_files_a_folder_an_unreadable_file_and_deep_nesting(tmp_path, monkeypatch):
    folder = tmp_path / "presets"
    folder.mkdir()
    res = runner.invoke(main_app, ["plan", "-t", str(folder)])
    assert res.exit_code == 2 and f"scenario file='{folder}': is a directory" in res.output.replace("\n", ""), res.output
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 10_000 + "]" * 10_000 + "\n")
    res = runner.invoke(main_app, ["plan", "-t", str(deep)])
    assert res.exit_code == 2 and "deep.toml" in res.output and "nests" in res.output, res.output[-300:]
    with pytest.raises(engine.InputError, match="nests"):
        ft.read_scenarios(deep)
    dotted = tmp_path / "dotted.toml"
    dotted.write_text("[scenario]\n" + ".".join(["a"] * 40) + " = 1\n")
    with pytest.raises(engine.InputError, match="40 levels deep|41 levels deep|levels deep"):
        files.load_scenario(dotted)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[scenario]\nname = "caf\xe9"\n')
    with pytest.raises(engine.InputError, match=r"latin.toml.*not UTF-8 text \(byte 0xe9 on line 2\)"):
        files.load_scenario(latin)
    good = tmp_path / "good.toml"
    good.write_text((files.TEMPLATE_DIR / "seed.toml").read_text())

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(untrusted, "open", denied, raising=False)
    with pytest.raises(engine.InputError, match=r"good.toml'?: cannot be read \(Permission denied\)"):
        files.load_scenario(good)
    monkeypatch.undo()
    monkeypatch.setattr(untrusted, "MAX_TOML_BYTES", 100)
    with pytest.raises(engine.InputError, match=r"good.toml.*bytes \(limit 100"):
        files.load_scenario(good)


# ================================================================================ 10. strict JSON

def test_batch_json_never_holds_infinity_or_nan(tmp_path, capsys):
    summary = es.BatchSummary(describe=("name",))
    summary.rows = summary.ok = 1
    summary.best = {"USD": {"row": 1, "value": math.inf, "total_cost": math.nan, "goodput": np.float64(0.5),
                            "describe": {"name": "x"}}}
    cli_batch._print_summary(summary, tmp_path / "o.csv", 0.5, as_json=True)
    text = capsys.readouterr().out
    assert "Infinity" not in text and "NaN" not in text
    import json

    data = json.loads(text)
    assert data["best"]["USD"]["value"] is None and data["best"]["USD"]["goodput"] == 0.5
    assert cli_batch.json_ready({"a": (np.int64(3), -math.inf)}) == {"a": [3, None]}
