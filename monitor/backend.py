"""The one interface every monitoring backend implements."""

from __future__ import annotations

from typing import Protocol

from gputray.monitor.records import BackendPoll


class Backend(Protocol):
    """A source of device readings.

    ``poll`` discovers and samples in one go, so a device that appears or vanishes simply shows up in,
    or drops out of, the next poll. It must never raise: a failure becomes a reading whose state is
    ``unavailable`` or ``lost`` with a reason, or an empty poll. ``close`` releases library handles.
    """

    name: str

    def poll(self, now_s: float) -> BackendPoll: ...

    def close(self) -> None: ...
