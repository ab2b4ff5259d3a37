"""``ckptplan excel-setup FOLDER``: what a desktop Excel user needs to call the engine as CKPT_ functions.

Wire it into the main app with ``register(app)``. Writes, atomically and never over an existing file
unless ``--force``:

* ``FOLDER/xlwings.conf``: the xlwings add-in's *directory* configuration. The add-in reads it
  from the folder of the active workbook (after a ``xlwings.conf`` sheet inside the workbook, before
  the user file ``%USERPROFILE%\\.xlwings\\xlwings.conf``). One ``"KEY","value"`` line each:
  ``"UDF MODULES","ckptplan.workbook.udfs;ckptplan.workbook.udfs_setup;ckptplan.workbook.udfs_risk"`` (the modules Import Functions
  reads, ``;``-separated as xlwings splits them) and
  ``"INTERPRETER_WIN","<python.exe>"`` (the Python that has ckptplan installed; on Windows the one
  running this command, or ``--interpreter``).
* ``FOLDER/ckptplan-udfs.xlsx``: a starter planning workbook (no macros) with the "Add-in check"
  sheet, which calls every CKPT_ function beside the workbook's own formula
  (:func:`workbook.udf_sheet.add_udf_sheet`). ``--no-workbook`` leaves it out.

xlwings' desktop add-in runs user-defined functions on Windows only, and *Import Functions* writes
them into the workbook's VBA project, so the workbook must be saved as ``.xlsm`` and Excel must trust
access to the VBA project object model. On macOS or Excel on the web, serve :mod:`workbook.udfs`
with xlwings Server (its ``custom_functions`` module: ``from ckptplan.workbook.udfs import *`` and
``from ckptplan.workbook.udfs_setup import *``), or,
with no Python installed and no licence, use xlwings Lite:

``ckptplan excel-setup --lite FOLDER`` writes what a planner pastes into the xlwings Lite editor
(:mod:`workbook.lite`): ``FOLDER/main.py`` (every CKPT_ function, a thin wrapper over
:mod:`workbook.udfs`), ``FOLDER/requirements.txt`` (the ckptplan line; ``--wheel-url`` names a wheel's
address instead) and ``FOLDER/ckptplan-lite.xlsx`` (the starter workbook; ``--no-workbook`` leaves it
out).

Either way every output lands or none does (:func:`write_together`).
"""

from __future__ import annotations

import locale
import os
import re
import sys
from pathlib import Path
from typing import Callable, Optional

import typer

from .files.atomic import OutputError, atomic_write_many
from .files.signals import Terminated, terminate_on_signals

# `from package import module` resolves through sys.modules, so this works even while ckptplan.cli
# is still initialising (it imports this module); names are looked up at call time.
from ckptplan import common as _cli

__all__ = ["CONFIG_NAME", "UDF_MODULE", "WORKBOOK_NAME", "config_bytes", "config_text", "lite_steps", "register", "steps",
           "write_together"]

UDF_MODULE = "ckptplan.workbook.udfs;ckptplan.workbook.udfs_setup;ckptplan.workbook.udfs_risk"
CONFIG_NAME = "xlwings.conf"
WORKBOOK_NAME = "ckptplan-udfs.xlsx"


def config_text(interpreter: Optional[str]) -> str:
    """The ``xlwings.conf`` lines (VBA ``Write #`` format: quoted key, quoted value, CRLF line ends)."""
    lines = [f'"UDF MODULES","{UDF_MODULE}"']
    if interpreter:
        if '"' in interpreter:
            raise ValueError(f"--interpreter {interpreter!r}: a path with a double quote cannot go in xlwings.conf")
        lines.append(f'"INTERPRETER_WIN","{interpreter}"')
    return "\r\n".join(lines) + "\r\n"


def config_bytes(text: str) -> bytes:
    """The file's bytes: VBA reads it in the Windows ANSI code page, as xlwings' own ``config create`` writes it."""
    encoding = locale.getpreferredencoding(False) if sys.platform.startswith("win") else "utf-8"
    try:
        return text.encode(encoding)
    except UnicodeEncodeError:
        raise ValueError(f"xlwings.conf: the interpreter path cannot be written in the {encoding} code page that "
                         "Excel reads it in: install Python under a path without such characters") from None


