"""One GPU in the panel: its primary figures whole, its other readings on a line that may elide.

::

    ▌GeForce RTX 5060 Ti            42 %  ·  61 °C  ·  95 W  [Pause]
     VRAM 14.2 / 16.0 GiB    shared –
     jobs 0/1  ·  PCIe 4.0 ×4 of 5.0 ×8  ·  fan 31 % 1180 RPM  ·  limit 180 W …
     ▁▂▃▅▇ (five minutes of load)
     busy: llama-server uses 14.2 GiB, 97 %
     llama-server (4242) 14.2 GiB 97%
     ComfyUI                        holds 9.8 GiB · idle 14 min   (one line per resident, if any)

The load, temperature, power, VRAM used/total and shared used/total are :class:`FigureLabel` s: they
reserve their width (the panel takes its width from them) and are never elided, in any language.
The name, the readings line (PCIe link, fan, power limit, clocks, or why the GPU cannot be read),
"busy" and the processes elide, with the whole text in their tooltip. Every card has the same lines
whatever its GPU does, so it keeps its height and the queue below never moves; only a resident (an LLM
server, ComfyUI: ``resident_rows``) adds a line while it runs, its figures whole. A GPU an exclusive app
(a game) has taken says so on the "busy" line: "taken by cs2: gputray's jobs here are paused".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QContextMenuEvent, QFont
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gputray.gui import messages
from gputray.gui.i18n import tr
from gputray.gui.legend import LegendEntry
from gputray.gui.resident_rows import ResidentRows
from gputray.gui.resident_text import taken_text
from gputray.gui.sparkline import Sparkline
from gputray.gui.theme import colors, follow_change, is_dark
from gputray.gui.widgets import ElidedLabel, FigureLabel, Swatch
from gputray.monitor.busy_why import BusyWhy
from gputray.monitor.readings_text import sample_extras
from gputray.monitor.records import DeviceReading, ProcessUse
from gputray.monitor.residents import ResidentView
from gputray.monitor.units import GIB

log = logging.getLogger("gputray.gui")

FIGURES_TEMPLATE = "100 %  ·  100 °C  ·  888 W"
SEPARATOR = "  ·  "


def fmt_gib(used: int | None, total: int | None) -> str:
    if used is None and total is None:
        return "–"
    u = "–" if used is None else f"{used / GIB:.1f}"
    t = "–" if total is None else f"{total / GIB:.1f}"
    return f"{u} / {t} GiB"


def device_metrics_line(r: DeviceReading) -> str:
    """Load, temperature and power; the state's word when the GPU cannot be read."""
    s = r.sample
    if s.state == "lost":
        return tr("lost")
    if s.state == "asleep":
        return tr("asleep")
    if s.state == "unavailable":
        return tr("unavailable")
    util = "–" if s.util_percent is None else f"{s.util_percent:.0f} %"
    temp = "–" if s.temp_c is None else f"{s.temp_c:.0f} °C"
    power = "–" if s.power_w is None else f"{s.power_w:.0f} W"
    return f"{util}{SEPARATOR}{temp}{SEPARATOR}{power}"


def state_line(r: DeviceReading) -> str:
    """Why a GPU shows no figures (lost, asleep, unavailable); empty while it reads fine."""
    s = r.sample
    if s.state == "asleep":
        return tr("asleep (not woken to read it)")
    return messages.device_gone(s.state, s.reason)


def memory_totals(r: DeviceReading) -> tuple[int | None, int | None]:
    s = r.sample
    vram_total = s.vram_total_bytes if s.vram_total_bytes is not None else r.info.vram_total_bytes
    shared_total = s.shared_total_bytes if s.shared_total_bytes is not None else r.info.shared_total_bytes
    return vram_total, shared_total


def vram_line(r: DeviceReading) -> tuple[str, str]:
    """``VRAM 14.2 / 16.0 GiB`` and its widest form (used as large as the total)."""
    total, _ = memory_totals(r)
    return (
        tr("VRAM {memory}").format(memory=fmt_gib(r.sample.vram_used_bytes, total)),
        tr("VRAM {memory}").format(memory=fmt_gib(total, total)),
    )


