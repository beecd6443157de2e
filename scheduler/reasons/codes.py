"""What a task's reason says, as data: one Struct per kind of reason, with its typed arguments.

A reason is made where the decision is made (placement, the job's exit, the retry policy, the env
check …), stored with the task (``TaskStore``: the ``reason`` column holds its JSON; a row saved before
reasons had codes holds English, read back as ``Said``), carried typed over the owner's socket
(``TaskView.reason``) and put into words only where it is shown, by ``reasons.render`` in the reader's
language (``reasons/en/``, ``reasons/ja/``: one rendering per code, a test checks none is missing).

Arguments are the facts, never words: device and process names, sizes in bytes, temperatures in °C,
durations in seconds, task ids. What nests (a redirect says why its first choice was busy) holds the
inner reason itself, so each language joins and brackets them its own way. A new kind of reason is a
new Struct here (or, if it holds no other reason, in ``leaves``), added to ``Reason`` at the bottom,
with a rendering in each language.

Tense follows the task: ``render(reason, finished=True)`` for a task that has ended reads in the past
("ran on the CPU in place of Radeon 780M"), whoever recorded it and when.
"""

from collections.abc import Iterator

from gputray.scheduler.reasons.base import Code as Code
from gputray.scheduler.reasons.leaves import (
    Cancelled as Cancelled,
)
from gputray.scheduler.reasons.leaves import (
    CouldNotStart as CouldNotStart,
)
from gputray.scheduler.reasons.leaves import (
    DemoOnCpu as DemoOnCpu,
)
from gputray.scheduler.reasons.leaves import (
    DepState as DepState,
)
from gputray.scheduler.reasons.leaves import (
    DeviceBusy as DeviceBusy,
)
from gputray.scheduler.reasons.leaves import (
    DeviceGone as DeviceGone,
)
from gputray.scheduler.reasons.leaves import (
    DevicePaused as DevicePaused,
)
from gputray.scheduler.reasons.leaves import (
    EnvChecking as EnvChecking,
)
from gputray.scheduler.reasons.leaves import (
    EnvFailure as EnvFailure,
)
from gputray.scheduler.reasons.leaves import (
    EnvListUnreadable as EnvListUnreadable,
)
from gputray.scheduler.reasons.leaves import (
    EnvLookupFailed as EnvLookupFailed,
)
from gputray.scheduler.reasons.leaves import (
    EnvUnproven as EnvUnproven,
)
from gputray.scheduler.reasons.leaves import (
    ExitedWith as ExitedWith,
)
from gputray.scheduler.reasons.leaves import (
    FirstAbsent as FirstAbsent,
)
from gputray.scheduler.reasons.leaves import (
    FreeOn as FreeOn,
)
from gputray.scheduler.reasons.leaves import (
    HandedTo as HandedTo,
)
from gputray.scheduler.reasons.leaves import (
    HeldFor as HeldFor,
)
from gputray.scheduler.reasons.leaves import (
    JobCancelled as JobCancelled,
)
from gputray.scheduler.reasons.leaves import (
    JobCouldNotStart as JobCouldNotStart,
)
from gputray.scheduler.reasons.leaves import (
    JobFinished as JobFinished,
)
from gputray.scheduler.reasons.leaves import (
    JobPaused as JobPaused,
)
from gputray.scheduler.reasons.leaves import (
    JobResumed as JobResumed,
)
from gputray.scheduler.reasons.leaves import (
    JobStarted as JobStarted,
)
from gputray.scheduler.reasons.leaves import (
    KilledBy as KilledBy,
)
from gputray.scheduler.reasons.leaves import (
    LacksNeeds as LacksNeeds,
)
from gputray.scheduler.reasons.leaves import (
    LeftCluster as LeftCluster,
)
from gputray.scheduler.reasons.leaves import (
    Leftovers as Leftovers,
)
from gputray.scheduler.reasons.leaves import (
    LostWhileRunning as LostWhileRunning,
)
from gputray.scheduler.reasons.leaves import (
    MemoryShort as MemoryShort,
)
from gputray.scheduler.reasons.leaves import (
    MovedLate as MovedLate,
)
from gputray.scheduler.reasons.leaves import (
    Need as Need,
)
from gputray.scheduler.reasons.leaves import (
    NoEnvConfigured as NoEnvConfigured,
)
from gputray.scheduler.reasons.leaves import (
    NoEnvKnown as NoEnvKnown,
)
from gputray.scheduler.reasons.leaves import (
    NoEnvWorks as NoEnvWorks,
)
from gputray.scheduler.reasons.leaves import (
    NoRoom as NoRoom,
)
from gputray.scheduler.reasons.leaves import (
    NotPresent as NotPresent,
)
from gputray.scheduler.reasons.leaves import (
    OfferMade as OfferMade,
)
from gputray.scheduler.reasons.leaves import (
    Outlook as Outlook,
)
from gputray.scheduler.reasons.leaves import (
    OutputLost as OutputLost,
)
from gputray.scheduler.reasons.leaves import (
    OwnerStopped as OwnerStopped,
)
from gputray.scheduler.reasons.leaves import (
    Preferred as Preferred,
)
from gputray.scheduler.reasons.leaves import (
    Queued as Queued,
)
from gputray.scheduler.reasons.leaves import (
    QueuePaused as QueuePaused,
)
from gputray.scheduler.reasons.leaves import (
    RanOutOfMemory as RanOutOfMemory,
)
from gputray.scheduler.reasons.leaves import (
    RecordUnreadable as RecordUnreadable,
)
from gputray.scheduler.reasons.leaves import (
    RefusedBy as RefusedBy,
)
from gputray.scheduler.reasons.leaves import (
    RequeuedByRequest as RequeuedByRequest,
)
from gputray.scheduler.reasons.leaves import (
    RequeuedWith as RequeuedWith,
)
from gputray.scheduler.reasons.leaves import (
    RetryIn as RetryIn,
)
from gputray.scheduler.reasons.leaves import (
    RoomMade as RoomMade,
)
from gputray.scheduler.reasons.leaves import (
    RunningTask as RunningTask,
)
from gputray.scheduler.reasons.leaves import (
    Said as Said,
)
from gputray.scheduler.reasons.leaves import (
    SlotsTaken as SlotsTaken,
)
from gputray.scheduler.reasons.leaves import (
    StartCutShort as StartCutShort,
)
from gputray.scheduler.reasons.leaves import (
    StartedBeforeEdit as StartedBeforeEdit,
)
from gputray.scheduler.reasons.leaves import (
    StartHeld as StartHeld,
)
from gputray.scheduler.reasons.leaves import (
    StartsAt as StartsAt,
)
from gputray.scheduler.reasons.leaves import (
    SupervisorKilled as SupervisorKilled,
)
from gputray.scheduler.reasons.leaves import (
    TakenBack as TakenBack,
)
from gputray.scheduler.reasons.leaves import (
    TimedOut as TimedOut,
)
from gputray.scheduler.reasons.leaves import (
    TooBig as TooBig,
)
from gputray.scheduler.reasons.leaves import (
    TooHot as TooHot,
)
from gputray.scheduler.reasons.leaves import (
    Unanswered as Unanswered,
)
from gputray.scheduler.reasons.leaves import (
    Unplannable as Unplannable,
)
from gputray.scheduler.reasons.leaves import (
    WaitsForDeps as WaitsForDeps,
)
from gputray.scheduler.reasons.leaves import (
    WindowWait as WindowWait,
)

