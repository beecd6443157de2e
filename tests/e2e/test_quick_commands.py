"""Commands run by the owner's warm command server (issue 31 item 6: `gputray queue` in 50 ms).

A real `gputray daemon --demo` starts the server (``gui/quick_server.py``); the commands are real
`python -m gputray.gui.entry …` processes. What a person or a script notices: the same words and exit
statuses as a command run in its own process, a job that starts from the caller's folder and
environment, Ctrl+C that ends the command, nothing left running when the caller or the owner is killed,
and a caller the server must not serve (another module path) still served, in its own process.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from child_signals import DEFAULT_CTRL_C
from test_daemon_e2e import Daemon
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.client import words

PY = sys.executable
GPUTRAY = [PY, "-m", "gputray.gui.entry"]
#: All of gputray that a command handed to the warm server loads in the calling process (besides
#: ``gputray.gui.entry``, which ``-m`` runs as ``__main__``).
HANDING_OVER = {
    "gputray",
    "gputray.gui",
    "gputray.scheduler",
    "gputray.scheduler.client",
    "gputray.scheduler.client.quick",
    "gputray.scheduler.paths_cache",
}
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warm command server is Linux's"),
]


def ready(daemons: Callable[..., Daemon]) -> Daemon:
    """A daemon whose warm command server listens (it starts in the background, after the socket)."""
    d = daemons()
    wait_for(lambda: (d.paths.data_dir / "quick.address").exists(), 60, "the warm command server")
    return d


def server_of(d: Daemon) -> psutil.Process:
    assert d.proc is not None
    (server,) = [p for p in psutil.Process(d.proc.pid).children() if "--quick-server" in p.cmdline()]
    return server


def loaded_modules(
    d: Daemon, *argv: str, env: dict[str, str] | None = None, preexec_fn: Callable[[], None] | None = None
) -> tuple[set[str], str]:
    """The modules the calling process itself imported (``-X importtime``), and what it printed."""
    done = subprocess.run(
        [PY, "-X", "importtime", "-m", "gputray.gui.entry", *argv],
        env={**d.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=d.home,
        preexec_fn=preexec_fn,
    )
    lines = done.stderr.splitlines()
    modules = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    modules.discard("package")  # the header line
    return modules, done.stdout


def test_the_commands_say_what_they_say_in_their_own_process(daemons: Callable[..., Daemon]) -> None:
    d = ready(daemons)
    d.ask(rq.Pause())
    listed = d.cli("run", "--name", "名前 with 'quotes'; and more", "--", "true")
    assert listed.returncode == 0, listed.stderr
    task = str(d.ask(rq.Queue()).tasks[0].id)
    for argv in (
        ["queue"],
        ["queue", "--json"],
        ["edit", task, "--priority", "5"],
        ["move", task, "--top"],
        ["cancel", "999"],  # refused: one line, status 1
        ["edit", task, "--vram", "-4GiB"],  # a usage error: status 2
        ["logs", task],
        ["schedule", "list"],
    ):
        quick = d.cli(*argv)
        alone = d.cli(*argv, env={"GPUTRAY_QUICK": "0"})
        said = (quick.returncode, quick.stdout, quick.stderr)
        assert said == (alone.returncode, alone.stdout, alone.stderr), argv
    assert "名前 with 'quotes'; and more" in d.cli("queue").stdout
    # the caller's time zone, not the owner's: Python reads TZ once, at a start, and the copy started long ago
    (d.home / "nightly.toml").write_text('name = "nightly"\nkind = "command"\nargv = ["true"]\n')
    assert d.cli("schedule", "add", "--cron", "0 3 * * *", "nightly.toml").returncode == 0
    for zone in ("Asia/Tokyo", "America/New_York"):
        quick = d.cli("schedule", "list", env={"TZ": zone})
        alone = d.cli("schedule", "list", env={"TZ": zone, "GPUTRAY_QUICK": "0"})
        assert (quick.returncode, quick.stdout) == (alone.returncode, alone.stdout), zone
    # and they ran in the server, not in the calling process: it loaded neither msgspec nor argparse
    modules, out = loaded_modules(d, "queue", "--json")
    assert json.loads(out)["tasks"][0]["name"] == "名前 with 'quotes'; and more"
    assert {m for m in modules if m.startswith("gputray")} == HANDING_OVER, sorted(modules)
    assert modules.isdisjoint({"msgspec", "argparse", "socket", "signal", "json"}), sorted(modules)


def test_a_job_starts_from_the_callers_folder_and_environment(
    daemons: Callable[..., Daemon], tmp_path: Path
) -> None:
    d = ready(daemons)
    folder = tmp_path / "フォルダ 'a;b'"
    folder.mkdir()
    (folder / "task.toml").write_text(
        'name = "from a task file"\nkind = "command"\nargv = ["sh", "-c", "pwd; echo \\"$MY_VAR\\""]\n'
    )
    env = {"MY_VAR": "値 ; 'x' \"y\""}
    ran = subprocess.run(
        [*GPUTRAY, "run", "--json", "--", "sh", "-c", 'pwd; echo "$MY_VAR"'],
        env={**d.env, **env}, cwd=folder, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    submitted = subprocess.run(
        [*GPUTRAY, "submit", "--json", "--task", "task.toml"],
        env={**d.env, **env}, cwd=folder, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0 and submitted.returncode == 0, (ran.stderr, submitted.stderr)
    for task_id in (json.loads(ran.stdout)[0]["id"], json.loads(submitted.stdout)[0]["id"]):
        d.wait_state(task_id, {"succeeded"})
        assert d.log_text(task_id).splitlines()[-2:] == [str(folder), env["MY_VAR"]]


def test_ctrl_c_ends_the_command_and_a_killed_caller_leaves_nothing_running(
    daemons: Callable[..., Daemon],
) -> None:
    d = ready(daemons)
    d.ask(rq.Pause())
    task = str(d.run_job(["true"]))
    server = server_of(d)
    for ending in (signal.SIGINT, signal.SIGKILL):
        waiting = subprocess.Popen(
            [*GPUTRAY, "wait", task], env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=DEFAULT_CTRL_C, cwd=d.home,
        )  # fmt: skip
        # the command runs in a copy of the server, with the caller's command line
        copy = wait_for(lambda: next(iter(server.children()), None), 60, "the command's copy")
        wait_for(lambda c=copy: c.cwd() == str(d.home), 30, "the copy to take the caller's folder")
        # and asks the owner (its second socket): the command waits, its Ctrl+C handling is on
        wait_for(lambda c=copy: len(c.net_connections("unix")) >= 2, 30, "the copy to ask the owner")
        waiting.send_signal(ending)
        _, err = waiting.communicate(timeout=60)
        if ending == signal.SIGINT:  # said as `gputray wait` says a Ctrl+C in its own process
            assert waiting.returncode == 130, err
            assert f"gputray: stopped waiting; #{task} goes on in the queue" in err
        wait_for(
            lambda c=copy: not c.is_running() or c.status() == psutil.STATUS_ZOMBIE, 30, "the copy to end"
        )
    # Ctrl+C while the command is being handed over: it reaches the copy just as it begins, and is said
    server.suspend()  # the request waits in the socket, unanswered
    try:
        waiting = subprocess.Popen(
            [*GPUTRAY, "wait", task], env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=DEFAULT_CTRL_C, cwd=d.home,
        )  # fmt: skip
        caller = psutil.Process(waiting.pid)
        wait_for(lambda: caller.net_connections("unix"), 30, "the caller to connect")
        waiting.send_signal(signal.SIGINT)
    finally:
        server.resume()
    _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 130, err
    assert err in (
        "gputray: interrupted before the command began: nothing was done\n",
        f"gputray: stopped waiting; #{task} goes on in the queue\n",
    ), err
    assert d.task(int(task)).state == "waiting"  # nothing the interrupted waits did touched the task


def test_ctrl_z_stops_the_command_and_fg_goes_on(daemons: Callable[..., Daemon]) -> None:
    """In a terminal, with a shell's job control: Ctrl+Z stops `gputray wait` and its copy (whose own
    process group has no terminal), the shell says so (148), `fg` goes on with both."""
    d = ready(daemons)
    d.ask(rq.Pause())
    task = str(d.run_job(["true"]))
    server = server_of(d)
    script = 'set -m; "$@"; echo "stopped: $?"; read -r _; fg; echo "ended: $?"; read -r _'
    pid, terminal = pty.fork()
    if pid == 0:  # the child: a shell in a new terminal session
        os.chdir(d.home)
        os.execve("/bin/bash", ["bash", "-c", script, "bash", *GPUTRAY, "wait", task], d.env)
    said = Terminal(terminal)
    try:
        copy = wait_for(lambda: next(iter(server.children()), None), 60, "the command's copy")
        wait_for(lambda: len(copy.net_connections("unix")) >= 2, 30, "the copy to ask the owner")
        os.write(terminal, b"\x1a")  # Ctrl+Z
        wait_for(lambda: "stopped: 148" in said.text(), 30, f"the shell to see it stop: {said.text()!r}")
        wait_for(lambda: copy.status() == psutil.STATUS_STOPPED, 30, "the copy to stop with it")
        os.write(terminal, b"\n")  # fg
        wait_for(lambda: copy.status() != psutil.STATUS_STOPPED, 30, "the copy to go on")
        d.ask(rq.Resume())
        wait_for(lambda: "ended: 0" in said.text(), 60, f"the wait to end: {said.text()!r}")
    finally:
        shell = psutil.Process(pid)
        for process in [*shell.children(recursive=True), shell]:
            with contextlib.suppress(psutil.Error):
                process.kill()
        os.waitpid(pid, 0)
        said.close()


class Terminal:
    """What a pseudo-terminal's programs write, read as it comes (a full terminal would block them)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(self.fd, 4096):
                self.chunks.append(chunk)

    def text(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def close(self) -> None:
        os.close(self.fd)
        self.reader.join(10)


def test_a_caller_the_server_must_not_serve_runs_its_command_itself(
    daemons: Callable[..., Daemon], tmp_path: Path
) -> None:
    """Where the copy would not run the command as the caller would: a PYTHONPATH with a stand-in module
    first; another group (``sg``: files opened with other rights); gputray's code changed on disk since
    the server loaded it (``pip install -U`` while the tray runs: the copy would run the old code)."""
    d = ready(daemons)
    elsewhere = tmp_path / "stand-ins"
    elsewhere.mkdir()
    modules, out = loaded_modules(d, "queue", env={"PYTHONPATH": str(elsewhere)})
    assert "the queue is empty" in out
    assert "msgspec" in modules  # refused by the server: loaded and ran here
    if os.geteuid() == 0:  # root may take another group and keep its user (the socket's owner)
        modules, out = loaded_modules(d, "queue", preexec_fn=_another_group)
        assert "the queue is empty" in out and "msgspec" in modules
    modules, _ = loaded_modules(d, "queue")
    assert "msgspec" not in modules  # served: the code on disk is the code the server loaded
    source = Path(words.__file__)
    before = source.stat()
    try:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        modules, out = loaded_modules(d, "queue")
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "the queue is empty" in out and "msgspec" in modules


def _another_group() -> None:
    os.setgroups([])
    os.setgid(54321)


def test_the_server_ends_with_its_owner(daemons: Callable[..., Daemon]) -> None:
    d = ready(daemons)
    server = server_of(d)
    socket_file = Path((d.paths.data_dir / "quick.address").read_text().strip())
    assert socket_file.exists()
    d.kill9()  # no stop, no clean-up: the server's pipe from the owner closes
    wait_for(
        lambda: not server.is_running() or server.status() == psutil.STATUS_ZOMBIE, 30, "the server to end"
    )
    after = d.cli("queue")  # the address file is left behind; the command runs itself, offline
    assert after.returncode == 0 and "no gputray owner is running" in after.stderr, after.stderr
    assert not socket_file.exists()  # the server removed its socket as it ended
