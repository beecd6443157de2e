"""The files a job's supervisor keeps beside its log, and reading them.

Beside ``task-N.log`` (``JobFiles``): ``task-N.lock`` (held by the supervisor while it lives),
``task-N.run.json`` (written when the job started: ``RunInfo``), ``task-N.exit.json`` (when it ended:
``ExitInfo``), ``task-N.stop.json`` (why the owner stopped it: a later owner that records the exit needs
the reason), ``task-N.pause.json`` (the job's pauses: ``PauseInfo``; the supervisor's timeout and a
later owner read it). An owner that starts later finds the runs a previous owner left (``find_runs``); a file
that cannot be read is None, never an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from gputray.scheduler.jobs import supervisor

#: Why a job ended other than by itself. ``orphaned``: its supervisor vanished without writing the exit
#: (killed with SIGKILL, a power cut): the exit status is unknown.
KillReason = Literal["cancelled", "timeout", "lost", "shutdown", "orphaned", "unanswering", "moved"]
_REASONS: frozenset[str] = frozenset({"cancelled", "timeout", "lost", "shutdown", "moved"})


@dataclass(frozen=True)
class JobFiles:
    """The supervisor's files beside a task's log."""

    run: Path
    exit: Path
    lock: Path
    stop: Path
    pause: Path

    @classmethod
    def beside(cls, log_path: Path) -> JobFiles:
        stem = log_path.name[: -len(".log")] if log_path.name.endswith(".log") else log_path.name
        folder = log_path.parent
        return cls(
            folder / f"{stem}.run.json",
            folder / f"{stem}.exit.json",
            folder / f"{stem}.lock",
            folder / f"{stem}.stop.json",
            folder / f"{stem}.pause.json",
        )

    def discard(self) -> None:
        """Remove the files once the exit is recorded (the lock only when no supervisor holds it)."""
        for path in (self.exit, self.run, self.stop, self.pause):
            with contextlib.suppress(OSError):
                path.unlink()
        if not supervisor_alive(self):
            with contextlib.suppress(OSError):
                self.lock.unlink()


@dataclass(frozen=True)
class RunInfo:
    """A ``task-N.run.json``: what a supervisor started."""

    files: JobFiles
    task_id: int
    attempt: int
    pid: int
    pid_create_time: float | None
    supervisor_pid: int
    started_at: float
    device: str
    log_path: Path
    out: str | None
    timeout_s: float | None
    cgroup: str | None = None  # the job's own cgroup v2 folder, where it has one (``reach.py``)
    queue_file: str | None = None  # the queue that started it (its environment names it too)
    started_mono: float | None = None  # the supervisor's monotonic clock at the start (older files: None)


@dataclass(frozen=True)
class ExitInfo:
    """A ``task-N.exit.json``: how the job ended."""

    pid: int
    returncode: int
    timed_out: bool
    ended_at: float
    leftovers: int = 0  # processes still running when the job ended, stopped by its supervisor
    log_lost_bytes: int = 0  # output the log could not take (a full disk)
    ended_mono: float | None = None  # the monotonic clock at the end; None: not this boot's, or not said


@dataclass(frozen=True)
class PauseInfo:
    """A ``task-N.pause.json``: the pauses of the job's current run, written by the owner that pauses
    and resumes it (``queue.job_pause``). ``paused_s``: the seconds of the pauses that ended;
    ``paused_since``: when the pause now in force began (epoch seconds), None while it runs;
    ``method``: how it was frozen (``freeze.FreezeMethod``); ``checkpointed``: the pids whose CUDA state
    ``cuda-checkpoint`` moved to host memory (restored before the thaw's end); ``why``: the words
    the log and the reason give it."""

    paused_s: float = 0.0
    paused_since: float | None = None
    method: str | None = None
    checkpointed: tuple[int, ...] = ()
    why: str = ""

    @property
    def paused(self) -> bool:
        return self.paused_since is not None

    def doc(self) -> dict[str, Any]:
        return {
            "paused_s": self.paused_s,
            "paused_since": self.paused_since,
            "method": self.method,
            "checkpointed": list(self.checkpointed),
            "why": self.why,
        }


def read_pause(files: JobFiles) -> PauseInfo | None:
    """The job's pause file; None when it has none (never paused) or it cannot be read."""
    doc = _read_json(files.pause)
    if doc is None:
        return None
    try:
        since = doc.get("paused_since")
        method = doc.get("method")
        return PauseInfo(
            paused_s=max(0.0, float(doc.get("paused_s") or 0.0)),
            paused_since=None if since is None else float(since),
            method=method if isinstance(method, str) else None,
            checkpointed=tuple(int(p) for p in doc.get("checkpointed") or ()),
            why=str(doc.get("why") or ""),
        )
    except (TypeError, ValueError):
        return None


def write_pause(files: JobFiles, info: PauseInfo) -> None:
    """The pause file, all or nothing (the supervisor may read it at any moment)."""
    supervisor.write_atomic(files.pause, info.doc())


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _float_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_run(files: JobFiles) -> RunInfo | None:
    doc = _read_json(files.run)
    try:
        assert doc is not None
        ct = doc.get("pid_create_time")
        out = doc.get("out")
        timeout_s = doc.get("timeout_s")
        cgroup = doc.get("cgroup")
        return RunInfo(
            files=files,
            task_id=int(doc["task_id"]),
            attempt=int(doc["attempt"]),
            pid=int(doc["pid"]),
            pid_create_time=None if ct is None else float(ct),
            supervisor_pid=int(doc["supervisor_pid"]),
            started_at=float(doc["started_at"]),
            device=str(doc["device"]),
            log_path=Path(str(doc["log_path"])),
            out=None if out is None else str(out),
            timeout_s=None if timeout_s is None else float(timeout_s),
            cgroup=cgroup if isinstance(cgroup, str) else None,
            queue_file=str(doc["queue_file"]) if isinstance(doc.get("queue_file"), str) else None,
            started_mono=_float_or_none(doc.get("started_mono")),
        )
    except (AssertionError, KeyError, TypeError, ValueError):
        return None


def exit_info(doc: object, pid: int) -> ExitInfo | None:
    """An exit document (the exit file, or the supervisor's last line), if it is this job's (the same pid)."""
    try:
        if not isinstance(doc, dict) or int(doc["pid"]) != pid:  # not an assert: `python -O` drops those
            return None
        return ExitInfo(
            pid,
            int(doc["returncode"]),
            bool(doc.get("timed_out")),
            float(doc["ended_at"]),
            int(doc.get("leftovers") or 0),
            int(doc.get("log_lost_bytes") or 0),
            # a monotonic reading means something only in the boot that made it
            _float_or_none(doc.get("ended_mono")) if doc.get("boot") == supervisor.boot_id() else None,
        )
    except (KeyError, TypeError, ValueError):
        return None


def read_exit(files: JobFiles, pid: int) -> ExitInfo | None:
    """The exit file, if it is this job's (the same pid)."""
    return exit_info(_read_json(files.exit), pid)


def read_stop_reason(files: JobFiles) -> KillReason | None:
    doc = _read_json(files.stop)
    reason = doc.get("reason") if doc else None
    return cast(KillReason, reason) if reason in _REASONS else None


def supervisor_alive(files: JobFiles) -> bool:
    """Whether a supervisor holds the task's lock (it does for as long as it lives)."""
    if not files.lock.exists():
        return False
    try:
        fd = supervisor.lock_exclusive(files.lock, blocking=False)
    except OSError:
        return False
    if fd is None:
        return True
    os.close(fd)
    return False


def find_runs(logs_dir: Path) -> dict[int, RunInfo]:
    """Every readable run file in ``logs_dir`` by task id (one ``scandir``, not a stat per task)."""
    found: dict[int, RunInfo] = {}
    try:
        entries = list(os.scandir(logs_dir))
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("task-") and entry.name.endswith(".run.json"):
            log_path = logs_dir / (entry.name[: -len(".run.json")] + ".log")
            run = read_run(JobFiles.beside(log_path))
            if run is not None:
                found[run.task_id] = run
    return found
