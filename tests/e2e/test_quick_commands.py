"""Commands run by the owner's warm command server (issue 31 item 6: `gputray queue` in 50 ms).

A real `gputray daemon --demo` starts the server (``gui/quick_server.py``); the commands are real
`python -m gputray.gui.entry …` processes. What a person or a script notices: the same words and exit
statuses as a command run in its own process, a job that starts from the caller's folder and
environment, Ctrl+C that ends the command, nothing left running when the caller or the owner is killed,
and a caller the server must not serve (another module path) still served, in its own process.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from child_signals import DEFAULT_CTRL_C
from test_daemon_e2e import Daemon
from waiting import wait_for

from gputray.scheduler import protocol as rq

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


def loaded_modules(d: Daemon, *argv: str, env: dict[str, str] | None = None) -> tuple[set[str], str]:
    """The modules the calling process itself imported (``-X importtime``), and what it printed."""
    done = subprocess.run(
        [PY, "-X", "importtime", "-m", "gputray.gui.entry", *argv],
        env={**d.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=d.home,
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
        waiting.send_signal(ending)
        _, err = waiting.communicate(timeout=60)
        if ending == signal.SIGINT:  # said as `gputray wait` says a Ctrl+C in its own process
            assert waiting.returncode == 130, err
            assert f"gputray: stopped waiting; #{task} goes on in the queue" in err
        wait_for(
            lambda c=copy: not c.is_running() or c.status() == psutil.STATUS_ZOMBIE, 30, "the copy to end"
        )
    assert d.task(int(task)).state == "waiting"  # nothing the interrupted waits did touched the task


def test_a_caller_with_another_module_path_runs_its_command_itself(
    daemons: Callable[..., Daemon], tmp_path: Path
) -> None:
    """A PYTHONPATH with a stand-in module first: the server's copy would not run that stand-in."""
    d = ready(daemons)
    elsewhere = tmp_path / "stand-ins"
    elsewhere.mkdir()
    modules, out = loaded_modules(d, "queue", env={"PYTHONPATH": str(elsewhere)})
    assert "the queue is empty" in out
    assert "msgspec" in modules  # refused by the server: loaded and ran here


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
