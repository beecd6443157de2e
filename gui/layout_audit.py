"""Is any text cut off? A walk over a window's visible widgets that finds text that does not fit.

Allowed: an :class:`ElidedLabel` whose tooltip holds its whole text, wrapped text that has the height
it needs, table cells that elide with the whole text in their tooltip. Everything else that does not
fit is a :class:`Problem`. The tests call :func:`audit` on every window; with ``GPUTRAY_LAYOUT_AUDIT=1``
the app logs the result each time the panel is shown (the X11 end-to-end test reads it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QAbstractItemModel, QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLabel,
    QTabBar,
    QWidget,
)

from gputray.gui.widgets import ElidedLabel

CELL_PADDING_PX = 8  # what an item view's cell keeps around its text


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
    problems: list[Problem] = field(default_factory=list)

    def summary(self) -> str:
        elided = f"{self.elided} elided with a tooltip"
        return f"{self.checked} texts checked, {elided}, {len(self.problems)} problems"


def _name(w: QWidget) -> str:
    return w.objectName() or type(w).__name__


def _text_width(w: QWidget, text: str) -> int:
    fm = w.fontMetrics()
    return max((fm.horizontalAdvance(line) for line in text.split("\n")), default=0)


def _shown(w: QWidget, root: QWidget) -> bool:
    return w.isVisibleTo(root) and w.width() > 0 and w.height() > 0


def audit(root: QWidget, *, rows: int = 50) -> Report:
    report = Report()
    for w in [root, *root.findChildren(QWidget)]:
        if w is not root and not _shown(w, root):
            continue
        if isinstance(w, ElidedLabel):
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
    return report


def _elided_label(w: ElidedLabel, report: Report) -> None:
    if not w.text():
        return
    report.checked += 1
    if w.is_elided():
        if w.text() in w.toolTip():
            report.elided += 1
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
        needed = w.heightForWidth(w.width())
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
                    report.elided += 1
                else:
                    why = "cell is elided without a tooltip"
                    report.problems.append(Problem(_name(view), str(text), why))
