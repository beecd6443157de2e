"""Where a task runs, decided by pure functions of (task, device states, time).

``place()`` decides for one task; ``plan()`` walks the whole queue for one dispatch pass, accounting
for the slots and memory each placement takes and for the no-starvation rule. Nothing here does
I/O or reads a clock: the queue service and ``bench/schedule_quality.py`` both call it.

A device is **free** for a task when: it is present and not lost, not paused, not held for another
task (below), a slot is open (one job per GPU by default; the iGPU stays serial), the monitor's
verdict is free (external use only: our own jobs are announced to the monitor), the memory estimate
fits (discrete: VRAM; integrated: carve-out + GTT, and system RAM headroom, since GTT *is* RAM; CPU:
RAM) and it is not over its temperature limit. A device that can never run the task (estimate above
its total memory, a ``needs`` capability the doctor did not prove) is skipped, not waited for.

**Policy.** The first preference (all devices matching it) is tried first. When none of them is free:
``wait`` keeps waiting; ``redirect`` takes the first free device among the remaining preferences (or,
when only one preference was given, any other GPU); ``cpu`` runs on the CPU. After ``max_wait_s`` of
waiting, ``after_max_wait`` adds ``redirect`` or ``cpu`` to the choices, or gives up (``fail``).

**No starvation.** The dispatcher walks the *whole* queue in order (priority, then position), so a
big task waiting at the head never blocks a small task that can run elsewhere (or that fits next to
what runs now). To keep the big task from being overtaken forever, every time a task further back
starts on a device that a waiting task ahead of it would accept, the waiting task's ``overtakes``
counter goes up. Once it reaches ``OVERTAKE_LIMIT`` (3) the waiting task *holds* the device
it waits for: later tasks no longer start there until it has started, so the device drains and
the big task gets it. Tasks that are ahead in the queue are never held back by a hold.

**Prefer.** A task with ``prefer = "fastest"`` or ``"greenest"`` is decided by the ``Policy`` handed
to ``place``/``plan`` (``placement_policy.OutlookPolicy``: runtimes learned per job family and device)
among every device its preferences name; the checks above (``never_fits``, ``busy_reason``, the
iGPU's one slot, holds) still say which are free. A task whose family has no estimate anywhere falls
back to the rules above. ``plan`` adds each placed or awaited task's estimated run to its device's
backlog, so the next task's estimate of when that device frees counts the work queued there.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from gputray.monitor.records import DeviceInfo, Sample, Verdict
from gputray.scheduler.queue.device_names import by_name, keyed
from gputray.scheduler.queue.timing import next_window_open
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec, window_label, window_open

DEFAULT_PREFS = ("discrete", "integrated")
OVERTAKE_LIMIT = 3  # overtakes before a waiting task holds the device it waits for
DEFAULT_TEMP_LIMIT_C = {"integrated": 90.0, "discrete": 85.0}
CPU_INFO = DeviceInfo(key="cpu", name="CPU", vendor="other", kind="cpu", backend="host")
_VENDORS = {"nvidia", "amd", "intel"}
_KINDS = {"discrete", "integrated"}
# Preference words that name a class of device rather than one GPU (matching none is not a typo).
GENERIC_PREFS = frozenset({"cpu", "gpu", "any", *_VENDORS, *_KINDS})


@dataclass(frozen=True)
class DeviceState:
    """One device as the scheduler sees it at one instant.

    ``running`` counts *our* jobs on it (``running_names`` names them); ``extra_used_bytes`` is
    memory our jobs declared that the latest sample does not show yet (a job just started);
    ``host_ram_free_bytes`` matters for the iGPU and the CPU; ``capabilities`` is what the doctor
    proved for this device (``"fp16"`` …), None when unknown (then ``needs`` are not checked).
    """

    info: DeviceInfo
    sample: Sample | None = None
    verdict: Verdict | None = None
    running: int = 0
    slots: int = 1
    paused: bool = False
    taken_by: str | None = None  # the exclusive app (a game) using it: paused for it
    running_names: tuple[str, ...] = ()
    extra_used_bytes: int = 0
    host_ram_free_bytes: int | None = None
    host_ram_total_bytes: int | None = None
    temp_limit_c: float | None = None
    capabilities: frozenset[str] | None = None
    # Torch tasks only (``env_choice``): why no Python env can start one here yet ("checking env cu128
    # on …", a pass or two), or why none ever can (every configured env failed here: the doctor's words).
    torch_checking: Reason | None = None
    torch_no_env: Reason | None = None
    # An env works here but the GPU its torch lands on is not proven: only tasks with allow_unproven run.
    torch_unproven: Reason | None = None

    @property
    def key(self) -> str:
        return self.info.key

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def is_cpu(self) -> bool:
        return self.info.kind == "cpu"


#: The CPU as a device state: ``cpu_state(running=1, host_ram_free_bytes=…)``.
cpu_state = functools.partial(DeviceState, CPU_INFO)


@dataclass(frozen=True)
class Placement:
    """Run the task on ``device`` now. ``reason`` is empty on the first choice, else says why not there."""

    device: str
    device_name: str
    reason: Reason | None = None
    redirected: bool = False
    run_s: float | None = None  # its estimated run there (``prefer`` policies), for the device's backlog


@dataclass(frozen=True)
class Wait:
    """Not yet. ``device`` is the device it waits for (None: for time, or for any of several);
    ``until_s`` is when a time gate opens; ``accepts`` are the devices it would take if freed
    (used to count overtakes)."""

    reason: Reason
    device: str | None = None
    until_s: float | None = None
    accepts: tuple[str, ...] = ()
    run_s: float | None = None  # its estimated run on ``device`` (``prefer`` policies)


@dataclass(frozen=True)
class GiveUp:
    """The task cannot run: no device could ever take it, or it waited longer than allowed (``fail``)."""

    reason: Reason


Decision = Placement | Wait | GiveUp


class Policy(Protocol):
    """What decides a task that prefers ``fastest`` or ``greenest`` (``placement_policy.OutlookPolicy``)."""

    def decide(
        self,
        task: TaskRecord,
        allowed: Sequence[DeviceState],
        why_busy: Mapping[str, Reason | None],
        backlog: Mapping[str, float],
    ) -> Decision | None:
        """The decision among ``allowed`` (None: nothing is known, decide by the plain rules)."""
        ...

    def run_s(self, task: TaskRecord, device_key: str) -> float | None:
        """The task's estimated run on the device, None when unknown."""
        ...


