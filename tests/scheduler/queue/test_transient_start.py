"""A start that fails only for want of a resource now is not the task's failure (issue 22): a real
`gputray daemon --demo` out of file descriptors (`prlimit --nofile`) or out of processes and threads
(a real pids cgroup limit, which binds root too, as RLIMIT_NPROC binds a user) puts the task back to
waiting with the reason, tries again with a back-off, and runs it exactly once when the resource is
back. Before: `failed: could not start: [Errno 24] Too many open files`, and at the process limit a
job started whose watcher thread could not: it ran unwatched while its task said failed."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from real_owner import paths_of, start_daemon, stop_daemon
from unix_user import second_unix_user
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.render import render

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux resource limits")

PY = sys.executable
NOFILE = 64
DONE = ("succeeded", "failed", "cancelled")


def appends_a_line(out: Path) -> list[str]:
    return [PY, "-c", f"open({str(out)!r}, 'a').write('ran\\n')"]


def held_back(client: ipc.IpcClient, task_id: int) -> bool:
    task = next(t for t in client.ask(rq.Queue(all=True)).tasks if t.id == task_id)
    assert task.state not in ("failed", "cancelled", "succeeded"), f"{task.state}: {render(task.reason)}"
    return task.state == "waiting" and "could not start for now" in (render(task.reason) or "")


def finished(client: ipc.IpcClient, task_id: int) -> object:
    task = next(t for t in client.ask(rq.Queue(all=True)).tasks if t.id == task_id)
    return task if task.state in ("failed", "cancelled", "succeeded") else None


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit")
def test_out_of_file_descriptors_a_task_waits_and_then_runs_once(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "ran.txt"
    proc = start_daemon(home, tmp_path / "daemon.txt", "prlimit", f"--nofile={NOFILE}:{NOFILE}", "--")
    paths = paths_of(home)
    hogs: list[ipc.IpcClient] = []
    try:
        with ipc.IpcClient(paths, timeout_s=20) as control:
            control.ask(rq.Pause(device=None))
            task_id = control.ask(rq.Run(argv=appends_a_line(out), name="once")).tasks[0].id
            for _ in range(NOFILE * 2):  # connections hold the owner's fds until it has none left
                hog = ipc.IpcClient(paths, timeout_s=20)
                try:
                    hog.ask(rq.Ping())
                except ipc.RemoteError:
                    hog.close()
                    break
                hogs.append(hog)
            control.ask(rq.Resume(device=None))
            wait_for(lambda: held_back(control, task_id), 30, "the task to wait for file descriptors")
            reason = render(next(t for t in control.ask(rq.Queue(all=True)).tasks if t.id == task_id).reason)
            assert "Too many open files" in reason
            for hog in hogs:
                hog.close()
            hogs.clear()
            task = wait_for(lambda: finished(control, task_id), 60, "the task to run")
            assert task.state == "succeeded", render(task.reason)
            assert task.attempts == 1
        assert out.read_text() == "ran\n"
    finally:
        for hog in hogs:
            hog.close()
        stop_daemon(proc)


def _pids_hierarchy() -> Path | None:
    """A cgroup v1 ``pids`` hierarchy we may make a group in (the root may: this test needs it)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            _dev, mount, fstype, options, *_ = line.split()
            if fstype == "cgroup" and "pids" in options.split(","):
                return Path(mount)
    return None


@pytest.fixture
def pids_group() -> Iterator[Path]:
    root = _pids_hierarchy()
    if root is None or not os.access(root, os.W_OK):
        pytest.skip("no writable cgroup v1 pids hierarchy here")
    group = root / f"gputray-test-{os.getpid()}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a pids cgroup: {exc}")
    try:
        yield group
    finally:
        with contextlib.suppress(OSError):
            (group / "pids.max").write_text("max")
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (root / "cgroup.procs").write_text(pid)
        with contextlib.suppress(OSError):
            group.rmdir()


@pytest.mark.parametrize(
    "headroom",
    [0, 1, 2, 4],
    ids=["no-thread", "no-supervisor", "no-job-process", "no-room-after-the-log"],
)
def test_out_of_processes_a_task_waits_and_then_runs_once(
    tmp_path: Path, pids_group: Path, headroom: int
) -> None:
    """headroom = processes and threads the owner may still start: none (the watcher thread fails),
    one (its supervisor cannot start), two (the job's own process cannot; before, the watcher then
    failed after the job had started), four (the host forked the supervisor, which started its log
    thread, then the job cannot start: before, the job started first, the thread failed and the
    supervisor exited in silence, "its supervisor process was killed", the task failed)."""
    home, out = tmp_path / "home", tmp_path / "ran.txt"
    proc = start_daemon(home, tmp_path / "daemon.txt")
    paths = paths_of(home)
    try:
        (pids_group / "cgroup.procs").write_text(str(proc.pid))
        with ipc.IpcClient(paths, timeout_s=20) as control:
            control.ask(rq.Pause(device=None))
            task_id = control.ask(rq.Run(argv=appends_a_line(out), name="once")).tasks[0].id
            current = int((pids_group / "pids.current").read_text())
            (pids_group / "pids.max").write_text(str(current + headroom))
            control.ask(rq.Resume(device=None))
            wait_for(lambda: held_back(control, task_id), 30, "the task to wait for processes")
            (pids_group / "pids.max").write_text("max")
            task = wait_for(lambda: finished(control, task_id), 60, "the task to run")
            assert task.state == "succeeded", render(task.reason)
            assert task.attempts == 1
        assert out.read_text() == "ran\n"
    finally:
        with contextlib.suppress(OSError):
            (pids_group / "pids.max").write_text("max")
        stop_daemon(proc)


