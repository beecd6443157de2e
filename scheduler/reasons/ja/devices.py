"""Japanese words for why one device cannot take a task (placement's checks), and the lists that hold such
reasons."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(c.Chain)
def _chain(r: c.Chain, s: Say) -> str:
    return s.catalogue.sentences.join(s(p) for p in r.parts)


@says(c.Each)
def _each(r: c.Each, s: Say) -> str:
    return s.join(r.parts)


@says(c.OnDevice)
def _on_device(r: c.OnDevice, s: Say) -> str:
    return f"{r.device}: {s(r.why)}"


def _needs(need: c.Need, s: Say) -> str:
    if need.predicted:
        return f"約 {s.size(need.bytes)}" + (f"（{need.source}）" if need.source else " ")
    return f"{s.size(need.bytes)} "


@says(c.TooBig)
def _too_big(r: c.TooBig, s: Say) -> str:
    return f"{_needs(r.need, s)}必要ですが {r.device} は {s.size(r.total_bytes)} です"


@says(c.LacksNeeds)
def _lacks(r: c.LacksNeeds, s: Say) -> str:
    return f"{r.device} は {'、'.join(r.needs)} に対応していません（診断による）"


@says(c.DeviceGone)
def _gone(r: c.DeviceGone, s: Say) -> str:
    if r.state == "lost":
        return f"失われました: {s(r.why) if r.why else 'バスから外れました'}"
    return f"利用できません: {s(r.why) if r.why else 'データなし'}"


@says(c.DevicePaused)
def _paused(r: c.DevicePaused, s: Say) -> str:
    if r.taken_by is not None:
        return f"{r.taken_by} が{s.tense('使用中', '使用していました')}: 終了するまでジョブは開始しません"
    return s.tense("一時停止中", "一時停止中でした")


@says(c.HeldFor)
def _held(r: c.HeldFor, s: Say) -> str:
    return f"最も長く待っているタスク #{r.task_id} のために{s.tense('確保中', '確保中でした')}"


@says(c.RunningTask)
def _running(r: c.RunningTask, s: Say) -> str:
    return f"「{r.name}」を{s.tense('実行中', '実行中でした')}"


@says(c.QueuePaused)
def _queue_paused(r: c.QueuePaused, s: Say) -> str:
    return s.tense("キューは一時停止中です", "キューは一時停止中でした")


@says(c.NoRoom)
def _no_room(r: c.NoRoom, s: Say) -> str:
    return f"{s.text(r.problem)}。空きができるまで何も開始しません"


@says(c.SlotsTaken)
def _slots(r: c.SlotsTaken, s: Say) -> str:
    return s.tense("ジョブの枠がすべて使用中", "ジョブの枠がすべて使用中でした")


@says(c.DeviceBusy)
def _busy(r: c.DeviceBusy, s: Say) -> str:
    return s.catalogue.joiner.join(s.unnamed(w) for w in r.why) or s.tense("使用中", "使用中でした")


@says(c.MemoryShort)
def _memory_short(r: c.MemoryShort, s: Say) -> str:
    where = {"vram": "VRAM", "shared": "GTT + カーブアウト", "ram": "RAM"}[r.where]
    return f"{_needs(r.need, s)}必要ですが {where} の空きは {s.size(r.free_bytes)} です"


@says(c.TooHot)
def _too_hot(r: c.TooHot, s: Say) -> str:
    return f"高温: {r.temp_c:.0f} °C、上限 {r.limit_c:.0f} °C"
