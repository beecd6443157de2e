"""English words for the monitor's verdicts on a device (``monitor/busy_why``), what happened to a device,
and words kept as written."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _pct, _who
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(b.Lost)
def _lost(r: b.Lost, s: Say) -> str:
    why = s(r.why) if r.why else "fell off the bus"
    return f"{r.device} is lost: {why}" if s.named else f"lost: {why}"


@says(b.NoData)
def _no_data(r: b.NoData, s: Say) -> str:
    why = s(r.why) if r.why else "no data"
    return f"{r.device} unavailable: {why}" if s.named else f"unavailable: {why}"


@says(b.Asleep)
def _asleep(r: b.Asleep, s: Say) -> str:
    return f"{r.device} is asleep" if s.named else "asleep"


@says(b.Hot)
def _hot(r: b.Hot, s: Say) -> str:
    if s.named:
        return f"{r.device} is hot: {r.temp_c:.0f} °C (limit {r.limit_c:.0f} °C)"
    return f"hot: {r.temp_c:.0f} °C, limit {r.limit_c:.0f} °C"  # inside a device's reason, in its brackets


@says(b.UtilHigh)
def _util_high(r: b.UtilHigh, s: Say) -> str:
    now = "now —" if r.util_pct is None else f"now {_pct(r.util_pct)}"
    if s.finished:  # a task's reason, once it has ended: what it was then
        now = "" if r.util_pct is None else f"at {_pct(r.util_pct)}"
    elif r.free_in_s is not None:
        now += f", free again in {r.free_in_s} s if it stays low"
    rule = f"above {_pct(r.threshold_pct)} for {r.window_s:.0f} s" + (f"; {now}" if now else "")
    if r.who is None or not r.held_bytes:
        return rule
    who, many = _who(r.who)
    return f"{who} {s.tense('use' if many else 'uses', 'used')} {s.size(r.held_bytes)}; {rule}"


@says(b.MemoryHeld)
def _memory_held(r: b.MemoryHeld, s: Say) -> str:
    who, many = _who(r.who)
    held = f"{who} {s.tense('hold' if many else 'holds', 'held')} {s.size(r.held_bytes)}"
    return (
        f"{held} and the GPU {s.tense('is', 'was')} at {_pct(r.util_pct)}, busy above {_pct(r.threshold_pct)}"
    )


@says(b.MemoryHeldRecently)
def _memory_recent(r: b.MemoryHeldRecently, s: Say) -> str:
    who, many = _who(r.who)
    if s.finished:
        busy = f"the GPU had been above {_pct(r.threshold_pct)} shortly before"
        return f"{who} held {s.size(r.held_bytes)} and {busy}"
    held = f"{who} {'hold' if many else 'holds'} {s.size(r.held_bytes)}"
    return (
        f"{held} and the GPU was above {_pct(r.threshold_pct)} {r.ago_s:.0f} s ago; "
        f"free again in {r.free_in_s} s if it stays low"
    )


@says(b.PausedOn)
def _paused_on(r: b.PausedOn, s: Say) -> str:
    return (
        f"the queue {s.tense('is', 'was')} paused on {r.machine}"
        if r.whole_queue
        else f"paused on {r.machine}"
    )


@says(b.Words)
def _words(r: b.Words, s: Say) -> str:
    return s.text(r.text)


@says(c.Said)
def _said(r: c.Said, s: Say) -> str:
    return r.text  # as written, in every language


@says(b.Appeared)
def _appeared(r: b.Appeared, s: Say) -> str:
    return f"{r.device} appeared"


@says(b.Vanished)
def _vanished(r: b.Vanished, s: Say) -> str:
    return f"{r.device} disappeared"


@says(b.WasLost)
def _waslost(r: b.WasLost, s: Say) -> str:
    return f"{r.device} was lost: {s(r.why) if r.why else 'fell off the bus'}"


@says(b.Back)
def _back(r: b.Back, s: Say) -> str:
    return f"{r.device} is back"


@says(b.WentToSleep)
def _wenttosleep(r: b.WentToSleep, s: Say) -> str:
    return f"{r.device} went to sleep"


@says(b.WokeUp)
def _wokeup(r: b.WokeUp, s: Say) -> str:
    return f"{r.device} woke up"


@says(b.Cooled)
def _cooled(r: b.Cooled, s: Say) -> str:
    return f"{r.device} cooled to {r.temp_c:.0f} °C"
