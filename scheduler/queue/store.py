"""The durable queue: one SQLite file (WAL) in the data folder, ``app_paths().queue_db``.

Every change is one transaction, so a crash or power cut at any moment leaves either the old or the
new state. The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS[n]`` upgrades n → n+1.
A database written by a newer gputray is refused with a clear message instead of being damaged.

**Durable before the reply.** ``synchronous=FULL``: a commit returns only once SQLite has synced the
WAL, so an acknowledged submit survives a power cut. Submits arriving together share one commit
(group commit, :meth:`TaskStore.add_many`): while one thread syncs, the others queue up, and the next
of them commits them all with one sync. ``GPUTRAY_UNSAFE_NO_FSYNC=1`` turns the sync off
(``synchronous=NORMAL``: safe against a crash of gputray, not of the machine); it exists for the
benchmark that compares the two, never set it otherwise.

**A full disk.** A new task is refused (:class:`StoreFull`, "no space left: 0 KiB free in …"). A change
to a task already queued (a job's exit, a cancel, a reason) is kept in memory instead, shown at once,
and written as soon as the disk has room again (retried every few seconds); a job that ends while the
disk is full is thus recorded, not left ``running``. :meth:`TaskStore.space_problem` says when nothing
should start.

**Damaged files.** Before opening, the files are checked as bytes (a 0-byte database beside a WAL
full of tasks, a WAL with a bad frame: SQLite would silently drop what follows) and then by SQLite's
``quick_check``. A file that fails is kept beside the new one (``queue.sqlite3.damaged-<time>``),
every readable row is recovered into a fresh database (``store_salvage``), and what was and was not
recovered is logged (``TaskStore.recovery_note``). A row whose spec is not JSON or holds wrong types
is shown as ``failed`` with the reason and kept as it was saved; the other tasks are unaffected.

Only the process that owns the queue (tray app or ``gputray daemon``) opens the store for writing and
calls :meth:`TaskStore.recover_after_crash` once at start: tasks left ``running`` by a crash become
``interrupted``, their orphaned processes (if still alive, checked by pid *and* start time) are
killed, and each is requeued (with backoff) or failed according to its retry policy. Logs are kept.

The store is thread-safe (one connection behind a lock); it knows nothing about devices. Its files are
created private (0600 in a 0700 folder): task rows hold the submitter's environment.

**Reads come from memory.** The owning process is the only writer, so the store keeps every record in
a dict mirroring the table, updated after each committed (or held) write and never after a rolled-back
one. Listing 10,000 tasks, or a dispatch pass reading the pending ones, then costs no SQLite query and
no spec decoding; SQLite stays the durable truth that a restart reads back.

**Bounded memory per task.** The caller's environment (``base_env``, often 4 KiB) stays in the file:
the mirror's specs hold a :class:`StoredEnv` that reads it back when a job is launched. The mirror
also keeps the ids of the pending tasks that a pass plans (``pending(active_only=True)``): not every
task ever run, nor those the dispatcher put aside to wait for a time (``put_aside``; any change to one
brings it back).
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import json
import logging
import os
import shutil
import signal
import sqlite3
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from gputray.scheduler.paths import create_private_file, make_private_dir, unwritable_reason
from gputray.scheduler.protocol import Refusal
from gputray.scheduler.queue import store_repair, store_salvage
from gputray.scheduler.queue.store_rows import (
    COLUMNS,
    columns_of_schema,
    decode_rows,
    row_from_salvage,
    spec_from_json,
)
from gputray.scheduler.queue.store_salvage import Damage
from gputray.scheduler.tasks.records import (
    MAX_BACKOFF_S,
    PENDING_STATES,
    TaskRecord,
    TaskSpec,
)

log = logging.getLogger("gputray.store")

# Every job's environment names the queue file that started it (beside GPUTRAY_TASK_ID), so that
# crash recovery can find a job whose pid was never saved: the owner died just as it launched it.
QUEUE_FILE_VAR = "GPUTRAY_QUEUE_FILE"
#: ``1``: commit without syncing (``synchronous=NORMAL``). Only for ``bench/queue_scale.py``'s comparison.
NO_FSYNC_VAR = "GPUTRAY_UNSAFE_NO_FSYNC"

SCHEMA_VERSION = 3
HELD_RETRY_S = 2.0  # how often changes held for a full disk are tried again
LOW_SPACE_BYTES = 1 << 20  # with less free than this no job starts: its log and its exit need room
_SQLITE_IOERR = 10

_Records = list[TaskRecord]  # TaskStore.list shadows the builtin inside the class
SPEC_CACHE_SIZE = 256  # decoded specs kept by their text while the file is read (identical ones share)
_Statement = tuple[str, tuple[Any, ...]]


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


def _is_full(exc: BaseException, folder: Path) -> bool:
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


def _migrate_0_to_1(db: sqlite3.Connection) -> None:
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


def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    """``attempts_before``: attempts when a task was last queued again by hand (``retry``), so that
    attempts count on ("attempt 2") while its automatic retries start afresh."""
    db.execute("ALTER TABLE tasks ADD COLUMN attempts_before INTEGER NOT NULL DEFAULT 0")


def _migrate_2_to_3(db: sqlite3.Connection) -> None:
    """Cluster bookkeeping (the cluster package's): the machine a task was placed on, its id in that
    machine's queue and the last state seen there (all NULL for a task that runs here)."""
    for column in ("machine TEXT", "remote_id INTEGER", "remote_state TEXT"):
        db.execute(f"ALTER TABLE tasks ADD COLUMN {column}")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_0_to_1, _migrate_1_to_2, _migrate_2_to_3]


