"""Files a job's supervisor writes so that they say the truth whatever happens meanwhile: all or nothing
(``write_atomic``: a temporary file, fsync, rename, fsync of the folder), room taken ahead for a document
that must be written on a full disk (``reserve``, then ``write_reserved`` over it in place), and the
lock a supervisor holds for as long as it lives (``lock_exclusive``).

Loaded by path by the supervisor (run with ``-I -S``): the standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

FORMAT = 1  # version of the run and exit files

#: the run and exit files are reserved at this size before the job starts (``reserve``): a job that
#: ends on a full disk still gets its exit written, over the reserved bytes (``write_reserved``)
RESERVED_BYTES = 8192


def _encoded(doc: dict[str, Any], pad_to: int = 0) -> bytes:
    data = json.dumps(doc, ensure_ascii=True).encode("ascii")
    return data + b" " * max(0, pad_to - len(data))  # JSON allows the trailing blanks


def write_atomic(path: Path, doc: dict[str, Any], *, pad_to: int = 0) -> None:
    """``doc`` as JSON at ``path``, all or nothing: temporary file, fsync, rename, fsync of the folder.
    ``pad_to``: blanks after the JSON up to that many bytes (room kept for ``write_reserved``). A write
    that fails (a full disk) leaves no temporary file behind."""
    data = _encoded(doc, pad_to)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sys.platform != "win32":
        with contextlib.suppress(OSError):
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


def reserve(path: Path) -> None:
    """Write a placeholder at ``path`` (JSON that names no job) of ``RESERVED_BYTES``: the disk space the
    real document takes later, whatever the disk's state then. Raises OSError (a full disk now)."""
    write_atomic(path, {"format": FORMAT, "reserved": True}, pad_to=RESERVED_BYTES)


def write_reserved(path: Path, doc: dict[str, Any]) -> None:
    """``doc`` at ``path``: atomically where the disk has room, else over the bytes ``reserve`` kept
    there (in place, synced: no block is allocated, so a full disk cannot refuse it). Raises OSError
    only when neither works (no reservation, or ``doc`` larger than it)."""
    try:
        write_atomic(path, doc, pad_to=RESERVED_BYTES)
        return
    except OSError:
        pass
    flags = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        size = os.fstat(fd).st_size
        data = _encoded(doc, size)
        if len(data) > size:
            raise OSError(28, f"the reserved {path} is too small for the document")
        view, offset = memoryview(data), 0
        while offset < len(data):
            offset += (
                os.pwrite(fd, view[offset:], offset)
                if hasattr(os, "pwrite")
                else _seek_write(fd, view, offset)
            )
        os.fsync(fd)
    finally:
        os.close(fd)


def _seek_write(fd: int, view: memoryview, offset: int) -> int:
    os.lseek(fd, offset, os.SEEK_SET)
    return os.write(fd, view[offset:])


def lock_exclusive(path: Path, *, blocking: bool) -> int | None:
    """An fd holding an exclusive lock on ``path`` (created if missing), or None when someone holds it.

    POSIX: ``flock`` (freed when the holder exits, however it exits). Windows: ``msvcrt.locking`` on
    the first byte (the same); a blocking wait there polls.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
    try:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                    return fd
                except OSError:
                    if not blocking:
                        os.close(fd)
                        return None
                    time.sleep(0.25)
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
