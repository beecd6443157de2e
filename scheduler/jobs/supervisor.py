"""A job's supervisor: the small process between the owner and a job, so that the job's exit status is
recorded whoever is around when it ends (the owner may crash, be killed, or quit keeping its jobs).

On POSIX the launcher asks the **supervisor host** (``python -I supervisor.py --host``, one per
owner) to fork one: a fork instead of a Python interpreter's start and imports for every job (30-150
ms). Where there is no host (Windows, or it cannot start), ``launcher.launch`` starts
``python -I supervisor.py`` itself. Either way the supervisor is in a session of its own (a
terminal's Ctrl+C or hang-up never reaches it), reads one JSON request on stdin and answers on stdout.
On Linux it is a child subreaper and, where cgroup v2 lets us, in a cgroup of its own that the job
is born in (``reach.py``; the host joins the next job's group ahead of need, as a cgroup move waits
~25 ms). The supervisor then:

1. takes an exclusive lock on ``task-N.lock`` and holds it for as long as it lives: whoever finds
   that lock free knows the supervisor has ended (no pid that could be reused is trusted);
2. starts the job, a process group of its own, its output appended to the task's log through a pipe
   (``CappedLog``: at most ``[logs] max_size``, its head and its tail);
3. answers the job's pid first (a job that kills its supervisor at once is still known), then writes
   ``task-N.run.json`` (pids, attempt, device, cgroup …) atomically and says "recorded";
4. waits for the job (and reaps the orphans it left, which come to the subreaper), stopping every
   process in reach when its timeout passes; time the job spent paused (``task-N.pause.json``, written
   by the owner that paused it) does not count: the deadline moves on by it, and there is none while
   the job is paused;
5. stops whatever the job left running (children in other sessions included), counts them and says
   so in the log, answers how the job ended, then writes ``task-N.exit.json`` (return code, whether
   it timed out, leftovers) atomically: a temporary file, fsync, rename, fsync of the folder;
6. exits, which frees the lock.

The files sit beside the log. The next owner adopts a job whose lock is held (it goes on watching it
as running) and records the exit of one whose lock is free from the exit file.

This file runs as a script with ``-I -S`` (no current folder, no site-packages): the standard
library only, ``job_log.py`` (the log within its cap), ``reach.py`` and ``win_job.py`` loaded by path,
and psutil from the folder the launcher names (Windows: to stop a timed-out job's whole tree). The
request travels as ASCII JSON, so names that are not UTF-8 (surrogate escapes) survive.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # imported: the owner, the tests, the type checker
    from gputray.scheduler.jobs.job_log import DEFAULT_LOG_MAX_BYTES, CappedLog, open_log
    from gputray.scheduler.jobs.reaper import Reaper
    from gputray.scheduler.jobs.sure_files import lock_exclusive, reserve, write_atomic, write_reserved
else:  # run as a script with ``-I -S``: the modules beside this one, loaded by path (not importable)
    import importlib.util

    def _beside(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(
            f"_gputray_{name}", Path(__file__).with_name(f"{name}.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    _job_log, _sure = _beside("job_log"), _beside("sure_files")
    DEFAULT_LOG_MAX_BYTES, CappedLog, open_log = (
        _job_log.DEFAULT_LOG_MAX_BYTES,
        _job_log.CappedLog,
        _job_log.open_log,
    )
    lock_exclusive, reserve, Reaper = _sure.lock_exclusive, _sure.reserve, _beside("reaper").Reaper
    write_atomic, write_reserved = _sure.write_atomic, _sure.write_reserved

__all__ = ["lock_exclusive", "main", "reserve", "supervise", "write_atomic", "write_reserved"]

FORMAT = 1  # version of the run and exit files


RETRY_WRITE_S = 1.0  # a full disk: how often the exit file is tried again
#: how long the task's lock may stay held by the previous attempt's supervisor: it answers the owner
#: first and then writes its exit file, while the retry may already be starting
PREVIOUS_ATTEMPT_S = 10.0


def _group_popen_kwargs() -> dict[str, Any]:
    if sys.platform == "win32":
        flags = subprocess.CREATE_NEW_PROCESS_GROUP | getattr(subprocess, "CREATE_NO_WINDOW", 0)
        return {"creationflags": flags}
    return {"start_new_session": True}


_SIGKILL = int(getattr(signal, "SIGKILL", 9))  # Windows has no SIGKILL: there it means the job object

#: Windows: the job object holding the job's tree (``win_job.py``), what its process group is on POSIX.
_job_object: Any = None


def _contain(proc: subprocess.Popen[bytes]) -> None:
    """Windows: put the job in a job object named after its pid, so its whole tree can be ended (an
    orphaned grandchild included) by us and by the owner. ``win_job.py`` is loaded by path: with
    ``-I -S`` the files beside this one are not importable."""
    global _job_object
    if sys.platform != "win32":
        return
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_gputray_win_job", Path(__file__).with_name("win_job.py")
        )
        assert spec is not None and spec.loader is not None
        win_job = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(win_job)
        _job_object = win_job.contain(proc)
    except Exception:  # no job object: the psutil walk is all there is, as before
        _job_object = None


def _signal_group(pid: int, sig: int) -> None:
    if sys.platform != "win32":
        with contextlib.suppress(OSError):
            os.killpg(pid, sig)
    elif sig != signal.SIGTERM and _job_object is not None:  # SIGKILL's stand-in: the whole job object
        _job_object.terminate()


def linux_create_time(pid: int) -> float | None:
    """The process's start time as psutil gives it on Linux (boot time + start ticks / clock rate),
    read from /proc without psutil: to tell the job from another process that later gets its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        with open("/proc/stat", "rb") as f:
            btime = next(float(line.split()[1]) for line in f if line.startswith(b"btime"))
        return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _stop_tree(proc: subprocess.Popen[bytes], grace_s: float, psutil_path: str | None) -> None:
    """SIGTERM the job's group and tree, SIGKILL what is left after ``grace_s``."""
    tree: list[Any] = []
    try:
        if psutil_path and psutil_path not in sys.path:
            sys.path.append(psutil_path)
        import psutil

        tree = psutil.Process(proc.pid).children(recursive=True)
    except Exception:  # no psutil: its group is stopped all the same
        pass
    _signal_group(proc.pid, signal.SIGTERM)
    for p in tree:  # one SIGTERM each (_Reach.signal): those in the job's group had theirs
        with contextlib.suppress(Exception):
            if sys.platform == "win32" or os.getpgid(p.pid) != proc.pid:
                p.terminate()
    with contextlib.suppress(OSError):  # the job itself, unless its group (its own) had it
        if sys.platform == "win32" or os.getpgid(proc.pid) != proc.pid:
            proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    _signal_group(proc.pid, _SIGKILL)
    for p in tree:
        with contextlib.suppress(Exception):
            p.kill()
    with contextlib.suppress(OSError):
        proc.kill()


