"""The panel a click on the tray opens: every GPU at a glance, the queue with its controls, a drop zone.

A frameless ``Qt.Tool`` window (not ``Qt.Popup``, which closes as soon as the user starts a drag from a
file manager), anchored next to the tray icon, or at the cursor where the tray reports no geometry
(StatusNotifierItem). It hides when it loses focus unless pinned. Without a tray it is an ordinary window.
The panel only shows and asks: actions leave it as signals the app connects to the queue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gputray.gui.i18n import tr
from gputray.gui.queue_model import COL_DEVICE, COL_ELAPSED, COL_NAME, COL_REASON, COL_STATE, QueueModel
from gputray.gui.sparkline import Sparkline
from gputray.gui.tray_icon import gpu_readings, is_hot
from gputray.monitor.records import DeviceReading, ProcessUse, Snapshot
from gputray.monitor.units import GIB

log = logging.getLogger("gputray.gui")
HistoryFn = Callable[[str, str, float], list[tuple[float, float | None]]]


def fmt_gib(used: int | None, total: int | None) -> str:
    if used is None and total is None:
        return "–"
    u = "–" if used is None else f"{used / GIB:.1f}"
    t = "–" if total is None else f"{total / GIB:.1f}"
    return f"{u} / {t} GiB"


def device_metrics_line(r: DeviceReading) -> str:
    s = r.sample
    if s.state == "lost":
        return tr("lost") + (f": {s.reason}" if s.reason else "")
    if s.state == "asleep":
        return tr("asleep (not woken to read it)")
    if s.state == "unavailable":
        return tr("unavailable") + (f": {s.reason}" if s.reason else "")
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


def processes_line(processes: Sequence[ProcessUse]) -> str:
    if not processes:
        return tr("no processes")
    parts = []
    for p in sorted(processes, key=lambda p: -((p.vram_bytes or 0) + (p.shared_bytes or 0)))[:4]:
        mem = (p.vram_bytes or 0) + (p.shared_bytes or 0)
        util = "" if p.util_percent is None else f" {p.util_percent:.0f}%"
        parts.append(f"{p.name} ({p.pid}) {mem / GIB:.1f} GiB{util}")
    more = len(processes) - 4
    if more > 0:
        parts.append(tr("+{n} more").format(n=more))
    return ", ".join(parts)


class DeviceCard(QFrame):
    pause_toggled = Signal(str, bool)  # device key, pause?

    def __init__(self, key: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.setObjectName("deviceCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(2)
        top = QHBoxLayout()
        self.name_label = QLabel(self)
        self.name_label.setStyleSheet("font-weight: bold")
        self.metrics_label = QLabel(self)
        self.pause_button = QToolButton(self)
        self.pause_button.setCheckable(True)
        self.pause_button.setText(tr("Pause"))
        self.pause_button.setToolTip(tr("Pause or resume the queue on this device"))
        self.pause_button.toggled.connect(self._on_pause)
        self.jobs_label = QLabel(self)
        self.jobs_label.setToolTip(tr("Jobs running / slots (config: [devices.<name>] slots = N)"))
        top.addWidget(self.name_label, 1)
        top.addWidget(self.metrics_label)
        top.addWidget(self.pause_button)
        layout.addLayout(top)
        self.memory_label = QLabel(self)
        second = QHBoxLayout()  # the jobs beside the memory: the top row is the widest already
        second.addWidget(self.memory_label, 1)
        second.addWidget(self.jobs_label)
        layout.addLayout(second)
        self.sparkline = Sparkline(self)
        layout.addWidget(self.sparkline)
        self.processes_label = QLabel(self)
        self.processes_label.setWordWrap(True)
        self.processes_label.setStyleSheet("color: palette(mid); font-size: small")
        layout.addWidget(self.processes_label)

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
        self.jobs_label.setText(tr("jobs {running}/{slots}").format(running=running, slots=slots))

    def update_reading(
        self,
        r: DeviceReading,
        processes: Sequence[ProcessUse],
        busy_reasons: Sequence[str],
        hot: bool,
        history: list[tuple[float, float | None]],
        now_s: float,
    ) -> None:
        sim = "  [" + tr("simulated") + "]" if r.info.simulated else ""
        self.name_label.setText(r.info.name + sim)
        self.metrics_label.setText(device_metrics_line(r))
        hot_style = "color: #c62828; font-weight: bold" if hot else ""
        if self.metrics_label.styleSheet() != hot_style:  # setStyleSheet re-polishes even when unchanged
            self.metrics_label.setStyleSheet(hot_style)
        self.memory_label.setText(device_memory_line(r))
        self.sparkline.set_points(history, now_s)
        text = processes_line(processes)
        if busy_reasons:
            text = tr("busy: {reasons}").format(reasons="; ".join(busy_reasons)) + "\n" + text
        self.processes_label.setText(text)


class DropZone(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(tr("Drop files here to queue them"), parent)
        self.setToolTip(
            tr("Pin the panel first when you drag from another window: it hides when it loses focus.")
        )
        self.setObjectName("dropZone")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumHeight(44)
        self.set_highlight(False)

    def set_highlight(self, on: bool) -> None:
        color = "#1e88e5" if on else "palette(mid)"
        style = f"border: 2px dashed {color}; border-radius: 6px; padding: 8px"
        self.setStyleSheet(f"QLabel#dropZone {{ {style} }}")


def panel_position(anchor: QRect, size: QSize, screen: QRect) -> QPoint:
    """Top-left for a panel of ``size`` next to ``anchor`` (the icon, or a 1×1 rect at the cursor).

    Above the anchor when it sits in the lower half of the screen (a bottom panel), else below; right
    edges aligned; always fully on the screen's available area.
    """
    if anchor.center().y() >= screen.center().y():
        y = anchor.top() - size.height() - 4
    else:
        y = anchor.bottom() + 4
    x = anchor.right() - size.width()
    x = max(screen.left(), min(x, screen.right() - size.width() + 1))
    y = max(screen.top(), min(y, screen.bottom() - size.height() + 1))
    return QPoint(x, y)


class Panel(QWidget):
    cancel_requested = Signal(list)
    retry_requested = Signal(object)
    move_requested = Signal(object, int)
    pause_requested = Signal(object)  # device key, or None for the whole queue
    resume_requested = Signal(object)
    open_log_requested = Signal(str)
    files_dropped = Signal(list)
    dashboard_requested = Signal()

    def __init__(self, model: QueueModel, *, demo: bool = False, windowed: bool = False) -> None:
        super().__init__(None)
        self.model = model
        self.demo = demo
        self.windowed = windowed
        self.pinned = windowed
        self.cards: dict[str, DeviceCard] = {}
        self._paused_all = False
        self._jobs: dict[str, tuple[int, int]] = {}  # device key -> (running, slots), from the queue
        self.hidden_by_deactivate_at: float | None = None
        self.setObjectName("gputrayPanel")
        self.setAcceptDrops(True)
        if windowed:
            self.setWindowFlags(Qt.WindowType.Window)
        else:
            self.setWindowFlags(
                Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint
            )
        self.setWindowTitle(self.title())
        self.resize(460, 560)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(10, 8, 10, 10)
        head = QHBoxLayout()
        self.title_label = QLabel(self.title(), self)
        self.title_label.setStyleSheet("font-weight: bold; font-size: 13pt")
        head.addWidget(self.title_label, 1)
        self.dashboard_button = QToolButton(self)
        self.dashboard_button.setText(tr("Dashboard"))
        self.dashboard_button.clicked.connect(self.dashboard_requested)
        head.addWidget(self.dashboard_button)
        self.pin_button = QToolButton(self)
        self.pin_button.setText(tr("Pin"))
        self.pin_button.setToolTip(tr("Keep the panel open when it loses focus"))
        self.pin_button.setCheckable(True)
        self.pin_button.setChecked(self.pinned)
        self.pin_button.toggled.connect(self.set_pinned)
        self.pin_button.setVisible(not windowed)
        head.addWidget(self.pin_button)
        outer.addLayout(head)

        self.notice_label = QLabel(self)
        self.notice_label.setWordWrap(True)
        self.notice_label.setStyleSheet("color: #8e24aa")
        self.notice_label.hide()
        outer.addWidget(self.notice_label)

        self.devices_box = QVBoxLayout()
        self.devices_box.setSpacing(6)
        outer.addLayout(self.devices_box)
        self.no_gpu_label = QLabel(tr("Looking for GPUs…"), self)
        self.devices_box.addWidget(self.no_gpu_label)
        self.host_label = QLabel(self)
        self.host_label.setStyleSheet("color: palette(mid)")
        outer.addWidget(self.host_label)

        queue_head = QHBoxLayout()
        self.queue_label = QLabel(tr("Queue"), self)
        self.queue_label.setStyleSheet("font-weight: bold")
        queue_head.addWidget(self.queue_label, 1)
        self.pause_all_button = QPushButton(tr("Pause queue"), self)
        self.pause_all_button.clicked.connect(self._toggle_pause_all)
        queue_head.addWidget(self.pause_all_button)
        outer.addLayout(queue_head)

        self.table = QTableView(self)
        self.table.setModel(model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.horizontalHeader().setSectionResizeMode(COL_REASON, QHeaderView.ResizeMode.Stretch)
        self.table.setColumnWidth(COL_NAME, 120)
        self.table.setColumnWidth(COL_STATE, 84)
        self.table.setColumnWidth(COL_DEVICE, 90)
        self.table.setColumnWidth(COL_ELAPSED, 50)
        self.table.setWordWrap(False)
        self.table.doubleClicked.connect(self._open_log_at)
        self.table.setMinimumHeight(140)
        outer.addWidget(self.table, 1)

        buttons = QHBoxLayout()
        self.cancel_button = QPushButton(tr("Cancel"), self)
        self.retry_button = QPushButton(tr("Retry"), self)
        self.up_button = QPushButton("▲", self)
        self.up_button.setToolTip(tr("Move up"))
        self.down_button = QPushButton("▼", self)
        self.down_button.setToolTip(tr("Move down"))
        self.log_button = QPushButton(tr("Open log"), self)
        for b in (self.cancel_button, self.retry_button, self.up_button, self.down_button, self.log_button):
            buttons.addWidget(b)
        self.cancel_button.clicked.connect(self._cancel)
        self.retry_button.clicked.connect(self._retry)
        self.up_button.clicked.connect(lambda: self._move(-1))
        self.down_button.clicked.connect(lambda: self._move(1))
        self.log_button.clicked.connect(self._open_log)
        outer.addLayout(buttons)

        self.drop_zone = DropZone(self)
        outer.addWidget(self.drop_zone)
        if not windowed:
            self.setStyleSheet("QWidget#gputrayPanel { border: 1px solid palette(dark); }")

    # -- title / demo ----------------------------------------------------------------------------------
    def title(self) -> str:
        return "gputray — " + tr("DEMO") if self.demo else "gputray"

    def set_demo(self, demo: bool) -> None:
        self.demo = demo
        self.setWindowTitle(self.title())
        self.title_label.setText(self.title())

    def set_notice(self, text: str | None) -> None:
        self.notice_label.setText(text or "")
        self.notice_label.setVisible(bool(text))

    # -- showing ---------------------------------------------------------------------------------------
    def set_pinned(self, pinned: bool) -> None:
        if pinned != self.pinned:
            log.info("panel pinned: %s", pinned)
        self.pinned = pinned
        if self.pin_button.isChecked() != pinned:
            self.pin_button.setChecked(pinned)

    def show_at(self, anchor: QRect | None) -> None:
        """Show next to ``anchor`` (the tray icon's geometry); at the cursor when it is empty."""
        if anchor is None or not anchor.isValid() or anchor.isEmpty():
            anchor = QRect(QGuiApplication.primaryScreen().geometry().topLeft(), QSize(1, 1))
            from PySide6.QtGui import QCursor

            anchor.moveTo(QCursor.pos())
        screen = QGuiApplication.screenAt(anchor.center()) or QGuiApplication.primaryScreen()
        layout = self.layout()
        if layout is not None:
            layout.activate()
        size = self.sizeHint().expandedTo(QSize(460, 520)).boundedTo(screen.availableGeometry().size())
        self.resize(size)
        self.move(panel_position(anchor, size, screen.availableGeometry()))
        self.show()
        self.raise_()
        self.activateWindow()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.WindowDeactivate and not self.pinned and self.isVisible():
            import time

            self.hidden_by_deactivate_at = time.monotonic()
            self.hide()
        return super().event(event)

    # -- data ------------------------------------------------------------------------------------------
    def update_snapshot(self, snapshot: Snapshot, history: HistoryFn | None = None) -> None:
        gpus = gpu_readings(snapshot)
        keys = [r.info.key for r in gpus]
        for key in list(self.cards):
            if key not in keys:
                gone = self.cards.pop(key)
                self.devices_box.removeWidget(gone)
                gone.deleteLater()
        self.no_gpu_label.setVisible(not gpus)
        if not gpus:
            self.no_gpu_label.setText(tr("No GPU found."))
        for i, r in enumerate(gpus):
            card = self.cards.get(r.info.key)
            if card is None:
                card = DeviceCard(r.info.key, self)
                card.pause_toggled.connect(self._on_card_pause)
                if r.info.key in self._jobs:
                    card.set_jobs(*self._jobs[r.info.key])
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
            )
        h = snapshot.host
        if h.cpu_percent is not None or h.ram_used_bytes is not None:
            cpu = "–" if h.cpu_percent is None else f"{h.cpu_percent:.0f} %"
            ram = fmt_gib(h.ram_used_bytes, h.ram_total_bytes)
            self.host_label.setText(tr("CPU {cpu}  ·  RAM {ram}").format(cpu=cpu, ram=ram) + self._cpu_jobs())

    def _cpu_jobs(self) -> str:
        if "cpu" not in self._jobs:
            return ""
        running, slots = self._jobs["cpu"]
        return "  ·  " + tr("jobs {running}/{slots}").format(running=running, slots=slots)

    def set_jobs(self, devices: Iterable[Mapping[str, Any]]) -> None:
        """Jobs running / slots per device, from the queue listing (``QueueService.devices``)."""
        for d in devices:
            key, running, slots = d.get("key"), d.get("running"), d.get("slots")
            if isinstance(key, str) and isinstance(running, int) and isinstance(slots, int):
                self._jobs[key] = (running, slots)
                if key in self.cards:
                    self.cards[key].set_jobs(running, slots)  # the CPU's shows with the next sample

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
    def selected_tasks(self) -> list[dict[str, object]]:
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
        ids = [t.get("id") for t in self.selected_tasks()]
        if ids:
            self.cancel_requested.emit(ids)

    def _retry(self) -> None:
        for t in self.selected_tasks():
            self.retry_requested.emit(t.get("id"))

    def _move(self, delta: int) -> None:
        tasks = self.selected_tasks()
        if len(tasks) == 1:
            self.move_requested.emit(tasks[0].get("id"), delta)

    def _open_log(self) -> None:
        for t in self.selected_tasks()[:1]:
            if t.get("log_path"):
                self.open_log_requested.emit(str(t.get("log_path")))

    def _open_log_at(self, index: QModelIndex) -> None:
        t = self.model.task(index.row())
        if t and t.get("log_path"):
            self.open_log_requested.emit(str(t.get("log_path")))

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