def _gpu_order(d: DeviceState) -> tuple[int, str]:
    return (0 if d.info.kind == "discrete" else 1, d.key)


def resolve_pref(pref: str, devices: Sequence[DeviceState]) -> list[DeviceState]:
    """The devices one preference names: ``cpu``, a key or PCI address, a vendor, a kind, ``gpu`` or a
    name fragment (the keys and names as ``device_names`` matches them everywhere)."""
    p = pref.strip().lower()
    gpus = sorted((d for d in devices if not d.is_cpu), key=_gpu_order)
    if p == "cpu":
        return [d for d in devices if d.is_cpu]
    exact = {i.key for i in keyed(p, [d.info for d in devices])}
    if exact:
        return [d for d in devices if d.key in exact]
    if p in _VENDORS:
        return [d for d in gpus if d.info.vendor == p]
    if p in _KINDS:
        return [d for d in gpus if d.info.kind == p]
    if p in {"gpu", "any"}:
        return gpus
    named = {i.key for i in by_name(p, [d.info for d in gpus])}
    return [d for d in gpus if d.key in named]


def total_memory_bytes(dev: DeviceState) -> int | None:
    """All the memory a job could ever have there: VRAM (an iGPU: carve-out + GTT; the CPU: RAM)."""
    info = dev.info
    if dev.is_cpu:
        return dev.host_ram_total_bytes
    vram = info.vram_total_bytes or (dev.sample.vram_total_bytes if dev.sample else None)
    if info.kind == "integrated":
        shared = info.shared_total_bytes or (dev.sample.shared_total_bytes if dev.sample else None)
        return None if vram is None and shared is None else (vram or 0) + (shared or 0)
    return vram


def _need(spec: TaskSpec) -> c.Need:
    """The task's memory need: its ``vram``, or what its model files predict (``tasks.model_memory``)."""
    if spec.vram_bytes is None and spec.vram_need_bytes is not None:
        return c.Need(bytes=spec.vram_need_bytes, predicted=True, source=spec.vram_need_source)
    return c.Need(bytes=spec.memory_need_bytes or 0)


