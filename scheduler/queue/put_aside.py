"""Which tasks the dispatcher put aside until their start time or daily window opens, and when.

A task held back only by its start time or window is planned once, then put aside (``TaskStore.put_aside``
hides it from the passes) until its time comes: ``PutAside`` keeps those times in a heap, so a pass
looks at the earliest only. A task that changes meanwhile comes back by itself, in the store; its entry
here is then stale and dropped when it reaches the top. The queue's lock guards it (the dispatcher's).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from gputray.scheduler.queue.placement import Wait, time_gate
from gputray.scheduler.tasks.records import TaskRecord


class PutAside:
    """The tasks put aside by time (see the module docstring)."""

    def __init__(self) -> None:
        self._until: dict[int, float] = {}  # task id -> when its start time or window opens
        self._due: list[tuple[float, int]] = []  # a heap of (that time, task id)

    def next_due_s(self) -> float | None:
        """When the dispatcher looks again at the tasks put aside (maybe stale: a look costs little)."""
        return self._due[0][0] if self._due else None

    def take_due(self, now: float) -> list[int]:
        """The ids of the tasks whose time came, no longer put aside here (the caller brings them back)."""
        heap = self._due
        due = []
        while heap and (heap[0][0] <= now or self._until.get(heap[0][1]) != heap[0][0]):
            until, task_id = heapq.heappop(heap)
            if until <= now and self._until.get(task_id) == until:
                del self._until[task_id]
                due.append(task_id)
        if len(heap) > 2 * len(self._until) + 1024:  # many stale entries: rebuild
            self._due = [(until, task_id) for task_id, until in self._until.items()]
            heapq.heapify(self._due)
        return due

    def split(
        self, pending: Iterable[TaskRecord], now: float
    ) -> tuple[list[TaskRecord], list[tuple[TaskRecord, Wait]]]:
        """Split off the tasks that only a start time or a daily window holds back (not a retry's
        backoff: its "retry in 20 s" is said afresh each pass; not one with ``after``: a dependency
        that fails fails it at once) and note them until then. The rest, and those with their wait."""
        rest: list[TaskRecord] = []
        parking: list[tuple[TaskRecord, Wait]] = []
        for task in pending:
            spec = task.spec
            if (spec.start_at is None and spec.window is None) or spec.after or task.not_before is not None:
                rest.append(task)
                continue
            gate = time_gate(task, now)
            if gate is None or gate.until_s is None:
                rest.append(task)
                continue
            self._until[task.id] = gate.until_s
            heapq.heappush(self._due, (gate.until_s, task.id))
            parking.append((task, gate))
        return rest, parking

    def clear(self) -> None:
        """Forget every time (the wall clock was set: the store brings every task back)."""
        self._until.clear()
        self._due.clear()
