"""What the queue knows of the devices: each one's state for placement (its reading, our jobs on it
against its slots, whether it is paused, which of a task's needs the doctor saw fail there), the key a
name means, and a device's name for messages even after it is gone."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from gputray.monitor.monitor import Monitor
from gputray.monitor.records import DeviceInfo, Snapshot
from gputray.scheduler.pyenvs.choice import EnvChecking, EnvChooser, EnvMissing
from gputray.scheduler.queue.edits import QueueError
from gputray.scheduler.queue.placement import CPU_INFO, DeviceState, cpu_state, resolve_pref
from gputray.scheduler.reasons.codes import EnvLookupFailed
from gputray.scheduler.replies import Paused
from gputray.scheduler.tasks.records import TaskSpec

log = logging.getLogger("gputray.scheduler.queue.service")  # the queue's log, where these lines always were


class RunningJob(Protocol):
    """One of our jobs, as the device states count it."""

    @property
    def task_id(self) -> int: ...

    @property
    def device(self) -> str: ...

    @property
    def pid(self) -> int: ...

    @property
    def paused(self) -> bool: ...

    @property
    def spec(self) -> TaskSpec: ...


class DeviceBook:
    def __init__(self, monitor: Monitor, env_chooser: EnvChooser, *, slots: Mapping[str, int]) -> None:
        self.monitor = monitor
        self.taken: dict[str, str] = {}  # device key -> the exclusive app using it (queue/exclusive_apps.py)
        self.env_chooser = env_chooser
        self.slots = dict(slots)
        self._slots_of: dict[str, int] = {}  # device key -> its slots, resolved once
        self.names_used: dict[str, str] = {}  # device key -> name, kept for messages after it vanished

    def needs_ok(self, key: str, needs: frozenset[str]) -> frozenset[str] | None:
        """What placement checks ``needs`` against: the wanted needs minus those the doctor saw fail
        here (``env_chooser.failed_needs``); None = nothing known, nothing blocked."""
        if not needs:
            return None
        try:
            failed = frozenset(self.env_chooser.failed_needs(key, needs))
        except Exception:  # the doctor's cache must never stop the queue
            log.exception("reading the doctor's results failed")
            return None
        return needs - failed if failed else None

    def states(
        self,
        snapshot: Snapshot | None,
        running: Sequence[RunningJob],
        paused: Paused,
        *,
        needs: frozenset[str] = frozenset(),
    ) -> list[DeviceState]:
        """Each device as placement sees it: its reading and verdict, our jobs on it against its slots,
        whether it is paused, and (``needs``) what the doctor saw work there; the CPU last."""
        ram_free = ram_total = None
        if snapshot is not None and snapshot.host.ram_total_bytes is not None:
            ram_total = snapshot.host.ram_total_bytes
            if snapshot.host.ram_used_bytes is not None:
                ram_free = ram_total - snapshot.host.ram_used_bytes
        our_pids = {r.pid for r in running}
        states = []
        readings = snapshot.readings if snapshot is not None else ()
        processes = snapshot.processes if snapshot is not None else ()
        for reading in readings:
            key = reading.info.key
            mine = [r for r in running if r.device == key and not r.paused]  # paused: holds no slot
            declared = sum(r.spec.memory_need_bytes or 0 for r in mine)
            ours = (p for p in processes if p.device == key and p.pid in our_pids)
            seen = sum((p.vram_bytes or 0) + (p.shared_bytes or 0) for p in ours)
            states.append(
                DeviceState(
                    info=reading.info,
                    sample=reading.sample,
                    verdict=snapshot.verdict(key) if snapshot is not None else None,
                    running=len(mine),
                    slots=self.slot_count(reading.info),
                    paused=key in paused.devices or key in self.taken,
                    taken_by=self.taken.get(key),
                    running_names=tuple(f"{r.spec.name} (#{r.task_id})" for r in mine),
                    extra_used_bytes=max(0, declared - seen),
                    host_ram_free_bytes=ram_free,
                    host_ram_total_bytes=ram_total,
                    capabilities=self.needs_ok(key, needs),
                )
            )
        mine = [r for r in running if r.device == "cpu" and not r.paused]
        states.append(
            cpu_state(
                running=len(mine),
                slots=self.slot_count(CPU_INFO),
                paused="cpu" in paused.devices,
                running_names=tuple(f"{r.spec.name} (#{r.task_id})" for r in mine),
                host_ram_free_bytes=ram_free,
                host_ram_total_bytes=ram_total,
                extra_used_bytes=sum(r.spec.memory_need_bytes or 0 for r in mine),
                capabilities=self.needs_ok("cpu", needs),
            )
        )
        return states

    def slot_count(self, info: DeviceInfo) -> int:
        """How many jobs may run on the device at once: the config's ``[devices.<name>] slots`` whose
        name matches it (a key, a name fragment like ``5060ti``, ``cpu``), else 1. One per GPU by
        default: on the iGPU parallel jobs fight for memory bandwidth."""
        if info.key not in self._slots_of:
            matching = (n for name, n in self.slots.items() if resolve_pref(name, [DeviceState(info)]))
            self._slots_of[info.key] = next(matching, 1)
        return self._slots_of[info.key]

    def known_keys(self) -> list[str]:
        snapshot = self.monitor.latest
        keys = [r.info.key for r in snapshot.readings] if snapshot is not None else []
        return [*keys, "cpu"]

    def device_key(self, name: str, running: Sequence[RunningJob], paused: Paused) -> str:
        """The key of the one device ``name`` matches (a key, a name fragment); a ``pci:`` key of a
        device not present now is taken as it is. Raises QueueError naming the devices otherwise."""
        devices = self.states(self.monitor.latest, running, paused)
        matched = resolve_pref(name, devices)
        if len(matched) == 1:
            return matched[0].key
        if name.startswith("pci:"):
            return name.lower()  # a device that is not present now (an unplugged eGPU) may be paused too
        known = ", ".join(f"{d.key} ({d.name})" for d in devices)
        what = "matches several devices" if matched else "matches no device"
        raise QueueError(f"'{name}' {what}; devices: {known}")

    def device_name(self, key: str | None) -> str:
        if key is None:
            return "its device"
        if key == "cpu":
            return "the CPU"
        snapshot = self.monitor.latest
        reading = snapshot.reading(key) if snapshot is not None else None
        if reading is not None:
            return reading.info.name
        for info in self.monitor.known_devices():
            if info.key == key:
                return info.name
        return self.names_used.get(key, key)


def with_env_status(dev: DeviceState, env_chooser: EnvChooser) -> DeviceState:
    """The device as torch tasks see it: whether an env is checked there now, or none works."""
    try:
        status = env_chooser.status(dev.info)
    except Exception as exc:  # the doctor's lookups must not stop the queue
        log.exception("env lookup failed")
        return dataclasses.replace(dev, torch_no_env=EnvLookupFailed(error=str(exc)))
    if isinstance(status, EnvChecking):
        return dataclasses.replace(dev, torch_checking=status.reason)
    if isinstance(status, EnvMissing) and status.unproven:
        return dataclasses.replace(dev, torch_unproven=status.reason)
    if isinstance(status, EnvMissing):
        return dataclasses.replace(dev, torch_no_env=status.reason)
    return dev
