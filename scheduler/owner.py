"""The one process that owns the queue: monitor + task store + queue service + timing + the IPC server.

``gputray daemon`` runs an Owner headless; the tray app creates one in-process. Everything else (the
CLI, a second tray launch, "Send To") talks to it through ``gputray.scheduler.ipc``.

Start order matters: the IPC socket is claimed first, so a second owner is refused before it opens
the store (opening it would run crash recovery and mark the first owner's running tasks as
interrupted). Requests that arrive while the rest starts wait for it (``_ready``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from gputray.monitor.monitor import Monitor
from gputray.monitor.residents import ResidentView
from gputray.scheduler import ipc, lazy_import
from gputray.scheduler import protocol as rq
from gputray.scheduler import replies as rp
from gputray.scheduler.config import Config, log_problems, read_config_or_defaults
from gputray.scheduler.ipc.server import IpcServer
from gputray.scheduler.owner_tasks import (
    OwnerRequestError,
    OwnerStopping,
    TaskRequests,
    caller_path,
    task_id_of,
    waited_reply,
)
from gputray.scheduler.owner_timers import ExclusiveApps, MakeRoom, Preemption, add_room_timers
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.device_names import devices_named
from gputray.scheduler.queue.job_pause import JobPauser
from gputray.scheduler.queue.lock import QueueLock
from gputray.scheduler.queue.timing import Schedule, Timing
from gputray.scheduler.queue.wait_book import Later
from gputray.scheduler.reasons.refusals import OwnerGoing, OwnerStarting
from gputray.scheduler.reasons.render import render_for
from gputray.scheduler.tasks.records import QueueEvent, TaskPatch
from gputray.scheduler.tasks.taskfile import load_task_file, spec_from_patch

if TYPE_CHECKING:
    from gputray.scheduler.cluster_port import ClusterLinkFactory, ClusterPort
    from gputray.scheduler.ipc.quick_host import QuickServer
    from gputray.scheduler.metrics.endpoint import MetricsEndpoint
    from gputray.scheduler.pyenvs.choice import EnvResolver
    from gputray.scheduler.queue.retention import Retention
    from gputray.scheduler.queue.service import QueueService
    from gputray.scheduler.queue.store import TaskStore

log = logging.getLogger("gputray.owner")
lazy_import.load_all()  # requests are decoded in several threads: see lazy_import.load_all


_R = TypeVar("_R", bound=rp.Reply)

QUEUE_LOCK_WAIT_S = 30.0  # a client command acting on the saved queue holds its lock a few seconds at most
IN_FLIGHT_GRACE_S = 15.0  # how long stop() lets requests being answered finish (a cancel waits up to 10 s)


class Owner(TaskRequests):
    def __init__(
        self,
        paths: Paths,
        *,
        demo: bool = False,
        scenario: Path | None = None,
        sysfs_root: Path = Path("/sys"),
        proc_root: Path = Path("/proc"),
        monitor: Monitor | None = None,
        clock: Callable[[], float] = time.time,
        env_resolver: EnvResolver | None = None,
        on_event: Callable[[QueueEvent], None] | None = None,
        serve_ipc: bool = True,
        config: Config | None = None,
        cluster: ClusterLinkFactory | None = None,
        quick_server: Sequence[str] | None = None,
    ) -> None:
        """``cluster`` (``cluster.link.ClusterLink``, handed from above: the scheduler never imports the
        cluster) makes the link to the other machines once the store is open; None: no cluster.
        ``quick_server``: how to start the warm command server beside the socket (``ipc.quick_host``,
        handed from above: ``gui.entry.quick_server_argv()``); None: commands run in their own process."""
        self.paths = paths
        self._config = config  # None: read at start (the tray passes the one it read)
        self.demo = demo
        self.scenario = scenario
        self.sysfs_root = sysfs_root
        self.proc_root = proc_root
        self.clock = clock
        self.env_resolver = env_resolver
        self._on_event = on_event
        self._serve_ipc = serve_ipc
        self._monitor: Monitor | None = monitor
        self._own_monitor = monitor is None
        self._queue: QueueService | None = None
        self._store: TaskStore | None = None
        self._queue_lock = QueueLock(paths.queue_db)
        self.timing: Timing | None = None
        self.retention: Retention | None = None
        self.metrics: MetricsEndpoint | None = None  # [metrics] listen: the Prometheus endpoint
        self._pauses: JobPauser | None = None
        self.preemption: Preemption | None = None
        self.make_room: MakeRoom | None = (
            None  # frees idle residents (LLM servers, ComfyUI) for waiting tasks
        )
        self.exclusive: ExclusiveApps | None = None  # [exclusive] apps: our jobs paused while a game plays
        self.server: IpcServer | None = None
        self._quick_argv = quick_server
        self.quick: QuickServer | None = None
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._in_flight = 0  # requests being answered; stop() lets them finish before closing the store
        self._in_flight_changed = threading.Condition()
        self.shutdown_requested = threading.Event()
        self.shutdown_jobs: str = "stop"  # what a `shutdown` request asked for the running jobs: keep or stop
        self.started_at: float | None = None
        self._cluster_factory = cluster
        self.cluster: ClusterPort | None = None  # the bridge to the other machines of a cluster
        # Set by the tray app: files opened with gputray go through its drop confirm instead of
        # straight into the queue. Called from the IPC thread with absolute paths; must not block.
        self.files_opener: Callable[[list[str]], None] | None = None
        self._handlers: dict[type[rq.Request[Any]], Callable[[Any], rp.Reply]] = {
            t: getattr(self, f"_op_{op}") for op, t in rq.REQUEST_TYPES.items()
        }

    # --- public ----------------------------------------------------------------------------------

    @property
    def queue(self) -> QueueService:
        if self._queue is None:
            raise RuntimeError("the owner is not started")
        return self._queue

    @property
    def pauses(self) -> JobPauser:
        """Pauses and resumes running jobs (``queue.job_pause``)."""
        if self._pauses is None:
            self._pauses = JobPauser(self.queue)
        return self._pauses

    @property
    def monitor(self) -> Monitor:
        if self._monitor is None:
            raise RuntimeError("the owner is not started")
        return self._monitor

    def start(self) -> None:
        """Claim the socket, then start monitor, queue and timing. Raises ipc.OwnerAlreadyRunning."""
        from gputray.monitor.factory import build_monitor
        from gputray.scheduler.paths import prepare_private_folders
        from gputray.scheduler.queue.service import QueueService
        from gputray.scheduler.queue.store import TaskStore

        # 0700 folders, 0600 files (task rows hold the submitter's environment); FolderError if impossible
        for note in prepare_private_folders(self.paths):
            log.warning("%s", note)
        if self._serve_ipc:
            # requests already decoded and checked; a `wait` parked until it is answered
            self.server = IpcServer(self.paths, self._answer, deferrer=self._defer)
            self.server.start()
        try:
            self._start_quick_server()
            config = self._config or read_config_or_defaults(self.paths.config_file)
            log_problems(config)  # the daemon's log, or the tray's: a bad value never stops the owner
            if self._monitor is None:
                self._monitor = build_monitor(
                    demo=self.demo,
                    scenario=self.scenario,
                    sysfs_root=self.sysfs_root,
                    proc_root=self.proc_root,
                    thresholds=config.thresholds,
                    interval_s=config.monitor.interval_s,
                    history_s=config.monitor.history_s,
                )
            self._monitor.start()
            self._take_queue_lock()
            self._store = TaskStore(self.paths.queue_db, clock=self.clock)
            if self._cluster_factory is not None:
                # Ray-free: reads [cluster] from the config, runs the bridge process when it names a cluster.
                self.cluster = self._cluster_factory(self.paths, clock=self.clock, emit=self._event)
            from gputray.scheduler.pyenvs.choice import ResolverChooser
            from gputray.scheduler.pyenvs.doctor_cache import DoctorNeeds

            self._queue = QueueService(
                self._store,
                self._monitor,
                paths=self.paths,
                clock=self.clock,
                # None: the doctor's cache, checking envs in the background. Either way, `needs` (fp16 …)
                # avoid devices where the doctor saw them fail.
                env_chooser=(
                    ResolverChooser(self.env_resolver, failed_needs=DoctorNeeds())
                    if self.env_resolver is not None
                    else None
                ),
                on_event=self._event,
                slots=dict(config.device_slots),
                log_max_bytes=config.logs.max_bytes,
                cluster=self.cluster,
            )
            if self.cluster is not None:
                from gputray.scheduler.queue.cluster_side import ClusterSide

                self.cluster.attach(ClusterSide(self._queue))  # the cluster's only way into the queue
            self._queue.start()
            self.timing = Timing(
                self.paths.data_dir / "schedules.sqlite3", submit=self._submit_schedule, clock=self.clock
            )
            self.timing.start()
            self._queue.add_timer(self.timing)  # the dispatcher is the one clock: it wakes for schedules too
            # --preempt, [[resident]], [exclusive]: the timers that pause, free and give back (owner_timers)
            self.preemption, self.make_room, self.exclusive = add_room_timers(
                self._queue, self.pauses, config
            )
            from gputray.scheduler.queue.retention import Retention

            self.retention = Retention(
                self._queue.edits,
                keep_days=config.retention.keep_days,
                keep_tasks=config.retention.keep_tasks,
                clock=self.clock,
                history=self._queue.estimates.history,
            )
            self._queue.add_timer(self.retention)  # ended tasks and logs past [retention]'s limits go
            if config.metrics.listen:  # prometheus_client is loaded only when metrics are asked for
                from gputray.scheduler.metrics.endpoint import start_metrics

                monitor = self._monitor
                self.metrics = start_metrics(
                    config.metrics.listen,
                    config.metrics.token,
                    queue=self._queue,
                    latest=lambda: monitor.latest,
                )
        except BaseException:
            self._teardown()
            raise
        self.started_at = self.clock()
        self._ready.set()
        if self.cluster is not None:
            self.cluster.start()
        log.info("gputray owner started (pid %d, demo=%s)", os.getpid(), self.demo)

    def _start_quick_server(self) -> None:
        address = self.server.address if self.server is not None else None
        if self._quick_argv is None or address is None or os.environ.get("GPUTRAY_QUICK") == "0":
            return
        from gputray.scheduler.ipc.quick_host import QuickServer

        self.quick = QuickServer(self._quick_argv, self.paths, address)
        self.quick.start()

    def _take_queue_lock(self) -> None:
        """The lock beside the queue file, held while this owner owns the queue (``queue_lock``). A
        client command acting on the saved queue holds it for a moment: wait for that, not longer."""
        if not self._queue_lock.acquire(timeout_s=QUEUE_LOCK_WAIT_S):
            holder = self._queue_lock.holder_pid()
            raise ipc.OwnerAlreadyRunning(
                f"another gputray process (pid {holder}) holds the queue {self._queue_lock.path}; "
                "stop it first"
            )

    def stop(self, *, kill_running: bool = True) -> None:
        """Stop serving and dispatching. Running jobs are stopped too (they end ``interrupted`` and follow
        their retry policy) unless ``kill_running=False``: then they run on under their supervisors,
        which write their exits beside their logs, and the next owner adopts them (records how they
        ended, never runs them again)."""
        with self._in_flight_changed:
            if self._stopped.is_set():
                return
            self._stopped.set()  # new requests are refused from here on
            if self._queue is not None:
                self._queue.edits.release_waiters()  # `gputray wait` answers now, then finds the owner gone
            if not self._in_flight_changed.wait_for(lambda: self._in_flight == 0, timeout=IN_FLIGHT_GRACE_S):
                log.warning("stopping with %d request(s) still being answered", self._in_flight)
        self._teardown(kill_running=kill_running)
        log.info("gputray owner stopped")

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until a ``shutdown`` request (or ``request_shutdown()``); True if it came."""
        return self.shutdown_requested.wait(timeout_s)

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()

    def _teardown(self, *, kill_running: bool = False) -> None:
        if self.quick is not None:
            with contextlib.suppress(Exception):
                self.quick.stop()  # no new command is handed over; those running finish on their own
        if self.metrics is not None:
            with contextlib.suppress(Exception):
                self.metrics.stop()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()  # the bridge goes first: it talks to the queue
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.stop()
        if self.timing is not None:
            with contextlib.suppress(Exception):
                self.timing.stop()
        if self._queue is not None:
            try:
                self._queue.close(kill_running=kill_running)
            except Exception:
                log.exception("closing the queue failed")
        if self._monitor is not None and self._own_monitor:
            with contextlib.suppress(Exception):
                self._monitor.stop()
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.close()
        self._queue_lock.release()

    # --- events and schedules --------------------------------------------------------------------

    def _event(self, event: QueueEvent) -> None:
        log.info("task %s %s: %s", event.task.id, event.kind, render_for(event.task.state, event.message))
        if self.metrics is not None:
            self.metrics.observe(event)
        if self.cluster is not None:
            self.cluster.on_event(event)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                log.exception("on_event callback failed")

    def _submit_schedule(self, entry: Schedule) -> object:
        base = load_task_file(Path(entry.task_file))
        spec = spec_from_patch(entry.overrides, base=base, source=entry.task_file)
        return self.queue.submit(spec)

    # --- the IPC entry ---------------------------------------------------------------------------

    def handle(self, req: rq.Request[_R]) -> _R:
        """Answer one request in-process (the tray) with its typed reply: checked against the
        protocol's limits as the socket's requests are, then answered by the same handler."""
        return self._answer(rq.checked(req))

    def _answer(self, req: rq.Request[_R]) -> _R:
        ping = isinstance(req, rq.Ping)
        if not ping and not self._ready.wait(60.0):
            raise OwnerRequestError(OwnerStarting())
        with self._in_flight_changed:
            if self._stopped.is_set() and not ping:
                raise OwnerStopping(OwnerGoing())
            self._in_flight += 1
        try:
            return cast(_R, self._handlers[type(req)](req))
        finally:
            with self._in_flight_changed:
                self._in_flight -= 1
                self._in_flight_changed.notify_all()

    # --- ops -------------------------------------------------------------------------------------

    def _op_ping(self, req: rq.Ping) -> rp.Pong:
        return rp.Pong(
            pid=os.getpid(),
            protocol=rq.PROTOCOL_VERSION,
            demo=self.demo,
            ready=self._ready.is_set(),
            started_at=self.started_at,
            address=self.server.address if self.server else None,
        )

    def _op_status(self, req: rq.Status) -> rp.StatusReply:
        snap = self.monitor.latest
        devices = []
        if snap is not None:
            for reading in snap.readings:
                info, verdict = reading.info, snap.verdict(reading.info.key)
                busy, reasons = (verdict.busy, tuple(verdict.reasons)) if verdict else (None, ())
                devices.append(
                    rp.DeviceVerdict(key=info.key, busy=busy, reasons=reasons, simulated=info.simulated)
                )
        assert self._store is not None  # started: _ready is set
        return rp.StatusReply(
            pid=os.getpid(),
            demo=self.demo,
            # the latest readings, so the CLI shows the owner's instead of polling the GPUs itself
            snapshot=snap,
            devices=tuple(devices),
            paused=self.queue.paused(),
            counts=self._store.counts(),
            monitor_failures=self.monitor.failures,  # polls that failed; the poller goes on after each
            monitor_last_failure=self.monitor.last_failure,
            cluster=self.cluster.report_doc() if req.cluster and self.cluster is not None else None,
            residents=self.residents(),
            now_s=self.clock(),
            taken=dict(self.queue.device_book.taken),
        )

    def residents(self) -> tuple[ResidentView, ...]:
        return self.make_room.residents() if self.make_room is not None else ()

    def _op_free_resident(self, req: rq.FreeResident) -> rp.RoomMade:
        assert self.make_room is not None  # started: _ready is set
        said, asked = self.make_room.answer(req.name, self.clock(), task_id=req.task)
        return rp.RoomMade(said=said, asked=asked)

    def _op_room(self, req: rq.Room) -> rp.RoomReply:
        questions = self.make_room.questions if self.make_room is not None else {}
        return rp.RoomReply(
            residents=self.residents(),
            taken=dict(self.queue.device_book.taken),
            questions=tuple(
                rp.RoomQuestion(
                    task_id=p.task_id, task_name=p.task_name, device=p.device, resident=p.resident
                )
                for p in list(questions.values())  # one step under the GIL: the timer replaces it
            ),
            now_s=self.clock(),
        )

    def _defer(self, req: rq.Request[Any]) -> Later[rp.Waited] | None:
        """The socket's ``wait``: answered later, its connection parked (no thread held meanwhile)."""
        if not isinstance(req, rq.WaitFor):
            return None
        if not self._ready.wait(60.0):
            raise OwnerRequestError(OwnerStarting())
        if self._stopped.is_set():
            raise OwnerStopping(OwnerGoing())
        ids = [task_id_of(raw) for raw in req.ids]
        return self.queue.edits.wait_later(ids, req.timeout_s, waited_reply)

    def resolve_device(self, text: str | None) -> str | None:
        """A device key from a key, a name fragment (``5060ti``, ``780m``) or ``cpu``; None for all."""
        if text is None or text.strip().lower() in ("", "all"):
            return None
        wanted = text.strip().lower()
        if wanted == "cpu":
            return "cpu"
        snap = self.monitor.latest
        infos = [r.info for r in snap.readings] if snap else []
        matches = devices_named(wanted, infos)
        if len(matches) == 1:
            return matches[0].key
        if len(matches) > 1:
            known = ", ".join(f"{i.key} ({i.name})" for i in infos)
            raise OwnerRequestError(f"{text!r} matches several devices: {known}")
        from gputray.scheduler.queue.device_checks import unknown_device_message

        seen = [s.info() for s in self.queue.devices_seen.remembered() if s.key not in {i.key for i in infos}]
        away = devices_named(wanted, seen)
        if len(away) == 1:
            return str(away[0].key)  # seen before, absent now (an unplugged eGPU): it may be paused too
        raise OwnerRequestError(unknown_device_message(text, [*infos, *seen], classes=("cpu",)))

    def _device_names(self) -> dict[str, str]:
        """Device key → the name people know it by, for listings (the JSON keeps the key)."""
        return {"cpu": "CPU", **{info.key: info.name for info in self.monitor.known_devices()}}

    def _op_pause(self, req: rq.Pause) -> rp.PausedReply:
        self.queue.pause(self.resolve_device(req.device))
        return self._paused_reply()

    def _op_resume(self, req: rq.Resume) -> rp.PausedReply:
        self.queue.resume(self.resolve_device(req.device))
        return self._paused_reply()

    def _paused_reply(self) -> rp.PausedReply:
        if self.cluster is not None:
            self.cluster.on_paused()  # pushed to the bridge: the other machines see it within a second
        known = tuple(self.queue.device_book.known_keys())
        return rp.PausedReply(paused=self.queue.paused(), known=known, device_names=self._device_names())

    def _op_schedule_add(self, req: rq.ScheduleAdd) -> rp.Schedules:
        assert self.timing is not None
        path = caller_path(req.task_file, req.cwd)
        overrides = req.overrides or TaskPatch()
        # a bad file fails now, and so does a device name that matches nothing, not at 3 am
        spec = spec_from_patch(overrides, base=load_task_file(path), source=str(path))
        self.queue.check_devices(spec)
        entry = self.timing.add(req.cron, str(path), overrides=overrides, name=req.name)
        self.queue.request_dispatch()  # the dispatcher sleeps until the earliest due time: tell it
        nxt = dict((e.id, n) for e, n in self.timing.entries()).get(entry.id)
        return rp.Schedules(schedules=(entry.view(nxt),))

    def _op_schedule_list(self, req: rq.ScheduleList) -> rp.Schedules:
        assert self.timing is not None
        return rp.Schedules(schedules=tuple(e.view(n) for e, n in self.timing.entries()))

    def _op_schedule_remove(self, req: rq.ScheduleRemove) -> rp.Schedules:
        assert self.timing is not None
        entry = self.timing.remove(task_id_of(req.id, "schedule", "gputray schedule list"))
        return rp.Schedules(schedules=(entry.view(),))

    def _op_check_envs(self, req: rq.CheckEnvs) -> rp.Checking:
        """Queue a background check of every env without a current result (answers at once)."""
        return rp.Checking(checking=self.queue.env_chooser.check_all())

    def running_jobs(self) -> int:
        """How many jobs run now (the tray asks before it quits)."""
        return len(self.queue.running_ids()) if self._queue is not None else 0

    # The cluster: the bridge beside this owner, and this machine's agent (both local clients).
    def _op_cluster_sync(self, req: rq.ClusterSync) -> rp.ClusterSynced:
        return self._cluster_link().sync(req)

    def _op_cluster_update(self, req: rq.ClusterUpdate) -> rp.ClusterTask:
        return self._cluster_link().update(req)

    def _op_cluster_submit(self, req: rq.ClusterSubmit) -> rp.ClusterTask:
        return self._cluster_link().submit(req)

    def _op_cluster_withdraw(self, req: rq.ClusterWithdraw) -> rp.ClusterTask:
        return self._cluster_link().withdraw(req)

    def _cluster_link(self) -> ClusterPort:
        if self.cluster is None:
            if self._cluster_factory is None:
                raise OwnerRequestError("this gputray owner runs without the cluster")
            raise OwnerRequestError("the owner is not started")
        return self.cluster

    def _op_shutdown(self, req: rq.Shutdown) -> rp.Stopping:
        self.shutdown_jobs = req.jobs or "stop"
        # a moment later, so that this reply still reaches the client before the socket closes
        timer = threading.Timer(0.2, self.request_shutdown)
        timer.daemon = True
        timer.start()
        return rp.Stopping(
            stopping=True, pid=os.getpid(), jobs=self.shutdown_jobs, running=self.running_jobs()
        )
