"""Taking back a task another machine handed here ("withdraw if not started", the holder's side): a
compare-and-set under the queue's lock against the queue's own start. A real queue and the real
cluster link (no Ray); the tasks are real jobs on the CPU slot."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import task_steps as steps
from test_machine_tasks import Desk
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import ClusterTask
from gputray.scheduler.tasks.records import TaskPatch, TaskRecord, TaskSpec

WHY = "taken back by laptop: it waited here and laptop is free"


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Desk]:
    d = Desk(tmp_path)
    yield d
    d.close()


def _handed_here(holder: Desk, origin: str, code: str = "pass") -> TaskRecord:
    spec = TaskSpec(kind="command", name="handed", argv=("python3", "-c", code), device_prefs=("cpu",))
    got = holder.link.submit(rq.ClusterSubmit(origin=origin, spec=spec)).task
    assert got is not None
    return got


def _withdraw(holder: Desk, rec: TaskRecord, origin: str) -> ClusterTask:
    return holder.link.withdraw(rq.ClusterWithdraw(id=rec.id, origin=origin, reason=WHY))


def test_a_task_that_waits_here_is_withdrawn_and_never_starts(holder: Desk) -> None:
    holder.queue.pause()
    rec = _handed_here(holder, "laptop#3.1")
    holder.queue.dispatch()
    assert holder.queue.get(rec.id).state == "waiting"
    got = _withdraw(holder, rec, "laptop#3.1")
    assert got.task is not None and got.task.state == "cancelled" and render(got.task.reason) == WHY
    holder.queue.resume()
    holder.queue.dispatch()
    after = holder.queue.get(rec.id)
    assert after.state == "cancelled" and after.started_at is None


def test_a_task_that_started_first_is_not_withdrawn_and_runs_on(holder: Desk) -> None:
    rec = _handed_here(holder, "laptop#3.1", "import time; time.sleep(30)")
    holder.queue.dispatch()
    wait_for(lambda: holder.queue.get(rec.id).state == "running", 30, "the handed task to start")
    got = _withdraw(holder, rec, "laptop#3.1")
    assert got.task is None and got.now is not None and got.now.state == "running"
    assert holder.queue.get(rec.id).state == "running"


def test_only_the_copy_the_origin_names_is_withdrawn(holder: Desk) -> None:
    holder.queue.pause()
    rec = _handed_here(holder, "laptop#3.2")
    got = _withdraw(holder, rec, "laptop#3.1")  # an earlier attempt's hand-over: not this copy
    assert got.task is None and holder.queue.get(rec.id).state in ("queued", "waiting")


def _race(holder: Desk, origin: str, *, withdraw_first: bool) -> tuple[ClusterTask, TaskRecord]:
    """A withdraw and a dispatch pass let go at the same moment (``withdraw_first``: the withdraw in
    this thread, which the barrier wakes a little sooner); what the withdraw got, how the task ended."""
    rec = _handed_here(holder, origin, "print('ran')")
    results: list[ClusterTask] = []
    go = threading.Barrier(2)

    def withdraw() -> None:
        go.wait()
        results.append(_withdraw(holder, rec, origin))

    def dispatch() -> None:
        go.wait()
        holder.queue.dispatch()

    other = threading.Thread(target=dispatch if withdraw_first else withdraw)
    other.start()
    (withdraw if withdraw_first else dispatch)()
    other.join()
    wait_for(lambda: holder.queue.get(rec.id).finished, 30, "the task to end either way")
    return results[0], holder.queue.get(rec.id)


def test_a_withdraw_racing_the_queues_start_never_lets_both_win(holder: Desk) -> None:
    """Many times over, exactly one wins: a withdrawn task never started, a started one was not withdrawn."""
    for i in range(12):
        got, final = _race(holder, f"laptop#{i + 10}.1", withdraw_first=i % 2 == 0)
        if got.task is not None:
            assert final.state == "cancelled" and final.started_at is None and render(final.reason) == WHY
        else:
            assert final.state == "succeeded" and final.started_at is not None


# --- the submitter's side: the bridge takes a task back (Ray's handle stood in for) ---------------------


class _Holder:
    """The laptop's agent as the bridge calls it: ``withdraw`` answers as the laptop's owner would."""

    def __init__(self, started_first: bool) -> None:
        self.calls: list[tuple[int, str, str]] = []
        agent = self

        class withdraw:
            @staticmethod
            def remote(task_id: int, origin: str, reason: Reason) -> object:
                agent.calls.append((task_id, origin, render(reason)))  # as the laptop's queue words it
                return None if started_first else object()  # the cancelled record there

        class cleanup:
            @staticmethod
            def remote(origin: str) -> None:
                return None

        self.withdraw, self.cleanup = withdraw, cleanup


def _waiting_on_laptop(desk: Desk, monkeypatch: pytest.MonkeyPatch, holder: _Holder) -> TaskRecord:
    """A task for any machine, handed to the laptop as its #4, waiting there; desk's CPU is free."""
    import types

    import gputray.cluster.bridge_base as bridge_module
    import gputray.cluster.bridge_placing as placing_module
    from gputray.cluster.bridge_base import _Machine

    monkeypatch.setattr(
        bridge_module, "ray", lambda: types.SimpleNamespace(get=lambda ref, timeout=None: ref)
    )
    monkeypatch.setattr(placing_module, "PLACED_HERE_GRACE_S", 0.0)
    desk.report()
    spec = TaskSpec(kind="command", name="any job", argv=("python3", "-c", "pass"), machine="any")
    rec = desk.queue.submit(spec.replace(device_prefs=("cpu",)))
    steps.hand_over(desk.store, rec.id, "laptop", 4, remote_state="waiting")
    desk.bridge.machines["laptop"].handle = holder
    desk.bridge._ask = desk.link.update  # type: ignore[assignment,method-assign]  # the owner, in this process
    assert isinstance(desk.bridge.machines["laptop"], _Machine)
    return desk.store.get(rec.id)


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    d = Desk(tmp_path)
    yield d
    d.close()


