"""Hostile option values through EVERY subcommand of the command line (area "cli").

The commands and their options are read from the app itself (a new command or option is fuzzed
without an edit here). Each option gets a rotating share of :data:`corpus.HOSTILE_TEXT` (numbers out
of range, NaN, inf, a 400-digit integer, text, markup, ANSI escapes, ``=HYPERLINK(...)``), every
other argument valid. Each run, in its own empty folder, must pass :func:`corpus.check_run` (exit 0 or
a clean refusal: no traceback, no Python warning, no ESC, one ``error:`` line per problem, JSON
without NaN/Infinity) and :func:`corpus.check_output_dir` (no temporary left, no stray or
half-written file, nothing that is not a regular file replaced). A few runs go through a real
``python -m ckptplan`` process as well.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Iterator

import corpus
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from ckptplan import files
from ckptplan.cli import app

RUNNER = CliRunner()
EXAMPLE_LOG = files.template_path("example-interruption-log.csv")
_COMMANDS = typer.main.get_command(app).commands
#: each command's valid arguments, besides the option under test (``{out}``: the output, ``{log}``: a log)
BASE: dict[str, list[str]] = {
    "plan": [], "compare": [], "templates": [], "failure-rates": [],
    "workbook": ["-o", "out.xlsx", "--no-deadline"],
    "batch": ["in.csv", "-o", "out.csv"],
    "sweep": ["-o", "out.csv", "--nodes", "64,128"],
    "deadline": ["--runs", "40"],
    "fit": ["{log}"],
    "actual": ["{log}"],
    "excel-setup": ["xl", "--no-workbook"],
    # the emission check refuses the run before the (slow) probe would start, whatever the option under test
    "probe": ["--emit-scenario", "no-such-folder/x.toml"],
    "audit": ["ckpt.pt"],
    "sensitivity": ["--range", "node_mtbf_h=1500:4000"],
    "target": ["--solve", "restart_min", "--goodput", "0.9"],
    "risk": ["--range", "node_mtbf_h=1500:4000", "--draws", "200"],
}
#: hostile values per option (besides the out-of-range value of its type): slow commands, and compare (the
#: options and the scenario path of plan), get fewer
PER_OPTION = {"workbook": 2, "excel-setup": 3, "probe": 3, "compare": 2}
#: exit codes a command may end with besides 0 and 2 (3: batch/sweep rows with errors; 1: audit --strict, probe)
EXTRA_CODES = {"batch": (3,), "sweep": (3,), "audit": (1,), "probe": (1,), "actual": (3,)}
#: the paths a command may write, per option (relative to the run's folder)
OUTPUT_OPTIONS = ("--output", "-o", "--emit-scenario")


def _write_inputs(folder: Path) -> None:
    (folder / "in.csv").write_text("name,checkpoint_stall_min,nodes\na,2,128\nb,0.5,256\n", encoding="utf-8")
    (folder / "ckpt.pt").write_bytes(b"not a checkpoint")


@contextlib.contextmanager
def _cwd(folder: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def invoke(args: list[str], folder: Path) -> corpus.Outcome:
    """Run the command line in-process in ``folder``, recording every Python warning."""
    with _cwd(folder), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = RUNNER.invoke(app, args, catch_exceptions=True)
    exc = res.exception if not isinstance(res.exception, SystemExit) else None
    return corpus.Outcome(args, res.exit_code, res.stdout, res.stderr, exc, list(caught))


def run_case(command: str, args: list[str], folder: Path, area: str = "cli") -> corpus.Outcome:
    """One run with every check; the outputs it may write are those its arguments name."""
    corpus.count(area)
    before = corpus.snapshot(folder)
    out = invoke([command, *args], folder)
    outputs = {args[i + 1] for i, a in enumerate(args[:-1]) if a in OUTPUT_OPTIONS}
    if command == "excel-setup":
        outputs |= {a for a in args if not a.startswith("-")}
    corpus.check_run(out, codes=(0, 2, *EXTRA_CODES.get(command, ())))
    corpus.check_output_dir(folder, before, out, {o for o in outputs if o and not o.startswith("/")})
    return out


def _options(command: str) -> list[tuple[str, bool]]:
    """(option, takes a value) of every option of ``command`` but --help."""
    out = []
    for p in _COMMANDS[command].params:
        if getattr(p, "param_type_name", "") != "option" or "--help" in p.opts:
            continue
        out.append((p.opts[0], not getattr(p, "is_flag", False)))
    return out


def _base(command: str) -> list[str]:
    base = BASE.get(command)
    if base is None:  # a command added since: its required arguments get the example log (or a missing file)
        base = ["{log}" for p in _COMMANDS[command].params if getattr(p, "param_type_name", "") == "argument"]
    return [str(EXAMPLE_LOG) if a == "{log}" else a for a in base]


#: the out-of-range value every option also gets, by its type: a 400-digit integer, a float beyond float64
_RANGE_VALUE = {"integer": "1" + "0" * 400, "float": "1e400"}
#: (command, option type) whose huge-integer refusal is a known bug in a file this suite does not own
_KNOWN_HUGE_INT: dict[tuple[str, str], str] = {}


def _type_name(command: str, option: str) -> str:
    """"integer", "float" or "" (text, paths) of an option, from its annotation (typer builds click types late)."""
    import typing

    p = next(p for p in _COMMANDS[command].params if p.opts and p.opts[0] == option)
    descriptor = getattr(p, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None) if descriptor is not None else None
    kinds = set(typing.get_args(annotation)) | {annotation}
    return "integer" if int in kinds else "float" if float in kinds else ""


def _cases() -> list:
    """(command, option, value) for every option that takes a value: a rotating share of the corpus, and
    the out-of-range value of its type."""
    cases = []
    k_default = 3
    n = len(corpus.HOSTILE_TEXT)
    i = 0
    for command in sorted(_COMMANDS):
        for option, takes_value in _options(command):
            if not takes_value:
                continue
            for j in range(PER_OPTION.get(command, k_default)):
                cases.append((command, option, corpus.HOSTILE_TEXT[(i * 7 + j) % n]))
            i += 1
            kind = _type_name(command, option)
            if kind in _RANGE_VALUE and (command, option, _RANGE_VALUE[kind]) not in cases:
                why = _KNOWN_HUGE_INT.get((command, kind)) if kind == "integer" else None
                marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
                cases.append(pytest.param(command, option, _RANGE_VALUE[kind], marks=marks))
    return cases


def _with_option(base: list[str], option: str, value: str) -> list[str]:
    """``base`` with ``option value`` (replacing the base's own value of that option)."""
    args = list(base)
    aliases = {option} | ({"-o", "--output"} if option in ("-o", "--output") else set())
    for k, a in enumerate(args):
        if a in aliases and k + 1 < len(args):
            del args[k:k + 2]
            break
    return args + [option, value]


CASES = _cases()


def _values(case: object) -> tuple:
    return tuple(case.values) if hasattr(case, "values") else tuple(case)


def test_every_command_is_covered():
    """Every command with an option taking a value is fuzzed (a new command too: its arguments get the example
    log); those without one run in test_every_command_with_json_and_its_defaults."""
    fuzzed = {_values(c)[0] for c in CASES}
    assert fuzzed == {c for c in _COMMANDS if any(takes for _, takes in _options(c))}
    assert fuzzed | {"templates", "failure-rates", "preemption-rates", "audit"} >= set(_COMMANDS)


@pytest.mark.parametrize("command, option, value", CASES,
                         ids=[f"{v[0]} {v[1]} {v[2][:12]!r}" for v in map(_values, CASES)])
def test_hostile_option_values_end_cleanly(tmp_path, command, option, value):
    _write_inputs(tmp_path)
    if command == "probe" and option == "--emit-scenario":
        base = ["--emit-from", "no-such-method"]  # refused before the probe runs, whatever the value
    else:
        base = _base(command)
    run_case(command, _with_option(base, option, value), tmp_path)


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_every_command_with_json_and_its_defaults(tmp_path, command):
    """Each command with its valid arguments (and --json where it has one): a clean answer."""
    _write_inputs(tmp_path)
    base = _base(command)
    flags = {o for o, takes in _options(command) if not takes}
    for extra in ([], ["--json"] if "--json" in flags else None):
        if extra is None or (command == "probe"):
            continue
        run_case(command, base + extra, tmp_path)
        for p in tmp_path.glob("out.*"):
            p.unlink()


#: four sweep axes of 1,000 values: 10^12 rows, refused before any work
_TEN_TO_THE_TWELVE_ROWS = ["--checkpoint-stall-min", "1:1000:+1", "--nodes", "1:1000:+1", "--restart-min", "1:1000:+1",
                           "--price-per-gpu-hour", "1:1000:+1"]
EXTREME_BUT_VALID = [
    ["plan", "--price-per-gpu-hour", "1e308", "--json"],
    ["plan", "--price-per-gpu-hour", "1e300", "--useful-training-h", "1e-300", "--json"],
    ["plan", "--node-mtbf-h", "1e-300", "--json"],
    ["plan", "--node-mtbf-h", "5e-324", "--nodes", "1000000000", "--json"],
    ["plan", "--job-mtbf-h", "1e307", "--json"],
    ["plan", "--job-mtbf-h", "1e300", "--deadline-h", "1e300", "--json"],
    ["plan", "--gpus-per-node", "1000000000000000000", "--nodes", "1000000000000000000", "--json"],
    ["plan", "--checkpoint-stall-min", "1e308", "--async-write-min", "1e308", "--json"],
    ["plan", "--useful-training-h", "1e308", "--json"],
    ["plan", "--interval-min", "5e-324", "--json"],
    ["plan", "--interval-min", "1e308"],
    ["plan", "--restart-min", "1e308"],
    ["plan", "--parameters-b", "1e308", "--write-gb-s-per-writer", "5e-324", "--json"],
    ["plan", "--spares", "1000000000000000000", "--repair-h", "1e300", "--json"],
    ["plan", "--price-per-gb-month", "1e308", "--parameters-b", "1e6", "--write-gb-s-per-writer", "1", "--json"],
    ["compare", "--price-per-gpu-hour", "1e308", "--json"],
    ["compare", "--node-mtbf-h", "1e-300"],
    ["deadline", "--runs", "100000000"],
    ["deadline", "--runs", "1000000000", "--json"],
    ["deadline", "--runs", "1e8"],
    ["deadline", "--runs", "1e9", "--json"],
    ["deadline", "--runs", "40", "--deadline-h", "1e308", "--json"],
    ["deadline", "--runs", "40", "--job-mtbf-h", "1e-6"],
    ["deadline", "--runs", "40", "--restart-min", "1e6", "--json"],
    ["deadline", "--runs", "40", "--weibull-shape", "0.2000001", "--json"],
    ["deadline", "--runs", "40", "--target", "1e-300", "--json"],
    ["deadline", "--runs", "40", "--nodes", "1" + "0" * 400],
    ["sweep", "-o", "out.csv", *_TEN_TO_THE_TWELVE_ROWS],
    ["sweep", "-o", "out.csv", "--checkpoint-stall-min", "5e-324:1e308:x1e10", "--json"],
    ["sweep", "-o", "out.csv", "--price-per-gpu-hour", "1e300,1e308", "--json"],
    ["sweep", "-o", "out.csv", "--axis", "domain1_mtbf_h=1:2:x2"],
    ["sweep", "-o", "out.csv", "--axis", "=", "--json"],
    ["sweep", "-o", "out.csv", "--nodes", "1,2", "--deadline", "--runs", "100000000"],
    ["batch", "in.csv", "-o", "out.csv", "--deadline", "--runs", "1000000000"],
    ["batch", "in.csv", "-o", "out.csv", "--chunk-rows", "0"],
    ["batch", "in.csv", "-o", "out.csv", "--max-rows", "-1"],
    ["workbook", "-o", "out.xlsx", "--deadline-runs", "100000000"],
    ["fit", "{log}", "--confidence", "1e-300", "--json"],
    ["fit", "{log}", "--confidence", "0.9999999999999999", "--json"],
]


@pytest.mark.parametrize("args", EXTREME_BUT_VALID, ids=[" ".join(_values(a)[0] if hasattr(a, "values") else a)[:60]
                                                         for a in EXTREME_BUT_VALID])
def test_numbers_at_the_ends_of_the_float_range(tmp_path, args):
    """Inputs each rule accepts whose figures overflow or underflow: refused naming the field, or answered
    with finite figures (JSON never holds Infinity or NaN). Runs beyond memory are refused naming the limit."""
    _write_inputs(tmp_path)
    args = [str(EXAMPLE_LOG) if a == "{log}" else a for a in args]
    out = run_case(args[0], args[1:], tmp_path)
    if out.code == 2 and not out.stderr.startswith("Usage:"):
        assert out.stderr.count("error:") == 1 and len(out.stderr.strip().splitlines()) == 1, out
    if args[0] == "deadline" and float(args[args.index("--runs") + 1]) >= 1e8:
        assert out.code == 2 and "runs=" in out.stderr and "MAX_SIMULATION_BYTES" in out.stderr, out


def test_a_refused_output_that_is_no_regular_file_is_left_alone(tmp_path):
    _write_inputs(tmp_path)
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "folder.xlsx").mkdir()
    for command, args in (("sweep", ["-o", "pipe.csv", "--nodes", "64", "--force"]),
                          ("batch", ["in.csv", "-o", "folder.xlsx", "--force"]),
                          ("workbook", ["-o", "folder.xlsx", "--no-deadline", "--force"]),
                          ("sweep", ["-o", "/dev/null", "--nodes", "64", "--force"]),
                          ("fit", [str(EXAMPLE_LOG), "--emit-scenario", "pipe.csv", "--force"])):
        out = run_case(command, args, tmp_path)
        assert out.code == 2, out
    assert (tmp_path / "folder.xlsx").is_dir() and not (tmp_path / "pipe.csv").is_file()


