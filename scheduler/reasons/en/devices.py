"""English words for why one device cannot take a task (placement's checks), and the lists that hold such
reasons."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN
from gputray.scheduler.reasons.say import Say

says = EN.says


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
        return f"needs ~{s.size(need.bytes)}" + (f" ({need.source})" if need.source else "")
    return f"needs {s.size(need.bytes)}"


@says(c.TooBig)
def _too_big(r: c.TooBig, s: Say) -> str:
    return f"{_needs(r.need, s)}, {r.device} has {s.size(r.total_bytes)}"


@says(c.LacksNeeds)
def _lacks(r: c.LacksNeeds, s: Say) -> str:
    return f"{r.device} lacks {', '.join(r.needs)} (per the doctor)"


@says(c.DeviceGone)
def _gone(r: c.DeviceGone, s: Say) -> str:
    default = "fell off the bus" if r.state == "lost" else "no data"
    return f"{r.state}: {s(r.why) if r.why else default}"


@says(c.DevicePaused)
def _paused(r: c.DevicePaused, s: Say) -> str:
    if r.taken_by is not None:
        return f"taken by {r.taken_by}: no job starts there until it exits"
    return "paused"


@says(c.HeldFor)
def _held(r: c.HeldFor, s: Say) -> str:
    return f"held for task #{r.task_id}, which waited longest"


@says(c.RunningTask)
def _running(r: c.RunningTask, s: Say) -> str:
    return f"{s.tense('', 'was ')}running {r.name!r}"


@says(c.QueuePaused)
def _queue_paused(r: c.QueuePaused, s: Say) -> str:
    return f"the queue {s.tense('is', 'was')} paused"


@says(c.NoRoom)
def _no_room(r: c.NoRoom, s: Say) -> str:
    return f"{s.text(r.problem)}: " + s.tense(
        "nothing starts until there is room", "nothing could start until there was room"
    )


@says(c.SlotsTaken)
def _slots(r: c.SlotsTaken, s: Say) -> str:
    return f"all its job slots {s.tense('are', 'were')} taken"


@says(c.DeviceBusy)
def _busy(r: c.DeviceBusy, s: Say) -> str:
    return s.catalogue.joiner.join(s.unnamed(w) for w in r.why) or "busy"


@says(c.MemoryShort)
def _memory_short(r: c.MemoryShort, s: Say) -> str:
    where = {"vram": "VRAM", "shared": "GTT + carve-out", "ram": "RAM"}[r.where]
    return f"{_needs(r.need, s)}, {s.size(r.free_bytes)} {where} free"


@says(c.TooHot)
def _too_hot(r: c.TooHot, s: Say) -> str:
    return f"hot: {r.temp_c:.0f} °C, limit {r.limit_c:.0f} °C"
