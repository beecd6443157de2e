"""Damaged queue files lose nothing that can be read: each case keeps a copy, recovers every readable
row, says what it recovered and what not, and goes on.

The files are damaged as a crash, a bad disk or a careless copy would: a database truncated to 0 bytes
beside its write-ahead log, a WAL with one garbled frame, a garbage page, rows a newer or broken
gputray wrote. Nothing here is faked: real SQLite files, the real store, the real CLI.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import task_steps as steps
from cli import gputray

from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.saved_queue import read_saved_queue, read_saved_task, read_saved_tasks
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import StoreError, UnreadableTask
from gputray.scheduler.queue.store_salvage import inspect_files, scan_wal
from gputray.scheduler.queue.store_schema import SCHEMA_VERSION
from gputray.scheduler.reasons.codes import Said
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks import cluster_steps as remote
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskSpec

PAGE = 4096
TASKS = 35

CRASHED_OWNER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from gputray.scheduler.queue.store import TaskStore
    from gputray.scheduler.tasks import lifecycle as life
    from gputray.scheduler.tasks.records import TaskSpec
    store = TaskStore(Path(sys.argv[1]), clock=lambda: 1000.0)
    for i in range(1, int(sys.argv[2]) + 1):
        spec = TaskSpec(kind="command", name=f"task-{i}", argv=("echo", str(i)), env={"K": "v" * 40})
        rec = store.add(spec)
        if i % 5 == 0:
            start = life.Start(device="cpu", env=None, reason=None, attempts=1, started_at=1e3, log_path="")
            store.must_apply(rec.id, start)
            store.must_apply(rec.id, life.Succeed(end=life.JobEnd(exit_code=0, ended_at=1100.0)))
    os._exit(0)  # no close: everything is still in the WAL, as after kill -9 or a power cut
    """
)


def crashed_queue(folder: Path, n: int = TASKS) -> Path:
    """A queue file whose owner died: ``n`` tasks, all of them still in the WAL."""
    db = folder / "queue.sqlite3"
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", CRASHED_OWNER, str(db), str(n)], check=True, timeout=120)
    assert (folder / "queue.sqlite3-wal").stat().st_size > 0
    return db


def checkpointed_queue(folder: Path, n: int = TASKS) -> Path:
    db = crashed_queue(folder, n)
    TaskStore(db).close()  # the last connection checkpoints the WAL into the file and removes it
    assert not (folder / "queue.sqlite3-wal").exists()
    return db


def names(records: list[object]) -> set[str]:
    return {r.name for r in records}  # type: ignore[attr-defined]


def expected_names(n: int = TASKS) -> set[str]:
    return {f"task-{i}" for i in range(1, n + 1)}


def kept_copies(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if ".damaged-" in p.name)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.endswith("-shm")}


