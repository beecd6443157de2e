"""The command line at its edges, as a shell gives them: a closed or full stdout, a deleted folder, a
read-only config folder, Ctrl+C. Each is one line on stderr and the right exit status, never a
traceback; real subprocesses, real signals, a real daemon."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from child_signals import DEFAULT_CTRL_C
from test_daemon_e2e import Daemon
from waiting import wait_for

from gputray.scheduler import protocol as rq

PY = sys.executable
GPUTRAY = [PY, "-m", "gputray.gui.entry"]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells and signals"),
]


def _sh(d: Daemon, script: str, *argv: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """``argv`` (gputray's arguments) run by ``sh -c script``, which ends with ``exec "$@"``."""
    return subprocess.run(
        ["sh", "-c", script, "sh", *GPUTRAY, *argv],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
        **kw,  # type: ignore[call-overload]
    )


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "no gputray owner is running" not in line]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("command", ["queue", "status"])
def test_a_closed_stdout_is_one_line_and_status_1(daemons: Callable[..., Daemon], command: str) -> None:
    """`gputray queue >&-`: 'NoneType' object has no attribute 'isatty'."""
    d = daemons()
    out = _sh(d, 'exec "$@" >&-', command)
    assert out.returncode == 1
    assert _one_line(out.stderr) == "gputray: cannot write the output: standard output is closed"


def test_a_full_stdout_is_one_line_and_status_1_with_or_without_the_owner(
    daemons: Callable[..., Daemon],
) -> None:
    """`gputray logs ID > /dev/full`: OSError: No space left on device, as a traceback."""
    d = daemons()
    task_id = d.run_job([PY, "-c", "print('output ' * 10_000)"], device_prefs=["cpu"])
    d.wait_state(task_id, {"succeeded"})
    said = "gputray: cannot write the output: No space left on device"
    for argv in (["logs", str(task_id)], ["queue", "--all"], ["status", "--json"]):
        out = _sh(d, 'exec "$@" > /dev/full', *argv)
        assert out.returncode == 1 and _one_line(out.stderr) == said, (argv, out)
    d.stop()
    for argv in (["logs", str(task_id)], ["queue", "--all"]):  # the saved queue and log, read here
        out = _sh(d, 'exec "$@" > /dev/full', *argv)
        assert out.returncode == 1 and _one_line(out.stderr) == said, (argv, out)


