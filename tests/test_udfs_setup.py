"""The storage and recovery CKPT_ functions (workbook.udfs_setup) on every host's path.

Called as xlwings desktop and Server call them (scalars, lists of lists, blanks as None, text, bools
and Excel error strings; xlwings' converters do not run outside Excel), each cell must equal the
engine function it names on that cell's inputs, and a design's cost must equal
:func:`engine.setup.plan_setup`. The same calls through the ``main.py`` that ``excel-setup --lite``
writes, run from the built wheel, give the same cells. Argument descriptions come from the
registry; the "Add-in check (setup)" sheet calls each function on existing names, and (with
LibreOffice) on the recalculated names each equals the sheet's own formula.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cellwise import cells_of, same

from ckptplan import engine, files, workbook
from ckptplan.engine import recovery, storage
from ckptplan.engine.fields import lookup
from ckptplan.engine.scenario import Scenario
from ckptplan.engine.setup import RecoverySetup, plan_setup
from ckptplan.engine.tiers import Tier
from ckptplan.engine.tiers import first_order_tier_intervals
from ckptplan.workbook import lite as L
from ckptplan.workbook import udfs_setup as S
from ckptplan.workbook.cells import MAX_UDF_CELLS, describe
from ckptplan.workbook.udf_sheet import SETUP_CHECKS, SETUP_SHEET, add_setup_udf_sheet, add_udf_sheet

REL = 1e-12


def approx(x):
    return pytest.approx(x, rel=REL)


# -------------------------------------------------------------------------- each function = its engine function

@pytest.mark.parametrize("per", [None, 2.0])
@pytest.mark.parametrize("agg", [None, 40.0, 1e4])
@pytest.mark.parametrize("d2h", [None, 25.0])
def test_save_and_restore_times_are_the_engines(per, agg, d2h):
    size, n = 980.0, 128
    if per is None and agg is None:
        for f in (S.CKPT_SAVE_STALL_MIN, S.CKPT_ASYNC_WRITE_MIN):
            assert f(size, n, per, agg, d2h) == ("#CKPT! write_gb_s_per_writer: give it or aggregate_write_gb_s (a save "
                                                 "needs a bandwidth) (got a blank cell)")
        assert S.CKPT_RESTORE_MIN(size, n, per, agg).startswith("#CKPT! read_gb_s_per_writer: give it or aggregate")
        return
    p = per if per is not None else agg / n          # no per-writer figure: the writers share the aggregate
    a = agg if agg is not None else math.inf          # no aggregate: no shared limit
    want = storage.save_times(size, n, p, a, async_save=d2h is not None, d2h_gb_s_per_writer=d2h)
    assert S.CKPT_SAVE_STALL_MIN(size, n, per, agg, d2h) == want[0]
    assert S.CKPT_ASYNC_WRITE_MIN(size, n, per, agg, d2h) == want[1]
    assert S.CKPT_RESTORE_MIN(size, n, per, agg) == storage.restore_time_min(size, n, p, a)
    if d2h is None:
        assert S.CKPT_SAVE_STALL_MIN(size, n, per, agg) == want[0] and S.CKPT_ASYNC_WRITE_MIN(size, n, per, agg) == 0.0


def test_size_pipeline_pool_and_tier_interval_are_the_engines():
    assert S.CKPT_CHECKPOINT_SIZE_GB(405) == 5670.0 == storage.checkpoint_size_gb(405)
    assert S.CKPT_CHECKPOINT_SIZE_GB(7, 12, 3.5) == storage.checkpoint_size_gb(7, 12, 3.5)
    assert S.CKPT_CHECKPOINT_SIZE_GB(7, "fp32-adam") == S.CKPT_CHECKPOINT_SIZE_GB(7, 12)
    assert S.CKPT_CHECKPOINT_SIZE_GB(7, [["Mixed-Adam", "bf16"]]) == [[98.0, "#CKPT! bytes_per_parameter: must be a "
                                                                      "number (got text 'bf16')"]]
    parts = (2.0, 10.0, 3.0, 1.0, 0.5, 2.0)
    assert S.CKPT_RESTART_PIPELINE_MIN(*parts) == recovery.restart_pipeline_min(*parts) == 18.5
    init = recovery.communicator_init_min(2048, 1.0, 0.4)
    assert S.CKPT_RESTART_PIPELINE_MIN(*parts, 0.4, 2048) == recovery.restart_pipeline_min(2, 10, 3, init, 0.5, 2)
    assert S.CKPT_RESTART_PIPELINE_MIN() == 0.0 and S.CKPT_RESTART_PIPELINE_MIN(None, [[None], [4]]) == [[0.0], [4.0]]
    assert S.CKPT_RESTART_PIPELINE_MIN(*parts, 0.4) == ("#CKPT! nodes: is required when init_per_1000_nodes_min > 0 "
                                                        "(got a blank cell)")
    for M, share, repair, spares, swap in ((20.0, 1.0, 24.0, 2, 1.0), (3.5, 0.3, 72.0, 0, 0.0), (500, 0.9, 4, 40, 2)):
        rate = share / M
        assert S.CKPT_SPARE_FREE_PROBABILITY(M, share, repair, spares) == recovery.spare_free_probability(
            rate, repair, spares)
        assert S.CKPT_REALLOCATION_MIN(M, share, repair, spares, swap) == recovery.expected_reallocation_min(
            rate, repair, spares, swap)
    assert S.CKPT_SPARE_FREE_PROBABILITY(20, None, 24, None) == recovery.spare_free_probability(1 / 20, 24, 0) == 0.0
    assert S.CKPT_REALLOCATION_MIN(20, None, 24, 2) == recovery.expected_reallocation_min(1 / 20, 24, 2, 0.0)
    assert S.CKPT_REALLOCATION_MIN(1e-6, 1, 24, 2).startswith("#CKPT! repair_h: replacement_share / job_mtbf_h x "
                                                              "repair_h = 2.4e+07 nodes in repair")
    for C, share, M in ((2.0, 1.0, 20.0), (0.5, 0.3, 7.0), (9.0, 1e-3, 300.0)):
        T = S.CKPT_TIER_INTERVAL_MIN(C, share, M)
        assert T == approx(math.sqrt(2 * C / (share / (M * 60))))
        classes = {"restored": 1.0} if share == 1 else {"restored": share, "other": 1 - share}
        tiers = [Tier("tier", C, 0.0, 1, ("restored",))] + ([Tier("rest", 0.0, 0.0, 1, ("other",))] if share < 1 else [])
        assert T == first_order_tier_intervals(M * 60, tiers=tiers, classes=classes)["interval_tier"]
    assert S.CKPT_TIER_INTERVAL_MIN(2, 1, 20) == approx(math.sqrt(2 * 2 * 1200))   # Young's interval
    assert S.CKPT_TIER_INTERVAL_MIN(0, 1, 20).startswith("#CKPT! checkpoint_stall_min: must be > 0")
    assert S.CKPT_TIER_INTERVAL_MIN(2, 0, 20).startswith("#CKPT! share_restored: must be > 0")


DESIGNS = [
    {},
    {"parameters_b": 70.0, "write_gb_s_per_writer": 2.0, "aggregate_write_gb_s": 100.0, "d2h_gb_s_per_writer": 20.0,
     "detection_min": 2.0, "startup_min": 3.0, "repair_h": 24.0, "spares": 2, "swap_min": 1.0, "price_per_gb_month": 0.02,
     "retention": 3},
    {"parameters_b": 405.0, "aggregate_write_gb_s": 50.0, "read_gb_s_per_writer": 1.0, "init_min": 1.0,
     "init_per_1000_nodes_min": 0.4, "warmup_min": 2.0, "writers": 64, "extra_state_gb": 12.0},
    {"parameters_b": 8.0, "write_gb_s_per_writer": 1.0, "reallocation_min": 5.0, "repair_h": 12.0, "spares": 1,
     "replacement_share": 0.5, "bytes_per_parameter": 6.0},
]


@pytest.mark.parametrize("setup", DESIGNS)
@pytest.mark.parametrize("stated", [(), ("checkpoint_stall_min",), ("restart_min", "async_write_min")])
def test_total_cost_is_plan_setups_total(setup, stated):
    scenario = {"useful_training_h": 300.0, "nodes": 256, "job_mtbf_h": 9.0, "price_per_gpu_hour": 2.5,
                "async_slowdown_fraction": 0.1, "gpus_per_node": 4}
    given = {"checkpoint_stall_min": 1.5, "restart_min": 12.0, "async_write_min": 0.5}
    derivable = "parameters_b" in setup and ("write_gb_s_per_writer" in setup or "aggregate_write_gb_s" in setup)
    stated = tuple(stated) + (() if derivable else ("checkpoint_stall_min",))
    args = {**scenario, **{k: given[k] for k in stated}, **setup}
    plan = plan_setup(Scenario(name="x", **{**scenario, "checkpoint_stall_min": 1.0, **{k: given[k] for k in stated}}),
                      RecoverySetup(**setup, stated=frozenset(stated)))
    params = list(inspect.signature(S.CKPT_TOTAL_COST).parameters.values())
    positional = [args.get(p.name, None if p.default is inspect.Parameter.empty else p.default) for p in params]
    assert S.CKPT_TOTAL_COST(*positional) == approx(plan.figures["total_cost"])
    blanks = [None if a == p.default and a is not None else a for a, p in zip(positional, params)]
    assert S.CKPT_TOTAL_COST(*blanks) == S.CKPT_TOTAL_COST(*positional)   # a blank optional: its default


def test_total_cost_cells_and_their_problems():
    assert S.CKPT_TOTAL_COST(300, 256, 9, 2.5) == ("#CKPT! checkpoint_stall_min: is required: give it, or "
                                                   "parameters_b with a write bandwidth to derive it (got a blank cell)")
    got = S.CKPT_TOTAL_COST(300, [[256], [0], ["x"], [128]], 9, 2.5, 1.5, None, 8, None, None, 0, None, 14, 0, None, 2.0)
    assert got[1] == ["#CKPT! nodes: must be a whole number >= 1 (got 0)"]
    assert got[2] == ["#CKPT! nodes: must be a number (got text 'x')"]
    assert got[0] == ["#CKPT! write_gb_s_per_writer: needs the checkpoint size: give parameters_b (got 2)"]
    plain = S.CKPT_TOTAL_COST(300, [[256], [128]], 9, 2.5, 1.5)
    assert plain == [[approx(plan_setup(Scenario(name="x", useful_training_h=300, nodes=n, job_mtbf_h=9,
                                                 price_per_gpu_hour=2.5, checkpoint_stall_min=1.5)).figures["total_cost"])]
                     for n in (256, 128)]
    with_spares = [300, 256, 9, 2.5, 1.5] + [None] * 21 + [2]
    assert S.CKPT_TOTAL_COST(*with_spares).startswith("#CKPT! spares: needs repair_h")
    assert S.CKPT_TOTAL_COST(300, 256, 9, 2.5, 0.0) == ("#CKPT! checkpoint_stall_min: checkpoint_stall_min + "
                                                        "async_write_min must be > 0: no save is free (measure it) "
                                                        "(got 0)")


# -------------------------------------------------------------------------- what Excel sends, cell by cell

GOOD = {"parameters_b": 70, "bytes_per_parameter": 14, "extra_state_gb": 2, "checkpoint_size_gb": 980, "writers": 128,
        "write_gb_s_per_writer": 2, "aggregate_write_gb_s": 100, "d2h_gb_s_per_writer": 20, "read_gb_s_per_writer": 3,
        "aggregate_read_gb_s": 150, "detection_min": 2, "reallocation_min": 10, "startup_min": 3, "init_min": 1,
        "load_min": 0.5, "warmup_min": 2, "init_per_1000_nodes_min": 0.4, "nodes": 256, "job_mtbf_h": 20,
        "replacement_share": 0.8, "repair_h": 24, "spares": 2, "swap_min": 1, "checkpoint_stall_min": 2,
        "share_restored": 0.6, "useful_training_h": 300, "price_per_gpu_hour": 2.5, "restart_min": 12,
        "gpus_per_node": 8, "interval_min": 90, "async_write_min": 1, "async_slowdown_fraction": 0.1,
        "price_per_gb_month": 0.02, "retention": 3}
OTHER = {k: (v * 2 if k not in ("replacement_share", "share_restored", "async_slowdown_fraction") else v / 2)
         for k, v in GOOD.items()}
ODD = [None, "", "12 min", True, -1, float("nan"), float("inf"), "#N/A"]
# CKPT_TOTAL_COST with every argument: a stall, write and restart stated, a setup beside them
DESIGN_ALL = ("useful_training_h", "nodes", "job_mtbf_h", "price_per_gpu_hour", "checkpoint_stall_min", "restart_min",
              "gpus_per_node", "interval_min", "async_write_min", "async_slowdown_fraction", "parameters_b")


def _names(name: str) -> list[str]:
    return list(inspect.signature(getattr(S, name)).parameters)


def _good_args(name: str) -> list:
    if name == "CKPT_TOTAL_COST":
        return [GOOD[n] if n in DESIGN_ALL else None for n in _names(name)]
    return [GOOD[n] for n in _names(name)]


def calls() -> list[tuple[str, list]]:
    """(function, positional arguments): every function with every shape and odd cell Excel may send."""
    out = []
    for name in S.__all__:
        names, good = _names(name), _good_args(name)
        required = [p.name for p in inspect.signature(getattr(S, name)).parameters.values()
                    if p.default is inspect.Parameter.empty]
        out.append((name, good[:len(required)]))
        out.append((name, good))
        out.append((name, [[[v]] for v in good]))                                      # 1 x 1 ranges
        out.append((name, [[[good[0], OTHER[names[0]]]]] + good[1:]))                  # a row
        out.append((name, [[[good[0]], [OTHER[names[0]]]], [[good[1], OTHER[names[1]]]]] + good[2:]))  # a grid
        out.append((name, [np.array([[good[0]], [OTHER[names[0]]]], dtype=float)] + good[1:]))       # numpy
        for i, n in enumerate(names):
            if good[i] is None:
                continue
            column = [[good[i]], [OTHER[n]]] + [[v] for v in ODD]
            out.append((name, good[:i] + [column] + good[i + 1:]))
    return out


@pytest.fixture(scope="module")
def desktop():
    listed = calls()
    return listed, [getattr(S, name)(*args) for name, args in listed]


def test_every_cell_is_a_number_or_a_message_and_equals_the_call_on_that_cell(desktop):
    listed, results = desktop
    numbers = messages = 0
    for (name, args), result in zip(listed, results):
        for cell in cells_of(result):
            assert (isinstance(cell, float) and math.isfinite(cell)) or (isinstance(cell, str) and cell.startswith(
                "#CKPT! ")), (name, args, cell)
            numbers += isinstance(cell, float)
            messages += isinstance(cell, str)
        ranges = [i for i, a in enumerate(args) if isinstance(a, (list, np.ndarray))]
        if len(ranges) != 1 or np.size(np.asarray(args[ranges[0]], dtype=object)) == 1:
            continue
        i = ranges[0]
        column = [row[0] if isinstance(row, (list, np.ndarray)) and len(row) == 1 else row
                  for row in (args[i].tolist() if isinstance(args[i], np.ndarray) else args[i])]
        if not isinstance(column[0], list):   # a column: each cell is the call on that cell alone
            for k, (cell, value) in enumerate(zip(cells_of(result), column)):
                alone = getattr(S, name)(*args[:i], value, *args[i + 1:])
                assert same(cell, alone), (name, S.__all__, i, k, cell, alone)
                if isinstance(cell, str) and value is not None and value != "":
                    param = _names(name)[i]
                    assert cell.startswith(f"#CKPT! {param}: "), (name, param, value, cell)
                if value == "#N/A":
                    assert "got the Excel error #N/A" in cell
    assert numbers > 200 and messages > 200, (numbers, messages)


def test_blank_optional_cells_are_the_engines_none_one_by_one():
    # a blank per-writer bandwidth in a range: the aggregate is the only limit for that cell
    got = S.CKPT_SAVE_STALL_MIN(980, 128, [[2], [None], [""]], 100)
    only_aggregate = S.CKPT_SAVE_STALL_MIN(980, 128, None, 100)
    assert got == [[S.CKPT_SAVE_STALL_MIN(980, 128, 2, 100)], [only_aggregate], [only_aggregate]]
    assert only_aggregate == approx(980 / 100 / 60)
    # a blank device-to-host bandwidth: that cell is a synchronous save
    assert S.CKPT_ASYNC_WRITE_MIN(980, 128, 2, 100, [[20, None]]) == [[S.CKPT_ASYNC_WRITE_MIN(980, 128, 2, 100, 20), 0.0]]
    # a required argument blank: a message
    assert S.CKPT_SAVE_STALL_MIN(None, 128, 2) == "#CKPT! checkpoint_size_gb: must be a number (got a blank cell)"
    assert S.CKPT_SPARE_FREE_PROBABILITY(20, 1, [[24, None]], 2)[0][1] == ("#CKPT! repair_h: must be a number (got a "
                                                                           "blank cell)")


def test_shapes_and_the_cell_budget():
    grid = S.CKPT_CHECKPOINT_SIZE_GB([[1], [2], [3]], [[14, 12]])
    assert np.shape(grid) == (3, 2) and grid[2][1] == 36.0
    assert S.CKPT_RESTORE_MIN([[980, 98]], [[128], [64]], 2) == [[S.CKPT_RESTORE_MIN(980, 128, 2),
                                                                  S.CKPT_RESTORE_MIN(98, 128, 2)],
                                                                 [S.CKPT_RESTORE_MIN(980, 64, 2),
                                                                  S.CKPT_RESTORE_MIN(98, 64, 2)]]
    assert S.CKPT_SAVE_STALL_MIN([[1, 2]], [[1], [2], [3]], [[1, 2, 3]]).startswith("#CKPT! shapes: ranges must have")
    big = np.ones((MAX_UDF_CELLS + 1, 1))
    assert S.CKPT_CHECKPOINT_SIZE_GB(big).startswith("#CKPT! parameters_b: 250,001 cells is more than one call takes")
    assert S.CKPT_TIER_INTERVAL_MIN(np.ones((600, 1)), 1, np.ones((1, 600))).startswith("#CKPT! result: 360,000 cells")
    assert S.CKPT_TOTAL_COST([[10, 20]], 8, 20, 1, 2, "x") == [["#CKPT! restart_min: must be a number (got text "
                                                                "'x')"] * 2]   # the bad cell is every cell's
    many = S.CKPT_TOTAL_COST(np.linspace(10, 500, 2000).reshape(-1, 1), 256, 9, 2.5, 1.5)
    assert len(many) == 2000 and all(isinstance(c[0], float) for c in many)


# -------------------------------------------------------------------------- the registry's descriptions

def test_arguments_are_registry_names_described_by_the_registry():
    specs = {s.name: s for s in L.udf_specs()}
    for name in S.__all__:
        spec = specs[name]
        assert spec.target == f"_udfs_setup.{name}"
        assert spec.doc == inspect.cleandoc(getattr(S, name).__doc__)
        params = inspect.signature(getattr(S, name)).parameters.values()
        for p in params:
            options = spec.args[p.name]
            assert options["ndim"] == 2 and set(options) == {"ndim", "doc"}, (name, p.name)
            doc = options["doc"]
            assert 0 < len(doc) <= 255, (name, p.name)
            field = lookup(p.name)
            assert field.check.noun in doc, (name, p.name, doc)
            assert doc.startswith("Optional.") == (p.default is not inspect.Parameter.empty), (name, p.name)
            plain = describe(p.name, p.default)
            label = field.label.split(" (")[0]
            assert doc == plain or label.lower()[:20] in doc.lower() or "Job MTBF" in doc, (name, p.name, doc)
    described = sum(specs[n].args[p]["doc"] == describe(p, d) for n in S.__all__
                    for p, d in specs[n].params)
    assert described >= 30   # most are the registry's text word for word
    assert S.CKPT_CHECKPOINT_SIZE_GB.__doc__.splitlines()[0].startswith("Checkpoint size in GB")


# -------------------------------------------------------------------------- xlwings Lite's main.py

RUNNER = r'''
import json, sys
config = json.load(open(sys.argv[1]))
sys.path.insert(0, config["site"])
import importlib.util
spec = importlib.util.spec_from_file_location("main", config["main"])
main = importlib.util.module_from_spec(spec)
spec.loader.exec_module(main)
import ckptplan
results = [getattr(main, name)(*args) for name, args in config["calls"]]
print(json.dumps({"results": results, "file": ckptplan.__file__,
                  "functions": sorted(n for n in dir(main) if n.startswith("CKPT_")), "modules": sorted(sys.modules)}))
'''


def _jsonable(args):
    return [a.tolist() if isinstance(a, np.ndarray) else a for a in args]


def test_lite_main_py_from_the_wheel_gives_the_same_cells(tmp_path, desktop, wheel):
    listed, expected = desktop
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
        assert "ckptplan/workbook/udfs_setup.py" in zf.namelist() and "ckptplan/engine/setup_table.py" in zf.namelist()
    main = tmp_path / "main.py"
    main.write_text(L.main_py("test"))
    listed = [(name, _jsonable(args)) for name, args in listed]
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"calls": listed, "site": str(site), "main": str(main)}))
    (tmp_path / "runner.py").write_text(RUNNER)
    done = subprocess.run([sys.executable, "-B", str(tmp_path / "runner.py"), str(config)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    assert got["file"].startswith(str(site))
    assert set(S.__all__) <= set(got["functions"])
    for (name, args), want, have in zip(listed, expected, got["results"]):
        assert same(have, want), (name, args, have, want)
    for heavy in ("openpyxl", "scipy.stats", "dask", "torch", "typer", "ckptplan.files", "ckptplan.cli"):
        assert heavy not in got["modules"], heavy


def test_main_py_wraps_the_setup_functions_and_refuses_a_stale_copy():
    text = L.main_py("test")
    assert "from ckptplan.workbook import udfs_setup as _udfs_setup" in text
    namespace: dict = {"__name__": "main"}
    exec(compile(text, "main.py", "exec"), namespace)
    for name in S.__all__:
        assert inspect.signature(namespace[name]) == inspect.signature(getattr(S, name)), name
        assert inspect.getdoc(namespace[name]) == inspect.getdoc(getattr(S, name)), name
    assert namespace["CKPT_SAVE_STALL_MIN"](980, 128, 2, None, 20) == S.CKPT_SAVE_STALL_MIN(980, 128, 2, None, 20)
    stale = re.sub(r"@func\n(@arg\([^\n]*\n)*def CKPT_TOTAL_COST\(.*?\n\n\n", "", text, flags=re.S)
    assert "def CKPT_TOTAL_COST" not in stale
    with pytest.raises(RuntimeError, match="CKPT_TOTAL_COST is missing"):
        exec(compile(stale, "main.py", "exec"), {"__name__": "main"})


# -------------------------------------------------------------------------- the check sheet

SETUP = RecoverySetup(parameters_b=70, write_gb_s_per_writer=2, aggregate_write_gb_s=100, d2h_gb_s_per_writer=20,
                      read_gb_s_per_writer=3, detection_min=2, startup_min=3, init_min=1, init_per_1000_nodes_min=0.5,
                      warmup_min=2, repair_h=24, spares=2, swap_min=1, replacement_share=0.8, price_per_gb_month=0.02,
                      retention=3)
BUILTINS = {"IF"}


def test_setup_check_sheet_calls_every_setup_function_on_existing_names():
    built = workbook.build_workbook(files.load_scenario("seed"), setup=SETUP)
    wb = built.workbook
    add_udf_sheet(wb)
    assert wb.sheetnames.index(SETUP_SHEET) == wb.sheetnames.index("Add-in check") - 1
    ws = wb[SETUP_SHEET]
    called = set()
    for row in ws.iter_rows():
        for cell in row:
            text = cell.value
            if not (isinstance(text, str) and text.startswith("=")):
                continue
            bare = re.sub(r'"[^"]*"', "", text[1:])
            for func in re.findall(r"([A-Za-z_][\w.]*)\s*\(", bare):
                assert func in BUILTINS | {"AND", "ISNUMBER", "ABS", "MAX"} or func in S.__all__, (cell.coordinate, func)
                called.add(func)
            for name in re.findall(r"(?<![\w$])([A-Za-z_]\w*)(?![\w(])", bare):
                if not re.fullmatch(r"[A-Z]{1,3}\d+", name):
                    assert name in wb.defined_names, (cell.coordinate, name)
    assert called >= set(S.__all__)
    with pytest.raises(ValueError, match="already has a sheet"):
        add_setup_udf_sheet(wb)
    server = workbook.build_workbook(files.load_scenario("seed")).workbook
    add_udf_sheet(server, function_prefix="XLWINGS.", host="server")
    assert server[SETUP_SHEET]["B6"].value.startswith("=XLWINGS.CKPT_CHECKPOINT_SIZE_GB(")
    assert "udfs_setup import *" in server[SETUP_SHEET]["A2"].value


def _value(wb, name):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    v = wb[sheet][ref.replace("$", "")].value
    return None if v == "" else v


def _args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return out + [cur]


def _evaluate(wb, token: str):
    """A formula argument as Excel hands it to the add-in: a name's value, a number, IF(name<>"",a,b), blank."""
    token = token.strip()
    if token == "" or token == '""':
        return None
    if re.fullmatch(r"[-\d.]+", token):
        return float(token)
    m = re.fullmatch(r'IF\((\w+)<>"",(.*)\)', token)
    if m:
        then, other = _args(m.group(2))
        return _evaluate(wb, then) if _value(wb, m.group(1)) is not None else _evaluate(wb, other)
    return _value(wb, token)


