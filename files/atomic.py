"""Writing files a user owns: never overwrite without permission, never leave a half-written file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["OutputExistsError", "atomic_write", "atomic_write_text"]



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
