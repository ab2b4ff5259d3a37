"""The shape of the project: one distribution name, a models-only engine, small modules, no
top-level generic imports, nothing cited from outside the repository, and a fast start.

These tests read the code and the built wheel; they run nothing of the models except the CLI.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("ckptplan", "engine", "workbook", "files", "instruments", "templates")
GENERIC = {"engine", "workbook", "templates", "files", "instruments"}
MAX_MODULE_LINES = 600


def _modules(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (REPO / d).glob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import statement: level 0 = absolute, 1 = ``from .x``, 2 = ``from ..x``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module is None:  # from .. import x, y: the names are the modules
                out += [(node.level, alias.name) for alias in node.names]
            else:
                out.append((node.level, node.module))
    return out


# ------------------------------------------------------------------------------ the wheel



def test_wheel_installs_one_top_level_name_and_is_pure_python(wheel):
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        top = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert zf.read(top).decode().split() == ["ckptplan"]
    roots = {n.split("/")[0] for n in names}
    assert {r for r in roots if not r.endswith(".dist-info")} == {"ckptplan"}
    for expected in ("ckptplan/cli.py", "ckptplan/engine/fields.py", "ckptplan/engine/waste.py",
                     "ckptplan/workbook/udfs.py", "ckptplan/files/scenarios.py", "ckptplan/instruments/audit.py",
                     "ckptplan/templates/seed.toml", "ckptplan/templates/example-interruption-log.csv"):
        assert expected in names, expected


def _shadow_dir(root: Path) -> Path:
    """A working directory holding a user's own engine.py, workbook.py and templates/ package."""
    shadow = root / "shadow"
    (shadow / "templates").mkdir(parents=True)
    bomb = "raise SystemExit('the user\\'s own {} was imported instead of ckptplan\\'s')\n"
    (shadow / "engine.py").write_text(bomb.format("engine.py"))
    (shadow / "workbook.py").write_text(bomb.format("workbook.py"))
    (shadow / "files.py").write_text(bomb.format("files.py"))
    (shadow / "templates" / "__init__.py").write_text(bomb.format("templates/"))
    (shadow / "templates" / "seed.toml").write_text('[scenario]\nname = "not ours"\ncheckpoint_stall_min = 9.0\n'
                                                    'nodes = 1\nuseful_training_h = 1.0\nprice_per_gpu_hour = 1.0\n'
                                                    'node_mtbf_h = 10.0\n')
    return shadow


def _run(args: list[str], cwd: Path, site: Path | None = None) -> subprocess.CompletedProcess:
    prefix = "import sys\n" + (f"sys.path.insert(0, {str(site)!r})\n" if site else "")
    code = prefix + f"sys.argv = ['ckptplan'] + {args!r}\nfrom ckptplan.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)


def test_a_users_engine_workbook_and_templates_change_nothing(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)  # a pure-Python wheel installs by unpacking
    clean = tmp_path / "clean"
    clean.mkdir()
    shadow = _shadow_dir(tmp_path)
    reference = _run(["plan", "--json"], clean, site)
    assert reference.returncode == 0, reference.stderr
    assert json.loads(reference.stdout)["name"] == "seed-128-nodes"
    shadowed = _run(["plan", "--json"], shadow, site)  # python -c puts the working directory first on sys.path
    assert shadowed.returncode == 0, shadowed.stderr
    assert shadowed.stdout == reference.stdout
    where = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(site)!r}); "
                            "import ckptplan.engine, ckptplan.templates; print(ckptplan.engine.__file__); "
                            "print(ckptplan.templates.__file__)"], cwd=shadow, capture_output=True, text=True, check=True)
    assert all(line.startswith(str(site)) for line in where.stdout.split()), where.stdout
    # the installed (editable) package, run as `python -m ckptplan` from the user's folder
    module = subprocess.run([sys.executable, "-m", "ckptplan", "plan", "--json"], cwd=shadow, capture_output=True,
                            text=True)
    assert module.returncode == 0, module.stderr
    assert module.stdout == reference.stdout


# ------------------------------------------------------------------------------ the code

