"""The owner on Windows' per-user named pipe, with the Windows CPython under Wine: key, refusals, restarts."""

from __future__ import annotations

import json
import re
from pathlib import Path

from winpython import Owner, WinePython, winpath

PING = (
    "import json, sys, msgspec; from pathlib import Path; from gputray.scheduler import ipc, protocol\n"
    "from gputray.scheduler.paths import app_paths\n"
    "paths = app_paths()\n"
    "try:\n"
    "    with ipc.IpcClient(paths, pipe_address={address}, timeout_s=20) as c:\n"
    "        print(json.dumps(msgspec.to_builtins(c.ask(protocol.Ping()))))\n"
    "except ipc.IpcError as exc: print(json.dumps({{'refused': type(exc).__name__, 'why': str(exc)}}))\n"
)


def test_owner_listens_on_a_per_user_pipe_that_needs_the_key(win: WinePython, home: Path) -> None:
    owner = Owner(win, home, "--demo")
    try:
        pong = owner.ping()
        assert pong is not None and pong["demo"] is True
        address = str(pong["address"])
        assert address.startswith("\\\\.\\pipe\\gputray-")
        names = win.value(
            "import json, os; from gputray.scheduler import ipc\n"
            "from gputray.scheduler.paths import app_paths\n"
            "paths = app_paths()\n"
            "print(json.dumps([ipc.pipe_name(paths), os.environ['USERNAME'], str(paths.data_dir)]))",
            env={"GPUTRAY_HOME": winpath(home)},
        )
        assert isinstance(names, list)
        pipe, user, data_dir = names
        assert pipe == address  # the name comes from the user and the data folder
        assert Path(data_dir.removeprefix("Z:").replace("\\", "/")) == home / "data"
        key = home / "data" / "ipc.key"
        assert len(key.read_bytes()) == 32

        # the same pipe with another key: the owner refuses before reading a request
        other = home.parent / "other home"
        (other / "data").mkdir(parents=True)
        (other / "data" / "ipc.key").write_bytes(b"\x01" * 32)
        wrong = win.value(PING.format(address=repr(address)), env={"GPUTRAY_HOME": winpath(other)})
        assert isinstance(wrong, dict)
        assert wrong["refused"] == "IpcError" and "is not this user's gputray owner" in wrong["why"], wrong
        right = win.value(PING.format(address=repr(address)), env={"GPUTRAY_HOME": winpath(home)})
        assert isinstance(right, dict) and right["pid"] == owner.pid
        owner_log = (home / "state" / "daemon.log").read_text("utf-8")
        assert "refused a pipe client that failed authentication (wrong key)" in owner_log
        assert user  # the pipe is per user: a second user's pipe name differs (see ipc.pipe_name)

        # the pipe's DACL, read by name as another process sees it: one ACE, this user only. (Wine keeps
        # the DACL but does not enforce it; only real Windows can show another user refused.)
        acl = win.value(
            "import json; from gputray.scheduler.ipc import win_pipe\n"
            f"print(json.dumps([win_pipe.pipe_dacl({address!r}), win_pipe.current_user_sid()]))"
        )
        assert isinstance(acl, list)
        dacl, sid = acl
        assert re.fullmatch(r"D:P\(A;;(GA|FA);;;S-1-5-[0-9-]+\)", dacl) and dacl.endswith(f";;;{sid})"), acl
        assert owner.ping() is not None  # reading the DACL did not disturb the owner
    finally:
        owner.stop()


def test_a_second_owner_is_refused_and_a_killed_ones_pipe_is_taken_over(win: WinePython, home: Path) -> None:
    first = Owner(win, home, "--demo")
    try:
        second = win.gputray("daemon", "--demo", home=home, timeout_s=120)
        assert second.returncode == 1, second.text
        assert "another gputray owner is running (it holds " in second.stderr  # the owner lock, first
        assert first.ping() is not None  # the first one is untouched, and saw no intruder in the check
        assert "failed authentication" not in (home / "state" / "daemon.log").read_text("utf-8")
        win.kill(first.pid)  # TerminateProcess: nothing of it cleans up
        first.proc.wait(timeout=60)
        assert first.ping() is None
        replacement = Owner(win, home, "--demo")
        try:
            pong = replacement.ping()
            assert pong is not None and pong["pid"] == replacement.pid != first.pid
            listed = win.gputray("queue", "--json", home=home)
            assert listed.returncode == 0 and json.loads(listed.stdout)["tasks"] == []
        finally:
            replacement.stop()
    finally:
        first.stop()


def test_key_files_hold_exactly_the_key_on_windows(win: WinePython, tmp_path: Path) -> None:
    """A text-mode write would turn each 0x0A of the random key into CR LF (one key in eight)."""
    code = (
        "import json, sys, msgspec; from pathlib import Path; from gputray.scheduler import ipc, protocol\n"
        "folder = Path(sys.argv[1])\n"
        "paths = [folder / f'{i}.key' for i in range(200)]\n"
        "keys = [(ipc.load_authkey(p, create=True), p) for p in paths]\n"
        "print(json.dumps(sum(k == p.read_bytes() == ipc.load_authkey(p, create=False) for k, p in keys)))"
    )
    done = win.run("-c", code, winpath(tmp_path))
    assert done.returncode == 0, done.text
    assert json.loads(done.stdout) == 200