def _answer(doc: dict[str, Any], *, last: bool = True) -> bool:
    """One line to the owner that started us (the pid, then how the job ended); a gone owner is fine.
    Whether it was sent."""
    sent = False
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.write(json.dumps(doc, ensure_ascii=True) + "\n")
        sys.stdout.flush()
        sent = True
    if last:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.close()
    return sent


def _record_exit(exit_file: Path, run_file: Path, doc: dict[str, Any]) -> None:
    """The exit file, however long a full disk takes to free up: the owner that is up already knows
    from our last line, but one that starts later learns it only from here. Stops trying once the
    owner has recorded the exit (it removes the run file)."""
    while run_file.exists():
        time.sleep(RETRY_WRITE_S)
        try:
            write_atomic(exit_file, doc)
            return
        except OSError:
            continue


def _refusal(exc: BaseException) -> dict[str, Any]:
    return {
        "error": {
            "type": type(exc).__name__,
            "message": str(exc),
            "filename": getattr(exc, "filename", None),
            "strerror": getattr(exc, "strerror", None),
            "errno": getattr(exc, "errno", None),
        }
    }


def _load_beside(name: str) -> Any:
    """A module from the file ``name`` beside this one (with ``-I -S`` they are not importable)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_gputray_{name[:-3]}", Path(__file__).with_name(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Reach:
    """What the supervisor can reach of a job's processes: its group always; on Linux every descendant
    (a subreaper) and, where allowed, the job's own cgroup (``reach.py``)."""

    def __init__(self, reach: Any, cgroup: Any) -> None:
        self.reach = reach
        self.cgroup = cgroup
        self.job_pid = 0

    def pids(self) -> list[int]:
        found: set[int] = set(self.reach.descendants()) if self.reach is not None else set()
        if self.cgroup is not None:
            found.update(self.cgroup.pids())
        found.discard(os.getpid())
        return sorted(found)

    def signal(self, sig: int) -> None:
        """``sig`` once to each process in reach: its group at once, the others (in the cgroup, or
        descendants that left the group) one by one. A second SIGTERM is "hurry" to some programs
        (llama-server: "Received second interrupt, terminating immediately.")."""
        _signal_group(self.job_pid, sig)
        for pid in self.pids():  # the cgroup's too (pids() reads it)
            with contextlib.suppress(OSError):
                if sys.platform == "win32" or os.getpgid(pid) != self.job_pid:
                    os.kill(pid, sig)

    def stop_all(self, reaper: Reaper | None, grace_s: float) -> int:
        """SIGTERM everything in reach, SIGKILL what is left after ``grace_s``; how many there were."""
        if reaper is None:  # no subreaper: its group is what we know of
            _signal_group(self.job_pid, _SIGKILL)
            return 0
        reaper.reap()
        found = self.pids()
        if not found:
            _signal_group(self.job_pid, _SIGKILL)  # a group member just starting, if any
            return 0
        for sig, wait_s in ((signal.SIGTERM, grace_s), (_SIGKILL, 10.0)):
            self.signal(sig)
            until = time.monotonic() + wait_s
            while self.pids() and time.monotonic() < until:
                reaper.sleep(0.05)  # a direct child's end wakes us; deeper ones are looked for again
                reaper.reap()
            if not self.pids():
                break
        reaper.reap()
        return len(found)