# -- words kept as they were written ------------------------------------------------------------------


class Chain(Code, frozen=True):
    """Several reasons that hold at once, in order (each language joins them its own way)."""

    parts: "tuple[Reason, ...]"


class Each(Code, frozen=True):
    """A list inside a reason (one per device …), joined as the language joins a list."""

    parts: "tuple[Reason, ...]"


class OnDevice(Code, frozen=True):
    """``why`` about one device among several: "GeForce RTX 5060 Ti: running 'train.py'"."""

    device: str
    why: "Reason"


# -- why one device cannot take the task (placement) --------------------------------------------------


# -- Python envs for torch tasks (pyenvs/choice.py) ----------------------------------------------------


# -- what placement decided ---------------------------------------------------------------------------


class FirstBusy(Code, frozen=True):
    """Its first choice (a device, or a preference such as "nvidia") is busy."""

    label: str
    why: "Reason"


class FirstCannot(Code, frozen=True):
    label: str
    why: "Reason"


class Redirected(Code, frozen=True):
    """Started elsewhere than its first choice; ``first`` says why not there."""

    target: str
    to_cpu: bool
    waited_s: float | None
    first: "Reason"


class NoDeviceCanRun(Code, frozen=True):
    why: "tuple[Reason, ...]"


class GaveUp(Code, frozen=True):
    waited_s: float
    label: str | None
    why: "Reason"


class WaitingFor(Code, frozen=True):
    label: str
    why: "Reason"


class WaitingForAny(Code, frozen=True):
    """Waiting for whichever device frees first; ``why`` is one ``OnDevice`` per device."""

    why: "tuple[Reason, ...]"