def what_sqlite_alone_sees(db: Path, tmp: Path) -> int:
    """Open a copy of the files as plain SQLite would (the old store did): how many tasks it finds."""
    tmp.mkdir()
    for suffix in ("", "-wal"):
        src = Path(f"{db}{suffix}")
        if src.exists():
            shutil.copy(src, tmp / f"q.db{suffix}")
    con = sqlite3.connect(tmp / "q.db")
    try:
        return int(con.execute("SELECT count(*) FROM tasks").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        con.close()


# --------------------------------------------------------------------------------------------------
# a 0-byte or missing database beside its WAL


def test_a_zero_byte_database_beside_its_wal_is_read_without_losing_the_wal(tmp_path: Path) -> None:
    db = crashed_queue(tmp_path / "data")
    db.write_bytes(b"")
    wal_bytes = (tmp_path / "data" / "queue.sqlite3-wal").read_bytes()
    before = snapshot(db.parent)

    saved = read_saved_queue(db)  # `gputray queue` with no owner: read-only
    assert names(saved.tasks) == expected_names()
    assert any("is empty (0 bytes)" in n and f"recovered {TASKS} task(s)" in n for n in saved.notes)
    assert snapshot(db.parent) == before  # SQLite would have deleted the WAL, even opened read-only

    store = TaskStore(db)
    assert names(store.list()) == expected_names()
    assert store.get(5).state == "succeeded" and store.get(5).exit_code == 0
    assert store.recovery_note is not None and f"recovered {TASKS} task(s)" in store.recovery_note
    main_copy, wal_copy = kept_copies(db.parent)
    assert main_copy.read_bytes() == b"" and wal_copy.read_bytes() == wal_bytes
    assert str(main_copy) in store.recovery_note
    assert store.add(TaskSpec(kind="command", name="next", argv=("true",))).id == TASKS + 1
    store.close()
    assert names(TaskStore(db).list()) == expected_names() | {"next"}
    assert inspect_files(db) is None


def test_a_missing_database_with_its_wal_left_is_recovered(tmp_path: Path) -> None:
    db = crashed_queue(tmp_path / "data")
    db.unlink()
    assert names(read_saved_tasks(db)) == expected_names()
    store = TaskStore(db)
    assert names(store.list()) == expected_names()
    assert "is missing" in (store.recovery_note or "")


# --------------------------------------------------------------------------------------------------
# a damaged WAL


def test_a_damaged_wal_frame_loses_only_what_that_frame_held(tmp_path: Path) -> None:
    db = crashed_queue(tmp_path / "data")
    wal = tmp_path / "data" / "queue.sqlite3-wal"
    frames = len(scan_wal(wal.read_bytes()).frames)
    with wal.open("r+b") as f:  # garble the page inside frame 6 (of ~120): a bad sector, a torn write
        f.seek(32 + 5 * (24 + PAGE) + 24 + 200)
        f.write(random.Random(6).randbytes(300))
    damaged = wal.read_bytes()
    assert what_sqlite_alone_sees(db, tmp_path / "plain") < TASKS  # SQLite cuts the log at the bad frame

    store = TaskStore(db)
    assert names(store.list()) == expected_names()  # later frames hold newer copies of every page
    assert f"damaged at frame 6 of {frames}" in (store.recovery_note or "")
    wal_copy = next(p for p in kept_copies(db.parent) if p.name.endswith("-wal"))
    assert wal_copy.read_bytes() == damaged


def test_a_torn_last_frame_is_not_damage(tmp_path: Path) -> None:
    """A power cut during a write leaves the last, uncommitted frame half-written: normal, not damage."""
    db = crashed_queue(tmp_path / "data", 3)
    wal = tmp_path / "data" / "queue.sqlite3-wal"
    with wal.open("ab") as f:
        f.write(b"\x00\x00\x00\x02" + bytes(20) + b"half a page")
    assert inspect_files(db) is None
    store = TaskStore(db)
    assert store.recovery_note is None and names(store.list()) == expected_names(3)


# --------------------------------------------------------------------------------------------------
# garbage pages


def _pages_holding(db: Path) -> dict[int, set[int]]:
    """page number -> the task ids whose rows it holds (found by their names in the page's bytes)."""
    data = db.read_bytes()
    out: dict[int, set[int]] = {}
    for m in re.finditer(rb'"name":"task-(\d+)"', data):
        out.setdefault(m.start() // PAGE + 1, set()).add(int(m.group(1)))
    return out


def test_a_garbage_page_loses_only_the_rows_on_it(tmp_path: Path) -> None:
    db = checkpointed_queue(tmp_path / "data")
    pages = _pages_holding(db)
    page, lost = sorted(pages.items())[len(pages) // 2]  # a leaf in the middle of the table
    with db.open("r+b") as f:
        f.seek((page - 1) * PAGE)
        f.write(random.Random(page).randbytes(PAGE))
    damaged = db.read_bytes()

    saved = read_saved_queue(db)
    assert names(saved.tasks) == expected_names() - {f"task-{i}" for i in lost}
    store = TaskStore(db)
    assert names(store.list()) == expected_names() - {f"task-{i}" for i in lost}
    note = store.recovery_note or ""
    assert f"recovered {TASKS - len(lost)} of {TASKS} task(s)" in note
    assert all(f"#{i}" in note for i in lost)
    (copy,) = kept_copies(db.parent)
    assert copy.read_bytes() == damaged
    # The lost ids are never handed out again.
    assert store.add(TaskSpec(kind="command", name="next", argv=("true",))).id == TASKS + 1


def test_a_garbage_schema_page_still_gives_every_row_back(tmp_path: Path) -> None:
    """Page 1 holds the schema (and, here, the root of the table): SQLite can read nothing. The rows are
    read straight from the table's leaf pages."""
    db = checkpointed_queue(tmp_path / "data")
    with db.open("r+b") as f:
        f.seek(100)
        f.write(random.Random(1).randbytes(PAGE - 100))
    assert what_sqlite_alone_sees(db, tmp_path / "plain") == 0
    store = TaskStore(db)
    assert names(store.list()) == expected_names()
    assert store.get(10).state == "succeeded"
    assert "read straight from its pages" in (store.recovery_note or "")


# --------------------------------------------------------------------------------------------------
# rows that are no task


def _queue_with_bad_rows(db: Path) -> None:
    store = TaskStore(db, clock=lambda: 100.0)
    for i in range(1, 7):
        store.add(TaskSpec(kind="command", name=f"t{i}", argv=("true",)))
    store.close()
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE tasks SET spec = 'not json {' WHERE id = 2")
        raw.execute("""UPDATE tasks SET spec = '{"kind":"command","name":"t3","argv":5}' WHERE id = 3""")
        raw.execute("UPDATE tasks SET position = 'abc', state = 'running' WHERE id = 4")
        raw.execute("UPDATE tasks SET spec = ? WHERE id = 5", ("[" * 5000 + "]" * 5000,))


def test_rows_that_are_no_task_are_shown_failed_and_the_rest_is_untouched(tmp_path: Path) -> None:
    db = tmp_path / "data" / "queue.sqlite3"
    _queue_with_bad_rows(db)

    saved = read_saved_queue(db)
    by_id = {r.id: r for r in saved.tasks}
    assert sorted(by_id) == [1, 2, 3, 4, 5, 6]
    assert by_id[1].state == by_id[6].state == "queued"
    assert "not JSON" in render(by_id[2].reason) and by_id[2].state == "failed"
    assert "argv is 5" in render(by_id[3].reason)
    assert "position is 'abc'" in render(by_id[4].reason)
    assert "cannot be read" in render(by_id[5].reason)
    assert len(saved.notes) == 4 and read_saved_task(db, 3).state == "failed"

    store = TaskStore(db, clock=lambda: 200.0)
    assert [r.id for r in store.pending()] == [1, 6]
    assert {r.id for r in store.list(states=("failed",))} == {2, 3, 4, 5}
    with pytest.raises(UnreadableTask, match=r"task #2 cannot run again.*submit it anew"):
        store.apply(
            2, life.Requeue(reason=Said(text="again"), now=200.0, position=9.0), expect_state="failed"
        )
    store.close()
    with sqlite3.connect(db) as raw:  # failed on disk too, the saved spec kept as it was
        assert raw.execute("SELECT state, spec FROM tasks WHERE id = 2").fetchone() == (
            "failed",
            "not json {",
        )


def test_the_owner_and_the_offline_cli_start_over_rows_that_are_no_task(tmp_path: Path) -> None:
    home = tmp_path / "home"
    paths = Paths(home / "config", home / "data", home / "state", home / "run")
    _queue_with_bad_rows(paths.queue_db)

    offline = gputray("queue", "--all", home=home)
    assert offline.returncode == 0, offline.stderr
    assert "Traceback" not in offline.stderr and "cannot be read" in offline.stderr
    assert all(f"t{i}" in offline.stdout for i in range(1, 7))

    owner = Owner(paths, demo=True, serve_ipc=False)
    owner.start()
    try:
        listed = owner.handle(rq.Queue(all=True)).tasks
        assert sorted(t.id for t in listed) == [1, 2, 3, 4, 5, 6]
        with pytest.raises(ValueError, match="cannot run again"):
            owner.handle(rq.Retry(id=2))
    finally:
        owner.stop()


# --------------------------------------------------------------------------------------------------
# missing, unopenable


def test_a_folder_where_the_queue_file_should_be_is_a_clear_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "data" / "queue.sqlite3").mkdir(parents=True)
    with pytest.raises(StoreError, match="is a folder, not a file"):
        TaskStore(home / "data" / "queue.sqlite3")
    offline = gputray("queue", home=home)
    assert offline.returncode == 1 and "is a folder" in offline.stderr and "Traceback" not in offline.stderr
    daemon = gputray("daemon", "--demo", home=home)
    assert daemon.returncode == 1, daemon.stderr
    assert "is a folder, not a file" in daemon.stderr and "Traceback" not in daemon.stderr


def test_a_repair_cut_short_is_finished_at_the_next_start(tmp_path: Path) -> None:
    """The repaired file was built but the owner died before swapping it in: the next start finishes."""
    db = crashed_queue(tmp_path / "data", 4)
    db.write_bytes(b"")
    built = TaskStore(tmp_path / "other" / "queue.sqlite3")
    for i in range(1, 5):
        built.add(TaskSpec(kind="command", name=f"task-{i}", argv=("true",)))
    built.close()
    shutil.copy(tmp_path / "other" / "queue.sqlite3", tmp_path / "data" / "queue.sqlite3.recovered")
    store = TaskStore(db)
    assert names(store.list()) == expected_names(4)
    assert not (tmp_path / "data" / "queue.sqlite3.recovered").exists()
    assert len(kept_copies(db.parent)) == 2  # the empty file and its WAL


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_kept_copies_and_the_repaired_file_are_private(tmp_path: Path) -> None:
    db = crashed_queue(tmp_path / "data", 3)
    db.write_bytes(b"")
    TaskStore(db).close()
    for p in [db, *kept_copies(db.parent)]:
        assert p.stat().st_mode & 0o077 == 0, p


# --------------------------------------------------------------------------------------------------
# schema 1 and rows saved before the migration to schema 2


def schema_1_queue(folder: Path, n: int = TASKS, schema: int = 1) -> Path:
    """A queue file as a schema-1 gputray left it (no ``attempts_before``): ``n`` tasks, checkpointed.
    ``schema=2``: as a schema-2 gputray left it (``attempts_before``, no cluster columns)."""
    from gputray.scheduler.queue.store_salvage import SCHEMA_1_COLUMN_COUNT, TASK_TABLE_COLUMNS
    from gputray.scheduler.queue.store_schema import MIGRATIONS

    source = checkpointed_queue(folder / "source", n)
    db = folder / "queue.sqlite3"
    old_columns = ", ".join(TASK_TABLE_COLUMNS[: SCHEMA_1_COLUMN_COUNT + schema - 1])
    con = sqlite3.connect(db)
    for step in MIGRATIONS[:schema]:
        step(con)
    con.execute("ATTACH DATABASE ? AS src", (str(source),))
    con.execute(f"INSERT INTO tasks ({old_columns}) SELECT {old_columns} FROM src.tasks")
    con.execute(f"PRAGMA user_version = {schema}")
    con.commit()
    con.close()
    shutil.rmtree(folder / "source")
    return db


def _garble_schema_page(db: Path) -> None:
    with db.open("r+b") as f:
        f.seek(100)
        f.write(random.Random(1).randbytes(PAGE - 100))


@pytest.mark.parametrize("schema", [1, 2])
def test_a_damaged_schema_1_file_gives_every_row_back(tmp_path: Path, schema: int) -> None:
    """Its rows hold fewer values than the current table (schema 1: no ``attempts_before``, schema 2:
    no cluster columns): the page reader takes them all the same."""
    db = schema_1_queue(tmp_path / "data", schema=schema)
    _garble_schema_page(db)
    saved = read_saved_queue(db)  # without an owner: read from the pages, nothing written
    assert names(saved.tasks) == expected_names()
    assert all(r.attempts_before == 0 for r in saved.tasks)
    assert "damaged" in saved.notes[0]
    store = TaskStore(db)
    assert names(store.list()) == expected_names()
    assert store.get(10).state == "succeeded" and store.get(10).attempts == 1
    assert store.get(10).attempts_before == 0
    assert store.get(10).machine is None and store.get(10).remote_id is None
    assert store.get(10).energy_j is None and store.get(10).energy_shared is False
    assert store.schema_version == SCHEMA_VERSION


def test_rows_saved_before_and_after_the_migration_both_come_back_from_a_damaged_file(tmp_path: Path) -> None:
    """ALTER TABLE ADD COLUMN leaves the rows already there as they were: a migrated file holds rows of
    both lengths, and salvage must read both (the new column keeps its value where a row has it)."""
    db = schema_1_queue(tmp_path / "data", 20)
    store = TaskStore(db)  # migrated to the current schema; the 20 old rows keep their 21 values
    assert store.schema_version == SCHEMA_VERSION
    for i in range(21, TASKS + 1):
        rec = store.add(
            TaskSpec(kind="command", name=f"task-{i}", argv=("echo", str(i)), env={"K": "v" * 40})
        )
        steps.fail_run(store, rec.id, "exited with status 1", attempts=2)
        store.must_apply(
            rec.id, life.Requeue(reason=Said(text="again"), now=1100.0, position=float(i))
        )  # attempts_before 2
        store.must_apply(
            rec.id,
            remote.HandOver(machine="m", device="m/cpu", reason=Said(text="r"), into="waiting", attempts=3),
        )
        store.must_apply(
            rec.id, remote.Handed(remote_id=i, remote_state="queued", log_path="", reason=Said(text="r"))
        )
        ended = remote.RemoteRun(
            into="failed",
            remote_state="failed",
            reason=Said(text="r"),
            ended_at=1200.0,
            energy_j=float(i),
            energy_shared=i % 2 == 0,
        )
        store.must_apply(rec.id, ended)
    store.close()
    _garble_schema_page(db)
    saved = read_saved_queue(db)
    assert names(saved.tasks) == expected_names()
    by_name = {r.name: r for r in saved.tasks}
    assert by_name["task-30"].attempts_before == 2 and by_name["task-3"].attempts_before == 0
    assert by_name["task-30"].remote_id == 30 and by_name["task-3"].remote_id is None
    assert by_name["task-30"].energy_j == 30.0 and by_name["task-30"].energy_shared is True
    assert by_name["task-3"].energy_j is None and by_name["task-3"].energy_shared is False
    repaired = TaskStore(db)
    assert names(repaired.list()) == expected_names()
    assert repaired.get(30).attempts_before == 2 and repaired.get(30).attempts == 3
    assert repaired.get(3).attempts_before == 0
    assert repaired.get(30).energy_j == 30.0 and repaired.get(3).energy_shared is False
    assert f"recovered {TASKS} task(s), every one it held" in (repaired.recovery_note or "")
