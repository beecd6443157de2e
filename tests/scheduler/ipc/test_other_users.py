"""Another local user on the machine (a real second Unix user, created for the test and removed after):
a folder or fake server they prepared where the socket would go neither stops the owner from starting
nor receives a byte from the CLI (which would carry a `gputray run`'s argv and environment).

Needs root (CI runs as root) to create the user; skipped otherwise.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import gputray
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths

PY = sys.executable
SECRET = "hunter2-not-for-other-users"

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="Unix users and AF_UNIX sockets"),
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="creating a user needs root"),
    pytest.mark.skipif(shutil.which("useradd") is None, reason="no useradd on this machine"),
]

# The other user's fake owner: records every byte it is sent and answers like an owner, to lure the
# client on. Standard library only (-I -S): it must not need anything of ours.
FAKE_SERVER = r"""
import os, socket, sys
path, record = sys.argv[1], sys.argv[2]
os.makedirs(os.path.dirname(path), exist_ok=True)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
s.listen(16)
open(record + ".ready", "w").close()
reply = b'{"ok":true,"result":{"pid":1,"ready":true,"tasks":[],"notes":[]}}'
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        while True:
            data = c.recv(65536)
            if not data:
                break
            with open(record, "ab") as f:
                f.write(data)
            c.sendall(len(reply).to_bytes(4, "big") + reply)
    except OSError:
        pass
    c.close()
