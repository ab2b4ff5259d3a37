"""Recalculate workbooks in LibreOffice (headless) to read the values their formulas produce.

openpyxl writes formulas without cached values. ``soffice --convert-to xlsx`` loads a workbook,
recalculates every formula and saves the values beside them; reading the copy with
``data_only=True`` gives what Excel would show. Used by the tests (proof that the generated
formulas equal the engine) and by ``ckptplan workbook --check``. The copies are for checking only:
ship the openpyxl file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from openpyxl import load_workbook

__all__ = ["ERROR_VALUES", "error_cells", "recalculate", "soffice"]

ERROR_VALUES = ("#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!", "Err:", "#ERR")


def soffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def recalculate(paths: list[Path], outdir: Path, timeout_s: float = 300) -> list[Path]:
    """Recalculate ``paths`` in one LibreOffice run; return the recalculated copies in ``outdir``."""
    exe = soffice()
    if exe is None:
        raise RuntimeError("LibreOffice (soffice) is not installed: apt-get install libreoffice-calc")
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ckptplan-lo-") as profile:
        cmd = [exe, "--headless", "--norestore", "--nolockcheck", f"-env:UserInstallation=file://{profile}",
               "--convert-to", "xlsx", "--outdir", str(outdir), *map(str, paths)]
        env = {**os.environ, "HOME": profile}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    out = [outdir / Path(p).name for p in paths]
    missing = [p for p in out if not p.exists()]
    if proc.returncode != 0 or missing:
        raise RuntimeError(f"LibreOffice failed (exit {proc.returncode}) for {missing}: {proc.stderr.strip()[-500:]}")
    return out


def error_cells(path: Path) -> list[tuple[str, str, str]]:
    """(sheet, cell, value) of every cell holding a spreadsheet error value after recalculation."""
    wb = load_workbook(path, data_only=True)
    bad = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith(ERROR_VALUES):
                    bad.append((ws.title, c.coordinate, c.value))
    return bad
