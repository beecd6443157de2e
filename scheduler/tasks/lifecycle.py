"""A task's life: its states, the legal moves between them, and each move as a typed record (a *step*).

Every change of a task's row after its submit is one of the steps below, handed to
``TaskStore.apply`` (``queue/store.py``), the one place that writes them: it checks the step against
this table (``check``: an illegal move raises :class:`IllegalTransition`, it never becomes a row),
asks the step for its columns and writes them in one transaction. Nobody writes a state by name.

    queued ─┬─ Wait ──────────► waiting ─┐    (PlaceHere, HandOver, Handed, TakeBack: the cluster's
            │                            │     hand-over keeps a task pending here)
            ├─ Starting ◄────────────────┤
            ▼                            │
         starting ── NotLaunched (owner stopped before its job began) ──► queued
            │  ├── CouldNotStart ─────► failed;  Wait (no resource now) ─► waiting;  Cancel
            ├─ Start / Adopt (also from pending: an adopted job)
            ▼
         running ── Launched (its pid) ──┤
            │  ├── Succeed ────────────► succeeded ─┐
            │  ├── RetryOrFail ────────► queued | failed (retries left, or none)
            │  ├── Cancel ─────────────► cancelled ─┤
            │  └── Interrupt ──────────► interrupted ── RetryOrFail / Cancel
            │                                       │
    Fail, CouldNotStart (pending → failed)          └── Requeue (``retry`` by hand) ─► queued

``starting`` is on disk: the owner writes ``Starting`` once it commits to a launch, before the job's
process exists, and ``Start`` (running, with the pid) once it does. An owner that stops in between
leaves ``starting``; its successor adopts the job if the job's run file says it began (``Adopt``),
else stops whatever carries the task's marks and queues it again (``NotLaunched``): never lost, never
run twice. A start that fails is ``CouldNotStart`` (failed), or ``Wait`` for a resource lacking now.
A task another machine runs (the cluster) moves through
``HandOver`` (sending) → ``Handed`` (its id there) → ``RemoteRun`` (what it does there; the
``RemoteMark`` bookkeeping) → back with ``TakeBack`` or ``LostThere`` (that machine left): those
steps are in ``cluster_steps.py`` beside this module, on this module's table and ``Step``.

**Adding a state** (``frozen``, say) is a change in this folder only: its name in ``states.py`` (the
``TaskState`` literal and ``STATES``: names only, kept apart so that a listing filters by state without
loading this module), and here its row in ``EDGES`` (where it may go from and to) and a step class
per move into and out of it (``class Freeze(Step, tag="freeze")``: ``SOURCES``, ``to``, ``columns``;
one the bridge may send goes in ``cluster_steps.py`` and its ``ClusterStep``).
``tests/scheduler/tasks/test_lifecycle.py`` fails for a state without a row, a step whose moves the table
does not allow, and drives random sequences of every step through a real store to check each stored
history against ``EDGES``.

Steps are frozen msgspec Structs, tagged by ``step``: the cluster's bridge sends its steps to the
owner as they are (``protocol.ClusterUpdate``), so what crosses the process is the same typed record.
Their fields carry the limits a request's do (``Text``, ``Seconds`` …), checked when one is decoded.

One write is not a step: a saved row the store cannot read at all is shown ``failed`` when it opens
(``TaskStore._fail_unreadable``), whatever it said: that is the store's repair of a damaged file, not a
move of a task, and such a task never runs again (``RetryOrFail`` fails it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Protocol, cast

import msgspec
from msgspec import Meta

from gputray.scheduler.reasons.codes import NoRetriesLeft, Reason, RetryPlanned

# The states by name live in ``states`` (a listing filters by state without loading this module).
from gputray.scheduler.tasks.states import FINISHED_STATES as FINISHED_STATES
from gputray.scheduler.tasks.states import PENDING_STATES as PENDING_STATES
from gputray.scheduler.tasks.states import STATES as STATES
from gputray.scheduler.tasks.states import TaskState as TaskState

# Limits a step's fields are held to when it is decoded (the bridge's steps come over the socket): text
# as long as a request's, counts and ids within SQLite's integers, times and sizes finite.
Text = Annotated[str, Meta(max_length=32_768)]
Count = Annotated[int, Meta(ge=0, le=2**31)]
Id = Annotated[int, Meta(ge=0, le=2**63 - 1)]
Seconds = Annotated[float, Meta(ge=-(2.0**53), le=2.0**53)]
Joules = Annotated[float, Meta(ge=0, le=2.0**53)]
ExitCode = Annotated[int, Meta(ge=-(2**31), le=2**31)]
Position = Annotated[float, Meta(ge=-(2.0**53), le=2.0**53)]

MAX_BACKOFF_S = 3600.0  # the doubling backoff stops growing here (retry 8 of a 30 s backoff would wait 2 h)

PENDING: frozenset[TaskState] = frozenset({"queued", "waiting"})
STARTING: frozenset[TaskState] = frozenset({"starting"})
ENDED: frozenset[TaskState] = frozenset({"succeeded", "failed", "cancelled", "interrupted"})
ANY_STATE: frozenset[TaskState] = frozenset(cast("tuple[TaskState, ...]", STATES))

#: Every legal move, from → to (a step may stay in its state: a reason, a pid, the cluster's notes).
#: ``running → waiting`` and ``queued/waiting → succeeded`` are the cluster's only (``RemoteRun``): a
#: task run elsewhere was queued again there, or ran and ended there between two looks.
EDGES: Mapping[TaskState, frozenset[TaskState]] = {
    "queued": frozenset({"queued", "waiting", "starting", "running", "succeeded", "failed", "cancelled"}),
    "waiting": frozenset({"queued", "waiting", "starting", "running", "succeeded", "failed", "cancelled"}),
    "starting": frozenset({"starting", "running", "queued", "waiting", "failed", "cancelled"}),
    "running": frozenset({"running", "waiting", "queued", "succeeded", "failed", "cancelled", "interrupted"}),
    "interrupted": frozenset({"interrupted", "queued", "failed", "cancelled"}),
    "succeeded": frozenset({"succeeded", "queued"}),
    "failed": frozenset({"failed", "queued"}),
    "cancelled": frozenset({"cancelled", "queued"}),
}

Columns = dict[str, object]


class IllegalTransition(ValueError):
    """A step its task's state does not allow (a bug in the caller, or a request refused in words)."""


