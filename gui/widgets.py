"""Small widgets the windows share: a one-line label that elides instead of widening its window, and
a colour swatch for the icon's legend."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class ElidedLabel(QLabel):
    """One line of plain text that never asks its window for more width.

    Text that does not fit ends in "…" and the whole text goes into the tooltip (after the label's own
    tooltip, if it has one). The height is always one line, empty or not, so a card keeps its height
    while lines come and go. ``text()`` is the whole text; :meth:`shown_text` what is on screen.
    """

    def __init__(
        self,
        text: str = "",
        parent: QWidget | None = None,
        *,
        mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight,
    ) -> None:
        super().__init__(parent)
        self._full = ""
        self._own_tip = ""
        self._mode = mode
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setText(text)

    # -- text ------------------------------------------------------------------------------------------
    def setText(self, text: str) -> None:
        text = text or ""
        if text == self._full and self._shown_is_current():
            return
        self._full = text
        self.updateGeometry()
        self._elide()

    def text(self) -> str:
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def is_elided(self) -> bool:
        return super().text() != self._full

    def set_own_tooltip(self, tip: str) -> None:
        """A tooltip that explains the line; the whole text is added to it while the line is elided."""
        self._own_tip = tip
        self._elide()

    def _shown_is_current(self) -> bool:
        return super().text() == self._elided_for(self.contentsRect().width())

    def _elided_for(self, width: int) -> str:
        if width <= 0 or self.fontMetrics().horizontalAdvance(self._full) <= width:
            return self._full
        return self.fontMetrics().elidedText(self._full, self._mode, width)

    def _elide(self) -> None:
        shown = self._elided_for(self.contentsRect().width())
        if super().text() != shown:
            super().setText(shown)
        tip = self._own_tip
        if shown != self._full:
            tip = f"{tip}\n{self._full}" if tip else self._full
        if self.toolTip() != tip:
            self.setToolTip(tip)

    # -- size ------------------------------------------------------------------------------------------
    def _line_height(self) -> int:
        margins = self.contentsMargins()
        return self.fontMetrics().height() + margins.top() + margins.bottom()

    def sizeHint(self) -> QSize:
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self._full) + margins.left() + margins.right() + 2
        return QSize(width, self._line_height())

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("…") * 2, self._line_height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event: object) -> None:
        super().changeEvent(event)  # type: ignore[arg-type]
        from PySide6.QtCore import QEvent

        if isinstance(event, QEvent) and event.type() == QEvent.Type.FontChange:
            self.updateGeometry()
            self._elide()


class Swatch(QWidget):
    """A small bar in a GPU's legend colour: the same colour as its bar in the tray icon."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.color = QColor("#9e9e9e")
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        h = self.fontMetrics().height()
        return QSize(max(6, h // 2), h)

    def set_color(self, color: str) -> None:
        if QColor(color) != self.color:
            self.color = QColor(color)
            self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), self.color)
        p.end()
