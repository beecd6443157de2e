"""English words for a job's start and end: pauses, starts held, exits, interruptions, retries, requeues."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _aside, _processes, _where
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(c.JobPaused)
def _job_paused(r: c.JobPaused, s: Say) -> str:
    who = f"for #{r.for_task} (priority {r.priority})" if r.for_task is not None else "by you"
    who = f"while {r.app} {s.tense('uses', 'used')} its GPU" if r.app is not None else who
    paused = f"paused {who} at {s.clock(r.at_s, False)}"
    if r.memory == "held":
        return f"{paused}; its GPU memory stays held{_aside(s.text(r.problem or ''), 'cuda-checkpoint: ')}"
    if r.memory == "moved":
        return f"{paused}; its GPU memory was moved to host memory (cuda-checkpoint)"
    return paused


@says(c.JobResumed)
def _job_resumed(r: c.JobResumed, s: Say) -> str:
    by = (
        f"for #{r.for_task} (priority {r.priority}) "
        if r.for_task is not None
        else "by you "
        if r.by_you
        else ""
    )
    by = f"while {r.app} used its GPU " if r.app is not None else by
    text = f"paused {by}at {s.clock(r.paused_at_s, False)}; resumed {s.clock(r.at_s, False)}"
    problem = _aside(s.text(r.problem), "cuda-checkpoint could not restore it: ") if r.problem else ""
    return text + problem


@says(c.DemoOnCpu)
def _demo_on_cpu(r: c.DemoOnCpu, s: Say) -> str:
    return f"demo: {'ran' if s.finished else 'running'} on the CPU in place of {r.device}"


@says(c.CouldNotStart)
def _could_not_start(r: c.CouldNotStart, s: Say) -> str:
    return f"could not start: {s.text(r.error)}"


@says(c.StartHeld)
def _start_held(r: c.StartHeld, s: Say) -> str:
    tries = f", {r.tries} tries so far" if r.tries > 1 else ""
    again = f"trying again in {max(1, round(r.delay_s))} s{tries}"
    if s.finished:
        return f"could not start{_aside(s.text(r.error))}" + (
            f" after {r.tries} tries" if r.tries > 1 else ""
        )
    return f"could not start for now{_aside(s.text(r.error))}; {again}"


@says(c.Cancelled)
def _cancelled(r: c.Cancelled, s: Say) -> str:
    if r.offline:
        return "cancelled while running (no owner was up)"
    return "cancelled while running" if r.while_running else "cancelled"


@says(c.LostWhileRunning)
def _lost_while_running(r: c.LostWhileRunning, s: Say) -> str:
    return f"interrupted: {r.device} was lost while it ran"


@says(c.OwnerStopped)
def _owner_stopped(r: c.OwnerStopped, s: Say) -> str:
    return "interrupted: gputray stopped while it ran" + (
        " (its leftover process was stopped)" if r.stopped_leftover else ""
    )


@says(c.StartCutShort)
def _start_cut_short(r: c.StartCutShort, s: Say) -> str:
    return "queued again: gputray stopped as it was starting the job, before the job began" + (
        " (a leftover process was stopped)" if r.stopped_leftover else ""
    )


@says(c.SupervisorKilled)
def _supervisor_killed(r: c.SupervisorKilled, s: Say) -> str:
    if r.at_start:
        stopped = f"; {_processes(r.stopped)} of the job stopped" if r.stopped else ""
        return f"interrupted: its supervisor process was killed as the job started{stopped}"
    stopped = f" ({_processes(r.stopped)} of the job stopped)" if r.stopped else ""
    if r.unanswering:
        return (
            "interrupted: its supervisor was stopped (SIGSTOP) again and again and answered nothing, "
            f"so how it ended is unknown{stopped}"
        )
    return f"interrupted: its supervisor process was killed, so how it ended is unknown{stopped}"


@says(c.Leftovers)
def _leftovers(r: c.Leftovers, s: Say) -> str:
    were = "was" if r.count == 1 else "were"
    return f"{_processes(r.count)} {were} still running after the job ended: stopped"


@says(c.OutputLost)
def _output_lost(r: c.OutputLost, s: Say) -> str:
    return f"{r.bytes:,} bytes of output were lost: the disk was full when the job wrote them"


@says(c.RanOutOfMemory)
def _ran_out_of_memory(r: c.RanOutOfMemory, s: Say) -> str:
    on = "the CPU" if r.on_cpu else r.device or "its device"
    said = f"out of memory on {on}" + (f" at {s.size(r.at_bytes)}" if r.at_bytes else "")
    if r.moved_to is not None:
        where = {"vram": "VRAM", "shared": "shared", "ram": "RAM"}[r.where]
        free = f"{s.size(r.moved_to.free_bytes)} {where} free"
        runs = "ran" if s.finished else "running"
        return f"{said}; {runs} on {_where(r.moved_to.device)} ({free})"
    if r.no_other:
        allowed = f"no other device {s.tense('is', 'was')} allowed for it"
        return f"{said}; {allowed} (--device names more; --on-busy redirect lets it go there)"
    tried = ", ".join(f"{_where(t.device)} {s.size(max(0, t.free_bytes))} free" for t in r.tried)
    return f"{said}; no device it may use has that free" + (f" ({tried})" if tried else "")


@says(c.MovedLate)
def _moved_late(r: c.MovedLate, s: Say) -> str:
    would = "would have ended" if s.finished else "would end"
    frees = f", as it {s.tense('frees', 'was to free')} in {s.about(r.wait_s)}" if r.wait_s > 0 else ""
    done = f"{r.done * 100:.0f} % after {s.duration(r.after_s)}"
    return (
        f"moved to {_where(r.to_device)}: on {_where(r.from_device)} it {would} in {s.about(r.left_s)} "
        f"({done}); there in {s.about(r.there_s)}{frees}"
    )


@says(c.TimedOut)
def _timed_out(r: c.TimedOut, s: Say) -> str:
    return f"timed out after {r.timeout_s:g} s"


@says(c.KilledBy)
def _killed_by(r: c.KilledBy, s: Say) -> str:
    return f"killed by signal {r.signal}"


@says(c.ExitedWith)
def _exited(r: c.ExitedWith, s: Say) -> str:
    return f"exited with status {r.status}"


@says(c.RetryPlanned)
def _retry_planned(r: c.RetryPlanned, s: Say) -> str:
    if r.delay_s >= 1:
        return f"{s(r.why)}; retry {r.n} of {r.total} in {r.delay_s:.0f} s"
    return f"{s(r.why)}; retrying ({r.total - r.n + 1} left)"


@says(c.NoRetriesLeft)
def _no_retries(r: c.NoRetriesLeft, s: Say) -> str:
    return f"{s(r.why)}; no retries left"


@says(c.RequeuedByRequest)
def _requeued(r: c.RequeuedByRequest, s: Say) -> str:
    return "queued again by request"


@says(c.RequeuedWith)
def _requeued_with(r: c.RequeuedWith, s: Say) -> str:
    return f"queued again: #{r.task_id} was queued again"


@says(c.RecordUnreadable)
def _unreadable(r: c.RecordUnreadable, s: Say) -> str:
    if s.finished:
        return f"its saved record could not be read: {r.problem}; it was kept in the queue file as it was"
    return f"its saved record cannot be read: {r.problem}; it is kept in the queue file as it was"


@says(c.Unplannable)
def _unplannable(r: c.Unplannable, s: Say) -> str:
    if r.which is None:
        return f"cannot be planned: {s.text(r.problem)}"
    which = "its start time" if r.which == "start" else "its retry"
    return f"cannot be planned: {which} must be a date between the years 1970 and 9999"
