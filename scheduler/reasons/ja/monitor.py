"""Japanese words for the monitor's verdicts on a device (``monitor/busy_why``), what happened to a device,
and words kept as written."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA, _pct, _who
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(b.Lost)
def _lost(r: b.Lost, s: Say) -> str:
    why = s(r.why) if r.why else "バスから外れました"
    return f"{r.device} が失われました: {why}" if s.named else f"失われました: {why}"


@says(b.NoData)
def _no_data(r: b.NoData, s: Say) -> str:
    why = s(r.why) if r.why else "データなし"
    return f"{r.device} は利用できません: {why}" if s.named else f"利用できません: {why}"


@says(b.Asleep)
def _asleep(r: b.Asleep, s: Say) -> str:
    asleep = s.tense("スリープ中", "スリープ中でした")
    return f"{r.device} は{asleep}" if s.named else asleep


@says(b.Hot)
def _hot(r: b.Hot, s: Say) -> str:
    if s.named:
        return f"{r.device} が高温: {r.temp_c:.0f} °C（上限 {r.limit_c:.0f} °C）"
    return f"高温: {r.temp_c:.0f} °C、上限 {r.limit_c:.0f} °C"


@says(b.UtilHigh)
def _util_high(r: b.UtilHigh, s: Say) -> str:
    now = "現在 —" if r.util_pct is None else f"現在 {_pct(r.util_pct)}"
    if s.finished:  # a task's reason, once it has ended: what it was then
        now = "" if r.util_pct is None else f"その時 {_pct(r.util_pct)}"
    elif r.free_in_s is not None:
        now += f"、このまま低ければ {r.free_in_s} 秒後に空きます"
    rule = f"{r.window_s:.0f} 秒間 {_pct(r.threshold_pct)} 超" + (f"、{now}" if now else "")
    if r.who is None or not r.held_bytes:
        return rule
    return f"{_who(r.who)} が {s.size(r.held_bytes)} を{s.tense('使用中', '使用')}、{rule}"


@says(b.MemoryHeld)
def _memory_held(r: b.MemoryHeld, s: Say) -> str:
    return (
        f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は {_pct(r.util_pct)}、"
        f"{_pct(r.threshold_pct)} 超で{s.tense('使用中', '使用中でした')}"
    )


@says(b.MemoryHeldRecently)
def _memory_recent(r: b.MemoryHeldRecently, s: Say) -> str:
    if s.finished:
        return (
            f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は少し前に "
            f"{_pct(r.threshold_pct)} を超えていました"
        )
    return (
        f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は {r.ago_s:.0f} 秒前に "
        f"{_pct(r.threshold_pct)} を超えていました、このまま低ければ {r.free_in_s} 秒後に空きます"
    )


@says(b.PausedOn)
def _paused_on(r: b.PausedOn, s: Say) -> str:
    paused = s.tense("一時停止中", "一時停止中でした")
    return f"{r.machine} のキューは{paused}" if r.whole_queue else f"{r.machine} で{paused}"


@says(b.Words)
def _words(r: b.Words, s: Say) -> str:
    return s.text(r.text)


@says(c.Said)
def _said(r: c.Said, s: Say) -> str:
    return r.text  # as written, in every language


@says(b.Appeared)
def _appeared(r: b.Appeared, s: Say) -> str:
    return f"{r.device} が現れました"


@says(b.Vanished)
def _vanished(r: b.Vanished, s: Say) -> str:
    return f"{r.device} が見えなくなりました"


@says(b.WasLost)
def _waslost(r: b.WasLost, s: Say) -> str:
    return f"{r.device} が失われました: {s(r.why) if r.why else 'バスから外れました'}"


@says(b.Back)
def _back(r: b.Back, s: Say) -> str:
    return f"{r.device} が復帰しました"


@says(b.WentToSleep)
def _wenttosleep(r: b.WentToSleep, s: Say) -> str:
    return f"{r.device} がスリープしました"


@says(b.WokeUp)
def _wokeup(r: b.WokeUp, s: Say) -> str:
    return f"{r.device} がスリープから復帰しました"


@says(b.Cooled)
def _cooled(r: b.Cooled, s: Say) -> str:
    return f"{r.device} は {r.temp_c:.0f} °C まで下がりました"
