"""Writing files a user owns: never overwrite without permission, never leave a half-written file."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

from ._inputs import InputError


class OutputExistsError(FileExistsError):
    """The output file exists and overwriting was not allowed."""


def atomic_write(path: str | Path, write: Callable[[Path], None], force: bool = False) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it onto ``path``.

    The rename is atomic on one filesystem, so a crash or an exception leaves either the old file
    or none, never a partial one; the temporary file is removed on failure. Refuses to replace an
    existing ``path`` unless ``force``.
    """
    path = Path(path)
    if path.exists() and not force:
        raise OutputExistsError(f"{path} exists: refusing to overwrite it (use --force to replace it)")
    if not path.parent.exists():
        raise FileNotFoundError(f"{path.parent} does not exist: create the folder first")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:  # durable before it takes the user's name
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the user's usual mode
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str, force: bool = False,
                      check: Callable[[Path], object] | None = None) -> Path:
    """:func:`atomic_write` for text (UTF-8); ``check(tmp)`` may validate the file before the rename."""
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")
        if check is not None:
            check(tmp)
    return atomic_write(path, write, force=force)


def check_xlsx_package(path: str | Path, field: str, max_bytes: int, advice: str = "") -> None:
    """Refuse an untrusted .xlsx before any XML parser sees it.

    * not a zip package -> not a readable workbook;
    * more than ``max_bytes`` once unpacked -> a zip bomb (``advice`` is appended to the message);
    * any ``<!DOCTYPE`` or ``<!ENTITY`` in an XML part -> refused: Office Open XML never carries a
      DTD, and openpyxl parses some parts with lxml (entities left unresolved) and others with
      defusedxml, so this one check covers entity-expansion and external-entity attacks in every part.

    Raises :class:`InputError` naming ``field``, the path and the rule.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
            total = sum(m.file_size for m in members)
            if total > max_bytes:
                raise InputError(field, str(path), f"unpacks to {total:,} bytes (limit {max_bytes:,}): refusing it{advice}")
            for m in members:
                if m.filename.endswith((".xml", ".rels", ".vml")):
                    with zf.open(m) as fh:
                        head = fh.read(65536)
                    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
                        raise InputError(field, str(path), f"was refused as unsafe XML ({m.filename} declares a "
                                         "DTD or entities, which a workbook never needs)")
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(field, str(path), f"is not a readable .xlsx file: not an .xlsx workbook package ({exc})") from None
