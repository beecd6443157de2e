"""Is any text cut off? A walk over a window's visible widgets that finds text that does not fit.

Allowed: an :class:`ElidedLabel` whose tooltip holds its whole text (or says it at more length:
``set_own_tooltip(says_the_line=True)``), wrapped text that has the height
it needs, table cells (and a delegate's second line, such as the queue's reasons) that elide with the
whole text in their tooltip. Not allowed, tooltip or not: a primary figure (a widget marked with
``widgets.PRIMARY_PROPERTY``: a GPU's load, temperature, power, VRAM and shared memory) that is elided
or cut at all, nor one outside its window; the figures are what the panel is for. A window that
scrolls inside itself (a :class:`QScrollArea` with somewhere to scroll) is a problem on a screen of
``NO_SCROLL_SCREEN`` (1366×768) or more; on a smaller one what it scrolls to counts as shown.
A window (or dialog) whose frame is not wholly inside its screen's available area (the screen less
its panels: ``window_fit``) is a problem too. Everything else that does not fit is a
:class:`Problem`. The tests call :func:`audit` on every window; with ``GPUTRAY_LAYOUT_AUDIT=1`` the
app logs the result for every window and dialog each time one is shown (``window_audit``; the X11
end-to-end test reads it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QRect, QSize, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLabel,
    QScrollArea,
    QTabBar,
    QWidget,
)

from gputray.gui.widgets import PRIMARY_PROPERTY, ElidedLabel, WrappedLabel
from gputray.gui.window_fit import outside_area

CELL_PADDING_PX = 8  # what an item view's cell keeps around its text
NO_SCROLL_SCREEN = QSize(1366, 768)  # on a screen this large (logical pixels) a window fits unscrolled


@runtime_checkable
class SecondLineDelegate(Protocol):
    """An item delegate that draws a second line under each row (the queue's reason)."""

    def second_line_text(self, index: QModelIndex) -> str: ...

    def second_line_tip(self, index: QModelIndex) -> str: ...

    def second_line_fits(self, index: QModelIndex) -> bool: ...


@dataclass(frozen=True)
class Problem:
    widget: str
    text: str
    why: str

    def __str__(self) -> str:
        return f"{self.widget}: {self.text!r} {self.why}"


@dataclass
class Report:
    checked: int = 0
    elided: int = 0  # elided with the whole text in a tooltip: fine
    primary: int = 0  # primary figures checked (none of them may be elided)
    problems: list[Problem] = field(default_factory=list)
    elided_texts: list[str] = field(default_factory=list)

    def summary(self) -> str:
        elided = f"{self.elided} elided with a tooltip"
        primary = f"{self.primary} primary figures whole"
        return f"{self.checked} texts checked, {elided}, {primary}, {len(self.problems)} problems"

    def allow_elided(self, text: str) -> None:
        self.elided += 1
        self.elided_texts.append(text)


def _name(w: QWidget) -> str:
    return w.objectName() or type(w).__name__


def _text_width(w: QWidget, text: str) -> int:
    fm = w.fontMetrics()
    return max((fm.horizontalAdvance(line) for line in text.split("\n")), default=0)


def _shown(w: QWidget, root: QWidget) -> bool:
    return w.isVisibleTo(root) and w.width() > 0 and w.height() > 0


def is_primary(w: QWidget) -> bool:
    return w.property(PRIMARY_PROPERTY) is True


def audit(root: QWidget, *, rows: int = 50) -> Report:
    report = Report()
    if root.isWindow() and root.isVisible():
        outside = outside_area(root)
        if outside is not None:
            report.problems.append(Problem(_name(root), root.windowTitle(), outside))
    for w in [root, *root.findChildren(QWidget)]:
        if w is not root and not _shown(w, root):
            continue
        if is_primary(w) and isinstance(w, QLabel):
            _primary(w, report)
        elif isinstance(w, ElidedLabel):
            _elided_label(w, report)
        elif isinstance(w, QLabel):
            _label(w, report)
        elif isinstance(w, QAbstractButton) and w.text():
            report.checked += 1
            if w.sizeHint().width() > w.width() + 1:
                why = f"needs {w.sizeHint().width()} px, has {w.width()}"
                report.problems.append(Problem(_name(w), w.text(), why))
        elif isinstance(w, QComboBox) and w.currentText():
            report.checked += 1
            if w.sizeHint().width() > w.width() + 1 and not w.toolTip():
                report.problems.append(Problem(_name(w), w.currentText(), "is cut in its box"))
        elif isinstance(w, QTabBar):
            _tabs(w, report)
        elif isinstance(w, QHeaderView):
            _header(w, report)
        elif isinstance(w, QAbstractItemView):
            _cells(w, report, rows)
        elif isinstance(w, QScrollArea):
            _scrolling(w, report)
    return report


def scrolls(area: QScrollArea) -> bool:
    return area.verticalScrollBar().maximum() > 0 or area.horizontalScrollBar().maximum() > 0


def _scrolling(area: QScrollArea, report: Report) -> None:
    screen = area.screen()
    if screen is None or not scrolls(area):
        return
    size = screen.availableGeometry().size()
    full = screen.geometry().size()
    if full.width() >= NO_SCROLL_SCREEN.width() and full.height() >= NO_SCROLL_SCREEN.height():
        why = f"scrolls inside itself on a {full.width()}×{full.height()} screen ({size.height()} px free)"
        report.problems.append(Problem(_name(area), "", why))


def _primary(w: QLabel, report: Report) -> None:
    """A primary figure: whole, visible and inside its window, or a problem (a tooltip does not help)."""
    text = w.text()
    if not text:
        return
    report.checked += 1
    report.primary += 1
    shown = w.shown_text() if isinstance(w, ElidedLabel) else text
    need = _text_width(w, text)
    room = w.contentsRect().width()
    if w.wordWrap():
        need_h = w.needed_height(w.width()) if isinstance(w, WrappedLabel) else w.heightForWidth(w.width())
        if need_h > w.height() + 1:
            report.problems.append(Problem(_name(w), text, f"wraps to {need_h} px but has {w.height()}"))
        elif not _inside_window(w):
            report.problems.append(Problem(_name(w), text, "must be seen whole but lies outside its window"))
    elif shown != text:
        report.problems.append(Problem(_name(w), text, f"is a primary figure, elided to {shown!r}"))
    elif need > room + 1:
        report.problems.append(Problem(_name(w), text, f"is a primary figure: needs {need} px, has {room}"))
    elif not _inside_window(w):
        report.problems.append(Problem(_name(w), text, "is a primary figure outside its window"))


def _inside_window(w: QWidget) -> bool:
    """Wholly inside the window's visible area and every parent's (a scroll area's viewport only when
    it cannot scroll there)."""
    rect = QRect(w.mapToGlobal(w.rect().topLeft()), w.size())
    parent = w.parentWidget()
    while parent is not None:
        visible = QRect(parent.mapToGlobal(parent.rect().topLeft()), parent.size())
        area = parent.parentWidget()
        if isinstance(area, QScrollArea) and parent is area.viewport() and scrolls(area):
            # scrolled to, it is seen: from here on, the scroll area must be inside the window
            rect = QRect(area.mapToGlobal(area.rect().topLeft()), area.size())
            parent = area
        elif not visible.contains(rect):
            return False
        if parent.isWindow():
            break
        parent = parent.parentWidget()
    return True


def _elided_label(w: ElidedLabel, report: Report) -> None:
    if not w.text():
        return
    report.checked += 1
    if w.is_elided():
        if w.text() in w.toolTip() or w.tip_says_the_line():
            report.allow_elided(w.text())
        else:
            report.problems.append(Problem(_name(w), w.text(), "is elided without its text in the tooltip"))


def _label(w: QLabel, report: Report) -> None:
    text = w.text()
    has_picture = w.pixmap() is not None and not w.pixmap().isNull()
    if not text or w.textFormat() == Qt.TextFormat.RichText or has_picture:
        return
    report.checked += 1
    room = w.contentsRect()
    if w.wordWrap():
        needed = w.needed_height(w.width()) if isinstance(w, WrappedLabel) else w.heightForWidth(w.width())
        if needed > w.height() + 1:
            report.problems.append(Problem(_name(w), text, f"wraps to {needed} px but has {w.height()}"))
        return
    need = _text_width(w, text)
    if need > room.width() + 1:
        report.problems.append(Problem(_name(w), text, f"needs {need} px, has {room.width()}"))


def _tabs(bar: QTabBar, report: Report) -> None:
    for i in range(bar.count()):
        text = bar.tabText(i)
        if not text:
            continue
        report.checked += 1
        if bar.tabSizeHint(i).width() > bar.tabRect(i).width() + 1 and text not in (bar.tabToolTip(i) or ""):
            report.problems.append(Problem("tab", text, "is cut in its tab"))


def _header(h: QHeaderView, report: Report) -> None:
    model = h.model()
    if model is None:
        return
    fm = h.fontMetrics()
    margin = 2 * h.style().pixelMetric(h.style().PixelMetric.PM_HeaderMargin)
    for section in range(h.count()):
        if h.isSectionHidden(section):
            continue
        text = model.headerData(section, h.orientation(), Qt.ItemDataRole.DisplayRole)
        if not text:
            continue
        report.checked += 1
        need = fm.horizontalAdvance(str(text)) + margin
        if need > h.sectionSize(section):
            why = f"header needs {need} px, has {h.sectionSize(section)}"
            report.problems.append(Problem(_name(h), str(text), why))


def columns(model: QAbstractItemModel) -> int:
    """A list model's column count is private in PySide6: it has one."""
    try:
        return int(model.columnCount(QModelIndex()))
    except TypeError:
        return 1


def _cells(view: QAbstractItemView, report: Report, rows: int) -> None:
    model = view.model()
    if model is None:
        return
    fm = view.fontMetrics()
    for row in range(min(model.rowCount(QModelIndex()), rows)):
        for col in range(columns(model)):
            index = model.index(row, col, QModelIndex())
            text = model.data(index, Qt.ItemDataRole.DisplayRole)
            if not text:
                continue
            report.checked += 1
            rect = view.visualRect(index)
            # a view without a horizontal scroll bar elides at its viewport's edge
            width = min(rect.right(), view.viewport().width()) - max(rect.left(), 0)
            if width <= 0:
                continue
            if fm.horizontalAdvance(str(text)) + CELL_PADDING_PX > width:
                tip = model.data(index, Qt.ItemDataRole.ToolTipRole) or ""
                if str(text) in str(tip):
                    report.allow_elided(str(text))
                else:
                    why = "cell is elided without a tooltip"
                    report.problems.append(Problem(_name(view), str(text), why))
        delegate = view.itemDelegate()
        if isinstance(delegate, SecondLineDelegate):
            _second_line(view, delegate, model.index(row, 0, QModelIndex()), report)


def _second_line(
    view: QAbstractItemView, delegate: SecondLineDelegate, index: QModelIndex, report: Report
) -> None:
    text = delegate.second_line_text(index)
    if not text:
        return
    report.checked += 1
    if delegate.second_line_fits(index):
        return
    if text in delegate.second_line_tip(index):
        report.allow_elided(text)
    else:
        report.problems.append(Problem(_name(view), text, "second line is elided without a tooltip"))
