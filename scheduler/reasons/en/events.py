"""English words for what a queue event says (the tray's notifications, the owner's log)."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _where
from gputray.scheduler.reasons.say import Say

says = EN.says


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
    if s.finished:
        free = f"{r.device} was free and would have run it in {s.about(r.run_s)}"
        return f"{r.name} had waited {s.about(r.waited_s)}: {free}"
    free = f"{r.device} is free and would run it in {s.about(r.run_s)}"
    return f"{r.name} has waited {s.about(r.waited_s)}: {free}"
