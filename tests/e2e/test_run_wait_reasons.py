"""`gputray run --wait` says why its task waits, on stderr, each time the reason changes: a user who
sees nothing happen learns that a job holds the GPU, that the device is paused, …; the job's own
output stays alone on stdout. Real daemon, real jobs; the reasons are changed by the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_daemon_e2e import PY, Daemon
from waiting import wait_for

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="the e2e daemon tests use POSIX signals"),
    pytest.mark.slow,
]


SLEEPER = "import time; time.sleep(120)"  # holds the CPU's one slot until cancelled


def test_run_wait_prints_the_waiting_reason_when_it_changes(daemon: Daemon) -> None:
    long = daemon.cli("run", "--device", "cpu", "--name", "long", "--json", "--", PY, "-c", SLEEPER)
    assert long.returncode == 0, long.stderr
    long_id = json.loads(long.stdout)[0]["id"]
    daemon.wait_state(long_id, {"running"})
    out, err = daemon.home / "run-stdout.txt", daemon.home / "run-stderr.txt"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        run = subprocess.Popen(
            [PY, "-m", "gputray.gui.entry", "run", "--wait", "--device", "cpu", "--", PY, "-c", "print(1)"],
            env=daemon.env,
            stdout=stdout,
            stderr=stderr,
            cwd=daemon.home,
        )
    try:
        me = long_id + 1
        busy = f"gputray: #{me} waiting for CPU: running 'long (#{long_id})'"
        wait_for(lambda: busy in err.read_text(), 30, f"{busy!r} in {err.read_text()!r}")
        assert daemon.cli("pause", "cpu").returncode == 0
        paused = f"gputray: #{me} waiting for CPU: paused"
        wait_for(lambda: paused in err.read_text(), 30, f"{paused!r} in {err.read_text()!r}")
        assert daemon.cli("pause").returncode == 0
        queue_paused = f"gputray: #{me} waits: the queue is paused"
        wait_for(lambda: queue_paused in err.read_text(), 30, f"{queue_paused!r} in {err.read_text()!r}")
        assert daemon.cli("cancel", str(long_id)).returncode == 0  # the queue stays paused: no new reason
        assert daemon.cli("resume").returncode == 0
        assert run.wait(60) == 0, err.read_text()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    said = [line for line in err.read_text().splitlines() if line.startswith(f"gputray: #{me} wait")]
    assert said == [busy, paused, queue_paused]  # each once, though the follower asks four times a second
    assert out.read_text().endswith("\n1\n") and "waiting" not in out.read_text()  # the job's log alone
