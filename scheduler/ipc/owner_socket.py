"""The owner's socket as a place: whether another owner answers there (a Unix socket, a Windows
pipe that proves the key), the listener on a pipe, and the private fallback folder an owner killed before
it could clean up. ``server.IpcServer`` serves on it."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path
from typing import Any

from gputray.scheduler.ipc import location as loc
from gputray.scheduler.ipc.location import UntrustedLocation
from gputray.scheduler.paths import Paths


def remove_stale_private_dir(paths: Paths) -> None:
    """The private fallback folder an owner killed before it could clean up (named in its pointer)."""
    old = loc.read_pointer(paths)
    if old is None:
        return
    folder = Path(old).parent
    if folder == loc.preferred_socket_dir(paths) or not folder.name.startswith(f"gputray-{loc.uid()}-"):
        return
    try:
        loc.check_private_dir(folder)
    except (UntrustedLocation, OSError):
        return
    if not unix_socket_answers(Path(old)):
        with contextlib.suppress(OSError):
            os.unlink(old)
        with contextlib.suppress(OSError):
            folder.rmdir()


def listen(address: str, family: str) -> Any:
    """A listener on ``address``; on Windows every pipe instance admits only this user (``win_pipe.py``)."""
    from multiprocessing.connection import Listener

    if family == "AF_PIPE":
        from gputray.scheduler.ipc.win_pipe import private_listener

        return private_listener(address)
    return Listener(address=address, family=family)


def close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()


def unix_socket_answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return False
        raise
    finally:
        probe.close()
    return True


def pipe_answers(address: str, family: str, authkey: bytes) -> bool:
    """Whether an owner of ours (one that proves the key) listens on ``address``."""
    from multiprocessing.connection import Client, answer_challenge, deliver_challenge

    try:
        conn = Client(address, family=family)
    except (OSError, EOFError):
        return False
    try:
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)
        return True
    except Exception:
        return False
    finally:
        close_quietly(conn)
