"""Every tray-menu entry and panel button does something a person can see: a window, a changed label,
or (a button that does not apply to the selection) a disabled button whose tooltip says what to select.
Issue 21: "Open dashboard" and "Run doctor" did nothing visible, and the queue buttons did nothing at all
when the selection did not fit them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QDialog
from pytestqt.qtbot import QtBot

from gputray.gui.app import build_parser
from gputray.gui.panel import Panel
from gputray.gui.queue_model import QueueModel
from gputray.gui.tray_app import TrayApp
from gputray.scheduler.replies import TaskView


@pytest.fixture
def demo_app(qtbot: QtBot, tmp_path: Path) -> Iterator[TrayApp]:
    app = TrayApp(build_parser().parse_args(["--demo"]), tray_available=False)
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
        yield app
    finally:
        if app.dashboard is not None:
            app.dashboard.close()
        if app.bubble is not None:
            app.bubble.hide()
        app.shutdown()
        app.panel.hide()


def test_each_tray_menu_entry_shows_something(qtbot: QtBot, demo_app: TrayApp) -> None:
    menu, panel = demo_app.menu, demo_app.panel
    panel.hide()
    menu.show_panel_action.trigger()
    assert panel.isVisible()

    menu.pause_action.trigger()
    qtbot.waitUntil(lambda: menu.pause_action.text() == "Resume queue")
    assert panel.pause_all_button.text() == "Resume queue"
    menu.pause_action.trigger()
    qtbot.waitUntil(lambda: menu.pause_action.text() == "Pause queue")

    menu.dashboard_action.trigger()
    dashboard = demo_app.dashboard
    assert dashboard is not None and dashboard.isVisible() and dashboard.tabs.currentIndex() == 0
    dashboard.close()

    menu.doctor_action.trigger()  # the dashboard again, on the doctor, which runs (no envs: it ends soon)
    assert dashboard.isVisible() and dashboard.tabs.currentIndex() == 2
    # with no environment the hint stays, with its button (issue 33), once the run has ended
    qtbot.waitUntil(lambda: dashboard.doctor_settings_button.isVisible(), timeout=60_000)
    assert "add a Python environment in Settings" in dashboard.doctor_status.text()
    dashboard.close()

    shown: list[str] = []

    def close_the_dialog() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QDialog):
            QTimer.singleShot(20, close_the_dialog)
            return
        shown.append(dialog.windowTitle())
        dialog.reject()

    QTimer.singleShot(20, close_the_dialog)
    menu.settings_action.trigger()  # modal: returns once the dialog is closed
    assert shown == ["gputray settings"]

    menu.bubble_action.trigger()
    assert demo_app.bubble is not None and demo_app.bubble.isVisible()
    menu.bubble_action.trigger()
    assert not demo_app.bubble.isVisible()


def test_the_panel_buttons_are_enabled_for_what_the_selection_allows_and_say_why_not(qtbot: QtBot) -> None:
    panel = Panel(QueueModel())
    qtbot.addWidget(panel)
    buttons = {
        "cancel": panel.cancel_button,
        "retry": panel.retry_button,
        "up": panel.up_button,
        "down": panel.down_button,
        "log": panel.log_button,
    }

    def usable() -> set[str]:
        return {name for name, b in buttons.items() if b.isEnabled()}

    panel.model.apply(
        [
            TaskView(id=1, name="train.py", state="running", log_path="/tmp/1.log"),
            TaskView(id=2, name="a.png", state="queued"),
            TaskView(id=3, name="b.png", state="failed", log_path="/tmp/3.log"),
        ]
    )
    assert usable() == set()  # nothing selected: nothing to act on, and each says what to select
    assert panel.cancel_button.toolTip() == "Select a queued, waiting or running task to cancel it"
    assert panel.up_button.toolTip() == "Select one queued or waiting task to move it"
    assert panel.log_button.toolTip() == "Select one task that has started to open its log"
    row = {panel.model.task(r).id: r for r in range(panel.model.rowCount())}  # type: ignore[union-attr]
    panel.table.selectRow(row[1])
    assert usable() == {"cancel", "log"}
    assert panel.cancel_button.toolTip() == "Cancel the selected tasks; a running one is stopped"
    panel.table.selectRow(row[2])
    assert usable() == {"cancel", "up", "down"}
    panel.table.selectRow(row[3])
    assert usable() == {"retry", "log"}
    assert panel.retry_button.toolTip() == "Queue the selected tasks again"
    # the selected task changes state under the selection: the buttons follow
    panel.model.apply(
        [
            TaskView(id=1, name="train.py", state="running", log_path="/tmp/1.log"),
            TaskView(id=2, name="a.png", state="queued"),
            TaskView(id=3, name="b.png", state="queued"),
        ]
    )
    qtbot.waitUntil(lambda: usable() == {"cancel", "up", "down"})


def test_a_window_whose_module_vanished_says_to_restart(
    qtbot: QtBot, demo_app: TrayApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's trap: the venv reinstalled under a running tray, so Settings' module is gone. A
    message box says what happened and what to do, instead of a traceback on stderr only."""
    import sys

    from PySide6.QtWidgets import QMessageBox

    from gputray.scheduler.paths import app_paths

    monkeypatch.setitem(sys.modules, "gputray.gui.settings_dialog", None)  # import → ModuleNotFoundError
    demo_app.menu.settings_action.trigger()
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    boxes = [b for b in boxes if "could not be opened" in b.text()]  # (not another test's warning)
    assert len(boxes) == 1
    text = boxes[0].text()
    assert text.startswith("The settings window could not be opened: import of gputray.gui.settings_dialog")
    assert "quit and start it again" in text and str(app_paths().state_dir / "gputray.log") in text
    boxes[0].close()
