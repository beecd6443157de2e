"""The queue file's schema: the tables, the migrations from each older version, and the transaction helper.

``PRAGMA user_version`` is the schema version; a file from a newer gputray is refused (``schema_version``),
never migrated down."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from gputray.scheduler.queue.store_errors import StoreError

SCHEMA_VERSION = 9


def migrate_0_to_1(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE tasks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            spec TEXT NOT NULL,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,
            device TEXT,
            env TEXT,
            reason TEXT NOT NULL DEFAULT '',
            exit_code INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            submitted_at REAL NOT NULL,
            started_at REAL,
            ended_at REAL,
            log_path TEXT,
            pid INTEGER,
            pid_create_time REAL,
            priority INTEGER NOT NULL DEFAULT 0,
            position REAL NOT NULL,
            queued_at REAL NOT NULL,
            not_before REAL,
            overtakes INTEGER NOT NULL DEFAULT 0
        )
        """
    )
    db.execute("CREATE INDEX tasks_state ON tasks(state)")


def migrate_1_to_2(db: sqlite3.Connection) -> None:
    """``attempts_before``: attempts when a task was last queued again by hand (``retry``), so that
    attempts count on ("attempt 2") while its automatic retries start afresh."""
    db.execute("ALTER TABLE tasks ADD COLUMN attempts_before INTEGER NOT NULL DEFAULT 0")


def migrate_2_to_3(db: sqlite3.Connection) -> None:
    """Cluster bookkeeping (the cluster package's): the machine a task was placed on, its id in that
    machine's queue and the last state seen there (all NULL for a task that runs here)."""
    for column in ("machine TEXT", "remote_id INTEGER", "remote_state TEXT"):
        db.execute(f"ALTER TABLE tasks ADD COLUMN {column}")


def migrate_3_to_4(db: sqlite3.Connection) -> None:
    """A run's GPU energy: ``energy_j`` (joules, NULL when not measured) and ``energy_shared`` (0/1:
    the device ran something else too)."""
    db.execute("ALTER TABLE tasks ADD COLUMN energy_j REAL")
    db.execute("ALTER TABLE tasks ADD COLUMN energy_shared INTEGER NOT NULL DEFAULT 0")


def migrate_4_to_5(db: sqlite3.Connection) -> None:
    """What the queue learns from its jobs (``queue.runtime_history``): each finished run of a job family
    on a device (its duration, energy, whether the device throttled), and each spell of external use of a
    device (an LLM server holding the GPU), a few recent ones each, for the runtime estimates."""
    db.execute(
        "CREATE TABLE job_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, family TEXT NOT NULL,"
        " device TEXT NOT NULL, env TEXT, duration_s REAL NOT NULL, energy_j REAL, throttled INTEGER,"
        " ended_at REAL NOT NULL)"
    )
    db.execute("CREATE INDEX job_runs_family_device ON job_runs(family, device)")
    db.execute(
        "CREATE TABLE busy_spells (id INTEGER PRIMARY KEY AUTOINCREMENT, device TEXT NOT NULL,"
        " started_at REAL NOT NULL, duration_s REAL NOT NULL)"
    )


def migrate_5_to_6(db: sqlite3.Connection) -> None:
    """A job's pauses (``gputray pause-job``): ``paused_at`` (when the pause in force began, NULL when it
    runs) and ``paused_s`` (the seconds its run spent paused: no timeout nor runtime counts them)."""
    db.execute("ALTER TABLE tasks ADD COLUMN paused_at REAL")
    db.execute("ALTER TABLE tasks ADD COLUMN paused_s REAL NOT NULL DEFAULT 0")


def migrate_6_to_7(db: sqlite3.Connection) -> None:
    """``energy_estimated_s``: the seconds of a run's energy counted from power because the device's
    energy counter glitched (jumped further than the device can draw, or could not be read)."""
    db.execute("ALTER TABLE tasks ADD COLUMN energy_estimated_s REAL NOT NULL DEFAULT 0")


def migrate_7_to_8(db: sqlite3.Connection) -> None:
    """A run's peak GPU memory (``queue.job_peaks``): the next task of its family counts at least that."""
    db.execute("ALTER TABLE job_runs ADD COLUMN peak_bytes INTEGER")


def migrate_8_to_9(db: sqlite3.Connection) -> None:
    """A task's state may be ``starting`` (the owner launching its job: ``lifecycle.Starting``). No
    column changes; the version says so, and a gputray that does not know the state refuses the file
    (``schema_version_of``) instead of reading a row it cannot judge."""


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    migrate_0_to_1,
    migrate_1_to_2,
    migrate_2_to_3,
    migrate_3_to_4,
    migrate_4_to_5,
    migrate_5_to_6,
    migrate_6_to_7,
    migrate_7_to_8,
    migrate_8_to_9,
]


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; rolled back when anything raises (and SQLite has not already)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


def create_schema(db: sqlite3.Connection) -> None:
    """The current schema on an empty database, inside the caller's transaction."""
    for step in MIGRATIONS:
        step(db)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def schema_version_of(db: sqlite3.Connection, path: Path) -> int:
    """The file's schema version; StoreError for one written by a newer gputray."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the queue database {path} was written by a newer gputray "
            f"(schema {version}, this one knows up to {SCHEMA_VERSION}); upgrade gputray"
        )
    return version


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the file to ``SCHEMA_VERSION``, one transaction per step (``path`` names it in errors)."""
    version = schema_version_of(db, path)
    while version < SCHEMA_VERSION:
        with transaction(db):
            MIGRATIONS[version](db)
            version += 1
            db.execute(f"PRAGMA user_version={version}")
