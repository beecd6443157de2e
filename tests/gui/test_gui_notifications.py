from __future__ import annotations

import msgspec

from gputray.gui.notifications import Notice, Notifier, queue_event_kind
from gputray.monitor.busy_why import Hot, WasLost
from gputray.monitor.records import DeviceEvent
from gputray.scheduler.replies import TaskView


def make(**kw: object) -> tuple[Notifier, list[Notice], list[float]]:
    shown: list[Notice] = []
    now = [0.0]
    n = Notifier(shown.append, clock=lambda: now[0], **kw)  # type: ignore[arg-type]
    return n, shown, now


def test_job_events_become_notices_with_their_log() -> None:
    n, shown, _ = make()
    task = TaskView(id=3, name="cat.png", state="running", log_path="/logs/3.log")
    n.on_queue_event("started", task, "on GeForce RTX 5060 Ti")
    n.on_queue_event("redirected", task, "redirected to Radeon 780M: 5060 Ti busy")
    n.on_queue_event("finished", msgspec.structs.replace(task, state="succeeded"), "done in 12 s")
    n.on_queue_event("failed", msgspec.structs.replace(task, id=4, state="failed"), "exit 1")
    n.on_queue_event("queued", task, "")  # not worth a notification
    assert [s.kind for s in shown] == ["job_started", "job_redirected", "job_finished", "job_failed"]
    assert shown[0].title == "Started: cat.png" and shown[0].message == "on GeForce RTX 5060 Ti"
    assert n.last_log_path == "/logs/3.log"
    assert shown[-1].critical


def test_rate_limits_and_switches() -> None:
    n, shown, now = make(enabled={"gpu_hot": False}, repeat_s=60.0, burst=3)
    name = "GeForce RTX 5060 Ti"
    hot = DeviceEvent("hot", "pci:0000:01:00.0", name, Hot(device=name, temp_c=91.0, limit_c=85.0), 1.0)
    lost = DeviceEvent("lost", "pci:0000:01:00.0", name, WasLost(device=name), 1.0)
    n.on_device_events([hot, lost, lost])
    assert [s.kind for s in shown] == ["gpu_lost"]  # hot is off; the repeat is limited
    assert shown[0].title == "GeForce RTX 5060 Ti lost"
    now[0] = 61.0
    n.on_device_events([lost])
    assert len(shown) == 2
    for i in range(5):  # burst: at most 3 per minute (non-critical), the lost notice counts
        n.on_queue_event("started", TaskView(id=100 + i, name=f"j{i}", state="running"), "")
    assert [s.title for s in shown[2:]] == ["Started: j0", "Started: j1"]


def test_event_kind_mapping() -> None:
    assert queue_event_kind("interrupted", TaskView(id=1, state="queued")) == "job_failed"
    assert queue_event_kind("cancelled", TaskView(id=1, state="queued")) is None
    assert queue_event_kind("waiting", TaskView(id=1, state="queued")) is None
