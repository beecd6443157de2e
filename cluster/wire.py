"""What crosses the local socket and the Ray calls: task records and machine views.

A whole TaskRecord (the spec, the queue fields the placement reads) crosses as itself (msgspec encodes
the dataclass; ``sendable`` reads its stored environment first), unlike ``replies.TaskView``, which is
what a client may know of a task.
``MachineView`` is one machine's devices as its own owner judges them: readings (the monitor's own
``Sample``, in ``DeviceView.reading``), busy verdicts (external use counted), our jobs on each, pauses,
and what its GPU doctor saw fail. It crosses a Ray call as JSON stamped ``wire`` (``WIRE_VERSION``):
a view of another version is refused in words (``OtherVersion``), not misread.
"""

from __future__ import annotations

import msgspec

from gputray.scheduler.client.replies import TaskView
from gputray.scheduler.cluster_port.records import DeviceView, TaskRecord

__all__ = ["WIRE_VERSION", "DeviceView", "InboundTask", "MachineView", "OtherVersion", "TaskChunk"]

# 2: a device's readings are the monitor's Sample (``DeviceView.reading``); 1 listed its fields.
# 3: a reading's ``reason`` is a ``busy_why`` code (2 sent the backend's English text).
WIRE_VERSION = 3


class OtherVersion(ValueError):
    """A machine view in another gputray version's shape."""


def sendable(rec: TaskRecord) -> TaskRecord:
    """``rec`` as it crosses the socket or a Ray call: its spec's environments read (``TaskSpec.plain``)."""
    return rec.replace(spec=rec.spec.plain())


class InboundTask(msgspec.Struct, frozen=True):
    """A task another machine handed to this one: its id here, where it came from, its state."""

    id: int
    origin: str
    state: str


class MachineView(msgspec.Struct, frozen=True):
    machine: str
    taken_at_s: float
    devices: tuple[DeviceView, ...] = ()
    ram_used_bytes: int | None = None
    ram_total_bytes: int | None = None
    queue_paused: bool = False
    demo: bool = False
    inbound: tuple[InboundTask, ...] = ()
    gputray_pid: int | None = None

    def to_wire(self) -> bytes:
        """This view as it crosses a Ray call: JSON, stamped with ``WIRE_VERSION``."""
        return msgspec.json.encode(_OnWire(wire=WIRE_VERSION, view=self))

    @classmethod
    def from_wire(cls, data: object) -> MachineView:
        """The view another machine's agent sent; ``OtherVersion`` when it speaks another wire (an
        agent before wire 2 sends a dict)."""
        if not isinstance(data, bytes):
            raise OtherVersion(f"its machine view is cluster wire 1, this gputray's is {WIRE_VERSION}")
        stamp = msgspec.json.decode(data, type=_Stamp)
        if stamp.wire != WIRE_VERSION:
            raise OtherVersion(
                f"its machine view is cluster wire {stamp.wire}, this gputray's is {WIRE_VERSION}"
            )
        return msgspec.json.decode(data, type=_OnWire).view


class _Stamp(msgspec.Struct):
    wire: int


class _OnWire(msgspec.Struct, frozen=True):
    wire: int
    view: MachineView


class TaskChunk(msgspec.Struct, frozen=True):
    """An agent's answer about one task it runs: the task as its queue shows it and its log's raw bytes
    from the offset asked (at most ``agent.LOG_CHUNK_BYTES``) of ``log_size`` in all."""

    task: TaskView
    log: bytes
    log_size: int


def qualified(machine: str, key: str) -> str:
    """``desk/pci:0000:01:00.0``: a device key unique across machines."""
    return f"{machine}/{key}"


def split_qualified(key: str) -> tuple[str, str]:
    machine, _, local = key.partition("/")
    return machine, local
