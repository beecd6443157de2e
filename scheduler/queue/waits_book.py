"""Which device each pending task waits for, as the dispatch pass that last planned it said.

The task rows keep why a task waits in words (``reason``); the metrics (``gputray_queue_waiting_tasks
{device=…}``) want the device itself, which only the pass's ``placement.Wait`` knows. The book is
written by the dispatcher (``QueueService._record_waits``) and read by a metrics scrape in another
thread: each write replaces one dict entry (atomic under the GIL) and a read copies the dict first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable

from gputray.scheduler.queue.placement import Wait
from gputray.scheduler.tasks.records import TaskRecord

NO_DEVICE = ""  # a wait for a time, a dependency, the paused queue, a backoff, or for any of several devices

# Events after which a task waits no more (it runs, or it ended).
_DONE_WAITING = frozenset({"started", "finished", "failed", "cancelled", "interrupted"})


class WaitsBook:
    def __init__(self) -> None:
        self._device_of: dict[int, str] = {}

    def note(self, waits: Iterable[tuple[TaskRecord, Wait]]) -> None:
        for task, wait in waits:
            self._device_of[task.id] = wait.device or NO_DEVICE

    def on_event(self, kind: str, task_id: int) -> None:
        if kind in _DONE_WAITING:
            self._device_of.pop(task_id, None)

    def by_device(self, pending: Container[int]) -> dict[str, int]:
        """Tasks still pending (``pending``: their ids) per device key they wait for; ``NO_DEVICE`` for
        the others. A pending task no pass has planned yet is not counted."""
        book = dict(self._device_of)
        return dict(Counter(device for task_id, device in book.items() if task_id in pending))
