"""The owner's end of a job's supervisor: its answers read with a deadline, and the supervisor host.

No wait on a supervisor is unbounded. A supervisor answers one JSON object a line on a pipe
(``AnswerLines``); every read has a deadline and looks, while it waits, whether the process it waits
for was stopped (``kill -STOP``, by the job itself maybe: ``kill -STOP $PPID``): a stopped process
answers nothing until someone continues it, so the launcher gives up on it at once instead of holding
the dispatcher, and a job's watcher continues it (``launcher.Job``).

On POSIX one **supervisor host** per owner (``supervisor.py --host``, ``HOST``) forks each job's
supervisor, so a job waits for a fork (~1 ms) instead of a Python interpreter's start and imports
(~30 ms on an idle machine, over 100 ms on a busy one). A forked supervisor says hello (its pid)
before the owner sends it the job: a host that is stopped or gone is noticed before anything could
start, killed, and the job gets a supervisor of its own. The host is a child subreaper: what a job
leaves when its supervisor is killed comes to the host, which stops it when the owner asks
(``HOST.sweep``). Where the host cannot run, each job starts its own supervisor.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import psutil

from gputray.monitor import interpreter
from gputray.monitor.process_group import popen_own_group
from gputray.scheduler.jobs import supervisor

SUPERVISOR_START_TIMEOUT_S = 60.0  # a supervisor that runs but has not answered by then is given up
HOST_SEND_TIMEOUT_S = 5.0  # handing the host a job's pipes (a host that reads nothing fills its socket)


class Silent(Exception):
    """A supervisor (or the host) did not answer in time; ``stopped``: because it was stopped."""

    def __init__(self, stopped: bool) -> None:
        super().__init__("stopped" if stopped else "no answer in time")
        self.stopped = stopped


def is_stopped(pid: int | None) -> bool:
    """Whether process ``pid`` is stopped by a signal (SIGSTOP, SIGTSTP …) or a tracer."""
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except (psutil.Error, OSError):
        return False


class AnswerLines:
    """A supervisor's answers on a pipe: one JSON object a line, each read with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = bytearray()
        self._eof = False
        self._closed = False
        # Windows: select() takes sockets only, so a thread reads the pipe and hands its chunks over.
        self._chunks: queue.Queue[bytes] | None = None
        if sys.platform == "win32":
            self._chunks = queue.Queue()
            threading.Thread(target=self._pump, name="supervisor-answers", daemon=True).start()

    def _pump(self) -> None:
        assert self._chunks is not None
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError:
                data = b""
            self._chunks.put(data)
            if not data:
                return

    def _read_ready(self, wait_s: float) -> bytes | None:
        """What the pipe has within ``wait_s`` (b"" at its end), None when nothing came."""
        if self._chunks is not None:
            try:
                return self._chunks.get(timeout=wait_s)
            except queue.Empty:
                return None
        try:
            ready, _w, _x = select.select([self.fd], [], [], wait_s)
        except (OSError, ValueError):
            return b""
        if not ready:
            return None
        try:
            return os.read(self.fd, 1 << 16)
        except OSError:
            return b""

    def next(
        self,
        deadline: float | None,
        *,
        stuck: Callable[[], bool] | None = None,
        tick_s: float = 0.05,
    ) -> dict[str, Any] | None:
        """The next answer ({} for a line that is not a JSON object), None at the end of the pipe.
        Raises ``Silent`` once ``deadline`` (monotonic) passes, or at a tick when ``stuck()`` is true."""
        while True:
            line_end = self._buf.find(b"\n")
            if line_end >= 0:
                line = bytes(self._buf[:line_end])
                del self._buf[: line_end + 1]
                return _answer_line(line)
            if self._eof or self._closed:
                if self._buf:
                    line, self._buf = bytes(self._buf), bytearray()
                    return _answer_line(line)
                return None
            wait_s = tick_s if deadline is None else min(tick_s, deadline - time.monotonic())
            if wait_s <= 0:
                raise Silent(stopped=False)
            data = self._read_ready(wait_s)
            if data is not None:
                if not data:
                    self._eof = True
                self._buf += data
            elif stuck is not None and stuck():
                raise Silent(stopped=True)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self.fd)


