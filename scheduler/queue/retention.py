"""Retention: ended tasks and their logs do not pile up forever.

Every few minutes (and once at start) the dispatcher removes the ended tasks (succeeded, failed,
cancelled) that ended more than ``keep_days`` ago and those beyond the newest ``keep_tasks``, with their
logs: the config's ``[retention]``. It is ``QueueEdits.clean``, the very function ``gputray clean
--older-than 7d --keep 1000`` runs, so the two never disagree: queued, waiting and running tasks are
never touched, nor an ended task that a task staying names in ``--after``. The runtime history forgets
the job families not seen for ``keep_days`` (and keeps at most ``KEEP_FAMILIES``): each distinct script
is a family, and its rows would otherwise stay for ever.
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


class History(Protocol):
    def forget_unseen(self, seen_since_s: float | None) -> int: ...


class Retention:
    """One of the dispatcher's timers (``QueueService.add_timer``): ``next_due_s`` / ``run_due``.
    ``keep_days`` or ``keep_tasks`` 0 turns that limit off; both 0, no task is ever removed (the runtime
    history still keeps at most ``KEEP_FAMILIES`` families)."""

    def __init__(
        self,
        queue: Cleaner,
        *,
        keep_days: float,
        keep_tasks: int,
        clock: Callable[[], float],
        every_s: float = RETENTION_EVERY_S,
        history: History | None = None,
    ) -> None:
        self.queue = queue
        self.history = history
        self.older_than_s = keep_days * DAY_S if keep_days > 0 else None
        self.keep = keep_tasks if keep_tasks > 0 else None
        self.every_s = every_s
        self.removed = 0  # tasks removed so far (for benches and tests)
        self._limits = self.older_than_s is not None or self.keep is not None
        on = self._limits or history is not None  # the history's family cap holds with both limits off
        self._next: float | None = clock() if on else None  # the first run at start

    def next_due_s(self) -> float | None:
        return self._next

    def run_due(self, now_s: float) -> int:
        """Apply the limits now; how many tasks went."""
        if self._next is None:
            return 0
        self._next = now_s + self.every_s
        if self.history is not None:
            seen_since = now_s - self.older_than_s if self.older_than_s is not None else None
            forgotten = self.history.forget_unseen(seen_since)
            if forgotten:
                log.info("retention: forgot the runtimes of %d job family(ies) not seen lately", forgotten)
        if not self._limits:
            return 0  # clean with no limit removes every ended task: never from here
        gone, _kept = self.queue.clean(older_than_s=self.older_than_s, keep=self.keep)
        if gone:
            log.info("retention: removed %d ended task(s) and their logs", len(gone))
        self.removed += len(gone)
        return len(gone)
