"""Stopping a job's process tree: SIGTERM its group and every descendant, SIGKILL what is left after
a grace; and ``stop_leftover``, for a job (and its supervisor) found running after a crash. Moved out of
``launcher.py`` whole; a process is named by its pid and start time, so a reused pid is never hit."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

import psutil

from gputray.scheduler.jobs import reach, win_job
from gputray.scheduler.jobs.job_files import RunInfo, supervisor_alive


def process_create_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):  # already gone
        return None


def same_process(pid: int, create_time: float | None) -> psutil.Process | None:
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


def terminate_tree(pid: int, create_time: float | None) -> list[psutil.Process]:
    """SIGTERM the job's group and its whole tree; the processes it found (none: it was not alive)."""
    parent = same_process(pid, create_time)
    if parent is None:
        return []
    try:
        procs = [*parent.children(recursive=True), parent]
    except (psutil.Error, OSError):
        procs = [parent]
    _signal_group(pid, graceful=True)
    for p in procs:  # one SIGTERM each: a second is "hurry" to some (llama-server skips its clean exit)
        with contextlib.suppress(psutil.Error, OSError):
            if sys.platform == "win32" or os.getpgid(p.pid) != pid:
                p.terminate()
    return procs


def escalate_kill(pid: int, procs: list[psutil.Process], *, grace_s: float) -> None:
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


def kill_tree(pid: int, create_time: float | None, *, grace_s: float) -> int:
    """SIGTERM the job's group and tree, SIGKILL what is left after ``grace_s``; how many processes
    there were (0: it was not alive)."""
    procs = terminate_tree(pid, create_time)
    escalate_kill(pid, procs, grace_s=grace_s)
    return len(procs)


def stop_leftover(run: RunInfo, *, grace_s: float = 0.0) -> bool:
    """Stop a job (and its supervisor) found after a crash; True only when a process was alive to stop."""
    stopped = bool(run.cgroup and reach.kill_cgroup(run.cgroup))
    stopped = bool(kill_tree(run.pid, run.pid_create_time, grace_s=grace_s)) or stopped
    sup = same_process(run.supervisor_pid, None)
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