# ------------------------------------------------------------------- real processes

SUBPROCESS_CASES = [
    (["plan", "--price-per-gpu-hour", "1e308", "--json"], (2,)),
    (["plan", "--template", "\x1b[31m[red]x[/red]"], (2,)),
    (["deadline", "--runs", "100000000"], (2,)),
    (["sweep", "-o", "out.csv", *_TEN_TO_THE_TWELVE_ROWS], (2,)),
    (["batch", "in.csv", "-o", "out.csv", "--chunk-rows", "nan"], (2,)),
    (["fit", "in.csv", "--json"], (2,)),
]


@pytest.mark.parametrize("args, codes", SUBPROCESS_CASES, ids=[" ".join(a)[:50] for a, _ in SUBPROCESS_CASES])
def test_real_processes_end_cleanly(tmp_path, args, codes):
    """``python -m ckptplan`` as a user runs it (output piped, not a terminal)."""
    corpus.count("cli")
    _write_inputs(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS")}
    before = corpus.snapshot(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "ckptplan", *args], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=120)
    out = corpus.Outcome(args, proc.returncode, proc.stdout, proc.stderr)
    corpus.check_run(out, codes=codes)
    corpus.check_output_dir(tmp_path, before, out, {"out.csv"})


# ------------------------------------------------------------------- batch --capacity

