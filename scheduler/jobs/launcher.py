"""Start a job and watch it: argv list (never a shell), its own process group/session, stdout+stderr appended
to the task's log file, optional timeout, whole-tree kill, exit callback.

Every job runs under a supervisor (``supervisor.py``; on POSIX forked by the supervisor host, ``HOST``), a
small process that outlives the owner: it starts the job, waits for it, enforces its timeout, stops
whatever the job left running and writes its exit status atomically beside the log. The watcher thread is
started before the job: a thread that cannot start fails the launch while nothing runs yet
(``LaunchFailed.transient``: the queue tries again later). The owner watches the supervisor; a watcher
thread per job calls ``on_exit(job, returncode)`` the moment the supervisor says how the job ended, so the
next job can be dispatched at once. An owner that starts later ``adopt``\\s the jobs a previous owner
left: still running, it goes on watching them; ended, it reads their exit from the file. So a job's exit
status is recorded whoever is around when it ends, and a job that completed is never taken for
interrupted.

The supervisor's files beside ``task-N.log`` (lock, run, exit, stop) and reading them: ``job_files.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from gputray.scheduler.jobs import freeze, reach, supervisor, win_job
from gputray.scheduler.jobs.job_files import (
    ExitInfo,
    JobFiles,
    KillReason,
    RunInfo,
    exit_info,
    read_exit,
    read_pause,
    read_stop_reason,
    supervisor_alive,
)
from gputray.scheduler.jobs.job_log import DEFAULT_LOG_MAX_BYTES
from gputray.scheduler.jobs.orphans import kill_marked, marks_of
from gputray.scheduler.jobs.process_tree import (
    escalate_kill,
    kill_tree,
    process_create_time,
    stop_leftover,
    terminate_tree,
)
from gputray.scheduler.jobs.supervisor_link import (
    HOST,
    Silent,
    SupervisorLink,
    is_stopped,
)
from gputray.scheduler.jobs.supervisor_start import MAX_CONTINUES, LaunchFailed, start_supervised
from gputray.scheduler.paths import make_private_dir

GRACE_S = 3.0  # from SIGTERM to SIGKILL when a job is stopped
STOP_CHECK_S = 1.0  # a job's watcher, while its supervisor is silent: how often it looks if it was stopped
ADOPTED_LOOK_S = 0.25  # an adopted job's supervisor (not our child): how often its lock is looked at
__all__ = ["HOST", "Job", "LaunchFailed", "adopt", "launch", "stop_leftover"]

log = logging.getLogger("gputray.scheduler.jobs")


class _WatchThread:
    """A job's watcher thread, started *before* the job: a thread that cannot start (RLIMIT_NPROC, a
    pids limit) then fails the launch while nothing runs yet, instead of leaving a started job
    unwatched, its task marked failed and its device counted free."""

    def __init__(self, name: str) -> None:
        self._job: Job | None = None
        self._go = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()  # RuntimeError: can't start new thread

    def _run(self) -> None:
        self._go.wait()
        if self._job is not None:
            self._job._watch()

    def watch(self, job: Job) -> None:
        self._job = job
        self._go.set()

    def abandon(self) -> None:
        self._go.set()


class Job:
    """A running (or finished) job. ``kill_reason`` says why we stopped it, None if it ended by itself."""

    def __init__(
        self,
        *,
        pid: int,
        create_time: float | None,
        started_at: float,
        log_path: Path,
        files: JobFiles,
        on_exit: Callable[[Job, int], None] | None,
        grace_s: float,
        supervisor_proc: SupervisorLink | None,
        timeout_s: float | None = None,
        adopted: bool = False,
        watch: _WatchThread | None = None,
        cgroup: str | None = None,
        supervisor_pid: int | None = None,
        marker: tuple[int, str] | None = None,
    ) -> None:
        self.pid = pid
        self.log_path = log_path
        self.files = files
        self.started_at = started_at
        self.create_time = create_time
        self.adopted = adopted
        self.kill_reason: KillReason | None = read_stop_reason(files) if adopted else None
        self.returncode: int | None = None
        self.ended_at: float | None = None
        self.ended_mono: float | None = None  # the monotonic clock's at its end (``ExitInfo.ended_mono``)
        self.stopped_leftover = False  # orphaned: whether a process was still alive to be stopped
        self.leftovers = 0  # processes still running when the job ended (or its supervisor died): stopped
        self.log_lost_bytes = 0  # output its log could not take (a full disk)
        self.cgroup = cgroup
        self.supervisor_pid = supervisor_pid
        self.marker = marker  # (task id, queue file) in its environment: found by them if all else fails
        self._continues = 0  # times its stopped supervisor was continued
        self._timeout_s = timeout_s
        self._reason_lock = threading.Lock()  # kill_reason is fixed once the process has exited
        self._on_exit = on_exit
        self._grace_s = grace_s
        self._supervisor = supervisor_proc
        self._done = threading.Event()
        # Windows: a handle on its job object keeps the name valid while we watch (win_job.py)
        self._job_object = win_job.open_job(pid)
        if watch is not None:  # launched: its supervisor says on its pipe when the timeout passes
            watch.watch(self)
            return
        threading.Thread(target=self._watch, name=f"gputray-job-{pid}", daemon=True).start()
        if timeout_s is not None:  # the supervisor stops it; this only says why, as soon as it is so
            self._arm_timer(started_at + timeout_s - time.time())

    def _arm_timer(self, due_s: float) -> None:
        timer = threading.Timer(max(0.0, due_s), self._timer_fired)
        timer.daemon = True
        with contextlib.suppress(RuntimeError):  # no thread: its exit file says it timed out
            timer.start()

    def _timer_fired(self) -> None:
        """An adopted job's timeout, as its supervisor counts it: paused time does not count."""
        pause = read_pause(self.files)
        if pause is not None and self._timeout_s is not None and self.running:
            if pause.paused:
                self._arm_timer(supervisor.PAUSED_LOOK_S)
                return
            due_s = self.started_at + self._timeout_s + pause.paused_s - time.time()
            if due_s > 0:
                self._arm_timer(due_s)
                return
        self._timed_out()

    def _timed_out(self) -> None:
        with self._reason_lock:
            if self.returncode is None and self.kill_reason is None:
                self.kill_reason = "timeout"

    def exited(self) -> bool:
        """Whether the process has ended (its supervisor wrote the exit), even before ``on_exit`` ran."""
        return read_exit(self.files, self.pid) is not None

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait until the job has ended *and* its exit callback has run; the return code, None on timeout."""
        self._done.wait(timeout)
        return self.returncode

    def _continued(self, pid: int | None) -> bool:
        """A supervisor found stopped (``kill -STOP``, by its own job maybe): continued, as long as it is
        not stopped again and again; False once we give up on it (``MAX_CONTINUES``)."""
        if self._continues >= MAX_CONTINUES or pid is None:
            return False
        self._continues += 1
        log.warning("job %d: its supervisor (pid %d) was stopped; continuing it", self.pid, pid)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)
        return True

    def _wait_supervisor(self) -> bool:
        """Until the supervisor has ended (its lock is free; ours is reaped too). False when it stays
        stopped (we gave up on it): it is then killed with what is left of the job (``_watch``)."""
        if self._supervisor is not None:
            while not self._supervisor.wait(timeout=STOP_CHECK_S):
                if self._supervisor.stopped() and not self._continued(self._supervisor.pid):
                    return False
            return True
        while supervisor_alive(self.files):
            if is_stopped(self.supervisor_pid) and not self._continued(self.supervisor_pid):
                return False
            time.sleep(ADOPTED_LOOK_S)
        return True

    def _last_word(self) -> ExitInfo | None:
        """How the job ended, as our own supervisor tells us on its pipe (it may still be waiting for
        disk space to write the exit file); None for an adopted job or a supervisor that died. Raises
        ``Silent`` when the supervisor stays stopped however often it is continued."""
        if self._supervisor is None:
            return None
        link = self._supervisor
        while True:
            try:
                doc = link.answers.next(None, stuck=link.stopped, tick_s=STOP_CHECK_S)
            except Silent:
                if self._continued(link.pid):
                    continue
                raise
            if doc is None:
                return None
            if doc.get("timing_out"):  # it is stopping the job: say why now
                self._timed_out()
                continue
            if "returncode" in doc:
                return exit_info(doc, self.pid)
            # "recorded" and the like: the launch read what it needed

    def _watch(self) -> None:
        try:
            end = self._last_word()
            if end is None and self._wait_supervisor():
                end = read_exit(self.files, self.pid)
            reason: KillReason = "orphaned"  # the supervisor vanished without a word
        except Silent:
            end, reason = None, "unanswering"
        with self._reason_lock:
            if end is not None:
                code = end.returncode
                if end.timed_out and self.kill_reason is None:
                    self.kill_reason = "timeout"
                self.ended_at, self.ended_mono = end.ended_at, end.ended_mono
                self.leftovers = end.leftovers
                self.log_lost_bytes = end.log_lost_bytes
            else:  # nobody knows how the job ends: stop all that is left of it, then free its place
                self.kill_reason = reason
                self.leftovers = self._stop_what_is_left()
                self.stopped_leftover = bool(self.leftovers)
                code = -int(getattr(signal, "SIGKILL", 9))
                self.ended_at, self.ended_mono = time.time(), time.monotonic()
            self.returncode = code  # from here on, a late cancel cannot relabel how it ended
        try:
            if self._on_exit is not None:
                self._on_exit(self, code)
        finally:
            self._done.set()
            if self._job_object is not None:
                self._job_object.close()
            if self._supervisor is not None:  # reap it once it has written the exit file too
                self._supervisor.answers.close()
                self._supervisor.wait()
                if not self.files.run.exists():
                    # Recorded (the exit callback discarded the files) while the supervisor, which
                    # answers before it writes, could still write its exit file and hold its lock:
                    # now that it has ended, nothing of it stays beside the log.
                    self.files.discard()
            if self.cgroup is not None:  # the supervisor has ended: its (empty) group goes
                reach.remove_cgroup(self.cgroup)

    def _stop_what_is_left(self) -> int:
        """Its supervisor vanished or stays stopped: kill it and every process of the job, wherever
        they went (its cgroup; its tree, group and session; what carries its marks; what the host
        adopted), and wait until they are gone. How many there were."""
        if self._supervisor is not None:
            self._supervisor.kill()
        elif self.supervisor_pid is not None and supervisor_alive(self.files):
            with contextlib.suppress(OSError):
                os.kill(self.supervisor_pid, getattr(signal, "SIGKILL", 9))
        if self._job_object is not None:  # Windows: what the job left, orphans included
            self._job_object.terminate()
        found = reach.kill_cgroup(self.cgroup) if self.cgroup else 0  # all, wherever they went
        found += kill_tree(self.pid, self.create_time, grace_s=0.0)
        while True:  # until none is left: its place is free only then
            more = kill_marked(
                *(self.marker or (None, None)),
                session=None if sys.platform == "win32" else self.pid,  # it leads one
            )
            more += HOST.sweep()
            if not more:
                return found
            found += more

    def cancel(self, reason: KillReason = "cancelled") -> None:
        """Stop the whole process tree: SIGTERM (CTRL_BREAK on Windows), then SIGKILL after the grace time.

        Returns at once; the exit callback reports the end. The first reason
        stays, except that a person's "cancelled" wins over a timeout or a lost device already being
        handled: otherwise the retry policy would start the job again. Once the process has exited
        nothing changes: a job that finished is not relabelled by a kill that came too late. The reason
        is written beside the log first, so an owner that records the end after a crash knows it too.
        """
        with self._reason_lock:
            exited = self.returncode is not None or self.exited()  # the exit file: ended, not yet seen
            if not exited and (self.kill_reason is None or reason == "cancelled"):
                self.kill_reason = reason
                with contextlib.suppress(OSError):
                    supervisor.write_atomic(self.files.stop, {"reason": reason})
        if not exited:
            self._thaw()
            self._stop()

    def processes(self) -> freeze.JobProcesses:
        """What ``freeze`` needs to reach every process of the job."""
        return freeze.JobProcesses(self.pid, self.supervisor_pid, self.cgroup)

    def _thaw(self) -> None:
        """A paused job is thawed before it is stopped: a frozen or stopped process acts on no SIGTERM."""
        pause = read_pause(self.files)
        if pause is not None and pause.paused and pause.method in freeze.FREEZE_METHODS:
            freeze.thaw(self.processes(), cast(freeze.FreezeMethod, pause.method))

    def _stop(self) -> None:
        # SIGTERM now, from this thread: an owner that dies a moment later has still asked for the stop.
        procs = terminate_tree(self.pid, self.create_time)
        try:
            threading.Thread(
                target=escalate_kill,
                args=(self.pid, procs),
                kwargs={"grace_s": self._grace_s},
                name=f"gputray-kill-{self.pid}",
                daemon=True,
            ).start()
        except RuntimeError:  # can't start new thread (out of processes): the kill waits here instead
            escalate_kill(self.pid, procs, grace_s=self._grace_s)


def _start_watcher(log_path: Path) -> _WatchThread:
    try:
        return _WatchThread(f"gputray-job-{log_path.stem}")
    except RuntimeError as exc:  # can't start new thread: nothing started yet
        raise LaunchFailed(f"cannot start a thread to watch the job: {exc}", transient=True) from None


def launch(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log_path: Path,
    cwd: str | Path | None = None,
    on_exit: Callable[[Job, int], None] | None = None,
    timeout_s: float | None = None,
    header: str | None = None,
    grace_s: float = GRACE_S,
    meta: Mapping[str, Any] | None = None,
    umask: int = -1,
    log_max_bytes: int = DEFAULT_LOG_MAX_BYTES,
) -> Job:
    """Start ``argv`` (a list; element 0 is looked up on PATH, nothing is ever parsed by a shell) under
    its supervisor, and return once the job's process exists.

    Output (stdout and stderr together) is appended to ``log_path``; ``header`` is written first; the
    log keeps at most ``log_max_bytes`` (its head and its tail: ``job_log.CappedLog``).
    ``on_exit(job, returncode)`` runs in the watcher thread as soon as the process ends (negative
    return code: killed by that signal on POSIX). ``meta`` (task id, attempt, device …) goes into the
    run and exit files. Raises LaunchFailed when the program cannot start.
    """
    if not argv:
        raise LaunchFailed("nothing to run: the argument list is empty")
    make_private_dir(log_path.parent)
    files = JobFiles.beside(log_path)
    watch = _start_watcher(log_path)
    try:
        sup, answer = start_supervised(
            argv, env, log_path, files, cwd, timeout_s, header, grace_s, meta, umask, log_max_bytes
        )
    except BaseException:
        watch.abandon()
        raise
    pid = int(answer["pid"])
    cgroup = answer.get("cgroup")
    job = Job(
        pid=pid,
        create_time=process_create_time(pid),
        started_at=float(answer.get("started_at") or time.time()),
        log_path=log_path,
        files=files,
        on_exit=on_exit,
        grace_s=grace_s,
        supervisor_proc=sup,
        timeout_s=timeout_s,
        watch=watch,
        cgroup=cgroup if isinstance(cgroup, str) else None,
        supervisor_pid=int(answer["supervisor_pid"]) if "supervisor_pid" in answer else None,
        marker=marks_of(env),
    )
    return job


def adopt(run: RunInfo, *, on_exit: Callable[[Job, int], None] | None) -> Job:
    """Watch a job a previous owner started: its exit is recorded when its supervisor ends (at once if
    it already has). ``kill_reason`` is what that owner asked, if it was stopping it."""
    job = Job(
        pid=run.pid,
        create_time=run.pid_create_time,
        started_at=run.started_at,
        log_path=run.log_path,
        files=run.files,
        on_exit=on_exit,
        grace_s=GRACE_S,
        supervisor_proc=None,
        timeout_s=run.timeout_s,
        adopted=True,
        cgroup=run.cgroup,
        supervisor_pid=run.supervisor_pid,
        marker=(run.task_id, run.queue_file) if run.queue_file else None,
    )
    if job.kill_reason is not None and job.running:
        job._stop()  # that owner was stopping it when it went: finish the stop
    return job
