"""The owner's accept loop when the process is out of file descriptors (EMFILE and its kin).

A listening socket with connections waiting stays readable; an ``accept`` that fails with EMFILE
leaves them waiting, so a selector loop that just logs and returns spins at 100 % CPU, logging every
turn, while the waiting clients time out (and their requests still run once fds are free again).

``AcceptGuard`` keeps one spare fd (``/dev/null``). Out of fds, it closes the spare, accepts one
waiting connection with the fd that frees, answers it "out of open files: nothing was done, try
again", closes it and takes the spare back: every waiting client learns at once that its request was
not taken. When even that fails (another thread took the fd first) the loop stops watching the
listening socket for a back-off time that doubles up to ``MAX_PAUSE_S``. One warning per episode,
and one line when connections are accepted again with an fd to spare.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import time
from collections.abc import Callable

log = logging.getLogger("gputray.ipc")

#: accept failures that mean "no fd / no memory for one now", not a bad connection
SHORTAGE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
FIRST_PAUSE_S = 0.05
MAX_PAUSE_S = 1.0


def is_shortage(exc: OSError) -> bool:
    return exc.errno in SHORTAGE_ERRNOS


class AcceptGuard:
    """What the accept loop does out of fds: refuse in words, else pause; log once per episode."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._spare: int | None = self._open_spare()
        self.short = False  # an episode is going on
        self.refused = 0  # connections answered "out of open files" in this episode
        self.paused_until: float | None = None  # not watching the listening socket until then
        self._pause_s = FIRST_PAUSE_S

    @staticmethod
    def _open_spare() -> int | None:
        try:
            return os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None

    def close(self) -> None:
        if self._spare is not None:
            with contextlib.suppress(OSError):
                os.close(self._spare)
            self._spare = None

    def on_shortage(
        self, listener: socket.socket, exc: OSError, refuse: Callable[[socket.socket], None]
    ) -> bool:
        """After ``accept`` failed with ``exc`` (``is_shortage``): True when one waiting connection was
        taken off the backlog and refused (accept again); False when the loop must pause
        (``paused_until``)."""
        if not self.short:
            self.short = True
            self.refused = 0
            self._pause_s = FIRST_PAUSE_S
            log.warning(
                "IPC: cannot accept connections: %s; refusing them in words until files are free again",
                exc.strerror or exc,
            )
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None
            try:
                sock, _ = listener.accept()
            except OSError:
                sock = None
            if sock is not None:
                try:
                    refuse(sock)
                finally:
                    sock.close()
                self.refused += 1
            self._spare = self._open_spare()  # the fd the refused connection had
            if sock is not None:
                return True
        self.paused_until = self._clock() + self._pause_s
        self._pause_s = min(MAX_PAUSE_S, self._pause_s * 2)
        return False

    def resume_due(self) -> bool:
        """Whether a pause has run out (the loop watches the listening socket again)."""
        if self.paused_until is not None and self._clock() >= self.paused_until:
            self.paused_until = None
            if self._spare is None:
                self._spare = self._open_spare()
            return True
        return False

    def on_accepted(self) -> None:
        """A connection was accepted: the episode, if any, is over when one more fd can be had too. An
        accept that took the one fd another thread let go of a moment ago (a file read, a look at
        ``/proc``) ends nothing: the next connection would be refused again, and each such moment would
        log another pair of lines."""
        if not self.short:
            return
        headroom = self._open_spare()
        if headroom is None:
            return
        os.close(headroom)
        self.short = False
        log.warning("IPC: accepting connections again (%d refused while out of open files)", self.refused)


#: the owner's soft limit on open files, when its hard limit allows: every parked ``wait`` holds a
#: connection, and the common default soft limit (1024) is hit by ~1,000 waiting clients
WANTED_OPEN_FILES = 8192


def raise_open_file_limit(wanted: int = WANTED_OPEN_FILES) -> int | None:
    """Raise this process's soft RLIMIT_NOFILE to ``wanted`` (at most its hard limit; never lowered).
    The new soft limit, or None where there is no such limit (Windows) or it cannot be changed."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            log.debug("open files: soft limit raised from %d to %d", soft, target)
            return target
        return soft
    except (OSError, ValueError):
        return None
