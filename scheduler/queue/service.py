"""The queue, in-process: submit, cancel, retry, pause; dispatch jobs onto free devices. Moving,
editing, removing and waiting for tasks are its part ``edits`` (``edits.QueueEdits``).

One QueueService per owner process (tray app or ``gputray daemon``). It reads device states from the
Monitor, decides with ``placement.plan`` and starts jobs with ``launcher.launch``; the TaskStore
holds every state change durably.

**Threads.** Public methods are thread-safe. ``dispatch()`` runs one pass synchronously.
The dispatcher is the queue's one clock: it sleeps until the earliest of the tasks' own times (start
at, window, retry backoff, max wait: placement's ``Wait.until_s``) and its timers' ``next_due_s()``
(the recurring schedules, ``add_timer``). Submits, job exits, cancels and monitor ticks call
``request_dispatch()``, which wakes a
dispatcher thread (started by ``start()``); bursts coalesce into one pass, so 10,000 submits do not
cost 10,000 passes. A job's exit wakes it at once (``urgent``). Events go to ``on_event`` from a
separate thread, in order, never while a lock is held.

**Lifecycle.** ``start()`` recovers tasks a crash left running (interrupted → requeued or failed by
their retry policy; a leftover process is killed first), subscribes to monitor ticks and dispatches.
``close()`` stops dispatching and leaves running jobs alone (they run on in their own sessions; if the
process then exits, the next ``start()`` treats them as interrupted). ``close(kill_running=True)``
stops them instead; they end ``interrupted`` and follow their retry policy.

**Devices.** Each monitor device plus ``cpu``. One job per device by default (``slots`` changes it
per device key; the iGPU should stay at 1). A device lost mid-job (state ``lost`` or gone from the
snapshot) kills the job; it ends interrupted and follows its retry/redirect policy.
Our jobs are announced once, to the monitor (``job_started``/``job_ended``): they do not count as
external use, and the monitor forwards them to ``JobAware`` backends (the simulated one's load follows
them in demo mode).

**A backlog costs nothing.** A task held back only by its start time or its daily window is planned
once, then put aside (``TaskStore.put_aside``; here, by the time its gate opens, in a heap) until that
time comes or the task changes (any write to it brings it back): 10,000 tasks waiting on ``--at +10h``
do not slow the passes that start the tasks that can run now.

**Launching.** ``prepare_launch`` (pure: task + device → ``LaunchPlan`` with argv, env, log header,
``{out}`` file, notes) decides what an attempt runs; ``_start`` marks the task running, launches the
plan and records the pid.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import heapq
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gputray.monitor.monitor import Monitor
from gputray.monitor.records import DeviceInfo, Snapshot
from gputray.scheduler.cluster_port import ClusterPort
from gputray.scheduler.jobs import reach
from gputray.scheduler.jobs.invocation import (
    LaunchError,
    drop_unused_out,
)
from gputray.scheduler.jobs.launch_plan import LaunchPlan, prepare_launch
from gputray.scheduler.jobs.launcher import (
    HOST,
    Job,
    LaunchFailed,
    adopt,
    find_runs,
    launch,
    stop_leftover,
    supervisor_alive,
)
from gputray.scheduler.jobs.supervisor import DEFAULT_LOG_MAX_BYTES
from gputray.scheduler.paths import Paths, job_umask, open_private_append
from gputray.scheduler.protocol import check_epoch_s
from gputray.scheduler.pyenvs.choice import (
    EnvChecking,
    EnvChooser,
    EnvMissing,
    EnvReady,
    EnvStatus,
    ProbingChooser,
)
from gputray.scheduler.queue import dependencies as deps
from gputray.scheduler.queue.device_book import DeviceBook
from gputray.scheduler.queue.device_checks import (
    DEVICES_SEEN_FILE,
    DevicesSeen,
    SeenDevice,
    check_submit,
    remembered_absent_note,
    torch_device_keys,
)
from gputray.scheduler.queue.edits import QueueEdits, TaskStateError
from gputray.scheduler.queue.offline import requeue_changes
from gputray.scheduler.queue.pause_file import read_paused, write_paused
from gputray.scheduler.queue.placement import (
    DeviceState,
    GiveUp,
    Placement,
    Wait,
    plan,
    time_gate,
    wait_started_s,
)
from gputray.scheduler.queue.start_backoff import StartBackoff, is_transient
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import TaskNotFound
from gputray.scheduler.queue.timing import ClockJumps
from gputray.scheduler.replies import DeviceSlots, Paused
from gputray.scheduler.tasks.recipes import check_runnable, specs_for_files
from gputray.scheduler.tasks.records import (
    PENDING_STATES,
    QueueEvent,
    TaskPatch,
    TaskRecord,
    TaskSpec,
)

log = logging.getLogger(__name__)

TICK_PASS_BUDGET = 20.0  # a monitor tick starts a pass only if the last one ended 20x its duration ago
REQUEST_PASS_BUDGET = 10.0  # a submit/cancel starts a pass only if the last one ended 10x its duration ago
MAX_REQUEST_GAP_S = 1.0  # ... but never later than this
GONE_AFTER_TICKS = 3  # snapshots in a row without a device before its jobs are stopped
SPACE_RECHECK_S = 5.0  # while the disk is full, look again this often
WALL_RECHECK_S = 60.0  # a wait for a wall-clock time looks at the clock at least this often (it may be set)


class Timer(Protocol):
    """Something the dispatcher wakes for besides the tasks' own times (see ``add_timer``)."""

    def next_due_s(self) -> float | None: ...

    def run_due(self, now_s: float) -> object: ...


