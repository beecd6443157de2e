"""The doctor's verdict marks (works, limited, fails) drawn with QPainter.

The CLI prints ✅ ⚠ ❌; in the GUI those need an emoji font, and without one (a plain Debian or a
minimal desktop) Qt draws empty boxes. These are drawn shapes instead: a green disc with a tick, an
amber triangle with a bar and dot, a red disc with a cross. They are pixmaps at each size and scale Qt
asks for, so they stay crisp at 2×.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QIconEngine, QPainter, QPainterPath, QPen, QPixmap, QPolygonF

VERDICTS = ("works", "limited", "fails")
COLORS = {"works": "#2e9d4a", "limited": "#e0a100", "fails": "#d93a34"}


def paint_mark(painter: QPainter, rect: QRect, verdict: str) -> None:
    """One mark filling ``rect`` (square); an unknown verdict draws a grey disc with a question mark's dot."""
    side = min(rect.width(), rect.height())
    s = side / 16.0  # drawn on a 16-unit grid
    x0 = rect.x() + (rect.width() - side) / 2
    y0 = rect.y() + (rect.height() - side) / 2

    def p(x: float, y: float) -> QPointF:
        return QPointF(x0 + x * s, y0 + y * s)

    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    color = QColor(COLORS.get(verdict, "#8a8a8a"))
    white = QPen(QColor("white"), 2.0 * s, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)
    white.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(color)
    if verdict == "limited":
        painter.drawPolygon(QPolygonF([p(8, 1), p(15.5, 14.5), p(0.5, 14.5)]))
        painter.setPen(white)
        painter.drawLine(p(8, 5.5), p(8, 9.5))
        painter.drawPoint(p(8, 12.2))
    else:
        painter.drawEllipse(p(8, 8), 7.5 * s, 7.5 * s)
        painter.setPen(white)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if verdict == "works":
            tick = QPainterPath(p(4.5, 8.3))
            tick.lineTo(p(7, 10.8))
            tick.lineTo(p(11.6, 5.4))
            painter.drawPath(tick)
        elif verdict == "fails":
            painter.drawLine(p(5.2, 5.2), p(10.8, 10.8))
            painter.drawLine(p(10.8, 5.2), p(5.2, 10.8))
        else:
            painter.drawPoint(p(8, 8))
    painter.restore()


class _MarkEngine(QIconEngine):
    def __init__(self, verdict: str) -> None:
        super().__init__()
        self.verdict = verdict

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        paint_mark(painter, rect, self.verdict)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return self.scaledPixmap(size, mode, state, 1.0)

    def scaledPixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State, scale: float) -> QPixmap:
        pixmap = QPixmap(size * scale)
        pixmap.setDevicePixelRatio(scale)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        paint_mark(painter, QRect(0, 0, size.width(), size.height()), self.verdict)
        painter.end()
        return pixmap

    def clone(self) -> QIconEngine:
        return _MarkEngine(self.verdict)


def mark_icon(verdict: str) -> QIcon:
    """The verdict's mark as an icon (table cells, labels)."""
    return QIcon(_MarkEngine(verdict))


def strip_mark(text: str) -> tuple[str | None, str]:
    """A doctor progress line (``torch × RTX: ✅ works in 1.2 s``) → (its verdict, the line without the
    mark the CLI prints); (None, text) when it has none."""
    from gputray.scheduler.client.doctor import verdict_mark

    for verdict in VERDICTS:
        mark = verdict_mark(verdict)
        if mark in text:
            return verdict, text.replace(mark + "\ufe0f", "").replace(mark + " ", "").replace(mark, "")
    return None, text
