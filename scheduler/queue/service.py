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
``{out}`` file, notes) decides what an attempt runs; the part ``runs`` (``job_runs.JobRuns``) marks the
task running, launches the plan, records the pid and, from the job's watcher, how it ended; it also
adopts the jobs an earlier owner left and stops the jobs of a lost device.
"""

from __future__ import annotations

import builtins
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from gputray.monitor.monitor import Monitor
from gputray.monitor.records import Snapshot
from gputray.scheduler.cluster_port import ClusterPort
from gputray.scheduler.jobs import reach
from gputray.scheduler.jobs.job_log import DEFAULT_LOG_MAX_BYTES
from gputray.scheduler.jobs.launcher import HOST, Job
from gputray.scheduler.paths import Paths
from gputray.scheduler.pyenvs.choice import EnvChooser, ProbingChooser
from gputray.scheduler.queue import dependencies as deps
from gputray.scheduler.queue.device_book import DeviceBook
from gputray.scheduler.queue.device_checks import (
    DEVICES_SEEN_FILE,
    DevicesSeen,
    SeenDevice,
    check_submit,
    remembered_absent_note,
)
from gputray.scheduler.queue.dispatch_pass import DispatchPass, PlacedStart
from gputray.scheduler.queue.edits import QueueEdits, TaskStateError
from gputray.scheduler.queue.estimator import Estimator
from gputray.scheduler.queue.job_runs import EventKind, JobRuns
from gputray.scheduler.queue.pause_file import read_paused, write_paused
from gputray.scheduler.queue.placement import (
    DeviceState,
)
from gputray.scheduler.queue.put_aside import PutAside
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.timing import ClockJumps
from gputray.scheduler.queue.waits_book import WaitsBook
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons import refusals as refused
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.replies import DeviceSlots, Paused
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.recipes import check_runnable, specs_for_files
from gputray.scheduler.tasks.records import (
    PENDING_STATES,
    Offer,
    QueueEvent,
    TaskPatch,
    TaskRecord,
    TaskSpec,
)
from gputray.scheduler.tasks.states import ACTIVE_STATES

log = logging.getLogger(__name__)

TICK_PASS_BUDGET = 20.0  # a monitor tick starts a pass only if the last one ended 20x its duration ago
REQUEST_PASS_BUDGET = 10.0  # a submit/cancel starts a pass only if the last one ended 10x its duration ago
MAX_REQUEST_GAP_S = 1.0  # ... but never later than this
WALL_RECHECK_S = 60.0  # a wait for a wall-clock time looks at the clock at least this often (it may be set)


class Timer(Protocol):
    """Something the dispatcher wakes for besides the tasks' own times (see ``add_timer``)."""

    def next_due_s(self) -> float | None: ...

    def run_due(self, now_s: float) -> object: ...


