"""The cluster's records that cross the owner: the bridge's report (``cluster_sync``) and the document
``status --cluster`` reads (``status``'s ``cluster``), as msgspec Structs the owner passes on typed.

They live in the scheduler so that the port (``cluster_port.ClusterPort``), the requests and the replies
can name them without importing ``gputray.cluster``, which builds and reads them. A device of another
machine carries that machine's own monitor reading (``monitor.records.Sample``, encoded as ``status``
encodes its ``Snapshot``) rather than a copy of its fields, so a new reading reaches ``status --cluster``
without a change here. Sizes are bounded as every request field is (lengths here, 1 MiB per frame).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from gputray.monitor.busy_why import BusyWhy
from gputray.monitor.records import DeviceInfo, Sample

Text = Annotated[str, Meta(max_length=32_768, pattern=r"^[^\x00]*$")]
Texts = Annotated[tuple[Text, ...], Meta(max_length=1_000)]
Count = Annotated[int, Meta(ge=0, le=2**31)]
Pid = Annotated[int, Meta(ge=0, le=2**31)]
Epoch = Annotated[float, Meta(ge=0, le=1e12)]
Bytes = Annotated[int, Meta(ge=0, le=2**62)]
MAX_DEVICES = 256
MAX_MACHINES = 1_000


class DeviceView(msgspec.Struct, frozen=True, kw_only=True):
    """One device of one machine as its own owner judges it; ``key`` is that machine's own key
    (``pci:0000:01:00.0``, ``cpu``). ``reading`` is its monitor's last sample (None for the CPU, and
    for a device it has not read yet), its totals filled from the device's own where a sample has none."""

    key: Text
    name: Text
    vendor: Text
    kind: Text
    pci_bdf: Text | None = None
    reading: Sample | None = None
    busy: bool | None = None
    reasons: tuple[BusyWhy, ...] = ()  # words: ``reasons.render``
    running: Count = 0
    running_names: Texts = ()
    paused: bool = False
    failed_needs: Texts = ()  # needs the doctor saw fail here (and pass nowhere here)
    torch_ok: bool | None = None  # some Python env runs torch here (None: the doctor never looked)
    simulated: bool = False

    @property
    def state(self) -> str:
        return self.reading.state if self.reading is not None else "ok"

    @property
    def vram_total_bytes(self) -> int | None:
        return self.reading.vram_total_bytes if self.reading is not None else None

    @property
    def shared_total_bytes(self) -> int | None:
        return self.reading.shared_total_bytes if self.reading is not None else None

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


class ReportedMachine(msgspec.Struct, frozen=True, kw_only=True):
    """One machine of the bridge's report: whether it answers now, and its GPUs (no CPU) as its own
    owner judges them, each under that machine's own key, paused as that machine's pause says."""

    name: Text
    alive: bool
    local: bool
    last_contact: Epoch | None = None
    left_at: Epoch | None = None
    demo: bool | None = None  # None: never seen
    ram_total_bytes: Bytes | None = None
    devices: Annotated[tuple[DeviceView, ...], Meta(max_length=MAX_DEVICES)] = ()


ConnectionState = Literal["connected", "head unreachable", "disconnected"]


class ClusterReport(msgspec.Struct, frozen=True, kw_only=True):
    """What the bridge reports to its owner (``cluster_sync``): the connection and every machine,
    this one first, then the others by name."""

    state: ConnectionState
    note: Text
    address: Text | None
    ray_version: Text | None
    auth: Literal["none", "token"]
    node_id: Text | None
    agent_pid: Pid | None
    machine: Text
    machines: Annotated[tuple[ReportedMachine, ...], Meta(max_length=MAX_MACHINES)]
    at: Epoch
    received_at: Epoch | None = None  # when the owner got it (its clock)


class BridgeState(msgspec.Struct, frozen=True, kw_only=True):
    running: bool
    pid: int | None
    active: bool  # it has talked to this owner lately
    note: str  # why none runs


class ClusterStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The owner's cluster document (``ClusterPort.report_doc``): its ``[cluster]`` config, the bridge
    beside it and the bridge's last report (None before the first), this machine's pause laid over."""

    configured: bool
    address: str | None
    machine: str
    insecure: bool
    config_error: str | None
    bridge: BridgeState
    report: ClusterReport | None = None
