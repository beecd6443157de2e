"""What crosses the local socket and the Ray calls: task records and machine views as plain JSON types.

A whole TaskRecord (the spec, the queue fields the placement reads) crosses as itself (msgspec encodes
the dataclass; ``sendable`` reads its stored environment first), unlike ``replies.TaskView``, which is
what a client may know of a task.
``MachineView`` is one machine's devices as its own owner judges them: readings, busy verdicts
(external use counted), our jobs on each, pauses, and what its GPU doctor saw fail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gputray.monitor.records import DeviceInfo
from gputray.scheduler.tasks.records import TaskRecord


def sendable(rec: TaskRecord) -> TaskRecord:
    """``rec`` as it crosses the socket or a Ray call: its spec's environments read (``TaskSpec.plain``)."""
    return rec.replace(spec=rec.spec.plain())


@dataclass(frozen=True)
class DeviceView:
    """One device of one machine; ``key`` is that machine's own key (``pci:0000:01:00.0``, ``cpu``)."""

    key: str
    name: str
    vendor: str
    kind: str
    pci_bdf: str | None = None
    state: str = "ok"
    reason: str | None = None
    util_percent: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    shared_used_bytes: int | None = None
    shared_total_bytes: int | None = None
    sclk_mhz: int | None = None
    mclk_mhz: int | None = None
    busy: bool | None = None
    reasons: tuple[str, ...] = ()
    running: int = 0
    running_names: tuple[str, ...] = ()
    paused: bool = False
    failed_needs: tuple[str, ...] = ()  # needs the doctor saw fail here (and pass nowhere here)
    torch_ok: bool | None = None  # some Python env runs torch here (None: the doctor never looked)
    simulated: bool = False

    def info(self, key: str, name: str) -> DeviceInfo:
        """This device as the placement's ``DeviceInfo``, under ``key`` (``desk/pci:…`` across machines)
        and ``name`` (``Radeon 780M on laptop`` in messages that span machines)."""
        return DeviceInfo(
            key=key,
            name=name,
            vendor=self.vendor if self.vendor in ("nvidia", "amd", "intel") else "other",  # type: ignore[arg-type]
            kind=self.kind if self.kind in ("integrated", "discrete", "cpu") else "other",  # type: ignore[arg-type]
            backend="cluster",
            pci_bdf=self.pci_bdf,
            vram_total_bytes=self.vram_total_bytes,
            shared_total_bytes=self.shared_total_bytes,
            simulated=self.simulated,
        )

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["reasons"] = list(self.reasons)
        out["running_names"] = list(self.running_names)
        out["failed_needs"] = list(self.failed_needs)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeviceView:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("reasons", "running_names", "failed_needs"):
            values[key] = tuple(values.get(key) or ())
        return cls(**values)


@dataclass(frozen=True)
class InboundTask:
    """A task another machine handed to this one: its id here, where it came from, its state."""

    id: int
    origin: str
    state: str


@dataclass(frozen=True)
class MachineView:
    machine: str
    taken_at_s: float
    devices: tuple[DeviceView, ...] = ()
    ram_used_bytes: int | None = None
    ram_total_bytes: int | None = None
    queue_paused: bool = False
    demo: bool = False
    inbound: tuple[InboundTask, ...] = ()
    gputray_pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "taken_at_s": self.taken_at_s,
            "devices": [d.to_json() for d in self.devices],
            "ram_used_bytes": self.ram_used_bytes,
            "ram_total_bytes": self.ram_total_bytes,
            "queue_paused": self.queue_paused,
            "demo": self.demo,
            "inbound": [dataclasses.asdict(t) for t in self.inbound],
            "gputray_pid": self.gputray_pid,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MachineView:
        return cls(
            machine=str(data["machine"]),
            taken_at_s=float(data["taken_at_s"]),
            devices=tuple(DeviceView.from_json(d) for d in data.get("devices") or ()),
            ram_used_bytes=data.get("ram_used_bytes"),
            ram_total_bytes=data.get("ram_total_bytes"),
            queue_paused=bool(data.get("queue_paused")),
            demo=bool(data.get("demo")),
            inbound=tuple(InboundTask(**t) for t in data.get("inbound") or ()),
            gputray_pid=data.get("gputray_pid"),
        )


def qualified(machine: str, key: str) -> str:
    """``desk/pci:0000:01:00.0``: a device key unique across machines."""
    return f"{machine}/{key}"


def report_devices(report: Mapping[str, Any]) -> dict[str, list[DeviceView]]:
    """The GPUs of a bridge's report (``Bridge.report``: keyed ``machine/key``, no CPU) per machine, each
    under its own machine's key."""
    out: dict[str, list[DeviceView]] = {}
    for d in report.get("devices") or ():
        out.setdefault(str(d["machine"]), []).append(DeviceView.from_json({**d, "key": d["local_key"]}))
    return out


def split_qualified(key: str) -> tuple[str, str]:
    machine, _, local = key.partition("/")
    return machine, local
