"""The answers to "this task could start now on another device" (a ``job_offer`` notice, ``replies.Offer``).

Where the desktop's notification daemon shows buttons (``desktop_notify``: Linux, over D-Bus), the
notice itself asks "Run on <device> now" / "Keep waiting". Elsewhere (Windows, a desktop without
buttons, no session bus) the tray shows its balloon, and a click on it opens the panel at the task,
whose row menu has the same two entries (``Panel.row_menu``).

Either answer is an ordinary ``edit`` of the task, as ``gputray edit`` sends it (the ``Offer`` contract):
"Run on X now" makes the offered device the task's only choice (``device_prefs``), so the next dispatch
starts it there; "Keep waiting" sets ``offer_declined``, so no offer for that task comes again. A
question still on the desktop when its task starts anyway (or ends, or goes) is taken off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

from PySide6.QtCore import QObject, Qt, Signal

from gputray.gui.desktop_notify import CLOSED, DesktopNotifier
from gputray.gui.i18n import tr
from gputray.gui.notifications import Notice
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.replies import Offer, Reply
from gputray.scheduler.client.tasks import TaskPatch

log = logging.getLogger("gputray.gui.offer_prompts")

RUN_HERE = "run-here"  # the action keys of the notification's buttons
KEEP_WAITING = "keep-waiting"

R = TypeVar("R", bound=Reply)


class OfferHost(Protocol):
    """What the answers need of the tray (``TrayApp``)."""

    def request(self, req: rq.Request[R]) -> R | None: ...

    def reload_queue(self) -> None: ...


def run_label(offer: Offer) -> str:
    return tr("Run on {device} now").format(device=offer.device_name)


def keep_label() -> str:
    return tr("Keep waiting")


class OfferPrompts(QObject):
    """Shows offers with buttons where the desktop can, and sends whichever answer comes (see the module)."""

    _answer_arrived = Signal(int, str)  # notification id, action key: from the D-Bus thread

    def __init__(self, host: OfferHost, settled: set[int], *, bus: str = "SESSION") -> None:
        super().__init__(None)
        self.host = host
        self.settled = settled  # the notifier's: an answered task is not offered again
        self.bus = bus
        self._desktop: DesktopNotifier | None = None
        self._looked = False
        self._asked: dict[int, tuple[int, Offer]] = {}  # notification id → (task id, offer)
        # the other questions asked through the same daemon connection (``room_prompts``): each takes
        # the answers to its own notifications (True) and leaves the rest
        self.other_answers: list[Callable[[int, str], bool]] = []
        self._answer_arrived.connect(self._on_answer, Qt.ConnectionType.QueuedConnection)

    def desktop(self) -> DesktopNotifier | None:
        """The notification daemon, looked for once (at the first offer, not at start-up)."""
        if not self._looked:
            self._looked = True
            self._desktop = DesktopNotifier.open(self._answer_arrived.emit, bus=self.bus)
        return self._desktop

    def show(self, notice: Notice) -> bool:
        """Asked with buttons on the desktop; False: the caller shows its balloon instead."""
        if notice.offer is None or notice.task_id is None:
            return False
        desktop = self.desktop()
        if desktop is None:
            return False
        actions = [(RUN_HERE, run_label(notice.offer)), (KEEP_WAITING, keep_label())]
        try:
            note_id = desktop.notify(notice.title, notice.message, actions, app_name="gputray")
        except Exception as exc:  # the daemon went away: the balloon still tells
            log.warning("the desktop notification failed (%s); showing the tray's balloon", exc)
            return False
        self._asked[note_id] = (notice.task_id, notice.offer)
        log.info("offer for task #%d asked on the desktop (notification %d)", notice.task_id, note_id)
        return True

    def _on_answer(self, note_id: int, action: str) -> None:
        asked = self._asked.pop(note_id, None)
        if asked is None:  # another question's, another app's notification, or the close after the button
            any(answer(note_id, action) for answer in self.other_answers)
            return
        task_id, offer = asked
        if action == RUN_HERE:
            self.run_here(task_id, offer)
        elif action == KEEP_WAITING:
            self.keep_waiting(task_id)
        elif action == CLOSED:
            log.info("offer for task #%d closed without an answer", task_id)
        else:
            log.warning("offer for task #%d: unknown answer %r", task_id, action)

    def task_moved_on(self, task_id: int) -> None:
        """The task started, ended or went: its question, still on the desktop, is taken off."""
        for note_id, (asked_task, _) in list(self._asked.items()):
            if asked_task == task_id and self._desktop is not None:
                del self._asked[note_id]
                log.info("offer for task #%d withdrawn: it no longer waits", task_id)
                self._desktop.withdraw(note_id)

    def run_here(self, task_id: int, offer: Offer) -> None:
        """Start the task on the offered device: it becomes the task's only choice."""
        log.info("offer for task #%d: run on %s now", task_id, offer.device_key)
        self.settled.add(task_id)
        self.host.request(rq.Edit(id=task_id, changes=TaskPatch(device_prefs=(offer.device_key,))))
        self.host.reload_queue()

    def keep_waiting(self, task_id: int) -> None:
        """Leave the task where it waits, and offer it no more."""
        log.info("offer for task #%d: keep waiting", task_id)
        self.settled.add(task_id)
        self.host.request(rq.Edit(id=task_id, changes=TaskPatch(offer_declined=True)))
        self.host.reload_queue()

    def close(self) -> None:
        if self._desktop is not None:
            self._desktop.close()
            self._desktop = None
