"""Jobs outlive their owner (`gputray daemon` in a subprocess, real jobs): after a kill -9, after
`daemon --stop --keep-jobs`. A job that ends while no owner is up gets its real exit code recorded by
the next owner, and a job that completed never runs again."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from test_daemon_e2e import Daemon
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.render import render

PY = sys.executable
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="the e2e daemon tests use POSIX signals"),
]


def waits_for(go: Path, marks: Path, code: int) -> list[str]:
    """A job that notes each start, waits for ``go``, notes its end and exits with ``code``."""
    script = (
        "import os, sys, time\n"
        f"open({str(marks)!r}, 'a').write('start\\n')\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        f"open({str(marks)!r}, 'a').write('exit\\n')\n"
        f"sys.exit({code})\n"
    )
    return [PY, "-c", script]


def start_three(d: Daemon, home: Path) -> tuple[Path, dict[str, int]]:
    go = home / "go"
    ids = {
        "ok": d.run_job(
            waits_for(go, home / "ok", 0), device_prefs=["5060ti"], retries=2, backoff_s=0, name="ok"
        ),
        "three": d.run_job(waits_for(go, home / "three", 3), device_prefs=["780m"], name="three"),
        "again": d.run_job(
            waits_for(go, home / "again", 0), device_prefs=["cpu"], retries=2, backoff_s=0, name="again"
        ),
    }
    wait_for(lambda: all(isinstance(d.ask(rq.Get(id=i)).pid, int) for i in ids.values()), what="three pids")
    wait_for(lambda: all((home / n).exists() for n in ids), what="the three jobs to start")
    return go, ids


def test_jobs_that_end_while_no_owner_is_up_get_their_real_exit(
    daemons: Callable[..., Daemon], home: Path
) -> None:
    d = daemons()
    go, ids = start_three(d, home)
    pids = {n: d.ask(rq.Get(id=i)).pid for n, i in ids.items()}
    d.kill9()
    assert all(psutil.pid_exists(p) for p in pids.values())  # the jobs outlive the owner
    go.touch()  # they end now, with nobody to tell
    wait_for(lambda: all((home / n).read_text() == "start\nexit\n" for n in ids), what="all three to end")

    d2 = daemons()
    ok = d2.wait_state(ids["ok"], {"succeeded"}, 40)
    assert (ok.exit_code, ok.attempts) == (0, 1), ok
    three = d2.wait_state(ids["three"], {"failed"})
    assert (three.exit_code, render(three.reason)) == (3, "exited with status 3"), three
    again = d2.wait_state(ids["again"], {"succeeded"})
    assert again.attempts == 1
    for name in ids:  # completed once: none ran again, none was called interrupted
        assert (home / name).read_text() == "start\nexit\n", name
        assert "interrupted" not in render(d2.task(ids[name]).reason)


def test_jobs_still_running_after_a_kill_9_are_adopted(daemons: Callable[..., Daemon], home: Path) -> None:
    d = daemons()
    go, ids = start_three(d, home)
    pid = d.ask(rq.Get(id=ids["ok"])).pid
    d.kill9()
    d2 = daemons()
    got = d2.ask(rq.Get(id=ids["ok"]))
    assert (got.task.state, got.pid) == ("running", pid)  # watched again, not interrupted
    cancelled = d2.cli("cancel", str(ids["again"]))
    assert cancelled.returncode == 0, cancelled.stderr
    assert d2.task(ids["again"]).state == "cancelled"
    go.touch()
    ok = d2.wait_state(ids["ok"], {"succeeded"})
    assert (ok.exit_code, ok.attempts) == (0, 1)
    assert d2.wait_state(ids["three"], {"failed"}).exit_code == 3
    assert (home / "ok").read_text() == "start\nexit\n"


def test_stop_keeping_jobs_then_the_next_owner_records_exit_0(
    daemons: Callable[..., Daemon], home: Path
) -> None:
    d = daemons()
    go = home / "go"
    task = d.run_job(
        waits_for(go, home / "kept", 0), device_prefs=["cpu"], retries=2, backoff_s=0, name="kept"
    )
    wait_for(lambda: (home / "kept").exists(), what="the job to start")
    out = d.cli("daemon", "--stop", "--keep-jobs")
    assert out.returncode == 0, out.stderr
    assert "1 running job keeps running; the next owner records how it ends" in out.stdout
    assert d.proc is not None and d.proc.wait(30) == 0
    go.touch()
    wait_for(lambda: (home / "kept").read_text() == "start\nexit\n", what="the kept job to end")
    d2 = daemons()
    rec = d2.wait_state(task, {"succeeded"})
    assert (rec.exit_code, rec.attempts) == (0, 1)
    assert (home / "kept").read_text() == "start\nexit\n"  # not run again


def test_stop_stopping_jobs_says_so(daemons: Callable[..., Daemon], home: Path) -> None:
    d = daemons()
    task = d.run_job(waits_for(home / "never", home / "marks", 0), device_prefs=["cpu"], name="stopped")
    wait_for(lambda: (home / "marks").exists(), what="the job to start")
    pid = d.ask(rq.Get(id=task)).pid
    out = d.cli("daemon", "--stop")  # the default: the jobs stop with it
    assert out.returncode == 0, out.stderr
    assert "1 running job is stopped too" in out.stdout
    assert d.proc is not None and d.proc.wait(30) == 0
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    d2 = daemons()
    assert "interrupted: gputray stopped while it ran" in render(d2.wait_state(task, {"failed"}).reason)


def test_keep_jobs_needs_stop(home: Path) -> None:
    from cli import gputray

    out = gputray("daemon", "--keep-jobs", home=home)
    assert out.returncode == 2 and "--keep-jobs and --stop-jobs go with --stop" in out.stderr
    helped = gputray("daemon", "--help", home=home)
    assert "--keep-jobs" in helped.stdout and "(the default)" in helped.stdout


def test_with_no_owner_up_a_kept_job_can_be_cancelled(daemons: Callable[..., Daemon], home: Path) -> None:
    d = daemons()
    task = d.run_job(waits_for(home / "never", home / "marks", 0), device_prefs=["cpu"], retries=2, name="x")
    wait_for(lambda: (home / "marks").exists(), what="the job to start")
    pid = d.ask(rq.Get(id=task)).pid
    d.kill9()
    out = d.cli("cancel", str(task))
    assert out.returncode == 0, out.stderr
    assert "acted on the saved queue" in out.stderr and f"#{task} x: cancelled" in out.stdout
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    d2 = daemons()
    rec = d2.task(task)
    assert (rec.state, render(rec.reason)) == ("cancelled", "cancelled while running (no owner was up)")
    assert (home / "marks").read_text() == "start\n"  # not started again
