"""Acting on the saved queue when no owner runs: ``cancel``, ``retry``, ``remove``, ``pause`` and ``resume``
from the CLI work on the queue file directly, under the lock the owner takes (``queue_lock``), so a user is
never locked out of their own tasks.

``act(paths, fn)`` is the one way in: it takes the lock (refusing, with the holder's pid, when an owner
that does not answer holds it), opens the store, calls ``fn(OfflineQueue)`` and closes everything.
Another operation is a method on ``OfflineQueue`` (or a function given to ``act``). Replies have the
types the owner's ops answer with (``replies``), so the CLI prints them the same way.

A running task found here belongs to no owner: its job may still run under its supervisor (an owner
crashed, or quit keeping its jobs). Cancelling it stops that job and records the cancel; a job that
ended by itself is left for the next owner to record (it knows how it ended).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from gputray.scheduler.jobs.orphans import kill_orphan
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import Refusal
from gputray.scheduler.queue.lock import QueueLock
from gputray.scheduler.queue.pause_file import read_paused, write_paused
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import TaskNotFound
from gputray.scheduler.reasons import refusals as refused
from gputray.scheduler.reasons.codes import Cancelled, Reason, RequeuedByRequest, RequeuedWith
from gputray.scheduler.reasons.refusals import Refused
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import PausedReply, TaskReply, TasksDone, TaskView, views
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import PENDING_STATES, TaskRecord
from gputray.scheduler.tasks.states import ACTIVE_STATES

_T = TypeVar("_T")
LOCK_WAIT_S = 5.0
CANCEL_GRACE_S = 3.0


class QueueBusy(Refusal):
    """Someone holds the queue's lock but does not answer on the socket (an owner starting or stuck)."""


class OfflineRefusal(Refusal):
    """The saved queue does not allow this (cancel a finished task …); the message says why, and
    ``said`` as a code where there is one (``reasons/refusals``)."""

    def __init__(self, said: Refused | str) -> None:
        super().__init__(said if isinstance(said, str) else render(said))
        self.said: Refused | None = None if isinstance(said, str) else said


def act(paths: Paths, fn: Callable[[OfflineQueue], _T]) -> _T:
    """``fn`` on the saved queue, under the queue lock. Raises QueueBusy when the lock stays held."""
    lock = None  # nothing saved, no owner ever ran here: no lock to take either
    if paths.data_dir.exists():
        lock = QueueLock(paths.queue_db)
        if not lock.acquire(timeout_s=LOCK_WAIT_S):
            raise QueueBusy(
                f"the queue is held by another gputray process (pid {lock.holder_pid()}, {lock.path}) "
                "that does not answer on its socket: it may be starting; try again, or stop it"
            )
    queue = OfflineQueue(paths)
    try:
        return fn(queue)
    finally:
        queue.close()
        if lock is not None:
            lock.release()


