"""English words for the Python envs a torch task runs in (``pyenvs/choice.py``)."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _aside, _demo, _where
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(c.EnvChecking)
def _env_checking(r: c.EnvChecking, s: Say) -> str:
    return f"{s.tense('', 'was ')}checking env {r.env} on {_where(r.device)}{_demo(r.demo_for)}…"


@says(c.NoEnvWorks)
def _no_env_works(r: c.NoEnvWorks, s: Say) -> str:
    text = f"no configured Python env works on {_where(r.device)}{_demo(r.demo_for)}"
    if r.failures:
        text += ": " + "; ".join(f"{f.env}: {s(f.why)}" for f in r.failures)
    return text + (f"; fix: {s(r.fix)}" if r.fix else "")


@says(c.NoEnvKnown)
def _no_env_known(r: c.NoEnvKnown, s: Say) -> str:
    return f"no Python env {s.tense('is', 'was')} known to work on {_where(r.device)}"


@says(c.NoEnvConfigured)
def _no_env_configured(r: c.NoEnvConfigured, s: Say) -> str:
    add = f"add one: {r.command} (a venv where `pip install torch` ran)"
    if r.demo:
        return f"demo: torch jobs run on the CPU in an env with torch; {add}"
    return f"no Python env is configured for torch jobs; {add}"


@says(c.EnvUnproven)
def _env_unproven(r: c.EnvUnproven, s: Say) -> str:
    if s.finished:
        return (
            f"env {r.env} worked on {_where(r.device)}, but that its torch landed on this GPU was not proven"
            f"{_aside(s.text(r.why))}; a task with allow_unproven = true would have run there anyway"
        )
    return (
        f"env {r.env} works on {_where(r.device)}, but that its torch lands on this GPU is not proven"
        f"{_aside(s.text(r.why))}; a task with allow_unproven = true runs there anyway"
    )


@says(c.EnvListUnreadable)
def _env_list(r: c.EnvListUnreadable, s: Say) -> str:
    return f"the env list cannot be read: {r.error}"


@says(c.EnvLookupFailed)
def _env_lookup(r: c.EnvLookupFailed, s: Say) -> str:
    return f"env lookup failed ({r.error})"
