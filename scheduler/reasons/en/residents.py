"""English words for making room: a resident GPU server asked to free its memory (``queue/room.py``)."""

from __future__ import annotations

import shlex

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _aside
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(c.RoomMade)
def _room_made(r: c.RoomMade, s: Say) -> str:
    held, idle = s.size(r.held_bytes), f"idle {s.duration(r.idle_s)}"
    if r.step == "holds":
        command = f"`gputray free-resident {shlex.quote(r.resident.lower())}`"  # "my server" too
        if s.finished:
            return f"{r.resident} held {held} ({idle}); {command} would have freed it for this task"
        return f"{r.resident} holds {held} ({idle}); {command} frees it for this task"
    if r.step == "idle_wait":  # not its idle time now: a reason that changed every look would be said anew
        when = f"{s.clock(r.at_s, False)} (once idle {s.duration(r.bound_s)})"
        if s.finished:
            return f"{r.resident} held {held}; it was to be freed for this task at {when}"
        if r.ask:
            command = f"`gputray free-resident {shlex.quote(r.resident.lower())}`"
            return f"{r.resident} holds {held}; from {when}, {command} frees it for this task"
        return f"{r.resident} holds {held}; to be asked to free it for this task at {when}"
    if r.step == "kept":  # the user's "Keep waiting": no idle time, the same words at every look
        command = f"`gputray free-resident {shlex.quote(r.resident.lower())}`"
        if s.finished:
            return f"{r.resident} held {held}; you chose to keep waiting rather than free it for this task"
        chose = f"{r.resident} holds {held}; you chose to keep waiting rather than free it for this task"
        return f"{chose} ({command} still frees it)"
    if r.step == "asked":
        return f"asked {r.resident} ({idle}) to free {held}"
    if r.step == "freed":
        then = s.tense("starting", "then ran")
        return f"freed {s.size(r.freed_bytes)} held by {r.resident} ({idle}): {then}"
    if r.step == "not_freed":
        within = s.seconds(r.bound_s)
        return f"asked {r.resident} to free {held}, but the device's used memory did not drop within {within}"
    return f"asked {r.resident} to free {held}; it refused or did not answer{_aside(s.text(r.said))}"
