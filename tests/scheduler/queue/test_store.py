from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest
import task_steps as steps
from waiting import wait_for

from gputray.scheduler.cli.commands.common import task_json
from gputray.scheduler.queue.saved_queue import read_saved_task, read_saved_tasks
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import StoreError, TaskNotFound
from gputray.scheduler.queue.store_schema import SCHEMA_VERSION
from gputray.scheduler.reasons.codes import ExitedWith, Said
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks import cluster_steps as remote
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec


def spec(name: str = "job", **kw: object) -> TaskSpec:
    return TaskSpec(kind="command", name=name, argv=("echo", name), **kw)  # type: ignore[arg-type]


def test_tasks_survive_reopening(tmp_path: Path) -> None:
    db = tmp_path / "data" / "queue.sqlite3"
    store = TaskStore(db, clock=lambda: 100.0)
    a = store.add(spec("a", device_prefs=("5060ti",), env={"X": "1"}))
    b = store.add(spec("b", priority=5))
    steps.wait(store, a.id, "waiting for GeForce RTX 5060 Ti: busy")
    store.close()

    again = TaskStore(db)
    assert again.schema_version == SCHEMA_VERSION
    got = again.get(a.id)
    assert got.state == "waiting" and render(got.reason).startswith("waiting for")
    assert got.spec == a.spec and got.submitted_at == 100.0
    # Pending tasks come in dispatch order: higher priority first.
    assert [r.id for r in again.pending()] == [b.id, a.id]
    assert again.journal_mode() == "wal"


def test_missing_task_has_a_readable_error(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "q.db")
    with pytest.raises(TaskNotFound) as info:
        store.get(42)
    assert isinstance(info.value, KeyError)
    assert str(info.value) == "no task #42 in the queue"


