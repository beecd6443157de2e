"""The bridge's placing room: where each task that may run elsewhere goes (``placer.place_all`` over
every machine's view), placing again what waits here, and taking back what waits on another machine
(withdrawn there first: a start that came first wins, so nothing runs twice).
"""

from __future__ import annotations

import contextlib
import time

import msgspec

from gputray.cluster import bridge_base
from gputray.cluster.bridge_base import (
    CALL_TIMEOUT_S,
    BridgeBase,
    _short,
    log,
)
from gputray.cluster.placer import place_all
from gputray.cluster.staging import TransferRefused, check_size, plan_inputs
from gputray.cluster.wire import MachineView, qualified, split_qualified
from gputray.scheduler.cluster_port import reasons as c
from gputray.scheduler.cluster_port import steps
from gputray.scheduler.cluster_port.reasons import render
from gputray.scheduler.cluster_port.records import PENDING_STATES, TaskRecord
from gputray.scheduler.cluster_port.shared import GiveUp, Placement, Wait

PLACED_HERE_GRACE_S = 2.0  # a task placed here that the queue here has not started by then is placed again


class Placing(BridgeBase):
    """Placing, placing again, taking back; see the module docstring."""

    def _allowed(self, rec: TaskRecord, views: dict[str, MachineView]) -> list[str]:
        wanted = rec.spec.machine
        if wanted != "any":
            return [str(wanted)]
        others = sorted(m for m in views if m != self.local)
        if others:
            try:
                plan = plan_inputs(rec.spec, self.config)
                if not plan.shared_in_place:
                    check_size(plan, self.config, "another machine")
            except TransferRefused:
                return [self.local]  # too big to send anywhere: this machine only
        return [self.local, *others]

    def _place(self, tasks: list[TaskRecord], in_flight: list[TaskRecord]) -> None:
        views = _with_in_flight(self.views(), in_flight)  # handed over, not yet running: slot taken
        decisions = place_all(
            tasks, views, local=self.local, now_s=time.time(), allowed=lambda t: self._allowed(t, views)
        )
        now = time.time()
        for d in decisions:
            r = d.task
            if isinstance(d.decision, Placement):
                assert d.machine is not None and d.device_key is not None
                if d.machine == self.local:
                    self._step(r, steps.PlaceHere(machine=self.local))  # the local queue starts it now
                    continue
                claimed = self._step(
                    r,
                    steps.HandOver(
                        machine=d.machine,
                        device=qualified(d.machine, d.device_key),
                        attempts=r.attempts + 1,
                        into="waiting",
                        reason=c.Sending(machine=d.machine, why=d.decision.reason),
                    ),
                )
                if claimed is not None:
                    self._send(claimed)
            elif isinstance(d.decision, GiveUp):
                self._step(r, steps.Fail(reason=d.decision.reason, ended_at=now))
            elif isinstance(d.decision, Wait) and (r.state != "waiting" or r.reason != d.decision.reason):
                self._step(r, steps.Wait(reason=d.decision.reason))

    def _place_again(self, rows: list[TaskRecord], in_flight: list[TaskRecord]) -> None:
        """Tasks for any machine placed here that this machine's queue has not started within
        ``PLACED_HERE_GRACE_S`` (paused here since, busy after all): to another machine that can start
        them now. The hand-over is compare-and-set on the row's state, so a start that came first wins."""
        now_mono = time.monotonic()
        seen = {r.id: self._placed_here_since.get(r.id, now_mono) for r in rows}
        self._placed_here_since = seen
        stuck = [r for r in rows if now_mono - seen[r.id] >= PLACED_HERE_GRACE_S]
        if not stuck:
            return
        self._refresh_local_view(force=True)
        views = self.views()
        others = sorted(m for m in views if m != self.local)
        if not others:
            return
        views = _with_in_flight(views, in_flight)
        everywhere = place_all(
            stuck, views, local=self.local, now_s=time.time(), allowed=lambda t: self._allowed(t, views)
        )
        for d in everywhere:
            if not isinstance(d.decision, Placement) or d.machine in (None, self.local):
                continue  # this machine is (still) the place for it, or no machine can start it now
            assert d.device_key is not None
            r = d.task
            log.info("task #%d waits here; %s can start it now: placing it there", r.id, d.machine)
            claimed = self._step(
                r,
                steps.HandOver(
                    machine=d.machine,
                    device=qualified(d.machine, d.device_key),
                    attempts=r.attempts + 1,
                    # another state than the one the queue here would start it from: its start, had it
                    # begun meanwhile, fails its own compare-and-set and stops the job
                    into="queued" if r.state == "waiting" else "waiting",
                    reason=c.Sending(machine=d.machine, not_here=True),
                ),
            )
            if claimed is not None:
                self._placed_here_since.pop(r.id, None)
                self._send(claimed)

    def _take_back(self, handed: list[TaskRecord], in_flight: list[TaskRecord]) -> None:
        """Tasks for any machine that wait on the machine they were handed to (its GPU got busy, it was
        paused there) for ``PLACED_HERE_GRACE_S`` while another machine, this one included, could start
        them now: withdrawn from there if they have not started (compare-and-set there: a start that
        came first wins and the task stays, so nothing runs twice), then placed where they can start."""
        for r in handed:
            if r.id in self._edited and r.remote_id is not None and r.state in PENDING_STATES:
                self._take_back_edited(r)
        now_mono = time.monotonic()
        waiting = [r for r in handed if _waits_there(r, self.local) and r.id not in self._edited]
        seen = {r.id: self._waiting_there_since.get(r.id, now_mono) for r in waiting}
        self._waiting_there_since = seen
        stuck = [r for r in waiting if now_mono - seen[r.id] >= PLACED_HERE_GRACE_S]
        if not stuck:
            return
        views = self.views()
        views = _with_in_flight(views, in_flight)
        decisions = place_all(
            stuck,
            views,
            local=self.local,
            now_s=time.time(),
            allowed=lambda t: [m for m in self._allowed(t, views) if m != t.machine],  # not where it waits
        )
        for d in decisions:
            if isinstance(d.decision, Placement) and d.machine is not None and d.device_key is not None:
                self._withdraw_to(d.task, d.machine, d.device_key)

    def _withdraw(self, rec: TaskRecord, told: c.Reason) -> bool | None:
        """Ask the machine holding ``rec`` to withdraw it (``told``: the reason its copy ends with): True
        when it did (the copy there never ran), False when it had started there first, None when that
        machine could not be asked."""
        holder = str(rec.machine)
        handle = self.handle_for(holder)
        if handle is None or rec.remote_id is None:
            return None
        ray = bridge_base.ray()
        origin = self._origin(rec)
        try:
            got = ray.get(handle.withdraw.remote(rec.remote_id, origin, told), timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            log.info("task #%d: taking it back from %s failed: %s", rec.id, holder, _short(exc))
            return None
        if got is None:
            return False  # it started there first: it runs there, and only there
        self._waiting_there_since.pop(rec.id, None)
        with contextlib.suppress(Exception):
            ray.get(handle.cleanup.remote(origin), timeout=CALL_TIMEOUT_S)
        return True

    def _take_back_edited(self, rec: TaskRecord) -> None:
        """Edited here while it waited on the machine it was handed to: taken back and placed afresh as
        edited; if it had started there first, it runs as it was sent and its row says so."""
        holder = str(rec.machine)
        done = self._withdraw(rec, c.TakenBack(machine=self.local, by=True))
        if done is None:
            return
        if not done:
            late = c.StartedBeforeEdit(machine=holder, remote_id=rec.remote_id)
            if rec.reason != late:
                self._step(rec, steps.Note(reason=late))
            return
        why = c.TakenBack(machine=holder)
        log.info("task #%d: %s", rec.id, render(why))
        self._note_in_log(rec, render(why))
        # placed afresh (the copy there never ran: no attempt)
        self._step(rec, steps.TakeBack(machine=None, attempts=rec.attempts - 1, reason=why))

    def _withdraw_to(self, rec: TaskRecord, machine: str, device_key: str) -> None:
        holder = str(rec.machine)
        free = "" if machine == self.local else machine
        if not self._withdraw(rec, c.TakenBack(machine=self.local, free=free, by=True)):
            return
        why = c.TakenBack(machine=holder, free=machine)
        log.info("task #%d: %s", rec.id, render(why))
        if machine == self.local:  # the local queue starts it now; the copy there never ran: no attempt
            self._note_in_log(rec, render(why))  # the queue appends its run to the same log
            self._step(rec, steps.TakeBack(machine=self.local, attempts=rec.attempts - 1, reason=why))
            return
        claimed = self._step(  # the same attempt, handed to another machine
            rec,
            steps.HandOver(
                machine=machine,
                device=qualified(machine, device_key),
                into="queued",
                again=True,
                reason=c.Sending(machine=machine, why=why),
            ),
        )
        if claimed is not None:
            self._send(claimed)


def _placed_here_unstarted(rec: TaskRecord, local: str) -> bool:
    """A task for any machine that was placed on this one and has not started here yet."""
    return (
        rec.spec.machine == "any"
        and rec.machine == local
        and rec.remote_id is None
        and rec.state in PENDING_STATES
        and not rec.finished
    )


def _waits_there(rec: TaskRecord, local: str) -> bool:
    """A task for any machine, handed to another machine, that waits there (it has not started)."""
    return (
        rec.spec.machine == "any"
        and rec.machine not in (None, local)
        and rec.remote_id is not None
        and rec.remote_state in PENDING_STATES
        and rec.state in PENDING_STATES
        and not rec.finished
    )


def _with_in_flight(views: dict[str, MachineView], in_flight: list[TaskRecord]) -> dict[str, MachineView]:
    """The views with each task already sent but not yet started there counted as running on its
    device, so one pass never places two tasks on a device that has room for one."""
    extra: dict[str, int] = {}
    for r in in_flight:
        if r.device and r.state in PENDING_STATES and not r.finished:
            extra[r.device] = extra.get(r.device, 0) + 1
    if not extra:
        return views
    out = dict(views)
    for key, count in extra.items():
        machine, local = split_qualified(key)
        view = out.get(machine)
        if view is None:
            continue
        devices = tuple(
            msgspec.structs.replace(d, running=d.running + count) if d.key == local else d
            for d in view.devices
        )
        out[machine] = msgspec.structs.replace(view, devices=devices)
    return out
