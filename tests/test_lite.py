"""xlwings Lite (Excel on Windows, Mac and the web, Python in the browser through Pyodide).

What these tests show:

* the wheel is pure Python (``py3-none-any``, nothing compiled), so Pyodide's micropip can install it;
* the UDF path keeps Pyodide's rules: in a fresh interpreter where starting a thread or a process
  (``threading.Thread.start``, ``_thread.start_new_thread``, ``subprocess.Popen``, ``os.fork``,
  ``os.system``, ``os.posix_spawn``, multiprocessing's process start) and writing a file raise, as
  they do in Pyodide, importing :mod:`ckptplan.workbook.udfs` and calling every ``CKPT_`` function
  gives exactly the results of a normal interpreter, and nothing tried any of those;
* the ``main.py`` that ``ckptplan excel-setup --lite`` writes, run as xlwings Lite loads it (a fresh
  interpreter, ckptplan from the built wheel, xlwings' own ``func``/``arg``/``ret``: pass-through
  here, as outside Excel they are), defines every ``CKPT_`` function with the same arguments and
  defaults, and gives the desktop module's results cell by cell for scalars, 2-D ranges, rows,
  columns, blanks, text and bools; in the browser ``CKPT_DEADLINE_PROB`` is capped lower;
* its decorators say what Lite needs (every argument ``ndim=2`` or the DataFrame converter, a
  description from the registry), and a call through Office.js' conventions (a 1 x 1 range as a
  value, a blank optional as its default, ``None`` out as a blank cell, NaN out as ``#NUM!``) gives
  the desktop results with blanks blank and never ``#NUM!``;
* ``excel-setup --lite`` writes main.py, requirements.txt and the starter workbook together or not
  at all, never over a file without ``--force``;
* under Pyodide itself in Node.js, when a full Pyodide distribution is at hand
  (``CKPTPLAN_PYODIDE_DIR``: the npm package ``pyodide`` holds only the interpreter; its numpy,
  pandas and scipy builds come from Pyodide's CDN, which this machine cannot reach), the same calls
  give the same results.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import json
import math
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import cellwise
import numpy as np
import pytest
from cellwise import cells_of
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import engine, files
from ckptplan.engine.fields import lookup
from ckptplan.workbook import lite as L
from ckptplan.workbook import udfs as U
from ckptplan.workbook import udfs_risk as R
from ckptplan.workbook import udfs_setup as S
from ckptplan.workbook.cells import describe

REPO = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------ calls: every function, every shape

# a good value and a second good value of every argument name the CKPT_ functions use
GOOD = {"node_mtbf_h": 2560, "nodes": 128, "domain1_mtbf_h": 20000, "domain1_nodes_per_domain": 16,
        "nonfatal_share": 0.1, "domain2_mtbf_h": 50000, "domain2_nodes_per_domain": 64, "domain3_mtbf_h": 90000,
        "domain3_nodes_per_domain": 128, "checkpoint_stall_min": 2, "job_mtbf_min": 1200, "async_write_min": 3,
        "async_slowdown_fraction": 0.25, "interval_min": 60, "restart_min": 10, "model": "first_order",
        "useful_training_h": 10, "deadline_h": 11, "runs": 300, "seed": 7, "weibull_shape": 0.8, "wall_h": 769.5,
        "gpus": 1024, "gpu_hours": 788078, "price_per_gpu_hour": 2.5, "downtime_min": 4}
OTHER = {"node_mtbf_h": 5000.5, "nodes": 256, "domain1_mtbf_h": 30000, "domain1_nodes_per_domain": 8,
         "nonfatal_share": 0.3, "domain2_mtbf_h": 70000, "domain2_nodes_per_domain": 32, "domain3_mtbf_h": 100000,
         "domain3_nodes_per_domain": 64, "checkpoint_stall_min": 0.5, "job_mtbf_min": 600, "async_write_min": 0,
         "async_slowdown_fraction": 0.5, "interval_min": 45.5, "restart_min": 0, "model": "exact",
         "useful_training_h": 10.5, "deadline_h": 12, "runs": 500, "seed": 3, "weibull_shape": 1.0, "wall_h": 10,
         "gpus": 8, "gpu_hours": 1.5, "price_per_gpu_hour": 0, "downtime_min": 0}
ODD = [None, "", "12 min", True, -1, float("nan"), float("inf")]   # what else a cell may hold


def _params(name: str) -> list[inspect.Parameter]:
    return list(inspect.signature(getattr(U, name)).parameters.values())


def _rows(table) -> list[list]:
    rows = [list(table.columns)]
    for rec in table.itertuples(index=False):
        rows.append([None if isinstance(v, float) and math.isnan(v) else v for v in rec])
    return rows


def _evaluate_calls() -> list[list]:
    rows = _rows(engine.to_table([files.load_scenario(n) for n in files.list_templates()]))
    header, first = rows[0], rows[1]
    bad, text = list(first), list(first)
    bad[header.index("checkpoint_stall_min")] = -1
    text[header.index("nodes")] = "many"
    return [[rows], [[header, first, [None] * len(header), bad, text, rows[2]]],
            [[["nodes", "nodes"], [1, 2]]], [[["nodes"]]], [[header]], [[["nodes"], [None]]]]


def calls() -> list[tuple[str, list]]:
    """(function, positional arguments) covering every CKPT_ function with every shape Excel sends."""
    out: list[tuple[str, list]] = []
    for name in U.__all__:
        if name == "CKPT_EVALUATE":
            out += [(name, args) for args in _evaluate_calls()]
            continue
        params = _params(name)
        names = [p.name for p in params]
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        good = [GOOD[n] for n in names]
        out.append((name, [GOOD[n] for n in required]))                   # optional arguments left out
        out.append((name, good))                                            # every argument given
        out.append((name, [[[v]] for v in good]))                           # 1 x 1 ranges
        out.append((name, [GOOD[n] for n in required] + [None] * (len(names) - len(required))))  # blank optionals
        out.append((name, [[[GOOD[names[0]], OTHER[names[0]]]]] + good[1:]))                    # a row
        out.append((name, [[GOOD[names[0]], OTHER[names[0]]]] + good[1:]))                      # a 1-D list
        if len(names) > 1:                                                  # a column against a row: a grid
            out.append((name, [[[GOOD[names[0]]], [OTHER[names[0]]]], [[GOOD[names[1]], OTHER[names[1]]]]]
                        + good[2:]))
        for i, n in enumerate(names):                                       # a column with odd cells
            column = [[GOOD[n]], [OTHER[n]]] + [[v] for v in ODD] + [["young" if n == "model" else GOOD[n]]]
            out.append((name, good[:i] + [column] + good[i + 1:]))
    return out


# ------------------------------------------------------------------------------ running them somewhere else

RUNNER = r'''
import json, sys
config = json.load(open(sys.argv[1]))
attempts = []
if config["pyodide_rules"]:
    import builtins, io, os, threading, _thread, subprocess, multiprocessing.process
    def refuse(what):
        def refused(*args, **kwargs):
            attempts.append(what)
            raise RuntimeError(f"{what} is not available under Pyodide")
        return refused
    threading.Thread.start = refuse("threading.Thread.start")
    _thread.start_new_thread = refuse("_thread.start_new_thread")
    subprocess.Popen.__init__ = refuse("subprocess.Popen")
    multiprocessing.process.BaseProcess.start = refuse("multiprocessing start")
    for name in ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp"):
        if hasattr(os, name):
            setattr(os, name, refuse(f"os.{name}"))
    _open, _os_open = builtins.open, os.open
    def guarded_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            return refuse(f"open({file!r}, {mode!r})")()
        return _open(file, mode, *args, **kwargs)
    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC):
            return refuse(f"os.open({path!r}) for writing")()
        return _os_open(path, flags, *args, **kwargs)
    builtins.open = io.open = guarded_open
    os.open = guarded_os_open
if config["site"]:
    sys.path.insert(0, config["site"])
import threading
threads = threading.active_count()
if config["main"]:
    import importlib.util
    spec = importlib.util.spec_from_file_location("main", config["main"])
    module = importlib.util.module_from_spec(spec)
    sys.modules["main"] = module
    spec.loader.exec_module(module)
    import xlwings
    decorators = "xlwings" if module.func is xlwings.func and module.arg is xlwings.arg else "fallback"
else:
    import ckptplan.workbook.udfs as module
    decorators = None
import ckptplan
results = []
for name, args in config["calls"]:
    try:
        results.append({"value": getattr(module, name)(*args)})
    except BaseException as exc:
        results.append({"raised": repr(exc)})
print(json.dumps({"results": results, "attempts": attempts, "file": ckptplan.__file__, "decorators": decorators,
                  "functions": sorted(n for n in dir(module) if n.startswith("CKPT_")),
                  "threads": [threads, threading.active_count()], "modules": sorted(sys.modules)}))
'''


def run_calls(tmp_path: Path, call_list, *, pyodide_rules=False, site=None, main=None) -> dict:
    config = tmp_path / f"config-{len(list(tmp_path.glob('config-*')))}.json"
    config.write_text(json.dumps({"calls": call_list, "pyodide_rules": pyodide_rules, "site": site and str(site),
                                  "main": main and str(main)}))
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLWINGS_ON_SERVER")}
    done = subprocess.run([sys.executable, "-B", str(script), str(config)], cwd=work, capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


#: cell-by-cell equality of two results (floats exactly: the same code on the same numbers; NaN equals NaN)
same = functools.partial(cellwise.same, nan_equal=True)


@pytest.fixture(scope="module")
def desktop():
    """The desktop module's results of :func:`calls`, in this interpreter."""
    U.deadline_cache_clear()
    listed = calls()
    return listed, [getattr(U, name)(*args) for name, args in listed]