def _leftover_line(count: int) -> str:
    were = "1 process was" if count == 1 else f"{count} processes were"
    return f"{were} still running after the job ended: stopped"


#: While the job is paused, how often its pause file is read again (to learn of the resume: the owner
#: sends no signal; under a cgroup freeze we are frozen ourselves and wake with the job).
PAUSED_LOOK_S = 2.0


def later_deadline(pause_file: str | None, started: float, timeout_s: float) -> float | None:
    """A monotonic deadline later than ``started + timeout_s`` by the time the job spent paused (the
    pause file: ``{"paused_s": …, "paused_since": …}``); a look again soon while it is paused now; None
    when no pause pushes it past now (then the timeout stands)."""
    if not pause_file:
        return None
    try:
        with open(pause_file, "rb") as f:
            doc = json.loads(f.read())
        paused_s = float(doc.get("paused_s") or 0.0)
        paused_now = doc.get("paused_since") is not None
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    now = time.monotonic()
    if paused_now:
        return now + PAUSED_LOOK_S
    deadline = started + timeout_s + paused_s
    return deadline if deadline > now else None


def _note_in_log(path: str, text: str) -> None:
    with contextlib.suppress(OSError):
        fd = open_log(path)
        try:
            os.write(fd, f"\ngputray: {text}\n".encode())
        finally:
            os.close(fd)


