"""Helper processes (the Vulkan worker, torch probes, jobs) in a process group of their own.

A hung driver or probe is then stopped with everything it started, and on Windows no console window
flashes up when the tray app (which has no console) starts one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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
