"""The running jobs' progress as the queue keeps it: read from each job's own output
(``jobs/progress.py``) at most every ``READ_EVERY_S`` per job, whoever asks (a dispatch pass, a
``queue`` request, the tray's refresh), and what it says of the time left.

A job that reports ``fraction`` f done after working ``run_s`` seconds is expected to take
``run_s / f`` in all (``projected_s``) and to need ``run_s × (1 − f) / f`` more (``left_s``), once it
has worked ``FIRST_ESTIMATE_S`` and reported more than nothing: a tqdm bar's first second says little.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gputray.scheduler.jobs.progress import Progress, read_progress
from gputray.scheduler.tasks.records import TaskRecord

READ_EVERY_S = 0.5  # a job's output is read at most twice a second
FIRST_ESTIMATE_S = 3.0  # a job's progress estimates its end once it has worked this long


def left_s(fraction: float, run_s: float) -> float | None:
    """Seconds left for a job ``fraction`` done after ``run_s`` seconds of work (None: too early)."""
    if fraction <= 0 or run_s < FIRST_ESTIMATE_S:
        return None
    return run_s * (1.0 - fraction) / fraction


def projected_s(fraction: float, run_s: float) -> float | None:
    """The whole run a job ``fraction`` done after ``run_s`` seconds is expected to take (None: too early)."""
    left = left_s(fraction, run_s)
    return None if left is None else run_s + left


@dataclass
class _Read:
    at_s: float
    log_path: str
    progress: Progress | None
    duration_s: float | None  # ffmpeg's input, once read from the log's head


class ProgressBook:
    """Task id → its job's last read progress; reads again only after ``READ_EVERY_S``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._reads: dict[int, _Read] = {}

    def progress(self, rec: TaskRecord) -> Progress | None:
        """The running task's progress (None: it reports none, or is not running)."""
        if rec.state != "running" or not rec.log_path:
            return None
        now = self._clock()
        with self._lock:
            last = self._reads.get(rec.id)
            if last is not None and last.log_path == rec.log_path and now - last.at_s < READ_EVERY_S:
                return last.progress
            duration = last.duration_s if last is not None and last.log_path == rec.log_path else None
        found, duration = read_progress(rec.log_path, duration)
        with self._lock:
            self._reads[rec.id] = _Read(now, rec.log_path, found, duration)
        return found

    def fractions(self, running: Iterable[TaskRecord]) -> dict[int, float]:
        """Task id → fraction done, for the running tasks that report one."""
        out = {}
        for rec in running:
            found = self.progress(rec)
            if found is not None:
                out[rec.id] = found.fraction
        return out

    def forget(self, keep: Iterable[int]) -> None:
        """Drop what is kept of jobs no longer running."""
        wanted = set(keep)
        with self._lock:
            for task_id in [i for i in self._reads if i not in wanted]:
                del self._reads[task_id]
