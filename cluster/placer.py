"""Placement across machines: the queue's own pure ``placement.plan`` over every machine's devices.

Each machine's devices become ``DeviceState``s with machine-qualified keys (``desk/pci:0000:01:00.0``)
carrying that machine's own verdicts (external use counted there), our jobs running there, its pauses
and what its GPU doctor saw fail (``needs``; a torch job only goes where some Python env works, or
where the doctor never looked). Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from gputray.cluster.wire import DeviceView, MachineView, qualified, split_qualified
from gputray.monitor.busy_why import BusyWhy
from gputray.monitor.records import Sample, Verdict
from gputray.scheduler.cluster_port.records import TaskRecord
from gputray.scheduler.cluster_port.shared import Decision, DeviceState, Placement, plan

TORCH_NEED = "torch"  # a pseudo-need: some Python env runs torch on the device (per the doctor)


def _renamed(why: BusyWhy, name: str, as_name: str) -> BusyWhy:
    """A verdict of another machine's device, naming it as this machine does ("Radeon 780M on desk")."""
    if getattr(why, "device", None) == name:
        return msgspec.structs.replace(why, device=as_name)
    return why


def _device_state(machine: str, view: MachineView, d: DeviceView, needs: frozenset[str]) -> DeviceState:
    key = qualified(machine, d.key)
    name = f"{d.name} on {machine}"
    info = d.info(key, name)
    failed = set(d.failed_needs) & needs
    if d.torch_ok is False and TORCH_NEED in needs:
        failed.add(TORCH_NEED)
    ram_free = None
    if view.ram_total_bytes is not None and view.ram_used_bytes is not None:
        ram_free = view.ram_total_bytes - view.ram_used_bytes
    if d.kind == "cpu":
        sample = None
        verdict = None
    else:
        reading = d.reading if d.reading is not None else Sample(key=d.key, timestamp_s=view.taken_at_s)
        sample = dataclasses.replace(reading, key=key, timestamp_s=view.taken_at_s)  # that machine's reading
        verdict = None
        if d.busy is not None:
            reasons = tuple(_renamed(r, d.name, name) for r in d.reasons)
            verdict = Verdict(key, d.busy, reasons)
    return DeviceState(
        info=info,
        sample=sample,
        verdict=verdict,
        running=d.running,
        slots=1,
        paused=d.paused or view.queue_paused,
        running_names=d.running_names,
        host_ram_free_bytes=ram_free,
        host_ram_total_bytes=view.ram_total_bytes,
        capabilities=(needs - failed) if failed else None,
    )


def device_states(
    views: Mapping[str, MachineView], machines: Sequence[str], needs: frozenset[str]
) -> list[DeviceState]:
    """The devices of ``machines`` (those with a view), in that order, as placement sees them."""
    out: list[DeviceState] = []
    for machine in machines:
        view = views.get(machine)
        if view is not None:
            out.extend(_device_state(machine, view, d, needs) for d in view.devices)
    return out


def rewrite_prefs(prefs: Sequence[str], machine: str | None) -> tuple[str, ...]:
    """For a task bound to one machine, its bare device keys (``pci:…``, ``cpu``) name that machine's."""
    if machine is None:
        return tuple(prefs)
    return tuple(qualified(machine, p) if p.lower().startswith("pci:") else p for p in prefs)


@dataclass(frozen=True)
class ClusterDecision:
    task: TaskRecord
    decision: Decision
    machine: str | None = None  # where a Placement puts it
    device_key: str | None = None  # that machine's own key


def place_all(
    tasks: Sequence[TaskRecord],
    views: Mapping[str, MachineView],
    *,
    local: str,
    now_s: float,
    allowed: Callable[[TaskRecord], Sequence[str]],
) -> list[ClusterDecision]:
    """Decide for every task (queue order). ``allowed(task)`` lists the machines it may go to, the
    local one first; tasks allowed the same machines are planned together, and each placement takes
    its slot for the tasks planned after it."""
    needs = frozenset(n for t in tasks for n in t.spec.needs) | (
        {TORCH_NEED} if any(t.kind == "torch" for t in tasks) else frozenset()
    )
    taken: dict[str, int] = {}  # qualified key → placements made earlier in this pass
    groups: dict[tuple[str, ...], list[TaskRecord]] = {}
    for t in tasks:
        groups.setdefault(tuple(allowed(t)), []).append(t)
    out: list[ClusterDecision] = []
    for machines, members in groups.items():
        devices = [
            dataclasses.replace(d, running=d.running + taken.get(d.key, 0))
            for d in device_states(views, machines, needs)
        ]
        bound = machines[0] if len(machines) == 1 else None
        shaped = [_for_placement(t, bound) for t in members]
        result = plan(shaped, devices, now_s=now_s)
        for original, (_, decision) in zip(members, result.decisions, strict=True):
            if isinstance(decision, Placement):
                taken[decision.device] = taken.get(decision.device, 0) + 1
                machine, key = split_qualified(decision.device)
                out.append(ClusterDecision(original, decision, machine, key))
            else:
                out.append(ClusterDecision(original, decision))
    order = {t.id: i for i, t in enumerate(tasks)}
    out.sort(key=lambda c: order[c.task.id])
    return out


def _for_placement(task: TaskRecord, bound: str | None) -> TaskRecord:
    spec = task.spec
    needs = spec.needs + ((TORCH_NEED,) if spec.kind == "torch" else ())
    prefs = rewrite_prefs(spec.device_prefs, bound)
    if needs == spec.needs and prefs == spec.device_prefs:
        return task
    return task.replace(spec=spec.replace(needs=needs, device_prefs=prefs))


def handed_prefs(prefs: Sequence[str], machine: str, device_key: str) -> tuple[str, ...]:
    """The device preferences the task takes to ``machine``: the chosen device first, then its own
    preferences in that machine's terms (other machines' keys dropped)."""
    out = [device_key]
    for p in prefs:
        m, _, local = p.partition("/")
        if local:
            if m != machine:
                continue
            p = local
        if p not in out:
            out.append(p)
    return tuple(out)
