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
from gputray.scheduler.tasks.records import iso_utc

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