@pytest.mark.skipif(shutil.which("soffice") is None and shutil.which("libreoffice") is None,
                    reason="LibreOffice (soffice) is not installed")
def test_setup_check_sheet_udfs_agree_with_the_recalculated_sheet(tmp_path):
    from openpyxl import load_workbook

    from ckptplan.workbook.recalc import recalculate

    sc = files.load_scenario("seed")
    built = workbook.build_workbook(sc, setup=SETUP)
    triples = add_setup_udf_sheet(built.workbook)
    src = tmp_path / "in.xlsx"
    built.workbook.save(src)
    (out,) = recalculate([src], tmp_path / "out")
    values = load_workbook(out, data_only=True)
    ws_v, ws_f = values[SETUP_SHEET], built.workbook[SETUP_SHEET]
    plan = plan_setup(sc, SETUP)
    figures = dict(plan.figures, restart_min=sum(plan.restart_parts_min.values()),   # Young: the Plan sheet's stall
                   young_interval_min=float(engine.evaluate(plan.scenario)["young_interval_min"].iloc[0]))
    figures["pool_reallocation_min"] = float(recovery.expected_reallocation_min(
        0.8 / plan.figures["job_mtbf_h"], 24, 2, 1))
    assert [k for k, *_ in SETUP_CHECKS] == [k for _, _, k in triples]
    for udf_cell, plain_cell, key in triples:
        plain = ws_v[plain_cell].value
        assert plain == pytest.approx(figures[key], rel=1e-9), key
        m = re.fullmatch(r"=(CKPT_\w+)\((.*)\)", ws_f[udf_cell].value)
        got = getattr(S, m.group(1))(*(_evaluate(values, t) for t in _args(m.group(2))))
        assert got == pytest.approx(plain, rel=1e-9), (key, got, plain)
        assert ws_v[udf_cell].value in ("#NAME?", "#NAME", None)     # LibreOffice has no add-in
    # a workbook without a setup: each row says its figure is not given (blank Storage & recovery cells)
    bare = workbook.build_workbook(sc)
    add_setup_udf_sheet(bare.workbook)
    bare.workbook.save(tmp_path / "bare.xlsx")
    (out,) = recalculate([tmp_path / "bare.xlsx"], tmp_path / "out2")
    ws = load_workbook(out, data_only=True)[SETUP_SHEET]
    agree = {key: ws[f"E{6 + i}"].value for i, (key, *_) in enumerate(SETUP_CHECKS)}
    assert agree["checkpoint_size_gb"] == "not given: the setup has no such figure"
    assert agree["young_interval_min"] == "no value in B: add-in not loaded, or see the message in B"


def test_udf_modules_are_small_and_list_their_names():
    for path in (Path(S.__file__), Path(L.__file__)):
        assert path.read_text().count("\n") <= 600, path