"""


@pytest.fixture(scope="module")
def other_user() -> Iterator[pwd.struct_passwd]:
    name = f"gputray-t{os.getpid() % 100000}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True
    )
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def python_for(user: pwd.struct_passwd) -> str:
    """An interpreter the other user may run (ours may sit in root's home, closed to them)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", os.path.realpath(PY)):
        if os.path.exists(candidate):
            done = subprocess.run(
                [candidate, "-I", "-S", "-c", "pass"], user=user.pw_uid, group=user.pw_gid, extra_groups=[],
                cwd="/", capture_output=True, check=False,
            )  # fmt: skip
            if done.returncode == 0:
                return candidate
    pytest.skip("no Python interpreter the second user may run")


class Fake:
    """A fake server run as the other user, at ``socket_path`` (folders made by that user)."""

    def __init__(self, user: pwd.struct_passwd, socket_path: Path, record_dir: Path) -> None:
        self.record = record_dir / "received"
        python = python_for(user)
        self.proc = subprocess.Popen(
            [python, "-I", "-S", "-c", FAKE_SERVER, str(socket_path), str(self.record)],
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[],
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            stderr=subprocess.PIPE,
        )
        wait_for(self._ready, 30, "the other user's fake server")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(
                f"the fake server died: {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        return Path(str(self.record) + ".ready").exists()

    def received(self) -> bytes:
        try:
            return self.record.read_bytes()
        except FileNotFoundError:
            return b""

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def their_folder(user: pwd.struct_passwd) -> Path:
    """A folder in /tmp belonging to the other user (they may create anything inside)."""
    folder = Path(tempfile.mkdtemp(prefix="gputray-other-", dir="/tmp"))
    os.chown(folder, user.pw_uid, user.pw_gid)
    os.chmod(folder, 0o755)
    return folder


@pytest.fixture
def cleanup() -> Iterator[list[Path]]:
    folders: list[Path] = []
    yield folders
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_squatted_fallback_folder_stops_nothing_and_receives_nothing(
    other_user: pwd.struct_passwd, tmp_path: Path, cleanup: list[Path]
) -> None:
    """The socket path is too long for AF_UNIX: gputray used to fall back to a predictable
    /tmp/gputray-<uid>-<hash>. The other user made it first, with a fake server inside."""
    home = tmp_path / ("h" * 120)
    paths = Paths(home / "config", home / "data", home / "state", home / "run")
    digest = hashlib.sha256(os.fsencode(paths.runtime_dir)).hexdigest()[:16]
    squat = Path("/tmp") / f"gputray-{os.getuid()}-{digest}"
    records = their_folder(other_user)
    cleanup.extend([squat, records])
    # They create the predictable folder themselves (as /tmp allows anyone), and listen in it.
    fake = Fake(other_user, squat / "owner.sock", records)
    try:
        assert os.stat(squat).st_uid == other_user.pw_uid
        env = {"SECRET_TOKEN": SECRET}
        out = gputray("run", "--", PY, "-c", "pass", home=home, env=env)
        assert out.returncode == 3, out.stdout + out.stderr  # no owner of ours: said so
        assert fake.received() == b""

        owner = Owner(paths, demo=True)
        owner.start()  # not refused because of their folder
        try:
            assert owner.server is not None
            mine = Path(owner.server.address).parent
            assert mine != squat and os.stat(mine).st_uid == os.getuid()
            assert stat.S_IMODE(os.stat(mine).st_mode) == 0o700
            out = gputray("run", "--name", "probe", "--", PY, "-c", "pass", home=home, env=env)
            assert out.returncode == 0, out.stdout + out.stderr
            assert [t.name for t in owner.queue.list()] == ["probe"]
        finally:
            owner.stop()
        assert fake.received() == b""  # not a byte, let alone the argv and SECRET_TOKEN
    finally:
        fake.stop()


def test_a_runtime_folder_another_user_made_first_is_not_trusted(
    other_user: pwd.struct_passwd, tmp_path: Path, cleanup: list[Path]
) -> None:
    """As platformdirs' /tmp/runtime-<uid> fallback when XDG_RUNTIME_DIR is unset: the other user
    created that folder (and ipc/owner.sock inside) before us. The client talks to none of it, and the
    owner starts privately elsewhere."""
    squat = their_folder(other_user)
    cleanup.append(squat)
    runtime = squat / f"runtime-{os.getuid()}" / "gputray"
    paths = Paths(tmp_path / "config", tmp_path / "data", tmp_path / "state", runtime)
    fake = Fake(other_user, runtime / "ipc" / "owner.sock", squat)
    try:
        with pytest.raises(ipc.OwnerNotRunning) as refused:
            ipc.ask(paths, rq.Run(argv=[PY, "-c", "pass"], caller_env={"SECRET_TOKEN": SECRET}))
        assert refused.value.untrusted and "another user" in refused.value.untrusted
        assert fake.received() == b""

        owner = Owner(paths, demo=True)
        owner.start()
        try:
            assert owner.server is not None and not owner.server.address.startswith(str(squat))
            reply = ipc.ask(paths, rq.Run(argv=[PY, "-c", "pass"], caller_env={"SECRET_TOKEN": SECRET}))
            assert reply.tasks[0].state == "queued"
        finally:
            owner.stop()
        assert fake.received() == b""
    finally:
        fake.stop()


def test_a_server_of_another_user_behind_our_own_files_gets_nothing(
    other_user: pwd.struct_passwd, tmp_path: Path, cleanup: list[Path]
) -> None:
    """Folder and socket file say they are ours (made so by hand here), but the process listening is
    the other user's: the peer credentials give it away before anything is sent."""
    folder = their_folder(other_user)
    cleanup.append(folder)
    paths = Paths(tmp_path / "config", tmp_path / "data", tmp_path / "state", folder / "run")
    ipc_dir = folder / "run" / "ipc"
    fake = Fake(other_user, ipc_dir / "owner.sock", folder)
    try:
        for p in (folder, folder / "run", ipc_dir):  # now every file looks like ours
            os.chown(p, 0, 0)
            os.chmod(p, 0o700)
        os.chown(ipc_dir / "owner.sock", 0, 0)
        os.chmod(ipc_dir / "owner.sock", 0o600)
        with pytest.raises(ipc.OwnerNotRunning) as refused:
            ipc.ask(paths, rq.Ping())
        assert f"uid {other_user.pw_uid}" in str(refused.value)
        assert fake.received() == b""
    finally:
        fake.stop()
