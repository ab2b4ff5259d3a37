"""xlwings Lite: the ``CKPT_`` functions in Excel on Windows, Mac and the web, with Python in the browser.

xlwings Lite (the xlwings add-in from Excel's add-in store, free for personal and commercial use)
runs Python inside Excel through Pyodide. A workbook's code is one ``main.py`` and its packages a
``requirements.txt``, both edited in the add-in's task pane and saved inside the workbook; numpy,
pandas and scipy come from Pyodide, ckptplan is a pure-Python wheel. :func:`main_py` writes that
``main.py`` from :mod:`.udfs` and :mod:`.udfs_setup` themselves: one thin wrapper per ``CKPT_``
function with the same name, argument order, defaults, docstring and xlwings decorators (``func`` /
``arg`` / ``ret``, the options :func:`.cells.udf` gives them), calling the installed package. So the
desktop add-in, xlwings Server and xlwings Lite run the same modules, and a new ``CKPT_`` function
needs no second edit. Lite names a
function without a namespace (``=CKPT_WASTE(...)``, as the desktop add-in does).

The browser runs one calculation at a time in at most 2 GB, so :func:`capped_deadline_prob`, which
``main.py`` calls for ``CKPT_DEADLINE_PROB``, simulates at most :data:`LITE_MAX_RUNS` runs per cell
and :data:`LITE_MAX_RUNS_PER_CALL` per call (desktop: 20,000 and 200,000); the default of 10,000 runs
fits. Nothing here starts a thread or a process or writes a file: the generators return text, and
``ckptplan excel-setup --lite`` writes it.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import numbers
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..engine.fields import DEFAULT_RUNS, lookup
from . import cells, udfs, udfs_risk, udfs_setup
from .cells import ERROR_PREFIX, as_array, error_text, is_blank, never_raise, show

__all__ = ["LITE_MAX_RUNS", "LITE_MAX_RUNS_PER_CALL", "MAIN_NAME", "REQUIREMENTS_NAME", "UdfSpec", "WORKBOOK_NAME",
           "capped_deadline_prob", "check_wrappers", "lite_rule", "main_py", "requirements_txt", "udf_specs"]

#: most simulated runs one cell of CKPT_DEADLINE_PROB may ask for in the browser (= the default runs)
LITE_MAX_RUNS = DEFAULT_RUNS
#: most simulated runs one call of CKPT_DEADLINE_PROB may do in the browser, over all its distinct cases
LITE_MAX_RUNS_PER_CALL = 50_000

MAIN_NAME = "main.py"
REQUIREMENTS_NAME = "requirements.txt"
WORKBOOK_NAME = "ckptplan-lite.xlsx"

_DEADLINE = "CKPT_DEADLINE_PROB"
#: the modules of CKPT_ functions main.py wraps, each with the name main.py imports it as
_MODULES = (("_udfs", udfs), ("_udfs_setup", udfs_setup), ("_udfs_risk", udfs_risk))


def _functions() -> list[tuple[str, Any, str]]:
    """(main.py's name of the module, the module, function name) of every ``CKPT_`` function, in order."""
    return [(alias, module, name) for alias, module in _MODULES for name in module.__all__]


# ------------------------------------------------------------------------------- the browser's Monte Carlo cap

def lite_rule() -> str:
    """The rule a ``runs`` cell breaks in xlwings Lite (the registry's rule, with the browser's cap)."""
    return f"must be a whole number from 2 to {LITE_MAX_RUNS:,} (the browser's cap in xlwings Lite)"


def _over_lite_cap(item: Any) -> bool:
    """A runs cell the desktop accepts in size but the browser does not."""
    if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Real):
        return False
    v = float(item)
    return math.isfinite(v) and LITE_MAX_RUNS < v <= udfs.MAX_RUNS


def capped_deadline_prob(*args: Any) -> Any:
    """:func:`.udfs.CKPT_DEADLINE_PROB` (same arguments, results and messages) with the browser's caps.

    A ``runs`` cell above :data:`LITE_MAX_RUNS` gets the ``runs`` message in its result cell (in the
    place the desktop's own cap would put it: an earlier argument's error still wins), and one call
    simulates at most :data:`LITE_MAX_RUNS_PER_CALL` runs. The per-call budget is the UDF module's
    ``MAX_RUNS_PER_CALL``, lowered for the duration of the call: safe where calls do not overlap, as
    in Pyodide, which has no threads. Never raises.
    """
    return never_raise(_capped, _DEADLINE, *args)


