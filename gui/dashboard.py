"""The dashboard window: an hour of history per GPU (pyqtgraph, zoomable), processes, the doctor, logs.

Every plot starts at 0 and ends at the total (100 %, the largest VRAM or shared size, the highest
temperature limit), with a dashed line per GPU at its own total or limit, in that GPU's legend colour
(the icon's bar colour). The plots share their left-axis width, so their time axes line up. The task
log tab lists every task, waiting ones included, with why it waits until it has a log.

This module is imported only when the window is first built, never at app start: pyqtgraph costs
memory and time. pyqtgraph is imported here at the top, not inside ``Dashboard.__init__``: a widget
whose ``__init__`` fails after ``super().__init__()`` leaves a live C++ window behind a half-built Python
object, and Qt calling into that object crashed the tray (issue 21). An import that fails now fails
before any widget exists.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gputray.gui import messages
from gputray.gui.i18n import tr, tr_noop
from gputray.gui.legend import color_of, gpu_readings, legend_for
from gputray.gui.queue_model import energy_text, progress_text
from gputray.gui.residents_table import ResidentsTable
from gputray.gui.status_marks import mark_icon, strip_mark
from gputray.gui.theme import colors, follow_change, is_dark
from gputray.gui.window_fit import fit_on_screen
from gputray.monitor.readings_text import link_text
from gputray.monitor.records import DeviceInfo, DeviceReading, ProcessUse, Snapshot
from gputray.monitor.units import GIB, format_energy_j
from gputray.scheduler.client.replies import RoomReply, TaskView
from gputray.scheduler.client.words import DoctorNews

METRICS: tuple[tuple[str, str, float], ...] = (
    ("util_percent", tr_noop("Utilisation %"), 1.0),
    ("temp_c", tr_noop("Temperature °C"), 1.0),
    ("power_w", tr_noop("Power W"), 1.0),
    ("vram_used_bytes", tr_noop("VRAM GiB"), 1.0 / GIB),
    ("shared_used_bytes", tr_noop("Shared GiB"), 1.0 / GIB),
)
PROCESS_KINDS = (tr_noop("graphics"), tr_noop("compute"), tr_noop("rocm"), tr_noop("mixed"), tr_noop("other"))
PROCESS_HEADERS = (
    tr_noop("PID"),
    tr_noop("Process"),
    tr_noop("Device"),
    tr_noop("Kind"),
    tr_noop("Memory GiB"),
    tr_noop("Util %"),
)
DOCTOR_HEADERS = (
    tr_noop("Environment"),
    tr_noop("Device"),
    tr_noop("Result"),
    tr_noop("Selected by"),
    tr_noop("Reason / fix"),
    tr_noop("Figures"),
)
DOCTOR_RESULT_COLUMN = 2
DOCTOR_VERDICTS = (tr_noop("works"), tr_noop("limited"), tr_noop("fails"))
NO_ENVIRONMENT_HINT = tr_noop("No doctor results yet: add a Python environment in Settings.")
TABS = (
    tr_noop("History"),
    tr_noop("Processes"),
    tr_noop("Doctor"),
    tr_noop("Task logs"),
    tr_noop("Devices"),
    tr_noop("Residents"),
)
DEVICE_HEADERS = (
    tr_noop("Device"),
    tr_noop("PCIe link"),
    tr_noop("Fan"),
    tr_noop("Power limit"),
    tr_noop("Memory clock"),
    tr_noop("Encoder"),
    tr_noop("Decoder"),
)
LEFT_AXIS_PX = 72  # one width for every plot's left axis: their time axes line up
ID_ROLE = 256
LOG_ROLE = 257


class VerdictsLike(Protocol):
    def temp_limit_c(self, reading: DeviceReading) -> float: ...


class MonitorLike(Protocol):
    @property
    def latest(self) -> Snapshot | None: ...

    @property
    def verdicts(self) -> VerdictsLike: ...

    def history(
        self, key: str, metric: str, since_s: float | None = None
    ) -> list[tuple[float, float | None]]: ...

    def known_devices(self) -> list[DeviceInfo]: ...


@dataclass(frozen=True)
class Limit:
    """A dashed line: a GPU's total (VRAM, shared memory) or limit (temperature), in plot units."""

    key: str
    value: float


