"""A real owner on a temp home for the scheduler tests, in both forms they use: in-process (``Owner``
with the simulated pair, real SQLite and real jobs) and a real ``gputray daemon --demo`` process,
optionally under a prefix such as ``prlimit --nofile=64:64 --``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths, app_paths

PY = sys.executable


class ShiftedClock:
    """The owner's wall clock shifted, not faked: time passes as it does, plus an offset the test sets."""

    def __init__(self) -> None:
        self.offset_s = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset_s

    def set_to(self, when_s: float) -> None:
        self.offset_s = when_s - time.time()


def home_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    """The app's paths under ``tmp_path/home`` (GPUTRAY_HOME, for this test only)."""
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    return app_paths()


@contextlib.contextmanager
def running_owner(paths: Paths, **options: Any) -> Iterator[Owner]:
    """An in-process owner of the simulated pair (``options``: Owner's keywords, e.g. ``clock``)."""
    owner = Owner(paths, demo=True, **options)
    owner.start()
    try:
        yield owner
    finally:
        owner.stop()


def paths_of(home: Path) -> Paths:
    """The paths a daemon started with ``GPUTRAY_HOME=home`` uses."""
    return Paths(home / "config", home / "data", home / "state", home / "run")


def daemon_answers(paths: Paths, proc: subprocess.Popen[bytes]) -> bool:
    """Whether the daemon answers a ping (False while it starts); fails the test if it exited."""
    assert proc.poll() is None, "the daemon exited"
    try:
        return bool(ipc.ask(paths, rq.Ping()).ready)
    except ipc.IpcError:
        return False


def start_daemon(
    home: Path, stderr_file: Path, *prefix: str, preexec: Callable[[], None] | None = None
) -> subprocess.Popen[bytes]:
    """``gputray daemon --demo`` on ``home`` (run under ``prefix``, ``preexec`` in the child before it
    starts), once it answers; its stderr goes to ``stderr_file``. A daemon that does not answer within
    a minute is stopped and the test fails."""
    with stderr_file.open("wb") as err:
        proc = subprocess.Popen(
            [*prefix, PY, "-m", "gputray.gui.entry", "daemon", "--demo"],
            env={**os.environ, "GPUTRAY_HOME": str(home)},
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=preexec,
        )
    try:
        wait_for(lambda: daemon_answers(paths_of(home), proc), 60, "the daemon")
    except BaseException:
        stop_daemon(proc)
        raise
    return proc


def stop_daemon(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as a logout sends it; SIGKILL after 30 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
