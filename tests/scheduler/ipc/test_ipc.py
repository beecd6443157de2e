"""The owner's socket: framing, validation, permissions, single owner, and the pipe transport's pure parts."""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_replies import PONG, echo_reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler import replies as rp
from gputray.scheduler.ipc.server import IpcServer
from gputray.scheduler.paths import Paths, app_paths

unix_only = pytest.mark.skipif(sys.platform == "win32", reason="AF_UNIX socket transport")


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    return app_paths()


class Recorder:
    """A handler that records what reached it: validation must keep garbage from getting here."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, rq.Request]] = []

    def __call__(self, req: rq.Request[Any]) -> rp.Reply:
        self.calls.append((req.op, req))
        if isinstance(req, rq.Get) and req.id == 404:
            raise NoSuchThing("task 404 does not exist")
        if isinstance(req, rq.Get) and req.id == 500:
            raise LookupError("a bug in the owner that happens to be a LookupError")
        return echo_reply(req)


class NoSuchThing(rq.Refusal):
    pass


@pytest.fixture
def server(paths: Paths) -> Any:
    recorder = Recorder()
    srv = IpcServer(paths, recorder)
    srv.start()
    srv.recorder = recorder  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def decode(request: object) -> rq.Request:
    return rq.decode_request(json.dumps(request).encode())


def test_validate_accepts_known_ops_and_rejects_garbage() -> None:
    assert decode({"op": "cancel", "args": {"ids": [3, 4]}}) == rq.Cancel(ids=[3, 4])
    assert decode({"op": "ping"}) == rq.Ping()
    assert decode({"op": "ping", "v": rq.PROTOCOL_VERSION}) == rq.Ping()
    bad = [
        [],
        "ping",
        {"op": 3},
        {"op": "rm -rf /"},
        {"op": "cancel", "args": {}},
        {"op": "cancel", "args": {"ids": []}},
        {"op": "cancel", "args": {"ids": [True]}},
        {"op": "cancel", "args": {"ids": [-1]}},
        {"op": "move", "args": {"id": 1, "delta": 1.5}},
        {"op": "move", "args": {"id": 1, "delta": True}},
        {"op": "queue", "args": {"all": "yes"}},
        {"op": "queue", "args": {"evil": 1}},
        {"op": "submit_files", "args": {"files": ["a\x00b"]}},
        {"op": "submit_files", "args": {"files": "a.png"}},
        {"op": "submit", "args": {"overrides": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}}},
        {"op": "ping", "args": [1]},
        {"op": "ping", "extra": 1},
    ]
    for request in bad:
        with pytest.raises(ipc.BadRequest):
            decode(request)


def test_decode_rejects_nan_bad_utf8_and_deep_nesting() -> None:
    deep_args = b'{"op": "submit", "args": {"spec": {"a": ' + b"[" * 5_000 + b"]" * 5_000 + b"}}}"
    for data in (b"NaN", b"\xff\xfe", b"{", b"[" * 100_000 + b"]" * 100_000, b'{"op": Infinity}', deep_args):
        with pytest.raises(ipc.BadRequest):
            rq.decode_request(data)


def test_in_process_requests_get_the_same_limits() -> None:
    """The tray builds Structs directly; ``checked`` holds them to what the socket would accept."""
    assert rq.checked(rq.Move(id=3, delta=-1)) == rq.Move(id=3, delta=-1)
    for bad in (rq.Move(id=3, delta=2**60), rq.Cancel(ids=[]), rq.Run(argv=["a\x00b"])):
        with pytest.raises(ipc.BadRequest):
            rq.checked(bad)


@unix_only
def test_a_client_of_another_protocol_version_is_told_to_restart_the_owner(server: Any, paths: Paths) -> None:
    with ipc.IpcClient(paths) as client:
        reply = client.send_raw(json.dumps({"op": "ping", "v": rq.PROTOCOL_VERSION + 1}).encode())
    assert reply["ok"] is False and reply["error"]["type"] == "VersionMismatch"
    assert "restart the owner" in reply["error"]["message"]
    assert server.recorder.calls == []


@unix_only
def test_a_client_from_before_typed_replies_is_refused_before_anything_is_done(
    server: Any, paths: Paths
) -> None:
    """Protocol 1 clients read task times as ISO strings: the owner refuses their `run` up front, so a
    task is not queued behind a client that then reports a reply it cannot read (and is run again)."""
    with ipc.IpcClient(paths) as client:
        reply = client.send_raw(json.dumps({"op": "run", "args": {"argv": ["echo"]}, "v": 1}).encode())
    assert reply["ok"] is False and reply["error"]["type"] == "VersionMismatch"
    assert "`gputray daemon --stop` then `gputray daemon`" in reply["error"]["message"]
    assert server.recorder.calls == []


@unix_only
def test_request_round_trip_and_errors(server: Any, paths: Paths) -> None:
    with ipc.IpcClient(paths) as client:
        assert client.ask(rq.Ping()) == PONG
        result = client.ask(rq.SubmitFiles(files=["a b.png", "日本語 'x'; rm.png"], recipe=None))
        assert result.notes == ("a b.png", "日本語 'x'; rm.png")
        with pytest.raises(ipc.RemoteError) as missing:
            client.ask(rq.Get(id=404))
        assert missing.value.kind == "NoSuchThing"
        assert "404" in missing.value.message
        with pytest.raises(ipc.RemoteError) as internal:
            client.ask(rq.Get(id=500))
        assert internal.value.kind == "InternalError"
        bad = client.send_raw(b'{"op": "nonsense", "args": {}, "v": %d}' % ipc.PROTOCOL_VERSION)
        assert bad["error"]["type"] == "BadRequest"
        assert "unknown op" in bad["error"]["message"]
        # the same connection still works after all of that
        assert client.ask(rq.Ping()) == PONG
    assert [op for op, _ in server.recorder.calls] == ["ping", "submit_files", "get", "get", "ping"]


@unix_only
def test_socket_and_directory_are_private(server: Any, paths: Paths) -> None:
    path = ipc.socket_path(paths)
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


@unix_only
def test_a_second_owner_is_refused_and_the_first_keeps_serving(server: Any, paths: Paths) -> None:
    second = IpcServer(paths, Recorder())
    with pytest.raises(ipc.OwnerAlreadyRunning):
        second.start()
    assert ipc.ask(paths, rq.Ping()) == PONG


@unix_only
def test_a_stale_socket_is_replaced(paths: Paths) -> None:
    directory = ipc.socket_dir(paths)
    ipc.ensure_private_dir(directory)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(directory / ipc.SOCKET_NAME))
    stale.close()  # the file stays, nobody listens: what kill -9 leaves behind
    srv = IpcServer(paths, Recorder())
    srv.start()
    try:
        assert ipc.ask(paths, rq.Ping()) == PONG
    finally:
        srv.stop()
    assert not (directory / ipc.SOCKET_NAME).exists()


@unix_only
def test_no_owner_says_how_to_start_one(paths: Paths) -> None:
    with pytest.raises(ipc.OwnerNotRunning) as err:
        ipc.ask(paths, rq.Ping())
    assert "gputray daemon" in str(err.value)
    assert "no gputray owner is running" in str(err.value)


@unix_only
def test_oversized_frame_gets_an_error_and_server_survives(server: Any, paths: Paths) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(ipc.socket_path(paths)))
    sock.sendall(struct.pack(">I", ipc.MAX_FRAME_BYTES + 1))
    reply = json.loads(ipc.read_frame(sock) or b"null")
    assert reply["ok"] is False and "too large" in reply["error"]["message"]
    sock.close()
    # a truncated frame followed by a hang-up
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(ipc.socket_path(paths)))
    sock.sendall(struct.pack(">I", 100) + b"{")
    sock.close()
    assert ipc.ask(paths, rq.Ping()) == PONG


@unix_only
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payload=st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
            lambda children: (
                st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
            ),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
        st.fixed_dictionaries(
            {"op": st.sampled_from(sorted(ipc.OPS)) | st.text(max_size=10)},
            optional={
                "args": st.dictionaries(
                    st.text(max_size=10), st.integers() | st.text() | st.none(), max_size=3
                )
            },
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_garbage_never_crashes_the_server(server: Any, paths: Paths, payload: bytes) -> None:
    with ipc.IpcClient(paths) as client:
        reply = client.send_raw(payload)
        assert isinstance(reply, dict) and "ok" in reply
        if reply["ok"] is False:
            assert reply["error"]["message"]
        assert client.ask(rq.Ping()) == PONG


def test_pipe_name_is_per_user_and_home(tmp_path: Path) -> None:
    a = Paths(tmp_path / "c", tmp_path / "d1", tmp_path / "s", tmp_path / "r")
    b = Paths(tmp_path / "c", tmp_path / "d2", tmp_path / "s", tmp_path / "r")
    assert ipc.pipe_name(a, "alice").startswith("\\\\.\\pipe\\gputray-")
    assert ipc.pipe_name(a, "alice") == ipc.pipe_name(a, "ALICE")
    assert ipc.pipe_name(a, "alice") != ipc.pipe_name(a, "bob")
    assert ipc.pipe_name(a, "alice") != ipc.pipe_name(b, "alice")


def test_authkey_is_created_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "data" / ipc.AUTHKEY_NAME
    with pytest.raises(ipc.OwnerNotRunning):
        ipc.load_authkey(path, create=False)
    key = ipc.load_authkey(path, create=True)
    assert len(key) == 32
    assert ipc.load_authkey(path, create=False) == key
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@unix_only
def test_long_runtime_dir_falls_back_to_a_short_private_dir(tmp_path: Path) -> None:
    """Too long for AF_UNIX: the owner makes a private folder with a name nobody can predict and says
    where in the pointer file; the client finds it there."""
    deep = tmp_path / ("x" * 120)
    paths = Paths(deep / "c", deep / "d", deep / "s", deep / "r")
    srv = IpcServer(paths, Recorder())
    srv.start()
    try:
        path = ipc.socket_path(paths)  # the client's view: from the pointer
        assert str(path) == srv.address and len(os.fsencode(path)) <= 104
        assert (
            stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700 and os.stat(path.parent).st_uid == os.getuid()
        )
        assert path.parent.name.startswith(f"gputray-{os.getuid()}-") and path.parent != ipc.socket_dir(paths)
        assert ipc.ask(paths, rq.Ping()) == PONG
    finally:
        srv.stop()
    assert not path.parent.exists()  # its private folder goes with it
    with pytest.raises(ipc.OwnerNotRunning):
        ipc.ask(paths, rq.Ping())


@unix_only
def test_private_dir_owned_by_someone_else_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "ipc"
    target.mkdir(mode=0o755)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(target).st_uid + 1)
    with pytest.raises(ipc.UnsafeIpcLocation):
        ipc.ensure_private_dir(target)


@unix_only
def test_pipe_transport_authenticates(paths: Paths, tmp_path: Path) -> None:
    """The Windows code path, run over multiprocessing's AF_UNIX family: HMAC challenge, JSON bytes only."""
    address = str(tmp_path / "p.sock")
    recorder = Recorder()
    srv = IpcServer(paths, recorder, transport="pipe", pipe_address=address, pipe_family="AF_UNIX")
    srv.start()
    try:
        client = ipc.IpcClient(paths, transport="pipe", pipe_address=address, pipe_family="AF_UNIX")
        with client:
            assert client.ask(rq.Cancel(ids=[1, 2])).errors == ("1", "2")
            assert client.send_raw(b"\x80garbage")["ok"] is False
            assert client.ask(rq.Ping()) == PONG
        # a client with the wrong key is refused and never reaches the handler
        from multiprocessing.connection import Client, answer_challenge

        conn = Client(address, family="AF_UNIX")
        with pytest.raises(Exception):  # noqa: B017 - AuthenticationError or EOF, depending on timing
            answer_challenge(conn, b"wrong key of enough length!!")
            conn.send_bytes(b'{"op":"shutdown"}')
            conn.recv_bytes()
        conn.close()
        assert all(op != "shutdown" for op, _ in recorder.calls)
        second = IpcServer(paths, Recorder(), transport="pipe", pipe_address=address, pipe_family="AF_UNIX")
        with pytest.raises(ipc.OwnerAlreadyRunning):
            second.start()
    finally:
        srv.stop()


