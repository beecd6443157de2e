"""The live tray icon: one bar per GPU, drawn by a QIconEngine, re-set only when the picture changes.

The picture is a small frozen value (load quantised to tenths, hot, state, jobs waiting, demo): the icon
is replaced only when that value changes, and the tooltip only every ``tooltip_every_s`` or when
something a person would care about changes (a GPU got hot, lost, came back; jobs started waiting).
Frequent tooltip/icon updates flicker on KDE and time out on Windows after days.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QIconEngine, QPainter, QPainterPath, QPixmap
from PySide6.QtWidgets import QSystemTrayIcon

from gputray.gui.i18n import tr

if TYPE_CHECKING:  # records are only read here; not importing them keeps the first icon quick
    from gputray.monitor.records import DeviceReading, Snapshot

LOAD_LEVELS = 10


@dataclass(frozen=True)
class GpuBar:
    load_level: int  # 0..LOAD_LEVELS
    hot: bool = False
    state: str = "ok"


@dataclass(frozen=True)
class TrayPicture:
    bars: tuple[GpuBar, ...]
    waiting: bool = False
    demo: bool = False


def gpu_readings(snapshot: Snapshot) -> list[DeviceReading]:
    return [r for r in snapshot.readings if r.info.kind != "cpu" and r.info.key != "cpu"]


def is_hot(snapshot: Snapshot, reading: DeviceReading) -> bool:
    """The monitor's judgement (its configured limits, with hysteresis), so icon, panel and queue agree."""
    verdict = snapshot.verdict(reading.info.key)
    return verdict is not None and verdict.hot


def picture_for(
    snapshot: Snapshot | None,
    *,
    waiting: int,
    demo: bool,
) -> TrayPicture:
    if snapshot is None:
        return TrayPicture((), waiting > 0, demo)
    bars = []
    for r in gpu_readings(snapshot):
        util = r.sample.util_percent
        level = 0 if util is None else round(min(max(util, 0.0), 100.0) / 100.0 * LOAD_LEVELS)
        bars.append(GpuBar(level, is_hot(snapshot, r), r.sample.state))
    return TrayPicture(tuple(bars), waiting > 0, demo)


def short_name(name: str) -> str:
    for prefix in ("NVIDIA ", "GeForce ", "AMD ", "Radeon(TM) ", "Intel(R) "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def summary_line(snapshot: Snapshot | None, *, waiting: int, running: int, demo: bool) -> str:
    """The one-line tooltip: ``DEMO · RTX 5060 Ti 42% 61°C · Radeon 780M 3% 45°C · 1 running, 2 waiting``."""
    parts: list[str] = []
    if demo:
        parts.append(tr("DEMO"))
    if snapshot is None:
        parts.append(tr("starting…"))
    else:
        gpus = gpu_readings(snapshot)
        if not gpus:
            parts.append(tr("no GPU found"))
        for r in gpus:
            s = r.sample
            name = short_name(r.info.name)
            if s.state == "lost":
                parts.append(f"{name} {tr('lost')}")
            elif s.state == "asleep":
                parts.append(f"{name} {tr('asleep')}")
            else:
                util = "–" if s.util_percent is None else f"{s.util_percent:.0f}%"
                temp = "" if s.temp_c is None else f" {s.temp_c:.0f}°C"
                parts.append(f"{name} {util}{temp}")
    parts.append(tr("{running} running, {waiting} waiting").format(running=running, waiting=waiting))
    return "gputray · " + " · ".join(parts)


class GpuIconEngine(QIconEngine):
    """Draws a TrayPicture at any size: a bar per GPU, red when hot, grey when lost or asleep."""

    def __init__(self, picture: TrayPicture) -> None:
        super().__init__()
        self.picture = picture

    def clone(self) -> QIconEngine:
        return GpuIconEngine(self.picture)

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        draw_picture(painter, QRectF(rect), self.picture)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        pm = QPixmap(size)
        pm.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pm)
        self.paint(painter, QRect(QPoint(0, 0), size), mode, state)
        painter.end()
        return pm


