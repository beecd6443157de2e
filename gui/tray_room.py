"""The tray's side of making room (issue 27): at each snapshot it asks the owner's ``room`` (the
residents, the GPUs an exclusive app took, the "ask" questions standing) and

* hands it to the panel (each GPU card's resident lines, "taken by cs2") and to the icon;
* notifies, once each, when an exclusive app (a game) takes a GPU — gputray paused its jobs there —
  and when it gives it back (the jobs go on);
* asks each standing question once ("Free ComfyUI's 9.8 GiB and run train.py" / "Keep waiting":
  ``room_prompts``), and sends the answers given in the panel's row menu.

``TrayApp`` takes these from ``TrayRoom``; the attributes below are the app's own.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gputray.gui.resident_text import given_back_notice, question_notice, taken_notice
from gputray.gui.room_prompts import FREE_RESIDENT, RoomPrompts, question_key
from gputray.monitor.records import Snapshot
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.replies import RoomQuestion, RoomReply

if TYPE_CHECKING:
    from gputray.gui.notifications import Notifier
    from gputray.gui.panel import Panel
    from gputray.scheduler.client.host import Owner

log = logging.getLogger("gputray.gui")


class TrayRoom:
    """See the module docstring."""

    owner: Owner | None
    notifier: Notifier
    panel: Panel
    room_prompts: RoomPrompts
    room: RoomReply | None

    def _refresh_room(self, snap: Snapshot) -> None:
        owner = self.owner
        if owner is None:
            return
        try:
            room = owner.handle(rq.Room())
        except Exception as exc:  # starting or stopping: the next snapshot asks again
            log.debug("room not asked: %s", exc)
            return
        before = self.room.taken if self.room is not None else {}
        self.room = room
        names = {r.info.key: r.info.name for r in snap.readings}
        for device, app in room.taken.items():
            if before.get(device) != app:
                log.info("%s taken by %s: gputray's jobs there are paused", names.get(device, device), app)
                self.notifier.notify(taken_notice(device, app, names.get(device, device)))
        for device, app in before.items():
            if device not in room.taken:
                log.info("%s given back by %s: gputray's jobs there go on", names.get(device, device), app)
                self.notifier.notify(given_back_notice(device, app, names.get(device, device)))
        prompts = self.room_prompts
        for question in room.questions:
            key = question_key(question)
            if key in prompts.settled or key in prompts.asked:
                continue
            prompts.asked.add(key)
            self.notifier.notify(
                question_notice(question, names.get(question.device, question.device), room.now_s)
            )
        self.panel.set_room(room)

    def _on_room_answered(self, answer: str, question: RoomQuestion) -> None:
        """A question answered in the panel's row menu (where the desktop shows no buttons)."""
        if answer == FREE_RESIDENT:
            self.room_prompts.free(question)
        else:
            self.room_prompts.keep_waiting(question)
