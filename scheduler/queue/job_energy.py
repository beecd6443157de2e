"""The GPU energy each running job uses, summed from the monitor's samples (``EnergyMeter``).

Per sample of a device and per job running on it, the meter adds the energy of the interval since the
device's previous sample: the growth of the device's own energy counter (``Sample.energy_counter_j``:
NVML's total energy, hwmon ``energyN_input``, the simulated GPUs' integrated power) where both samples
have one and it grew, else the mean of the two power readings times the interval (a counter that
wrapped or restarted with its driver falls back to power for that interval). No interval counts more
than the device can draw (``records.plausible_power_max_w`` of its power limit, × the interval): a
counter that jumped further, or could not be read, is a glitch, and that interval is counted from the
power readings that are credible (else the device's last measured rate); the job's record says how
many seconds were counted so (``JobEnergy.estimated_s``, the log's footer). A job that starts or ends
between two samples gets the part of the interval it ran for; its last stretch after the last sample
is counted at the device's last rate. A paused job (frozen by pause-job, a preempting task, an
exclusive app) gets nothing while it is frozen: what the device draws then is another program's.
Times are the monitor's clock (monotonic, as the samples' own timestamps): setting the wall clock back
changes nothing.

What is measured is the device's energy, not one process's: a job is ``shared`` when another of our
jobs ran on the device at the same time, or a process that is not ours worked on it (where the backend
sees processes; busy by its own load figure, or a compute process where there is none: ``_working``).
A device that vanished mid-job leaves the energy of the part that was measured; an interval longer
than ``MAX_GAP_S`` without a counter is not guessed at, so such a job's energy is a lower bound.
None: nothing was measured (the CPU, a device with neither counter nor power).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass

from gputray.monitor.records import DeviceReading, ProcessUse, Snapshot, plausible_power_max_w
from gputray.monitor.units import format_energy_j

#: Longer than this between two samples without a counter: the power in between is not known.
MAX_GAP_S = 30.0
#: A foreign process busier than this (percent of the device) makes a job's energy shared.
IDLE_PROCESS_PERCENT = 1.0


@dataclass(frozen=True)
class JobEnergy:
    """What a run used: joules (None: not measured), whether the device ran something else too, and
    over how many seconds it was measured (the monitor's clock)."""

    energy_j: float | None
    shared: bool
    duration_s: float = 0.0
    estimated_s: float = 0.0  # seconds counted from power because the energy counter glitched

    @property
    def power_avg_w(self) -> float | None:
        return self.energy_j / self.duration_s if self.energy_j is not None and self.duration_s > 0 else None


def energy_line(used: JobEnergy, device_name: str) -> str | None:
    """The job log's footer: ``GPU energy: 1.2 kJ on GeForce RTX 5060 Ti (85 W on average)``, and when
    the device ran something else too, that the figure is the device's; None when nothing was measured."""
    if used.energy_j is None:
        return None
    text = f"GPU energy: {format_energy_j(used.energy_j)} on {device_name}"
    if used.power_avg_w is not None:
        text += f" ({used.power_avg_w:.0f} W on average)"
    if used.estimated_s > 0:
        text += f"; {used.estimated_s:.0f} s of it counted from power (the energy counter glitched)"
    if used.shared:
        text += "; shared: the device also ran other work, so this is the whole device's energy"
    return text


@dataclass(frozen=True)
class LastSample:
    """A device's previous sample, and its rate over the interval before it (W) for a job's tail."""

    timestamp_s: float
    counter_j: float | None
    power_w: float | None
    rate_w: float | None


@dataclass
class _Meter:
    device: str
    pid: int
    started_s: float
    energy_j: float | None = None
    shared: bool = False
    estimated_s: float = 0.0
    paused_at_s: float | None = None  # frozen since (pause-job, preemption, an exclusive app)
    resumed_s: float = float("-inf")  # thawed last at
    paused_s: float = 0.0  # paused seconds before ``paused_at_s``

    def add(self, joules: float) -> None:
        self.energy_j = (self.energy_j or 0.0) + joules

    def ran_s(self, now_s: float) -> float:
        """Seconds it has run, its paused ones left out."""
        paused = self.paused_s + (now_s - self.paused_at_s if self.paused_at_s is not None else 0.0)
        return max(0.0, now_s - self.started_s - paused)

    def counted(self, from_s: float, to_s: float) -> float:
        """Seconds of ``from_s``–``to_s`` it ran (not before its start or last resume, nor paused)."""
        end = min(to_s, self.paused_at_s) if self.paused_at_s is not None else to_s
        return end - max(from_s, self.started_s, self.resumed_s)


@dataclass(frozen=True)
class Interval:
    """The device's energy between two samples; ``estimated``: counted from power because its energy
    counter glitched (jumped further than the device can draw, or could not be read)."""

    joules: float
    estimated: bool = False


def interval_energy(
    before: LastSample,
    counter_j: float | None,
    power_w: float | None,
    now_s: float,
    power_limit_w: float | None = None,
) -> Interval | None:
    """The device's energy between its previous sample and this one (see the module docstring)."""
    dt = now_s - before.timestamp_s
    if dt <= 0:
        return None
    most_w = plausible_power_max_w(power_limit_w)
    if counter_j is not None and before.counter_j is not None:
        grown = counter_j - before.counter_j
        if 0 <= grown <= most_w * dt:
            return Interval(grown)
    # a glitch: the device has a counter, and this interval could not use it (a wrap going back too)
    glitch = counter_j is not None or before.counter_j is not None
    if dt > MAX_GAP_S:
        return None
    powers = [p for p in (before.power_w, power_w) if p is not None and 0 <= p <= most_w]
    if powers:
        return Interval(sum(powers) / len(powers) * dt, glitch)
    if glitch and before.rate_w is not None:  # no credible power beside it: the device's last rate
        return Interval(min(before.rate_w, most_w) * dt, True)
    return None


def _session_of(pid: int) -> int | None:
    """The session a process leads or belongs to (our jobs start their own), None where unknown."""
    getsid = getattr(os, "getsid", None)
    if getsid is None:
        return None
    try:
        return int(getsid(pid))
    except OSError:
        return None


def _working(p: ProcessUse) -> bool:
    """A process that draws power beside a job: measurably busy, or, where the backend does not say
    (NVML lists no per-process load), a compute one. An idle desktop (the compositor, a browser that
    holds a context on the iGPU) does not make every job there shared."""
    if p.util_percent is not None:
        return p.util_percent >= IDLE_PROCESS_PERCENT
    return p.kind != "graphics"


class EnergyMeter:
    """Energy per running job (module docstring). ``start``/``finish`` from the queue's threads,
    ``on_snapshot`` from the monitor's; ``clock`` must be the monitor's (the samples' timestamps)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._jobs: dict[int, _Meter] = {}
        self._last: dict[str, LastSample] = {}

    def start(self, task_id: int, device: str, pid: int) -> None:
        """A job started (or was adopted: measured from now) on ``device``, its process ``pid``."""
        with self._lock:
            self._jobs[task_id] = _Meter(device, pid, self.clock())
            self._mark_shared(device)

    def pause(self, task_id: int, *, paused: bool) -> None:
        """A job was frozen (``paused``) or thawed: the device's energy while it is frozen is not its
        own (the game that took the GPU, the task that preempted it), nor are those seconds its run."""
        now = self.clock()
        with self._lock:
            meter = self._jobs.get(task_id)
            if meter is None:
                return
            if paused and meter.paused_at_s is None:
                meter.paused_at_s = now
            elif not paused and meter.paused_at_s is not None:
                meter.paused_s += now - meter.paused_at_s
                meter.paused_at_s, meter.resumed_s = None, now

    def finish(self, task_id: int) -> JobEnergy:
        """The job ended: what it used, its stretch since the device's last sample included."""
        now = self.clock()
        with self._lock:
            meter = self._jobs.pop(task_id, None)
            if meter is None:
                return JobEnergy(None, False)
            last = self._last.get(meter.device)
            if last is not None and last.rate_w is not None:
                tail = meter.counted(last.timestamp_s, now)
                if 0 < tail <= MAX_GAP_S:
                    meter.add(last.rate_w * tail)
            return JobEnergy(meter.energy_j, meter.shared, meter.ran_s(now), meter.estimated_s)

    def running_energy_j(self, task_id: int) -> float | None:
        """What a running job used so far (up to the last sample)."""
        so_far = self.so_far(task_id)
        return so_far.energy_j if so_far is not None else None

    def so_far(self, task_id: int) -> JobEnergy | None:
        """A running job's energy up to the last sample; None for a job not measured here."""
        with self._lock:
            meter = self._jobs.get(task_id)
            if meter is None:
                return None
            return JobEnergy(meter.energy_j, meter.shared, meter.ran_s(self.clock()), meter.estimated_s)

    def on_snapshot(self, snapshot: Snapshot) -> None:
        """Monitor thread: add each device's energy since its previous sample to the jobs on it."""
        with self._lock:
            for reading in snapshot.readings:
                self._on_reading(reading, snapshot)

    def _on_reading(self, reading: DeviceReading, snapshot: Snapshot) -> None:
        key, sample = reading.info.key, reading.sample
        now = sample.timestamp_s
        before = self._last.get(key)
        interval = (
            interval_energy(before, sample.energy_counter_j, sample.power_w, now, sample.power_limit_w)
            if before
            else None
        )
        joules = interval.joules if interval is not None else None
        rate = joules / (now - before.timestamp_s) if joules is not None and before is not None else None
        self._last[key] = LastSample(now, sample.energy_counter_j, sample.power_w, rate)
        before_s = before.timestamp_s if before is not None else now - 1e-9  # the first: is it running
        # a frozen job draws nothing: neither what the device drew meanwhile nor who drew it is its
        here = [m for m in self._jobs.values() if m.device == key and m.counted(before_s, now) > 0]
        if not here:
            return
        if len(here) > 1 or self._foreign_use(key, snapshot, {m.pid for m in here}):
            for m in here:
                m.shared = True
        if interval is None or before is None:
            return
        span = now - before.timestamp_s
        for m in here:
            ran = m.counted(before.timestamp_s, now)
            if ran > 0:
                m.add(interval.joules * min(1.0, ran / span))
                if interval.estimated:
                    m.estimated_s += min(ran, span)

    def _mark_shared(self, device: str) -> None:
        here = [m for m in self._jobs.values() if m.device == device and m.paused_at_s is None]
        if len(here) > 1:
            for m in here:
                m.shared = True

    @staticmethod
    def _foreign_use(key: str, snapshot: Snapshot, ours: Collection[int]) -> bool:
        """Whether a process that is none of our jobs (nor in their sessions) works on the device."""
        others = (p.pid for p in snapshot.processes if p.device == key and p.pid not in ours and _working(p))
        return any(_session_of(pid) not in ours for pid in others)