class _Spec(Protocol):
    @property
    def retries(self) -> int: ...

    @property
    def backoff_s(self) -> float: ...


class Row(Protocol):
    """What a step reads of the task it moves (``TaskRecord`` is one)."""

    @property
    def id(self) -> int: ...

    @property
    def state(self) -> str: ...

    @property
    def spec(self) -> _Spec: ...

    @property
    def reason(self) -> Reason | None: ...

    @property
    def attempts(self) -> int: ...

    @property
    def attempts_before(self) -> int: ...

    @property
    def ended_at(self) -> float | None: ...

    @property
    def overtakes(self) -> int: ...

    @property
    def started_at(self) -> float | None: ...

    @property
    def paused_at(self) -> float | None: ...


class Step(msgspec.Struct, frozen=True, kw_only=True, tag_field="step", forbid_unknown_fields=True):
    """One move of one task. ``SOURCES``: the states it may start from; ``to``: the state it leaves
    the task in; ``columns``: what it writes (the store adds nothing)."""

    SOURCES: ClassVar[frozenset[TaskState]] = frozenset()

    def to(self, row: Row) -> TaskState:
        return _state(row)

    def columns(self, row: Row) -> Columns:
        raise NotImplementedError


def _state(row: Row) -> TaskState:
    state = row.state
    if state in ANY_STATE:
        return state
    raise IllegalTransition(f"task #{row.id} is in an unknown state {state!r}")


def check(row: Row, step: Step) -> TaskState:
    """The state ``step`` leaves ``row`` in; raises IllegalTransition when the table does not allow it."""
    here = _state(row)
    name = type(step).__name__
    if here not in step.SOURCES:
        raise IllegalTransition(f"task #{row.id} is {here}: {name} is not a move from there")
    there = step.to(row)
    if there not in EDGES[here]:
        raise IllegalTransition(f"task #{row.id}: {name} would move it from {here} to {there}")
    return there


def allowed(row: Row, step: Step) -> bool:
    try:
        check(row, step)
    except IllegalTransition:
        return False
    return True


