"""``ckptplan excel-setup FOLDER``: what a desktop Excel user needs to call the engine as CKPT_ functions.

Wire it into the main app with ``register(app)``. Writes, atomically and never over an existing file
unless ``--force``:

* ``FOLDER/xlwings.conf``: the xlwings add-in's *directory* configuration. The add-in reads it
  from the folder of the active workbook (after a ``xlwings.conf`` sheet inside the workbook, before
  the user file ``%USERPROFILE%\\.xlwings\\xlwings.conf``). One ``"KEY","value"`` line each:
  ``"UDF MODULES","ckptplan.workbook.udfs"`` (the module Import Functions reads) and
  ``"INTERPRETER_WIN","<python.exe>"`` (the Python that has ckptplan installed; on Windows the one
  running this command, or ``--interpreter``).
* ``FOLDER/ckptplan-udfs.xlsx``: a starter planning workbook (no macros) with the "Add-in check"
  sheet, which calls every CKPT_ function beside the workbook's own formula
  (:func:`workbook.udf_sheet.add_udf_sheet`). ``--no-workbook`` leaves it out.

xlwings' desktop add-in runs user-defined functions on Windows only, and *Import Functions* writes
them into the workbook's VBA project, so the workbook must be saved as ``.xlsm`` and Excel must trust
access to the VBA project object model. On macOS or Excel on the web, serve :mod:`workbook.udfs`
with xlwings Server instead (its ``custom_functions`` module: ``from ckptplan.workbook.udfs import *``).
"""

from __future__ import annotations

import locale
import sys
from pathlib import Path
from typing import Optional

import typer

from .files.atomic import atomic_write

# `from package import module` resolves through sys.modules, so this works even while ckptplan.cli
# is still initialising (it imports this module); names are looked up at call time.
from ckptplan import common as _cli

__all__ = ["CONFIG_NAME", "UDF_MODULE", "WORKBOOK_NAME", "config_bytes", "config_text", "register", "steps"]

UDF_MODULE = "ckptplan.workbook.udfs"
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
        "(or, from a checkout, python -m pip install -e .)" + (f"  [interpreter: {interpreter}]" if interpreter else ""),
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


def register(app: typer.Typer) -> None:
    """Add the ``excel-setup`` command to ``app``."""

    @app.command("excel-setup")
    def excel_setup(
        folder: Path = typer.Argument(..., help="Folder for xlwings.conf and the starter workbook (created if missing)"),
        template: Optional[str] = typer.Option(None, "--template", "-t", help="Scenario of the starter workbook (preset or TOML); default: seed"),
        interpreter: Optional[str] = typer.Option(None, "--interpreter", help="Python executable Excel should run (INTERPRETER_WIN); default: this Python on Windows, none elsewhere"),
        no_workbook: bool = typer.Option(False, "--no-workbook", help="Write only xlwings.conf, no starter workbook"),
        force: bool = typer.Option(False, "--force", help="Overwrite existing files"),
    ) -> None:
        """Set up the Excel add-in: xlwings.conf (UDF_MODULES = workbook.udfs) and a starter workbook calling the CKPT_ functions."""
        if interpreter is None and sys.platform.startswith("win"):
            interpreter = sys.executable
        targets = [folder / CONFIG_NAME] + ([] if no_workbook else [folder / WORKBOOK_NAME])
        existing = [str(p) for p in targets if p.exists()]
        if existing and not force:  # check every file before writing any
            _cli.fail(f"{', '.join(existing)} exists: refusing to overwrite (use --force to replace)")
        try:
            data = config_bytes(config_text(interpreter))
            built = None
            if not no_workbook:
                from . import workbook
                from .workbook.udf_sheet import add_udf_sheet

                built = workbook.build_workbook(_cli.scenario_from_options(template, {}))
                add_udf_sheet(built.workbook)
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write(folder / CONFIG_NAME, lambda tmp: tmp.write_bytes(data), force=force)
            if built is not None:
                atomic_write(folder / WORKBOOK_NAME, lambda tmp: built.workbook.save(tmp), force=force)
        except FileExistsError as exc:
            _cli.fail(str(exc))
        except ValueError as exc:
            _cli.fail(str(exc))
        except OSError as exc:
            _cli.fail(f"cannot write to {folder}: {exc.strerror or exc}")
        for path in targets:
            _cli.console.print(f"wrote {path}", highlight=False)
        if not sys.platform.startswith("win"):
            _cli.console.print("note: xlwings runs desktop UDFs on Windows only: run this command on the Windows "
                               "machine with Excel (or pass --interpreter C:\\path\\to\\python.exe); on macOS or "
                               "Excel on the web use xlwings Server with `from ckptplan.workbook.udfs import *` in its "
                               "custom_functions module.", highlight=False)
        _cli.console.print("[bold]Next steps[/]")
        for i, step in enumerate(steps(folder, interpreter, not no_workbook), start=1):
            _cli.console.print(f"{i}. {step}", highlight=False)
