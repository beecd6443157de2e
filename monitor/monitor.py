"""The Monitor: the one place that polls. Merges backends by device key, keeps history, emits events.

Callers get immutable Snapshots, either by ``sample_once()`` or by subscribing to the 1 Hz thread.
Nothing here raises into callers: a backend that fails is skipped for that tick and noted.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from gputray.monitor import busy_why as why
from gputray.monitor.backends.base import Backend, JobAware, PidWatcher
from gputray.monitor.history import History
from gputray.monitor.host import HostReader
from gputray.monitor.records import (
    DeviceEvent,
    DeviceInfo,
    DeviceReading,
    HostSample,
    ProcessUse,
    Sample,
    Snapshot,
    Verdict,
)
from gputray.monitor.verdict import BusyThresholds, VerdictTracker

log = logging.getLogger(__name__)

_R = TypeVar("_R", DeviceInfo, Sample, ProcessUse)

Subscriber = Callable[[Snapshot], None]


def _merge_dataclass(primary: _R, other: _R) -> _R:
    """Fill the primary record's None fields from another backend's record of the same device."""
    updates = {
        f.name: getattr(other, f.name)
        for f in dataclasses.fields(primary)
        if getattr(primary, f.name) is None and getattr(other, f.name) is not None
    }
    return dataclasses.replace(primary, **updates) if updates else primary


def merge_readings(polls: Sequence[Sequence[DeviceReading]]) -> list[DeviceReading]:
    """One reading per key. Earlier backends win; later ones fill the metrics the earlier lack.

    A GPU seen by NVML and by sysfs (or by sysfs and amdsmi) therefore shows once, with the best of both.
    """
    merged: dict[str, DeviceReading] = {}
    for readings in polls:
        for r in readings:
            have = merged.get(r.info.key)
            if have is None:
                merged[r.info.key] = r
                continue
            info = _merge_dataclass(have.info, r.info)
            if r.info.backend not in have.info.backend.split("+"):
                info = dataclasses.replace(info, backend=f"{have.info.backend}+{r.info.backend}")
            sample = have.sample
            if sample.state == "ok" and r.sample.state == "ok":
                sample = _merge_dataclass(sample, r.sample)
            merged[r.info.key] = DeviceReading(info, sample)
    return list(merged.values())


def merge_processes(processes: Sequence[ProcessUse]) -> list[ProcessUse]:
    """One entry per (pid, device); the first backend's entry wins and the others fill its gaps."""
    merged: dict[tuple[int, str], ProcessUse] = {}
    for p in processes:
        key = (p.pid, p.device)
        have = merged.get(key)
        merged[key] = p if have is None else _merge_dataclass(have, p)
    return list(merged.values())


