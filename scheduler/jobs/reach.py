"""Every process a job starts, within reach on Linux (the standard library only: the supervisor loads
this file by path, as it runs with ``-I -S``).

* The supervisor is a **child subreaper** (``prctl(PR_SET_CHILD_SUBREAPER)``): a process the job
  double-forks into a session of its own (``setsid sleep 1001 &``) is re-parented to the supervisor
  when its parent ends, not to PID 1. So every live descendant of the job stays in the supervisor's
  own process tree (``descendants``), whatever sessions and groups it made.
* Where cgroup v2 lets us (our own cgroup is a folder we may write, as systemd's user manager
  delegates ``user@UID.service`` to the user, and root may anywhere), the job also runs in a
  **cgroup of its own** beside the supervisor's (``JobCgroup``): its processes are counted and killed
  as one (``cgroup.kill``), even after the supervisor is gone. Anything else falls back cleanly to
  the subreaper alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
#: set (not "0") in the owner's environment: no job gets a cgroup, as for a user whose cgroup is not
#: theirs to write (an SSH or terminal session); the tests use it to prove the fallbacks
NO_CGROUPS_VAR = "GPUTRAY_NO_CGROUPS"


_prctl: Any = None


def load_prctl() -> Any:
    """libc's ``prctl`` through ctypes, loaded once (the supervisor host loads it before it forks:
    importing ctypes costs a forked supervisor ~5-10 ms otherwise); None where there is none."""
    global _prctl
    if _prctl is None and sys.platform.startswith("linux"):
        try:
            import ctypes

            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _prctl = False
    return _prctl or None


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux ≥ 3.4); False where that is not possible."""
    prctl = load_prctl()
    return prctl is not None and int(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0


def _children(pid: int) -> list[int]:
    """The children of ``pid`` (``/proc/PID/task/*/children``; a scan of /proc where that is missing)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    try:
        for tid in tasks:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(x) for x in f.read().split())
        return found
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN, or the task just ended
        pass
    except OSError:
        return found
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{name}/stat", "rb") as f:
                if int(f.read().rpartition(b")")[2].split()[1]) == pid:
                    found.append(int(name))
    return found


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] == b"Z"
    except (OSError, IndexError):
        return True  # gone


def descendants(pid: int | None = None) -> list[int]:
    """Every live (not zombie) descendant of ``pid`` (this process by default), nearest first."""
    root = os.getpid() if pid is None else pid
    seen: list[int] = []
    frontier = [root]
    while frontier:
        nxt: list[int] = []
        for p in frontier:
            for child in _children(p):
                if child not in seen and child != root:
                    seen.append(child)
                    nxt.append(child)
        frontier = nxt
    return [p for p in seen if not _is_zombie(p)]


def descendants_of_children(pid: int, *, exclude: set[int]) -> list[int]:
    """Every live child of ``pid`` not in ``exclude`` and every live descendant of those, deepest first
    (what the supervisor host adopted: see ``supervisor._sweep``)."""
    found: list[int] = []
    for child in _children(pid):
        if child in exclude:
            continue
        found.extend(reversed(descendants(child)))
        if not _is_zombie(child):
            found.append(child)
    return found


def _cgroup2_mount() -> Path | None:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.split()[:1] == ["cgroup2"]:
                    return Path(left.split()[4])
    except OSError:
        pass
    return None


def own_cgroup() -> Path | None:
    """This process's cgroup v2 folder, if the unified hierarchy is mounted and we may make groups in
    it (write access to the folder and to its ``cgroup.procs``: moving a process between two groups
    needs the latter on their common ancestor)."""
    if not sys.platform.startswith("linux") or os.environ.get(NO_CGROUPS_VAR, "") not in ("", "0"):
        return None
    mount = _cgroup2_mount()
    if mount is None:
        return None
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as f:
            rel = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
    except OSError:
        return None
    if rel is None or rel.endswith("(deleted)"):
        return None
    folder = mount / rel.lstrip("/")
    if not (os.access(folder, os.W_OK | os.X_OK) and os.access(folder / "cgroup.procs", os.W_OK)):
        return None
    return folder


class JobCgroup:
    """A job's own cgroup v2 folder: its processes, counted and killed as one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.exclude: set[int] = set()  # never signalled nor counted: the host that made it for us

    def rename(self, name: str) -> None:
        with contextlib.suppress(OSError):
            new = self.path.with_name(name)
            self.path.rename(new)
            self.path = new

    @classmethod
    def make(cls, name: str, base: Path | None = None) -> JobCgroup | None:
        """A new group ``name`` beside ours; None where that is not allowed (then the subreaper is all
        there is)."""
        base = base or own_cgroup()  # the host passes the group it started in: it moves on
        if base is None:
            return None
        path = base / name
        try:
            path.mkdir()
        except FileExistsError:
            pass
        except OSError:
            return None
        if not os.access(path / "cgroup.procs", os.W_OK):
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path)

    def join(self) -> bool:
        """Move this process into the group (its children are born there). Slow (the kernel waits
        for an RCU grace period, ~20 ms): the supervisor does it while it waits as a spare."""
        try:
            with open(self.path / "cgroup.procs", "w") as f:
                f.write(str(os.getpid()))
            return True
        except OSError:
            return False

    def leave_and_remove(self) -> None:
        """Move this process back to the parent group and remove ours (when no owner will)."""
        with contextlib.suppress(OSError), open(self.path.parent / "cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        self.remove()

    def pids(self) -> list[int]:
        try:
            with open(self.path / "cgroup.procs", "rb") as f:
                return [pid for x in f.read().split() if (pid := int(x)) not in self.exclude]
        except (OSError, ValueError):
            return []

    def signal_all(self, sig: int) -> None:
        """``sig`` to every process in the group but this one (the supervisor lives in it too)."""
        me = os.getpid()
        for pid in self.pids():
            if pid != me:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)

    def kill(self) -> None:
        """SIGKILL everything in the group (``cgroup.kill``, Linux ≥ 5.14: at once); its supervisor is
        gone."""
        try:
            with open(self.path / "cgroup.kill", "w") as f:
                f.write("1")
        except OSError:
            self.signal_all(signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the (empty) group; False while processes are still in it."""
        try:
            self.path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False


def remove_cgroup(path: str | Path) -> None:
    """Remove a job's group once its supervisor has ended (an empty folder; nothing else is touched)."""
    group = Path(path)
    if not group.name.startswith("gputray-"):
        return
    for _ in range(50):  # a process that just ended may leave the group a moment later
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def kill_cgroup(path: str | Path) -> int:
    """SIGKILL every process in a job's group (its supervisor is gone) and remove the group; how many
    processes there were. Nothing happens to a path that is not a cgroup folder named like ours."""
    group = Path(path)
    if not group.name.startswith("gputray-") or not (group / "cgroup.procs").exists():
        return 0
    cg = JobCgroup(group)
    count = len(cg.pids())
    if count:
        cg.kill()
    for _ in range(100):  # the killed processes leave the group within moments
        if cg.remove():
            break
        time.sleep(0.02)
    return count


def remove_stale_cgroups() -> int:
    """Remove the empty job groups beside ours whose supervisor is gone (one that ended while no
    owner was up to remove its group); how many."""
    base = own_cgroup()
    removed = 0
    if base is None:
        return removed
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            if entry.name.startswith("gputray-job-"):
                pid = entry.name[len("gputray-job-") :]
            elif entry.name.startswith("gputray-host"):  # gputray-host<pid>-<n>: made ahead by a host
                pid = entry.name[len("gputray-host") :].partition("-")[0]
            else:
                continue
            if not pid.isdigit() or os.path.exists(f"/proc/{pid}"):  # its supervisor or host lives
                continue
            with contextlib.suppress(OSError):
                os.rmdir(entry.path)  # only an empty group can be removed
                removed += 1
    return removed