def supervise(req: dict[str, Any], reach: Any = None, cgroup: Any = None) -> int:
    run_file, exit_file, lock_file = Path(req["run_file"]), Path(req["exit_file"]), Path(req["lock_file"])
    meta: dict[str, Any] = dict(req.get("meta") or {})
    lock_fd = lock_exclusive(lock_file, blocking=False)
    until = time.monotonic() + PREVIOUS_ATTEMPT_S
    while lock_fd is None and time.monotonic() < until:  # the previous attempt's, finishing its files
        time.sleep(0.005)
        lock_fd = lock_exclusive(lock_file, blocking=False)
    if lock_fd is None:
        _answer({"error": {"type": "Busy", "message": f"another supervisor holds {lock_file}"}})
        return 1
    with contextlib.suppress(FileNotFoundError):
        os.unlink(exit_file)  # an earlier attempt's
    try:
        # Room for the run and exit files, taken before the job starts: a job that ends on a full disk
        # still leaves its exit here, so that no owner ever takes it for interrupted and runs it again.
        reserve(exit_file)
        reserve(run_file)
        log_fd = open_log(req["log"])
    except OSError as exc:
        for path in (exit_file, run_file):
            with contextlib.suppress(OSError):
                os.unlink(path)
        _answer(_refusal(exc))
        return 0
    if req.get("stderr_to_log"):  # a forked supervisor has no log as stderr: its own trouble shows there
        os.dup2(log_fd, 2)
    reaper = Reaper() if sys.platform != "win32" else None
    read_fd, write_fd = os.pipe()  # the job writes here; CappedLog keeps the log within its cap
    popen_kwargs: dict[str, Any] = {
        "env": req["env"],
        "cwd": req.get("cwd") or None,
        "stdin": subprocess.DEVNULL,
        "stdout": write_fd,
        "stderr": subprocess.STDOUT,
        "close_fds": True,
        **_group_popen_kwargs(),
    }
    if req.get("umask", -1) != -1:
        popen_kwargs["umask"] = int(req["umask"])  # the user's own, not gputray's private one
    try:  # its thread before the job: one that cannot start (RLIMIT_NPROC) is a refusal, nothing runs
        output = CappedLog(read_fd, log_fd, int(req.get("log_max_bytes") or DEFAULT_LOG_MAX_BYTES))
    except (RuntimeError, MemoryError) as exc:
        for fd in (read_fd, write_fd, log_fd):
            os.close(fd)
        _answer(_failed(exc))
        return 0
    try:
        proc: subprocess.Popen[bytes] = subprocess.Popen(req["argv"], **popen_kwargs)
    except (OSError, ValueError, TypeError) as exc:
        os.close(write_fd)
        output.finish()  # its thread sees the pipe end, the log is closed
        _answer(_refusal(exc))
        return 0
    os.close(write_fd)
    started_at = time.time()
    cgroup_path = None if cgroup is None else str(cgroup.path)
    # The pid first, then the run file, then "recorded": a job that kills us at once (`kill -9 $PPID`)
    # is still known to the owner by its pid, and the owner goes on once the run file is there.
    # (Windows: once the job object exists, which the owner opens by the job's pid.)
    pid_answer = {
        "pid": proc.pid,
        "started_at": started_at,
        "cgroup": cgroup_path,
        "supervisor_pid": os.getpid(),
    }
    if sys.platform != "win32":
        _answer(pid_answer, last=False)
    _contain(proc)
    in_reach = _Reach(reach, cgroup)
    in_reach.job_pid = proc.pid
    if reaper is not None:
        reaper.job_pid = proc.pid
    stopping: list[int] = []

    def on_term(signum: int, frame: object) -> None:
        # Someone stopped the supervisor itself (a session's end, a kill of our pid): stop the job
        # with it, and go on to record how it ended.
        stopping.append(signum)
        if reaper is not None:  # not proc.terminate(): its poll() would reap the job behind our back
            if reaper.job_status is None:
                in_reach.signal(signal.SIGTERM)
            return
        _signal_group(proc.pid, signal.SIGTERM)
        with contextlib.suppress(OSError):
            proc.terminate()

    signal.signal(signal.SIGTERM, on_term)
    if sys.platform == "win32":
        _answer(pid_answer, last=False)
    run_doc = {
        "format": FORMAT,
        **meta,
        "pid": proc.pid,
        "pid_create_time": linux_create_time(proc.pid) if sys.platform.startswith("linux") else None,
        "supervisor_pid": os.getpid(),
        "started_at": started_at,
        "started_mono": time.monotonic(),  # how long it ran is the monotonic clock's (``ExitInfo``)
        "timeout_s": req.get("timeout_s"),
        "log_path": req["log"],
        "cgroup": cgroup_path,
    }
    with contextlib.suppress(OSError):  # over its reservation: only a vanished file fails here
        write_reserved(run_file, run_doc)
    _answer({"recorded": True}, last=False)
    timeout_s = req.get("timeout_s")
    grace_s = float(req.get("grace_s", 3.0))
    started_mono = time.monotonic()
    deadline = None if timeout_s is None else started_mono + float(timeout_s)
    timed_out = False
    while True:
        if reaper is not None:
            code = reaper.wait_job(deadline)
            if code is not None:
                proc.returncode = code  # reaped here: the Popen must not wait for it again
                break
        else:
            try:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                code = proc.wait(timeout=remaining)
                break
            except subprocess.TimeoutExpired:
                pass
        later = later_deadline(req.get("pause_file"), started_mono, float(timeout_s or 0.0))
        if later is not None:  # paused time does not count: the timeout is further off
            deadline = later
            continue
        _answer({"timing_out": True}, last=False)  # the owner knows why it ends before it has
        timed_out = True
        deadline = None
        if reaper is not None:
            in_reach.signal(signal.SIGTERM)  # then the sweep below: SIGKILL after the grace time
            code = reaper.wait_job(time.monotonic() + grace_s)
            if code is not None:
                proc.returncode = code
                break
            in_reach.signal(_SIGKILL)
        else:
            _stop_tree(proc, grace_s, req.get("psutil_path"))
    # Whatever the job left running (children in other sessions included) must not hold the GPU; and
    # while they live they may hold the output pipe open.
    leftovers = in_reach.stop_all(reaper, grace_s)
    output.finish()  # the log is complete before the exit file says the job ended
    if leftovers:
        _note_in_log(req["log"], _leftover_line(leftovers))
    doc = {
        "format": FORMAT,
        **meta,
        "pid": proc.pid,
        "returncode": code,
        "timed_out": timed_out,
        "leftovers": leftovers,
        "log_lost_bytes": output.lost,
        "ended_at": time.time(),
        "ended_mono": time.monotonic(),  # how long it ran and how long ago it ended, whatever the wall clock
        "boot": boot_id(),
    }
    told = _answer(doc)  # first: the owner records it (durably) and starts the next job without our fsyncs
    try:
        if run_file.exists():  # gone: the owner has recorded it already
            write_reserved(exit_file, doc)  # over its reservation when the disk is full
    except OSError:  # no reservation to write over: the owner that started us, if still up, has our line
        _record_exit(exit_file, run_file, doc)
    os.close(lock_fd)
    if cgroup is not None and not told:  # no owner to remove our group after us: we do
        cgroup.leave_and_remove()
    return 0


