"""Reason codes and their rendering, one catalogue per language (``reasons/``): a client shows a
task's reason (and the doctor's news) in the user's language from the typed code."""

from __future__ import annotations

from gputray.scheduler.reasons.base import Code
from gputray.scheduler.reasons.codes import DeviceGone, Reason, says_how_it_ended
from gputray.scheduler.reasons.doctor_codes import DoctorNews
from gputray.scheduler.reasons.render import ENDED_STATES, catalogue, render, render_all
from gputray.scheduler.reasons.say import Say, Worded

__all__ = [
    "ENDED_STATES",
    "Code",
    "DeviceGone",
    "DoctorNews",
    "Reason",
    "Say",
    "Worded",
    "catalogue",
    "render",
    "render_all",
    "says_how_it_ended",
]
