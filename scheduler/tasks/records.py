"""Task records: what to run (TaskSpec) and what became of it (TaskRecord).

Times are epoch seconds (floats, UTC by definition) in every record, in the store and in the owner's
replies (``replies.TaskView``); ``iso_utc`` renders them as ISO 8601 UTC strings
(``2026-11-30T02:30:00.125Z``) for ``--json``. Sizes are bytes, durations are seconds.

``TaskSpec`` and ``TaskPatch`` are msgspec Structs: the same record on the wire, in the store
(``TaskSpec.to_dict``) and in every process. A task file's spelling (``vram = "4GiB"``) is turned into
them by ``gputray.scheduler.tasks.taskfile``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

import msgspec
from msgspec import UNSET, Meta, UnsetType

from gputray.scheduler.reasons import taskfile_codes as t
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.tasks.limits import (
    AFTER_MAX_WAIT,
    KINDS,
    MAX_DURATION_S,
    MAX_ENV_KEYS,
    MAX_EPOCH_S,
    MAX_ITEMS,
    MAX_PRIORITY,
    MAX_RETRIES,
    MAX_SIZE_BYTES,
    MAX_TASK_ID,
    MAX_TEXT_CHARS,
    MIN_EPOCH_S,
    ON_BUSY,
    ON_LATE,
    ON_OOM,
    PREFER,
    ValueProblem,
    check_duration_s,
    check_epoch_s,
    check_size_bytes,
)
from gputray.scheduler.tasks.offer import Offer
from gputray.scheduler.tasks.states import FINISHED_STATES, PENDING_STATES, STATES, TaskState
from gputray.scheduler.tasks.times import iso_utc, local_iso, local_time

__all__ = [  # re-exported: the limits of task values, the offer QueueEvent carries, states, times
    "AFTER_MAX_WAIT",
    "FINISHED_STATES",
    "KINDS",
    "MAX_DURATION_S",
    "MAX_ENV_KEYS",
    "MAX_EPOCH_S",
    "MAX_ITEMS",
    "MAX_PRIORITY",
    "MAX_RETRIES",
    "MAX_SIZE_BYTES",
    "MAX_TASK_ID",
    "MAX_TEXT_CHARS",
    "MIN_EPOCH_S",
    "ON_BUSY",
    "ON_LATE",
    "ON_OOM",
    "PENDING_STATES",
    "PREFER",
    "STATES",
    "Offer",
    "TaskState",
    "check_duration_s",
    "check_epoch_s",
    "check_size_bytes",
    "iso_utc",
    "local_iso",
    "local_time",
]

TaskKind = Literal["torch", "vulkan", "command"]
OnBusy = Literal["wait", "redirect", "cpu"]
AfterMaxWait = Literal["redirect", "cpu", "fail"]
Prefer = Literal["free", "fastest", "greenest"]
OnOom = Literal["fail", "elsewhere"]
OnLate = Literal["auto", "move", "stay"]

#: Placeholders substituted per argv element (and in env values) when a vulkan or recipe task is
#: launched (``TaskSpec.fills_placeholders``); command and torch tasks are passed verbatim.
PLACEHOLDERS: tuple[str, ...] = ("file", "stem", "out", "vk_index", "device")
#: A machine name in a cluster (``[cluster] machine``, ``--machine``): letters, digits, ``.``, ``_``, ``-``.
MACHINE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
WINDOW_RE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*[-–]\s*(\d{1,2}):(\d{2})\s*$")


ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


_NO_NUL = r"^[^\x00]*$"
_WORD = r"^[^\x00]*[^\x00\s][^\x00]*$"  # not blank, no NUL (``\S`` alone matches a NUL)
Text = Annotated[str, Meta(max_length=MAX_TEXT_CHARS, pattern=_NO_NUL)]
Word = Annotated[str, Meta(min_length=1, max_length=MAX_TEXT_CHARS, pattern=_WORD)]
Texts = Annotated[tuple[Text, ...], Meta(max_length=MAX_ITEMS)]
Words = Annotated[tuple[Word, ...], Meta(max_length=MAX_ITEMS)]
DurationS = Annotated[float, Meta(ge=0, le=MAX_DURATION_S)]
PositiveS = Annotated[float, Meta(gt=0, le=MAX_DURATION_S)]
SizeBytes = Annotated[int, Meta(ge=0, le=MAX_SIZE_BYTES)]
EpochS = Annotated[float, Meta(ge=MIN_EPOCH_S, le=MAX_EPOCH_S)]
Priority = Annotated[int, Meta(ge=-MAX_PRIORITY, le=MAX_PRIORITY)]
Retries = Annotated[int, Meta(ge=0, le=MAX_RETRIES)]
Percent = Annotated[float, Meta(ge=0, le=100)]
Machine = Annotated[str, Meta(pattern=MACHINE_RE.pattern)]
#: A job family's name (``family = "resnet-infer"``): runs of one family teach its runtime estimates.
Family = Annotated[str, Meta(min_length=1, max_length=200, pattern=_WORD)]
#: ``max_slowdown``: how much slower than the fastest finish ``prefer = "greenest"`` may be (1.5 = 50 %).
Slowdown = Annotated[float, Meta(ge=1.0, le=100.0)]
TaskIds = Annotated[tuple[Annotated[int, Meta(ge=1, le=MAX_TASK_ID)], ...], Meta(max_length=MAX_ITEMS)]
EnvText = Annotated[str, Meta(max_length=MAX_TEXT_CHARS, pattern=_NO_NUL)]
#: ``[env]`` of a task: names a shell takes; values are text.
Env = Annotated[
    Mapping[Annotated[str, Meta(pattern=ENV_NAME_RE.pattern)], EnvText], Meta(max_length=MAX_ENV_KEYS)
]
#: The submitter's environment, as ``os.environ`` holds it: any name the OS takes.
BaseEnv = Annotated[
    Mapping[Annotated[str, Meta(min_length=1, pattern=r"^[^=\x00]+$")], EnvText],
    Meta(max_length=MAX_ENV_KEYS),
]


class TaskSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What to run and where it may run. Immutable; build it with a task file, a recipe, a
    ``TaskPatch`` (``taskfile.spec_from_patch``) or directly. Its fields' limits are ``Meta`` on the
    types, checked wherever one is decoded; what relates fields to each other (kind vs script/argv,
    placeholders) is checked by ``taskfile.checked_spec``.

    - ``kind="torch"``: ``script`` (a .py path) + ``args``, run by the Python env chosen for the device.
    - ``kind="vulkan"``: ``argv`` is a template; ``{file}`` ``{stem}`` ``{out}`` ``{vk_index}`` ``{device}``
      are replaced inside each element (never through a shell), also in ``env`` values.
    - ``kind="command"``: any ``argv``, passed verbatim (no placeholders); the GPU is selected only
      through environment variables. See ``fills_placeholders``.

    ``device_prefs`` is an ordered preference of device keys (``pci:0000:01:00.0``), classes
    (``nvidia`` ``amd`` ``discrete`` ``integrated`` ``gpu`` ``cpu``) or name fragments (``5060ti``,
    ``780m``: matched against the device name without spaces, case-insensitive). Empty means
    ``("discrete", "integrated")``. When the first choice is busy ``on_busy`` decides: ``wait`` for it,
    ``redirect`` to the first free one among the rest, or run on the ``cpu``. After ``max_wait_s``
    of waiting, ``after_max_wait`` applies (``redirect``, ``cpu`` or ``fail``).
    ``prefer`` (``free`` by default: the rules above) may instead pick, among every device the
    preferences name, the one that finishes first (``fastest``: estimated wait + run, learned from the
    task's ``family``) or uses the least energy within ``max_slowdown`` of the fastest (``greenest``);
    see ``queue.placement_policy``. ``family`` names "the same job" (default: recipe + script path).
    ``start_at`` is epoch seconds; ``window`` is a daily local-time window ``"01:00-07:00"``
    (may cross midnight). ``retries`` more attempts after a failure or interruption, each after
    ``backoff_s * 2**(attempt-1)`` seconds, at most ``lifecycle.MAX_BACKOFF_S``. ``after`` names tasks that
    must succeed first (``after_any``: end, however); one that fails or is cancelled fails this one.
    """

    kind: TaskKind
    name: Word
    argv: Texts = ()
    script: Word | None = None
    args: Texts = ()
    files: Texts = ()
    out: Word | None = None
    device_prefs: Words = ()
    on_busy: OnBusy = "wait"
    max_wait_s: DurationS | None = None
    after_max_wait: AfterMaxWait = "redirect"
    vram_bytes: SizeBytes | None = None
    # Without vram_bytes: the need predicted from the model files it names, and from what, in words
    # ("model.safetensors 7.2 GiB + 5 %"); set by ``taskfile.spec_from_patch`` (``model_memory``).
    vram_need_bytes: SizeBytes | None = None
    vram_need_source: Word | None = None
    priority: Priority = 0
    needs: Texts = ()
    start_at: EpochS | None = None
    window: Word | None = None
    timeout_s: PositiveS | None = None
    retries: Retries = 0
    backoff_s: DurationS = 30.0
    env: Env = {}
    # The environment the job starts from: the submitter's (``gputray run``/``submit`` send theirs, so
    # an activated venv's python3 or a tool on their PATH is found), None for the owner's own. Under
    # the GPU selection, the Python env's variables and ``env``, which gputray sets on top.
    base_env: BaseEnv | None = None
    cwd: Word | None = None
    recipe: Word | None = None
    # Dependencies: task ids that must have succeeded (or, with ``after_any``, ended however) first.
    after: TaskIds = ()
    after_any: bool = False
    placeholders: bool = False  # opt-in: fill placeholders in a command/torch task too
    # A torch task may run on a GPU where the doctor could not prove its env's torch lands on that GPU
    # (the read-back had no PCI address, UUID or distinctive name); never where it proved a wrong one.
    allow_unproven: bool = False
    util_percent: Percent = 90.0  # expected load, only used to drive the simulated GPUs in demo mode
    # Cluster: the machine it should run on ("any" or a machine name; None = here),
    # and, on a task another machine handed here, where it came from ("desk#12.1": machine, id, attempt).
    machine: Machine | None = None
    origin: Word | None = None
    # The user answered "Keep waiting" to a run-elsewhere offer (``replies.Offer``): no more offers for
    # this task. Set by ``edit`` (``TaskPatch(offer_declined=True)``), read by whoever makes offers.
    offer_declined: bool = False
    # The user answered "Keep waiting" to freeing these residents for this task (names, or a port or
    # pid where several share a name; ``queue.make_room``): none of them is asked, nor offered, for it;
    # its reason says it waits by the user's choice. ``edit`` adds to them (``TaskPatch.then``), ``()``
    # empties them: the tray's "Keep waiting", ``gputray edit ID --keep-waiting NAME``.
    kept_residents: Words = ()
    family: Family | None = None
    prefer: Prefer = "free"
    max_slowdown: Slowdown = 1.5
    # Priority with teeth (``queue.preemption``): ``preempt`` lets this task pause lower-priority jobs
    # of ours that hold its device (``[queue] preempt = "priority"`` makes every task do so);
    # ``preemptible = false`` keeps this one's job from ever being paused for another.
    preempt: bool = False
    preemptible: bool = True
    # A run that ends out of memory (``jobs.oom``): "elsewhere" runs it once more on an allowed device
    # where the memory it reached is free (``queue.oom_elsewhere``); "fail": the retry policy, as any failure.
    on_oom: OnOom = "fail"
    # A running job its own progress shows ending late (``queue.late_move``): "move" stops it and runs it
    # again on another allowed device where it would finish clearly earlier, once, while little is done;
    # "auto": so under ``prefer = "fastest"``; "stay": never (the job must not be restarted).
    on_late: OnLate = "auto"

    @property
    def memory_need_bytes(self) -> int | None:
        """What placement counts: the ``vram`` given, else the need predicted from its model files."""
        return self.vram_bytes if self.vram_bytes is not None else self.vram_need_bytes

    def __hash__(self) -> int:  # env is a dict; hash the rest
        return hash((self.kind, self.name, self.argv, self.script, self.args, self.files))

    def to_dict(self) -> dict[str, Any]:
        """The storage form (plain JSON types, every field): what the store writes as text."""
        data = cast(dict[str, Any], msgspec.to_builtins(self.plain()))
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    def plain(self) -> TaskSpec:
        """This spec with its environments as dicts, as it is sent: the store keeps a task's caller
        environment in the file (``StoredEnv``) until it is needed, and this is when it is read."""
        if type(self.env) is dict and (self.base_env is None or type(self.base_env) is dict):
            return self
        base_env = None if self.base_env is None else dict(self.base_env)
        return msgspec.structs.replace(self, env=dict(self.env), base_env=base_env)

    def replace(self, **changes: Any) -> TaskSpec:
        return msgspec.structs.replace(self, **changes)

    @property
    def fills_placeholders(self) -> bool:
        """Whether ``{file} {stem} {out} {vk_index} {device}`` are filled in (argv, args, env values).

        Only argv *templates* have placeholders: ``vulkan`` tasks and tasks a recipe made. A ``command``
        or ``torch`` task's arguments are the user's own program line and are passed verbatim, so
        braces, JSON and f-strings (``python -c "print(f'{x}')"``) reach the program untouched,
        unless the task opts in with ``placeholders = true``.
        """
        return fills_placeholders(self.kind, self.recipe, self.placeholders)

    @property
    def program(self) -> str | None:
        """The program a vulkan/command task starts (argv[0]), or None for torch tasks."""
        return self.argv[0] if self.argv and self.kind != "torch" else None