def boot_id() -> str | None:
    """This boot's id (Linux): a monotonic reading means something only within the boot that made it."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _ignore(signum: int, frame: object) -> None:
    pass


def _job_main(reach: Any, cgroup: Any = None) -> int:
    """One job: its request on stdin, our answers on stdout (a supervisor started for it, or forked by
    the host, which had already made and joined ``cgroup`` for it)."""
    if reach is not None and reach.become_subreaper():
        if cgroup is not None:
            cgroup.rename(f"gputray-job-{os.getpid()}")  # named after us, as one we make is
        else:
            # The job's own cgroup, which we join so that the job is born in it. The owner removes
            # it after us (or we do, when no owner is listening at the end).
            cgroup = reach.JobCgroup.make(f"gputray-job-{os.getpid()}")
            if cgroup is not None and not cgroup.join():
                cgroup.remove()
                cgroup = None
        if cgroup is not None:  # said first: if we die as the job starts, the owner can stop it
            _answer({"cgroup": str(cgroup.path)}, last=False)
    else:
        reach = cgroup = None
    data = sys.stdin.buffer.read()
    if not data:  # nothing to do after all: its owner closed or went away
        if cgroup is not None:
            cgroup.leave_and_remove()
        return 0
    try:
        req = json.loads(data.decode("ascii"))
    except (ValueError, UnicodeDecodeError) as exc:
        _answer({"error": {"type": "BadRequest", "message": f"the launch request is not JSON: {exc}"}})
        return 2
    return supervise(req, reach, cgroup)


_forked: set[int] = set()  # the host: the supervisors it forked that have not ended


def _reap_children(signum: int, frame: object) -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid = os.waitpid(-1, os.WNOHANG)[0]
            if not pid:
                break
            _forked.discard(pid)


def _sweep(reach: Any) -> int:
    """The host: stop what it adopted (it is a child subreaper): every child it did not fork, with its
    descendants. They are what a job left when its supervisor was killed. How many processes."""
    if reach is None:
        return 0
    stopped = 0
    for child in reach.descendants_of_children(os.getpid(), exclude=_forked):
        with contextlib.suppress(OSError):
            os.kill(child, _SIGKILL)
            stopped += 1
    return stopped


def _host_main(reach: Any) -> int:
    """``--host`` (POSIX): fork one supervisor per job, so that no job waits for a Python interpreter
    to start and import (~30-150 ms on a busy machine). Stdin is our end of a ``SOCK_SEQPACKET``
    socket pair; each message from the owner carries two fds (``j``), the read end of the job's request
    pipe and the write end of its answer pipe; the forked supervisor says hello (its pid) there first,
    then is what a started one is: a session of its own, the same files, the same answers; it outlives
    us and the owner. The host is a child subreaper: what a job leaves when its supervisor is killed
    comes to us, and ``s`` (one fd, for the answer) stops it. We end when the owner's end closes."""
    import socket

    host = socket.socket(fileno=os.dup(0))
    signal.signal(signal.SIGCHLD, _reap_children)
    if reach is not None:
        reach.load_prctl()  # once, here: each forked supervisor needs it at once
        reach.become_subreaper()
    forks = 0
    base = reach.own_cgroup() if reach is not None else None  # ours now; the next jobs' beside it
    group = _next_group(reach, base, forks)
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(host, 16, 2)
        except OSError:
            msg, fds = b"", []
        if not msg:
            if group is not None:
                group.leave_and_remove()
            return 0
        if msg == b"s" and len(fds) == 1:
            with contextlib.suppress(OSError):
                os.write(fds[0], (json.dumps({"stopped": _sweep(reach)}) + "\n").encode("ascii"))
            os.close(fds[0])
            continue
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        req_r, ans_w = fds
        try:
            pid = os.fork()
        except OSError as exc:  # out of processes now: the owner tries again later
            with contextlib.suppress(OSError):
                os.write(ans_w, (json.dumps(_refusal(exc), ensure_ascii=True) + "\n").encode("ascii"))
            os.close(req_r)
            os.close(ans_w)
            continue
        if pid == 0:
            _hosted_child(host, req_r, ans_w, reach, group)
        _forked.add(pid)
        os.close(req_r)
        os.close(ans_w)
        forks += 1
        group = _next_group(reach, base, forks)  # while the job runs, not when the next one is due


