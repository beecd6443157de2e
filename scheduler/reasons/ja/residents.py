"""Japanese words for making room: a resident GPU server asked to free its memory (``queue/room.py``)."""

from __future__ import annotations

import shlex

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(c.RoomMade)
def _room_made(r: c.RoomMade, s: Say) -> str:
    held, idle = s.size(r.held_bytes), f"アイドル {s.duration(r.idle_s)}"
    if r.step == "holds":
        command = f"`gputray free-resident {shlex.quote(r.resident.lower())}`"  # "my server" too
        if s.finished:
            free = f"{command} でこのタスクのために解放できました"
            return f"{r.resident} が {held} を確保していました（{idle}）。{free}"
        return f"{r.resident} が {held} を確保しています（{idle}）。{command} でこのタスクのために解放します"
    if r.step == "idle_wait":
        when = f"{s.clock(r.at_s, False)}（アイドル {s.duration(r.bound_s)}）"
        if s.finished:
            return f"{r.resident} が {held} を確保していました。{when}に解放する予定でした"
        holds = f"{r.resident} が {held} を確保しています"
        if r.ask:
            command = f"`gputray free-resident {shlex.quote(r.resident.lower())}`"
            return f"{holds}。{when}から {command} でこのタスクのために解放できます"
        return f"{holds}。{when}にこのタスクのために解放を依頼します"
    if r.step == "kept":
        command = f"`gputray free-resident {shlex.quote(r.resident.lower())}`"
        chose = "このタスクのために解放せず待つことを選びました"
        if s.finished:
            return f"{r.resident} が {held} を確保していました。{chose}"
        return f"{r.resident} が {held} を確保しています。{chose}（{command} で解放できます）"
    if r.step == "asked":
        return f"{r.resident}（{idle}）に {held} の解放を依頼しました"
    if r.step == "freed":
        freed = f"{r.resident}（{idle}）が確保していた {s.size(r.freed_bytes)} を解放しました"
        return f"{freed}。{s.tense('開始します', '実行しました')}"
    if r.step == "not_freed":
        within = s.seconds(r.bound_s)
        asked = f"{r.resident} に {held} の解放を依頼しましたが"
        return f"{asked}、{within}以内にデバイスの使用メモリが減りませんでした"
    return f"{r.resident} に {held} の解放を依頼しましたが、拒否されたか応答がありません（{s.text(r.said)}）"
