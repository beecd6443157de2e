"""The question a queue row's "Set priority…" asks."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from gputray.gui.i18n import tr
from gputray.scheduler.client.replies import TaskView


def ask_priority(parent: QWidget, task: TaskView) -> int | None:
    """A priority number for ``task`` (higher starts first), as `gputray edit` sets; None: not given."""
    from PySide6.QtWidgets import QInputDialog

    from gputray.scheduler.client.tasks import MAX_PRIORITY

    value, ok = QInputDialog.getInt(
        parent,
        tr("Set priority"),
        tr("Priority of {name} (higher starts first):").format(name=task.name),
        task.priority,
        -MAX_PRIORITY,
        MAX_PRIORITY,
    )
    return value if ok else None
