"""The owner's typed replies a client reads (``replies.py``), by name; conventionally imported as ``rp``."""

from __future__ import annotations

from gputray.scheduler.replies import (
    ClusterSynced,
    ClusterTask,
    DeviceSlots,
    Offer,
    Paused,
    QueueReply,
    Reply,
    RoomMade,
    RoomQuestion,
    RoomReply,
    StatusReply,
    TasksDone,
    TaskView,
)

__all__ = [
    "ClusterSynced",
    "ClusterTask",
    "DeviceSlots",
    "Offer",
    "Paused",
    "QueueReply",
    "Reply",
    "RoomMade",
    "RoomQuestion",
    "RoomReply",
    "StatusReply",
    "TaskView",
    "TasksDone",
]
