"""Other users of the machine: everything the queue writes is private (folders 0700, files 0600) from
the start, folders an older gputray left open are tightened with a note, and a second Unix user can
read neither the queue, nor the logs, nor the config or the doctor's cache of a queue holding a secret.

The CLI and the daemon run as a user would start them, from a shell with the common umask 022; the
jobs they start keep that umask (their output is the user's business, not gputray's).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import paths_of, start_daemon, stop_daemon
from unix_user import second_unix_user
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file modes and Unix users are POSIX")

PY = sys.executable
SECRET = "hunter2-token-5f1c"


def _as_user_shell() -> None:
    os.umask(0o022)  # what a login shell usually has


def run_cli(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "gputray.gui.entry", *args],
        env={**os.environ, "GPUTRAY_HOME": str(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_as_user_shell,
        check=False,
    )


def populate(home: Path, python: Path, job_output: Path) -> None:
    """A queue as a user leaves it: an env with a secret variable in the config, the doctor's cache,
    a task submitted from a shell holding the secret that printed it to its log, the daemon's log."""
    added = run_cli(home, "envs", "add", str(python), "--name", "plain", "--env", f"SECRET_TOKEN={SECRET}")
    assert added.returncode == 0, added.stderr
    doctor = run_cli(home, "doctor", "--no-bench")
    assert (paths_of(home).cache_dir / "doctor.json").exists(), doctor.stderr
    paths = paths_of(home)
    daemon = start_daemon(home, home.parent / "daemon-stderr.txt", preexec=_as_user_shell)
    try:
        job = f"import os; print(os.environ['SECRET_TOKEN']); open({str(job_output)!r}, 'w').write('x')"
        ran = run_cli(home, "run", "--", PY, "-c", job, env={"SECRET_TOKEN": SECRET})
        assert ran.returncode == 0, ran.stderr
        wait_for(lambda: _finished(paths), 60, "the job to finish")
    finally:
        stop_daemon(daemon)
    assert SECRET in (paths.logs_dir / "task-1.log").read_text()


def _finished(paths: Paths) -> bool:
    tasks = ipc.ask(paths, rq.Queue(all=True)).tasks
    return bool(tasks) and all(t.state == "succeeded" for t in tasks)


def open_to_others(home: Path) -> list[str]:
    """Folders and files under gputray's folders in ``home`` (not ``home`` itself: the user's choice)."""
    found = []
    for folder, _dirs, files in (w for sub in sorted(home.iterdir()) if sub.is_dir() for w in os.walk(sub)):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            mode = os.lstat(name).st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                found.append(f"{oct(stat.S_IMODE(mode))} {name}")
    return found


def test_everything_a_queue_writes_is_private_from_the_start(tmp_path: Path, notorch_python: Path) -> None:
    home = tmp_path / "home"
    job_output = tmp_path / "job-output.txt"
    populate(home, notorch_python, job_output)
    assert open_to_others(home) == []
    paths = paths_of(home)
    for private in (paths.queue_db, paths.logs_dir / "task-1.log", paths.state_dir / "daemon.log"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    # The job's own files keep the umask of the shell that queued it.
    assert stat.S_IMODE(job_output.stat().st_mode) == 0o644


def test_folders_and_files_an_older_gputray_left_open_are_tightened_with_a_note(tmp_path: Path) -> None:
    home = tmp_path / "home"
    paths = paths_of(home)
    old = [
        paths.queue_db,
        paths.logs_dir / "task-1.log",
        paths.cache_dir / "doctor.json",
        paths.config_file,
        paths.state_dir / "daemon.log",
    ]
    for f in old:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"")
    paths.queue_db.unlink()  # an empty file would be a damaged queue: let the store create it, then open it
    from gputray.scheduler.queue.store import TaskStore

    TaskStore(paths.queue_db).close()
    for folder, _dirs, files in os.walk(home):
        os.chmod(folder, 0o755)
        for f in files:
            os.chmod(os.path.join(folder, f), 0o644)

    stop_daemon(start_daemon(home, tmp_path / "stderr.txt", preexec=_as_user_shell))
    assert open_to_others(home) == []
    log = (paths.state_dir / "daemon.log").read_text()
    assert f"under {paths.data_dir} private (they were open to other users of this machine)" in log
    assert f"under {paths.config_dir} private" in log


# --------------------------------------------------------------------------------------------------
# a second Unix user

PROBE = textwrap.dedent(
    """
    import json, os, sys
    secret = sys.argv[1]
    out = {}
    for path in sys.argv[2:]:
        try:
            if os.path.isdir(path):
                os.listdir(path)
                out[path] = "listed"
            else:
                with open(path, "rb") as f:
                    out[path] = "read, with the secret" if secret.encode() in f.read() else "read"
        except PermissionError:
            out[path] = "denied"
        except OSError as exc:
            out[path] = f"error: {exc}"
    print(json.dumps(out))
    """
)


@pytest.fixture
def other_user() -> Iterator[str]:
    with second_unix_user("gputray-t") as name:
        yield name


def as_user(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, timeout=120)


@pytest.fixture
def shared_parent() -> Iterator[Path]:
    """A folder other users may enter, as a home folder usually is (pytest's tmp_path is 0700)."""
    parent = Path(tempfile.mkdtemp(prefix="gputray-2nd-user-"))
    os.chmod(parent, 0o755)
    try:
        yield parent
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_a_second_user_reads_nothing_of_a_queue_that_holds_a_secret(
    other_user: str, shared_parent: Path, notorch_python: Path
) -> None:
    home = shared_parent / "home"
    populate(home, notorch_python, shared_parent / "job-output.txt")
    paths = paths_of(home)
    public = shared_parent / "public.txt"
    public.write_text(f"anyone may read this, {SECRET}")
    public.chmod(0o644)
    targets = [
        paths.queue_db,
        paths.logs_dir / "task-1.log",
        paths.state_dir / "daemon.log",
        paths.config_file,
        paths.cache_dir / "doctor.json",
        paths.data_dir,
        paths.logs_dir,
        paths.state_dir,
        paths.config_dir,
    ]
    python = shutil.which("python3", path="/usr/bin:/bin") or PY
    probe = as_user(other_user, python, "-c", PROBE, SECRET, str(public), *map(str, targets))
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    assert seen.pop(str(public)) == "read, with the secret"  # the probe can find the secret where it may
    assert seen == {str(t): "denied" for t in targets}
    assert pwd.getpwnam(other_user).pw_uid != os.geteuid()


def test_the_offline_queue_shows_a_second_user_nothing(
    other_user: str, shared_parent: Path, notorch_python: Path
) -> None:
    """`gputray queue` with no owner reads the queue file: as another user it cannot."""
    reach = as_user(other_user, PY, "-c", "import gputray.scheduler.queue.store")
    if reach.returncode != 0:
        pytest.skip(f"this checkout's Python is not reachable by another user: {reach.stderr.strip()[-200:]}")
    home = shared_parent / "home"
    populate(home, notorch_python, shared_parent / "job-output.txt")
    shown = subprocess.run(
        ["runuser", "-u", other_user, "--", "env", f"GPUTRAY_HOME={home}", PY, "-m", "gputray.gui.entry",
         "queue", "--all", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert SECRET not in shown.stdout + shown.stderr
    assert shown.returncode != 0 and "Traceback" not in shown.stderr, shown.stderr
    assert "ermission denied" in shown.stderr
