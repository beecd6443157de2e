"""The durable queue: one SQLite file (WAL) in the data folder, ``app_paths().queue_db``.

Every change is one transaction, so a crash or power cut at any moment leaves either the old or the
new state. The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS[n]`` upgrades n → n+1.
A database written by a newer gputray is refused with a clear message instead of being damaged.

Only the process that owns the queue (tray app or ``gputray daemon``) opens the store for writing and
calls :meth:`TaskStore.recover_after_crash` once at start: tasks left ``running`` by a crash become
``interrupted``, their orphaned processes (if still alive, checked by pid *and* start time) are
killed, and each is requeued (with backoff) or failed according to its retry policy. Logs are kept.

The store is thread-safe (one connection behind a lock); it knows nothing about devices.

**Reads come from memory.** The owning process is the only writer, so the store keeps every record in
a dict mirroring the table, updated after each committed write (and never after a rolled-back one).
Listing 10,000 tasks, or a dispatch pass reading the pending ones, then costs no SQLite query and no
spec decoding; SQLite stays the durable truth that a restart reads back.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import signal
import sqlite3
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from gputray.scheduler.tasks import MAX_BACKOFF_S, PENDING_STATES, TaskRecord, TaskSpec, TaskState

# Every job's environment names the queue file that started it (beside GPUTRAY_TASK_ID), so that
# crash recovery can find a job whose pid was never saved: the owner died just as it launched it.
QUEUE_FILE_VAR = "GPUTRAY_QUEUE_FILE"

SCHEMA_VERSION = 2

_Records = list[TaskRecord]  # TaskStore.list shadows the builtin inside the class


class StoreError(Exception):
    """The queue database cannot be used (corrupt, newer schema, unreadable); the message says which file."""


class TaskNotFound(KeyError):
    """No task with that id. ``str()`` gives a readable message (unlike a bare KeyError)."""

    def __init__(self, task_id: int) -> None:
        super().__init__(task_id)
        self.task_id = task_id

    def __str__(self) -> str:
        return f"no task #{self.task_id} in the queue"


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
    """Cluster bookkeeping (gputray.cluster): where a task was placed and its id there."""
    for column in ("machine TEXT", "remote_id INTEGER", "remote_state TEXT"):
        db.execute(f"ALTER TABLE tasks ADD COLUMN {column}")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_0_to_1, _migrate_1_to_2]

_COLUMNS_V1 = (
    "id, spec, state, device, env, reason, exit_code, attempts, submitted_at, started_at, ended_at, "
    "log_path, pid, pid_create_time, position, queued_at, not_before, overtakes"
)
_COLUMNS = _COLUMNS_V1 + ", machine, remote_id, remote_state"
# Fields of TaskRecord that map 1:1 to columns (everything but id and spec).
_UPDATABLE = {
    "state",
    "device",
    "env",
    "reason",
    "exit_code",
    "attempts",
    "started_at",
    "ended_at",
    "log_path",
    "pid",
    "pid_create_time",
    "position",
    "queued_at",
    "not_before",
    "overtakes",
    "machine",
    "remote_id",
    "remote_state",
}


@dataclass(frozen=True)
class Recovered:
    """A task found running after a crash, and what the retry policy made of it."""

    record: TaskRecord
    requeued: bool
    killed_orphan: bool


class TaskStore:
    """Tasks in SQLite. Open with a path (created with its folder if missing)."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self._lock = threading.RLock()
        self._spec_cache: dict[str, TaskSpec] = {}
        self._max_position: float | None = None
        self._rows: dict[int, TaskRecord] | None = None  # the mirror, loaded on first read
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=10.0
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the queue database {self.path}: {exc}") from exc
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across app crashes
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(
                f"the queue database {self.path} is unreadable ({exc}); move it away to start afresh"
            ) from None
        except StoreError:
            self._db.close()
            raise

    # -- schema ---------------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._lock:
            version = _schema_version(self._db, self.path)
            while version < SCHEMA_VERSION:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    MIGRATIONS[version](self._db)
                    version += 1
                    self._db.execute(f"PRAGMA user_version={version}")
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def journal_mode(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA journal_mode").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- rows ↔ records -------------------------------------------------------------------------
    def _spec(self, text: str) -> TaskSpec:
        spec = self._spec_cache.get(text)
        if spec is None:
            spec = _spec_from_json(text)
            if len(self._spec_cache) > 50_000:
                self._spec_cache.clear()
            self._spec_cache[text] = spec
        return spec

    def _transaction(self) -> _Tx:
        return _Tx(self._db, self._lock)

    def _mirror(self) -> dict[int, TaskRecord]:
        """Every task by id (in id order), loaded once; callers hold ``self._lock``."""
        if self._rows is None:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM tasks ORDER BY id").fetchall()
            self._rows = {row[0]: _record_from_row(row, self._spec) for row in rows}
        return self._rows

    def _changed(self, task_id: int, **changes: Any) -> TaskRecord:
        """The mirror entry after a committed write of ``changes`` (the owner is the only writer, so
        the row now holds exactly that: no read back); callers hold ``self._lock``."""
        rec = self._mirror()[task_id].replace(**changes)
        self._mirror()[task_id] = rec
        return rec

    # -- API ------------------------------------------------------------------------------------
    def add(self, spec: TaskSpec, *, now: float | None = None) -> TaskRecord:
        return self.add_many([spec], now=now)[0]

    def add_many(self, specs: Iterable[TaskSpec], *, now: float | None = None) -> list[TaskRecord]:
        """Insert tasks as ``queued`` at the end of the queue, all in one transaction."""
        now = self.clock() if now is None else now
        added: list[TaskRecord] = []
        with self._lock:
            with self._transaction() as db:
                top = self._top_position(db)
                for i, spec in enumerate(specs, start=1):
                    text = json.dumps(spec.to_dict(), ensure_ascii=False, separators=(",", ":"))
                    self._spec_cache[text] = spec
                    cur = db.execute(
                        "INSERT INTO tasks (spec, name, kind, state, priority, submitted_at, position,"
                        " queued_at) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)",
                        (text, spec.name, spec.kind, spec.priority, now, top + i, now),
                    )
                    # The row as inserted (the other columns take their defaults, as in TaskRecord).
                    added.append(
                        TaskRecord(
                            id=cast(int, cur.lastrowid),
                            spec=spec,
                            state="queued",
                            submitted_at=now,
                            position=top + i,
                            queued_at=now,
                        )
                    )
                    self._max_position = top + i
            if self._rows is not None:  # committed: now the mirror
                self._rows.update((rec.id, rec) for rec in added)
        return added

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

    def pending(self) -> _Records:
        """Queued and waiting tasks in dispatch order (priority high first, then position)."""
        return self.list(states=PENDING_STATES)

    def running(self) -> _Records:
        return self.list(states=("running",))

    def update(self, task_id: int, **changes: Any) -> TaskRecord:
        """Change columns of one task in one transaction; returns the new record."""
        bad = set(changes) - _UPDATABLE
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        with self._lock:
            if task_id not in self._mirror():
                raise TaskNotFound(task_id)
            if changes:
                cols = ", ".join(f"{k} = ?" for k in changes)
                with self._transaction() as db:  # the mirror above already knows the row exists
                    db.execute(f"UPDATE tasks SET {cols} WHERE id = ?", (*changes.values(), task_id))
            return self._changed(task_id, **changes)

    def update_many(
        self, changes: Iterable[tuple[int, dict[str, Any]]], *, only_states: Iterable[str] | None = None
    ) -> None:
        """Several updates in one transaction (a dispatch pass writes its reasons this way).

        With ``only_states``, a row is changed only while its state is one of them.
        """
        guard = ""
        extra: tuple[str, ...] = ()
        if only_states is not None:
            wanted = tuple(only_states)
            guard = f" AND state IN ({','.join('?' * len(wanted))})"
            extra = wanted
        changes = builtins.list(changes)
        with self._lock:
            with self._transaction() as db:
                for task_id, cols in changes:
                    bad = set(cols) - _UPDATABLE
                    if bad:
                        raise ValueError(f"cannot update {sorted(bad)}")
                    if cols:
                        sets = ", ".join(f"{k} = ?" for k in cols)
                        db.execute(
                            f"UPDATE tasks SET {sets} WHERE id = ?{guard}", (*cols.values(), task_id, *extra)
                        )
            # Committed, and the lock still ours: the same changes, with the same guard, in the mirror.
            if self._rows is not None:
                for task_id, cols in changes:
                    rec = self._rows.get(task_id)
                    if rec is not None and cols and (only_states is None or rec.state in extra):
                        self._rows[task_id] = rec.replace(**cols)

    def _top_position(self, db: sqlite3.Connection) -> float:
        # Cached: a MAX() over an unindexed column per insert made 10,000 submits quadratic.
        if self._max_position is None:
            self._max_position = float(
                db.execute("SELECT COALESCE(MAX(position), 0) FROM tasks").fetchone()[0]
            )
        return self._max_position

    def next_position(self) -> float:
        """A position after every task (the end of the queue)."""
        with self._lock:
            top = self._top_position(self._db) + 1
            self._max_position = top
            return top

    def compare_and_update(self, task_id: int, expect_state: str, **changes: Any) -> TaskRecord | None:
        """Update only if the task is still in ``expect_state``; None when it was not (a race lost)."""
        bad = set(changes) - _UPDATABLE
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        cols = ", ".join(f"{k} = ?" for k in changes)
        with self._lock:
            if task_id not in self._mirror():
                raise TaskNotFound(task_id)
            with self._transaction() as db:
                cur = db.execute(
                    f"UPDATE tasks SET {cols} WHERE id = ? AND state = ?",
                    (*changes.values(), task_id, expect_state),
                )
            if cur.rowcount == 0:
                return None
            return self._changed(task_id, **changes)

    def set_priority_position(self, task_id: int, priority: int, position: float) -> TaskRecord:
        with self._transaction() as db:
            # The stored text, not the mirror's spec: keys from another gputray version survive.
            row = db.execute("SELECT spec FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if row is None:
                raise TaskNotFound(task_id)
            data = json.loads(row[0])
            data["priority"] = priority
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            db.execute(
                "UPDATE tasks SET spec = ?, priority = ?, position = ? WHERE id = ?",
                (text, priority, position, task_id),
            )
            self._max_position = max(self._top_position(db), position)
        with self._lock:
            return self._changed(task_id, spec=self._spec(text), position=position)

    def counts(self) -> dict[str, int]:
        """Tasks per state, states in name order (as SQL's GROUP BY gave them)."""
        with self._lock:
            tally = Counter(r.state for r in self._mirror().values())
        return dict(sorted(tally.items()))

    # -- crash recovery --------------------------------------------------------------------------
    def recover_after_crash(self, *, kill_orphans: bool = True) -> builtins.list[Recovered]:
        """Tasks left ``running`` → ``interrupted`` → requeued (with backoff) or failed by policy.

        Call once, from the owner, before dispatching. An orphaned job process still alive from the
        crashed owner (same pid *and* same start time) is killed with its children and process group
        first, so the task never runs twice at once; one whose pid was never saved is found by its
        environment (``GPUTRAY_TASK_ID`` and ``QUEUE_FILE_VAR``).
        """
        now = self.clock()
        with self._lock:
            # A task another machine runs (remote_id set) lives in that machine's queue: it went on
            # while we were down, and the cluster bridge fetches how it ended.
            stale = [r for r in self.list(states=("running", "interrupted")) if r.remote_id is None]
            if not stale:
                return []
            with self._transaction() as db:
                db.execute(
                    "UPDATE tasks SET state = 'interrupted', ended_at = ?, "
                    "reason = 'interrupted: gputray stopped while it ran' "
                    "WHERE state = 'running' AND remote_id IS NULL",
                    (now,),
                )
            self._rows = None  # a bulk change: read the mirror back
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
            retries_used = max(0, rec.attempts - 1)
            if retries_used < rec.spec.retries:
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


def read_saved_tasks(path: Path, *, include_finished: bool = True) -> builtins.list[TaskRecord]:
    """The tasks as saved in the queue file, for the CLI when no owner runs, in ``TaskStore.list`` order.

    Strictly read-only: SQLite opens the file with ``mode=ro`` (a WAL left by a crashed owner is read,
    never checkpointed), nothing is migrated, recovered or created. A missing or never-initialised
    file is an empty queue; a task left ``running`` by a crash shows as saved until an owner starts.
    Raises StoreError for a file that cannot be read or was written by a newer gputray.
    """
    rows = _read_only_rows(Path(path), "")
    records = [_record_from_row(row, _spec_from_json) for row in rows]
    if not include_finished:
        records = [r for r in records if r.state in _UNFINISHED]
    return sorted(records, key=_display_order)


def read_saved_task(path: Path, task_id: int) -> TaskRecord:
    """One task of the saved queue file, read-only as :func:`read_saved_tasks`; TaskNotFound if absent."""
    rows = _read_only_rows(Path(path), " WHERE id = ?", (task_id,))
    if not rows:
        raise TaskNotFound(task_id)
    return _record_from_row(rows[0], _spec_from_json)


def _read_only_rows(path: Path, where: str, params: tuple[Any, ...] = ()) -> builtins.list[Any]:
    path = path.absolute()
    if not path.exists():
        return []
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=10.0)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the queue database {path}: {exc}") from None
    try:
        version = _schema_version(db, path)
        if version == 0:  # created but never initialised: no table yet, nothing queued
            return []
        # A file an older gputray wrote (and no owner migrated yet) lacks the newer columns: NULLs.
        columns = _COLUMNS if version >= 2 else _COLUMNS_V1 + ", NULL, NULL, NULL"
        return db.execute(f"SELECT {columns} FROM tasks{where} ORDER BY id", params).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the queue database {path}: {exc}") from None
    finally:
        db.close()


def _record_from_row(row: Sequence[Any], spec_of: Callable[[str], TaskSpec]) -> TaskRecord:
    """A ``SELECT {_COLUMNS}`` row as a record; ``spec_of`` decodes the spec (the store passes its cache)."""
    return TaskRecord(
        id=row[0],
        spec=spec_of(row[1]),
        state=cast(TaskState, row[2]),
        device=row[3],
        env=row[4],
        reason=row[5],
        exit_code=row[6],
        attempts=row[7],
        submitted_at=row[8],
        started_at=row[9],
        ended_at=row[10],
        log_path=row[11],
        pid=row[12],
        pid_create_time=row[13],
        position=row[14],
        queued_at=row[15],
        not_before=row[16],
        overtakes=row[17],
        machine=row[18],
        remote_id=row[19],
        remote_state=row[20],
    )


def _schema_version(db: sqlite3.Connection, path: Path) -> int:
    """The file's schema version; StoreError for one written by a newer gputray."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the queue database {path} was written by a newer gputray "
            f"(schema {version}, this one knows up to {SCHEMA_VERSION}); upgrade gputray"
        )
    return version


class _Tx:
    """``with store._transaction() as db:`` — BEGIN IMMEDIATE … COMMIT, ROLLBACK on error."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self._db = db
        self._lock = lock
        self._outer = False

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        self._outer = not self._db.in_transaction
        if self._outer:
            self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if self._outer:
                self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self._lock.release()


_UNFINISHED = frozenset({"queued", "waiting", "running", "interrupted"})
_STATE_RANK = {"running": 0, "queued": 1, "waiting": 1, "interrupted": 1}


def _display_order(rec: TaskRecord) -> tuple[int, int, float, int]:
    rank = _STATE_RANK.get(rec.state, 2)
    if rank == 1:
        return (1, -rec.spec.priority, rec.position, rec.id)
    return (rank, 0, 0.0, rec.id)


def _spec_from_json(text: str) -> TaskSpec:
    """Stored specs were validated on the way in; rebuild them without re-validating (fast for 10k rows)."""
    data = json.loads(text)
    for key in ("argv", "args", "files", "device_prefs", "needs"):
        if key in data:
            data[key] = tuple(data[key])
    try:
        return TaskSpec(**data)
    except TypeError:  # a key from a newer/older spec version: keep the ones we know
        known = TaskSpec.__dataclass_fields__
        return TaskSpec(**{k: v for k, v in data.items() if k in known})


def _kill_orphan(pid: int | None, create_time: float | None) -> bool:
    """Kill a leftover job process tree, but only if pid and start time both match (no pid reuse)."""
    if pid is None or create_time is None:
        return False
    import psutil

    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) > 0.5:
            return False
        procs = [*proc.children(recursive=True), proc]
    except (psutil.Error, OSError):
        return False
    if sys.platform != "win32":  # the job leads its own process group: helpers it left there go too
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
    _kill_all(procs)
    return True


def _kill_unrecorded_job(task_id: int, queue_file: str) -> bool:
    """Kill the processes of a job whose pid was never saved, found by the task id and queue file
    gputray put in its environment (processes whose environment we may not read are skipped)."""
    import psutil

    wanted = {"GPUTRAY_TASK_ID": str(task_id), QUEUE_FILE_VAR: queue_file}
    found = []
    for proc in psutil.process_iter(["environ"]):
        environ = proc.info.get("environ") or {}
        if proc.pid != os.getpid() and all(environ.get(k) == v for k, v in wanted.items()):
            found.append(proc)
    _kill_all(found)
    return bool(found)


def _kill_all(procs: builtins.list[Any]) -> None:
    import psutil

    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            p.kill()
    psutil.wait_procs(procs, timeout=3)
