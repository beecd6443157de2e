"""The owner's side of its warm command server (``gui/quick_server.py``, ``client/quick.py``).

The owner starts the server beside its own socket, as a child whose stdin is a pipe the owner holds:
when the owner ends (or crashes) the pipe closes and the server ends too. The server loads what the
commands load first (~1 s on a slow machine: the owner never waits for it), then listens and writes its
socket's path to ``quick.address`` in the data folder, which clients read. Until then, or when it
fails, clients run their commands themselves, as before. No thread of the owner's waits for it: an
owner's processes and threads are what a tight ``pids`` limit counts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gputray.scheduler.client.quick import ADDRESS_FILE
from gputray.scheduler.paths import Paths

log = logging.getLogger("gputray.ipc.quick")

SOCKET_NAME = "quick.sock"
STOP_TIMEOUT_S = 5.0
#: AF_UNIX paths hold at most 107 bytes on Linux.
MAX_SOCKET_PATH = 107


class QuickServer:
    """Starts and ends the warm command server; ``argv`` is how to start it (handed from above:
    ``gui.entry.quick_server_argv``), its socket's path and its address file are appended."""

    def __init__(self, argv: Sequence[str], paths: Paths, owner_socket: str) -> None:
        self.argv = list(argv)
        self.address_file = paths.data_dir / ADDRESS_FILE
        self.address = str(Path(owner_socket).with_name(SOCKET_NAME))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if len(os.fsencode(self.address)) > MAX_SOCKET_PATH:
            log.info("no warm command server: its socket path would be too long (%s)", self.address)
            return
        try:
            self.proc = subprocess.Popen(
                [*self.argv, self.address, str(self.address_file)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError as exc:
            log.warning("no warm command server: %s", exc)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        # at once, not when it next reads the pipe: it may still be loading (~1 s), and the owner's
        # stop (a restart from the tray's Demo mode) would wait for that
        with contextlib.suppress(OSError):
            proc.terminate()  # its SIGTERM handler removes its socket and address file
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        forget_quick_address(self.address_file, self.address)  # in case it could not (killed)


def write_quick_address(address_file: Path, address: str) -> None:
    """Name the listening server's socket for clients: written whole (a temp file, then a rename), the
    user's alone (0600, as ``client.quick.server_address`` checks). A full disk leaves none: clients
    then run their commands themselves."""
    temp = address_file.with_name(f"{address_file.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, os.fsencode(address) + b"\n")
        finally:
            os.close(fd)
        os.replace(temp, address_file)
    except OSError as exc:
        log.warning("the warm command server's address was not written: %s", exc)
        with contextlib.suppress(OSError):
            temp.unlink()


def forget_quick_address(address_file: Path, address: str) -> None:
    """Remove ``address_file`` if it still names ``address`` (a newer owner's server may have replaced it)."""
    with contextlib.suppress(OSError):
        if address_file.read_text("utf-8", "surrogateescape").rstrip("\n") == address:
            address_file.unlink()
