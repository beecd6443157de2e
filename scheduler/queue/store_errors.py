"""What goes wrong with the queue file, as errors for a person, and the full-disk check that decides
whether a change is held in memory until there is room."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

from gputray.scheduler.protocol import Refusal

LOW_SPACE_BYTES = 1 << 20  # with less free than this no job starts: its log and its exit need room


_SQLITE_IOERR = 10


class StoreError(Exception):
    """The queue database cannot be used (corrupt, newer schema, unreadable); the message says which file."""


class StoreFull(Refusal, StoreError, OSError):
    """No room on the disk for a new task: "no space left: 0 KiB free in …". An OSError (ENOSPC), so the
    owner answers it as a refusal with this message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.ENOSPC
        self.strerror = message
        self.message = message

    def __str__(self) -> str:
        return self.message


class UnreadableTask(ValueError):
    """A task whose saved record cannot be read: shown as failed, it can never run again."""


class TaskNotFound(Refusal, KeyError):
    """No task with that id. ``str()`` gives a readable message (unlike a bare KeyError)."""

    def __init__(self, task_id: int) -> None:
        super().__init__(task_id)
        self.task_id = task_id

    def __str__(self) -> str:
        return f"no task #{self.task_id} in the queue"


def free_bytes(folder: Path) -> int | None:
    """Bytes this process may still write in ``folder``'s file system (root may use the reserve)."""
    try:
        if hasattr(os, "statvfs"):
            st = os.statvfs(folder)
            blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
            return int(blocks * st.f_frsize)
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def no_space_message(folder: Path) -> str:
    free = free_bytes(folder)
    amount = "no room" if free is None else f"{free // 1024:,} KiB"
    return f"no space left: {amount} free in {folder}"


def is_disk_full(exc: BaseException, folder: Path) -> bool:
    """Whether a failed write failed for lack of disk space."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return False
    if code & 0xFF == sqlite3.SQLITE_FULL:
        return True
    if code & 0xFF == _SQLITE_IOERR:  # a write or a -shm extension that failed: look at the disk
        free = free_bytes(folder)
        return free is not None and free < LOW_SPACE_BYTES
    return False
