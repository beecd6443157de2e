"""The panel's queue list: one row per task, its reason on a second line, and rows that hold still.

Each row is three lines tall: the task's name, state, device and elapsed time in columns, then why it
waits (or how it ended) across the whole row, wrapped over up to two lines (beyond that it ends in
"…" and the whole reason is in the tooltip), where a column ~80 px wide cut every reason to
"waiting f…". Every row has all its lines, reason or not, so rows never change height.

While the pointer is over the list, or a row's menu is open, the model holds its order
(``QueueModel.hold_order``): the row under the pointer stays the task it showed when the pointer
arrived, and what changed meanwhile is applied when the pointer leaves or the menu closes.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QCursor,
    QFont,
    QFontMetrics,
    QHelpEvent,
    QHideEvent,
    QPainter,
    QPalette,
    QResizeEvent,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QToolTip,
    QWidget,
)

from gputray.gui.i18n import tr
from gputray.gui.queue_model import (
    COL_DEVICE,
    COL_ELAPSED,
    COL_NAME,
    COL_REASON,
    COL_STATE,
    STATE_NAMES,
    QueueModel,
)
from gputray.gui.theme import colors

log = logging.getLogger("gputray.gui")
Index = QModelIndex | QPersistentModelIndex
PADDING_PX = 4  # around a row's lines; the text of a cell is indented as Qt's own cells are
INDENT_PX = 12  # the second line starts under the task's name, a little in
REASON_LINES = 2  # a longer reason ends in "…" (whole in the tooltip)
MIN_ROWS = 1  # the list gives up room down to this many rows before the panel has to scroll
PREFERRED_ROWS = 4


def wrapped_lines(text: str, font: QFont, width: int, max_lines: int) -> tuple[list[str], bool]:
    """``text`` broken into lines of at most ``width`` px (at spaces, or anywhere in Japanese), at most
    ``max_lines`` of them, the last ending in "…" when more was left; and whether it all fits."""
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    spans: list[tuple[int, int]] = []
    layout.beginLayout()
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(max(1, width))
        spans.append((line.textStart(), line.textLength()))
    layout.endLayout()
    lines = [text[start : start + length].rstrip() for start, length in spans[:max_lines]]
    if len(spans) <= max_lines:
        return lines, True
    rest = text[spans[max_lines - 1][0] :]
    lines[-1] = QFontMetrics(font).elidedText(rest, Qt.TextElideMode.ElideRight, max(1, width))
    return lines, False


class TaskRowDelegate(QStyledItemDelegate):
    """Draws a cell on the row's first line and, in every cell, its share of the row's second line.

    The second line (the reason) belongs to the row, not to a column: each cell draws the part of it
    that lies over the cell, clipped to the cell, so it reads as one line across the row whatever the
    columns are, and a selected row is highlighted on both lines."""

    def __init__(self, view: QTableView) -> None:
        super().__init__(view)
        self.view = view

    def line_height(self) -> int:
        return self.view.fontMetrics().height()

    def row_height(self) -> int:
        return (1 + REASON_LINES) * self.line_height() + 2 * PADDING_PX

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        return QSize(super().sizeHint(option, index).width(), self.row_height())

    # -- the second line (also what the layout audit measures) ---------------------------------------------
    def _reason(self, index: Index) -> QModelIndex:
        return self.view.model().index(index.row(), COL_REASON)

    def second_line_text(self, index: Index) -> str:
        return str(self._reason(index).data(Qt.ItemDataRole.DisplayRole) or "")

    def second_line_tip(self, index: Index) -> str:
        return str(self._reason(index).data(Qt.ItemDataRole.ToolTipRole) or "")

    def second_line_fits(self, index: Index) -> bool:
        """True when the whole reason is shown (within its lines)."""
        text = self.second_line_text(index)
        width = self.second_line_rect(index).width()
        return not text or wrapped_lines(text, self.view.font(), width, REASON_LINES)[1]

    def second_line_rect(self, index: Index) -> QRect:
        """Where the reason is drawn, in viewport coordinates: under the whole row."""
        view = self.view
        shown = [c for c in range(view.model().columnCount()) if not view.isColumnHidden(c)]
        left = min((view.columnViewportPosition(c) for c in shown), default=0)
        right = max((view.columnViewportPosition(c) + view.columnWidth(c) for c in shown), default=0)
        top = view.rowViewportPosition(index.row()) + PADDING_PX + self.line_height()
        indent = PADDING_PX + INDENT_PX
        width = max(0, right - left - indent - PADDING_PX)
        return QRect(left + indent, top, width, REASON_LINES * self.line_height())

    # -- painting --------------------------------------------------------------------------------------
    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.state &= ~QStyle.StateFlag.State_HasFocus
        widget = opt.widget if opt.widget is not None else self.view
        style = widget.style() if widget is not None else QApplication.style()
        cell = QRect(opt.rect)
        background = QStyleOptionViewItem(opt)
        background.text = ""
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, background, painter, widget)
        first = QStyleOptionViewItem(opt)
        first.rect = QRect(cell.left(), cell.top() + PADDING_PX, cell.width(), self.line_height())
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, first, painter, widget)
        text = self.second_line_text(index)
        if not text:
            return
        area = self.second_line_rect(index)
        lines, _fits = wrapped_lines(text, opt.font, area.width(), REASON_LINES)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        color = opt.palette.color(QPalette.ColorRole.HighlightedText) if selected else None
        painter.save()
        painter.setClipRect(QRect(cell.left(), area.top(), cell.width(), area.height()))
        painter.setFont(opt.font)
        painter.setPen(color if color is not None else QColor(colors().secondary_text))
        height = self.line_height()
        align = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        for n, shown in enumerate(lines):
            painter.drawText(QRect(area.left(), area.top() + n * height, area.width(), height), align, shown)
        painter.restore()


class QueueTable(QTableView):
    """The queue as two-line rows (see the module's docstring); holds the model's order under the pointer."""

    def __init__(self, model: QueueModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.queue_model = model
        self.setObjectName("queueTable")
        self.setModel(model)
        self.row_delegate = TaskRowDelegate(self)
        self.setItemDelegate(self.row_delegate)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setWordWrap(False)
        self.setShowGrid(False)  # a grid line would cut the reason line at every column
        self.setAlternatingRowColors(True)
        self.verticalHeader().hide()
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setColumnHidden(COL_REASON, True)  # on each row's second line instead
        header = self.horizontalHeader()
        header.setStretchLastSection(False)
        header.setTextElideMode(Qt.TextElideMode.ElideRight)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(COL_NAME, QHeaderView.ResizeMode.Stretch)
        self._pointer_in = False
        self._menus_open = 0
        self.viewport().installEventFilter(self)
        for change in (model.dataChanged, model.rowsInserted, model.rowsRemoved, model.layoutChanged):
            change.connect(lambda *_: self.share_room())

    # -- size ------------------------------------------------------------------------------------------
    def _height_for_rows(self, rows: int) -> int:
        frame = 2 * self.frameWidth()
        return self.horizontalHeader().sizeHint().height() + rows * self.row_delegate.row_height() + frame

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self._height_for_rows(PREFERRED_ROWS))

    def minimumSizeHint(self) -> QSize:
        return QSize(super().minimumSizeHint().width(), self._height_for_rows(MIN_ROWS))

    def fit_columns(self) -> None:
        """Columns as wide as their header and their widest usual value, in this language and font; the
        name takes the rest."""
        model = self.queue_model
        header = self.horizontalHeader()
        fm = header.fontMetrics()
        pad = 2 * self.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin) + 14

        def header_w(col: int) -> int:
            text = str(model.headerData(col, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole))
            return fm.horizontalAdvance(text) + pad

        cell_fm = self.fontMetrics()
        states = max(cell_fm.horizontalAdvance(tr(s)) for s in STATE_NAMES) + 12
        self.setColumnWidth(COL_STATE, max(header_w(COL_STATE), states))
        names = [*model.device_names(), "RTX 5060 Ti"]
        widest = max(cell_fm.horizontalAdvance(n) for n in names) + 12
        device_w = min(widest, cell_fm.horizontalAdvance("M" * 12))  # a long name elides beyond that
        self._device_base_w = max(header_w(COL_DEVICE), device_w)
        self.setColumnWidth(COL_DEVICE, self._device_base_w)
        elapsed_w = cell_fm.horizontalAdvance("0:00:00") + 12
        self.setColumnWidth(COL_ELAPSED, max(header_w(COL_ELAPSED), elapsed_w))
        shown = (COL_NAME, COL_STATE, COL_DEVICE, COL_ELAPSED)
        header.setMinimumSectionSize(min(header_w(c) for c in shown))
        self.verticalHeader().setDefaultSectionSize(self.row_delegate.row_height())
        self.setMinimumWidth(
            header_w(COL_NAME)
            + sum(self.columnWidth(c) for c in (COL_STATE, COL_DEVICE, COL_ELAPSED))
            + 2 * self.frameWidth()
            + self.verticalScrollBar().sizeHint().width()
        )
        self.updateGeometry()

    def share_room(self) -> None:
        """Where the panel has room the Device column shows its cells whole ("Radeon 780M · torch-cpu"
        was "Radeon 780…" beside a name column with room to spare, issue 33): it widens up to what its
        cells need while the names keep what theirs need; it never makes the panel wider."""
        base = getattr(self, "_device_base_w", None)
        if base is None:
            return
        model, fm = self.queue_model, self.fontMetrics()
        rows = range(min(model.rowCount(), 200))
        texts = [model.display(t, COL_DEVICE) for t in (model.task(r) for r in rows) if t is not None]
        need = max((fm.horizontalAdvance(x) + 12 for x in texts), default=0)
        names = [model.display(t, COL_NAME) for t in (model.task(r) for r in rows) if t is not None]
        name_need = max((fm.horizontalAdvance(x) + 12 for x in names), default=0)
        others = sum(self.columnWidth(c) for c in (COL_STATE, COL_ELAPSED))
        room = self.viewport().width() - others - name_need
        width = max(base, min(need, room))
        if width != self.columnWidth(COL_DEVICE):
            self.setColumnWidth(COL_DEVICE, width)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.share_room()

    # -- holding the order -----------------------------------------------------------------------------
    def set_menu_open(self, open_: bool) -> None:
        """A row's menu opened (True) or closed: the order holds while one is open."""
        self._menus_open = max(0, self._menus_open + (1 if open_ else -1))
        if not open_:
            self._pointer_in = self._pointer_inside()
        self._update_hold()

    def _pointer_inside(self) -> bool:
        viewport = self.viewport()
        return self.isVisible() and viewport.rect().contains(viewport.mapFromGlobal(QCursor.pos()))

    def _update_hold(self) -> None:
        hold = self._pointer_in or self._menus_open > 0
        model = self.queue_model
        if hold == model.order_held():
            return
        before = [t.id for t in (model.task(r) for r in range(model.rowCount())) if t is not None]
        model.hold_order(hold)
        if hold:
            log.info("queue order held (the pointer is on the list or a row menu is open)")
            return
        after = [t.id for t in (model.task(r) for r in range(model.rowCount())) if t is not None]
        if after != before:
            log.info("queue order released: %d rows became %d", len(before), len(after))
        else:
            log.info("queue order released: nothing had changed")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.viewport():
            kind = event.type()
            if kind == QEvent.Type.Enter:
                self._pointer_in = True
                self._update_hold()
            elif kind == QEvent.Type.Leave:
                self._pointer_in = False
                self._update_hold()
            elif kind == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
                return self._second_line_tooltip(event)
        return super().eventFilter(watched, event)

    def _second_line_tooltip(self, event: QHelpEvent) -> bool:
        """Over a reason: the reason in full (and the exit status), whichever column it crosses."""
        index = self.indexAt(event.pos())
        if not index.isValid() or not self.row_delegate.second_line_rect(index).contains(event.pos()):
            return False
        tip = self.row_delegate.second_line_tip(index)
        if not tip:
            return False
        QToolTip.showText(event.globalPos(), tip, self.viewport())
        return True

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._pointer_in = False  # no Leave comes when the window hides under the pointer
        self._update_hold()
