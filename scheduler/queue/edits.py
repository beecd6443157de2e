"""What a person does to queued tasks besides submit, cancel and retry: reorder (``move``), change
(``edit``), forget (``remove``, ``clean``: their logs go too) and wait for them to end (``wait_ended``).

``QueueEdits`` is a part of ``QueueService`` (``service.edits``) and changes the queue through what
``EditedQueue`` names: the store, the queue's lock (taken as the service's own methods take it), a
dispatch pass after every change, ``cancel`` for a forced remove, and the submit checks for an edited
device or memory request.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from gputray.scheduler.cluster_port import ClusterPort
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import Refusal
from gputray.scheduler.queue import dependencies as deps
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import TaskNotFound
from gputray.scheduler.queue.wait_book import Later, States, WaitBook
from gputray.scheduler.reasons import refusals as refused
from gputray.scheduler.reasons.refusals import Refused
from gputray.scheduler.reasons.render import render
from gputray.scheduler.reasons.taskfile_codes import EditOf
from gputray.scheduler.tasks.recipes import check_runnable
from gputray.scheduler.tasks.records import (
    FINISHED_STATES,
    PENDING_STATES,
    TaskPatch,
    TaskRecord,
    TaskSpec,
    local_time,
)
from gputray.scheduler.tasks.states import ACTIVE_STATES

log = logging.getLogger("gputray.scheduler.queue.service")

#: What ``edit`` may change: where, when and how a task that has not started runs.
EDITABLE = frozenset(
    {
        "name",
        "device_prefs",
        "on_busy",
        "max_wait_s",
        "after_max_wait",
        "vram_bytes",
        "priority",
        "start_at",
        "window",
        "timeout_s",
        "retries",
        "backoff_s",
        "env",
        "cwd",
        "after",
        "after_any",
        "needs",
        "offer_declined",  # "Keep waiting" on a run-elsewhere offer (``replies.Offer``)
        "kept_residents",  # "Keep waiting" on freeing a resident (``replies.RoomQuestion``)
        "prefer",
        "max_slowdown",
        "family",
    }
)


class QueueError(Refusal):
    """A request the queue cannot honour; the message says why."""


class TaskStateError(QueueError, ValueError):
    """The task is in a state that does not allow this (cancel a finished task, move a running one);
    ``said``: why, as a code the tray words in its language (None: English only, not typed yet)."""

    def __init__(self, said: Refused | str) -> None:
        super().__init__(said if isinstance(said, str) else render(said))
        self.said: Refused | None = None if isinstance(said, str) else said


class EditedQueue(Protocol):
    """What the edits need of the queue they change (``QueueService``)."""

    @property
    def store(self) -> TaskStore: ...

    @property
    def paths(self) -> Paths: ...

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def closed(self) -> bool: ...

    def clock(self) -> float: ...

    def cancel(self, task_id: int) -> TaskRecord: ...

    def request_dispatch(self, *, urgent: bool = False) -> None: ...

    def check_devices(self, *specs: TaskSpec) -> None: ...

    def device_name(self, key: str | None) -> str: ...

    @property
    def cluster(self) -> ClusterPort | None: ...


_T = TypeVar("_T")


class QueueEdits:
    """Reorder, edit, remove, clean and wait; see the module docstring."""

    def __init__(self, queue: EditedQueue) -> None:
        self.queue = queue
        self.store = queue.store
        self._lock = queue.lock
        self.waits = WaitBook(self._states_now)  # `wait` requests: entries, not threads

    def notify_waiters(self) -> None:
        """A queue event: every wait looks again."""
        self.waits.poke()

    def task_changed_elsewhere(self) -> None:
        """A row changed outside this queue's own paths (the cluster bridge mirrored a task another
        machine runs): ``wait_ended`` looks again now, not at its timeout."""
        self.notify_waiters()

    def move(self, task_id: int, delta: int) -> TaskRecord:
        """Move a pending task up (negative) or down (positive) among pending tasks.

        It takes the priority of the task it lands next to, so moving across a priority boundary works.
        """
        with self._lock:
            order, index = self._pending_order(task_id)
            return self._move_to(order, index, index + delta, toward_front=delta < 0)

    def move_to(
        self,
        task_id: int,
        *,
        top: bool = False,
        bottom: bool = False,
        before: int | None = None,
        after: int | None = None,
    ) -> TaskRecord:
        """Move a pending task to the front or the end of the queue, or just before or after another
        pending task (taking that one's priority, as ``move`` does)."""
        with self._lock:
            order, index = self._pending_order(task_id)
            others = [r for r in order if r.id != task_id]
            anchor_id = before if before is not None else after
            if anchor_id is not None:
                if anchor_id == task_id:
                    raise TaskStateError(refused.MoveNextToItself(task_id=task_id))
                anchor = self.store.get(anchor_id)
                at = next((i for i, r in enumerate(others) if r.id == anchor_id), None)
                if at is None:
                    raise TaskStateError(refused.AnchorNotPending(task_id=anchor_id, state=anchor.state))
                target = at if before is not None else at + 1
                return self._move_to(order, index, target, toward_front=before is not None)
            if top == bottom:
                raise QueueError("move needs one of: to the top, to the bottom, before ID, after ID")
            return self._move_to(order, index, 0 if top else len(others), toward_front=top)

    def _pending_order(self, task_id: int) -> tuple[builtins.list[TaskRecord], int]:
        rec = self.store.get(task_id)
        if rec.state not in PENDING_STATES:
            raise TaskStateError(refused.OnlyPendingMove(task_id=task_id, state=rec.state))
        order = self.store.pending()
        return order, next(i for i, r in enumerate(order) if r.id == task_id)

    def _move_to(
        self, order: Sequence[TaskRecord], index: int, target: int, *, toward_front: bool
    ) -> TaskRecord:
        """Put ``order[index]`` at ``target`` among the others; it takes the priority of the task it
        lands next to (after it when moving toward the front, before it otherwise)."""
        rec = order[index]
        others = [r for r in order if r.id != rec.id]
        target = max(0, min(len(others), target))
        if target == index or not others:
            return rec
        before = others[target - 1] if target > 0 else None
        after = others[target] if target < len(others) else None
        if (toward_front and after is not None) or before is None:
            assert after is not None
            priority = after.spec.priority
            if before is not None and before.spec.priority == priority:
                position = (before.position + after.position) / 2
            else:
                position = after.position - 1
        else:
            priority = before.spec.priority
            if after is not None and after.spec.priority == priority:
                position = (before.position + after.position) / 2
            else:
                position = before.position + 1
        new = self.store.set_priority_position(rec.id, priority, position)
        self.queue.request_dispatch()
        return new

    def edit(self, task_id: int, changes: TaskPatch) -> TaskRecord:
        """Change where, when and how a task that has not started runs (``EDITABLE`` fields); refused
        with the reason for a task that runs or has ended."""
        from gputray.scheduler.tasks.taskfile import spec_from_patch

        bad = sorted(set(changes.given()) - EDITABLE)
        if bad:
            raise QueueError(
                f"edit cannot change {', '.join(map(repr, bad))}; it changes: {', '.join(sorted(EDITABLE))}"
            )
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state not in PENDING_STATES:
                raise TaskStateError(self._not_editable(rec))
            spec = spec_from_patch(changes, base=rec.spec, source=EditOf(task_id=task_id))
            if spec.cwd != rec.spec.cwd:
                check_runnable(spec)
            if (spec.device_prefs, spec.vram_bytes) != (rec.spec.device_prefs, rec.spec.vram_bytes):
                self.queue.check_devices(spec)  # as at submit: `--device 4090` would wait for ever
            deps.check_after(task_id, spec, self.store.view())
            new = self.store.replace_spec(task_id, spec, only_states=PENDING_STATES)
            if new is None:
                raise TaskStateError(self._not_editable(self.store.get(task_id)))
        if new.remote_id is not None and self.queue.cluster is not None:
            self.queue.cluster.on_edited(new)  # waiting on another machine as sent: taken back to apply it
        self.queue.request_dispatch()
        return new

    def _not_editable(self, rec: TaskRecord) -> str:
        if rec.state == "running":
            since = local_time(rec.started_at, self.queue.clock())
            return (
                f"task #{rec.id} is running on {self.queue.device_name(rec.device)} since {since}; "
                "edit is for tasks that have not started (cancel it, or edit its retry after it ends)"
            )
        return (
            f"task #{rec.id} already {rec.state}; edit is for tasks that have not started "
            "(`gputray retry` queues it again)"
        )

    def remove(
        self, task_ids: Sequence[int], *, force: bool = False
    ) -> tuple[builtins.list[TaskRecord], builtins.list[str]]:
        """Forget tasks and delete their logs. Ended and pending tasks go at once; a running one only
        with ``force`` (cancelled first). A task that a pending task waits for (``after``) stays unless
        that one goes too. Returns (removed, one error per id that stays)."""
        wanted = builtins.list(dict.fromkeys(task_ids))
        errors: builtins.list[str] = []
        with self._lock:
            ok: builtins.list[TaskRecord] = []
            for task_id in wanted:
                try:
                    rec = self.store.get(task_id)
                except TaskNotFound as exc:
                    errors.append(str(exc))
                    continue
                if rec.state in ACTIVE_STATES and not force:
                    errors.append(
                        f"task #{task_id} is {rec.state}; `gputray remove --force {task_id}` cancels it first"
                    )
                    continue
                ok.append(rec)
            ok, blocked = keep_depended_on(ok, set(wanted), self.store.pending())
            errors += blocked
            gone = self.store.delete(
                r.id for r in ok if r.state not in ACTIVE_STATES
            )  # none starts meanwhile
        running = [r for r in ok if r.state in ACTIVE_STATES]
        for rec in running:
            self.queue.cancel(rec.id)  # waits up to ~10 s for the job to stop
        with self._lock:
            stopped = []
            for rec in running:
                if self.store.get(rec.id).state in ACTIVE_STATES:
                    errors.append(f"task #{rec.id} did not stop yet; try again")
                else:
                    stopped.append(rec.id)
            gone += self.store.delete(stopped)
        for rec in gone:
            delete_task_log(self.queue.paths.logs_dir, rec)
        if gone:
            self.queue.request_dispatch()
        return gone, errors

    def clean(
        self,
        *,
        older_than_s: float | None = None,
        keep: int | None = None,
        states: Collection[str] = FINISHED_STATES,
    ) -> tuple[builtins.list[TaskRecord], builtins.list[str]]:
        """Remove ended tasks (``states``) and their logs: all of them, or (``prunable``) those that
        ended more than ``older_than_s`` ago and those beyond the newest ``keep``. One a pending task
        still waits for stays. Returns (removed, why some stayed). ``gputray clean`` and the automatic
        retention (``retention.Retention``) both come here."""
        bad = sorted(set(states) - FINISHED_STATES)
        if bad:
            raise QueueError(f"clean removes ended tasks: {', '.join(sorted(FINISHED_STATES))}; not {bad[0]}")
        now = self.queue.clock()
        with self._lock:
            chosen = prunable(self.store.list(states=states), now_s=now, older_than_s=older_than_s, keep=keep)
            if not chosen:
                return [], []
            ok, kept = keep_needed(chosen, self.store.list())
            gone = self.store.delete(r.id for r in ok)
        for rec in gone:
            delete_task_log(self.queue.paths.logs_dir, rec)
        return gone, kept

    def release_waiters(self) -> None:
        """Answer every wait now, and later ones at once (the owner is stopping)."""
        self.waits.release()

    def _states_now(self, task_ids: Sequence[int]) -> States:
        out: States = []
        for i in task_ids:
            try:
                out.append(self.store.get(i))
            except TaskNotFound:
                out.append(i)  # removed meanwhile
        return out

    def wait_ended(self, task_ids: Sequence[int], timeout_s: float) -> States:
        """Block until every task has ended (succeeded, failed, cancelled) or ``timeout_s`` passed; the
        tasks as they are then (the id of one that no longer exists). Raises TaskNotFound at once for an
        id that names no task."""
        for i in task_ids:
            self.store.get(i)
        return self.waits.wait(task_ids, timeout_s)

    def wait_later(
        self, task_ids: Sequence[int], timeout_s: float, convert: Callable[[States], _T]
    ) -> Later[_T]:
        """The same wait, answered later through ``convert`` without holding a thread (the socket's
        ``wait``: ``ipc.server`` parks the connection). Raises TaskNotFound at once for an unknown id."""
        for i in task_ids:
            self.store.get(i)
        return Later(self.waits, task_ids, timeout_s, convert)


def prunable(
    ended: Sequence[TaskRecord], *, now_s: float, older_than_s: float | None, keep: int | None
) -> builtins.list[TaskRecord]:
    """Which of the ``ended`` tasks a clean removes: every one when neither limit is given; else each
    that ended more than ``older_than_s`` ago and each beyond the newest ``keep`` (by end time)."""
    if older_than_s is None and keep is None:
        return builtins.list(ended)
    newest_first = sorted(ended, key=lambda r: (r.ended_at or r.submitted_at, r.id), reverse=True)
    out = []
    for rank, rec in enumerate(newest_first):
        too_old = older_than_s is not None and (rec.ended_at or rec.submitted_at) <= now_s - older_than_s
        if too_old or (keep is not None and rank >= keep):
            out.append(rec)
    return sorted(out, key=lambda r: r.id)


def keep_depended_on(
    records: builtins.list[TaskRecord], going: set[int], pending: Sequence[TaskRecord]
) -> tuple[builtins.list[TaskRecord], builtins.list[str]]:
    """``records`` minus those a pending task (not itself ``going``) waits for, and why each stays."""
    staying = [r for r in pending if r.id not in going]
    named = {task_id for r in staying for task_id in r.spec.after}
    ok, kept = [], []
    for rec in records:
        waiting = deps.dependants(rec.id, staying) if rec.id in named else []
        if waiting:
            ids = ", ".join(f"#{w.id}" for w in waiting)
            kept.append(f"task #{rec.id} stays: {ids} wait(s) for it (--after); remove or cancel them first")
        else:
            ok.append(rec)
    return ok, kept


def keep_needed(
    chosen: builtins.list[TaskRecord], tasks: Sequence[TaskRecord]
) -> tuple[builtins.list[TaskRecord], builtins.list[str]]:
    """``chosen`` (what a clean would remove) minus every task that a task staying names in its
    ``after``, down the chain (a kept task's dependencies stay too), and why each stays. Any task that
    stays counts, ended ones too: ``retry`` of a failed dependant must find what it waits for."""
    by_id = {r.id: r for r in chosen}
    needed_by: dict[int, builtins.list[int]] = {}
    frontier = [t for t in tasks if t.id not in by_id]
    while frontier:
        newly: builtins.list[TaskRecord] = []
        for task in frontier:
            for dep_id in task.spec.after:
                if dep_id not in by_id:
                    continue
                if dep_id not in needed_by:
                    needed_by[dep_id] = []
                    newly.append(by_id[dep_id])
                needed_by[dep_id].append(task.id)
        frontier = newly
    kept = [
        f"task #{dep_id} stays: {', '.join(f'#{i}' for i in sorted(set(ids)))} name(s) it in --after"
        for dep_id, ids in sorted(needed_by.items())
    ]
    return [r for r in chosen if r.id not in needed_by], kept


def delete_task_log(logs_dir: Path, rec: TaskRecord) -> None:
    """A removed task's log, if it is one of ours (a stored path outside the logs folder is left), and
    any supervisor file left beside it (an exit file written after the owner had recorded the exit) and
    the ``GPUTRAY_PROGRESS`` file its job may have written (``task-N.log.progress``): with retention,
    what a task leaves in the logs folder must go when the task goes."""
    if not rec.log_path:
        return
    from gputray.scheduler.jobs.job_files import JobFiles
    from gputray.scheduler.jobs.progress import progress_file

    path = Path(rec.log_path)
    try:
        if path.parent == logs_dir or path.parent.resolve() == logs_dir.resolve():
            path.unlink(missing_ok=True)
            progress_file(path).unlink(missing_ok=True)
            JobFiles.beside(path).discard()
    except OSError as exc:
        log.warning("could not delete the log %s: %s", path, exc)
