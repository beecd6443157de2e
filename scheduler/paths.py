"""Where gputray keeps its files. ``GPUTRAY_HOME`` moves all of them under one folder."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import warnings
from pathlib import Path

import msgspec

from gputray.scheduler import paths_cache

APP_NAME = "gputray"


class Paths(msgspec.Struct, frozen=True):
    """The four folders. A Struct (not a dataclass): every command builds one, and a dataclass costs
    every command the import of ``dataclasses`` and ``inspect``."""

    config_dir: Path
    data_dir: Path
    state_dir: Path
    runtime_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def queue_db(self) -> Path:
        return self.data_dir / "queue.sqlite3"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"


def app_paths() -> Paths:
    home = os.environ.get("GPUTRAY_HOME")
    if home:
        root = Path(home).expanduser().resolve()
        return Paths(root / "config", root / "data", root / "state", root / "run")
    known = paths_cache.recall()  # what platformdirs answered an earlier command, for the same inputs
    folders = known if known is not None else _ask_platformdirs()
    if known is None:
        paths_cache.remember(folders)
    return Paths(*(Path(f) for f in folders))


def _ask_platformdirs() -> tuple[str, str, str, str]:
    import platformdirs  # ~5 ms: only where no earlier command left its answer (``paths_cache``)

    with warnings.catch_warnings():
        # Without XDG_RUNTIME_DIR (a bare ssh or CI shell) platformdirs warns on every call and falls back
        # to /tmp/runtime-<uid>; the IPC layer makes its own folder there private, so the fallback is fine.
        warnings.simplefilter("ignore")
        try:
            runtime = platformdirs.user_runtime_dir(APP_NAME, appauthor=False)
        except OSError:  # its /tmp/runtime-<uid> exists but is another user's: not ours to use
            runtime = str(Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "run")
    return (
        platformdirs.user_config_dir(APP_NAME, appauthor=False),
        platformdirs.user_data_dir(APP_NAME, appauthor=False),
        platformdirs.user_state_dir(APP_NAME, appauthor=False),
        runtime,
    )


# --------------------------------------------------------------------------------------------------
# Private files: task rows, logs and the doctor's cache hold the submitter's environment (tokens, keys)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_OPEN_TO_OTHERS = 0o077
_user_umask: int | None = None  # the umask gputray found, for the jobs it starts


class FolderError(OSError):
    """A folder gputray needs cannot be made; the message names it and says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def use_private_umask() -> None:
    """From here on, what this process creates is private (umask 077). Called by gputray's entry points
    (tray, daemon, CLI); :func:`job_umask` keeps the user's own for the jobs the queue starts."""
    global _user_umask
    if os.name != "posix":
        return
    previous = os.umask(_OPEN_TO_OTHERS)
    if _user_umask is None:
        _user_umask = previous


def job_umask() -> int:
    """The umask a job starts with (``subprocess.Popen(umask=…)``): the user's, -1 to inherit ours."""
    return -1 if _user_umask is None else _user_umask


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) 0700; an existing folder is left as it is."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)


def create_private_file(path: Path) -> None:
    """Create an empty 0600 file unless one exists (SQLite then gives its -wal and -shm the same mode)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))


def open_private_append(path: Path) -> int:
    """A file descriptor appending to ``path``, created 0600 if missing (job logs, gputray's own log).

    Never through a symbolic link and never waiting for a FIFO's reader (a job may have put either in
    place of its log): anything but a regular file raises OSError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, PRIVATE_FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symbolic link is there, not followed", str(path)) from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads: refused at once, not waited on
            raise OSError(errno.EINVAL, "a FIFO is there, not a regular file", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


def prepare_private_folders(paths: Paths) -> list[str]:
    """Create the data, logs and state folders 0700; make existing gputray folders and the files in them
    private (group and other bits off). Returns notes for the log on what was changed.

    Raises FolderError when a folder cannot be created. Symbolic links are never followed.
    """
    for folder, what in ((paths.data_dir, "data"), (paths.logs_dir, "logs"), (paths.state_dir, "state")):
        try:
            make_private_dir(folder)
        except OSError as exc:
            raise FolderError(f"cannot create the {what} folder {folder}: {exc.strerror or exc}") from None
    if os.name != "posix":
        return []  # Windows: the profile's folders are the user's own by their ACL
    notes: list[str] = []
    for root in dict.fromkeys((paths.data_dir, paths.state_dir, paths.config_dir)):
        changed, failed = _tighten_tree(root)
        if changed:
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            notes.append(
                f"made {len(changed)} file(s) and folder(s) under {root} private (they were open to other "
                f"users of this machine): {shown}"
            )
        notes += [f"could not make {name} private: {why}" for name, why in failed[:5]]
    return notes


def _tighten_tree(root: Path) -> tuple[list[str], list[tuple[str, str]]]:
    changed: list[str] = []
    failed: list[tuple[str, str]] = []
    if not root.is_dir() or root.is_symlink():
        return changed, failed
    for folder, _dirs, files in os.walk(root, followlinks=False):  # each folder comes once as `folder`
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            try:
                st = os.lstat(name)
                if stat.S_ISLNK(st.st_mode) or not st.st_mode & _OPEN_TO_OTHERS:
                    continue
                os.chmod(name, stat.S_IMODE(st.st_mode) & ~_OPEN_TO_OTHERS)
                changed.append(name)
            except OSError as exc:
                failed.append((name, exc.strerror or str(exc)))
    return changed, failed


def unwritable_reason(folder: Path, path: Path) -> str | None:
    """Why the owner cannot write its queue here (a read-only file system, no permission), or None."""
    if os.access(folder, os.W_OK) and (not path.exists() or os.access(path, os.W_OK)):
        return None
    where = f"the data folder {folder}" if not os.access(folder, os.W_OK) else f"the queue database {path}"
    read_only = False
    if hasattr(os, "statvfs"):
        with contextlib.suppress(OSError):
            read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    why = "is on a read-only file system" if read_only else "is not writable by this user"
    return (
        f"{where} {why}: gputray keeps its queue there and cannot run it without writing; make it "
        "writable, or set GPUTRAY_HOME to a writable folder (`gputray queue` still shows the saved tasks)"
    )