def shared_line(r: DeviceReading) -> tuple[str, str]:
    """``shared 3.0 / 29.0 GiB`` (the iGPU's GTT; "shared –" where the GPU reports none), widest form."""
    _, total = memory_totals(r)
    return (
        tr("shared {memory}").format(memory=fmt_gib(r.sample.shared_used_bytes, total)),
        tr("shared {memory}").format(memory=fmt_gib(total, total)),
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


def secondary_style() -> str:
    return f"color: {colors().secondary_text}"


def fixed_button_width(button: QPushButton | QToolButton, texts: Sequence[str]) -> None:
    """A button as wide as its widest text: it keeps its width when its text toggles."""
    current = button.text()
    width = 0
    for t in texts:
        button.setText(t)
        width = max(width, button.sizeHint().width())
    button.setText(current)
    button.setFixedWidth(width)


class DeviceCard(QFrame):
    """One GPU (see the module's docstring). Always the same height."""

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
        # 1: name, load · temperature · power, pause
        top = QHBoxLayout()
        top.setSpacing(6)
        self.swatch = Swatch(self)
        self.name_label = ElidedLabel("", self)
        bold = QFont(self.name_label.font())
        bold.setBold(True)
        self.name_label.setFont(bold)
        self.metrics_label = FigureLabel(self, templates=(FIGURES_TEMPLATE,))
        self.metrics_label.setObjectName("gpuFigures")
        self.metrics_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.pause_button = QToolButton(self)
        self.pause_button.setCheckable(True)
        self.pause_button.toggled.connect(self._on_pause)
        top.addWidget(self.swatch)
        top.addWidget(self.name_label, 1)
        top.addWidget(self.metrics_label)
        top.addWidget(self.pause_button)
        layout.addLayout(top)
        # 2: VRAM and shared memory, used / total
        memory_row = QHBoxLayout()
        memory_row.setSpacing(18)
        self.vram_label = FigureLabel(self)
        self.vram_label.setObjectName("gpuVram")
        self.shared_label = FigureLabel(self)
        self.shared_label.setObjectName("gpuShared")
        memory_row.addWidget(self.vram_label)
        memory_row.addWidget(self.shared_label)
        memory_row.addStretch(1)
        layout.addLayout(memory_row)
        # 3: jobs here, then the other readings (PCIe link, fan, limit, clocks) or why there are none
        details_row = QHBoxLayout()
        details_row.setSpacing(0)
        self.jobs_label = QLabel(self)
        self.jobs_label.setObjectName("gpuJobs")
        self.jobs_label.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        self.extras_label = ElidedLabel("", self)
        self.extras_label.setObjectName("gpuReadings")
        details_row.addWidget(self.jobs_label)
        details_row.addWidget(self.extras_label, 1)
        layout.addLayout(details_row)
        self.sparkline = Sparkline(self)
        layout.addWidget(self.sparkline)
        self.busy_label = ElidedLabel("", self)
        layout.addWidget(self.busy_label)
        self.processes_label = ElidedLabel("", self)
        layout.addWidget(self.processes_label)
        self.resident_rows = ResidentRows(self)
        layout.addWidget(self.resident_rows)
        self._taken_by: str | None = None  # the exclusive app using this GPU: our jobs here are paused
        self._reading: DeviceReading | None = None
        self._entry: LegendEntry | None = None
        self._processes: tuple[ProcessUse, ...] = ()
        self._busy: tuple[BusyWhy, ...] = ()
        self._hot = False
        self._dark: bool | None = None
        self._jobs: tuple[int, int] | None = None  # (running, slots), from the queue
        self.retranslate()
        self.restyle()

    # -- language and colours --------------------------------------------------------------------------
    def retranslate(self) -> None:
        self.pause_button.setToolTip(tr("Pause or resume the queue on this device"))
        fixed_button_width(self.pause_button, (tr("Pause"), tr("Resume")))
        self.pause_button.setText(tr("Resume") if self.pause_button.isChecked() else tr("Pause"))
        self.metrics_label.set_figures(self.metrics_label.text(), tr("lost"), tr("asleep"), tr("unavailable"))
        self.processes_label.set_own_tooltip(tr("Right-click to stop a process of yours"))
        self.jobs_label.setToolTip(tr("Jobs running / slots (config: [devices.<name>] slots = N)"))
        self._render_jobs()
        self._render()
        self.resident_rows.retranslate()

    def restyle(self) -> None:
        dark = is_dark()
        if dark == self._dark:
            return
        self._dark = dark
        for label in (self.busy_label, self.processes_label, self.extras_label, self.jobs_label):
            label.setStyleSheet(secondary_style())
        self.sparkline.update()
        self._render()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        follow_change(event, self.retranslate, self.restyle)

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
        jobs = tr("jobs {running}/{slots}").format(running=running, slots=slots)
        self.jobs_label.setText(jobs + (SEPARATOR if self.extras_label.text() else ""))

    # -- data ------------------------------------------------------------------------------------------
    def update_reading(
        self,
        r: DeviceReading,
        processes: Sequence[ProcessUse],
        busy_reasons: Sequence[BusyWhy],
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
        self.metrics_label.set_figures(device_metrics_line(r))
        hot_style = f"color: {colors().hot_text}; font-weight: bold" if self._hot else ""
        if self.metrics_label.styleSheet() != hot_style:  # setStyleSheet re-polishes even when unchanged
            self.metrics_label.setStyleSheet(hot_style)
        self.vram_label.set_figures(*vram_line(r))
        self.shared_label.set_figures(*shared_line(r))
        words = messages.reading_words()
        ok = r.sample.state == "ok"
        details = sample_extras(r.sample, compact=True, words=words) if ok else state_line(r)
        self.extras_label.setText(details)
        long_form = sample_extras(r.sample, words=words) if ok else ""
        self.extras_label.set_own_tooltip(long_form, says_the_line=ok)
        self._render_jobs()
        busy = messages.reasons(self._busy)
        busy_text = tr("busy: {reasons}").format(reasons=busy) if busy else self._not_busy_text()
        if self._taken_by is not None:
            taken = taken_text(self._taken_by) + ": " + tr("gputray's jobs here are paused")
            self.busy_label.setText(taken)
            self.busy_label.set_own_tooltip(taken + "\n" + busy_text)
        else:
            self.busy_label.setText(busy_text)
            self.busy_label.set_own_tooltip("")
        notice = f"color: {colors().notice_text}; font-weight: bold" if self._taken_by else secondary_style()
        if self.busy_label.styleSheet() != notice:
            self.busy_label.setStyleSheet(notice)
        self.processes_label.setText(processes_line(self._processes))
        if self._processes:
            full = "\n".join(process_text(p) for p in by_memory(self._processes))
            self.processes_label.set_own_tooltip(full + "\n" + tr("Right-click to stop a process of yours"))
        else:
            self.processes_label.set_own_tooltip("")

    def _not_busy_text(self) -> str:
        """Not busy by the monitor's verdict; with residents on the lines below holding memory, "not in use
        by other programs" read as false (it said so above "ComfyUI holds 3.5 GiB · idle 16 s")."""
        if self.resident_rows.residents:
            return tr("other programs hold memory here, computing little")
        return tr("not in use by other programs")

    def set_room(self, residents: Sequence[ResidentView], taken_by: str | None, now_s: float) -> bool:
        """The residents holding memory here and the exclusive app that took this GPU (None: none);
        True when the card's number of lines changed (the panel refits)."""
        name = self._reading.info.name if self._reading is not None else self.key
        if taken_by != self._taken_by:
            log.info("card %s: %s", name, f"taken by {taken_by}" if taken_by else "given back")
        self._taken_by = taken_by
        changed = self.resident_rows.show_residents(residents, now_s, name)
        self._render()
        layout = self.layout()
        if changed and layout is not None:  # its height now, not at the next event: the panel refits to it
            layout.invalidate()
            layout.activate()
        return changed

    def taken_by(self) -> str | None:
        return self._taken_by

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
