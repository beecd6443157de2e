"""With no owner running, `cancel`, `retry`, `pause` and `resume` act on the saved queue (the real CLI in a
subprocess, a real queue file), under the lock the owner holds while it owns the queue."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import task_steps as steps
from cli import gputray
from real_owner import paths_of

from gputray.scheduler import ipc
from gputray.scheduler.owner import Owner
from gputray.scheduler.queue.lock import QueueLock
from gputray.scheduler.queue.pause_file import read_paused
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import Paused
from gputray.scheduler.tasks.records import TaskSpec

PY = sys.executable


def saved(home: Path, *specs: TaskSpec) -> list[int]:
    store = TaskStore(paths_of(home).queue_db)
    try:
        return [store.add(s).id for s in specs]
    finally:
        store.close()


def state_of(home: Path, task_id: int) -> tuple[str, str]:
    store = TaskStore(paths_of(home).queue_db)
    try:
        rec = store.get(task_id)
        return rec.state, render(rec.reason)
    finally:
        store.close()


def job(name: str) -> TaskSpec:
    return TaskSpec(kind="command", name=name, argv=(PY, "-c", "pass"))


def test_cancel_and_retry_act_on_the_saved_queue(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a, b = saved(home, job("a"), job("b"))
    out = gputray("cancel", str(a), "--json", home=home)
    assert out.returncode == 0, out.stderr
    assert "no gputray owner is running: acted on the saved queue" in out.stderr
    assert [t["state"] for t in json.loads(out.stdout)["tasks"]] == ["cancelled"]
    assert state_of(home, a) == ("cancelled", "cancelled") and state_of(home, b)[0] == "queued"

    out = gputray("retry", str(a), home=home)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"#{a} a: queued"
    assert state_of(home, a) == ("queued", "queued again by request")

    refused = gputray("retry", str(b), home=home)  # the owner's rules apply: b is not finished
    assert refused.returncode == 1 and f"task #{b} is queued; retry is for finished tasks" in refused.stderr
    missing = gputray("cancel", "99", home=home)
    assert missing.returncode == 1 and "no task #99 in the queue" in missing.stderr


def test_a_pause_file_written_by_an_earlier_gputray_keeps_working(tmp_path: Path) -> None:
    """paused.json as gputray wrote it before the Paused type (``json.dumps``, spaces and all): the
    owner starts paused, `pause --json` shows it, `resume` edits it; a garbled one pauses nothing."""
    home = tmp_path / "home"
    data = paths_of(home).data_dir
    data.mkdir(parents=True)
    (data / "paused.json").write_text('{"queue": true, "devices": ["cpu", "pci:0000:64:00.0"]}')
    out = gputray("pause", "--json", "cpu", home=home)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"queue": True, "cpu": True, "pci:0000:64:00.0": True}
    out = gputray("resume", "cpu", home=home)
    assert out.returncode == 0 and out.stdout == "paused: the whole queue, pci:0000:64:00.0\n"
    assert json.loads((data / "paused.json").read_text()) == {"queue": True, "devices": ["pci:0000:64:00.0"]}
    owner = Owner(paths_of(home), demo=True)
    owner.start()
    try:
        assert owner.queue.paused() == Paused(all=True, devices=frozenset({"pci:0000:64:00.0"}))
    finally:
        owner.stop()
    (data / "paused.json").write_text('{"queue": tru')
    assert read_paused(data) == Paused()


def test_pause_and_resume_write_the_saved_pause_state(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = paths_of(home).data_dir
    out = gputray("pause", home=home)
    assert out.returncode == 0, out.stderr
    assert "paused: the whole queue" in out.stdout
    out = gputray("pause", "cpu", home=home)
    assert out.returncode == 0 and read_paused(data) == Paused(all=True, devices=frozenset({"cpu"}))
    out = gputray("resume", "cpu", home=home)
    assert out.returncode == 0 and read_paused(data) == Paused(all=True)
    out = gputray("resume", home=home)
    assert out.returncode == 0 and "nothing is paused" in out.stdout and read_paused(data) == Paused()
    saved(home, job("a"))
    owner = Owner(paths_of(home), demo=True)  # the next owner starts with what was saved
    gputray("pause", home=home)
    owner.start()
    try:
        assert owner.queue.paused().all is True
    finally:
        owner.stop()


def test_an_owner_that_holds_the_queue_but_does_not_answer_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (a,) = saved(home, job("a"))
    lock = QueueLock(paths_of(home).queue_db)
    assert lock.acquire()
    try:
        out = gputray("cancel", str(a), home=home)
    finally:
        lock.release()
    assert out.returncode == 3, out.stderr
    assert "held by another gputray process" in out.stderr and "try again" in out.stderr
    assert state_of(home, a)[0] == "queued"  # nothing was written behind its back


def test_the_owner_holds_the_queue_lock_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    owner = Owner(paths_of(home), demo=True)
    owner.start()
    try:
        assert not QueueLock(paths_of(home).queue_db).acquire()
    finally:
        owner.stop()
    after = QueueLock(paths_of(home).queue_db)
    assert after.acquire()  # given back when it stops
    after.release()
    import gputray.scheduler.owner as owner_module

    monkeypatch.setattr(owner_module, "QUEUE_LOCK_WAIT_S", 0.2)
    lock = QueueLock(paths_of(home).queue_db)
    assert lock.acquire()
    try:
        second = Owner(paths_of(home), demo=True)
        with pytest.raises(ipc.OwnerAlreadyRunning, match="holds the queue"):
            second.start()
    finally:
        lock.release()


def test_remove_acts_on_the_saved_queue_and_keeps_what_others_wait_for(tmp_path: Path) -> None:
    home = tmp_path / "home"
    a, b = saved(home, job("a"), job("b"))
    c = saved(home, TaskSpec(kind="command", name="c", argv=(PY, "-c", "pass"), after=(b,)))[0]
    log = paths_of(home).logs_dir / f"task-{a}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("a's output\n")
    store = TaskStore(paths_of(home).queue_db)
    try:
        steps.fail_run(store, a, "exited with status 1", log_path=str(log))
    finally:
        store.close()

    out = gputray("remove", str(a), str(b), home=home)
    assert out.returncode == 1, out.stderr  # b stays: c waits for it
    assert "no gputray owner is running: acted on the saved queue" in out.stderr
    assert f"removed #{a} a (failed)" in out.stdout
    assert f"task #{b} stays: #{c} wait(s) for it" in out.stderr
    assert not log.exists()  # its log went with it
    store = TaskStore(paths_of(home).queue_db)
    try:
        assert sorted(r.id for r in store.list()) == [b, c]
    finally:
        store.close()
    both = gputray("remove", str(b), str(c), "--json", home=home)
    assert both.returncode == 0, both.stderr
    assert sorted(t["id"] for t in json.loads(both.stdout)) == [b, c]


def test_retry_without_an_owner_brings_back_what_the_task_failed_too(tmp_path: Path) -> None:
    """As the owner's retry does: the tasks that failed because this one failed (``after``, down the
    chain) are queued again with it; a task that failed by itself stays failed."""
    home = tmp_path / "home"
    (a,) = saved(home, job("a"))
    (b,) = saved(home, TaskSpec(kind="command", name="b", argv=(PY,), after=(a,)))
    (c,) = saved(home, TaskSpec(kind="command", name="c", argv=(PY,), after=(b,)))
    (lone,) = saved(home, job("lone"))
    store = TaskStore(paths_of(home).queue_db)
    try:
        steps.fail_run(store, a, "exited with status 1", exit_code=1)
        for task, parent in ((b, a), (c, b)):
            steps.fail(store, task, f"dependency #{parent} 'x' failed: exited with status 1")
        steps.fail_run(store, lone, "exited with status 2", exit_code=2)
    finally:
        store.close()
    out = gputray("retry", str(a), home=home)
    assert out.returncode == 0, out.stderr
    assert state_of(home, a) == ("queued", "queued again by request")
    assert state_of(home, b) == ("queued", f"queued again: #{a} was queued again")
    assert state_of(home, c) == ("queued", f"queued again: #{a} was queued again")  # as the owner says
    assert state_of(home, lone) == ("failed", "exited with status 2")


def test_retry_help_says_what_retry_does() -> None:
    """Each thing `retry` does (QueueService.retry, lifecycle.Requeue) is in its --help."""
    import re

    out = gputray("retry", "--help", home=Path("/nonexistent-home"))
    text = " ".join(out.stdout.split())
    for said in (
        "failed, cancelled, interrupted or succeeded",
        "same ID",
        "end of the queue",
        "device and Python env are chosen afresh",
        "attempt",
        "log keeps",
        "automatic retries",
        "--after",
        "without a running owner",
    ):
        assert re.search(re.escape(said), text, re.IGNORECASE), f"{said!r} not in: {text}"
