"""The shape of the project: one distribution name, a models-only engine, no import cycles, no private
name used across modules, short functions, no top-level generic imports, nothing cited from outside
the repository, and a fast start.

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
#: the longest function (``def`` line to last line): a longer one does several things, each worth a name
MAX_FUNCTION_LINES = 80


def _modules(*dirs: str) -> list[Path]:
    """Every module under the folders, subpackages included."""
    return sorted(p for d in dirs for p in (REPO / d).rglob("*.py"))


def _module_name(path: Path) -> str:
    """The installed name of a project module: ``engine/tiers/model.py`` -> ``ckptplan.engine.tiers.model``
    (the folders install as ``ckptplan.<folder>``, pyproject's package-dir)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts if parts[0] == "ckptplan" else ["ckptplan"] + parts)


def _absolute(path: Path, level: int, module: str | None) -> str:
    """The absolute name an import statement of ``path`` names (``from ..engine import x`` -> ckptplan.engine)."""
    if level == 0:
        return module or ""
    base = _module_name(path).split(".")
    base = base[:len(base) - level + (path.name == "__init__.py")]
    return ".".join(base + ([module] if module else []))


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
                     "ckptplan/engine/tiers/__init__.py", "ckptplan/engine/tiers/model.py",
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
                bad.append(f"{path.relative_to(REPO)}: import {module}")
            # from ..files / ..workbook / ..instruments / ..cli: a model importing a view
            if level and not (_absolute(path, level, module) + ".").startswith("ckptplan.engine."):
                bad.append(f"{path.relative_to(REPO)}: from {'.' * level}{module}")
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
            target = _absolute(path, level, module).split(".")
            if level and target[1:2] and target[1] not in allowed | {layer}:
                bad.append(f"{path.relative_to(REPO)}: from {'.' * level}{module}")
            if level == 0 and module.startswith("ckptplan") and module.split(".")[1:2] and \
                    module.split(".")[1] not in allowed:
                bad.append(f"{layer}/{path.name}: import {module}")
    assert not bad, "\n".join(bad)


def test_modules_list_their_public_names_by_hand():
    no_all = []
    for path in _modules(*PACKAGE_DIRS):
        if path.name == "__main__.py" or path.parent.name == "templates":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        literal = [n for n in tree.body if (isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)) or (
            isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == "__all__")]
        if not literal or not isinstance(literal[0].value, (ast.List, ast.Tuple)) or not all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in literal[0].value.elts):
            no_all.append(str(path.relative_to(REPO)))
    assert not no_all, f"no hand-written __all__ literal: {no_all}"


def _project_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) of every import of a project module in ``path``, lazy ones
    inside functions included. ``from . import x`` names the module ``x`` when there is one."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "ckptplan"]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(path, node.level, node.module)
            if target.split(".")[0] == "ckptplan":
                out.append((node.lineno, target, [a.name for a in node.names]))
    return out


def _import_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Module -> the project modules it imports, and where: (importer, imported) -> ``file:line``."""
    paths = {_module_name(p): p for p in _modules(*PACKAGE_DIRS)}
    graph: dict[str, set[str]] = {m: set() for m in paths}
    where: dict[tuple[str, str], str] = {}
    for name, path in paths.items():
        for line, target, names in _project_imports(path):
            found = [f"{target}.{n}" for n in names if f"{target}.{n}" in paths] or [target]
            for t in found:
                if t in paths and t != name:
                    graph[name].add(t)
                    where.setdefault((name, t), f"{path.relative_to(REPO)}:{line}")
    return graph, where


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _loop(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One import loop through the component's first module: [a, b, ..., a] (shortest, breadth first)."""
    start, members = component[0], set(component)
    came = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while came[path[-1]] is not None:
                    path.append(came[path[-1]])
                return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, start]
            if w not in came:
                came[w] = v
                queue.append(w)
    return component


def test_no_import_cycles():
    """A module never imports (even lazily, inside a function) one that imports it back, directly or not:
    each concern depends on the ones below it, so each can be read, tested and changed on its own."""
    graph, where = _import_graph()
    found = []
    for component in _cycles(graph):
        loop = _loop(graph, component)
        steps = " -> ".join(f"{b} ({where[a, b]})" for a, b in zip(loop, loop[1:]))
        found.append(f"{' <-> '.join(component)}: {loop[0]} -> {steps}")
    assert not found, "import cycles:\n" + "\n".join(found)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_private_name_is_used_across_modules():
    """What one module uses of another is public there (listed in its ``__all__``): no ``from x import _name``,
    no ``x._name`` or ``getattr(x, "_name")`` on an imported module, no module whose own name is private
    (``_inputs.py``) imported."""
    paths = {_module_name(p): p for p in _modules(*PACKAGE_DIRS)}
    bad = []
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules: dict[str, str] = {}     # local name -> the project module it is bound to
        for line, target, names in _project_imports(path):
            where = f"{path.relative_to(REPO)}:{line}"
            if any(_private(part) for part in target.split(".")):
                bad.append(f"{where}: imports the private module {target}")
            for n in names:
                if _private(n):
                    bad.append(f"{where}: from {target} import {n}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _absolute(path, node.level, node.module)
                modules.update({a.asname or a.name: f"{target}.{a.name}" for a in node.names
                                if f"{target}.{a.name}" in paths})
            elif isinstance(node, ast.Import):
                modules.update({a.asname: a.name for a in node.names if a.asname and a.name in paths})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and _private(node.attr) and modules[node.value.id] != name):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value.id}.{node.attr} "
                           f"({modules[node.value.id]})")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in modules
                    and isinstance(node.args[1], ast.Constant) and _private(str(node.args[1].value))):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: getattr({node.args[0].id}, "
                           f"{node.args[1].value!r}) ({modules[node.args[0].id]})")
    assert not bad, f"{len(bad)} private names used across modules:\n" + "\n".join(bad)


def test_functions_are_short():
    """No function is longer than MAX_FUNCTION_LINES (``def`` line to last line, nested ones counted in theirs):
    a longer one does several things, each of which deserves a name."""
    long = []
    for path in _modules(*PACKAGE_DIRS):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


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
