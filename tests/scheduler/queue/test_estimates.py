"""Runtime estimates learned from real jobs (real owner, real SQLite, real processes), and the
run-elsewhere offer answered by an ordinary edit."""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import gputray
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.listing import format_devices, reason_shown
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.estimates import about
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import DeviceSlots, TaskView
from gputray.scheduler.tasks.records import QueueEvent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")

AMD = "pci:0000:64:00.0"
NVIDIA = "pci:0000:01:00.0"
PY = sys.executable


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def events() -> list[QueueEvent]:
    return []


@pytest.fixture
def client(paths: Paths, events: list[QueueEvent]) -> Iterator[ipc.IpcClient]:
    with running_owner(paths, on_event=events.append), ipc.IpcClient(paths) as c:
        yield c


def _run(client: ipc.IpcClient, cwd: Path, code: str, **overrides: object) -> TaskView:
    return client.ask(rq.Run(argv=[PY, "-c", code], cwd=str(cwd), overrides=overrides)).tasks[0]


def _ended(client: ipc.IpcClient, task_id: int) -> TaskView:
    return wait_for(
        lambda: (t := client.ask(rq.Get(id=task_id)).task).state in ("succeeded", "failed") and t,
        what=f"task {task_id} to end",
    )


def _pending(client: ipc.IpcClient, task_id: int) -> TaskView:
    return next(t for t in client.ask(rq.Queue(all=False)).tasks if t.id == task_id)


def test_a_family_that_ran_before_gets_an_estimate_per_allowed_device(
    client: ipc.IpcClient, paths: Paths, tmp_path: Path
) -> None:
    done = _ended(client, _run(client, tmp_path, "import time; time.sleep(0.2)", family="blur",
                               device_prefs=["5060ti"]).id)  # fmt: skip
    assert done.state == "succeeded" and done.device == NVIDIA
    took = (done.ended_at or 0) - (done.started_at or 0)
    later = _run(client, tmp_path, "pass", family="blur", device_prefs=["5060ti", "780m"],
                 start_at=time.time() + 3600)  # fmt: skip
    never = _run(client, tmp_path, "pass", family="never-ran", start_at=time.time() + 3600)
    estimates = wait_for(lambda: _pending(client, later.id).estimate_s, what="the estimates")
    by_key = {e.device_key: e for e in estimates}
    assert set(by_key) == {NVIDIA, AMD}
    assert by_key[NVIDIA].run_s == pytest.approx(took)
    # never ran on the 780M: scaled by the per-class default (no doctor run here): 4x slower
    assert by_key[AMD].run_s == pytest.approx(4 * took)
    assert by_key[AMD].device_name == "Radeon 780M" and by_key[NVIDIA].finish_s == pytest.approx(took)
    assert (by_key[NVIDIA].runs, by_key[AMD].runs) == (1, 0)  # measured once there; scaled, never ran
    assert _pending(client, never.id).estimate_s == ()
    slots = {d.key: d for d in client.ask(rq.Queue(all=False)).devices}
    assert slots[NVIDIA].free_in_s == 0.0  # free now
    with sqlite3.connect(f"{(paths.data_dir / 'queue.sqlite3').as_uri()}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT family, device, duration_s FROM job_runs").fetchall()
    assert rows == [("blur", NVIDIA, pytest.approx(took))]


def test_a_waiting_task_is_offered_the_free_device_and_the_edit_starts_it_there(
    client: ipc.IpcClient, events: list[QueueEvent], tmp_path: Path
) -> None:
    quick = _ended(client, _run(client, tmp_path, "pass", family="quick", device_prefs=["780m"]).id)
    assert quick.device == AMD
    blocker = _run(client, tmp_path, "import time; time.sleep(60)", device_prefs=["5060ti"])
    wait_for(lambda: client.ask(rq.Get(id=blocker.id)).task.state == "running", what="the blocker")
    waiting = _run(client, tmp_path, "pass", family="quick", device_prefs=["5060ti", "780m"], on_busy="wait")
    offer = wait_for(lambda: _pending(client, waiting.id).offer, what="the offer")
    slots = {d.key: d for d in client.ask(rq.Queue(all=False)).devices}
    assert slots[NVIDIA].free_in_s is None and slots[AMD].free_in_s == 0.0  # a job of no known family
    assert offer.device_key == AMD and offer.device_name == "Radeon 780M" and offer.waited_s > offer.run_s
    shown = reason_shown(_pending(client, waiting.id))  # `gputray queue`'s REASON: the offer and its command
    assert shown.endswith(f"; Radeon 780M is free and would run it in {about(offer.run_s)}:"
                          f" gputray edit {waiting.id} --device {AMD}"
                          f" (keep waiting: gputray edit {waiting.id} --decline-offer)"), shown  # fmt: skip
    wait_for(lambda: [e for e in events if e.kind == "offer"], what="the offer event")
    (event,) = [e for e in events if e.kind == "offer"]
    assert event.offer == offer or (event.offer is not None and event.offer.device_key == AMD)
    assert "Radeon 780M" in render(event.message)
    # "Keep waiting", from the command line: the same edit the tray sends; the offer goes
    kept = gputray("edit", str(waiting.id), "--decline-offer", home=tmp_path / "home")
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout == f"#{waiting.id} {waiting.name}: waiting, priority 0\n"
    assert (reply := client.ask(rq.Get(id=waiting.id))).spec is not None and reply.spec.offer_declined
    wait_for(lambda: _pending(client, waiting.id).offer is None, what="the offer to go")
    # "Run on Radeon 780M now": the task's first choice becomes that device, and it starts there
    client.ask(rq.Edit(id=waiting.id, changes={"device_prefs": [offer.device_key]}))
    assert _ended(client, waiting.id).device == AMD
    client.ask(rq.Cancel(ids=[blocker.id]))


def test_the_jobs_line_says_when_a_busy_device_frees_up() -> None:
    busy = DeviceSlots(
        key=NVIDIA, name="GeForce RTX 5060 Ti", slots=1, running=1, paused=False, free_in_s=700.0
    )
    idle = DeviceSlots(key=AMD, name="Radeon 780M", slots=1, running=0, paused=False, free_in_s=0.0)
    assert (
        format_devices([busy, idle]) == "jobs: GeForce RTX 5060 Ti 1/1 (frees in ~12 min) · Radeon 780M 0/1"
    )
    # none of our jobs there, yet not free: another program holds it
    held = DeviceSlots(key=AMD, name="Radeon 780M", slots=1, running=0, paused=False, free_in_s=80.0)
    assert format_devices([held]) == "jobs: Radeon 780M 0/1 (busy, frees in ~80 s)"
