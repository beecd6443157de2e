"""The question before a running job is cancelled: it stops at once, its output ends there (issue 33).

Cancelling a task that only waits needs no question (nothing is lost; Retry queues it again). A
running one loses its work, so the panel asks first, naming it, with "Don't ask again" (remembered in
``gui_state.json`` as ``ask_before_stopping_jobs``). The queue writes the cancel as the job log's last
line (``job_runs.cancelled_line``), so a log that stops mid-line says why.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QCheckBox, QMessageBox, QWidget

from gputray.gui.gui_state import GuiState
from gputray.gui.i18n import tr, trn
from gputray.scheduler.client.replies import TaskView

ASK_KEY = "ask_before_stopping_jobs"


def confirm_cancel(parent: QWidget | None, tasks: Sequence[TaskView], state: GuiState) -> bool:
    """Whether to go on with cancelling ``tasks``: asked only when some are running and the user has
    not said "Don't ask again"."""
    running = [t for t in tasks if t.state == "running"]
    if not running or not state.get(ASK_KEY, True):
        return True
    box = QMessageBox(QMessageBox.Icon.Question, "gputray", "", parent=parent)
    box.setObjectName("confirm cancel")
    if len(running) == 1:
        task = running[0]
        box.setText(tr("Stop the running job {name} (#{id})?").format(name=task.name, id=task.id))
    else:
        box.setText(trn("Stop %n running job(s)?", len(running)))
    box.setInformativeText(
        tr("It is stopped at once with the processes it started, and its log ends with the cancel.")
    )
    stop = box.addButton(tr("Stop it"), QMessageBox.ButtonRole.DestructiveRole)
    keep = box.addButton(tr("Keep it running"), QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)
    again = QCheckBox(tr("Don't ask again"), box)
    box.setCheckBox(again)
    box.exec()
    yes = box.clickedButton() is stop
    if yes and again.isChecked():
        state.set(ASK_KEY, False)
    return yes