def never_fits(task: TaskRecord, dev: DeviceState) -> Reason | None:
    """Why this device can never run the task, or None."""
    need = task.spec.memory_need_bytes
    if need:
        total = total_memory_bytes(dev)
        if total is not None and need > total:
            return c.TooBig(need=_need(task.spec), device=dev.name, total_bytes=total)
    if dev.capabilities is not None:
        missing = [n for n in task.spec.needs if n not in dev.capabilities]
        if missing:
            return c.LacksNeeds(device=dev.name, needs=tuple(missing))
    if task.spec.kind == "torch" and dev.torch_no_env:
        return dev.torch_no_env
    if task.spec.kind == "torch" and dev.torch_unproven and not task.spec.allow_unproven:
        return dev.torch_unproven
    return None


def busy_reason(
    task: TaskRecord, dev: DeviceState, *, held: Mapping[str, int] | None = None
) -> Reason | None:
    """Why the device is not free for this task right now; None when it is free."""
    sample = dev.sample
    if sample is not None and sample.state in {"lost", "unavailable"}:
        return c.DeviceGone(state="lost" if sample.state == "lost" else "unavailable", why=sample.reason)
    if dev.paused:
        return c.DevicePaused(taken_by=dev.taken_by)
    holder = (held or {}).get(dev.key)
    if holder is not None and holder != task.id:
        return c.HeldFor(task_id=holder)
    if dev.running >= dev.slots:
        if dev.running_names:
            return c.RunningTask(name=dev.running_names[0])
        return c.SlotsTaken()
    if dev.verdict is not None and dev.verdict.busy:
        return c.DeviceBusy(why=dev.verdict.reasons)
    need = task.spec.memory_need_bytes or 0
    if need:
        free = free_memory_bytes(dev)
        if free is not None and need > free:
            where: Literal["vram", "shared", "ram"] = (
                "shared" if dev.info.kind == "integrated" else ("ram" if dev.is_cpu else "vram")
            )
            return c.MemoryShort(need=_need(task.spec), free_bytes=max(0, free), where=where)
    if dev.verdict is None and sample is not None and sample.temp_c is not None:
        limit = temp_limit_c(dev)
        if sample.temp_c >= limit:
            return c.TooHot(temp_c=sample.temp_c, limit_c=limit)
    if task.spec.kind == "torch" and dev.torch_checking:
        return dev.torch_checking
    return None


def temp_limit_c(dev: DeviceState) -> float:
    if dev.temp_limit_c is not None:
        return dev.temp_limit_c
    if dev.info.temp_limit_c is not None:
        return dev.info.temp_limit_c
    return DEFAULT_TEMP_LIMIT_C.get(dev.info.kind, 85.0)


def free_memory_bytes(dev: DeviceState) -> int | None:
    """Memory a new job could use, minus what our just-started jobs will take; None when unknown."""
    s = dev.sample
    ram_free = None if dev.host_ram_free_bytes is None else dev.host_ram_free_bytes - dev.extra_used_bytes
    if dev.is_cpu:
        return ram_free
    if s is None:
        return None
    if dev.info.kind == "integrated":
        parts = []
        if s.vram_total_bytes is not None and s.vram_used_bytes is not None:
            parts.append(s.vram_total_bytes - s.vram_used_bytes)
        if s.shared_total_bytes is not None and s.shared_used_bytes is not None:
            parts.append(s.shared_total_bytes - s.shared_used_bytes)
        gpu_free = sum(parts) - dev.extra_used_bytes if parts else None
        if gpu_free is None:
            return ram_free
        return gpu_free if ram_free is None else min(gpu_free, ram_free)
    if s.vram_total_bytes is None or s.vram_used_bytes is None:
        return None
    return s.vram_total_bytes - s.vram_used_bytes - dev.extra_used_bytes


def _other_day(epoch_s: float, now_s: float) -> bool:
    return dt.datetime.fromtimestamp(epoch_s).date() != dt.datetime.fromtimestamp(now_s).date()