def test_the_calls_cover_every_function_and_give_values_and_messages_only(desktop):
    listed, results = desktop
    assert {name for name, _ in listed} == set(U.__all__)
    for (name, _), result in zip(listed, results):
        for cell in cells_of(result):
            table = name in ("CKPT_EVALUATE", "CKPT_COST_BREAKDOWN")      # headers and given text are text
            assert ((cell is None or isinstance(cell, bool)) and name == "CKPT_EVALUATE") or isinstance(cell, str) \
                or (isinstance(cell, float) and math.isfinite(cell)), (name, cell)
            assert not isinstance(cell, str) or cell.startswith("#CKPT! ") or table, (name, cell)
    numbers = sum(isinstance(c, float) for r in results for c in cells_of(r))
    messages = sum(isinstance(c, str) and c.startswith("#CKPT!") for r in results for c in cells_of(r))
    assert numbers > 300 and messages > 300


# ------------------------------------------------------------------------------ the wheel



@pytest.fixture(scope="module")
def site(wheel, tmp_path_factory) -> Path:
    """The wheel installed the way Pyodide's micropip installs a pure-Python wheel: unpacked."""
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return target


def test_the_wheel_is_pure_python(wheel):
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Root-Is-Purelib: true" in zf.read(meta).decode()
    compiled = [n for n in names if n.endswith((".so", ".pyd", ".dll", ".dylib", ".pyc", ".c", ".wasm"))]
    assert not compiled, compiled
    assert "ckptplan/workbook/lite.py" in names and "ckptplan/workbook/udfs.py" in names


