"""The owner's side of its warm command server (``gui/quick_server.py``, ``client/quick.py``).

The owner starts the server beside its own socket, as a child whose stdin is a pipe the owner holds:
when the owner ends (or crashes) the pipe closes and the server ends too. Once the server says it is
ready (it loads what the commands load first, ~1 s on a slow machine, in the background: the owner
never waits for it), its socket's path is written to ``quick.address`` in the data folder, which
clients read. Until then, or when it fails, clients run their commands themselves, as before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from gputray.scheduler.client.quick import ADDRESS_FILE
from gputray.scheduler.paths import Paths

log = logging.getLogger("gputray.ipc.quick")

SOCKET_NAME = "quick.sock"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0
#: AF_UNIX paths hold at most 107 bytes on Linux.
MAX_SOCKET_PATH = 107


class QuickServer:
    """Starts and ends the warm command server; ``argv`` is how to start it (handed from above:
    ``gui.entry.quick_server_argv``), the socket's path is appended."""

    def __init__(self, argv: Sequence[str], paths: Paths, owner_socket: str) -> None:
        self.argv = list(argv)
        self.address_file = paths.data_dir / ADDRESS_FILE
        self.address = str(Path(owner_socket).with_name(SOCKET_NAME))
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = threading.Event()
        self._lock = threading.Lock()

    def start(self) -> None:
        if len(os.fsencode(self.address)) > MAX_SOCKET_PATH:
            log.info("no warm command server: its socket path would be too long (%s)", self.address)
            return
        with self._lock:
            try:
                self.proc = subprocess.Popen(
                    [*self.argv, self.address],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    close_fds=True,
                )
            except OSError as exc:
                log.warning("no warm command server: %s", exc)
                return
        threading.Thread(target=self._wait_ready, name="quick-server-ready", daemon=True).start()

    def _wait_ready(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        line = proc.stdout.readline()
        with self._lock:
            if line.strip() != b"ready" or self.proc is not proc:
                if self.proc is proc:
                    log.warning("the warm command server did not start (it said %r)", line[:200])
                return
            try:
                temp = self.address_file.with_name(f"{ADDRESS_FILE}.{os.getpid()}.tmp")
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                try:
                    os.write(fd, os.fsencode(self.address) + b"\n")
                finally:
                    os.close(fd)
                os.replace(temp, self.address_file)
            except OSError as exc:  # a full disk: the commands run in their own process, as before
                log.warning("the warm command server's address was not written: %s", exc)
                return
            self.ready.set()
        log.info("warm command server ready on %s", self.address)

    def stop(self) -> None:
        with self._lock:
            proc, self.proc = self.proc, None
            if self.ready.is_set():
                with contextlib.suppress(OSError):
                    if self.address_file.read_text("utf-8", "surrogateescape").rstrip("\n") == self.address:
                        self.address_file.unlink()
            self.ready.clear()
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()  # its end of the pipe closes: it stops listening and removes its socket
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