COLOR_OK = QColor("#43a047")
COLOR_BUSY = QColor("#fb8c00")
COLOR_HOT = QColor("#e53935")
COLOR_OFF = QColor("#9e9e9e")
COLOR_FRAME = QColor("#263238")
COLOR_WAIT = QColor("#1e88e5")
COLOR_DEMO = QColor("#8e24aa")


def draw_picture(painter: QPainter, rect: QRectF, picture: TrayPicture) -> None:
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    size = min(rect.width(), rect.height())
    pad = max(1.0, size * 0.06)
    inner = QRectF(rect.x() + pad, rect.y() + pad, rect.width() - 2 * pad, rect.height() - 2 * pad)
    bars = picture.bars or (GpuBar(0, False, "none"),)
    n = len(bars)
    gap = max(1.0, inner.width() * 0.08)
    bar_w = (inner.width() - gap * (n - 1)) / n
    for i, bar in enumerate(bars):
        x = inner.x() + i * (bar_w + gap)
        frame = QRectF(x, inner.y(), bar_w, inner.height())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(255, 255, 255, 200))
        painter.drawRoundedRect(frame, 1.5, 1.5)
        if bar.state in ("lost", "unavailable", "none"):
            color = COLOR_OFF
            level = LOAD_LEVELS if bar.state == "lost" else 0
        elif bar.state == "asleep":
            color, level = COLOR_OFF, 1
        else:
            color = COLOR_HOT if bar.hot else (COLOR_BUSY if bar.load_level >= 8 else COLOR_OK)
            level = max(bar.load_level, 1)
        fill_h = frame.height() * level / LOAD_LEVELS
        painter.setBrush(color)
        painter.drawRect(QRectF(frame.x(), frame.bottom() - fill_h, frame.width(), fill_h))
        if bar.hot:
            painter.setBrush(QColor(229, 57, 53, 90))
            painter.drawRect(frame)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(COLOR_FRAME)
        painter.drawRoundedRect(frame, 1.5, 1.5)
        if bar.state == "lost":
            painter.setPen(QColor("#b71c1c"))
            painter.drawLine(frame.topLeft(), frame.bottomRight())
            painter.drawLine(frame.topRight(), frame.bottomLeft())
    if picture.waiting:
        d = size * 0.38
        painter.setPen(QColor("white"))
        painter.setBrush(COLOR_WAIT)
        painter.drawEllipse(QRectF(rect.right() - d, rect.y(), d, d))
    if picture.demo:
        t = size * 0.42
        tri = QPainterPath()
        tri.moveTo(rect.x(), rect.bottom())
        tri.lineTo(rect.x() + t, rect.bottom())
        tri.lineTo(rect.x(), rect.bottom() - t)
        tri.closeSubpath()
        painter.setPen(Qt.PenStyle.NoPen)
        painter.fillPath(tri, COLOR_DEMO)
    painter.restore()


def make_icon(picture: TrayPicture) -> QIcon:
    return QIcon(GpuIconEngine(picture))


class TrayIconController(QObject):
    """Owns the QSystemTrayIcon's picture and tooltip; counts how often it really touched them."""

    def __init__(
        self,
        tray: QSystemTrayIcon,
        *,
        tooltip_every_s: float = 10.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(tray)
        import time

        self.tray = tray
        self.tooltip_every_s = tooltip_every_s
        self._clock = clock or time.monotonic
        self.picture: TrayPicture | None = None
        self.icon_sets = 0
        self.tooltip_sets = 0
        self._tooltip_at = float("-inf")
        self._tooltip_key: tuple[object, ...] | None = None
        self.tooltip = ""

    def update(self, picture: TrayPicture, tooltip: str) -> None:
        if picture != self.picture:
            self.picture = picture
            self.tray.setIcon(make_icon(picture))
            self.icon_sets += 1
        # Big change: any device state or hot flag, or the waiting mark, or the demo flag.
        key = (tuple((b.state, b.hot) for b in picture.bars), picture.waiting, picture.demo)
        now = self._clock()
        due = now - self._tooltip_at >= self.tooltip_every_s
        if tooltip != self.tooltip and (key != self._tooltip_key or due):
            self.tray.setToolTip(tooltip)
            self.tooltip = tooltip
            self.tooltip_sets += 1
            self._tooltip_at = now
            self._tooltip_key = key
