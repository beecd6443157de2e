"""The panel's queue rows: what the buttons under the list and a row's right-click menu do.

``QueueRows`` is the panel's base (``gui/panel.py`` builds the widgets it names below): it holds the
signals the row actions leave by, the buttons' enabled state and tooltips, the row menu (open log,
cancel, retry, pause a job, priority, an offer's two answers, and the two answers to freeing an idle
resident for the task), and the offer bar's answers. The panel only shows and asks: each action is a
signal the app connects to the queue.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPoint, Signal
from PySide6.QtWidgets import QMenu, QPushButton, QWidget

from gputray.gui.i18n import tr
from gputray.gui.offer_bar import OfferBar, standing_offers
from gputray.gui.offer_prompts import KEEP_WAITING, RUN_HERE, keep_label, run_label
from gputray.gui.priority_dialog import ask_priority
from gputray.gui.queue_model import ACTIVE_STATES, QueueModel
from gputray.gui.queue_view import QueueTable
from gputray.gui.resident_text import free_label
from gputray.gui.room_prompts import FREE_RESIDENT
from gputray.scheduler.client.replies import Offer, RoomQuestion, RoomReply, TaskView

PENDING_STATES = frozenset({"queued", "waiting"})
RETRYABLE_STATES = frozenset({"failed", "cancelled", "interrupted", "succeeded"})


class QueueRows(QWidget):
    """The queue list's actions; the widgets are the panel's (see the module docstring)."""

    cancel_requested = Signal(list)
    retry_requested = Signal(object)
    pause_job_requested = Signal(int, bool)  # task id, pause (True) or resume (False): gputray pause-job
    move_requested = Signal(object, int)
    priority_requested = Signal(object, int)  # task id, the new priority number (higher starts first)
    open_log_requested = Signal(str)
    offer_answered = Signal(object, str, object)  # task id, offer_prompts.RUN_HERE/KEEP_WAITING, the Offer
    room_answered = Signal(str, object)  # room_prompts.FREE_RESIDENT or KEEP_WAITING, the RoomQuestion

    model: QueueModel
    room: RoomReply | None  # the owner's ``room``: the "ask" questions standing, per task
    table: QueueTable
    offer_bar: OfferBar
    _answered_offers: set[int]  # answered here: the bar moves on before the reload
    cancel_button: QPushButton
    retry_button: QPushButton
    up_button: QPushButton
    down_button: QPushButton
    log_button: QPushButton

    def selected_tasks(self) -> list[TaskView]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [t for t in (self.model.task(r) for r in rows) if t is not None]

    def update_buttons(self) -> None:
        """Cancel, Retry, ▲ ▼ and Open log for the selected tasks: enabled when they apply, with a
        tooltip that says what they do, or what to select when they do not apply."""
        tasks = self.selected_tasks()
        states = {t.state for t in tasks}
        single = tasks[0] if len(tasks) == 1 else None
        movable = single is not None and single.state in PENDING_STATES
        for button, usable, doing, why_not in (
            (
                self.cancel_button,
                bool(states & ACTIVE_STATES),
                tr("Cancel the selected tasks; a running one is stopped"),
                tr("Select a queued, waiting or running task to cancel it"),
            ),
            (
                self.retry_button,
                bool(states & RETRYABLE_STATES),
                tr("Queue the selected tasks again"),
                tr("Select a task that has ended to queue it again"),
            ),
            (self.up_button, movable, tr("Move up"), tr("Select one queued or waiting task to move it")),
            (self.down_button, movable, tr("Move down"), tr("Select one queued or waiting task to move it")),
            (
                self.log_button,
                bool(single and single.log_path),
                tr("Open the selected task's log"),
                tr("Select one task that has started to open its log"),
            ),
        ):
            button.setEnabled(usable)
            button.setToolTip(doing if usable else why_not)

    def refresh_offers(self) -> None:
        """The offer bar shows the first standing offer (issue 33: without a notification daemon the
        answers were only in the row menu)."""
        self.offer_bar.show_offers(standing_offers(self.model.tasks(), self._answered_offers))

    def _offer_answered_in_bar(self, task_id: int, answer: str, offer: Offer) -> None:
        self._answered_offers.add(task_id)
        self.refresh_offers()
        self.offer_answered.emit(task_id, answer, offer)

    def _after_reorder(self) -> None:
        self.update_buttons()
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        if rows:
            self.table.scrollTo(self.model.index(rows[0], 0))

    def _cancel(self, tasks: list[TaskView] | None = None) -> None:
        ids = [t.id for t in (self.selected_tasks() if tasks is None else tasks) if t.state in ACTIVE_STATES]
        if ids:
            self.cancel_requested.emit(ids)

    def _retry(self, tasks: list[TaskView] | None = None) -> None:
        for t in self.selected_tasks() if tasks is None else tasks:
            if t.state in RETRYABLE_STATES:
                self.retry_requested.emit(t.id)

    def _move(self, delta: int, tasks: list[TaskView] | None = None) -> None:
        tasks = self.selected_tasks() if tasks is None else tasks
        if len(tasks) == 1 and tasks[0].state in PENDING_STATES:
            self.move_requested.emit(tasks[0].id, delta)

    def _open_log(self, tasks: list[TaskView] | None = None) -> None:
        for t in (self.selected_tasks() if tasks is None else tasks)[:1]:
            if t.log_path:
                self.open_log_requested.emit(t.log_path)

    def _open_log_at(self, index: QModelIndex) -> None:
        t = self.model.task(index.row())
        if t and t.log_path:
            self.open_log_requested.emit(t.log_path)

    def row_menu(self, row: int) -> QMenu:
        """The right-click menu of a queue row (the row is selected first, as a click would).

        Its actions act on the tasks it was opened for, whatever the list does meanwhile, and the list
        holds its order while it is open."""
        if not any(i.row() == row for i in self.table.selectionModel().selectedRows()):
            self.table.selectRow(row)
        tasks = self.selected_tasks()
        states = {t.state for t in tasks}
        single = tasks[0] if len(tasks) == 1 else None
        pending = sum(self.model.counts().get(s, 0) for s in PENDING_STATES)
        menu = QMenu(self)
        menu.aboutToShow.connect(lambda: self.table.set_menu_open(True))
        menu.aboutToHide.connect(lambda: self.table.set_menu_open(False))
        log_action = menu.addAction(tr("Open log"))
        log_action.setEnabled(bool(single and single.log_path))
        log_action.triggered.connect(lambda: self._open_log(tasks))
        menu.addSeparator()
        cancel = menu.addAction(tr("Cancel"))
        cancel.setEnabled(bool(states & ACTIVE_STATES))
        cancel.triggered.connect(lambda: self._cancel(tasks))
        retry = menu.addAction(tr("Retry"))
        retry.setEnabled(bool(states & RETRYABLE_STATES))
        retry.triggered.connect(lambda: self._retry(tasks))
        # one running job of this machine: freeze it (or thaw it) whole, keeping its slot (docs/queue.md)
        ours = single is not None and single.state == "running" and not single.machine
        paused = single is not None and single.paused_at is not None
        pausing = menu.addAction(tr("Resume job") if paused else tr("Pause job"))
        pausing.setEnabled(ours)
        pausing.setToolTip(
            tr("Freeze every process of the job; its GPU memory is freed where cuda-checkpoint can")
        )
        if single is not None:
            pausing.triggered.connect(lambda: self.pause_job_requested.emit(single.id, not paused))
        movable = single is not None and single.state in PENDING_STATES
        priority = menu.addMenu(tr("Priority"))
        priority.setEnabled(movable)
        for text, delta in (
            (tr("First in the queue"), -pending),
            (tr("Up one"), -1),
            (tr("Down one"), 1),
            (tr("Last in the queue"), pending),
        ):
            action = priority.addAction(text)
            action.triggered.connect(lambda _=False, d=delta: self._move(d, tasks))
        priority.addSeparator()
        priority.addAction(tr("Set priority…")).triggered.connect(lambda: self._ask_priority(tasks))
        offer = single.offer if single is not None and movable else None
        if single is not None and offer is not None:  # it could start now elsewhere (replies.Offer)
            menu.addSeparator()
            for text, answer in ((run_label(offer), RUN_HERE), (keep_label(), KEEP_WAITING)):
                action = menu.addAction(text)
                action.triggered.connect(
                    lambda _=False, a=answer: self.offer_answered.emit(single.id, a, offer)
                )
        question = self.room_question(single.id) if single is not None and movable else None
        if question is not None:  # an idle resident's memory would let it start (free_when_idle = "ask")
            menu.addSeparator()
            for text, answer in ((free_label(question), FREE_RESIDENT), (keep_label(), KEEP_WAITING)):
                action = menu.addAction(text)
                action.triggered.connect(lambda _=False, a=answer: self.room_answered.emit(a, question))
        return menu

    def room_question(self, task_id: int) -> RoomQuestion | None:
        """The standing "free an idle resident for it?" question of task ``task_id``, if any."""
        questions = self.room.questions if self.room is not None else ()
        return next((q for q in questions if q.task_id == task_id), None)

    def offer_menu(self, task_id: int) -> QMenu | None:
        """The row menu of a task, opened beside its row (a click on an offer's balloon): "Run on … now",
        "Keep waiting" among its entries. None if the task is not in the list."""
        row = self.model.row_of(task_id)
        if row is None:
            return None
        index = self.model.index(row, 0)
        self.table.scrollTo(index)
        menu = self.row_menu(row)
        menu.aboutToHide.connect(menu.deleteLater)
        menu.popup(self.table.viewport().mapToGlobal(self.table.visualRect(index).bottomLeft()))
        return menu

    def _ask_priority(self, tasks: list[TaskView] | None = None) -> None:
        """A priority number for the selected waiting task (higher starts first), as `gputray edit` sets."""
        tasks = self.selected_tasks() if tasks is None else tasks
        if len(tasks) == 1 and tasks[0].state in PENDING_STATES:
            value = ask_priority(self, tasks[0])
            if value is not None:
                self.priority_requested.emit(tasks[0].id, value)

    def _row_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        menu = self.row_menu(index.row())
        menu.exec(self.table.viewport().mapToGlobal(pos))
        menu.deleteLater()
