"""An owner out of file descriptors (a real `gputray daemon --demo` under a real `prlimit --nofile`):
the accept loop neither spins nor floods its log, and a client it cannot take is told so at once
(before: 99 % CPU, a log line per turn, and clients that timed out while their request later ran)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import paths_of, start_daemon, stop_daemon
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("prlimit") is None, reason="needs Linux and prlimit"
)

PY = sys.executable
NOFILE = 64
CLIENT_TIMEOUT_S = 10.0  # a client the owner leaves waiting fails the test after this


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[Paths, Path, subprocess.Popen[bytes]]]:
    home = tmp_path / "home"
    log_file = tmp_path / "daemon-stderr.txt"
    proc = start_daemon(home, log_file, "prlimit", f"--nofile={NOFILE}:{NOFILE}", "--")
    try:
        yield paths_of(home), log_file, proc
    finally:
        stop_daemon(proc)


def _ping(paths: Paths) -> tuple[ipc.IpcClient, str | None]:
    """A client that pinged: kept open (it holds one of the owner's fds), or the owner's refusal."""
    client = ipc.IpcClient(paths, timeout_s=CLIENT_TIMEOUT_S)
    try:
        client.ask(rq.Ping())
        return client, None
    except ipc.RemoteError as exc:
        client.close()
        return client, f"{exc.kind}: {exc}"
    except ipc.IpcError as exc:
        client.close()
        raise AssertionError(f"the owner left a client without an answer: {exc}") from None


def _log_text(paths: Paths, stderr_file: Path) -> str:
    """The daemon's log as it went to stderr (the same lines as ``daemon.log``, which rotates)."""
    return stderr_file.read_text(errors="replace")


def test_an_owner_out_of_fds_refuses_in_words_logs_once_and_recovers(
    daemon: tuple[Paths, Path, subprocess.Popen[bytes]],
) -> None:
    paths, stderr_file, proc = daemon
    held: list[ipc.IpcClient] = []
    refusal = None
    for _ in range(NOFILE * 2):
        client, refusal = _ping(paths)
        if refusal is not None:
            break
        held.append(client)
    assert refusal is not None, "the owner accepted more connections than it has fds"
    assert "run out of open files" in refusal and "nothing was done" in refusal
    refusals = 1
    for _ in range(NOFILE * 2):  # each further client is told at once too (or taken: the owner's own
        client, again = _ping(paths)  # use of fds goes up and down as it reads files)
        if again is None:
            held.append(client)
            continue
        assert "run out of open files" in again
        refusals += 1
        if refusals == 20:
            break
    assert refusals == 20
    text = _log_text(paths, stderr_file)
    assert text.count("cannot accept connections") == 1, text[-3000:]
    assert "IPC accept failed" not in text
    for client in held:
        client.close()
    wait_for(lambda: _ping(paths)[1] is None, 30, "the owner to accept connections again")
    wait_for(lambda: "accepting connections again" in _log_text(paths, stderr_file), 10, "the recovery line")
    assert proc.poll() is None


def test_an_owner_raises_its_soft_open_file_limit_for_many_waiting_clients(tmp_path: Path) -> None:
    """Each parked ``wait`` holds a connection: an owner started with the common low soft limit (here 256,
    its hard limit 2048) raises its soft limit, so 400 clients held open at once are all served."""
    home = tmp_path / "home"
    proc = start_daemon(home, tmp_path / "daemon-stderr.txt", "prlimit", "--nofile=256:2048", "--")
    held: list[ipc.IpcClient] = []
    try:
        paths = paths_of(home)
        for _ in range(400):
            client, refusal = _ping(paths)
            assert refusal is None, f"client {len(held) + 1} was refused: {refusal}"
            held.append(client)
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        soft = next(line.split()[3] for line in limits.splitlines() if line.startswith("Max open files"))
        assert soft == "2048", limits
    finally:
        for client in held:
            client.close()
        stop_daemon(proc)


def test_an_accept_on_the_last_free_fd_does_not_end_the_shortage(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another thread lets go of an fd for a moment (a file read, a look at /proc) and the accept loop
    takes it: still out of files, so no "accepting again" line (and no second "cannot accept" for the
    next refusal). Before: the owner logged a pair of lines for each such moment (the residents' timer
    lists /proc every 2 s), and the test above saw two episodes."""
    from gputray.scheduler.ipc.fd_shortage import AcceptGuard

    guard = AcceptGuard()
    guard.short = True
    monkeypatch.setattr(AcceptGuard, "_open_spare", staticmethod(lambda: None))  # not one fd to spare
    guard.on_accepted()
    assert guard.short
    monkeypatch.undo()
    guard.on_accepted()  # files free again
    assert not guard.short
    guard.close()
