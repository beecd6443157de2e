"""A task's states, by name. Their own module so that a listing filters by state without loading the
task model (``tasks.records`` re-exports them)."""

from __future__ import annotations

from typing import Literal

TaskState = Literal["queued", "waiting", "running", "succeeded", "failed", "cancelled", "interrupted"]
STATES: tuple[str, ...] = ("queued", "waiting", "running", "succeeded", "failed", "cancelled", "interrupted")
#: Tasks in these states are still in the queue (waiting to be placed).
PENDING_STATES: frozenset[str] = frozenset({"queued", "waiting"})
#: Final states. ``interrupted`` is transient: the retry policy turns it into ``queued`` or ``failed``.
FINISHED_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
