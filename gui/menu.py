"""The tray's right-click menu. Only actions: the app connects them to what they do."""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from gputray.gui.i18n import tr


class TrayMenu(QMenu):
    def __init__(self, parent: QWidget | None = None, *, demo: bool = False) -> None:
        super().__init__(parent)
        self.show_panel_action = QAction(tr("Show panel"), self)
        self.pause_action = QAction(tr("Pause queue"), self)
        self.pause_action.setCheckable(True)
        self.dashboard_action = QAction(tr("Open dashboard"), self)
        self.doctor_action = QAction(tr("Run doctor"), self)
        self.settings_action = QAction(tr("Settings…"), self)
        self.demo_action = QAction(tr("Demo mode"), self)
        self.demo_action.setCheckable(True)
        self.demo_action.setChecked(demo)
        self.bubble_action = QAction(tr("Drop bubble"), self)
        self.bubble_action.setCheckable(True)
        self.quit_action = QAction(tr("Quit"), self)
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
        self.addAction(self.quit_action)

    def set_paused(self, paused: bool) -> None:
        self.pause_action.blockSignals(True)
        self.pause_action.setChecked(paused)
        self.pause_action.setText(tr("Resume queue") if paused else tr("Pause queue"))
        self.pause_action.blockSignals(False)
