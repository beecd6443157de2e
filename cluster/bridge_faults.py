"""The bridge's faults room: tasks on a machine that has left a live cluster follow their retry
policy here; a copy another machine still runs after we gave it up is stopped; this machine, cut off
from a live cluster, stops what other machines handed it. Nothing runs twice.
"""

from __future__ import annotations

import contextlib
import time

from gputray.cluster import bridge_base
from gputray.cluster.bridge_base import (
    CALL_TIMEOUT_S,
    BridgeBase,
    _Machine,
    log,
)
from gputray.cluster.link import TERMINAL_REMOTE
from gputray.scheduler.client import connection as ipc
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.replies import TaskView
from gputray.scheduler.cluster_port import reasons as c
from gputray.scheduler.cluster_port import steps
from gputray.scheduler.cluster_port.reasons import render
from gputray.scheduler.cluster_port.records import FINISHED_STATES, TaskRecord


class Faults(BridgeBase):
    """Machines gone, copies given up, this machine cut off; see the module docstring."""

    def _judge_lost(self, rows: list[TaskRecord]) -> None:
        """Tasks on a machine that has left a live cluster follow their retry policy."""
        if not self.head_ok():
            return  # the head is down (or we are): nobody is judged
        now = time.time()
        for r in rows:
            if r.finished and r.remote_state in TERMINAL_REMOTE:
                continue
            machine = str(r.machine)
            with self.lock:
                m = self.machines.get(machine) or _Machine()
            since_connect = time.monotonic() - self.connected_at_mono
            if m.node_gone_since is not None:  # the head says its node is gone: it fences after fence_after
                unseen_s = time.monotonic() - m.node_gone_since
            elif m.has_node:
                continue  # its node is alive: its owner may be restarting; its queue keeps the task
            else:  # a machine whose node names no machine: judged by its agent's silence
                last = m.last_contact
                unseen_s = min(now - last if last else since_connect, since_connect)
            if unseen_s < self.config.lost_after_s:
                continue
            running = r.state == "running" or r.remote_state == "running"
            why = c.LeftCluster(machine=machine, while_running=running)
            if r.finished:
                self._step(r, steps.RemoteMark(remote_state="lost"), expect=False)
                continue
            log.warning("task #%d: %s", r.id, render(why))
            self._step(r, steps.LostThere(why=why, now=time.time()), expect=False)

    def _cancel_orphans(self, rows: list[TaskRecord]) -> None:
        """A machine back after we gave its copy of a task up: stop that copy (it must not run twice).

        Judged on the row as the owner holds it now (``rows`` may predate a hand-over made in this
        very pass): a copy is an orphan only when that row went another way (queued again, placed
        elsewhere, or a later attempt), never while it points at that machine and attempt.
        """
        ours = {r.id: r for r in rows}
        views = self.views()
        for machine, view in views.items():
            if machine == self.local:
                continue
            for t in view.inbound:
                who, _, rest = t.origin.partition("#")
                task_id, _, attempt = rest.partition(".")
                if who != self.local or not task_id.isdigit():
                    continue
                rec = ours.get(int(task_id))
                if rec is not None and _is_that_copy(
                    rec.machine,
                    rec.remote_id,
                    rec.attempts,
                    machine,
                    t.id,
                    attempt,
                    row_finished=rec.finished,
                ):
                    continue
                try:
                    now: TaskView | None = self._ask(rq.Get(id=int(task_id))).task
                except ipc.RemoteError:
                    now = None  # no such task here (any more): nobody waits for that copy
                if now is not None and _is_that_copy(
                    now.machine,
                    now.remote_id,
                    now.attempts,
                    machine,
                    t.id,
                    attempt,
                    row_finished=now.state in FINISHED_STATES,
                ):
                    continue
                key = (machine, t.id)
                handle = self.handle_for(machine)
                if key in self._cancel_sent or handle is None:
                    continue
                self._cancel_sent.add(key)
                log.warning(
                    "%s still has task #%d (%s) that we placed again elsewhere: stopping it",
                    machine,
                    t.id,
                    t.origin,
                )
                with contextlib.suppress(Exception):
                    bridge_base.ray().get(handle.cancel.remote(t.id), timeout=CALL_TIMEOUT_S)

    def _fence_if_cut_off(self) -> None:
        """This machine's node is gone from a live cluster: stop what other machines handed us."""
        if self.fenced or self.cut_off_since is None or not self.head_ok():
            return
        if time.monotonic() - self.cut_off_since < self.config.fence_after_s:
            return
        self.fenced = True
        view = self.local_view
        ids: list[int | str] = [t.id for t in view.inbound] if view is not None else []
        if ids:
            log.warning("cut off from the cluster: stopping tasks %s that other machines handed us", ids)
            self._ask(rq.Cancel(ids=ids))


def _is_that_copy(
    row_machine: object,
    row_remote_id: object,
    row_attempts: object,
    machine: str,
    remote_id: int,
    attempt: str,
    *,
    row_finished: bool = False,
) -> bool:
    """Whether our row stands for the copy ``remote_id`` (attempt ``attempt``) on ``machine``."""
    if row_machine != machine:
        return False
    if row_remote_id is not None:
        return bool(row_remote_id == remote_id)
    # being sent (the hand-over is not recorded yet), unless it was cancelled meanwhile
    return not row_finished and attempt == str(row_attempts)
