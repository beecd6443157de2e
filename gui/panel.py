"""The panel a click on the tray opens: every GPU at a glance, the queue with its controls, a drop zone.

A frameless ``Qt.Tool`` window (not ``Qt.Popup``, which closes as soon as the user starts a drag from a
file manager), anchored next to the tray icon on the screen that holds the icon, on whichever edge the
tray sits, or at the cursor where the tray reports no geometry (StatusNotifierItem). It hides when it
loses focus unless pinned. Without a tray it is an ordinary window.

Its size is fixed while it is shown: every line is an :class:`ElidedLabel` (too long → "…" and the
whole text in the tooltip) and every card has the same number of lines whatever its GPU is doing, so
nothing widens the panel and the queue rows never move under the cursor. When the screen is too short
(HiDPI at 2× on a laptop) the content scrolls instead of being cut.

The panel only shows and asks: actions leave it as signals the app connects to the queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from PySide6.QtCore import QEvent, QModelIndex, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QContextMenuEvent,
    QCursor,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QFont,
    QGuiApplication,
    QScreen,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStyle,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gputray.cluster.picture import ClusterPicture
from gputray.gui import messages
from gputray.gui.cluster_cards import ClusterSection, MachineGroup
from gputray.gui.i18n import tr
from gputray.gui.legend import LegendEntry, gpu_readings, legend_for
from gputray.gui.queue_model import (
    ACTIVE_STATES,
    COL_DEVICE,
    COL_ELAPSED,
    COL_NAME,
    COL_REASON,
    COL_STATE,
    STATE_NAMES,
    QueueModel,
)
from gputray.gui.sparkline import Sparkline
from gputray.gui.theme import colors, is_dark
from gputray.gui.tray_icon import is_hot
from gputray.gui.widgets import ElidedLabel, Swatch
from gputray.monitor.readings_text import panel_extras, sample_extras
from gputray.monitor.records import DeviceReading, ProcessUse, Snapshot
from gputray.monitor.units import GIB
from gputray.scheduler.replies import DeviceSlots, TaskView

log = logging.getLogger("gputray.gui")
HistoryFn = Callable[[str, str, float], list[tuple[float, float | None]]]
NoticeFn = Callable[[], str]

PANEL_WIDTH = 470  # at least; more when a language's buttons need it
PENDING_STATES = frozenset({"queued", "waiting"})
RETRYABLE_STATES = frozenset({"failed", "cancelled", "interrupted", "succeeded"})


def fmt_gib(used: int | None, total: int | None) -> str:
    if used is None and total is None:
        return "–"
    u = "–" if used is None else f"{used / GIB:.1f}"
    t = "–" if total is None else f"{total / GIB:.1f}"
    return f"{u} / {t} GiB"


def device_metrics_line(r: DeviceReading) -> str:
    s = r.sample
    if s.state == "lost":
        return tr("lost") + (f": {messages.translate(s.reason)}" if s.reason else "")
    if s.state == "asleep":
        return tr("asleep (not woken to read it)")
    if s.state == "unavailable":
        return tr("unavailable") + (f": {messages.translate(s.reason)}" if s.reason else "")
    util = "–" if s.util_percent is None else f"{s.util_percent:.0f} %"
    temp = "–" if s.temp_c is None else f"{s.temp_c:.0f} °C"
    power = "–" if s.power_w is None else f"{s.power_w:.0f} W"
    return f"{util}  ·  {temp}  ·  {power}"


def device_memory_line(r: DeviceReading) -> str:
    s = r.sample
    vram_total = s.vram_total_bytes if s.vram_total_bytes is not None else r.info.vram_total_bytes
    shared_total = s.shared_total_bytes if s.shared_total_bytes is not None else r.info.shared_total_bytes
    return tr("VRAM {vram}  ·  shared {shared}").format(
        vram=fmt_gib(s.vram_used_bytes, vram_total), shared=fmt_gib(s.shared_used_bytes, shared_total)
    )


def by_memory(processes: Sequence[ProcessUse]) -> list[ProcessUse]:
    return sorted(processes, key=lambda p: -((p.vram_bytes or 0) + (p.shared_bytes or 0)))


def process_text(p: ProcessUse) -> str:
    mem = (p.vram_bytes or 0) + (p.shared_bytes or 0)
    util = "" if p.util_percent is None else f" {p.util_percent:.0f}%"
    return f"{p.name} ({p.pid}) {mem / GIB:.1f} GiB{util}"


def processes_line(processes: Sequence[ProcessUse]) -> str:
    if not processes:
        return tr("no processes")
    ordered = by_memory(processes)
    parts = [process_text(p) for p in ordered[:4]]
    more = len(processes) - 4
    if more > 0:
        parts.append(tr("+{n} more").format(n=more))
    return ", ".join(parts)


def screen_for(anchor: QRect) -> QScreen:
    """The screen that holds the icon: the one under its centre, else the one it overlaps most."""
    screen = QGuiApplication.screenAt(anchor.center())
    if screen is not None:
        return screen
    best, best_area = QGuiApplication.primaryScreen(), 0
    for s in QGuiApplication.screens():
        overlap = s.geometry().intersected(anchor)
        area = overlap.width() * overlap.height()
        if area > best_area:
            best, best_area = s, area
    return best


def nearest_edge(anchor: QRect, screen: QRect) -> str:
    """Which screen edge the tray sits on: ``top``, ``bottom``, ``left`` or ``right``.

    An icon in a corner is near two edges; trays along the top or bottom are far more common, so a
    horizontal edge wins unless the icon is clearly away from both (a vertical panel).
    """
    distances = {
        "bottom": screen.bottom() - anchor.bottom(),
        "top": anchor.top() - screen.top(),
        "right": screen.right() - anchor.right(),
        "left": anchor.left() - screen.left(),
    }
    horizontal = min(("bottom", "top"), key=lambda k: distances[k])
    vertical = min(("right", "left"), key=lambda k: distances[k])
    if distances[horizontal] <= max(anchor.height(), 48) or distances[horizontal] <= distances[vertical]:
        return horizontal
    return vertical


def room_beside(anchor: QRect, screen: QRect, full: QRect | None = None) -> QSize:
    """The largest panel that fits on ``screen`` beside the icon without covering it (the tray's own
    strip is not always outside the screen's available area: no window manager, some docks)."""
    edge = nearest_edge(anchor, full if full is not None else screen)
    if edge == "bottom":
        return QSize(screen.width(), max(1, anchor.top() - 4 - screen.top()))
    if edge == "top":
        return QSize(screen.width(), max(1, screen.bottom() - anchor.bottom() - 4))
    if edge == "left":
        return QSize(max(1, screen.right() - anchor.right() - 4), screen.height())
    return QSize(max(1, anchor.left() - 4 - screen.left()), screen.height())


def panel_position(anchor: QRect, size: QSize, screen: QRect, full: QRect | None = None) -> QPoint:
    """Top-left for a panel of ``size`` next to ``anchor`` (the icon, or a 1×1 rect at the cursor).

    Beside the icon on the side away from the screen edge its tray is on (above for a bottom panel,
    below for a top bar, right of a left panel, left of a right one), aligned with the icon, and
    always wholly inside ``screen`` (the available area of the screen that holds the icon). ``full``
    is that screen's whole geometry, which tells the edge when the available area excludes the tray.
    """
    edge = nearest_edge(anchor, full if full is not None else screen)
    w, h = min(size.width(), screen.width()), min(size.height(), screen.height())
    if edge in ("top", "bottom"):
        x = anchor.right() - w
        y = anchor.bottom() + 4 if edge == "top" else anchor.top() - h - 4
    else:
        x = anchor.right() + 4 if edge == "left" else anchor.left() - w - 4
        y = anchor.top() if anchor.center().y() < screen.center().y() else anchor.bottom() - h + 1
    x = max(screen.left(), min(x, screen.right() - w + 1))
    y = max(screen.top(), min(y, screen.bottom() - h + 1))
    return QPoint(x, y)


def _secondary_style() -> str:
    return f"color: {colors().secondary_text}"


def _fixed_button_width(button: QPushButton | QToolButton, texts: Iterable[str]) -> None:
    """A button as wide as its widest text: it keeps its width when its text toggles."""
    current = button.text()
    width = 0
    for t in texts:
        button.setText(t)
        width = max(width, button.sizeHint().width())
    button.setText(current)
    button.setFixedWidth(width)


class DeviceCard(QFrame):
    """One GPU: name (with its legend colour), load/temperature/power, memory, sparkline, why it counts
    as busy, and who uses it. Always the same height."""

    pause_toggled = Signal(str, bool)  # device key, pause?
    stop_process_requested = Signal(object)  # ProcessUse

    def __init__(self, key: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.setObjectName("deviceCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(2)
        top = QHBoxLayout()
        top.setSpacing(6)
        self.swatch = Swatch(self)
        self.name_label = ElidedLabel("", self)
        bold = QFont(self.name_label.font())
        bold.setBold(True)
        self.name_label.setFont(bold)
        self.metrics_label = ElidedLabel("", self)
        self.metrics_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.metrics_label.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        self.pause_button = QToolButton(self)
        self.pause_button.setCheckable(True)
        self.pause_button.toggled.connect(self._on_pause)
        self.jobs_label = QLabel(self)
        self._jobs: tuple[int, int] | None = None  # (running, slots), from the queue
        top.addWidget(self.swatch)
        top.addWidget(self.name_label, 1)
        top.addWidget(self.metrics_label)
        top.addWidget(self.pause_button)
        layout.addLayout(top)
        self.memory_label = ElidedLabel("", self)
        # The eGPU readings beside the memory, in short ("PCIe 4.0 ×4 of 5.0 ×8  ·  fan 31 %"), so the
        # card grows no taller; its tooltip has all of them (power limit, memory clock, video engines).
        self.extras_label = ElidedLabel("", self)
        self.extras_label.setStyleSheet("font-size: small")
        memory_row = QHBoxLayout()
        memory_row.addWidget(self.memory_label, 1)
        memory_row.addWidget(self.extras_label)
        memory_row.addWidget(self.jobs_label)  # beside the memory: the top row is the widest already
        layout.addLayout(memory_row)
        self.sparkline = Sparkline(self)
        layout.addWidget(self.sparkline)
        self.busy_label = ElidedLabel("", self)
        layout.addWidget(self.busy_label)
        self.processes_label = ElidedLabel("", self)
        layout.addWidget(self.processes_label)
        self._reading: DeviceReading | None = None
        self._entry: LegendEntry | None = None
        self._processes: tuple[ProcessUse, ...] = ()
        self._busy: tuple[str, ...] = ()
        self._hot = False
        self._dark: bool | None = None
        self.retranslate()
        self.restyle()

    # -- language and colours --------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.pause_button.setToolTip(tr("Pause or resume the queue on this device"))
        _fixed_button_width(self.pause_button, (tr("Pause"), tr("Resume")))
        self.pause_button.setText(tr("Resume") if self.pause_button.isChecked() else tr("Pause"))
        fm = self.metrics_label.fontMetrics()
        self.metrics_label.setMinimumWidth(fm.horizontalAdvance("100 %  ·  100 °C  ·  888 W") + 4)
        self.processes_label.set_own_tooltip(tr("Right-click to stop a process of yours"))
        self.jobs_label.setToolTip(tr("Jobs running / slots (config: [devices.<name>] slots = N)"))
        self._render_jobs()
        self._render()

    def restyle(self) -> None:
        dark = is_dark()
        if dark == self._dark:
            return
        self._dark = dark
        for label in (self.busy_label, self.processes_label):
            label.setStyleSheet(_secondary_style())
        self.sparkline.update()
        self._render()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        elif event.type() == QEvent.Type.PaletteChange:
            self.restyle()

    # -- pause -----------------------------------------------------------------------------------------
    def _on_pause(self, checked: bool) -> None:
        self.pause_button.setText(tr("Resume") if checked else tr("Pause"))
        self.pause_toggled.emit(self.key, checked)

    def set_paused(self, paused: bool) -> None:
        if self.pause_button.isChecked() != paused:
            self.pause_button.blockSignals(True)
            self.pause_button.setChecked(paused)
            self.pause_button.setText(tr("Resume") if paused else tr("Pause"))
            self.pause_button.blockSignals(False)

    def set_jobs(self, running: int, slots: int) -> None:
        self._jobs = (running, slots)
        self._render_jobs()

    def _render_jobs(self) -> None:
        if self._jobs is None:
            self.jobs_label.setText("")
            return
        running, slots = self._jobs
        self.jobs_label.setText(tr("jobs {running}/{slots}").format(running=running, slots=slots))

    # -- data ------------------------------------------------------------------------------------------
    def update_reading(
        self,
        r: DeviceReading,
        processes: Sequence[ProcessUse],
        busy_reasons: Sequence[str],
        hot: bool,
        history: list[tuple[float, float | None]],
        now_s: float,
        entry: LegendEntry | None = None,
    ) -> None:
        self._reading = r
        self._entry = entry
        self._processes = tuple(processes)
        self._busy = tuple(busy_reasons)
        self._hot = hot
        if entry is not None:
            self.sparkline.set_color(entry.color)
        self.sparkline.set_points(history, now_s)
        self._render()

    def _render(self) -> None:
        r = self._reading
        if r is None:
            return
        self.name_label.setText(r.info.name)
        entry = self._entry
        tips = [tr("simulated")] if r.info.simulated else []  # the title and the banner say DEMO too
        if entry is not None:
            self.swatch.set_color(entry.color)
            tips.insert(0, tr("The {color} bar in the tray icon").format(color=tr(entry.color_word)))
            self.swatch.setToolTip(tips[0])
        self.name_label.set_own_tooltip("\n".join(tips))
        self.metrics_label.setText(device_metrics_line(r))
        hot_style = f"color: {colors().hot_text}; font-weight: bold" if self._hot else ""
        if self.metrics_label.styleSheet() != hot_style:  # setStyleSheet re-polishes even when unchanged
            self.metrics_label.setStyleSheet(hot_style)
        self.memory_label.setText(device_memory_line(r))
        ok = r.sample.state == "ok"
        words = messages.reading_words()
        extras = panel_extras(r.sample, words) if ok else ""
        self.extras_label.setText(extras)
        self.extras_label.set_own_tooltip(sample_extras(r.sample, words=words) if ok else "")
        self.extras_label.setVisible(bool(extras))
        busy = "; ".join(messages.translate(b) for b in self._busy)
        self.busy_label.setText(
            tr("busy: {reasons}").format(reasons=busy) if busy else tr("not in use by other programs")
        )
        self.processes_label.setText(processes_line(self._processes))
        if self._processes:
            full = "\n".join(process_text(p) for p in by_memory(self._processes))
            self.processes_label.set_own_tooltip(full + "\n" + tr("Right-click to stop a process of yours"))
        else:
            self.processes_label.set_own_tooltip("")

    def processes(self) -> tuple[ProcessUse, ...]:
        return self._processes

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = process_menu(self, by_memory(self._processes), self.stop_process_requested.emit)
        menu.exec(event.globalPos())
        menu.deleteLater()


def process_menu(
    parent: QWidget, processes: Sequence[ProcessUse], stop: Callable[[ProcessUse], None]
) -> QMenu:
    """ "Stop process…" per process; enabled only for the user's own processes (the reason says why not)."""
    from gputray.gui.process_actions import ownership

    menu = QMenu(parent)
    if not processes:
        menu.addAction(tr("no processes")).setEnabled(False)
    for p in processes:
        own, why = ownership(p)
        label = tr("Stop {name} ({pid})…").format(name=p.name, pid=p.pid)
        if not own:
            label += "  —  " + why
        action = menu.addAction(label)
        action.setEnabled(own)
        action.triggered.connect(lambda _=False, p=p: stop(p))
    return menu


class DropZone(QFrame):
    """Where files are dropped; says, visibly, to pin the panel before dragging from another window."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dropZone")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(1)
        self.title = ElidedLabel("", self)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint = ElidedLabel("", self)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.title)
        layout.addWidget(self.hint)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.pinned = False
        self._highlight = False
        self.retranslate()
        self.set_highlight(False)

    def retranslate(self) -> None:
        self.title.setText(tr("Drop files here to queue them"))
        self.set_pinned(self.pinned)

    def set_pinned(self, pinned: bool) -> None:
        self.pinned = pinned
        if pinned:
            self.hint.setText(tr("Pinned: the panel stays open while you drag files here."))
        else:
            self.hint.setText(tr("Dragging from another window? Pin the panel first (Pin, top right)."))

    def text(self) -> str:
        return self.title.text()

    def set_highlight(self, on: bool) -> None:
        self._highlight = on
        c = colors()
        color = c.accent if on else c.secondary_text
        style = f"border: 2px dashed {color}; border-radius: 6px"
        self.setStyleSheet(f"QFrame#dropZone {{ {style} }}")
        self.hint.setStyleSheet(_secondary_style())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()


class Panel(QWidget):
    cancel_requested = Signal(list)
    retry_requested = Signal(object)
    move_requested = Signal(object, int)
    priority_requested = Signal(object, int)  # task id, the new priority number (higher starts first)
    pause_requested = Signal(object)  # device key, or None for the whole queue
    resume_requested = Signal(object)
    open_log_requested = Signal(str)
    files_dropped = Signal(list)
    dashboard_requested = Signal()
    stop_process_requested = Signal(object)  # ProcessUse

    def __init__(self, model: QueueModel, *, demo: bool = False, windowed: bool = False) -> None:
        super().__init__(None)
        self.model = model
        self.demo = demo
        self.windowed = windowed
        self.pinned = windowed
        self.cards: dict[str, DeviceCard] = {}
        self._paused_all = False
        self._jobs: dict[str, tuple[int, int]] = {}  # device key -> (running, slots), from the queue
        self._notice: NoticeFn | None = None
        self._snapshot: Snapshot | None = None
        self._history: HistoryFn | None = None
        self._anchor: QRect | None = None
        self._dark: bool | None = None
        self.hidden_by_deactivate_at: float | None = None
        self.setObjectName("gputrayPanel")
        self.setAcceptDrops(True)
        if windowed:
            self.setWindowFlags(Qt.WindowType.Window)
        else:
            self.setWindowFlags(
                Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint
            )

        outer = QVBoxLayout(self)
        outer.setContentsMargins(1, 1, 1, 1)
        self.scroll_area = QScrollArea(self)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer.addWidget(self.scroll_area)
        self.content = QWidget(self.scroll_area)
        self.content.setObjectName("panelContent")
        self.scroll_area.setWidget(self.content)
        body = QVBoxLayout(self.content)
        body.setContentsMargins(9, 7, 9, 9)

        head = QHBoxLayout()
        self.title_label = ElidedLabel("", self.content)
        title_font = QFont(self.title_label.font())
        title_font.setBold(True)
        title_font.setPointSizeF(title_font.pointSizeF() * 1.3)
        self.title_label.setFont(title_font)
        head.addWidget(self.title_label, 1)
        self.dashboard_button = QToolButton(self.content)
        self.dashboard_button.clicked.connect(self.dashboard_requested)
        head.addWidget(self.dashboard_button)
        self.pin_button = QToolButton(self.content)
        self.pin_button.setCheckable(True)
        self.pin_button.setChecked(self.pinned)
        self.pin_button.toggled.connect(self.set_pinned)
        self.pin_button.setVisible(not windowed)
        head.addWidget(self.pin_button)
        body.addLayout(head)

        self.notice_label = QLabel(self.content)
        self.notice_label.setWordWrap(True)
        self.notice_label.setTextFormat(Qt.TextFormat.PlainText)
        self.notice_label.hide()
        body.addWidget(self.notice_label)

        # In a cluster: this machine's name above its cards, the other machines below (cluster_cards).
        self.local_machine = MachineGroup("", self.content)
        self.local_machine.hide()
        body.addWidget(self.local_machine)
        self.devices_box = QVBoxLayout()
        self.devices_box.setSpacing(6)
        body.addLayout(self.devices_box)
        self.no_gpu_label = ElidedLabel("", self.content)
        self.devices_box.addWidget(self.no_gpu_label)
        self.host_label = ElidedLabel("", self.content)
        body.addWidget(self.host_label)
        self.cluster_section = ClusterSection(self.content)
        body.addWidget(self.cluster_section)
        self._cluster: ClusterPicture | None = None
        self._cluster_now_s = 0.0

        queue_head = QHBoxLayout()
        self.queue_label = ElidedLabel("", self.content)
        queue_font = QFont(self.queue_label.font())
        queue_font.setBold(True)
        self.queue_label.setFont(queue_font)
        queue_head.addWidget(self.queue_label, 1)
        self.pause_all_button = QPushButton(self.content)
        self.pause_all_button.clicked.connect(self._toggle_pause_all)
        queue_head.addWidget(self.pause_all_button)
        body.addLayout(queue_head)

        self.table = QTableView(self.content)
        self.table.setModel(model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(False)
        header.setTextElideMode(Qt.TextElideMode.ElideRight)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(COL_NAME, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(COL_REASON, QHeaderView.ResizeMode.Stretch)
        self.table.doubleClicked.connect(self._open_log_at)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._row_menu)
        body.addWidget(self.table, 1)

        buttons = QHBoxLayout()
        self.cancel_button = QPushButton(self.content)
        self.retry_button = QPushButton(self.content)
        self.up_button = QPushButton("▲", self.content)
        self.down_button = QPushButton("▼", self.content)
        self.log_button = QPushButton(self.content)
        for b in (self.cancel_button, self.retry_button, self.up_button, self.down_button, self.log_button):
            buttons.addWidget(b)
        self.cancel_button.clicked.connect(self._cancel)
        self.retry_button.clicked.connect(self._retry)
        self.up_button.clicked.connect(lambda: self._move(-1))
        self.down_button.clicked.connect(lambda: self._move(1))
        self.log_button.clicked.connect(self._open_log)
        body.addLayout(buttons)

        self.drop_zone = DropZone(self.content)
        self.drop_zone.set_pinned(self.pinned or windowed)
        body.addWidget(self.drop_zone)
        self.retranslate()
        self.restyle()

    # -- language and colours --------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.setWindowTitle(self.title())
        self.title_label.setText(self.title())
        self.dashboard_button.setText(tr("Dashboard"))
        self.dashboard_button.setToolTip(tr("History, processes, the doctor and task logs"))
        self.pin_button.setText(tr("Pin"))
        self.pin_button.setToolTip(tr("Keep the panel open when it loses focus"))
        self.no_gpu_label.setText(tr("Looking for GPUs…") if self._snapshot is None else tr("No GPU found."))
        self.cancel_button.setText(tr("Cancel"))
        self.retry_button.setText(tr("Retry"))
        self.up_button.setToolTip(tr("Move up"))
        self.down_button.setToolTip(tr("Move down"))
        self.log_button.setText(tr("Open log"))
        _fixed_button_width(self.pause_all_button, (tr("Pause queue"), tr("Resume queue")))
        self.pause_all_button.setText(tr("Resume queue") if self._paused_all else tr("Pause queue"))
        self.host_label.setText(self._host_text())
        self.update_queue_label()
        self._render_notice()
        self._render_cluster()
        self.fit_columns()
        if self.isVisible() and not self.windowed:
            self.refit()

    def restyle(self) -> None:
        dark = is_dark()
        if dark == self._dark:
            return
        self._dark = dark
        c = colors()
        self.notice_label.setStyleSheet(f"color: {c.notice_text}")
        self.host_label.setStyleSheet(_secondary_style())
        if not self.windowed:
            self.setStyleSheet("QWidget#gputrayPanel { border: 1px solid palette(dark); }")
        self.drop_zone.set_highlight(False)
        self.model.restyle()
        self._render_cluster()  # the other machines' headers and "busy" words take the scheme's colours

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        elif event.type() == QEvent.Type.PaletteChange:
            self.restyle()

    def fit_columns(self) -> None:
        """Columns as wide as their header and their widest usual value, in this language and font."""
        header = self.table.horizontalHeader()
        fm = header.fontMetrics()
        pad = 2 * self.table.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin) + 14

        def header_w(col: int) -> int:
            text = str(self.model.headerData(col, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole))
            return fm.horizontalAdvance(text) + pad

        cell_fm = self.table.fontMetrics()
        states = max(cell_fm.horizontalAdvance(tr(s)) for s in STATE_NAMES) + 12
        self.table.setColumnWidth(COL_STATE, max(header_w(COL_STATE), states))
        names = [*self.model.device_names(), "RTX 5060 Ti"]
        widest = max(cell_fm.horizontalAdvance(n) for n in names) + 12
        device_w = min(widest, cell_fm.horizontalAdvance("M" * 12))  # a long name elides beyond that
        self.table.setColumnWidth(COL_DEVICE, max(header_w(COL_DEVICE), device_w))
        self.table.setColumnWidth(
            COL_ELAPSED, max(header_w(COL_ELAPSED), cell_fm.horizontalAdvance("0:00:00") + 12)
        )
        self.table.setColumnWidth(COL_NAME, max(header_w(COL_NAME), cell_fm.horizontalAdvance("M" * 10)))
        header.setMinimumSectionSize(min(header_w(c) for c in range(self.model.columnCount())))
        row_h = cell_fm.height() + 8
        self.table.verticalHeader().setDefaultSectionSize(row_h)
        self.table.setMinimumHeight(header.sizeHint().height() + 5 * row_h + 4)

    # -- title / demo ----------------------------------------------------------------------------------
    def title(self) -> str:
        return "gputray — " + tr("DEMO") if self.demo else "gputray"

    def set_demo(self, demo: bool) -> None:
        self.demo = demo
        self.setWindowTitle(self.title())
        self.title_label.setText(self.title())

    def set_notice(self, text: str | NoticeFn | None) -> None:
        """A line above the cards (the demo banner, a start-up error). A callable is asked again after a
        language switch, so the banner stays and speaks the new language."""
        if isinstance(text, str):
            fixed = text
            self._notice = (lambda: fixed) if fixed else None
        else:
            self._notice = text
        self._render_notice()
        if self.isVisible() and not self.windowed:
            self.refit()

    def notice_text(self) -> str:
        return self.notice_label.text() if self._notice is not None else ""

    def _render_notice(self) -> None:
        text = self._notice() if self._notice is not None else ""
        self.notice_label.setText(text)
        self.notice_label.setVisible(bool(text))

    # -- showing ---------------------------------------------------------------------------------------
    def set_pinned(self, pinned: bool) -> None:
        if pinned != self.pinned:
            log.info("panel pinned: %s", pinned)
        self.pinned = pinned
        if self.pin_button.isChecked() != pinned:
            self.pin_button.setChecked(pinned)
        self.drop_zone.set_pinned(pinned or self.windowed)

    def natural_size(self, available: QSize) -> QSize:
        """The size to show at: wide enough for the buttons, tall enough for everything (or the screen)."""
        layout = self.content.layout()
        if layout is not None:
            layout.activate()
        content = self.content.sizeHint()
        outer = self.layout()
        margins = outer.contentsMargins() if outer is not None else None
        extra_w = (margins.left() + margins.right()) if margins else 0
        extra_h = (margins.top() + margins.bottom()) if margins else 0
        width = max(PANEL_WIDTH, self.content.minimumSizeHint().width() + extra_w)
        height = content.height() + extra_h
        return QSize(min(width, available.width()), min(height, available.height()))

    def show_at(self, anchor: QRect | None) -> None:
        """Show next to ``anchor`` (the tray icon's geometry); at the cursor when it is empty."""
        if anchor is None or not anchor.isValid() or anchor.isEmpty():
            anchor = QRect(QCursor.pos(), QSize(1, 1))
        self._anchor = QRect(anchor)
        self.refit()
        self.show()
        self.raise_()
        self.activateWindow()

    def refit(self) -> None:
        """Size and place for the current anchor; the size then stays fixed while the panel is shown."""
        anchor = self._anchor or QRect(QCursor.pos(), QSize(1, 1))
        screen = screen_for(anchor)
        available = screen.availableGeometry()
        room = room_beside(anchor, available, screen.geometry()).boundedTo(available.size())
        size = self.natural_size(room)
        self.setFixedSize(size)
        pos = panel_position(anchor, size, available, screen.geometry())
        self.move(pos)
        log.info(
            "panel at %d,%d %dx%d beside %d,%d %dx%d on screen %s %d,%d %dx%d (scale %.2g)",
            pos.x(), pos.y(), size.width(), size.height(),
            anchor.x(), anchor.y(), anchor.width(), anchor.height(), screen.name(),
            available.x(), available.y(), available.width(), available.height(),
            screen.devicePixelRatio(),
        )  # fmt: skip

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.WindowDeactivate and not self.pinned and self.isVisible():
            self.hidden_by_deactivate_at = time.monotonic()
            self.hide()
        return super().event(event)

    # -- data ------------------------------------------------------------------------------------------
    def update_snapshot(self, snapshot: Snapshot, history: HistoryFn | None = None) -> None:
        self._snapshot = snapshot
        self._history = history
        gpus = gpu_readings(snapshot)
        keys = [r.info.key for r in gpus]
        cards_before = list(self.cards)
        for key in list(self.cards):
            if key not in keys:
                gone = self.cards.pop(key)
                self.devices_box.removeWidget(gone)
                gone.deleteLater()
        self.no_gpu_label.setVisible(not gpus)
        if not gpus:
            self.no_gpu_label.setText(tr("No GPU found."))
        for i, (r, entry) in enumerate(zip(gpus, legend_for(gpus), strict=True)):
            card = self.cards.get(r.info.key)
            if card is None:
                card = DeviceCard(r.info.key, self.content)
                card.pause_toggled.connect(self._on_card_pause)
                if r.info.key in self._jobs:
                    card.set_jobs(*self._jobs[r.info.key])
                card.stop_process_requested.connect(self.stop_process_requested)
                self.cards[r.info.key] = card
                self.devices_box.insertWidget(i + 1, card)
            verdict = snapshot.verdict(r.info.key)
            procs = [p for p in snapshot.processes if p.device == r.info.key]
            points = history(r.info.key, "util_percent", snapshot.timestamp_s - 300.0) if history else []
            card.update_reading(
                r,
                procs,
                verdict.reasons if verdict and verdict.busy else (),
                is_hot(snapshot, r),
                points,
                snapshot.timestamp_s,
                entry,
            )
        self.host_label.setText(self._host_text())
        if list(self.cards) != cards_before and self.isVisible() and not self.windowed:
            self.refit()  # a GPU came or went: the only time the panel changes size while shown

    def set_cluster(self, picture: ClusterPicture | None, now_s: float | None = None) -> None:
        """The cluster this machine is in (None: none): a header over this machine's cards, a group
        per other machine below them. ``now_s`` decides whether "offline since" needs a date."""
        self._cluster = picture
        self._cluster_now_s = time.time() if now_s is None else now_s
        if self._render_cluster() and self.isVisible() and not self.windowed:
            self.refit()  # a machine or one of its GPUs came or went

    def _render_cluster(self) -> bool:
        picture, now_s = self._cluster, self._cluster_now_s
        was_shown = not self.local_machine.isHidden()
        if picture is not None:
            here = next(m for m in picture.machines if m.local)
            self.local_machine.show_machine(replace(here, devices=()), now_s, connected=picture.connected)
        self.local_machine.setVisible(picture is not None)
        changed = self.cluster_section.show_picture(picture, now_s)
        return changed or was_shown != (picture is not None)

    def _host_text(self) -> str:
        if self._snapshot is None:
            return ""
        h = self._snapshot.host
        if h.cpu_percent is None and h.ram_used_bytes is None:
            return ""
        cpu = "–" if h.cpu_percent is None else f"{h.cpu_percent:.0f} %"
        ram = fmt_gib(h.ram_used_bytes, h.ram_total_bytes)
        return tr("CPU {cpu}  ·  RAM {ram}").format(cpu=cpu, ram=ram) + self._cpu_jobs()

    def _cpu_jobs(self) -> str:
        if "cpu" not in self._jobs:
            return ""
        running, slots = self._jobs["cpu"]
        return "  ·  " + tr("jobs {running}/{slots}").format(running=running, slots=slots)

    def set_jobs(self, devices: Iterable[DeviceSlots]) -> None:
        """Jobs running / slots per device, from the queue listing (``QueueService.devices``)."""
        for d in devices:
            if d.slots is not None:
                self._jobs[d.key] = (d.running, d.slots)
                if d.key in self.cards:
                    self.cards[d.key].set_jobs(d.running, d.slots)
        self.host_label.setText(self._host_text())

    def set_paused(self, paused_all: bool, devices: Iterable[str]) -> None:
        self._paused_all = paused_all
        self.pause_all_button.setText(tr("Resume queue") if paused_all else tr("Pause queue"))
        paused = set(devices)
        for key, card in self.cards.items():
            card.set_paused(key in paused)

    def update_queue_label(self) -> None:
        counts = self.model.counts()
        self.queue_label.setText(
            tr("Queue: {running} running, {waiting} waiting").format(
                running=counts.get("running", 0),
                waiting=counts.get("queued", 0) + counts.get("waiting", 0),
            )
        )

    # -- actions ---------------------------------------------------------------------------------------
    def selected_tasks(self) -> list[TaskView]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [t for t in (self.model.task(r) for r in rows) if t is not None]

    def _toggle_pause_all(self) -> None:
        if self._paused_all:
            self.resume_requested.emit(None)
        else:
            self.pause_requested.emit(None)

    def _on_card_pause(self, key: str, pause: bool) -> None:
        (self.pause_requested if pause else self.resume_requested).emit(key)

    def _cancel(self) -> None:
        ids = [t.id for t in self.selected_tasks() if t.state in ACTIVE_STATES]
        if ids:
            self.cancel_requested.emit(ids)

    def _retry(self) -> None:
        for t in self.selected_tasks():
            if t.state in RETRYABLE_STATES:
                self.retry_requested.emit(t.id)

    def _move(self, delta: int) -> None:
        tasks = self.selected_tasks()
        if len(tasks) == 1 and tasks[0].state in PENDING_STATES:
            self.move_requested.emit(tasks[0].id, delta)

    def _open_log(self) -> None:
        for t in self.selected_tasks()[:1]:
            if t.log_path:
                self.open_log_requested.emit(t.log_path)

    def _open_log_at(self, index: QModelIndex) -> None:
        t = self.model.task(index.row())
        if t and t.log_path:
            self.open_log_requested.emit(t.log_path)

    def row_menu(self, row: int) -> QMenu:
        """The right-click menu of a queue row (the row is selected first, as a click would)."""
        if not any(i.row() == row for i in self.table.selectionModel().selectedRows()):
            self.table.selectRow(row)
        tasks = self.selected_tasks()
        states = {t.state for t in tasks}
        single = tasks[0] if len(tasks) == 1 else None
        pending = sum(self.model.counts().get(s, 0) for s in PENDING_STATES)
        menu = QMenu(self)
        log_action = menu.addAction(tr("Open log"))
        log_action.setEnabled(bool(single and single.log_path))
        log_action.triggered.connect(self._open_log)
        menu.addSeparator()
        cancel = menu.addAction(tr("Cancel"))
        cancel.setEnabled(bool(states & ACTIVE_STATES))
        cancel.triggered.connect(self._cancel)
        retry = menu.addAction(tr("Retry"))
        retry.setEnabled(bool(states & RETRYABLE_STATES))
        retry.triggered.connect(self._retry)
        movable = single is not None and single.state in PENDING_STATES
        priority = menu.addMenu(tr("Priority"))
        priority.setEnabled(movable)
        for text, delta in (
            (tr("First in the queue"), -pending),
            (tr("Up one"), -1),
            (tr("Down one"), 1),
            (tr("Last in the queue"), pending),
        ):
            action = priority.addAction(text)
            action.triggered.connect(lambda _=False, d=delta: self._move(d))
        priority.addSeparator()
        priority.addAction(tr("Set priority…")).triggered.connect(self._ask_priority)
        return menu

    def _ask_priority(self) -> None:
        """A priority number for the selected waiting task (higher starts first), as `gputray edit` sets."""
        from PySide6.QtWidgets import QInputDialog

        from gputray.scheduler.tasks.records import MAX_PRIORITY

        tasks = self.selected_tasks()
        if len(tasks) != 1 or tasks[0].state not in PENDING_STATES:
            return
        task = tasks[0]
        value, ok = QInputDialog.getInt(
            self,
            tr("Set priority"),
            tr("Priority of {name} (higher starts first):").format(name=task.name),
            task.priority,
            -MAX_PRIORITY,
            MAX_PRIORITY,
        )
        if ok:
            self.priority_requested.emit(task.id, value)

    def _row_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        menu = self.row_menu(index.row())
        menu.exec(self.table.viewport().mapToGlobal(pos))
        menu.deleteLater()

    # -- drops -----------------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            self.drop_zone.set_highlight(True)
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dragLeaveEvent(self, event: QEvent) -> None:
        self.drop_zone.set_highlight(False)

    def dropEvent(self, event: QDropEvent) -> None:
        self.drop_zone.set_highlight(False)
        urls = event.mimeData().urls()
        if not urls:
            event.ignore()
            return
        event.acceptProposedAction()
        self.files_dropped.emit([u.toLocalFile() or u.toString() for u in urls])
