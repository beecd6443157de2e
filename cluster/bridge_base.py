"""The bridge's shared room: its state (``BridgeBase``: the machines seen, the Ray handles, the
owner's client), the constants every room uses, and how a room writes a task's row (``_step``: one
lifecycle step through the owner's ``cluster_update``, with the owner's key).

The bridge is split by what each room does (``gputray.cluster.bridge`` assembles them):
``bridge_placing`` (where a task goes, taking one back), ``bridge_transfers`` (sending a task and its
inputs, following its state and log, fetching its results), ``bridge_faults`` (machines that left,
copies given up, this machine cut off) and ``bridge_probe`` (what ``gputray cluster join`` checks).
Ray is reached only through ``ray()`` (a test hands a stand-in there).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import logging
import os
import threading
import time
from typing import Any

from gputray.cluster.config import (
    ClusterConfig,
)
from gputray.cluster.view import local_view
from gputray.cluster.wire import MachineView
from gputray.scheduler.client import connection as ipc
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.connection import Paths
from gputray.scheduler.client.replies import Paused
from gputray.scheduler.client.requests import R
from gputray.scheduler.cluster_port.records import TaskRecord
from gputray.scheduler.cluster_port.steps import ClusterStep

log = logging.getLogger("gputray.cluster.bridge")

NAMESPACE = "gputray"
AGENT_PREFIX = "agent:"
VIEW_INTERVAL_S = 0.5
CALL_TIMEOUT_S = 30.0
IN_FLIGHT_CHUNKS = 4
OWNER_GONE_S = 10.0
GCS_STALE_S = 3.0  # no answer from the head for this long: judge nobody, place on this machine only
RECONNECT_AFTER_S = 10.0  # ... for this long: start afresh (Ray does not reconnect a driver in-process)


def ray() -> Any:
    """Ray, imported on first use (only the bridge process imports it)."""
    return importlib.import_module("ray")


@dataclasses.dataclass
class _Machine:
    last_contact: float | None = None  # epoch s of the last view
    left_at: float | None = None
    view: MachineView | None = None
    handle: Any = None
    has_node: bool = False  # some Ray node was seen naming this machine (resource or label)
    node_gone_since: float | None = None  # monotonic s since no live node names it


class BridgeBase:
    """What every room of the bridge shares; see the module docstring."""

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

    def _origin(self, rec: TaskRecord) -> str:
        return f"{self.local}#{rec.id}.{rec.attempts}"

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

    def _send(self, rec: TaskRecord) -> None:
        """Hand ``rec`` to the machine it was placed on (``bridge_transfers.Transfers``)."""
        raise NotImplementedError


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
