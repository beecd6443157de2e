"""Priority with teeth (issue 28, item 3): a ``--preempt`` task that waits because a lower-priority job
of ours holds its GPU pauses that job (frozen for real), runs, and the job resumes when it ends; a job
whose task says ``preemptible = false`` is never paused; without ``--preempt`` the task waits as before.
A real owner with the simulated pair, real jobs.

Before: a high-priority task waited behind any running job, however unimportant."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="real jobs paused on Linux")

PY = sys.executable
NVIDIA = "pci:0000:01:00.0"  # the simulated RTX 5060 Ti: one slot


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def owner(paths: Paths) -> Iterator[Owner]:
    with running_owner(paths) as o:
        yield o


@pytest.fixture
def client(paths: Paths, owner: Owner) -> Iterator[ipc.IpcClient]:
    with ipc.IpcClient(paths, timeout_s=60) as c:
        yield c


def _task(client: ipc.IpcClient, task_id: int) -> TaskView:
    return client.ask(rq.Get(id=task_id)).task


def _counter(tmp_path: Path, name: str) -> list[str]:
    """A job that counts in a file every 50 ms: while it is frozen the count stands still."""
    mark = tmp_path / name
    count = f" open({str(mark)!r}, 'w').write(str(n))"
    return [PY, "-c", f"import time\nn = 0\nwhile True:\n n += 1\n{count}\n time.sleep(0.05)"]


def _run(client: ipc.IpcClient, argv: list[str], name: str, **overrides: object) -> TaskView:
    return client.ask(rq.Run(argv=argv, name=name, overrides={"device_prefs": [NVIDIA], **overrides})).tasks[
        0
    ]


def _count(tmp_path: Path, name: str) -> int:
    text = (tmp_path / name).read_text() if (tmp_path / name).exists() else ""
    return int(text) if text.isdigit() else 0


def test_a_preempting_task_pauses_the_lower_priority_job_and_it_resumes_after(
    client: ipc.IpcClient, tmp_path: Path
) -> None:
    low = _run(client, _counter(tmp_path, "low"), "low")
    wait_for(lambda: _count(tmp_path, "low") > 0, what="the low-priority job to count")
    go = tmp_path / "go"
    high = client.ask(rq.Run(
        argv=[PY, "-c", f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)"],
        name="high", overrides={"device_prefs": [NVIDIA], "priority": 10, "preempt": True},
    )).tasks[0]  # fmt: skip
    started = wait_for(
        lambda: (t := _task(client, high.id)).state == "running" and t, what="the high one to start"
    )
    assert started.device == NVIDIA
    paused = _task(client, low.id)
    assert paused.shown_state == "paused"
    assert render(paused.reason).startswith(f"paused for #{high.id} (priority 10) at "), paused.reason
    held = _count(tmp_path, "low")
    time.sleep(0.3)  # frozen: it counts nothing, however long it is given
    assert _count(tmp_path, "low") == held
    go.touch()  # the high-priority task ends: the low one resumes
    wait_for(lambda: _task(client, high.id).state == "succeeded", what="the high one to end")
    wait_for(lambda: _count(tmp_path, "low") > held, what="the low one to count again")
    resumed = _task(client, low.id)
    assert (
        resumed.shown_state == "running" and "; resumed " in render(resumed.reason) and resumed.paused_s > 0
    )
    client.ask(rq.Cancel(ids=[low.id]))


def test_never_a_job_that_is_not_preemptible_and_never_without_preempt(
    client: ipc.IpcClient, owner: Owner, tmp_path: Path
) -> None:
    keep = _run(client, _counter(tmp_path, "keep"), "keep", preemptible=False)
    wait_for(lambda: _count(tmp_path, "keep") > 0, what="the job to count")
    eager = _run(client, [PY, "-c", "pass"], "eager", priority=10, preempt=True)
    polite = _run(client, [PY, "-c", "pass"], "polite", priority=20)
    wait_for(lambda: _task(client, eager.id).state == "waiting", what="the preempting task to wait")
    timer = owner.preemption
    assert timer is not None
    looked = timer.looks
    wait_for(lambda: timer.looks >= looked + 2, what="two looks of the preemption timer")  # nothing done
    assert _task(client, keep.id).shown_state == "running"
    assert _task(client, polite.id).state == "waiting" and _task(client, eager.id).state == "waiting"
    client.ask(rq.Cancel(ids=[keep.id]))
    for task in (eager, polite):
        wait_for(lambda t=task: _task(client, t.id).state == "succeeded", what=f"{task.name} to run")
    assert os.path.exists(tmp_path / "keep")


def test_a_job_paused_for_a_preempting_task_resumes_when_it_ends_under_the_next_owner(
    paths: Paths, tmp_path: Path
) -> None:
    """Jobs outlive their owner; the next owner reads whom a frozen job was paused for from its stored
    reason and resumes it when that task ends. Before: that lived in the pausing owner's memory only,
    and after a restart the job stayed frozen for good."""
    go = tmp_path / "go"
    try:
        with running_owner(paths) as first, ipc.IpcClient(paths, timeout_s=60) as client:
            low = _run(client, _counter(tmp_path, "low"), "low")
            wait_for(lambda: _count(tmp_path, "low") > 0, what="the low-priority job to count")
            waits = f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)"
            high = _run(client, [PY, "-c", waits], "high", priority=10, preempt=True)
            wait_for(lambda: _task(client, high.id).state == "running", what="the high one to start")
            assert _task(client, low.id).shown_state == "paused"
            first.stop(kill_running=False)  # the owner goes (a crash, an update); its jobs run on
        held = _count(tmp_path, "low")
        with running_owner(paths), ipc.IpcClient(paths, timeout_s=60) as client:
            seen = _task(client, low.id)
            assert seen.shown_state == "paused", (seen.state, render(seen.reason))  # adopted as it was
            go.touch()  # the task it was paused for ends under this owner
            wait_for(lambda: _task(client, high.id).state == "succeeded", what="the high one to end")
            wait_for(lambda: _count(tmp_path, "low") > held, what="the low one to count again")
            assert _task(client, low.id).shown_state == "running"
            client.ask(rq.Cancel(ids=[low.id]))
    finally:
        go.touch()
