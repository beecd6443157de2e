"""The owner's replies, one typed record per op (``class Queue(Request[QueueReply])`` in ``protocol``).

The tray gets them as the handlers return them; the IPC client decodes each into its op's type, so an
owner of another version answering a field this one does not know, or a wrong type, is a clear error.
Times are epoch seconds or None; ``commands.common.task_json`` writes the ``--json`` document.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from gputray.scheduler.lazy_import import lazy_module
from gputray.scheduler.tasks.offer import Offer

# Named in annotations only, resolved when a reply of theirs is first decoded or encoded: a client that
# gets none (``gputray queue``) never loads the monitor's records or the task model (``lazy_import``).
# This module's annotations are evaluated (no ``from __future__ import annotations``: msgspec would
# evaluate each string on the first decode, ~260 of them for a `queue` reply), so an annotation that
# names one of these modules is written in quotes, else defining the class would load it.
if TYPE_CHECKING:
    from gputray.monitor import busy_why
    from gputray.monitor import records as monitor_records
    from gputray.monitor import residents as monitor_residents
    from gputray.scheduler import cluster_records
    from gputray.scheduler.reasons import codes as reason_codes
    from gputray.scheduler.reasons import refusals as reason_refusals
    from gputray.scheduler.tasks import records as task_records
    from gputray.scheduler.tasks.records import TaskRecord
else:
    busy_why = lazy_module("gputray.monitor.busy_why")
    monitor_records = lazy_module("gputray.monitor.records")
    monitor_residents = lazy_module("gputray.monitor.residents")
    cluster_records = lazy_module("gputray.scheduler.cluster_records")
    reason_codes = lazy_module("gputray.scheduler.reasons.codes")
    reason_refusals = lazy_module("gputray.scheduler.reasons.refusals")
    task_records = lazy_module("gputray.scheduler.tasks.records")

__all__ = ["Offer"]  # defined beside QueueEvent, which carries it; part of the replies (TaskView.offer)


class Reply(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every reply."""


class Paused(msgspec.Struct, frozen=True, rename={"all": "queue"}):
    """What ``gputray pause`` stopped: the whole queue (``all``) and devices by key. Also the shape of
    ``paused.json`` (``{"queue": bool, "devices": [...]}``, as gputray has always written it)."""

    all: bool = False
    devices: frozenset[str] = frozenset()

    def pausing(self, key: str | None) -> "Paused":
        """Paused also: the device ``key``, or the whole queue (None)."""
        return Paused(all=key is None or self.all, devices=self.devices | ({key} if key else set()))

    def resuming(self, key: str | None) -> "Paused":
        """Resumed: the device ``key``, or (None) the whole queue *and* every device."""
        return Paused() if key is None else Paused(all=self.all, devices=self.devices - {key})