class JobEnd(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a job's process ended, written with the step that records it: its exit status, when, and
    (``measured``) the energy it used."""

    exit_code: ExitCode | None
    ended_at: Seconds
    measured: bool = False
    energy_j: Joules | None = None
    energy_shared: bool = False
    energy_estimated_s: Seconds = 0.0  # seconds of it counted from power (the energy counter glitched)
    paused_s: Seconds | None = None  # it ended while paused: its pause ends with it, at this total
    started_at: Seconds | None = None  # its start as its run's monotonic length places it (a set clock)

    def columns(self) -> Columns:
        cols: Columns = {
            "exit_code": self.exit_code,
            "ended_at": self.ended_at,
            "pid": None,
            "pid_create_time": None,
        }
        if self.measured:
            cols.update(energy_j=self.energy_j, energy_shared=self.energy_shared)
            cols["energy_estimated_s"] = self.energy_estimated_s
        if self.started_at is not None:
            cols["started_at"] = self.started_at
        if self.paused_s is not None:
            cols.update(paused_at=None, paused_s=self.paused_s)
        return cols


def retry_columns(row: Row, why: Reason, now: float, also: Columns, *, may_retry: bool = True) -> Columns:
    """The retry policy after a failure or interruption: queued again with a backoff while retries
    remain, else failed. One write, so nobody sees a passing ``failed`` for a task that will retry;
    ``also`` are further columns written with it (exit code, end time …)."""
    retries_used = max(0, row.attempts - row.attempts_before - 1)
    if may_retry and retries_used < row.spec.retries:
        delay = min(MAX_BACKOFF_S, row.spec.backoff_s * 2.0 ** min(retries_used, 60))
        return {
            **also,
            "state": "queued",
            "reason": RetryPlanned(why=why, n=retries_used + 1, total=row.spec.retries, delay_s=delay),
            "not_before": now + delay,
            "queued_at": now,
            "pid": None,
            "pid_create_time": None,
            "overtakes": 0,
        }
    rest = dict(also)
    ended = rest.pop("ended_at", None) or row.ended_at or now
    failed = NoRetriesLeft(why=why) if row.spec.retries else why
    return {**rest, "state": "failed", "reason": failed, "ended_at": ended}


def retries_left(row: Row) -> bool:
    return max(0, row.attempts - row.attempts_before - 1) < row.spec.retries


# --- this machine's queue ---------------------------------------------------------------------------


class Wait(Step, frozen=True, tag="wait"):
    """A pending task waits, saying why (and how often a later task overtook it). Writes only what
    differs (the dispatcher says it again every pass). From ``starting``: its launch lacked a resource
    for now (processes, files, memory) and is tried again later."""

    SOURCES = PENDING | STARTING
    reason: Reason
    overtakes: Count | None = None

    def to(self, row: Row) -> TaskState:
        return "waiting"

    def columns(self, row: Row) -> Columns:
        cols: Columns = {}
        if row.state != "waiting":
            cols["state"] = "waiting"
        if row.state == "starting":
            cols["device"] = None  # the device it was launching on is not its any more
        if row.reason != self.reason:
            cols["reason"] = self.reason
        if self.overtakes is not None and self.overtakes != row.overtakes:
            cols["overtakes"] = self.overtakes
        return cols


class Starting(Step, frozen=True, tag="starting"):
    """The owner commits to launching it on ``device``, before the job's process exists: a crash from
    here to ``Start`` leaves ``starting`` on disk, judged by the next owner (``NotLaunched``/``Adopt``)."""

    SOURCES = PENDING
    device: Text

    def to(self, row: Row) -> TaskState:
        return "starting"

    def columns(self, row: Row) -> Columns:
        return {"state": "starting", "device": self.device}


class NotLaunched(Step, frozen=True, tag="not_launched"):
    """Left ``starting`` by an owner that stopped before its job began (no run file: the job never
    ran): queued again where it stood, its attempts as they were (none was made)."""

    SOURCES = STARTING
    reason: Reason
    now: Seconds

    def to(self, row: Row) -> TaskState:
        return "queued"

    def columns(self, row: Row) -> Columns:
        return {"state": "queued", "reason": self.reason, "device": None, "queued_at": self.now}


class Start(Step, frozen=True, tag="start"):
    """Its job's process exists (``pid``; None: its supervisor died as it started, and the retry
    policy follows at once): running, attempt ``attempts``. From pending too: a start recorded in
    one step (the cluster's, tests')."""

    SOURCES = PENDING | STARTING
    device: Text
    env: Text | None
    reason: Reason | None
    attempts: Count
    started_at: Seconds
    log_path: Text
    pid: Id | None = None
    pid_create_time: Seconds | None = None

    def to(self, row: Row) -> TaskState:
        return "running"

    def columns(self, row: Row) -> Columns:
        return {
            "state": "running",
            "device": self.device,
            "env": self.env,
            "reason": self.reason,
            "attempts": self.attempts,
            "started_at": self.started_at,
            "ended_at": None,
            "exit_code": None,
            "log_path": self.log_path,
            "not_before": None,
            "energy_j": None,  # measured anew for this run (``job_energy``)
            "energy_shared": False,
            "paused_at": None,  # a run's pauses are its own (``job_pause``)
            "paused_s": 0.0,
            "pid": self.pid,
            "pid_create_time": self.pid_create_time,
        }


class CouldNotStart(Step, frozen=True, tag="could_not_start"):
    """The start it was chosen for could not be prepared or launched: failed, with what it would have
    run as (device, attempt, log) and why."""

    SOURCES = PENDING | STARTING
    start: Start
    reason: Reason
    ended_at: Seconds

    def to(self, row: Row) -> TaskState:
        return "failed"

    def columns(self, row: Row) -> Columns:
        cols = self.start.columns(row)
        cols.update(
            state="failed", reason=self.reason, ended_at=self.ended_at, pid=None, pid_create_time=None
        )
        return cols


class Adopt(Step, frozen=True, tag="adopt"):
    """A job an earlier owner started (its run file says so) before it marked the task running."""

    SOURCES = PENDING | STARTING
    device: Text
    attempts: Count
    started_at: Seconds
    log_path: Text
    pid: Id
    pid_create_time: Seconds | None

    def to(self, row: Row) -> TaskState:
        return "running"

    def columns(self, row: Row) -> Columns:
        return {
            "state": "running",
            "device": self.device,
            "attempts": self.attempts,
            "started_at": self.started_at,
            "ended_at": None,
            "exit_code": None,
            "log_path": self.log_path,
            "pid": self.pid,
            "pid_create_time": self.pid_create_time,
            "not_before": None,
            "reason": None,
        }


class Launched(Step, frozen=True, tag="launched"):
    """The pid of a running task's job, learnt after it was marked running (an adopted job)."""

    SOURCES = frozenset({"running"})
    pid: Id
    pid_create_time: Seconds | None

    def columns(self, row: Row) -> Columns:
        return {"pid": self.pid, "pid_create_time": self.pid_create_time}


