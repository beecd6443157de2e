"""A task's states, by name. Their own module so that a listing filters by state without loading the
task model (``tasks.records`` re-exports them)."""

from __future__ import annotations

from typing import Literal

TaskState = Literal[
    "queued", "waiting", "starting", "running", "succeeded", "failed", "cancelled", "interrupted"
]
STATES: tuple[str, ...] = (
    "queued",
    "waiting",
    "starting",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "interrupted",
)
#: The owner chose it and is launching its job (written before the process exists, so that an owner
#: that stops in between leaves a row its successor can judge: ``lifecycle``'s ``Starting``).
STARTING_STATE = "starting"
#: Its job runs or is being launched: removing it stops the job first; cancel and retry judge it so.
ACTIVE_STATES: frozenset[str] = frozenset({"starting", "running"})
#: Tasks in these states are still in the queue (waiting to be placed).
PENDING_STATES: frozenset[str] = frozenset({"queued", "waiting"})
#: Final states. ``interrupted`` is transient: the retry policy turns it into ``queued`` or ``failed``.
FINISHED_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
