"""What ``/metrics`` says: the GPUs as the monitor saw them last, and the queue.

Names follow the field's conventions (base units in the name, ``_total`` for counters, an ``_info``
series for the labels that name a device; dcgm-exporter, nvidia_gpu_exporter and node_exporter do the
same). Every per-device series carries ``device``, the device key (``pci:0000:01:00.0``; join on it for
the name). A reading the device does not give is left out, never written as 0.

- GPUs (from the latest ``Snapshot``, read at scrape time, no polling of its own):
  ``gputray_gpu_info{device,name,vendor,pci,uuid}``, ``gputray_gpu_utilization_ratio`` (0-1),
  ``gputray_gpu_memory_used_bytes{kind="vram"|"shared"}`` and ``..._total_bytes``,
  ``gputray_gpu_temperature_celsius``, ``gputray_gpu_power_watts``, ``gputray_gpu_energy_joules_total``
  (the driver's own counter: it may restart, which ``rate()`` handles), ``gputray_gpu_busy`` (the
  queue's verdict: 1 while others' use keeps its jobs off the GPU).
- The queue: ``gputray_queue_tasks{state}`` (every state, 0 included), ``gputray_queue_waiting_tasks
  {device}`` (pending tasks by the device the dispatcher has them wait for; ``device="none"``: a time,
  a dependency, the paused queue, or any of several devices).
- Jobs, from the queue's events since this owner started: ``gputray_job_duration_seconds`` (a
  histogram), ``gputray_job_energy_joules_total`` and ``gputray_jobs_ended_total{state}``, each by
  ``device`` and ``family`` (``tasks/family.py``: the script or program, what the estimates learn by).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from prometheus_client import Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from gputray.monitor.records import Snapshot
from gputray.scheduler.about import gputray_version, python_version
from gputray.scheduler.tasks.family import family_of
from gputray.scheduler.tasks.records import PENDING_STATES, STATES, QueueEvent, TaskRecord

NO_DEVICE_LABEL = "none"
DURATION_BUCKETS_S = (1, 10, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400)  # 1 s to a day
_ENDED = frozenset({"finished", "failed", "cancelled", "interrupted"})
_ENDED_STATE = {"finished": "succeeded"}  # the event's kind → the task state it ended in


class QueueFacts(Protocol):
    """What a scrape reads of the queue (the owner's ``QueueService`` and ``TaskStore``)."""

    def counts(self) -> Mapping[str, int]: ...

    def waiting_by_device(self) -> Mapping[str, int]: ...


class GpuCollector(Collector):
    """The per-GPU series, built at each scrape from the monitor's latest snapshot."""

    def __init__(self, latest: Callable[[], Snapshot | None]) -> None:
        self._latest = latest

    def collect(self) -> Iterable[Metric]:
        snapshot = self._latest()
        info = InfoMetricFamily(
            "gputray_gpu", "A GPU gputray watches", labels=("device", "name", "vendor", "pci", "uuid")
        )
        util = GaugeMetricFamily("gputray_gpu_utilization_ratio", "GPU load, 0 to 1", labels=("device",))
        used = GaugeMetricFamily(
            "gputray_gpu_memory_used_bytes", "GPU memory in use", labels=("device", "kind")
        )
        total = GaugeMetricFamily(
            "gputray_gpu_memory_total_bytes", "GPU memory size", labels=("device", "kind")
        )
        temp = GaugeMetricFamily("gputray_gpu_temperature_celsius", "GPU temperature", labels=("device",))
        power = GaugeMetricFamily("gputray_gpu_power_watts", "GPU power draw", labels=("device",))
        energy = CounterMetricFamily(
            "gputray_gpu_energy_joules",
            "GPU energy counter of the driver (it may restart: use rate())",
            labels=("device",),
        )
        busy = GaugeMetricFamily(
            "gputray_gpu_busy", "1 while others' use keeps the queue's jobs off this GPU", labels=("device",)
        )
        families = (info, util, used, total, temp, power, energy, busy)
        if snapshot is None:
            return families
        verdicts = {v.key: v for v in snapshot.verdicts}
        for reading in snapshot.readings:
            d, s = reading.info, reading.sample
            if d.kind == "cpu":
                continue
            key = d.key
            info.add_metric([key, d.name, d.vendor, d.pci_bdf or "", d.uuid or ""], {})
            if s.util_percent is not None:
                util.add_metric([key], s.util_percent / 100.0)
            for kind, now, size in (
                ("vram", s.vram_used_bytes, s.vram_total_bytes),
                ("shared", s.shared_used_bytes, s.shared_total_bytes),
            ):
                if now is not None:
                    used.add_metric([key, kind], now)
                if size is not None:
                    total.add_metric([key, kind], size)
            if s.temp_c is not None:
                temp.add_metric([key], s.temp_c)
            if s.power_w is not None:
                power.add_metric([key], s.power_w)
            if s.energy_counter_j is not None:
                energy.add_metric([key], s.energy_counter_j)
            verdict = verdicts.get(key)
            if verdict is not None:
                busy.add_metric([key], 1.0 if verdict.busy else 0.0)
        return families


class QueueCollector(Collector):
    """Tasks by state and pending tasks by the device they wait for, at each scrape."""

    def __init__(self, facts: QueueFacts) -> None:
        self._facts = facts

    def collect(self) -> Iterable[Metric]:
        counts = self._facts.counts()
        tasks = GaugeMetricFamily("gputray_queue_tasks", "Tasks in the queue by state", labels=("state",))
        for state in STATES:
            tasks.add_metric([state], counts.get(state, 0))
        waiting = GaugeMetricFamily(
            "gputray_queue_waiting_tasks",
            f"Pending tasks ({', '.join(sorted(PENDING_STATES))}) by the device they wait for",
            labels=("device",),
        )
        for device, n in sorted(self._facts.waiting_by_device().items()):
            waiting.add_metric([device or NO_DEVICE_LABEL], n)
        return (tasks, waiting)


class JobMetrics:
    """Ended jobs, counted from the queue's events (``observe``), in a registry of their own.

    They change only when a job ends, yet they are most of the text (a histogram is 12 lines per device
    and family): ``text()`` renders them again only after an ``observe``, not at every scrape."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        labels = ("device", "family")
        self.duration = Histogram(
            "gputray_job_duration_seconds",
            "How long jobs ran, from start to end",
            labels,
            buckets=DURATION_BUCKETS_S,
            registry=self.registry,
        )
        self.energy = Counter(
            "gputray_job_energy_joules", "GPU energy the jobs used", labels, registry=self.registry
        )
        self.ended = Counter(
            "gputray_jobs_ended",
            "Jobs that ended, by the state they ended in",
            (*labels, "state"),
            registry=self.registry,
        )
        self._lock = threading.Lock()
        self._changes = 0
        self._rendered: tuple[int, bytes] = (-1, b"")

    def observe(self, event: QueueEvent) -> None:
        task: TaskRecord = event.task
        if event.kind not in _ENDED or task.started_at is None or task.device is None:
            return  # a pending task cancelled or failed before it ran: no job
        device, family = task.device, family_of(task.spec)
        with self._lock:
            self.ended.labels(device, family, _ENDED_STATE.get(event.kind, event.kind)).inc()
            if task.ended_at is not None and task.ended_at >= task.started_at:
                self.duration.labels(device, family).observe(task.ended_at - task.started_at)
            if task.energy_j is not None and task.energy_j >= 0:
                self.energy.labels(device, family).inc(task.energy_j)
            self._changes += 1

    def text(self) -> bytes:
        with self._lock:
            if self._rendered[0] != self._changes:
                self._rendered = (self._changes, generate_latest(self.registry))
            return self._rendered[1]


class Exposition:
    """The whole ``/metrics`` text (Prometheus' text format 0.0.4): the live part rendered at each scrape,
    the jobs' part as last rendered."""

    def __init__(self, live: CollectorRegistry, jobs: JobMetrics) -> None:
        self.live, self.jobs = live, jobs

    def text(self) -> bytes:
        return generate_latest(self.live) + self.jobs.text()


def build_exposition(latest: Callable[[], Snapshot | None], facts: QueueFacts) -> Exposition:
    """Registries of gputray's own (not the process-wide default one, which a library may fill)."""
    # no ``_created`` series beside each counter: half the text, nothing lost
    disable_created_metrics()  # type: ignore[no-untyped-call]
    live = CollectorRegistry(auto_describe=False)
    build = InfoMetricFamily(
        "gputray_build", "The gputray that serves these metrics", labels=("version", "python")
    )
    build.add_metric([gputray_version(), python_version()], {})

    class _Build(Collector):
        def collect(self) -> Iterable[Metric]:
            return (build,)

    live.register(_Build())
    live.register(GpuCollector(latest))
    live.register(QueueCollector(facts))
    return Exposition(live, JobMetrics())