class TaskPatch(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Some of a task's fields: what a submit's options, an ``edit``, a drop's device policy, a
    schedule or a recipe sets. ``UNSET`` (the default) leaves a field as it is; ``None`` clears one that
    may be empty (``gputray edit --at none``). The same fields and limits as ``TaskSpec``; on the wire
    only the fields given travel. ``then`` lays one patch over another; ``taskfile.spec_from_patch``
    makes a spec of one (alone, or over a spec)."""

    kind: TaskKind | UnsetType = UNSET
    name: Word | UnsetType = UNSET
    argv: Texts | UnsetType = UNSET
    script: Word | UnsetType | None = UNSET
    args: Texts | UnsetType = UNSET
    files: Texts | UnsetType = UNSET
    out: Word | UnsetType | None = UNSET
    device_prefs: Words | UnsetType = UNSET
    on_busy: OnBusy | UnsetType = UNSET
    max_wait_s: DurationS | UnsetType | None = UNSET
    after_max_wait: AfterMaxWait | UnsetType = UNSET
    vram_bytes: SizeBytes | UnsetType | None = UNSET
    vram_need_bytes: SizeBytes | UnsetType | None = UNSET
    vram_need_source: Word | UnsetType | None = UNSET
    priority: Priority | UnsetType = UNSET
    needs: Texts | UnsetType = UNSET
    start_at: EpochS | UnsetType | None = UNSET
    window: Word | UnsetType | None = UNSET
    timeout_s: PositiveS | UnsetType | None = UNSET
    retries: Retries | UnsetType = UNSET
    backoff_s: DurationS | UnsetType = UNSET
    env: Env | UnsetType = UNSET
    base_env: BaseEnv | UnsetType | None = UNSET
    cwd: Word | UnsetType | None = UNSET
    recipe: Word | UnsetType | None = UNSET
    after: TaskIds | UnsetType = UNSET
    after_any: bool | UnsetType = UNSET
    placeholders: bool | UnsetType = UNSET
    allow_unproven: bool | UnsetType = UNSET
    util_percent: Percent | UnsetType = UNSET
    machine: Machine | UnsetType | None = UNSET
    origin: Word | UnsetType | None = UNSET
    offer_declined: bool | UnsetType = UNSET
    kept_residents: Words | UnsetType = UNSET
    family: Family | UnsetType | None = UNSET
    prefer: Prefer | UnsetType = UNSET
    max_slowdown: Slowdown | UnsetType = UNSET
    preempt: bool | UnsetType = UNSET
    preemptible: bool | UnsetType = UNSET
    on_oom: OnOom | UnsetType = UNSET
    on_late: OnLate | UnsetType = UNSET

    def given(self) -> dict[str, Any]:
        """The fields this patch sets, by name."""
        return {f: v for f in self.__struct_fields__ if (v := getattr(self, f)) is not UNSET}

    def then(self, later: TaskPatch) -> TaskPatch:
        """This patch with ``later`` laid over it: its fields win, except ``env``, which adds to ours
        (``--env`` sets one variable, it does not drop the task file's or the recipe's), and
        ``kept_residents``, which adds to ours too (each "Keep waiting" one more; an empty one empties).

        Devices and ``on_busy`` go together (issue 33): where ``later`` names the devices but says
        nothing of ``on_busy``, the task waits for the devices it names (``on_busy = "wait"``), so
        ``--device 5060ti`` alone pins a torch task the recipe would redirect; ``--on-busy`` (or
        ``--max-wait``, then ``after_max_wait``) is how a named device lets the task go elsewhere."""
        changes = later.given()
        if "device_prefs" in changes and "on_busy" not in changes:
            changes["on_busy"] = "wait"
        if isinstance(self.env, Mapping) and isinstance(later.env, Mapping):
            changes["env"] = {**self.env, **later.env}
        if later.kept_residents and isinstance(self.kept_residents, tuple):  # one more "Keep waiting"
            changes["kept_residents"] = kept_union(self.kept_residents, later.kept_residents)
        return msgspec.structs.replace(self, **changes)

    @classmethod
    def of(cls, spec: TaskSpec) -> TaskPatch:
        """Every field of ``spec``: the patch that makes it again."""
        return cls(**msgspec.structs.asdict(spec))


@dataclass(frozen=True)
class TaskRecord:
    """A task in the queue and what became of it.

    ``device`` is the device key it runs/ran on (``cpu`` for the CPU), ``env`` the Python env name
    (torch tasks) and ``reason`` the latest explanation (why it waits, where it was redirected, why it
    failed: a ``reasons.codes`` record, worded by ``reasons.render``). ``attempts`` counts starts.
    Times are epoch seconds (UTC).
    ``position`` orders the queue within a priority; ``queued_at`` is when it last (re)entered the
    queue (max_wait and aging count from there); ``not_before`` delays a retry (backoff);
    ``overtakes`` counts how often a later task took a device this one was waiting for;
    ``attempts_before`` is ``attempts`` when it was last queued again by hand (``retry``): attempts
    count on across a manual retry, while its automatic retries start afresh.
    ``machine``/``remote_id``/``remote_state``: see docs/cluster.md (a task run by another machine).
    ``energy_j``: the GPU energy its last run used, in joules (None: not measured: still running, the
    CPU, or a device with neither an energy counter nor a power reading); ``energy_shared``: the device
    also ran another of our jobs, or a foreign process, during that run, so ``energy_j`` is the device's
    energy over the run, not this job's alone (``scheduler.queue.job_energy``).
    ``paused_at``: a running task whose job is paused now (``gputray pause-job``), since when; None
    otherwise. ``paused_s``: the seconds its current (or last) run spent paused, which count neither
    to its timeout nor to its runtime (``run_s``).
    """

    id: int
    spec: TaskSpec
    state: TaskState
    submitted_at: float
    device: str | None = None
    env: str | None = None
    reason: Reason | None = None
    exit_code: int | None = None
    attempts: int = 0
    started_at: float | None = None
    ended_at: float | None = None
    log_path: str | None = None
    pid: int | None = None
    position: float = 0.0
    queued_at: float = 0.0
    not_before: float | None = None
    overtakes: int = 0
    pid_create_time: float | None = None
    attempts_before: int = 0
    # Cluster bookkeeping, None for a task that runs here: the machine the task was
    # placed on, its id in that machine's queue, and the last state seen there ("sending" before it
    # arrived, "fetched" once its outputs and log are back).
    machine: str | None = None
    remote_id: int | None = None
    remote_state: str | None = None
    energy_j: float | None = None
    energy_shared: bool = False
    paused_at: float | None = None
    paused_s: float = 0.0
    energy_estimated_s: float = 0.0  # of ``energy_j``, seconds counted from power (a glitching counter)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    def run_s(self, now_s: float) -> float | None:
        """How long its run has worked (ended or so far), paused time left out; None before it ran."""
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else now_s
        paused = self.paused_s + (max(0.0, end - self.paused_at) if self.paused_at is not None else 0.0)
        return max(0.0, end - self.started_at - paused)

    def replace(self, **changes: Any) -> TaskRecord:
        return dataclasses.replace(self, **changes)


EventKind = Literal[
    "queued", "started", "redirected", "waiting", "finished", "failed", "cancelled", "interrupted", "offer"
]


@dataclass(frozen=True)
class QueueEvent:
    """Something a person may want to hear about; the tray turns these into notifications."""

    kind: EventKind
    task: TaskRecord
    message: Reason  # what happened, as data (``reasons.render`` words it)
    offer: Offer | None = None  # kind "offer": what is offered (the tray's ``TaskView.offer``)


def kept_union(kept: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    """``kept`` and then ``more`` (``kept_residents``), each resident once whatever its case."""
    seen: dict[str, str] = {}
    for name in (*kept, *more):
        seen.setdefault(name.strip().lower(), name)
    return tuple(seen.values())


def parse_window(window: str) -> tuple[int, int]:
    """``"01:00-07:00"`` (or with an en dash) → (start, end) in minutes after local midnight."""
    m = WINDOW_RE.match(window)
    if not m:
        raise ValueProblem(t.UnreadableValue(form="window", got=repr(window)))
    h1, m1, h2, m2 = (int(g) for g in m.groups())
    if h1 > 23 or h2 > 24 or m1 > 59 or m2 > 59 or (h2 == 24 and m2):
        raise ValueProblem(t.WindowTimes(got=repr(window)))
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if start == end:
        raise ValueProblem(t.WindowEmpty(got=repr(window)))
    return start, end


def window_open(window: str, now_s: float) -> bool:
    """Whether the daily window is open at ``now_s`` (local time). Windows may cross midnight."""
    start, end = parse_window(window)
    local = dt.datetime.fromtimestamp(now_s)
    minute = local.hour * 60 + local.minute
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end


def window_label(window: str) -> str:
    start, end = parse_window(window)
    return f"{start // 60:02d}:{start % 60:02d}–{end // 60:02d}:{end % 60:02d}"


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace ``{name}`` placeholders in one string, in a single pass.

    Values are data: a file name containing ``{out}`` or ``;`` is inserted verbatim and never
    re-scanned. Unknown names are left as written (validation reports them earlier).
    """

    def repl(m: re.Match[str]) -> str:
        key = m.group(1)
        return values[key] if key in values else m.group(0)

    return PLACEHOLDER_RE.sub(repl, template)


def fills_placeholders(kind: str, recipe: object, opt_in: bool) -> bool:
    """The rule behind ``TaskSpec.fills_placeholders``, for validating a task before its spec exists."""
    return kind == "vulkan" or recipe is not None or opt_in


def unknown_placeholders(template: str) -> list[str]:
    return [m.group(1) for m in PLACEHOLDER_RE.finditer(template) if m.group(1) not in PLACEHOLDERS]
