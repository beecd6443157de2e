"""Why the queue refuses what was asked of a task, as data (cancel a task that has ended, move a running
one …): made where the queue refuses (``queue/service.py``, ``queue/edits.py``, ``queue/offline.py``),
carried by the refusal (``TaskStateError.said``, ``OfflineRefusal.said``, ``TasksDone.refused``) and
worded per language by the reason catalogues (``reasons/en/refusals.py``, ``reasons/ja/refusals.py``):
the command line's one line in English, the tray's message box in the language it shows."""

from __future__ import annotations

from gputray.scheduler.reasons.base import Code


class AlreadyEnded(Code, frozen=True):
    """Cancel: the task has already ended (``state``)."""

    task_id: int
    state: str


class ChangedMeanwhile(Code, frozen=True):
    task_id: int


class RetryIsForEnded(Code, frozen=True):
    """Retry: the task is pending or running (``state``)."""

    task_id: int
    state: str


class OnlyPendingMove(Code, frozen=True):
    task_id: int
    state: str


class MoveNextToItself(Code, frozen=True):
    task_id: int


class AnchorNotPending(Code, frozen=True):
    """Move before or after ``task_id``, which is not pending (``state``)."""

    task_id: int
    state: str


class OwnerStarting(Code, frozen=True):
    """The owner is still starting: try again."""


class OwnerGoing(Code, frozen=True):
    """The owner is stopping."""


class NoSuchFiles(Code, frozen=True):
    files: tuple[str, ...]


Refused = (
    AlreadyEnded
    | ChangedMeanwhile
    | RetryIsForEnded
    | OnlyPendingMove
    | MoveNextToItself
    | AnchorNotPending
    | OwnerStarting
    | OwnerGoing
    | NoSuchFiles
)


def refusal_codes() -> tuple[type[Code], ...]:
    """Every kind of refusal (what each language must render)."""
    return tuple(Refused.__args__)
