"""Getting the store's changes onto the disk: one transaction per call, synced before it returns (or,
``sync=False``, made durable by the next synced commit), and while the disk is full, held in memory in
order and written by the retry thread ``gputray-store-flush`` once there is room. Callers hold the
store's lock."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gputray.scheduler.queue.store_errors import LOW_SPACE_BYTES, free_bytes, is_disk_full, no_space_message
from gputray.scheduler.queue.store_rows import column_text
from gputray.scheduler.queue.store_schema import transaction

log = logging.getLogger("gputray.store")

HELD_RETRY_S = 2.0  # how often changes held for a full disk are tried again
Statement = tuple[str, tuple[Any, ...]]


class StoreWriter:
    def __init__(self, db: sqlite3.Connection, path: Path, lock: threading.RLock, *, durable: bool) -> None:
        self.db = db
        self.path = path
        self.durable = durable
        self.commits = 0  # transactions committed (one group commit counts once)
        self._lock = lock
        self._held: list[Statement] = []  # written when the disk has room again
        self._held_error = ""
        self._on_written: list[Callable[[], None]] = []  # called once the held changes are on the disk
        self._flusher: threading.Thread | None = None
        self._closing = threading.Event()

    def run(self, statements: Sequence[Statement], *, sync: bool = True) -> None:
        """One transaction (callers hold the lock); on error rolled back and re-raised. ``sync=False``
        commits without waiting for the disk: the next synced commit makes it durable too (a WAL is
        synced as a whole, in order)."""
        db = self.db
        unsynced = self.durable and not sync
        if unsynced:
            db.execute("PRAGMA synchronous=NORMAL")
        try:
            with transaction(db):
                for sql, params in statements:
                    db.execute(sql, tuple(column_text(p) if isinstance(p, str) else p for p in params))
        finally:
            if unsynced:
                db.execute("PRAGMA synchronous=FULL")
        self.commits += 1

    def write(self, statements: Sequence[Statement], *, sync: bool = True) -> bool:
        """Commit ``statements`` in one transaction; True when they are written now. On a full disk they
        are held (False): kept in order and written by a retry thread once there is room. Callers hold
        the lock and update the mirror either way."""
        if not statements:
            return True
        if self._held:
            self._held.extend(statements)
            return self.flush()
        try:
            self.run(statements, sync=sync)
            return True
        except sqlite3.Error as exc:
            if not is_disk_full(exc, self.path.parent):
                raise
            self._held.extend(statements)
            log.warning(
                "%s: changes to the queue are kept in memory and written when space returns",
                no_space_message(self.path.parent),
            )
            if self._flusher is None and not self._closing.is_set():
                self._flusher = threading.Thread(
                    target=self._flush_loop, name="gputray-store-flush", daemon=True
                )
                self._flusher.start()
            return False

    def flush(self) -> bool:
        """Write the held changes (callers hold the lock); True when none are left."""
        if not self._held:
            return True
        try:
            self.run(self._held)
        except sqlite3.Error as exc:
            if not is_disk_full(exc, self.path.parent) and str(exc) != self._held_error:
                log.error("cannot write %d held change(s) to the queue: %s", len(self._held), exc)
            self._held_error = str(exc)
            return False
        log.warning(
            "the disk has room again: wrote the %d change(s) to the queue kept while it was full",
            len(self._held),
        )
        self._held.clear()
        self._held_error = ""
        written, self._on_written = self._on_written, []
        for callback in written:
            try:
                callback()
            except Exception:
                log.exception("after the held changes were written")
        return True

    def when_written(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once every change made so far is on the disk: now, or (changes held for a
        full disk) right after they are written. Never, when they are lost at close: what the callback
        would discard (a job's exit files, say) then stays for the next owner to read. Callers hold the
        lock; the callback must be quick and take no other lock than the store's."""
        if not self._held:
            callback()
            return
        self._on_written.append(callback)

    def _flush_loop(self) -> None:
        while not self._closing.wait(HELD_RETRY_S):
            with self._lock:
                if not self._held or self.flush():
                    self._flusher = None
                    return
        with self._lock:
            self._flusher = None

    def space_problem(self) -> str | None:
        """ "no space left: 0 KiB free in …" while changes wait for disk space or the disk is (nearly)
        full, else None (callers hold the lock)."""
        held = bool(self._held)
        free = free_bytes(self.path.parent)
        if held or (free is not None and free < LOW_SPACE_BYTES):
            return no_space_message(self.path.parent)
        return None

    def stop_retrying(self) -> None:
        """Closing: the retry thread ends; what is held is written by ``flush_or_drop`` or lost."""
        self._closing.set()

    def flush_or_drop(self) -> None:
        """At close (callers hold the lock): write what a full disk held back if there is room now."""
        if not self.flush():
            log.warning(
                "%s: %d change(s) to the queue could not be written and are lost; "
                "the tasks they concern show as before them",
                no_space_message(self.path.parent),
                len(self._held),
            )
