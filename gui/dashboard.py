"""The dashboard window: an hour of history per GPU (pyqtgraph, zoomable), processes, the doctor, logs.

pyqtgraph is imported only when this window is built, never at app start (it costs memory and time).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
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

from gputray.gui.i18n import tr, tr_noop
from gputray.gui.tray_icon import gpu_readings
from gputray.monitor.readings_text import link_text
from gputray.monitor.records import DeviceInfo, Snapshot
from gputray.monitor.units import GIB

METRICS: tuple[tuple[str, str, float], ...] = (
    ("util_percent", tr_noop("Utilisation %"), 1.0),
    ("temp_c", tr_noop("Temperature °C"), 1.0),
    ("power_w", tr_noop("Power W"), 1.0),
    ("vram_used_bytes", tr_noop("VRAM GiB"), 1.0 / GIB),
    ("shared_used_bytes", tr_noop("Shared GiB"), 1.0 / GIB),
)
COLORS = ("#43a047", "#e53935", "#1e88e5", "#8e24aa", "#fb8c00")


class MonitorLike(Protocol):
    @property
    def latest(self) -> Snapshot | None: ...

    def history(
        self, key: str, metric: str, since_s: float | None = None
    ) -> list[tuple[float, float | None]]: ...

    def known_devices(self) -> list[DeviceInfo]: ...


class Dashboard(QWidget):
    doctor_done = Signal(list)
    doctor_line = Signal(str)

    def __init__(
        self,
        monitor: MonitorLike,
        *,
        tasks: Callable[[], Sequence[dict[str, Any]]] | None = None,
        demo: bool = False,
    ) -> None:
        super().__init__(None)
        import pyqtgraph as pg

        self.monitor = monitor
        self.tasks = tasks or (lambda: [])
        self.setObjectName("gputrayDashboard")
        self.setWindowTitle("gputray " + tr("dashboard") + (" — " + tr("DEMO") if demo else ""))
        self.resize(900, 640)
        layout = QVBoxLayout(self)
        self.tabs = QTabWidget(self)
        layout.addWidget(self.tabs)

        # History
        pg.setConfigOptions(antialias=True, background="w", foreground="k")
        self.plots_widget = pg.GraphicsLayoutWidget()
        self.plots: dict[str, Any] = {}
        self.curves: dict[tuple[str, str], Any] = {}
        for i, (metric, label, _scale) in enumerate(METRICS):
            plot = self.plots_widget.addPlot(row=i, col=0)
            plot.setLabel("left", tr(label))
            plot.getAxis("left").enableAutoSIPrefix(False)
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setXRange(-10, 0, padding=0)  # the last 10 minutes; zoom or drag out to the hour
            plot.setLimits(xMin=-65, xMax=1)
            plot.setMouseEnabled(x=True, y=False)
            if i:
                plot.setXLink(self.plots[METRICS[0][0]])
            self.plots[metric] = plot
        self.plots[METRICS[-1][0]].setLabel("bottom", tr("minutes ago"))
        self.plots[METRICS[0][0]].addLegend(offset=(5, 5))
        self.tabs.addTab(self.plots_widget, tr("History"))

        # Processes
        self.proc_table = QTableWidget(0, 6, self)
        self.proc_table.setHorizontalHeaderLabels(
            [tr("PID"), tr("Process"), tr("Device"), tr("Kind"), tr("Memory GiB"), tr("Util %")]
        )
        self.proc_table.horizontalHeader().setStretchLastSection(True)
        self.tabs.addTab(self.proc_table, tr("Processes"))

        # Doctor
        doctor = QWidget(self)
        dl = QVBoxLayout(doctor)
        top = QHBoxLayout()
        self.doctor_status = QLabel(tr("Cached results; run the doctor to probe again."), doctor)
        self.doctor_button = QPushButton(tr("Run doctor"), doctor)
        self.doctor_button.clicked.connect(self.run_doctor)
        top.addWidget(self.doctor_status, 1)
        top.addWidget(self.doctor_button)
        dl.addLayout(top)
        self.doctor_table = QTableWidget(0, 5, doctor)
        self.doctor_table.setHorizontalHeaderLabels(
            [tr("Environment"), tr("Device"), tr("Result"), tr("Reason / fix"), tr("Figures")]
        )
        self.doctor_table.horizontalHeader().setStretchLastSection(True)
        dl.addWidget(self.doctor_table)
        self.tabs.addTab(doctor, tr("Doctor"))
        self.doctor_done.connect(self.show_doctor)
        self.doctor_line.connect(self.doctor_status.setText)
        self._doctor_thread: threading.Thread | None = None

        # Logs
        logs = QWidget(self)
        ll = QHBoxLayout(logs)
        self.task_list = QListWidget(logs)
        self.task_list.setMaximumWidth(280)
        self.task_list.currentItemChanged.connect(self._show_log)
        self.log_view = QPlainTextEdit(logs)
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        ll.addWidget(self.task_list)
        ll.addWidget(self.log_view, 1)
        self.tabs.addTab(logs, tr("Task logs"))

        # Devices: what eGPU users check (link, fan, power limit, memory clock, video engines)
        self.device_table = QTableWidget(0, 7, self)
        self.device_table.setHorizontalHeaderLabels(
            [tr("Device"), tr("PCIe link"), tr("Fan"), tr("Power limit"), tr("Memory clock"),
             tr("Encoder"), tr("Decoder")]
        )  # fmt: skip
        self.device_table.horizontalHeader().setStretchLastSection(True)
        self.tabs.addTab(self.device_table, tr("Devices"))

        self.timer = QTimer(self)
        self.timer.setInterval(2000)
        self.timer.timeout.connect(self.refresh)
        self.load_cached_doctor()
        self.refresh()

    # -- refreshing while visible ----------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:
        self.timer.start()
        self.refresh()
        super().showEvent(event)

    def hideEvent(self, event: Any) -> None:
        self.timer.stop()
        super().hideEvent(event)

    def refresh(self) -> None:
        snap = self.monitor.latest
        if snap is None:
            return
        now = snap.timestamp_s
        for n, r in enumerate(gpu_readings(snap)):
            for metric, _label, scale in METRICS:
                series = self.monitor.history(r.info.key, metric, now - 3600.0)
                xs = [(t - now) / 60.0 for t, v in series if v is not None]
                ys = [v * scale for _t, v in series if v is not None]
                curve = self.curves.get((r.info.key, metric))
                if curve is None:
                    import pyqtgraph as pg

                    pen = pg.mkPen(COLORS[n % len(COLORS)], width=1.5)
                    legend = r.info.name if metric == "util_percent" else None
                    curve = self.plots[metric].plot([], [], pen=pen, name=legend)
                    self.curves[(r.info.key, metric)] = curve
                curve.setData(xs, ys)
        self._fill_devices(snap)
        self._fill_processes(snap)
        self._fill_tasks()

    def _fill_devices(self, snap: Snapshot) -> None:
        readings = gpu_readings(snap)
        self.device_table.setRowCount(len(readings))

        def pct(value: float | None) -> str:
            return "–" if value is None else f"{value:.0f} %"

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
                link_text(partial(getattr, s)) or "–",
                fan or "–",
                "–" if s.power_limit_w is None else f"{s.power_limit_w:.0f} W",
                "–" if s.mclk_mhz is None else f"{s.mclk_mhz} MHz",
                pct(s.encoder_percent),
                pct(s.decoder_percent),
            )
            for col, text in enumerate(values):
                self.device_table.setItem(row, col, QTableWidgetItem(text))

    def _fill_processes(self, snap: Snapshot) -> None:
        names = {r.info.key: r.info.name for r in snap.readings}
        procs = sorted(snap.processes, key=lambda p: (p.device, -(p.vram_bytes or 0)))
        self.proc_table.setRowCount(len(procs))
        for row, p in enumerate(procs):
            mem = (p.vram_bytes or 0) + (p.shared_bytes or 0)
            values = (
                str(p.pid),
                p.name,
                names.get(p.device, p.device),
                p.kind,
                f"{mem / GIB:.2f}",
                "–" if p.util_percent is None else f"{p.util_percent:.0f}",
            )
            for col, text in enumerate(values):
                self.proc_table.setItem(row, col, QTableWidgetItem(text))

    def _fill_tasks(self) -> None:
        tasks = [t for t in self.tasks() if t.get("log_path")][-200:]
        current = self.task_list.currentItem()
        current_id = current.data(256) if current else None
        if [self.task_list.item(i).data(256) for i in range(self.task_list.count())] == [
            t.get("id") for t in tasks
        ]:
            if current is not None:
                self._show_log(current, None)
            return
        self.task_list.clear()
        for t in tasks:
            item = QListWidgetItem(f"#{t.get('id')} {t.get('name')} — {t.get('state')}")
            item.setData(256, t.get("id"))
            item.setData(257, t.get("log_path"))
            self.task_list.addItem(item)
            if t.get("id") == current_id:
                self.task_list.setCurrentItem(item)

    def _show_log(self, item: QListWidgetItem | None, _previous: object) -> None:
        if item is None:
            return
        path = Path(str(item.data(257)))
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
            if self.task_list.item(i).data(257) == log_path:
                self.task_list.setCurrentRow(i)
                return

    # -- doctor ----------------------------------------------------------------------------------------
    def load_cached_doctor(self) -> None:
        try:
            from gputray.scheduler.doctor import cached_results

            self.show_doctor(cached_results())
        except Exception as exc:
            self.doctor_status.setText(tr("Doctor results could not be read: {error}").format(error=exc))

    def show_doctor(self, pairs: list[Any]) -> None:
        from gputray.scheduler.doctor import verdict_mark

        self.doctor_table.setRowCount(len(pairs))
        for row, p in enumerate(pairs):
            figures = ", ".join(f"{c.name} {c.figure()}" for c in p.capabilities)
            why = p.reason + (f" — {p.fix}" if p.fix else "")
            values = (p.env_name, p.device_name, f"{verdict_mark(p.verdict)} {p.verdict}", why, figures)
            for col, text in enumerate(values):
                self.doctor_table.setItem(row, col, QTableWidgetItem(text))
        if not pairs:
            self.doctor_status.setText(tr("No doctor results yet: add a Python environment in Settings."))
        self.doctor_button.setEnabled(True)

    def run_doctor(self) -> None:
        """Probe every env on every device in a worker thread (subprocesses; the app never imports torch)."""
        if self._doctor_thread is not None and self._doctor_thread.is_alive():
            return
        self.tabs.setCurrentIndex(2)
        self.doctor_button.setEnabled(False)
        self.doctor_status.setText(tr("Running the doctor…"))
        devices = self.monitor.known_devices()

        def work() -> None:
            try:
                from gputray.scheduler.doctor import run_doctor
                from gputray.scheduler.envs import load_envs

                results = run_doctor(load_envs(), devices, progress=self.doctor_line.emit)
            except Exception as exc:
                self.doctor_line.emit(tr("The doctor failed: {error}").format(error=exc))
                results = []
            self.doctor_done.emit(results)
            self.doctor_line.emit(tr("Doctor finished at {time}").format(time=time.strftime("%H:%M:%S")))

        self._doctor_thread = threading.Thread(target=work, name="gputray-doctor", daemon=True)
        self._doctor_thread.start()
