"""Where the owner's socket lives, and whether a client may trust what it finds there.

Other users on the machine must neither stop the owner from starting nor receive what the CLI sends
(a `gputray run` carries the submitter's argv and whole environment). So:

* The owner's socket goes in ``<runtime dir>/ipc/`` when that folder, and every folder above it, can
  be trusted (``check_dir_chain``: each one root's or ours; one that others may write must be sticky,
  like ``/tmp``) and the path fits ``AF_UNIX``. This covers platformdirs' ``/tmp/runtime-<uid>``
  fallback when ``XDG_RUNTIME_DIR`` is unset: a folder another user created there first is not ours,
  so it is not used.
* Otherwise (too long, or someone else's) the owner makes a fresh private folder with an
  unpredictable name (``mkdtemp`` in ``/tmp``: created 0700 by us, so nobody can have prepared it) and
  writes the socket's path into the **pointer file** ``owner.address`` in the data folder (under the
  user's home, 0600). It never gives up because of someone else's folder.
* A client reads the pointer (only if it is ours and private), else takes the usual path, and before
  it sends a byte checks that the socket's folder and the socket are its uid's with private modes
  (0700 / 0600, ``check_private_socket``), then the server's peer credentials (``SO_PEERCRED``; in
  ``ipc``). A fake server another user planted anywhere gets nothing.

Windows uses the pointer the same way for the pipe's name (see ``ipc``: the pipe is protected by a key
only the user can read, checked in both directions).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from gputray.scheduler.paths import Paths

SOCKET_NAME = "owner.sock"
POINTER_NAME = "owner.address"
OWNER_LOCK_NAME = "owner.lock"
UNIX_PATH_MAX = 104  # sun_path is 108 on Linux, 104 on the BSDs/macOS; keep a margin
_SHORT_TMP = "/tmp"


class UntrustedLocation(Exception):
    """A folder or socket that is not ours alone; the message says which and why."""


def uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def check_dir_chain(path: Path) -> None:
    """Raise UntrustedLocation unless ``path`` (resolved) and every folder above it belong to root or
    to us, and any of them that other users may write has the sticky bit (they cannot rename or
    replace what is ours inside it). Symlinks along the way are followed, then their targets checked."""
    if sys.platform == "win32":
        return
    real = Path(os.path.realpath(path))
    for folder in (real, *real.parents):
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue  # not there yet: we create it (0700) below a checked parent
        if not stat.S_ISDIR(st.st_mode):
            raise UntrustedLocation(f"{folder} is not a folder")
        if st.st_uid not in (0, uid()):  # root's or ours
            raise UntrustedLocation(f"{folder} belongs to another user (uid {st.st_uid})")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise UntrustedLocation(
                f"{folder} can be changed by other users (mode {stat.S_IMODE(st.st_mode):o})"
            )


def _check_ours(path: Path, is_kind: Callable[[int], bool], not_kind: str) -> None:
    """``path`` itself (not a symlink) is of the kind ``is_kind`` says, ours, and closed to others."""
    st = os.lstat(path)  # FileNotFoundError: nothing there (no owner), not someone else's
    if not is_kind(st.st_mode):
        raise UntrustedLocation(f"{path} is not {not_kind}")
    if st.st_uid != uid():
        raise UntrustedLocation(f"{path} belongs to another user (uid {st.st_uid})")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise UntrustedLocation(f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})")


def check_private_dir(path: Path) -> None:
    """``path`` is a real folder (not a symlink), ours, 0700, below a trusted chain."""
    if sys.platform == "win32":
        return
    _check_ours(path, stat.S_ISDIR, "a folder (a symlink?)")
    check_dir_chain(path.parent)


def check_private_socket(path: Path) -> None:
    """What a client checks before it connects: the folder as ``check_private_dir``, the socket a
    socket (not a symlink), ours, nobody else may use it."""
    check_private_dir(path.parent)
    if sys.platform != "win32":
        _check_ours(path, stat.S_ISSOCK, "a socket")


def make_private_dir(path: Path) -> None:
    """Create ``path`` and any missing folder above it 0700, then check it as ``check_private_dir``
    (a folder of ours that is too open is tightened first). UntrustedLocation otherwise."""
    check_dir_chain(path.parent)
    missing = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    if sys.platform != "win32":
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid() and stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(path, 0o700)
    check_private_dir(path)


def preferred_socket_dir(paths: Paths) -> Path:
    return paths.runtime_dir / "ipc"


def pointer_path(paths: Paths) -> Path:
    return paths.data_dir / POINTER_NAME


def owner_lock_path(paths: Paths) -> Path:
    """The lock that keeps a second owner out: in the data folder, where it does not move with the socket."""
    return paths.data_dir / OWNER_LOCK_NAME


def fits_af_unix(socket_file: Path) -> bool:
    return len(os.fsencode(socket_file)) <= UNIX_PATH_MAX


def server_socket_dir(paths: Paths) -> tuple[Path, str | None]:
    """The folder the owner's socket goes in, made private; and why the usual one was not used (None
    when it was). Never fails because of another user's folder: a fresh private one is made instead."""
    preferred = preferred_socket_dir(paths)
    why: str | None = None
    if not fits_af_unix(preferred / SOCKET_NAME):
        why = f"{preferred} is too long for a Unix socket"
    else:
        try:
            make_private_dir(preferred)
            return preferred, None
        except (UntrustedLocation, OSError) as exc:
            why = str(exc)
    import tempfile  # the owner's fallback only: a client never makes a folder

    folder = Path(
        tempfile.mkdtemp(prefix=f"gputray-{uid()}-", dir=_SHORT_TMP if os.path.isdir(_SHORT_TMP) else None)
    )
    try:
        check_private_dir(folder)  # mkdtemp made it 0700 with a name nobody could guess
    except BaseException:
        with contextlib.suppress(OSError):
            folder.rmdir()
        raise
    return folder, why


def write_pointer(paths: Paths, address: str) -> None:
    """Where clients find the owner: written 0600, atomically, into the data folder."""
    from gputray.scheduler.jobs.supervisor import write_atomic

    paths.data_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(pointer_path(paths), {"address": address, "pid": os.getpid()})


def remove_pointer(paths: Paths, address: str) -> None:
    """Remove the pointer if it still names ``address`` (a newer owner may have replaced it)."""
    if read_pointer(paths) == address:
        with contextlib.suppress(OSError):
            pointer_path(paths).unlink()


def read_pointer(paths: Paths) -> str | None:
    """The address in the pointer file, if the file is ours and nobody else can write it."""
    path = pointer_path(paths)
    try:
        if sys.platform != "win32":
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid() or st.st_mode & 0o022:
                return None
            check_dir_chain(path.parent)
        with open(path, "rb") as f:
            doc = msgspec.json.decode(f.read(4096))
    except (OSError, ValueError, msgspec.DecodeError, UntrustedLocation):
        return None
    address = doc.get("address") if isinstance(doc, dict) else None
    return address if isinstance(address, str) and address else None


def client_socket_path(paths: Paths) -> Path:
    """The socket a client tries: the pointer's, else the usual one (checked before connecting)."""
    pointed = read_pointer(paths)
    if pointed:
        return Path(pointed)
    return preferred_socket_dir(paths) / SOCKET_NAME
