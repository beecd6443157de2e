"""Japanese words for tasks that wait for others (``queue/dependencies.py``)."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import _STATES, JA
from gputray.scheduler.reasons.say import Say

says = JA.says


def _dep(d: c.DepState) -> str:
    return f"#{d.task_id}「{d.name}」"


@says(c.WaitsForDeps)
def _waits_for_deps(r: c.WaitsForDeps, s: Say) -> str:
    deps = "、".join(
        f"#{d.task_id}（キューにありません。`gputray edit {r.task_id} --after …` で待つ先を変えられます）"
        if d.state == "removed"
        else f"{_dep(d)}（{_STATES.get(d.state, d.state)}）"
        for d in r.deps
    )
    return f"{deps}の{'終了' if r.any_end else '成功'}を{s.tense('待機中', '待っていました')}"


@says(c.DependencyFailed)
def _dependency_failed(r: c.DependencyFailed, s: Say) -> str:
    why = s(r.why) if r.why is not None else _STATES.get(r.dep.state, r.dep.state)
    if isinstance(r.why, c.DependencyFailed):
        why = f"その依存先のため: {why}"
    if len(why) > 120:
        why = why[:119] + "…"
    what = "キャンセルされました" if r.dep.state == "cancelled" else "失敗しました"
    return f"依存先 {_dep(r.dep)}が{what}: {why}"
