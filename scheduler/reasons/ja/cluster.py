"""Japanese words for a task handed to, run on, or taken back from another machine."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA, _flat
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(c.Sending)
def _sending(r: c.Sending, s: Say) -> str:
    if r.not_here:
        return f"{r.machine} へ{s.tense('送信中', '送信しました')}（ここでは開始できませんでした）"
    sent = f"{r.machine} へ{s.tense('送信中', '送信しました')}"
    return sent + (f"（{_flat(s(r.why))}）" if r.why is not None else "")


@says(c.HandedTo)
def _handed_to(r: c.HandedTo, s: Say) -> str:
    return f"{r.machine} で #{r.remote_id} として待機"


@says(c.OnMachine)
def _on_machine(r: c.OnMachine, s: Say) -> str:
    where = f"{r.machine}（#{r.remote_id}）"
    return f"{where}: {s(r.why)}" if r.why is not None else f"{where} で実行"


@says(c.RefusedBy)
def _refused_by(r: c.RefusedBy, s: Say) -> str:
    return f"{r.machine} に拒否されました: {s.text(r.refusal)}"


@says(c.TakenBack)
def _taken_back(r: c.TakenBack, s: Say) -> str:
    if r.by:
        if r.free is None:
            return f"編集を反映するため {r.machine} が引き戻しました"
        free = s.tense("空いています", "空いていました")
        return f"{r.machine} が引き戻しました: ここで待っていて、{r.free or 'このマシン'} が{free}"
    if r.free is None:
        return f"編集を反映するため {r.machine} から引き戻しました"
    free = s.tense("空いています", "空いていました")
    return f"{r.machine} から引き戻しました: そこで待っていて、{r.free} が{free}"


@says(c.LeftCluster)
def _left_cluster(r: c.LeftCluster, s: Say) -> str:
    return f"{r.machine} がクラスターから外れました" + (
        s.tense("（実行中）", "（実行中に）") if r.while_running else ""
    )


@says(c.StartedBeforeEdit)
def _started_before_edit(r: c.StartedBeforeEdit, s: Say) -> str:
    runs = s.tense("実行します", "実行しました")
    return f"{r.machine}（#{r.remote_id}）: 編集の前にそこで始まったため、送ったとおりに{runs}"


@says(c.Unanswered)
def _unanswered(r: c.Unanswered, s: Say) -> str:
    if s.finished:
        return (
            f"{r.machine}（#{r.remote_id}）: {r.machine} が {s.clock_s(r.since_s)} から応答しませんでした"
            "（gputray が止まった？）。そこのキューがタスクを保持していました"
        )
    return (
        f"{r.machine}（#{r.remote_id}）: {r.machine} が {s.clock_s(r.since_s)} から応答しません"
        "（gputray が止まった？）。そこのキューがタスクを保持し、応答が戻れば再び追跡します"
    )
