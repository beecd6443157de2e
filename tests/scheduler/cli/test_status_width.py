"""`gputray status --watch` in a real terminal (a pty of 80 and of 50 columns): every line fits, so the
terminal never wraps one in the middle of a word; what does not fit moves to the next line at a field
boundary, under the readings, and each reading stays whole on one line."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from child_signals import DEFAULT_CTRL_C

from gputray.scheduler.cli.commands.common import terminal_cells

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pty")

CLEAR = "\x1b[H\x1b[J"  # what --watch writes before each screen on a terminal
# Each reading of the demo pair, whole: (pattern, how many the screen holds).
READINGS = [
    (r"GeForce RTX 5060 Ti  \[[█░]{10}\] +\d+ %", 1),
    (r"Radeon 780M {10}\[[█░]{10}\] +\d+ %", 1),
    (r"\d+ °C", 2),
    (r"\d+\.\d W(?! of)", 2),
    (r"VRAM \d+\.\d/\d+\.\d GiB", 2),
    (r"shared \d+\.\d/\d+\.\d GiB", 1),
    (r"PCIe \d\.\d ×\d+ of \d\.\d ×\d+", 1),
    (r"fan \d+ % \d+ RPM", 1),
    (r"limit \d+ W", 1),
    (r"mem \d+ MHz", 2),
    (r"enc \d+ %", 2),
    (r"dec \d+ %", 2),
    (r"(?<!V)RAM \d+\.\d/\d+\.\d GiB", 1),
]


def watch_screens(tmp_path: Path, columns: int) -> list[str]:
    """The screens `status --demo --watch` draws on a pty ``columns`` wide (the first two, at least)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["GPUTRAY_HOME"] = str(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputray.gui.entry", "status", "--demo", "--watch", "0.2"],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=DEFAULT_CTRL_C,  # Ctrl+C as a terminal gives it, even to a suite run with SIGINT ignored
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while seen.decode(errors="replace").count(CLEAR) < 3 and time.monotonic() < deadline:
            if select.select([master], [], [], 1.0)[0]:
                seen += os.read(master, 1 << 16)
        proc.send_signal(signal.SIGINT)
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = seen.decode().replace("\r\n", "\n")
    screens = text.split(CLEAR)[1:-1]  # complete ones: each ends where the next begins
    assert len(screens) >= 2, text
    return screens


@pytest.mark.parametrize("columns", [80, 50])
def test_status_watch_fits_the_terminal_at_field_boundaries(tmp_path: Path, columns: int) -> None:
    for screen in watch_screens(tmp_path, columns):
        lines = screen.rstrip("\n").split("\n")
        too_wide = [line for line in lines if terminal_cells(line) > columns]
        assert too_wide == [], screen
        assert lines[0] == "DEMO — simulated GPUs, not this machine's"
        for pattern, count in READINGS:
            found = sum(len(re.findall(pattern, line)) for line in lines)
            assert found == count, f"{pattern!r} whole {found} times, not {count}:\n{screen}"
        below = [line for line in lines[1:] if line.startswith(" ")]
        assert below and all(line.startswith(" " * 2) and line.strip() for line in below)
