"""Small widgets the windows share: a one-line label that elides instead of widening its window, a
label for the figures a window exists to show (never elided: it reserves its width), a wrapped label
whose height follows its width without making its layout height-for-width, and a colour swatch for
the icon's legend."""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QColor, QCursor, QFont, QFontMetrics, QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolTip, QWidget

PRIMARY_PROPERTY = "primaryFigure"  # the layout audit allows no eliding at all for such a widget


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
        self._tip_says_the_line = False
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

    def set_own_tooltip(self, tip: str, *, says_the_line: bool = False) -> None:
        """A tooltip that explains the line; the whole text is added to it while the line is elided,
        unless ``says_the_line``: the tip is the line's own readings at more length (the card's PCIe /
        fan line), and the two near-identical lines it made were one too many (issue 33)."""
        self._own_tip = tip
        self._tip_says_the_line = says_the_line and bool(tip)
        self._elide()

    def tip_says_the_line(self) -> bool:
        """The tooltip says everything the line does, in other words (for ``layout_audit``)."""
        return self._tip_says_the_line

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
        if shown != self._full and not self._tip_says_the_line:
            tip = f"{tip}\n{self._full}" if tip else self._full
        if self.toolTip() != tip:
            self.setToolTip(tip)
            self._refresh_open_tooltip(tip)

    def _refresh_open_tooltip(self, tip: str) -> None:
        """A tooltip on screen is Qt's copy of the text when it opened: put the new one there (the fan's
        30 % stayed in it while the line said 60 %)."""
        if not QToolTip.isVisible() or not self.isVisible():
            return
        pointer = QCursor.pos()
        if self.rect().contains(self.mapFromGlobal(pointer)):
            if tip:
                QToolTip.showText(pointer, tip, self)
            else:
                QToolTip.hideText()

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


def widest_digits(text: str) -> str:
    """``text`` with every digit an 8: as wide as any number of that many digits in most fonts."""
    return re.sub(r"[0-9]", "8", text)


class FigureLabel(QLabel):
    """One line of figures (``42 %  ·  61 °C  ·  95 W``, ``VRAM 14.2 / 16.0 GiB``) that is never elided.

    Its minimum width is the widest of its texts and templates so far (in its font and in bold, which
    the hot style uses), with every digit counted as an 8, so a layout gives it that room before it
    squeezes anything else, and a value that grows a digit does not push it over. The window takes its
    width from the minimum widths, so the figure is whole at any width the window takes. The widest
    seen only grows: the line never makes its row jitter. Marked primary for the layout audit.
    """

    def __init__(self, parent: QWidget | None = None, *, templates: tuple[str, ...] = ()) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        self.setProperty(PRIMARY_PROPERTY, True)
        self.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        self._templates: list[str] = list(templates)
        self._reserved = 0

    def set_figures(self, text: str, *templates: str) -> None:
        """Show ``text``; ``templates`` are texts it may show later (the same line with the total as used)."""
        new = [t for t in (text, *templates) if t and t not in self._templates]
        if new:
            self._templates.extend(new)
            self._reserved = 0
            self.updateGeometry()
        if self.text() != text:
            self.setText(text)

    def reserved_width(self) -> int:
        if not self._reserved:
            plain = self.fontMetrics()
            bold_font = QFont(self.font())
            bold_font.setBold(True)
            bold = QFontMetrics(bold_font)
            widths = [0]
            for t in self._templates:
                wide = widest_digits(t)
                widths += [plain.horizontalAdvance(wide), bold.horizontalAdvance(wide)]
                widths += [plain.horizontalAdvance(t), bold.horizontalAdvance(t)]
            self._reserved = max(widths) + 2
        return max(self._reserved, self.fontMetrics().horizontalAdvance(self.text()) + 2)

    def sizeHint(self) -> QSize:
        margins = self.contentsMargins()
        height = self.fontMetrics().height() + margins.top() + margins.bottom()
        return QSize(self.reserved_width() + margins.left() + margins.right(), height)

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._reserved = 0
            self.updateGeometry()


class WrappedLabel(QLabel):
    """Plain text wrapped at word (or, in Japanese, character) boundaries, as tall as its width needs.

    A word-wrapped QLabel makes its whole layout height-for-width, and a QScrollArea then takes the
    layout's *preferred* height as its minimum: it scrolls as soon as the window is any shorter, even
    where a stretchable list could give up the room. This one keeps an ordinary size policy and sets
    its own fixed height from its width instead (:meth:`fit_width` before the window is sized)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        policy.setHeightForWidth(False)
        self.setSizePolicy(policy)

    def hasHeightForWidth(self) -> bool:
        return False  # QLabel turns its policy's flag back on with every setText

    def needed_height(self, width: int) -> int:
        """The height the text needs at ``width``. (QLabel.heightForWidth is no use here: it never
        answers less than the minimum height, which this label sets itself.)"""
        if not self.text():
            return 0
        m = self.contentsMargins()
        extra = 2 * self.margin()
        inner = max(1, width - m.left() - m.right() - extra)
        flags = int(self.alignment()) | int(Qt.TextFlag.TextWordWrap)
        rect = self.fontMetrics().boundingRect(QRect(0, 0, inner, 1 << 20), flags, self.text())
        return rect.height() + m.top() + m.bottom() + extra

    def fit_width(self, width: int) -> None:
        """Take the height the text needs at ``width`` (its width once the window is laid out)."""
        height = self.needed_height(width)
        if height != self.minimumHeight() or height != self.maximumHeight():
            self.setFixedHeight(height)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.fit_width(self.width())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.fit_width(event.size().width())


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
