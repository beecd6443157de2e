"""The saved queue read without an owner (``gputray queue``, ``logs``, ``wait`` when none runs): strictly
read-only, a damaged file read row by row, every problem said as a note beside the tasks."""

from __future__ import annotations

import builtins
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from gputray.scheduler.queue import store_salvage
from gputray.scheduler.queue.store import UNFINISHED_STATES, display_order
from gputray.scheduler.queue.store_errors import (
    StoreError,
    TaskNotFound,
)
from gputray.scheduler.queue.store_rows import (
    columns_of_schema,
    decode_rows,
    row_from_salvage,
    spec_from_json,
)
from gputray.scheduler.queue.store_salvage import Damage
from gputray.scheduler.queue.store_schema import (
    schema_version_of,
)
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import (
    TaskRecord,
)


@dataclass(frozen=True)
class SavedQueue:
    """The queue file as saved, read without an owner; ``notes`` say what could not be read as it was."""

    tasks: builtins.list[TaskRecord]
    notes: builtins.list[str] = field(default_factory=builtins.list)


def read_saved_queue(path: Path, *, include_finished: bool = True) -> SavedQueue:
    """The tasks as saved in the queue file, for the CLI when no owner runs, in ``TaskStore.list`` order,
    with notes on what could not be read as it was (a damaged file, a row that is not a task).

    Strictly read-only: the files are checked as bytes first (SQLite would delete the WAL beside a
    0-byte file, even read-only), then SQLite opens the file with ``mode=ro`` (a WAL left by a crashed
    owner is read, never checkpointed); nothing is migrated, recovered or created. A damaged file is
    read row by row (``store_salvage``). A missing or never-initialised file is an empty queue; a task
    left ``running`` by a crash shows as saved until an owner starts.
    Raises StoreError for a file that cannot be read at all or was written by a newer gputray.
    """
    rows, notes = _saved_rows(Path(path), None)
    records, bad = decode_rows(rows, spec_from_json)
    for task_id in builtins.list(bad)[:10]:
        notes.append(f"task #{task_id}: {render(records[task_id].reason)}")
    if len(bad) > 10:
        notes.append(f"{len(bad) - 10} more task(s) whose saved record cannot be read")
    tasks = builtins.list(records.values())
    if not include_finished:
        tasks = [r for r in tasks if r.state in UNFINISHED_STATES]
    return SavedQueue(sorted(tasks, key=display_order), notes)


def read_saved_tasks(path: Path, *, include_finished: bool = True) -> builtins.list[TaskRecord]:
    """:func:`read_saved_queue`'s tasks (its notes dropped)."""
    return read_saved_queue(path, include_finished=include_finished).tasks


def read_saved_task(path: Path, task_id: int) -> TaskRecord:
    """One task of the saved queue file, read-only as :func:`read_saved_tasks`; TaskNotFound if absent."""
    rows, _notes = _saved_rows(Path(path), task_id)
    if not rows:
        raise TaskNotFound(task_id)
    records, _bad = decode_rows(rows, spec_from_json)
    return records[task_id]


def _saved_rows(path: Path, task_id: int | None) -> tuple[builtins.list[Sequence[Any]], builtins.list[str]]:
    path = path.absolute()
    if path.is_dir():
        raise StoreError(f"the queue database {path} is a folder, not a file")
    if not path.exists() and not store_salvage.wal_path(path).exists():
        return [], []
    try:
        damage = store_salvage.inspect_files(path)
    except OSError as exc:
        raise StoreError(f"cannot read the queue database {path}: {exc.strerror or exc}") from None
    if damage is None:
        if not path.exists():
            return [], []  # a WAL that never committed anything, beside no database
        try:
            return _read_only_rows(path, task_id), []
        except _Malformed as exc:
            damage = Damage(str(exc))
    try:
        found = store_salvage.salvage(path)
    except OSError as exc:
        raise StoreError(f"cannot read the queue database {path}: {exc.strerror or exc}") from None
    if not found.rows:
        raise StoreError(
            f"the queue database {path} is damaged ({damage.what}) and holds no readable task; "
            "the owner keeps it as a copy and starts afresh"
        )
    rows: builtins.list[Sequence[Any]] = [
        row_from_salvage(r) for i, r in found.rows.items() if task_id is None or i == task_id
    ]
    note = (
        f"the queue file {path} is damaged: {damage.what}; {found.summary()}; "
        "the owner keeps a copy of it and repairs it when it starts"
    )
    return rows, [note]


class _Malformed(Exception):
    """SQLite found the file damaged while reading it."""


def _read_only_rows(path: Path, task_id: int | None) -> builtins.list[Sequence[Any]]:
    where, params = ("", ()) if task_id is None else (" WHERE id = ?", (task_id,))
    uri = f"{path.as_uri()}?mode=ro"
    if not store_salvage.wal_path(path).exists() and not os.access(path.parent, os.W_OK):
        uri += (
            "&immutable=1"  # a read-only folder: SQLite could not make its -shm index, nor can anyone write
        )
    try:
        db = sqlite3.connect(uri, uri=True, timeout=10.0)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the queue database {path}: {exc}") from None
    try:
        version = schema_version_of(db, path)
        if version == 0:  # created but never initialised: no table yet, nothing queued
            return []
        columns = columns_of_schema(version)  # an older owner's file, read as it is (never migrated here)
        return cast(
            builtins.list[Sequence[Any]],
            db.execute(f"SELECT {columns} FROM tasks{where} ORDER BY id", params).fetchall(),
        )
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "malformed" not in str(exc):
            raise StoreError(f"cannot read the queue database {path}: {exc}") from None
        raise _Malformed(f"SQLite cannot read it ({exc})") from None
    finally:
        db.close()
