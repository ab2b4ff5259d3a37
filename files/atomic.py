"""Writing files a user owns: never overwrite without permission, never leave a half-written file.

Every file ckptplan writes goes through :func:`atomic_write` (one file) or :func:`atomic_write_many`
(several files that land together or not at all). The rules:

* **The destination.** Its folder must exist (``FileNotFoundError`` naming it). Only a regular
  file is ever replaced: a named pipe, a device (``/dev/null``), a socket or a directory is refused,
  ``force`` or not (:class:`OutputTypeError`, a ``FileExistsError``). A symbolic link counts as an
  existing output; with ``force`` a link to a regular file is *followed*: the file it points to is
  replaced (its temporary is written in that file's folder) and the link stays. A dangling link,
  or a link to anything but a regular file, is refused.
* **Exclusive creation.** Without ``force`` the finished temporary takes the destination's name by
  a hard link (``os.link``), which fails if anything appeared under that name meanwhile: of two
  writers racing for one name exactly one wins, the other gets :class:`OutputExistsError`. On a
  filesystem without hard links (FAT, some network or FUSE mounts) the write is refused with
  :class:`OutputError` saying so (``force`` then replaces with a plain rename). With ``force`` the
  temporary is renamed over the old file (``os.replace``: atomic), keeping the old file's
  permission bits; a new file gets ``0666`` less the umask.
* **Temporaries** are named ``.NAME.ckptplan-XXXXXXXX.tmp`` beside the destination, written,
  flushed to disk (``fsync``) and then linked or renamed; any exception, ``KeyboardInterrupt`` and
  :class:`ckptplan.files.signals.Terminated` (SIGTERM/SIGHUP in the command line) included, removes
  them. A process killed outright (SIGKILL, power loss) leaves its temporary behind; the next write
  into that folder removes every temporary of this naming that is older than
  :data:`STALE_TEMP_SECONDS`, owned by this user and not locked by a running writer (a writer holds
  an advisory ``flock`` on its temporary while it works).
* **Errors while writing** (a full disk, a vanished folder) become one :class:`OutputError` naming
  the file and the reason; what a failed writer leaves half-closed (an open zip archive, a
  generator) is finalised at once, with Python's "Exception ignored in ..." reports silenced,
  since they only concern the temporary just deleted.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import re
import signal
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, stale temporaries go by age alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["OutputError", "OutputExistsError", "OutputTypeError", "STALE_TEMP_SECONDS", "TEMP_PATTERN", "atomic_write",
           "atomic_write_many", "atomic_write_text", "check_destination", "clean_stale_temporaries", "sync_folder",
           "temp_prefix"]

#: a temporary of ours older than this (and unlocked) is a leftover of a killed writer
STALE_TEMP_SECONDS = 3 * 3600
#: the names of our temporaries: ``.NAME.ckptplan-XXXXXXXX.tmp`` (mkstemp's eight random characters), and of
#: a writer's own helper file beside one (``....tmp.cache``)
TEMP_PATTERN = re.compile(r"^\..+\.ckptplan-[a-z0-9_]{8}\.tmp(\.[A-Za-z0-9]{1,16})?$")
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EXDEV, errno.EMLINK}


class OutputExistsError(FileExistsError):
    """The output file exists and overwriting was not allowed."""


class OutputTypeError(FileExistsError):
    """The output name is taken by something that is not a regular file (a pipe, device, socket, folder)."""


class OutputError(OSError):
    """Writing an output failed (full disk, vanished folder, no hard links); the message names the file."""

    def __init__(self, path: Path, reason: str, code: int = 0):
        super().__init__(code, reason)
        self.filename = str(path)
        self.message = f"cannot write {path}: {reason}"

    def __str__(self) -> str:
        return self.message


def temp_prefix(path: str | Path) -> str:
    """The start of the name of a temporary for ``path``: ``.NAME.ckptplan-``."""
    return f".{Path(path).name}.ckptplan-"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


@dataclass
class _Plan:
    """Where one output goes: ``path`` as named, ``target`` the file actually replaced (a followed link)."""

    path: Path
    target: Path
    exists: bool
    mode: Optional[int] = None


def check_destination(path: str | Path, force: bool = False) -> Path:
    """Check that ``path`` may be written (see the module notes) and return the file that will be
    written: ``path`` itself, or with ``force`` the regular file a symbolic link ``path`` points to.

    Raises :class:`OutputExistsError` (exists, no ``force``), :class:`OutputTypeError` (not a
    regular file, ``force`` or not), ``FileNotFoundError`` (no such folder; a dangling link).
    """
    return _plan(Path(path), force).target


def _plan(path: Path, force: bool) -> _Plan:
    parent = path.parent
    try:
        pst = os.stat(parent)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"{parent} does not exist: create the folder first") from None
    except OSError as exc:
        raise OutputError(path, f"its folder cannot be reached ({exc.strerror or exc})", exc.errno or 0) from None
    if not stat.S_ISDIR(pst.st_mode):
        raise FileNotFoundError(f"{parent} is not a folder: cannot write {path.name} in it")
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        return _Plan(path, path, exists=False)
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc), exc.errno or 0) from None
    if stat.S_ISLNK(lst.st_mode):
        try:
            target = path.resolve(strict=True)
            tst = os.stat(target)
        except (OSError, RuntimeError):  # missing, or a loop of links
            if not force:
                raise OutputExistsError(f"{path} exists (a symbolic link to a missing file): refusing to overwrite "
                                        "it") from None
            raise FileNotFoundError(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist: "
                                    "remove the link or write elsewhere") from None
        if not stat.S_ISREG(tst.st_mode):
            raise OutputTypeError(f"{path} is a symbolic link to {target}, which is {_kind(tst.st_mode)}: refusing "
                                  "to write to it, --force or not (only a regular file is ever replaced)")
        if not force:
            raise OutputExistsError(f"{path} exists: refusing to overwrite it (use --force to replace it)")
        return _Plan(path, target, exists=True, mode=stat.S_IMODE(tst.st_mode))
    if not stat.S_ISREG(lst.st_mode):
        raise OutputTypeError(f"{path} is {_kind(lst.st_mode)}, not a regular file: refusing to write to it, "
                              "--force or not (only a regular file is ever replaced)")
    if not force:
        raise OutputExistsError(f"{path} exists: refusing to overwrite it (use --force to replace it)")
    return _Plan(path, path, exists=True, mode=stat.S_IMODE(lst.st_mode))


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (changing it races with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def clean_stale_temporaries(folder: str | Path, older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove the temporaries of our naming in ``folder`` left by killed writers; return what was removed.

    Only regular files matching :data:`TEMP_PATTERN`, owned by this user, last modified more than
    ``older_than`` seconds ago and not locked by a running writer. Never raises.
    """
    removed: list[Path] = []
    now = time.time()
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not TEMP_PATTERN.match(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or (uid is not None and st.st_uid != uid) or now - st.st_mtime < older_than:
                continue
            if fcntl is not None:
                fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live writer -> BlockingIOError
                    os.unlink(entry.path)
                finally:
                    os.close(fd)
            else:  # pragma: no cover
                os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


@dataclass
class _Temp:
    path: Path
    fd: Optional[int]
    written: Optional[os.stat_result] = None  # the finished file (a writer may have replaced the first inode)


def _new_temp(target: Path) -> _Temp:
    fd, name = tempfile.mkstemp(prefix=temp_prefix(target), suffix=".tmp", dir=target.parent)
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # "a writer is alive": see clean_stale_temporaries
        except OSError:
            pass
        return _Temp(Path(name), fd)
    os.close(fd)  # pragma: no cover - Windows cannot rename an open file
    return _Temp(Path(name), None)  # pragma: no cover


def _release(temp: _Temp, remove: bool) -> None:
    if temp.fd is not None:
        try:
            os.close(temp.fd)
        except OSError:
            pass
        temp.fd = None
    if remove:
        try:
            temp.path.unlink()
        except OSError:
            pass


def _seal(temp: _Temp, plan: _Plan) -> None:
    """Make the written temporary durable, give it the destination's mode, and lock it (again: a writer
    may have replaced the file we created and locked)."""
    mode = plan.mode if plan.mode is not None else 0o666 & ~_umask()
    fd = os.open(temp.path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.fsync(fd)
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:  # pragma: no cover
            os.chmod(temp.path, mode)
        temp.written = os.fstat(fd)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass
    except BaseException:
        os.close(fd)
        raise
    if temp.fd is not None:
        os.close(temp.fd)
    if fcntl is None:  # pragma: no cover
        os.close(fd)
        fd = None
    temp.fd = fd


def _link_free_name(target: Path) -> Path:
    """A fresh name of our temporary naming for a hard link (not created)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_"
    return target.parent / (temp_prefix(target) + "".join(alphabet[b % len(alphabet)] for b in os.urandom(8)) + ".tmp")


def _commit(temp: _Temp, plan: _Plan, force: bool) -> Optional[Path]:
    """Give the temporary the destination's name; return a backup link of a replaced file (or None)."""
    if not force or not plan.exists:
        try:
            os.link(temp.path, plan.target)
        except FileExistsError:
            what = plan.path
            raise OutputExistsError(f"{what} exists: it was created by another program while ckptplan was writing "
                                    "it; refusing to overwrite it (use --force to replace it)") from None
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            if force:
                os.replace(temp.path, plan.target)
                return None
            raise OutputError(plan.path, f"this filesystem has no hard links, so ckptplan cannot create the file "
                              f"without a chance of replacing one another program creates meanwhile "
                              f"({exc.strerror}); write to another folder, or pass --force", exc.errno) from None
        try:
            temp.path.unlink()
        except OSError:
            pass
        return None
    backup = None
    for _ in range(5):
        candidate = _link_free_name(plan.target)
        try:
            os.link(plan.target, candidate)
            backup = candidate
            break
        except FileExistsError:
            continue
        except OSError:
            break  # no hard links: the old file cannot be kept for a rollback
    try:
        os.replace(temp.path, plan.target)
    except BaseException:
        if backup is not None:
            try:
                backup.unlink()  # the old file is still in place: the extra link goes
            except OSError:
                pass
        raise
    return backup


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back while the outputs take their names or are taken back, so that a
    signal cannot stop that half way (it is delivered right after, and finds every output in place or none)."""
    mask = getattr(signal, "pthread_sigmask", None)
    held = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}
    if mask is None:  # pragma: no cover - Windows
        yield
        return
    previous = mask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, previous)


def _finalise_quietly(exc: BaseException) -> None:
    """Finalise what the failed writer left half-closed, now, with unraisable reports silenced."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        seen: set[int] = set()
        stack: list[Optional[BaseException]] = [exc]
        while stack:  # the exception and those it was raised while handling (their frames hold the writer too)
            item = stack.pop()
            if item is None or id(item) in seen:
                continue
            seen.add(id(item))
            traceback.clear_frames(item.__traceback__)
            stack += [item.__context__, item.__cause__]
        gc.collect()
    finally:
        sys.unraisablehook = hook


def _as_output_error(exc: BaseException, path: Path) -> BaseException:
    if isinstance(exc, OSError) and not isinstance(exc, (OutputError, FileExistsError)):
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.errno == errno.ENOSPC:
            reason = f"{os.strerror(errno.ENOSPC)} (the disk is full; nothing was written)"
        elif exc.errno == errno.EDQUOT:
            reason = f"{os.strerror(errno.EDQUOT)} (nothing was written)"
        return OutputError(path, reason, exc.errno or 0)
    return exc


def atomic_write_many(outputs: Sequence[tuple[str | Path, Callable[[Path], None]]],
                      force: bool = False) -> list[Path]:
    """Write every ``(path, write)`` of ``outputs`` or none of them; return the paths.

    Every destination is checked first (see the module notes); then each ``write(tmp)`` fills its
    own temporary beside its destination; only when all are written do they take their names, one
    after another. If any step fails, the outputs already in place are undone: a new file is
    removed, a replaced file (``force``) is put back from a hard link kept until the end (on a
    filesystem without hard links a replaced file cannot be put back); the temporaries are removed.
    """
    plans = [_plan(Path(p), force) for p, _ in outputs]
    seen: set[str] = set()
    for plan in plans:
        key = os.path.normcase(os.path.abspath(plan.target))
        if key in seen:
            raise ValueError(f"{plan.path}: named twice among the outputs of one command")
        seen.add(key)
    for folder in {plan.target.parent for plan in plans}:
        clean_stale_temporaries(folder)
    temps: list[_Temp] = []
    done: list[tuple[_Plan, _Temp, Optional[Path]]] = []
    current = plans[0].path if plans else Path()
    try:
        for plan, (_, write) in zip(plans, outputs):
            current = plan.path
            temp = _new_temp(plan.target)
            temps.append(temp)
            write(temp.path)
            _seal(temp, plan)
        with _signals_held():
            for plan, temp in zip(plans, temps):
                current = plan.path
                backup = _commit(temp, plan, force)
                done.append((plan, temp, backup))
    except BaseException as exc:
        with _signals_held():
            for plan, temp, backup in reversed(done):
                _undo(plan, temp, backup)
            for temp in temps:
                _release(temp, remove=True)
        _finalise_quietly(exc)
        error = _as_output_error(exc, current)
        if error is exc:
            raise
        raise error from None
    for plan, temp, backup in done:
        _release(temp, remove=False)
        if backup is not None:
            try:
                backup.unlink()
            except OSError:
                pass
    for folder in {plan.target.parent for plan in plans}:
        sync_folder(folder)
    return [plan.path for plan in plans]


def _undo(plan: _Plan, temp: _Temp, backup: Optional[Path]) -> None:
    """Take back one committed output (best effort): restore the replaced file, or remove the new one."""
    try:
        if backup is not None:
            os.replace(backup, plan.target)
        elif not plan.exists and temp.written is not None and os.path.samestat(temp.written, os.lstat(plan.target)):
            os.unlink(plan.target)  # still ours: nobody replaced it since
    except OSError:
        pass


def sync_folder(folder: str | Path) -> None:
    """Make the new names durable (best effort; not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | Path, write: Callable[[Path], None], force: bool = False) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then give it the name ``path``.

    The file appears complete or not at all, and never over an existing file without ``force``
    (see the module notes for pipes, devices, links, concurrent writers and cleanup).
    """
    return atomic_write_many([(path, write)], force=force)[0]


def atomic_write_text(path: str | Path, text: str, force: bool = False,
                      check: Callable[[Path], object] | None = None) -> Path:
    """:func:`atomic_write` for text (UTF-8); ``check(tmp)`` may validate the file before the rename."""
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")
        if check is not None:
            check(tmp)
    return atomic_write(path, write, force=force)
