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
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, cast

import psutil

from gputray.monitor import interpreter, process_group
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
from gputray.scheduler.paths import make_private_dir, open_private_append

SUPERVISOR_START_TIMEOUT_S = 60.0
GRACE_S = 3.0  # from SIGTERM to SIGKILL when a job is stopped


#: start failures for want of a resource now (fds, processes or threads, memory, disk space for the
#: supervisor's files), not the task's fault
TRANSIENT_ERRNOS = frozenset(
    {
        errno.EMFILE,
        errno.ENFILE,
        errno.EAGAIN,
        errno.ENOMEM,
        errno.ENOSPC,
        getattr(errno, "EDQUOT", errno.ENOSPC),
    }
)


class LaunchFailed(OSError):
    """The program could not be started (not found, not executable, bad folder); the message says which.

    ``transient``: only for want of a resource now (out of fds, processes, threads, memory): the queue
    tries again later instead of failing the task."""

    def __init__(self, message: str, *, transient: bool = False, supervisor_killed: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.supervisor_killed = supervisor_killed  # as the job started (by the job, maybe): not a refusal


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
        supervisor_proc: _SupervisorLink | None,
        timeout_s: float | None = None,
        adopted: bool = False,
        watch: _WatchThread | None = None,
        cgroup: str | None = None,
        supervisor_pid: int | None = None,
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

    def _wait_supervisor(self) -> None:
        if self._supervisor is not None:
            self._supervisor.wait()  # ours: reaps it too
            return
        fd = supervisor.lock_exclusive(self.files.lock, blocking=True)  # free once it has exited
        if fd is not None:
            os.close(fd)

    def _last_word(self) -> ExitInfo | None:
        """How the job ended, as our own supervisor tells us on its pipe (it may still be waiting for
        disk space to write the exit file); None for an adopted job or a supervisor that died."""
        out = self._supervisor.stdout if self._supervisor is not None else None
        if out is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            while True:
                doc = json.loads(out.readline().decode("ascii"))
                if isinstance(doc, dict) and doc.get("timing_out"):  # it is stopping the job: say why now
                    self._timed_out()
                    continue
                return exit_info(doc, self.pid)
        return None

    def _watch(self) -> None:
        end = self._last_word()
        if end is None:
            with contextlib.suppress(OSError):
                self._wait_supervisor()
            end = read_exit(self.files, self.pid)
        with self._reason_lock:
            if end is not None:
                code = end.returncode
                if end.timed_out and self.kill_reason is None:
                    self.kill_reason = "timeout"
                self.ended_at, self.ended_mono = end.ended_at, end.ended_mono
                self.leftovers = end.leftovers
                self.log_lost_bytes = end.log_lost_bytes
            else:  # the supervisor vanished without a word: nobody knows how the job ends
                self.kill_reason = "orphaned"
                in_group = reach.kill_cgroup(self.cgroup) if self.cgroup else 0  # all, wherever they went
                in_tree = _kill_tree(self.pid, self.create_time, grace_s=0.0)
                self.leftovers = in_group or in_tree
                self.stopped_leftover = bool(self.leftovers)
                if self._job_object is not None:  # Windows: what the job left, orphans included
                    self._job_object.terminate()
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
                with contextlib.suppress(OSError, ValueError):
                    self._supervisor.stdout.close()  # type: ignore[union-attr]
                self._supervisor.wait()
                if not self.files.run.exists():
                    # Recorded (the exit callback discarded the files) while the supervisor, which
                    # answers before it writes, could still write its exit file and hold its lock:
                    # now that it has ended, nothing of it stays beside the log.
                    self.files.discard()
            if self.cgroup is not None:  # the supervisor has ended: its (empty) group goes
                reach.remove_cgroup(self.cgroup)

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
        procs = _terminate(self.pid, self.create_time)
        try:
            threading.Thread(
                target=_escalate,
                args=(self.pid, procs),
                kwargs={"grace_s": self._grace_s},
                name=f"gputray-kill-{self.pid}",
                daemon=True,
            ).start()
        except RuntimeError:  # can't start new thread (out of processes): the kill waits here instead
            _escalate(self.pid, procs, grace_s=self._grace_s)


def _create_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):  # already gone
        return None


def _same_process(pid: int, create_time: float | None) -> psutil.Process | None:
    """The live (not zombie) process ``pid``, if it is the one started at ``create_time``."""
    try:
        proc = psutil.Process(pid)
        if create_time is not None and abs(proc.create_time() - create_time) > 0.5:
            return None
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except (psutil.Error, OSError):
        return None


def _terminate(pid: int, create_time: float | None) -> list[psutil.Process]:
    """SIGTERM the job's group and its whole tree; the processes it found (none: it was not alive)."""
    parent = _same_process(pid, create_time)
    if parent is None:
        return []
    try:
        procs = [*parent.children(recursive=True), parent]
    except (psutil.Error, OSError):
        procs = [parent]
    _signal_group(pid, graceful=True)
    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            p.terminate()
    return procs