_SPOT_HEAD = "name,useful_training_h,deadline_h,preemptions_per_h,preemption_notice_min,spot_price_per_gpu_hour,capacity_wait_min"
#: spot rows for ``batch --capacity``: one valid, then one hostile cell each (short jobs: the comparison simulates
#: three policies and a threshold search per row at compare's 4,000 runs)
CAPACITY_ROWS = {
    "valid": "ok,2,3,0.2,2,1.0,10",
    "rate text": "a,2,3,often,2,1.0,10",
    "rate -1": "b,2,3,-1,2,1.0,10",
    "rate nan": "c,2,3,nan,2,1.0,10",
    "rate 1e400": "d,2,3,1e400,2,1.0,10",
    "rate subnormal": "e,2,3,5e-324,2,1.0,10",
    "rate 400 digits": f"f,2,3,{'1' + '0' * 400},2,1.0,10",
    "deadline 0": "g,2,0,0.2,2,1.0,10",
    "deadline below the work": "h,2,1,0.2,2,1.0,10",
    "deadline 1e300": "i,2,1e300,0.2,2,1.0,10",
    "deadline text": "j,2,soon,0.2,2,1.0,10",
    "notice -1": "k,2,3,0.2,-1,1.0,10",
    "notice 1e308": "l,2,3,0.2,1e308,1.0,10",
    "spot price -1": "m,2,3,0.2,2,-1,10",
    "spot price 1e308": "n,2,3,0.2,2,1e308,10",
    "spot price formula": "o,2,3,0.2,2,=1+1,10",
    "wait inf": "p,2,3,0.2,2,1.0,inf",
    "no deadline": "q,2,,0.2,2,1.0,10",
    "no rate": "r,2,3,,,,",
}


