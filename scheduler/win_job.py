"""A Windows job object per job: what a process group is on POSIX, so the whole tree can be stopped.

Windows has no ``killpg``: walking children with psutil misses a grandchild whose parent has already
exited (a ``cmd /c start`` launcher, a script that spawns a worker and returns). Every process a job
starts stays in its job object, orphaned or not, and ``TerminateJobObject`` ends them all. The job
object has no kill-on-close limit: as on POSIX, jobs outlive a crashed owner (the next owner's crash
recovery finds them). A process the job starts in the few milliseconds before it is assigned escapes
the job object; the psutil walk still catches it while its parent lives.

Windows only; importing this module is safe anywhere.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any


class JobObject:
    """One anonymous job object holding one job's process tree."""

    def __init__(self, process_handle: int) -> None:
        self._kernel32: Any = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
        self._kernel32.CreateJobObjectW.restype = ctypes.c_void_p
        self._kernel32.CreateJobObjectW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p]
        self._kernel32.AssignProcessToJobObject.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self._kernel32.TerminateJobObject.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        self._kernel32.CloseHandle.argtypes = [ctypes.c_void_p]
        self._lock = threading.Lock()  # the watcher closes while a cancel thread may terminate
        handle = self._kernel32.CreateJobObjectW(None, None)
        if not handle:
            raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined,unused-ignore]
        self._handle: int | None = handle
        if not self._kernel32.AssignProcessToJobObject(handle, process_handle):
            error = ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined,unused-ignore]
            self.close()
            raise error

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


def job_object_for(proc: Any) -> JobObject | None:
    """A job object holding ``proc`` (a ``subprocess.Popen``), or None off Windows or where it fails."""
    if sys.platform != "win32":
        return None
    try:
        return JobObject(int(proc._handle))
    except (OSError, AttributeError):
        return None
