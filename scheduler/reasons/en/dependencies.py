"""English words for tasks that wait for others (``queue/dependencies.py``)."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN
from gputray.scheduler.reasons.say import Say

says = EN.says


def _dep(d: c.DepState) -> str:
    return f"#{d.task_id} {d.name!r}"


def _edit_after(task_id: int) -> str:
    return f"`gputray edit {task_id} --after …` changes what it waits for"


@says(c.WaitsForDeps)
def _waits_for_deps(r: c.WaitsForDeps, s: Say) -> str:
    deps = ", ".join(
        f"#{d.task_id} (no longer in the queue; {_edit_after(r.task_id)})"
        if d.state == "removed"
        else f"{_dep(d)} ({d.state})"
        for d in r.deps
    )
    return f"{s.tense('waits', 'waited')} for {deps} {'to end' if r.any_end else 'to succeed'}"


@says(c.DependencyFailed)
def _dependency_failed(r: c.DependencyFailed, s: Say) -> str:
    why = s(r.why) if r.why is not None else r.dep.state
    if isinstance(r.why, c.DependencyFailed):
        why = f"because of its own {why}"
    if len(why) > 120:
        why = why[:119] + "…"
    return f"dependency {_dep(r.dep)} {r.dep.state}: {why}"
