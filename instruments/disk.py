"""File-system helpers shared by the probe and the audit: size on disk, ``fsync``, page-cache eviction.

:mod:`.probe`, :mod:`.restore` and :mod:`.audit` use them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["disk_usage", "evict_page_cache", "remove"]


def disk_usage(path: Path) -> tuple[int, int]:
    """(bytes, files) of a file or of every file under a directory (``st_size``)."""
    if path.is_file():
        return path.stat().st_size, 1
    total = files = 0
    for p in sorted(path.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
            files += 1
    return total, files


def evict_page_cache(path: Path) -> bool:
    """Ask the kernel to drop the cached pages of the checkpoint's files (best effort)."""
    if not hasattr(os, "posix_fadvise"):
        return False
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    ok = True
    for p in files:
        try:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        except OSError:
            ok = False
    return ok


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