def _capped(*args: Any) -> Any:
    bound = inspect.signature(udfs.CKPT_DEADLINE_PROB).bind(*args)
    bound.apply_defaults()
    values = dict(bound.arguments)
    runs = DEFAULT_RUNS if is_blank(values["runs"]) else values["runs"]
    given = as_array("runs", runs)
    if given.dtype.kind in "fiu":
        over = (given > LITE_MAX_RUNS) & (given <= udfs.MAX_RUNS)
    else:  # Python cells (or text, bools): only real numbers can be over the cap
        over = np.vectorize(_over_lite_cap, otypes=[bool])(given.astype(object))
    if np.any(over):  # past the desktop's cap too, so the UDF puts the runs message where it belongs
        patched = given.astype(object)
        patched[over] = udfs.MAX_RUNS + 1
        values["runs"] = patched
    saved = udfs.MAX_RUNS_PER_CALL
    udfs.MAX_RUNS_PER_CALL = LITE_MAX_RUNS_PER_CALL
    try:
        out = udfs.CKPT_DEADLINE_PROB(*values.values())
    finally:
        udfs.MAX_RUNS_PER_CALL = saved
    desktop = f"{ERROR_PREFIX} runs: {lookup('runs').check.message} (got "

    def relabel(cell: Any, runs_given: Any) -> Any:
        return error_text("runs", lite_rule(), show(runs_given)) if isinstance(cell, str) and \
            cell.startswith(desktop) else cell

    if not isinstance(out, list):  # one cell (or one message for the whole call)
        return relabel(out, given.reshape(-1)[0]) if given.size == 1 else out
    grid = np.asarray(out, dtype=object)
    runs_at = np.broadcast_to(given, grid.shape)
    for idx in np.ndindex(grid.shape):
        grid[idx] = relabel(grid[idx], runs_at[idx])
    return grid.tolist()


# ------------------------------------------------------------------------------- the functions as main.py needs them

@dataclass(frozen=True)
class UdfSpec:
    """One ``CKPT_`` function as ``main.py`` defines it.

    ``params``: (name, default) pairs in order, default :data:`inspect.Parameter.empty` when required;
    ``doc``: the docstring Excel shows; ``args``: per argument the options of xlwings' ``arg`` decorator
    (``ndim``, ``doc``, a ``convert`` such as ``pandas.DataFrame``); ``ret``: the options of ``ret``, or
    None; ``target``: what the wrapper calls, ``_udfs.NAME`` or a capped function of this module.
    """

    name: str
    params: tuple[tuple[str, Any], ...]
    doc: str
    args: dict[str, dict[str, Any]]
    ret: dict[str, Any] | None
    target: str


class _Recorder:
    """Stands in for xlwings while a private copy of :mod:`.udfs` runs: keeps each decorator's options."""

    @staticmethod
    def _options(f: Callable) -> dict[str, Any]:
        return f.__dict__.setdefault("_ckpt_xlwings", {"func": None, "args": {}, "ret": None})

    def func(self, f: Callable | None = None, **options: Any) -> Any:
        def inner(g: Callable) -> Callable:
            self._options(g)["func"] = options
            return g
        return inner if f is None else inner(f)

    def arg(self, name: str, convert: Any = None, **options: Any) -> Callable[[Callable], Callable]:
        def inner(g: Callable) -> Callable:
            self._options(g)["args"][name] = ({"convert": convert} if convert is not None else {}) | options
            return g
        return inner

    def ret(self, convert: Any = None, **options: Any) -> Callable[[Callable], Callable]:
        def inner(g: Callable) -> Callable:
            self._options(g)["ret"] = ({"convert": convert} if convert is not None else {}) | options
            return g
        return inner


