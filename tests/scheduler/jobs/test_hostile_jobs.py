"""Jobs that attack their own supervision, against a real `gputray daemon --demo` with real signals
(#32 items 2, 5 and 7).

* A job that stops its supervisor (`kill -STOP $PPID`) or a stopped supervisor host never freezes the
  queue: other jobs start, `cancel` answers, and the job is recorded truthfully (its supervisor is
  continued and says how it ended).
* A supervisor host that is stopped or killed while a job starts: the job runs once all the same.
* Without a writable cgroup (``GPUTRAY_NO_CGROUPS``, as for an ordinary user's owner from a terminal),
  what a job leaves when it kills its supervisor is still found and stopped: escaped children in
  sessions of their own, one with its environment cleared (found through the supervisor host, a
  child subreaper, which adopted it).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import psutil
import pytest
from small_disk import PY, Daemon
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import TaskPatch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals, Linux subreapers")

FINISHED = ("succeeded", "failed", "cancelled")


def _task(daemon: Daemon, task_id: int) -> TaskView:
    return daemon.ask(rq.Get(id=task_id)).task


def _ended(daemon: Daemon, task_id: int) -> TaskView | None:
    task = _task(daemon, task_id)
    return task if task.state in FINISHED else None


def _run(daemon: Daemon, argv: list[str], name: str, device: str | None = None) -> int:
    patch = TaskPatch(device_prefs=(device,)) if device else None
    return int(daemon.ask(rq.Run(argv=argv, name=name, overrides=patch)).tasks[0].id)


def _host_pid(daemon: Daemon) -> int | None:
    assert daemon.proc is not None
    for child in psutil.Process(daemon.proc.pid).children():
        if "--host" in child.cmdline():
            return child.pid
    return None


def _without_cgroups() -> tuple[str, ...]:
    """A prefix that runs the daemon where the cgroup v2 hierarchy is read-only (a mount namespace of its
    own), so that it decides itself that no job gets a cgroup, as an ordinary user's owner does."""
    mount = next(
        (
            line.split(" - ")[0].split()[4]
            for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if line.partition(" - ")[2].startswith("cgroup2 ")
        ),
        None,
    )
    if mount is None or os.geteuid() != 0 or shutil.which("unshare") is None:
        return ()
    script = f'mount -o remount,bind,ro {mount} && exec "$@"'
    return ("unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh")


def _alive_with(word: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and word in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


def test_a_job_that_stops_its_supervisor_freezes_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    daemon = Daemon(tmp_path / "home", tmp_path / "daemon.txt").start()
    try:
        stopper = _run(
            daemon, ["sh", "-c", f"echo stopper >> {ledger}; kill -STOP $PPID; sleep 1000"], "stopper"
        )
        wait_for(lambda: ledger.exists(), 30, "the stopper to run")
        after = _run(daemon, [PY, "-c", f"open({str(ledger)!r}, 'a').write('after\\n')"], "after it", "cpu")
        done = wait_for(lambda: _ended(daemon, after), 30, "the next job to run and end")
        assert done.state == "succeeded", done.reason
        cancelled = daemon.ask(rq.Cancel(ids=[stopper])).tasks[0]  # answered (the cancel waits ~10 s at most)
        assert cancelled.id == stopper
        ended = wait_for(lambda: _ended(daemon, stopper), 30, "the stopper to be recorded")
        assert ended.state == "cancelled", ended.reason
        assert ledger.read_text().splitlines() == ["stopper", "after"]
    finally:
        daemon.kill()


def test_a_job_whose_supervisor_is_stopped_for_good_is_given_up_when_its_processes_are_gone(
    tmp_path: Path,
) -> None:
    """It stops its supervisor again each time it is continued: after a few rounds the owner gives up,
    kills it and the job's processes, and only then records the end (unknown) and frees the place."""
    marker = f"sleep 1{os.getpid() % 1000:03d}7"
    loop = f"while :; do kill -STOP $PPID; sleep 0.2; done & exec {marker}"
    daemon = Daemon(tmp_path / "home", tmp_path / "daemon.txt").start()
    try:
        task_id = _run(daemon, ["sh", "-c", loop], "stopper")
        ended = wait_for(lambda: _ended(daemon, task_id), 60, "the owner to give up on its supervisor")
        assert ended.state == "failed", ended.reason
        assert "its supervisor was stopped (SIGSTOP) again and again" in render(ended.reason), ended.reason
        assert not _alive_with(marker)  # its place is free only once its processes are gone
    finally:
        daemon.kill()


def test_a_stopped_then_killed_supervisor_host_does_not_stop_jobs(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    job = [PY, "-c", f"open({str(ledger)!r}, 'a').write('ran\\n')"]
    daemon = Daemon(tmp_path / "home", tmp_path / "daemon.txt").start()
    try:
        first = _run(daemon, job, "starts the host")
        assert wait_for(lambda: _ended(daemon, first), 30, "the first job").state == "succeeded"
        host = _host_pid(daemon)
        assert host is not None
        os.kill(host, signal.SIGSTOP)
        second = _run(daemon, job, "while the host is stopped")
        done = wait_for(lambda: _ended(daemon, second), 30, "the job to run all the same")
        assert done.state == "succeeded", done.reason
        assert daemon.ask(rq.Ping()).ready  # and the owner answers
        third = _run(daemon, job, "with a new host")
        assert wait_for(lambda: _ended(daemon, third), 30, "the third job").state == "succeeded"
        os.kill(wait_for(lambda: _host_pid(daemon), 30, "a host again"), signal.SIGKILL)
        fourth = _run(daemon, job, "after the host was killed")
        done = wait_for(lambda: _ended(daemon, fourth), 30, "the job to run all the same")
        assert done.state == "succeeded", done.reason
        assert ledger.read_text() == "ran\n" * 4  # each once
    finally:
        daemon.kill()


def test_without_cgroups_what_a_job_leaves_when_it_kills_its_supervisor_is_stopped(tmp_path: Path) -> None:
    tag = f"{os.getpid() % 1000:03d}"
    kept, cleared = f"sleep 2{tag}1", f"sleep 2{tag}2"  # one keeps the job's environment, one clears it
    script = f"(setsid {kept} &) ; (setsid env -i {cleared} &) ; sleep 0.5; kill -9 $PPID; exec sleep 2{tag}3"
    daemon = Daemon(tmp_path / "home", tmp_path / "daemon.txt", *_without_cgroups())
    daemon.env["GPUTRAY_NO_CGROUPS"] = "1"  # and where the prefix cannot be had, the setting
    daemon.start()
    try:
        task_id = _run(daemon, ["sh", "-c", script], "escapes")
        ended = wait_for(lambda: _ended(daemon, task_id), 60, "the task to end")
        assert ended.state == "failed", ended.reason
        assert "its supervisor process was killed" in render(ended.reason), ended.reason
        assert not _alive_with(f"sleep 2{tag}"), "a process the job left runs on"
    finally:
        daemon.kill()
        for pid in _alive_with(f"sleep 2{tag}"):
            os.kill(pid, signal.SIGKILL)