class OfflineQueue:
    """The queue's operations on the saved file, for a client command holding the queue lock. The
    store opens on first use, and a queue never saved is not created (its tasks do not exist)."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._store: TaskStore | None = None

    @property
    def store(self) -> TaskStore:
        if self._store is None:
            self._store = TaskStore(self.paths.queue_db)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def get(self, task_id: int) -> TaskRecord:
        if self._store is None and not self.paths.queue_db.exists():
            raise TaskNotFound(task_id)
        return self.store.get(task_id)

    def cancel(self, task_id: int) -> TaskRecord:
        rec = self.get(task_id)
        now = self.store.clock()
        if rec.state in PENDING_STATES or rec.state in ("interrupted", "starting"):  # starting: no owner
            new = self.store.apply(
                task_id, life.Cancel(reason=Cancelled(), ended_at=now), expect_state=rec.state
            )
            if new is None:
                raise OfflineRefusal(f"task #{task_id} changed meanwhile; try again")
            return new
        if rec.state == "cancelled":
            return rec
        if rec.state != "running":
            raise OfflineRefusal(refused.AlreadyEnded(task_id=task_id, state=rec.state))
        from gputray.scheduler.jobs.job_files import JobFiles, read_exit, read_run, supervisor_alive
        from gputray.scheduler.jobs.launcher import stop_leftover
        from gputray.scheduler.jobs.supervisor import write_atomic

        files = JobFiles.beside(self.paths.logs_dir / f"task-{task_id}.log")
        run = read_run(files)
        end = None
        supervised = run is not None and run.attempt == rec.attempts
        if run is not None and supervised:
            end = read_exit(files, run.pid)
            if end is not None:
                raise OfflineRefusal(
                    f"task #{task_id} ended by itself while no owner was up (exit {end.returncode}); "
                    "start an owner (`gputray daemon` or the tray) to record it"
                )
            if supervisor_alive(files):
                write_atomic(files.stop, {"reason": "cancelled"})  # what the next owner reads, too
                stop_leftover(run, grace_s=CANCEL_GRACE_S)
                end = read_exit(files, run.pid)
        else:
            kill_orphan(rec.pid, rec.pid_create_time)  # started by a gputray without supervisors
        ended = life.JobEnd(
            exit_code=None if end is None else end.returncode, ended_at=now if end is None else end.ended_at
        )
        new = self.store.must_apply(
            task_id,
            life.Cancel(
                reason=Cancelled(while_running=True, offline=True), ended_at=ended.ended_at, end=ended
            ),
        )
        if supervised:
            files.discard()
        return new

    def retry(self, task_id: int) -> TaskRecord:
        """As the owner's ``QueueService.retry``: the task queued again, and with it the tasks that
        failed because it failed (``after``, down the chain)."""
        from gputray.scheduler.queue.dependencies import failed_because_of

        rec = self.get(task_id)
        if rec.state in PENDING_STATES or rec.state in ACTIVE_STATES:
            raise OfflineRefusal(refused.RetryIsForEnded(task_id=task_id, state=rec.state))
        new = self._requeue(rec, RequeuedByRequest())
        if new is None:
            raise OfflineRefusal(refused.ChangedMeanwhile(task_id=task_id))
        for dependant in failed_because_of(task_id, self.store.list()):
            self._requeue(dependant, RequeuedWith(task_id=task_id))
        return new

    def _requeue(self, rec: TaskRecord, reason: Reason) -> TaskRecord | None:
        step = life.Requeue(reason=reason, now=self.store.clock(), position=self.store.next_position())
        return self.store.apply(rec.id, step, expect_state=rec.state)


def _task_id(value: str) -> int:
    text = value.strip().lstrip("#")
    if not text.isdigit():
        raise OfflineRefusal(f"task ids are whole numbers from 1, not {value!r}; see `gputray queue`")
    return int(text)


def cancel(paths: Paths, ids: list[str]) -> TasksDone:
    """The ``cancel`` op on the saved queue, answered as the owner answers it."""

    def run(q: OfflineQueue) -> TasksDone:
        done: list[TaskView] = []
        errors: list[str] = []
        for raw in ids:
            try:
                done.append(TaskView.of(q.cancel(_task_id(raw))))
            except Refusal as exc:
                errors.append(str(exc))
        return TasksDone(tasks=tuple(done), errors=tuple(errors))

    return act(paths, run)


def retry(paths: Paths, raw_id: str) -> TaskReply:
    return act(paths, lambda q: TaskReply(task=TaskView.of(q.retry(_task_id(raw_id)))))


def remove(paths: Paths, ids: list[str], *, force: bool = False) -> TasksDone:
    """The ``remove`` op on the saved queue, as the owner answers it: ended and pending tasks go with
    their logs; a running one only with ``force`` (cancelled here first); a task that a pending one
    waits for (``after``) stays, with the reason."""
    from gputray.scheduler.queue.edits import delete_task_log, keep_depended_on

    def run(q: OfflineQueue) -> TasksDone:
        errors: list[str] = []
        chosen: list[TaskRecord] = []
        for raw in dict.fromkeys(ids):
            try:
                rec = q.get(_task_id(raw))
                if rec.state == "running":
                    if not force:
                        errors.append(
                            f"task #{rec.id} is running; `gputray remove --force {rec.id}` cancels it first"
                        )
                        continue
                    rec = q.cancel(rec.id)
            except Refusal as exc:
                errors.append(str(exc))
                continue
            chosen.append(rec)
        ok, kept = keep_depended_on(chosen, {r.id for r in chosen}, q.store.pending())
        errors += kept
        gone = q.store.delete(r.id for r in ok)
        for rec in gone:
            delete_task_log(paths.logs_dir, rec)
        return TasksDone(tasks=views(gone), errors=tuple(errors))

    return act(paths, run)


def pause(paths: Paths, op: str, device: str | None) -> PausedReply:
    """``pause``/``resume`` on the saved pause file; a device by key (``pci:…``, ``cpu``) or by a name
    the GPUs on this machine answer to (``5060ti``), looked up with one sample of the real backends."""
    key = None if device is None or device.strip().lower() in ("", "all") else resolve_device_offline(device)

    def run(q: OfflineQueue) -> PausedReply:
        was = read_paused(paths.data_dir)
        write_paused(paths.data_dir, now := was.pausing(key) if op == "pause" else was.resuming(key))
        return PausedReply(paused=now, device_names={"cpu": "CPU"})  # GPUs by key: none sampled here

    return act(paths, run)


def resolve_device_offline(text: str) -> str:
    wanted = text.strip().lower()
    if wanted == "cpu" or wanted.startswith("pci:"):
        return wanted
    from gputray.monitor.factory import build_monitor

    monitor = build_monitor(demo=False)
    try:
        infos = [r.info for r in monitor.sample_once().readings]
    finally:
        monitor.stop()
    from gputray.scheduler.queue.device_names import devices_named

    matches = devices_named(wanted, infos)
    if len(matches) == 1:
        return matches[0].key
    known = ", ".join(f"{i.key} ({i.name})" for i in infos) or "none found"
    what = "matches several devices" if matches else "matches no device"
    raise OfflineRefusal(f"{text!r} {what} here: {known}, cpu (a key such as pci:0000:01:00.0 also works)")
