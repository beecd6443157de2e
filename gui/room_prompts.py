"""The answers to "free an idle resident for this waiting task?" (``free_when_idle = "ask"``, issue 27).

The owner's ``room`` request lists the questions standing (``replies.RoomQuestion``: the task, and the
idle resident whose memory would let it start). The tray asks each once, on the same path as an offer
(``offer_prompts``): with buttons where the desktop's notification daemon shows them — "Free ComfyUI's
9.8 GiB and run train.py" / "Keep waiting" — else in the tray's balloon, a click on which opens the
panel at the task, whose row menu has the same two entries.

"Free" is the owner's ``free_resident`` request for that task, as ``gputray free-resident`` sends it:
the owner asks the resident through its own API (never kills it, never asks one that is serving),
checks that the device's memory came back, and the task's reason tells the story. "Keep waiting" asks
the resident nothing: it is an ``edit`` of the task, as ``gputray edit ID --keep-waiting NAME`` sends it
(``kept_residents``), so the owner asks no more about that task and resident — after a restart of the
tray or of the owner too — and the task's reason says it waits by the user's choice. Either way that
question is not asked again; a question still on the desktop when its task starts anyway (or ends, or
goes) is taken off.
"""

from __future__ import annotations

import logging
from typing import Protocol, TypeVar

from gputray.gui.desktop_notify import CLOSED, DesktopNotifier
from gputray.gui.notifications import Notice
from gputray.gui.offer_prompts import KEEP_WAITING, keep_label
from gputray.gui.resident_text import free_label
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.replies import Reply, RoomQuestion
from gputray.scheduler.client.tasks import TaskPatch

log = logging.getLogger("gputray.gui.room_prompts")

FREE_RESIDENT = "free-resident"  # the action key of the notification's "Free …" button

R = TypeVar("R", bound=Reply)
QuestionKey = tuple[int, int]  # the task's id, the resident's pid: one question


def question_key(question: RoomQuestion) -> QuestionKey:
    """Which question this is: another resident for the same task (the first one kept) is another."""
    return question.task_id, question.resident.pid


class RoomHost(Protocol):
    """What the answers need of the tray (``TrayApp``)."""

    def request(self, req: rq.Request[R]) -> R | None: ...

    def reload_queue(self) -> None: ...


class DesktopSource(Protocol):
    """Where the notification daemon connection comes from (``OfferPrompts``: one connection for both)."""

    def desktop(self) -> DesktopNotifier | None: ...


class RoomPrompts:
    """Asks each standing question once and sends whichever answer comes (see the module)."""

    def __init__(self, host: RoomHost, desktop: DesktopSource) -> None:
        self.host = host
        self.source = desktop
        self.settled: set[QuestionKey] = set()  # answered (either way): never asked again
        self.asked: set[QuestionKey] = set()  # shown (desktop or balloon)
        self._asked: dict[int, RoomQuestion] = {}  # notification id → its question

    def show(self, notice: Notice) -> bool:
        """Asked with buttons on the desktop; False: the caller shows its balloon instead."""
        question = notice.room
        if question is None:
            return False
        desktop = self.source.desktop()
        if desktop is None:
            return False
        actions = [(FREE_RESIDENT, free_label(question)), (KEEP_WAITING, keep_label())]
        try:
            note_id = desktop.notify(notice.title, notice.message, actions, app_name="gputray")
        except Exception as exc:  # the daemon went away: the balloon still tells
            log.warning("the desktop notification failed (%s); showing the tray's balloon", exc)
            return False
        self._asked[note_id] = question
        log.info(
            "freeing %s for task #%d asked on the desktop (notification %d)",
            question.resident.name, question.task_id, note_id,
        )  # fmt: skip
        return True

    def on_answer(self, note_id: int, action: str) -> bool:
        """A button of one of ours (False: not one of ours)."""
        question = self._asked.pop(note_id, None)
        if question is None:
            return False
        if action == FREE_RESIDENT:
            self.free(question)
        elif action == KEEP_WAITING:
            self.keep_waiting(question)
        elif action == CLOSED:
            log.info(
                "freeing %s for task #%d: closed without an answer", question.resident.name, question.task_id
            )
        else:
            log.warning(
                "freeing %s for task #%d: unknown answer %r", question.resident.name, question.task_id, action
            )
        return True

    def task_moved_on(self, task_id: int) -> None:
        """The task started, ended or went (or was answered elsewhere): its question, still on the
        desktop, is taken off."""
        desktop = self.source.desktop() if self._asked else None
        for note_id, question in list(self._asked.items()):
            if question.task_id == task_id and desktop is not None:
                del self._asked[note_id]
                log.info(
                    "freeing %s for task #%d withdrawn: the task moved on", question.resident.name, task_id
                )
                desktop.withdraw(note_id)

    def free(self, question: RoomQuestion) -> None:
        """Yes: the owner asks the resident through its API, for this task."""
        self.settled.add(question_key(question))
        self.task_moved_on(question.task_id)  # answered in the row menu: the desktop's question goes
        reply = self.host.request(rq.FreeResident(name=question.resident.name, task=question.task_id))
        said = reply.said if reply is not None else "no answer"
        log.info("freeing %s for task #%d: %s", question.resident.name, question.task_id, said)
        self.host.reload_queue()

    def keep_waiting(self, question: RoomQuestion) -> None:
        """No: the task waits on, and the owner asks no more about that resident for it (the task's
        ``kept_residents``: a restarted tray or owner does not ask again either)."""
        log.info("freeing %s for task #%d: keep waiting", question.resident.name, question.task_id)
        self.settled.add(question_key(question))
        self.task_moved_on(question.task_id)
        kept = TaskPatch(kept_residents=(question.resident.name,))  # added to those it kept before
        self.host.request(rq.Edit(id=question.task_id, changes=kept))
        self.host.reload_queue()
