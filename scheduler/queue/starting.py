"""The ``starting`` state on disk: the owner's commit to launch a task, and the recovery of a task an
earlier owner left ``starting`` (it had chosen the task and stopped before the job began).

The owner writes ``starting`` before it launches a job (``commit_to_start``, under the queue's lock,
once the launch is prepared) and ``running`` once the job's process exists (``lifecycle.Start``). A
cancel meanwhile wins: the start is then recorded against ``starting`` and refused, and the job
stopped. A row still ``starting`` when the next owner opens the queue is judged in two steps, both at
the owner's start, before anything is dispatched:

1. ``JobRuns.adopt_left_jobs``: a job whose run file says it began (the supervisor writes it before it
   starts the job) is adopted, ``starting → running`` (``Adopt``), and its end recorded as any other's;
2. here, every other one: whatever process still carries the task's marks (``GPUTRAY_TASK_ID`` and the
   queue file, ``jobs.orphans``) is stopped, and the task is queued again where it stood, its attempts
   as they were (``NotLaunched``): its job never ran, so it is neither lost nor run twice.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Protocol

from gputray.scheduler.jobs.orphans import kill_unrecorded_job
from gputray.scheduler.reasons.codes import StartCutShort
from gputray.scheduler.tasks.lifecycle import NotLaunched, Starting, Step
from gputray.scheduler.tasks.records import TaskRecord


class _Store(Protocol):
    path: Path
    clock: Callable[[], float]

    def list(self, *, states: Sequence[str]) -> list[TaskRecord]: ...

    def apply(self, task_id: int, step: Step, *, expect_state: str | None = None) -> TaskRecord | None: ...


class StartAbandoned(Exception):
    """The task changed since the dispatch pass chose it (cancelled, edited): nothing was launched."""


def commit_to_start(store: _Store, task: TaskRecord, device: str) -> TaskRecord:
    """``starting`` on ``device``, written before the job's process exists; StartAbandoned when the
    task is no longer in the state the pass saw."""
    starting = store.apply(task.id, Starting(device=device), expect_state=task.state)
    if starting is None:
        raise StartAbandoned(f"task #{task.id} changed before its job was launched")
    return starting


def requeue_unlaunched(
    store: _Store, *, kill_orphans: bool = True, skip: Collection[int] = ()
) -> list[tuple[TaskRecord, bool]]:
    """Each task left ``starting`` (less those in ``skip``: adopted) queued again; the new records,
    each with whether a leftover process carrying its marks was stopped."""
    out: list[tuple[TaskRecord, bool]] = []
    for rec in store.list(states=("starting",)):
        if rec.id in skip or rec.remote_id is not None:
            continue
        killed = kill_orphans and kill_unrecorded_job(rec.id, str(store.path))
        step = NotLaunched(reason=StartCutShort(stopped_leftover=killed), now=store.clock())
        new = store.apply(rec.id, step, expect_state="starting")
        if new is not None:
            out.append((new, killed))
    return out