def _escalate(pid: int, procs: list[psutil.Process], *, grace_s: float) -> None:
    """SIGKILL what is left of a terminated tree after ``grace_s``."""
    # Poll, never wait: the job is the supervisor's child, whose wait records its exit status.
    if not procs:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in procs):
        time.sleep(0.05)
    _signal_group(pid, graceful=False)
    for p in procs:
        if _alive(p):
            with contextlib.suppress(psutil.Error, OSError):
                p.kill()


def _kill_tree(pid: int, create_time: float | None, *, grace_s: float) -> int:
    """SIGTERM the job's group and tree, SIGKILL what is left after ``grace_s``; how many processes
    there were (0: it was not alive)."""
    procs = _terminate(pid, create_time)
    _escalate(pid, procs, grace_s=grace_s)
    return len(procs)


def stop_leftover(run: RunInfo, *, grace_s: float = 0.0) -> bool:
    """Stop a job (and its supervisor) found after a crash; True only when a process was alive to stop."""
    stopped = bool(run.cgroup and reach.kill_cgroup(run.cgroup))
    stopped = bool(_kill_tree(run.pid, run.pid_create_time, grace_s=grace_s)) or stopped
    sup = _same_process(run.supervisor_pid, None)
    if sup is not None and supervisor_alive(run.files):
        with contextlib.suppress(psutil.Error, OSError):
            sup.kill()
        stopped = True
    return stopped


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def _signal_group(pgid: int, *, graceful: bool) -> None:
    if sys.platform == "win32":
        # No process groups: psutil handles each process it finds, and SIGKILL's stand-in is the job
        # object, which holds the orphans the psutil walk cannot see (win_job.py).
        if not graceful:
            win_job.terminate_job(pgid)
        return
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGTERM if graceful else signal.SIGKILL)


def _failure_message(argv: Sequence[str], cwd: str | Path | None, error: Mapping[str, Any]) -> str:
    kind = error.get("type")
    filename = error.get("filename")
    strerror = error.get("strerror")
    if kind == "FileNotFoundError":
        missing = argv[0] if filename in (None, argv[0]) else filename
        what = "folder" if cwd and filename == str(cwd) else "program"
        return f"cannot start {argv[0]}: the {what} {missing} does not exist"
    return f"cannot start {argv[0]}: {strerror or error.get('message') or kind}"


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
        sup, answer = _start_supervised(
            argv, env, log_path, files, cwd, timeout_s, header, grace_s, meta, umask, log_max_bytes
        )
    except BaseException:
        watch.abandon()
        raise
    pid = int(answer["pid"])
    cgroup = answer.get("cgroup")
    job = Job(
        pid=pid,
        create_time=_create_time(pid),
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
    )
    return job


class _HostedSupervisor:
    """A supervisor the host forked (``supervisor.py --host``): its pipes, as a started one's are; it is
    not our child, so its end is waited for on the task's lock, which it holds while it lives."""

    def __init__(self, stdin: int, stdout: int, lock: Path) -> None:
        self.stdin: IO[bytes] | None = open(stdin, "wb")  # noqa: SIM115  (closed once the request is in)
        self.stdout: IO[bytes] | None = open(stdout, "rb")  # noqa: SIM115  (closed by the watcher)
        self.pid: int | None = None
        self._lock = lock

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.pid is not None and _same_process(self.pid, None) is not None:  # gone, or a zombie
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("supervisor", timeout or 0.0)
            fd = supervisor.lock_exclusive(self._lock, blocking=deadline is None)  # free as it ends
            if fd is not None:
                os.close(fd)
            time.sleep(0.01)
        return 0

    def kill(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)


_SupervisorLink = subprocess.Popen[bytes] | _HostedSupervisor