def _decorator_options() -> dict[str, dict[str, Any]]:
    """The xlwings options :func:`.cells.udf` gives each ``CKPT_`` function.

    Outside Excel the xlwings decorators keep nothing, so a private copy of each module of
    :data:`_MODULES` is run with a recorder standing in for xlwings (``cells.xw`` and
    ``sys.modules["xlwings"]``, restored after).
    """
    copies = {}
    recorder = _Recorder()
    saved_xw, saved_module = cells.__dict__.get("xw"), sys.modules.get("xlwings")
    cells.xw = recorder
    sys.modules["xlwings"] = recorder  # type: ignore[assignment]
    try:
        for alias, module in _MODULES:
            spec = importlib.util.spec_from_file_location(f"{__package__}.{alias}_recorded", module.__file__)
            if spec is None or spec.loader is None:
                raise RuntimeError(f"cannot read {module.__file__}")
            copies[alias] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(copies[alias])
    finally:
        if saved_xw is None:
            cells.__dict__.pop("xw", None)
        else:
            cells.xw = saved_xw
        if saved_module is None:
            sys.modules.pop("xlwings", None)
        else:
            sys.modules["xlwings"] = saved_module
    out = {}
    for alias, _, name in _functions():
        recorded = getattr(getattr(copies[alias], name), "_ckpt_xlwings", None)
        if recorded is None or recorded["func"] is None:
            raise RuntimeError(f"{name} is not registered with xlwings (decorate it with cells.udf)")
        out[name] = recorded
    return out


def _lite_text(name: str, text: str) -> str:
    """A text of the desktop function as the browser's function states it (its caps)."""
    if name != _DEADLINE:
        return text
    for desktop, lite in ((udfs.MAX_RUNS_PER_CALL, LITE_MAX_RUNS_PER_CALL), (udfs.MAX_RUNS, LITE_MAX_RUNS)):
        text = re.sub(rf"(?<![\d,]){desktop:,}(?![\d,])", f"{lite:,}", text)
    return text


def udf_specs() -> list[UdfSpec]:
    """Every ``CKPT_`` function of :mod:`.udfs` and :mod:`.udfs_setup` (their ``__all__``, in order) as ``main.py``
    defines it."""
    options = _decorator_options()
    specs = []
    for alias, module, name in _functions():
        function = getattr(module, name)
        params = tuple((p.name, p.default) for p in inspect.signature(function).parameters.values())
        doc = _lite_text(name, inspect.cleandoc(function.__doc__ or name))
        args = {}
        for pname, _ in params:
            given = dict(options[name]["args"].get(pname, {}))
            if "doc" in given:
                given["doc"] = _lite_text(name, given["doc"])
            args[pname] = given
        if name == _DEADLINE:
            doc += (f"\n\nIn xlwings Lite (the browser): at most {LITE_MAX_RUNS:,} runs per cell and "
                    f"{LITE_MAX_RUNS_PER_CALL:,} per call (the desktop add-in and xlwings Server: "
                    f"{udfs.MAX_RUNS:,} and {udfs.MAX_RUNS_PER_CALL:,}).")
        target = "_lite.capped_deadline_prob" if name == _DEADLINE else f"{alias}.{name}"
        specs.append(UdfSpec(name, params, doc, args, options[name]["ret"], target))
    return specs


# ------------------------------------------------------------------------------- main.py and requirements.txt

def _literal(value: Any) -> str:
    """A decorator option or a default as Python source."""
    import pandas as pd

    if value is pd.DataFrame:
        return "pd.DataFrame"
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"cannot write {value!r} into main.py")
        return repr(value)
    raise ValueError(f"cannot write {value!r} into main.py (an xlwings option main.py does not know)")


def _docstring(text: str, indent: str) -> str:
    lines = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').split("\n")
    if len(lines) == 1:
        return f'{indent}"""{lines[0][:-1] + chr(92) + chr(34) if lines[0].endswith(chr(34)) else lines[0]}"""'
    return "\n".join([f'{indent}"""{lines[0]}'] + [indent + line if line else "" for line in lines[1:]] + [f'{indent}"""'])


def _wrapper(spec: UdfSpec) -> str:
    out = ["@func"]
    if spec.ret:
        out.append("@ret(" + ", ".join(f"{k}={_literal(v)}" for k, v in spec.ret.items()) + ")")
    for pname, options in spec.args.items():
        parts = [repr(pname)] + [f"{k}={_literal(v)}" for k, v in options.items()]
        out.append("@arg(" + ", ".join(parts) + ")")
    signature = ", ".join(p if d is inspect.Parameter.empty else f"{p}={_literal(d)}" for p, d in spec.params)
    names = ", ".join(p for p, _ in spec.params)
    out.append(f"def {spec.name}({signature}):")
    out.append(_docstring(spec.doc, "    "))
    out.append(f"    return {spec.target}({names})")
    return "\n".join(out)


