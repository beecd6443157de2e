"""The ``starting`` state on disk (issue 31 item 1): the owner writes it when it commits to launching a
task, before the job's process exists, and its successor judges a row left ``starting`` by a crash:
adopted if the job began (its run file), else queued again, after stopping anything carrying the
task's marks: never lost, never run twice (the adopted case is in test_adoption.py, beside the same
crash with the row still ``queued``). Real queues, real supervisors, real jobs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from real_owner import home_paths, running_owner
from test_queue_service import Harness, command
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.jobs.orphans import QUEUE_FILE_VAR
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks import lifecycle as life

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


def marks_once(marks: Path) -> str:
    return f"open({str(marks)!r}, 'a').write('start\\n')\n"


def states_of(db: Path, task_id: int) -> list[tuple[str, str]]:
    """Every state change the file saw for the task (an SQLite trigger records them)."""
    with sqlite3.connect(db) as raw:
        return [tuple(r) for r in raw.execute("SELECT old, new FROM history WHERE id = ?", (task_id,))]


HISTORY = """
CREATE TABLE IF NOT EXISTS history (id INTEGER, old TEXT, new TEXT);
CREATE TRIGGER IF NOT EXISTS history_of_states AFTER UPDATE OF state ON tasks
BEGIN INSERT INTO history VALUES (new.id, old.state, new.state); END;
"""


def test_a_start_is_written_starting_before_running(
    harnesses: Callable[..., Harness], tmp_path: Path
) -> None:
    h = harnesses()
    with sqlite3.connect(h.store.path) as raw:
        raw.executescript(HISTORY)
    q = h.start()
    rec = q.submit(command("once", marks_once(tmp_path / "marks"), device_prefs=("cpu",)))
    h.until(h.state(rec.id, "succeeded"))
    moves = states_of(h.store.path, rec.id)
    assert ("starting", "running") in moves and moves.index(("starting", "running")) > 0
    assert moves[moves.index(("starting", "running")) - 1][1] == "starting"


def test_a_task_left_starting_with_no_job_is_queued_again_and_runs_once(
    harnesses: Callable[..., Harness], tmp_path: Path
) -> None:
    """The owner stopped after it wrote ``starting`` and before it launched anything."""
    h1 = harnesses()
    rec = h1.store.add(command("cut short", marks_once(tmp_path / "marks"), device_prefs=("cpu",)))
    h1.store.must_apply(rec.id, life.Starting(device="cpu"))
    assert h1.store.get(rec.id).state == "starting"
    h1.store.close()

    h2 = harnesses()
    q2 = h2.start()
    h2.until(h2.state(rec.id, "succeeded"))
    done = q2.get(rec.id)
    assert done.attempts == 1  # no attempt was counted for the start that never began
    assert (tmp_path / "marks").read_text() == "start\n"  # run once
    said = [render(e.task.reason) for e in h2.events if e.task.id == rec.id and e.kind == "queued"]
    assert said == ["queued again: gputray stopped as it was starting the job, before the job began"]


def test_a_process_carrying_the_marks_of_a_task_left_starting_is_stopped_first(
    harnesses: Callable[..., Harness], tmp_path: Path
) -> None:
    """A process the crashed owner's launch left (its marks, no run file) is stopped before the task
    is queued again: the task does not run twice at once."""
    h1 = harnesses()
    rec = h1.store.add(command("marked", marks_once(tmp_path / "marks"), device_prefs=("cpu",)))
    h1.store.must_apply(rec.id, life.Starting(device="cpu"))
    h1.store.close()
    env = {**os.environ, "GPUTRAY_TASK_ID": str(rec.id), QUEUE_FILE_VAR: str(h1.store.path)}
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)
    try:
        wait_for(lambda: psutil.Process(leftover.pid).environ().get("GPUTRAY_TASK_ID") == str(rec.id))
        h2 = harnesses()
        q2 = h2.start()
        leftover.wait(timeout=30)  # stopped by the recovery (reaped there: its status is not ours to read)
        h2.until(h2.state(rec.id, "succeeded"))
        said = [render(e.task.reason) for e in h2.events if e.task.id == rec.id and e.kind == "queued"]
        assert said == [
            "queued again: gputray stopped as it was starting the job, before the job began "
            "(a leftover process was stopped)"
        ]
        assert q2.get(rec.id).attempts == 1 and (tmp_path / "marks").read_text() == "start\n"
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()


def test_a_task_starting_can_be_cancelled_and_is_not_retried_by_hand(
    harnesses: Callable[..., Harness],
) -> None:
    h = harnesses()
    rec = h.store.add(command("launching", "pass", device_prefs=("cpu",)))
    h.store.must_apply(rec.id, life.Starting(device="cpu"))
    with pytest.raises(life.IllegalTransition):  # `retry` is for ended tasks
        h.store.apply(rec.id, life.Requeue(reason=c.RequeuedByRequest(), now=1.0, position=1.0))
    cancelled = h.store.must_apply(rec.id, life.Cancel(reason=c.Cancelled(), ended_at=2.0))
    assert cancelled.state == "cancelled"
    # the launch that was under way records its start against ``starting``: refused, its job stopped
    start = life.Start(device="cpu", env=None, reason=None, attempts=1, started_at=2.0, log_path="", pid=1)
    assert h.store.apply(rec.id, start, expect_state="starting") is None


def test_queue_and_its_json_show_a_task_starting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a person sees it while the owner launches the job (held there by hand: the real moment lasts
    milliseconds), in the listing and in ``--json``."""
    paths = home_paths(tmp_path, monkeypatch)
    with running_owner(paths) as owner:
        owner.handle(rq.Pause())  # nothing else starts it meanwhile
        task = owner.handle(rq.Run(argv=["true"], name="launching")).tasks[0]
        owner.queue.store.must_apply(task.id, life.Starting(device="cpu"))

        def cli(*args: str) -> str:
            done = subprocess.run(
                [sys.executable, "-m", "gputray.gui.entry", *args],
                capture_output=True,
                text=True,
                env={**os.environ, "GPUTRAY_HOME": str(tmp_path / "home")},
                timeout=120,
                check=True,
            )
            return done.stdout

        listed = json.loads(cli("queue", "--json"))
        row = next(line for line in cli("queue").splitlines() if "launching" in line)
    assert [t["state"] for t in listed["tasks"] if t["id"] == task.id] == ["starting"]
    assert row.split()[1] == "starting"