class PauseJob(Step, frozen=True, tag="pause_job"):
    """Its running job is frozen (``queue/job_pause.py``): still ``running``, paused since ``paused_at``."""

    SOURCES = frozenset({"running"})
    paused_at: Seconds
    reason: Reason

    def columns(self, row: Row) -> Columns:
        return {"paused_at": self.paused_at, "reason": self.reason}


class ResumeJob(Step, frozen=True, tag="resume_job"):
    """Its frozen job runs again; ``paused_s``: the seconds of its pauses so far."""

    SOURCES = frozenset({"running"})
    paused_s: Seconds
    reason: Reason

    def columns(self, row: Row) -> Columns:
        return {"paused_at": None, "paused_s": self.paused_s, "reason": self.reason}


class ClockSet(Step, frozen=True, tag="clock_set"):
    """The wall clock was set by ``jump_s`` while its job runs: its start (and a pause in force, begun
    on the same clock) move with it, so how long it has run stays true."""

    SOURCES = frozenset({"running"})
    jump_s: Seconds

    def columns(self, row: Row) -> Columns:
        cols: Columns = {}
        if row.started_at is not None:
            cols["started_at"] = row.started_at + self.jump_s
        if row.paused_at is not None:
            cols["paused_at"] = row.paused_at + self.jump_s
        return cols


class Fail(Step, frozen=True, tag="fail"):
    """A pending task that can never start (a dependency failed, no device can take it …)."""

    SOURCES = PENDING
    reason: Reason
    ended_at: Seconds

    def to(self, row: Row) -> TaskState:
        return "failed"

    def columns(self, row: Row) -> Columns:
        return {"state": "failed", "reason": self.reason, "ended_at": self.ended_at}


