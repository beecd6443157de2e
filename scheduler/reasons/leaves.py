"""The reasons that hold no other reason: facts only (a device, a size, a time, a task id). ``codes`` holds
the ones that nest and the ``Reason`` union over both; import them from there (``codes`` re-exports
these). Split from ``codes`` to keep each module small; a new reason goes in whichever fits.
"""

from typing import Annotated, Literal

import msgspec

from gputray.monitor.busy_why import BusyWhy, SampleSaid
from gputray.scheduler.reasons.base import Code
from gputray.scheduler.reasons.doctor_codes import Finding, Fix

# -- words kept as they were written ------------------------------------------------------------------


class Said(Code, frozen=True):
    """Words kept as written: a row saved before reasons had codes, an error's own message (an OS error,
    a refusal from another machine), a backend's words. Shown as they are in every language."""

    text: Annotated[str, msgspec.Meta(max_length=32_768)]  # as every text a request carries (protocol)


# -- why one device cannot take the task (placement) --------------------------------------------------


class Need(msgspec.Struct, frozen=True, kw_only=True):
    """A task's memory need: its ``vram``, or (``predicted``) what its model files need (``source``:
    "model.safetensors 7.2 GiB + 5 %")."""

    bytes: int
    predicted: bool = False
    source: str | None = None


class TooBig(Code, frozen=True):
    """The task's memory need is above all the memory the device has."""

    need: Need
    device: str
    total_bytes: int


class LacksNeeds(Code, frozen=True):
    """The doctor did not prove these ``needs`` (fp16 …) on the device."""

    device: str
    needs: tuple[str, ...]


class DeviceGone(Code, frozen=True):
    """The device is lost (fell off the bus) or gives no data; ``why``: what its backend said (a
    ``busy_why.SampleWhy`` code; text in a row stored before backends' reasons had codes)."""

    state: Literal["lost", "unavailable"]
    why: SampleSaid | None = None


class DevicePaused(Code, frozen=True):
    """The queue is paused on this device; ``taken_by``: by an exclusive app (a game) that uses it."""

    taken_by: str | None = None


class HeldFor(Code, frozen=True):
    """Kept free for a task that waited longest (the no-starvation rule)."""

    task_id: int


class RunningTask(Code, frozen=True):
    """One of our jobs holds the device's slot."""

    name: str


class QueuePaused(Code, frozen=True):
    """The whole queue is paused."""


class NoRoom(Code, frozen=True):
    """The queue's disk is (nearly) full: nothing starts (``problem``: the store's words)."""

    problem: str


class SlotsTaken(Code, frozen=True):
    """All its job slots are taken."""


class DeviceBusy(Code, frozen=True):
    """Someone else uses it: the monitor's verdict, rule by rule."""

    why: tuple[BusyWhy, ...]


class MemoryShort(Code, frozen=True):
    """Not enough memory free for the task's estimate now."""

    need: Need
    free_bytes: int
    where: Literal["vram", "shared", "ram"]  # discrete VRAM, an iGPU's GTT + carve-out, the CPU's RAM


class TooHot(Code, frozen=True):
    temp_c: float
    limit_c: float


# -- Python envs for torch tasks (pyenvs/choice.py) ----------------------------------------------------


class EnvChecking(Code, frozen=True):
    """An env is being checked on the device (seconds)."""

    env: str
    device: str | None  # None: the CPU
    demo_for: str | None = None  # a simulated GPU whose jobs run on the CPU


class EnvFailure(msgspec.Struct, frozen=True):
    """One env the doctor tried there, and what it found (``doctor_codes``; text: a row an earlier
    gputray saved, shown as written)."""

    env: str
    why: Finding | str


class NoEnvWorks(Code, frozen=True):
    """Every configured env failed on the device; the doctor's words and fix."""

    device: str | None
    demo_for: str | None = None
    failures: tuple[EnvFailure, ...] = ()
    fix: Fix | str | None = None


class NoEnvKnown(Code, frozen=True):
    device: str | None


class NoEnvConfigured(Code, frozen=True):
    """No env at all; ``command`` adds one."""

    demo: bool
    command: str


class EnvUnproven(Code, frozen=True):
    """An env works, but that its torch lands on this GPU is not proven."""

    env: str
    device: str | None
    why: str


class EnvListUnreadable(Code, frozen=True):
    error: str


class EnvLookupFailed(Code, frozen=True):
    error: str


# -- what placement decided ---------------------------------------------------------------------------


class FirstAbsent(Code, frozen=True):
    label: str


