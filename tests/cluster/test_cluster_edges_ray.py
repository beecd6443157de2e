"""Issue 22's cluster edges on a real Ray cluster on this machine (see tests/cluster_harness.py): desk
(its 5060 Ti held by llama-server) and laptop (an idle 780M), both with a CPU slot.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from cluster_harness import (
    PY,
    Machine,
    RayCluster,
    desk_and_laptop,
    ray_available,
)
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.codes import Said
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks import cluster_steps as remote

_why_not = ray_available()
pytestmark = [
    pytest.mark.skipif(_why_not is not None, reason=Said(text=f"needs a real Ray cluster: {_why_not}")),
    pytest.mark.slow,
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RayCluster, Machine, Machine]]:
    with desk_and_laptop(tmp_path_factory.mktemp("edges")) as world:
        yield world


def _ids(done: subprocess.CompletedProcess[str]) -> list[int]:
    assert done.returncode == 0, done.stdout + done.stderr
    return [int(t["id"]) for t in json.loads(done.stdout)]


def test_pause_then_run_on_any_machine_goes_to_the_free_machine_never_stays_on_the_paused_one(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, _ = world
    assert desk.cli("pause").returncode == 0
    try:
        ids = []
        for _ in range(6):  # today's bridge placed 2 in 12 on the paused machine (a view 0.5 s old)
            args = ("run", "--machine", "any", "--device", "cpu", "--json", "--", PY, "-c", "print('hi')")
            ids += _ids(desk.cli(*args))
        for task_id in ids:
            wait_for(
                lambda task_id=task_id: desk.task(task_id).state == "succeeded",  # type: ignore[misc]
                60,
                f"#{task_id} to run on the laptop while desk is paused: {desk.task(task_id)}\n{desk.logs()}",
            )
            assert desk.task(task_id).machine == "laptop"
    finally:
        assert desk.cli("resume").returncode == 0


LONG_JOB = """
import pathlib, time
print("started", flush=True)
for _ in range(1200):
    if pathlib.Path("stop").exists():
        break
    time.sleep(0.1)
print("finished", flush=True)
"""


def test_a_remote_owner_that_stops_mid_job_is_shown_as_such_and_followed_again_on_return(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, laptop = world
    (desk.work / "long.py").write_text(LONG_JOB, encoding="utf-8")
    (task_id,) = _ids(
        desk.cli("run", "--machine", "laptop", "--device", "780m", "--json", "--", PY, "long.py")
    )
    wait_for(lambda: desk.task(task_id).state == "running", 60, f"#{task_id} running: {desk.task(task_id)}")
    laptop.stop()  # its daemon (and so its agent's answers) stops; its Ray node stays
    wait_for(
        lambda: "laptop has not answered since" in render(desk.task(task_id).reason),
        60,
        f"desk's row to say the laptop does not answer: {desk.task(task_id)}",
    )
    laptop.start()
    wait_for(
        lambda: "has not answered" not in render(desk.task(task_id).reason),
        90,
        f"desk to follow it again: {desk.task(task_id)}\n{desk.logs()}",
    )
    # what its own queue made of the job after the restart is what desk's row says now
    theirs = [t for t in laptop.ask(rq.Queue(all=True)).tasks if str(t.origin).startswith(f"desk#{task_id}.")]
    if desk.task(task_id).state == "running":
        desk.cli("cancel", str(task_id))
    wait_for(lambda: desk.task(task_id).state == laptop.task(theirs[0].id).state, 60, "the same end on both")


def _paused_devices(machine: Machine, of: str) -> list[bool]:
    """Whether each GPU of machine ``of`` shows paused in ``machine``'s ``status --cluster``."""
    report = machine.cluster().report
    machines = report.machines if report is not None else ()
    return [d.paused for m in machines if m.name == of for d in m.devices]


def test_a_pause_is_pushed_status_cluster_shows_it_at_once_and_the_other_machine_within_seconds(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, laptop = world
    assert _paused_devices(laptop, "laptop") and not any(_paused_devices(laptop, "laptop"))
    laptop.ask(rq.Pause())
    try:
        # at once: today's report was the bridge's last one, taken before the pause
        assert all(_paused_devices(laptop, "laptop")), laptop.cluster()
        wait_for(lambda: all(_paused_devices(desk, "laptop")), 10, "desk to see the laptop paused")
    finally:
        laptop.ask(rq.Resume())
    assert not any(_paused_devices(laptop, "laptop")), laptop.cluster()
    wait_for(lambda: not any(_paused_devices(desk, "laptop")), 10, "desk to see the laptop resumed")


def test_a_task_waiting_on_the_laptop_is_taken_back_when_desk_is_free_and_runs_once(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    """The laptop holds a task for any machine that waits there (its queue paused since it arrived, as a
    GPU that got busy would hold it); desk frees up: desk's bridge withdraws it from the laptop, which
    had not started it, and runs it here. The hand-over is the bridge's own, done by the test at the
    moment both queues are paused (placement would otherwise never hand a task to a paused machine)."""
    _, desk, laptop = world
    desk.ask(rq.Pause())
    laptop.ask(rq.Pause())
    try:
        wait_for(lambda: all(_paused_devices(desk, "laptop")), 10, "desk to see the laptop paused")
        args = ("run", "--machine", "any", "--device", "cpu", "--json", "--", PY, "-c", "print('ran')")
        (task_id,) = _ids(desk.cli(*args))
        wait_for(
            lambda: "paused" in render(desk.task(task_id).reason),
            20,
            f"#{task_id} to wait: {desk.task(task_id)}",
        )
        spec = desk.ask(rq.Get(id=task_id)).spec
        assert spec is not None
        origin = f"desk#{task_id}.1"
        there = laptop.ask(
            rq.ClusterSubmit(origin=origin, spec=spec.replace(machine=None, origin=origin))
        ).task
        assert there is not None
        key = desk.bridge_key()  # the hand-over is the bridge's: sent with its key
        sending = remote.HandOver(
            machine="laptop", device="laptop/cpu", reason=Said(text="sending"), into="waiting", attempts=1
        )
        handed = remote.Handed(
            remote_id=there.id,
            remote_state="queued",
            log_path="",
            reason=Said(text=f"on laptop as #{there.id}"),
        )
        for step in (sending, handed):
            sent = rq.ClusterUpdate(id=task_id, expect_state="waiting", step=step, bridge_key=key)
            assert desk.ask(sent).task is not None
        desk.ask(rq.Resume())
        wait_for(
            lambda: desk.task(task_id).state == "succeeded",
            60,
            f"#{task_id} to be taken back and run on desk: {desk.task(task_id)}\n{desk.logs()}",
        )
    finally:
        desk.ask(rq.Resume())
        laptop.ask(rq.Resume())
    assert desk.task(task_id).machine == "desk"
    theirs = laptop.task(there.id)
    assert theirs.state == "cancelled" and theirs.started_at is None, theirs
    assert render(theirs.reason) == "taken back by desk: it waited here and this machine is free"
    log = desk.ask(rq.Logs(id=task_id)).text
    assert "taken back from laptop: it waited there and desk is free" in log and "ran" in log, log
