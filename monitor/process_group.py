"""Helper processes (the Vulkan worker, torch probes, jobs) in a process group of their own.

A hung driver or probe is then stopped with everything it started, and on Windows no console window
flashes up when the tray app (which has no console) starts one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any


def own_group_popen_kwargs() -> dict[str, Any]:
    """``subprocess.Popen`` keyword arguments: a new session on POSIX, a new process group on Windows."""
    if sys.platform == "win32":
        return {
            "creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | getattr(subprocess, "CREATE_NO_WINDOW", 0)
        }
    return {"start_new_session": True}


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (on Windows: ``proc`` itself). Never raises."""
    try:
        if sys.platform == "win32":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def popen_own_group(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` in a group of its own, safe against a Ctrl+C that lands while it starts.

    A KeyboardInterrupt raised inside ``Popen`` after the fork leaves a running child whose pid
    nobody holds: in its own session the terminal's Ctrl+C never reaches it, so a hung probe would
    outlive us. Here SIGINT is held while the child starts; if one came, the child's group is
    killed and the Ctrl+C goes on as usual. (Python runs signal handlers in the main thread only,
    so elsewhere there is nothing to hold.)
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        # elsewhere no Ctrl+C arrives; None: a handler set outside Python, which could not be put back
        return subprocess.Popen(list(argv), **kwargs, **own_group_popen_kwargs())
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        proc = subprocess.Popen(list(argv), **kwargs, **own_group_popen_kwargs())
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        kill_group(proc)
        proc.wait()
        signal.raise_signal(signal.SIGINT)  # to the handler in place again: KeyboardInterrupt, usually
    return proc