class NotPresent(Code, frozen=True):
    """No device matches (an eGPU unplugged)."""


class RetryIn(Code, frozen=True):
    delay_s: float


class StartsAt(Code, frozen=True):
    at_s: float
    with_date: bool  # not today (as seen when it was decided)


class WindowWait(Code, frozen=True):
    window: str  # its label, "22:00-06:00"


class Outlook(msgspec.Struct, frozen=True, kw_only=True):
    """One device's estimate for a ``fastest``/``greenest`` task."""

    device: str
    run_s: float
    wait_s: float | None  # None: when it frees is unknown
    energy_j: float | None = None
    past_factor: float | None = None  # greenest: finishes past this × the fastest finish


class Preferred(Code, frozen=True):
    """``prefer = fastest | greenest`` chose ``chosen`` over ``others`` (the arithmetic)."""

    prefer: str
    others: tuple[Outlook, ...]
    chosen: Outlook
    starts: bool  # runs there now; else waits for it
    energy: bool  # the figures include energy (greenest)


# -- a job's start and end (queue/job_runs.py, store's retry policy, start_backoff) -------------------


class JobPaused(Code, frozen=True):
    """Its job was paused by the user at ``at_s`` (``queue/job_pause.py``); what became of its GPU memory:
    ``moved`` to host memory by cuda-checkpoint, or ``held`` (``problem``: the tool's words)."""

    at_s: float
    memory: Literal["moved", "held"] | None = None
    problem: str | None = None
    for_task: int | None = None  # paused for this task (priority ``priority``), which preempts it
    priority: int = 0
    app: str | None = None  # paused while this exclusive app (a game) uses its GPU


class RoomMade(Code, frozen=True):
    """Making room (``queue/make_room.py``): ``resident`` holds ``held_bytes`` idle for ``idle_s`` —
    ``step`` "holds" (free it with ``gputray free-resident``), "idle_wait" (it would do once idle for
    ``bound_s``, its idle_after: then asked, or with ``ask`` offered), "asked", "freed" (``freed_bytes``
    back: starting), "not_freed" (not back within ``bound_s``), "refused" (``said``: its answer), "kept"
    (the user chose to keep waiting rather than free it for this task: ``kept_residents``)."""

    step: Literal["holds", "idle_wait", "asked", "freed", "not_freed", "refused", "kept"]
    resident: str
    held_bytes: int
    idle_s: float = 0.0
    freed_bytes: int = 0
    bound_s: float = 0.0
    said: str = ""
    ask: bool = False  # "idle_wait": its free_when_idle is "ask" (offered then, not asked)
    at_s: float = 0.0  # "idle_wait": when it will have been idle for ``bound_s`` (wall clock)


class JobResumed(Code, frozen=True):
    """Its paused job runs again (``by_you``: the pause was the user's); ``problem``: cuda-checkpoint
    could not restore its memory."""

    paused_at_s: float
    at_s: float
    by_you: bool = True
    problem: str | None = None
    for_task: int | None = None  # it was paused for this task (priority ``priority``)
    priority: int = 0
    app: str | None = None  # it was paused while this exclusive app (a game) used its GPU


class DemoOnCpu(Code, frozen=True):
    """A torch job on a simulated GPU runs on the CPU instead (tense follows the task)."""

    device: str


class CouldNotStart(Code, frozen=True):
    error: str


class StartHeld(Code, frozen=True):
    """A start that failed for want of fds, processes or memory, tried again later."""

    error: str
    delay_s: float
    tries: int


class Cancelled(Code, frozen=True):
    while_running: bool = False
    offline: bool = False  # cancelled with no owner up


class LostWhileRunning(Code, frozen=True):
    device: str


class OwnerStopped(Code, frozen=True):
    """gputray stopped while it ran."""

    stopped_leftover: bool = False  # its leftover process was stopped


class StartCutShort(Code, frozen=True):
    """gputray stopped after it chose the task to start and before its job began: queued again."""

    stopped_leftover: bool = False  # a process carrying its marks was stopped


class SupervisorKilled(Code, frozen=True):
    at_start: bool  # killed as the job started (else: how the job ended is unknown)
    stopped: int = 0  # processes of the job stopped
    unanswering: bool = False  # not killed: stopped (SIGSTOP) again and again, it answered nothing


class Leftovers(Code, frozen=True):
    """Processes still running after the job ended, stopped."""

    count: int


class OutputLost(Code, frozen=True):
    """Part of the job's output could not be written to its log (the disk was full)."""

    bytes: int


