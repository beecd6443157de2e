"""Dependencies (``--after``): when a dependant may start, when it fails, what ``retry`` brings back, and
what is refused at submit or edit. Pure functions over task records; the real daemon's chain is in
tests/e2e/test_queue_e2e.py."""

from __future__ import annotations

from typing import Any

import pytest

from gputray.scheduler.queue.dependencies import (
    Blocked,
    Broken,
    DependencyError,
    check_after,
    failed_because_of,
    gate,
)
from gputray.scheduler.reasons.codes import Cancelled, DependencyFailed, DepState, ExitedWith
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec


def rec(task_id: int, state: str = "queued", after: tuple[int, ...] = (), **kw: Any) -> TaskRecord:
    any_end = kw.pop("after_any", False)
    spec = TaskSpec(kind="command", name=f"t{task_id}", argv=("true",), after=after, after_any=any_end)
    return TaskRecord(id=task_id, spec=spec, state=state, submitted_at=0.0, **kw)  # type: ignore[arg-type]


def by_id(*records: TaskRecord) -> dict[int, TaskRecord]:
    return {r.id: r for r in records}


def test_a_dependant_waits_until_every_dependency_succeeded() -> None:
    b = rec(2, after=(1, 3))
    tasks = by_id(rec(1, "running"), b, rec(3, "queued"))
    blocked = gate(b, tasks)
    assert isinstance(blocked, Blocked)
    assert render(blocked.reason) == "waits for #1 't1' (running), #3 't3' (queued) to succeed"
    still = gate(b, by_id(rec(1, "succeeded"), b, rec(3, "interrupted")))
    assert isinstance(still, Blocked)  # interrupted is no end: the retry policy decides
    assert render(still.reason) == "waits for #3 't3' (interrupted) to succeed"
    assert gate(b, by_id(rec(1, "succeeded"), b, rec(3, "succeeded"))) is None
    assert gate(rec(4), tasks) is None  # no dependencies


def test_a_failed_or_cancelled_dependency_fails_the_dependant_naming_it() -> None:
    c = rec(3, after=(2,))
    broken = gate(c, by_id(rec(2, "failed", reason=ExitedWith(status=4)), c))
    assert isinstance(broken, Broken)
    assert render(broken.reason) == "dependency #2 't2' failed: exited with status 4"
    cancelled = gate(c, by_id(rec(2, "cancelled", reason=Cancelled()), c))
    assert isinstance(cancelled, Broken)
    assert render(cancelled.reason) == "dependency #2 't2' cancelled: cancelled"
    # down a chain, the reason stays short and names the link it came through
    d = rec(4, after=(3,))
    failed_c = rec(3, "failed", after=(2,), reason=broken.reason)
    down = gate(d, by_id(failed_c, d))
    assert isinstance(down, Broken)
    assert (
        render(down.reason)
        == "dependency #3 't3' failed: because of its own dependency #2 't2' failed: exited with status 4"
    )
    assert render(down.reason, "ja") == (
        "依存先 #3「t3」が失敗しました: その依存先のため: 依存先 #2「t2」が失敗しました: 終了コード 4 で終了"
    )


def test_after_any_starts_once_they_ended_however() -> None:
    c = rec(3, after=(1, 2), after_any=True)
    blocked = gate(c, by_id(rec(1, "failed"), rec(2, "running"), c))
    assert isinstance(blocked, Blocked) and render(blocked.reason) == "waits for #2 't2' (running) to end"
    assert gate(c, by_id(rec(1, "failed"), rec(2, "cancelled"), c)) is None
    assert gate(c, by_id(c)) is None  # both removed since: nothing can bring them back


def test_unknown_ids_and_cycles_are_refused() -> None:
    a, b = rec(1, after=(2,)), rec(2, after=(3,))
    c = rec(3)
    tasks = by_id(a, b, c)
    with pytest.raises(DependencyError, match=r"--after names #9, #10, which is no task in the queue"):
        check_after(None, TaskSpec(kind="command", name="x", argv=("true",), after=(1, 9, 10)), tasks)
    check_after(None, TaskSpec(kind="command", name="x", argv=("true",), after=(1, 2)), tasks)  # fine
    with pytest.raises(DependencyError, match=r"task #3 would wait for itself: #3 → #1 → #2 → #3"):
        check_after(3, TaskSpec(kind="command", name="t3", argv=("true",), after=(1,)), tasks)
    with pytest.raises(DependencyError, match=r"task #3 cannot wait for itself"):
        check_after(3, TaskSpec(kind="command", name="t3", argv=("true",), after=(3,)), tasks)


def test_retry_brings_back_exactly_the_chain_it_failed() -> None:
    a = rec(1, "failed", reason=ExitedWith(status=1))
    b = rec(2, "failed", after=(1,), reason=DependencyFailed(dep=DepState(1, "t1", "failed"), why=a.reason))
    c = rec(3, "failed", after=(2,), reason=DependencyFailed(dep=DepState(2, "t2", "failed"), why=b.reason))
    own = rec(4, "failed", after=(1,), attempts=1, reason=ExitedWith(status=2))  # failed by itself
    six = DepState(6, "t6", "cancelled")
    other = rec(
        5, "failed", after=(1, 6), reason=DependencyFailed(dep=six, why=Cancelled())
    )  # not #1's doing
    assert [t.id for t in failed_because_of(1, [a, b, c, own, other])] == [2, 3]
    assert failed_because_of(2, [a, b, c]) == [c]


def test_a_missing_dependency_is_not_met_and_the_reason_names_it() -> None:
    """Before: a dependency removed since counted as met, and its dependant ran without it."""
    c = rec(3, after=(1, 2))
    verdict = gate(c, by_id(rec(2, "succeeded"), c))
    assert isinstance(verdict, Blocked) and render(verdict.reason).startswith(
        "waits for #1 (no longer in the queue"
    )
