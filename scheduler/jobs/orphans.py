"""Job processes a crashed owner left behind: found by pid and start time (no pid reuse), or by the
task id and queue file gputray put in the job's environment when its pid was never saved; killed
with their whole tree so that a task never runs twice."""

from __future__ import annotations

import builtins
import contextlib
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

# Every job's environment names the queue file that started it (beside GPUTRAY_TASK_ID), so that
# crash recovery can find a job whose pid was never saved: the owner died just as it launched it.
QUEUE_FILE_VAR = "GPUTRAY_QUEUE_FILE"


def kill_orphan(pid: int | None, create_time: float | None) -> bool:
    """Kill a leftover job process tree, but only if pid and start time both match (no pid reuse)."""
    if pid is None or create_time is None:
        return False
    import psutil

    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) > 0.5 or proc.status() == psutil.STATUS_ZOMBIE:
            return False  # another process now, or one already dead: nothing was stopped
        procs = [*proc.children(recursive=True), proc]
        # A job that ended by itself may linger as a zombie until it is reaped: nothing left to stop.
        alive = [p for p in procs if p.status() != psutil.STATUS_ZOMBIE]
    except (psutil.Error, OSError):
        return False
    if sys.platform != "win32":  # the job leads its own process group: helpers it left there go too
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
    kill_all(alive)
    return bool(alive)


def kill_unrecorded_job(task_id: int, queue_file: str) -> bool:
    """Kill the processes of a job whose pid was never saved, found by the task id and queue file
    gputray put in its environment (processes whose environment we may not read are skipped)."""
    return bool(kill_marked(task_id, queue_file))


def kill_marked(task_id: int | None, queue_file: str | None, *, session: int | None = None) -> int:
    """Kill every live process that carries the job's marks in its environment (``GPUTRAY_TASK_ID``
    and ``QUEUE_FILE_VAR``) or, with ``session``, is in that session (the job leads its own): what a
    job left that nothing else reaches (no cgroup, its supervisor gone). How many there were."""
    import psutil

    wanted = {"GPUTRAY_TASK_ID": str(task_id), QUEUE_FILE_VAR: queue_file}
    marked = task_id is not None and queue_file is not None
    found = []
    for proc in psutil.process_iter():  # each read on its own (Wine raises bare OSErrors attrs= lets out)
        if proc.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error, OSError):
            ours = marked and all((proc.environ() or {}).get(k) == v for k, v in wanted.items())
            if not ours and session is not None and sys.platform != "win32":
                ours = os.getsid(proc.pid) == session
            if ours and proc.status() != psutil.STATUS_ZOMBIE:  # a zombie is dead: nothing to stop
                found.append(proc)
    kill_all(found)
    return len(found)


def marks_of(env: Mapping[str, str]) -> tuple[int, str] | None:
    """The marks gputray put in a job's environment (task id, queue file), if it has both."""
    task_id, queue_file = env.get("GPUTRAY_TASK_ID", ""), env.get(QUEUE_FILE_VAR)
    return (int(task_id), queue_file) if task_id.isdigit() and queue_file else None


def kill_all(procs: builtins.list[Any]) -> None:
    import psutil

    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            p.kill()
    psutil.wait_procs(procs, timeout=3)
