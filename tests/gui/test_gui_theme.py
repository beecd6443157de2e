"""Light and dark: colours readable on either, switched when the desktop's palette flips.

The real desktop path (the XDG portal telling Qt the scheme, live) runs in tests/e2e/test_tray_x11.py;
here the application palette is flipped directly, as a platform theme does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gui_snapshots import KEY_5060, snapshot
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from gputray.gui.panel import Panel
from gputray.gui.queue_model import COL_STATE, QueueModel
from gputray.gui.theme import DARK, LIGHT, colors, is_dark
from gputray.scheduler.replies import TaskView


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours."""

    def lum(c: str) -> float:
        def ch(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        q = QColor(c)
        return 0.2126 * ch(q.redF()) + 0.7152 * ch(q.greenF()) + 0.0722 * ch(q.blueF())

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.fixture
def dark_palette(qapp: QApplication) -> Iterator[None]:
    """Puts the light palette back afterwards, whatever the test did to it."""
    old = QApplication.palette()
    yield
    QApplication.setPalette(old)
    QApplication.processEvents()


def test_each_scheme_keeps_its_colours_readable() -> None:
    for scheme, window in ((LIGHT, "#efefef"), (DARK, "#323232")):
        for name in ("hot_text", "notice_text", "secondary_text", "accent"):
            assert contrast(getattr(scheme, name), window) >= 3.0, (scheme.dark, name)
        for state, color in scheme.states.items():
            assert contrast(color, window) >= 3.0, (scheme.dark, state)
        assert contrast(scheme.plot_foreground, scheme.plot_background) >= 7.0


def test_panel_and_queue_restyle_when_the_palette_turns_dark(qtbot: QtBot, dark_palette: None) -> None:
    model = QueueModel()
    model.apply(
        [
            TaskView(id=1, name="a.py", state="running"),
            TaskView(id=2, name="b.py", state="running", paused_at=1.0),
        ]
    )
    panel = Panel(model, demo=True)
    qtbot.addWidget(panel)
    panel.set_notice("a notice")
    panel.update_snapshot(snapshot(temp_5060=95.0))
    assert not is_dark() and colors() is LIGHT
    assert LIGHT.notice_text in panel.notice_label.styleSheet()
    assert LIGHT.hot_text in panel.cards[KEY_5060].metrics_label.styleSheet()
    running = model.index(0, COL_STATE)
    assert model.data(running, Qt.ItemDataRole.ForegroundRole).name() == LIGHT.states["running"]
    paused = model.index(1, COL_STATE)  # its job paused: not in running's green (it was)
    assert model.data(paused, Qt.ItemDataRole.DisplayRole) == "paused"
    assert model.data(paused, Qt.ItemDataRole.ForegroundRole).name() == LIGHT.states["paused"]

    dark = QPalette()
    dark.setColor(QPalette.ColorRole.Window, QColor("#323232"))
    dark.setColor(QPalette.ColorRole.WindowText, QColor("#f0f0f0"))
    QApplication.setPalette(dark)
    QApplication.processEvents()  # every widget gets its PaletteChange
    assert is_dark() and colors() is DARK
    assert DARK.notice_text in panel.notice_label.styleSheet()
    panel.update_snapshot(snapshot(temp_5060=95.0))
    assert DARK.hot_text in panel.cards[KEY_5060].metrics_label.styleSheet()
    assert model.data(running, Qt.ItemDataRole.ForegroundRole).name() == DARK.states["running"]
    assert model.data(paused, Qt.ItemDataRole.ForegroundRole).name() == DARK.states["paused"]
