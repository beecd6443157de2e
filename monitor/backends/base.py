"""The one interface every monitoring backend implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

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


@runtime_checkable
class JobAware(Protocol):
    """A backend that wants to hear of the queue's jobs (the simulated one: its load follows them).

    ``Monitor.job_started``/``job_ended`` forward to every backend that implements this: the queue
    announces each job once, to the monitor.
    """

    def job_started(
        self, pid: int, name: str, device_key: str, util_percent: float = 90.0, vram_bytes: int | None = None
    ) -> None: ...

    def job_ended(self, pid: int) -> None: ...


@runtime_checkable
class PidWatcher(Protocol):
    """A backend that walks our own jobs' fds every tick (the Linux DRM backends): a job that opens the
    render node seconds after it starts is seen at once, not at the next rolling sweep."""

    def watch_pids(self, pids: frozenset[int]) -> None: ...
