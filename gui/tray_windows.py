"""The windows the tray opens and what acts on all of them: the dashboard (and the doctor, and a
log where no file launcher opens it), Settings, About, the drop bubble, "Stop process…", a window that
could not be built, and a switch of language or colour scheme. ``TrayApp`` takes these from
``TrayWindows``; the attributes below are the app's own."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication, QMessageBox

from gputray.gui import messages, window_audit
from gputray.gui.i18n import install_language, tr, tr_noop
from gputray.gui.theme import scheme_name
from gputray.monitor.records import ProcessUse, Snapshot
from gputray.scheduler.client.connection import app_paths
from gputray.scheduler.client.replies import RoomReply

if TYPE_CHECKING:
    from gputray.gui.drops import DropOutcome
    from gputray.gui.gui_state import GuiState
    from gputray.gui.menu import TrayMenu
    from gputray.gui.panel import Panel
    from gputray.gui.queue_model import QueueModel
    from gputray.gui.tray_icon import TrayIconController
    from gputray.scheduler.client.settings import Config

log = logging.getLogger("gputray.gui")

WINDOW_MISSING_PART = tr_noop(
    "{window} needs {module}, which this Python does not have. Install it with\n\n"
    "{python} -m pip install {package}\n\n"
    "(or reinstall gputray, which depends on it), then open it again."
)
WINDOW_FAILED = tr_noop(
    "{window} could not be opened: {error}\n\nIf gputray was updated or reinstalled while it ran, quit and "
    "start it again. The full error is in {log}."
)


def missing_package(exc: BaseException) -> str | None:
    """The third-party package whose absence ``exc`` reports; None for anything else (gputray's own
    modules missing means an install changed under the running app, not a package to add)."""
    if isinstance(exc, ModuleNotFoundError) and exc.name and not exc.name.startswith("gputray"):
        return exc.name.split(".")[0]
    return None


def window_failed_text(window: str, exc: BaseException) -> str:
    """What a window that failed to build tells the user: the missing package and the command that
    installs it into this very Python, or the error and where its traceback is logged."""
    package = missing_package(exc)
    if package is not None:
        return tr(WINDOW_MISSING_PART).format(
            window=window, module=package, python=sys.executable, package=package
        )
    return tr(WINDOW_FAILED).format(
        window=window, error=messages.said(exc), log=app_paths().state_dir / "gputray.log"
    )


class TrayWindows:
    """The tray's windows; see the module docstring."""

    config: Config
    demo: bool
    monitor: Any
    latest: Snapshot | None
    dashboard: Any
    bubble: Any
    model: QueueModel
    panel: Panel
    menu: TrayMenu
    state: GuiState
    icon_ctl: TrayIconController
    room: RoomReply | None

    def _warn(self, text: str) -> None:
        raise NotImplementedError  # TrayApp's: a message box that does not block

    def _apply_settings(self, values: dict[str, Any]) -> None:
        raise NotImplementedError  # TrayApp's: the saved config read back, the banner and language

    def _refresh_icon(self, snap: Snapshot) -> None:
        raise NotImplementedError  # TrayApp's

    def notice_text(self) -> str:
        raise NotImplementedError  # TrayApp's: the panel's banner

    def toggle_panel(self) -> None:
        raise NotImplementedError  # TrayApp's

    def drop_files(self, items: list[str]) -> DropOutcome:
        raise NotImplementedError  # OwnerRequests': files handed to the queue

    def _window_failed(self, window: str, exc: Exception) -> None:
        """A window that could not be built: a message box; the traceback goes to the log unless the
        reason is a missing package (the message says all there is to say)."""
        log.error("%s could not be built: %s", window, exc, exc_info=missing_package(exc) is None)
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "gputray",
            window_failed_text(window, exc),
            QMessageBox.StandardButton.Ok,
        )
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.show()
        self._last_warning = box

    def open_log(self, path: str) -> None:
        log.info("open log %s", path)
        if not Path(path).exists():
            self._warn(tr("The log {path} does not exist (yet).").format(path=path))
            return
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(path)):
            self.open_dashboard(tab=3)
            if self.dashboard is not None:
                self.dashboard.show_log_of(path)

    def open_dashboard(self, *, tab: int = 0) -> bool:
        """Show the dashboard on ``tab``; False (and a message box saying why and what to do) when it
        cannot be built. No exception leaves here: one escaping a Qt slot is kept by Python in
        ``sys.last_traceback`` with every frame's locals, and a half-built window kept that way is what
        Qt crashed on (issue 21)."""
        if self.monitor is None:
            self._warn(tr("gputray is still starting; try again in a moment."))
            return False
        if self.dashboard is None:
            try:
                from gputray.gui.dashboard import Dashboard

                self.dashboard = Dashboard(
                    self.monitor, tasks=self.model.tasks, demo=self.demo, room=lambda: self.room
                )
            except Exception as exc:
                self._window_failed(tr("The dashboard"), exc)
                return False
            self.dashboard.stop_process_requested.connect(self.stop_process)
            self.dashboard.settings_requested.connect(self.open_settings)
        self.dashboard.tabs.setCurrentIndex(tab)
        log.info("dashboard opened")
        already_shown = self.dashboard.isVisible()
        self.dashboard.show()
        self.dashboard.raise_()
        self.dashboard.activateWindow()
        if already_shown and window_audit.enabled():  # no Show event: audit the tab it turned to
            window_audit.audit_soon(self.dashboard)
        return True

    def run_doctor(self) -> None:
        if self.open_dashboard(tab=2) and self.dashboard is not None:
            self.dashboard.run_doctor()

    def open_about(self) -> None:
        from gputray.gui.about import show_about

        self.about_box = show_about()  # held here: a parentless box is deleted with its last reference

    def open_settings(self) -> None:
        try:
            from gputray.gui.settings_dialog import SettingsDialog

            dialog = SettingsDialog(None, self.config)
        except Exception as exc:
            self._window_failed(tr("The settings window"), exc)
            return
        dialog.saved.connect(self._apply_settings)
        dialog.exec()

    def set_language(self, language: str) -> None:
        """Switch the language of every open window at once (Qt sends each a LanguageChange); the
        model, the tooltip and the banner follow here. Nothing is rebuilt, so nothing is lost."""
        from PySide6.QtCore import QCoreApplication, QEvent

        install_language(language)
        # Qt posts a LanguageChange to every widget; deliver them now, so every window has switched
        # before anything below (the tooltip, the banner) or the next paint reads them.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.LanguageChange)
        self.model.retranslate()
        self.panel.set_notice(self.notice_text)
        if self.latest is not None:
            self.icon_ctl.force_tooltip()  # a new language is a change worth showing at once
            self._refresh_icon(self.latest)
        if self.bubble is not None:
            self.bubble.update()
        log.info("language: %s", language)

    def _on_scheme_changed(self) -> None:
        log.info("colour scheme: %s", scheme_name())
        self.panel.restyle()
        self.model.restyle()
        if self.dashboard is not None:
            self.dashboard.restyle()

    def stop_process(self, process: ProcessUse) -> None:
        from gputray.gui.process_actions import confirm_and_stop

        pinned = self.panel.pinned
        self.panel.pinned = True  # the question takes the focus: keep the panel open meanwhile
        try:
            confirm_and_stop(self.panel if self.panel.isVisible() else None, process)
        finally:
            self.panel.pinned = pinned

    def set_bubble(self, on: bool) -> None:
        self.state.set("bubble_visible", on)
        if not on:
            if self.bubble is not None:
                self.bubble.hide()
            return
        if self.bubble is None:
            from gputray.gui.drop_bubble import DropBubble

            self.bubble = DropBubble(self.state, demo=self.demo)
            self.bubble.files_dropped.connect(self.drop_files)
            self.bubble.clicked.connect(self.toggle_panel)
            self.bubble.closed.connect(lambda: self.menu.bubble_action.setChecked(False))
            if self.state.get("bubble_pos") is None:
                screen = QApplication.primaryScreen().availableGeometry()
                self.bubble.move(screen.right() - 120, screen.bottom() - 160)
        self.bubble.show()
        self.bubble.raise_()
