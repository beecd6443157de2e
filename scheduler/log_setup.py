"""gputray's own log, for the tray app and ``gputray daemon`` alike: a rotating file and stderr.

The file is private (0600 in a 0700 folder: messages name tasks, files and folders). A log that cannot
be written (a full disk, a read-only folder) must not flood stderr with ``--- Logging error ---``
tracebacks: the first failure says so in one line on stderr, later messages are dropped quietly, and
every few seconds the next message tries again; once a write works, a line says how many were dropped.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import sys
import time
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import IO, Any

from gputray.scheduler.paths import make_private_dir, open_private_append

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_RETRY_S = 5.0  # how often a log that could not be written is tried again


class QuietStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr: a stream that cannot be written (a closed pipe, a full disk) drops the message silently;
    there is nowhere left to say so."""

    def handleError(self, record: logging.LogRecord) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handleError(record)


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A RotatingFileHandler whose files are created 0600 and that goes quiet while it cannot write."""

    def __init__(
        self,
        filename: Path,
        *,
        max_bytes: int,
        backup_count: int,
        clock: Any = time.monotonic,
        notice: IO[str] | None = None,
    ) -> None:
        self._clock = clock
        self._notice = notice
        self._off_since: float | None = None  # when writing failed; None while it works
        self._last_try = 0.0
        self._dropped = 0
        self._failed = False
        # a task or file name that is not UTF-8 is logged, not a "Logging error"
        super().__init__(
            filename,
            maxBytes=max_bytes,
            backupCount=backup_count,
            encoding="utf-8",
            errors="backslashreplace",
        )

    def _open(self) -> io.TextIOWrapper:
        return open(
            open_private_append(Path(self.baseFilename)), "a", encoding=self.encoding, errors=self.errors
        )

    @property
    def is_off(self) -> bool:
        """Whether writing the file failed and has not worked since."""
        return self._off_since is not None

    def emit(self, record: logging.LogRecord) -> None:
        if self._off_since is not None:
            now = self._clock()
            if now - self._last_try < LOG_RETRY_S:
                self._dropped += 1
                return
            self._last_try = now
            note = logging.LogRecord(
                "gputray.log", logging.WARNING, __file__, 0,
                "the log works again; %d message(s) could not be written meanwhile", (self._dropped,), None,
            )  # fmt: skip
            if not self._try_emit(note):
                self._dropped += 1
                return
            self._off_since = None
            self._dropped = 0
        self._try_emit(record)

    def _try_emit(self, record: logging.LogRecord) -> bool:
        self._failed = False
        super().emit(record)  # calls handleError on failure
        return not self._failed

    def handleError(self, record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            super().handleError(record)
            return
        self._failed = True
        self._drop_stream()
        if self._off_since is None:
            self._off_since = self._last_try = self._clock()
            self._dropped = 1
            until = "space returns" if exc.errno == errno.ENOSPC else "it can be written again"
            self._say(
                f"gputray: cannot write the log {self.baseFilename} ({exc.strerror or exc}): "
                f"logging to it is off until {until}"
            )

    def _drop_stream(self) -> None:
        """Close the file, discarding what its buffer holds (it would fail again on every write)."""
        stream, self.stream = self.stream, None
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()

    def _say(self, line: str) -> None:
        out = self._notice or sys.stderr
        with contextlib.suppress(Exception):
            out.write(line + "\n")
            out.flush()


def setup_logging(log_file: Path | None, *, level: int | str = logging.INFO, stderr_level: int = 0) -> None:
    """Log ``gputray.*`` at ``level`` to ``log_file`` (2 MiB, 3 old ones kept: the tray runs for weeks)
    and, from ``stderr_level`` up, to stderr. A file that cannot be opened leaves stderr only."""
    root = logging.getLogger("gputray")
    root.setLevel(level)
    fmt = logging.Formatter(LOG_FORMAT)
    if not any(
        isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler) for h in root.handlers
    ):
        stream = QuietStreamHandler(sys.stderr)
        stream.setFormatter(fmt)
        stream.setLevel(stderr_level)
        root.addHandler(stream)
    if log_file is not None:
        with contextlib.suppress(OSError):
            make_private_dir(log_file.parent)
            rotating = PrivateRotatingFileHandler(log_file, max_bytes=2 << 20, backup_count=3)
            rotating.setFormatter(fmt)
            root.addHandler(rotating)
