"""gputray's own log, for the tray app and ``gputray daemon`` alike: a rotating file and stderr."""

from __future__ import annotations

import contextlib
import logging
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(log_file: Path | None, *, level: int | str = logging.INFO, stderr_level: int = 0) -> None:
    """Log ``gputray.*`` at ``level`` to ``log_file`` (2 MiB, 3 old ones kept: the tray runs for weeks)
    and, from ``stderr_level`` up, to stderr. A file that cannot be opened leaves stderr only."""
    root = logging.getLogger("gputray")
    root.setLevel(level)
    fmt = logging.Formatter(LOG_FORMAT)
    if not any(type(h) is logging.StreamHandler for h in root.handlers):
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(fmt)
        stream.setLevel(stderr_level)
        root.addHandler(stream)
    if log_file is not None:
        with contextlib.suppress(OSError):
            log_file.parent.mkdir(parents=True, exist_ok=True)
            rotating = RotatingFileHandler(
                log_file, maxBytes=2 << 20, backupCount=3, encoding="utf-8", errors="backslashreplace"
            )  # a task or file name that is not UTF-8 is logged, not a "Logging error"
            rotating.setFormatter(fmt)
            root.addHandler(rotating)
