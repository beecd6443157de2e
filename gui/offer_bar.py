"""The panel's offer bar: a waiting task that could start now elsewhere, with its two answers as buttons.

Where the desktop's notification daemon shows buttons, an offer is answered there; without one (no
daemon, a tray host with only Qt's balloon, Windows) the balloon has no buttons and the answer used to
be only in the row's right-click menu (issue 33). The bar shows the standing offer of the first task
that has one, above the queue list — "cnn.py can start now on Radeon 780M: waiting for 12 min, it takes
about 4 min there" — with "Run on Radeon 780M now" and "Keep waiting" one click away; the row's reason
starts with the offer too. Answers go out as the panel's ``offer_answered``, as the row menu's do.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from gputray.gui.i18n import tr, trn
from gputray.gui.offer_prompts import KEEP_WAITING, RUN_HERE, keep_label, run_label
from gputray.gui.widgets import ElidedLabel
from gputray.scheduler.client.replies import Offer, TaskView

PENDING = ("queued", "waiting")


def standing_offers(tasks: Collection[TaskView], settled: Collection[int] = ()) -> list[TaskView]:
    """Pending tasks with an offer that nobody answered yet, in queue order."""
    return [t for t in tasks if t.offer is not None and t.state in PENDING and t.id not in settled]


class OfferBar(QFrame):
    def __init__(self, answer: Callable[[int, str, Offer], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("offerBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._answer = answer
        self.task: TaskView | None = None
        self.more = 0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        self.text = ElidedLabel("", self)
        layout.addWidget(self.text)
        row = QHBoxLayout()
        self.run_button = QPushButton(self)
        self.keep_button = QPushButton(self)
        self.run_button.clicked.connect(lambda: self._answered(RUN_HERE))
        self.keep_button.clicked.connect(lambda: self._answered(KEEP_WAITING))
        row.addWidget(self.run_button)
        row.addWidget(self.keep_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.hide()

    def show_offers(self, offers: list[TaskView]) -> None:
        self.task = offers[0] if offers else None
        self.more = max(0, len(offers) - 1)
        self.retranslate()
        self.setVisible(self.task is not None)

    def retranslate(self) -> None:
        task = self.task
        if task is None or task.offer is None:
            return
        offer = task.offer
        from gputray.gui.notifications import short_duration

        sentence = tr("{name} can start now on {device}: waiting for {waited}, it takes about {run} there")
        text = sentence.format(
            name=task.name or f"#{task.id}",
            device=offer.device_name,
            waited=short_duration(offer.waited_s),
            run=short_duration(offer.run_s),
        )
        if self.more:
            text += " " + trn("(%n more: right-click their rows)", self.more)
        self.text.setText(text)
        self.run_button.setText(run_label(offer))
        self.keep_button.setText(keep_label())

    def _answered(self, answer: str) -> None:
        task = self.task
        if task is not None and task.offer is not None:
            self._answer(task.id, answer, task.offer)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
