"""Priority with teeth and out of memory → run where it fits, through the real deciders, on the same
simulated day as ``placement_day.py`` (issue 28): ``placement.plan`` places, ``preemption.choose``
picks the jobs to pause, ``oom.find_oom`` reads torch's real message, ``oom_elsewhere.elsewhere`` picks
where the job fits. A fake clock; nothing sleeps.

* Preemption: the day's CNN and upscale jobs (``prefer = free``, priority 0, either GPU; no LLM session:
  preemption pauses only our own jobs), a 25-min training run each hour (priority -1, the RTX 5060 Ti
  only) and 10 min into each an urgent job (priority 10, the 5060 Ti only, 120 s there). Without
  ``--preempt`` it waits for the slot; with it, the lower-priority job there is paused (it holds no
  slot; its remaining run resumes when the urgent one ends). Figure: the urgent jobs' mean and worst
  wait (start - arrival; the simulation decides at once, the owner's timer looks every second), and
  how long the paused jobs were paused. Goal: with ``--preempt`` the urgent jobs wait at most two
  monitor ticks (60 s) on average.
* Out of memory: every fifth upscale is a big one that needs 18 GiB: on the 5060 Ti (16 GiB) it runs
  30 s and ends with torch's own "CUDA out of memory" line. ``on_oom = "fail"``: it fails;
  ``"elsewhere"``: it runs again on the Radeon 780M (4 GiB VRAM + 29 GiB shared GTT), once. Figure: the
  big jobs finished and failed under each. Goal: all finish with ``elsewhere``.
"""

from __future__ import annotations

import heapq
import statistics
from dataclasses import dataclass, field

import msgspec
from placement_day import DAY_START, NV, TICK_S, TRUE_RUN_S, Day, _llm_on

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.records import Sample, Verdict
from gputray.scheduler.jobs.oom import find_oom
from gputray.scheduler.queue.oom_elsewhere import elsewhere
from gputray.scheduler.queue.placement import DeviceState, Placement, plan
from gputray.scheduler.queue.preemption import Candidate, choose
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

GiB = 1 << 30
URGENT_EVERY_S = 3600.0  # a training run each hour, an urgent job 10 min after it
TRAIN_FIRST_S = 1800.0
TRAIN_RUN_S = 1500.0
URGENT_AFTER_S = 600.0
URGENT_RUN_S = 120.0
BIG_NEED = 18 * GiB
OOM_AFTER_S = 30.0
OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of "
    "15.93 GiB of which 1.93 GiB is free."
)


@dataclass
class _Run:
    rec: TaskRecord
    device: str
    end: float  # offset when it ends (or runs out of memory), while it runs
    left_s: float = 0.0  # its remaining run while paused
    paused_at: float | None = None


@dataclass
class TeethResult:
    urgent_waits: list[float] = field(default_factory=list)
    paused_s: list[float] = field(default_factory=list)
    big_finished: int = 0
    big_failed: int = 0
    reasons: list[str] = field(default_factory=list)


def _spec(name: str, family: str, prefs: tuple[str, ...], **more: object) -> TaskSpec:
    doc = {"kind": "command", "name": name, "argv": ["x"], "family": family, "device_prefs": list(prefs)}
    return msgspec.convert({**doc, "on_busy": "redirect", **more}, TaskSpec)


def _devices(llm: bool, running: list[_Run], now: float) -> list[DeviceState]:
    out = []
    for info in (RTX_5060_TI, RADEON_780M):
        ours = [r for r in running if r.device == info.key and r.paused_at is None]
        held = sum(r.rec.spec.memory_need_bytes or 2 * GiB for r in running if r.device == info.key)
        busy = llm and info.key == NV
        vram_total = info.vram_total_bytes or 0
        shared = max(0, held - vram_total) if info.shared_total_bytes else None
        sample = Sample(info.key, now, vram_used_bytes=min(vram_total, held + (14 * GiB if busy else 0)),
                        vram_total_bytes=vram_total, shared_used_bytes=shared,
                        shared_total_bytes=info.shared_total_bytes)  # fmt: skip
        reasons = ("llama-server uses 14.2 GiB, 97 %",) if busy else ()
        out.append(DeviceState(info, sample, Verdict(info.key, busy, reasons), running=len(ours),
                               running_names=tuple(r.rec.name for r in ours)))  # fmt: skip
    return out


