"""Retention: ended tasks and their logs do not pile up forever.

Every few minutes (and once at start) the dispatcher removes the ended tasks (succeeded, failed,
cancelled) that ended more than ``keep_days`` ago and those beyond the newest ``keep_tasks``, with their
logs: the config's ``[retention]``. It is ``QueueEdits.clean``, the very function ``gputray clean
--older-than 7d --keep 1000`` runs, so the two never disagree: queued, waiting and running tasks are
never touched, nor an ended task that a queued one waits for (``--after``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from gputray.scheduler.tasks.records import TaskRecord

log = logging.getLogger("gputray.retention")

RETENTION_EVERY_S = 600.0  # how often the limits are applied (a 1 job/s queue overshoots by ~600 tasks)
DAY_S = 86_400.0


class Cleaner(Protocol):
    def clean(
        self, *, older_than_s: float | None = ..., keep: int | None = ..., states: Collection[str] = ...
    ) -> tuple[Sequence[TaskRecord], Sequence[str]]: ...


class Retention:
    """One of the dispatcher's timers (``QueueService.add_timer``): ``next_due_s`` / ``run_due``.
    ``keep_days`` or ``keep_tasks`` 0 turns that limit off; both 0, nothing is ever removed."""

    def __init__(
        self,
        queue: Cleaner,
        *,
        keep_days: float,
        keep_tasks: int,
        clock: Callable[[], float],
        every_s: float = RETENTION_EVERY_S,
    ) -> None:
        self.queue = queue
        self.older_than_s = keep_days * DAY_S if keep_days > 0 else None
        self.keep = keep_tasks if keep_tasks > 0 else None
        self.every_s = every_s
        self.removed = 0  # tasks removed so far (for benches and tests)
        on = self.older_than_s is not None or self.keep is not None
        self._next: float | None = clock() if on else None  # the first run at start

    def next_due_s(self) -> float | None:
        return self._next

    def run_due(self, now_s: float) -> int:
        """Apply the limits now; how many tasks went."""
        if self._next is None:
            return 0
        self._next = now_s + self.every_s
        gone, _kept = self.queue.clean(older_than_s=self.older_than_s, keep=self.keep)
        if gone:
            log.info("retention: removed %d ended task(s) and their logs", len(gone))
        self.removed += len(gone)
        return len(gone)
