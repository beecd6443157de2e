"""Opening the queue file for writing: the folder made private and checked, a damaged file repaired
into a fresh one before SQLite opens it (``store_salvage``, ``store_repair``), then SQLite in WAL mode
with every commit synced, and the schema migrated (``store_schema``)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from gputray.scheduler.paths import create_private_file, make_private_dir, unwritable_reason
from gputray.scheduler.queue import store_repair, store_salvage
from gputray.scheduler.queue.store_errors import StoreError, is_disk_full, no_space_message
from gputray.scheduler.queue.store_salvage import Damage
from gputray.scheduler.queue.store_schema import SCHEMA_VERSION, create_schema, migrate

log = logging.getLogger("gputray.store")


def open_queue_file(path: Path, *, durable: bool) -> tuple[sqlite3.Connection, str | None]:
    """The queue file opened for writing: its folder checked, a damaged file repaired first (the note
    says what was recovered), the schema migrated. Raises StoreError with a message for a person."""
    note = _prepare_files(path)
    return _connect(path, durable=durable), note


def _prepare_files(path: Path) -> str | None:
    """Folder, write access, damage: everything that must be settled before SQLite opens the file.
    Returns what a repair recovered (for the log and ``TaskStore.recovery_note``), or None."""
    folder = path.parent
    try:
        make_private_dir(folder)
    except OSError as exc:
        raise StoreError(f"cannot create the data folder {folder}: {exc.strerror or exc}") from None
    if path.is_dir():
        raise StoreError(
            f"the queue database {path} is a folder, not a file; move it away to start a queue there"
        )
    problem = unwritable_reason(folder, path)
    if problem is not None:
        raise StoreError(problem)
    finished = _finish_repair(path)
    if finished is not None:
        log.warning(
            "finished repairing the queue database %s; the damaged file is kept as %s",
            path,
            finished,
        )
    try:
        damage = store_salvage.inspect_files(path)
        if damage is None and path.exists() and path.stat().st_size > 0:
            damage = store_salvage.check_pages(path, SCHEMA_VERSION)
    except OSError as exc:
        raise StoreError(f"cannot read the queue database {path}: {exc.strerror or exc}") from None
    note = _repair(path, damage) if damage is not None else None
    if not path.exists():
        try:
            create_private_file(path)
        except OSError as exc:
            raise StoreError(f"cannot create the queue database {path}: {exc.strerror or exc}") from None
    return note


def _connect(path: Path, *, durable: bool) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10.0)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the queue database {path}: {exc}") from None
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit returns once the WAL is synced: what was acknowledged survives a power cut.
        db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        db.execute("PRAGMA foreign_keys=ON")
        migrate(db, path)
    except sqlite3.DatabaseError as exc:
        db.close()
        if is_disk_full(exc, path.parent):
            raise StoreError(
                f"cannot open the queue database {path}: {no_space_message(path.parent)}"
            ) from None
        raise StoreError(
            f"the queue database {path} is unreadable ({exc}); move it away to start afresh"
        ) from None
    except StoreError:
        db.close()
        raise
    return db


def _repair(path: Path, damage: Damage) -> str:
    """Keep the damaged files beside a fresh database holding every row that could be read."""
    folder = path.parent
    try:
        found = store_salvage.salvage(path)
    except OSError as exc:
        raise StoreError(f"cannot read the damaged queue database {path}: {exc.strerror or exc}") from None
    try:
        store_repair.build_repair(path, found, create_schema)
    except (OSError, sqlite3.Error) as exc:
        why = no_space_message(folder) if is_disk_full(exc, folder) else str(exc)
        raise StoreError(
            f"the queue database {path} is damaged ({damage.what}) and cannot be repaired: {why}; "
            "nothing was changed"
        ) from None
    kept = _finish_repair(path)
    note = f"the queue database {path} was damaged: {damage.what}. It is kept as {kept}"
    note += f"; {found.summary()}"
    if found.from_pages:
        note += f" ({found.from_pages} of them read straight from its pages)"
    log.warning("%s", note)
    return note


def _finish_repair(path: Path) -> str | None:
    try:
        return store_repair.finish_repair(path)
    except OSError as exc:
        why = no_space_message(path.parent) if is_disk_full(exc, path.parent) else exc.strerror or exc
        raise StoreError(
            f"cannot put the repaired queue database in place of {path}: {why}; "
            "nothing was lost, the next start tries again"
        ) from None
