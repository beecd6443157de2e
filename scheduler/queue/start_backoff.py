"""A start that failed for want of a resource for now (out of file descriptors, of processes or
threads, of memory) is not a task's failure: it waits, saying why, and is tried again after a
back-off that doubles per failure in a row (``FIRST_S`` … ``MAX_S``).

The queue keeps these in memory only: an owner that restarts simply tries again at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gputray.scheduler.jobs.supervisor_start import TRANSIENT_ERRNOS
from gputray.scheduler.queue.placement import Wait
from gputray.scheduler.reasons.codes import StartHeld
from gputray.scheduler.tasks.records import TaskRecord

FIRST_S = 1.0
MAX_S = 60.0


def is_transient(exc: BaseException) -> bool:
    """Whether a start failed only for want of a resource now (``transient`` on a LaunchFailed, an
    errno above, a thread that could not start, MemoryError)."""
    if getattr(exc, "transient", False):
        return True
    if isinstance(exc, OSError):
        return exc.errno in TRANSIENT_ERRNOS
    if isinstance(exc, MemoryError):
        return True
    return isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)


@dataclass(frozen=True)
class _Held:
    until_s: float
    error: str
    failures: int


class StartBackoff:
    """Tasks held back after a transient start failure, by task id."""

    def __init__(self) -> None:
        self._held: dict[int, _Held] = {}

    def hold(self, task_id: int, error: BaseException, now_s: float) -> Wait:
        """Hold the task back after ``error``; the Wait to record (its reason says why and until when)."""
        failures = self._held[task_id].failures + 1 if task_id in self._held else 1
        delay = min(MAX_S, FIRST_S * 2 ** (failures - 1))
        held = _Held(now_s + delay, str(error) or type(error).__name__, failures)
        self._held[task_id] = held
        return self._wait(held, now_s)

    @staticmethod
    def _wait(held: _Held, now_s: float) -> Wait:
        reason = StartHeld(error=held.error, delay_s=held.until_s - now_s, tries=held.failures)
        return Wait(reason, until_s=held.until_s)

    def next_due_s(self, now_s: float) -> float | None:
        """When the next held task may be tried again (the dispatcher wakes then)."""
        return min((h.until_s for h in self._held.values() if h.until_s > now_s), default=None)

    def started(self, task_id: int) -> None:
        self._held.pop(task_id, None)

    def split(
        self, pending: Sequence[TaskRecord], now_s: float
    ) -> tuple[list[TaskRecord], list[tuple[TaskRecord, Wait]]]:
        """The tasks free to be planned, and those still held back with their Waits."""
        if not self._held:
            return list(pending), []
        free, held = [], []
        pending_ids = set()
        for rec in pending:
            pending_ids.add(rec.id)
            h = self._held.get(rec.id)
            if h is not None and h.until_s > now_s:
                held.append((rec, self._wait(h, now_s)))
            else:
                free.append(rec)
        for task_id in [t for t in self._held if t not in pending_ids]:  # cancelled, removed meanwhile
            del self._held[task_id]
        return free, held