class Cancel(Step, frozen=True, tag="cancel"):
    """Cancelled: pending, left interrupted, or its job stopped (``end``: how that job ended)."""

    SOURCES = frozenset({"queued", "waiting", "starting", "interrupted", "running"})
    reason: Reason
    ended_at: Seconds
    end: JobEnd | None = None

    def to(self, row: Row) -> TaskState:
        return "cancelled"

    def columns(self, row: Row) -> Columns:
        cols: Columns = {"state": "cancelled", "reason": self.reason, "ended_at": self.ended_at}
        if self.end is not None:
            cols.update(self.end.columns())
        return cols


class Succeed(Step, frozen=True, tag="succeed"):
    """Its job exited 0 (``reason``: a note to keep, as the demo's "ran on the CPU")."""

    SOURCES = frozenset({"running"})
    end: JobEnd
    reason: Reason | None = None

    def to(self, row: Row) -> TaskState:
        return "succeeded"

    def columns(self, row: Row) -> Columns:
        cols: Columns = {"state": "succeeded", **self.end.columns()}
        if self.reason is not None:
            cols["reason"] = self.reason
        return cols


class RetryOrFail(Step, frozen=True, tag="retry_or_fail"):
    """Its attempt failed or was interrupted: the retry policy (``retry_columns``) queues it again or
    fails it. ``may_retry=False``: failed whatever its retries (its saved row cannot be read)."""

    SOURCES = frozenset({"running", "interrupted"})
    why: Reason
    now: Seconds
    end: JobEnd | None = None
    may_retry: bool = True

    def to(self, row: Row) -> TaskState:
        return "queued" if self.may_retry and retries_left(row) else "failed"

    def columns(self, row: Row) -> Columns:
        also = self.end.columns() if self.end is not None else {}
        return retry_columns(row, self.why, self.now, also, may_retry=self.may_retry)


class RunElsewhere(Step, frozen=True, tag="run_elsewhere"):
    """Out of memory, and a device where it fits is free (``queue/oom_elsewhere.py``), or its progress
    says it ends late and another device would finish it clearly earlier (``queue/late_move.py``):
    queued again at once, whatever its retries (then pointed at that device, once:
    ``TaskStore.replace_spec``). The attempt it ends is no failure: it uses none of the retries."""

    SOURCES = frozenset({"running"})
    reason: Reason
    now: Seconds
    end: JobEnd | None = None

    def to(self, row: Row) -> TaskState:
        return "queued"

    def columns(self, row: Row) -> Columns:
        also = self.end.columns() if self.end is not None else {}
        return {
            **also,
            "state": "queued",
            "reason": self.reason,
            "not_before": None,
            "queued_at": self.now,
            "attempts_before": row.attempts_before + 1,  # counted on, not as a retry (``retries_left``)
        }


class Interrupt(Step, frozen=True, tag="interrupt"):
    """The owner stopped (crashed) while its job ran: interrupted, then ``RetryOrFail``."""

    SOURCES = frozenset({"running"})
    reason: Reason
    ended_at: Seconds

    def to(self, row: Row) -> TaskState:
        return "interrupted"

    def columns(self, row: Row) -> Columns:
        return {"state": "interrupted", "ended_at": self.ended_at, "reason": self.reason}


class Requeue(Step, frozen=True, tag="requeue"):
    """``retry`` by hand: queued again at ``position`` (the end); attempts count on ("attempt 2") while
    its automatic retries start afresh; placed afresh on any machine its spec allows."""

    SOURCES = ENDED
    reason: Reason
    now: Seconds
    position: Position

    def to(self, row: Row) -> TaskState:
        return "queued"

    def columns(self, row: Row) -> Columns:
        return {
            "state": "queued",
            "reason": self.reason,
            "attempts_before": row.attempts,
            "exit_code": None,
            "started_at": None,
            "ended_at": None,
            "device": None,
            "env": None,
            "pid": None,
            "pid_create_time": None,
            "not_before": None,
            "queued_at": self.now,
            "overtakes": 0,
            "position": self.position,
            "machine": None,
            "remote_id": None,
            "remote_state": None,
            "energy_j": None,
            "energy_shared": False,
        }


class Note(Step, frozen=True, tag="note"):
    """A new reason, nothing else (where a task handed elsewhere stands, a machine gone silent)."""

    SOURCES = ANY_STATE
    reason: Reason

    def columns(self, row: Row) -> Columns:
        return {"reason": self.reason}