class _Host:
    """POSIX: the supervisor host, started once (``supervisor.py --host``): it forks each job's
    supervisor, so a job waits for a fork (~1 ms) instead of a Python interpreter's start and imports
    (~30 ms on an idle machine, over 100 ms on a busy one). It ends when we close our end (``close``)
    or exit; the supervisors it forked live on. Where it cannot run, each job starts its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None

    def supervisor(self, lock: Path) -> _HostedSupervisor | None:
        """A freshly forked supervisor for one job, or None (no host here: start one the usual way)."""
        if sys.platform == "win32":
            return None
        with self._lock:
            if self._sock is None or self._proc is None or self._proc.poll() is not None:
                self._start()
            if self._sock is None:
                return None
            req_r, req_w = os.pipe()
            ans_r, ans_w = os.pipe()
            try:
                socket.send_fds(self._sock, [b"j"], [req_r, ans_w])
            except OSError:
                for fd in (req_w, ans_r):
                    os.close(fd)
                self._stop()
                return None
            finally:
                os.close(req_r)
                os.close(ans_w)
        return _HostedSupervisor(req_w, ans_r, lock)

    def _start(self) -> None:
        self._stop()
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            return
        try:
            self._proc = process_group.popen_own_group(
                interpreter.script_command(supervisor.__file__, "--host"),
                stdin=theirs,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError:  # out of processes or fds now: this job starts its own supervisor
            ours.close()
            return
        finally:
            theirs.close()
        self._sock = ours

    def _stop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """End the host (the supervisors it forked run on), e.g. when the queue closes."""
        with self._lock:
            self._stop()


HOST = _Host()


def _popen_supervisor(stderr: Any) -> subprocess.Popen[bytes]:
    return process_group.popen_own_group(
        interpreter.script_command(supervisor.__file__),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        close_fds=True,  # gputray's private umask: the supervisor's files (run, exit) are 0600
    )


def _start_supervised(
    argv: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    files: JobFiles,
    cwd: str | Path | None,
    timeout_s: float | None,
    header: str | None,
    grace_s: float,
    meta: Mapping[str, Any] | None,
    umask: int,
    log_max_bytes: int,
) -> tuple[_SupervisorLink, dict[str, Any]]:
    """Start the job under a supervisor: the supervisor and its answer (the job's pid), or LaunchFailed."""
    with open(open_private_append(log_path), "ab") as log:  # 0600: output may show the job's secrets
        if header:
            log.write(
                header.encode("utf-8", "surrogateescape" if sys.platform != "win32" else "replace") + b"\n"
            )
            log.flush()
        request = {
            "argv": list(argv),
            "env": dict(env),
            "cwd": str(cwd) if cwd else None,
            "log": str(log_path),
            "run_file": str(files.run),
            "exit_file": str(files.exit),
            "lock_file": str(files.lock),
            "pause_file": str(files.pause),
            "timeout_s": timeout_s,
            "grace_s": grace_s,
            "umask": umask,
            "log_max_bytes": log_max_bytes,
            "meta": dict(meta or {"task_id": 0, "attempt": 0, "device": ""}),
            "psutil_path": str(Path(psutil.__file__).parent.parent),
            "stderr_to_log": sys.platform != "win32",
        }
        for earlier in (files.stop, files.pause):  # an earlier attempt's reason and pauses
            with contextlib.suppress(FileNotFoundError):
                earlier.unlink()
        sup: _SupervisorLink | None = HOST.supervisor(files.lock)
        if sup is None:
            try:
                sup = _popen_supervisor(log)  # its own trouble, if any, shows in the log
            except OSError as exc:
                raise LaunchFailed(
                    f"cannot start the job's supervisor: {exc.strerror or exc}",
                    transient=exc.errno in TRANSIENT_ERRNOS,
                ) from None
        assert sup.stdin is not None and sup.stdout is not None
        cgroup: str | None = None
        try:
            # It reads the whole request before it writes anything: no deadlock on a large environment.
            with contextlib.suppress(BrokenPipeError):
                sup.stdin.write(json.dumps(request, ensure_ascii=True).encode("ascii"))
            with contextlib.suppress(BrokenPipeError):
                sup.stdin.close()
            while True:  # the job's cgroup, if it gets one; then the pid (how it ended comes later)
                answer = _answer_line(sup.stdout.readline())
                if set(answer) != {"cgroup"}:
                    break
                cgroup = str(answer["cgroup"])
        except BaseException:
            sup.kill()
            sup.wait()
            raise
        if isinstance(sup, _HostedSupervisor) and "supervisor_pid" in answer:
            sup.pid = int(answer["supervisor_pid"])
        if "pid" in answer:  # then the run file is written (EOF instead: the supervisor was killed)
            with contextlib.suppress(OSError, ValueError):
                sup.stdout.readline()
        else:
            sup.stdout.close()
            error = answer.get("error") or {"message": "its supervisor ended without starting it"}
            msg = _failure_message(argv, cwd, error)
            killed = isinstance(sup, subprocess.Popen) and sup.wait() < 0
            if not answer.get("error") and (cgroup or killed):
                # Killed as the job started (by the job itself, maybe): what it started is stopped.
                stopped = reach.kill_cgroup(cgroup) if cgroup else 0
                msg = "its supervisor process was killed as the job started" + (
                    f"; {stopped} process{'es' if stopped != 1 else ''} of the job stopped" if stopped else ""
                )
                log.write(f"gputray: {msg}\n".encode())
                raise LaunchFailed(msg, supervisor_killed=True)
            log.write(f"gputray: {msg}\n".encode())
            with contextlib.suppress(subprocess.TimeoutExpired):
                sup.wait(timeout=SUPERVISOR_START_TIMEOUT_S)
            raise LaunchFailed(msg, transient=error.get("errno") in TRANSIENT_ERRNOS)
    return sup, answer


def _answer_line(line: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(line.decode("ascii").strip() or "{}")
    except (UnicodeDecodeError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


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
    )
    if job.kill_reason is not None and job.running:
        job._stop()  # that owner was stopping it when it went: finish the stop
    return job