def steps(folder: Path, interpreter: Optional[str], with_workbook: bool) -> list[str]:
    """What the user does next, in order."""
    book = folder / WORKBOOK_NAME
    out = [
        "Install ckptplan into the Python that Excel will use: python -m pip install ckptplan "
        "(or, from a checkout, python -m pip install -e .)"
        + (f"  (interpreter: {_cli.literal(interpreter)})" if interpreter else ""),   # shown as typed, never acted on
        "Install the xlwings Excel add-in (Windows, Excel closed): xlwings addin install",
        "Excel > File > Options > Trust Center > Trust Center Settings > Macro Settings: tick "
        "'Trust access to the VBA project object model' (Import Functions writes VBA into the workbook)",
        f"UDF_MODULES = {UDF_MODULE}: set by {folder / CONFIG_NAME} for workbooks in this folder "
        f"(or type {UDF_MODULE} into the xlwings ribbon's 'UDF Modules' box)",
    ]
    if with_workbook:
        out.append(f"Open {book} and save it as .xlsm in the same folder (Import Functions needs a macro-enabled "
                   "workbook, and the add-in reads xlwings.conf from the workbook's folder)")
    else:
        out.append(f"Save your workbook as .xlsm in {folder} (the add-in reads xlwings.conf from the workbook's folder)")
    out.append("xlwings tab > Import Functions, then Ctrl+Alt+F9 to recalculate: the CKPT_ functions "
               "(e.g. =CKPT_YOUNG_INTERVAL(2, 1200) gives 69.28) appear under the 'ckptplan' category"
               + ("; on the 'Add-in check' sheet column E turns to 'yes'" if with_workbook else ""))
    return out


def lite_steps(folder: Path, with_workbook: bool, wheel_url: Optional[str]) -> list[str]:
    """What the planner does next for xlwings Lite, in order (Excel on Windows, Mac or the web)."""
    from .workbook import lite

    source = f"the wheel at {wheel_url}" if wheel_url else "ckptplan from the package index"
    return [
        (f"Open {folder / lite.WORKBOOK_NAME} in Excel (Microsoft 365 or Office 2021+ on Windows or macOS 13+, or "
         "Excel on the web: upload it to OneDrive or SharePoint first)") if with_workbook else
        "Open your workbook in Excel (Microsoft 365 or Office 2021+ on Windows or macOS 13+, or Excel on the web)",
        "Install xlwings Lite once: Home > Add-ins (Insert > Add-ins in older Excel), search for xlwings, Add; "
        "the xlwings Lite button at the right of the Home tab opens its editor",
        f"In the editor's requirements.txt tab add the lines of {folder / lite.REQUIREMENTS_NAME} (keep the lines "
        f"already there), then restart xlwings Lite when it asks: it installs {source}; numpy, pandas and scipy "
        "come with Pyodide",
        f"In the editor's main.py tab replace the sample code with {folder / lite.MAIN_NAME} and save (Ctrl+S, "
        "Cmd+S on a Mac): the CKPT_ functions register, e.g. =CKPT_YOUNG_INTERVAL(2, 1200) gives 69.28",
        "Recalculate (Ctrl+Alt+F9; on the web: Formulas > Calculate Workbook)"
        + ("; on the 'Add-in check' sheet column E turns to 'yes'" if with_workbook else ""),
        "Save the workbook: main.py and requirements.txt are kept inside it, so anyone with xlwings Lite can use "
        f"it. Monte Carlo in the browser: CKPT_DEADLINE_PROB takes at most {lite.LITE_MAX_RUNS:,} runs per cell and "
        f"{lite.LITE_MAX_RUNS_PER_CALL:,} per call",
    ]


