"""The peak memory each running job reached: its processes' GPU memory (VRAM + shared GTT, as the
monitor reads them per process: NVML on NVIDIA, DRM fdinfo on amdgpu and others), the largest sum over
the snapshots of its run. Its processes are its first one and every process in its session (a job
starts its own; a child that ``setsid``s away is not counted).

The peak is kept with the family's run (``runtime_history.JobRun.peak_bytes``), and a task of that
family that gives no ``vram`` counts the larger of what its model files predict and its family's recent
peaks (``Estimator.with_learned_need``).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from gputray.monitor.records import Snapshot


@dataclass
class _Watch:
    pid: int
    peak_bytes: int | None = None


def _session_of(pid: int) -> int | None:
    getsid = getattr(os, "getsid", None)
    if getsid is None:
        return None
    try:
        return int(getsid(pid))
    except OSError:
        return None


class PeakMeter:
    """``start``/``finish`` from the queue's threads, ``on_snapshot`` from the monitor's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[int, _Watch] = {}

    def start(self, task_id: int, pid: int) -> None:
        with self._lock:
            self._jobs[task_id] = _Watch(pid)

    def finish(self, task_id: int) -> int | None:
        """The job ended: the most GPU memory its processes held at once (None: never seen holding any)."""
        with self._lock:
            watch = self._jobs.pop(task_id, None)
        return None if watch is None else watch.peak_bytes

    def on_snapshot(self, snapshot: Snapshot) -> None:
        with self._lock:
            jobs = list(self._jobs.values())
        if not jobs:
            return
        by_pid: dict[int, int] = {}
        for p in snapshot.processes:
            held = (p.vram_bytes or 0) + (p.shared_bytes or 0)
            if held:
                by_pid[p.pid] = by_pid.get(p.pid, 0) + held
        if not by_pid:
            return
        sessions = {pid: _session_of(pid) for pid in by_pid}
        with self._lock:
            for watch in jobs:
                held = sum(b for pid, b in by_pid.items() if pid == watch.pid or sessions[pid] == watch.pid)
                if held and (watch.peak_bytes is None or held > watch.peak_bytes):
                    watch.peak_bytes = held