class Estimate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A pending task's estimate on one device it may use (``queue --json``'s ``estimate_s``), from the
    runs of its job family (``queue.estimates``): ``run_s`` its run there, ``finish_s`` seconds from now
    until it would end there (the device's estimated wait + ``run_s``; None when its wait is unknown);
    ``runs`` how many recent runs there ``run_s`` is the median of (0: the family never ran there, and
    ``run_s`` is its run elsewhere scaled by the devices' speed ratio); ``throttled_runs`` how many of
    those ``runs`` the device throttled during (runs that did not are preferred: at least three of them
    and only they count, so this is then 0)."""

    device_key: str
    device_name: str
    run_s: float
    finish_s: float | None
    runs: int = 0
    throttled_runs: int = 0


class TaskView(Reply, frozen=True, kw_only=True):
    """What a client may know of a task (``TaskView.of`` a record; the spec stays with the owner).
    ``machine`` is where it runs, else where it was asked to run; ``origin`` is set on a task another
    machine handed here. A task removed before ``wait`` saw it end has ``state="removed"`` and no more."""

    id: int
    name: str = ""
    kind: str = ""
    state: str
    device: str | None = None
    env: str | None = None
    reason: "reason_codes.Reason | None" = None  # words: ``reasons.render_for(state, reason, language)``
    exit_code: int | None = None
    attempts: int = 0
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    log_path: str | None = None
    priority: int = 0
    after: tuple[int, ...] = ()
    after_any: bool = False
    cwd: str | None = None
    machine: str | None = None
    remote_id: int | None = None
    origin: str | None = None
    energy_j: float | None = None
    energy_shared: bool = False
    energy_estimated_s: float = 0.0  # of ``energy_j``, seconds counted from power (a glitching counter)
    power_avg_w: float | None = None
    prefer: str = "free"  # the placement policy: free | fastest | greenest
    on_late: str = "auto"  # its job, shown by its progress to end late, is moved: auto | move | stay
    family: str = ""  # whose earlier runs estimate it (``family_of``: the task file's, or recipe + script)
    offer: Offer | None = None  # run elsewhere now? (see ``Offer``); None: no offer, or not known here
    # a pending task of a family that ran before: per device it may use (``Estimate``); () otherwise
    estimate_s: tuple[Estimate, ...] = ()
    # a running task whose job is paused (``gputray pause-job``): since when; the seconds its run spent
    # paused, which its timeout and runtime leave out
    paused_at: float | None = None
    paused_s: float = 0.0
    # the GPU memory it is counted as needing (bytes), and where that figure comes from: "vram" (given),
    # or the model files it names ("model.safetensors 7.2 GiB + 5 %"); None/"" when neither
    vram_need: int | None = None
    vram_need_source: str = ""
    # a running task whose job reports its progress (``jobs/progress.py``: tqdm, step N/M, ffmpeg, …,
    # ``GPUTRAY_PROGRESS``): the fraction done (0..1) and the seconds left at its pace (None: too early)
    progress: float | None = None
    eta_s: float | None = None

    @property
    def shown_state(self) -> str:
        """Its state as listings show it: ``paused`` for a running task whose job is paused."""
        return "paused" if self.state == "running" and self.paused_at is not None else self.state

    @classmethod
    def of(cls, r: "TaskRecord", offer: Offer | None = None) -> "TaskView":
        from gputray.scheduler.tasks.family import family_of

        s = r.spec
        return cls(
            id=r.id, state=r.state, name=s.name, kind=s.kind, device=r.device, env=r.env, reason=r.reason,
            exit_code=r.exit_code, attempts=r.attempts, submitted_at=r.submitted_at, started_at=r.started_at,
            ended_at=r.ended_at, log_path=r.log_path, priority=s.priority, after=s.after,
            after_any=s.after_any, cwd=s.cwd, machine=r.machine or s.machine, remote_id=r.remote_id,
            origin=s.origin, energy_j=r.energy_j, energy_shared=r.energy_shared,
            energy_estimated_s=r.energy_estimated_s if r.energy_j is not None else 0.0,  # of this run's
            power_avg_w=average_power_w(r.energy_j, r.started_at, r.ended_at), prefer=s.prefer,
            on_late=s.on_late, family=family_of(s), offer=offer, paused_at=r.paused_at, paused_s=r.paused_s,
            vram_need=s.memory_need_bytes, vram_need_source=_need_source(s),
        )  # fmt: skip


def _need_source(spec: "task_records.TaskSpec") -> str:
    if spec.vram_bytes is not None:
        return "vram"
    return spec.vram_need_source or ""


Tasks = tuple[TaskView, ...]


def average_power_w(energy_j: float | None, started_at: float | None, ended_at: float | None) -> float | None:
    """Energy over the run's duration (wall-clock times: None when the clock makes it nonsense)."""
    if energy_j is None or started_at is None or ended_at is None or ended_at <= started_at:
        return None
    return energy_j / (ended_at - started_at)


def views(records: "Iterable[TaskRecord]") -> "Tasks":
    return tuple(TaskView.of(r) for r in records)


class Pong(Reply, frozen=True):
    pid: int
    protocol: int
    demo: bool
    ready: bool
    started_at: float | None
    address: str | None


class DeviceVerdict(Reply, frozen=True):
    """The monitor's judgement of one device; its readings are in ``StatusReply.snapshot``."""

    key: str
    busy: bool | None
    reasons: "tuple[busy_why.BusyWhy, ...]"  # words: ``reasons.render``
    simulated: bool


class StatusReply(Reply, frozen=True):
    pid: int
    demo: bool
    # the monitor's latest readings (`status --json`: monitor.serialize)
    snapshot: "monitor_records.Snapshot | None"
    devices: tuple[DeviceVerdict, ...]
    paused: Paused
    counts: dict[str, int]
    monitor_failures: int
    monitor_last_failure: str | None
    # the cluster's status document (cluster_port.ClusterPort.report_doc), which the owner passes on
    cluster: "cluster_records.ClusterStatus | None" = None
    # the GPU servers running here (Ollama, ComfyUI …: queue/make_room.py), and the time they were seen
    residents: "tuple[monitor_residents.ResidentView, ...]" = ()
    now_s: float | None = None
    taken: dict[str, str] = {}  # device key -> the exclusive app (a game) using it: our jobs there paused


class RoomQuestion(Reply, frozen=True):
    """``free_when_idle = "ask"``: freeing ``resident`` (on ``device``) would let task ``task_id`` start;
    the user is asked (the tray's notification and row menu, ``gputray free-resident``)."""

    task_id: int
    task_name: str
    device: str
    resident: "monitor_residents.ResidentView"


class RoomReply(Reply, frozen=True):
    """``room``: what the tray shows of making room (``Room``)."""

    residents: "tuple[monitor_residents.ResidentView, ...]"
    taken: dict[str, str]  # device key -> the exclusive app using it (StatusReply.taken)
    questions: tuple[RoomQuestion, ...]
    now_s: float


class RoomMade(Reply, frozen=True):
    """``free-resident``: what was done (asked, refused, not found)."""

    said: str
    asked: bool


class Submitted(Reply, frozen=True):
    """``submit``, ``submit_files``, ``run``, ``open_files`` (``handed_to="tray"``: to its drop confirm)."""

    tasks: Tasks
    notes: tuple[str, ...] = ()
    handed_to: str | None = None


class DeviceSlots(Reply, frozen=True):
    """A device the queue can use, for listings; ``slots`` is None where only the owner knows it."""

    key: str
    name: str
    slots: int | None
    running: int
    paused: bool
    # when it frees up, in seconds from now (``queue.estimates``): 0 free now; None unknown (or not asked)
    free_in_s: float | None = None


class QueueReply(Reply, frozen=True):
    tasks: Tasks
    paused: Paused
    device_names: dict[str, str]
    devices: tuple[DeviceSlots, ...]


class TaskReply(Reply, frozen=True):
    """``retry``, ``move``, ``edit``: the task; ``get`` also its spec and pid."""

    task: TaskView
    spec: "task_records.TaskSpec | None" = None
    pid: int | None = None


class TasksDone(Reply, frozen=True):
    """``cancel`` and ``remove``: the tasks acted on, and what could not be done (one line each, in
    English); ``refused``: those of them that are codes (``reasons/refusals``), for the tray to word."""

    tasks: Tasks
    errors: tuple[str, ...] = ()
    refused: tuple[reason_refusals.Refused, ...] = ()


class Cleaned(Reply, frozen=True):
    tasks: Tasks
    kept: tuple[str, ...] = ()


class Waited(Reply, frozen=True):
    tasks: Tasks
    done: bool


class PausedReply(Reply, frozen=True):
    """``pause`` and ``resume``; ``known`` are the devices the owner knows (listed as not paused)."""

    paused: Paused
    known: tuple[str, ...] = ()
    device_names: dict[str, str] = {}  # key → the name people know it by (none from the saved queue)


class LogChunk(Reply, frozen=True):
    id: int
    state: str
    log_path: str | None
    text: str
    offset: int
    size: int
    finished: bool


class ScheduleView(Reply, frozen=True):
    """One recurring schedule: a task file submitted on a cron line, with ``overrides`` laid over it.
    Times are epoch seconds (``schedule --json`` writes them as ISO 8601 UTC)."""

    id: int
    name: str
    cron: str
    task_file: str
    overrides: "task_records.TaskPatch"
    created_at: float
    last_run_at: float | None
    next_run_at: float | None
    last_error: str | None


class Schedules(Reply, frozen=True):
    """``schedule_list``; ``schedule_add`` and ``schedule_remove``: the one entry."""

    schedules: tuple[ScheduleView, ...]


class Checking(Reply, frozen=True):
    checking: int


class ClusterSynced(Reply, frozen=True):
    """The cluster bridge's view of the tasks that concern it: whole records, spec and queue fields."""

    machine: str
    tasks: "tuple[task_records.TaskRecord, ...]"
    stopping: bool
    paused: Paused = Paused()  # this machine's pause now: the bridge looks again at once when it changed
    edited: tuple[int, ...] = ()  # tasks waiting on another machine, edited here since: to take back


class ClusterTask(Reply, frozen=True):
    task: "task_records.TaskRecord | None"  # None: not in the expected state, see ``now``
    now: "task_records.TaskRecord | None" = None
    existing: bool | None = None


class Stopping(Reply, frozen=True):
    stopping: bool
    pid: int
    jobs: str
    running: int