def _answer_line(line: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(line.decode("ascii").strip() or "{}")
    except (UnicodeDecodeError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


class SupervisorLink:
    """One job's supervisor as the owner holds it: the pipe its request goes into, its answers, and the
    process (our child when we started it; forked by the host otherwise, then waited for on the
    task's lock, which it holds while it lives)."""

    def __init__(
        self, stdin: IO[bytes], answers_fd: int, lock: Path, proc: subprocess.Popen[bytes] | None = None
    ) -> None:
        self.stdin: IO[bytes] | None = stdin
        self.answers = AnswerLines(answers_fd)
        self.proc = proc
        self.pid: int | None = proc.pid if proc is not None else None
        self._lock = lock

    @property
    def hosted(self) -> bool:
        return self.proc is None

    def stopped(self) -> bool:
        return is_stopped(self.pid)

    def send(self, request: dict[str, Any], deadline: float) -> None:
        """The job's request, all of it, then the end of the pipe (the supervisor reads it whole first).
        Raises ``Silent`` when the supervisor takes none of it by ``deadline`` or is stopped meanwhile
        (a large environment fills the pipe)."""
        stdin, self.stdin = self.stdin, None
        if stdin is None:
            return
        data = memoryview(json.dumps(request, ensure_ascii=True).encode("ascii"))
        if sys.platform == "win32":
            self._send_windows(stdin, bytes(data), deadline)
            return
        try:
            fd = stdin.fileno()
            os.set_blocking(fd, False)
            while data:
                try:
                    data = data[os.write(fd, data) :]
                    continue
                except BlockingIOError:
                    pass
                _r, ready, _x = select.select([], [fd], [], max(0.0, min(0.05, deadline - time.monotonic())))
                if not ready and (time.monotonic() > deadline or self.stopped()):
                    raise Silent(stopped=self.stopped())
        except (BrokenPipeError, ValueError):
            pass  # it ended: its answers (none) say so
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _send_windows(self, stdin: IO[bytes], data: bytes, deadline: float) -> None:
        """Windows: a pipe cannot be waited on with select() and a non-blocking write of more than its
        buffer fails with EINVAL, so a thread writes it whole (blocking) while we wait with the deadline."""
        done = threading.Event()

        def write() -> None:
            with contextlib.suppress(OSError, ValueError):
                stdin.write(data)
                stdin.flush()
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
            done.set()

        threading.Thread(target=write, name="supervisor-request", daemon=True).start()
        while not done.wait(0.05):
            if time.monotonic() > deadline:
                raise Silent(stopped=False)

    def abandon(self) -> None:
        """Before the request was sent: close our ends (a supervisor forked later reads nothing and ends)."""
        if self.stdin is not None:
            with contextlib.suppress(OSError):
                self.stdin.close()
            self.stdin = None
        self.answers.close()

    def killed_by_signal(self) -> bool:
        """Our child only: whether it ended by a signal (waits for it to end)."""
        return self.proc is not None and self.proc.wait() < 0

    def kill(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
        elif self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)

    def cont(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGCONT)

    def wait(self, timeout: float | None = None) -> bool:
        """Until it has ended (reaped, when it is our child); False when ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        while self.pid is not None and _alive(self.pid):
            if deadline is not None and time.monotonic() > deadline:
                return False
            fd = supervisor.lock_exclusive(self._lock, blocking=False)  # free as it ends
            if fd is not None:
                os.close(fd)
            time.sleep(0.05)
        return True


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


class _Host:
    """POSIX: the supervisor host (module docstring). It ends when we close our end (``close``) or
    exit; the supervisors it forked live on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def supervisor(self, lock: Path) -> SupervisorLink | None:
        """A freshly forked supervisor for one job, once it said hello; None when there is no host here
        or it did not answer (it was stopped, or died: it is killed and started anew next time). Then
        start one the usual way: nothing was sent, nothing started."""
        if sys.platform == "win32":
            return None
        with self._lock:
            if self._sock is None or self._proc is None or self._proc.poll() is not None:
                self._start()
            if self._sock is None or self._proc is None:
                return None
            host_pid = self._proc.pid
            req_r, req_w = os.pipe()
            ans_r, ans_w = os.pipe()
            try:
                socket.send_fds(self._sock, [b"j"], [req_r, ans_w])
            except OSError:  # gone, or it reads nothing (stopped) and its socket is full
                for fd in (req_w, ans_r):
                    os.close(fd)
                self._kill()
                return None
            finally:
                os.close(req_r)
                os.close(ans_w)
            link = SupervisorLink(open(req_w, "wb"), ans_r, lock)  # noqa: SIM115  (closed once sent)
            try:
                hello = link.answers.next(
                    time.monotonic() + SUPERVISOR_START_TIMEOUT_S, stuck=lambda: is_stopped(host_pid)
                )
            except Silent:
                hello = None
            if hello is None or "hello" not in hello:
                link.abandon()
                if hello is None or "error" not in hello:  # stopped or gone (not a fork refused): anew
                    self._kill()
                return None
            link.pid = int(hello["hello"])
            return link

    def sweep(self) -> int:
        """Stop what the host adopted (descendants of a supervisor that was killed: the host is a child
        subreaper) and was not forked by it; how many processes there were. Asked by the owner when a
        job's supervisor vanished without a word."""
        with self._lock:
            if self._sock is None or self._proc is None or self._proc.poll() is not None:
                return 0
            ans_r, ans_w = os.pipe()
            try:
                socket.send_fds(self._sock, [b"s"], [ans_w])
            except OSError:
                os.close(ans_r)
                return 0
            finally:
                os.close(ans_w)
            lines = AnswerLines(ans_r)
            try:
                answer = lines.next(time.monotonic() + 15.0, stuck=lambda: is_stopped(self.pid))
            except Silent:
                answer = None
            finally:
                lines.close()
        return int((answer or {}).get("stopped") or 0)

    def _start(self) -> None:
        self._stop()
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            return
        try:
            self._proc = popen_own_group(
                interpreter.script_command(supervisor.__file__, "--host"),
                stdin=theirs,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError:  # out of processes or fds now: this job starts its own supervisor
            ours.close()
            return
        finally:
            theirs.close()
        ours.settimeout(HOST_SEND_TIMEOUT_S)
        self._sock = ours

    def _kill(self) -> None:
        """A host that does not answer (stopped, gone): killed and reaped; the next job starts a new one."""
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()
        self._stop()

    def _stop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """End the host (the supervisors it forked run on), e.g. when the queue closes."""
        with self._lock:
            self._stop()


HOST = _Host()


def popen_supervisor(stderr: Any, lock: Path) -> SupervisorLink:
    """A supervisor started for one job (no host): our child, its stderr the job's log."""
    proc = popen_own_group(
        interpreter.script_command(supervisor.__file__),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        close_fds=True,  # gputray's private umask: the supervisor's files (run, exit) are 0600
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers_fd = os.dup(proc.stdout.fileno())
    proc.stdout.close()
    return SupervisorLink(proc.stdin, answers_fd, lock, proc)
