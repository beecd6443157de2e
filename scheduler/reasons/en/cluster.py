"""English words for a task handed to, run on, or taken back from another machine."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _aside
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(c.Sending)
def _sending(r: c.Sending, s: Say) -> str:
    if r.not_here:
        return f"{s.tense('sending', 'sent')} to {r.machine} (it could not start here)"
    return f"{s.tense('sending', 'sent')} to {r.machine}" + (_aside(s(r.why)) if r.why is not None else "")


@says(c.HandedTo)
def _handed_to(r: c.HandedTo, s: Say) -> str:
    return f"on {r.machine} as #{r.remote_id}"


@says(c.OnMachine)
def _on_machine(r: c.OnMachine, s: Say) -> str:
    where = f"on {r.machine} (#{r.remote_id})"
    return f"{where}: {s(r.why)}" if r.why is not None else where


@says(c.RefusedBy)
def _refused_by(r: c.RefusedBy, s: Say) -> str:
    return f"{r.machine} refused it: {s.text(r.refusal)}"


@says(c.TakenBack)
def _taken_back(r: c.TakenBack, s: Say) -> str:
    if r.by:
        if r.free is None:
            return f"taken back by {r.machine} to apply an edit"
        free = r.free or "this machine"
        return f"taken back by {r.machine}: it waited here and {free} {s.tense('is', 'was')} free"
    if r.free is None:
        return f"taken back from {r.machine} to apply the edit"
    return f"taken back from {r.machine}: it waited there and {r.free} {s.tense('is', 'was')} free"


@says(c.LeftCluster)
def _left_cluster(r: c.LeftCluster, s: Say) -> str:
    return f"{r.machine} left the cluster" + (" while it ran" if r.while_running else "")


@says(c.StartedBeforeEdit)
def _started_before_edit(r: c.StartedBeforeEdit, s: Say) -> str:
    return f"on {r.machine} (#{r.remote_id}): it started there before the edit; it runs as sent"


@says(c.Unanswered)
def _unanswered(r: c.Unanswered, s: Say) -> str:
    since = s.clock_s(r.since_s)
    return (
        f"on {r.machine} (#{r.remote_id}): {r.machine} has not answered since {since} (its gputray "
        "stopped?); its queue there keeps the task, followed again when it answers"
    )
