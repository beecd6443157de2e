"""Every process a job starts is in reach (issue 22), with a real `gputray daemon --demo` and real
children that leave the job's tree: `setsid sleep … &` (a session of its own) and `(setsid sleep … &)`
(double-forked: its parent is gone at once). A normal exit, a cancel and a timeout end them all and
the task says how many were still running; the task is finished only once they are gone, so its GPU
slot is never handed on while they live. A job that kills its supervisor (`kill -9 $PPID`) is
reported as that, not as "could not start", and its work is stopped (the double-forked child too,
where the job had a cgroup of its own).

Before: the escaped children lived on under PID 1 after "succeeded" / "cancelled" / "timed out", and
the supervisor's death was recorded "could not start" while the job ran on."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from real_owner import paths_of, start_daemon, stop_daemon
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.jobs import reach
from gputray.scheduler.reasons.render import render

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("setsid") is None, reason="Linux, setsid"
)

PY = sys.executable
BASH = shutil.which("bash") or "/bin/bash"
DONE = ("succeeded", "failed", "cancelled")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[ipc.IpcClient]:
    home = tmp_path / "home"
    proc = start_daemon(home, tmp_path / "daemon.txt")
    try:
        with ipc.IpcClient(paths_of(home), timeout_s=30) as client:
            yield client
    finally:
        stop_daemon(proc)


class Marked:
    """`sleep` processes told apart from everyone else's by a duration no one else uses."""

    def __init__(self) -> None:
        self.escaped = f"1001.{secrets.randbelow(10**6)}"
        self.inside = f"1002.{secrets.randbelow(10**6)}"
        self._pids: set[int] = set()

    def alive(self) -> list[int]:
        found = []
        for p in psutil.process_iter(["cmdline", "status"]):
            cmd = p.info["cmdline"] or []
            if p.info["status"] != psutil.STATUS_ZOMBIE and any(
                a in (self.escaped, self.inside) for a in cmd
            ):
                found.append(p.pid)
        self._pids.update(found)
        return found

    def clean_up(self) -> None:
        for pid in self.alive():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def marked() -> Iterator[Marked]:
    m = Marked()
    yield m
    m.clean_up()


def task(client: ipc.IpcClient, task_id: int) -> Any:
    return next(t for t in client.ask(rq.Queue(all=True)).tasks if t.id == task_id)


def run(client: ipc.IpcClient, script: str, **overrides: object) -> int:
    req = client.ask(rq.Run(argv=[BASH, "-c", script], name="escapes", overrides={"retries": 0, **overrides}))
    return int(req.tasks[0].id)


def finished(client: ipc.IpcClient, task_id: int) -> Any:
    t = task(client, task_id)
    return t if t.state in DONE else None


def test_children_left_by_a_job_that_ended_are_stopped_and_counted(
    daemon: ipc.IpcClient, marked: Marked
) -> None:
    script = f"setsid sleep {marked.escaped} & (setsid sleep {marked.escaped} &); echo started"
    task_id = run(daemon, script)
    done = wait_for(lambda: finished(daemon, task_id), 60, "the job to end")
    assert marked.alive() == []  # gone before the task was said to be done: the slot was free after
    assert done.state == "succeeded"
    assert "2 processes were still running after the job ended: stopped" in render(done.reason)
    log = Path(done.log_path).read_text()
    assert "gputray: 2 processes were still running after the job ended: stopped" in log


def test_a_cancel_ends_children_in_other_sessions_too(daemon: ipc.IpcClient, marked: Marked) -> None:
    task_id = run(daemon, f"(setsid sleep {marked.escaped} &); sleep {marked.inside}")
    wait_for(lambda: len(marked.alive()) == 2, 60, "the job and its escaped child")
    daemon.ask(rq.Cancel(ids=[task_id]))
    done = wait_for(lambda: finished(daemon, task_id), 60, "the cancel")
    assert marked.alive() == []
    assert done.state == "cancelled"
    assert "1 process was still running after the job ended: stopped" in render(done.reason)


def test_a_timeout_ends_children_in_other_sessions_too(daemon: ipc.IpcClient, marked: Marked) -> None:
    task_id = run(daemon, f"(setsid sleep {marked.escaped} &); sleep {marked.inside}", timeout_s=2.0)
    done = wait_for(lambda: finished(daemon, task_id), 60, "the timeout")
    assert marked.alive() == []
    assert done.state == "failed" and "timed out" in render(done.reason)


def test_a_job_that_kills_its_supervisor_is_reported_so_and_stopped(
    daemon: ipc.IpcClient, marked: Marked
) -> None:
    script = f"(setsid sleep {marked.escaped} &); kill -9 $PPID; sleep {marked.inside}"
    task_id = run(daemon, script)
    done = wait_for(lambda: finished(daemon, task_id), 60, "the job to be stopped")
    assert "could not start" not in render(done.reason)
    assert "its supervisor process was killed" in render(done.reason)
    if reach.own_cgroup() is None:  # no cgroup of its own: what left the job's tree is out of reach
        wait_for(
            lambda: all(marked.inside not in " ".join(psutil.Process(p).cmdline()) for p in marked.alive())
        )
        pytest.skip("cgroup v2 is not writable here: only the job's own tree could be stopped")
    wait_for(lambda: marked.alive() == [], 10, "every process of the job to be stopped")
