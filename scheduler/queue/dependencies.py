"""Task dependencies (``--after``, ``after = [..]``), decided by pure functions of the task records.

A task with ``after`` starts only once every task it names has succeeded; with ``after_any``, once
they have ended however (succeeded, failed or cancelled). A dependency that failed or was cancelled
fails its dependants (``after`` only) with a reason that names it (``DependencyFailed``), and ``retry``
of the dependency brings back exactly the tasks whose reason says so.
``interrupted`` is not an end: the retry policy turns it into ``queued`` or ``failed``.

At submit (and ``edit --after``), ids that name no task, and an ``after`` that would close a cycle,
are refused (``DependencyError``). Only existing ids can be named, so a new task cannot be part of a
cycle; an edit can, and that is where the cycle check bites.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gputray.scheduler.protocol import Refusal
from gputray.scheduler.reasons.codes import DependencyFailed, DepState, Reason, Said, WaitsForDeps
from gputray.scheduler.tasks.records import FINISHED_STATES, TaskRecord, TaskSpec


class DependencyError(Refusal):
    """An ``after`` that names no task, or would make tasks wait for each other forever."""


@dataclass(frozen=True)
class Blocked:
    """Not yet: ``reason`` says which dependencies it waits for."""

    reason: WaitsForDeps


@dataclass(frozen=True)
class Broken:
    """Never: a dependency failed or was cancelled; ``reason`` says which."""

    reason: DependencyFailed


def _dep(rec: TaskRecord) -> DepState:
    return DepState(rec.id, rec.name, rec.state)


def gate(task: TaskRecord, tasks: Mapping[int, TaskRecord]) -> Blocked | Broken | None:
    """What the task's dependencies allow now: None (start it when a device is free), Blocked or Broken.

    A dependency that no longer exists (removed by hand, which ``remove`` refuses while a pending task
    names it; retention keeps whatever a task that stays names) is not met for ``after``: the task
    waits, its reason naming the id that is gone, until it is edited (``gputray edit ID --after …``) or
    cancelled; for ``after_any`` it has ended (it cannot run any more).
    """
    spec = task.spec
    if not spec.after:
        return None
    waiting: list[DepState] = []
    for dep_id in spec.after:
        dep = tasks.get(dep_id)
        if dep is None:
            if spec.after_any:  # only an ended or a never-run task can be removed: it will not run now
                continue
            waiting.append(DepState(dep_id, "", "removed"))  # its reason names the id that is gone
            continue
        if dep.state in FINISHED_STATES:
            if dep.state == "succeeded" or spec.after_any:
                continue
            return Broken(DependencyFailed(dep=_dep(dep), why=dep.reason))
        waiting.append(_dep(dep))
    if not waiting:
        return None
    return Blocked(WaitsForDeps(deps=tuple(waiting), any_end=spec.after_any, task_id=task.id))


def check_after(task_id: int | None, spec: TaskSpec, tasks: Mapping[int, TaskRecord]) -> None:
    """Refuse an ``after`` that names an unknown task or, for an existing task ``task_id`` (an edit),
    one that leads back to it."""
    if not spec.after:
        return
    unknown = [i for i in spec.after if i not in tasks]
    if unknown:
        ids = ", ".join(f"#{i}" for i in unknown)
        raise DependencyError(
            f"{spec.name}: --after names {ids}, which is no task in the queue (see `gputray queue --all`)"
        )
    if task_id is None:
        return
    if task_id in spec.after:
        raise DependencyError(f"task #{task_id} cannot wait for itself")
    path = _path_back(task_id, spec.after, tasks)
    if path is not None:
        chain = " → ".join(f"#{i}" for i in [task_id, *path])
        raise DependencyError(f"task #{task_id} would wait for itself: {chain} (a cycle); nothing changed")


def _path_back(start: int, first: Iterable[int], tasks: Mapping[int, TaskRecord]) -> list[int] | None:
    """A chain of dependencies from ``first`` back to ``start``, or None (depth-first, each task once)."""
    stack: list[tuple[int, list[int]]] = [(i, [i]) for i in first]
    seen: set[int] = set()
    while stack:
        current, path = stack.pop()
        if current == start:
            return path
        if current in seen:
            continue
        seen.add(current)
        rec = tasks.get(current)
        if rec is not None:
            stack.extend((nxt, [*path, nxt]) for nxt in rec.spec.after)
    return None


def dependants(task_id: int, tasks: Iterable[TaskRecord]) -> list[TaskRecord]:
    """Tasks that name ``task_id`` in their ``after``."""
    return [t for t in tasks if task_id in t.spec.after]


def _failed_by(reason: Reason | None, task_id: int) -> bool:
    """Whether ``reason`` says the task failed because ``task_id`` failed or was cancelled (a row saved
    before reasons had codes says it in words that begin so)."""
    if isinstance(reason, DependencyFailed):
        return reason.dep.task_id == task_id
    return isinstance(reason, Said) and reason.text.startswith(f"dependency #{task_id} ")


def failed_because_of(task_id: int, tasks: Iterable[TaskRecord]) -> list[TaskRecord]:
    """Every task failed, directly or down a chain, because ``task_id`` failed or was cancelled, in id
    order: what ``retry`` of it queues again."""
    records = list(tasks)
    found: dict[int, TaskRecord] = {}
    frontier = [task_id]
    while frontier:
        current = frontier.pop()
        for t in records:
            if (
                t.id not in found
                and current in t.spec.after
                and t.state == "failed"
                and _failed_by(t.reason, current)
            ):
                found[t.id] = t
                frontier.append(t.id)
    return [found[i] for i in sorted(found)]
