"""The bridge: the one process per machine where Ray lives, beside the owner (tray or daemon).

The owner starts it (``gputray.cluster.link``) while ``[cluster] address`` is set. It is a Ray driver
and a client of the owner's local socket:

* it hosts this machine's agent (``gputray.cluster.agent``), a Ray actor pinned to this machine's Ray
  node (custom resource ``gputray-machine-<name>``, node label ``gputray-machine=<name>``, or else the
  node the bridge itself attached to);
* it reads every other machine's view from its agent (twice a second) and places this owner's tasks
  that may run elsewhere (``machine = "any"`` or a machine's name) with the queue's own placement
  over all of them (``gputray.cluster.placer``);
* it sends a placed task's inputs through Ray's object store in chunks, hands the task to the target
  machine's agent (into that machine's durable queue), then mirrors its state into the local row,
  appends its log to the local log file (so ``gputray logs ID --follow`` works here), and when it ends
  brings its results and log back beside the input;
* faults: a machine that has left the cluster (the head up, its agent gone for ``lost_after``) has
  its tasks follow their retry policy here; a machine cut off from a live cluster (``fence_after``)
  stops the tasks others handed it, so nothing runs twice; with the head down nothing is judged, every
  local queue goes on, and the bridge reconnects when the head is back.

``python -m gputray.cluster.bridge --probe ADDRESS`` is what ``gputray cluster join`` runs to check
a cluster (reachable, token authentication on, Ray version) without joining it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import msgspec

from gputray.cluster.agent import Agent
from gputray.cluster.config import (
    CHUNK_BYTES,
    LABEL_KEY,
    LOOPBACK_ENV,
    RESOURCE_PREFIX,
    ClusterConfig,
    ClusterConfigError,
    load_cluster_config,
)
from gputray.cluster.link import BRIDGE_KEY_ENV, EXIT_NO_RAY, EXIT_RECONNECT, TERMINAL_REMOTE, is_loopback
from gputray.cluster.pause_marks import mark_paused
from gputray.cluster.placer import handed_prefs, place_all
from gputray.cluster.staging import TransferRefused, check_size, plan_inputs, staged_spec
from gputray.cluster.view import local_view
from gputray.cluster.wire import MachineView, OtherVersion, TaskChunk, qualified, split_qualified
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cluster_records import ClusterReport, ConnectionState, ReportedMachine
from gputray.scheduler.jobs.invocation import free_out_path
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import R
from gputray.scheduler.queue.placement import GiveUp, Placement, Wait
from gputray.scheduler.replies import Paused, TaskView
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.lifecycle import ClusterStep
from gputray.scheduler.tasks.records import FINISHED_STATES, PENDING_STATES, TaskRecord

log = logging.getLogger("gputray.cluster.bridge")

NAMESPACE = "gputray"
AGENT_PREFIX = "agent:"
VIEW_INTERVAL_S = 0.5
CALL_TIMEOUT_S = 30.0
IN_FLIGHT_CHUNKS = 4
OWNER_GONE_S = 10.0
PLACED_HERE_GRACE_S = 2.0  # a task placed here that the queue here has not started by then is placed again
GCS_STALE_S = 3.0  # no answer from the head for this long: judge nobody, place on this machine only
RECONNECT_AFTER_S = 10.0  # ... for this long: start afresh (Ray does not reconnect a driver in-process)


def _ray() -> Any:
    return importlib.import_module("ray")


def _prepare_env(config: ClusterConfig) -> None:
    """Before Ray is imported: token authentication on (unless ``insecure``); a loopback address keeps
    Ray's own address on loopback too (it would otherwise swap 127.0.0.1 for the machine's address)."""
    if not config.insecure:
        os.environ["RAY_AUTH_MODE"] = "token"
    if is_loopback(config.address or ""):
        os.environ[LOOPBACK_ENV] = "0"


@dataclasses.dataclass
class _Machine:
    last_contact: float | None = None  # epoch s of the last view
    left_at: float | None = None
    view: MachineView | None = None
    handle: Any = None
    has_node: bool = False  # some Ray node was seen naming this machine (resource or label)
    node_gone_since: float | None = None  # monotonic s since no live node names it


class Bridge:
    def __init__(self, paths: Paths, config: ClusterConfig, owner_pid: int | None, *, key: str = "") -> None:
        self.paths = paths
        self.key = (
            key  # the owner's secret for its bridge (``link.BRIDGE_KEY_ENV``): cluster-only ops carry it
        )
        self.config = config
        self.owner_pid = owner_pid
        self.local = config.machine
        self.client = ipc.IpcClient(paths, timeout_s=30.0)
        self.stop_event = threading.Event()
        self.exit_code = 0
        self.lock = threading.RLock()
        self.machines: dict[str, _Machine] = {}
        self.connected = False
        self.connected_at_mono = 0.0
        self.gcs_ok_mono = -1e9
        self.note = "connecting"
        self.ray_version: str | None = None
        self.node_id: str | None = None
        self.agent: Any = None
        self.agent_pid: int | None = None
        self.pinned_by = "node"  # how the agent is pinned: "resource", "label" or "node" (the bridge's)
        self.cut_off_since: float | None = None
        self.fenced = False
        self.local_view: MachineView | None = None
        self.local_view_mono = -1e9
        self._cancel_sent: set[tuple[str, int]] = set()
        self._other_version: set[str] = set()  # machines whose agent answers in another version's shape
        self._placing: set[int] = set()  # the tasks to place in the last step
        self._placed_here_since: dict[int, float] = {}  # task id → monotonic s it was seen placed here
        self._waiting_there_since: dict[int, float] = {}  # ... seen waiting on the machine it was handed to
        self._paused_seen: Paused | None = None  # this machine's pause as the last sync said
        self._edited: set[int] = set()  # tasks waiting elsewhere, edited here since: to take back
        self._state_file = paths.state_dir / "cluster-machines.json"
        self._load_machines()

    # --- persistence of who was seen when ---------------------------------------------------------

    def _load_machines(self) -> None:
        with contextlib.suppress(OSError, ValueError, TypeError):
            for name, entry in json.loads(self._state_file.read_text(encoding="utf-8")).items():
                self.machines[name] = _Machine(
                    entry.get("last_contact"), entry.get("left_at") or entry.get("last_contact")
                )

    def _save_machines(self) -> None:
        data = {n: {"last_contact": m.last_contact, "left_at": m.left_at} for n, m in self.machines.items()}
        with contextlib.suppress(OSError):
            tmp = self._state_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self._state_file)

    # --- Ray side (its own thread) -----------------------------------------------------------------

    def _ray_loop(self) -> None:
        backoff = 1.0
        while not self.stop_event.is_set():
            if not self.connected:
                try:
                    self._connect()
                    backoff = 1.0
                except Exception as exc:
                    self.note = f"cannot reach the cluster at {self.config.address}: {_short(exc)}"
                    log.warning("%s (next try in %.0f s)", self.note, backoff)
                    self._disconnect()
                    self.stop_event.wait(backoff)
                    backoff = min(15.0, backoff * 2)
                    continue
            try:
                self._refresh()
            except Exception as exc:
                self.note = f"lost the cluster at {self.config.address}: {_short(exc)}"
                log.warning("%s", self.note)
                self._disconnect()
                continue
            self.stop_event.wait(VIEW_INTERVAL_S)

    def _connect(self) -> None:
        ray = _ray()
        if not ray.is_initialized():
            ray.init(
                address=self.config.address,
                namespace=NAMESPACE,
                logging_level=logging.WARNING,
                log_to_driver=False,
                configure_logging=False,
            )
        ctx = ray.get_runtime_context()
        self.ray_version = ray.__version__
        self.node_id = ctx.get_node_id()
        self.gcs_ok_mono = time.monotonic()
        self.agent = self._start_agent(ray)
        self.agent_pid = int(ray.get(self.agent.ping.remote(), timeout=CALL_TIMEOUT_S))
        self.connected = True
        self.connected_at_mono = time.monotonic()
        self.cut_off_since = None
        self.fenced = False
        self.note = "connected"
        log.info(
            "joined %s as %s (Ray %s, node %s)",
            self.config.address,
            self.local,
            ray.__version__,
            self.node_id,
        )

    def _my_nodes(self, nodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return _nodes_of(nodes, self.local)

    def _start_agent(self, ray: Any) -> Any:
        nodes = ray.nodes()
        mine = self._my_nodes(nodes)
        options: dict[str, Any] = {
            "name": AGENT_PREFIX + self.local,
            "namespace": NAMESPACE,
            "get_if_exists": True,
            "num_cpus": 0,
            "max_concurrency": 8,
        }
        if mine and RESOURCE_PREFIX + self.local in (mine[0].get("Resources") or {}):
            options["resources"] = {RESOURCE_PREFIX + self.local: 0.001}
            self.pinned_by = "resource"
        elif mine:
            options["label_selector"] = {LABEL_KEY: self.local}
            self.pinned_by = "label"
        elif self.pinned_by != "node":  # it had a node of its own, now gone: wait for it to come back
            options["resources"] = {RESOURCE_PREFIX + self.local: 0.001}
        else:  # no node names this machine: the node this bridge attached to (one raylet per machine)
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(self.node_id, soft=False)
        remote_cls = ray.remote(Agent)
        dirs = {
            "config_dir": str(self.paths.config_dir),
            "data_dir": str(self.paths.data_dir),
            "state_dir": str(self.paths.state_dir),
            "runtime_dir": str(self.paths.runtime_dir),
        }
        return remote_cls.options(**options).remote(self.local, dirs, os.environ.get("GPUTRAY_HOME"))

    def _disconnect(self) -> None:
        self.connected = False
        self.agent = None
        with self.lock:
            for m in self.machines.values():
                m.handle = None
        with contextlib.suppress(Exception):
            _ray().shutdown()

    def _refresh(self) -> None:
        ray = _ray()
        nodes = ray.nodes()
        self.gcs_ok_mono = time.monotonic()
        if self.pinned_by == "node":
            here = any(n.get("Alive") and n.get("NodeID") == self.node_id for n in nodes)
        else:
            here = bool(self._my_nodes(nodes))
        if here:
            self.cut_off_since = None
        elif self.cut_off_since is None:
            self.cut_off_since = time.monotonic()
            log.warning("this machine's Ray node is gone from the cluster")
        names = [n[len(AGENT_PREFIX) :] for n in ray.util.list_named_actors() if n.startswith(AGENT_PREFIX)]
        if self.local not in names:  # our agent died with its node (or its worker): host it again
            log.info("this machine's agent is gone: starting it again")
            self.agent = self._start_agent(ray)
        refs: dict[str, Any] = {}
        for name in names:
            if name == self.local:
                continue
            with self.lock:
                m = self.machines.setdefault(name, _Machine())
            try:
                if m.handle is None:
                    m.handle = ray.get_actor(AGENT_PREFIX + name, namespace=NAMESPACE)
                refs[name] = m.handle.view.remote()
            except Exception:
                m.handle = None
        with self.lock:
            for name, m in self.machines.items():
                if name == self.local:
                    continue
                named = _nodes_of(nodes, name, alive_only=False)
                if any(n.get("Alive") for n in named):
                    m.has_node, m.node_gone_since = True, None
                elif (m.has_node or named) and m.node_gone_since is None:
                    m.has_node, m.node_gone_since = True, time.monotonic()
                    log.warning("%s's Ray node has left the cluster", name)
        now = time.time()
        if refs:
            ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=2.0)
            ready_set = set(ready)
            for name, ref in refs.items():
                m = self.machines[name]
                if ref not in ready_set:
                    continue
                try:
                    view = MachineView.from_wire(ray.get(ref))
                except OtherVersion as exc:
                    self._note_other_version(name, str(exc))
                    continue
                except Exception as exc:
                    log.info("%s does not answer: %s", name, _short(exc))
                    m.handle = None
                    continue
                with self.lock:
                    was_away = m.left_at is not None or m.last_contact is None
                    m.view, m.last_contact, m.left_at = view, now, None
                if was_away:
                    log.info("%s is in the cluster", name)
                    self._save_machines()
        with self.lock:
            for name, m in self.machines.items():
                if name != self.local and m.left_at is None and (m.last_contact or 0) < now - 3.0:
                    m.left_at = m.last_contact or now
                    log.warning("%s stopped answering", name)
                    self._save_machines()

    def _note_other_version(self, machine: str, why: str) -> None:
        """Say once that ``machine`` runs another gputray version: its view is not read and its tasks
        are not followed (they go on in its own queue) until every machine runs the same one."""
        if machine not in self._other_version:
            self._other_version.add(machine)
            log.warning(
                "%s runs another gputray version (%s): its GPUs are not shown and its tasks are not "
                "followed until every machine runs the same one (docs/cluster.md)",
                machine,
                why,
            )

    def head_ok(self) -> bool:
        return self.connected and time.monotonic() - self.gcs_ok_mono < GCS_STALE_S

    def handle_for(self, machine: str) -> Any:
        with self.lock:
            m = self.machines.get(machine)
            if not self.head_ok() or m is None or m.left_at is not None:
                return None
            return m.handle

    # --- the owner side (main thread) ---------------------------------------------------------------

    def run(self) -> int:
        threading.Thread(target=self._ray_loop, name="gputray-bridge-ray", daemon=True).start()
        owner_lost_since: float | None = None
        following = False
        while not self.stop_event.is_set():
            if self.owner_pid is not None and not _alive(self.owner_pid):
                log.info("the owner (pid %d) is gone: the bridge stops", self.owner_pid)
                break
            try:
                reply = self.client.ask(
                    rq.ClusterSync(
                        report=self.report(), wait_ms=200 if following else 1000, bridge_key=self.key
                    )
                )
                owner_lost_since = None
            except ipc.IpcError as exc:
                self.client.close()
                owner_lost_since = owner_lost_since or time.monotonic()
                if time.monotonic() - owner_lost_since > OWNER_GONE_S:
                    log.info("the owner does not answer (%s): the bridge stops", exc)
                    break
                self.stop_event.wait(0.5)
                continue
            if reply.stopping:
                break
            if self.connected and time.monotonic() - self.gcs_ok_mono > RECONNECT_AFTER_S:
                log.warning("the Ray head has not answered for %.0f s: reconnecting", RECONNECT_AFTER_S)
                self.exit_code = EXIT_RECONNECT
                break
            self.local = reply.machine or self.local
            rows = list(reply.tasks)
            try:
                # a pause or resume here is pushed with the reply: this machine's view (and so the report
                # the next sync carries) follows it now, not half a second later
                self._refresh_local_view(force=reply.paused != self._paused_seen)
                self._paused_seen = reply.paused
                self._edited = set(reply.edited)
                following = self.step(rows)
                self._fence_if_cut_off()
            except ipc.IpcError as exc:
                log.warning("owner request failed: %s", exc)
                self.client.close()
            except Exception:
                log.exception("bridge step failed")
                self.stop_event.wait(1.0)
        self.stop_event.set()
        if self.exit_code == EXIT_RECONNECT:  # Ray's shutdown would wait for the dead head
            logging.shutdown()
            os._exit(self.exit_code)
        with contextlib.suppress(Exception):
            _ray().shutdown()
        return self.exit_code

    def _ask(self, request: rq.Request[R]) -> R:
        return self.client.ask(request)

    def _refresh_local_view(self, *, force: bool = False) -> None:
        if force or time.monotonic() - self.local_view_mono >= VIEW_INTERVAL_S:
            self.local_view = local_view(self.client, self.local)
            self.local_view_mono = time.monotonic()

    def views(self) -> dict[str, MachineView]:
        out: dict[str, MachineView] = {}
        if self.local_view is not None:
            out[self.local] = self.local_view
        if self.head_ok():
            with self.lock:
                for name, m in self.machines.items():
                    if m.view is not None and m.left_at is None and name != self.local:
                        out[name] = m.view
        return out

    def step(self, rows: list[TaskRecord]) -> bool:
        """One pass over the tasks that concern the cluster; True while some wait or run elsewhere."""
        to_place = [
            r for r in rows if r.state in PENDING_STATES and r.machine is None and r.remote_id is None
        ]
        sending = [r for r in rows if r.remote_id is None and r.machine not in (None, self.local)]
        handed = [r for r in rows if r.remote_id is not None]
        placed_here = [r for r in rows if _placed_here_unstarted(r, self.local)]
        if any(r.id not in self._placing for r in to_place):
            # a task not placed before: this machine as it is now (a `pause` just before the submit)
            self._refresh_local_view(force=True)
        self._placing = {r.id for r in to_place}
        if to_place:
            self._place(to_place, [*sending, *handed])
        self._place_again(placed_here, [*sending, *handed])
        self._take_back(handed, sending)
        for r in sending:
            if not r.finished:
                self._send(r)
            else:  # cancelled while being sent: nothing to follow (a copy that arrived is an orphan)
                self._step(r, life.RemoteMark(remote_state="lost"), expect=False)
        for r in handed:
            self._follow(r)
        self._mark_silent(handed)
        self._judge_lost([*sending, *handed])
        self._cancel_orphans(rows)
        return bool(sending or handed or to_place)  # sync again soon: logs stream, waits end

    # placement

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
                    self._step(r, life.PlaceHere(machine=self.local))  # the local queue starts it now
                    continue
                claimed = self._step(
                    r,
                    life.HandOver(
                        machine=d.machine,
                        device=qualified(d.machine, d.device_key),
                        attempts=r.attempts + 1,
                        into="waiting",
                        reason=f"sending to {d.machine}"
                        + (f" ({d.decision.reason})" if d.decision.reason else ""),
                    ),
                )
                if claimed is not None:
                    self._send(claimed)
            elif isinstance(d.decision, GiveUp):
                self._step(r, life.Fail(reason=d.decision.reason, ended_at=now))
            elif isinstance(d.decision, Wait) and (r.state != "waiting" or r.reason != d.decision.reason):
                self._step(r, life.Wait(reason=d.decision.reason))

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
                life.HandOver(
                    machine=d.machine,
                    device=qualified(d.machine, d.device_key),
                    attempts=r.attempts + 1,
                    # another state than the one the queue here would start it from: its start, had it
                    # begun meanwhile, fails its own compare-and-set and stops the job
                    into="queued" if r.state == "waiting" else "waiting",
                    reason=f"sending to {d.machine} (it could not start here)",
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

    def _withdraw(self, rec: TaskRecord, told: str) -> bool | None:
        """Ask the machine holding ``rec`` to withdraw it (``told``: the reason its copy ends with): True
        when it did (the copy there never ran), False when it had started there first, None when that
        machine could not be asked."""
        holder = str(rec.machine)
        handle = self.handle_for(holder)
        if handle is None or rec.remote_id is None:
            return None
        ray = _ray()
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
        done = self._withdraw(rec, f"taken back by {self.local} to apply an edit")
        if done is None:
            return
        if not done:
            late = f"on {holder} (#{rec.remote_id}): it started there before the edit; it runs as sent"
            if rec.reason != late:
                self._step(rec, life.Note(reason=late))
            return
        why = f"taken back from {holder} to apply the edit"
        log.info("task #%d: %s", rec.id, why)
        self._note_in_log(rec, why)
        # placed afresh (the copy there never ran: no attempt)
        self._step(rec, life.TakeBack(machine=None, attempts=rec.attempts - 1, reason=why))

    def _withdraw_to(self, rec: TaskRecord, machine: str, device_key: str) -> None:
        holder = str(rec.machine)
        free = "this machine" if machine == self.local else machine
        if not self._withdraw(rec, f"taken back by {self.local}: it waited here and {free} is free"):
            return
        why = f"taken back from {holder}: it waited there and {machine} is free"
        log.info("task #%d: %s", rec.id, why)
        if machine == self.local:  # the local queue starts it now; the copy there never ran: no attempt
            self._note_in_log(rec, why)  # the queue appends its run to the same log
            self._step(rec, life.TakeBack(machine=self.local, attempts=rec.attempts - 1, reason=why))
            return
        claimed = self._step(  # the same attempt, handed to another machine
            rec,
            life.HandOver(
                machine=machine,
                device=qualified(machine, device_key),
                into="queued",
                again=True,
                reason=f"sending to {machine} ({why})",
            ),
        )
        if claimed is not None:
            self._send(claimed)

    def _note_in_log(self, rec: TaskRecord, note: str) -> None:
        self.paths.logs_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError), open(self.paths.logs_dir / f"task-{rec.id}.log", "a") as f:
            f.write(f"gputray: {note}\n")

    def _step(self, rec: TaskRecord, step: ClusterStep, *, expect: bool = True) -> TaskRecord | None:
        """One lifecycle step of the local row, while it is still in the state we saw (``expect``: a
        cancel may have come between); None when it was not, or the owner refused it (logged)."""
        request = rq.ClusterUpdate(
            id=rec.id, step=step, expect_state=rec.state if expect else None, bridge_key=self.key
        )
        try:
            return self._ask(request).task
        except ipc.RemoteError as exc:
            log.warning("task #%d: the owner refused %s: %s", rec.id, type(step).__name__, exc)
            return None

    # sending

    def _origin(self, rec: TaskRecord) -> str:
        return f"{self.local}#{rec.id}.{rec.attempts}"

    def _send(self, rec: TaskRecord) -> None:
        machine = str(rec.machine)
        handle = self.handle_for(machine)
        if handle is None:
            return  # not reachable now; _judge_lost decides when it has left
        ray = _ray()
        origin = self._origin(rec)
        try:
            plan = plan_inputs(rec.spec, self.config)
            if not plan.shared_in_place:
                check_size(plan, self.config, machine)
        except TransferRefused as exc:
            self._step(rec, life.HandOverFailed(reason=str(exc), ended_at=time.time()))
            return
        try:
            staging = ray.get(handle.staging_dir.remote(origin), timeout=CALL_TIMEOUT_S)
            for f in plan.files:
                self._send_file(handle, origin, f.source, f.rel)
            spec = staged_spec(rec.spec, plan, staging)
            _, device_key = split_qualified(rec.device or "")
            spec = spec.replace(
                device_prefs=handed_prefs(rec.spec.device_prefs, machine, device_key)
                if device_key
                else spec.device_prefs,
                machine=None,
                origin=origin,
                base_env=None,  # the submitter's shell environment stays here: the task's [env] goes
                after=(),  # met here before it was placed; the ids are ours, not the target's
                after_any=False,
            )
            remote = ray.get(
                handle.submit.remote(origin, spec.plain(), [f.rel for f in plan.files]),
                timeout=CALL_TIMEOUT_S,
            )
        except Exception as exc:
            refusal = _refusal(exc)
            if refusal is not None:  # the other machine's queue refused it (a program it lacks ...)
                failed = life.HandOverFailed(reason=f"{machine} refused it: {refusal}", ended_at=time.time())
                self._step(rec, failed)
            else:
                log.warning("sending task #%d to %s failed: %s", rec.id, machine, _short(exc))
            return
        log_path = self.paths.logs_dir / f"task-{rec.id}.log"
        self.paths.logs_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        self._step(
            rec,
            life.Handed(
                remote_id=remote.id,
                remote_state=remote.state,
                log_path=str(log_path),
                reason=f"on {machine} as #{remote.id}",
            ),
        )
        log.info("task #%d handed to %s as #%s", rec.id, machine, remote.id)

    def _send_file(self, handle: Any, origin: str, source: str, rel: str) -> None:
        ray = _ray()
        pending: list[Any] = []
        with open(source, "rb") as f:
            offset = 0
            while True:
                data = f.read(CHUNK_BYTES)
                if not data and offset:
                    break
                pending.append(handle.put_chunk.remote(origin, rel, offset, ray.put(data)))
                offset += len(data)
                if len(pending) >= IN_FLIGHT_CHUNKS:
                    done, pending = ray.wait(pending, num_returns=1, timeout=CALL_TIMEOUT_S)
                    ray.get(done)
                if not data:
                    break
        ray.get(pending, timeout=CALL_TIMEOUT_S)

    # following

    def _follow(self, rec: TaskRecord) -> None:
        machine = str(rec.machine)
        handle = self.handle_for(machine)
        if handle is None or rec.remote_id is None:
            return
        ray = _ray()
        log_path = Path(rec.log_path) if rec.log_path else self.paths.logs_dir / f"task-{rec.id}.log"
        try:
            local_size = log_path.stat().st_size
        except FileNotFoundError:
            local_size = 0
        offset = local_size - _header_growth(rec, log_path) if local_size else 0
        try:
            info = ray.get(handle.task.remote(rec.remote_id, offset), timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            log.info("task #%d on %s: no answer (%s)", rec.id, machine, _short(exc))
            return
        if not isinstance(info, TaskChunk):  # an agent of another gputray version (a dict, ISO times)
            self._note_other_version(machine, "its tasks come in another version's shape")
            return
        t = info.task
        data = info.log
        if offset == 0:
            data = _with_local_id(data, rec)
        if data:
            with open(log_path, "ab") as f:
                f.write(data)
        remote_state = t.state
        log_complete = offset + len(info.log) >= info.log_size
        remote_done = remote_state in FINISHED_STATES
        if rec.finished:  # cancelled (or failed) here while it still ran there
            key = (machine, rec.remote_id)
            if not remote_done and key not in self._cancel_sent:
                self._cancel_sent.add(key)
                with contextlib.suppress(Exception):
                    ray.get(handle.cancel.remote(rec.remote_id), timeout=CALL_TIMEOUT_S)
            if remote_done and log_complete:
                self._fetch(rec, handle)
                self._step(rec, life.RemoteMark(remote_state="fetched"))
            elif remote_state != rec.remote_state:
                self._step(rec, life.RemoteMark(remote_state=remote_state))
            return
        if remote_done and not log_complete:
            return  # the rest of the log first: `logs --follow` stops at the final state
        where = f"on {machine} (#{rec.remote_id})"
        reason = f"{where}: {t.reason}" if t.reason else where
        device = qualified(machine, t.device) if t.device else msgspec.UNSET
        run: life.RemoteRun
        if remote_state == "running":
            run = life.RemoteRun(
                into="running",
                remote_state=remote_state,
                started_at=t.started_at,
                device=device,
                reason=reason,
            )
        elif remote_done:
            self._fetch(rec, handle)
            run = life.RemoteRun(
                into=cast(life.RemoteState, remote_state),
                remote_state="fetched",
                exit_code=t.exit_code,
                ended_at=t.ended_at,
                energy_j=t.energy_j,  # measured there
                energy_shared=t.energy_shared,
                # a short job may end between two looks: it did start
                started_at=t.started_at if t.started_at is not None else msgspec.UNSET,
                device=device,
                reason=reason,
            )
        else:
            run = life.RemoteRun(into="waiting", remote_state=remote_state, device=device, reason=reason)
        if any(getattr(rec, k) != v for k, v in run.columns(rec).items()):
            self._step(rec, run)

    def _mark_silent(self, rows: list[TaskRecord]) -> None:
        """A task on a machine whose gputray (or agent) stopped answering says so in its row here: it
        is not known to run any more. Its queue there keeps it; it is followed again once that machine
        answers, or follows its retry policy once the machine has left the cluster (``_judge_lost``)."""
        for r in rows:
            if r.finished or r.machine in (None, self.local) or not self.head_ok():
                continue
            with self.lock:
                m = self.machines.get(str(r.machine))
                silent_since = m.left_at if m is not None else None
            if silent_since is None:
                continue
            since = time.strftime("%H:%M:%S", time.localtime(silent_since))
            reason = (
                f"on {r.machine} (#{r.remote_id}): {r.machine} has not answered since {since} (its gputray "
                "stopped?); its queue there keeps the task, followed again when it answers"
            )
            if r.reason != reason:
                self._step(r, life.Note(reason=reason))

    def _fetch(self, rec: TaskRecord, handle: Any) -> None:
        """Results and the log, beside the input here; never over an existing file."""
        ray = _ray()
        origin = self._origin(rec)
        plan = plan_inputs(rec.spec, self.config)
        base = Path(plan.base)
        notes = []
        if not plan.shared_in_place:
            for rel, size in ray.get(handle.outputs.remote(origin), timeout=CALL_TIMEOUT_S):
                (base / rel).parent.mkdir(parents=True, exist_ok=True)
                dest = Path(free_out_path(str(base / rel), set()))  # taken: created empty, exclusively
                part = dest.with_name(dest.name + ".gputray-part")
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
                with open(os.open(part, flags | getattr(os, "O_BINARY", 0), 0o666), "wb") as f:  # no link
                    offset = 0
                    while offset < size:
                        chunk = ray.get(
                            handle.read_chunk.remote(origin, rel, offset, CHUNK_BYTES), timeout=CALL_TIMEOUT_S
                        )
                        if not chunk:
                            break
                        f.write(chunk)
                        offset += len(chunk)
                os.replace(part, dest)
                notes.append(f"{rel} → {dest}")
        if rec.log_path and Path(rec.log_path).exists():
            first = rec.spec.script or (plan.files[0].source if plan.files else None)
            if first:  # beside the script or first input, named after it (`sub/x.py` → `sub/x.log`)
                beside = Path(os.path.abspath(Path(rec.spec.cwd or base) / first))
                dest_dir, stem = beside.parent, beside.stem
            else:  # no input: in the folder it was run from
                dest_dir, stem = base, f"task-{rec.id}"
            dest_log = Path(free_out_path(str(dest_dir / f"{stem}.log"), set()))
            with contextlib.suppress(OSError):
                dest_log.write_bytes(Path(rec.log_path).read_bytes())
                notes.append(f"log → {dest_log}")
        with contextlib.suppress(Exception):
            ray.get(handle.cleanup.remote(origin), timeout=CALL_TIMEOUT_S)
        if notes and rec.log_path:
            with open(rec.log_path, "a", encoding="utf-8") as f:
                f.write("".join(f"gputray: from {rec.machine}: {n}\n" for n in notes))

    # faults

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
            why = f"{machine} left the cluster while it ran" if running else f"{machine} left the cluster"
            if r.finished:
                self._step(r, life.RemoteMark(remote_state="lost"), expect=False)
                continue
            log.warning("task #%d: %s", r.id, why)
            self._step(r, life.LostThere(why=why, now=time.time()), expect=False)

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
                    _ray().get(handle.cancel.remote(t.id), timeout=CALL_TIMEOUT_S)

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

    # --- what `gputray status --cluster` and `cluster status` show ------------------------------------

    def report(self) -> ClusterReport:
        views = self.views()
        with self.lock:
            known = dict(self.machines)
        machines = []
        for name in [self.local, *sorted({*known, *views} - {self.local})]:
            m = known.get(name, _Machine())
            view = views.get(name)
            alive = view is not None
            machines.append(
                ReportedMachine(
                    name=name,
                    alive=alive,
                    local=name == self.local,
                    last_contact=time.time() if name == self.local else m.last_contact,
                    left_at=None if alive else m.left_at,
                    demo=view.demo if view else None,
                    ram_total_bytes=view.ram_total_bytes if view else None,
                    devices=()
                    if view is None
                    else tuple(
                        mark_paused(d, name, queue_paused=view.queue_paused, device_paused=d.paused)
                        for d in view.devices
                        if d.kind != "cpu"
                    ),
                )
            )
        state: ConnectionState = (
            "connected" if self.head_ok() else "head unreachable" if self.connected else "disconnected"
        )
        return ClusterReport(
            state=state,
            note=self.note if state != "head unreachable" else "the Ray head does not answer",
            address=self.config.address,
            ray_version=self.ray_version,
            auth="none" if self.config.insecure else "token",
            node_id=self.node_id,
            agent_pid=self.agent_pid,
            machine=self.local,
            machines=tuple(machines),
            at=time.time(),
        )

    def stop(self) -> None:
        self.stop_event.set()


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


def _nodes_of(
    nodes: Sequence[dict[str, Any]], machine: str, *, alive_only: bool = True
) -> list[dict[str, Any]]:
    """The Ray nodes that name ``machine`` (its custom resource or node label)."""
    resource = RESOURCE_PREFIX + machine
    return [
        n
        for n in nodes
        if (n.get("Alive") or not alive_only)
        and (resource in (n.get("Resources") or {}) or (n.get("Labels") or {}).get(LABEL_KEY) == machine)
    ]


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


def _header_prefixes(rec: TaskRecord) -> tuple[bytes, bytes]:
    """The log header's start as the other machine writes it, and as this machine's log shows it."""
    there = f"=== gputray task #{rec.remote_id} ".encode()
    here = f"=== gputray task #{rec.id} (#{rec.remote_id} on {rec.machine}) ".encode()
    return there, here


def _with_local_id(data: bytes, rec: TaskRecord) -> bytes:
    """The log's first bytes with this machine's task id in its header (the id the user typed here)."""
    there, here = _header_prefixes(rec)
    return here + data[len(there) :] if data.startswith(there) else data


def _header_growth(rec: TaskRecord, log_path: Path) -> int:
    """How many more bytes the local log has than the remote one (its header names the local id)."""
    there, here = _header_prefixes(rec)
    try:
        with open(log_path, "rb") as f:
            head = f.read(len(here))
    except OSError:
        return 0
    return len(here) - len(there) if head == here else 0


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


def _refusal(exc: BaseException) -> str | None:
    """The owner's refusal inside a Ray error (the agent re-raises the owner's RemoteError)."""
    cause = getattr(exc, "cause", None) or exc.__cause__
    for e in (cause, exc):
        if isinstance(e, ipc.RemoteError):
            return e.message
    text = str(exc)
    if "RemoteError" in text:
        return text.rsplit("RemoteError:", 1)[-1].strip().splitlines()[0]
    return None


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- probe: what `gputray cluster join` checks --------------------------------------------------------


def _probe_env(address: str, *, with_token: bool) -> None:
    """Before Ray is imported (it reads its auth mode once)."""
    os.environ["RAY_AUTH_MODE"] = "token" if with_token else "disabled"
    if not with_token:
        for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
            os.environ.pop(name, None)
    if is_loopback(address):
        os.environ[LOOPBACK_ENV] = "0"


class ProbeResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What ``probe`` found of a cluster (``ok``: reached), as its child prints it on one JSON line."""

    ok: bool
    no_ray: bool = False  # Ray is not installed here
    auth_refused: bool = False  # the cluster refused this machine's token (or its lack)
    error: str | None = None
    ray_version: str | None = None  # the cluster's
    client_ray_version: str | None = None  # this machine's
    nodes: int | None = None  # alive