def _hosted_child(host: Any, req_r: int, ans_w: int, reach: Any, group: Any) -> None:
    """A supervisor the host forked: hello, then one job. Whatever goes wrong is answered in words
    (a thread that cannot start under RLIMIT_NPROC, say), never a silent exit."""
    code = 70
    try:
        host.close()
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.dup2(req_r, 0)
        os.dup2(ans_w, 1)
        os.close(req_r)
        os.close(ans_w)
        _answer({"hello": os.getpid()}, last=False)
        if group is not None:
            group.exclude.add(os.getppid())  # we are born in it; the host leaves it soon
        code = _job_main(reach, group)
    except BaseException as exc:
        _answer(_failed(exc))
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)


def _failed(exc: BaseException) -> dict[str, Any]:
    """The supervisor itself failed: said in words, with an errno that tells a want of resources."""
    doc = _refusal(exc)
    doc["error"]["supervisor_failed"] = True
    if doc["error"]["errno"] is None and "can't start new thread" in str(exc):
        doc["error"]["errno"] = 11  # EAGAIN: no thread for now (RLIMIT_NPROC, a pids limit)
    if isinstance(exc, MemoryError):
        doc["error"]["errno"] = 12  # ENOMEM
    return doc


def _next_group(reach: Any, base: Any, n: int) -> Any:
    """The next job's cgroup, made and joined by the host ahead of need: its supervisor is born in it.
    (Joining one makes the kernel wait for an RCU grace period, ~20-30 ms: here, not on the way
    from one job's end to the next one's start.)"""
    if reach is None or base is None:
        return None
    group = reach.JobCgroup.make(f"gputray-host{os.getpid()}-{n}", base)
    if group is not None and not group.join():
        group.remove()
        return None
    return group


def main() -> int:
    # Not ours to act on (the owner's terminal, not the job's end). A handler, not SIG_IGN: an ignored
    # signal would stay ignored in the job, a handler is reset to the default when the job starts.
    for name in ("SIGINT", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, _ignore)
    reach = None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            reach = _load_beside("reach.py")
    if sys.argv[1:] == ["--host"]:
        return _host_main(reach)
    try:
        return _job_main(reach)
    except Exception as exc:  # said to the owner in words (and, with its traceback, in the log)
        import traceback

        traceback.print_exc()
        _answer(_failed(exc))
        return 70


if __name__ == "__main__":
    sys.exit(main())
