"""Tests put tasks in a state through the lifecycle's own steps (``tasks/lifecycle.py``), as the queue
does: a row can only be in a state the table allows it to reach."""

from __future__ import annotations

from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.codes import Cancelled, Reason, Said
from gputray.scheduler.tasks import cluster_steps as remote
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskRecord


def said(why: str | Reason) -> Reason:
    """A reason given as words (what an earlier gputray saved) as a reason; a code as it is."""
    return Said(text=why) if isinstance(why, str) else why


def start(
    store: TaskStore,
    task_id: int,
    *,
    attempts: int | None = None,
    device: str = "cpu",
    started_at: float = 1.0,
    pid: int | None = None,
    pid_create_time: float | None = None,
    log_path: str = "",
    env: str | None = None,
    reason: str | Reason | None = None,
) -> TaskRecord:
    """A pending task marked running (its job's ``pid``), attempt ``attempts`` (the next by default)."""
    rec = store.get(task_id)
    step = life.Start(
        device=device,
        env=env,
        reason=said(reason) if reason else None,
        attempts=rec.attempts + 1 if attempts is None else attempts,
        started_at=started_at,
        log_path=log_path,
        pid=pid,
        pid_create_time=pid_create_time,
    )
    return store.must_apply(task_id, step)


def succeed(store: TaskStore, task_id: int, *, ended_at: float = 2.0, **started: object) -> TaskRecord:
    """Run (unless running) and exit 0."""
    if store.get(task_id).state != "running":
        start(store, task_id, **started)  # type: ignore[arg-type]
    return store.must_apply(task_id, life.Succeed(end=life.JobEnd(exit_code=0, ended_at=ended_at)))


def fail_run(
    store: TaskStore,
    task_id: int,
    why: str | Reason,
    *,
    exit_code: int | None = 1,
    ended_at: float = 2.0,
    **started: object,
) -> TaskRecord:
    """Run (unless running) and fail with ``why``, no retry whatever the spec allows."""
    if store.get(task_id).state != "running":
        start(store, task_id, **started)  # type: ignore[arg-type]
    end = life.JobEnd(exit_code=exit_code, ended_at=ended_at)
    return store.must_apply(task_id, life.RetryOrFail(why=said(why), now=ended_at, end=end, may_retry=False))


def fail(store: TaskStore, task_id: int, reason: str | Reason, *, ended_at: float = 2.0) -> TaskRecord:
    """A pending task that can never start: failed with ``reason``."""
    return store.must_apply(task_id, life.Fail(reason=said(reason), ended_at=ended_at))


def cancel(store: TaskStore, task_id: int, *, ended_at: float = 2.0) -> TaskRecord:
    return store.must_apply(task_id, life.Cancel(reason=Cancelled(), ended_at=ended_at))


def wait(store: TaskStore, task_id: int, reason: str | Reason) -> TaskRecord:
    return store.must_apply(task_id, life.Wait(reason=said(reason)))


def hand_over(
    store: TaskStore,
    task_id: int,
    machine: str,
    remote_id: int,
    *,
    remote_state: str = "queued",
    log_path: str = "",
) -> TaskRecord:
    """A pending task handed to ``machine`` (a new attempt), taken there as ``remote_id``: waiting."""
    rec = store.get(task_id)
    sending = remote.HandOver(
        machine=machine,
        device=f"{machine}/cpu",
        reason=Said(text="sending"),
        into="waiting",
        attempts=rec.attempts + 1,
    )
    store.must_apply(task_id, sending)
    taken = remote.Handed(
        remote_id=remote_id, remote_state=remote_state, log_path=log_path, reason=Said(text="there")
    )
    return store.must_apply(task_id, taken)


def run_there(store: TaskStore, task_id: int, machine: str, remote_id: int) -> TaskRecord:
    """``hand_over``, then running there."""
    hand_over(store, task_id, machine, remote_id)
    running = remote.RemoteRun(
        into="running", remote_state="running", reason=Said(text="on it"), started_at=1.0
    )
    return store.must_apply(task_id, running)