def write_together(outputs: list[tuple[Path, Callable[[Path], None]]], force: bool) -> None:
    """Write every ``(path, write)`` of ``outputs`` or none of them.

    :func:`ckptplan.files.atomic.atomic_write_many`: every destination is checked, then every
    temporary file written, and only then do they take their names; if any step fails, the files
    already in place are taken back (a new one removed, one replaced with ``force`` put back as it
    was), so a failed command leaves the folder as it found it.
    """
    atomic_write_many(outputs, force=force)


_WHEEL_NAME = re.compile(r"^ckptplan-(?P<version>[^-]+)-py3-none-any\.whl$")


def _check_wheel_url(url: str, version: str) -> None:
    if not re.match(r"^https://\S+$", url):
        raise ValueError(f"--wheel-url {url!r}: give the https address of the wheel (xlwings Lite runs in a "
                         "browser, which fetches it)")
    name = _WHEEL_NAME.match(url.rsplit("/", 1)[-1].split("?", 1)[0])
    if name is None:
        raise ValueError(f"--wheel-url {url!r}: the address must end in the wheel's file name, "
                         f"ckptplan-{version}-py3-none-any.whl")
    if name["version"] != version:
        raise ValueError(f"--wheel-url names ckptplan {name['version']}, but main.py is written from ckptplan "
                         f"{version}: run this command from ckptplan {name['version']}, or publish the {version} wheel")


def _lite_outputs(folder: Path, template: Optional[str], with_workbook: bool,
                  wheel_url: Optional[str]) -> list[tuple[Path, Callable[[Path], None]]]:
    from importlib.metadata import version as installed_version

    from .workbook import lite

    version = installed_version("ckptplan")
    if wheel_url is not None:
        _check_wheel_url(wheel_url, version)
    main = lite.main_py(version).encode("utf-8")
    requirements = lite.requirements_txt(version, wheel_url).encode("utf-8")
    outputs: list[tuple[Path, Callable[[Path], None]]] = [
        (folder / lite.MAIN_NAME, lambda tmp: tmp.write_bytes(main)),
        (folder / lite.REQUIREMENTS_NAME, lambda tmp: tmp.write_bytes(requirements)),
    ]
    if with_workbook:
        from . import workbook
        from .workbook.udf_sheet import add_udf_sheet

        built = workbook.build_workbook(_cli.scenario_from_options(template, {}))
        add_udf_sheet(built.workbook, host="lite")
        outputs.append((folder / lite.WORKBOOK_NAME, lambda tmp: built.workbook.save(tmp)))
    return outputs


def _lite_names(with_workbook: bool) -> list[str]:
    from .workbook import lite

    return [lite.MAIN_NAME, lite.REQUIREMENTS_NAME] + ([lite.WORKBOOK_NAME] if with_workbook else [])


