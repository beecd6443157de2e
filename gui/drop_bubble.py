"""A small always-on-top drop target (files cannot be dropped on a tray icon on any platform).

Drag it anywhere with the left button; it remembers where it was. Pinned, it stays on top of other
windows; unpinned it behaves like a normal small window. Toggled from the tray menu.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QDragEnterEvent,
    QDropEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
)
from PySide6.QtWidgets import QMenu, QWidget

from gputray.gui.gui_state import GuiState
from gputray.gui.i18n import tr


class DropBubble(QWidget):
    files_dropped = Signal(list)
    clicked = Signal()
    closed = Signal()

    def __init__(self, state: GuiState | None = None, *, demo: bool = False) -> None:
        super().__init__(None)
        self.state = state
        self.demo = demo
        self.pinned = bool(state.get("bubble_pinned", True)) if state else True
        self._hover = False
        self._press: QPoint | None = None
        self._moved = False
        self.setObjectName("gputrayBubble")
        self.setAcceptDrops(True)
        self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
        self.setFixedSize(QSize(72, 72))
        self._apply_flags()
        self.retranslate()
        pos = state.get("bubble_pos") if state else None
        if isinstance(pos, list) and len(pos) == 2 and all(isinstance(v, int) for v in pos):
            self.move(QPoint(pos[0], pos[1]))

    def retranslate(self) -> None:
        self.setWindowTitle("gputray — " + tr("drop files"))
        self.setToolTip(tr("Drop files here to queue them"))
        self.update()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()

    def _apply_flags(self) -> None:
        flags = Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint
        if self.pinned:
            flags |= Qt.WindowType.WindowStaysOnTopHint
        visible = self.isVisible()
        self.setWindowFlags(flags)
        if visible:
            self.show()

    def set_pinned(self, pinned: bool) -> None:
        self.pinned = pinned
        if self.state:
            self.state.set("bubble_pinned", pinned)
        self._apply_flags()

    def label_text(self) -> str:
        """What the bubble paints (in the current language)."""
        return tr("drop") + ("\n" + tr("DEMO") if self.demo else "")

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = QRectF(self.rect()).adjusted(3, 3, -3, -3)
        p.setBrush(QColor("#1e88e5") if self._hover else QColor(38, 50, 56, 220))
        p.setPen(QPen(QColor("white"), 2, Qt.PenStyle.DashLine))
        p.drawEllipse(r)
        p.setPen(QColor("white"))
        font = p.font()
        font.setPointSizeF(max(6.0, font.pointSizeF() * 0.85))
        p.setFont(font)
        p.drawText(r, Qt.AlignmentFlag.AlignCenter, "⇩\n" + self.label_text())
        p.end()

    # moving it around
    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.globalPosition().toPoint() - self.frameGeometry().topLeft()
            self._moved = False

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press is not None:
            self.move(event.globalPosition().toPoint() - self._press)
            self._moved = True

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._press is not None:
            self._press = None
            if self._moved:
                self.remember_position()
            else:
                self.clicked.emit()

    def remember_position(self) -> None:
        if self.state:
            self.state.set("bubble_pos", [self.x(), self.y()])

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = QMenu(self)
        pin = menu.addAction(tr("Keep on top"))
        pin.setCheckable(True)
        pin.setChecked(self.pinned)
        hide = menu.addAction(tr("Hide the bubble"))
        chosen = menu.exec(event.globalPos())
        if chosen is pin:
            self.set_pinned(pin.isChecked())
        elif chosen is hide:
            self.hide()
            self.closed.emit()

    # drops
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            self._hover = True
            self.update()
            event.acceptProposedAction()

    def dragLeaveEvent(self, event: object) -> None:
        self._hover = False
        self.update()

    def dropEvent(self, event: QDropEvent) -> None:
        self._hover = False
        self.update()
        urls = event.mimeData().urls()
        if urls:
            event.acceptProposedAction()
            self.files_dropped.emit([u.toLocalFile() or u.toString() for u in urls])