class QueueService(DispatchPass):
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
        self.runs = JobRuns(self)  # start, end, adopt and stop jobs
        self.estimates = Estimator(
            store, emit_offer=lambda r, why, o: self.emit("offer", r, why, o), clock=self.clock
        )
        self._last_pass_s = 0.0
        self._last_pass_end = 0.0
        self._requested = False
        self._tick_pending = False
        self._paused = read_paused(self.paths.data_dir)
        self._closed = False
        self._started = False
        self._wake = threading.Event()
        self._urgent = threading.Event()
        self._due_s: float | None = None
        self._put_aside = PutAside()  # tasks held back only by their start time or window, until then
        self.waits_book = WaitsBook()  # the device each pending task waits for (the metrics read it)
        self._clock_jumps = ClockJumps(clock)  # the wall clock set: every time gate is planned afresh
        self._dispatcher: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._events: queue.Queue[QueueEvent | None] = queue.Queue()
        self._timers: builtins.list[Timer] = []
        self._event_thread: threading.Thread | None = None
        self.passes = 0  # dispatch passes run (for tests and benches)
        self._last_plan_s = 0.0  # how long the last pass took to plan (its job starts not counted)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Recover interrupted tasks, subscribe to monitor ticks, start the dispatcher, dispatch."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self._closed = False
            self.runs.recording = True
        self._event_thread = threading.Thread(
            target=self._event_loop, name="gputray-queue-events", daemon=True
        )
        self._event_thread.start()
        adopted = self.runs.adopt_left_jobs()
        reach.remove_stale_cgroups()  # empty job groups left while no owner was up
        for rec in self.store.recover_after_crash(skip=adopted):
            cut_short = isinstance(rec.record.reason, c.StartCutShort)  # its job never began: queued
            self.emit(
                "queued" if cut_short else "interrupted",
                rec.record,
                c.named(rec.record.name, rec.record.reason, rec.record.state),
            )
        if self.monitor.latest is None:
            self.monitor.sample_once()
        self._unsubscribe = self.monitor.subscribe(self._on_snapshot)
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="gputray-dispatch", daemon=True)
        self._dispatcher.start()
        self.request_dispatch(urgent=True)

    def close(self, *, kill_running: bool = False) -> None:
        """Stop dispatching. Running jobs are left running unless ``kill_running`` (then: interrupted).
        Jobs left running are recorded by the next owner (their supervisors write their exits)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not kill_running:
                self.runs.recording = False
            running = list(self.runs.jobs.values())
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
            self.runs.recording = False  # the store closes after us; later exits are the next owner's
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
            return sorted(self.runs.jobs)

    def running_job(self, task_id: int) -> Job | None:
        """The live job of a task running here; None while it is not (yet) running."""
        running = self.runs.jobs.get(task_id)
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
            self.emit("queued", rec, c.Queued(name=rec.name, task_id=rec.id))
        self.request_dispatch()
        return records

    def cancel(self, task_id: int) -> TaskRecord:
        """Cancel a pending task, or stop a running one (its whole process tree); waits up to ~10 s for it."""
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state in PENDING_STATES or rec.state in ("interrupted", "starting"):  # starting: its
                new = self.store.apply(  # launch then finds the task cancelled and stops the job
                    task_id, life.Cancel(reason=c.Cancelled(), ended_at=self.clock()), expect_state=rec.state
                )
                if new is None:  # it just started: cancel the running job below
                    rec = self.store.get(task_id)
                else:
                    self.emit("cancelled", new, c.JobCancelled(name=new.name))
                    self.request_dispatch()
                    return new
            if rec.state in {"succeeded", "failed", "cancelled"}:
                if rec.state == "cancelled":
                    return rec
                raise TaskStateError(refused.AlreadyEnded(task_id=task_id, state=rec.state))
            running = self.runs.jobs.get(task_id)
        if running is None:  # running in the store but not ours (should not happen after recovery)
            new = self.store.must_apply(task_id, life.Cancel(reason=c.Cancelled(), ended_at=self.clock()))
            self.emit("cancelled", new, c.JobCancelled(name=new.name))
            return new
        running.job.cancel("cancelled")
        running.job.wait(timeout=10)
        return self.store.get(task_id)

    def retry(self, task_id: int) -> TaskRecord:
        """Queue a finished task again (at the end of the queue). Attempts count on ("attempt 2"); its
        automatic retries start afresh. Tasks it failed through ``after`` are queued again too."""
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state in PENDING_STATES or rec.state in ACTIVE_STATES:
                raise TaskStateError(refused.RetryIsForEnded(task_id=task_id, state=rec.state))
            new = self._requeue(rec, c.RequeuedByRequest())
            if new is None:
                raise TaskStateError(refused.ChangedMeanwhile(task_id=task_id))
            back = [
                again
                for dependant in deps.failed_because_of(task_id, self.store.list())
                if (again := self._requeue(dependant, c.RequeuedWith(task_id=task_id)))
            ]
        self.emit("queued", new, c.Queued(name=new.name, task_id=new.id, again=True))
        for again in back:
            self.emit("queued", again, c.named(f"{again.name} (#{again.id})", again.reason, again.state))
        self.request_dispatch()
        return new

    def _requeue(self, rec: TaskRecord, reason: Reason) -> TaskRecord | None:
        """A finished task back in the queue, at its end; None when its state changed meanwhile."""
        step = life.Requeue(reason=reason, now=self.clock(), position=self.store.next_position())
        return self.store.apply(rec.id, step, expect_state=rec.state)

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
        """One dispatch pass now, in the calling thread: start what can start, record why the rest waits.
        Planned under the queue's lock, its jobs started after it (``JobRuns.start``)."""
        placed: builtins.list[PlacedStart] = []
        planning = time.perf_counter()
        try:
            self._plan_pass(placed)
        finally:
            self._last_plan_s = time.perf_counter() - planning  # the pass's own cost, not its starts'
        for task, decision, devices, known in placed:
            if not self.runs.start(task, decision, devices, known):
                self.request_dispatch()  # it changed meanwhile, or could not start: planned again

    # -- monitor ticks ---------------------------------------------------------------------------
    def _on_snapshot(self, snapshot: Snapshot) -> None:
        """Monitor thread: stop jobs whose device is lost or gone, then ask for a pass."""
        self.devices_seen.note(r.info for r in snapshot.readings)
        self.estimates.note_snapshot(snapshot)
        self.runs.energy.on_snapshot(snapshot)
        self.runs.on_snapshot(snapshot)  # peaks (``job_peaks``), lost devices
        self.runs.write_late_notes()
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
                    self._put_aside.clear()
                    self.store.bring_back()
                    self.runs.clock_set(jump)
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
            try:
                self.dispatch()
            except Exception:
                log.exception("dispatch pass failed")
                self._due_s = self.clock() + 1.0  # tried again, never left for a tick that may be far
            self._last_pass_s = self._last_plan_s
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

    def emit(self, kind: EventKind, rec: TaskRecord, message: Reason, offer: Offer | None = None) -> None:
        """Hand an event to ``on_event`` (in its own thread, in order) and wake every ``wait_ended``;
        a run that succeeded teaches the estimates."""
        if kind == "finished":
            self.estimates.finished(rec)
        self.waits_book.on_event(kind, rec.id)
        self._events.put(QueueEvent(kind, rec, message, offer))
        self.edits.notify_waiters()

    def _device_states(
        self, snapshot: Snapshot | None, *, needs: frozenset[str] = frozenset()
    ) -> builtins.list[DeviceState]:
        return self.device_book.states(snapshot, list(self.runs.jobs.values()), self._paused, needs=needs)

    def device_name(self, key: str | None) -> str:
        return self.device_book.device_name(key)

    def _device_key(self, name: str) -> str:
        return self.device_book.device_key(name, list(self.runs.jobs.values()), self._paused)

    def devices(self) -> tuple[DeviceSlots, ...]:
        """Each device the queue can use, for listings: key, name, slots, jobs running, paused, when it
        frees up."""
        states = self._device_states(self.monitor.latest)
        return self.estimates.device_slots(states, list(self.runs.jobs), self.clock())

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

    def _save_paused(self, paused: Paused) -> None:
        self._paused = paused
        try:
            write_paused(self.paths.data_dir, paused)
        except OSError:
            log.exception("could not save the pause state")
