"""Reading a job's log without trusting what is at its path.

The job runs as the user, in a folder it can write, so its log may be replaced while gputray reads it:
by a FIFO (an ``open`` for reading waits for a writer for ever: one owner thread per ``logs`` request,
and a stop that waits for them), by a symbolic link to ``/dev/zero`` (a file that never ends) or to
any file of the user's. A log is opened without following a link (``O_NOFOLLOW``) and without waiting
(``O_NONBLOCK``) and read only when it is a regular file; a read of a regular file never blocks.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from gputray.scheduler.protocol import Refusal


class LogNotReadable(Refusal):
    """The log's path holds something that is not a regular file, or cannot be read; says which."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def open_log(path: str | Path) -> BinaryIO:
    """The log at ``path`` open for reading (binary). FileNotFoundError when there is none yet;
    LogNotReadable, saying what is there, when it is a link, a FIFO, a device … or cannot be read."""
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LogNotReadable(f"the log {path} is a symbolic link: not followed") from None
        raise LogNotReadable(f"cannot read the log {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise LogNotReadable(f"cannot read the log {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise LogNotReadable(f"the log {path} is {_kind(mode)}, not a regular file: not read")
    return os.fdopen(fd, "rb")


def read_log(path: str | Path, offset: int, max_bytes: int) -> tuple[bytes, int]:
    """At most ``max_bytes`` of the log from ``offset``, and the log's size when it was opened; no log
    yet reads as empty. Raises LogNotReadable (see ``open_log``)."""
    try:
        f = open_log(path)
    except FileNotFoundError:
        return b"", 0
    with f:
        size = os.fstat(f.fileno()).st_size
        if offset >= size:
            return b"", size
        f.seek(offset)
        try:
            return f.read(min(max_bytes, size - offset)), size
        except OSError as exc:
            raise LogNotReadable(f"cannot read the log {path}: {exc.strerror or exc}") from None


def decode_utf8_prefix(data: bytes, *, final: bool = False) -> tuple[str, int]:
    """Decode as the offline reader does (an incremental decoder, U+FFFD for bytes that are not UTF-8),
    leaving a UTF-8 sequence cut at the end of the chunk for the next read, unless ``final``: no next
    read will come, and the cut sequence is U+FFFD. Returns the text and how many bytes it used."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data, final=final)
    held, _flag = decoder.getstate()
    return text, len(data) - len(held)
