"""Reason codes and their rendering, one catalogue per language (``reasons/``): a client shows a
task's reason in the user's language from the typed code the owner sent."""

from __future__ import annotations

from gputray.scheduler.reasons.codes import Reason, says_how_it_ended
from gputray.scheduler.reasons.render import ENDED_STATES, catalogue, render, render_all
from gputray.scheduler.reasons.say import Say, Worded

__all__ = [
    "ENDED_STATES",
    "Reason",
    "Say",
    "Worded",
    "catalogue",
    "render",
    "render_all",
    "says_how_it_ended",
]
