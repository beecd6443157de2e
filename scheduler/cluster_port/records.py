"""The typed records the cluster reads and writes across the port: tasks (spec, record, patch, event)
and the cluster's own report records. Part of the port: the cluster imports them from here, never
from ``tasks.records`` or ``cluster_records`` directly (``tests/test_code_quality.py``, the doors)."""

from __future__ import annotations

from gputray.scheduler.cluster_records import (
    BridgeState,
    ClusterReport,
    ClusterStatus,
    ConnectionState,
    DeviceView,
    ReportedMachine,
)
from gputray.scheduler.tasks.records import (
    FINISHED_STATES,
    MACHINE_RE,
    PENDING_STATES,
    EventKind,
    QueueEvent,
    TaskPatch,
    TaskRecord,
    TaskSpec,
)

__all__ = [
    "FINISHED_STATES",
    "MACHINE_RE",
    "PENDING_STATES",
    "BridgeState",
    "ClusterReport",
    "ClusterStatus",
    "ConnectionState",
    "DeviceView",
    "EventKind",
    "QueueEvent",
    "ReportedMachine",
    "TaskPatch",
    "TaskRecord",
    "TaskSpec",
]