def limits_for(metric: str, r: DeviceReading, temp_limit_c: float | None) -> Limit | None:
    """The one place that knows which total or limit belongs on which plot."""
    s, info = r.sample, r.info
    if metric == "temp_c" and temp_limit_c is not None:
        return Limit(info.key, temp_limit_c)
    if metric == "vram_used_bytes":
        total = s.vram_total_bytes if s.vram_total_bytes is not None else info.vram_total_bytes
        return None if total is None else Limit(info.key, total / GIB)
    if metric == "shared_used_bytes":
        total = s.shared_total_bytes if s.shared_total_bytes is not None else info.shared_total_bytes
        return None if total is None else Limit(info.key, total / GIB)
    if metric == "power_w" and s.power_limit_w is not None:
        return Limit(info.key, s.power_limit_w)
    return None


def axis_top(metric: str, limits: Sequence[Limit], peak: float) -> float:
    """Where an axis ends: just above the largest total or limit (so its line shows), or above the
    highest value seen; never below 1. Utilisation ends at 100 %."""
    if metric == "util_percent":
        return 100.0
    top = max([lim.value for lim in limits] + [peak, 1.0])
    if metric == "temp_c":
        return max(top, 40.0) + 8.0
    return top * 1.06


def fit_columns(table: QTableWidget, *, most: float = 0.45) -> None:
    """Each column as wide as its widest cell, so names and figures are whole where the window has room
    ("CPU (Intel(R) Xeon(R) …" was cut at Qt's default width, issue 33); none wider than ``most`` of the
    view, so one long diagnosis leaves the others their room (it elides, whole in its tooltip)."""
    table.resizeColumnsToContents()
    cap = int(max(table.viewport().width(), 600) * most)
    for col in range(table.columnCount() - 1):  # the last one stretches to the edge
        if table.columnWidth(col) > cap:
            table.setColumnWidth(col, cap)


