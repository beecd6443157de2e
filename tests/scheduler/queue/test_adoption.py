"""A queue that starts after another one closed keeping its jobs, or crashed, adopts their jobs: those
still running are watched as running, those that ended meanwhile get their real exit recorded, and
nothing that completed runs again. Real job processes and a real SQLite file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import task_steps as steps
from test_queue_service import Harness, command
from waiting import wait_for

from gputray.scheduler.jobs.job_files import JobFiles
from gputray.scheduler.reasons.render import render

PY = sys.executable
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


@pytest.fixture
def harnesses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Harness]]:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    made: list[Harness] = []

    def make(**kw: Any) -> Harness:
        h = Harness(tmp_path, (), **kw)
        made.append(h)
        return h

    yield make
    for h in reversed(made):
        h.close()


def waits_for(go: Path, marks: Path, code: int) -> str:
    return (
        "import os, sys, time\n"
        f"open({str(marks)!r}, 'a').write('start\\n')\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        f"sys.exit({code})\n"
    )


def test_jobs_kept_running_are_recorded_by_the_next_queue_and_not_run_again(
    harnesses: Callable[..., Harness], tmp_path: Path
) -> None:
    go = tmp_path / "go"
    h1 = harnesses()
    q1 = h1.start()
    ok = q1.submit(command("ok", waits_for(go, tmp_path / "ok", 0), device_prefs=("5060ti",), retries=2))
    bad = q1.submit(command("bad", waits_for(go, tmp_path / "bad", 3), device_prefs=("780m",)))
    h1.until(lambda: all(q1.get(t.id).pid is not None for t in (ok, bad)))
    files = [JobFiles.beside(Path(str(q1.get(t.id).log_path))) for t in (ok, bad)]
    q1.close(kill_running=False)  # Quit → keep running
    go.touch()
    wait_for(lambda: all(f.exit.exists() for f in files), what="both supervisors to write the exits")
    assert [h1.store.get(t.id).state for t in (ok, bad)] == ["running", "running"]  # nobody recorded it
    h1.store.close()

    h2 = harnesses()
    q2 = h2.start()
    h2.until(lambda: q2.get(ok.id).finished and q2.get(bad.id).finished)
    done_ok, done_bad = q2.get(ok.id), q2.get(bad.id)
    assert (done_ok.state, done_ok.exit_code, done_ok.attempts) == ("succeeded", 0, 1)
    assert (done_bad.state, done_bad.exit_code) == ("failed", 3)
    assert render(done_bad.reason) == "exited with status 3"
    assert (tmp_path / "ok").read_text() == "start\n"  # completed once, never run again
    assert not any(f.exit.exists() or f.run.exists() for f in files)  # recorded: the files are gone
    kinds = [(e.kind, e.task.id) for e in h2.events]
    assert ("finished", ok.id) in kinds and ("failed", bad.id) in kinds


def test_a_job_still_running_is_watched_by_the_next_queue(
    harnesses: Callable[..., Harness], tmp_path: Path
) -> None:
    go = tmp_path / "go"
    h1 = harnesses()
    q1 = h1.start()
    rec = q1.submit(command("long", waits_for(go, tmp_path / "marks", 0), device_prefs=("cpu",), retries=2))
    h1.until(lambda: q1.get(rec.id).pid is not None)
    pid = q1.get(rec.id).pid
    q1.close(kill_running=False)
    h1.store.close()

    h2 = harnesses()
    q2 = h2.start()
    assert q2.get(rec.id).state == "running" and q2.get(rec.id).pid == pid  # adopted, not interrupted
    assert q2.running_ids() == [rec.id]
    go.touch()
    h2.until(h2.state(rec.id, "succeeded"))
    assert q2.get(rec.id).attempts == 1 and (tmp_path / "marks").read_text() == "start\n"


def test_an_adopted_job_can_be_cancelled(harnesses: Callable[..., Harness], tmp_path: Path) -> None:
    h1 = harnesses()
    q1 = h1.start()
    rec = q1.submit(command("long", "import time; time.sleep(120)", device_prefs=("cpu",), retries=2))
    h1.until(lambda: q1.get(rec.id).pid is not None)
    pid = q1.get(rec.id).pid
    assert pid is not None
    q1.close(kill_running=False)
    h1.store.close()
    q2 = harnesses().start()
    stopped = q2.cancel(rec.id)
    assert (stopped.state, render(stopped.reason)) == ("cancelled", "cancelled while running")
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)


@pytest.mark.parametrize("stored", ["queued", "starting"])
def test_a_job_started_just_before_a_crash_is_adopted_not_started_twice(
    harnesses: Callable[..., Harness], tmp_path: Path, stored: str
) -> None:
    """The owner died after the job's process existed and before the store said so (the row still
    ``queued``, as an older owner left it, or ``starting``: the launch was committed, ``running`` not yet
    written): the run file counts one attempt more than the store, and the next queue takes the job as
    its own."""
    go = tmp_path / "go"
    h1 = harnesses()
    q1 = h1.start()
    rec = q1.submit(command("early", waits_for(go, tmp_path / "marks", 0), device_prefs=("cpu",)))
    h1.until(lambda: q1.get(rec.id).pid is not None)
    pid = q1.get(rec.id).pid
    q1.close(kill_running=False)
    h1.store.close()
    with sqlite3.connect(h1.store.path) as raw:  # as the file was before the start was written
        unstarted = "state = ?, attempts = 0, pid = NULL, pid_create_time = NULL, started_at = NULL"
        raw.execute(f"UPDATE tasks SET {unstarted} WHERE id = ?", (stored, rec.id))

    h2 = harnesses()
    q2 = h2.start()
    adopted = q2.get(rec.id)
    assert (adopted.state, adopted.attempts, adopted.pid) == ("running", 1, pid)
    go.touch()
    h2.until(h2.state(rec.id, "succeeded"))
    assert (tmp_path / "marks").read_text() == "start\n"


def test_a_process_already_dead_is_not_said_to_be_stopped(
    harnesses: Callable[..., Harness], tmp_path: Path
) -> None:
    """A task left running whose process is a zombie by now (its parent never reaped it): the recovery
    says it was interrupted, not that it stopped a leftover process."""
    h1 = harnesses()
    rec = h1.store.add(command("gone"))
    dead = subprocess.Popen([PY, "-c", "pass"])  # never waited for: a zombie once it exits
    wait_for(lambda: psutil.Process(dead.pid).status() == psutil.STATUS_ZOMBIE, what="a zombie")
    steps.start(h1.store, rec.id, pid=dead.pid, pid_create_time=psutil.Process(dead.pid).create_time())
    q = h1.start()
    after = q.get(rec.id)
    assert after.state == "failed" and "interrupted" in render(after.reason)
    assert "leftover process was stopped" not in render(after.reason), render(after.reason)
    dead.wait()
