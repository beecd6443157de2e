"""A backlog of tasks waiting for a time: planned once, not every pass; their caller environments stay in
the queue file (read back at launch). Real QueueService, real SQLite file, real jobs; a fake clock."""

from __future__ import annotations

import datetime as dt
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_for

from gputray.monitor.backends.simulated import SimulatedBackend
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.scenario import Scenario
from gputray.scheduler.paths import app_paths
from gputray.scheduler.queue import estimator as queue_estimator  # the dispatch pass plans through it
from gputray.scheduler.queue.placement import Plan
from gputray.scheduler.queue.service import QueueService
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskPatch, TaskSpec

BACKLOG = 2_000
PAD = "x" * 4000  # a caller environment of about 4 KiB, as a shell's often is


class FakeClock:
    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


def job(name: str, code: str = "pass", **kw: Any) -> TaskSpec:
    env = {"PATH": "/usr/bin:/bin", "GPUTRAY_TEST_PAD": PAD, "GPUTRAY_TEST_MARK": name}
    return TaskSpec(kind="command", name=name, argv=(sys.executable, "-c", code), base_env=env, **kw)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def queue(home: Path) -> Iterator[Callable[[], QueueService]]:
    made: list[QueueService] = []
    clock = FakeClock()
    paths = app_paths()
    store = TaskStore(paths.queue_db)

    def start() -> QueueService:
        monitor = Monitor([SimulatedBackend(Scenario(()), clock=clock)], host=HostReader(), clock=clock)
        monitor.sample_once()
        q = QueueService(store, monitor, paths=paths, clock=clock)
        made.append(q)
        q.start()
        return q

    start.clock = clock  # type: ignore[attr-defined]
    start.store = store  # type: ignore[attr-defined]
    yield start
    for q in made:
        q.close(kill_running=True)
    store.close()


def test_tasks_waiting_for_a_time_are_planned_once_not_every_pass(
    queue: Callable[[], QueueService], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock: FakeClock = queue.clock  # type: ignore[attr-defined]
    store: TaskStore = queue.store  # type: ignore[attr-defined]
    later = [job(f"later {i}", device_prefs=("cpu",), start_at=clock.t + 10 * 3600) for i in range(BACKLOG)]
    store.add_many(later)
    planned: list[int] = []
    real_plan = queue_estimator.plan

    def counting_plan(tasks: Sequence[Any], *args: Any, **kw: Any) -> Plan:
        planned.append(len(tasks))
        return real_plan(tasks, *args, **kw)

    monkeypatch.setattr(queue_estimator, "plan", counting_plan)
    q = queue()
    wait_for(lambda: all(r.state == "waiting" for r in store.pending()))
    assert render(q.get(BACKLOG).reason).startswith("starts at")
    planned.clear()
    for i in range(5):
        now = q.submit(job(f"now {i}", device_prefs=("cpu",)))
        wait_for(lambda now=now: q.get(now.id).state == "succeeded")  # type: ignore[misc]
        q.dispatch()
    # Each pass plans what can start (the new task), not the 2,000 that wait for their time.
    assert planned and max(planned) <= 5, planned
    assert all(r.state == "waiting" and render(r.reason).startswith("starts at") for r in store.pending())


def test_a_task_put_aside_starts_when_its_time_comes_or_when_edited(
    queue: Callable[[], QueueService],
) -> None:
    clock: FakeClock = queue.clock  # type: ignore[attr-defined]
    q = queue()
    soon = q.submit(job("soon", "print('ran')", device_prefs=("cpu",), start_at=clock.t + 60))
    edited = q.submit(job("edited", device_prefs=("cpu",), start_at=clock.t + 3600))
    wait_for(lambda: q.get(soon.id).state == "waiting" and q.get(edited.id).state == "waiting")
    q.dispatch()
    assert q.get(soon.id).state == "waiting"
    clock.t += 61  # its time comes: the dispatcher wakes for it (the fake clock moved; wake it now)
    q.request_dispatch(urgent=True)
    wait_for(lambda: q.get(soon.id).state == "succeeded")
    assert "ran" in Path(str(q.get(soon.id).log_path)).read_text()
    assert q.get(edited.id).state == "waiting"
    q.edits.edit(edited.id, TaskPatch(start_at=None))  # changed: planned afresh, at once
    wait_for(lambda: q.get(edited.id).state == "succeeded")


def test_caller_environments_stay_in_the_file_and_reach_the_job(queue: Callable[[], QueueService]) -> None:
    clock: FakeClock = queue.clock  # type: ignore[attr-defined]
    store: TaskStore = queue.store  # type: ignore[attr-defined]
    store.add_many([job(f"later {i}", start_at=clock.t + 3600) for i in range(BACKLOG)])
    path = store.path
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        reopened = TaskStore(path)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    reopened.close()
    # Each task's 4 KiB environment would be ~10 KiB as a dict of str; the owner holds ~1 KiB a task.
    assert held < BACKLOG * 2048, f"{held / BACKLOG:.0f} bytes a task"
    q = queue()
    code = "import os; print('MARK', os.environ['GPUTRAY_TEST_MARK'], len(os.environ['GPUTRAY_TEST_PAD']))"
    rec = q.submit(job("marked", code, device_prefs=("cpu",)))
    wait_for(lambda: q.get(rec.id).state == "succeeded")
    assert "MARK marked 4000" in Path(str(q.get(rec.id).log_path)).read_text()
    assert dict(store.get(rec.id).spec.base_env or {})["GPUTRAY_TEST_MARK"] == "marked"


def test_a_task_put_aside_for_its_window_starts_when_the_clock_is_set_back_into_it(
    queue: Callable[[], QueueService],
) -> None:
    clock: FakeClock = queue.clock  # type: ignore[attr-defined]
    ten = dt.datetime.now().replace(hour=10, minute=0, second=0, microsecond=0)
    clock.t = ten.timestamp()
    q = queue()
    rec = q.submit(job("windowed", device_prefs=("cpu",), window="09:00-09:30"))
    wait_for(lambda: render(q.get(rec.id).reason).startswith("waits for its window"))
    q.dispatch()  # put aside until tomorrow 09:00
    clock.t -= 40 * 60  # 09:20: the window is open
    q.request_dispatch()
    wait_for(lambda: q.get(rec.id).state == "succeeded")