def test_a_task_waiting_on_the_laptop_while_desk_is_free_is_taken_back_and_the_row_says_why(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = _Holder(started_first=False)
    rec = _waiting_on_laptop(desk, monkeypatch, laptop)
    desk.bridge._take_back([rec], [])
    assert laptop.calls == [
        (4, f"desk#{rec.id}.1", "taken back by desk: it waited here and this machine is free")
    ]
    now = desk.store.get(rec.id)
    why = "taken back from laptop: it waited there and desk is free"
    assert (now.machine, now.remote_id, now.state, render(now.reason)) == ("desk", None, "queued", why)
    assert now.attempts == 0  # the copy on the laptop never ran
    assert desk.link.runs_here(now)  # the queue here starts it
    assert why in (desk.paths.logs_dir / f"task-{rec.id}.log").read_text()


def test_a_task_that_started_on_the_laptop_first_stays_there(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = _Holder(started_first=True)
    rec = _waiting_on_laptop(desk, monkeypatch, laptop)
    desk.bridge._take_back([rec], [])
    assert len(laptop.calls) == 1
    now = desk.store.get(rec.id)
    assert (now.machine, now.remote_id, now.state) == ("laptop", 4, "waiting")


def test_an_edit_of_a_task_waiting_on_the_laptop_takes_it_back_to_place_it_afresh_as_edited(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = _Holder(started_first=False)
    rec = _waiting_on_laptop(desk, monkeypatch, laptop)
    desk.queue.edits.edit(rec.id, TaskPatch(priority=5))
    edited = desk.link.sync(rq.ClusterSync(bridge_key=desk.link.bridge_key)).edited
    assert edited == (rec.id,)  # today the copy there ran as it was sent, the edit never reached it
    desk.bridge._edited = set(edited)
    desk.bridge._take_back([desk.store.get(rec.id)], [])
    assert laptop.calls == [(4, f"desk#{rec.id}.1", "taken back by desk to apply an edit")]
    now = desk.store.get(rec.id)
    assert (now.machine, now.remote_id, now.state) == (None, None, "queued")  # placed afresh next pass
    assert render(now.reason) == "taken back from laptop to apply the edit" and now.spec.priority == 5
    assert desk.link.sync(rq.ClusterSync(bridge_key=desk.link.bridge_key)).edited == ()


def test_an_edit_that_comes_after_the_start_there_is_said_so(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = _Holder(started_first=True)
    rec = _waiting_on_laptop(desk, monkeypatch, laptop)
    desk.queue.edits.edit(rec.id, TaskPatch(priority=5))
    desk.bridge._edited = set(desk.link.sync(rq.ClusterSync(bridge_key=desk.link.bridge_key)).edited)
    desk.bridge._take_back([desk.store.get(rec.id)], [])
    now = desk.store.get(rec.id)
    assert (now.machine, now.remote_id) == ("laptop", 4)
    assert render(now.reason) == "on laptop (#4): it started there before the edit; it runs as sent"
