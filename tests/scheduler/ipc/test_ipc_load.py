"""The socket under load: idle and trickling connections never lock anyone out, ping and status are
always answered, and a connection that does not complete its first request in time is closed."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_replies import PONG, STATUS, echo_reply
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler import replies as rp
from gputray.scheduler.ipc.server import WORKERS, IpcServer
from gputray.scheduler.paths import Paths, app_paths

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="AF_UNIX socket transport")


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    return app_paths()


class SlowGets:
    """Answers everything at once, except ``get``, which waits until released (a long request)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waiting = 0
        self._lock = threading.Lock()

    def __call__(self, req: rq.Request[Any]) -> rp.Reply:
        if isinstance(req, rq.Get):
            with self._lock:
                self.waiting += 1
            self.release.wait(60)
        return echo_reply(req)


@pytest.fixture
def server(paths: Paths) -> Iterator[IpcServer]:
    handler = SlowGets()
    srv = IpcServer(paths, handler, first_frame_s=1.0)
    srv.start()
    srv.slow = handler  # type: ignore[attr-defined]
    yield srv
    handler.release.set()
    srv.stop()


def connect(paths: Paths) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(ipc.socket_path(paths)))
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1 << 16) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_idle_and_trickling_connections_never_lock_out_ping_and_status(
    server: IpcServer, paths: Paths
) -> None:
    idle = [connect(paths) for _ in range(300)]  # more than the server keeps open
    trickling = [connect(paths) for _ in range(20)]
    stop = threading.Event()

    def trickle() -> None:
        header = struct.pack(">I", 64)
        sent = 0
        while not stop.is_set():
            for sock in trickling:
                with contextlib.suppress(OSError):  # closed by the server: what we wait for
                    sock.send((header + b"{" * 64)[sent % 68 : sent % 68 + 1])
            sent += 1
            stop.wait(0.1)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        for _ in range(5):
            with ipc.IpcClient(paths, timeout_s=20) as client:
                assert client.ask(rq.Ping()) == PONG
                assert client.ask(rq.Status()) == STATUS
        # Nobody who trickles gets to keep a connection: each is closed once its first request is late.
        wait_for(lambda: all(closed_by_server(s) for s in trickling), 30, "the tricklers to be closed")
        wait_for(lambda: all(closed_by_server(s) for s in idle), 30, "the idle connections to be closed")
        assert server.connections_closed_for_deadline >= 20
    finally:
        stop.set()
        thread.join()
        for sock in idle + trickling:
            sock.close()


def test_slow_requests_never_hold_up_ping_and_status(server: IpcServer, paths: Paths) -> None:
    """More long requests than there are workers: ping and status still get their answer."""
    slow: SlowGets = server.slow  # type: ignore[attr-defined]
    clients = [ipc.IpcClient(paths, timeout_s=60) for _ in range(WORKERS + 8)]
    threads = [threading.Thread(target=c.ask, args=(rq.Get(id=1),), daemon=True) for c in clients]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: slow.waiting == WORKERS, 30, "every worker to be busy with a slow request")
        with ipc.IpcClient(paths, timeout_s=20) as client:
            assert client.ask(rq.Ping()) == PONG
            assert client.ask(rq.Status()) == STATUS
    finally:
        slow.release.set()
        for t in threads:
            t.join(30)
        for c in clients:
            c.close()
    assert slow.waiting == WORKERS + 8  # the rest were answered once workers came free


def test_a_kept_connection_serves_many_requests_and_pipelined_ones(server: IpcServer, paths: Paths) -> None:
    sock = connect(paths)
    try:
        frames = b"".join(
            struct.pack(">I", len(p)) + p for p in (b'{"op":"ping"}', b'{"op":"status"}', b'{"op":"ping"}')
        )
        sock.sendall(frames)  # three requests in one write: answered in order
        sock.settimeout(20)
        replies = [json.loads(ipc.read_frame(sock) or b"null") for _ in range(3)]
        assert ["protocol" in r["result"] for r in replies] == [True, False, True]  # ping, status, ping
    finally:
        sock.close()