def register(app: typer.Typer) -> None:
    """Add the ``excel-setup`` command to ``app``."""

    @app.command("excel-setup")
    def excel_setup(
        folder: Path = typer.Argument(..., help="Folder for the files (created if missing)"),
        lite: bool = _cli.flag("--lite", help="For xlwings Lite (Excel on Windows, Mac and the web, no Python to install): write main.py, requirements.txt and a starter workbook"),
        template: Optional[str] = typer.Option(None, "--template", "-t", help="Scenario of the starter workbook (preset or TOML); default: seed"),
        interpreter: Optional[str] = typer.Option(None, "--interpreter", help="Desktop only: Python executable Excel should run (INTERPRETER_WIN); default: this Python on Windows, none elsewhere"),
        wheel_url: Optional[str] = typer.Option(None, "--wheel-url", help="With --lite: https address of the ckptplan wheel, for requirements.txt (when ckptplan is not on the public package index)"),
        no_workbook: bool = _cli.flag("--no-workbook", help="Write no starter workbook"),
        force: bool = _cli.flag("--force", help="Overwrite existing files"),
    ) -> None:
        """Set up the Excel add-in: xlwings.conf (UDF_MODULES = workbook.udfs) and a starter workbook calling the
        CKPT_ functions; with --lite, main.py and requirements.txt for xlwings Lite instead."""
        if lite and interpreter is not None:
            _cli.fail("--interpreter is for the desktop add-in: xlwings Lite brings its own Python (Pyodide)")
        if not lite and wheel_url is not None:
            _cli.fail("--wheel-url goes with --lite (the desktop add-in uses the ckptplan installed in its Python)")
        if not lite and interpreter is None and sys.platform.startswith("win"):
            interpreter = sys.executable
        names = _lite_names(not no_workbook) if lite else [CONFIG_NAME] + ([] if no_workbook else [WORKBOOK_NAME])
        targets = [folder / name for name in names]
        existing = [str(p) for p in targets if os.path.lexists(p)]
        if existing and not force:  # check every file before writing any
            _cli.fail(f"{', '.join(existing)} exists: refusing to overwrite (use --force to replace)")
        if folder.exists() and not folder.is_dir():
            _cli.fail(f"{folder} is not a folder: give a folder for the files")
        try:
            with terminate_on_signals():  # SIGTERM/SIGHUP: every temporary removed, as on Ctrl-C
                _setup_files(folder, lite, template, interpreter, wheel_url, no_workbook, force)
        except Terminated as exc:
            _cli.fail(f"{exc}: nothing was written to {folder}", int(exc.code))
        except FileExistsError as exc:
            _cli.fail(str(exc))
        except ValueError as exc:
            _cli.fail(str(exc))
        except OutputError as exc:  # names the file: a full disk, a vanished folder, no hard links
            _cli.fail(f"cannot write to {folder}: {Path(exc.filename).name}: {exc.strerror}")
        except OSError as exc:
            _cli.fail(f"cannot write to {folder}: {exc.strerror or exc}")
        _report(folder, targets, lite, interpreter, no_workbook, wheel_url)


def _setup_files(folder: Path, lite: bool, template: Optional[str], interpreter: Optional[str],
                 wheel_url: Optional[str], no_workbook: bool, force: bool) -> None:
    """Build every output of ``excel-setup`` and write them together (all or none)."""
    if lite:
        outputs = _lite_outputs(folder, template, not no_workbook, wheel_url)
    else:
        data = config_bytes(config_text(interpreter))
        outputs = [(folder / CONFIG_NAME, lambda tmp: tmp.write_bytes(data))]
        if not no_workbook:
            from . import workbook
            from .workbook.udf_sheet import add_udf_sheet

            built = workbook.build_workbook(_cli.scenario_from_options(template, {}))
            add_udf_sheet(built.workbook)
            outputs.append((folder / WORKBOOK_NAME, lambda tmp: built.workbook.save(tmp)))
    folder.mkdir(parents=True, exist_ok=True)
    write_together(outputs, force=force)


def _report(folder: Path, targets: list[Path], lite: bool, interpreter: Optional[str], no_workbook: bool,
            wheel_url: Optional[str]) -> None:
    """What was written and what the user does next."""
    for path in targets:
        _cli.console.print(f"wrote {path}", highlight=False)
    if lite:
        _cli.console.print("[bold]Next steps (xlwings Lite: Excel on Windows, Mac or the web)[/]")
        for i, step in enumerate(lite_steps(folder, not no_workbook, wheel_url), start=1):
            _cli.console.print(f"{i}. {_cli.literal(step)}", highlight=False)
        return
    if not sys.platform.startswith("win"):
        _cli.console.print("note: xlwings runs desktop UDFs on Windows only: run this command on the Windows "
                           "machine with Excel (or pass --interpreter C:\\path\\to\\python.exe); on macOS or "
                           "Excel on the web use xlwings Lite (ckptplan excel-setup --lite FOLDER), or xlwings "
                           "Server with `from ckptplan.workbook.udfs import *` and `from ckptplan.workbook.udfs_setup "
                           "import *` in its custom_functions module.",
                           highlight=False)
    _cli.console.print("[bold]Next steps[/]")
    for i, step in enumerate(steps(folder, interpreter, not no_workbook), start=1):
        _cli.console.print(f"{i}. {_cli.literal(step)}", highlight=False)
