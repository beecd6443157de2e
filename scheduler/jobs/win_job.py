"""A Windows job object per job: what a process group is on POSIX, so the whole tree can be stopped.

Windows has no ``killpg``: walking children with psutil misses a grandchild whose parent has already
exited (a ``cmd /c start`` launcher, a script that spawns a worker and returns). Every process a job
starts stays in its job object, orphaned or not, and ``TerminateJobObject`` ends them all.

The job's supervisor (``supervisor.py``) creates the job object as soon as it has started the job,
named after the job's pid (:func:`job_name`), and ends it where POSIX sends the group SIGKILL: when
the job has exited (stragglers) and when a timeout's grace time is over. The owner opens it by that
name to end the tree when it cancels the job or stops one left after a crash, and holds a handle
while it watches the job, so the name stays valid even if the supervisor is killed. The job object
has no kill-on-close limit: as on POSIX, jobs outlive a crashed owner. A process the job starts in
the few milliseconds before it is assigned escapes the job object; the psutil walk still catches it
while its parent lives.

Windows only; importing this module is safe anywhere. The supervisor loads this file by path (it runs
with ``-I -S``), so it imports nothing but the standard library.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

JOB_OBJECT_TERMINATE = 0x0008
JOB_OBJECT_QUERY = 0x0004
ERROR_ALREADY_EXISTS = 183


def job_name(pid: int) -> str:
    """The name of the job object holding the job whose first process is ``pid``."""
    return f"Local\\gputray-job-{pid}"


def _kernel32() -> Any:
    k: Any = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    k.CreateJobObjectW.restype = ctypes.c_void_p
    k.CreateJobObjectW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p]
    k.OpenJobObjectW.restype = ctypes.c_void_p
    k.OpenJobObjectW.argtypes = [ctypes.c_uint32, ctypes.c_int, ctypes.c_wchar_p]
    k.AssignProcessToJobObject.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    k.TerminateJobObject.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    k.CloseHandle.argtypes = [ctypes.c_void_p]
    return k


def _last_error() -> OSError:
    error: OSError = ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined,unused-ignore]
    return error


class JobObject:
    """A handle on one job object holding one job's process tree."""

    def __init__(self, kernel32: Any, handle: int) -> None:
        self._kernel32 = kernel32
        self._lock = threading.Lock()  # the watcher closes while a cancel thread may terminate
        self._handle: int | None = handle

    @classmethod
    def create(cls, process_handle: int, name: str | None) -> JobObject:
        """A new job object (named ``name`` unless that name is taken) holding the process."""
        kernel32 = _kernel32()
        handle = kernel32.CreateJobObjectW(None, name)
        already = ctypes.get_last_error() == ERROR_ALREADY_EXISTS  # type: ignore[attr-defined,unused-ignore]
        if handle and name is not None and already:
            # an older job's object still open under this pid's name: never join another job's tree
            kernel32.CloseHandle(handle)
            handle = kernel32.CreateJobObjectW(None, None)
        if not handle:
            raise _last_error()
        job = cls(kernel32, handle)
        if not kernel32.AssignProcessToJobObject(handle, process_handle):
            error = _last_error()
            job.close()
            raise error
        return job

    @classmethod
    def open(cls, name: str) -> JobObject | None:
        """The job object called ``name``, or None when there is none (it has ended)."""
        kernel32 = _kernel32()
        handle = kernel32.OpenJobObjectW(JOB_OBJECT_TERMINATE | JOB_OBJECT_QUERY, 0, name)
        return cls(kernel32, handle) if handle else None

    def terminate(self, exit_code: int = 1) -> None:
        """End every process still in the job. Never raises."""
        with self._lock:
            if self._handle is not None:
                self._kernel32.TerminateJobObject(self._handle, exit_code)

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._kernel32.CloseHandle(self._handle)
                self._handle = None


def contain(proc: Any) -> JobObject | None:
    """A job object named after ``proc`` (a ``subprocess.Popen``) holding it; None off Windows or where
    it fails (the psutil walk is then all there is)."""
    if sys.platform != "win32":
        return None
    try:
        return JobObject.create(int(proc._handle), job_name(int(proc.pid)))
    except (OSError, AttributeError):
        return None


def open_job(pid: int) -> JobObject | None:
    """The job object of the job started as ``pid``; None off Windows or when it has gone."""
    if sys.platform != "win32":
        return None
    try:
        return JobObject.open(job_name(pid))
    except OSError:
        return None


def terminate_job(pid: int) -> bool:
    """End every process in the job started as ``pid``; whether its job object was found."""
    job = open_job(pid)
    if job is None:
        return False
    job.terminate()
    job.close()
    return True
