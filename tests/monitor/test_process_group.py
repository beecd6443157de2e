"""Helper processes in a group of their own: a Ctrl+C while one starts must not leave it running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from child_signals import DEFAULT_CTRL_C

posix_only = pytest.mark.skipif(os.name != "posix", reason="the child signals its parent from preexec_fn")

# The child sends SIGINT to its parent after the fork and before exec: the parent is then inside
# subprocess.Popen, which is exactly where a user's Ctrl+C once left a probe running with nobody
# holding its pid.
CTRL_C_WHILE_STARTING = """
import os, signal, subprocess, sys
from gputray.monitor.process_group import popen_own_group

def ctrl_c_from_the_child():
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    os.kill(os.getppid(), signal.SIGINT)

try:
    quiet = subprocess.DEVNULL
    popen_own_group(["sleep", "600"], preexec_fn=ctrl_c_from_the_child, stdout=quiet, stderr=quiet)
except KeyboardInterrupt:
    print("interrupted")
else:
    print("not interrupted")
"""


def _gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@posix_only
def test_ctrl_c_while_the_child_starts_kills_it_and_still_interrupts(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_STARTING, str(pid_file)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=DEFAULT_CTRL_C,  # Ctrl+C as a terminal gives it, even to a suite run with SIGINT ignored
    )
    assert done.stdout.strip() == "interrupted", done.stderr
    child = int(pid_file.read_text())
    if not _gone(child):
        psutil.Process(child).kill()
        pytest.fail(f"the child {child} outlived the Ctrl+C")


def test_outside_the_main_thread_it_is_a_plain_popen_in_its_own_group(tmp_path: Path) -> None:
    import threading

    from gputray.monitor.process_group import popen_own_group

    started: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(
        target=lambda: started.append(popen_own_group([sys.executable, "-c", "pass"], cwd=str(tmp_path)))
    )
    thread.start()
    thread.join(30)
    assert started and started[0].wait(30) == 0
