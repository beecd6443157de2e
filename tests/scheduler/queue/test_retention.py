"""Retention: ended tasks and their logs are removed by age and count ([retention] in the config), by
the same function as ``gputray clean``. A real owner with a shifted clock, real jobs, real logs."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import ShiftedClock, home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.config import read_config
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons.render import render

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")
PY = sys.executable
DAY_S = 86_400.0


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    p = home_paths(tmp_path, monkeypatch)
    p.config_file.parent.mkdir(parents=True, exist_ok=True)
    p.config_file.write_text("[retention]\nkeep_days = 2\nkeep_tasks = 3\n")
    return p


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture
def owner(paths: Paths, clock: ShiftedClock) -> Iterator[Owner]:
    with running_owner(paths, clock=clock) as o:
        yield o


@pytest.fixture
def client(owner: Owner, paths: Paths) -> Iterator[ipc.IpcClient]:
    with ipc.IpcClient(paths) as c:
        yield c


def run_jobs(client: ipc.IpcClient, count: int) -> list[int]:
    ids = []
    for i in range(count):
        reply = client.ask(
            rq.Run(argv=[PY, "-c", f"print({i})"], name=f"job {i}", overrides={"device_prefs": ["cpu"]})
        )
        ids.append(reply.tasks[0].id)
        wait_for(lambda: client.ask(rq.WaitFor(ids=ids[-1:], timeout_s=10)).done)
    return ids


def present(client: ipc.IpcClient) -> list[int]:
    return sorted(t.id for t in client.ask(rq.Queue(all=True)).tasks)


def test_ended_tasks_and_logs_beyond_the_limits_are_removed_by_the_owner(
    owner: Owner, client: ipc.IpcClient, clock: ShiftedClock, paths: Paths
) -> None:
    ids = run_jobs(client, 6)
    logs = {t.id: Path(str(t.log_path)) for t in client.ask(rq.Queue(all=True)).tasks}
    assert all(p.is_file() for p in logs.values())
    # #1 stays while a queued task waits for it (--after), whatever the limits say
    later = (
        client.ask(
            rq.Run(
                argv=[PY, "-c", "pass"],
                name="later",
                overrides={"after": [ids[0]], "start_at": clock() + 9 * DAY_S},
            )
        )
        .tasks[0]
        .id
    )
    clock.offset_s += 11 * 60  # the retention's next look (every 10 min)
    owner.queue.request_dispatch()
    wait_for(lambda: present(client) == [ids[0], *ids[-3:], later])  # before: nothing ever went
    wait_for(lambda: [i for i, p in logs.items() if p.exists()] == [ids[0], *ids[-3:]])  # logs go after rows
    clock.offset_s += 3 * DAY_S  # now every ended task is older than keep_days = 2
    owner.queue.request_dispatch()
    wait_for(lambda: present(client) == [ids[0], later])
    wait_for(lambda: [i for i, p in logs.items() if p.exists()] == [ids[0]])


def test_clean_keep_is_the_same_rule_by_hand(owner: Owner, client: ipc.IpcClient, paths: Paths) -> None:
    ids = run_jobs(client, 3)
    gone = client.ask(rq.Clean(keep=1)).tasks
    assert sorted(t.id for t in gone) == ids[:2]
    assert present(client) == ids[-1:]


def test_retention_values_are_checked_like_every_other_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[retention]\nkeep_days = -1\nkeep_tasks = "lots"\nkeep_dayz = 3\n')
    config = read_config(path)
    assert config.retention.keep_days == 30 and config.retention.keep_tasks == 1000
    messages = {p.key: p.message for p in config.problems}
    assert (
        "retention.keep_days = -1 is not a number in 0 … 36500; using 30" in messages["retention.keep_days"]
    )
    assert 'retention.keep_tasks = "lots"' in messages["retention.keep_tasks"]
    assert "did you mean retention.keep_days?" in messages["retention.keep_dayz"]


def test_a_dependency_of_a_kept_task_is_kept_and_a_missing_one_is_not_met(
    owner: Owner, client: ipc.IpcClient, paths: Paths
) -> None:
    """Before: retention removed a failed dependency (no *pending* task named it), then `retry` of its
    dependant ran it at once: a dependency that no longer exists counted as met."""
    first = client.ask(rq.Run(argv=[PY, "-c", "raise SystemExit(3)"], name="prepare")).tasks[0].id
    wait_for(lambda: client.ask(rq.Get(id=first)).task.state == "failed")
    then = (
        client.ask(rq.Run(argv=[PY, "-c", "print('ran')"], name="train", overrides={"after": [first]}))
        .tasks[0]
        .id
    )
    wait_for(lambda: client.ask(rq.Get(id=then)).task.state == "failed")  # "dependency #1 … failed"
    cleaned = client.ask(rq.Clean(keep=1))  # the newest (the dependant) stays, and so does what it needs
    assert cleaned.tasks == () and present(client) == [first, then]
    assert any(f"#{first}" in why and f"#{then}" in why for why in cleaned.kept), cleaned.kept
    # By hand, a person may still remove it (no pending task names it); then the dependant cannot start.
    assert [t.id for t in client.ask(rq.Remove(ids=[first])).tasks] == [first]
    client.ask(rq.Retry(id=then))
    wait_for(lambda: f"#{first}" in render(client.ask(rq.Get(id=then)).task.reason))
    task = client.ask(rq.Get(id=then)).task
    assert task.state in ("queued", "waiting") and "no longer in the queue" in render(task.reason), task
    assert task.started_at is None or task.attempts == 0, task  # it never ran without its dependency


def job_run_families(paths: Paths) -> list[str]:
    db = sqlite3.connect(f"file:{paths.queue_db}?mode=ro", uri=True)
    try:
        return sorted({str(f) for (f,) in db.execute("SELECT family FROM job_runs")})
    finally:
        db.close()


def test_runtimes_of_families_not_seen_for_keep_days_are_forgotten(
    owner: Owner, client: ipc.IpcClient, clock: ShiftedClock, paths: Paths
) -> None:
    """Before: each distinct script added `job_runs` rows that nothing ever pruned (30,301 kept)."""
    for family in ("nightly-old", "one-off"):
        task = client.ask(rq.Run(argv=[PY, "-c", "pass"], name=family, overrides={"family": family})).tasks[0]
        wait_for(lambda: client.ask(rq.Get(id=task.id)).task.state == "succeeded")  # noqa: B023
    wait_for(lambda: job_run_families(paths) == ["nightly-old", "one-off"])
    clock.offset_s += 3 * DAY_S  # keep_days = 2: neither family has run since
    task = client.ask(rq.Run(argv=[PY, "-c", "pass"], name="fresh", overrides={"family": "fresh"})).tasks[0]
    wait_for(lambda: client.ask(rq.Get(id=task.id)).task.state == "succeeded")
    wait_for(lambda: "fresh" in job_run_families(paths))
    clock.offset_s += 11 * 60  # the retention's next look
    owner.queue.request_dispatch()
    wait_for(lambda: job_run_families(paths) == ["fresh"], timeout_s=5, what=str(job_run_families(paths)))
    assert owner.queue.estimates.history.runs.runs("one-off") == {}  # gone from memory too


def test_clean_older_than_by_hand_forgets_those_families_too(
    owner: Owner, client: ipc.IpcClient, clock: ShiftedClock, paths: Paths
) -> None:
    task = client.ask(rq.Run(argv=[PY, "-c", "pass"], name="old", overrides={"family": "old"})).tasks[0]
    wait_for(lambda: client.ask(rq.Get(id=task.id)).task.state == "succeeded")
    wait_for(lambda: job_run_families(paths) == ["old"])
    clock.offset_s += 3600
    client.ask(rq.Clean(older_than_s=1800))  # `gputray clean --older-than 30m`
    assert job_run_families(paths) == [] and present(client) == []


def test_the_progress_files_jobs_wrote_go_with_their_logs(
    owner: Owner, client: ipc.IpcClient, clock: ShiftedClock
) -> None:
    """A job's ``GPUTRAY_PROGRESS`` file (``task-N.log.progress``, beside its log) is pruned by the same
    retention that prunes the log, by the owner's own look and by ``clean`` by hand."""
    writes = "import os; open(os.environ['GPUTRAY_PROGRESS'], 'w').write('7 7')"
    ids = []
    for i in range(5):
        reply = client.ask(rq.Run(argv=[PY, "-c", writes], name=f"p{i}", overrides={"device_prefs": ["cpu"]}))
        ids.append(reply.tasks[0].id)
        wait_for(lambda: client.ask(rq.WaitFor(ids=ids[-1:], timeout_s=10)).done)
    logs = {t.id: Path(str(t.log_path)) for t in client.ask(rq.Queue(all=True)).tasks}
    written = {i: Path(f"{p}.progress") for i, p in logs.items()}
    assert all(p.read_text() == "7 7" for p in written.values())
    clock.offset_s += 11 * 60  # the retention's next look: keep_tasks = 3
    owner.queue.request_dispatch()
    wait_for(
        lambda: [i for i, p in written.items() if p.exists()] == ids[-3:], what="the pruned ones' files gone"
    )
    assert [i for i, p in logs.items() if p.exists()] == ids[-3:]
    client.ask(rq.Clean(keep=1))
    assert [i for i, p in written.items() if p.exists()] == ids[-1:]
    assert sorted(p.name for p in logs[ids[-1]].parent.iterdir() if p.name.startswith("task-")) == [
        logs[ids[-1]].name,
        written[ids[-1]].name,
    ]
