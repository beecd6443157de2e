"""A job's supervisor's reaper (POSIX): it waits for the job and reaps every child, the job's orphans
included (the supervisor is a child subreaper), waking on SIGCHLD through a wakeup pipe: no polling, no
zombies piling up while the job runs. Loaded by path by the supervisor (``-I -S``): the standard
library only."""

from __future__ import annotations

import contextlib
import os
import signal
import time


def _ignore(signum: int, frame: object) -> None:
    pass


class Reaper:
    """POSIX: waits for the job and reaps every child, the job's orphans included (a subreaper gets
    them), waking on SIGCHLD (a wakeup pipe): no polling, no zombies piling up while the job runs."""

    def __init__(self) -> None:
        self._r, w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _ignore)
        self.job_pid: int | None = None
        self.job_status: int | None = None  # the job's exit code, once reaped

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.job_pid:
                self.job_status = os.waitstatus_to_exitcode(status)

    def sleep(self, timeout_s: float | None) -> None:
        """Until a child changes state (or a signal comes), at most ``timeout_s``."""
        import select

        with contextlib.suppress(InterruptedError):
            select.select([self._r], [], [], timeout_s)
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(self._r, 512):
                pass

    def wait_job(self, deadline: float | None) -> int | None:
        """The job's exit code, or None when ``deadline`` (monotonic) passes first."""
        while True:
            self.reap()
            if self.job_status is not None:
                return self.job_status
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            self.sleep(remaining)
