"""A job's supervisor: the small process between the owner and a job, so that the job's exit status is
recorded whoever is around when it ends (the owner may crash, be killed, or quit keeping its jobs).

``launcher.launch`` starts ``python -I supervisor.py`` in a session of its own (a terminal's Ctrl+C
or hang-up never reaches it) and writes one JSON request to its stdin. The supervisor then:

1. takes an exclusive lock on ``task-N.lock`` and holds it for as long as it lives: whoever finds
   that lock free knows the supervisor has ended (no pid that could be reused is trusted);
2. starts the job, a process group of its own, its output appended to the task's log through a pipe
   (``CappedLog``: at most ``[logs] max_size``, its head and its tail);
3. writes ``task-N.run.json`` (pids, attempt, device …) atomically, then answers the launcher with
   the job's pid on stdout and closes it;
4. waits for the job, stopping it (its group, then its whole tree) when its timeout passes;
5. stops stragglers the job left in its group, then writes ``task-N.exit.json`` (return code, whether
   it timed out) atomically: a temporary file, fsync, rename, fsync of the folder;
6. exits, which frees the lock.

The files sit beside the log. The next owner adopts a job whose lock is held (it goes on watching it
as running) and records the exit of one whose lock is free from the exit file.

This file runs as a script with ``-I -S`` (no current folder, no site-packages: it starts in ~20 ms):
the standard library only, and psutil from the folder the launcher names, imported only to stop a
timed-out job's whole tree (not only its group). The request travels as ASCII JSON, so names that
are not UTF-8 (surrogate escapes) survive.
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
from typing import Any

FORMAT = 1  # version of the run and exit files


RETRY_WRITE_S = 1.0  # a full disk: how often the exit file is tried again


def write_atomic(path: Path, doc: dict[str, Any]) -> None:
    """``doc`` as JSON at ``path``, all or nothing: temporary file, fsync, rename, fsync of the folder."""
    data = json.dumps(doc, ensure_ascii=True).encode("ascii")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sys.platform != "win32":
        with contextlib.suppress(OSError):
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


def lock_exclusive(path: Path, *, blocking: bool) -> int | None:
    """An fd holding an exclusive lock on ``path`` (created if missing), or None when someone holds it.

    POSIX: ``flock`` (freed when the holder exits, however it exits). Windows: ``msvcrt.locking`` on
    the first byte (the same); a blocking wait there polls.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
    try:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                    return fd
                except OSError:
                    if not blocking:
                        os.close(fd)
                        return None
                    time.sleep(0.25)
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


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
    for p in tree:
        with contextlib.suppress(Exception):
            p.terminate()
    with contextlib.suppress(OSError):
        proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    _signal_group(proc.pid, _SIGKILL)
    for p in tree:
        with contextlib.suppress(Exception):
            p.kill()
    with contextlib.suppress(OSError):
        proc.kill()