class Monitor:
    def __init__(
        self,
        backends: Sequence[Backend],
        *,
        host: HostReader | None = None,
        interval_s: float = 1.0,
        history_s: float = 3900.0,
        thresholds: BusyThresholds | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backends = list(backends)
        self.host = host
        self.interval_s = interval_s
        self.clock = clock
        self.history_store = History(int(history_s / max(interval_s, 0.05)) + 1)
        self.verdicts = VerdictTracker(thresholds)
        self._poll_lock = threading.Lock()
        self._subs_lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self._latest: Snapshot | None = None
        self._known: dict[str, DeviceInfo] = {}
        self._last_state: dict[str, str] = {}
        self._own: dict[str, set[int]] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.failures = 0  # polls that raised; the poller went on after each
        self.last_failure: str | None = None

    @property
    def simulated(self) -> bool:
        return any(getattr(b, "name", "") == "simulated" for b in self.backends)

    @property
    def latest(self) -> Snapshot | None:
        return self._latest

    def backend(self, name: str) -> Backend | None:
        return next((b for b in self.backends if b.name == name), None)

    # Our own jobs: the scheduler says which processes are ours so that verdicts count only others' use,
    # and JobAware backends (the simulated one) hear of them too. One announcement per job.
    def job_started(
        self,
        device_key: str,
        pid: int,
        *,
        name: str = "",
        util_percent: float = 90.0,
        vram_bytes: int | None = None,
    ) -> None:
        with self._poll_lock:
            self._own.setdefault(device_key, set()).add(pid)
        for backend in self.backends:
            if isinstance(backend, JobAware):
                try:
                    backend.job_started(
                        pid, name, device_key, util_percent=util_percent, vram_bytes=vram_bytes
                    )
                except Exception:
                    log.exception("backend %s: job_started failed", backend.name)

    def own_pids(self, device_key: str) -> frozenset[int]:
        """The processes of our jobs on that device (``job_started``), for whoever must tell them apart."""
        with self._poll_lock:
            return frozenset(self._own.get(device_key, ()))

    def job_ended(self, device_key: str, pid: int) -> None:
        with self._poll_lock:
            self._own.get(device_key, set()).discard(pid)
        for backend in self.backends:
            if isinstance(backend, JobAware):
                try:
                    backend.job_ended(pid)
                except Exception:
                    log.exception("backend %s: job_ended failed", backend.name)

    def set_thresholds(self, thresholds: BusyThresholds) -> None:
        """New limits (the settings dialog) apply from the next sample on; the hysteresis state stays."""
        with self._poll_lock:
            self.verdicts.thresholds = thresholds

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        with self._subs_lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._subs_lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def history(
        self, key: str, metric: str, since_s: float | None = None
    ) -> list[tuple[float, float | None]]:
        with self._poll_lock:
            return self.history_store.series(key, metric, since_s)

    def sample_once(self) -> Snapshot:
        with self._poll_lock:
            snapshot = self._sample_locked()
            self._latest = snapshot
        with self._subs_lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(snapshot)
            except Exception:  # a subscriber's bug must not stop the monitor
                log.exception("monitor subscriber failed")
        return snapshot

    def _sample_locked(self) -> Snapshot:
        now = self.clock()
        own = frozenset(pid for pids in self._own.values() for pid in pids)
        for backend in self.backends:
            if isinstance(backend, PidWatcher):  # our jobs' fds are walked every tick
                try:
                    backend.watch_pids(own)
                except Exception:
                    log.exception("backend %s: watch_pids failed", backend.name)
        polls: list[tuple[DeviceReading, ...]] = []
        processes: list[ProcessUse] = []
        notes: list[why.BackendNote] = []
        for backend in self.backends:
            try:
                poll = backend.poll(now)
            except Exception as exc:  # the protocol says never raise; be safe anyway
                log.exception("backend %s failed", backend.name)
                notes.append(why.BackendNote(backend=backend.name, why=why.BackendCrashed(error=str(exc))))
                continue
            polls.append(poll.readings)
            processes.extend(poll.processes)
            reason = getattr(backend, "unavailable_reason", None)
            if reason is not None:
                notes.append(why.BackendNote(backend=backend.name, why=reason))
        readings = merge_readings(polls)
        processes = merge_processes(processes)
        host = self._read_host()
        events = self._events(readings, now)
        verdicts = self._verdicts(readings, processes, now)
        for r in readings:
            self.history_store.add(r.sample)
        return Snapshot(
            timestamp_s=now,
            readings=tuple(readings),
            host=host,
            processes=tuple(processes),
            verdicts=tuple(verdicts),
            events=tuple(events),
            simulated=self.simulated,
            notes=tuple(notes),
        )

    def _read_host(self) -> HostSample:
        if self.host is None:
            return HostSample(None, None, None)
        try:
            return self.host.read()
        except Exception:
            log.exception("host reader failed")
            return HostSample(None, None, None)

    def _verdicts(
        self, readings: list[DeviceReading], processes: list[ProcessUse], now: float
    ) -> list[Verdict]:
        out = []
        for r in readings:
            own = self._own.get(r.info.key, set())
            foreign = [p for p in processes if p.device == r.info.key and p.pid not in own]
            out.append(self.verdicts.update(r, foreign, own_active=bool(own), now_s=now))
        return out

    def _events(self, readings: list[DeviceReading], now: float) -> list[DeviceEvent]:
        events: list[DeviceEvent] = []
        seen = {r.info.key: r for r in readings}
        first_poll = self._latest is None
        for key, r in seen.items():
            name = r.info.name
            state = r.sample.state
            before = self._last_state.get(key)
            if key not in self._known and not first_poll:
                events.append(DeviceEvent("appeared", key, name, why.Appeared(device=name), now))
            if before is not None and before != state:
                if state == "lost":
                    lost = why.WasLost(device=name, why=r.sample.reason)
                    events.append(DeviceEvent("lost", key, name, lost, now))
                elif before == "lost":
                    events.append(DeviceEvent("back", key, name, why.Back(device=name), now))
                elif state == "asleep":
                    events.append(DeviceEvent("asleep", key, name, why.WentToSleep(device=name), now))
                elif before == "asleep":
                    events.append(DeviceEvent("woke", key, name, why.WokeUp(device=name), now))
            was_hot = self.verdicts.is_hot(key)
            limit = self.verdicts.temp_limit_c(r)
            temp = r.sample.temp_c
            if temp is not None and not was_hot and temp >= limit:
                hot = why.Hot(device=name, temp_c=temp, limit_c=limit)
                events.append(DeviceEvent("hot", key, name, hot, now))
            elif temp is not None and was_hot and temp <= limit - self.verdicts.thresholds.temp_hysteresis_c:
                events.append(DeviceEvent("cooled", key, name, why.Cooled(device=name, temp_c=temp), now))
            self._known[key] = r.info
            self._last_state[key] = state
        for key in [k for k in self._known if k not in seen]:
            info = self._known.pop(key)
            self._last_state.pop(key, None)
            self.verdicts.forget(key)
            events.append(DeviceEvent("vanished", key, info.name, why.Vanished(device=info.name), now))
        return events

    # The background poller.
    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="gputray-monitor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """The poller. A tick that fails (a bug, a backend that breaks its promise never to raise) is
        logged with its traceback and counted (``failures``, ``last_failure``: the owner's status says
        so), and polling goes on after one interval: the monitor thread never silently dies, since a
        lost GPU would then never stop its job."""
        while not self._stop.is_set():
            try:
                self._poll_forever()
            except Exception as exc:
                self.failures += 1
                self.last_failure = f"{type(exc).__name__}: {exc}"
                log.exception("monitor: a poll failed (%d so far); polling again", self.failures)
                self._stop.wait(max(self.interval_s, 0.05))

    def _poll_forever(self) -> None:
        next_due = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_due += self.interval_s
            delay = next_due - time.monotonic()
            if delay < 0:  # we fell behind (suspend, slow backend): do not burst to catch up
                next_due = time.monotonic()
                delay = 0.0
            self._stop.wait(delay)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        for backend in self.backends:
            try:
                backend.close()
            except Exception:
                log.exception("closing backend %s failed", backend.name)

    def known_devices(self) -> list[DeviceInfo]:
        with self._poll_lock:
            return list(self._known.values())


__all__ = ["BusyThresholds", "Monitor", "Sample", "Snapshot", "merge_readings"]