def test_a_newer_schema_is_refused_not_damaged(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    TaskStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match=r"newer gputray \(schema 99"):
        TaskStore(db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 99


def test_a_garbage_file_is_kept_beside_a_fresh_queue_with_a_note(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    garbage = b"this is not a database" * 100
    db.write_bytes(garbage)
    store = TaskStore(db)
    assert store.list() == [] and store.add(spec()).id == 1
    (kept,) = tmp_path.glob("q.db.damaged-*")
    assert kept.read_bytes() == garbage
    assert store.recovery_note is not None
    assert "not an SQLite database" in store.recovery_note and str(kept) in store.recovery_note


def test_retry_policy_requeues_with_doubling_backoff_then_fails(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "q.db", clock=lambda: 1000.0)
    rec = store.add(spec(retries=2, backoff_s=10))
    exited = life.RetryOrFail(why=ExitedWith(status=1), now=1000.0)
    steps.start(store, rec.id)
    first = store.must_apply(rec.id, exited)
    assert first.state == "queued" and first.not_before == 1010.0
    assert render(first.reason) == "exited with status 1; retry 1 of 2 in 10 s"
    steps.start(store, rec.id)
    second = store.must_apply(rec.id, exited)
    assert second.state == "queued" and second.not_before == 1020.0
    steps.start(store, rec.id)
    last = store.must_apply(rec.id, exited)
    assert last.state == "failed" and render(last.reason) == "exited with status 1; no retries left"


def test_the_doubling_backoff_stops_at_an_hour(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "q.db", clock=lambda: 1000.0)
    rec = store.add(spec(retries=100, backoff_s=30))
    steps.start(store, rec.id, attempts=99)  # 98 retries used: 30 s x 2**98 uncapped
    again = store.must_apply(rec.id, life.RetryOrFail(why=ExitedWith(status=1), now=1000.0))
    assert again.state == "queued" and again.not_before == 1000.0 + 3600.0
    assert render(again.reason) == "exited with status 1; retry 99 of 100 in 3600 s"


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)


def test_crash_recovery_interrupts_running_tasks_and_applies_their_policy(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    store = TaskStore(db, clock=lambda: 500.0)
    again = store.add(spec("again", retries=1, backoff_s=0))
    once = store.add(spec("once"))
    waiting = store.add(spec("waiting"))
    log = tmp_path / "task-1.log"
    log.write_text("half of the output\n")
    orphan = _sleeper()
    try:
        steps.start(
            store,
            again.id,
            started_at=400.0,
            pid=orphan.pid,
            pid_create_time=psutil.Process(orphan.pid).create_time(),
            log_path=str(log),
        )
        steps.start(store, once.id, started_at=400.0)
        steps.wait(store, waiting.id, "waiting for Radeon 780M: paused")
        store.close()  # the owner "crashes": nothing else happens

        reopened = TaskStore(db, clock=lambda: 600.0)
        recovered = {r.record.id: r for r in reopened.recover_after_crash()}
        orphan.wait(timeout=10)  # the leftover job process was stopped (psutil reaped it)
        assert not psutil.pid_exists(orphan.pid) or psutil.Process(orphan.pid).status() == "zombie"
    finally:
        if orphan.poll() is None:
            orphan.kill()
    assert set(recovered) == {again.id, once.id}
    requeued = reopened.get(again.id)
    assert requeued.state == "queued" and recovered[again.id].requeued and recovered[again.id].killed_orphan
    assert render(requeued.reason).startswith("interrupted: gputray stopped while it ran")
    assert requeued.log_path == str(log) and log.read_text() == "half of the output\n"
    failed = reopened.get(once.id)
    assert failed.state == "failed" and "interrupted" in render(failed.reason) and failed.ended_at == 600.0
    assert reopened.get(waiting.id).state == "waiting"  # untouched
    assert reopened.recover_after_crash() == []  # idempotent


def test_recovery_never_kills_a_reused_pid(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "q.db")
    rec = store.add(spec())
    bystander = _sleeper()
    try:
        steps.start(store, rec.id, pid=bystander.pid, pid_create_time=1.0)
        (r,) = store.recover_after_crash()
        assert not r.killed_orphan
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="zombies are POSIX")
def test_recovery_does_not_claim_to_stop_a_job_that_had_already_ended(tmp_path: Path) -> None:
    """A job that ended while no owner was up may linger as a zombie until it is reaped: recovery
    must not say "its leftover process was stopped" about it."""
    job = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        wait_for(lambda: psutil.Process(job.pid).status() == psutil.STATUS_ZOMBIE, what="the job to end")
        store = TaskStore(tmp_path / "q.db")
        rec = store.add(spec())
        create_time = psutil.Process(job.pid).create_time()
        steps.start(store, rec.id, pid=job.pid, pid_create_time=create_time)
        (r,) = store.recover_after_crash()
        assert not r.killed_orphan
        assert "leftover process" not in render(store.get(rec.id).reason)
    finally:
        job.wait()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_recovery_finds_a_job_whose_pid_was_never_saved_by_its_environment(tmp_path: Path) -> None:
    """The owner died between launching the job and saving its pid: the job is found by the task id and
    queue file in its environment; the same task id from another queue is left alone."""
    from gputray.scheduler.jobs.orphans import QUEUE_FILE_VAR

    db = tmp_path / "q.db"
    store = TaskStore(db)
    rec = store.add(spec("unsaved pid", retries=1, backoff_s=0))
    steps.start(store, rec.id)
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    ours_env = {**os.environ, "GPUTRAY_TASK_ID": str(rec.id), QUEUE_FILE_VAR: str(db)}
    other_env = {**ours_env, QUEUE_FILE_VAR: str(tmp_path / "other-home" / "q.db")}
    ours = subprocess.Popen(sleep, env=ours_env, start_new_session=True)
    other = subprocess.Popen(sleep, env=other_env, start_new_session=True)
    try:
        wait_for(lambda: psutil.Process(ours.pid).environ().get(QUEUE_FILE_VAR) == str(db), what="the job")
        (r,) = store.recover_after_crash()
        assert r.killed_orphan and r.requeued
        assert "its leftover process was stopped" in render(store.get(rec.id).reason)
        ours.wait(timeout=10)
        assert other.poll() is None
    finally:
        for proc in (ours, other):
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")
def test_recovery_also_stops_helpers_the_job_left_in_its_process_group(tmp_path: Path) -> None:
    """A job whose helper left the tree (its parent exited) but stays in the job's process group."""
    pid_file = tmp_path / "helper.pid"
    helper = tmp_path / "helper.py"
    helper.write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    middle = tmp_path / "middle.py"  # starts the helper and exits at once: the helper is re-parented
    middle.write_text(f"import subprocess, sys\nsubprocess.Popen([sys.executable, {str(helper)!r}])\n")
    job_script = tmp_path / "job.py"
    job_script.write_text(
        f"import subprocess, sys, time\nsubprocess.run([sys.executable, {str(middle)!r}])\ntime.sleep(60)\n"
    )
    job = subprocess.Popen([sys.executable, str(job_script)], start_new_session=True)
    try:
        helper_pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), what="the helper"))
        assert helper_pid not in {c.pid for c in psutil.Process(job.pid).children(recursive=True)}
        store = TaskStore(tmp_path / "q.db")
        rec = store.add(spec())
        create_time = psutil.Process(job.pid).create_time()
        steps.start(store, rec.id, pid=job.pid, pid_create_time=create_time)
        (r,) = store.recover_after_crash()
        assert r.killed_orphan
        job.wait(timeout=10)
        assert wait_for(lambda: _gone(helper_pid), 10, "the helper to be stopped")
    finally:
        if job.poll() is None:
            job.kill()
        job.wait()
        if pid_file.exists() and not _gone(int(pid_file.read_text())):
            psutil.Process(int(pid_file.read_text())).kill()


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from gputray.scheduler.queue.store import TaskStore
    from gputray.scheduler.tasks import lifecycle as life
    from gputray.scheduler.tasks.records import TaskSpec
    store = TaskStore(Path(sys.argv[1]))
    i = 0
    while True:
        rec = store.add(TaskSpec(kind="command", name=f"t{i}", argv=("echo", str(i))))
        start = life.Start(device="cpu", env=None, reason="", attempts=1, started_at=1.0, log_path="")
        store.must_apply(rec.id, start)
        print(rec.id, flush=True)
        i += 1
    """
)


def test_kill_9_mid_write_loses_nothing_that_was_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged = [int(proc.stdout.readline()) for _ in range(40)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = TaskStore(db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for task_id in acknowledged:
        assert store.get(task_id).state in {"running", "queued"}
    store.recover_after_crash()
    assert not store.running()
    # Every acknowledged task was running: interrupted, and with no retries left it failed. The kill may
    # land between a task's insert and its update to running: that one is still (rightly) queued.
    states = {r.id: r.state for r in store.list()}
    assert {states[i] for i in acknowledged} == {"failed"}
    assert set(states.values()) <= {"failed", "queued"}


def test_update_many_leaves_rows_that_changed_state(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "q.db")
    a, b = store.add(spec("a")), store.add(spec("b"))
    steps.cancel(store, b.id)
    waits = [(a.id, life.Wait(reason=Said(text="w"))), (b.id, life.Wait(reason=Said(text="w")))]
    store.apply_many(waits, only_states=("queued",))
    assert store.get(a.id).state == "waiting"
    assert store.get(b.id).state == "cancelled"


@pytest.mark.slow
def test_ten_thousand_tasks_list_in_order_with_json(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    store = TaskStore(db)
    store.add_many(spec(f"t{i}", device_prefs=("5060ti", "780m")) for i in range(10_000))
    store.close()
    fresh = TaskStore(db)  # a cold cache, as after a restart
    records = fresh.list()
    assert len(records) == 10_000
    assert [r.id for r in records[:3]] == [1, 2, 3]
    text = json.dumps([task_json(TaskView.of(r)) for r in records])
    assert json.loads(text)[-1]["name"] == "t9999"
    assert fresh.counts() == {"queued": 10_000}


def test_reads_come_from_memory_and_follow_every_write(tmp_path: Path) -> None:
    """After the first read, listing and getting tasks run no SQL; each committed write shows at once,
    a rolled-back one never, and a reopened store reads back the same records from SQLite."""
    db = tmp_path / "q.db"
    store = TaskStore(db, clock=lambda: 10.0)
    a, b, c = store.add_many([spec("a"), spec("b", retries=1), spec("c")])
    assert [r.name for r in store.pending()] == ["a", "b", "c"]
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    for _ in range(3):
        assert len(store.list()) == 3 and store.get(b.id).name == "b" and len(store.pending()) == 3
    assert statements == []  # nothing read from SQLite again

    store.apply_many(
        [(a.id, life.Wait(reason=Said(text="r"))), (c.id, life.Note(reason=Said(text="x")))],
        only_states=("queued",),
    )
    store.must_apply(c.id, life.Cancel(reason=Said(text="x"), ended_at=10.0))
    store.apply_many(
        [(c.id, life.Wait(reason=Said(text="w")))], only_states=("queued", "waiting")
    )  # c is cancelled
    started = life.Start(
        device="cpu", env=None, reason=None, attempts=1, started_at=10.0, log_path="", pid=42
    )
    assert store.apply(b.id, started, expect_state="queued") is not None
    assert store.apply(b.id, life.Fail(reason=Said(text="f"), ended_at=10.0), expect_state="queued") is None
    with pytest.raises(life.IllegalTransition):  # b runs: a Fail is for a pending task; rolled back whole
        store.apply_many(
            [
                (a.id, life.Fail(reason=Said(text="f"), ended_at=10.0)),
                (b.id, life.Fail(reason=Said(text="f"), ended_at=10.0)),
            ]
        )
    store.set_priority_position(a.id, 5, 0.5)
    seen = {r.id: (r.state, render(r.reason), r.pid, r.spec.priority) for r in store.list()}
    assert seen == {
        a.id: ("waiting", "r", None, 5),
        b.id: ("running", "", 42, 0),
        c.id: ("cancelled", "x", None, 0),
    }
    store.recover_after_crash(kill_orphans=False)  # b: running → interrupted → requeued by its retry
    assert store.get(b.id).state == "queued" and "interrupted" in render(store.get(b.id).reason)
    mine = {r.id: r for r in store.list()}
    store.close()
    assert {r.id: r for r in TaskStore(db).list()} == mine


def _file_bytes(folder: Path) -> dict[str, bytes]:
    """The database and its WAL, byte for byte (the -shm index is SQLite's shared memory, not data)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.endswith("-shm")}


def test_the_saved_queue_reads_back_read_only_after_a_crash(tmp_path: Path) -> None:
    """An owner killed mid-run leaves a WAL and a task `running`: the CLI's read shows both as saved
    and changes nothing (no WAL checkpoint, no crash recovery, no migration)."""
    db = tmp_path / "data" / "queue.sqlite3"
    crash = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from gputray.scheduler.queue.store import TaskStore
        from gputray.scheduler.tasks import lifecycle as life
        from gputray.scheduler.tasks.records import TaskSpec
        store = TaskStore(Path({str(db)!r}), clock=lambda: 100.0)
        a = store.add(TaskSpec(kind="command", name="a", argv=("echo", "a")))
        b = store.add(TaskSpec(kind="command", name="b", argv=("echo", "b"), priority=5))
        done = store.add(TaskSpec(kind="command", name="done", argv=("echo", "d")))
        start = dict(device="pci:0000:01:00.0", env=None, reason="", attempts=1, started_at=100.0)
        store.must_apply(a.id, life.Start(**start, pid=1, log_path="/x/1.log"))
        store.must_apply(done.id, life.Start(**start, log_path=""))
        store.must_apply(done.id, life.Succeed(end=life.JobEnd(exit_code=0, ended_at=200.0)))
        os._exit(0)  # no close: the WAL keeps the writes, as after kill -9
        """
    )
    subprocess.run([sys.executable, "-c", crash], check=True, timeout=60)
    assert (db.parent / "queue.sqlite3-wal").stat().st_size > 0
    before = _file_bytes(db.parent)

    pending = read_saved_tasks(db, include_finished=False)
    assert [(r.name, r.state) for r in pending] == [("a", "running"), ("b", "queued")]
    everything = read_saved_tasks(db)
    assert [r.name for r in everything] == ["a", "b", "done"]
    assert everything[2].exit_code == 0 and everything[2].ended_at
    assert read_saved_task(db, 1).log_path == "/x/1.log"
    with pytest.raises(TaskNotFound, match="no task #9 in the queue"):
        read_saved_task(db, 9)
    assert _file_bytes(db.parent) == before


def test_reading_a_missing_or_blank_queue_file_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "queue.sqlite3"
    assert read_saved_tasks(missing) == []
    assert not missing.parent.exists()
    blank = tmp_path / "blank.sqlite3"
    blank.write_bytes(b"")
    assert read_saved_tasks(blank) == []
    assert blank.read_bytes() == b""  # not initialised (migrated) by a reader


def test_reading_a_newer_or_garbage_queue_file_is_a_clear_error_that_changes_nothing(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    raw = sqlite3.connect(newer)
    raw.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    raw.close()
    before = newer.read_bytes()
    with pytest.raises(StoreError, match="newer gputray"):
        read_saved_tasks(newer)
    assert newer.read_bytes() == before
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match=r"garbage\.db"):
        read_saved_tasks(garbage)


def _schema_1_file(db: Path) -> None:
    """A queue file as gputray with schema 1 (before ``attempts_before``) left it: one failed task."""
    from gputray.scheduler.queue.store_schema import MIGRATIONS

    conn = sqlite3.connect(db)
    MIGRATIONS[0](conn)
    text = json.dumps(spec("old").to_dict())
    conn.execute(
        "INSERT INTO tasks (spec, name, kind, state, attempts, submitted_at, position, queued_at, exit_code)"
        " VALUES (?, 'old', 'command', 'failed', 2, 5.0, 1.0, 5.0, 3)",
        (text,),
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_a_schema_1_file_is_read_as_it_is_and_migrated_by_the_owner(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    _schema_1_file(db)
    (saved,) = read_saved_tasks(db)  # the CLI without an owner: read-only, never migrated
    assert (saved.name, saved.state, saved.attempts, saved.attempts_before) == ("old", "failed", 2, 0)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    store = TaskStore(db)  # the owner: migrated, the row kept
    assert store.schema_version == SCHEMA_VERSION == 9
    assert store.get(saved.id).attempts == 2 and store.get(saved.id).exit_code == 3
    assert store.get(saved.id).machine is None and store.get(saved.id).remote_id is None
    assert store.get(saved.id).energy_j is None and store.get(saved.id).energy_shared is False
    store.must_apply(saved.id, life.Requeue(reason="again", now=6.0, position=2.0))  # attempts_before 2
    store.must_apply(
        saved.id, remote.HandOver(machine="laptop", device="laptop/cpu", reason="r", into="waiting")
    )
    store.must_apply(saved.id, remote.Handed(remote_id=7, remote_state="queued", log_path="", reason="r"))
    ended = remote.RemoteRun(
        into="succeeded", remote_state="succeeded", reason="r", energy_j=1234.5, energy_shared=True
    )
    store.must_apply(saved.id, ended)
    store.close()
    again = read_saved_task(db, saved.id)
    assert (again.attempts_before, again.machine, again.remote_id, again.remote_state) == (
        2,
        "laptop",
        7,
        "succeeded",
    )
    assert again.energy_j == 1234.5 and again.energy_shared is True  # SQLite's 1 read back as a bool
    view = task_json(TaskView.of(again))
    assert view["energy_j"] == 1234.5 and view["energy_shared"] is True


def test_delete_and_replace_spec(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    store = TaskStore(db)
    a, b, c = store.add_many(spec(n) for n in "abc")
    edited = store.replace_spec(b.id, spec("b2", priority=7, env={"K": "v"}), only_states=("queued",))
    assert edited is not None and edited.spec.name == "b2" and edited.spec.priority == 7
    assert [r.id for r in store.pending()] == [b.id, a.id, c.id]  # the priority column moved too
    steps.start(store, c.id)
    assert store.replace_spec(c.id, spec("c2"), only_states=("queued", "waiting")) is None
    assert store.get(c.id).spec.name == "c"
    with pytest.raises(TaskNotFound):
        store.replace_spec(99, spec("x"), only_states=("queued",))
    assert [r.id for r in store.delete([a.id, b.id])] == [a.id, b.id]
    with pytest.raises(TaskNotFound):
        store.delete([a.id])
    store.close()
    again = TaskStore(db)
    assert [r.id for r in again.list()] == [c.id]  # durable
    assert again.add(spec("d")).id == c.id + 1  # ids are never reused: an old --after cannot hit a new task


def test_a_name_that_is_not_utf8_is_saved_and_read_back_as_submitted(tmp_path: Path) -> None:
    """The name column refused surrogate escapes (UnicodeEncodeError: surrogates not allowed)."""
    db = tmp_path / "q.db"
    odd = os.fsdecode(b"caf\xe9.py")
    store = TaskStore(db)
    rec = store.add(spec(odd))
    steps.fail(store, rec.id, f"could not start: no such file: {odd}")
    store.replace_spec(rec.id, spec(odd, priority=3), only_states=("failed",))
    store.close()
    again = TaskStore(db)
    got = again.get(rec.id)
    assert got.spec.name == odd and got.spec.argv == ("echo", odd) and got.spec.priority == 3
    assert (
        render(got.reason) == "could not start: no such file: caf\\xe9.py"
    )  # the byte, as the console shows it
    again.close()
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT name FROM tasks").fetchone() == ("caf\\xe9.py",)


def test_one_record_that_cannot_be_saved_fails_alone_not_its_group_commit(tmp_path: Path) -> None:
    """Submits from several clients share one commit; a record SQLite refuses failed every one of them."""
    store = TaskStore(tmp_path / "q.db")
    results: dict[str, object] = {}

    def add(name: str, priority: int) -> None:
        try:
            results[name] = store.add(spec(name, priority=priority))
        except Exception as exc:
            results[name] = exc

    calls = [("first", 0), ("too big", 2**70), ("last", 0)]  # 2**70: no SQLite INTEGER holds it
    threads = [threading.Thread(target=add, args=call) for call in calls]
    with store._lock:  # the first add leads the commit and waits here; the others join its batch
        for t in threads:
            t.start()
        wait_for(lambda: len(store._commit_queue) == 3, what="three adds in one group commit")
    for t in threads:
        t.join(10)
    assert isinstance(results["first"], TaskRecord) and isinstance(results["last"], TaskRecord)
    assert isinstance(results["too big"], StoreError) and "'too big'" in str(results["too big"])
    assert store.commits == 1
    assert [r.spec.name for r in store.list()] == ["first", "last"]
    store.close()
    assert [r.spec.name for r in TaskStore(tmp_path / "q.db").list()] == ["first", "last"]