def _answer(doc: dict[str, Any], *, last: bool = True) -> None:
    """One line to the owner that started us (the pid, then how the job ended); a gone owner is fine."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.write(json.dumps(doc, ensure_ascii=True) + "\n")
        sys.stdout.flush()
    if last:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.close()


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


DEFAULT_LOG_MAX_BYTES = 1 << 30  # [logs] max_size
MAX_TAIL_BYTES = 8 << 20  # past its cap, a log keeps at most this much of the output's end
READ_BYTES = 1 << 16
DRAIN_S = 0.5  # after the job ended: how long output still in flight may take to reach the log


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to the log; what a full disk refuses is dropped (the job must not block on it)."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(fd, view) :]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


class CappedLog:
    """The job's output (a pipe) into its log, which keeps at most ``max_bytes``: the head as it comes,
    then, past ``max_bytes - tail``, only the last ``tail`` bytes, held here and written when the output
    ends after a line saying how much was dropped. A job that writes 13 GB leaves a log of its cap,
    its first lines and its last ones."""

    def __init__(self, read_fd: int, log_fd: int, max_bytes: int) -> None:
        import collections
        import threading

        self._read_fd, self._log_fd = read_fd, log_fd
        self.max_bytes = max_bytes
        self._tail_max = min(max_bytes // 8, MAX_TAIL_BYTES)
        try:
            self._size = os.fstat(log_fd).st_size  # the header is part of it
        except OSError:
            self._size = 0
        self._head_end = max(self._size, max_bytes - self._tail_max)
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_bytes = 0
        self.dropped = 0
        self._holding = False  # past the head: the output is held (its tail) until the end
        self._done = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, name="gputray-log", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self._read_fd, READ_BYTES)
            except OSError:
                data = b""
            if not data:
                break
            with self._lock:
                if self._done:
                    break
                self._take(data)
        with contextlib.suppress(OSError):
            os.close(self._read_fd)

    def _take(self, data: bytes) -> None:
        room = self._head_end - self._size
        if room > 0:
            head = data[:room]
            _write_all(self._log_fd, head)
            self._size += len(head)
            data = data[room:]
        if not data:
            return
        if not self._holding:
            self._holding = True
            _write_all(
                self._log_fd,
                f"\n[gputray: this log is near its cap of {_size(self.max_bytes)} ([logs] max_size): the "
                f"rest of the output is written when the job ends, its last {_size(self._tail_max)} at "
                "most]\n".encode(),
            )
        self._tail.append(data)
        self._tail_bytes += len(data)
        while self._tail_bytes - len(self._tail[0]) >= self._tail_max:
            gone = self._tail.popleft()
            self._tail_bytes -= len(gone)
            self.dropped += len(gone)

    def finish(self) -> None:
        """Wait a moment for output in flight (a descendant that escaped the job's group may hold the
        pipe open for ever), then write the tail after a line saying what was dropped."""
        self._thread.join(DRAIN_S)
        with self._lock:
            self._done = True
            tail = b"".join(self._tail)
            extra = max(0, len(tail) - self._tail_max)
            tail, dropped = tail[extra:], self.dropped + extra
            if dropped:
                _write_all(
                    self._log_fd,
                    f"\n[gputray: {dropped:,} bytes ({_size(dropped)}) of output were dropped here; the last "
                    f"{_size(len(tail))} follow]\n".encode(),
                )
            _write_all(self._log_fd, tail)
            with contextlib.suppress(OSError):
                os.close(self._log_fd)


def _open_log(path: str) -> int:
    """An fd appending to the task's log, for the job's stdout and stderr.

    Windows: ``O_APPEND`` is the C runtime's, not the file handle's, and the job is handed the handle:
    it would write from offset 0 over the header. A handle opened with ``FILE_APPEND_DATA`` alone
    appends every write, as ``O_APPEND`` does on POSIX.
    """
    if sys.platform == "win32":
        import _winapi  # type: ignore[import-not-found,unused-ignore]
        import msvcrt

        file_append_data, share_all, open_always, normal = 0x0004, 0x0007, 4, 0x80
        handle = _winapi.CreateFile(path, file_append_data, share_all, 0, open_always, normal, 0)
        return int(msvcrt.open_osfhandle(handle, os.O_APPEND | os.O_BINARY))  # type: ignore[attr-defined,unused-ignore]
    # Never through a symbolic link, never blocking on a FIFO: the job may have replaced its log.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    import stat

    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"the log {path} is not a regular file")
    return fd


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


def supervise(req: dict[str, Any]) -> int:
    run_file, exit_file, lock_file = Path(req["run_file"]), Path(req["exit_file"]), Path(req["lock_file"])
    meta: dict[str, Any] = dict(req.get("meta") or {})
    lock_fd = lock_exclusive(lock_file, blocking=False)
    if lock_fd is None:
        _answer({"error": {"type": "Busy", "message": f"another supervisor holds {lock_file}"}})
        return 1
    with contextlib.suppress(FileNotFoundError):
        os.unlink(exit_file)  # an earlier attempt's
    try:
        log_fd = _open_log(req["log"])
    except OSError as exc:
        _answer(_refusal(exc))
        return 0
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
    try:
        proc: subprocess.Popen[bytes] = subprocess.Popen(req["argv"], **popen_kwargs)
    except (OSError, ValueError, TypeError) as exc:
        for fd in (read_fd, log_fd):
            os.close(fd)
        _answer(_refusal(exc))
        return 0
    finally:
        os.close(write_fd)
    output = CappedLog(read_fd, log_fd, int(req.get("log_max_bytes") or DEFAULT_LOG_MAX_BYTES))
    _contain(proc)
    stopping: list[int] = []

    def on_term(signum: int, frame: object) -> None:
        # Someone stopped the supervisor itself (a session's end, a kill of our pid): stop the job
        # with it, and go on to record how it ended.
        stopping.append(signum)
        _signal_group(proc.pid, signal.SIGTERM)
        with contextlib.suppress(OSError):
            proc.terminate()

    signal.signal(signal.SIGTERM, on_term)
    started_at = time.time()
    write_atomic(
        run_file,
        {
            "format": FORMAT,
            **meta,
            "pid": proc.pid,
            "pid_create_time": linux_create_time(proc.pid) if sys.platform.startswith("linux") else None,
            "supervisor_pid": os.getpid(),
            "started_at": started_at,
            "timeout_s": req.get("timeout_s"),
            "log_path": req["log"],
        },
    )
    _answer({"pid": proc.pid, "started_at": started_at}, last=False)
    timeout_s = req.get("timeout_s")
    deadline = None if timeout_s is None else time.monotonic() + float(timeout_s)
    timed_out = False
    while True:
        try:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            code = proc.wait(timeout=remaining)
            break
        except subprocess.TimeoutExpired:
            _answer({"timing_out": True}, last=False)  # the owner knows why it ends before it has
            timed_out = True
            deadline = None
            _stop_tree(proc, float(req.get("grace_s", 3.0)), req.get("psutil_path"))
    _signal_group(proc.pid, _SIGKILL)  # stragglers left in its group must not hold the GPU
    output.finish()  # the log is complete before the exit file says the job ended
    doc = {
        "format": FORMAT,
        **meta,
        "pid": proc.pid,
        "returncode": code,
        "timed_out": timed_out,
        "ended_at": time.time(),
    }
    try:
        write_atomic(exit_file, doc)
        _answer(doc)
    except OSError:  # a full disk: the owner that started us, if still up, records the exit from this
        _answer(doc)
        _record_exit(exit_file, run_file, doc)
    os.close(lock_fd)
    return 0


def _ignore(signum: int, frame: object) -> None:
    pass


def main() -> int:
    # Not ours to act on (the owner's terminal, not the job's end). A handler, not SIG_IGN: an ignored
    # signal would stay ignored in the job, a handler is reset to the default when the job starts.
    for name in ("SIGINT", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, _ignore)
    try:
        req = json.loads(sys.stdin.buffer.read().decode("ascii"))
    except (ValueError, UnicodeDecodeError) as exc:
        _answer({"error": {"type": "BadRequest", "message": f"the launch request is not JSON: {exc}"}})
        return 2
    return supervise(req)


if __name__ == "__main__":
    sys.exit(main())
