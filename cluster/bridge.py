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
a cluster (reachable, token authentication on, Ray version) without joining it (``bridge_probe``).

This module is the process: its Ray side (its own thread), its loop over the owner's socket and
``main``; what it does with the tasks lives in its rooms (``bridge_base``, ``bridge_placing``,
``bridge_transfers``, ``bridge_faults``). Every change to a task's row is one lifecycle step sent to
the owner with the secret the owner started it with (``bridge_base.BridgeBase._step``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from gputray.cluster import bridge_base
from gputray.cluster.agent import Agent
from gputray.cluster.bridge_base import (
    AGENT_PREFIX,
    CALL_TIMEOUT_S,
    NAMESPACE,
    OWNER_GONE_S,
    RECONNECT_AFTER_S,
    VIEW_INTERVAL_S,
    _Machine,
    _short,
    log,
)
from gputray.cluster.bridge_faults import Faults
from gputray.cluster.bridge_placing import Placing, _placed_here_unstarted
from gputray.cluster.bridge_probe import ProbeResult, _probe_env, probe
from gputray.cluster.bridge_transfers import Transfers
from gputray.cluster.config import (
    LABEL_KEY,
    LOOPBACK_ENV,
    RESOURCE_PREFIX,
    ClusterConfig,
    ClusterConfigError,
    load_cluster_config,
)
from gputray.cluster.link import BRIDGE_KEY_ENV, EXIT_NO_RAY, EXIT_RECONNECT, is_loopback
from gputray.cluster.pause_marks import mark_paused
from gputray.cluster.wire import MachineView, OtherVersion
from gputray.scheduler.client import connection as ipc
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.connection import Paths
from gputray.scheduler.cluster_port import steps
from gputray.scheduler.cluster_port.records import (
    PENDING_STATES,
    ClusterReport,
    ConnectionState,
    ReportedMachine,
    TaskRecord,
)


def _prepare_env(config: ClusterConfig) -> None:
    """Before Ray is imported: token authentication on (unless ``insecure``); a loopback address keeps
    Ray's own address on loopback too (it would otherwise swap 127.0.0.1 for the machine's address)."""
    if not config.insecure:
        os.environ["RAY_AUTH_MODE"] = "token"
    if is_loopback(config.address or ""):
        os.environ[LOOPBACK_ENV] = "0"


class Bridge(Placing, Transfers, Faults):
    """The bridge: its Ray side (own thread) and its owner side (main thread) over the rooms."""

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
        ray = bridge_base.ray()
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
            bridge_base.ray().shutdown()

    def _refresh(self) -> None:
        ray = bridge_base.ray()
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
            bridge_base.ray().shutdown()
        return self.exit_code

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
                self._step(r, steps.RemoteMark(remote_state="lost"), expect=False)
        for r in handed:
            self._follow(r)
        self._mark_silent(handed)
        self._judge_lost([*sending, *handed])
        self._cancel_orphans(rows)
        return bool(sending or handed or to_place)  # sync again soon: logs stream, waits end

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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    from gputray.scheduler.client.connection import app_paths
    from gputray.scheduler.client.log_setup import setup_logging

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


if __name__ == "__main__":
    raise SystemExit(main())
