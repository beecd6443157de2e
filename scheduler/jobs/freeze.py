"""Freeze and thaw a running job's processes, all of them: what ``gputray pause-job`` does to a job.

Three ways, the first that applies:

* ``cgroup``: the job's own cgroup v2 group (``reach.JobCgroup``) gets ``1`` in ``cgroup.freeze`` and we
  wait for ``frozen 1`` in ``cgroup.events``. The kernel freezes every process in it at once, those
  forked while it freezes included (no race with forks). The job's supervisor lives in the group too
  and is frozen with it: it keeps no clock of its own while frozen (the timeout reads the pause file,
  ``job_files.PauseInfo``). Used only when every process in the group is the supervisor's or the
  job's own (the supervisor host passes through a new group for a moment before a job starts).
* ``signals`` (POSIX without a usable group): SIGSTOP to every process in the job's reach: every
  descendant of its supervisor, which is a child subreaper, so children that ``setsid`` and
  double-fork away are among them; the walk is repeated until it finds no process it has not stopped
  (a process forked between two looks is stopped in the next). SIGCONT to the same reach thaws it.
* ``threads`` (Windows): every process of the job's tree is suspended (``psutil.Process.suspend``:
  ``NtSuspendProcess``, every thread of the process) and resumed the same way.

A frozen process keeps its memory, GPU memory included (``cuda_checkpoint`` is what gives VRAM back).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

from gputray.scheduler.jobs import reach

FreezeMethod = Literal["cgroup", "signals", "threads"]
FREEZE_METHODS: tuple[str, ...] = ("cgroup", "signals", "threads")
#: How long a cgroup may take to report itself frozen (a process inside a driver call freezes when it
#: returns); past this the freeze stays asked for and the pause goes on.
CGROUP_FROZEN_WAIT_S = 5.0
#: Rounds of the SIGSTOP walk: each stops what the previous look had not seen.
SIGSTOP_ROUNDS = 50


@dataclass(frozen=True)
class JobProcesses:
    """What is known of a running job's processes: its first process, its supervisor (None when not
    known: then the job's own tree), and its cgroup folder where it has one."""

    pid: int
    supervisor_pid: int | None = None
    cgroup: str | None = None


@dataclass(frozen=True)
class Frozen:
    """A freeze done: how, and the processes it reached (for the log)."""

    method: FreezeMethod
    pids: tuple[int, ...]


class FreezeFailed(OSError):
    """Nothing of the job could be frozen (it has ended, or we may not signal it)."""


def in_reach(job: JobProcesses) -> list[int]:
    """Every live process of the job (never its supervisor): the supervisor's descendants (a
    subreaper's), else the job's own descendants and itself; plus what its cgroup holds."""
    found: set[int] = set()
    if sys.platform.startswith("linux"):
        if job.supervisor_pid is not None and _alive(job.supervisor_pid):
            found.update(reach.descendants(job.supervisor_pid))
        else:
            found.update(reach.descendants(job.pid))
            if _alive(job.pid):
                found.add(job.pid)
        if job.cgroup is not None:
            found.update(reach.JobCgroup(Path(job.cgroup)).pids())
    else:
        found.update(_psutil_tree(job.pid))
    found.discard(os.getpid())
    if job.supervisor_pid is not None:
        found.discard(job.supervisor_pid)
    return sorted(found)


def freeze(job: JobProcesses) -> Frozen:
    """Freeze every process of the job (see the module docstring); FreezeFailed when none was reached."""
    if sys.platform == "win32":
        return _suspend_threads(job)
    group = _freezable_group(job)
    if group is not None:
        pids = tuple(in_reach(job))
        try:
            (group / "cgroup.freeze").write_text("1")
        except OSError:
            pass  # not allowed after all: the signals below
        else:
            _wait_frozen(group, frozen=True)
            return Frozen("cgroup", pids)
    return _stop_all(job)


def thaw(job: JobProcesses, method: FreezeMethod) -> None:
    """Undo ``freeze`` (done the way it froze). Never raises: a job that ended meanwhile is fine."""
    if method == "cgroup" and job.cgroup is not None:
        group = Path(job.cgroup)
        with contextlib.suppress(OSError):
            (group / "cgroup.freeze").write_text("0")
            _wait_frozen(group, frozen=False)
        return
    if method == "threads":
        for proc in _psutil_processes(job.pid):
            with contextlib.suppress(Exception):
                proc.resume()
        return
    for pid in in_reach(job):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)


def _freezable_group(job: JobProcesses) -> Path | None:
    """The job's cgroup when it has one with a freezer and holds no process but the job's and its
    supervisor's; None otherwise."""
    if job.cgroup is None:
        return None
    group = Path(job.cgroup)
    if not (group / "cgroup.freeze").exists():
        return None
    ours = set(in_reach(job))
    if job.supervisor_pid is not None:
        ours.add(job.supervisor_pid)
    members = set(reach.JobCgroup(group).pids())
    if not members or not members <= ours:
        return None
    return group


def _wait_frozen(group: Path, *, frozen: bool, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Wait until ``cgroup.events`` says ``frozen 1`` (or ``0``); whether it did in time."""
    want = f"frozen {int(frozen)}"
    until = time.monotonic() + CGROUP_FROZEN_WAIT_S
    while True:
        try:
            events = (group / "cgroup.events").read_text()
        except OSError:
            return False
        if want in events.splitlines():
            return True
        if time.monotonic() >= until:
            return False
        sleep(0.005)


def _stop_all(job: JobProcesses) -> Frozen:
    stopped: set[int] = set()
    for _ in range(SIGSTOP_ROUNDS):
        fresh = [pid for pid in in_reach(job) if pid not in stopped]
        if not fresh:
            break
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
            except ProcessLookupError:
                continue
            except OSError as exc:
                if not stopped:
                    raise FreezeFailed(exc.errno, f"cannot stop process {pid}: {exc.strerror}") from None
    if not stopped:
        raise FreezeFailed(f"no process of the job (pid {job.pid}) is running")
    return Frozen("signals", tuple(sorted(stopped)))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _psutil_processes(pid: int) -> list[psutil.Process]:
    """The job's process and its descendants, those still alive."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _psutil_tree(pid: int) -> list[int]:
    return [p.pid for p in _psutil_processes(pid)]


def _suspend_threads(job: JobProcesses) -> Frozen:
    """Windows: suspend every thread of every process in the job's tree."""
    done: list[int] = []
    for proc in _psutil_processes(job.pid):
        with contextlib.suppress(Exception):
            proc.suspend()
            done.append(proc.pid)
    if not done:
        raise FreezeFailed(f"no process of the job (pid {job.pid}) is running")
    return Frozen("threads", tuple(done))