def _as_user(user: str, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    pairs = [f"{k}={v}" for k, v in (env or {}).items()]
    return subprocess.run(
        ["runuser", "-u", user, "--", "env", *pairs, *argv], capture_output=True, text=True, timeout=120
    )


def _user_tasks(uid: int) -> int:
    """Processes and threads of ``uid`` (what RLIMIT_NPROC counts)."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
    return count


def _kill_processes_of(uid: int) -> None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid == uid:
                os.kill(int(pid), signal.SIGKILL)


@pytest.fixture
def nproc_user() -> Iterator[str]:
    """A second Unix user (RLIMIT_NPROC binds only users other than root), removed afterwards."""
    with second_unix_user("gputray-n", "prlimit") as name:
        try:
            reach = _as_user(name, PY, "-c", "import gputray.scheduler.queue.store")
            if reach.returncode != 0:
                pytest.skip(
                    f"this checkout's Python is not reachable by another user: {reach.stderr.strip()[-200:]}"
                )
            yield name
        finally:
            with contextlib.suppress(KeyError):
                uid = pwd.getpwnam(name).pw_uid
                _kill_processes_of(uid)  # the test's own: the user is new
                wait_for(lambda: _user_tasks(uid) == 0, 30, "the user's processes to end")


def _end_fillers(fillers: list[subprocess.Popen[bytes]]) -> None:
    """Each filler's `sleep` (the user's process, runuser's child) and then its runuser."""
    for filler in fillers:
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(filler.pid).children():
                child.kill()
        filler.kill()
        filler.wait()
    fillers.clear()


NPROC = 100  # the daemon's RLIMIT_NPROC: its own threads and processes, then fillers up to it


def test_a_user_at_rlimit_nproc_gets_a_waiting_task_then_a_run(nproc_user: str) -> None:
    """The daemon runs as the user under `prlimit --nproc`; the user's own processes fill the rest of
    the limit (the kernel counts all of a user's processes and threads against it), so the owner can
    start neither a thread nor a process; killing them frees it."""
    import json
    import tempfile

    uid = pwd.getpwnam(nproc_user).pw_uid
    parent = Path(tempfile.mkdtemp(prefix="gputray-nproc-"))
    os.chmod(parent, 0o755)
    home, out = parent / "home", parent / "ran.txt"
    home.mkdir()
    os.chown(home, uid, -1)
    os.chown(parent, uid, -1)
    env = {"GPUTRAY_HOME": str(home), "HOME": str(home)}
    argv = [PY, "-m", "gputray.gui.entry"]
    pairs = [f"{k}={v}" for k, v in env.items()]
    daemon = subprocess.Popen(
        ["runuser", "-u", nproc_user, "--", "prlimit", f"--nproc={NPROC}:{NPROC}", "--",
         "env", *pairs, *argv, "daemon", "--demo"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    fillers: list[subprocess.Popen[bytes]] = []

    def cli(*args: str) -> object:
        done = _as_user(nproc_user, *argv, *args, env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if "--json" in args else done.stdout

    def state() -> dict[str, object]:
        listing = cli("queue", "--all", "--json")
        assert isinstance(listing, dict)
        return dict(listing["tasks"][0])

    try:
        wait_for(lambda: ipc.socket_path(paths_of(home)).exists(), 60, "the daemon's socket")
        cli("pause")
        cli("run", "--", *appends_a_line(out))
        while (before := _user_tasks(uid)) < NPROC:  # the user's own processes, up to the limit
            fillers.append(subprocess.Popen(["runuser", "-u", nproc_user, "--", "sleep", "1000"]))
            wait_for(lambda n=before: _user_tasks(uid) > n or fillers[-1].poll() is not None, 10, "a filler")
        cli("resume")  # a client of its own: started by runuser, which the limit does not bind
        wait_for(lambda: "could not start for now" in str(state().get("reason")), 30, "the task to wait")
        assert state()["state"] == "waiting"
        _end_fillers(fillers)
        wait_for(lambda: state()["state"] in DONE, 60, "the task to run")
        assert state()["state"] == "succeeded", state()
        assert out.read_text() == "ran\n"
    finally:
        _end_fillers(fillers)
        stop_daemon(daemon)
        shutil.rmtree(parent, ignore_errors=True)
