"""The four folders ``platformdirs`` resolved, remembered for the next command (issue 31 item 6).

``platformdirs`` stays the one source of where gputray's folders are; importing it costs every command
~5 ms (its Unix module imports ``tempfile``, ``shutil``, ``random``, ``bz2``, ``lzma``), more than the
socket exchange itself. So the first command that resolves them writes what it found to a small file,
and the next ones read it back instead, as long as nothing platformdirs reads has changed: the user,
``HOME`` and the ``XDG_*`` folders (the key, written on the file's first line).

The file is ``$XDG_RUNTIME_DIR/gputray-paths``: that folder is the user's own (0700, emptied at logout:
the XDG base directory spec), so no other user can plant answers there; the file is read only if the
folder and the file are this user's and no one else can write them. Without ``XDG_RUNTIME_DIR`` (a bare
ssh or CI shell, Windows, macOS) nothing is remembered: every command asks platformdirs.
"""

from __future__ import annotations

import os
import stat

FILE_NAME = "gputray-paths"
#: What platformdirs' Unix answers depend on, besides the user (``os.getuid``).
KEY_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")
_FOLDERS = 4  # config, data, state, runtime: ``paths.Paths``'s fields, in order
#: Raised when gputray asks platformdirs otherwise (another folder, another fallback): older answers are
#: then misses, never read as today's (the file lives until logout: the runtime folder is emptied then).
FORMAT = 1


def cache_file() -> str | None:
    """Where the folders are remembered, or None where they are not (no private runtime folder)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime or not os.path.isabs(runtime) or not hasattr(os, "getuid"):
        return None
    return os.path.join(runtime, FILE_NAME)


def key() -> str:
    """The inputs of platformdirs' answer, in one line (a change in any of them is a miss)."""
    values = [f"v{FORMAT}", str(os.getuid())] + [os.environ.get(name, "") for name in KEY_VARIABLES]
    return repr(values)


def _private(st: os.stat_result, folder: bool) -> bool:
    wanted = stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)
    return wanted and st.st_uid == os.getuid() and st.st_mode & 0o022 == 0


def recall() -> tuple[str, str, str, str] | None:
    """The folders remembered for today's inputs, or None (no file, another key, not this user's)."""
    path = cache_file()
    if path is None:
        return None
    try:
        if not _private(os.stat(os.path.dirname(path)), folder=True):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            if not _private(os.fstat(fd), folder=False):
                return None
            text = os.read(fd, 64 * 1024).decode("utf-8")
        finally:
            os.close(fd)
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.split("\n")
    if len(lines) != _FOLDERS + 2 or lines[0] != key() or lines[-1] != "":
        return None  # written for other inputs, or cut short
    config, data, state, runtime = lines[1:-1]
    return config, data, state, runtime


def remember(folders: tuple[str, str, str, str]) -> None:
    """Write ``folders`` for the next command; best effort (a read-only or full runtime folder, a
    name with a newline: then the next command asks platformdirs again)."""
    path = cache_file()
    if path is None or any("\n" in f or not f for f in folders):
        return
    text = "\n".join([key(), *folders, ""])
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        if not _private(os.stat(os.path.dirname(path)), folder=True):
            return
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError:
        try:  # noqa: SIM105 (not contextlib: every command reads this module, issue 31)
            os.unlink(temp)
        except OSError:
            pass
