"""Starting a job under its supervisor and reading its answers up to the job's pid, every read
bounded; a launch that fails says why in ``LaunchFailed`` (``transient``: tried again later). Moved out
of ``launcher.py`` whole: the launcher keeps the ``Job`` and its watcher."""

from __future__ import annotations

import contextlib
import errno
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import psutil

from gputray.scheduler.jobs import reach
from gputray.scheduler.jobs.job_files import JobFiles
from gputray.scheduler.jobs.orphans import kill_marked, marks_of
from gputray.scheduler.jobs.process_tree import kill_tree
from gputray.scheduler.jobs.supervisor_link import (
    HOST,
    SUPERVISOR_START_TIMEOUT_S,
    Silent,
    SupervisorLink,
    popen_supervisor,
)
from gputray.scheduler.paths import open_private_append

RECORDED_S = 10.0  # after the pid: how long the launch waits for "recorded" (the run file is written)
MAX_CONTINUES = 3  # a supervisor stopped again after this many SIGCONTs is given up (killed with its job)


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

    def __init__(
        self, message: str, *, transient: bool = False, supervisor_killed: bool = False, stopped: int = 0
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.supervisor_killed = supervisor_killed  # as the job started (by the job, maybe): not a refusal
        self.stopped = stopped  # the job's processes stopped then


def _failure_message(argv: Sequence[str], cwd: str | Path | None, error: Mapping[str, Any]) -> str:
    kind = error.get("type")
    filename = error.get("filename")
    strerror = error.get("strerror")
    if kind == "FileNotFoundError":
        missing = argv[0] if filename in (None, argv[0]) else filename
        what = "folder" if cwd and filename == str(cwd) else "program"
        return f"cannot start {argv[0]}: the {what} {missing} does not exist"
    return f"cannot start {argv[0]}: {strerror or error.get('message') or kind}"


def start_supervised(
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
) -> tuple[SupervisorLink, dict[str, Any]]:
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
        sup = HOST.supervisor(files.lock)
        if sup is None:
            try:
                sup = popen_supervisor(log, files.lock)  # its own trouble, if any, shows in the log
            except OSError as exc:
                raise LaunchFailed(
                    f"cannot start the job's supervisor: {exc.strerror or exc}",
                    transient=exc.errno in TRANSIENT_ERRNOS,
                ) from None
        return sup, _converse(sup, request, log, argv, cwd, env)


def _converse(
    sup: SupervisorLink,
    request: dict[str, Any],
    log: IO[bytes],
    argv: Sequence[str],
    cwd: str | Path | None,
    env: Mapping[str, str],
) -> dict[str, Any]:
    """Send the job to its supervisor and read its answers up to the job's pid, every read bounded: a
    supervisor that is stopped (or silent past ``SUPERVISOR_START_TIMEOUT_S``) before the pid is
    killed with whatever it may have started, and the start is tried again later. The answer with
    the pid, or LaunchFailed."""
    cgroup: str | None = None
    answer: dict[str, Any] = {}
    continues = 0
    deadline = time.monotonic() + SUPERVISOR_START_TIMEOUT_S
    try:
        sup.send(request, deadline)  # it reads the whole request before it writes: no deadlock
        while True:  # the job's cgroup, if it gets one; then the pid (how it ended comes later)
            try:
                got = sup.answers.next(deadline, stuck=sup.stopped)
            except Silent as silent:  # stopped (by the job, maybe, as it started): continued, a few times
                if not silent.stopped or continues >= MAX_CONTINUES:
                    raise
                continues += 1
                sup.cont()
                continue
            if got is None or set(got) != {"cgroup"}:
                answer = got or {}
                break
            cgroup = str(got["cgroup"])
    except Silent as silent:
        why = "was stopped" if silent.stopped else f"did not answer within {SUPERVISOR_START_TIMEOUT_S:g} s"
        raise _given_up(sup, log, f"its supervisor {why} as the job was starting", cgroup, env) from None
    except BaseException:
        sup.kill()
        sup.wait(timeout=5)
        raise
    if "pid" in answer:
        if sup.hosted and "supervisor_pid" in answer:
            sup.pid = int(answer["supervisor_pid"])
        try:  # then "recorded" (the run file is written); a silence here is the watcher's to handle
            after = sup.answers.next(time.monotonic() + RECORDED_S, stuck=sup.stopped)
        except Silent:
            after = {}
        error = (after or {}).get("error")
        if isinstance(error, dict):  # it failed as the job started: the job must not run unwatched
            kill_tree(int(answer["pid"]), None, grace_s=0.0)
            raise _given_up(
                sup, log, f"its supervisor failed as the job started ({error.get('message')})", cgroup, env
            )
        return answer
    sup.answers.close()
    error = answer.get("error")
    if isinstance(error, dict):
        log.write(f"gputray: {_failure_message(argv, cwd, error)}\n".encode())
        sup.wait(timeout=SUPERVISOR_START_TIMEOUT_S)
        transient = error.get("errno") in TRANSIENT_ERRNOS or bool(error.get("supervisor_failed"))
        raise LaunchFailed(_failure_message(argv, cwd, error), transient=transient)
    # It ended without a word: killed before it answered the pid, maybe as the job started.
    killed = sup.killed_by_signal()
    stopped = _stop_unanswered(cgroup, env)
    if stopped or cgroup or killed:  # by the job itself, maybe: an attempt, with what it started stopped
        msg = "its supervisor process was killed as the job started" + _stopped_note(stopped)
        log.write(f"gputray: {msg}\n".encode())
        raise LaunchFailed(msg, supervisor_killed=True, stopped=stopped)
    msg = "its supervisor ended before it started the job"  # nothing began: tried again
    log.write(f"gputray: {msg}\n".encode())
    raise LaunchFailed(msg, transient=True)


def _stop_unanswered(cgroup: str | None, env: Mapping[str, str]) -> int:
    """Whatever a supervisor that never told the job's pid may have started: its cgroup, its marks."""
    stopped = reach.kill_cgroup(cgroup) if cgroup else 0
    return stopped + kill_marked(*(marks_of(env) or (None, None)))


def _stopped_note(count: int) -> str:
    return f"; {count} process{'es' if count != 1 else ''} of the job stopped" if count else ""


def _given_up(
    sup: SupervisorLink, log: IO[bytes], why: str, cgroup: str | None, env: Mapping[str, str]
) -> LaunchFailed:
    """A supervisor given up on as the job started: killed, with all it started; tried again later."""
    sup.kill()
    sup.answers.close()
    sup.wait(timeout=5)
    stopped = _stop_unanswered(cgroup, env)
    msg = why + _stopped_note(stopped)
    log.write(f"gputray: {msg}\n".encode())
    # Something of the job ran: an attempt, interrupted (the retry policy decides); else tried again.
    return LaunchFailed(msg, transient=not stopped, supervisor_killed=bool(stopped))