class FreeOn(msgspec.Struct, frozen=True, kw_only=True):
    """How much memory a device had free (``device`` None: the CPU)."""

    device: str | None
    free_bytes: int


class RanOutOfMemory(Code, frozen=True):
    """Its job ran out of memory on ``device`` (None: its device is not known; ``on_cpu``: the CPU) at
    ``at_bytes`` (0: not said); ``moved_to``: it runs again where that is free (``queue/oom_elsewhere``),
    else ``tried`` says what the devices it may use have free."""

    device: str | None
    on_cpu: bool = False
    at_bytes: int = 0
    moved_to: FreeOn | None = None
    where: Literal["vram", "shared", "ram"] = "vram"
    tried: tuple[FreeOn, ...] = ()
    no_other: bool = False  # it may use no other device (one named device, or more without --on-busy)


class MovedLate(Code, frozen=True):
    """Its job was stopped and queued again for ``to_device`` (``queue/late_move.py``): on ``from_device``
    (None: the CPU) its own progress (``done``, 0..1, after ``after_s`` seconds of work) said it would
    end in ``left_s``; there it would be done in ``there_s`` (``wait_s`` of that until the device frees)."""

    to_device: str | None
    from_device: str | None
    left_s: float
    done: float
    after_s: float
    there_s: float
    wait_s: float = 0.0


class TimedOut(Code, frozen=True):
    timeout_s: float


class KilledBy(Code, frozen=True):
    signal: str


class ExitedWith(Code, frozen=True):
    status: int


class RequeuedByRequest(Code, frozen=True):
    pass


class RequeuedWith(Code, frozen=True):
    """Queued again because a task it waited for was queued again."""

    task_id: int


class RecordUnreadable(Code, frozen=True):
    problem: str


class Unplannable(Code, frozen=True):
    """A stored time no pass can plan (past the year 9999, from an older gputray or a hand edit):
    ``which``, the task's start time or its retry's; ``problem``: the words an earlier gputray stored
    instead (shown as written)."""

    problem: str = ""
    which: Literal["start", "retry"] | None = None


# -- dependencies (queue/dependencies.py) --------------------------------------------------------------


class DepState(msgspec.Struct, frozen=True):
    task_id: int
    name: str
    state: str


class WaitsForDeps(Code, frozen=True):
    """Its ``after`` tasks have not succeeded (ended, with ``any_end``); a dependency in state
    ``removed`` is no longer in the queue (the words say how to edit task ``task_id``'s ``after``)."""

    deps: tuple[DepState, ...]
    any_end: bool  # after_any: waits for them to end, else to succeed
    task_id: int = 0


# -- the cluster (cluster/bridge.py, cluster/link.py) ----------------------------------------------------


class HandedTo(Code, frozen=True):
    """Queued on another machine, as ``remote_id`` there."""

    machine: str
    remote_id: int


class RefusedBy(Code, frozen=True):
    """The other machine's queue refused it; ``refusal`` is that machine's words."""

    machine: str
    refusal: str


class TakenBack(Code, frozen=True):
    """Taken back from the machine it waited on: to apply an edit (``free`` None), or because ``free``
    is free now. ``by`` set: what the machine it waited on is told (taken back *by* this one)."""

    machine: str
    free: str | None = None  # the machine that is free ("" for the one that tells)
    by: bool = False


class LeftCluster(Code, frozen=True):
    """The machine it was handed to left the cluster (while it ran there, or before)."""

    machine: str
    while_running: bool


class StartedBeforeEdit(Code, frozen=True):
    machine: str
    remote_id: int | None


class Unanswered(Code, frozen=True):
    """The machine that runs it has not answered since ``since_s``; its queue there keeps the task."""

    machine: str
    remote_id: int | None
    since_s: float


# -- what a queue event says (``QueueEvent.message``: the tray's notifications, the owner's log) -------


class Queued(Code, frozen=True):
    name: str
    task_id: int
    again: bool = False


class JobStarted(Code, frozen=True):
    """Started on ``device`` (None: the CPU; ``demo_for``: on the CPU in place of a simulated GPU)."""

    name: str
    device: str | None
    demo_for: str | None = None


class JobFinished(Code, frozen=True):
    name: str
    device: str | None
    demo_for: str | None = None


class JobCancelled(Code, frozen=True):
    name: str


class JobCouldNotStart(Code, frozen=True):
    name: str
    error: str


class OfferMade(Code, frozen=True):
    """The task has waited ``waited_s``; ``device`` is free and would run it in ``run_s``."""

    name: str
    waited_s: float
    device: str
    run_s: float
