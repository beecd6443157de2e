"""Issue 33 items 8 and 9 on the real app (demo owner, real jobs, the panel as a window):

- cancelling a running job asks first (naming it, "Don't ask again"), and its log's last line says it
  was cancelled;
- after a cancel the selection follows the task, the row stays in view, and the buttons are enabled
  only for what they can do with it (▲/▼ off for a cancelled task, Retry on).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton
from pytestqt.qtbot import QtBot

from gputray.gui.app import build_parser
from gputray.gui.cancel_confirm import ASK_KEY
from gputray.gui.tray_app import TrayApp
from gputray.scheduler import protocol as rq
from gputray.scheduler.tasks.records import TaskPatch

SLEEPER = (
    "import time; print('started', flush=True); print('half a line', end='', flush=True); time.sleep(120)"
)


@pytest.fixture
def app(qtbot: QtBot) -> Iterator[TrayApp]:
    tray = TrayApp(build_parser().parse_args(["--demo"]), tray_available=False)
    tray.start()
    try:
        qtbot.waitUntil(lambda: tray.owner is not None, timeout=30_000)
        yield tray
    finally:
        tray.shutdown()
        tray.panel.hide()


def submit(app: TrayApp, name: str, argv: list[str], **patch: object) -> int:
    assert app.owner is not None
    reply = app.owner.handle(rq.Run(argv=argv, name=name, overrides=TaskPatch(**patch)))  # type: ignore[arg-type]
    app.reload_queue()
    return reply.tasks[0].id


def state_of(app: TrayApp, task_id: int) -> str:
    assert app.owner is not None
    return app.owner.handle(rq.Get(id=task_id)).task.state


def answer_question(qtbot: QtBot, *, button: str, never_again: bool, seen: list[str]) -> None:
    """When the question is up: note its text, tick "Don't ask again" if asked, click ``button``."""

    def act() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, act)
            return
        seen.append(box.text())
        box.checkBox().setChecked(never_again)
        chosen = next(b for b in box.buttons() if isinstance(b, QPushButton) and b.text() == button)
        qtbot.mouseClick(chosen, Qt.MouseButton.LeftButton)

    QTimer.singleShot(20, act)


def select(app: TrayApp, task_id: int) -> None:
    row = app.model.row_of(task_id)
    assert row is not None
    app.panel.table.selectRow(row)


def click(qtbot: QtBot, button: QPushButton) -> None:
    assert button.isEnabled(), button.toolTip()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_cancelling_a_running_job_asks_first_and_the_log_ends_with_the_cancel(
    qtbot: QtBot, app: TrayApp
) -> None:
    running = submit(app, "long render", [sys.executable, "-c", SLEEPER])
    qtbot.waitUntil(lambda: state_of(app, running) == "running", timeout=30_000)
    app.reload_queue()
    select(app, running)
    seen: list[str] = []

    answer_question(qtbot, button="Keep it running", never_again=False, seen=seen)
    click(qtbot, app.panel.cancel_button)
    assert seen == [f"Stop the running job long render (#{running})?"]
    assert state_of(app, running) == "running"  # kept

    answer_question(qtbot, button="Stop it", never_again=True, seen=seen)
    click(qtbot, app.panel.cancel_button)
    qtbot.waitUntil(lambda: state_of(app, running) == "cancelled", timeout=30_000)
    assert app.owner is not None
    log = Path(str(app.owner.handle(rq.Get(id=running)).task.log_path)).read_text(encoding="utf-8")
    assert "half a line" in log
    last = log.rstrip("\n").splitlines()[-1]
    assert last.startswith("gputray: cancelled at ") and last.endswith(": the job was stopped by request"), (
        log
    )
    assert app.state.get(ASK_KEY) is False  # "Don't ask again", remembered

    again = submit(app, "second render", [sys.executable, "-c", SLEEPER])
    qtbot.waitUntil(lambda: state_of(app, again) == "running", timeout=30_000)
    app.reload_queue()
    select(app, again)
    asked = len(seen)
    click(qtbot, app.panel.cancel_button)  # not asked again
    qtbot.waitUntil(lambda: state_of(app, again) == "cancelled", timeout=30_000)
    assert len(seen) == asked


def test_after_a_cancel_the_selection_follows_the_task_in_view_with_only_its_buttons(
    qtbot: QtBot, app: TrayApp
) -> None:
    app.pause(None)  # every task stays queued: a long list that scrolls
    ids = [submit(app, f"task {n}", [sys.executable, "-c", "pass"]) for n in range(40)]
    panel = app.panel
    panel.show()
    target = ids[0]
    select(app, target)
    panel.table.scrollToTop()
    buttons: Callable[[], dict[str, bool]] = lambda: {  # noqa: E731
        "cancel": panel.cancel_button.isEnabled(),
        "retry": panel.retry_button.isEnabled(),
        "up": panel.up_button.isEnabled(),
        "down": panel.down_button.isEnabled(),
    }
    assert buttons() == {"cancel": True, "retry": False, "up": True, "down": True}
    click(qtbot, panel.cancel_button)  # a queued task: no question
    qtbot.waitUntil(lambda: state_of(app, target) == "cancelled", timeout=10_000)
    app.reload_queue()
    assert [t.id for t in panel.selected_tasks()] == [target]  # the selection followed the task
    row = app.model.row_of(target)
    assert row is not None
    rect = panel.table.visualRect(app.model.index(row, 0))
    assert panel.table.viewport().rect().intersects(rect), "the selected row is in view"
    assert buttons() == {"cancel": False, "retry": True, "up": False, "down": False}
    assert panel.up_button.toolTip() == "Select one queued or waiting task to move it"


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_cancel_question_and_the_offer_bar_speak_the_language(
    qtbot: QtBot, gputray_home: Path, language: str
) -> None:
    """The words of items 9 and 11 in both languages: the question names the job (plural forms for
    several), "Don't ask again" is a real check box; the offer bar says the offer and its two answers."""
    from gputray.gui.cancel_confirm import confirm_cancel
    from gputray.gui.gui_state import GuiState
    from gputray.gui.i18n import install_language
    from gputray.gui.offer_bar import OfferBar
    from gputray.scheduler.replies import Offer, TaskView

    words = {
        "en": (
            "Stop the running job render (#4)?",
            "Stop 2 running jobs?",
            "Keep it running",
            "Run on Radeon 780M now",
        ),
        "ja": (
            "実行中のジョブ render (#4) を止めますか?",
            "実行中の 2 件のジョブを止めますか?",
            "実行を続ける",
            "Radeon 780M",
        ),
    }[language]
    assert install_language(language)
    try:
        state = GuiState(gputray_home / "gui_state.json")
        one = TaskView(id=4, name="render", state="running")
        two = [one, TaskView(id=5, name="encode", state="running")]
        for tasks, question in (([one], words[0]), (two, words[1])):
            seen: list[str] = []
            answer_question(qtbot, button=words[2], never_again=False, seen=seen)
            assert not confirm_cancel(None, tasks, state)
            assert seen == [question]
        assert confirm_cancel(None, [TaskView(id=6, name="waits", state="waiting")], state)  # no question
        offer = Offer(device_key="pci:0000:64:00.0", device_name="Radeon 780M", run_s=240.0, waited_s=720.0)
        bar = OfferBar(lambda *_: None)
        qtbot.addWidget(bar)
        bar.show_offers([TaskView(id=7, name="cnn.py", state="waiting", offer=offer)])
        assert not bar.isHidden()  # shown (a widget of its own here, not on screen)
        assert "cnn.py" in bar.text.text() and "Radeon 780M" in bar.text.text()
        assert words[3] in bar.run_button.text()
        if language == "ja":
            assert "今すぐ" in bar.text.text() and bar.keep_button.text() != "Keep waiting"
    finally:
        install_language("en")
