"""A running job that its own progress shows ending late is run again where it finishes clearly
earlier (``on_late``): the placement of a job family that never ran rests on a class default (a
discrete GPU 4× an integrated one) until the job itself says how fast it goes, and a diffusion job
placed on the idle iGPU that way runs there for hours while the dGPU would have done it in minutes.

**When.** A running job of ours that reports its progress (``job_progress``: ``done`` after ``after_s``
seconds of work, its end ``left_s`` away at its pace since its first progress line) is compared with
a restart on each other device it may use (its preferences, ``estimator.allowed_devices``): there it
would be done in that device's free-in (0 when free now; ``Outlook.free_in`` when our jobs or another
program hold it; unknown, or only guessed because no earlier spell of another program's use lasted as
long: not considered) + its family's run there (``Outlook.run_s``: the family's runs there, else
scaled by the doctor's measured speed ratio or the class default, from the runs it had or, for a
family that never ran, from this job's own projected whole run). It is moved to the earliest such
device when all hold:

* it finishes there at least ``MIN_GAIN``× sooner than it would where it is, and ``MIN_SAVED_S`` sooner;
* little work is lost: at most ``MAX_DONE`` of it is done, and it has worked ``MIN_WORK_S`` (a first
  second of progress says little);
* its task lets it: ``on_late = "move"``, or ``"auto"`` (the default) with ``prefer = "fastest"``;
  ``on_late = "stay"`` is how a task says its job must not be restarted;
* it is not paused, not already being stopped, and has somewhere else to go (a pinned task has not);
  it is not a task another machine of the cluster handed here (that machine placed it and follows it).

**How.** The job is stopped (``Job.cancel("moved")``); its end is the lifecycle's ``RunElsewhere``
(queued again at once, whatever its retries) with the reason ``MovedLate`` saying the arithmetic
("moved to GeForce RTX 5060 Ti: on Radeon 780M it would end in ~2 h 30 min (3 % after 4 min); there in
~16 min"), also written at the end of its log; its spec is pointed at that device alone, waiting for
it, with ``on_late = "stay"``: a task is moved once, never twice. ``late_move_timer.LateMoves`` looks
every ``LOOK_S``; ``decide`` (here) is pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from gputray.scheduler.queue.estimates import Outlook
from gputray.scheduler.queue.estimator import allowed_devices
from gputray.scheduler.queue.job_progress import left_s
from gputray.scheduler.queue.placement import DeviceState, Wait, busy_reason
from gputray.scheduler.queue.placement_policy import options
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.codes import MovedLate, Reason
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

MAX_DONE = 0.15  # at most this much of the job is lost to a move
MIN_WORK_S = 5.0  # its progress counts once it has worked this long
MIN_GAIN = 1.5  # the restart must finish at least this many times sooner than staying …
MIN_SAVED_S = 60.0  # … and at least this much sooner


@dataclass(frozen=True)
class LateJob:
    """A running job as the decider sees it: its task (running, ``device`` set), the fraction its own
    output says is done (``job_progress``), the seconds it has worked (its pauses not counted) and, where
    known, the seconds of work ``done`` stands for at its pace since its first progress line
    (``job_progress.paced_s``: a model's loading before its bar does not count as slowness)."""

    task: TaskRecord
    done: float
    worked_s: float
    paced_s: float | None = None


@dataclass(frozen=True)
class Move:
    """Stop ``task_id``'s job and queue it again as ``spec`` (pointed at ``device`` alone), saying
    ``reason``."""

    task_id: int
    device: str
    spec: TaskSpec
    reason: MovedLate


def may_move(spec: TaskSpec) -> bool:
    """Whether the task lets its job be moved (``on_late``); never one another machine handed here
    (``origin``: that machine placed it, and follows it)."""
    if spec.origin is not None:
        return False
    return spec.on_late == "move" or (spec.on_late == "auto" and spec.prefer == "fastest")


def decide(jobs: Sequence[LateJob], devices: Sequence[DeviceState], outlook: Outlook) -> list[Move]:
    """The jobs to move and where (see the module docstring); at most one per device per look."""
    moves: list[Move] = []
    taken: set[str] = set()
    by_key = {d.key: d for d in devices}
    for job in jobs:
        rec = job.task
        here = by_key.get(rec.device or "")
        if here is None or not may_move(rec.spec) or rec.paused_at is not None:
            continue
        if job.done > MAX_DONE or job.worked_s < MIN_WORK_S:
            continue
        left = None if job.paced_s is None else left_s(job.done, job.paced_s)
        if left is None:  # a pace not kept for a few seconds yet: a first progress line says little
            continue
        others = [d for d in allowed_devices(rec, devices) if d.key != here.key and d.key not in taken]
        why_busy = {d.key: busy_reason(rec, d) for d in others}
        # a device another program holds counts when such use was seen to end before: a restart
        # thrown at a guessed end ("as long again as so far") could wait there for hours
        known = [
            o
            for o in options(rec, others, why_busy, {}, outlook)
            if o.finish_s is not None and not (o.wait_s and o.device.key in outlook.free_in_guessed)
        ]
        if not known:
            continue
        best = min(known, key=lambda o: (o.finish_s or 0.0, o.run_s))
        there = best.finish_s or 0.0
        if there * MIN_GAIN > left or left - there < MIN_SAVED_S:
            continue
        target = best.device
        reason = MovedLate(
            to_device=None if target.is_cpu else target.name,
            from_device=None if here.is_cpu else here.name,
            left_s=left,
            done=job.done,
            after_s=job.worked_s,
            there_s=there,
            wait_s=best.wait_s or 0.0,
        )
        spec = msgspec.structs.replace(
            rec.spec, device_prefs=(target.key,), on_busy="wait", max_wait_s=None, on_late="stay"
        )
        moves.append(Move(rec.id, target.key, spec, reason))
        taken.add(target.key)
    return moves


def moved_step(
    move: Move | None, *, end: life.JobEnd, now: float, left: Reason | None
) -> tuple[life.Step, TaskSpec | None, Reason]:
    """How a job stopped for ``move`` ended, as the store records it: ``RunElsewhere`` (then its spec
    pointed there), and what it says. ``move`` None: the owner that stopped it is gone (it knew where
    to), so the job counts as interrupted and the retry policy decides."""
    if move is None:
        why = c.chain(c.OwnerStopped(), left) or c.OwnerStopped()
        return life.RetryOrFail(why=why, now=now, end=end), None, why
    why = c.chain(move.reason, left) or move.reason
    return life.RunElsewhere(reason=why, now=now, end=end), move.spec, why


def with_move_notes(waits: Sequence[tuple[TaskRecord, Wait]]) -> list[tuple[TaskRecord, Wait]]:
    """The dispatcher's waits, each of a task moved to wait for its device (here, or out of memory:
    ``oom_elsewhere``) with why it was moved before why it waits: each pass writes a waiting task's
    reason afresh, and "waiting for GeForce RTX 5060 Ti: llama-server …" alone would hide why it no
    longer runs where it did. Its start keeps it too (``JobRuns._start``)."""
    out = []
    for task, wait in waits:
        moved = next((r for r in c.inner(task.reason) if _moved(r)), None)
        if moved is not None and not any(r == moved for r in c.inner(wait.reason)):
            wait = dataclasses.replace(wait, reason=c.chain(moved, wait.reason) or moved)
        out.append((task, wait))
    return out


def _moved(reason: Reason) -> bool:
    return isinstance(reason, c.MovedLate) or (
        isinstance(reason, c.RanOutOfMemory) and reason.moved_to is not None
    )
