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
import json
import logging
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import msgspec

from gputray.scheduler.jobs.orphans import kill_orphan, kill_unrecorded_job
from gputray.scheduler.queue.starting import requeue_unlaunched
from gputray.scheduler.queue.store_errors import (
    StoreError,
    StoreFull,
    TaskNotFound,
    UnreadableTask,
    is_disk_full,
    no_space_message,
)
from gputray.scheduler.queue.store_open import open_queue_file
from gputray.scheduler.queue.store_rows import (
    COLUMNS,
    RecordMirror,
    StoredEnv,
    column_text,
    decode_rows,
    reason_column,
    spec_from_json,
    spec_text,
)
from gputray.scheduler.queue.store_schema import (
    transaction,
)
from gputray.scheduler.queue.store_writer import Statement, StoreWriter
from gputray.scheduler.reasons.codes import OwnerStopped
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.lifecycle import Interrupt, RetryOrFail, Step, check
from gputray.scheduler.tasks.records import (
    PENDING_STATES,
    TaskRecord,
    TaskSpec,
)

log = logging.getLogger("gputray.store")

#: ``1``: commit without syncing (``synchronous=NORMAL``). Only for ``bench/queue_scale.py``'s comparison.
NO_FSYNC_VAR = "GPUTRAY_UNSAFE_NO_FSYNC"


_Records = list[TaskRecord]  # TaskStore.list shadows the builtin inside the class
SPEC_CACHE_SIZE = 256  # decoded specs kept by their text while the file is read (identical ones share)