@unix_only
def test_many_concurrent_clients(server: Any, paths: Paths) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with ipc.IpcClient(paths) as client:
                for i in range(20):
                    assert client.ask(rq.Move(id=n, delta=i)).task == rp.TaskView(
                        id=n, state="queued", priority=i
                    )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(server.recorder.calls) == 160


@unix_only
def test_permissions_hold_under_a_permissive_umask_and_a_loose_existing_dir(paths: Paths) -> None:
    directory = ipc.socket_dir(paths)
    directory.mkdir(parents=True, mode=0o777)
    os.chmod(directory, 0o777)
    old = os.umask(0)
    try:
        srv = IpcServer(paths, Recorder())
        srv.start()
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(ipc.socket_path(paths)).st_mode) == 0o600
    finally:
        srv.stop()


@unix_only
def test_a_symlink_in_place_of_the_socket_dir_is_not_followed(paths: Paths, tmp_path: Path) -> None:
    """A symlink where the socket folder should be: the owner does not put its socket behind it (it
    uses a private folder of its own instead), and a client does not talk through it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    directory = ipc.socket_dir(paths)
    directory.parent.mkdir(parents=True, exist_ok=True)
    directory.symlink_to(elsewhere)
    srv = IpcServer(paths, Recorder())
    srv.start()
    try:
        assert Path(srv.address).parent != directory and ipc.ask(paths, rq.Ping()) == PONG
    finally:
        srv.stop()
    assert list(elsewhere.iterdir()) == []


def test_platformdirs_refusing_its_runtime_fallback_does_not_stop_gputray(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """platformdirs raises PermissionError when /tmp/runtime-<uid> is someone else's: gputray then
    keeps its runtime files under the data folder (the IPC layer finds a private place for the socket)."""
    import platformdirs

    from gputray.scheduler.paths import app_paths

    def refuse(*args: object, **kwargs: object) -> str:
        raise PermissionError("/tmp/runtime-0 is owned by another user")

    monkeypatch.delenv("GPUTRAY_HOME", raising=False)
    monkeypatch.setattr(platformdirs, "user_runtime_dir", refuse)
    paths = app_paths()
    assert paths.runtime_dir == paths.data_dir / "run"
