"""Priority with teeth, when asked: a task with ``--preempt`` (or every task, with ``[queue] preempt =
"priority"``) that waits because lower-priority jobs of ours hold its device pauses the lowest-priority
of them that free enough, starts, and resumes them when it ends.

* Which device: those of its first device preference it could ever run on (``never_fits``).
* Which jobs: ours there, running, of a lower priority, whose task does not say ``preemptible =
  false``, not themselves running in place of a paused job and never paused for another before in
  this run (one level of pausing per job, no ping-pong), lowest priority first, then the latest
  started. As few as free a slot and, where ``cuda-checkpoint`` gives their VRAM back, the memory
  (``busy_reason`` of the device without them must be None); else none are paused.
* How: ``JobPauser.pause`` (the reason says "paused for #31 (priority 10) at 14:02"); a paused job holds
  no slot (``device_book``), so the next pass starts the task there.
* Back: when the task it was paused for is no longer running, or after ``max_pause_s`` whatever
  happens (the task it was paused for then runs beside it; one not started yet waits on).

``Preemption`` is a dispatcher timer (``QueueService.add_timer``): it looks every second while a task
that may preempt waits or a job is paused for one, every 2 s otherwise; ``choose`` is pure.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from gputray.scheduler.jobs.cuda_checkpoint import TOOL
from gputray.scheduler.queue.device_book import DeviceBook
from gputray.scheduler.queue.edits import TaskStateError
from gputray.scheduler.queue.job_pause import JobPauser
from gputray.scheduler.queue.job_runs import JobRuns, Running
from gputray.scheduler.queue.placement import DeviceState, busy_reason, never_fits, resolve_pref
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.leaves import JobPaused
from gputray.scheduler.replies import Paused
from gputray.scheduler.tasks.records import TaskRecord

log = logging.getLogger("gputray.scheduler.queue.preemption")

LOOK_S = 1.0  # while a task that may preempt waits, or a job is paused for one
IDLE_LOOK_S = 2.0  # otherwise (a look lists the pending tasks: cheap, but not free)
DEFAULT_PREFS = ("any",)


@dataclass(frozen=True)
class Candidate:
    """One of our running jobs, as preemption sees it."""

    task_id: int
    device: str
    priority: int
    started_at: float
    memory_bytes: int  # what pausing it may free (its need, when its VRAM can be checkpointed); else 0
    pausable: bool  # preemptible, not paused, not running in place of others, never paused for one


@dataclass(frozen=True)
class Choice:
    """Pause ``victims`` (task ids) on ``device`` and ``task`` can start there."""

    device: str
    victims: tuple[int, ...]


def choose(task: TaskRecord, devices: Sequence[DeviceState], jobs: Sequence[Candidate]) -> Choice | None:
    """The fewest lower-priority jobs to pause on one of the task's first-choice devices so that it
    may start there; None when no such set exists (or it can start without)."""
    prefs = task.spec.device_prefs or DEFAULT_PREFS
    best: Choice | None = None
    for dev in resolve_pref(prefs[0], devices):
        if never_fits(task, dev) is not None or busy_reason(task, dev) is None:
            continue
        lower = sorted(
            (j for j in jobs if j.device == dev.key and j.pausable and j.priority < task.spec.priority),
            key=lambda j: (j.priority, -j.started_at),
        )
        state = dev
        taken: list[int] = []
        for job in lower:
            taken.append(job.task_id)
            state = dataclasses.replace(
                state,
                running=max(0, state.running - 1),
                running_names=state.running_names[1:],
                extra_used_bytes=state.extra_used_bytes - job.memory_bytes,  # checkpointed: given back
            )
            if busy_reason(task, state) is None:
                if best is None or len(taken) < len(best.victims):
                    best = Choice(dev.key, tuple(taken))
                break
    return best


class PreemptingQueue(Protocol):
    """What preemption needs of the queue (``QueueService``)."""

    @property
    def store(self) -> TaskStore: ...

    @property
    def runs(self) -> JobRuns: ...

    @property
    def device_book(self) -> DeviceBook: ...

    def paused(self) -> Paused: ...

    def clock(self) -> float: ...

    def request_dispatch(self, *, urgent: bool = False) -> None: ...


def paused_before(queue: PreemptingQueue) -> Iterator[tuple[Running, TaskRecord, JobPaused]]:
    """Our running jobs that are paused, with the stored reason that says why: what an owner that
    adopted them (jobs outlive their owner) reads to know who is to resume them."""
    for running in list(queue.runs.jobs.values()):
        try:
            rec = queue.store.get(running.task_id)
        except KeyError:
            continue
        if rec.paused_at is not None and isinstance(rec.reason, JobPaused):
            yield running, rec, rec.reason


@dataclass
class _Paused:
    for_task: int
    paused_at: float


class Preemption:
    """The dispatcher's timer that pauses for and resumes after preempting tasks (module docstring)."""

    def __init__(
        self,
        queue: PreemptingQueue,
        pauser: JobPauser,
        *,
        every_task: bool = False,
        max_pause_s: float = 3600.0,
        checkpoints: Callable[[], bool] = lambda: shutil.which(TOOL) is not None,
    ) -> None:
        self.queue = queue
        self.pauser = pauser
        self.every_task = every_task
        self.max_pause_s = max_pause_s
        self._checkpoints = checkpoints
        self.paused_for: dict[int, _Paused] = {}  # victim task id -> the task it was paused for
        self._once: set[tuple[int, int]] = set()  # (victim, attempt) paused for another once already
        self._next_s: float | None = None
        self.preemptions = 0  # victims paused so far (benches, tests)
        self.looks = 0  # looks taken (tests wait for one)

    def next_due_s(self) -> float | None:
        return self._next_s if self._next_s is not None else 0.0  # never looked yet: at once

    def run_due(self, now_s: float) -> None:
        if self.looks == 0:
            self._adopt_paused()
        self.looks += 1
        self._resume_done(now_s)
        waiting = [
            r for r in self.queue.store.pending(active_only=True)
            if r.state == "waiting" and (r.spec.preempt or self.every_task)
        ]  # fmt: skip
        for task in waiting:  # highest priority first (the store's order)
            if self._preempt_for(task, now_s):
                break  # one at a time: the next pass places it, the next look sees the new state
        busy = bool(waiting or self.paused_for)
        self._next_s = now_s + (LOOK_S if busy else IDLE_LOOK_S)

    def _adopt_paused(self) -> None:
        """Jobs an earlier owner paused for a preempting task (and that outlived it) are resumed when
        that task ends, as if this owner had paused them: the task is named in the stored reason."""
        for _running, rec, why in paused_before(self.queue):
            if why.for_task is not None:
                self.paused_for[rec.id] = _Paused(why.for_task, rec.paused_at or 0.0)
                self._once.add((rec.id, rec.attempts))
                log.info("task #%d: paused for #%d before this owner started", rec.id, why.for_task)

    def _resume_done(self, now_s: float) -> None:
        for victim, why in list(self.paused_for.items()):
            try:
                preemptor = self.queue.store.get(why.for_task)
            except KeyError:
                preemptor = None
            still = preemptor is not None and preemptor.state in ("running", "queued", "waiting")
            if still and now_s - why.paused_at < self.max_pause_s:
                continue
            del self.paused_for[victim]
            try:
                self.pauser.resume(victim)
            except (TaskStateError, KeyError) as exc:  # it ended, or someone resumed it by hand
                log.info("task #%d: not resumed after #%d: %s", victim, why.for_task, exc)

    def _candidates(self) -> list[Candidate]:
        frees_memory = self._checkpoints()
        preempting = {why.for_task for why in self.paused_for.values()}
        jobs: list[Candidate] = []
        for running in list(self.queue.runs.jobs.values()):
            try:
                rec = self.queue.store.get(running.task_id)
            except KeyError:
                continue
            jobs.append(
                Candidate(
                    task_id=running.task_id,
                    device=running.device,
                    priority=running.spec.priority,
                    started_at=rec.started_at or 0.0,
                    memory_bytes=(running.spec.memory_need_bytes or 0) if frees_memory else 0,
                    pausable=self._pausable(running, rec, preempting),
                )
            )
        return jobs

    def _pausable(self, running: Running, rec: TaskRecord, preempting: set[int]) -> bool:
        return (
            running.spec.preemptible
            and not running.paused
            and rec.paused_at is None
            and running.task_id not in preempting
            and (running.task_id, rec.attempts) not in self._once
        )

    def _preempt_for(self, task: TaskRecord, now_s: float) -> bool:
        runs = list(self.queue.runs.jobs.values())
        book = self.queue.device_book
        devices = book.states(book.monitor.latest, runs, self.queue.paused())
        choice = choose(task, devices, self._candidates())
        if choice is None:
            return False
        by = f"#{task.id} (priority {task.spec.priority})"
        for victim in choice.victims:
            try:
                rec = self.pauser.pause(victim, for_task=(task.id, task.spec.priority))
            except (TaskStateError, KeyError) as exc:
                log.info("task #%d: not paused for %s: %s", victim, by, exc)
                continue
            self.paused_for[victim] = _Paused(task.id, now_s)
            self._once.add((victim, rec.attempts))
            self.preemptions += 1
            log.info("task #%d paused for %s on %s", victim, by, choice.device)
        self.queue.request_dispatch(urgent=True)
        return True
