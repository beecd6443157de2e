"""The task lifecycle (``tasks/lifecycle.py``): the table covers every state, every step moves only
along it, an illegal step raises and writes nothing, and random sequences of operations through a
real store on a real SQLite file leave only histories the table allows (read back from the file by a
trigger, not from the store's memory)."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.codes import Said
from gputray.scheduler.tasks import cluster_steps as remote
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

END = life.JobEnd(exit_code=1, ended_at=5.0)
START = life.Start(device="cpu", env=None, reason=None, attempts=1, started_at=2.0, log_path="", pid=None)

#: One of every step, built for the row it is applied to.
STEPS: dict[str, Callable[[TaskRecord], life.Step]] = {
    "wait": lambda r: life.Wait(reason=Said(text="busy"), overtakes=r.overtakes + 1),
    "starting": lambda r: life.Starting(device="cpu"),
    "not_launched": lambda r: life.NotLaunched(reason=Said(text="queued again: cut short"), now=6.0),
    "start": lambda r: life.Start(
        device="cpu", env=None, reason=None, attempts=r.attempts + 1, started_at=2.0, log_path="", pid=4242
    ),
    "could_not_start": lambda r: life.CouldNotStart(
        start=START, reason=Said(text="could not start: x"), ended_at=3.0
    ),
    "adopt": lambda r: life.Adopt(
        device="cpu", attempts=r.attempts + 1, started_at=2.0, log_path="", pid=4243, pid_create_time=1.0
    ),
    "launched": lambda r: life.Launched(pid=4244, pid_create_time=1.0),
    "clock_set": lambda r: life.ClockSet(jump_s=3600.0),
    "pause_job": lambda r: life.PauseJob(paused_at=3.0, reason=Said(text="paused by you")),
    "resume_job": lambda r: life.ResumeJob(paused_s=1.0, reason=Said(text="resumed")),
    "fail": lambda r: life.Fail(reason=Said(text="dependency failed"), ended_at=3.0),
    "cancel": lambda r: life.Cancel(reason=Said(text="cancelled"), ended_at=3.0),
    "cancel_running": lambda r: life.Cancel(
        reason=Said(text="cancelled while running"), ended_at=3.0, end=END
    ),
    "succeed": lambda r: life.Succeed(end=life.JobEnd(exit_code=0, ended_at=4.0)),
    "retry_or_fail": lambda r: life.RetryOrFail(why=Said(text="exited with status 1"), now=4.0, end=END),
    "run_elsewhere": lambda r: life.RunElsewhere(
        reason=Said(text="out of memory on A; running on B"), now=4.0, end=END
    ),
    "interrupt": lambda r: life.Interrupt(reason=Said(text="interrupted"), ended_at=4.0),
    "requeue": lambda r: life.Requeue(reason=Said(text="queued again by request"), now=6.0, position=9.0),
    "note": lambda r: life.Note(reason=Said(text="a note")),
    "place_here": lambda r: remote.PlaceHere(machine="desk"),
    "hand_over": lambda r: remote.HandOver(
        machine="laptop",
        device="laptop/cpu",
        reason=Said(text="sending"),
        into="waiting",
        attempts=r.attempts + 1,
    ),
    "hand_on": lambda r: remote.HandOver(
        machine="nas", device="nas/cpu", reason=Said(text="sending"), into="queued", again=True
    ),
    "handed": lambda r: remote.Handed(
        remote_id=7, remote_state="queued", log_path="", reason=Said(text="on laptop")
    ),
    "take_back": lambda r: remote.TakeBack(
        machine=None, reason=Said(text="taken back"), attempts=max(0, r.attempts - 1)
    ),
    "hand_over_failed": lambda r: remote.HandOverFailed(reason=Said(text="refused there"), ended_at=3.0),
    "remote_running": lambda r: remote.RemoteRun(
        into="running", remote_state="running", reason=Said(text="on"), started_at=2.0
    ),
    "remote_waiting": lambda r: remote.RemoteRun(
        into="waiting", remote_state="queued", reason=Said(text="there")
    ),
    "remote_succeeded": lambda r: remote.RemoteRun(
        into="succeeded", remote_state="fetched", reason=Said(text="done"), exit_code=0, ended_at=5.0
    ),
    "remote_failed": lambda r: remote.RemoteRun(
        into="failed", remote_state="fetched", reason=Said(text="x"), exit_code=2
    ),
    "remote_mark": lambda r: remote.RemoteMark(remote_state="lost"),
    "lost_there": lambda r: remote.LostThere(why=Said(text="laptop left the cluster"), now=6.0),
}


def spec(retries: int = 0) -> TaskSpec:
    return TaskSpec(kind="command", name="job", argv=("true",), retries=retries, backoff_s=0.0)


def row(state: str, *, retries: int = 0, attempts: int = 1) -> TaskRecord:
    return TaskRecord(id=1, spec=spec(retries), state=state, submitted_at=1.0, attempts=attempts)  # type: ignore[arg-type]


def test_every_state_has_a_row_and_every_step_moves_along_the_table() -> None:
    assert set(life.EDGES) == set(life.STATES)
    assert all(targets <= set(life.STATES) for targets in life.EDGES.values())
    steps = {type(make(row("queued"))) for make in STEPS.values()}
    assert steps == set(_subclasses(life.Step)), "a step the tests do not drive"
    for make in STEPS.values():
        for source in type(make(row("queued"))).SOURCES:
            for retries in (0, 3):  # the retry policy's two ends
                rec = row(source, retries=retries)
                assert life.check(rec, make(rec)) in life.EDGES[source]


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def test_an_illegal_step_raises_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    store = TaskStore(db, clock=lambda: 1.0)
    rec = store.add(spec())
    with pytest.raises(life.IllegalTransition, match=r"task #1 is queued: Succeed is not a move from there"):
        store.apply(rec.id, life.Succeed(end=life.JobEnd(exit_code=0, ended_at=2.0)))
    store.must_apply(rec.id, life.Cancel(reason=Said(text="cancelled"), ended_at=2.0))
    with pytest.raises(life.IllegalTransition, match="cancelled: Launched"):
        store.apply_many([(rec.id, life.Launched(pid=1, pid_create_time=None))])
    store.close()
    again = TaskStore(db)
    got = again.get(rec.id)
    assert (got.state, got.pid, got.exit_code) == ("cancelled", None, None)
    again.close()


HISTORY = """
CREATE TABLE IF NOT EXISTS history (id INTEGER, old TEXT, new TEXT);
CREATE TRIGGER IF NOT EXISTS history_of_states AFTER UPDATE OF state ON tasks
BEGIN INSERT INTO history VALUES (new.id, old.state, new.state); END;
"""

# An operation: (what, task index, step name, with the row's state expected or a wrong one)
OPERATION = st.tuples(
    st.sampled_from(["apply", "apply", "apply", "apply_many", "recover", "reopen"]),
    st.integers(0, 2),
    st.sampled_from(sorted(STEPS)),
    st.booleans(),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(retries=st.lists(st.integers(0, 2), min_size=3, max_size=3), ops=st.lists(OPERATION, max_size=40))
def test_random_operations_leave_only_histories_the_table_allows(
    retries: list[int], ops: list[tuple[str, int, str, bool]]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "queue.sqlite3"
        store = TaskStore(db, clock=lambda: 10.0)
        ids = [r.id for r in store.add_many(spec(n) for n in retries)]
        with sqlite3.connect(db) as raw:
            raw.executescript(HISTORY)
        try:
            for what, index, name, expect_right in ops:
                task_id = ids[index]
                before = store.get(task_id)
                step = STEPS[name](before)
                legal = life.allowed(before, step)
                if what == "reopen":
                    store.close()
                    store = TaskStore(db, clock=lambda: 10.0)
                    assert store.get(task_id) == before
                    continue
                if what == "recover":  # the owner's start after a crash: running → interrupted → policy,
                    store.recover_after_crash(kill_orphans=False)  # starting (no job began) → queued
                    left = [r for r in store.list(states=("running", "starting")) if r.remote_id is None]
                    assert left == []  # those another machine runs go on there
                    continue
                expect = (
                    before.state if expect_right else "succeeded" if before.state != "succeeded" else "failed"
                )
                try:
                    if what == "apply_many":
                        store.apply_many([(task_id, step)], only_states=(before.state,))
                        got: TaskRecord | None = store.get(task_id)
                    else:
                        got = store.apply(task_id, step, expect_state=expect)
                except life.IllegalTransition:
                    assert not legal
                    assert store.get(task_id) == before  # nothing written
                    continue
                if what == "apply" and not expect_right:  # a race lost, legal or not: nothing written
                    assert got is None and store.get(task_id) == before
                    continue
                assert legal
                assert got is not None and got.state == life.check(before, step)
        finally:
            store.close()
        with sqlite3.connect(db) as raw:
            history = raw.execute("SELECT id, old, new FROM history").fetchall()
            saved = dict(raw.execute("SELECT id, state FROM tasks").fetchall())
    for _task_id, old, new in history:
        assert new in life.EDGES[old], f"stored {old} → {new}"
    reopened_states = {task_id: state for task_id, state in saved.items()}
    assert set(reopened_states) == set(ids)