@pytest.mark.parametrize("name", list(CAPACITY_ROWS))
def test_batch_capacity_with_a_hostile_spot_row(tmp_path, name):
    """``batch --capacity`` of a valid spot row and one hostile one: the hostile row is an error row naming its
    field (exit 3) or is answered (its capacity columns finite, or blank with a note); the valid row is priced."""
    import pandas as pd

    (tmp_path / "spot.csv").write_text(f"{_SPOT_HEAD}\n{CAPACITY_ROWS['valid']}\n{CAPACITY_ROWS[name]}\n",
                                       encoding="utf-8")
    out = run_case("batch", ["spot.csv", "-o", "out.csv", "--capacity"], tmp_path)
    assert out.code in (0, 3), out
    got = pd.read_csv(tmp_path / "out.csv")
    assert got["status"][0] == "ok" and got["cheapest_capacity_on_time"][0] in ("on_demand", "spot", "fallback")
    if got["status"][1] == "ok" and isinstance(got["capacity_note"][1], str):
        assert got.filter(like="_cost_p50").iloc[1].isna().all()        # blank, with a note
    elif got["status"][1] == "ok":
        assert np.isfinite(got.filter(regex="^(on_demand|spot|fallback)_").iloc[1].to_numpy(dtype=float)).all()


@pytest.mark.parametrize("args", [["--capacity", "--runs", "nan"], ["--capacity", "--chunk-rows", "0"],
                                  ["--capacity", "--capacity"], ["--capacity", "--design", "none such"],
                                  ["--capacity", "--no-template"]])
def test_batch_capacity_with_odd_options(tmp_path, args):
    (tmp_path / "spot.csv").write_text(f"{_SPOT_HEAD}\n{CAPACITY_ROWS['valid']}\n", encoding="utf-8")
    run_case("batch", ["spot.csv", "-o", "out.csv", *args], tmp_path)
