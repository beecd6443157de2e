"""Connections whose request is answered later, holding no thread meanwhile (#32 item 3).

A ``wait`` request may take a minute to answer. Instead of a worker blocked for that long, the owner
hands back a ``Deferred`` (``queue.wait_book.Later``) and the connection is **parked**: the I/O thread
watches its socket (a client that goes away is noticed at once and its wait cancelled) until the
deferred calls back with the reply, which a worker then sends; the connection then serves its next
request as any other. A thousand waiting clients cost a thousand entries here.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import selectors
import socket
import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from gputray.scheduler.replies import Reply

#: the ops whose answer may come later (the owner's deferrer decides, request by request)
DEFERRED_OPS = frozenset({"wait"})
MAX_PENDING_BYTES = 1 << 16  # what a parked client may send before its answer (more: it is closed)


class Deferred(Protocol):
    """A reply that comes later: ``on_done(callback)`` is called once (the callback, once, from any
    thread, with the reply); ``cancel()`` when the client went away first."""

    def on_done(self, callback: Callable[[Reply], None]) -> None: ...

    def cancel(self) -> None: ...


_C = TypeVar("_C")


class Parked(Generic[_C]):
    """The selector's data for a parked connection."""

    def __init__(self, conn: _C, later: Deferred) -> None:
        self.conn = conn
        self.later = later


class Parking(Generic[_C]):
    """The parked connections of one server. ``park`` from a worker; ``step`` and ``readable`` from the
    I/O thread; the deferred's callback from any thread."""

    def __init__(self, wake: Callable[[], None], sock_of: Callable[[_C], socket.socket]) -> None:
        self._wake = wake
        self._sock_of = sock_of
        self._incoming: collections.deque[Parked[_C]] = collections.deque()
        self._answered: collections.deque[tuple[Parked[_C], Reply]] = collections.deque()
        self._parked: dict[int, Parked[_C]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._parked)

    def park(self, conn: _C, later: Deferred) -> None:
        self._incoming.append(Parked(conn, later))
        self._wake()

    def step(self, selector: selectors.BaseSelector, send: Callable[[_C, dict[str, Any]], None]) -> None:
        """I/O thread: watch the newly parked, hand the answered to ``send``."""
        while self._incoming:
            entry = self._incoming.popleft()
            try:
                selector.register(self._sock_of(entry.conn), selectors.EVENT_READ, entry)
            except (KeyError, ValueError, OSError):
                entry.later.cancel()
                continue
            with self._lock:
                self._parked[id(entry)] = entry
            entry.later.on_done(functools.partial(self._done, entry))
        while self._answered:
            entry, reply = self._answered.popleft()
            with self._lock:
                if self._parked.pop(id(entry), None) is None:  # its client went away meanwhile
                    continue
            with contextlib.suppress(KeyError, ValueError, OSError):
                selector.unregister(self._sock_of(entry.conn))
            send(entry.conn, {"ok": True, "result": reply})

    def _done(self, entry: Parked[_C], reply: Reply) -> None:
        self._answered.append((entry, reply))
        self._wake()

    def readable(self, entry: Parked[_C], buf: bytearray, selector: selectors.BaseSelector) -> bool:
        """I/O thread: the parked client sent something or went away. False: drop the connection (its
        wait is cancelled); else what it sent waits in ``buf`` for its turn."""
        try:
            data = self._sock_of(entry.conn).recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            data = b""
        if data and len(buf) + len(data) <= MAX_PENDING_BYTES:
            buf += data
            return True
        with self._lock:
            self._parked.pop(id(entry), None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            selector.unregister(self._sock_of(entry.conn))
        entry.later.cancel()
        return False

    def cancel_all(self) -> None:
        with self._lock:
            entries, self._parked = list(self._parked.values()), {}
        for entry in entries:
            entry.later.cancel()
