"""``GPUTRAY_LAYOUT_AUDIT=1``: every window and dialog of the app is audited once it is on screen.

An application-wide event filter sees each gputray window (the panel, the dashboard, the bubble) and
every dialog (Settings, the drop dialog, message boxes, questions) when it is shown, and logs what
``layout_audit.audit`` finds 1.5 s later (long enough for the content to settle): ``layout audit
(<name>): …`` and one ``layout problem (<name>): …`` line per problem — cut text, or a window outside
its screen's available area. The X11 end-to-end tests read these lines. Off by default: a filter on
every event of the application costs something, and only diagnostics need it.
"""

from __future__ import annotations

import logging
import os

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialog, QWidget

log = logging.getLogger("gputray.gui")

NAMES = {"gputrayPanel": "panel", "gputrayDashboard": "dashboard", "gputrayBubble": "bubble"}
DELAY_MS = 1500


def enabled() -> bool:
    return os.environ.get("GPUTRAY_LAYOUT_AUDIT") == "1"


def window_name(window: QWidget) -> str:
    """The name the log gives a window: ``panel``, ``dashboard``, ``settings``, ``QMessageBox`` …"""
    name = window.objectName()
    return NAMES.get(name, name or type(window).__name__)


def audited(widget: QObject) -> bool:
    """One of ours: a dialog, or a gputray window (not menus, tooltips, the tray's own windows)."""
    if not isinstance(widget, QWidget) or not widget.isWindow():
        return False
    if widget.windowType() in (Qt.WindowType.Popup, Qt.WindowType.ToolTip):
        return False
    return isinstance(widget, QDialog) or widget.objectName() in NAMES


def audit_now(window: QWidget, name: str | None = None) -> None:
    from gputray.gui.layout_audit import audit

    if not window.isVisible():
        return
    name = name or window_name(window)
    report = audit(window)
    log.info("layout audit (%s): %s", name, report.summary())
    for problem in report.problems:
        log.warning("layout problem (%s): %s", name, problem)


def audit_soon(window: QWidget, name: str | None = None) -> None:
    QTimer.singleShot(DELAY_MS, window, lambda: audit_now(window, name))


class WindowAuditor(QObject):
    """Installed on the application: audits each of ours when it is shown."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show and audited(watched):
            assert isinstance(watched, QWidget)
            audit_soon(watched)
        return False
