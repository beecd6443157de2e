"""The jobs that run here: start one on the device the dispatcher placed it on, record how it ended
(and what the retry policy makes of it), adopt those an earlier owner left running, and stop those whose
device is lost.

``JobRuns`` is a part of ``QueueService`` (``service.runs``) and reaches the queue only through what
``RunsQueue`` names: the store, the monitor, the queue's lock (``start`` takes it to check and to
record, and lets go of it while the supervisor answers; a job's watcher thread takes it to record the
exit), its events, a dispatch pass after an exit, and where Python envs and device names come from.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

import msgspec

from gputray.monitor.monitor import Monitor
from gputray.monitor.records import DeviceInfo, Snapshot
from gputray.scheduler.jobs.invocation import LaunchError, drop_unused_out
from gputray.scheduler.jobs.job_files import JobFiles, find_runs, read_run, supervisor_alive
from gputray.scheduler.jobs.job_log import make_room
from gputray.scheduler.jobs.launch_plan import LaunchPlan, prepare_launch
from gputray.scheduler.jobs.launcher import Job, LaunchFailed, adopt, launch, stop_leftover
from gputray.scheduler.jobs.oom import OutOfMemory, oom_in_log
from gputray.scheduler.jobs.progress import PROGRESS_VAR, progress_file
from gputray.scheduler.paths import Paths, job_umask, open_private_append
from gputray.scheduler.pyenvs.choice import EnvChooser, EnvMissing, EnvReady, EnvStatus
from gputray.scheduler.queue.device_book import DeviceBook
from gputray.scheduler.queue.estimator import Estimator
from gputray.scheduler.queue.job_energy import EnergyMeter, energy_line
from gputray.scheduler.queue.job_peaks import PeakMeter
from gputray.scheduler.queue.late_move import Move, moved_step
from gputray.scheduler.queue.oom_elsewhere import elsewhere
from gputray.scheduler.queue.placement import DeviceState, Placement
from gputray.scheduler.queue.start_backoff import StartBackoff, is_transient
from gputray.scheduler.queue.starting import StartAbandoned, commit_to_start
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import TaskNotFound
from gputray.scheduler.queue.unlocked import unlocked as _unlocked
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import Paused
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import PENDING_STATES, TaskRecord, TaskSpec

log = logging.getLogger("gputray.scheduler.queue.service")

GONE_AFTER_TICKS = 3  # snapshots in a row without a device before its jobs are stopped

EventKind = Literal[
    "queued", "started", "redirected", "waiting", "finished", "failed", "cancelled", "interrupted", "offer"
]


@dataclass
class Running:
    task_id: int
    job: Job
    device: str
    spec: TaskSpec
    pid: int
    out: str | None = None  # the {out} file it writes, kept from other jobs until it ends
    demo_for: str | None = None  # the simulated GPU a torch job runs on the CPU in place of
    paused: bool = False  # frozen (``job_pause``): it holds no slot, only the memory it keeps
    started_mono: float | None = None  # the monotonic clock at its start (its run file's, when adopted)

    def run_s(self) -> float | None:
        """How long the job ran by the monotonic clock (a wall clock set meanwhile changes nothing);
        None where that is not known (an exit file of an older supervisor's, or of another boot)."""
        end, start = self.job.ended_mono, self.started_mono
        return end - start if end is not None and start is not None and end >= start else None


class RunsQueue(Protocol):
    """What the running jobs need of their queue (``QueueService``)."""

    @property
    def store(self) -> TaskStore: ...

    @property
    def monitor(self) -> Monitor: ...

    @property
    def paths(self) -> Paths: ...

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def log_max_bytes(self) -> int: ...

    @property
    def env_chooser(self) -> EnvChooser: ...

    @property
    def device_book(self) -> DeviceBook: ...

    def clock(self) -> float: ...

    def emit(self, kind: EventKind, rec: TaskRecord, message: Reason) -> None: ...

    def request_dispatch(self, *, urgent: bool = False) -> None: ...

    def device_name(self, key: str | None) -> str: ...

    @property
    def estimates(self) -> Estimator: ...

    @property
    def closed(self) -> bool: ...

    def paused(self) -> Paused: ...


class JobRuns:
    """Start, end, adopt and stop the queue's jobs; see the module docstring."""

    def __init__(self, queue: RunsQueue) -> None:
        self.queue = queue
        self.store = queue.store
        self.monitor = queue.monitor
        self._lock = queue.lock
        self.jobs: dict[int, Running] = {}  # task id -> its job running here
        self.start_backoff = StartBackoff()  # tasks whose start failed for want of fds, processes, memory
        self.recording = True  # False once the queue closed: exits are then left to the next owner
        self._absent_ticks: dict[str, int] = {}
        self.energy = EnergyMeter(queue.monitor.clock)  # the GPU energy of each running job
        self.peaks = PeakMeter()  # the most GPU memory each running job held (``job_peaks``)
        self._launching: dict[int, threading.Event] = {}  # tasks being started: set once recorded
        self.late_notes: builtins.list[tuple[str, str]] = []  # log lines a full disk refused: (log, line)
        self.room_notes: dict[int, Callable[[], Reason]] = {}  # task id -> what make_room.py did for it
        self.moves: dict[int, Move] = {}  # task id -> where its job, stopped, runs again (``late_move``)

    def on_snapshot(self, snapshot: Snapshot) -> None:
        """Monitor thread: each job's peak memory, then the jobs of lost devices stopped."""
        self.peaks.on_snapshot(snapshot)
        self.stop_on_lost_devices(snapshot)

    def stop_on_lost_devices(self, snapshot: Snapshot) -> None:
        """Monitor thread: stop the jobs whose device is lost, or gone from a few snapshots in a row."""
        with self._lock:
            running = list(self.jobs.values())
        present = {r.info.key: r.sample.state for r in snapshot.readings}
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

    def with_energy_so_far(self, records: Sequence[TaskRecord]) -> builtins.list[TaskRecord]:
        """The records, each running one with the GPU energy its job used so far (the store has it only
        once the job ended): what listings show."""
        out = builtins.list(records)
        for i, rec in enumerate(out):
            so_far = self.energy.so_far(rec.id) if rec.state == "running" else None
            if so_far is not None:
                out[i] = rec.replace(
                    energy_j=so_far.energy_j,
                    energy_shared=so_far.shared,
                    energy_estimated_s=so_far.estimated_s,
                )
        return out

    def adopt_left_jobs(self) -> set[int]:
        """Jobs an earlier owner started (it crashed, or quit keeping them): a task whose supervisor
        still runs is watched as running again; one whose job ended meanwhile gets its real exit
        recorded from the exit file (at once, by its watcher). Also a job started just before a crash
        that had not yet been marked running (its run file counts one attempt more). The ids."""
        runs = find_runs(self.queue.paths.logs_dir)
        adopted: set[int] = set()
        if not runs:
            return adopted
        with self._lock:  # watchers that fire at once wait until each task is set up
            for rec in self.store.list(states=("running", "starting", *PENDING_STATES)):
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
                    adopted_run = life.Adopt(
                        device=run.device,
                        attempts=run.attempt,
                        started_at=run.started_at,
                        log_path=str(run.log_path),
                        pid=run.pid,
                        pid_create_time=run.pid_create_time,
                    )
                    marked = self.store.apply(rec.id, adopted_run, expect_state=rec.state)
                    if marked is None:
                        continue
                elif rec.pid is None:
                    self.store.must_apply(
                        rec.id, life.Launched(pid=run.pid, pid_create_time=run.pid_create_time)
                    )
                if run.pid_create_time is None and rec.pid == run.pid and rec.pid_create_time is not None:
                    run = dataclasses.replace(run, pid_create_time=rec.pid_create_time)  # pid reuse check
                job = adopt(run, on_exit=functools.partial(self._on_exit, rec.id))
                self.jobs[rec.id] = Running(
                    rec.id, job, run.device, rec.spec, run.pid, run.out, started_mono=run.started_mono
                )
                self.jobs[rec.id].paused = rec.paused_at is not None  # adopted paused: it stays so
                self.monitor.job_started(
                    run.device,
                    run.pid,
                    name=rec.spec.name,
                    util_percent=rec.spec.util_percent,
                    vram_bytes=rec.spec.memory_need_bytes,
                )
                self.energy.start(rec.id, run.device, run.pid)  # measured from now: a lower bound
                self.peaks.start(rec.id, run.pid)
                adopted.add(rec.id)
                log.info("task #%d: adopted its job (pid %d) from an earlier owner", rec.id, run.pid)
        for run in runs.values():  # files of tasks that have ended or are gone: a live job there is a stray
            if supervisor_alive(run.files):
                log.warning("task #%d: stopping a job the queue does not run (pid %d)", run.task_id, run.pid)
                stop_leftover(run)
            run.files.discard()
        return adopted

    def start(
        self,
        task: TaskRecord,
        decision: Placement,
        devices: Sequence[DeviceState],
        known: Sequence[DeviceInfo],
    ) -> bool:
        """Start the task the pass placed, once the pass let go of the queue's lock: checked (and the
        start recorded) under the lock, the supervisor answered outside it (``launcher.launch``, every
        wait bounded): a supervisor slow to answer never holds up a cancel, a submit or a job's end.
        Whether its job runs now (else the pass is planned again)."""
        with self._lock:
            if not self._still_placeable(task, decision):
                log.info("task #%d changed before it could start: planned again", task.id)
                return False
            gate = self._launching[task.id] = threading.Event()  # its end waits until its start is in
            try:
                self._start(task, decision, devices, known)
            finally:
                del self._launching[task.id]
                gate.set()
            return task.id in self.jobs

    def _still_placeable(self, task: TaskRecord, decision: Placement) -> bool:
        """Whether the task may still start as the pass placed it (no cancel, no pause meanwhile)."""
        if self.queue.closed:
            return False
        try:
            now = self.store.get(task.id)
        except TaskNotFound:
            return False
        paused = self.queue.paused()
        # Its state only: the pass hands on records it decorated (a memory need it learned …), and a
        # start recorded later expects this state again (a cancel meanwhile wins).
        return now.state == task.state and not paused.all and decision.device not in paused.devices

    def _start(
        self,
        task: TaskRecord,
        decision: Placement,
        devices: Sequence[DeviceState],
        known: Sequence[DeviceInfo],
    ) -> None:
        info = next(d.info for d in devices if d.key == decision.device)
        spec = task.spec
        now = self.queue.clock()
        notes: builtins.list[Reason] = [decision.reason] if decision.reason is not None else []
        oom = next((r for r in c.inner(task.reason) if isinstance(r, c.RanOutOfMemory | c.MovedLate)), None)
        if oom is not None:  # moved here (out of memory, or late where it ran): it still says so
            notes.insert(0, oom)
        notes[:0] = [self.room_notes.pop(task.id)()] if task.id in self.room_notes else []  # freed 9.8 GiB…
        chosen = self._python_env(task, info)
        if chosen is not None and not isinstance(chosen, EnvReady):
            # The env went away since the pass began (a config change): the task waits, saying why.
            self.store.apply(task.id, life.Wait(reason=chosen.reason), expect_state=task.state)
            self.queue.request_dispatch()
            return
        pyenv = chosen.env if chosen is not None else None
        if chosen is not None and chosen.on_cpu:
            notes.insert(0, c.DemoOnCpu(device=info.name))
        log_path = self.queue.paths.logs_dir / f"task-{task.id}.log"
        running = life.Start(  # what the store says once the process exists, never before
            device=info.key,
            env=pyenv.name if pyenv is not None and pyenv.name else None,
            reason=c.chain(*notes),
            attempts=task.attempts + 1,
            started_at=now,
            log_path=str(log_path),
        )
        launch_plan: LaunchPlan | None = None
        try:
            launch_plan = prepare_launch(
                task.replace(**running.columns(task)),
                info,
                known,
                python=None if pyenv is None else str(pyenv.python),
                extra_env={} if pyenv is None else pyenv.extra_env,
                taken_outs={r.out for r in self.jobs.values() if r.out},
                queue_file=str(self.store.path),
                now_s=now,
                on_cpu=chosen is not None and chosen.on_cpu,
                pair=chosen.pair if chosen is not None else None,
            )
            make_room(str(log_path), self.queue.log_max_bytes)  # earlier attempts leave this one room
            task = commit_to_start(self.store, task, info.key)  # on disk before the process exists
            with _unlocked(self._lock):
                job = self._launch(task, info, spec, launch_plan, log_path)
        except Exception as exc:  # a record that cannot be launched fails with its reason; the pass goes on
            self._not_started(task, running, launch_plan, exc, now)
            return
        try:
            launched = msgspec.structs.replace(running, pid=job.pid, pid_create_time=job.create_time)
            started = self.store.apply(task.id, launched, expect_state=task.state)
        except Exception as exc:  # the job runs but its row says otherwise: stop it, try again later
            log.exception("task #%d: its start could not be recorded", task.id)
            job.cancel("cancelled")
            self._hold_back(task, exc, now)
            return
        if started is None:  # cancelled or changed meanwhile: its process must not run on
            log.info("task #%d changed while its job was starting: stopped, planned again", task.id)
            job.cancel("cancelled")
            return
        self._started(task, decision, info, chosen, job, launch_plan, started)

    def _launch(
        self, task: TaskRecord, info: DeviceInfo, spec: TaskSpec, launch_plan: LaunchPlan, log_path: Path
    ) -> Job:
        progress_path = progress_file(log_path)  # the job may write ``done total`` there (docs/queue.md)
        progress_path.unlink(missing_ok=True)  # an earlier attempt's
        return launch(
            list(launch_plan.argv),
            env={**launch_plan.env, PROGRESS_VAR: str(progress_path)},
            log_path=log_path,
            cwd=spec.cwd,
            on_exit=functools.partial(self._on_exit, task.id),
            timeout_s=spec.timeout_s,
            header=launch_plan.header,
            umask=job_umask(),  # the user's own: gputray's private umask is not the job's
            log_max_bytes=self.queue.log_max_bytes,
            meta={
                "task_id": task.id,
                "attempt": task.attempts + 1,
                "device": info.key,
                "out": launch_plan.out,
                "queue_file": str(self.store.path),
            },
        )

    def _not_started(
        self,
        task: TaskRecord,
        running: life.Start,
        launch_plan: LaunchPlan | None,
        exc: Exception,
        now: float,
    ) -> None:
        """A record that cannot be prepared or launched: held back (a want of resources now), counted as
        an interrupted attempt (its supervisor was killed as it started), else failed with its reason."""
        if launch_plan is not None and launch_plan.out is not None:
            drop_unused_out(launch_plan.out)
        if isinstance(exc, StartAbandoned):  # cancelled or changed as it was about to launch
            return
        if is_transient(exc):  # out of fds, processes, memory for now: not the task's fault
            self._hold_back(task, exc, now)
            return
        if isinstance(exc, LaunchFailed) and exc.supervisor_killed:  # it ran, if only for a moment
            self._interrupted_at_start(task, running, exc)
            return
        if not isinstance(exc, (LaunchError, LaunchFailed, OSError)):
            log.exception("task #%d could not be prepared", task.id)
        not_started = life.CouldNotStart(
            start=running, reason=c.CouldNotStart(error=str(exc)), ended_at=self.queue.clock()
        )
        failed = self.store.apply(task.id, not_started, expect_state=task.state)
        if failed is not None:
            self.queue.emit("failed", failed, c.JobCouldNotStart(name=failed.name, error=str(exc)))

    def _started(
        self,
        task: TaskRecord,
        decision: Placement,
        info: DeviceInfo,
        chosen: EnvStatus | None,
        job: Job,
        launch_plan: LaunchPlan,
        started: TaskRecord,
    ) -> None:
        spec = task.spec
        self.start_backoff.started(task.id)
        demo_for = info.name if isinstance(chosen, EnvReady) and chosen.on_cpu else None
        self.jobs[task.id] = Running(
            task.id, job, info.key, spec, job.pid, launch_plan.out, demo_for, started_mono=time.monotonic()
        )
        self.queue.device_book.names_used[info.key] = info.name
        self.monitor.job_started(
            info.key,
            job.pid,
            name=spec.name,
            util_percent=spec.util_percent,
            vram_bytes=spec.memory_need_bytes,
        )
        self.energy.start(task.id, info.key, job.pid)
        self.peaks.start(task.id, job.pid)
        if decision.redirected and decision.reason is not None:
            self.queue.emit("redirected", started, c.Named(name=spec.name, why=decision.reason))
        else:
            where = None if info.key == "cpu" else info.name
            self.queue.emit("started", started, c.JobStarted(name=spec.name, device=where, demo_for=demo_for))

    def _interrupted_at_start(self, task: TaskRecord, running: life.Start, exc: LaunchFailed) -> None:
        """Its supervisor was killed as the job started (by the job itself, maybe): an attempt that was
        interrupted, not a refusal to start; the retry policy decides what comes next."""
        counted = self.store.apply(task.id, running, expect_state=task.state)
        if counted is None:
            return
        ended = life.JobEnd(exit_code=None, ended_at=self.queue.clock())
        why = c.SupervisorKilled(at_start=True, stopped=exc.stopped)
        new = self.store.must_apply(task.id, life.RetryOrFail(why=why, now=self.queue.clock(), end=ended))
        self.queue.emit("interrupted", new, c.Named(name=new.name, why=new.reason or why))

    def _hold_back(self, task: TaskRecord, exc: BaseException, now: float) -> None:
        """A start that failed for want of a resource now: the task waits, saying why, and is tried
        again after a back-off (``start_backoff``)."""
        wait = self.start_backoff.hold(task.id, exc, now)
        log.warning("task #%d: %s", task.id, render(wait.reason))
        new = self.store.apply(task.id, life.Wait(reason=wait.reason), expect_state=task.state)
        if new is not None:
            self.queue.emit("waiting", new, c.Named(name=new.name, why=wait.reason))

    def _python_env(self, task: TaskRecord, info: DeviceInfo) -> EnvStatus | None:
        """A torch task's env on the device (an ``EnvReady``, or why there is none now); None for other
        kinds of task, which run what they name."""
        if task.spec.kind != "torch":
            return None
        try:
            return self.queue.env_chooser.status(
                info, task.spec.needs, allow_unproven=task.spec.allow_unproven
            )
        except Exception as exc:
            log.exception("env lookup failed")
            return EnvMissing(c.EnvLookupFailed(error=str(exc)))

    def clock_set(self, jump_s: float) -> None:
        """The wall clock was set by ``jump_s``: a running job's start moves with it, so that how long
        it has run (`queue`'s DUR, the estimates' time left) stays true; its end is measured by the
        monotonic clock (``_on_exit``). Where the job's monotonic start is known its start is put where
        that says (now less how long it has run), not moved by ``jump_s``: a job that started between
        the jump and the look that saw it already has its start on the new clock."""
        for rec in self.store.list(states=("running",)):
            if rec.started_at is None:
                continue
            run = self.jobs.get(rec.id)
            move = jump_s
            if run is not None and run.started_mono is not None:
                move = self.queue.clock() - (time.monotonic() - run.started_mono) - rec.started_at
                if abs(move) < 1.0:
                    continue
            self.store.apply(rec.id, life.ClockSet(jump_s=move), expect_state="running")

    def _on_exit(self, task_id: int, job: Job, code: int) -> None:
        """Watcher thread: record how the job ended, apply the retry policy, dispatch the next one.

        After ``close()`` that kept the jobs running nothing is recorded here: the job's supervisor
        wrote its exit beside the log, and the next owner records it from there."""
        gate = self._launching.get(task_id)
        if gate is not None:  # it ended before its start was recorded (the launch let go of the lock)
            gate.wait()
        with self._lock:
            if not self.recording:
                return
            running = self.jobs.pop(task_id, None)
            if running is not None and running.out is not None and (code != 0 or job.kill_reason):
                drop_unused_out(running.out)  # the file taken for its result, if it wrote none
            device = running.device if running else None
            if device is not None:
                self.monitor.job_ended(device, job.pid)
            used = self.energy.finish(task_id)
            if (peak := self.peaks.finish(task_id)) is not None:  # learned with the run if it succeeds
                self.queue.estimates.peaks[task_id] = peak
            try:
                rec = self.store.get(task_id)
            except TaskNotFound:
                job.files.discard()
                return
            # Times from the monotonic clock (a wall clock set while the job ran must not make it a
            # year long): the end placed on the queue's clock by how long ago it was, the start by how
            # long the job ran. Files that do not say (an older supervisor's) keep the wall clock's.
            now = self.queue.clock()
            if job.ended_mono is not None:
                now -= max(0.0, time.monotonic() - job.ended_mono)
            elif job.ended_at is not None:
                now = job.ended_at
            ran_s = running.run_s() if running is not None else None
            if rec.state != "running" or rec.pid not in (None, job.pid):
                if rec.state != "running":
                    job.files.discard()
                self.queue.request_dispatch(urgent=True)
                return
            reason = job.kill_reason
            demo_for = running.demo_for if running is not None else _demo_for(rec.reason)
            if demo_for is not None:  # an adopted job's too: its reason says so
                _note_demo(demo_for, rec.log_path)
            # the footer's watts over the run's start-to-end time, as queue --json's power_avg_w and the
            # panel's tooltip give them (the meter's own span differs by the start-up: "26 W" vs "25 W")
            span = ran_s if ran_s is not None else now - (rec.started_at or now) or used.duration_s
            logged = dataclasses.replace(used, duration_s=span)
            self._note_in_log(rec.log_path, energy_line(logged, self.queue.device_name(device)))
            if job.log_lost_bytes:  # the log's last line, now or once there is room (``write_late_notes``)
                self._note_in_log(rec.log_path, lost_output_line(job.log_lost_bytes))
            unknown = reason in ("orphaned", "unanswering")  # how it ended: nobody can say
            base = life.JobEnd(
                exit_code=None if unknown else code,
                ended_at=now,
                started_at=None if ran_s is None else now - ran_s,  # from the monotonic clock
                measured=True,
                energy_j=used.energy_j,
                energy_shared=used.shared,
                energy_estimated_s=used.estimated_s,
                # it ended while paused (cancelled): its pause ends with it
                paused_s=None if rec.paused_at is None else rec.paused_s + max(0.0, now - rec.paused_at),
            )
            left = c.chain(
                c.Leftovers(count=job.leftovers) if not unknown and job.leftovers else None,
                c.OutputLost(bytes=job.log_lost_bytes) if job.log_lost_bytes else None,
            )
            why: Reason
            if reason == "moved":  # its own progress said it ends late where it ran (``late_move``)
                step, spec, why = moved_step(self.moves.pop(task_id, None), end=base, now=now, left=left)
                new = self.store.must_apply(task_id, step)
                if spec is not None:  # pointed at the device it is to run on, once
                    new = self.store.replace_spec(task_id, spec, only_states=("queued",)) or new
                self._note_in_log(rec.log_path, render(why))
                self.queue.emit("redirected" if spec else "interrupted", new, c.Named(name=new.name, why=why))
            elif reason == "cancelled":
                why = c.chain(c.Cancelled(while_running=True), left) or c.Cancelled(while_running=True)
                # the log's last line says why its output stops where it does (issue 33)
                self._note_in_log(rec.log_path, cancelled_line(now))
                new = self.store.must_apply(task_id, life.Cancel(reason=why, ended_at=now, end=base))
                self.queue.emit("cancelled", new, c.JobCancelled(name=new.name))
            elif reason in ("lost", "shutdown", "orphaned", "unanswering"):
                stopped = job.leftovers if job.stopped_leftover else 0
                gone: dict[str, Reason] = {
                    "lost": c.LostWhileRunning(device=self.queue.device_name(device)),
                    "shutdown": c.OwnerStopped(),
                    "orphaned": c.SupervisorKilled(at_start=False, stopped=stopped),
                    "unanswering": c.SupervisorKilled(at_start=False, stopped=stopped, unanswering=True),
                }
                why = c.chain(gone[reason], left) or gone[reason]
                new = self.store.must_apply(task_id, life.RetryOrFail(why=why, now=now, end=base))
                self.queue.emit("interrupted", new, c.Named(name=new.name, why=new.reason or why))
            elif code == 0 and reason is None:
                kept = c.chain(rec.reason, left) if left is not None else None
                new = self.store.must_apply(task_id, life.Succeed(end=base, reason=kept))
                done = c.JobFinished(name=new.name, device=self._device_word(device), demo_for=demo_for)
                self.queue.emit("finished", new, done)
            elif reason is None and (oom := oom_in_log(rec.log_path, code)) is not None:
                self._out_of_memory(rec, device, oom, now, base, left)
            else:
                ended: Reason
                if reason == "timeout":
                    ended = c.TimedOut(timeout_s=rec.spec.timeout_s or 0.0)
                elif code < 0:
                    ended = c.KilledBy(signal=_signal_name(-code))
                else:
                    ended = c.ExitedWith(status=code)
                why = c.chain(ended, left) or ended
                new = self.store.must_apply(task_id, life.RetryOrFail(why=why, now=now, end=base))
                kind: EventKind = "queued" if new.state == "queued" else "failed"
                self.queue.emit(kind, new, c.Named(name=new.name, why=new.reason or why))
            # Recorded: the supervisor's files have said what they had to say, once the record is on the
            # disk. Until then (a full disk holds it in memory) they are what proves how the job ended:
            # an owner that dies meanwhile leaves them to the next, which records the end from them.
            self.store.when_written(functools.partial(discard_if_still, job.files, job.pid))
        self.queue.request_dispatch(urgent=True)

    def _out_of_memory(
        self,
        rec: TaskRecord,
        device: str | None,
        oom: OutOfMemory,
        now: float,
        end: life.JobEnd,
        left: Reason | None,
    ) -> None:
        """Out of memory: ``on_oom = "elsewhere"`` runs it once more where it fits (``oom_elsewhere``)."""
        states = self.queue.device_book.states(self.monitor.latest, list(self.jobs.values()), Paused())
        measured = self.queue.estimates.peaks.pop(rec.id, None)  # what the monitor saw it hold at most
        oom = oom if oom.peak_bytes is not None or measured is None else replace(oom, peak_bytes=measured)
        outcome = elsewhere(rec.spec, next((d for d in states if d.key == device), None), oom, states)
        why = c.chain(outcome.reason, left) or outcome.reason
        self._note_in_log(rec.log_path, f"{render(why)} ({oom.kind}: {oom.line})")
        if rec.spec.on_oom == "elsewhere" and outcome.spec is not None:
            new = self.store.must_apply(rec.id, life.RunElsewhere(reason=why, now=now, end=end))
            new = self.store.replace_spec(rec.id, outcome.spec, only_states=("queued",)) or new
            return self.queue.emit("redirected", new, c.Named(name=new.name, why=why))
        step = life.RetryOrFail(why=why, now=now, end=end, may_retry=rec.spec.on_oom != "elsewhere")
        new = self.store.must_apply(rec.id, step)
        kind: EventKind = "queued" if new.state == "queued" else "failed"
        self.queue.emit(kind, new, c.Named(name=new.name, why=new.reason or why))

    def _note_in_log(self, log_path: str | None, line: str | None) -> None:
        """``line`` at the end of a job's log; on a full disk, kept and written once there is room."""
        if log_path and line is not None and not _append_line(log_path, line):
            self.late_notes.append((log_path, line))

    def write_late_notes(self) -> None:
        """Monitor thread, each tick: the log lines a full disk refused, in order, once there is room."""
        while self.late_notes:
            log_path, line = self.late_notes[0]
            if not _append_line(log_path, line):
                return
            self.late_notes.pop(0)

    def _device_word(self, key: str | None) -> str | None:
        """The device a job ran on, for an event's words (None: the CPU)."""
        return None if key in (None, "cpu") else self.queue.device_name(key)


def _demo_for(reason: Reason | None) -> str | None:
    """The simulated GPU a job ran on the CPU in place of, as its reason says (an adopted job's too)."""
    parts = reason.parts if isinstance(reason, c.Chain) else (reason,)
    return next((p.device for p in parts if isinstance(p, c.DemoOnCpu)), None)


def _note_demo(device_name: str, log_path: str | None) -> None:
    """The last line of a demo job's log: it ran on the CPU in place of a simulated GPU."""
    if log_path:
        try:
            with open(open_private_append(Path(log_path)), "a", encoding="utf-8") as f:  # no FIFO, no link
                done = render(c.DemoOnCpu(device=device_name), finished=True)
                f.write(f"\n{done} (simulated GPUs cannot run kernels)\n")
        except OSError:
            log.warning("could not append to %s", log_path)


def _append_line(log_path: str, line: str) -> bool:
    """``gputray: line`` at the end of a job's log (the energy it used, output it lost); whether it was
    written (a full disk: not yet)."""
    try:
        with open(open_private_append(Path(log_path)), "a", encoding="utf-8") as f:  # no FIFO, no link
            f.write(f"\ngputray: {line}\n")
        return True
    except OSError:
        return False


def discard_if_still(files: JobFiles, pid: int) -> None:
    """Discard a recorded job's files, unless a later attempt's supervisor has written its own there."""
    run = read_run(files)
    if run is None or run.pid == pid:
        files.discard()


def cancelled_line(now_s: float) -> str:
    """The log's last line of a job stopped by ``cancel``: its output ends there because of it."""
    return f"cancelled at {time.strftime('%H:%M:%S', time.localtime(now_s))}: the job was stopped by request"


def lost_output_line(count: int) -> str:
    """The log's last line when part of the job's output could not be written to it (the owner writes
    it, once there is room: the supervisor ends as soon as its exit is safe)."""
    return f"{count:,} bytes of the job's output could not be written to this log (the disk was full)"


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