def _check_columns(changes: Mapping[str, Any]) -> None:
    bad = set(changes) - _UPDATABLE
    if bad:
        raise ValueError(f"cannot update {sorted(bad)}")


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
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


def _create_schema(db: sqlite3.Connection) -> None:
    """The current schema on an empty database, inside the caller's transaction."""
    for step in MIGRATIONS:
        step(db)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


class StoredEnv(Mapping[str, str]):
    """A task's caller environment, left in the queue file and read back when it is read (at launch).

    The owner holds one of these per task instead of the environment itself: 10,000 waiting tasks
    from a shell with a 4 KiB environment would otherwise hold 40 MiB of copies of it."""

    __slots__ = ("_load", "task_id")

    def __init__(self, load: Callable[[int], dict[str, str]], task_id: int) -> None:
        self._load = load
        self.task_id = task_id

    def __getitem__(self, key: str) -> str:
        return self._load(self.task_id)[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load(self.task_id))

    def __len__(self) -> int:
        return len(self._load(self.task_id))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredEnv) and other.task_id == self.task_id and other._load == self._load:
            return True
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping

    def __repr__(self) -> str:
        return f"StoredEnv(task #{self.task_id})"


class _Mirror(dict[int, TaskRecord]):
    """The table in memory (see the module docstring): every write goes through ``__setitem__`` or
    ``pop``, which keep the id sets and leave each caller environment in the file."""

    def __init__(self, light: Callable[[TaskRecord], TaskRecord]) -> None:
        super().__init__()
        self._light = light
        self.pending_ids: set[int] = set()
        self.aside: set[int] = set()  # pending tasks put aside until they change or are brought back
        self.active_ids: set[int] = set()  # pending_ids - aside

    def __setitem__(self, task_id: int, rec: TaskRecord) -> None:
        rec = self._light(rec)
        super().__setitem__(task_id, rec)
        self.aside.discard(task_id)  # changed: planned afresh
        if rec.state in PENDING_STATES:
            self.pending_ids.add(task_id)
            self.active_ids.add(task_id)
        else:
            self.pending_ids.discard(task_id)
            self.active_ids.discard(task_id)

    def pop(self, task_id: int, *default: Any) -> Any:
        self.pending_ids.discard(task_id)
        self.aside.discard(task_id)
        self.active_ids.discard(task_id)
        return super().pop(task_id, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for task_id, rec in dict(*args, **kwargs).items():
            self[task_id] = rec


# Fields of TaskRecord that map 1:1 to columns and change after submit (all but id, spec, submitted_at).
_UPDATABLE = {f.name for f in fields(TaskRecord)} - {"id", "spec", "submitted_at"}


@dataclass(frozen=True)
class Recovered:
    """A task found running after a crash, and what the retry policy made of it."""

    record: TaskRecord
    requeued: bool
    killed_orphan: bool


@dataclass
class _AddTicket:
    """One ``add_many`` call waiting for the group commit that takes it."""

    specs: builtins.list[TaskSpec]
    texts: builtins.list[str]
    now: float
    records: builtins.list[TaskRecord] | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass(frozen=True)
class SavedQueue:
    """The queue file as saved, read without an owner; ``notes`` say what could not be read as it was."""

    tasks: builtins.list[TaskRecord]
    notes: builtins.list[str] = field(default_factory=builtins.list)


class TaskStore:
    """Tasks in SQLite. Open with a path (created with its folder if missing).

    Raises StoreError with a message for a person: a read-only or unwritable data folder, a folder
    where the file should be, a database from a newer gputray. A damaged file is repaired (see the
    module docstring); ``recovery_note`` then says what was recovered.
    """

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self.durable = os.environ.get(NO_FSYNC_VAR, "") in ("", "0")
        self.recovery_note: str | None = None
        self.commits = 0  # transactions committed (one group commit counts once): for tests and benches
        self._lock = threading.RLock()
        self._spec_cache: dict[str, TaskSpec] = {}
        self._max_position: float | None = None
        self._rows: _Mirror | None = None
        self._env_cache: tuple[int, dict[str, str]] | None = None  # the last environment read back
        self._unreadable: dict[int, str] = {}  # task id -> why its saved row cannot be read
        self._held: builtins.list[_Statement] = []  # written when the disk has room again
        self._held_error = ""
        self._flusher: threading.Thread | None = None
        self._closing = threading.Event()
        self._commit_cond = threading.Condition()
        self._commit_queue: builtins.list[_AddTicket] = []
        self._committing = False
        self._prepare_files()
        self._db = self._connect()
        try:
            with self._lock:
                bad = self._load()
                self._fail_unreadable(bad)
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"cannot read the queue database {self.path}: {exc}") from None

    # -- opening --------------------------------------------------------------------------------
    def _prepare_files(self) -> None:
        """Folder, write access, damage: everything that must be settled before SQLite opens the file."""
        folder = self.path.parent
        try:
            make_private_dir(folder)
        except OSError as exc:
            raise StoreError(f"cannot create the data folder {folder}: {exc.strerror or exc}") from None
        if self.path.is_dir():
            raise StoreError(
                f"the queue database {self.path} is a folder, not a file; move it away to start a queue there"
            )
        problem = unwritable_reason(folder, self.path)
        if problem is not None:
            raise StoreError(problem)
        finished = self._finish_repair()
        if finished is not None:
            log.warning(
                "finished repairing the queue database %s; the damaged file is kept as %s",
                self.path,
                finished,
            )
        try:
            damage = store_salvage.inspect_files(self.path)
            if damage is None and self.path.exists() and self.path.stat().st_size > 0:
                damage = store_salvage.check_pages(self.path, SCHEMA_VERSION)
        except OSError as exc:
            raise StoreError(f"cannot read the queue database {self.path}: {exc.strerror or exc}") from None
        if damage is not None:
            self._repair(damage)
        if not self.path.exists():
            try:
                create_private_file(self.path)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the queue database {self.path}: {exc.strerror or exc}"
                ) from None

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=10.0)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the queue database {self.path}: {exc}") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # FULL: a commit returns once the WAL is synced: what was acknowledged survives a power cut.
            db.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
            db.execute("PRAGMA foreign_keys=ON")
            self._db = db
            self._migrate()
        except sqlite3.DatabaseError as exc:
            db.close()
            if _is_full(exc, self.path.parent):
                raise StoreError(
                    f"cannot open the queue database {self.path}: {no_space_message(self.path.parent)}"
                ) from None
            raise StoreError(
                f"the queue database {self.path} is unreadable ({exc}); move it away to start afresh"
            ) from None
        except StoreError:
            db.close()
            raise
        return db

    def _repair(self, damage: Damage) -> None:
        """Keep the damaged files beside a fresh database holding every row that could be read."""
        folder = self.path.parent
        try:
            found = store_salvage.salvage(self.path)
        except OSError as exc:
            raise StoreError(
                f"cannot read the damaged queue database {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            store_repair.build_repair(self.path, found, _create_schema)
        except (OSError, sqlite3.Error) as exc:
            why = no_space_message(folder) if _is_full(exc, folder) else str(exc)
            raise StoreError(
                f"the queue database {self.path} is damaged ({damage.what}) and cannot be repaired: {why}; "
                "nothing was changed"
            ) from None
        kept = self._finish_repair()
        note = f"the queue database {self.path} was damaged: {damage.what}. It is kept as {kept}"
        note += f"; {found.summary()}"
        if found.from_pages:
            note += f" ({found.from_pages} of them read straight from its pages)"
        self.recovery_note = note
        log.warning("%s", note)

    def _finish_repair(self) -> str | None:
        try:
            return store_repair.finish_repair(self.path)
        except OSError as exc:
            why = (
                no_space_message(self.path.parent) if _is_full(exc, self.path.parent) else exc.strerror or exc
            )
            raise StoreError(
                f"cannot put the repaired queue database in place of {self.path}: {why}; "
                "nothing was lost, the next start tries again"
            ) from None

    # -- schema ---------------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._lock:
            version = _schema_version(self._db, self.path)
            while version < SCHEMA_VERSION:
                with _transaction(self._db):
                    MIGRATIONS[version](self._db)
                    version += 1
                    self._db.execute(f"PRAGMA user_version={version}")

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def journal_mode(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA journal_mode").fetchone()[0])

    def close(self) -> None:
        """Write what a full disk held back if there is room now, then close."""
        self._closing.set()
        with self._lock:
            if self._held and not self._flush():
                log.warning(
                    "%s: %d change(s) to the queue could not be written and are lost; "
                    "the tasks they concern show as before them",
                    no_space_message(self.path.parent),
                    len(self._held),
                )
            self._db.close()

    # -- rows ↔ records -------------------------------------------------------------------------
    def _spec(self, text: Any) -> TaskSpec:
        """The spec a stored text holds, its caller environment left in the file (``StoredEnv``)."""
        spec = self._spec_cache.get(text) if isinstance(text, str) else None
        if spec is None:
            spec = spec_from_json(text)
            if spec.base_env is not None:
                spec = spec.replace(base_env=StoredEnv(self._stored_env, -1))
            if len(self._spec_cache) >= SPEC_CACHE_SIZE:
                self._spec_cache.clear()
            self._spec_cache[text] = spec
        return spec

    def _light(self, rec: TaskRecord) -> TaskRecord:
        """``rec`` as the mirror holds it: its caller environment read from the file when needed."""
        env = rec.spec.base_env
        if env is None or (isinstance(env, StoredEnv) and env.task_id == rec.id):
            return rec
        return rec.replace(spec=rec.spec.replace(base_env=StoredEnv(self._stored_env, rec.id)))

    def _stored_env(self, task_id: int) -> dict[str, str]:
        """A task's caller environment as saved (empty once the task is gone from the file)."""
        with self._lock:
            cached = self._env_cache
            if cached is not None and cached[0] == task_id:
                return cached[1]
            row = self._db.execute("SELECT spec FROM tasks WHERE id = ?", (task_id,)).fetchone()
            try:
                env = json.loads(row[0]).get("base_env") if row is not None else None
            except (ValueError, AttributeError):
                env = None
            loaded = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
            self._env_cache = (task_id, loaded)
            return loaded

    def _load(self) -> dict[int, tuple[str, Sequence[Any]]]:
        """Read the mirror; the rows that cannot be read as records, with why. Callers hold the lock."""
        rows = self._db.execute(f"SELECT {COLUMNS} FROM tasks ORDER BY id").fetchall()
        records, bad = decode_rows(rows, self._spec)
        del rows
        self._spec_cache.clear()
        self._rows = _Mirror(self._light)
        self._rows.update(records)
        self._unreadable = {task_id: problem for task_id, (problem, _row) in bad.items()}
        self._max_position = max((r.position for r in self._rows.values()), default=0.0)
        return bad

    def _mirror(self) -> _Mirror:
        """Every task by id (in id order); callers hold ``self._lock``."""
        if self._rows is None:
            self._load()
        assert self._rows is not None
        return self._rows

    def _fail_unreadable(self, bad: dict[int, tuple[str, Sequence[Any]]]) -> None:
        """Rows that cannot be read end ``failed`` with the reason (the rest of the row stays as saved)."""
        if not bad:
            return
        now = self.clock()
        statements: builtins.list[_Statement] = []
        mirror = self._mirror()
        for task_id, (_problem, row) in bad.items():
            rec = mirror[task_id]
            log.warning("task #%d: %s", task_id, rec.reason)
            pid, create_time = row[12], row[13]
            if row[2] == "running" and type(pid) is int and isinstance(create_time, float):
                _kill_orphan(pid, create_time)
            if row[2] != "failed" or row[5] != rec.reason:
                ended = rec.ended_at if rec.ended_at is not None else now
                statements.append(
                    (
                        "UPDATE tasks SET state = 'failed', reason = ?, ended_at = ? WHERE id = ?",
                        (rec.reason, ended, task_id),
                    )
                )
                mirror[task_id] = rec.replace(ended_at=ended)
        self._write(statements)

    def _changed(self, task_id: int, **changes: Any) -> TaskRecord:
        """The mirror entry after a committed (or held) write of ``changes`` (the owner is the only
        writer, so the row now holds exactly that: no read back); callers hold ``self._lock``."""
        rec = self._mirror()[task_id].replace(**changes)
        self._mirror()[task_id] = rec
        return rec

    def _refuse_unreadable(self, task_id: int, changes: dict[str, Any]) -> None:
        if task_id in self._unreadable and changes.get("state", "failed") not in ("failed", "cancelled"):
            raise UnreadableTask(
                f"task #{task_id} cannot run again: its saved record cannot be read "
                f"({self._unreadable[task_id]}); submit it anew"
            )

    # -- writing --------------------------------------------------------------------------------
    def _run(self, statements: Sequence[_Statement], *, sync: bool = True) -> None:
        """One transaction (callers hold the lock); on error rolled back and re-raised. ``sync=False``
        commits without waiting for the disk: the next synced commit makes it durable too (a WAL is
        synced as a whole, in order)."""
        db = self._db
        unsynced = self.durable and not sync
        if unsynced:
            db.execute("PRAGMA synchronous=NORMAL")
        try:
            with _transaction(db):
                for sql, params in statements:
                    db.execute(sql, tuple(column_text(p) if isinstance(p, str) else p for p in params))
        finally:
            if unsynced:
                db.execute("PRAGMA synchronous=FULL")
        self.commits += 1

    def _write(self, statements: Sequence[_Statement], *, sync: bool = True) -> bool:
        """Commit ``statements`` in one transaction; True when they are written now. On a full disk they
        are held (False): kept in order and written by a retry thread once there is room. Callers hold
        the lock and update the mirror either way."""
        if not statements:
            return True
        if self._held:
            self._held.extend(statements)
            return self._flush()
        try:
            self._run(statements, sync=sync)
            return True
        except sqlite3.Error as exc:
            if not _is_full(exc, self.path.parent):
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

    def _flush(self) -> bool:
        """Write the held changes (callers hold the lock); True when none are left."""
        try:
            self._run(self._held)
        except sqlite3.Error as exc:
            if not _is_full(exc, self.path.parent) and str(exc) != self._held_error:
                log.error("cannot write %d held change(s) to the queue: %s", len(self._held), exc)
            self._held_error = str(exc)
            return False
        log.warning(
            "the disk has room again: wrote the %d change(s) to the queue kept while it was full",
            len(self._held),
        )
        self._held.clear()
        self._held_error = ""
        return True

    def _flush_loop(self) -> None:
        while not self._closing.wait(HELD_RETRY_S):
            with self._lock:
                if not self._held or self._flush():
                    self._flusher = None
                    return
        with self._lock:
            self._flusher = None

    def space_problem(self) -> str | None:
        """ "no space left: 0 KiB free in …" while changes wait for disk space or the disk is (nearly)
        full, else None. The queue starts no job meanwhile (its log and its exit need room)."""
        with self._lock:
            held = bool(self._held)
        free = free_bytes(self.path.parent)
        if held or (free is not None and free < LOW_SPACE_BYTES):
            return no_space_message(self.path.parent)
        return None

    # -- API ------------------------------------------------------------------------------------
    def add(self, spec: TaskSpec, *, now: float | None = None) -> TaskRecord:
        return self.add_many([spec], now=now)[0]

    def add_many(self, specs: Iterable[TaskSpec], *, now: float | None = None) -> list[TaskRecord]:
        """Insert tasks as ``queued`` at the end of the queue, all in one transaction, on disk when this
        returns. Calls from several threads at once share one commit (group commit). Raises StoreFull
        when the disk has no room (nothing is queued then)."""
        now = self.clock() if now is None else now
        batch_specs = builtins.list(specs)
        if not batch_specs:
            return []
        texts = [_spec_text(s.to_dict()) for s in batch_specs]
        ticket = _AddTicket(batch_specs, texts, now)
        with self._commit_cond:
            self._commit_queue.append(ticket)
            while self._committing and not ticket.done:
                self._commit_cond.wait()
            leader = not ticket.done
            if leader:
                self._committing = True
        if leader:  # commit every add queued by now, this one among them
            batch: builtins.list[_AddTicket] = []
            try:
                with self._lock:
                    with self._commit_cond:
                        batch, self._commit_queue = self._commit_queue, []
                    self._commit_adds(batch)
            finally:
                with self._commit_cond:
                    for t in (*batch, ticket):
                        if t.records is None and t.error is None:
                            t.error = StoreError(f"the write to {self.path} was interrupted")
                        t.done = True
                    self._committing = False
                    self._commit_cond.notify_all()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.records is not None
        return ticket.records

    def _commit_adds(self, batch: Sequence[_AddTicket]) -> None:
        """One transaction for every ticket in ``batch``; sets each ticket's records or error."""
        folder = self.path.parent
        if self._held and not self._flush():
            for t in batch:
                t.error = StoreFull(f"{no_space_message(folder)}: nothing was queued")
            return
        top = self._top_position()
        added: builtins.list[builtins.list[TaskRecord]] = []
        db = self._db
        try:
            with _transaction(db):
                for t in batch:
                    # One savepoint per call: a record that cannot be saved fails its own call only.
                    db.execute("SAVEPOINT one_add")
                    try:
                        records = self._insert_rows(t, top)
                    except _RECORD_ERRORS as exc:
                        db.execute("ROLLBACK TO one_add")
                        db.execute("RELEASE one_add")
                        if isinstance(exc, sqlite3.Error) and _is_full(exc, folder):
                            raise
                        t.error = StoreError(f"cannot save {_what(t.specs)} to the queue database: {exc}")
                        added.append([])
                        continue
                    db.execute("RELEASE one_add")
                    top += len(records)
                    added.append(records)
        except sqlite3.Error as exc:
            full = _is_full(exc, folder)
            for t in batch:
                t.error = (
                    StoreFull(f"{no_space_message(folder)}: nothing was queued")
                    if full
                    else StoreError(f"cannot save to the queue database {self.path}: {exc}")
                )
            return
        self.commits += 1
        self._max_position = top
        mirror = self._mirror()  # committed: now the mirror
        for t, records in zip(batch, added, strict=True):
            if t.error is not None:
                continue
            for rec in records:
                mirror[rec.id] = rec
            t.records = records

    def _insert_rows(self, ticket: _AddTicket, top: float) -> builtins.list[TaskRecord]:
        """Insert one ``add_many`` call's rows after position ``top``; the records as inserted (the other
        columns take their defaults, as in TaskRecord)."""
        records = []
        for spec, text in zip(ticket.specs, ticket.texts, strict=True):
            top += 1
            cur = self._db.execute(
                "INSERT INTO tasks (spec, name, kind, state, priority, submitted_at, position,"
                " queued_at) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)",
                (text, column_text(spec.name), spec.kind, spec.priority, ticket.now, top, ticket.now),
            )
            records.append(
                TaskRecord(
                    id=cast(int, cur.lastrowid),
                    spec=spec,
                    state="queued",
                    submitted_at=ticket.now,
                    position=top,
                    queued_at=ticket.now,
                )
            )
        return records

    def get(self, task_id: int) -> TaskRecord:
        with self._lock:
            rec = self._mirror().get(task_id)
        if rec is None:
            raise TaskNotFound(task_id)
        return rec

    def list(self, *, include_finished: bool = True, states: Iterable[str] | None = None) -> list[TaskRecord]:
        """Tasks in queue order: pending ones by priority then position, then running, then the rest by id."""
        with self._lock:
            records = builtins.list(self._mirror().values())
        if states is not None:
            wanted = frozenset(states)
            records = [r for r in records if r.state in wanted]
        elif not include_finished:
            records = [r for r in records if r.state in _UNFINISHED]
        return sorted(records, key=_display_order)

    def view(self) -> Mapping[int, TaskRecord]:
        """Every task by id, read-only and live (no copy): for lookups, not for iterating while the
        owner writes."""
        with self._lock:
            return MappingProxyType(self._mirror())

    def pending(self, *, active_only: bool = False) -> _Records:
        """Queued and waiting tasks in dispatch order (priority high first, then position);
        ``active_only``: without those put aside (``put_aside``). Costs what it returns."""
        with self._lock:
            mirror = self._mirror()
            records = [mirror[i] for i in (mirror.active_ids if active_only else mirror.pending_ids)]
        return sorted(records, key=_display_order)

    def put_aside(self, records: Iterable[TaskRecord]) -> None:
        """Leave these pending tasks out of ``pending(active_only=True)`` (the dispatcher: they wait for
        a time) until any change to one, or ``bring_back``. One that changed since it was read (its
        spec, its retry time, its state) is not put aside."""
        with self._lock:
            mirror = self._mirror()
            for rec in records:
                now = mirror.get(rec.id)
                if (
                    now is not None
                    and now.state in PENDING_STATES
                    and now.spec is rec.spec
                    and now.not_before == rec.not_before
                ):
                    mirror.aside.add(rec.id)
                    mirror.active_ids.discard(rec.id)

    def bring_back(self, task_ids: Iterable[int] | None = None) -> None:
        """Undo ``put_aside`` for these tasks (None: every one)."""
        with self._lock:
            mirror = self._mirror()
            ids = builtins.list(mirror.aside) if task_ids is None else task_ids
            for task_id in ids:
                if task_id in mirror.aside:
                    mirror.aside.discard(task_id)
                    mirror.active_ids.add(task_id)

    def running(self) -> _Records:
        return self.list(states=("running",))

    def update(self, task_id: int, **changes: Any) -> TaskRecord:
        """Change columns of one task in one transaction; returns the new record."""
        new = self._update(task_id, None, changes)
        assert new is not None  # no state expected: never a race lost
        return new

    def compare_and_update(self, task_id: int, expect_state: str, **changes: Any) -> TaskRecord | None:
        """Update only if the task is still in ``expect_state``; None when it was not (a race lost)."""
        return self._update(task_id, expect_state, changes)

    def _update(self, task_id: int, expect_state: str | None, changes: dict[str, Any]) -> TaskRecord | None:
        _check_columns(changes)
        with self._lock:
            rec = self._mirror().get(task_id)
            if rec is None:
                raise TaskNotFound(task_id)
            # The mirror is the table (one writer), held changes included.
            if expect_state is not None and rec.state != expect_state:
                return None
            self._refuse_unreadable(task_id, changes)
            if changes:
                cols = ", ".join(f"{k} = ?" for k in changes)
                sql, params = f"UPDATE tasks SET {cols} WHERE id = ?", (*changes.values(), task_id)
                if expect_state is not None:
                    sql, params = f"{sql} AND state = ?", (*params, expect_state)
                self._write([(sql, params)])
            return self._changed(task_id, **changes)

    def update_many(
        self,
        changes: Iterable[tuple[int, dict[str, Any]]],
        *,
        only_states: Iterable[str] | None = None,
        sync: bool = True,
    ) -> None:
        """Several updates in one transaction (a dispatch pass writes its reasons this way).

        With ``only_states``, a row is changed only while its state is one of them. ``sync=False`` for
        what nobody was promised (why a task waits: the next pass says it again): it does not wait for
        the disk, so it never holds up the submits' commits, and the next synced commit covers it.
        """
        guard = ""
        extra: tuple[str, ...] = ()
        if only_states is not None:
            extra = tuple(only_states)
            guard = f" AND state IN ({','.join('?' * len(extra))})"
        changes = builtins.list(changes)
        for _task_id, cols in changes:
            _check_columns(cols)
        with self._lock:
            mirror = self._mirror()
            after: dict[int, TaskRecord] = {}  # the mirror as these changes leave it, applied once written
            statements: builtins.list[_Statement] = []
            for task_id, cols in changes:
                rec = after.get(task_id) or mirror.get(task_id)
                if rec is None or not cols or (only_states is not None and rec.state not in extra):
                    continue
                self._refuse_unreadable(task_id, cols)
                sets = ", ".join(f"{k} = ?" for k in cols)
                statements.append(
                    (f"UPDATE tasks SET {sets} WHERE id = ?{guard}", (*cols.values(), task_id, *extra))
                )
                after[task_id] = rec.replace(**cols)
            self._write(statements, sync=sync)
            mirror.update(after)

    def _top_position(self) -> float:
        # Kept in memory: a MAX() over an unindexed column per insert made 10,000 submits quadratic.
        if self._max_position is None:
            self._max_position = max((r.position for r in self._mirror().values()), default=0.0)
        return self._max_position

    def next_position(self) -> float:
        """A position after every task (the end of the queue)."""
        with self._lock:
            top = self._top_position() + 1
            self._max_position = top
            return top

    def set_priority_position(self, task_id: int, priority: int, position: float) -> TaskRecord:
        with self._lock:
            if task_id not in self._mirror():
                raise TaskNotFound(task_id)
            self._refuse_unreadable(task_id, {"state": "queued"})
            text = _spec_text({**self._stored_spec(task_id), "priority": priority})
            sql = "UPDATE tasks SET spec = ?, priority = ?, position = ? WHERE id = ?"
            self._write([(sql, (text, priority, position, task_id))])
            self._max_position = max(self._top_position(), position)
            return self._changed(task_id, spec=self._spec(text), position=position)

    def replace_spec(self, task_id: int, spec: TaskSpec, *, only_states: Iterable[str]) -> TaskRecord | None:
        """Write an edited spec (and its name and priority columns) while the task is in one of
        ``only_states``; None when it no longer is (it started meanwhile). Keys of another gputray
        version survive."""
        wanted = tuple(only_states)
        with self._lock:
            rec = self._mirror().get(task_id)
            if rec is None:
                raise TaskNotFound(task_id)
            if rec.state not in wanted:  # the mirror is the table (one writer), held changes included
                return None
            text = _spec_text({**self._stored_spec(task_id), **spec.to_dict()})
            marks = ",".join("?" * len(wanted))
            sql = f"UPDATE tasks SET spec = ?, name = ?, priority = ? WHERE id = ? AND state IN ({marks})"
            self._write([(sql, (text, spec.name, spec.priority, task_id, *wanted))])
            return self._changed(task_id, spec=spec)

    def _stored_spec(self, task_id: int) -> dict[str, Any]:
        """The stored text, not the mirror's spec: keys from another gputray version survive."""
        row = self._db.execute("SELECT spec FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise TaskNotFound(task_id)
        return cast(dict[str, Any], json.loads(row[0]))

    def delete(self, task_ids: Iterable[int]) -> builtins.list[TaskRecord]:
        """Remove tasks (their rows only; the caller deletes logs) in one transaction; returns them."""
        with self._lock:
            gone = [self.get(task_id) for task_id in dict.fromkeys(task_ids)]
            self._write([("DELETE FROM tasks WHERE id = ?", (r.id,)) for r in gone])
            for rec in gone:
                self._mirror().pop(rec.id, None)
                self._unreadable.pop(rec.id, None)
        return gone

    def counts(self) -> dict[str, int]:
        """Tasks per state, states in name order (as SQL's GROUP BY gave them)."""
        with self._lock:
            tally = Counter(r.state for r in self._mirror().values())
        return dict(sorted(tally.items()))

    # -- crash recovery --------------------------------------------------------------------------
    def recover_after_crash(
        self, *, kill_orphans: bool = True, skip: Collection[int] = ()
    ) -> builtins.list[Recovered]:
        """Tasks left ``running`` → ``interrupted`` → requeued (with backoff) or failed by policy.

        Call once, from the owner, before dispatching. An orphaned job process still alive from the
        crashed owner (same pid *and* same start time) is killed with its children and process group
        first, so the task never runs twice at once; one whose pid was never saved is found by its
        environment (``GPUTRAY_TASK_ID`` and ``QUEUE_FILE_VAR``). Tasks in ``skip`` (the jobs the queue
        adopted from their supervisors) are left as they are.
        """
        now = self.clock()
        with self._lock:
            # A task another machine runs (remote_id set) lives in that machine's queue: it went on
            # while we were down, and the cluster bridge fetches how it ended.
            stale = [
                r
                for r in self.list(states=("running", "interrupted"))
                if r.id not in skip and r.remote_id is None
            ]
            if not stale:
                return []
            why = "interrupted: gputray stopped while it ran"
            self.update_many(
                [(r.id, {"state": "interrupted", "ended_at": now, "reason": why}) for r in stale],
                only_states=("running",),
            )
        out = []
        for rec in stale:
            if rec.state == "running" and rec.pid is None:
                killed = kill_orphans and _kill_unrecorded_job(rec.id, str(self.path))
            else:
                killed = kill_orphans and _kill_orphan(rec.pid, rec.pid_create_time)
            why = "gputray stopped while it ran" + (" (its leftover process was stopped)" if killed else "")
            new = self.apply_retry_policy(rec.id, f"interrupted: {why}", now=now)
            out.append(Recovered(new, new.state == "queued", killed))
        return out

    def apply_retry_policy(
        self, task_id: int, why: str, *, now: float | None = None, **also: Any
    ) -> TaskRecord:
        """After a failure or interruption: requeue with backoff while retries remain, else fail.

        One update, so nobody ever sees a passing ``failed`` for a task that will retry; ``also`` are
        further columns written with it (exit code, end time …).
        """
        now = self.clock() if now is None else now
        with self._lock:
            rec = self.get(task_id)
            retries_used = max(0, rec.attempts - rec.attempts_before - 1)
            if retries_used < rec.spec.retries and task_id not in self._unreadable:
                delay = min(MAX_BACKOFF_S, rec.spec.backoff_s * 2.0 ** min(retries_used, 60))
                left = rec.spec.retries - retries_used
                reason = (
                    f"{why}; retry {retries_used + 1} of {rec.spec.retries} in {delay:.0f} s"
                    if delay >= 1
                    else f"{why}; retrying ({left} left)"
                )
                cols: dict[str, Any] = {
                    **also,
                    "state": "queued",
                    "reason": reason,
                    "not_before": now + delay,
                    "queued_at": now,
                    "pid": None,
                    "pid_create_time": None,
                    "overtakes": 0,
                }
                return self.update(task_id, **cols)
            suffix = "; no retries left" if rec.spec.retries else ""
            ended = also.pop("ended_at", None) or rec.ended_at or now
            return self.update(
                task_id, **{**also, "state": "failed", "reason": f"{why}{suffix}", "ended_at": ended}
            )


# --------------------------------------------------------------------------------------------------
# Reading the saved queue without an owner


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
        notes.append(f"task #{task_id}: {records[task_id].reason}")
    if len(bad) > 10:
        notes.append(f"{len(bad) - 10} more task(s) whose saved record cannot be read")
    tasks = builtins.list(records.values())
    if not include_finished:
        tasks = [r for r in tasks if r.state in _UNFINISHED]
    return SavedQueue(sorted(tasks, key=_display_order), notes)


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
        version = _schema_version(db, path)
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


def _schema_version(db: sqlite3.Connection, path: Path) -> int:
    """The file's schema version; StoreError for one written by a newer gputray."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the queue database {path} was written by a newer gputray "
            f"(schema {version}, this one knows up to {SCHEMA_VERSION}); upgrade gputray"
        )
    return version


_UNFINISHED = frozenset({"queued", "waiting", "running", "interrupted"})
_STATE_RANK = {"running": 0, "queued": 1, "waiting": 1, "interrupted": 1}


def _display_order(rec: TaskRecord) -> tuple[int, int, float, int]:
    rank = _STATE_RANK.get(rec.state, 2)
    if rank == 1:
        return (1, -rec.spec.priority, rec.position, rec.id)
    return (rank, 0, 0.0, rec.id)


# A record SQLite cannot take (a number past 64 bits, text too big): its own add fails, not the batch.
_RECORD_ERRORS = (ValueError, OverflowError, sqlite3.DataError, sqlite3.IntegrityError)


def _what(specs: Sequence[TaskSpec]) -> str:
    return f"'{specs[0].name}'" if len(specs) == 1 else f"{len(specs)} tasks"


def column_text(text: str) -> str:
    """``text`` as a column can hold it (SQLite stores UTF-8): as it is, or, where it holds surrogate
    escapes (the bytes of a file name that are not UTF-8), with those bytes written ``\\xe9``, as the
    console shows them. The spec column keeps the exact text (``_spec_text``); this is for the columns
    a person reads (the name, a reason)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte makes (text from elsewhere than the OS)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _spec_text(data: dict[str, Any]) -> str:
    """A spec as stored: UTF-8 JSON; escaped (``\\udcxx``) where it holds bytes that are not UTF-8
    (an argv or environment value in another encoding), which SQLite could not store otherwise and
    ``json.loads`` turns back into the same str."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text


# --------------------------------------------------------------------------------------------------
# Files


def _kill_orphan(pid: int | None, create_time: float | None) -> bool:
    """Kill a leftover job process tree, but only if pid and start time both match (no pid reuse)."""
    if pid is None or create_time is None:
        return False
    import psutil

    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) > 0.5 or proc.status() == psutil.STATUS_ZOMBIE:
            return False  # another process now, or one already dead: nothing was stopped
        procs = [*proc.children(recursive=True), proc]
        # A job that ended by itself may linger as a zombie until it is reaped: nothing left to stop.
        alive = [p for p in procs if p.status() != psutil.STATUS_ZOMBIE]
    except (psutil.Error, OSError):
        return False
    if sys.platform != "win32":  # the job leads its own process group: helpers it left there go too
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
    _kill_all(alive)
    return bool(alive)


def _kill_unrecorded_job(task_id: int, queue_file: str) -> bool:
    """Kill the processes of a job whose pid was never saved, found by the task id and queue file
    gputray put in its environment (processes whose environment we may not read are skipped)."""
    import psutil

    wanted = {"GPUTRAY_TASK_ID": str(task_id), QUEUE_FILE_VAR: queue_file}
    found = []
    for proc in psutil.process_iter(["environ"]):
        environ = proc.info.get("environ") or {}
        if proc.pid != os.getpid() and all(environ.get(k) == v for k, v in wanted.items()):
            with contextlib.suppress(psutil.Error, OSError):
                if proc.status() != psutil.STATUS_ZOMBIE:  # a zombie is dead: nothing to stop
                    found.append(proc)
    _kill_all(found)
    return bool(found)


def _kill_all(procs: builtins.list[Any]) -> None:
    import psutil

    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            p.kill()
    psutil.wait_procs(procs, timeout=3)
