"""Pause and resume a running job (``gputray pause-job`` / ``resume-job``, the panel's row menu).

A pause, in this order:

1. where ``cuda-checkpoint`` is on PATH, each CUDA process of the job is locked and checkpointed
   (``jobs.cuda_checkpoint``): its VRAM goes to host memory and the GPU is free of it; where the tool
   fails (UVM or IPC memory, a driver without checkpoints, no permission) the job keeps its memory and
   the reason says why;
2. the whole job is frozen (``jobs.freeze``: its cgroup's freezer, else SIGSTOP to every process in
   its reach; Windows: every thread suspended);
3. the pause file beside its log says since when (the supervisor's timeout stops counting; a later
   owner knows how it was frozen), the task's row says so (``paused_at``; the reason "paused by you at
   14:02"), and the log gets a line.

A resume writes the pause file first (the paused seconds added up, so that the supervisor, thawed with
the job under a cgroup freeze, sees its deadline moved on), thaws, restores and unlocks the CUDA state,
and the reason reads "paused by you at 14:02; resumed 14:07". While paused the job holds no slot on
its device (``Running.paused``: the next task may start there; the memory it still holds is counted
as used by the monitor); paused time counts neither to ``--timeout`` nor to the runtime the queue learns
(``TaskRecord.run_s``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, cast

from gputray.scheduler.jobs import freeze
from gputray.scheduler.jobs.cuda_checkpoint import CudaCheckpoint
from gputray.scheduler.jobs.job_files import PauseInfo, read_pause, write_pause
from gputray.scheduler.jobs.launcher import Job
from gputray.scheduler.paths import open_private_append
from gputray.scheduler.queue.edits import TaskStateError
from gputray.scheduler.queue.job_runs import JobRuns
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.codes import JobPaused, JobResumed
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.lifecycle import PauseJob, ResumeJob
from gputray.scheduler.tasks.records import TaskRecord, local_time

log = logging.getLogger("gputray.scheduler.queue.job_pause")


class PausedQueue(Protocol):
    """What pausing needs of the queue (``QueueService``)."""

    @property
    def store(self) -> TaskStore: ...

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def runs(self) -> JobRuns: ...

    def clock(self) -> float: ...

    def request_dispatch(self, *, urgent: bool = False) -> None: ...


class JobPauser:
    """Pause and resume the queue's running jobs; see the module docstring."""

    def __init__(
        self,
        queue: PausedQueue,
        *,
        checkpoint_tool: Callable[[], CudaCheckpoint | None] = CudaCheckpoint.found,
    ) -> None:
        self.queue = queue
        self._checkpoint_tool = checkpoint_tool
        self._busy = threading.Lock()  # one pause or resume at a time: the tool calls take a while

    def pause(
        self, task_id: int, *, for_task: tuple[int, int] | None = None, for_app: str | None = None
    ) -> TaskRecord:
        """Pause the running job of ``task_id``: by you, or (``for_task``: its id and priority) for a task
        that preempts it. TaskStateError when it is not running here or is paused already."""
        with self._busy:
            rec, job = self._running(task_id)
            if rec.paused_at is not None:
                raise TaskStateError(
                    f"task #{task_id} is paused already (since {local_time(rec.paused_at)}); "
                    f"gputray resume-job {task_id} resumes it"
                )
            processes = job.processes()
            tool = self._checkpoint_tool()
            checkpointed, held = self._checkpoint(tool, processes) if tool is not None else ((), None)
            try:
                frozen = freeze.freeze(processes)
            except freeze.FreezeFailed as exc:
                self._restore(tool, checkpointed)
                raise TaskStateError(f"task #{task_id} could not be paused: {exc}") from None
            now = self.queue.clock()
            who = f"for #{for_task[0]} (priority {for_task[1]})" if for_task is not None else "by you"
            who = f"while {for_app} uses its GPU" if for_app is not None else who
            why = f"paused {who} at {local_time(now)}"
            write_pause(
                job.files,
                PauseInfo(rec.paused_s, now, frozen.method, checkpointed, why),
            )
            memory = _memory_note(checkpointed, held)
            said = JobPaused(
                at_s=now,
                memory="held" if held is not None else "moved" if checkpointed else None,
                problem=held,
                for_task=for_task[0] if for_task is not None else None,
                priority=for_task[1] if for_task is not None else 0,
                app=for_app,
            )
            with self.queue.lock:
                paused = PauseJob(paused_at=now, reason=said)
                new = self.queue.store.must_apply(task_id, paused)
                self._mark(task_id, paused=True)
            _note(job.log_path, f"{why}: {_frozen_words(frozen)}" + (f"; {memory}" if memory else ""))
            log.info("task #%d: %s (%s)", task_id, why, frozen.method)
            return new

    def resume(self, task_id: int) -> TaskRecord:
        """Resume the paused job of ``task_id``; TaskStateError when it is not paused."""
        with self._busy:
            rec, job = self._running(task_id)
            pause = read_pause(job.files)
            if rec.paused_at is None or pause is None or not pause.paused:
                raise TaskStateError(f"task #{task_id} is not paused; nothing to resume")
            now = self.queue.clock()
            paused_s = rec.paused_s + max(0.0, now - rec.paused_at)
            # first the file: a supervisor frozen with the job wakes with its deadline already moved on
            write_pause(job.files, PauseInfo(paused_s, None, pause.method, (), pause.why))
            method = pause.method if pause.method in freeze.FREEZE_METHODS else "signals"
            freeze.thaw(job.processes(), cast(freeze.FreezeMethod, method))
            problems = self._restore(self._checkpoint_tool(), pause.checkpointed)
            before = rec.reason if isinstance(rec.reason, JobPaused) else None  # for whom it was paused
            resumed = JobResumed(
                paused_at_s=rec.paused_at,
                at_s=now,
                by_you=bool(pause.why)
                and (before is None or (before.for_task is None and before.app is None)),
                problem=problems[0] if problems else None,
                for_task=before.for_task if before is not None else None,
                priority=before.priority if before is not None else 0,
                app=before.app if before is not None else None,
            )
            with self.queue.lock:
                new = self.queue.store.must_apply(task_id, ResumeJob(paused_s=paused_s, reason=resumed))
                self._mark(task_id, paused=False)
            _note(job.log_path, f"resumed at {local_time(now)} after {_duration(now - rec.paused_at)} paused")
            log.info("task #%d: %s", task_id, render(resumed))
            return new

    def _mark(self, task_id: int, *, paused: bool) -> None:
        """Its slot is free while it is paused (its memory is counted by the monitor as long as it
        holds it): the next pass may start another task there."""
        running = self.queue.runs.jobs.get(task_id)
        if running is not None:
            running.paused = paused
        self.queue.runs.energy.pause(task_id, paused=paused)  # frozen: the device's energy is not its
        self.queue.request_dispatch(urgent=True)

    def _running(self, task_id: int) -> tuple[TaskRecord, Job]:
        with self.queue.lock:
            rec = self.queue.store.get(task_id)
            running = self.queue.runs.jobs.get(task_id)
        if rec.state != "running" or running is None:
            where = f" on {rec.machine}" if rec.machine else ""
            raise TaskStateError(
                f"task #{task_id} is {rec.state}{where}: only a job running here can be paused or resumed"
            )
        return rec, running.job

    @staticmethod
    def _checkpoint(
        tool: CudaCheckpoint, processes: freeze.JobProcesses
    ) -> tuple[tuple[int, ...], str | None]:
        """Checkpoint every CUDA process of the job: the pids done, and the first problem (None: none)."""
        done: list[int] = []
        problem: str | None = None
        for pid in freeze.in_reach(processes):
            if tool.state(pid) != "running":
                continue  # not a CUDA process (or one the tool cannot act on)
            outcome = tool.suspend(pid)
            if outcome.checkpointed:
                done.append(pid)
            elif problem is None:
                problem = outcome.problem
        return tuple(done), problem

    @staticmethod
    def _restore(tool: CudaCheckpoint | None, pids: tuple[int, ...]) -> list[str]:
        """Restore and unlock each checkpointed pid; the problems (the tool's words)."""
        if not pids:
            return []
        if tool is None:
            return ["cuda-checkpoint is no longer on PATH"]
        return [problem for pid in pids if (problem := tool.resume(pid)) is not None]


def _memory_note(checkpointed: tuple[int, ...], held: str | None) -> str:
    """What became of the job's GPU memory, for the reason (empty: no CUDA process, nothing to say)."""
    if held is not None:
        return f"its GPU memory stays held (cuda-checkpoint: {held})"
    if checkpointed:
        return "its GPU memory was moved to host memory (cuda-checkpoint)"
    return ""


def _frozen_words(frozen: freeze.Frozen) -> str:
    count = len(frozen.pids)
    processes = "1 process" if count == 1 else f"{count} processes"
    how = {"cgroup": "its cgroup's freezer", "signals": "SIGSTOP", "threads": "their threads suspended"}
    return f"{processes} frozen ({how[frozen.method]})"


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _note(log_path: Path, text: str) -> None:
    """A line in the job's log (``gputray: paused by you at 14:02: …``)."""
    try:
        with open(open_private_append(log_path), "a", encoding="utf-8") as f:  # no FIFO, no link
            f.write(f"\ngputray: {text}\n")
    except OSError:
        log.warning("could not append to %s", log_path)
