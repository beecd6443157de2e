"""A tiny QPainter line chart: the last few minutes of one metric, cheap enough to repaint every second."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget


class Sparkline(QWidget):
    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        window_s: float = 300.0,
        max_value: float = 100.0,
        color: QColor | None = None,
    ) -> None:
        super().__init__(parent)
        self.window_s = window_s
        self.max_value = max_value
        self.color = color or QColor("#4caf50")
        self._points: tuple[tuple[float, float | None], ...] = ()
        self._now_s = 0.0
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumHeight(22)

    def set_color(self, color: str | QColor) -> None:
        """The line's colour: the GPU's legend colour, as its bar in the tray icon."""
        new = QColor(color)
        if new != self.color:
            self.color = new
            if self.isVisible():
                self.update()

    def sizeHint(self) -> QSize:
        return QSize(160, 26)

    def set_points(self, points: Sequence[tuple[float, float | None]], now_s: float | None = None) -> None:
        """``(timestamp_s, value)`` pairs, oldest first; None values leave a gap. Repaints only on change."""
        pts = tuple(points)
        now = now_s if now_s is not None else (pts[-1][0] if pts else 0.0)
        if pts == self._points and now == self._now_s:
            return
        self._points = pts
        self._now_s = now
        if self.isVisible():
            self.update()

    def points(self) -> tuple[tuple[float, float | None], ...]:
        return self._points

    def paths(self) -> list[list[QPointF]]:
        """The polyline segments in widget coordinates (a None value starts a new segment)."""
        w, h = float(self.width() - 2), float(self.height() - 2)
        start = self._now_s - self.window_s
        segments: list[list[QPointF]] = []
        current: list[QPointF] = []
        for t, v in self._points:
            if t < start:
                continue
            if v is None:
                if current:
                    segments.append(current)
                current = []
                continue
            frac = min(max(v / self.max_value, 0.0), 1.0) if self.max_value > 0 else 0.0
            x = 1.0 + (t - start) / self.window_s * w
            y = 1.0 + (1.0 - frac) * h
            current.append(QPointF(x, y))
        if current:
            segments.append(current)
        return segments

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), self.palette().base())
        painter.setPen(QPen(self.palette().mid().color(), 1))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        fill = QColor(self.color)
        fill.setAlpha(60)
        bottom = float(self.height() - 1)
        for segment in self.paths():
            if len(segment) == 1:
                segment = [segment[0], QPointF(segment[0].x() + 1, segment[0].y())]
            area = QPainterPath(QPointF(segment[0].x(), bottom))
            for p in segment:
                area.lineTo(p)
            area.lineTo(QPointF(segment[-1].x(), bottom))
            area.closeSubpath()
            painter.fillPath(area, fill)
            line = QPainterPath(segment[0])
            for p in segment[1:]:
                line.lineTo(p)
            painter.setPen(QPen(self.color, 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPath(line)
        painter.end()
