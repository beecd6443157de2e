"""The lifecycle steps the cluster hands the queue through ``QueuePort.apply``: the cluster's own
(``tasks/cluster_steps.py``: hand over, take back, a remote run's marks) and the few plain ones it
writes on a task it holds (a note, a wait, a failure). Part of the port."""

from __future__ import annotations

from gputray.scheduler.tasks.cluster_steps import (
    ClusterStep,
    Handed,
    HandOver,
    HandOverFailed,
    LostThere,
    PlaceHere,
    RemoteMark,
    RemoteRun,
    RemoteState,
    TakeBack,
)
from gputray.scheduler.tasks.lifecycle import Fail, IllegalTransition, Note, Wait

__all__ = [
    "ClusterStep",
    "Fail",
    "HandOver",
    "HandOverFailed",
    "Handed",
    "IllegalTransition",
    "LostThere",
    "Note",
    "PlaceHere",
    "RemoteMark",
    "RemoteRun",
    "RemoteState",
    "TakeBack",
    "Wait",
]
