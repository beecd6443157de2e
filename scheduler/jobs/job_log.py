"""A job's log, written by its supervisor (``supervisor.py``): the output of the job through a pipe
into ``task-N.log``, kept within ``[logs] max_size`` (``CappedLog``: its head and its tail), and the log
opened so that a job that replaced it with a link or a FIFO cannot redirect or block the supervisor.

Run by the supervisor as a script with ``-I -S``: the standard library only, loaded by path.
"""

from __future__ import annotations

import contextlib
import os
import sys

DEFAULT_LOG_MAX_BYTES = 1 << 30  # [logs] max_size
MAX_TAIL_BYTES = 8 << 20  # past its cap, a log keeps at most this much of the output's end
READ_BYTES = 1 << 16
DRAIN_S = 0.5  # after the job ended: how long output still in flight may take to reach the log
NOTE_BYTES = 1024  # kept free under the cap for gputray's own lines (these notes, the energy footer)


def _write_all(fd: int, data: bytes) -> int:
    """All of ``data`` to the log; what a full disk refuses is dropped (the job must not block on it):
    how many bytes that was."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(fd, view) :]
    return len(view)


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
        self._head_end = max(self._size, max_bytes - self._tail_max - NOTE_BYTES)
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_bytes = 0
        self.dropped = 0
        self.lost = 0  # bytes of output the disk refused (full): the log says so, and the task's reason
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
            self.lost += _write_all(self._log_fd, head)
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
            self.lost += _write_all(self._log_fd, tail)
            with contextlib.suppress(OSError):
                os.close(self._log_fd)


def attempt_room(max_bytes: int) -> int:
    """What one attempt needs under the cap: its head and its tail (``CappedLog``) and the notes."""
    return 2 * min(max_bytes // 8, MAX_TAIL_BYTES) + NOTE_BYTES


def make_room(path: str, max_bytes: int) -> int:
    """Before another attempt appends to a task's log: what the earlier attempts left is cut to leave
    this one ``attempt_room`` under ``max_bytes`` (the cap is the log's, not each attempt's). Their head
    stays where it is and their last part (at most what one attempt's tail keeps) moves down after a
    line saying how much was dropped: at most that tail is read and written, whatever the cap. Returns
    how many bytes were dropped (0: nothing to do, or the log could not be changed)."""
    try:
        return _make_room(path, max_bytes)
    except OSError:
        return 0


def _make_room(path: str, max_bytes: int) -> int:
    import stat

    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return 0  # no log yet (or none we may change): nothing to make room in
    with os.fdopen(fd, "r+b") as f:
        info = os.fstat(f.fileno())
        budget = max_bytes - attempt_room(max_bytes)
        if not stat.S_ISREG(info.st_mode) or info.st_size <= budget:
            return 0
        tail_n = min(max_bytes // 8, MAX_TAIL_BYTES, budget // 2)
        note = b""
        for _ in range(3):  # the note's length depends on the figure it gives
            dropped = info.st_size - (budget - len(note))
            note = (
                f"\n[gputray: {dropped:,} bytes ({_size(dropped)}) of earlier attempts' output were dropped "
                f"here to keep this log within [logs] max_size ({_size(max_bytes)})]\n"
            ).encode()
        head_n = budget - len(note) - tail_n
        f.seek(info.st_size - tail_n)
        tail = f.read(tail_n)
        f.seek(head_n)
        f.write(note + tail)
        f.truncate(head_n + len(note) + len(tail))
    return info.st_size - head_n - len(tail)


def open_log(path: str) -> int:
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
