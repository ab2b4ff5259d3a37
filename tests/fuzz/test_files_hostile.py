"""Hostile files through the commands that read them (area "files"): scenario files for every command
that takes ``--template``/``--scenario``, malformed CSV/XLSX/Parquet/TOML tables for ``batch``,
malformed logs for ``fit`` and ``actual``, fake checkpoints for ``audit``.

Each run must end in a clean answer or a clean refusal (:func:`corpus.check_run`) and leave the
folder as it should (:func:`corpus.check_output_dir`). Pipes and devices run in a real process with
a timeout: a reader that waits on a pipe would otherwise hang the suite.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import corpus
import pytest
from test_cli_hostile import EXAMPLE_LOG, run_case

SEED_TOML = """[scenario]
name = "{name}"
description = "{desc}"
checkpoint_stall_min = {stall}
node_mtbf_h = 2560.0
nodes = {nodes}
useful_training_h = 720.0
price_per_gpu_hour = 2.5
"""


def _toml(name: str = "fuzz", desc: str = "", stall: str = "2.0", nodes: str = "128") -> str:
    return SEED_TOML.format(name=name, desc=desc, stall=stall, nodes=nodes)


def _escape_toml(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').translate({i: f"\\u{i:04x}" for i in range(32)}
                                                                     | {0x7f: "\\u007f"})


# ---------------------------------------------------------------------------- scenario files

def _scenario_files(folder: Path) -> dict[str, Path]:
    """name -> path of each hostile scenario file (made in ``folder``)."""
    out: dict[str, Path] = {}

    def put(name: str, data: bytes | str) -> None:
        path = folder / f"{name}.toml"
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        out[name] = path

    (folder / "a-folder.toml").mkdir()
    out["a folder"] = folder / "a-folder.toml"
    (folder / "plain-file").write_text("x")
    out["a path through a file"] = folder / "plain-file" / "x.toml"
    out["a missing file"] = folder / "missing.toml"
    os.symlink("loop-b.toml", folder / "loop-a.toml")
    os.symlink("loop-a.toml", folder / "loop-b.toml")
    out["a symlink loop"] = folder / "loop-a.toml"
    (folder / "unreadable.toml").write_text(_toml(), encoding="utf-8")
    (folder / "unreadable.toml").chmod(0)  # unreadable unless the suite runs as root
    out["an unreadable file"] = folder / "unreadable.toml"
    huge = folder / "huge.toml"
    with open(huge, "wb") as fh:
        fh.truncate(40 * 2**20)  # sparse: 40 MB of NUL bytes, above the 32 MB limit
    out["a 40 MB file"] = huge
    put("empty", "")
    put("nul bytes", b"\x00" * 100)
    put("latin-1", _toml(desc="caf\xe9").encode("latin-1"))
    put("bom", b"\xef\xbb\xbf" + _toml().encode())
    put("deep tables", "[scenario]\n" + "[" + ".".join(f"t{i}" for i in range(500)) + "]\nx = 1\n")
    put("deep arrays", "[scenario]\nname = " + "[" * 5000 + "]" * 5000 + "\n")
    put("deep inline tables", "[scenario]\nname = " + "{a = " * 400 + "1" + "}" * 400 + "\n")
    put("not toml", "this is = = not toml\n[[[")
    put("no scenario table", "name = 'x'\n")
    put("missing field", "[scenario]\nname = 'x'\nnodes = 128\n")
    put("unknown field", _toml() + "colour = 'blue'\n")
    put("nan stall", _toml(stall="nan"))
    put("inf stall", _toml(stall="inf"))
    put("negative stall", _toml(stall="-1.0"))
    put("text nodes", _toml(nodes='"128"'))
    put("bool nodes", _toml(nodes="true"))
    put("array nodes", _toml(nodes="[1, 2]"))
    put("table nodes", _toml(nodes="{ a = 1 }"))
    put("date nodes", _toml(nodes="1979-05-27T07:32:00Z"))
    put("fractional nodes", _toml(nodes="1.5"))
    put("1e308 stall", _toml(stall="1e308"))
    put("5e-324 stall", _toml(stall="5e-324"))
    put("int64 max nodes", _toml(nodes=str(2**63 - 1)))
    put("long text", _toml(name="x" * 20_000))
    for i, name in enumerate(corpus.HOSTILE_NAMES):
        put(f"hostile name {i}", _toml(name=_escape_toml(name), desc=_escape_toml(name)))
    put("bad domains", _toml() + "[[scenario.domains]]\nname = 'rack'\nmtbf_h = 'often'\nnodes_per_domain = -1\n")
    put("domain not a table", _toml() + "domains = 3\n")
    put("designs garbage", _toml() + "[[designs]]\nname = 1\nnodes = 'many'\n")
    return out


@pytest.fixture(scope="module")
def scenario_folder(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("scenarios")
    return folder, _scenario_files(folder)


_READERS = [
    ("plan", ["--scenario", "{f}"]), ("plan", ["--template", "{f}", "--json"]), ("compare", ["--template", "{f}"]),
    ("deadline", ["--template", "{f}", "--runs", "30"]), ("sweep", ["-t", "{f}", "-o", "out.csv", "--nodes", "64"]),
    ("batch", ["in.csv", "-t", "{f}", "-o", "out.csv"]), ("workbook", ["--template", "{f}", "-o", "out.xlsx",
                                                                      "--no-deadline"]),
    ("fit", ["{log}", "--template", "{f}", "--emit-scenario", "out.toml"]),
]
def _scenario_cases() -> list:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        names = sorted(_scenario_files(Path(tmp)))
    cases = []
    for k, name in enumerate(names):
        # every file through plan; each file through one more reader, in turn (every reader sees many files)
        for command, args in (_READERS[0], _READERS[1 + k % (len(_READERS) - 1)]):
            cases.append((name, command, args))
    return cases


SCENARIO_CASES = _scenario_cases()


@pytest.mark.parametrize("name, command, args", SCENARIO_CASES, ids=[f"{c} {n}" for n, c, _ in SCENARIO_CASES])
def test_hostile_scenario_files(tmp_path, scenario_folder, name, command, args):
    _, paths = scenario_folder
    (tmp_path / "in.csv").write_text("name,checkpoint_stall_min\na,2\n", encoding="utf-8")
    real = [str(paths[name]) if a == "{f}" else str(EXAMPLE_LOG) if a == "{log}" else a for a in args]
    out = run_case(command, real, tmp_path, area="files")
    if name == "hostile name 0" and command == "plan" and out.code == 0 and "--json" not in args:
        assert corpus.HOSTILE_NAMES[0] in out.stdout, "markup in a name was acted on, not shown"


@pytest.mark.parametrize("command", ["plan", "deadline", "compare"])
def test_a_scenario_file_with_an_integer_beyond_float_range(tmp_path, command):
    (tmp_path / "big.toml").write_text(_toml(nodes="1" + "0" * 400), encoding="utf-8")
    out = run_case(command, ["--template", str(tmp_path / "big.toml")], tmp_path, area="files")
    # named, not only survived (ckptplan deadline already turns the OverflowError into one error line)
    assert out.code == 2 and "nodes" in out.stderr, out


def _real_process(args: list[str], folder: Path, timeout: float = 60) -> corpus.Outcome:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS")}
    proc = subprocess.run([sys.executable, "-m", "ckptplan", *args], cwd=folder, capture_output=True, text=True,
                          env=env, timeout=timeout)
    return corpus.Outcome(args, proc.returncode, proc.stdout, proc.stderr)






@pytest.mark.parametrize("args, timeout", [
    (["plan", "--template", "/dev/zero"], 60), (["batch", "/dev/zero", "-o", "out.csv"], 60),
    (["audit", "/dev/zero"], 60),
    (["fit", "/dev/zero"], 60),
], ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_devices_are_refused_without_reading_them(tmp_path, args, timeout):
    """In a real process with a timeout: a reader of /dev/zero never ends."""
    corpus.count("files")
    before = corpus.snapshot(tmp_path)
    out = _real_process(args, tmp_path, timeout=timeout)
    corpus.check_run(out, codes=(2,))
    corpus.check_output_dir(tmp_path, before, out, {"out.csv"})


def _feed(pipe: Path, data: bytes, seconds: float = 3) -> None:
    """Write ``data`` into the named pipe if a reader opens it within ``seconds`` (so a reader that should
    have refused the pipe gets its data and ends instead of hanging the suite)."""
    import threading
    import time

    def feed() -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # no reader yet (or never: the command refused the pipe)
                time.sleep(0.01)
                continue
            os.set_blocking(fd, True)
            os.write(fd, data)
            os.close(fd)
            return

    threading.Thread(target=feed, daemon=True).start()




@pytest.mark.parametrize("args", [
    ["plan", "--scenario", "{pipe}"], ["deadline", "--template", "{pipe}"], ["batch", "{pipe}", "-o", "out.csv"],
    ["audit", "{pipe}"],
    ["batch", "in.csv", "-t", "{pipe}", "-o", "out.csv"],
], ids=lambda a: " ".join(a))
def test_named_pipes_are_refused_without_reading_them(tmp_path, args):
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)
    (tmp_path / "in.csv").write_text("name,checkpoint_stall_min\na,2\n", encoding="utf-8")
    _feed(pipe, _toml().encode())
    out = run_case(args[0], [str(pipe) if a == "{pipe}" else a for a in args[1:]], tmp_path, area="files")
    assert out.code == 2 and "regular file" in out.stderr, out


@pytest.mark.parametrize("command", ["fit", "actual"])
def test_a_log_that_is_a_pipe_is_refused_without_waiting(tmp_path, command):
    """A writer feeds the pipe (so a reader that opens it does not hang the suite); the log must be refused
    as no regular file all the same."""
    pipe = tmp_path / "log.csv"
    os.mkfifo(pipe)
    _feed(pipe, EXAMPLE_LOG.read_bytes())
    out = run_case(command, [str(pipe)], tmp_path, area="files")
    assert out.code == 2 and "regular file" in out.stderr, out


# -------------------------------------------------------------------------- batch tables

def _xlsx(path: Path, rows: list[list]) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Scenarios"
    for r in rows:
        ws.append(r)
    wb.save(path)


_HEADER = "name,checkpoint_stall_min,node_mtbf_h,nodes,useful_training_h,price_per_gpu_hour\n"
BATCH_TABLES: dict[str, bytes | str] = {
    "empty.csv": "",
    "header only.csv": _HEADER,
    "ragged.csv": _HEADER + "a,2,2560,128\nb,2,2560,128,720,2.5,extra\n",
    "binary.csv": bytes(range(256)) * 8,
    "nul.csv": _HEADER + "a,2\x00,2560,128,720,2.5\n",
    "unbalanced quotes.csv": _HEADER + 'a,"2,2560,128,720,2.5\n',
    "duplicate header.csv": "nodes,nodes\n1,2\n",
    "unknown column.csv": "name,restart_mins\na,3\n",
    "numbers out of range.csv": _HEADER + f"a,1e400,2560,128,720,2.5\nb,2,5e-324,{'1' + '0' * 400},720,2.5\n"
                                          "c,nan,inf,-inf,720,1e308\nd,2,1e-300,1000000000,720,2.5\n",
    "text cells.csv": _HEADER + "a,two,2560,128,720,2.5\nb,2,TRUE,128,720,2.5\nc,2,2560,2024-01-01,720,2.5\n",
    "formulas.csv": _HEADER + '=HYPERLINK("http://evil.example"),=1+1,2560,128,720,2.5\n'
                              '+cmd,2,2560,128,720,2.5\n@SUM(1),2,2560,128,720,2.5\n-2+3,2,2560,128,720,2.5\n',
    "markup names.csv": _HEADER + "".join(f'"{n.replace(chr(34), chr(34) * 2)}",2,2560,128,720,2.5\n'
                                          for n in corpus.HOSTILE_NAMES if "\x00" not in n),
    "semicolons and commas.csv": _HEADER.replace(",", ";") + "a;2,5;2560;128;720;2,5\n",
    "bom crlf.csv": "\ufeff" + _HEADER.replace("\n", "\r\n") + "a,2,2560,128,720,2.5\r\n",
    "latin-1.csv": (_HEADER + "caf\xe9,2,2560,128,720,2.5\n").encode("latin-1"),
    "huge cell.csv": _HEADER + "a" * 20_000 + ",2,2560,128,720,2.5\n",
    "not a zip.xlsx": b"PK\x03\x04 not really a zip",
    "text.xlsx": "name,nodes\n",
    "garbage.parquet": b"PAR1garbagePAR1",
    "bad.toml": "[[scenario]]\nname = 1\nnodes = 'x'\n",
    "no suffix": _HEADER + "a,2,2560,128,720,2.5\n",
}


def _batch_inputs(folder: Path) -> dict[str, Path]:
    out = {}
    for name, data in BATCH_TABLES.items():
        path = folder / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        out[name] = path
    _xlsx(folder / "formulas.xlsx", [["name", "checkpoint_stall_min", "nodes"], ["a", "=1/0", 128],
                                     ['=HYPERLINK("http://evil.example","x")', 2, "=A1"], ["b", 1e308, 10**18]])
    out["formulas.xlsx"] = folder / "formulas.xlsx"
    _xlsx(folder / "types.xlsx", [["name", "checkpoint_stall_min", "nodes", "restart_min"],
                                  ["a", True, 128, "ten"], ["b", 2, -1, None], ["[red]x[/red]", "nan", 1.5, 1e-320]])
    out["types.xlsx"] = folder / "types.xlsx"
    with zipfile.ZipFile(folder / "zip no workbook.xlsx", "w") as z:
        z.writestr("hello.txt", "hi")
    out["zip no workbook.xlsx"] = folder / "zip no workbook.xlsx"
    good = folder / "truncated.xlsx"
    _xlsx(good, [["name", "nodes"], ["a", 128]])
    good.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    out["truncated.xlsx"] = good
    return out


_BATCH_NAMES = sorted(BATCH_TABLES) + ["formulas.xlsx", "types.xlsx", "zip no workbook.xlsx", "truncated.xlsx"]
#: the tables whose cells reach an .xlsx result as text (every table is also written to .csv)
_TO_XLSX = ["formulas.csv", "markup names.csv", "numbers out of range.csv", "text cells.csv", "formulas.xlsx",
            "types.xlsx", "huge cell.csv", "ragged.csv"]


@pytest.mark.parametrize("name, output", [(n, "out.csv") for n in _BATCH_NAMES] + [(n, "out.xlsx") for n in _TO_XLSX])
def test_malformed_batch_tables(tmp_path, name, output):
    paths = _batch_inputs(tmp_path)
    out = run_case("batch", [str(paths[name]), "-o", output, "--json"], tmp_path, area="files")
    if out.code in (0, 3) and output.endswith(".xlsx"):
        from openpyxl import load_workbook

        formulas = [f"{ws.title}!{c.coordinate}" for ws in load_workbook(tmp_path / output)
                    for row in ws.iter_rows() for c in row if c.data_type == "f"]
        assert not formulas, f"text from the input became formulas: {formulas}"
    if out.code in (0, 3) and output.endswith(".csv"):
        import pandas as pd

        table = pd.read_csv(tmp_path / output, dtype=str, keep_default_na=False)
        for column in ("name", "error"):
            if column in table:
                risky = [v for v in table[column] if v and (v[0] in "=+@" or (v[0] == "-" and not _number(v)))]
                assert not risky, f"formula-like text written as is: {risky}"


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------ logs

_LOG_HEAD = "timestamp,event,cause,checkpoint_stall_s,step\n"
LOGS: dict[str, bytes | str] = {
    "empty.csv": "",
    "header only.csv": _LOG_HEAD,
    "no header.csv": "2024-03-04T08:00:00,start,,,0\n",
    "bad timestamps.csv": _LOG_HEAD + "yesterday,start,,,0\n2024-13-45T99:00:00,end,,,1\n",
    "mixed offsets.csv": _LOG_HEAD + "2024-03-04T08:00:00+00:00,start,,,0\n2024-03-04T09:00:00,end,,,1\n",
    "backwards.csv": _LOG_HEAD + "2024-03-04T08:00:00,start,,,0\n2024-03-03T08:00:00,interruption,hw,,1\n",
    "unknown events.csv": _LOG_HEAD + "2024-03-04T08:00:00,launch,,,0\n2024-03-04T09:00:00,explode,,,1\n",
    "hostile stalls.csv": _LOG_HEAD + "2024-03-04T08:00:00,start,,,0\n"
                                      "2024-03-04T09:00:00,checkpoint_saved,,1e400,10\n"
                                      "2024-03-04T10:00:00,checkpoint_saved,,nan,20\n"
                                      "2024-03-04T11:00:00,checkpoint_saved,,-5,30\n"
                                      f"2024-03-04T12:00:00,checkpoint_saved,,2,{'9' * 400}\n"
                                      "2024-03-04T13:00:00,end,,,40\n",
    "markup causes.csv": _LOG_HEAD + "2024-03-04T08:00:00,start,,,0\n" + "".join(
        f'2024-03-04T{9 + i:02d}:00:00,interruption,"{n.replace(chr(34), chr(34) * 2)}",,{i}\n'
        f"2024-03-04T{9 + i:02d}:30:00,restart_complete,,,{i}\n"
        for i, n in enumerate(corpus.HOSTILE_NAMES[:10]) if "\x00" not in n and "\r" not in n and "\x85" not in n),
    "years apart.csv": _LOG_HEAD + "0001-01-01T00:00:00,start,,,0\n9999-12-31T23:59:59,interruption,hw,,1\n",
    "same instant.csv": _LOG_HEAD + "".join(f"2024-03-04T08:00:00,{e},,,0\n" for e in
                                            ("start", "interruption", "restart_complete", "end")),
    "binary.csv": bytes(range(256)) * 4,
    "jsonl garbage.jsonl": '{"timestamp": "2024-03-04T08:00:00", "event": "start"}\n{not json\n[1,2]\n',
    "huge cell.csv": _LOG_HEAD + "2024-03-04T08:00:00,start," + "x" * 20_000 + ",,0\n",
    "formula cells.csv": _LOG_HEAD + '2024-03-04T08:00:00,start,,,0\n2024-03-04T09:00:00,interruption,'
                                     '"=HYPERLINK(""http://evil.example"")",,1\n',
}


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("command", ["fit", "actual"])
def test_malformed_logs(tmp_path, name, command):
    data = LOGS[name]
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    for extra in ([], ["--json"]):
        run_case(command, [str(path), *extra], tmp_path, area="files")
    if command == "fit":
        run_case(command, [str(path), "--emit-scenario", "fitted.toml", "--force"], tmp_path, area="files")


# ----------------------------------------------------------------------------- checkpoints

class _Payload:
    """Unpickling this runs ``touch MARKER``: the audit must never do it."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _checkpoints(folder: Path) -> dict[str, Path]:
    marker = folder / "PAYLOAD-RAN"
    out: dict[str, Path] = {}

    def put(name: str, data: bytes) -> None:
        (folder / name).write_bytes(data)
        out[name] = folder / name

    put("empty.pt", b"")
    put("noise.pt", bytes(range(7, 250)) * 3)
    put("payload.pkl", pickle.dumps({"model": {"w": [1.0]}, "x": _Payload(marker)}))
    put("payload protocol 0.pkl", pickle.dumps(_Payload(marker), protocol=0))
    put("truncated.pkl", pickle.dumps({"model": list(range(100)), "optimizer": {}})[:30])
    put("plain dict.pkl", pickle.dumps({"model": {"layer.weight": [1.0, 2.0]}, "step": 3, "\x1b[31mkey": 1}))
    put("deep.pkl", b"(" * 100_000 + b".")
    put("huge list.pkl", b"\x80\x04(" + b"K\x01" * 200_000 + b"l.")
    with zipfile.ZipFile(folder / "other.zip.pt", "w") as z:
        z.writestr("readme.txt", "not a checkpoint")
    out["zip not torch"] = folder / "other.zip.pt"
    with zipfile.ZipFile(folder / "evil-zip.pt", "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(_Payload(marker)))
        z.writestr("archive/version", "3\n")
    out["zip with payload"] = folder / "evil-zip.pt"
    for name in ("empty dcp", "dcp garbage metadata", "dcp payload metadata", "dcp sparse metadata"):
        (folder / name).mkdir()
        out[name] = folder / name
    (folder / "dcp garbage metadata" / ".metadata").write_bytes(b"\x80\x05garbage")
    (folder / "dcp payload metadata" / ".metadata").write_bytes(pickle.dumps(_Payload(marker)))
    with open(folder / "dcp sparse metadata" / ".metadata", "wb") as fh:
        fh.truncate(300 * 2**20)
    (folder / "dcp garbage metadata" / "__0_0.distcp").write_bytes(b"\x00" * 10)
    os.symlink("/dev/zero", folder / "zero.pt")
    out["link to /dev/zero"] = folder / "zero.pt"
    out["missing"] = folder / "missing.pt"
    (folder / "\x1b[31mred [bold]x.pt").write_bytes(b"junk")
    out["ansi name"] = folder / "\x1b[31mred [bold]x.pt"
    return out


@pytest.fixture(scope="module")
def checkpoint_folder(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("checkpoints")
    return folder, _checkpoints(folder)


def _checkpoint_names() -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return sorted(_checkpoints(Path(tmp)))


@pytest.mark.parametrize("name", _checkpoint_names())
def test_hostile_checkpoints_are_audited_without_running_anything(checkpoint_folder, name):
    folder, paths = checkpoint_folder
    for extra in ([], ["--json"], ["--strict"]):
        run_case("audit", [str(paths[name]), *extra], folder, area="files")
    assert not (folder / "PAYLOAD-RAN").exists(), "the audit ran code from the checkpoint"