def time_gate(task: TaskRecord, now_s: float) -> Wait | None:
    """A Wait while the task's retry backoff, start time or daily window keeps it back."""
    spec = task.spec
    if task.not_before is not None and task.not_before > now_s:
        return Wait(c.RetryIn(delay_s=task.not_before - now_s), until_s=task.not_before)
    if spec.start_at is not None and spec.start_at > now_s:
        return Wait(
            c.StartsAt(at_s=spec.start_at, with_date=_other_day(spec.start_at, now_s)), until_s=spec.start_at
        )
    if spec.window is not None and not window_open(spec.window, now_s):
        return Wait(
            c.WindowWait(window=window_label(spec.window)), until_s=next_window_open(spec.window, now_s)
        )
    return None


def wait_started_s(task: TaskRecord) -> float:
    """When the task's wait began: it entered the queue, or its start time / backoff passed."""
    gates = [task.queued_at, task.spec.start_at or 0.0, task.not_before or 0.0]
    return max(gates)


def place(
    task: TaskRecord,
    devices: Sequence[DeviceState],
    *,
    now_s: float,
    held: Mapping[str, int] | None = None,
    policy: Policy | None = None,
    backlog: Mapping[str, float] | None = None,
) -> Decision:
    """Decide for one task. Pure: same inputs, same answer. See the module docstring for the rules.
    A task that prefers ``fastest``/``greenest`` but whose family never ran is placed by the ``free``
    rules, and a wait or redirect says why: "fastest: no earlier run of this job to estimate from;
    waiting for …" (else it reads as if the preference were ignored)."""
    decision = _place(task, devices, now_s=now_s, held=held, policy=policy, backlog=backlog)
    prefer = task.spec.prefer
    if (
        policy is None
        or prefer == "free"
        or decision.reason is None
        or isinstance(decision.reason, c.Preferred)
    ):
        return decision
    if isinstance(decision, GiveUp) or (isinstance(decision, Wait) and decision.until_s is not None):
        return decision  # waiting for its time, not for a device; or failed, which says why
    if any(policy.run_s(task, d.key) is not None for d in devices):
        return decision  # estimated, yet no device's free time is known: the plain rules say the rest
    return dataclasses.replace(decision, reason=c.Unestimated(prefer=prefer, then=decision.reason))


