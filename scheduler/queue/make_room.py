"""Make room, not only wait: a waiting task that needs memory an idle resident holds (an LLM server,
ComfyUI) on a device it may use gets that memory back through the resident's own API.

* Which: a pending ``waiting`` task with a memory need (``--vram`` or the predicted need) whose first
  device preference it could ever run on is short of memory only; a resident on that device that is
  not serving, idle for at least its ``idle_after``, has a call that frees memory, and with whose
  memory given back the task would fit (``busy_reason`` of the device without it is None).
* Policy (``[[resident]] free_when_idle``): ``never`` — nothing; ``always`` — asked at once;
  ``ask`` (the default) — a question the user answers (``gputray free-resident NAME``, the tray's
  notification and the panel's row menu); the task's reason says who holds its memory and how to free it.
  "Keep waiting" is the task's own (``TaskSpec.kept_residents``, an ``edit``: it outlives the tray and
  the owner): that resident is neither asked nor offered for that task, and its reason says the task
  waits by the user's choice.
* After asking: the device's used memory must drop by at least half of what the resident held within
  ``FREE_BOUND_S``; the task's reason says either way ("freed 9.8 GiB held by ComfyUI (idle 14 min):
  starting", or that it did not), and a resident that did not give it back is not asked again for
  that task. A resident that is serving is never asked, whatever the policy.

``MakeRoom`` is a dispatcher timer (``QueueService.add_timer``): each look scans the residents
(``monitor.residents.ResidentWatch``, loopback HTTP with short timeouts) and then decides; ``choose``
is pure.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from gputray.monitor.records import Snapshot
from gputray.monitor.resident_api import FreeResult, free, warm
from gputray.monitor.residents import ResidentView, ResidentWatch
from gputray.scheduler.queue.placement import DeviceState, Wait, busy_reason, never_fits, resolve_pref
from gputray.scheduler.queue.preemption import DEFAULT_PREFS, PreemptingQueue
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.render import render
from gputray.scheduler.resident_config import ResidentPolicy, ResidentsConfig
from gputray.scheduler.tasks.records import TaskRecord

log = logging.getLogger("gputray.scheduler.queue.make_room")

LOOK_S = 2.0
FREE_BOUND_S = 30.0  # the memory must be back within this after asking
DROP_SHARE = 0.5  # … by at least this share of what the resident held
RoomStep = Literal["holds", "idle_wait", "asked", "freed", "not_freed", "refused", "kept"]


@dataclass(frozen=True)
class RoomPlan:
    """Free ``resident`` (on ``device``) and ``task_id`` fits there."""

    task_id: int
    device: str
    resident: ResidentView
    policy: ResidentPolicy
    task_name: str = ""


def choose(
    task: TaskRecord,
    devices: Sequence[DeviceState],
    residents: Sequence[ResidentView],
    config: ResidentsConfig,
    now_s: float,
    *,
    refused: frozenset[tuple[int, int]] = frozenset(),
    idle_or_not: bool = False,
    kept_too: bool = False,
) -> RoomPlan | None:
    """The resident whose memory, given back, lets ``task`` start on one of its first-choice devices
    (the smallest that does); None when none may be asked or none would do. ``idle_or_not``: also one
    not idle for its ``idle_after`` yet (the one the task waits for, which its reason names);
    ``kept_too``: also one the user chose to keep for it (``kept_residents``: which its reason names)."""
    if not (task.spec.memory_need_bytes or 0):
        return None
    prefs = task.spec.device_prefs or DEFAULT_PREFS
    best: RoomPlan | None = None
    for dev in resolve_pref(prefs[0], devices):
        if never_fits(task, dev) is not None or busy_reason(task, dev) is None:
            continue
        for resident in residents:
            policy = config.policy(resident.name)
            if (
                policy is None
                or policy.free_when_idle == "never"
                or resident.device != dev.key
                or resident.busy
                or not resident.can_free
                or not resident.held_bytes
                or (resident.idle_s(now_s) < policy.idle_after_s and not idle_or_not)
                or (task.id, resident.pid) in refused
                or (not kept_too and kept_for(task, resident))
            ):
                continue
            room = dataclasses.replace(dev, extra_used_bytes=dev.extra_used_bytes - resident.held_bytes)
            if busy_reason(task, room) is not None:
                continue
            if best is None or resident.held_bytes < (best.resident.held_bytes or 0):
                best = RoomPlan(task.id, dev.key, resident, policy, task.name)
    return best


@dataclass
class _Asked:
    plan: RoomPlan
    used_before: int
    asked_at: float
    said: str


class MakeRoom:
    """The dispatcher's timer that frees idle residents for waiting tasks (module docstring)."""

    def __init__(
        self,
        queue: PreemptingQueue,
        config: ResidentsConfig,
        *,
        watch: ResidentWatch | None = None,
        freer: Callable[[ResidentView, ResidentPolicy], FreeResult] | None = None,
    ) -> None:
        self.queue = queue
        self.config = config
        self.watch = watch or ResidentWatch(config.kinds)
        self._freer = freer or _free_through_api
        self._next_s: float | None = None
        self.asked: dict[int, _Asked] = {}  # resident pid -> what was asked of it
        self._idle_waits: set[int] = set()  # tasks whose reason says a resident is freed once idle
        self._kept: set[int] = set()  # tasks whose reason says the user chose to keep a resident
        self.questions: dict[int, RoomPlan] = {}  # task id -> the resident "ask" would free for it
        self._refused: set[tuple[int, int]] = set()  # (task, resident pid): asked, memory not back
        self.freed = 0  # residents that gave memory back (benches, tests)
        self.looks = 0  # looks done (tests wait for some)
        self.to_warm: dict[int, RoomPlan] = {}  # task id -> the resident freed for it, to load again after
        self.notices: list[str] = []  # what was said, newest last (the tray shows them)

    def next_due_s(self) -> float | None:
        return self._next_s if self._next_s is not None else 0.0

    def residents(self) -> tuple[ResidentView, ...]:
        return self.watch.latest

    def run_due(self, now_s: float) -> None:
        self._next_s = now_s + LOOK_S
        book = self.queue.device_book
        snapshot = book.monitor.latest
        residents = self.watch.look(snapshot)
        self._check_asked(now_s)
        self._warm_again()
        self.looks += 1
        if not residents and not (self.questions or self._idle_waits or self._kept):
            return  # (with some, each note that no longer holds goes below)
        pending = {r.id for r in self.queue.store.pending(active_only=True)}
        for task_id in set(self.queue.runs.room_notes) - pending:
            self.queue.runs.room_notes.pop(task_id, None)  # started (its start said it), or ended
        self._idle_waits &= pending
        self._kept &= pending
        devices = book.states(snapshot, list(self.queue.runs.jobs.values()), self.queue.paused())
        waiting = [r for r in self.queue.store.pending(active_only=True) if r.state == "waiting"]
        asking = {a.plan.resident.pid for a in self.asked.values()}
        questions: dict[int, RoomPlan] = {}
        for task in waiting:  # highest priority first (the store's order)
            plan = choose(task, devices, residents, self.config, now_s, refused=frozenset(self._refused))
            if plan is None:
                if self._say_idle_wait(task, devices, residents, now_s):
                    self._kept.discard(task.id)
                else:
                    self._say_kept(task, devices, residents, now_s)
                continue
            self._idle_waits.discard(task.id)  # its note is what is done now
            self._kept.discard(task.id)
            if plan.resident.pid in asking:
                continue
            if plan.policy.free_when_idle == "always":
                self.free_for(plan, now_s)
                asking.add(plan.resident.pid)
            else:
                questions[task.id] = plan
                said = self._said("holds", plan.resident, now_s)
                if task.id not in self.questions:
                    self._note(task.id, said)
                else:  # its idle time as of this look: the reason said "idle 4 s" for as long as it stood
                    self._renote(task.id, said)
        for lapsed in set(self.questions) - set(questions) - self._idle_waits - self._kept:
            # no longer asked (its GPU taken by a game, paused, busy): its reason stops offering
            # `gputray free-resident …` with the idle time of the last look; asked again, it says it again
            self.queue.runs.room_notes.pop(lapsed, None)
        self.questions = questions

    def _say_idle_wait(
        self,
        task: TaskRecord,
        devices: Sequence[DeviceState],
        residents: Sequence[ResidentView],
        now_s: float,
    ) -> bool:
        """A resident that would make room once it has been idle for its ``idle_after``: the task's
        reason says so while it waits ("Ollama holds 6.0 GiB (idle 2 min); it will be asked to free it
        for this task once idle 10 min"), not only that memory is short. Whether there is one."""
        refused = frozenset(self._refused)
        soon = choose(task, devices, residents, self.config, now_s, refused=refused, idle_or_not=True)
        notes = self.queue.runs.room_notes
        if soon is None:
            if task.id in self._idle_waits:
                self._idle_waits.discard(task.id)
                notes.pop(task.id, None)
            return False
        r, after_s = soon.resident, soon.policy.idle_after_s
        at_s = now_s - r.idle_s(now_s) + after_s  # when it will have been idle long enough
        said = c.RoomMade(
            step="idle_wait", resident=r.name, held_bytes=r.held_bytes or 0, bound_s=after_s,
            ask=soon.policy.free_when_idle == "ask", at_s=math.ceil(at_s / 60) * 60,
        )  # fmt: skip
        if task.id not in self._idle_waits:
            self._idle_waits.add(task.id)
            self._note(task.id, said)
        notes[task.id] = lambda: said  # the same words while nothing changes (wait --follow says each)
        return True

    def _say_kept(
        self,
        task: TaskRecord,
        devices: Sequence[DeviceState],
        residents: Sequence[ResidentView],
        now_s: float,
    ) -> None:
        """The resident that would make room is one the user chose to keep for this task ("Keep
        waiting": ``kept_residents``): the task's reason says it waits by that choice ("ComfyUI holds
        9.8 GiB; you chose to keep waiting rather than free it for this task"), not only that memory is
        short — nor, after a restart, anything that reads as a question still to answer."""
        kept = None
        if task.spec.kept_residents:
            refused = frozenset(self._refused)
            kept = choose(
                task, devices, residents, self.config, now_s, refused=refused, idle_or_not=True, kept_too=True
            )
        notes = self.queue.runs.room_notes
        if kept is None or not kept_for(task, kept.resident):
            if task.id in self._kept:
                self._kept.discard(task.id)
                notes.pop(task.id, None)
            return
        r = kept.resident
        said = c.RoomMade(step="kept", resident=r.name, held_bytes=r.held_bytes or 0)
        if task.id not in self._kept:
            self._kept.add(task.id)
            self._note(task.id, said)
        notes[task.id] = lambda: said

    @staticmethod
    def _said(
        step: RoomStep,
        r: ResidentView,
        now_s: float,
        *,
        freed_bytes: int = 0,
        bound_s: float = 0.0,
        said: str = "",
    ) -> c.RoomMade:
        held, idle_s = r.held_bytes or 0, r.idle_s(now_s)
        return c.RoomMade(
            step=step,
            resident=r.name,
            held_bytes=held,
            idle_s=idle_s,
            freed_bytes=freed_bytes,
            bound_s=bound_s,
            said=said,
        )

    def answer(self, name: str, now_s: float, *, task_id: int | None = None) -> tuple[str, bool]:
        """The user said yes to freeing ``name`` (CLI, notification, row menu): free it for the task it
        was asked for (``task_id``'s question first, where the tray names it; or, with no task waiting
        for it, free it anyway if it is idle); what was done."""
        asked = [p for p in self.questions.values() if _named(p.resident, name)]
        plan = next((p for p in asked if p.task_id == task_id), asked[0] if asked else None)
        if plan is not None:
            self.questions.pop(plan.task_id, None)
            return self.free_for(plan, now_s)
        named = [r for r in self.watch.latest if _named(r, name)]
        if not named:
            known = ", ".join(r.name for r in self.watch.latest) or "none is running"
            return f"no resident named {name!r} is running here ({known})", False
        if len(named) > 1:  # two llama-servers, one per GPU: which one is for the user to say
            ports = ", ".join(str(r.port if r.port is not None else f"pid {r.pid}") for r in named)
            return f"{len(named)} residents are named {named[0].name} ({ports}): name one by its port", False
        resident = named[0]
        if resident.busy:
            return f"{resident.name} is serving a request: not asked", False
        if not resident.can_free:  # a single-model llama-server, a custom one with nothing loaded
            return f"{resident.name} has no call that frees its memory (docs/residents.md): not asked", False
        policy = self.config.policy(resident.name)
        assert policy is not None
        return self.free_for(RoomPlan(0, resident.device or "", resident, policy), now_s)

    def free_for(self, plan: RoomPlan, now_s: float) -> tuple[str, bool]:
        """Ask ``plan``'s resident to free its memory; what was said (English), and whether it was asked."""
        r = plan.resident
        used = self._used(plan.device)
        result = self._freer(r, plan.policy)
        if not result.ok:
            self._refused.add((plan.task_id, r.pid))
            return self._note(plan.task_id, self._said("refused", r, now_s, said=result.said)), False
        said = self._said("asked", r, now_s)
        words = self._note(plan.task_id, said) + f": {result.said}"
        log.info("task #%d: %s", plan.task_id, words)
        self.asked[r.pid] = _Asked(plan, used if used is not None else 0, now_s, result.said)
        if plan.task_id:  # the task may start before the next look: its start asks whether the room was made
            self.queue.runs.room_notes[plan.task_id] = lambda: self._settle(r.pid, now_s) or said
        return words, True

    def _used(self, device: str) -> int | None:
        monitor = self.queue.device_book.monitor
        return _others_used_bytes(monitor.latest, device, monitor.own_pids(device))

    def _check_asked(self, now_s: float) -> None:
        for pid, asked in list(self.asked.items()):
            if self._settle(pid, now_s) is None and now_s - asked.asked_at >= FREE_BOUND_S:
                del self.asked[pid]
                self._refused.add((asked.plan.task_id, pid))
                r = asked.plan.resident
                self._note(
                    asked.plan.task_id, self._said("not_freed", r, asked.asked_at, bound_s=FREE_BOUND_S)
                )

    def _settle(self, pid: int, now_s: float) -> c.RoomMade | None:
        """Whether the memory asked of resident ``pid`` is back (the device's used memory, less our jobs',
        dropped by ``DROP_SHARE`` of what it held): then the reason that says so, once; None while not."""
        asked = self.asked.get(pid)
        if asked is None:
            return None
        plan, r = asked.plan, asked.plan.resident
        used = self._used(plan.device)
        if used is None or asked.used_before - used < DROP_SHARE * (r.held_bytes or 0):
            return None
        del self.asked[pid]
        self.freed += 1
        if plan.policy.reload_after and plan.task_id:
            self.to_warm[plan.task_id] = plan
        said = self._said("freed", r, asked.asked_at, freed_bytes=max(0, asked.used_before - used))
        self._note(plan.task_id, said)
        self.queue.request_dispatch(urgent=True)
        return said

    def _warm_again(self) -> None:
        """``reload_after``: once the task a resident was freed for has ended, load its models again,
        unless another task waits for memory on that device."""
        if not self.to_warm:
            return
        pending = self.queue.store.pending(active_only=True)
        for task_id, plan in list(self.to_warm.items()):
            if task_id in self.queue.runs.jobs or any(r.id == task_id for r in pending):
                continue  # it runs, or waits still
            del self.to_warm[task_id]
            if any(r.spec.memory_need_bytes for r in pending if r.state == "waiting"):
                log.info("%s not loaded again: a task waits for memory", plan.resident.name)
                continue
            r = plan.resident
            result = warm(plan.policy.kind.api, r.port, r.models)
            words = f"{r.name}: its models loaded again after #{task_id} ({result.said})"
            log.info("%s", words if result.ok else f"{r.name} not loaded again: {result.said}")
            self.notices.append(words if result.ok else f"{r.name} not loaded again: {result.said}")

    def _renote(self, task_id: int, said: c.RoomMade) -> None:
        """The task's reason says ``said`` from the next pass on, without saying it again (no log line)."""
        self.queue.runs.room_notes[task_id] = lambda: said

    def _note(self, task_id: int, said: c.RoomMade) -> str:
        """Say it: the tray's notices and the log, and the task's reason (each pass puts it after why it
        waits, and its start puts it first: ``JobRuns.room_notes``); the English words."""
        words = render(said)
        log.info("%s%s", f"task #{task_id}: " if task_id else "", words)
        self.notices.append(words if not task_id else f"#{task_id}: {words}")
        del self.notices[:-50]
        if task_id:
            self.queue.runs.room_notes[task_id] = lambda: said
            self.queue.request_dispatch()
        return words


