"""A real small file system for the tests that need a full disk (a tmpfs mounted as root; the test is
skipped, saying why, anywhere else), and a ``gputray daemon --demo`` on it that the test may kill."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import R

PY = sys.executable


def mount_tmpfs(where: Path, size: str) -> None:
    """A tmpfs of ``size`` at ``where`` (skips the test where that cannot be done)."""
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("mounting a small file system for a real full disk needs root (the CI runs as root)")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@contextlib.contextmanager
def small_disk(where: Path, size: str = "8m") -> Iterator[Path]:
    mount_tmpfs(where, size)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path, name: str = "filler") -> Path:
    """Write a file until the file system has not one byte left."""
    filler = folder / name
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 64 << 10, 4 << 10, 256, 1):
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def pad_to_page(log_file: Path, page: int = 4096) -> None:
    """Fill the last page of ``log_file`` (tmpfs gives files whole pages: what fits there still works)."""
    with contextlib.suppress(OSError):
        gap = -log_file.stat().st_size % page
        if gap:
            with log_file.open("a") as f:
                f.write("-" * (gap - 1) + "\n")


class Daemon:
    """``gputray daemon --demo`` (no external load) on ``home``, in a session of its own (``kill`` is a
    crash: SIGKILL to its group; the supervisor host and the supervisors, in groups of their own, live on)."""

    def __init__(self, home: Path, out: Path, *prefix: str) -> None:
        self.prefix = prefix  # run under this (``unshare -m …``)
        self.home = home
        self.paths = Paths(home / "config", home / "data", home / "state", home / "run")
        self.env = {**os.environ, "GPUTRAY_HOME": str(home), "PYTHONUNBUFFERED": "1"}
        self.stderr_path = out
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *, wait: bool = True) -> Daemon:
        with self.stderr_path.open("a") as err:
            self.proc = subprocess.Popen(
                [
                    *self.prefix,
                    PY,
                    "-m",
                    "gputray.gui.entry",
                    "daemon",
                    "--demo-scenario",
                    str(self._quiet()),
                ],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        if wait:
            wait_for(self._ready, 60, "the daemon to answer")
        return self

    def _quiet(self) -> Path:
        """A demo scenario with no external load: the simulated GPUs stay free (the default one puts
        an LLM server on the 5060 Ti after 20 s, which would hold the tests' jobs back)."""
        path = self.stderr_path.with_name("quiet-scenario.toml")
        path.write_text("# no external load\n")
        return path

    def _ready(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, self.stderr_path.read_text()
        try:
            return bool(ipc.ask(self.paths, rq.Ping()).ready)
        except ipc.IpcError:
            return False

    def ask(self, request: rq.Request[R]) -> R:
        return ipc.ask(self.paths, request)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            self.proc.wait()
