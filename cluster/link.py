"""The owner's side of the cluster, inside the tray or ``gputray daemon``: no Ray here.

* Reads ``[cluster]`` from the config (again whenever the file changes: ``cluster join`` and
  ``cluster leave`` take effect within a couple of seconds) and runs the **bridge** process beside the
  owner while it names a cluster (restarted with a backoff when it exits: a Ray failure never reaches
  the queue).
* Tells the queue which pending tasks are not its own to start (``runs_here``): those bound for
  another machine, and ``machine = "any"`` ones while a bridge places them. With no bridge talking to
  us, "any machine" is this machine.
* Answers the bridge (``cluster_sync``: the tasks that concern the cluster, long-polled;
  ``cluster_update``: what became of one) and this machine's agent (``cluster_submit``: a task another
  machine hands us, once per origin however often it is sent).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from gputray.cluster.config import (
    WINDOWS_NOTE,
    ClusterConfig,
    ClusterConfigError,
    is_windows,
    load_cluster_config,
)
from gputray.cluster.pause_marks import with_local_pause
from gputray.cluster.submit_checks import ClusterView, check_machine_task, view_from_report
from gputray.cluster.wire import sendable
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.connection import Paths
from gputray.scheduler.client.replies import ClusterSynced, ClusterTask, Paused
from gputray.scheduler.cluster_port import QueuePort
from gputray.scheduler.cluster_port.reasons import Named, Said
from gputray.scheduler.cluster_port.records import (
    PENDING_STATES,
    BridgeState,
    ClusterReport,
    ClusterStatus,
    EventKind,
    QueueEvent,
    TaskPatch,
    TaskRecord,
    TaskSpec,
)
from gputray.scheduler.cluster_port.shared import check_submit, gate
from gputray.scheduler.cluster_port.steps import (
    Handed,
    IllegalTransition,
    LostThere,
    RemoteMark,
    RemoteRun,
    TakeBack,
)

log = logging.getLogger("gputray.cluster")

BRIDGE_ALIVE_S = 5.0  # a bridge that has not synced for this long is not placing anything
MAX_WAIT_MS = 2000  # a sync long-poll waits at most this long (owner.stop waits for requests)
EXIT_NO_RAY = 3  # the bridge's exit status when Ray is not installed
EXIT_RECONNECT = 4  # ... when it lost the Ray head and wants a fresh start
BRIDGE_KEY_ENV = "GPUTRAY_BRIDGE_KEY"  # the owner's secret for the bridge it starts (cluster-only ops)
TERMINAL_REMOTE = frozenset({"fetched", "lost"})
# Steps about a run on another machine: refused for a task this machine runs.
_ELSEWHERE_STEPS = (Handed, RemoteRun, RemoteMark, LostThere, TakeBack)
_EVENT_FOR_STATE: dict[str, EventKind] = {
    "running": "started",
    "succeeded": "finished",
    "failed": "failed",
    "cancelled": "cancelled",
    "waiting": "waiting",
    "queued": "queued",
}


class ClusterRequestError(rq.Refusal, ValueError):
    """A cluster request the owner understood but cannot do (a field it may not change, no queue yet)."""


class _NotElsewhere(ClusterRequestError):
    """A step about a run on another machine, for a task this machine runs (a race lost, when the
    bridge expected a state)."""


class ClusterLink:
    def __init__(
        self,
        paths: Paths,
        *,
        clock: Callable[[], float] = time.time,
        emit: Callable[[QueueEvent], None] | None = None,
        python: str = sys.executable,
    ) -> None:
        self.paths = paths
        self.clock = clock
        self.emit = emit
        self.python = python
        self.queue: QueuePort | None = None  # this machine's queue, once the owner attached it
        #: The secret the bridge this owner starts is given (``BRIDGE_KEY_ENV``); cluster-only ops carry it.
        self.bridge_key = secrets.token_hex(32)
        self._config = ClusterConfig()
        self._config_stamp: tuple[int, int] | None = None
        self._config_error: str | None = None
        self._changed = threading.Condition()
        self._edited: dict[int, int] = {}  # task id → its id there, edited while it waited there
        self._dirty = True
        self._last_sync_mono = -1e9
        self._report: ClusterReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._proc_config: ClusterConfig | None = None
        self._next_start_mono = 0.0
        self._failures = 0
        self.bridge_note = ""  # why no bridge runs, for `cluster status`
        self.reload()

    # --- life -------------------------------------------------------------------------------------

    def attach(self, queue: QueuePort) -> None:
        self.queue = queue

    def _queue(self) -> QueuePort:
        if self.queue is None:
            raise ClusterRequestError("the queue is not started")
        return self.queue

    def start(self) -> None:
        self._thread = threading.Thread(target=self._supervise, name="gputray-cluster", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=20)
        self._stop_bridge()

    # --- config -----------------------------------------------------------------------------------

    @property
    def config(self) -> ClusterConfig:
        return self._config

    def reload(self) -> bool:
        """Re-read ``[cluster]`` when the config file changed; True when it did."""
        path = self.paths.config_file
        try:
            st = path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp == self._config_stamp:
            return False
        self._config_stamp = stamp
        try:
            self._config = load_cluster_config(path)
            self._config_error = None
        except (ClusterConfigError, Exception) as exc:  # a bad file must not stop the owner
            self._config_error = str(exc)
            log.error("cluster config: %s (not joining any cluster)", exc)
            self._config = ClusterConfig()
        return True

    @property
    def local_machine(self) -> str:
        return self._config.machine

    def bridge_active(self) -> bool:
        return time.monotonic() - self._last_sync_mono < BRIDGE_ALIVE_S

    # --- the queue's questions ---------------------------------------------------------------------

    def runs_here(self, rec: TaskRecord) -> bool:
        wanted = rec.spec.machine
        if wanted is None:
            return True
        if rec.remote_id is not None:
            return False
        if rec.machine is not None:
            return rec.machine == self.local_machine
        if wanted == self.local_machine:
            return True
        if wanted == "any":
            return not (self._config.enabled and self.bridge_active())
        return False

    def check_spec(self, spec: TaskSpec) -> None:
        """Submit-time checks (instead of ``check_runnable``): a task for another machine must be
        sendable there (a cluster, inputs within ``max_transfer``); its program need not exist here."""
        from gputray.cluster.staging import check_size, plan_inputs
        from gputray.scheduler.cluster_port.shared import SubmitError, check_runnable

        wanted = spec.machine
        if wanted is None or wanted == self.local_machine or (wanted == "any" and not self._config.enabled):
            check_runnable(spec)
            self._check_devices(spec)
            return
        if not self._config.enabled:
            raise SubmitError(
                f"{spec.name}: --machine {wanted}: this gputray is in no cluster; join one with "
                "`gputray cluster join HEAD:6379` (docs/cluster.md), or leave --machine out"
            )
        if is_windows():
            raise SubmitError(f"{spec.name}: --machine {wanted}: {WINDOWS_NOTE}")
        if wanted == "any":
            check_runnable(spec)  # it may well run here
        else:
            check_runnable(_without_program(spec))
        self._check_devices(spec)
        plan = plan_inputs(spec, self._config)
        if wanted != "any" and not plan.shared_in_place:
            check_size(plan, self._config, wanted)

    def _check_devices(self, spec: TaskSpec) -> None:
        """Device names and ``--vram`` of a task with a machine: against that machine's devices (this
        machine's own for itself, and for ``any`` outside a cluster or where no other machine is known)."""
        if spec.machine is None or self.queue is None:
            return
        local_devices = self.queue.devices_for_checks()
        cluster = self.cluster_view()
        alone = not self._config.enabled or bool(cluster.known and cluster.known <= {self.local_machine})
        if spec.machine == self.local_machine or (spec.machine == "any" and alone):
            if local_devices is not None:
                check_submit(spec, *local_devices)
            return
        check_machine_task(spec, local=self.local_machine, local_devices=local_devices, cluster=cluster)

    def cluster_view(self) -> ClusterView:
        """The machines and devices the bridge last reported; nothing while no bridge is connected."""
        report = self._report
        if not (self._config.enabled and self.bridge_active() and report is not None):
            return ClusterView({}, frozenset())
        if report.state != "connected":
            return ClusterView({}, frozenset())
        return view_from_report(report)

    def on_event(self, event: QueueEvent) -> None:
        if event.task.spec.machine is not None or event.task.spec.origin is not None:
            self._wake()

    def on_edited(self, rec: TaskRecord) -> None:
        if rec.remote_id is not None:
            with self._changed:
                self._edited[rec.id] = rec.remote_id
        self._wake()

    def _edits_to_take_back(self) -> tuple[int, ...]:
        """The edited tasks that still wait on the machine they were handed to, as handed (the bridge
        takes them back, or finds they started there first: either way the row moves on)."""
        with self._changed:
            for task_id, remote_id in list(self._edited.items()):
                rec = self.queue.find(task_id) if self.queue is not None else None  # None: removed
                if rec is None or rec.remote_id != remote_id or rec.state not in PENDING_STATES:
                    del self._edited[task_id]
            return tuple(self._edited)

    def on_paused(self) -> None:
        self._wake()  # the bridge's long-poll answers now; its reply carries the pause (``sync``)

    def _paused(self) -> Paused:
        return self.queue.paused() if self.queue is not None else Paused()

    def _wake(self) -> None:
        with self._changed:
            self._dirty = True
            self._changed.notify_all()

    # --- ops ---------------------------------------------------------------------------------------

    def sync(self, req: rq.ClusterSync) -> ClusterSynced:
        self._check_bridge(req.bridge_key, "cluster_sync")
        self._last_sync_mono = time.monotonic()
        self.bridge_note = ""
        if req.report is not None:
            self._report = msgspec.structs.replace(req.report, received_at=self.clock())
        wait_s = max(0, min(MAX_WAIT_MS, req.wait_ms or 0)) / 1000
        with self._changed:
            if wait_s and not self._dirty:
                self._changed.wait(wait_s)
            self._dirty = False
        self._last_sync_mono = time.monotonic()
        if self.queue is None:  # not attached yet: no task is the cluster's
            tasks: tuple[TaskRecord, ...] = ()
        else:
            rows = self.queue.rows()
            tasks = tuple(sendable(r) for r in self.queue.tasks() if self._concerns(r, rows))
        return ClusterSynced(
            machine=self.local_machine,
            tasks=tasks,
            stopping=self._stop.is_set(),
            paused=self._paused(),
            edited=self._edits_to_take_back(),
        )

    def _concerns(self, rec: TaskRecord, rows: Mapping[int, TaskRecord]) -> bool:
        if rec.spec.machine is None:
            return False
        if rec.machine is None and rec.state in PENDING_STATES and gate(rec, rows) is not None:
            return False  # its dependencies hold it (the local queue says why): not to be placed yet
        if (
            rec.spec.machine == "any"
            and rec.machine == self.local_machine
            and rec.remote_id is None
            and rec.state in PENDING_STATES
        ):
            return True  # placed here but not started yet: the bridge places it again if it stays so
        if rec.remote_id is None and (rec.machine or rec.spec.machine) == self.local_machine:
            return False  # placed here, or asked for here: the local queue has it
        if rec.finished or rec.state == "interrupted":
            return rec.machine not in (None, self.local_machine) and rec.remote_state not in TERMINAL_REMOTE
        return True

    def _check_bridge(self, key: str, op: str) -> None:
        """Cluster-only ops come from the bridge this owner started, while a cluster is configured:
        never from a plain client (a requeue or an end written by hand would run a job twice)."""
        if not self._config.enabled:
            raise ClusterRequestError(
                f"{op} refused: this gputray is in no cluster ([cluster] address is not set); "
                "only a cluster bridge sends it"
            )
        if not hmac.compare_digest(key.encode(), self.bridge_key.encode()):
            raise ClusterRequestError(
                f"{op} refused: only the cluster bridge this owner started may send it (a plain client "
                "cannot move a task: use cancel, retry or edit)"
            )

    def update(self, req: rq.ClusterUpdate) -> ClusterTask:
        """One lifecycle step of a task the cluster places or another machine runs, from the bridge."""
        self._check_bridge(req.bridge_key, "cluster_update")
        task_id = int(req.id)
        step = req.step

        def check(before: TaskRecord) -> None:
            if before.spec.machine is None:
                raise ClusterRequestError(
                    f"cluster_update refused: task #{task_id} is this machine's own (no --machine); "
                    "the cluster does not move it"
                )
            if isinstance(step, _ELSEWHERE_STEPS) and before.machine in (None, self.local_machine):
                raise _NotElsewhere(
                    f"cluster_update refused: task #{task_id} is not on another machine "
                    f"({type(step).__name__} is for a task another machine runs)"
                )

        queue = self._queue()
        try:
            before, new = queue.record(
                task_id, step, expect_state=req.expect_state, check=check, here=self.local_machine
            )
        except _NotElsewhere:
            if req.expect_state is None:
                raise
            new = None  # placed afresh meanwhile (a retry here): a race lost
        except IllegalTransition as exc:
            raise ClusterRequestError(f"cluster_update refused: {exc}") from None
        if new is None:
            self._wake()
            return ClusterTask(task=None, now=sendable(queue.task(task_id)))
        if new.state != before.state and self.emit is not None:
            kind = _EVENT_FOR_STATE.get(new.state)
            if kind is not None:
                why = new.reason if new.reason is not None else Said(text=new.state)
                self.emit(QueueEvent(kind, new, Named(name=new.name, why=why, machine=new.machine)))
        self._wake()
        return ClusterTask(task=sendable(new))

    def submit(self, req: rq.ClusterSubmit) -> ClusterTask:
        from gputray.scheduler.cluster_port.shared import FromMachine, spec_from_patch

        origin = req.origin
        # ``after`` names the sender's task ids (met there before it was sent), never ours
        here = TaskPatch(origin=origin, machine=None, base_env=None, after=(), after_any=False)
        spec = spec_from_patch(here, base=req.spec, source=FromMachine(machine=origin.partition("#")[0]))
        rec, existing = self._queue().hand_over(origin, spec)
        return ClusterTask(task=sendable(rec), existing=existing)

    def withdraw(self, req: rq.ClusterWithdraw) -> ClusterTask:
        """The machine that handed us ``req.origin`` takes it back: cancelled here with ``req.reason`` if
        it has not started, else left as it is. Under the queue's lock, which a dispatch pass holds from
        choosing a task to recording its start, so the two never both win."""
        queue = self._queue()
        task_id = int(req.id)
        new = queue.take_back(task_id, req.origin, req.reason, now=self.clock())
        if new is None:  # started (or ended, or not that copy)
            return ClusterTask(task=None, now=sendable(queue.task(task_id)))
        if self.emit is not None:
            self.emit(QueueEvent("cancelled", new, Named(name=new.name, why=req.reason)))
        return ClusterTask(task=sendable(new))

    def report_doc(self) -> ClusterStatus:
        cfg = self._config
        proc = self._proc
        running = proc is not None and proc.poll() is None
        return ClusterStatus(
            configured=cfg.enabled,
            address=cfg.address,
            machine=cfg.machine,
            insecure=cfg.insecure,
            config_error=self._config_error,
            bridge=BridgeState(
                running=running,
                pid=proc.pid if proc is not None and running else None,
                active=self.bridge_active(),
                note=self.bridge_note,
            ),
            # this machine's own pause as it is now, over the bridge's copy (which may be a second old)
            report=with_local_pause(self._report, cfg.machine, self._paused()),
        )

    # --- the bridge process -------------------------------------------------------------------------

    def _supervise(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._supervise_once()
            except Exception:
                log.exception("cluster supervisor")

    def _supervise_once(self) -> None:
        if self.reload():
            self._wake()
        cfg = self._config
        proc = self._proc
        if proc is not None and proc.poll() is not None:
            code = proc.returncode
            self._proc = None
            self._failures += 1
            if code == EXIT_RECONNECT:
                self._failures = 0
                self.bridge_note = "reconnecting to the Ray head"
                delay = 1.0
            elif code == EXIT_NO_RAY:
                self.bridge_note = "Ray is not installed here: pip install 'gputray[cluster]'"
                delay = 60.0
            else:
                self.bridge_note = f"the bridge exited with status {code}; see {self._stderr_path()}"
                delay = min(30.0, 2.0 ** min(self._failures, 5))
            log.warning("cluster bridge exited (%s); next start in %.0f s", code, delay)
            self._next_start_mono = time.monotonic() + delay
        if proc is not None and self._proc is not None and cfg != self._proc_config:
            log.info("[cluster] changed: restarting the bridge")
            self._stop_bridge()
            self._next_start_mono = 0.0
        if not cfg.enabled:
            if self._proc is not None:
                self._stop_bridge()
            self.bridge_note = "" if not self._config_error else self._config_error
            return
        if self._proc is None and time.monotonic() >= self._next_start_mono:
            self._start_bridge(cfg)

    def _stderr_path(self) -> Path:
        return self.paths.state_dir / "bridge-stderr.log"

    def _start_bridge(self, cfg: ClusterConfig) -> None:
        if is_windows() and not is_loopback(cfg.address or ""):
            self.bridge_note = WINDOWS_NOTE
            self._next_start_mono = time.monotonic() + 3600
            return
        p = self.paths
        cmd = [
            self.python,
            "-m",
            "gputray.cluster.bridge",
            "--config-dir",
            str(p.config_dir),
            "--data-dir",
            str(p.data_dir),
            "--state-dir",
            str(p.state_dir),
            "--runtime-dir",
            str(p.runtime_dir),
            "--owner-pid",
            str(os.getpid()),
        ]
        self.paths.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self._stderr_path(), "wb") as err:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                start_new_session=True,
                env={**os.environ, BRIDGE_KEY_ENV: self.bridge_key},  # not argv: `ps` shows argv
            )
        self._proc_config = cfg
        self.bridge_note = "starting"
        log.info("cluster bridge started (pid %d) for %s as %s", self._proc.pid, cfg.address, cfg.machine)

    def _stop_bridge(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, 9) if hasattr(os, "killpg") else proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def _without_program(spec: TaskSpec) -> TaskSpec:
    """The spec minus its program, for checking only the files: the program runs on another machine."""

    if spec.kind == "torch" or not spec.argv:
        return spec
    return spec.replace(argv=(sys.executable, *spec.argv[1:]), base_env=None)


def is_loopback(address: str) -> bool:
    host = address.rpartition(":")[0] or address
    return host in ("127.0.0.1", "localhost", "::1", "[::1]")
