"""Start a job process and watch it: argv list (never a shell), its own process group/session,
stdout+stderr appended to the task's log file, optional timeout, whole-tree kill, exit callback.

A watcher thread per job waits on the process and calls ``on_exit(job, returncode)`` the moment it
ends, so the next job can be dispatched at once. When the main process ends, anything it left in
its process group is stopped too: a finished job must not keep holding a GPU through a straggler.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import psutil

from gputray.monitor.process_group import popen_own_group
from gputray.scheduler.win_job import job_object_for

KillReason = Literal["cancelled", "timeout", "lost", "shutdown"]


class LaunchFailed(OSError):
    """The program could not be started (not found, not executable, bad folder); the message says which."""


class Job:
    """A running (or finished) job. ``kill_reason`` says why we stopped it, None if it ended by itself."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        log_path: Path,
        on_exit: Callable[[Job, int], None] | None,
        timeout_s: float | None,
        grace_s: float,
    ) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.log_path = log_path
        self.started_at = time.time()
        self.kill_reason: KillReason | None = None
        self.returncode: int | None = None
        self._reason_lock = threading.Lock()  # kill_reason is fixed once the process has exited
        self._on_exit = on_exit
        self._timeout_s = timeout_s
        self._grace_s = grace_s
        self._done = threading.Event()
        self._job_object = job_object_for(proc)  # Windows: the tree, even after its parent has gone
        try:
            self.create_time: float | None = psutil.Process(proc.pid).create_time()
        except (psutil.Error, OSError):
            self.create_time = None
        self._watcher = threading.Thread(target=self._watch, name=f"gputray-job-{proc.pid}", daemon=True)
        self._watcher.start()

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait until the job has ended *and* its exit callback has run; the return code, None on timeout."""
        self._done.wait(timeout)
        return self.returncode

    def _watch(self) -> None:
        deadline = None if self._timeout_s is None else time.monotonic() + self._timeout_s
        code: int | None = None
        while code is None:
            try:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                code = self.proc.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                with self._reason_lock:
                    if self.kill_reason is None:
                        self.kill_reason = "timeout"
                self._kill_tree(grace_s=self._grace_s)
                deadline = None
        with self._reason_lock:
            self.returncode = code  # from here on, a late cancel cannot relabel how it ended
        _signal_group(self.pid, graceful=False)  # stragglers left in its group
        if self._job_object is not None:
            self._job_object.terminate()
            self._job_object.close()
        try:
            if self._on_exit is not None:
                self._on_exit(self, code)
        finally:
            self._done.set()

    def cancel(self, reason: KillReason = "cancelled", *, wait: bool = False) -> None:
        """Stop the whole process tree: SIGTERM (CTRL_BREAK on Windows), then SIGKILL after the grace time.

        Returns at once unless ``wait``; the exit callback reports the end either way. The first reason
        stays, except that a person's "cancelled" wins over a timeout or a lost device already being
        handled: otherwise the retry policy would start the job again. Once the process has exited
        nothing changes: a job that finished is not relabelled by a kill that came too late.
        """
        with self._reason_lock:
            exited = self.returncode is not None
            if not exited and (self.kill_reason is None or reason == "cancelled"):
                self.kill_reason = reason
        if exited:
            if wait:
                self.wait()
            return
        if wait:
            self._kill_tree(grace_s=self._grace_s)
            self.wait()
        else:
            threading.Thread(
                target=self._kill_tree,
                kwargs={"grace_s": self._grace_s},
                name=f"gputray-kill-{self.pid}",
                daemon=True,
            ).start()

    def _kill_tree(self, *, grace_s: float) -> None:
        # Poll, never wait: psutil's wait would reap our own child and hide its exit status from Popen.
        try:
            parent = psutil.Process(self.pid)
            procs = [*parent.children(recursive=True), parent]
        except (psutil.Error, OSError):
            procs = []
        _signal_group(self.pid, graceful=True)
        for p in procs:
            with contextlib.suppress(psutil.Error, OSError):
                p.terminate()
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_alive(p) for p in procs):
            time.sleep(0.05)
        _signal_group(self.pid, graceful=False)
        if self._job_object is not None:
            self._job_object.terminate()
        for p in procs:
            if _alive(p):
                with contextlib.suppress(psutil.Error, OSError):
                    p.kill()


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def _signal_group(pgid: int, *, graceful: bool) -> None:
    if sys.platform == "win32":
        return  # no process groups to signal as such; psutil handles each process
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGTERM if graceful else signal.SIGKILL)


def log_encoding_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a job whose output goes to a log file, which gputray reads as UTF-8.

    On Windows, Python writes to a file in the ANSI code page: in cp1252 a ``print("学習")`` raises
    UnicodeEncodeError and the job fails, only because it runs under gputray. So a Python job writes its
    stdio in UTF-8 there, unless the user chose otherwise (``PYTHONIOENCODING`` or ``PYTHONUTF8``).
    """
    out = dict(env)
    if sys.platform == "win32" and "PYTHONIOENCODING" not in out and "PYTHONUTF8" not in out:
        out["PYTHONIOENCODING"] = "utf-8"
    return out


def launch(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log_path: Path,
    cwd: str | Path | None = None,
    on_exit: Callable[[Job, int], None] | None = None,
    timeout_s: float | None = None,
    header: str | None = None,
    grace_s: float = 3.0,
) -> Job:
    """Start ``argv`` (a list; element 0 is looked up on PATH, nothing is ever parsed by a shell).

    Output (stdout and stderr together) is appended to ``log_path``; ``header`` is written first.
    ``on_exit(job, returncode)`` runs in the watcher thread as soon as the process ends (negative
    return code: killed by that signal on POSIX). Raises LaunchFailed when the program cannot start.
    """
    if not argv:
        raise LaunchFailed("nothing to run: the argument list is empty")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        if header:
            log.write(header.encode("utf-8", "replace") + b"\n")
            log.flush()
        try:
            proc = popen_own_group(
                argv,
                env=log_encoding_env(env),
                cwd=str(cwd) if cwd else None,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
            )
        except FileNotFoundError as exc:
            missing = argv[0] if exc.filename in (None, argv[0]) else exc.filename
            what = "folder" if cwd and exc.filename == str(cwd) else "program"
            msg = f"cannot start {argv[0]}: the {what} {missing} does not exist"
            log.write(f"gputray: {msg}\n".encode())
            raise LaunchFailed(msg) from None
        except (PermissionError, NotADirectoryError, OSError) as exc:
            msg = f"cannot start {argv[0]}: {exc.strerror or exc}"
            log.write(f"gputray: {msg}\n".encode())
            raise LaunchFailed(msg) from None
        except ValueError as exc:  # an environment name with "=", a NUL byte: Popen refuses it
            msg = f"cannot start {argv[0]}: {exc}"
            log.write(f"gputray: {msg}\n".encode())
            raise LaunchFailed(msg) from None
    return Job(proc, log_path, on_exit, timeout_s, grace_s)
