"""A process's name (``ollama``, ``ollama.exe``, ``LM Studio.exe``) that works wherever psutil's does not.

psutil's ``Process.name()`` on Windows is the last part of ``exe()``, which it reads as a native NT
path (``NtQuerySystemInformation(SystemProcessIdInformation)``) and converts to a drive letter. Under
Wine (8.0) that raises a bare ``OSError`` (EINVAL) for *every* process, our own included, while
``QueryFullProcessImageNameW`` answers the Win32 path: so on Windows the name falls back to that API,
then to the first word of the command line. On Linux and macOS psutil's answer is used as it is.
"""

from __future__ import annotations

import functools
import ntpath
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psutil

PROCESS_QUERY_LIMITED_INFORMATION = 0x1000


def process_name(proc: psutil.Process) -> str:
    """``proc``'s (a ``psutil.Process``) executable name; raises what psutil raises when the process is
    gone or not ours to read and no fallback has it either."""
    try:
        return str(proc.name() or "")
    except Exception as exc:
        import psutil

        if isinstance(exc, psutil.NoSuchProcess) or sys.platform != "win32":
            raise
        image = image_path(proc.pid)
        if image:
            return ntpath.basename(image)
        argv = proc.cmdline()
        if argv:
            return ntpath.basename(str(argv[0]))
        raise


def image_path(pid: int) -> str | None:
    """The Win32 path of ``pid``'s executable (``QueryFullProcessImageNameW``); None where it cannot be
    had (not Windows, gone, not ours to open)."""
    if sys.platform != "win32":
        return None
    import ctypes
    from ctypes import wintypes

    kernel32 = _kernel32()
    handle = kernel32.OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return None
    try:
        size = wintypes.DWORD(32768)
        buffer = ctypes.create_unicode_buffer(size.value)
        if not kernel32.QueryFullProcessImageNameW(handle, 0, buffer, ctypes.byref(size)):
            return None
        return buffer.value or None
    finally:
        kernel32.CloseHandle(handle)


@functools.cache
def _kernel32() -> Any:
    """kernel32 with the two calls' prototypes, set once (Windows only)."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.QueryFullProcessImageNameW.argtypes = (
        wintypes.HANDLE,
        wintypes.DWORD,
        wintypes.LPWSTR,
        ctypes.POINTER(wintypes.DWORD),
    )
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    return kernel32
