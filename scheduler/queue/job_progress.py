"""The running jobs' progress as the queue keeps it: read from each job's own output
(``jobs/progress.py``) at most every ``READ_EVERY_S`` per job, whoever asks (a dispatch pass, a
``queue`` request, the tray's refresh), and what it says of the time left.

A job that reports ``fraction`` f done after working ``run_s`` seconds is expected to take
``run_s / f`` in all (``projected_s``) and to need ``run_s × (1 − f) / f`` more (``left_s``), once it
has worked ``FIRST_ESTIMATE_S`` and reported more than nothing: a tqdm bar's first second says little.

**Its pace from its first progress line.** Many jobs print nothing for a while (a torch script loads
its model, then its bar starts): counted from the job's start, that quiet time makes its first
estimates far too long (1 % after 30 s of which 25 s were loading: 50 min instead of 8). Once its
progress has moved on ``FIRST_ESTIMATE_S`` after the first line this book saw (``f0`` then, ``f`` now,
``t`` seconds apart), its time left is ``(1 − f) × t / (f − f0)``: ``paced_s`` gives the seconds of
work its ``f`` stands for at that pace (``f × t / (f − f0)``), which ``left_s`` takes in place of its
run. A paused job keeps the plain formula (its pause would count as work).
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


def paced_s(first_at_s: float, first: float, fraction: float, now_s: float) -> float | None:
    """The seconds of work ``fraction`` stands for at the pace kept since the first progress line seen
    (``first`` done at ``first_at_s``; ``now_s`` on the same clock); None: too early to tell."""
    seen_s = now_s - first_at_s
    if fraction <= first or seen_s < FIRST_ESTIMATE_S:
        return None
    return fraction * seen_s / (fraction - first)


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
    started_at: float | None = None  # the attempt read (a retry or a move writes to the same log)
    first: tuple[float, float] | None = (
        None  # the first progress above 0 this attempt showed: (when, fraction)
    )


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
            same = last is not None and (last.log_path, last.started_at) == (rec.log_path, rec.started_at)
            if last is not None and same and now - last.at_s < READ_EVERY_S:
                return last.progress
            duration = last.duration_s if last is not None and last.log_path == rec.log_path else None
            first = last.first if last is not None and same else None
        found, duration = read_progress(rec.log_path, duration)
        if first is None and found is not None and found.fraction > 0:
            first = (now, found.fraction)
        with self._lock:
            self._reads[rec.id] = _Read(now, rec.log_path, found, duration, rec.started_at, first)
        return found

    def paced(self, running: Iterable[TaskRecord]) -> dict[int, float]:
        """Task id → the seconds of work its progress stands for at the pace it kept since its first
        progress line (``paced_s``), for the running tasks where that is known (read as ``progress``
        reads)."""
        out = {}
        for rec in running:
            found = self.progress(rec)
            with self._lock:
                read = self._reads.get(rec.id)
            if (
                found is None
                or read is None
                or read.first is None
                or rec.paused_s
                or rec.paused_at is not None
            ):
                continue
            pace = paced_s(*read.first, found.fraction, self._clock())
            if pace is not None:
                out[rec.id] = pace
        return out

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
