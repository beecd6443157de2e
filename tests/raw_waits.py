"""Many `gputray wait` clients at once, on raw sockets: each sends its request and reads its answer
later (an ``IpcClient`` would wait for each answer in turn)."""

from __future__ import annotations

import contextlib
import select
import socket
from typing import Any

import msgspec

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.ipc import FRAME_HEADER
from gputray.scheduler.paths import Paths


def send_wait(paths: Paths, task_ids: list[int], timeout_s: float = 60.0) -> socket.socket:
    """A connection that has asked the owner to wait for ``task_ids`` (its answer unread)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(ipc.socket_path(paths)))
    request = rq.WaitFor(ids=list(task_ids), timeout_s=timeout_s)
    payload = ipc.encode_payload({"op": request.op, "args": request, "v": rq.PROTOCOL_VERSION})
    sock.sendall(FRAME_HEADER.pack(len(payload)) + payload)
    return sock


def answers(socks: list[socket.socket], timeout_s: float) -> list[dict[str, Any]]:
    """The answer on each connection, in order (each within ``timeout_s`` of the last)."""
    out = []
    for sock in socks:
        ready, _w, _x = select.select([sock], [], [], timeout_s)
        assert ready, "a waiting client got no answer"
        sock.settimeout(timeout_s)
        frame = ipc.read_frame(sock)
        assert frame is not None, "a waiting client's connection was closed without an answer"
        out.append(msgspec.json.decode(frame))
    return out


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.close()