def _place(
    task: TaskRecord,
    devices: Sequence[DeviceState],
    *,
    now_s: float,
    held: Mapping[str, int] | None,
    policy: Policy | None,
    backlog: Mapping[str, float] | None,
) -> Decision:
    gate = time_gate(task, now_s)
    if gate is not None:
        return gate
    spec = task.spec
    prefs = spec.device_prefs or DEFAULT_PREFS

    groups: list[tuple[str, list[DeviceState]]] = [(p, resolve_pref(p, devices)) for p in prefs]
    unsuitable: dict[str, Reason] = {}

    def usable(devs: Sequence[DeviceState]) -> list[DeviceState]:
        out = []
        for d in devs:
            why = never_fits(task, d)
            if why is None:
                out.append(d)
            else:
                unsuitable[d.key] = why
        return out

    first_pref, first_matched = groups[0]
    primary = usable(first_matched)
    primary_keys = {d.key for d in primary}
    if len(groups) > 1:
        rest_raw = [d for _, ds in groups[1:] for d in ds]
    else:
        rest_raw = [d for d in sorted(devices, key=_gpu_order) if not d.is_cpu]
    # Each device once, GPUs first; an explicit "cpu" among later preferences is a redirect target too.
    later = sorted((d for d in usable(rest_raw) if d.key not in primary_keys), key=lambda d: d.is_cpu)
    rest = list({d.key: d for d in later}.values())
    cpu = [d for d in usable([d for d in devices if d.is_cpu]) if d.key not in primary_keys]

    why_busy = {d.key: busy_reason(task, d, held=held) for d in [*primary, *rest, *cpu]}
    if policy is not None and spec.prefer != "free":
        allowed = [*primary, *(rest if len(groups) > 1 else ())]  # what the preferences name
        chosen = policy.decide(task, allowed, why_busy, backlog or {})
        if chosen is not None:
            return chosen
    for d in primary:
        if why_busy[d.key] is None:
            return Placement(d.key, d.name)
    checking = [(d, why) for d in primary if (why := d.torch_checking) is not None and why_busy[d.key] == why]
    if checking:  # free but for the env check, which takes seconds: wait for it rather than redirect
        return Wait(checking[0][1], checking[0][0].key, accepts=tuple(d.key for d in primary))

    def goes(where: str, later: bool) -> bool:
        """Whether a busy first choice sends the task ``where`` ("redirect", "cpu"): at once
        (``on_busy``) or, when ``later`` (its max wait is over, or can be), by ``after_max_wait``."""
        return spec.on_busy == where or (later and spec.after_max_wait == where)

    waited = now_s - wait_started_s(task)
    expired = spec.max_wait_s is not None and waited >= spec.max_wait_s
    alternatives: list[DeviceState] = []
    if goes("redirect", expired):
        alternatives += rest
    if goes("cpu", expired):
        alternatives += [c for c in cpu if all(c.key != a.key for a in alternatives)]

    head = primary[0] if primary else None
    # The device's name when the first preference names one device, else the preference itself.
    first_label = first_matched[0].name if len(first_matched) == 1 else first_pref
    first_why: Reason
    first_state: Reason
    if head is not None:
        first_why = _on_each(primary, why_busy)
        first_state = c.FirstBusy(label=first_label, why=first_why)
    elif first_matched:
        first_why = c.Each(parts=tuple(unsuitable[d.key] for d in first_matched))
        first_state = c.FirstCannot(label=first_label, why=first_why)
    else:
        first_why, first_state = c.NotPresent(), c.FirstAbsent(label=first_label)

    for alt in alternatives:
        if why_busy[alt.key] is None:
            after = waited if expired and spec.on_busy == "wait" else None
            return Placement(
                alt.key,
                alt.name,
                c.Redirected(
                    target="CPU" if alt.is_cpu else alt.name,
                    to_cpu=alt.is_cpu,
                    waited_s=after,
                    first=first_state,
                ),
                redirected=True,
            )

    can_wait_out = spec.max_wait_s is not None
    redirects, to_cpu = goes("redirect", can_wait_out), goes("cpu", can_wait_out)
    ever = [*primary, *(rest if redirects else ()), *(cpu if to_cpu else ())]
    if not ever and first_matched:
        relevant = [d.key for d in first_matched]
        if redirects:
            relevant += [d.key for d in rest_raw]
        if to_cpu:
            relevant += [d.key for d in devices if d.is_cpu]
        reasons = {k: unsuitable[k] for k in dict.fromkeys(relevant) if k in unsuitable}
        return _no_env_wait(task, devices, reasons, waited if expired else None) or GiveUp(
            c.NoDeviceCanRun(why=tuple(reasons.values()))
        )
    if expired and spec.after_max_wait == "fail":
        return GiveUp(c.GaveUp(waited_s=waited, label=first_label, why=first_why))

    accepts = tuple(d.key for d in [*primary, *alternatives])
    if alternatives:
        detail = tuple(
            c.OnDevice(device=d.name, why=_busy(why_busy[d.key])) for d in [*primary, *alternatives]
        )
        return Wait(c.WaitingForAny(why=detail), head.key if head else None, accepts=accepts)
    return Wait(c.WaitingFor(label=first_label, why=first_why), head.key if head else None, accepts=accepts)


def _busy(why: Reason | None) -> Reason:
    return why if why is not None else c.DeviceBusy(why=())


def _on_each(devices: Sequence[DeviceState], why_busy: Mapping[str, Reason | None]) -> Reason:
    """Why each of these devices is busy: the one's reason, or each named ("a: …; b: …")."""
    if len(devices) == 1:
        return _busy(why_busy[devices[0].key])
    return c.Each(parts=tuple(c.OnDevice(device=d.name, why=_busy(why_busy[d.key])) for d in devices))


def _said_once(reasons: Iterable[Reason]) -> list[Reason]:
    """Each reason once, and the advice to add an env once (the demo's GPUs and the CPU both lack an
    env with torch: the first is kept)."""
    kept: dict[object, Reason] = {}
    for why in reasons:
        kept.setdefault(c.NoEnvConfigured if isinstance(why, c.NoEnvConfigured) else why, why)
    return list(kept.values())