# ------------------------------------------------------------------------------ Pyodide's rules

def test_udf_module_imports_and_answers_where_threads_processes_and_writes_fail(tmp_path, desktop):
    listed, expected = desktop
    normal = run_calls(tmp_path, listed)
    refused = run_calls(tmp_path, listed, pyodide_rules=True)
    assert refused["attempts"] == [], refused["attempts"]
    assert refused["threads"] == [1, 1]
    for (name, args), want, plain, ruled in zip(listed, expected, normal["results"], refused["results"]):
        assert "value" in ruled, (name, ruled)
        assert same(ruled["value"], plain["value"]), (name, args)
        assert same(plain["value"], want), (name, args)
    # nothing Pyodide lacks (or that the project keeps optional) is on the path
    for heavy in ("dask", "torch", "openpyxl", "typer", "rich", "lxml", "defusedxml", "scipy.stats",
                  "ckptplan.files", "xlwings._xlwindows", "xlwings._xlmac"):
        assert heavy not in refused["modules"], heavy


def test_the_patches_do_catch_a_thread_a_process_and_a_write(tmp_path):
    script = tmp_path / "runner.py"
    script.write_text(RUNNER.split("if config[\"site\"]")[0] + "\n".join([
        "import threading, subprocess, os, tempfile",
        "for attempt in (lambda: threading.Thread(target=print).start(), lambda: subprocess.run(['true']),",
        "                lambda: open('x.txt', 'w'), lambda: tempfile.mkstemp(), lambda: os.fork()):",
        "    try:", "        attempt()", "    except RuntimeError:", "        pass",
        "print(json.dumps(attempts))"]))
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"pyodide_rules": True}))
    done = subprocess.run([sys.executable, "-B", str(script), str(config)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    attempts = json.loads(done.stdout)
    assert attempts[0] == "threading.Thread.start" and attempts[1] == "subprocess.Popen"
    assert attempts[2].startswith("open(") and attempts[3].startswith("os.open(") and attempts[4] == "os.fork"
    assert not (tmp_path / "x.txt").exists()


# ------------------------------------------------------------------------------ main.py as xlwings Lite loads it

def _lite_app():
    import typer
    from ckptplan.cli_excel import register

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    return app


@pytest.fixture(scope="module")
def lite_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lite") / "excel"
    res = CliRunner().invoke(_lite_app(), ["excel-setup", "--lite", str(folder)])
    assert res.exit_code == 0, res.output
    return folder


def test_main_py_from_the_wheel_gives_the_desktop_results_cell_by_cell(tmp_path, desktop, lite_dir, site, wheel):
    listed, expected = desktop
    got = run_calls(tmp_path, listed, site=site, main=lite_dir / L.MAIN_NAME)
    assert got["file"].startswith(str(site)), got["file"]       # ckptplan from the wheel, not the checkout
    assert got["decorators"] == "xlwings"                          # xlwings' own func/arg/ret (pass-through here)
    assert got["functions"] == sorted(U.__all__ + S.__all__ + R.__all__)   # main.py wraps every module (test_udfs_setup: S's cells)
    for (name, args), want, have in zip(listed, expected, got["results"]):
        assert "value" in have, (name, have)
        assert same(have["value"], in_the_browser(want)), (name, args, have["value"], want)
    for heavy in ("dask", "torch", "openpyxl", "typer", "rich", "lxml", "scipy.stats", "ckptplan.files", "ckptplan.cli"):
        assert heavy not in got["modules"], heavy                  # main.py loads the UDF path only
    # requirements.txt names the version the wheel has
    line = [x for x in (lite_dir / L.REQUIREMENTS_NAME).read_text().splitlines() if x and not x.startswith("#")]
    assert line == [f"ckptplan=={wheel.name.split('-')[1]}"]


def in_the_browser(result):
    """A desktop result as xlwings Lite gives it: a runs cell breaking its rule is told the browser's cap."""
    if isinstance(result, list):
        return [in_the_browser(r) for r in result]
    desktop = f"#CKPT! runs: {lookup('runs').check.message} (got "
    if isinstance(result, str) and result.startswith(desktop):
        return f"#CKPT! runs: {L.lite_rule()} (got " + result[len(desktop):]
    return result


def test_main_py_caps_the_monte_carlo_for_the_browser(tmp_path, lite_dir):
    args = [10, 11, 60, 2, 1200, 10, 0, 0]
    lite_calls = [("CKPT_DEADLINE_PROB", args + [L.LITE_MAX_RUNS, 1]),
                  ("CKPT_DEADLINE_PROB", args + [L.LITE_MAX_RUNS + 1, 1]),
                  ("CKPT_DEADLINE_PROB", args + [[[400], [15000], ["x"], [25000]], 1]),
                  ("CKPT_DEADLINE_PROB", [-1] + args[1:] + [15000, 1]),
                  ("CKPT_DEADLINE_PROB", [5, 6, [[30 + i] for i in range(6)], 2, 1200, 10, 0, 0, L.LITE_MAX_RUNS, 0])]
    got = [r["value"] for r in run_calls(tmp_path, lite_calls, main=lite_dir / L.MAIN_NAME)["results"]]
    capped = lambda v: f"#CKPT! runs: {L.lite_rule()} (got {v})"
    assert got[0] == U.CKPT_DEADLINE_PROB(*lite_calls[0][1])
    assert got[1] == capped(10001) and isinstance(U.CKPT_DEADLINE_PROB(*lite_calls[1][1]), float)
    assert got[2] == [[U.CKPT_DEADLINE_PROB(*args, 400, 1)], [capped(15000)],
                      ["#CKPT! runs: must be a number (got text 'x')"], [capped(25000)]]
    assert got[3] == "#CKPT! useful_training_h: must be > 0 (got -1)"   # an earlier argument's error still wins
    assert got[4][:5] == [[v] for v in cells_of(U.CKPT_DEADLINE_PROB(*lite_calls[4][1][:2], [[30 + i] for i in range(5)],
                                                                        *lite_calls[4][1][3:]))]
    assert got[4][5] == ["#CKPT! runs: this call already simulates 50,000 runs; the limit is 50,000 per call: split "
                         "the range or lower runs (got 10000)"]


@pytest.mark.parametrize("runs", [400, [[400], [600]], np.array([[400.0, 2.5]]), np.array([["x"]]), np.array([[True]]),
                                  [[None], [""]], None, "", [[400, 9_000]], float("nan"), L.LITE_MAX_RUNS])
def test_the_capped_monte_carlo_is_the_desktop_one_within_the_cap(runs):
    args = (10, [[11], [12]], 60, 2, 1200, 10, 0, 0, runs, 3)
    budget = U.MAX_RUNS_PER_CALL
    assert L.capped_deadline_prob(*args) == in_the_browser(U.CKPT_DEADLINE_PROB(*args))   # a 2.5 is told the cap
    assert L.capped_deadline_prob(*args[:8]) == U.CKPT_DEADLINE_PROB(*args[:8])     # runs left out: the default
    assert U.MAX_RUNS_PER_CALL == budget                                            # the desktop's budget is back


def test_main_py_defines_every_function_with_the_same_arguments_docs_and_errors(lite_dir):
    namespace: dict = {"__name__": "main"}
    exec(compile((lite_dir / L.MAIN_NAME).read_text(), "main.py", "exec"), namespace)
    assert sorted(n for n in namespace if n.startswith("CKPT_")) == sorted(U.__all__ + S.__all__ + R.__all__)
    for name in U.__all__:
        assert inspect.signature(namespace[name]) == inspect.signature(getattr(U, name)), name
        doc = inspect.getdoc(namespace[name])
        if name == "CKPT_DEADLINE_PROB":
            assert f"{L.LITE_MAX_RUNS:,} runs per cell and {L.LITE_MAX_RUNS_PER_CALL:,} per call" in doc
        else:
            assert doc == inspect.getdoc(getattr(U, name)), name
    assert namespace["CKPT_YOUNG_INTERVAL"]("x", 1200) == U.CKPT_YOUNG_INTERVAL("x", 1200)
    # a main.py written from another ckptplan refuses to load instead of passing arguments in the wrong place
    text = (lite_dir / L.MAIN_NAME).read_text().replace("def CKPT_COST(gpu_hours, price_per_gpu_hour):",
                                                         "def CKPT_COST(price_per_gpu_hour, gpu_hours):")
    with pytest.raises(RuntimeError, match=r"main.py does not match the installed ckptplan \(CKPT_COST takes"):
        exec(compile(text, "main.py", "exec"), {"__name__": "main"})


def test_udf_specs_read_the_decorators_and_leave_xlwings_as_it_was():
    import xlwings

    from ckptplan.workbook import cells

    specs = L.udf_specs()
    assert cells.xw is xlwings and sys.modules["xlwings"] is xlwings
    assert [s.name for s in specs] == list(U.__all__) + list(S.__all__) + list(R.__all__)
    evaluate = next(s for s in specs if s.name == "CKPT_EVALUATE")
    assert evaluate.ret == {"index": False} and evaluate.args["table"]["header"] is True
    young = next(s for s in specs if s.name == "CKPT_YOUNG_INTERVAL")
    assert young.args["checkpoint_stall_min"]["doc"].endswith("(CKPT_EFFECTIVE_STALL).")   # the function's own text
    assert young.target == "_udfs.CKPT_YOUNG_INTERVAL"
    assert next(s for s in specs if s.name == "CKPT_DEADLINE_PROB").target == "_lite.capped_deadline_prob"


FAKE_XLWINGS = r'''
"""Stands in for xlwings Lite's decorators: checks them as xlwings does and keeps what they say."""
import inspect

def _meta(f):
    if not hasattr(f, "__xlfunc__"):
        params = inspect.signature(f).parameters.values()
        f.__xlfunc__ = {"name": f.__name__, "ret": {"doc": f.__doc__, "options": {}},
                        "args": {p.name: {"doc": None, "options": {}, "optional": p.default}
                                 if p.default is not inspect.Parameter.empty else {"doc": None, "options": {}}
                                 for p in params}}
    return f.__xlfunc__

def func(f=None, **options):
    def inner(g):
        _meta(g)["func"] = options
        return g
    return inner if f is None else inner(f)

def arg(name, convert=None, **options):
    def inner(f):
        meta = _meta(f)
        if name not in meta["args"]:
            raise Exception(f"Invalid argument name '{name}'.")
        meta["args"][name]["doc"] = options.pop("doc", None)
        meta["args"][name]["options"].update(options, **({"convert": convert} if convert is not None else {}))
        return f
    return inner

def ret(convert=None, **options):
    def inner(f):
        _meta(f)["ret"]["options"].update(options)
        return f
    return inner
'''

OFFICE_JS = r'''
import json, sys, importlib.util, math
import pandas as pd
sys.path.insert(0, sys.argv[1])
spec = importlib.util.spec_from_file_location("main", sys.argv[2])
main = importlib.util.module_from_spec(spec)
spec.loader.exec_module(main)
calls = json.load(open(sys.argv[3]))

def to_scalar(a):   # Office.js sends every argument as a matrix; a 1 x 1 one arrives as its value
    return a[0][0] if isinstance(a, list) and len(a) == 1 and isinstance(a[0], list) and len(a[0]) == 1 else a

def read(a, options):
    if options.get("convert") is pd.DataFrame:
        return pd.DataFrame(a[1:], columns=a[0])
    if options.get("ndim") == 2 and not isinstance(a, list):
        return [[a]]
    return a

def write(x):       # what Lite puts in a cell
    if x is None:
        return ""
    if isinstance(x, float) and math.isnan(x):
        return "#NUM!"
    return x

meta, out = {}, []
for name in sorted(n for n in dir(main) if n.startswith("CKPT_")):
    m = getattr(main, name).__xlfunc__
    meta[name] = {"func": m.get("func"), "ret": {k: str(v) for k, v in m["ret"]["options"].items()},
                  "args": {a: {"doc": i["doc"], "optional": "optional" in i,
                               "options": {k: ("pandas." + v.__name__ if isinstance(v, type) else v)
                                           for k, v in i["options"].items()}} for a, i in m["args"].items()}}
for name, args in calls:
    m = getattr(main, name).__xlfunc__
    infos = list(m["args"].values())
    given = []
    for a, info in zip(args + [None] * (len(infos) - len(args)), infos):
        a = to_scalar(a)
        given.append(info.get("optional") if a is None else read(a, info["options"]))
    value = getattr(main, name)(*given)
    out.append([[write(c) for c in row] for row in value] if isinstance(value, list) and value and
               isinstance(value[0], list) else write(value))
print(json.dumps({"meta": meta, "results": out}))
'''


def test_main_py_decorators_and_a_call_through_office_js_conventions(tmp_path, lite_dir):
    fake = tmp_path / "fake"
    (fake / "xlwings").mkdir(parents=True)
    (fake / "xlwings" / "__init__.py").write_text(FAKE_XLWINGS)
    (tmp_path / "office.py").write_text(OFFICE_JS)
    # Office.js hands a blank cell over as null and every range as a matrix
    office_calls = [("CKPT_YOUNG_INTERVAL", [[[2]], [[1200]]]),
                    ("CKPT_YOUNG_INTERVAL", [[[2], [-1], [None], ["x"]], [[1200]]]),
                    ("CKPT_WASTE", [[[60]], [[2]], [[1200]], [[10]], None, None, [["first_order"]]]),
                    ("CKPT_WASTE", [[[60, 45]], [[2]], [[1200]]]),
                    ("CKPT_DEADLINE_PROB", [[[10]], [[11], [12]], [[60]], [[2]], [[1200]]]),
                    ("CKPT_COST_BREAKDOWN", [[[v]] for v in (10, 60, 2, 1200, 10, 0, 0, 1024, 2.5)]),
                    ("CKPT_EVALUATE", [_evaluate_calls()[1][0]])]
    (tmp_path / "calls.json").write_text(json.dumps(office_calls))
    done = subprocess.run([sys.executable, "-B", str(tmp_path / "office.py"), str(fake), str(lite_dir / L.MAIN_NAME),
                           str(tmp_path / "calls.json")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    assert sorted(got["meta"]) == sorted(U.__all__ + S.__all__ + R.__all__)
    for name in U.__all__:   # udfs_setup's descriptions: tests/test_udfs_setup.py
        meta = got["meta"][name]
        params = _params(name)
        assert list(meta["args"]) == [p.name for p in params]
        for p in params:
            info = meta["args"][p.name]
            assert info["optional"] == (p.default is not inspect.Parameter.empty), (name, p.name)
            assert info["doc"] and len(info["doc"]) <= 255, (name, p.name)
            if p.name == "table":
                assert info["options"] == {"convert": "pandas.DataFrame", "index": False, "header": True}
                continue
            assert info["options"] == {"ndim": 2}, (name, p.name)    # a column stays a column
            if p.name != "model":
                expected = describe(p.name, p.default)
                if name == "CKPT_DEADLINE_PROB" and p.name == "runs":
                    expected = expected.replace(f"{U.MAX_RUNS:,}", f"{L.LITE_MAX_RUNS:,}")
                assert info["doc"].startswith(expected), (name, p.name)
    assert got["meta"]["CKPT_EVALUATE"]["ret"] == {"index": "False"}
    results = got["results"]
    assert results[0] == U.CKPT_YOUNG_INTERVAL(2, 1200)                          # a 1 x 1 range: one value
    assert results[1] == U.CKPT_YOUNG_INTERVAL([[2], [-1], [None], ["x"]], 1200)
    assert results[2] == U.CKPT_WASTE(60, 2, 1200, 10, 0, 0, "first_order")
    assert results[3] == U.CKPT_WASTE([[60, 45]], 2, 1200)                        # a row stays a row
    assert results[4] == U.CKPT_DEADLINE_PROB(10, [[11], [12]], 60, 2, 1200)      # a column stays a column
    assert results[5] == U.CKPT_COST_BREAKDOWN(10, 60, 2, 1200, 10, 0, 0, 1024, 2.5)  # header row first
    table = results[6]
    desktop_table = U.CKPT_EVALUATE(_evaluate_calls()[1][0])
    assert table[0] == desktop_table[0] and len(table) == len(desktop_table)
    assert table[2] == [""] * len(table[0])                                      # the blank row stays blank
    for row, want in zip(table, desktop_table):
        assert row == ["" if c is None else c for c in want]
    assert "#NUM!" not in [c for r in table for c in r]


# ------------------------------------------------------------------------------ excel-setup --lite

def test_excel_setup_lite_writes_main_requirements_and_a_starter_workbook(lite_dir):
    assert sorted(p.name for p in lite_dir.iterdir()) == sorted([L.MAIN_NAME, L.REQUIREMENTS_NAME, L.WORKBOOK_NAME])
    requirements = (lite_dir / L.REQUIREMENTS_NAME).read_text()
    assert "wheel" in requirements and "https://" in requirements and "Pyodide" in requirements
    wb = load_workbook(lite_dir / L.WORKBOOK_NAME)
    ws = wb["Add-in check"]
    assert "xlwings Lite" in ws["A2"].value and "excel-setup --lite" in ws["A2"].value
    formulas = [c.value for row in ws.iter_rows() for c in row if isinstance(c.value, str) and "CKPT_" in c.value]
    assert formulas and all("XLWINGS." not in f for f in formulas)     # Lite names the functions without a namespace
    assert ws["A18"].value.text.startswith("=CKPT_COST_BREAKDOWN(")
    labels = [c.value for c in ws["A"] if isinstance(c.value, str)]
    assert f"Simulated runs (at most {L.LITE_MAX_RUNS:,} per cell)" in labels


def test_excel_setup_lite_never_overwrites_and_checks_its_options(tmp_path):
    runner = CliRunner()
    (tmp_path / L.REQUIREMENTS_NAME).write_text("mine")
    res = runner.invoke(_lite_app(), ["excel-setup", "--lite", str(tmp_path)])
    assert res.exit_code == 2 and "refusing to overwrite" in " ".join(res.output.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == [L.REQUIREMENTS_NAME]
    assert (tmp_path / L.REQUIREMENTS_NAME).read_text() == "mine"
    url = "https://example.org/wheels/ckptplan-{}-py3-none-any.whl"
    version = importlib.metadata.version("ckptplan")
    res = runner.invoke(_lite_app(), ["excel-setup", "--lite", str(tmp_path), "--force", "--no-workbook",
                                      "--wheel-url", url.format(version)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [L.MAIN_NAME, L.REQUIREMENTS_NAME]
    assert (tmp_path / L.REQUIREMENTS_NAME).read_text().splitlines()[-1] == url.format(version)
    for bad, message in ((url.format("9.9.9"), "names ckptplan 9.9.9"), ("http://x/ckptplan.whl", "https address"),
                         ("https://x/other-1.0-py3-none-any.whl", "must end in the wheel's file name")):
        res = runner.invoke(_lite_app(), ["excel-setup", "--lite", str(tmp_path / "b"), "--wheel-url", bad])
        assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output
    for args, message in ((["--lite", "--interpreter", "python"], "--interpreter is for the desktop"),
                          (["--wheel-url", url.format(version)], "--wheel-url goes with --lite")):
        res = runner.invoke(_lite_app(), ["excel-setup", str(tmp_path / "c"), *args])
        assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize("fail_at", ["rename", "write"])
def test_excel_setup_lite_writes_all_files_or_none(tmp_path, monkeypatch, fail_at):
    import ckptplan.files.atomic as atomic

    replaced = []

    def flaky(real):
        def call(src, dst):
            if len(replaced) == 1:      # the second rename fails: the first file landed already
                raise OSError(28, "No space left on device")
            replaced.append(dst)
            return real(src, dst)
        return call

    if fail_at == "rename":  # a new file takes its name by a hard link (exclusive), a replaced one by os.replace
        monkeypatch.setattr(atomic.os, "replace", flaky(os.replace))
        monkeypatch.setattr(atomic.os, "link", flaky(os.link))
    else:
        from openpyxl import Workbook

        def broken_save(self, filename):
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(Workbook, "save", broken_save)
    res = CliRunner().invoke(_lite_app(), ["excel-setup", "--lite", str(tmp_path / "x")])
    assert res.exit_code == 2, res.output
    assert "cannot write to" in " ".join(res.output.split())
    assert list((tmp_path / "x").iterdir()) == []          # neither the targets nor a temporary file
    if fail_at == "rename":
        assert len(replaced) == 1


def test_lite_module_imports_no_writer_and_no_heavy_package():
    probe = ("import sys, ckptplan.workbook.lite\n"
             "print(' '.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                cwd=REPO).stdout.split())
    for heavy in ("openpyxl", "scipy.stats", "dask", "torch", "typer", "rich", "ckptplan.files", "lxml"):
        assert heavy not in loaded, heavy


# ------------------------------------------------------------------------------ under Pyodide itself (Node.js)

NODE_RUNNER = r'''
import { readFileSync } from "node:fs";
const [dir, wheelPath, callsPath] = process.argv.slice(2);
const { loadPyodide } = await import(dir + "/pyodide.mjs");
const py = await loadPyodide({ indexURL: dir + "/" });
await py.loadPackage(["numpy", "pandas", "scipy"]);
py.FS.writeFile("/tmp/ckptplan.whl", readFileSync(wheelPath));
py.FS.writeFile("/tmp/calls.json", readFileSync(callsPath));
const out = py.runPython(`
import json, sys, types, zipfile
zipfile.ZipFile("/tmp/ckptplan.whl").extractall("/tmp/site")
sys.path.insert(0, "/tmp/site")
try:
    import xlwings
except ImportError:   # xlwings Lite brings xlwings; plain Pyodide has none: pass-through decorators
    xlwings = types.ModuleType("xlwings")
    xlwings.func = lambda f=None, **k: f if f is not None else (lambda g: g)
    xlwings.arg = lambda *a, **k: (lambda f: f)
    xlwings.ret = lambda *a, **k: (lambda f: f)
    sys.modules["xlwings"] = xlwings
import ckptplan.workbook.udfs as U
results = []
for name, args in json.load(open("/tmp/calls.json")):
    results.append(getattr(U, name)(*args))
json.dumps({"platform": sys.platform, "version": sys.version, "results": results})
`);
console.log(out);
'''


NODE_CORE = r'''
import { readFileSync } from "node:fs";
const [dir, wheelPath] = process.argv.slice(2);
const { loadPyodide } = await import(dir + "/pyodide.mjs");
const py = await loadPyodide({ indexURL: dir + "/" });
py.FS.writeFile("/tmp/ckptplan.whl", readFileSync(wheelPath));
console.log(py.runPython(`
import compileall, json, sys, zipfile
zipfile.ZipFile("/tmp/ckptplan.whl").extractall("/tmp/site")
compiled = compileall.compile_dir("/tmp/site/ckptplan", quiet=1)
sys.path.insert(0, "/tmp/site")
import ckptplan.engine.fields as F
json.dumps({"platform": sys.platform, "python": sys.version.split()[0], "compiled": bool(compiled),
            "fields": len(F.FIELDS), "file": F.__file__})
`));
'''


def _pyodide_core_dir() -> Path | None:
    where = os.environ.get("CKPTPLAN_PYODIDE_DIR")
    if not where or shutil.which("node") is None or not (Path(where) / "pyodide.mjs").is_file():
        return None
    return Path(where)


@pytest.mark.skipif(_pyodide_core_dir() is None,
                    reason="no Pyodide: set CKPTPLAN_PYODIDE_DIR to a Pyodide folder (e.g. the npm package `pyodide`, "
                           "unpacked: `npm pack pyodide`) and install node")
def test_the_wheel_compiles_and_imports_under_the_pyodide_interpreter(tmp_path, wheel):
    """What the interpreter alone (no numpy) can show: every module compiles under Pyodide's Python, and
    the package and its registry import from the wheel there."""
    (tmp_path / "core.mjs").write_text(NODE_CORE)
    done = subprocess.run(["node", str(tmp_path / "core.mjs"), str(_pyodide_core_dir()), str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["platform"] == "emscripten" and got["compiled"] and got["fields"] == len(engine.FIELDS)
    assert got["file"].startswith("/tmp/site/ckptplan/")


def _pyodide_dir() -> Path | None:
    where = os.environ.get("CKPTPLAN_PYODIDE_DIR")
    if not where or shutil.which("node") is None:
        return None
    folder = Path(where)
    lock = folder / "pyodide-lock.json"
    if not (folder / "pyodide.mjs").is_file() or not lock.is_file():
        return None
    packages = json.loads(lock.read_text())["packages"]
    if not all((folder / packages[n]["file_name"]).is_file() for n in ("numpy", "pandas", "scipy")):
        return None
    return folder


@pytest.mark.skipif(_pyodide_dir() is None,
                    reason="no full Pyodide distribution: set CKPTPLAN_PYODIDE_DIR to a folder holding pyodide.mjs, "
                           "pyodide-lock.json and its numpy, pandas and scipy wheels (the npm package `pyodide` holds "
                           "only the interpreter; the package wheels come from Pyodide's CDN), and install node")
def test_the_same_calls_under_pyodide_in_node(tmp_path, desktop, wheel):
    listed, expected = desktop
    (tmp_path / "run.mjs").write_text(NODE_RUNNER)
    (tmp_path / "calls.json").write_text(json.dumps(listed))
    done = subprocess.run(["node", str(tmp_path / "run.mjs"), str(_pyodide_dir()), str(wheel),
                           str(tmp_path / "calls.json")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["platform"] == "emscripten"
    for (name, args), want, have in zip(listed, expected, got["results"]):
        ok = same(have, want) or all(  # another numpy build may differ in the last bits of a float
            (isinstance(a, float) and isinstance(b, float) and a == pytest.approx(b, rel=1e-12)) or a == b
            for a, b in zip(cells_of(have), cells_of(want)))
        assert ok, (name, args, have, want)


def test_spilled_results_keep_the_shape_of_their_ranges(desktop):
    listed, results = desktop
    for (name, args), result in zip(listed, results):
        if name in ("CKPT_EVALUATE", "CKPT_COST_BREAKDOWN"):
            continue
        shapes = [np.shape(np.asarray(a, dtype=object)) for a in args if isinstance(a, list)]
        if shapes and int(np.prod(np.broadcast_shapes(*shapes))) > 1 and isinstance(result, str):
            assert re.match(r"#CKPT! [a-z_]+: ", result), (name, args, result)  # one message for the whole call
            continue
        if not shapes:
            assert not isinstance(result, list), (name, args)
            continue
        shape = np.broadcast_shapes(*shapes)
        if int(np.prod(shape)) == 1:
            assert not isinstance(result, list), (name, args)      # a 1 x 1 range gives one value
        else:
            assert np.shape(np.asarray(result, dtype=object)) == shape, (name, args)
