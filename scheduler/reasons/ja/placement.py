"""Japanese words for what placement decided: redirects, waits, gave-ups, windows, ``--prefer`` outlooks."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA, _flat
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(c.FirstBusy)
def _first_busy(r: c.FirstBusy, s: Say) -> str:
    return f"{r.label} は{s.tense('使用中', '使用中でした')}（{_flat(s(r.why))}）"


@says(c.FirstCannot)
def _first_cannot(r: c.FirstCannot, s: Say) -> str:
    return f"{r.label} では実行できません（{_flat(s(r.why))}）"


@says(c.FirstAbsent)
def _first_absent(r: c.FirstAbsent, s: Say) -> str:
    return f"{r.label} が見つかりません"


@says(c.NotPresent)
def _not_present(r: c.NotPresent, s: Say) -> str:
    return "見つかりません"


@says(c.Redirected)
def _redirected(r: c.Redirected, s: Say) -> str:
    after = f"{s.duration(r.waited_s)} 待った後 " if r.waited_s is not None else ""
    where = "CPU で実行" if r.to_cpu else f"{r.target} に振り替え"
    return f"{after}{where}: {s(r.first)}"


@says(c.NoDeviceCanRun)
def _no_device(r: c.NoDeviceCanRun, s: Say) -> str:
    return f"実行できるデバイスがありません: {s.join(r.why)}"


@says(c.GaveUp)
def _gave_up(r: c.GaveUp, s: Say) -> str:
    label = f"{r.label} を " if r.label is not None else ""
    return f"{label}{s.duration(r.waited_s)} 待って断念: {s(r.why)}"


@says(c.WaitingFor)
def _waiting_for(r: c.WaitingFor, s: Say) -> str:
    return f"{r.label} を{s.tense('待機中', '待っていました')}: {s(r.why)}"


@says(c.WaitingForAny)
def _waiting_any(r: c.WaitingForAny, s: Say) -> str:
    return f"空いているデバイスを{s.tense('待機中', '待っていました')}: {s.join(r.why)}"


@says(c.RetryIn)
def _retry_in(r: c.RetryIn, s: Say) -> str:
    return f"{s.duration(r.delay_s)} 後に再試行"


@says(c.StartsAt)
def _starts_at(r: c.StartsAt, s: Say) -> str:
    return f"{s.clock(r.at_s, r.with_date)} に開始"


@says(c.WindowWait)
def _window(r: c.WindowWait, s: Say) -> str:
    return f"実行時間帯 {r.window} を{s.tense('待機中', '待っていました')}"


_PREFER = {"fastest": "最速", "greenest": "省エネ"}


@says(c.Unestimated)
def _unestimated(r: c.Unestimated, s: Say) -> str:
    return f"{_PREFER.get(r.prefer, r.prefer)}: このジョブの過去の実行がなく見積もれません。{s(r.then)}"


def _outlook(o: c.Outlook, s: Say, energy: bool) -> str:
    kj = f"、{o.energy_j / 1000:.1f} kJ" if energy and o.energy_j is not None else ""
    if o.wait_s is None:
        text = f"{o.device} は{s.tense('使用中、', '使用中で、')}空く時刻は不明"
    elif o.wait_s > 0:
        text = f"{o.device} は {s.about(o.wait_s)} 後に空き、{s.about(o.wait_s + o.run_s)} 後に完了{kj}"
    else:
        text = f"{o.device} なら {s.about(o.run_s)} で完了{kj}"
    return text + (f"、最速の {o.past_factor:g} 倍を超える" if o.past_factor is not None else "")


@says(c.Preferred)
def _preferred(r: c.Preferred, s: Say) -> str:
    if r.starts:
        doing = s.tense("そこで実行します", "そこで実行しました")
    else:
        doing = s.tense("空くのを待ちます", "空くのを待ちました")
    mine = f"{_outlook(r.chosen, s, r.energy)}: {doing}"
    others = "。".join(_outlook(o, s, r.energy) for o in r.others)
    return f"{_PREFER.get(r.prefer, r.prefer)}: " + (f"{others}。{mine}" if others else mine)
