from __future__ import annotations

from gui_snapshots import KEY_780M, KEY_5060, snapshot
from PySide6.QtCore import QEvent, QMimeData, QPoint, QPointF, QRect, QSize, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from gputray.gui.panel import Panel, panel_position
from gputray.gui.queue_model import QueueModel


def make_panel(qtbot: QtBot, **kw: bool) -> Panel:
    model = QueueModel()
    panel = Panel(model, **kw)
    qtbot.addWidget(panel)
    return panel


def test_cards_show_what_each_gpu_is_doing(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    history = {KEY_5060: [(800.0 + i, float(i % 100)) for i in range(200)], KEY_780M: []}
    panel.update_snapshot(
        snapshot(busy_5060=("llama-server uses 14.2 GiB, 97 %",)),
        lambda key, metric, since: [p for p in history[key] if p[0] >= since],
    )
    assert list(panel.cards) == [KEY_5060, KEY_780M]
    card = panel.cards[KEY_5060]
    assert card.name_label.text() == "GeForce RTX 5060 Ti"
    assert card.metrics_label.text() == "42 %  ·  61 °C  ·  95 W"
    assert card.memory_label.text() == "VRAM 14.2 / 16.0 GiB  ·  shared –"
    assert "llama-server (4242) 14.2 GiB 97%" in card.processes_label.text()
    assert "busy: llama-server uses 14.2 GiB, 97 %" in card.processes_label.text()
    assert len(card.sparkline.points()) == 200
    igpu = panel.cards[KEY_780M]
    assert igpu.memory_label.text() == "VRAM 1.0 / 4.0 GiB  ·  shared 3.0 / 29.0 GiB"
    assert "CPU 12 %" in panel.host_label.text()
    # a GPU that vanishes loses its card
    snap = snapshot()
    only_igpu = snap.__class__(snap.timestamp_s, snap.readings[1:], snap.host)
    panel.update_snapshot(only_igpu)
    assert list(panel.cards) == [KEY_780M]


def test_cards_show_jobs_running_and_slots(qtbot: QtBot) -> None:
    """The queue's slots per device (config `[devices.<name>] slots`) show on each card and for the CPU,
    whether the listing or the first sample comes first."""
    panel = make_panel(qtbot)
    panel.set_jobs([{"key": KEY_5060, "running": 1, "slots": 2, "name": "GeForce RTX 5060 Ti"}])
    panel.update_snapshot(snapshot())
    assert panel.cards[KEY_5060].jobs_label.text() == "jobs 1/2"
    panel.set_jobs(
        [
            {"key": KEY_5060, "running": 0, "slots": 2},
            {"key": KEY_780M, "running": 1, "slots": 1},
            {"key": "cpu", "running": 3, "slots": 4},
        ]
    )
    assert panel.cards[KEY_5060].jobs_label.text() == "jobs 0/2"
    assert panel.cards[KEY_780M].jobs_label.text() == "jobs 1/1"
    panel.update_snapshot(snapshot())
    assert panel.host_label.text().endswith("jobs 3/4") and "CPU 12 %" in panel.host_label.text()


def test_demo_title_and_hot_style(qtbot: QtBot) -> None:
    panel = make_panel(qtbot, demo=True)
    assert panel.windowTitle() == "gputray — DEMO" and panel.title_label.text() == "gputray — DEMO"
    panel.update_snapshot(snapshot(temp_5060=91.0))
    assert "c62828" in panel.cards[KEY_5060].metrics_label.styleSheet()
    panel.set_demo(False)
    assert panel.windowTitle() == "gputray"


def test_flags_tool_window_not_popup(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    flags = panel.windowFlags()
    assert flags & Qt.WindowType.Tool == Qt.WindowType.Tool
    assert flags & Qt.WindowType.FramelessWindowHint
    assert flags & Qt.WindowType.WindowType_Mask != Qt.WindowType.Popup
    windowed = make_panel(qtbot, windowed=True)
    assert windowed.windowFlags() & Qt.WindowType.WindowType_Mask == Qt.WindowType.Window
    assert windowed.pinned


def test_position_next_to_the_icon_or_cursor() -> None:
    screen = QRect(0, 0, 1920, 1050)
    size = QSize(460, 560)
    # bottom-right tray (Windows, KDE): above the icon, right edges aligned
    assert panel_position(QRect(1800, 1020, 24, 24), size, screen) == QPoint(1823 - 460, 1020 - 560 - 4)
    # top bar (GNOME-like, SNI cursor anchor 1×1): below, kept on screen
    assert panel_position(QRect(1900, 5, 1, 1), size, screen) == QPoint(1900 - 460, 5 + 4)
    # near the left edge: clamped
    assert panel_position(QRect(10, 5, 24, 24), size, screen).x() == 0


def test_hides_on_deactivate_unless_pinned(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.show()
    QApplication.sendEvent(panel, QEvent(QEvent.Type.WindowDeactivate))
    assert not panel.isVisible() and panel.hidden_by_deactivate_at is not None
    panel.pin_button.click()
    panel.show()
    QApplication.sendEvent(panel, QEvent(QEvent.Type.WindowDeactivate))
    assert panel.isVisible()


def test_queue_buttons_emit_the_selected_task(qtbot: QtBot) -> None:
    panel = make_panel(qtbot)
    panel.model.apply(
        [
            {"id": 7, "name": "a.png", "state": "waiting", "log_path": "/tmp/7.log"},
            {"id": 8, "name": "b.png", "state": "queued", "log_path": "/tmp/8.log"},
        ]
    )
    panel.table.selectRow(1)
    with qtbot.waitSignal(panel.cancel_requested) as cancel:
        panel.cancel_button.click()
    assert cancel.args == [[8]]
    with qtbot.waitSignal(panel.move_requested) as move:
        panel.up_button.click()
    assert move.args == [8, -1]
    with qtbot.waitSignal(panel.open_log_requested) as opened:
        panel.log_button.click()
    assert opened.args == ["/tmp/8.log"]
    with qtbot.waitSignal(panel.pause_requested) as paused:
        panel.pause_all_button.click()
    assert paused.args == [None]
    panel.set_paused(True, [KEY_780M])
    assert panel.pause_all_button.text() == "Resume queue"
    panel.update_snapshot(snapshot())
    panel.set_paused(True, [KEY_780M])
    assert panel.cards[KEY_780M].pause_button.isChecked()
    with qtbot.waitSignal(panel.resume_requested) as resumed:
        panel.cards[KEY_780M].pause_button.click()
    assert resumed.args == [KEY_780M]


def test_dropping_files_on_the_panel(qtbot: QtBot, tmp_path: object) -> None:
    """A QDropEvent delivered in-process (the real XDND drag is covered by the X11 e2e test's notes)."""
    panel = make_panel(qtbot)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile("/tmp/a b.png"), QUrl.fromLocalFile("/tmp/写真.jpg")])
    event = QDropEvent(
        QPointF(20, 20),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    with qtbot.waitSignal(panel.files_dropped) as dropped:
        panel.dropEvent(event)
    assert dropped.args == [["/tmp/a b.png", "/tmp/写真.jpg"]]
