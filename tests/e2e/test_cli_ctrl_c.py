"""Ctrl+C stops every command that waits, follows or watches with exit status 130, as a shell reports a
program that SIGINT ended; the task it watched goes on. A real SIGINT to a real `gputray` process,
sent once the command has shown it is at work (it printed its first screen or the job's first line).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from child_signals import DEFAULT_CTRL_C
from test_daemon_e2e import PY, Daemon
from waiting import wait_for

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
    pytest.mark.slow,
]

EXIT_INTERRUPTED = 130
JOB = "import time; print('ready', flush=True); time.sleep(120)"


def interrupted(d: Daemon, *args: str, shows: str) -> tuple[int, str]:
    """Start ``gputray ARGS``, send SIGINT once its output (either stream) holds ``shows``; its exit
    status and stderr."""
    out, err = d.home / "cli-stdout.txt", d.home / "cli-stderr.txt"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen(
            [PY, "-m", "gputray.gui.entry", *args],
            env=d.env,
            stdout=stdout,
            stderr=stderr,
            preexec_fn=DEFAULT_CTRL_C,  # as a terminal gives it, even to a suite run with SIGINT ignored
        )
    try:
        said = lambda: out.read_text() + err.read_text()  # noqa: E731
        wait_for(lambda: shows in said() or proc.poll() is not None, 60, f"{shows!r} from {args}")
        assert proc.poll() is None, f"{args} ended by itself ({proc.returncode}): {said()}"
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err.read_text()


def test_ctrl_c_exits_130_from_every_command_that_waits_or_watches(daemon: Daemon) -> None:
    queued = daemon.cli("run", "--device", "cpu", "--name", "long", "--json", "--", PY, "-c", JOB)
    assert queued.returncode == 0, queued.stderr
    task = str(json.loads(queued.stdout)[0]["id"])
    daemon.wait_state(int(task), {"running"})
    commands = {
        "logs --follow": (["logs", task, "--follow"], "ready"),
        "wait --follow": (["wait", "--follow", task], "ready"),
        "queue --watch": (["queue", "--watch", "0.2"], "long"),
        "status --watch": (["status", "--watch", "0.2"], "GeForce RTX 5060 Ti"),
        "run --wait": (["run", "--wait", "--device", "cpu", "--", PY, "-c", "pass"], "waiting for it to end"),
    }
    statuses = {}
    for name, (args, shows) in commands.items():
        code, err = interrupted(daemon, *args, shows=shows)
        assert "Traceback" not in err, f"{name}: {err}"
        statuses[name] = code
    assert statuses == dict.fromkeys(commands, EXIT_INTERRUPTED)
    assert daemon.task(int(task)).state == "running"  # the job goes on


def test_ctrl_c_stops_the_daemon_gracefully_with_130(tmp_path: Path) -> None:
    d = Daemon(tmp_path, None).start()
    try:
        assert d.proc is not None and d.proc.stdout is not None
        assert "owns the queue" in d.proc.stdout.readline()
        d.proc.send_signal(signal.SIGINT)
        assert d.proc.wait(30) == EXIT_INTERRUPTED
    finally:
        d.stop()
