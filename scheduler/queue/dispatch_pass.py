"""One dispatch pass's planning, under the queue's lock: which pending tasks start now and where, which
wait and why (the reason written on each), which fail (a start time no pass can plan, a dependency
that failed). ``QueueService`` takes it in as the mixin ``DispatchPass``; ``QueueService.dispatch``
starts the jobs it placed once the lock is let go. Moved out of service.py whole."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from gputray.monitor.records import DeviceInfo, Snapshot
from gputray.scheduler.protocol import check_epoch_s
from gputray.scheduler.queue import dependencies as deps
from gputray.scheduler.queue.device_book import with_env_status
from gputray.scheduler.queue.device_checks import torch_device_keys
from gputray.scheduler.queue.late_move import with_move_notes
from gputray.scheduler.queue.make_room import with_room_notes
from gputray.scheduler.queue.placement import DeviceState, GiveUp, Placement, Wait, wait_started_s
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import PENDING_STATES, Offer, TaskRecord

if TYPE_CHECKING:
    from gputray.monitor.monitor import Monitor
    from gputray.scheduler.cluster_port import ClusterPort
    from gputray.scheduler.pyenvs.choice import EnvChooser
    from gputray.scheduler.queue.estimator import Estimator
    from gputray.scheduler.queue.job_runs import EventKind, JobRuns
    from gputray.scheduler.queue.put_aside import PutAside
    from gputray.scheduler.queue.store import TaskStore
    from gputray.scheduler.queue.waits_book import WaitsBook
    from gputray.scheduler.replies import Paused

SPACE_RECHECK_S = 5.0  # while the disk is full, look again this often
PlacedStart = tuple[TaskRecord, Placement, Sequence[DeviceState], Sequence[DeviceInfo]]


class DispatchPass:
    """``_plan_pass`` and the steps it takes; ``QueueService`` is the one class that takes them in."""

    if TYPE_CHECKING:  # what the queue service provides
        store: TaskStore
        monitor: Monitor
        clock: Callable[[], float]
        env_chooser: EnvChooser
        cluster: ClusterPort | None
        runs: JobRuns
        estimates: Estimator
        waits_book: WaitsBook
        passes: int
        _lock: threading.RLock
        _closed: bool
        _paused: Paused
        _due_s: float | None
        _put_aside: PutAside

        def emit(
            self, kind: EventKind, rec: TaskRecord, message: Reason, offer: Offer | None = None
        ) -> None: ...

        def _device_states(
            self, snapshot: Snapshot | None, *, needs: frozenset[str] = frozenset()
        ) -> builtins.list[DeviceState]: ...

    def _plan_pass(self, placed: builtins.list[PlacedStart]) -> None:
        with self._lock:
            if self._closed:
                return
            self.passes += 1
            now = self.clock()
            back = self._put_aside.take_due(now)
            if back:  # their time came (one that changed meanwhile came back by itself, in the store)
                self.store.bring_back(back)
            pending = self._fail_unplannable(self.store.pending(active_only=True), now)
            if self.cluster is not None:
                # Dependencies hold a task for another machine too, until it is placed: the cluster
                # link hands the bridge only those whose dependencies let them start.
                runs_here = self.cluster.runs_here
                unplaced = [r for r in pending if runs_here(r) or r.machine is None]
                pending = [r for r in self._hold_for_dependencies(unplaced, now) if runs_here(r)]
            else:
                pending = self._hold_for_dependencies(pending, now)
            pending, held_back = self.runs.start_backoff.split(pending, now)
            self._record_waits(held_back)
            if not pending:
                parked_due = self._put_aside.next_due_s()
                dues = [parked_due] if parked_due is not None else []
                backoff_due = self.runs.start_backoff.next_due_s(now)
                self._due_s = (
                    min([*dues, backoff_due]) if backoff_due is not None else min(dues, default=None)
                )
                return
            if self._paused.all:
                self._record_waits([(r, Wait(c.QueuePaused())) for r in pending])
                self._due_s = None
                return
            no_space = self.store.space_problem()
            if no_space is not None:  # a job's log and its exit need room: start nothing until there is
                self._record_waits([(r, Wait(c.NoRoom(problem=no_space))) for r in pending])
                self._due_s = now + SPACE_RECHECK_S
                return
            pending, parking = self._put_aside.split(pending, now)
            snapshot = self.monitor.latest
            wanted = frozenset(n for r in pending for n in r.spec.needs)
            devices = self._device_states(snapshot, needs=wanted)
            torch_keys = torch_device_keys((r.spec for r in pending), devices)
            if torch_keys:  # an env is looked up (checked) only where a torch task may run
                devices = [
                    with_env_status(d, self.env_chooser) if d.key in torch_keys else d for d in devices
                ]
            result = self.estimates.plan(pending, devices, now, running=list(self.runs.jobs))
            waits: builtins.list[tuple[TaskRecord, Wait]] = builtins.list(parking)
            parked_due = self._put_aside.next_due_s()
            due: builtins.list[float] = [parked_due] if parked_due is not None else []
            known = [d.info for d in devices]
            for task, decision in result.decisions:
                if isinstance(decision, Placement):
                    placed.append((task, decision, devices, known))
                elif isinstance(decision, GiveUp):
                    self._fail(task, decision.reason, now)
                else:
                    waits.append((task, decision))
                    if decision.until_s is not None:
                        due.append(decision.until_s)
                    elif task.spec.max_wait_s is not None:
                        due.append(wait_started_s(task) + task.spec.max_wait_s)
            self._record_waits(waits, result.overtakes)
            self.store.put_aside(task for task, _wait in parking)  # after their reasons are written
            backoff_due = self.runs.start_backoff.next_due_s(now)
            if backoff_due is not None:
                due.append(backoff_due)
            self._due_s = min(due) if due else None

    def _fail_unplannable(self, pending: builtins.list[TaskRecord], now: float) -> builtins.list[TaskRecord]:
        """Fail the records no pass can plan (a start time past the year 9999, stored by an older
        gputray or written by hand), with the reason; the others go on."""
        ok = []
        for rec in pending:
            times: tuple[tuple[float | None, Literal["start", "retry"]], ...] = (
                (rec.spec.start_at, "start"),
                (rec.not_before, "retry"),
            )
            bad = next((which for value, which in times if value is not None and not _plannable(value)), None)
            if bad is not None:
                self._fail(rec, c.Unplannable(which=bad), now)
                continue
            ok.append(rec)
        return ok

    def _hold_for_dependencies(
        self, pending: builtins.list[TaskRecord], now: float
    ) -> builtins.list[TaskRecord]:
        """The tasks whose dependencies let them start; the others wait (reason recorded) or, when a
        dependency failed or was cancelled, fail, down the whole chain in this one pass."""
        if not any(r.spec.after for r in pending):
            return pending
        view = self.store.view()
        failed: set[int] = set()
        changed = True
        while changed:  # a → b → c: b fails because of a, then c because of b
            changed = False
            for rec in pending:
                if rec.id in failed:
                    continue
                verdict = deps.gate(rec, view)
                if isinstance(verdict, deps.Broken):
                    self._fail(rec, verdict.reason, now)
                    failed.add(rec.id)
                    changed = True
        ready, waits = [], []
        for rec in pending:
            if rec.id in failed:
                continue
            verdict = deps.gate(rec, view)
            if verdict is None:
                ready.append(rec)
            else:
                waits.append((rec, Wait(verdict.reason)))
        self._record_waits(waits)
        return ready

    def _fail(self, rec: TaskRecord, reason: Reason, now: float) -> None:
        """A pending task fails with ``reason`` (unless its state changed meanwhile: a race lost)."""
        new = self.store.apply(rec.id, life.Fail(reason=reason, ended_at=now), expect_state=rec.state)
        if new is not None:
            self.emit("failed", new, c.Named(name=new.name, why=reason))

    def _record_waits(
        self, waits: Sequence[tuple[TaskRecord, Wait]], overtakes: Mapping[int, int] = {}
    ) -> None:
        waits = with_room_notes(waits, self.runs.room_notes)  # what making room did goes on the reason
        waits = with_move_notes(waits)  # a task moved to wait here (late, out of memory) still says why
        self.waits_book.note(waits)
        updates: builtins.list[tuple[int, life.Step]] = [
            (task.id, life.Wait(reason=wait.reason, overtakes=overtakes.get(task.id)))
            for task, wait in waits
            if task.state != "waiting"
            or task.reason != wait.reason
            or (task.id in overtakes and overtakes[task.id] != task.overtakes)
        ]
        if updates:
            # Only rows still pending: a cancel may have raced this pass. Why a task waits is said again by
            # the next pass: no need to wait for the disk (acknowledged submits are synced by the store).
            self.store.apply_many(updates, only_states=PENDING_STATES, sync=False)
        for task, wait in waits:
            if task.state == "queued":
                self.emit(
                    "waiting",
                    task.replace(state="waiting", reason=wait.reason),
                    c.Named(name=task.name, why=wait.reason),
                )


def _plannable(epoch_s: float) -> bool:
    try:
        check_epoch_s(epoch_s)
    except ValueError:
        return False
    return True