def main_py(version: str) -> str:
    """The ``main.py`` for xlwings Lite: every ``CKPT_`` function of this ckptplan ``version``."""
    specs = udf_specs()
    needs_pandas = any("pd.DataFrame" in _wrapper(s) for s in specs)
    head = f'''\
"""ckptplan's CKPT_ Excel functions for xlwings Lite (Excel on Windows, Mac and the web; Python in the browser).

Written by `ckptplan excel-setup --lite` (ckptplan {version}). Paste it into the main.py tab of the
xlwings Lite editor, and the ckptplan line of requirements.txt into its requirements.txt tab. Each
function is a thin wrapper over ckptplan.workbook.udfs or ckptplan.workbook.udfs_setup, the modules the
desktop add-in and xlwings Server serve: same names, arguments, defaults, results and #CKPT! messages. Call them as
=CKPT_WASTE(...) in any cell; a range in gives a range out (it spills). Monte Carlo in the browser:
CKPT_DEADLINE_PROB simulates at most {LITE_MAX_RUNS:,} runs per cell and {LITE_MAX_RUNS_PER_CALL:,} per call.
Do not edit it: after upgrading ckptplan, write it again (`ckptplan excel-setup --lite DIR --force`).
"""

try:
    from xlwings import arg, func, ret
except ImportError:  # plain Python without xlwings: the functions work, nothing registers them
    def func(f=None, **options):
        return f if f is not None else (lambda g: g)

    def arg(name, convert=None, **options):
        return lambda f: f

    def ret(convert=None, **options):
        return lambda f: f
'''
    imports = ("\nimport pandas as pd\n" if needs_pandas else "\n") + \
        "\nfrom ckptplan.workbook import lite as _lite\n" + \
        "".join(f"from ckptplan.workbook import {module.__name__.rsplit('.', 1)[-1]} as {alias}\n" for alias, module in _MODULES)
    body = "\n\n\n".join(_wrapper(s) for s in specs)
    tail = ("\n\n\n# main.py and the installed ckptplan must agree on every function's arguments\n"
            "_lite.check_wrappers(globals())\n")
    return head + imports + "\n\n" + body + tail


def check_wrappers(namespace: dict[str, Any]) -> None:
    """Raise ``RuntimeError`` unless ``namespace`` (main.py's globals) defines every ``CKPT_`` function of
    the installed :mod:`.udfs` and :mod:`.udfs_setup`, with the same arguments and defaults, and no other."""
    problems = []
    defined = {k for k, v in namespace.items() if k.startswith("CKPT_") and callable(v)}
    for _, module, name in _functions():
        if name not in defined:
            problems.append(f"{name} is missing")
            continue
        want = [(p.name, p.default) for p in inspect.signature(getattr(module, name)).parameters.values()]
        have = [(p.name, p.default) for p in inspect.signature(namespace[name]).parameters.values()]
        if have != want:
            problems.append(f"{name} takes ({', '.join(p for p, _ in have)}), the package "
                            f"({', '.join(p for p, _ in want)})" if [p for p, _ in have] != [p for p, _ in want]
                            else f"{name}: other defaults than the package's")
    known = {name for _, _, name in _functions()}
    problems += [f"{name} is not a function of the installed ckptplan" for name in sorted(defined - known)]
    if problems:
        raise RuntimeError("main.py does not match the installed ckptplan (" + "; ".join(problems) + "): write it "
                           "again with `ckptplan excel-setup --lite DIR --force` from the ckptplan that is installed")


def requirements_txt(version: str, wheel_url: str | None = None) -> str:
    """The lines for xlwings Lite's requirements.txt: ckptplan at ``version``, or the wheel at ``wheel_url``."""
    line = wheel_url or f"ckptplan=={version}"
    return f"""\
# ckptplan for xlwings Lite: add these lines to the requirements.txt tab of the xlwings Lite editor
# (keep the lines already there, such as xlwings), then restart xlwings Lite when it asks.
# numpy, pandas and scipy come with Pyodide: do not pin them. ckptplan is a pure-Python wheel.
#
# ckptplan not on the public package index? Build its wheel (python -m pip wheel --no-deps -w dist .),
# publish the file where the browser may fetch it (an https address that allows cross-origin requests,
# for example a file in a GitHub repository served from raw.githubusercontent.com), and put its address
# in place of the ckptplan line, e.g.
#   https://example.org/wheels/ckptplan-{version}-py3-none-any.whl
# (or write this file with `ckptplan excel-setup --lite DIR --wheel-url URL`). The wheel's version must
# be {version}, the one main.py was written from.
{line}
"""
