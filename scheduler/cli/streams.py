"""The command line's own streams when they are not what a terminal gives: closed (``gputray queue
>&-``: Python then has no ``sys.stdout`` at all), full (``> /dev/full``), gone. Each ends the command
with one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from typing import Any

EXIT_OUTPUT = 1  # the command's output could not be written


class OutputFailed(OSError):
    """Writing the command's output failed (stdout closed when it started, a full disk, an I/O error)."""


class _ClosedOutput(io.TextIOBase):
    """``sys.stdout`` for a process started with it closed: it answers what callers ask of a stream
    (``isatty``, ``encoding``) and refuses to be written to, so the command says so in words."""

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise OutputFailed(errno.EBADF, "standard output is closed")


class _Output(io.RawIOBase):
    """fd 1 under ``sys.stdout``: a failed write raises OutputFailed (the command's output, not some
    file it read, failed), and after one failure writes are dropped, so the flush at exit stays quiet."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: Any) -> int:
        if self._failed:
            return len(memoryview(data))
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:  # the reader left (`| head`): as Python says it
            self._failed = True
            raise
        except OSError as exc:
            self._failed = True
            raise OutputFailed(exc.errno, exc.strerror) from None


def open_standard_streams() -> None:
    """Before anything runs: a closed stdout becomes a stand-in that refuses writes in words, a closed
    stderr a sink (there is nowhere to say anything), and a closed fd 0, 1 or 2 gets /dev/null, so no
    file the command opens lands there (and reaches a job started from here as its output)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                spare = os.open(os.devnull, os.O_RDWR)
                if spare != fd:  # a lower one was closed too and took it: the loop fills that first
                    os.dup2(spare, fd)
                    os.close(spare)
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()
    elif os.name == "posix" and sys.stdout is sys.__stdout__ and isinstance(sys.stdout, io.TextIOWrapper):
        old = sys.stdout
        old.flush()
        sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(_Output(old.fileno())),
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=old.line_buffering,
        )
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the process's life)


def output_failure(exc: BaseException) -> str | None:
    """The line to print when ``exc`` came from writing the command's output, else None."""
    if isinstance(exc, OutputFailed):
        return f"cannot write the output: {exc.strerror or exc}"
    return None