def with_room_notes(
    waits: Sequence[tuple[TaskRecord, Wait]], notes: Mapping[int, Callable[[], c.Reason]]
) -> list[tuple[TaskRecord, Wait]]:
    """The dispatcher's waits with what making room did for each task after why it waits."""
    return [
        (t, dataclasses.replace(w, reason=c.Chain(parts=(w.reason, notes[t.id]()))) if t.id in notes else w)
        for t, w in waits
    ]


def _others_used_bytes(snapshot: Snapshot | None, device: str, ours: frozenset[int]) -> int | None:
    """The device's used memory less what our own jobs hold there: a job that starts in the room made
    must not hide that the room was made."""
    reading = snapshot.reading(device) if snapshot is not None else None
    if reading is None:
        return None
    sample = reading.sample
    if sample.vram_used_bytes is None and sample.shared_used_bytes is None:
        return None
    used = (sample.vram_used_bytes or 0) + (sample.shared_used_bytes or 0)
    mine = sum(
        (p.vram_bytes or 0) + (p.shared_bytes or 0)
        for p in (snapshot.processes if snapshot is not None else ())
        if p.device == device and p.pid in ours
    )
    return used - mine


def _free_through_api(resident: ResidentView, policy: ResidentPolicy) -> FreeResult:
    return free(policy.kind.api, resident.port, resident.models, policy.kind.free_call)


def kept_for(task: TaskRecord, resident: ResidentView) -> bool:
    """The user chose to keep ``resident`` for ``task`` ("Keep waiting": ``kept_residents``)."""
    return any(_named(resident, name) for name in task.spec.kept_residents)


def _named(resident: ResidentView, name: str) -> bool:
    """``name`` is the resident's (any case), or its port or pid: ``free-resident 8080``."""
    wanted = name.strip().lower()
    return wanted in (resident.name.lower(), str(resident.port), str(resident.pid))
