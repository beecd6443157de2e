"""The lock beside the queue database (``queue.sqlite3.lock``): whoever holds it may change the queue.

The owner (tray or daemon) takes it before it opens the store and holds it for as long as it owns the
queue. A client command that finds no owner (``cancel``, ``retry``, ``pause`` …) takes it for the
moment it acts on the saved queue itself (``offline``). So the two never write at once, and a user is
never locked out of their own tasks because no owner runs.

An exclusive ``flock`` (``msvcrt.locking`` on Windows), freed by the kernel when the holder exits,
however it exits: a crashed owner leaves nothing to clean up.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from gputray.scheduler.jobs.supervisor import lock_exclusive


class PidLock:
    """An exclusive lock on the file ``path``; its holder writes its pid there, for messages."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, *, timeout_s: float = 0.0) -> bool:
        """Take the lock, waiting up to ``timeout_s`` for its holder (a client command holds it for a
        moment only); False when someone still holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout_s
        while True:
            fd = lock_exclusive(self.path, blocking=False)
            if fd is not None:
                self._fd = fd
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode())
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def holder_pid(self) -> int | None:
        """The pid the holder wrote, for messages (it may be stale once the lock is free)."""
        try:
            return int(self.path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


class QueueLock(PidLock):
    def __init__(self, queue_db: Path) -> None:
        super().__init__(queue_db.with_name(queue_db.name + ".lock"))
