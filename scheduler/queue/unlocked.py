"""The queue's lock let go for a moment (moved out of ``job_runs``, which keeps under 700 lines)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def unlocked(lock: threading.RLock) -> Iterator[None]:
    """The queue's lock let go for a moment, however deeply this thread holds it, then taken again."""
    held = 0
    while True:
        try:
            lock.release()
        except RuntimeError:  # not (or no longer) held by this thread
            break
        held += 1
    try:
        yield
    finally:
        for _ in range(held):
            lock.acquire()