def test_run_from_a_deleted_folder_is_refused_in_words(
    daemons: Callable[..., Daemon], tmp_path: Path
) -> None:
    """`gputray run` in a folder deleted meanwhile: FileNotFoundError at os.getcwd()."""
    d = daemons()
    for argv in (["run", "--", "true"], ["submit", "a.py"]):
        out = _sh(d, 'mkdir gone && cd gone && rmdir ../gone && exec "$@"', *argv, cwd=tmp_path)
        assert out.returncode == 1, out
        assert _one_line(out.stderr) == (
            "gputray: the current folder no longer exists (it was deleted or moved away): "
            "cd to a folder that exists and try again"
        )
    assert d.ask(rq.Queue(all=True)).tasks == ()


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """``folder`` takes no new file: its mode for a user, the immutable flag for root (which modes do
    not stop)."""
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        pytest.skip("root, and this file system has no immutable flag to make a folder read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_envs_add_with_a_read_only_config_folder_names_the_folder(home: Path) -> None:
    config = home / "config"
    config.mkdir(parents=True)
    with _read_only(config):
        out = subprocess.run(
            [*GPUTRAY, "envs", "add", PY],
            env={**os.environ, "GPUTRAY_HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out.returncode == 1, out
    line = _one_line(out.stderr)
    assert line.startswith(
        f"gputray: cannot save the config file {config / 'config.toml'}: the folder {config} "
    )
    assert line.endswith("make it writable; nothing was changed")
    assert list(config.iterdir()) == []


def test_ctrl_c_during_a_submit_of_1000_files_says_they_were_queued(
    daemons: Callable[..., Daemon], home: Path, tmp_path: Path
) -> None:
    """It exited 130 and said nothing, although the owner queued all 1,000."""
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "recipes.toml").write_text(
        '[[recipe]]\nname = "show"\npatterns = ["*.txt"]\nkind = "command"\nargv = ["cat", "{file}"]\n'
    )
    d = daemons()
    files = []
    for i in range(1000):
        f = tmp_path / f"input-{i}.txt"
        f.write_text(f"{i}\n")
        files.append(str(f))
    queue_db = sqlite3.connect(d.paths.data_dir / "queue.sqlite3", isolation_level=None)
    queue_db.execute("BEGIN IMMEDIATE")  # the owner's insert waits: the answer comes once we let it
    submit = subprocess.Popen(
        [*GPUTRAY, "submit", "--at", "+10h", *files],
        # its own process: "reached the owner" below is its connection (test_quick_commands.py passes a
        # Ctrl+C on to a command run by the owner's warm command server)
        env={**d.env, "GPUTRAY_QUICK": "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=DEFAULT_CTRL_C,  # Ctrl+C as a terminal gives it, even to a suite run with SIGINT ignored
    )
    try:
        client = psutil.Process(submit.pid)
        wait_for(lambda: client.net_connections(kind="unix"), 30, "the submit to reach the owner")
        submit.send_signal(signal.SIGINT)
        assert submit.stderr is not None
        waiting = submit.stderr.readline()  # said once the interrupt was taken
        assert "interrupted while the owner was queueing them: waiting for its answer" in waiting
    finally:
        queue_db.execute("ROLLBACK")
        queue_db.close()
    out, err = submit.communicate(timeout=60)
    assert submit.returncode == 130
    assert "Traceback" not in err
    assert "interrupted, but the owner had them already: 1000 tasks queued (#1–#1000)" in err
    assert len(out.splitlines()) == 1000
    assert len(d.ask(rq.Queue(all=True)).tasks) == 1000


def test_ctrl_c_while_the_command_is_imported_prints_no_traceback(home: Path) -> None:
    """A Ctrl+C that came while Python still imported the command printed KeyboardInterrupt's
    traceback. The signal is sent by the process itself at its first import of the CLI package."""
    code = (
        "import os, signal, sys\n"
        "sent = []\n"
        "def hook(event, args):\n"
        "    if event == 'import' and args[0] == 'gputray.scheduler.cli' and not sent:\n"
        "        sent.append(1)\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.addaudithook(hook)\n"
        "from gputray.gui.entry import main\n"
        "sys.exit(main(['submit', 'a.py']))\n"
    )
    out = subprocess.run(
        [PY, "-c", code],
        env={**os.environ, "GPUTRAY_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=DEFAULT_CTRL_C,  # its own SIGINT must not be ignored either
    )
    assert out.returncode == 130, out
    assert _one_line(out.stderr) == "gputray: interrupted before the command began: nothing was done"


def test_a_daemon_started_with_its_output_closed_serves_all_the_same(home: Path) -> None:
    """A service manager or `gputray daemon >&- &`: its one line to stdout must not stop it (the
    closed stdout's stand-in refuses writes in words, which the daemon's start line does not heed)."""
    from gputray.scheduler import ipc
    from gputray.scheduler.paths import Paths

    paths = Paths(home / "config", home / "data", home / "state", home / "run")
    env = {**os.environ, "GPUTRAY_HOME": str(home)}
    with open(home / "daemon-stderr.txt", "w") as stderr:
        daemon = subprocess.Popen(
            ["sh", "-c", 'exec "$@" >&-', "sh", *GPUTRAY, "daemon", "--demo"], env=env, stderr=stderr
        )
    try:

        def answers() -> bool:
            assert daemon.poll() is None, (home / "daemon-stderr.txt").read_text()
            with contextlib.suppress(ipc.IpcError):
                return bool(ipc.ask(paths, rq.Ping()).ready)
            return False

        wait_for(answers, 40, "the daemon to answer")
        stop = subprocess.run(
            [*GPUTRAY, "daemon", "--stop"], env=env, capture_output=True, text=True, timeout=60
        )
        assert stop.returncode == 0, stop.stderr
        assert daemon.wait(30) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert "Traceback" not in (home / "daemon-stderr.txt").read_text()
