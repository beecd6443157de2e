"""The tray's right-click menu. Only actions: the app connects them to what they do."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from gputray.gui.i18n import tr, tr_noop

DEMO_LOCKED = tr_noop("No GPU was found on this machine, so gputray stays in demo mode.")


class TrayMenu(QMenu):
    def __init__(self, parent: QWidget | None = None, *, demo: bool = False) -> None:
        super().__init__(parent)
        self.show_panel_action = QAction(self)
        self.pause_action = QAction(self)
        self.pause_action.setCheckable(True)
        self.dashboard_action = QAction(self)
        self.doctor_action = QAction(self)
        self.settings_action = QAction(self)
        self.demo_action = QAction(self)
        self.demo_action.setCheckable(True)
        self.demo_action.setChecked(demo)
        self.bubble_action = QAction(self)
        self.bubble_action.setCheckable(True)
        self.about_action = QAction(self)
        self.quit_action = QAction(self)
        self.addAction(self.show_panel_action)
        self.addSeparator()
        self.addAction(self.pause_action)
        self.addAction(self.dashboard_action)
        self.addAction(self.doctor_action)
        self.addAction(self.settings_action)
        self.addSeparator()
        self.addAction(self.demo_action)
        self.addAction(self.bubble_action)
        self.addSeparator()
        self.addAction(self.about_action)
        self.addAction(self.quit_action)
        self.setToolTipsVisible(True)  # the demo entry says why it cannot be unticked
        self.demo_locked = False
        self.retranslate()

    def set_demo_locked(self, locked: bool) -> None:
        """No GPU was found: demo mode cannot be left, so the entry is off and says why (issue 33:
        unticking it restarted the owner, which found no GPU and ticked it again, silently)."""
        self.demo_locked = locked
        self.demo_action.setEnabled(not locked)
        self.retranslate()

    def retranslate(self) -> None:
        self.show_panel_action.setText(tr("Show panel"))
        self.pause_action.setText(tr("Resume queue") if self.pause_action.isChecked() else tr("Pause queue"))
        self.dashboard_action.setText(tr("Open dashboard"))
        self.doctor_action.setText(tr("Run doctor"))
        self.settings_action.setText(tr("Settings…"))
        self.demo_action.setText(tr("Demo mode"))
        self.demo_action.setToolTip(tr(DEMO_LOCKED) if self.demo_locked else "")
        self.bubble_action.setText(tr("Drop bubble"))
        self.about_action.setText(tr("About gputray"))
        self.quit_action.setText(tr("Quit"))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()

    def set_paused(self, paused: bool) -> None:
        self.pause_action.blockSignals(True)
        self.pause_action.setChecked(paused)
        self.pause_action.setText(tr("Resume queue") if paused else tr("Pause queue"))
        self.pause_action.blockSignals(False)
