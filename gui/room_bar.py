"""The panel's room bar: a waiting task whose memory an idle resident holds (``free_when_idle = "ask"``),
with the two answers as buttons — "Free ComfyUI's 9.8 GiB and run train.py" / "Keep waiting".

The desktop's notification asks once and the balloon goes away (Windows, a desktop without buttons);
the row menu has the answers too, but only for whoever right-clicks. As the offer bar does for offers
(``offer_bar``), this bar keeps the standing questions above the queue list, one click away, until each
is answered or its task moves on: one at a time, with "1 of 3" and the previous and next arrows where
several stand (highest priority first, the owner's order). Answering one shows the next. Answers go
out as the panel's ``room_answered``.

::

    train.py waits for GeForce RTX 5060 Ti   ComfyUI  holds 9.8 GiB · idle 14 min
    [Free ComfyUI's 9.8 GiB and run train.py] [Keep waiting]
                                                                [<] 1 of 3 [>]

The question's title takes the room the resident leaves and may elide (its tooltip has it whole; the
Free button names the task too); the resident is the card's ``ResidentRow``, its figures never elided,
in either language — as one text after the title they were cut first ("… ComfyUI: 3.5 GiB を確保 ·
アイド…" on a 1366×768 screen in Japanese). One line, not two: at 1366×768 in Japanese with three
residents on a card the queue list below has little more than a row left as it is. "1 of 3" is a
figure (never elided); it and the arrows are a third line, there only while more than one question stands
(on either line above they took the title's room, or the Free button's, in Japanese).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence

from msgspec.structs import replace as struct_replace
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gputray.gui.i18n import tr
from gputray.gui.offer_prompts import KEEP_WAITING, keep_label
from gputray.gui.resident_rows import ResidentRow
from gputray.gui.resident_text import free_label, question_title
from gputray.gui.room_prompts import FREE_RESIDENT, QuestionKey, question_key
from gputray.gui.widgets import ElidedLabel, FigureLabel
from gputray.scheduler.client.replies import RoomQuestion, RoomReply

NAME_CHARS = 24  # of the task's name on the "Free …" button (its tooltip: the whole label)
RESIDENT_CHARS = 16  # of the resident's ("ComfyUI", "llama-server" fit; a [[resident]] of yours may not)


def _cut(name: str, chars: int = NAME_CHARS) -> str:
    return name if len(name) <= chars else name[: chars - 1] + "…"


def standing_questions(room: RoomReply | None, settled: Collection[QuestionKey]) -> list[RoomQuestion]:
    """The questions nobody answered yet, in the owner's order (highest priority first)."""
    return [q for q in (room.questions if room is not None else ()) if question_key(q) not in settled]


def position_text(index: int, count: int) -> str:
    """ "2 of 3": which of the standing questions the bar shows."""
    return tr("{index} of {count}").format(index=index + 1, count=count)


class RoomBar(QFrame):
    def __init__(self, answer: Callable[[str, RoomQuestion], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("roomBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._answer = answer
        self.question: RoomQuestion | None = None
        self.questions: list[RoomQuestion] = []
        self.index = 0  # of ``question`` in ``questions``
        self._now_s = 0.0
        self._device_names: Mapping[str, str] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        line = QHBoxLayout()
        self.text = ElidedLabel("", self)
        self.text.setSizePolicy(
            QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed
        )  # what the resident leaves
        line.addWidget(self.text, 1)
        self.resident_row = ResidentRow(self)  # name, then its figures whole
        line.addWidget(self.resident_row)
        layout.addLayout(line)
        row = QHBoxLayout()
        self.free_button = QPushButton(self)
        self.keep_button = QPushButton(self)
        self.free_button.clicked.connect(lambda: self._answered(FREE_RESIDENT))
        self.keep_button.clicked.connect(lambda: self._answered(KEEP_WAITING))
        row.addWidget(self.free_button)
        row.addWidget(self.keep_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.pages = QWidget(self)  # a line of its own: the two above have no width to spare
        self.pages.setObjectName("roomPages")
        pages = QHBoxLayout(self.pages)
        pages.setContentsMargins(0, 0, 0, 0)
        pages.addStretch(1)
        self.previous_button = QToolButton(self.pages)
        self.previous_button.setObjectName("roomPrevious")
        self.previous_button.setArrowType(Qt.ArrowType.LeftArrow)
        self.previous_button.clicked.connect(lambda: self.step(-1))
        self.position = FigureLabel(self.pages)  # "1 of 3", whole in either language
        self.position.setObjectName("roomPosition")
        self.next_button = QToolButton(self.pages)
        self.next_button.setObjectName("roomNext")
        self.next_button.setArrowType(Qt.ArrowType.RightArrow)
        self.next_button.clicked.connect(lambda: self.step(1))
        for w in (self.previous_button, self.position, self.next_button):
            pages.addWidget(w)
        layout.addWidget(self.pages)
        self.pages.hide()
        self.hide()

    def show_questions(
        self, questions: Sequence[RoomQuestion], now_s: float, device_names: Mapping[str, str]
    ) -> bool:
        """Show the one shown before where it still stands (else the one now in its place, or the
        last); True when the bar appeared or went (the panel's rows change)."""
        was = self.question is not None
        keys = [question_key(q) for q in questions]
        shown = question_key(self.question) if self.question is not None else None
        self.index = keys.index(shown) if shown in keys else min(self.index, max(0, len(questions) - 1))
        self.questions = list(questions)
        self.question = self.questions[self.index] if self.questions else None
        self._now_s, self._device_names = now_s, device_names
        self.retranslate()
        self.setVisible(self.question is not None)
        return was != (self.question is not None)

    def step(self, by: int) -> None:
        """The previous (-1) or next (1) standing question, round the ends."""
        if len(self.questions) < 2:
            return
        self.index = (self.index + by) % len(self.questions)
        self.question = self.questions[self.index]
        self.retranslate()

    def retranslate(self) -> None:
        q = self.question
        if q is None:
            return
        device = self._device_names.get(q.device, q.device)
        self.text.setText(question_title(q, device))
        self.resident_row.show_resident(q.resident, self._now_s, device)
        whole = free_label(q)
        # a long task or resident name (a [[resident]] of yours) would widen the panel while shown: cut here
        short = struct_replace(
            q,
            task_name=_cut(q.task_name or f"#{q.task_id}"),
            resident=dataclasses.replace(q.resident, name=_cut(q.resident.name, RESIDENT_CHARS)),
        )
        self.free_button.setText(free_label(short))
        self.free_button.setToolTip(whole)
        self.keep_button.setText(keep_label())
        count = len(self.questions)
        self.position.set_figures(position_text(self.index, count), position_text(count - 1, count))
        self.position.setToolTip(
            tr("Waiting tasks that an idle program's memory would let start: the arrows go through them")
        )
        self.previous_button.setToolTip(tr("Previous question"))
        self.next_button.setToolTip(tr("Next question"))
        self.previous_button.setAccessibleName(tr("Previous question"))
        self.next_button.setAccessibleName(tr("Next question"))
        self.pages.setVisible(count > 1)

    def _answered(self, answer: str) -> None:
        if self.question is not None:
            self._answer(answer, self.question)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