def _no_env_wait(
    task: TaskRecord,
    devices: Sequence[DeviceState],
    reasons: Mapping[str, Reason],
    expired_after_s: float | None,
) -> Decision | None:
    """When only a Python env is missing on every device the task may use (a torch task), it waits:
    an env may be added or fixed meanwhile. It fails only by its policy (``after_max_wait = "fail"``)."""
    no_env = {d.key: d.torch_no_env or d.torch_unproven for d in devices if task.spec.kind == "torch"}
    if not reasons or any(not no_env.get(k) or why != no_env[k] for k, why in reasons.items()):
        return None
    text = c.chain(*_said_once(reasons.values()))
    assert text is not None  # reasons is not empty
    if expired_after_s is not None and task.spec.after_max_wait == "fail":
        return GiveUp(c.GaveUp(waited_s=expired_after_s, label=None, why=text))
    return Wait(text)


@dataclass(frozen=True)
class Plan:
    """One dispatch pass: a decision per pending task (queue order), and the new overtake counts."""

    decisions: tuple[tuple[TaskRecord, Decision], ...]
    overtakes: Mapping[int, int]
    held: Mapping[str, int]


def plan(
    tasks: Sequence[TaskRecord],
    devices: Sequence[DeviceState],
    *,
    now_s: float,
    policy: Policy | None = None,
) -> Plan:
    """Decide for every pending task in queue order, as if each placement had already started.

    ``tasks`` must be in dispatch order (priority high first, then position). Each placement takes a
    slot and its memory estimate on its device for the rest of the pass. Overtakes and holds follow
    the no-starvation rule in the module docstring.
    """
    states = {d.key: d for d in devices}
    held: dict[str, int] = {}
    decisions: list[tuple[TaskRecord, Decision]] = []
    waiting: list[tuple[TaskRecord, tuple[str, ...]]] = []
    overtakes: dict[int, int] = {}
    # Tasks of the same shape waiting for the same devices get the same answer: reuse it while no
    # placement or hold changed the picture (a queue of 10,000 similar tasks costs a few shapes).
    version = 0
    backlog: dict[str, float] = {}  # device key → estimated seconds of work this pass put or queued there
    same_shape: dict[tuple[object, ...], Decision] = {}
    current = list(states.values())
    for task in tasks:
        spec = task.spec
        shape: tuple[object, ...] | None = None
        if (
            spec.prefer == "free"
            and time_gate(task, now_s) is None
            and task.id not in held.values()
            and (spec.max_wait_s is None or now_s - wait_started_s(task) < spec.max_wait_s)
        ):
            shape = (
                version,
                spec.device_prefs,
                spec.on_busy,
                spec.max_wait_s is None,
                spec.after_max_wait,
                spec.memory_need_bytes,
                spec.needs,
                spec.kind == "torch",
                spec.allow_unproven,
            )
        cached = same_shape.get(shape) if shape is not None else None
        decision = (
            cached
            if cached is not None
            else place(task, current, now_s=now_s, held=held, policy=policy, backlog=backlog)
        )
        queued_on = decision if isinstance(decision, Placement) or spec.prefer != "free" else None
        if policy is not None and isinstance(queued_on, Placement | Wait) and queued_on.device is not None:
            run_s = queued_on.run_s if queued_on.run_s is not None else policy.run_s(task, queued_on.device)
            if run_s is not None:
                backlog[queued_on.device] = backlog.get(queued_on.device, 0.0) + run_s
        if shape is not None and isinstance(decision, Wait):
            same_shape[shape] = decision
        decisions.append((task, decision))
        if isinstance(decision, Placement):
            version += 1
            d = states[decision.device]
            states[d.key] = dataclasses.replace(
                d,
                running=d.running + 1,
                running_names=(*d.running_names, f"{task.spec.name} (#{task.id})"),
                extra_used_bytes=d.extra_used_bytes + (task.spec.memory_need_bytes or 0),
            )
            current = list(states.values())
            for ahead, accepts in waiting:
                if decision.device in accepts:
                    overtakes[ahead.id] = overtakes.get(ahead.id, ahead.overtakes) + 1
        elif isinstance(decision, Wait) and decision.accepts:
            waiting.append((task, decision.accepts))
            count = overtakes.get(task.id, task.overtakes)
            if count >= OVERTAKE_LIMIT and decision.device is not None and decision.device not in held:
                held[decision.device] = task.id
                version += 1
    return Plan(tuple(decisions), overtakes, held)
