"""The tray menu's About box: gputray's version with the Qt, PySide6 and Python it runs on (what a bug
report needs first; ``gputray --version`` prints the Qt-free part)."""

from __future__ import annotations

import PySide6
from PySide6.QtCore import qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from gputray.gui.i18n import tr
from gputray.scheduler.client.about import frozen, gputray_version, python_version


def about_text() -> str:
    lines = [
        tr("gputray {version}").format(version=gputray_version()),
        tr("Qt {qt} (PySide6 {pyside})").format(qt=qVersion(), pyside=PySide6.__version__),
        tr("Python {python}").format(python=python_version()),
    ]
    if frozen():
        lines.append(tr("frozen build"))
    return "\n".join(lines)


def show_about(parent: QWidget | None = None) -> QMessageBox:
    """Non-modal, so the tray keeps updating while it is open; returned for tests to read and close."""
    box = QMessageBox(QMessageBox.Icon.Information, tr("About gputray"), about_text(), parent=parent)
    box.setObjectName("about")
    box.setModal(False)
    box.show()
    return box