def _column_values(cols: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values of ``cols`` as their columns hold them (a reason as its code's JSON)."""
    return tuple(reason_column(v) if k == "reason" else v for k, v in cols.items())


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
        self._lock = threading.RLock()
        self._spec_cache: dict[str, TaskSpec] = {}
        self._max_position: float | None = None
        self._rows: RecordMirror | None = None
        self._env_cache: tuple[int, dict[str, str]] | None = None  # the last environment read back
        self._unreadable: dict[int, str] = {}  # task id -> why its saved row cannot be read
        self._commit_cond = threading.Condition()
        self._commit_queue: builtins.list[_AddTicket] = []
        self._committing = False
        self._db, self.recovery_note = open_queue_file(self.path, durable=self.durable)
        self._writer = StoreWriter(self._db, self.path, self._lock, durable=self.durable)
        try:
            with self._lock:
                bad = self._load()
                self._fail_unreadable(bad)
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"cannot read the queue database {self.path}: {exc}") from None

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def journal_mode(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA journal_mode").fetchone()[0])

    def close(self) -> None:
        """Write what a full disk held back if there is room now, then close."""
        self._writer.stop_retrying()
        with self._lock:
            self._writer.flush_or_drop()
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
        self._rows = RecordMirror(self._light)
        self._rows.update(records)
        self._unreadable = {task_id: problem for task_id, (problem, _row) in bad.items()}
        self._max_position = max((r.position for r in self._rows.values()), default=0.0)
        return bad

    def _mirror(self) -> RecordMirror:
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
        statements: builtins.list[Statement] = []
        mirror = self._mirror()
        for task_id, (_problem, row) in bad.items():
            rec = mirror[task_id]
            log.warning("task #%d: %s", task_id, render(rec.reason))
            pid, create_time = row[12], row[13]
            if row[2] == "running" and type(pid) is int and isinstance(create_time, float):
                kill_orphan(pid, create_time)
            if row[2] != "failed" or row[5] != reason_column(rec.reason):
                ended = rec.ended_at if rec.ended_at is not None else now
                statements.append(
                    (
                        "UPDATE tasks SET state = 'failed', reason = ?, ended_at = ? WHERE id = ?",
                        (reason_column(rec.reason), ended, task_id),
                    )
                )
                mirror[task_id] = rec.replace(ended_at=ended)
        self._writer.write(statements)

    def _changed(self, task_id: int, **changes: Any) -> TaskRecord:
        """The mirror entry after a committed (or held) write of ``changes`` (the owner is the only
        writer, so the row now holds exactly that: no read back); callers hold ``self._lock``."""
        rec = self._mirror()[task_id].replace(**changes)
        self._mirror()[task_id] = rec
        return rec

    def _refuse_unreadable(self, task_id: int, changes: Mapping[str, object]) -> None:
        if task_id in self._unreadable and changes.get("state", "failed") not in ("failed", "cancelled"):
            raise UnreadableTask(
                f"task #{task_id} cannot run again: its saved record cannot be read "
                f"({self._unreadable[task_id]}); submit it anew"
            )

    def space_problem(self) -> str | None:
        """ "no space left: 0 KiB free in …" while changes wait for disk space or the disk is (nearly)
        full, else None. The queue starts no job meanwhile (its log and its exit need room)."""
        with self._lock:
            return self._writer.space_problem()

    def when_written(self, callback: Callable[[], None]) -> None:
        """``callback()`` once every change so far is on the disk (``StoreWriter.when_written``)."""
        with self._lock:
            self._writer.when_written(callback)

    @property
    def commits(self) -> int:
        """Transactions committed (one group commit counts once): for tests and benches."""
        return self._writer.commits

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
        texts = [spec_text(s.to_dict()) for s in batch_specs]
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
        if not self._writer.flush():
            for t in batch:
                t.error = StoreFull(f"{no_space_message(folder)}: nothing was queued")
            return
        top = self._top_position()
        added: builtins.list[builtins.list[TaskRecord]] = []
        db = self._db
        try:
            with transaction(db):
                for t in batch:
                    # One savepoint per call: a record that cannot be saved fails its own call only.
                    db.execute("SAVEPOINT one_add")
                    try:
                        records = self._insert_rows(t, top)
                    except _RECORD_ERRORS as exc:
                        db.execute("ROLLBACK TO one_add")
                        db.execute("RELEASE one_add")
                        if isinstance(exc, sqlite3.Error) and is_disk_full(exc, folder):
                            raise
                        t.error = StoreError(f"cannot save {_what(t.specs)} to the queue database: {exc}")
                        added.append([])
                        continue
                    db.execute("RELEASE one_add")
                    top += len(records)
                    added.append(records)
        except sqlite3.Error as exc:
            full = is_disk_full(exc, folder)
            for t in batch:
                t.error = (
                    StoreFull(f"{no_space_message(folder)}: nothing was queued")
                    if full
                    else StoreError(f"cannot save to the queue database {self.path}: {exc}")
                )
            return
        self._writer.commits += 1
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
            records = [r for r in records if r.state in UNFINISHED_STATES]
        return sorted(records, key=display_order)

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
        return sorted(records, key=display_order)

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

    # -- the lifecycle's steps: the one place a task's row changes after its submit -----------------
    def apply(self, task_id: int, step: Step, *, expect_state: str | None = None) -> TaskRecord | None:
        """Write ``step`` (``tasks/lifecycle.py``) to one task in one transaction; the new record.

        With ``expect_state``, only while the task is still in that state: None when it was not (a race
        lost, nothing written). A move the lifecycle does not allow from the task's state raises
        ``IllegalTransition`` (nothing written).
        """
        with self._lock:
            rec = self._mirror().get(task_id)
            if rec is None:
                raise TaskNotFound(task_id)
            # The mirror is the table (one writer), held changes included.
            if expect_state is not None and rec.state != expect_state:
                return None
            step = self._fit(task_id, step)
            check(rec, step)
            cols = step.columns(rec)
            self._refuse_unreadable(task_id, cols)
            if cols:
                sets = ", ".join(f"{k} = ?" for k in cols)
                sql, params = f"UPDATE tasks SET {sets} WHERE id = ?", (*_column_values(cols), task_id)
                if expect_state is not None:
                    sql, params = f"{sql} AND state = ?", (*params, expect_state)
                self._writer.write([(sql, params)])
            return self._changed(task_id, **cols)

    def must_apply(self, task_id: int, step: Step) -> TaskRecord:
        """``apply`` with no state expected (the caller holds the queue's lock): never a race lost."""
        new = self.apply(task_id, step)
        assert new is not None
        return new

    def apply_many(
        self,
        steps: Iterable[tuple[int, Step]],
        *,
        only_states: Iterable[str] | None = None,
        sync: bool = True,
    ) -> None:
        """Several steps in one transaction (a dispatch pass writes its waits this way).

        With ``only_states``, a task is moved only while its state is one of them (a cancel may have
        raced the pass). ``sync=False`` for what nobody was promised (why a task waits: the next pass
        says it again): it does not wait for the disk, so it never holds up the submits' commits, and
        the next synced commit covers it.
        """
        guard = ""
        extra: tuple[str, ...] = ()
        if only_states is not None:
            extra = tuple(only_states)
            guard = f" AND state IN ({','.join('?' * len(extra))})"
        with self._lock:
            mirror = self._mirror()
            after: dict[int, TaskRecord] = {}  # the mirror as these steps leave it, applied once written
            statements: builtins.list[Statement] = []
            for task_id, step in steps:
                rec = after.get(task_id) or mirror.get(task_id)
                if rec is None or (only_states is not None and rec.state not in extra):
                    continue
                step = self._fit(task_id, step)
                check(rec, step)
                cols = step.columns(rec)
                if not cols:
                    continue
                self._refuse_unreadable(task_id, cols)
                sets = ", ".join(f"{k} = ?" for k in cols)
                statements.append(
                    (f"UPDATE tasks SET {sets} WHERE id = ?{guard}", (*_column_values(cols), task_id, *extra))
                )
                after[task_id] = rec.replace(**cols)
            self._writer.write(statements, sync=sync)
            mirror.update(after)

    def _fit(self, task_id: int, step: Step) -> Step:
        """A task whose saved row cannot be read never runs again: its retry policy fails it."""
        if isinstance(step, RetryOrFail) and task_id in self._unreadable and step.may_retry:
            return msgspec.structs.replace(step, may_retry=False)
        return step

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
            text = spec_text({**self._stored_spec(task_id), "priority": priority})
            sql = "UPDATE tasks SET spec = ?, priority = ?, position = ? WHERE id = ?"
            self._writer.write([(sql, (text, priority, position, task_id))])
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
            text = spec_text({**self._stored_spec(task_id), **spec.to_dict()})
            marks = ",".join("?" * len(wanted))
            sql = f"UPDATE tasks SET spec = ?, name = ?, priority = ? WHERE id = ? AND state IN ({marks})"
            self._writer.write([(sql, (text, spec.name, spec.priority, task_id, *wanted))])
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
            self._writer.write([("DELETE FROM tasks WHERE id = ?", (r.id,)) for r in gone])
            for rec in gone:
                self._mirror().pop(rec.id, None)
                self._unreadable.pop(rec.id, None)
        return gone

    def counts(self) -> dict[str, int]:
        """Tasks per state, states in name order (as SQL's GROUP BY gave them)."""
        with self._lock:
            tally = Counter(r.state for r in self._mirror().values())
        return dict(sorted(tally.items()))

    def write_side(self, statements: Sequence[Statement]) -> None:
        """Write rows of the side tables (``job_runs``, ``busy_spells``) without waiting for the disk."""
        with self._lock:
            self._writer.write(statements, sync=False)

    def read_side(self, sql: str) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            return [tuple(row) for row in self._db.execute(sql).fetchall()]

    # -- crash recovery --------------------------------------------------------------------------
    def recover_after_crash(
        self, *, kill_orphans: bool = True, skip: Collection[int] = ()
    ) -> builtins.list[Recovered]:
        """Tasks left ``running`` → ``interrupted`` → requeued (with backoff) or failed by policy; tasks
        left ``starting`` (no job began) → queued again as they stood (``starting``).

        Call once, from the owner, before dispatching. An orphaned job process still alive from the
        crashed owner (same pid *and* same start time) is killed with its children and process group
        first, so the task never runs twice at once; one whose pid was never saved is found by its
        environment (``GPUTRAY_TASK_ID`` and ``QUEUE_FILE_VAR``). Tasks in ``skip`` (the jobs the queue
        adopted from their supervisors) are left as they are.
        """
        unlaunched = requeue_unlaunched(self, kill_orphans=kill_orphans, skip=skip)
        out = [Recovered(rec, True, killed) for rec, killed in unlaunched]
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
                return out
            why = OwnerStopped()
            self.apply_many(
                [(r.id, Interrupt(reason=why, ended_at=now)) for r in stale if r.state == "running"],
                only_states=("running",),
            )
        out = []
        for rec in stale:
            if rec.state == "running" and rec.pid is None:
                killed = kill_orphans and kill_unrecorded_job(rec.id, str(self.path))
            else:
                killed = kill_orphans and kill_orphan(rec.pid, rec.pid_create_time)
            new = self.must_apply(rec.id, RetryOrFail(why=OwnerStopped(stopped_leftover=killed), now=now))
            out.append(Recovered(new, new.state == "queued", killed))
        return out


UNFINISHED_STATES = frozenset({"queued", "waiting", "starting", "running", "interrupted"})
_STATE_RANK = {"starting": 0, "running": 0, "queued": 1, "waiting": 1, "interrupted": 1}


def display_order(rec: TaskRecord) -> tuple[int, int, float, int]:
    rank = _STATE_RANK.get(rec.state, 2)
    if rank == 1:
        return (1, -rec.spec.priority, rec.position, rec.id)
    return (rank, 0, 0.0, rec.id)


# A record SQLite cannot take (a number past 64 bits, text too big): its own add fails, not the batch.
_RECORD_ERRORS = (ValueError, OverflowError, sqlite3.DataError, sqlite3.IntegrityError)


def _what(specs: Sequence[TaskSpec]) -> str:
    return f"'{specs[0].name}'" if len(specs) == 1 else f"{len(specs)} tasks"


# --------------------------------------------------------------------------------------------------
# Files