class Dashboard(QWidget):
    doctor_done = Signal(list)
    doctor_line = Signal(object)  # a doctor run's progress (``doctor_codes.DoctorNews``)
    doctor_note = Signal(object)  # a messages.Note from the doctor's thread: it follows a language switch
    settings_requested = Signal()  # "Open Settings…" beside the hint to add a Python environment
    stop_process_requested = Signal(object)  # ProcessUse

    def __init__(
        self,
        monitor: MonitorLike,
        *,
        tasks: Callable[[], Sequence[TaskView]] | None = None,
        demo: bool = False,
        room: Callable[[], RoomReply | None] | None = None,
    ) -> None:
        super().__init__(None)
        self.monitor = monitor
        self.room = room or (lambda: None)  # the owner's `room`: residents and GPUs taken (tray_room)
        self.tasks = tasks or (lambda: [])
        self.demo = demo
        self._dark: bool | None = None
        self.setObjectName("gputrayDashboard")
        self.resize(900, 660)
        layout = QVBoxLayout(self)
        self.tabs = QTabWidget(self)
        layout.addWidget(self.tabs)

        # History
        c = colors()
        pg.setConfigOptions(antialias=True, background=c.plot_background, foreground=c.plot_foreground)
        self.plots_widget = pg.GraphicsLayoutWidget()
        self.plots: dict[str, Any] = {}
        self.curves: dict[tuple[str, str], Any] = {}
        self.limit_lines: dict[tuple[str, str], Any] = {}
        self.y_ranges: dict[str, tuple[float, float]] = {}
        for i, (metric, _label, _scale) in enumerate(METRICS):
            plot = self.plots_widget.addPlot(row=i, col=0)
            axis = plot.getAxis("left")
            axis.enableAutoSIPrefix(False)
            axis.setWidth(LEFT_AXIS_PX)
            plot.showGrid(x=True, y=False, alpha=0.25)  # a y grid would hide the "0" and top labels
            plot.setXRange(-10, 0, padding=0)  # the last 10 minutes; zoom or drag out to the hour
            plot.setLimits(xMin=-65, xMax=1, yMin=0)
            plot.setMouseEnabled(x=True, y=False)
            plot.setYRange(0, 100.0 if metric == "util_percent" else 1.0, padding=0)
            if i:
                plot.setXLink(self.plots[METRICS[0][0]])
            self.plots[metric] = plot
        self.legend = self.plots[METRICS[0][0]].addLegend(offset=(5, 5))
        self.tabs.addTab(self.plots_widget, "")

        # Processes
        self.proc_table = QTableWidget(0, len(PROCESS_HEADERS), self)
        self.proc_table.horizontalHeader().setStretchLastSection(True)
        self.proc_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.proc_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.proc_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.proc_table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.proc_table.customContextMenuRequested.connect(self._process_menu)
        self.proc_table.verticalHeader().hide()
        self._procs: list[ProcessUse] = []
        self.tabs.addTab(self.proc_table, "")

        # Doctor
        doctor = QWidget(self)
        dl = QVBoxLayout(doctor)
        top = QHBoxLayout()
        self.doctor_status_mark = QLabel(doctor)  # the last progress line's verdict, drawn (status_marks)
        self.doctor_status_mark.hide()
        top.addWidget(self.doctor_status_mark)
        self.doctor_status = QLabel(doctor)
        self.doctor_status.setWordWrap(True)
        self._doctor_status_note: messages.Note | None = messages.note(
            tr_noop("Cached results; run the doctor to probe again.")
        )
        self.doctor_button = QPushButton(doctor)
        self.doctor_button.clicked.connect(self.run_doctor)
        top.addWidget(self.doctor_status, 1)
        self.doctor_settings_button = QPushButton(doctor)  # shown with the "add an environment" hint
        self.doctor_settings_button.clicked.connect(self.settings_requested)
        self.doctor_settings_button.hide()
        top.addWidget(self.doctor_settings_button)
        top.addWidget(self.doctor_button)
        dl.addLayout(top)
        self.doctor_table = QTableWidget(0, len(DOCTOR_HEADERS), doctor)
        self.doctor_table.horizontalHeader().setStretchLastSection(True)
        self.doctor_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.doctor_table.verticalHeader().hide()
        dl.addWidget(self.doctor_table)
        self.tabs.addTab(doctor, "")
        self.doctor_done.connect(self.show_doctor)
        self.doctor_line.connect(self._set_doctor_status_text)
        self.doctor_note.connect(self._set_doctor_status)
        self._doctor_thread: threading.Thread | None = None
        self._doctor_pairs: list[Any] = []

        # Logs
        logs = QWidget(self)
        ll = QHBoxLayout(logs)
        self.task_list = QListWidget(logs)
        self.task_list.setMaximumWidth(300)
        self.task_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.task_list.setTextElideMode(Qt.TextElideMode.ElideRight)  # the whole line is in its tooltip
        self.task_list.currentItemChanged.connect(self._show_log)
        self.log_view = QPlainTextEdit(logs)
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        ll.addWidget(self.task_list)
        ll.addWidget(self.log_view, 1)
        self.tabs.addTab(logs, "")

        # Devices: what eGPU users check (link, fan, power limit, memory clock, video engines)
        self.device_table = QTableWidget(0, len(DEVICE_HEADERS), self)
        self.device_table.horizontalHeader().setStretchLastSection(True)
        self.tabs.addTab(self.device_table, "")

        # Residents: the GPU servers running here, what each holds, since when idle (issue 27)
        self.residents_table = ResidentsTable(self)
        self.tabs.addTab(self.residents_table, "")

        self.timer = QTimer(self)
        self.timer.setInterval(2000)
        self.timer.timeout.connect(self.refresh)
        self.retranslate()
        self.restyle()
        self.load_cached_doctor()
        self.refresh()

    # -- language and colours --------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.setWindowTitle("gputray " + tr("dashboard") + (" — " + tr("DEMO") if self.demo else ""))
        for i, name in enumerate(TABS):
            self.tabs.setTabText(i, tr(name))
        for metric, label, _scale in METRICS:
            self.plots[metric].setLabel("left", tr(label))
        self.plots[METRICS[-1][0]].setLabel("bottom", tr("minutes ago"))
        self.proc_table.setHorizontalHeaderLabels([tr(h) for h in PROCESS_HEADERS])
        self.doctor_table.setHorizontalHeaderLabels([tr(h) for h in DOCTOR_HEADERS])
        self.device_table.setHorizontalHeaderLabels([tr(h) for h in DEVICE_HEADERS])
        self.residents_table.retranslate()
        self.doctor_button.setText(tr("Run doctor"))
        self.doctor_settings_button.setText(tr("Open Settings…"))
        self.proc_table.setToolTip(tr("Right-click a process of yours to stop it"))
        if self._doctor_status_note is not None:
            self.doctor_status.setText(self._doctor_status_note.text())
        self.show_doctor(self._doctor_pairs, keep_status=True)
        self.task_list.clear()  # refilled in the new language
        self.refresh()

    def restyle(self) -> None:
        dark = is_dark()
        if dark == self._dark:
            return
        self._dark = dark
        c = colors()
        self.plots_widget.setBackground(c.plot_background)
        for plot in self.plots.values():
            for side in ("left", "bottom"):
                axis = plot.getAxis(side)
                axis.setPen(c.plot_foreground)
                axis.setTextPen(c.plot_foreground)
            plot.showGrid(x=True, y=False, alpha=0.25)
        if self.legend is not None:
            self.legend.setLabelTextColor(c.plot_foreground)
            for _sample, label in self.legend.items:  # setLabelTextColor keeps the old text's colour
                label.setText(label.text, color=c.plot_foreground)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        follow_change(event, self.retranslate, self.restyle)

    # -- refreshing while visible ----------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:
        self.timer.start()
        self.refresh()
        super().showEvent(event)
        fit_on_screen(self)  # 900×660 is more than a small screen's available area (issue 33)

    def hideEvent(self, event: Any) -> None:
        self.timer.stop()
        super().hideEvent(event)

    def refresh(self) -> None:
        snap = self.monitor.latest
        self._fill_tasks()
        if snap is None:
            return
        now = snap.timestamp_s
        gpus = gpu_readings(snap)
        entries = legend_for(gpus)
        for metric, _label, scale in METRICS:
            limits: list[Limit] = []
            peak = 0.0
            for r in gpus:
                series = self.monitor.history(r.info.key, metric, now - 3600.0)
                xs = [(t - now) / 60.0 for t, v in series if v is not None]
                ys = [v * scale for _t, v in series if v is not None]
                peak = max([peak, *ys])
                color = color_of(entries, r.info.key)
                curve = self.curves.get((r.info.key, metric))
                if curve is None:
                    legend = r.info.name if metric == "util_percent" else None
                    curve = self.plots[metric].plot([], [], pen=pg.mkPen(color, width=1.8), name=legend)
                    self.curves[(r.info.key, metric)] = curve
                curve.setData(xs, ys)
                temp_limit = self.monitor.verdicts.temp_limit_c(r) if metric == "temp_c" else None
                limit = limits_for(metric, r, temp_limit)
                if limit is not None:
                    limits.append(limit)
                    self._limit_line(metric, limit, color)
            top = axis_top(metric, limits, peak)
            if self.y_ranges.get(metric) != (0.0, top):
                self.plots[metric].setYRange(0.0, top, padding=0)
                self.plots[metric].setLimits(yMin=0, yMax=top)
                self.y_ranges[metric] = (0.0, top)
        self._fill_devices(snap)
        self._fill_processes(snap)
        self.residents_table.show_room(self.room(), {r.info.key: r.info.name for r in snap.readings})

    def _limit_line(self, metric: str, limit: Limit, color: str) -> None:
        line = self.limit_lines.get((limit.key, metric))
        if line is None:
            pen = pg.mkPen(color, width=1.2, style=Qt.PenStyle.DashLine)
            line = pg.InfiniteLine(pos=limit.value, angle=0, pen=pen, movable=False)
            self.plots[metric].addItem(line)
            self.limit_lines[(limit.key, metric)] = line
        elif line.value() != limit.value:
            line.setValue(limit.value)

    def _fill_devices(self, snap: Snapshot) -> None:
        readings = gpu_readings(snap)
        self.device_table.setRowCount(len(readings))

        def pct(value: float | None) -> str:
            return "—" if value is None else f"{value:.0f} %"

        words = messages.reading_words()
        for row, r in enumerate(readings):
            s = r.sample
            fan = " ".join(
                part
                for part in (
                    None if s.fan_percent is None else f"{s.fan_percent:.0f} %",
                    None if s.fan_rpm is None else f"{s.fan_rpm} RPM",
                )
                if part
            )
            values = (
                r.info.name,
                link_text(s, words=words) or "—",
                fan or "—",
                "—" if s.power_limit_w is None else f"{s.power_limit_w:.0f} W",
                "—" if s.mclk_mhz is None else f"{s.mclk_mhz} MHz",
                pct(s.encoder_percent),
                pct(s.decoder_percent),
            )
            for col, text in enumerate(values):
                item = QTableWidgetItem(text)
                item.setToolTip(text)  # a narrow window elides the cell: the full reading stays readable
                self.device_table.setItem(row, col, item)
        fit_columns(self.device_table)

    def _fill_processes(self, snap: Snapshot) -> None:
        names = {r.info.key: r.info.name for r in snap.readings}
        procs = sorted(snap.processes, key=lambda p: (p.device, -(p.vram_bytes or 0)))
        self._procs = procs
        self.proc_table.setRowCount(len(procs))
        for row, p in enumerate(procs):
            mem = (p.vram_bytes or 0) + (p.shared_bytes or 0)
            values = (
                str(p.pid),
                p.name,
                names.get(p.device, p.device),
                tr(p.kind),
                f"{mem / GIB:.2f}",
                "—" if p.util_percent is None else f"{p.util_percent:.0f}",
            )
            for col, text in enumerate(values):
                item = self.proc_table.item(row, col)
                if item is None:
                    self.proc_table.setItem(row, col, QTableWidgetItem(text))
                elif item.text() != text:
                    item.setText(text)

    def _process_menu(self, pos: QPoint) -> None:
        from gputray.gui.panel import process_menu

        row = self.proc_table.indexAt(pos).row()
        if not 0 <= row < len(self._procs):
            return
        self.proc_table.selectRow(row)
        menu = process_menu(self, [self._procs[row]], self.stop_process_requested.emit)
        menu.exec(self.proc_table.viewport().mapToGlobal(pos))
        menu.deleteLater()

    def _task_text(self, t: TaskView) -> str:
        energy = "" if t.energy_j is None else f" · {format_energy_j(t.energy_j)}"
        # a bar and the time left, as the panel's row: not while its job is paused (it said "running ·
        # 45%, ~3 min left" of a frozen job)
        shown = progress_text(t) if t.paused_at is None else ""
        progress = f" · {shown}" if shown else ""
        return f"#{t.id} {t.name} — {messages.state_word(t.shown_state)}{progress}{energy}"

    def _fill_tasks(self) -> None:
        tasks = list(self.tasks())[-200:]
        current = self.task_list.currentItem()
        current_id = current.data(ID_ROLE) if current else None
        texts = [self._task_text(t) for t in tasks]
        shown = [self.task_list.item(i).text() for i in range(self.task_list.count())]
        if shown == texts:
            if current is not None:
                self._show_log(current, None)
            return
        self.task_list.blockSignals(True)
        self.task_list.clear()
        for t, text in zip(tasks, texts, strict=True):
            item = QListWidgetItem(text)
            item.setData(ID_ROLE, t.id)
            item.setData(LOG_ROLE, t.log_path)
            reason = messages.reason(t.reason, t.state)
            item.setToolTip("\n".join(filter(None, [text, reason, energy_text(t)])))
            self.task_list.addItem(item)
            if t.id == current_id:
                self.task_list.setCurrentItem(item)
        self.task_list.blockSignals(False)
        if self.task_list.currentItem() is not None:
            self._show_log(self.task_list.currentItem(), None)

    def _task(self, task_id: Any) -> TaskView | None:
        return next((t for t in self.tasks() if t.id == task_id), None)

    def _show_log(self, item: QListWidgetItem | None, _previous: object) -> None:
        if item is None:
            return
        log_path = item.data(LOG_ROLE)
        if not log_path:  # waiting or queued: no log yet, so say why it waits
            t = self._task(item.data(ID_ROLE)) or TaskView(id=item.data(ID_ROLE), state="")
            lines = [
                tr("#{id} {name} has not started yet.").format(id=t.id, name=t.name),
                tr("State: {state}").format(state=messages.state_word(t.state)),
            ]
            if t.reason is not None:
                lines.append(tr("Why: {reason}").format(reason=messages.reason(t.reason, t.state)))
            text = "\n".join(lines)
        else:
            path = Path(str(log_path))
            try:
                with path.open("rb") as f:
                    f.seek(0, 2)
                    size = f.tell()
                    f.seek(max(0, size - 64_000))
                    text = f.read().decode("utf-8", errors="replace")
            except OSError as exc:
                text = tr("Cannot read {path}: {error}").format(path=path, error=exc.strerror)
        if text != self.log_view.toPlainText():
            self.log_view.setPlainText(text)
            self.log_view.verticalScrollBar().setValue(self.log_view.verticalScrollBar().maximum())

    def show_log_of(self, log_path: str) -> None:
        self.tabs.setCurrentIndex(3)
        self._fill_tasks()
        for i in range(self.task_list.count()):
            if self.task_list.item(i).data(LOG_ROLE) == log_path:
                self.task_list.setCurrentRow(i)
                return

    # -- doctor ----------------------------------------------------------------------------------------
    def _set_doctor_status_text(self, news: DoctorNews) -> None:
        """A progress line from the doctor's run, in the language shown: its ✅/⚠/❌ becomes a drawn
        mark beside the text."""
        verdict, text = strip_mark(messages.reason(news))
        self._doctor_status_note = None
        self._show_status_mark(verdict)
        self.doctor_status.setText(text)

    def _set_doctor_status(self, status: messages.Note) -> None:
        self._doctor_status_note = status
        self._show_status_mark(None)
        self.doctor_status.setText(status.text())
        self.doctor_settings_button.setVisible(status.source == NO_ENVIRONMENT_HINT)

    def _show_status_mark(self, verdict: str | None) -> None:
        if verdict is None:
            self.doctor_status_mark.hide()
            return
        side = self.doctor_status.fontMetrics().height()
        self.doctor_status_mark.setPixmap(mark_icon(verdict).pixmap(side, side))
        self.doctor_status_mark.show()

    def load_cached_doctor(self) -> None:
        try:
            from gputray.scheduler.client.doctor import cached_results

            self.show_doctor(cached_results())
        except Exception as exc:
            self._set_doctor_status(
                messages.note(tr_noop("Doctor results could not be read: {error}"), error=exc)
            )

    def show_doctor(self, pairs: list[Any], *, keep_status: bool = False) -> None:
        self._doctor_pairs = list(pairs)
        self.doctor_table.setRowCount(len(pairs))
        for row, p in enumerate(pairs):
            figures = ", ".join(f"{c.name} {c.figure()}" for c in p.capabilities)
            why = messages.reason(p.finding) + (f" — {messages.reason(p.remedy)}" if p.remedy else "")
            # "HIP_VISIBLE_DEVICES=0 ✓ Radeon 780M": how a job is pointed at the GPU, and what torch saw
            values = (p.env_name, p.device_name, tr(p.verdict), p.selected_by(), why, figures)
            for col, text in enumerate(values):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if col == DOCTOR_RESULT_COLUMN:
                    item.setIcon(
                        mark_icon(p.verdict)
                    )  # drawn: ✅/❌ need an emoji font (empty boxes without)
                self.doctor_table.setItem(row, col, item)
        fit_columns(self.doctor_table)
        if not pairs and not keep_status:
            self._set_doctor_status(messages.note(NO_ENVIRONMENT_HINT))
        self.doctor_button.setEnabled(self._doctor_thread is None or not self._doctor_thread.is_alive())

    def run_doctor(self) -> None:
        """Probe every env on every device in a worker thread (subprocesses; the app never imports torch)."""
        if self._doctor_thread is not None and self._doctor_thread.is_alive():
            return
        self.tabs.setCurrentIndex(2)
        self.doctor_button.setEnabled(False)
        self._set_doctor_status(messages.note(tr_noop("Running the doctor…")))
        devices = self.monitor.known_devices()

        def work() -> None:
            try:
                from gputray.scheduler.client.doctor import run_doctor
                from gputray.scheduler.client.settings import load_envs

                results = run_doctor(load_envs(), devices, progress=self.doctor_line.emit)
            except Exception as exc:
                self.doctor_done.emit([])
                self.doctor_note.emit(messages.note(tr_noop("The doctor failed: {error}"), error=exc))
                return
            # Nothing probed (no environment): the hint and its button stay, not "finished" over an
            # empty table (issue 33). The finish time is a Note: it follows a language switch.
            self.doctor_done.emit(results)
            if results:
                finished = tr_noop("Doctor finished at {time}")
                self.doctor_note.emit(messages.note(finished, time=time.strftime("%H:%M:%S")))

        self._doctor_thread = threading.Thread(target=work, name="gputray-doctor", daemon=True)
        self._doctor_thread.start()
