from __future__ import annotations

from PySide6.QtGui import QColor, QImage
from pytestqt.qtbot import QtBot

from gputray.gui.sparkline import Sparkline


def test_points_map_to_the_last_five_minutes_with_gaps(qtbot: QtBot) -> None:
    w = Sparkline(window_s=300.0, max_value=100.0)
    qtbot.addWidget(w)
    w.resize(302, 52)
    pts = [(650.0, 50.0), (800.0, 0.0), (850.0, 100.0), (900.0, None), (950.0, 100.0), (1000.0, 100.0)]
    w.set_points(pts, now_s=1000.0)
    segments = w.paths()
    assert [len(s) for s in segments] == [2, 2]  # 650 is older than 5 min; None splits the line
    first = segments[0][0]
    assert round(first.x()) == 1 + 100 and round(first.y()) == 51  # t=800 → a third in; 0 % at the bottom
    assert round(segments[0][1].y()) == 1  # 100 % at the top


def test_it_paints_the_line(qtbot: QtBot) -> None:
    w = Sparkline(color=QColor("#ff0000"))
    qtbot.addWidget(w)
    w.resize(100, 30)
    w.set_points([(t, 100.0) for t in range(0, 301, 10)], now_s=300.0)
    img = QImage(w.size(), QImage.Format.Format_ARGB32)
    w.render(img)
    reds = sum(
        1 for x in range(5, 95) if img.pixelColor(x, 1).red() > 200 and img.pixelColor(x, 1).green() < 90
    )
    assert reds > 60
