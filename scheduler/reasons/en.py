"""Reasons in English: one wording per code (``reasons.codes`` and the monitor's ``busy_why``)."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.say import Catalogue, Say

EN = Catalogue(
    "en", joiner="; ", sentences="; ", unit_s="{n} s", unit_min="{m} min", unit_h_min="{h} h {m:02d} min"
)
says = EN.says


def _where(device: str | None) -> str:
    return "the CPU" if device is None else device


def _demo(demo_for: str | None) -> str:
    return f" (demo: in place of {demo_for})" if demo_for else ""


def _pct(value: float) -> str:
    return f"{value:.0f} %"


def _who(who: b.Who) -> tuple[str, bool]:
    if not who.others:
        return who.name, False
    return f"{who.name} and {who.others} other{'s' if who.others > 1 else ''}", True


def _processes(count: int) -> str:
    return "1 process" if count == 1 else f"{count} processes"


# -- the monitor's verdicts ---------------------------------------------------------------------------


@says(b.Lost)
def _lost(r: b.Lost, s: Say) -> str:
    why = s.text(r.why) if r.why else "fell off the bus"
    return f"{r.device} is lost: {why}" if s.named else f"lost: {why}"


@says(b.NoData)
def _no_data(r: b.NoData, s: Say) -> str:
    why = s.text(r.why) if r.why else "no data"
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
    if r.free_in_s is not None:
        now += f", free again in {r.free_in_s} s if it stays low"
    rule = f"above {_pct(r.threshold_pct)} for {r.window_s:.0f} s; {now}"
    if r.who is None or not r.held_bytes:
        return rule
    who, many = _who(r.who)
    return f"{who} {'use' if many else 'uses'} {s.size(r.held_bytes)}; {rule}"


@says(b.MemoryHeld)
def _memory_held(r: b.MemoryHeld, s: Say) -> str:
    who, many = _who(r.who)
    held = f"{who} {'hold' if many else 'holds'} {s.size(r.held_bytes)}"
    return f"{held} and the GPU is at {_pct(r.util_pct)}, busy above {_pct(r.threshold_pct)}"


@says(b.MemoryHeldRecently)
def _memory_recent(r: b.MemoryHeldRecently, s: Say) -> str:
    who, many = _who(r.who)
    held = f"{who} {'hold' if many else 'holds'} {s.size(r.held_bytes)}"
    return (
        f"{held} and the GPU was above {_pct(r.threshold_pct)} {r.ago_s:.0f} s ago; "
        f"free again in {r.free_in_s} s if it stays low"
    )


@says(b.PausedOn)
def _paused_on(r: b.PausedOn, s: Say) -> str:
    return f"the queue is paused on {r.machine}" if r.whole_queue else f"paused on {r.machine}"


@says(b.Words)
def _words(r: b.Words, s: Say) -> str:
    return s.text(r.text)


@says(c.Said)
def _said(r: c.Said, s: Say) -> str:
    return r.text  # as written, in every language


# -- a device for a task ------------------------------------------------------------------------------


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
    return f"{r.state}: {s.text(r.why) if r.why else default}"


@says(c.DevicePaused)
def _paused(r: c.DevicePaused, s: Say) -> str:
    return "paused"


@says(c.HeldFor)
def _held(r: c.HeldFor, s: Say) -> str:
    return f"held for task #{r.task_id}, which waited longest"


@says(c.RunningTask)
def _running(r: c.RunningTask, s: Say) -> str:
    return f"running {r.name!r}"


@says(c.QueuePaused)
def _queue_paused(r: c.QueuePaused, s: Say) -> str:
    return "the queue is paused"


@says(c.NoRoom)
def _no_room(r: c.NoRoom, s: Say) -> str:
    return f"{s.text(r.problem)}: nothing starts until there is room"


@says(c.SlotsTaken)
def _slots(r: c.SlotsTaken, s: Say) -> str:
    return "all its job slots are taken"


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


# -- Python envs --------------------------------------------------------------------------------------


@says(c.EnvChecking)
def _env_checking(r: c.EnvChecking, s: Say) -> str:
    return f"checking env {r.env} on {_where(r.device)}{_demo(r.demo_for)}…"


@says(c.NoEnvWorks)
def _no_env_works(r: c.NoEnvWorks, s: Say) -> str:
    text = f"no configured Python env works on {_where(r.device)}{_demo(r.demo_for)}"
    if r.failures:
        text += ": " + "; ".join(f"{f.env}: {s.text(f.why)}" for f in r.failures)
    return text + (f" (fix: {s.text(r.fix)})" if r.fix else "")


@says(c.NoEnvKnown)
def _no_env_known(r: c.NoEnvKnown, s: Say) -> str:
    return f"no Python env is known to work on {_where(r.device)}"


@says(c.NoEnvConfigured)
def _no_env_configured(r: c.NoEnvConfigured, s: Say) -> str:
    add = f"add one: {r.command} (a venv where `pip install torch` ran)"
    if r.demo:
        return f"demo: torch jobs run on the CPU in an env with torch; {add}"
    return f"no Python env is configured for torch jobs; {add}"


@says(c.EnvUnproven)
def _env_unproven(r: c.EnvUnproven, s: Say) -> str:
    return (
        f"env {r.env} works on {_where(r.device)}, but that its torch lands on this GPU is not proven "
        f"({s.text(r.why)}); a task with allow_unproven = true runs there anyway"
    )


@says(c.EnvListUnreadable)
def _env_list(r: c.EnvListUnreadable, s: Say) -> str:
    return f"the env list cannot be read: {r.error}"


@says(c.EnvLookupFailed)
def _env_lookup(r: c.EnvLookupFailed, s: Say) -> str:
    return f"env lookup failed ({r.error})"


# -- placement's decisions ----------------------------------------------------------------------------


@says(c.FirstBusy)
def _first_busy(r: c.FirstBusy, s: Say) -> str:
    return f"{r.label} busy ({s(r.why)})"


@says(c.FirstCannot)
def _first_cannot(r: c.FirstCannot, s: Say) -> str:
    return f"{r.label} cannot run it ({s(r.why)})"


@says(c.FirstAbsent)
def _first_absent(r: c.FirstAbsent, s: Say) -> str:
    return f"{r.label} not present"


@says(c.NotPresent)
def _not_present(r: c.NotPresent, s: Say) -> str:
    return "not present"


@says(c.Redirected)
def _redirected(r: c.Redirected, s: Say) -> str:
    after = f" after waiting {s.duration(r.waited_s)}" if r.waited_s is not None else ""
    where = "on CPU" if r.to_cpu else f"redirected to {r.target}"
    return f"{where}{after}: {s(r.first)}"


@says(c.NoDeviceCanRun)
def _no_device(r: c.NoDeviceCanRun, s: Say) -> str:
    return f"no device can run it: {s.join(r.why)}"


@says(c.GaveUp)
def _gave_up(r: c.GaveUp, s: Say) -> str:
    label = f" for {r.label}" if r.label is not None else ""
    return f"gave up after waiting {s.duration(r.waited_s)}{label}: {s(r.why)}"


@says(c.WaitingFor)
def _waiting_for(r: c.WaitingFor, s: Say) -> str:
    return f"waiting for {r.label}: {s(r.why)}"


@says(c.WaitingForAny)
def _waiting_any(r: c.WaitingForAny, s: Say) -> str:
    return f"waiting for a free device: {s.join(r.why)}"


@says(c.RetryIn)
def _retry_in(r: c.RetryIn, s: Say) -> str:
    return f"retry in {s.duration(r.delay_s)}"


@says(c.StartsAt)
def _starts_at(r: c.StartsAt, s: Say) -> str:
    return f"starts at {s.clock(r.at_s, r.with_date)}"


@says(c.WindowWait)
def _window(r: c.WindowWait, s: Say) -> str:
    return f"waits for its window {r.window}"


@says(c.Unestimated)
def _unestimated(r: c.Unestimated, s: Say) -> str:
    return f"{r.prefer}: no earlier run of this job to estimate from; {s(r.then)}"


def _outlook(o: c.Outlook, s: Say, energy: bool) -> str:
    kj = f", {o.energy_j / 1000:.1f} kJ" if energy and o.energy_j is not None else ""
    if o.wait_s is None:
        text = f"{o.device} busy, free time unknown"
    elif o.wait_s > 0:
        text = f"{o.device} frees in {s.about(o.wait_s)}, finishes in {s.about(o.wait_s + o.run_s)}{kj}"
    else:
        text = f"{o.device} finishes in {s.about(o.run_s)}{kj}"
    return text + (f", past {o.past_factor:g}× the fastest finish" if o.past_factor is not None else "")


@says(c.Preferred)
def _preferred(r: c.Preferred, s: Say) -> str:
    mine = f"{_outlook(r.chosen, s, r.energy)}: {'running there' if r.starts else 'waiting for it'}"
    others = "; ".join(_outlook(o, s, r.energy) for o in r.others)
    return f"{r.prefer}: {others}; {mine}" if others else f"{r.prefer}: {mine}"


# -- a job's start and end ----------------------------------------------------------------------------


@says(c.JobPaused)
def _job_paused(r: c.JobPaused, s: Say) -> str:
    who = f"for #{r.for_task} (priority {r.priority})" if r.for_task is not None else "by you"
    who = f"while {r.app} uses its GPU" if r.app is not None else who
    paused = f"paused {who} at {s.clock(r.at_s, False)}"
    if r.memory == "held":
        return f"{paused}; its GPU memory stays held (cuda-checkpoint: {s.text(r.problem or '')})"
    if r.memory == "moved":
        return f"{paused}; its GPU memory was moved to host memory (cuda-checkpoint)"
    return paused


@says(c.RoomMade)
def _room_made(r: c.RoomMade, s: Say) -> str:
    held, idle = s.size(r.held_bytes), f"idle {s.duration(r.idle_s)}"
    if r.step == "holds":
        command = f"`gputray free-resident {r.resident.lower()}`"
        return f"{r.resident} holds {held} ({idle}); {command} frees it for this task"
    if r.step == "asked":
        return f"asked {r.resident} ({idle}) to free {held}"
    if r.step == "freed":
        return f"freed {s.size(r.freed_bytes)} held by {r.resident} ({idle}): starting"
    if r.step == "not_freed":
        within = s.seconds(r.bound_s)
        return f"asked {r.resident} to free {held}, but the device's used memory did not drop within {within}"
    return f"asked {r.resident} to free {held}; it refused or did not answer ({s.text(r.said)})"


@says(c.JobResumed)
def _job_resumed(r: c.JobResumed, s: Say) -> str:
    by = (
        f"for #{r.for_task} (priority {r.priority}) "
        if r.for_task is not None
        else "by you "
        if r.by_you
        else ""
    )
    text = f"paused {by}at {s.clock(r.paused_at_s, False)}; resumed {s.clock(r.at_s, False)}"
    return text + (f" (cuda-checkpoint could not restore it: {s.text(r.problem)})" if r.problem else "")


@says(c.DemoOnCpu)
def _demo_on_cpu(r: c.DemoOnCpu, s: Say) -> str:
    return f"demo: {'ran' if s.finished else 'running'} on the CPU in place of {r.device}"


@says(c.CouldNotStart)
def _could_not_start(r: c.CouldNotStart, s: Say) -> str:
    return f"could not start: {s.text(r.error)}"


@says(c.StartHeld)
def _start_held(r: c.StartHeld, s: Say) -> str:
    tries = f", {r.tries} tries so far" if r.tries > 1 else ""
    return f"could not start for now ({s.text(r.error)}); trying again in {max(1, round(r.delay_s))} s{tries}"


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
    tried = ", ".join(f"{_where(t.device)} {s.size(max(0, t.free_bytes))} free" for t in r.tried)
    return f"{said}; no device it may use has that free" + (f" ({tried})" if tried else "")


@says(c.MovedLate)
def _moved_late(r: c.MovedLate, s: Say) -> str:
    would = "would have ended" if s.finished else "would end"
    frees = f", as it frees in {s.about(r.wait_s)}" if r.wait_s > 0 else ""
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
    return f"its saved record cannot be read: {r.problem}; it is kept in the queue file as it was"


@says(c.Unplannable)
def _unplannable(r: c.Unplannable, s: Say) -> str:
    return f"cannot be planned: {r.problem}"


# -- dependencies -------------------------------------------------------------------------------------


def _dep(d: c.DepState) -> str:
    return f"#{d.task_id} {d.name!r}"


def _edit_after(task_id: int) -> str:
    return f"`gputray edit {task_id} --after …` changes what it waits for"


@says(c.WaitsForDeps)
def _waits_for_deps(r: c.WaitsForDeps, s: Say) -> str:
    deps = ", ".join(
        f"#{d.task_id} (no longer in the queue; {_edit_after(r.task_id)})"
        if d.state == "removed"
        else f"{_dep(d)} ({d.state})"
        for d in r.deps
    )
    return f"waits for {deps} {'to end' if r.any_end else 'to succeed'}"


@says(c.DependencyFailed)
def _dependency_failed(r: c.DependencyFailed, s: Say) -> str:
    why = s(r.why) if r.why is not None else r.dep.state
    if isinstance(r.why, c.DependencyFailed):
        why = f"because of its own {why}"
    if len(why) > 120:
        why = why[:119] + "…"
    return f"dependency {_dep(r.dep)} {r.dep.state}: {why}"


# -- the cluster --------------------------------------------------------------------------------------


@says(c.Sending)
def _sending(r: c.Sending, s: Say) -> str:
    if r.not_here:
        return f"sending to {r.machine} (it could not start here)"
    return f"sending to {r.machine}" + (f" ({s(r.why)})" if r.why is not None else "")


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
        return f"taken back by {r.machine}: it waited here and {r.free or 'this machine'} is free"
    if r.free is None:
        return f"taken back from {r.machine} to apply the edit"
    return f"taken back from {r.machine}: it waited there and {r.free} is free"


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


# -- queue events -------------------------------------------------------------------------------------


@says(c.Named)
def _named(r: c.Named, s: Say) -> str:
    where = f" on {r.machine}" if r.machine else ""
    return f"{r.name}{where}: {s(r.why)}"


@says(c.Queued)
def _queued(r: c.Queued, s: Say) -> str:
    return f"{r.name} queued {'again ' if r.again else ''}as #{r.task_id}"


def _ran_on(device: str | None, demo_for: str | None) -> str:
    return f"the CPU (demo: in place of {demo_for})" if demo_for else _where(device)


@says(c.JobStarted)
def _job_started(r: c.JobStarted, s: Say) -> str:
    return f"{r.name} started on {_ran_on(r.device, r.demo_for)}"


@says(c.JobFinished)
def _job_finished(r: c.JobFinished, s: Say) -> str:
    return f"{r.name} finished on {_ran_on(r.device, r.demo_for)}"


@says(c.JobCancelled)
def _job_cancelled(r: c.JobCancelled, s: Say) -> str:
    return f"{r.name} cancelled"


@says(c.JobCouldNotStart)
def _job_could_not_start(r: c.JobCouldNotStart, s: Say) -> str:
    return f"{r.name} could not start: {s.text(r.error)}"


@says(c.OfferMade)
def _offer_made(r: c.OfferMade, s: Say) -> str:
    free = f"{r.device} is free and would run it in {s.about(r.run_s)}"
    return f"{r.name} has waited {s.about(r.waited_s)}: {free}"


# -- what happened to a device (the tray's notices) ------------------------------------------------


@says(b.Appeared)
def _appeared(r: b.Appeared, s: Say) -> str:
    return f"{r.device} appeared"


@says(b.Vanished)
def _vanished(r: b.Vanished, s: Say) -> str:
    return f"{r.device} disappeared"


@says(b.WasLost)
def _waslost(r: b.WasLost, s: Say) -> str:
    return f"{r.device} was lost: {s.text(r.why) if r.why else 'fell off the bus'}"


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
