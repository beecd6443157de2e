"""A wall clock that is set, inside a real owner: schedules are planned afresh from the new time, and
``schedule list`` shows what the dispatcher will do (one plan). The owner's clock is shifted, not faked:
time passes as it does, plus an offset the test sets."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import ShiftedClock, home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths
from gputray.scheduler.tasks.records import TaskPatch, iso_utc

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")
PY = sys.executable


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


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


def every_five_minutes(client: ipc.IpcClient, tmp_path: Path) -> int:
    task = tmp_path / "often.toml"
    task.write_text(f'kind = "command"\nname = "often"\nargv = ["{PY}", "-c", "print(5)"]\n')
    return int(client.ask(rq.ScheduleAdd(cron="*/5 * * * *", task_file=str(task))).schedules[0].id)


def listed_next(client: ipc.IpcClient) -> str | None:
    return iso_utc(client.ask(rq.ScheduleList()).schedules[0].next_run_at)


def runs(client: ipc.IpcClient) -> int:
    return sum(t.name == "often" for t in client.ask(rq.Queue(all=True)).tasks)


def next_five(after_s: float) -> float:
    return (int(after_s) // 300 + 1) * 300.0  # whole five minutes (every time zone's offset is 15-min)


def test_clock_set_back_an_hour_a_five_minute_schedule_runs_at_the_new_times(
    owner: Owner, client: ipc.IpcClient, clock: ShiftedClock, tmp_path: Path
) -> None:
    clock.set_to(next_five(time.time()) + 30)  # half a minute past a run: the next is 4.5 min away
    every_five_minutes(client, tmp_path)
    planned = next_five(clock())
    assert listed_next(client) == iso_utc(planned)
    clock.offset_s -= 3600  # set back an hour
    assert listed_next(client) == iso_utc(planned - 3600)
    clock.set_to(planned - 3600 + 1)  # a second past the first run of the new time
    owner.queue.request_dispatch()
    wait_for(lambda: runs(client) == 1)  # before: nothing for an hour (the old plan was kept)
    assert owner.timing is not None
    timing = owner.timing
    wait_for(lambda: listed_next(client) == iso_utc(planned - 3600 + 300))  # planned just after the submit
    assert listed_next(client) == iso_utc(timing.next_due_s())


def test_clock_set_forward_an_hour_the_missed_run_happens_once_and_the_plan_follows(
    owner: Owner, client: ipc.IpcClient, clock: ShiftedClock, tmp_path: Path
) -> None:
    clock.set_to(next_five(time.time()) + 30)
    every_five_minutes(client, tmp_path)
    clock.offset_s += 3600  # twelve runs were due meanwhile: one of them happens
    owner.queue.request_dispatch()
    wait_for(lambda: runs(client) == 1)
    assert owner.timing is not None
    timing = owner.timing
    wait_for(lambda: listed_next(client) == iso_utc(next_five(clock())))  # planned just after the submit
    assert listed_next(client) == iso_utc(timing.next_due_s())


YEAR_S = 365 * 86_400.0


def test_a_clock_set_while_a_job_runs_does_not_make_a_year_long_run(
    owner: Owner, client: ipc.IpcClient, clock: ShiftedClock, tmp_path: Path
) -> None:
    """The machine's clock is a year behind when the job starts and is set right while it runs (NTP
    after a dead RTC battery). Before: DUR a year, `estimate_s` 1.58e7 s for its family, so `--prefer
    fastest` sent the family elsewhere. Durations come from the monotonic clock."""
    go = tmp_path / "go"
    code = f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)"
    clock.offset_s = -YEAR_S
    task = client.ask(
        rq.Run(
            argv=[PY, "-c", code], name="train", overrides=TaskPatch(family="train", device_prefs=("5060ti",))
        )
    ).tasks[0]
    running = wait_for(lambda: (t := client.ask(rq.Get(id=task.id)).task).state == "running" and t)
    clock.offset_s = 0.0  # set right while it runs
    wait_for(
        lambda: (t := client.ask(rq.Get(id=task.id)).task).started_at and t.started_at > time.time() - 600
    )
    go.touch()
    done = wait_for(lambda: (t := client.ask(rq.Get(id=task.id)).task).state == "succeeded" and t)
    assert done.started_at is not None and done.ended_at is not None and running.started_at is not None
    assert 0 < done.ended_at - done.started_at < 120, (done.started_at, done.ended_at)
    assert abs(done.ended_at - time.time()) < 120  # on the clock as it reads now
    later = client.ask(
        rq.Run(argv=[PY, "-c", "pass"], name="again", overrides=TaskPatch(
            family="train", device_prefs=("5060ti",), start_at=time.time() + 3600))
    ).tasks[0]  # fmt: skip
    estimates = wait_for(lambda: next(t for t in client.ask(rq.Queue()).tasks if t.id == later.id).estimate_s)
    assert all(e.run_s < 120 for e in estimates), estimates