def probe(address: str, *, with_token: bool) -> ProbeResult:
    """Reach the cluster's GCS with (or without) a token; the cluster's Ray version and node count."""
    _probe_env(address, with_token=with_token)
    ray = _ray()
    if address == "auto":  # the cluster this machine's `ray start` joined
        services = importlib.import_module("ray._private.services")
        try:
            address = services.canonicalize_bootstrap_address_or_die("auto")
        except Exception as exc:
            return ProbeResult(ok=False, error=_short(exc))
    get_cluster_metadata = importlib.import_module("ray._common.usage.usage_lib").get_cluster_metadata
    GcsClient = importlib.import_module("ray._raylet").GcsClient

    try:
        client = GcsClient(address=address)
        meta = get_cluster_metadata(client)
        nodes = client.get_all_node_info(timeout=10)
    except Exception as exc:
        auth = "AuthenticationError" in type(exc).__name__ or "InvalidAuthToken" in str(exc)
        return ProbeResult(ok=False, auth_refused=auth, error=_short(exc))
    alive = sum(1 for n in nodes.values() if getattr(n, "state", 0) == 0)
    version = meta.get("ray_version")
    return ProbeResult(
        ok=True,
        ray_version=None if version is None else str(version),
        client_ray_version=ray.__version__,
        nodes=alive,
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputray.cluster.bridge")
    p.add_argument("--config-dir", type=Path)
    p.add_argument("--data-dir", type=Path)
    p.add_argument("--state-dir", type=Path)
    p.add_argument("--runtime-dir", type=Path)
    p.add_argument("--owner-pid", type=int)
    p.add_argument("--probe", metavar="ADDRESS")
    p.add_argument("--with-token", action="store_true")
    args = p.parse_args(argv)
    if args.probe:
        _probe_env(args.probe, with_token=args.with_token)
        try:
            importlib.import_module("ray")
        except ImportError:
            print(msgspec.json.encode(ProbeResult(ok=False, no_ray=True)).decode())
            return EXIT_NO_RAY
        print(msgspec.json.encode(probe(args.probe, with_token=args.with_token)).decode(), flush=True)
        return 0
    from gputray.scheduler.log_setup import setup_logging
    from gputray.scheduler.paths import app_paths

    default = app_paths()
    paths = Paths(
        args.config_dir or default.config_dir,
        args.data_dir or default.data_dir,
        args.state_dir or default.state_dir,
        args.runtime_dir or default.runtime_dir,
    )
    setup_logging(paths.state_dir / "bridge.log", level="INFO")
    try:
        config = load_cluster_config(paths.config_file)
    except ClusterConfigError as exc:
        log.error("%s", exc)
        return 2
    if not config.enabled:
        log.info("no [cluster] address in the config: nothing to do")
        return 0
    _prepare_env(config)
    try:
        importlib.import_module("ray")
    except ImportError:
        log.error("Ray is not installed: pip install 'gputray[cluster]'")
        return EXIT_NO_RAY
    key = os.environ.pop(BRIDGE_KEY_ENV, "")  # not handed on to Ray's processes
    bridge = Bridge(paths, config, args.owner_pid, key=key)

    def on_signal(signum: int, frame: object) -> None:
        bridge.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return bridge.run()


def run_probe(address: str, *, with_token: bool, timeout_s: float = 25.0) -> ProbeResult:
    """``probe`` in a child process (Ray's settings are per process), with a deadline."""
    cmd = [sys.executable, "-m", "gputray.cluster.bridge", "--probe", address]
    if with_token:
        cmd.append("--with-token")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return ProbeResult(ok=False, error=f"no answer within {timeout_s:.0f} s")
    for line in reversed(done.stdout.splitlines()):
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            return msgspec.json.decode(line, type=ProbeResult)
    return ProbeResult(
        ok=False,
        error=(done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1],
    )


if __name__ == "__main__":
    raise SystemExit(main())