def simulate_teeth(day: Day, *, preempt: bool, on_oom: str) -> TeethResult:
    """The day with urgent jobs and big upscales; see the module docstring."""
    result = TeethResult()
    hours = max(j.arrival_s for j in day.jobs)
    pending: dict[int, tuple[TaskRecord, float]] = {}  # id -> record, arrival offset
    running: dict[int, _Run] = {}
    paused_for: dict[int, list[int]] = {}  # urgent id -> the jobs it paused
    true_s: dict[int, float] = {}
    spec_of: dict[int, TaskSpec] = {}
    arrival: dict[int, float] = {}
    events: list[tuple[float, int, int]] = []
    next_id = 10_000
    uploads = 0
    for j in day.jobs:
        big = j.family == "upscale" and (uploads := uploads + 1) % 5 == 0
        spec = _spec(f"{j.family}-{j.id}", j.family, ("5060ti", "780m"),
                     **({"vram_bytes": None, "on_oom": on_oom} if big else {}))  # fmt: skip
        if big:
            spec = msgspec.structs.replace(spec, name=f"big-{j.id}", family="big")
        true_s[j.id] = TRUE_RUN_S["upscale" if big else j.family][NV] * j.factor
        heapq.heappush(events, (j.arrival_s, 1, j.id))
        spec_of[j.id] = spec
    t_train = TRAIN_FIRST_S
    while t_train < hours:  # a long low-priority training run on the 5060 Ti, then an urgent job
        for name, family, prio, run_s, at in (
            ("train", "train", -1, TRAIN_RUN_S, t_train),
            ("urgent", "urgent", 10, URGENT_RUN_S, t_train + URGENT_AFTER_S),
        ):
            next_id += 1
            spec_of[next_id] = _spec(f"{name}-{next_id}", family, ("5060ti",), priority=prio,
                                     preempt=preempt and family == "urgent", on_busy="wait")  # fmt: skip
            true_s[next_id] = run_s
            heapq.heappush(events, (at, 1, next_id))
        t_train += URGENT_EVERY_S
    for k in range(int(hours // TICK_S) + 2):
        heapq.heappush(events, (k * TICK_S, 2, 0))
    for a, b in day.llm_spells:
        heapq.heappush(events, (a, 2, 0))
        heapq.heappush(events, (b, 2, 0))
    while events and (pending or running or events[0][0] <= hours):
        t, kind, task_id = heapq.heappop(events)
        now = DAY_START + t
        if kind == 1:
            spec = spec_of[task_id]
            arrival[task_id] = t
            at = DAY_START + t
            rec = TaskRecord(task_id, spec, "queued", submitted_at=at, queued_at=at, position=task_id)
            pending[task_id] = (rec, t)
        elif kind == 0 and task_id in running and (r := running[task_id]).paused_at is None and r.end == t:
            run = running.pop(task_id)
            if run.rec.spec.family == "big" and run.device == NV:  # out of memory there, in torch's words
                oom = find_oom(OOM_LINE)
                assert oom is not None
                states = _devices(_llm_on(day, t) is not None, list(running.values()), now)
                failed = next(d for d in states if d.key == NV)
                outcome = elsewhere(run.rec.spec, failed, oom, states)
                if run.rec.spec.on_oom == "elsewhere" and outcome.spec is not None:
                    rec = run.rec.replace(spec=outcome.spec, state="queued", reason=outcome.reason)
                    pending[task_id] = (rec, arrival[task_id])
                    if len(result.reasons) < 1:
                        result.reasons.append(f"{rec.name}: {render(outcome.reason)}")
                else:
                    result.big_failed += 1
            elif run.rec.spec.family == "big":
                result.big_finished += 1
            for victim in paused_for.pop(task_id, []):  # the urgent one ended: they go on
                v = running[victim]
                assert v.paused_at is not None
                result.paused_s.append(t - v.paused_at)
                v.end, v.paused_at = t + v.left_s, None
                heapq.heappush(events, (v.end, 0, victim))
        if events and events[0][0] == t:
            continue
        llm = _llm_on(day, t) is not None
        devices = _devices(llm, list(running.values()), now)
        if preempt:
            for rec, _arrived in sorted(pending.values(), key=lambda p: -p[0].spec.priority):
                if not rec.spec.preempt:
                    continue
                jobs = [Candidate(i, r.device, r.rec.spec.priority, r.rec.started_at or 0.0, 0,
                                  r.paused_at is None and i not in paused_for and r.rec.spec.preemptible)
                        for i, r in running.items()]  # fmt: skip
                chosen = choose(rec, devices, jobs)
                if chosen is not None:
                    for victim in chosen.victims:
                        v = running[victim]
                        v.left_s, v.paused_at = v.end - t, t
                        paused_for.setdefault(rec.id, []).append(victim)
                    devices = _devices(llm, list(running.values()), now)
        queue = sorted((r for r, _ in pending.values()), key=lambda r: (-r.spec.priority, r.position))
        for rec, decision in plan(queue, devices, now_s=now).decisions:
            if not isinstance(decision, Placement):
                continue
            arrived = pending.pop(rec.id)[1]
            if rec.spec.family == "urgent":
                result.urgent_waits.append(t - arrived)
            big_on_nv = rec.spec.family == "big" and decision.device == NV
            run_s = OOM_AFTER_S if big_on_nv else true_s[rec.id] * (1 if decision.device == NV else 2.8)
            started = rec.replace(state="running", device=decision.device, started_at=now)
            running[rec.id] = _Run(started, decision.device, t + run_s)
            heapq.heappush(events, (t + run_s, 0, rec.id))
            devices = _devices(llm, list(running.values()), now)
    return result


def teeth_lines(day: Day) -> list[str]:
    """The bench's lines: the urgent jobs' waits without and with --preempt, the big jobs' ends under
    each on_oom."""
    ours = Day(day.jobs, ())  # no LLM: preemption pauses only our own jobs, never another program
    off = simulate_teeth(ours, preempt=False, on_oom="fail")
    on = simulate_teeth(ours, preempt=True, on_oom="fail")
    lines = [
        f"urgent jobs ({len(on.urgent_waits)}, priority 10, 5060 Ti only, each 10 min into a 25-min "
        f"priority -1 training run there; the day's jobs, no LLM): mean wait "
        f"{statistics.fmean(off.urgent_waits):.0f} s (worst {max(off.urgent_waits):.0f} s) without "
        f"--preempt, {statistics.fmean(on.urgent_waits):.0f} s (worst {max(on.urgent_waits):.0f} s) with "
        f"it; {len(on.paused_s)} training runs paused {statistics.fmean(on.paused_s or [0.0]):.0f} s each",
    ]
    with_s = statistics.fmean(on.urgent_waits)
    lines.append(f"urgent mean wait with --preempt = {with_s:.0f} s  (goal <= 2 monitor ticks, "
                 f"{2 * TICK_S:.0f} s): {'met' if with_s <= 2 * TICK_S else 'NOT met'}")  # fmt: skip
    fail = simulate_teeth(day, preempt=False, on_oom="fail")
    moved = simulate_teeth(day, preempt=False, on_oom="elsewhere")
    total = moved.big_finished + moved.big_failed
    lines.append(
        f"big upscales (18 GiB, out of memory on the 5060 Ti): on_oom = fail: {fail.big_finished} "
        f"finished, {fail.big_failed} failed; on_oom = elsewhere: {moved.big_finished} finished, "
        f"{moved.big_failed} failed (goal: all {total} finish): "
        f"{'met' if moved.big_failed == 0 and total else 'NOT met'}"
    )
    lines += [f"  {line}" for line in moved.reasons]
    return lines
