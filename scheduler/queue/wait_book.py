"""The `gputray wait` requests waiting for tasks to end, held without a thread each (#32 item 3).

A wait is an entry here: the task ids, a deadline and what to call when it is answered. One thread,
``gputray-waits``, looks at the waits when the queue says something changed (``poke``: every queue
event) and when the earliest deadline passes, and answers each whose tasks have all ended or whose
time is up, outside every lock. So a thousand clients waiting cost a thousand small entries, not a
thousand threads or workers; a client that goes away takes its entry with it (``cancel``).
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from gputray.scheduler.tasks.records import TaskRecord

log = logging.getLogger("gputray.scheduler.queue.service")

#: the tasks as they are when a wait is answered (the id of one that no longer exists)
States = builtins.list[TaskRecord | int]


@dataclass
class _Wait:
    ids: tuple[int, ...]
    deadline: float  # monotonic
    on_done: Callable[[States], None]


class WaitBook:
    """See the module docstring. ``look(ids)`` gives the tasks as they are now."""

    def __init__(self, look: Callable[[Sequence[int]], States]) -> None:
        self._look = look
        self._cond = threading.Condition()
        self._waits: dict[int, _Wait] = {}
        self._numbers = itertools.count(1)
        self._poked = False
        self._released = False  # the owner is stopping: every wait is answered at once
        self._thread: threading.Thread | None = None

    def add(self, ids: Sequence[int], timeout_s: float, on_done: Callable[[States], None]) -> int:
        """Wait for ``ids`` to end, at most ``timeout_s``; ``on_done(states)`` is called once, from the
        book's thread. A handle for ``cancel``."""
        wait = _Wait(tuple(ids), time.monotonic() + timeout_s, on_done)
        with self._cond:
            handle = next(self._numbers)
            self._waits[handle] = wait
            self._poked = True  # tasks that have ended already: answered at once
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="gputray-waits", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return handle

    def cancel(self, handle: int) -> None:
        """Its client went away: the wait is forgotten, never answered."""
        with self._cond:
            self._waits.pop(handle, None)

    def poke(self) -> None:
        """Something changed in the queue: the waits are looked at again."""
        with self._cond:
            self._poked = True
            self._cond.notify_all()

    def release(self) -> None:
        """The owner is stopping: answer every wait now, and later ones at once."""
        with self._cond:
            self._released = True
            self._poked = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._waits)

    def wait(self, ids: Sequence[int], timeout_s: float) -> States:
        """The same, in the calling thread (the tray's in-process requests)."""
        answered = threading.Event()
        out: builtins.list[States] = []

        def done(states: States) -> None:
            out.append(states)
            answered.set()

        self.add(ids, timeout_s, done)
        answered.wait()
        return out[0]

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._poked:
                    due = min((w.deadline for w in self._waits.values()), default=None)
                    left = None if due is None else due - time.monotonic()
                    if left is not None and left <= 0:
                        break
                    self._cond.wait(left)
                self._poked = False
                waits = list(self._waits.items())
                released = self._released
            now = time.monotonic()
            answered: builtins.list[tuple[_Wait, States]] = []
            for handle, wait in waits:
                states = self._look(wait.ids)
                ended = all(isinstance(r, int) or r.finished for r in states)
                if ended or released or now >= wait.deadline:
                    with self._cond:
                        if self._waits.pop(handle, None) is None:  # cancelled meanwhile
                            continue
                    answered.append((wait, states))
            for wait, states in answered:
                with contextlib.suppress(Exception):
                    wait.on_done(states)


_T = TypeVar("_T")


class Later(Generic[_T]):
    """One wait, answered later (the owner's socket parks the connection meanwhile): what
    ``ipc.server.Deferred`` asks — ``on_done(callback)`` once, ``cancel()`` when the client goes away."""

    def __init__(
        self, book: WaitBook, ids: Sequence[int], timeout_s: float, convert: Callable[[States], _T]
    ) -> None:
        self._book = book
        self._ids = tuple(ids)
        self._timeout_s = timeout_s
        self._convert = convert
        self._handle: int | None = None

    def on_done(self, callback: Callable[[_T], None]) -> None:
        self._handle = self._book.add(
            self._ids, self._timeout_s, lambda states: callback(self._convert(states))
        )

    def cancel(self) -> None:
        if self._handle is not None:
            self._book.cancel(self._handle)
