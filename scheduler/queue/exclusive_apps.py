"""Exclusive apps (games and the like): ``[exclusive] apps = ["cs2", "steam_app_*", "blender"]``.

When a process whose name matches one of the patterns uses a GPU (the per-process rows the monitor
already reads: NVML, DRM fdinfo, the simulated GPUs), our jobs there are paused (``JobPauser``: frozen,
their memory moved to host memory where cuda-checkpoint can) and none starts there
(``DeviceBook.taken``: the device counts as paused); once the app has left that GPU for ``settle``
seconds, the jobs paused for it resume. Other GPUs keep working. ``notices`` says so both ways (the
log, ``status``; the tray shows them).

``ExclusiveApps`` is a dispatcher timer (``QueueService.add_timer``), looking every second.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Sequence

from gputray.monitor.records import Snapshot
from gputray.scheduler.queue.edits import TaskStateError
from gputray.scheduler.queue.job_pause import JobPauser
from gputray.scheduler.queue.preemption import PreemptingQueue, paused_before
from gputray.scheduler.resident_config import ExclusiveSection

log = logging.getLogger("gputray.scheduler.queue.exclusive_apps")

LOOK_S = 1.0


def apps_on_devices(
    snapshot: Snapshot | None, patterns: Sequence[str], ours: frozenset[int]
) -> dict[str, str]:
    """Device key -> the name of an exclusive app using it now (none of our jobs' processes)."""
    if snapshot is None or not patterns:
        return {}
    found: dict[str, str] = {}
    for p in snapshot.processes:
        if p.pid not in ours and app_matches(p.name, patterns):
            found.setdefault(p.device, p.name)
    return found


def app_matches(process_name: str, patterns: Sequence[str]) -> bool:
    """Whether a process name matches one of ``apps``' patterns, case-insensitive and, on Windows, with
    or without ``.exe`` (``cs2`` matches ``cs2.exe``; ``steam_app_*`` matches ``steam_app_730.exe``)."""
    name = process_name.lower()
    names = (name, name.removesuffix(".exe")) if name.endswith(".exe") else (name,)
    return any(fnmatch.fnmatchcase(n, pat.lower()) for n in names for pat in patterns)


class ExclusiveApps:
    """The dispatcher's timer that gives a GPU to an exclusive app and takes it back (module docstring)."""

    def __init__(self, queue: PreemptingQueue, pauser: JobPauser, config: ExclusiveSection) -> None:
        self.queue = queue
        self.pauser = pauser
        self.config = config
        self._next_s: float | None = None
        self.paused_for: dict[int, str] = {}  # task id -> the device it was paused on for an app
        self._gone_since: dict[str, float] = {}  # device -> when its app was last seen gone
        self.notices: list[str] = []

    @property
    def taken(self) -> dict[str, str]:
        return self.queue.device_book.taken

    def next_due_s(self) -> float | None:
        if not self.config.apps:
            return None
        return self._next_s if self._next_s is not None else 0.0

    def run_due(self, now_s: float) -> None:
        if self._next_s is None:
            self._adopt_paused()
        self._next_s = now_s + LOOK_S
        monitor = self.queue.device_book.monitor
        snapshot = monitor.latest
        ours = frozenset(r.pid for r in self.queue.runs.jobs.values())
        keys = {r.info.key for r in snapshot.readings} if snapshot is not None else set()
        ours |= frozenset(pid for key in keys for pid in monitor.own_pids(key))
        using = apps_on_devices(snapshot, self.config.apps, ours)
        for device, app in using.items():
            self._gone_since.pop(device, None)
            if device not in self.taken:
                self.taken[device] = app
                self._say(f"{app} uses {self._name(device)}: gputray pauses its jobs there and starts none")
            self._pause_on(device, app)
        for device in list(self.taken):
            if device in using:
                continue
            gone = self._gone_since.setdefault(device, now_s)
            if now_s - gone < self.config.settle_s:
                continue
            app = self.taken.pop(device)
            del self._gone_since[device]
            self._resume_on(device)
            self._say(f"{app} has left {self._name(device)}: gputray's jobs there go on")
            self.queue.request_dispatch(urgent=True)

    def _adopt_paused(self) -> None:
        """Jobs an earlier owner paused for an exclusive app (and that outlived it) go on when the app
        has left, as if this owner had paused them: the app is named in the stored reason."""
        for running, rec, why in paused_before(self.queue):
            if why.app is not None:
                self.paused_for[rec.id] = running.device
                self.taken.setdefault(running.device, why.app)
                log.info("task #%d: paused for %s before this owner started", rec.id, why.app)

    def _pause_on(self, device: str, app: str) -> None:
        for running in list(self.queue.runs.jobs.values()):
            if running.device != device or running.paused or running.task_id in self.paused_for:
                continue
            try:
                self.pauser.pause(running.task_id, for_app=app)
            except (TaskStateError, KeyError) as exc:
                log.info("task #%d: not paused for %s: %s", running.task_id, app, exc)
                continue
            self.paused_for[running.task_id] = device

    def _resume_on(self, device: str) -> None:
        for task_id, where in list(self.paused_for.items()):
            if where != device:
                continue
            del self.paused_for[task_id]
            try:
                self.pauser.resume(task_id)
            except (TaskStateError, KeyError) as exc:  # it ended, or someone resumed it by hand
                log.info("task #%d: not resumed: %s", task_id, exc)

    def _name(self, device: str) -> str:
        snapshot = self.queue.device_book.monitor.latest
        reading = snapshot.reading(device) if snapshot is not None else None
        return reading.info.name if reading is not None else device

    def _say(self, words: str) -> None:
        log.info("%s", words)
        self.notices.append(words)
        del self.notices[:-50]