class Unestimated(Code, frozen=True):
    """``prefer`` asked for an estimate this job's family does not have yet; ``then`` is the rest."""

    prefer: str
    then: "Reason"


# -- a job's start and end (queue/job_runs.py, store's retry policy, start_backoff) -------------------


class RetryPlanned(Code, frozen=True):
    """After ``why``: retry ``n`` of ``total`` in ``delay_s`` (0: at once, ``total - n + 1`` left)."""

    why: "Reason"
    n: int
    total: int
    delay_s: float


class NoRetriesLeft(Code, frozen=True):
    why: "Reason"


# -- dependencies (queue/dependencies.py) --------------------------------------------------------------


class DependencyFailed(Code, frozen=True):
    """A task it waits for failed or was cancelled (``why``: that task's own reason, if it had one)."""

    dep: DepState
    why: "Reason | None" = None


# -- the cluster (cluster/bridge.py, cluster/link.py) ----------------------------------------------------


class Sending(Code, frozen=True):
    """Being handed to another machine; ``why`` it goes there (None: its first choice)."""

    machine: str
    why: "Reason | None" = None
    not_here: bool = False  # placed here first, but it could not start here


class OnMachine(Code, frozen=True):
    """What the machine that runs it says of it (``why``: its reason there)."""

    machine: str
    remote_id: int | None
    why: "Reason | None" = None


# -- what a queue event says (``QueueEvent.message``: the tray's notifications, the owner's log) -------


class Named(Code, frozen=True):
    """``why`` about the task ``name`` (on ``machine``, in a cluster): "train.py: exited with status 1"."""

    name: str
    why: "Reason"
    machine: str | None = None


Reason = (
    Said
    | Chain
    | Each
    | OnDevice
    | TooBig
    | LacksNeeds
    | DeviceGone
    | DevicePaused
    | HeldFor
    | RunningTask
    | SlotsTaken
    | QueuePaused
    | NoRoom
    | DeviceBusy
    | MemoryShort
    | TooHot
    | EnvChecking
    | NoEnvWorks
    | NoEnvKnown
    | NoEnvConfigured
    | EnvUnproven
    | EnvListUnreadable
    | EnvLookupFailed
    | FirstBusy
    | FirstCannot
    | FirstAbsent
    | NotPresent
    | Redirected
    | NoDeviceCanRun
    | GaveUp
    | WaitingFor
    | WaitingForAny
    | RetryIn
    | StartsAt
    | WindowWait
    | Unestimated
    | Preferred
    | JobPaused
    | JobResumed
    | RoomMade
    | DemoOnCpu
    | CouldNotStart
    | StartHeld
    | Cancelled
    | LostWhileRunning
    | OwnerStopped
    | StartCutShort
    | SupervisorKilled
    | Leftovers
    | OutputLost
    | RanOutOfMemory
    | MovedLate
    | TimedOut
    | KilledBy
    | ExitedWith
    | RetryPlanned
    | NoRetriesLeft
    | RequeuedByRequest
    | RequeuedWith
    | RecordUnreadable
    | Unplannable
    | WaitsForDeps
    | DependencyFailed
    | Sending
    | HandedTo
    | OnMachine
    | RefusedBy
    | TakenBack
    | StartedBeforeEdit
    | LeftCluster
    | Named
    | Queued
    | JobStarted
    | JobFinished
    | JobCancelled
    | JobCouldNotStart
    | OfferMade
    | Unanswered
)


def named(name: str, why: Reason | None, state: str) -> Named:
    """An event's words: the task's name and its reason (its state where it has none)."""
    return Named(name=name, why=why if why is not None else Said(text=state))


def codes() -> tuple[type[Code], ...]:
    """Every kind of reason (what each language must render)."""
    return tuple(Reason.__args__)


def inner(reason: Reason | None) -> Iterator[Reason]:
    """The reason and those it is made of (a chain's parts, what a retry or a failure came after)."""
    if reason is None:
        return
    yield reason
    if isinstance(reason, Chain | Each):
        for part in reason.parts:
            yield from inner(part)
    elif isinstance(reason, RetryPlanned | NoRetriesLeft):
        yield from inner(reason.why)


def says_how_it_ended(reason: Reason | None) -> bool:
    """Whether the reason gives the job's exit itself (its status, a signal, a timeout)."""
    return any(isinstance(r, ExitedWith | KilledBy | TimedOut) for r in inner(reason))


def chain(*parts: Reason | None) -> Reason | None:
    """The parts that are there, as one reason (None when none is)."""
    kept = tuple(q for p in parts if p is not None for q in (p.parts if isinstance(p, Chain) else (p,)))
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else Chain(parts=kept)
