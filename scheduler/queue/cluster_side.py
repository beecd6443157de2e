"""The local queue as the cluster sees it: ``ClusterSide`` answers ``cluster_port.QueuePort``.

The cluster's link (``cluster/link.py``, handed from above) reaches this machine's queue only through
these typed methods, never its store or its lock: it reads tasks, hands a task another machine sent
here to the queue (``hand_over``), takes one back that has not started (``take_back``), and records
the bridge's lifecycle steps for the tasks the cluster places or another machine runs (``record``).
Each write is one lifecycle step (``tasks/lifecycle.py``) under the queue's lock, so a start that a
dispatch pass is recording never crosses it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from gputray.scheduler.queue.store_errors import TaskNotFound
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.tasks.cluster_steps import ClusterStep
from gputray.scheduler.tasks.lifecycle import Cancel
from gputray.scheduler.tasks.records import PENDING_STATES, TaskRecord, TaskSpec

if TYPE_CHECKING:
    from gputray.scheduler.queue.device_checks import SeenDevice
    from gputray.scheduler.queue.placement import DeviceState
    from gputray.scheduler.queue.store import TaskStore
    from gputray.scheduler.replies import Paused


class _Edits(Protocol):
    def task_changed_elsewhere(self) -> None: ...


class SideQueue(Protocol):
    """What ``ClusterSide`` needs of the queue (``QueueService`` is one)."""

    @property
    def store(self) -> TaskStore: ...

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def edits(self) -> _Edits: ...

    def submit(self, spec: TaskSpec) -> TaskRecord: ...

    def paused(self) -> Paused: ...

    def devices_for_checks(self) -> tuple[list[DeviceState], list[SeenDevice]] | None: ...

    def request_dispatch(self, *, urgent: bool = False) -> None: ...


class ClusterSide:
    """``QueuePort`` over a queue; see the module docstring."""

    def __init__(self, queue: SideQueue) -> None:
        self._queue = queue
        self._submit_lock = threading.Lock()

    # --- reads -----------------------------------------------------------------------------------
    def task(self, task_id: int) -> TaskRecord:
        return self._queue.store.get(task_id)

    def find(self, task_id: int) -> TaskRecord | None:
        try:
            return self._queue.store.get(task_id)
        except TaskNotFound:
            return None

    def tasks(self) -> list[TaskRecord]:
        return self._queue.store.list()

    def rows(self) -> Mapping[int, TaskRecord]:
        return self._queue.store.view()

    def paused(self) -> Paused:
        return self._queue.paused()

    def devices_for_checks(self) -> tuple[list[DeviceState], list[SeenDevice]] | None:
        return self._queue.devices_for_checks()

    # --- writes ----------------------------------------------------------------------------------
    def hand_over(self, origin: str, spec: TaskSpec) -> tuple[TaskRecord, bool]:
        """Queue ``spec``, a task another machine hands here as ``origin`` (``desk#12.1``), once however
        often it is sent: (the task, whether it was here already)."""
        with self._submit_lock:
            for rec in self._queue.store.list():
                if rec.spec.origin == origin:
                    return rec, True
            return self._queue.submit(spec), False

    def take_back(self, task_id: int, origin: str, reason: Reason, *, now: float) -> TaskRecord | None:
        """The machine that handed ``origin`` here takes it back: cancelled with ``reason`` if it has not
        started; None when it has (or ended, or is not that copy), and it stays. Under the queue's lock,
        which a dispatch pass holds from choosing a task to recording its start: never both."""
        with self._queue.lock:
            rec = self._queue.store.get(task_id)
            if rec.spec.origin != origin or rec.state not in PENDING_STATES:
                return None
            new = self._queue.store.apply(
                task_id, Cancel(reason=reason, ended_at=now), expect_state=rec.state
            )
        if new is not None:
            self._queue.edits.task_changed_elsewhere()
            self._queue.request_dispatch()  # its slot here is for the next task
        return new

    def record(
        self,
        task_id: int,
        step: ClusterStep,
        *,
        expect_state: str | None,
        check: Callable[[TaskRecord], None],
        here: str,
    ) -> tuple[TaskRecord, TaskRecord | None]:
        """One step of a task the cluster places or another machine runs (``check`` first refuses what
        the cluster may not do to the row as it is): (the row before, the row after; None when it was
        no longer in ``expect_state``, nothing written). Raises IllegalTransition for a step the row's
        state does not allow. ``gputray wait`` on the row answers, and a pass follows when the row is
        now this machine's (``here``), queued or ended (its dependants may start)."""
        with self._queue.lock:
            before = self._queue.store.get(task_id)
            check(before)
            new = self._queue.store.apply(task_id, step, expect_state=expect_state)
        if new is not None:
            self._queue.edits.task_changed_elsewhere()
            if new.machine == here or new.state == "queued" or new.finished:
                self._queue.request_dispatch()
        return before, new