def test_no_generic_top_level_imports_anywhere():
    bad = []
    for path in _modules(*PACKAGE_DIRS, "tests", "benchmarks"):
        for level, module in _imports(path):
            if level == 0 and module.split(".")[0] in GENERIC:
                bad.append(f"{path.relative_to(REPO)}: import {module}")
    assert not bad, "\n".join(bad)


ENGINE_FORBIDDEN = {"openpyxl", "pyarrow", "xlwings", "torch", "typer", "rich", "csv", "defusedxml", "lxml", "tomli_w"}


def test_engine_holds_models_only():
    bad = []
    for path in _modules("engine"):
        for level, module in _imports(path):
            head = module.split(".")[0]
            if level == 0 and head in ENGINE_FORBIDDEN | {"ckptplan"}:
                bad.append(f"{path.name}: import {module}")
            if level >= 2:  # from ..files / ..workbook / ..instruments / ..cli: a model importing a view
                bad.append(f"{path.name}: from {'.' * level}{module}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("layer, allowed", [
    ("files", {"engine"}),                    # the I/O layer may use the models, nothing above it
    ("instruments", {"engine", "files"}),
    ("workbook", {"engine", "files"}),
])
def test_arrows_point_one_way(layer, allowed):
    bad = []
    for path in _modules(layer):
        for level, module in _imports(path):
            if level >= 2 and module.split(".")[0] not in allowed:
                bad.append(f"{layer}/{path.name}: from {'.' * level}{module}")
            if level == 0 and module.startswith("ckptplan") and module.split(".")[1:2] and \
                    module.split(".")[1] not in allowed:
                bad.append(f"{layer}/{path.name}: import {module}")
    assert not bad, "\n".join(bad)


def test_modules_are_small_and_list_their_public_names_by_hand():
    too_long, no_all = [], []
    for path in _modules(*PACKAGE_DIRS):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(REPO)}: {lines} lines")
        if path.name == "__main__.py" or path.parent.name == "templates":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        literal = [n for n in tree.body if (isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)) or (
            isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == "__all__")]
        if not literal or not isinstance(literal[0].value, (ast.List, ast.Tuple)) or not all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in literal[0].value.elts):
            no_all.append(str(path.relative_to(REPO)))
    assert not too_long, too_long
    assert not no_all, f"no hand-written __all__ literal: {no_all}"


def test_the_project_stands_alone():
    """No file refers to a document outside the repository."""
    outside = ("DESIGN" + ".md", "shared" + "/", "design " + "document")
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"], capture_output=True,
                            text=True, check=True).stdout.split()
    bad = []
    for name in listed:
        path = REPO / name
        if not path.is_file() or path.suffix in (".xlsx", ".png", ".pdf"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        bad += [f"{name}: {word}" for word in outside if word in text]
    assert not bad, bad


# ------------------------------------------------------------------------------ start-up

def _modules_loaded(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "COLUMNS": "100"})
    return set(out.stderr.split())


def _cli(args: list[str]) -> str:
    return (f"import sys\nsys.argv = ['ckptplan'] + {args!r}\nfrom ckptplan.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n")


def test_help_loads_no_model_and_no_file_format():
    loaded = _modules_loaded(_cli(["--help"]))
    assert "ckptplan.cli" in loaded
    for heavy in ("numpy", "pandas", "scipy", "dask", "openpyxl", "pyarrow", "torch", "xlwings"):
        assert heavy not in loaded, heavy


def test_plan_loads_only_what_it_uses():
    loaded = _modules_loaded(_cli(["plan", "--json"]))
    assert "ckptplan.engine.waste" in loaded
    for heavy in ("scipy.stats", "scipy.optimize", "dask", "openpyxl", "torch", "xlwings", "ckptplan.workbook",
                  "ckptplan.engine.montecarlo", "ckptplan.engine.fitting"):
        assert heavy not in loaded, heavy


def test_the_excel_functions_do_not_load_scipy_stats():
    loaded = _modules_loaded("import ckptplan.workbook.udfs")
    assert "ckptplan.workbook.udfs" in loaded
    for heavy in ("scipy.stats", "scipy.optimize", "torch", "dask", "openpyxl"):
        assert heavy not in loaded, heavy
