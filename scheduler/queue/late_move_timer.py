"""The dispatcher's timer that moves a running job its own progress shows ending late (``late_move``):
every ``LOOK_S`` it reads the progress of our running jobs whose task lets them move (``may_move``; the
progress is read at most twice a second per job whoever asks, ``job_progress``), builds the outlook as a
dispatch pass does and stops each job ``late_move.decide`` picks, with where it runs again kept in
``JobRuns.moves`` for its end (``RunElsewhere``). Nothing to look at (no such job) costs a dict walk.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from gputray.scheduler.queue.device_book import DeviceBook
from gputray.scheduler.queue.estimator import Estimator
from gputray.scheduler.queue.job_runs import JobRuns
from gputray.scheduler.queue.late_move import LateJob, decide, may_move
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import Paused
from gputray.scheduler.tasks.family import family_of

log = logging.getLogger("gputray.scheduler.queue.late_move")

LOOK_S = 2.0


class MovingQueue(Protocol):
    """What moving a late job needs of the queue (``QueueService``)."""

    @property
    def store(self) -> TaskStore: ...

    @property
    def runs(self) -> JobRuns: ...

    @property
    def device_book(self) -> DeviceBook: ...

    @property
    def estimates(self) -> Estimator: ...

    @property
    def lock(self) -> threading.RLock: ...

    def paused(self) -> Paused: ...


class LateMoves:
    """The timer (see the module docstring); ``moved``: jobs stopped to move so far (tests, benches)."""

    def __init__(self, queue: MovingQueue) -> None:
        self.queue = queue
        self._next_s: float | None = None
        self.looks = 0
        self.moved = 0

    def next_due_s(self) -> float | None:
        return self._next_s if self._next_s is not None else 0.0

    def run_due(self, now_s: float) -> None:
        self.looks += 1
        self._next_s = now_s + LOOK_S
        queue = self.queue
        with queue.lock:
            runs = list(queue.runs.jobs.values())
            stopping = set(queue.runs.moves)
        if not runs:
            return
        view = queue.store.view()
        records = [rec for r in runs if (rec := view.get(r.task_id)) is not None and rec.state == "running"]
        quiet = {r.task_id for r in runs if r.paused or r.job.kill_reason is not None} | stopping
        candidates = [rec for rec in records if rec.id not in quiet and may_move(rec.spec)]
        if not candidates:
            return
        done = queue.estimates.progress.fractions(candidates)
        paced = queue.estimates.progress.paced(candidates)
        jobs = [
            LateJob(rec, done[rec.id], rec.run_s(now_s) or 0.0, paced.get(rec.id))
            for rec in candidates
            if rec.id in done
        ]
        if not jobs:
            return
        book = queue.device_book
        devices = book.states(book.monitor.latest, runs, queue.paused())
        outlook = queue.estimates.outlook({family_of(j.task.spec) for j in jobs}, devices, records, now_s)
        for move in decide(jobs, devices, outlook):
            with queue.lock:
                running = queue.runs.jobs.get(move.task_id)
                if running is None or running.job.kill_reason is not None:
                    continue  # it ended, or someone stopped it, meanwhile
                queue.runs.moves[move.task_id] = move
                running.job.cancel("moved")
                if running.job.kill_reason != "moved":  # it had ended already: nothing to move
                    del queue.runs.moves[move.task_id]
                    continue
            self.moved += 1
            log.info("task #%d: %s", move.task_id, render(move.reason))