@dataclass
class _Running:
    task_id: int
    job: Job
    device: str
    spec: TaskSpec
    pid: int
    out: str | None = None  # the {out} file it writes, kept from other jobs until it ends
    demo_for: str | None = None  # the simulated GPU a torch job runs on the CPU in place of


class QueueService:
    """The queue API used by the IPC owner, the CLI handlers and the tray. See the module docstring."""

    def __init__(
        self,
        store: TaskStore,
        monitor: Monitor,
        *,
        paths: Paths,
        clock: Callable[[], float] = time.time,
        env_chooser: EnvChooser | None = None,
        on_event: Callable[[QueueEvent], None] | None = None,
        slots: Mapping[str, int] | None = None,
        log_max_bytes: int = DEFAULT_LOG_MAX_BYTES,
        cluster: ClusterPort | None = None,
    ) -> None:
        """``env_chooser`` says which Python env a torch job runs in on a device and which of a task's
        ``needs`` the doctor saw *fail* there; by default (``choice.ProbingChooser``) from the doctor's
        cache, checking envs without a result in the background (``choice.ResolverChooser`` is a plain
        lookup that never probes). A torch job never runs without an env: it waits, with the reason.
        ``slots`` (the config's ``[devices.<name>] slots``): device name, key or ``cpu`` → how many
        jobs may run there at once; every other device takes one.
        ``log_max_bytes`` (the config's ``[logs] max_size``): the most a job's log keeps.
        ``cluster`` (the owner's link to the other machines): ``cluster.runs_here(task)`` is False for a
        pending task another machine runs or the bridge has still to place, which this queue then
        leaves alone; ``cluster.check_spec`` replaces the submit-time ``check_runnable`` (it checks a
        task bound for another machine against that machine's devices).
        """
        self.store = store
        self.monitor = monitor
        self.paths = paths
        self.clock = clock
        self.on_event = on_event
        self.env_chooser: EnvChooser = (
            env_chooser
            if env_chooser is not None
            else ProbingChooser(
                devices=monitor.known_devices, on_change=lambda: self.request_dispatch(urgent=True)
            )
        )
        self.devices_seen = DevicesSeen(paths.state_dir / DEVICES_SEEN_FILE)
        self.device_book = DeviceBook(monitor, self.env_chooser, slots=slots or {})
        self.log_max_bytes = log_max_bytes
        self.cluster = cluster

        self._lock = threading.RLock()
        self.edits = QueueEdits(self)  # move, edit, remove, clean, wait
        self._jobs: dict[int, _Running] = {}
        self._absent_ticks: dict[str, int] = {}
        self._last_pass_s = 0.0
        self._last_pass_end = 0.0
        self._requested = False
        self._tick_pending = False
        self._paused = read_paused(self.paths.data_dir)
        self._closed = False
        self._recording = True  # False once closed: exits are then left to the next owner
        self._started = False
        self._wake = threading.Event()
        self._urgent = threading.Event()
        self._due_s: float | None = None
        self._start_backoff = StartBackoff()  # tasks whose start failed for want of fds, processes, memory
        self._parked: dict[int, float] = {}  # task id -> when its start time or window opens
        self._parked_due: builtins.list[tuple[float, int]] = []  # a heap of (that time, task id)
        self._clock_jumps = ClockJumps(clock)  # the wall clock set: every time gate is planned afresh
        self._dispatcher: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._events: queue.Queue[QueueEvent | None] = queue.Queue()
        self._timers: builtins.list[Timer] = []
        self._event_thread: threading.Thread | None = None
        self.passes = 0  # dispatch passes run (for tests and benches)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Recover interrupted tasks, subscribe to monitor ticks, start the dispatcher, dispatch."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self._closed = False
            self._recording = True
        self._event_thread = threading.Thread(
            target=self._event_loop, name="gputray-queue-events", daemon=True
        )
        self._event_thread.start()
        adopted = self._adopt_jobs()
        reach.remove_stale_cgroups()  # empty job groups left while no owner was up
        for rec in self.store.recover_after_crash(skip=adopted):
            kind = "interrupted"
            self._emit(kind, rec.record, f"{rec.record.name}: {rec.record.reason}")
        if self.monitor.latest is None:
            self.monitor.sample_once()
        self._unsubscribe = self.monitor.subscribe(self._on_snapshot)
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="gputray-dispatch", daemon=True)
        self._dispatcher.start()
        self.request_dispatch(urgent=True)

    def _adopt_jobs(self) -> set[int]:
        """Jobs an earlier owner started (it crashed, or quit keeping them): a task whose supervisor
        still runs is watched as running again; one whose job ended meanwhile gets its real exit
        recorded from the exit file (at once, by its watcher). Also a job started just before a crash
        that had not yet been marked running (its run file counts one attempt more). The ids."""
        runs = find_runs(self.paths.logs_dir)
        adopted: set[int] = set()
        if not runs:
            return adopted
        with self._lock:  # watchers that fire at once wait until each task is set up
            for rec in self.store.list(states=("running", *PENDING_STATES)):
                run = runs.pop(rec.id, None)
                if run is None:
                    continue
                ours = (
                    run.attempt == rec.attempts if rec.state == "running" else run.attempt == rec.attempts + 1
                )
                if not ours or (rec.state == "running" and rec.pid not in (None, run.pid)):
                    runs[rec.id] = run  # someone else's leftover: judged below
                    continue
                if rec.state != "running":
                    marked = self.store.compare_and_update(
                        rec.id,
                        rec.state,
                        state="running",
                        device=run.device,
                        attempts=run.attempt,
                        started_at=run.started_at,
                        ended_at=None,
                        exit_code=None,
                        log_path=str(run.log_path),
                        pid=run.pid,
                        pid_create_time=run.pid_create_time,
                        not_before=None,
                        reason="",
                    )
                    if marked is None:
                        continue
                elif rec.pid is None:
                    self.store.update(rec.id, pid=run.pid, pid_create_time=run.pid_create_time)
                if run.pid_create_time is None and rec.pid == run.pid and rec.pid_create_time is not None:
                    run = dataclasses.replace(run, pid_create_time=rec.pid_create_time)  # pid reuse check
                job = adopt(run, on_exit=functools.partial(self._on_exit, rec.id))
                self._jobs[rec.id] = _Running(rec.id, job, run.device, rec.spec, run.pid, run.out)
                self.monitor.job_started(
                    run.device,
                    run.pid,
                    name=rec.spec.name,
                    util_percent=rec.spec.util_percent,
                    vram_bytes=rec.spec.vram_bytes,
                )
                adopted.add(rec.id)
                log.info("task #%d: adopted its job (pid %d) from an earlier owner", rec.id, run.pid)
        for run in runs.values():  # files of tasks that have ended or are gone: a live job there is a stray
            if supervisor_alive(run.files):
                log.warning("task #%d: stopping a job the queue does not run (pid %d)", run.task_id, run.pid)
                stop_leftover(run)
            run.files.discard()
        return adopted

    def close(self, *, kill_running: bool = False) -> None:
        """Stop dispatching. Running jobs are left running unless ``kill_running`` (then: interrupted).
        Jobs left running are recorded by the next owner (their supervisors write their exits)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not kill_running:
                self._recording = False
            running = list(self._jobs.values())
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._wake.set()
        self._urgent.set()
        if self._dispatcher is not None and self._dispatcher is not threading.current_thread():
            self._dispatcher.join(timeout=10)
        if kill_running:
            for r in running:
                r.job.cancel("shutdown")
            for r in running:
                r.job.wait(timeout=15)
        self.env_chooser.close()
        HOST.close()  # the supervisor host: no more jobs start here (those it forked run on)
        with self._lock:
            self._recording = False  # the store closes after us; later exits are the next owner's
        if self._event_thread is not None:
            self._events.put(None)
            if self._event_thread is not threading.current_thread():
                self._event_thread.join(timeout=10)
        self._started = False

    @property
    def lock(self) -> threading.RLock:
        """The queue's lock: every change to the queue (and to the store through it) holds it."""
        return self._lock

    @property
    def closed(self) -> bool:
        return self._closed

    # -- queries --------------------------------------------------------------------------------
    def list(self, *, include_finished: bool = True) -> builtins.list[TaskRecord]:
        """Tasks: running first, then pending in dispatch order, then finished ones by id."""
        return self.store.list(include_finished=include_finished)

    def get(self, task_id: int) -> TaskRecord:
        """One task; raises TaskNotFound (a KeyError) whose ``str()`` reads 'no task #N in the queue'."""
        return self.store.get(task_id)

    def running_ids(self) -> builtins.list[int]:
        """The tasks whose jobs run here now (started or adopted by this queue)."""
        with self._lock:
            return sorted(self._jobs)

    def running_job(self, task_id: int) -> Job | None:
        """The live job of a task running here; None while it is not (yet) running."""
        running = self._jobs.get(task_id)
        return running.job if running is not None else None

    def paused(self) -> Paused:
        return self._paused

    # -- commands -------------------------------------------------------------------------------
    def submit(self, spec: TaskSpec) -> TaskRecord:
        """Queue one task. Checks that its program / script / files exist (SubmitError otherwise)."""
        return self._add([spec], self.cluster.check_spec if self.cluster is not None else check_runnable)[0]

    def submit_files(
        self, files: Sequence[Path], *, recipe: str | None = None, overrides: TaskPatch | None = None
    ) -> builtins.list[TaskRecord]:
        """One task per file from its recipe (``recipe`` forces one); all are checked before any is queued.

        ``overrides`` are laid over what the recipe says (the submit's options, a drop's device policy).
        Raises SubmitError / RecipeError / ToolNotFound with a message naming the file or program.
        """
        specs = specs_for_files([Path(f) for f in files], recipe=recipe, overrides=overrides)
        return self._add(specs, self.cluster.check_spec if self.cluster is not None else None)

    def _add(
        self, specs: Sequence[TaskSpec], check: Callable[[TaskSpec], None] | None
    ) -> builtins.list[TaskRecord]:
        """Check every spec (``check``, its devices, its ``after``), then queue them all in one commit."""
        for spec in specs:
            if check is not None:
                check(spec)
        self.check_devices(*specs)
        for spec in specs:
            deps.check_after(None, spec, self.store.view())
        records = self.store.add_many(specs, now=self.clock())
        for rec in records:
            self._emit("queued", rec, f"{rec.name} queued as #{rec.id}")
        self.request_dispatch()
        return records

    def cancel(self, task_id: int) -> TaskRecord:
        """Cancel a pending task, or stop a running one (its whole process tree); waits up to ~10 s for it."""
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state in PENDING_STATES or rec.state == "interrupted":
                new = self.store.compare_and_update(
                    task_id, rec.state, state="cancelled", reason="cancelled", ended_at=self.clock()
                )
                if new is None:  # it just started: cancel the running job below
                    rec = self.store.get(task_id)
                else:
                    self._emit("cancelled", new, f"{new.name} cancelled")
                    self.request_dispatch()
                    return new
            if rec.state in {"succeeded", "failed", "cancelled"}:
                if rec.state == "cancelled":
                    return rec
                raise TaskStateError(f"task #{task_id} already {rec.state}; nothing to cancel")
            running = self._jobs.get(task_id)
        if running is None:  # running in the store but not ours (should not happen after recovery)
            new = self.store.update(task_id, state="cancelled", reason="cancelled", ended_at=self.clock())
            self._emit("cancelled", new, f"{new.name} cancelled")
            return new
        running.job.cancel("cancelled")
        running.job.wait(timeout=10)
        return self.store.get(task_id)

    def retry(self, task_id: int) -> TaskRecord:
        """Queue a finished task again (at the end of the queue). Attempts count on ("attempt 2"); its
        automatic retries start afresh. Tasks it failed through ``after`` are queued again too."""
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state in PENDING_STATES or rec.state == "running":
                raise TaskStateError(f"task #{task_id} is {rec.state}; retry is for finished tasks")
            new = self._requeue(rec, "queued again by request")
            if new is None:
                raise TaskStateError(f"task #{task_id} changed state meanwhile; try again")
            back = [
                again
                for dependant in deps.failed_because_of(task_id, self.store.list())
                if (again := self._requeue(dependant, f"queued again: #{task_id} was queued again"))
            ]
        self._emit("queued", new, f"{new.name} queued again as #{new.id}")
        for again in back:
            self._emit("queued", again, f"{again.name} (#{again.id}): {again.reason}")
        self.request_dispatch()
        return new

    def _requeue(self, rec: TaskRecord, reason: str) -> TaskRecord | None:
        """A finished task back in the queue, at its end; None when its state changed meanwhile."""
        changes = requeue_changes(rec, reason, now_s=self.clock(), position=self.store.next_position())
        return self.store.compare_and_update(rec.id, rec.state, **changes)

    def pause(self, device_key: str | None = None) -> None:
        """Stop starting jobs on one device (a key or a name like ``5060ti``), or everywhere (None)."""
        with self._lock:
            self._save_paused(self._paused.pausing(device_key and self._device_key(device_key)))
        self.request_dispatch()

    def resume(self, device_key: str | None = None) -> None:
        """Undo ``pause``; ``None`` resumes the whole queue *and* every device."""
        with self._lock:
            self._save_paused(self._paused.resuming(device_key and self._device_key(device_key)))
        self.request_dispatch(urgent=True)

    # -- dispatch -------------------------------------------------------------------------------
    def request_dispatch(self, *, urgent: bool = False) -> None:
        """Ask the dispatcher thread for a pass soon (coalesced). Before ``start()`` this does nothing."""
        self._requested = True
        if urgent:
            self._urgent.set()  # before the wake-up, so the woken dispatcher sees it
        self._wake.set()

    def dispatch(self) -> None:
        """One dispatch pass now, in the calling thread: start what can start, record why the rest waits."""
        with self._lock:
            if self._closed:
                return
            self.passes += 1
            now = self.clock()
            self._unpark(now)
            pending = self._fail_unplannable(self.store.pending(active_only=True), now)
            if self.cluster is not None:
                # Dependencies hold a task for another machine too, until it is placed: the cluster
                # link hands the bridge only those whose dependencies let them start.
                runs_here = self.cluster.runs_here
                unplaced = [r for r in pending if runs_here(r) or r.machine is None]
                pending = [r for r in self._hold_for_dependencies(unplaced, now) if runs_here(r)]
            else:
                pending = self._hold_for_dependencies(pending, now)
            pending, held_back = self._start_backoff.split(pending, now)
            self._record_waits(held_back)
            if not pending:
                dues = [self._parked_due[0][0]] if self._parked_due else []
                backoff_due = self._start_backoff.next_due_s(now)
                self._due_s = (
                    min([*dues, backoff_due]) if backoff_due is not None else min(dues, default=None)
                )
                return
            if self._paused.all:
                self._record_waits([(r, Wait("the queue is paused")) for r in pending])
                self._due_s = None
                return
            no_space = self.store.space_problem()
            if no_space is not None:  # a job's log and its exit need room: start nothing until there is
                self._record_waits(
                    [(r, Wait(f"{no_space}: nothing starts until there is room")) for r in pending]
                )
                self._due_s = now + SPACE_RECHECK_S
                return
            pending, parking = self._time_gated(pending, now)
            snapshot = self.monitor.latest
            wanted = frozenset(n for r in pending for n in r.spec.needs)
            devices = self._device_states(snapshot, needs=wanted)
            torch_keys = torch_device_keys((r.spec for r in pending), devices)
            if torch_keys:  # an env is looked up (checked) only where a torch task may run
                devices = [self._with_env_status(d) if d.key in torch_keys else d for d in devices]
            result = plan(pending, devices, now_s=now)
            waits: builtins.list[tuple[TaskRecord, Wait]] = builtins.list(parking)
            due: builtins.list[float] = [self._parked_due[0][0]] if self._parked_due else []
            known = [d.info for d in devices]
            for task, decision in result.decisions:
                if isinstance(decision, Placement):
                    self._start(task, decision, devices, known)
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
            backoff_due = self._start_backoff.next_due_s(now)
            if backoff_due is not None:
                due.append(backoff_due)
            self._due_s = min(due) if due else None

    def _unpark(self, now: float) -> None:
        """Bring back the tasks put aside whose time came (one that changed meanwhile came back by
        itself, in the store). Callers hold the lock."""
        heap = self._parked_due
        due = []
        while heap and (heap[0][0] <= now or self._parked.get(heap[0][1]) != heap[0][0]):
            until, task_id = heapq.heappop(heap)
            if until <= now and self._parked.get(task_id) == until:
                del self._parked[task_id]
                due.append(task_id)
        if due:
            self.store.bring_back(due)
        if len(heap) > 2 * len(self._parked) + 1024:  # many stale entries: rebuild
            self._parked_due = [(until, task_id) for task_id, until in self._parked.items()]
            heapq.heapify(self._parked_due)

    def _time_gated(
        self, pending: builtins.list[TaskRecord], now: float
    ) -> tuple[builtins.list[TaskRecord], builtins.list[tuple[TaskRecord, Wait]]]:
        """Split off the tasks that only a start time or a daily window holds back (not a retry's
        backoff: its "retry in 20 s" is said afresh each pass; not one with ``after``: a dependency
        that fails fails it at once) and put them aside until then. Callers hold the lock."""
        rest: builtins.list[TaskRecord] = []
        parking: builtins.list[tuple[TaskRecord, Wait]] = []
        for task in pending:
            spec = task.spec
            if (spec.start_at is None and spec.window is None) or spec.after or task.not_before is not None:
                rest.append(task)
                continue
            gate = time_gate(task, now)
            if gate is None or gate.until_s is None:
                rest.append(task)
                continue
            self._parked[task.id] = gate.until_s
            heapq.heappush(self._parked_due, (gate.until_s, task.id))
            parking.append((task, gate))
        return rest, parking

    def _fail_unplannable(self, pending: builtins.list[TaskRecord], now: float) -> builtins.list[TaskRecord]:
        """Fail the records no pass can plan (a start time past the year 9999, stored by an older
        gputray or written by hand), with the reason; the others go on."""
        ok = []
        for rec in pending:
            try:
                for value, what in ((rec.spec.start_at, "its start time"), (rec.not_before, "its retry")):
                    if value is not None:
                        check_epoch_s(value, what)
            except ValueError as exc:
                self._fail(rec, f"cannot be planned: {exc}", now)
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

    def _fail(self, rec: TaskRecord, reason: str, now: float) -> None:
        """A pending task fails with ``reason`` (unless its state changed meanwhile: a race lost)."""
        new = self.store.compare_and_update(rec.id, rec.state, state="failed", reason=reason, ended_at=now)
        if new is not None:
            self._emit("failed", new, f"{new.name}: {reason}")

    def _record_waits(
        self, waits: Sequence[tuple[TaskRecord, Wait]], overtakes: Mapping[int, int] = {}
    ) -> None:
        updates: builtins.list[tuple[int, dict[str, Any]]] = []
        for task, wait in waits:
            cols: dict[str, Any] = {}
            if task.state != "waiting":
                cols["state"] = "waiting"
            if task.reason != wait.reason:
                cols["reason"] = wait.reason
            if task.id in overtakes and overtakes[task.id] != task.overtakes:
                cols["overtakes"] = overtakes[task.id]
            if cols:
                updates.append((task.id, cols))
        if updates:
            # Only rows still pending: a cancel may have raced this pass. Why a task waits is said again by
            # the next pass: no need to wait for the disk (acknowledged submits are synced by the store).
            self.store.update_many(updates, only_states=PENDING_STATES, sync=False)
        for task, wait in waits:
            if task.state == "queued":
                self._emit(
                    "waiting",
                    task.replace(state="waiting", reason=wait.reason),
                    f"{task.name}: {wait.reason}",
                )

    def _start(
        self,
        task: TaskRecord,
        decision: Placement,
        devices: Sequence[DeviceState],
        known: Sequence[DeviceInfo],
    ) -> None:
        info = next(d.info for d in devices if d.key == decision.device)
        spec = task.spec
        now = self.clock()
        notes: builtins.list[str] = [decision.reason] if decision.reason else []
        chosen = self._python_env(task, info)
        if chosen is not None and not isinstance(chosen, EnvReady):
            # The env went away since the pass began (a config change): the task waits, saying why.
            self.store.compare_and_update(task.id, task.state, state="waiting", reason=chosen.reason)
            self.request_dispatch()
            return
        pyenv = chosen.env if chosen is not None else None
        if chosen is not None and chosen.on_cpu:
            notes.insert(0, demo_note(info.name, done=False))
        log_path = self.paths.logs_dir / f"task-{task.id}.log"
        running = dict(  # what the store says once the process exists, never before
            state="running",
            device=info.key,
            env=pyenv.name if pyenv is not None and pyenv.name else None,
            reason="; ".join(notes),
            attempts=task.attempts + 1,
            started_at=now,
            ended_at=None,
            exit_code=None,
            log_path=str(log_path),
            not_before=None,
        )
        launch_plan: LaunchPlan | None = None
        try:
            launch_plan = prepare_launch(
                task.replace(**running),
                info,
                known,
                python=None if pyenv is None else str(pyenv.python),
                extra_env={} if pyenv is None else pyenv.extra_env,
                taken_outs={r.out for r in self._jobs.values() if r.out},
                queue_file=str(self.store.path),
                now_s=now,
                on_cpu=chosen is not None and chosen.on_cpu,
            )
            job = launch(
                list(launch_plan.argv),
                env=launch_plan.env,
                log_path=log_path,
                cwd=spec.cwd,
                on_exit=functools.partial(self._on_exit, task.id),
                timeout_s=spec.timeout_s,
                header=launch_plan.header,
                umask=job_umask(),  # the user's own: gputray's private umask is not the job's
                log_max_bytes=self.log_max_bytes,
                meta={
                    "task_id": task.id,
                    "attempt": task.attempts + 1,
                    "device": info.key,
                    "out": launch_plan.out,
                },
            )
        except Exception as exc:  # a record that cannot be launched fails with its reason; the pass goes on
            if launch_plan is not None and launch_plan.out is not None:
                drop_unused_out(launch_plan.out)
            if is_transient(exc):  # out of fds, processes, memory for now: not the task's fault
                self._hold_back(task, exc, now)
                return
            if isinstance(exc, LaunchFailed) and exc.supervisor_killed:  # it ran, if only for a moment
                self._interrupted_at_start(task, running, exc)
                return
            if not isinstance(exc, (LaunchError, LaunchFailed, OSError)):
                log.exception("task #%d could not be prepared", task.id)
            failed = self.store.compare_and_update(
                task.id,
                task.state,
                **{
                    **running,
                    "state": "failed",
                    "reason": f"could not start: {exc}",
                    "ended_at": self.clock(),
                    "pid": None,
                },
            )
            if failed is not None:
                self._emit("failed", failed, f"{failed.name} could not start: {exc}")
            return
        try:
            started = self.store.compare_and_update(
                task.id, task.state, **running, pid=job.pid, pid_create_time=job.create_time
            )
        except Exception as exc:  # the job runs but its row says otherwise: stop it, try again later
            log.exception("task #%d: its start could not be recorded", task.id)
            job.cancel("cancelled")
            self._hold_back(task, exc, now)
            return
        if started is None:  # cancelled or changed meanwhile: its process must not run on
            job.cancel("cancelled")
            return
        self._start_backoff.started(task.id)
        demo_for = info.name if chosen is not None and chosen.on_cpu else None
        self._jobs[task.id] = _Running(task.id, job, info.key, spec, job.pid, launch_plan.out, demo_for)
        self.device_book.names_used[info.key] = info.name
        self.monitor.job_started(
            info.key, job.pid, name=spec.name, util_percent=spec.util_percent, vram_bytes=spec.vram_bytes
        )
        if decision.redirected:
            self._emit("redirected", started, f"{spec.name}: {decision.reason}")
        else:
            self._emit("started", started, f"{spec.name} started on {self._where(info.key, demo_for)}")

    def _interrupted_at_start(self, task: TaskRecord, running: Mapping[str, Any], exc: LaunchFailed) -> None:
        """Its supervisor was killed as the job started (by the job itself, maybe): an attempt that was
        interrupted, not a refusal to start; the retry policy decides what comes next."""
        counted = self.store.compare_and_update(task.id, task.state, **running)
        if counted is None:
            return
        ended = dict(ended_at=self.clock(), exit_code=None, pid=None, pid_create_time=None)
        new = self.store.apply_retry_policy(task.id, f"interrupted: {exc}", now=self.clock(), **ended)
        self._emit("interrupted", new, f"{new.name}: {new.reason}")

    def _hold_back(self, task: TaskRecord, exc: BaseException, now: float) -> None:
        """A start that failed for want of a resource now: the task waits, saying why, and is tried
        again after a back-off (``start_backoff``)."""
        wait = self._start_backoff.hold(task.id, exc, now)
        log.warning("task #%d: %s", task.id, wait.reason)
        new = self.store.compare_and_update(task.id, task.state, state="waiting", reason=wait.reason)
        if new is not None:
            self._emit("waiting", new, f"{new.name}: {wait.reason}")

    def _with_env_status(self, dev: DeviceState) -> DeviceState:
        """The device as torch tasks see it: whether an env is checked there now, or none works."""
        try:
            status = self.env_chooser.status(dev.info)
        except Exception as exc:  # the doctor's lookups must not stop the queue
            log.exception("env lookup failed")
            return dataclasses.replace(dev, torch_no_env=f"env lookup failed ({exc})")
        if isinstance(status, EnvChecking):
            return dataclasses.replace(dev, torch_checking=status.reason)
        if isinstance(status, EnvMissing):
            return dataclasses.replace(dev, torch_no_env=status.reason)
        return dev

    def _python_env(self, task: TaskRecord, info: DeviceInfo) -> EnvStatus | None:
        """A torch task's env on the device (an ``EnvReady``, or why there is none now); None for other
        kinds of task, which run what they name."""
        if task.spec.kind != "torch":
            return None
        try:
            return self.env_chooser.status(info, task.spec.needs)
        except Exception as exc:
            log.exception("env lookup failed")
            return EnvMissing(f"env lookup failed ({exc})")

    def _on_exit(self, task_id: int, job: Job, code: int) -> None:
        """Watcher thread: record how the job ended, apply the retry policy, dispatch the next one.

        After ``close()`` that kept the jobs running nothing is recorded here: the job's supervisor
        wrote its exit beside the log, and the next owner records it from there."""
        with self._lock:
            if not self._recording:
                return
            running = self._jobs.pop(task_id, None)
            if running is not None and running.out is not None and (code != 0 or job.kill_reason):
                drop_unused_out(running.out)  # the file taken for its result, if it wrote none
            device = running.device if running else None
            if device is not None:
                self.monitor.job_ended(device, job.pid)
            try:
                rec = self.store.get(task_id)
            except TaskNotFound:
                job.files.discard()
                return
            now = job.ended_at or self.clock()
            if rec.state != "running" or rec.pid not in (None, job.pid):
                if rec.state != "running":
                    job.files.discard()
                self.request_dispatch(urgent=True)
                return
            reason = job.kill_reason
            base = dict(exit_code=code, ended_at=now, pid=None, pid_create_time=None)
            demo: dict[str, str] = {}
            if running is not None and running.demo_for is not None:
                demo["reason"] = _demo_done(rec.reason, running.demo_for, rec.log_path)
            if reason == "orphaned":
                base["exit_code"] = None
            left = leftover_note(job.leftovers) if reason != "orphaned" else ""
            if reason == "cancelled":
                why = "; ".join(filter(None, ["cancelled while running", left]))
                new = self.store.update(task_id, state="cancelled", reason=why, **base)
                self._emit("cancelled", new, f"{new.name} cancelled")
            elif reason in ("lost", "shutdown", "orphaned"):
                why = {
                    "lost": f"interrupted: {self.device_name(device)} was lost while it ran",
                    "shutdown": "interrupted: gputray stopped while it ran",
                    "orphaned": "interrupted: its supervisor process was killed, so how it ended is unknown"
                    + (f" ({_processes(job.leftovers)} of the job stopped)" if job.stopped_leftover else ""),
                }[reason]
                why = "; ".join(filter(None, [why, left]))
                new = self.store.apply_retry_policy(task_id, why, now=now, **base)
                self._emit("interrupted", new, f"{new.name}: {new.reason}")
            elif code == 0 and reason is None:
                if left:
                    demo["reason"] = "; ".join(filter(None, [demo.get("reason", rec.reason), left]))
                new = self.store.update(task_id, state="succeeded", **base, **demo)
                where = self._where(device, running.demo_for if running is not None else None)
                self._emit("finished", new, f"{new.name} finished on {where}")
            else:
                if reason == "timeout":
                    why = f"timed out after {rec.spec.timeout_s:g} s"
                elif code < 0:
                    why = f"killed by signal {_signal_name(-code)}"
                else:
                    why = f"exited with status {code}"
                why = "; ".join(filter(None, [why, left]))
                new = self.store.apply_retry_policy(task_id, why, now=now, **base)
                self._emit("queued" if new.state == "queued" else "failed", new, f"{new.name}: {new.reason}")
            job.files.discard()  # recorded: the supervisor's files have said what they had to say
        self.request_dispatch(urgent=True)

    # -- monitor ticks ---------------------------------------------------------------------------
    def _on_snapshot(self, snapshot: Snapshot) -> None:
        """Monitor thread: stop jobs whose device is lost or gone, then ask for a pass."""
        with self._lock:
            running = list(self._jobs.values())
        present = {r.info.key: r.sample.state for r in snapshot.readings}
        self.devices_seen.note(r.info for r in snapshot.readings)
        # Snapshots in a row each device was missing from: counted once per snapshot and per device
        # (not per job), and cleared when it shows again, whether or not a job runs there now.
        watched = set(self._absent_ticks) | {r.device for r in running if r.device != "cpu"}
        for key in watched:
            if key in present:
                self._absent_ticks.pop(key, None)
            else:
                self._absent_ticks[key] = self._absent_ticks.get(key, 0) + 1
        for r in running:
            if r.device == "cpu":
                continue
            state = present.get(r.device)
            # "lost" is the driver's word: act at once. A device missing from one snapshot may be a
            # backend hiccup (skipped for that tick): act only when it stays gone for a few ticks.
            gone = state == "lost" or self._absent_ticks.get(r.device, 0) >= GONE_AFTER_TICKS
            if gone and r.job.kill_reason is None:
                log.warning("device %s lost: stopping task #%d", r.device, r.task_id)
                r.job.cancel("lost")
        # Ticks only catch external changes. With a huge queue a pass is not free: the dispatcher
        # keeps tick-driven passes under ~5 % of the time (small queues still get one every tick).
        self._tick_pending = True
        self._wake.set()

    # -- internals -----------------------------------------------------------------------------
    def _dispatch_loop(self) -> None:
        """Run passes when asked. Urgent requests (a job exited, resume, close) run at once; plain ones
        (submits, cancels) wait until the last pass is ``REQUEST_PASS_BUDGET`` times its duration ago,
        ticks ``TICK_PASS_BUDGET`` times. A pass over a few tasks costs well under a millisecond, so
        this only ever delays anything with a huge queue, where a pass per submit would starve the
        submitters (10,000 submits must not cost 10,000 passes over up to 10,000 tasks)."""
        while True:
            gap_s = min(MAX_REQUEST_GAP_S, REQUEST_PASS_BUDGET * self._last_pass_s)
            request_at = self._last_pass_end + gap_s
            tick_at = self._last_pass_end + TICK_PASS_BUDGET * self._last_pass_s
            now_mono = time.monotonic()
            deadlines = []
            wall_due = [t for t in (self._due_s, *(x.next_due_s() for x in self._timers)) if t is not None]
            if wall_due:
                deadlines.append(min(WALL_RECHECK_S, max(0.0, min(wall_due) - self.clock())))
            if self._tick_pending:
                deadlines.append(max(0.0, tick_at - now_mono))
            if self._requested:
                deadlines.append(max(0.0, request_at - now_mono))
            if not self._urgent.is_set():
                self._wake.wait(min(min(deadlines), 3600.0) if deadlines else None)
            if self._closed:
                return
            self._wake.clear()
            jump = self._clock_jumps.jumped()
            if jump is not None:  # the times tasks were put aside until mean something else now
                log.info("the wall clock was set %+.0f s: planning every waiting task afresh", jump)
                with self._lock:
                    self._parked.clear()
                    self._parked_due.clear()
                    self.store.bring_back()
                self._urgent.set()
            now_mono = time.monotonic()
            urgent = self._urgent.is_set()
            now = self.clock()
            for timer in self._timers:
                self._run_timer(timer, now)
            due = self._due_s is not None and now >= self._due_s
            tick_ok = self._tick_pending and now_mono >= tick_at
            asked = self._requested and (urgent or now_mono >= request_at)
            if not (asked or urgent or due or tick_ok):
                continue
            self._urgent.clear()
            self._requested = False
            self._tick_pending = False
            started = time.perf_counter()
            try:
                self.dispatch()
            except Exception:
                log.exception("dispatch pass failed")
            self._last_pass_s = time.perf_counter() - started
            self._last_pass_end = time.monotonic()

    def add_timer(self, timer: Timer) -> None:
        """Wake the dispatcher at ``timer.next_due_s()`` too, and call ``timer.run_due(now)`` then (in the
        dispatcher thread, outside the lock; the recurring schedules use it). The one clock of the queue."""
        self._timers.append(timer)
        self._wake.set()

    def _run_timer(self, timer: Timer, now: float) -> None:
        due = timer.next_due_s()
        if due is None or due > now:
            return
        try:
            timer.run_due(now)
        except Exception:
            log.exception("a timer failed")

    def _event_loop(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            if self.on_event is not None:
                try:
                    self.on_event(event)
                except Exception:
                    log.exception("queue event handler failed")

    def _emit(self, kind: Any, rec: TaskRecord, message: str) -> None:
        self._events.put(QueueEvent(kind, rec, message))
        self.edits.notify_waiters()

    def _device_states(
        self, snapshot: Snapshot | None, *, needs: frozenset[str] = frozenset()
    ) -> builtins.list[DeviceState]:
        return self.device_book.states(snapshot, list(self._jobs.values()), self._paused, needs=needs)

    def device_name(self, key: str | None) -> str:
        return self.device_book.device_name(key)

    def _device_key(self, name: str) -> str:
        return self.device_book.device_key(name, list(self._jobs.values()), self._paused)

    def devices(self) -> tuple[DeviceSlots, ...]:
        """Each device the queue can use, for listings: key, name, slots, jobs running, paused."""
        return tuple(
            DeviceSlots(key=d.key, name=d.name, slots=d.slots, running=d.running, paused=d.paused)
            for d in self._device_states(self.monitor.latest)
        )

    def absent_device_notes(self, spec: TaskSpec) -> builtins.list[str]:
        """For each device the task names that was seen before but is not present now (an unplugged
        eGPU): that it waits for it. (Names that match nothing at all are refused at submit.)"""
        snapshot = self.monitor.latest
        if snapshot is None:
            return []
        present = self._device_states(snapshot)
        return remembered_absent_note(spec.device_prefs, present, self.devices_seen.remembered())

    def devices_for_checks(self) -> tuple[builtins.list[DeviceState], builtins.list[SeenDevice]] | None:
        """The devices present now (the CPU included) and those seen before, for the submit-time checks;
        None before the first reading."""
        snapshot = self.monitor.latest
        if snapshot is None:
            return None
        return self._device_states(snapshot), self.devices_seen.remembered()

    def check_devices(self, *specs: TaskSpec) -> None:
        """Refuse device names that match nothing present or seen before (``--device 4090``) and a
        memory request larger than every device the task may use (``device_checks``)."""
        known = self.devices_for_checks()
        if known is None:
            return
        for spec in specs:
            if spec.machine is not None or spec.origin is not None:
                # The cluster link checked one with a machine against that machine's devices
                # (``check_spec``); one another machine handed here keeps the sender's preferences
                # after the device chosen for it, and the sender checked those.
                continue
            check_submit(spec, *known)

    def _where(self, key: str | None, demo_for: str | None) -> str:
        """Where a job runs, for messages: its device, or the CPU in place of a simulated GPU (demo)."""
        return f"the CPU (demo: in place of {demo_for})" if demo_for is not None else self.device_name(key)

    def _save_paused(self, paused: Paused) -> None:
        self._paused = paused
        try:
            write_paused(self.paths.data_dir, paused)
        except OSError:
            log.exception("could not save the pause state")


def demo_note(device_name: str, *, done: bool) -> str:
    """What a torch job on a simulated GPU says: it runs (ran) on the CPU instead."""
    return f"demo: {'ran' if done else 'running'} on the CPU in place of {device_name}"


def _demo_done(reason: str, device_name: str, log_path: str | None) -> str:
    """The reason of a demo job that ended (its note in the past tense), also written to its log."""
    done = demo_note(device_name, done=True)
    if log_path:
        try:
            with open(open_private_append(Path(log_path)), "a", encoding="utf-8") as f:  # no FIFO, no link
                f.write(f"\n{done} (simulated GPUs cannot run kernels)\n")
        except OSError:
            log.warning("could not append to %s", log_path)
    return reason.replace(demo_note(device_name, done=False), done) if reason else done


def _processes(count: int) -> str:
    return "1 process" if count == 1 else f"{count} processes"


def leftover_note(count: int) -> str:
    """What the task says when its job left processes running that its supervisor stopped."""
    if not count:
        return ""
    return f"{_processes(count)} {'was' if count == 1 else 'were'} still running after the job ended: stopped"


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
