"""Repairing a damaged queue file: a fresh database with every row that could be read, the damaged
files kept beside it (private copies), swapped in so that a repair cut short resumes at the next start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputray.scheduler.paths import create_private_file
from gputray.scheduler.queue import store_salvage
from gputray.scheduler.queue.store_salvage import TASK_TABLE_COLUMNS, Salvage


def repaired_path(path: Path) -> Path:
    """Where a complete repair waits to be swapped in."""
    return path.with_name(path.name + ".recovered")


def build_repair(path: Path, found: Salvage, create_schema: Callable[[sqlite3.Connection], None]) -> None:
    """Write a fresh database holding ``found``'s rows beside ``path``, complete once it is named
    :func:`repaired_path`. Raises OSError or sqlite3.Error, leaving nothing behind."""
    building = path.with_name(path.name + ".recovering")
    with contextlib.suppress(FileNotFoundError):
        building.unlink()
    try:
        _build(building, found, create_schema)
        os.replace(building, repaired_path(path))
    except BaseException:
        with contextlib.suppress(OSError):
            building.unlink()
        raise


def finish_repair(path: Path) -> str | None:
    """Put a built repair in place: copy the damaged files aside, drop their WAL, swap the new file in.
    Returns where the damaged file is kept (None: no repair was waiting).

    Every step can be cut short and done again: the repaired file is moved last, and a WAL left beside
    the new file would be replayed onto it, so the WAL goes before."""
    repaired = repaired_path(path)
    if not repaired.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while kept.exists():
        n += 1
        kept = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    wal = store_salvage.wal_path(path)
    if path.exists():
        _private_copy(path, kept)
    if wal.exists() and wal.stat().st_size > 0:  # an empty WAL holds nothing worth keeping
        _private_copy(wal, Path(f"{kept}-wal"))
    for leftover in (wal, store_salvage.shm_path(path)):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    os.replace(repaired, path)
    _fsync_folder(path.parent)
    return str(kept)


def _build(target: Path, found: Salvage, create_schema: Callable[[sqlite3.Connection], None]) -> None:
    """A fresh queue database at ``target`` holding ``found``'s rows (ids and their sequence kept)."""
    create_private_file(target)
    con = sqlite3.connect(str(target), isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("PRAGMA synchronous=FULL")
        con.execute("BEGIN IMMEDIATE")
        create_schema(con)
        names = ", ".join(TASK_TABLE_COLUMNS)
        marks = ", ".join("?" * len(TASK_TABLE_COLUMNS))
        for row in found.rows.values():
            con.execute(f"INSERT INTO tasks ({names}) VALUES ({marks})", _insertable(row))
        seq = "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'tasks'"
        if found.highest_id and con.execute(seq, (found.highest_id,)).rowcount == 0:
            con.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('tasks', ?)", (found.highest_id,))
        con.execute("COMMIT")
    finally:
        con.close()


def _insertable(row: dict[str, Any]) -> tuple[Any, ...]:
    """A salvaged row's values for INSERT; a NULL where the schema forbids one gets a stand-in (the
    row is then shown as unreadable, failed, rather than dropped)."""
    task_id = row["id"]
    stand_in: dict[str, Any] = {
        "spec": "",
        "name": f"task #{task_id}",
        "kind": "command",
        "state": "failed",
        "reason": "",
        "attempts": 0,
        "submitted_at": 0.0,
        "priority": 0,
        "position": float(task_id),
        "queued_at": 0.0,
        "overtakes": 0,
        "attempts_before": 0,
        "energy_shared": 0,
        "paused_s": 0.0,
        "energy_estimated_s": 0.0,
    }
    return tuple(
        stand_in[name] if row.get(name) is None and name in stand_in else row.get(name)
        for name in TASK_TABLE_COLUMNS
    )


def _private_copy(src: Path, dst: Path) -> None:
    """``src`` copied to a new 0600 file ``dst``, synced."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
        shutil.copyfileobj(inp, out)
        out.flush()
        os.fsync(out.fileno())


def _fsync_folder(folder: Path) -> None:
    """Make renames in ``folder`` durable (POSIX; Windows has no directory handles to sync)."""
    if sys.platform == "win32":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
