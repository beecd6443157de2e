"""English words for the queue's refusals (``reasons/refusals.py``), as the command line has always
said them."""

from __future__ import annotations

from gputray.scheduler.reasons import refusals as f
from gputray.scheduler.reasons.en.common import EN
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(f.AlreadyEnded)
def _already_ended(r: f.AlreadyEnded, s: Say) -> str:
    return f"task #{r.task_id} already {r.state}; nothing to cancel"


@says(f.ChangedMeanwhile)
def _changed(r: f.ChangedMeanwhile, s: Say) -> str:
    return f"task #{r.task_id} changed state meanwhile; try again"


@says(f.RetryIsForEnded)
def _retry_is_for_ended(r: f.RetryIsForEnded, s: Say) -> str:
    return f"task #{r.task_id} is {r.state}; retry is for finished tasks"


@says(f.OnlyPendingMove)
def _only_pending_move(r: f.OnlyPendingMove, s: Say) -> str:
    return f"task #{r.task_id} is {r.state}; only queued or waiting tasks move"


@says(f.MoveNextToItself)
def _next_to_itself(r: f.MoveNextToItself, s: Say) -> str:
    return f"task #{r.task_id} cannot move next to itself"


@says(f.OwnerStarting)
def _starting(r: f.OwnerStarting, s: Say) -> str:
    return "the gputray owner is still starting; try again"


@says(f.OwnerGoing)
def _going(r: f.OwnerGoing, s: Say) -> str:
    return "the gputray owner is stopping"


@says(f.NoSuchFiles)
def _no_such_files(r: f.NoSuchFiles, s: Say) -> str:
    return f"no such file: {', '.join(r.files)}"


@says(f.AnchorNotPending)
def _anchor(r: f.AnchorNotPending, s: Say) -> str:
    return f"task #{r.task_id} is {r.state}; tasks move among queued or waiting ones"
