"""The reason codes the cluster says things with (handed to, taken back, left the cluster …) and the
renderer for its own log lines and CLI output. Part of the port."""

from __future__ import annotations

from gputray.scheduler.reasons.codes import (
    HandedTo,
    LeftCluster,
    Named,
    OnMachine,
    Reason,
    RefusedBy,
    Said,
    Sending,
    StartedBeforeEdit,
    TakenBack,
    Unanswered,
)
from gputray.scheduler.reasons.render import render

__all__ = [
    "HandedTo",
    "LeftCluster",
    "Named",
    "OnMachine",
    "Reason",
    "RefusedBy",
    "Said",
    "Sending",
    "StartedBeforeEdit",
    "TakenBack",
    "Unanswered",
    "render",
]
