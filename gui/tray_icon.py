"""The live tray icon: one bar per GPU, drawn by a QIconEngine, re-set only when the picture changes.

Each bar is a GPU in the legend's order and colour (``gui/legend.py``: NVIDIA green, AMD red, Intel
blue, left to right by PCI address); its bright part is the load, its dark part the same colour
dimmed, so a GPU at 0 % is still recognisable. A hot GPU's empty part and rim turn amber, a lost one is grey
with a cross. A GPU an exclusive app (a game) took is dimmed whole with a white pause mark (our jobs
there are paused). A white dot says jobs wait; a purple plate (instead of slate) says demo. Everything is
drawn on whole device pixels without antialiasing, at the size and scale the tray asks for
(``scaledPixmap``), so it stays crisp at 16, 22, 24, 32 px and at 2×.

The picture is a small frozen value (load quantised to tenths, hot, state, colour, jobs waiting,
demo): the icon is replaced only when that value changes, and the tooltip only every
``tooltip_every_s`` or when something a person would care about changes (a GPU got hot, lost, came
back; jobs started waiting). Frequent tooltip/icon updates flicker on KDE and time out on Windows
after days.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QRect, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QIconEngine, QImage, QPainter, QPixmap
from PySide6.QtWidgets import QSystemTrayIcon

from gputray.gui.i18n import tr
from gputray.gui.legend import gpu_readings, legend_for, short_name

if TYPE_CHECKING:  # records are only read here; not importing them keeps the first icon quick
    from gputray.monitor.records import DeviceReading, Snapshot

__all__ = ["gpu_readings", "short_name"]

LOAD_LEVELS = 10


@dataclass(frozen=True)
class GpuBar:
    load_level: int  # 0..LOAD_LEVELS
    hot: bool = False
    state: str = "ok"
    color: str = "#9e9e9e"  # the legend's colour for this GPU
    taken: bool = False  # an exclusive app (a game) uses it: our jobs there are paused


@dataclass(frozen=True)
class TrayPicture:
    bars: tuple[GpuBar, ...]
    waiting: bool = False
    demo: bool = False


def is_hot(snapshot: Snapshot, reading: DeviceReading) -> bool:
    """The monitor's judgement (its configured limits, with hysteresis), so icon, panel and queue agree."""
    verdict = snapshot.verdict(reading.info.key)
    return verdict is not None and verdict.hot


def picture_for(
    snapshot: Snapshot | None,
    *,
    waiting: int,
    demo: bool,
    taken: Mapping[str, str] | None = None,
) -> TrayPicture:
    """``taken``: device key → the exclusive app that took it (the owner's ``room``)."""
    if snapshot is None:
        return TrayPicture((), waiting > 0, demo)
    taken = taken or {}
    gpus = gpu_readings(snapshot)
    bars = []
    for r, entry in zip(gpus, legend_for(gpus), strict=True):
        util = r.sample.util_percent
        level = 0 if util is None else round(min(max(util, 0.0), 100.0) / 100.0 * LOAD_LEVELS)
        bars.append(GpuBar(level, is_hot(snapshot, r), r.sample.state, entry.color, r.info.key in taken))
    return TrayPicture(tuple(bars), waiting > 0, demo)


def summary_line(
    snapshot: Snapshot | None,
    *,
    waiting: int,
    running: int,
    demo: bool,
    taken: Mapping[str, str] | None = None,
    paused: int = 0,
) -> str:
    """The tooltip, with the icon's legend:
    ``gputray · DEMO · green: RTX 5060 Ti 42% 61°C · red: Radeon 780M 3% 45°C · 1 running, 2 waiting``;
    a GPU an exclusive app took: ``green: RTX 5060 Ti taken by cs2 …``."""
    from gputray.gui.resident_text import taken_text

    taken = taken or {}
    parts: list[str] = []
    if demo:
        parts.append(tr("DEMO"))
    if snapshot is None:
        parts.append(tr("starting…"))
    else:
        gpus = gpu_readings(snapshot)
        if not gpus:
            parts.append(tr("no GPU found"))
        for r, entry in zip(gpus, legend_for(gpus), strict=True):
            s = r.sample
            label = entry.label()
            if s.state == "lost":
                parts.append(f"{label} {tr('lost')}")
            elif s.state == "asleep":
                parts.append(f"{label} {tr('asleep')}")
            else:
                util = "–" if s.util_percent is None else f"{s.util_percent:.0f}%"
                temp = "" if s.temp_c is None else f" {s.temp_c:.0f}°C"
                hot = f" {tr('hot')}" if is_hot(snapshot, r) else ""
                app = taken.get(r.info.key)
                by = f" {taken_text(app)}" if app is not None else ""
                parts.append(f"{label}{by} {util}{temp}{hot}")
    if paused:  # jobs paused (for a game, a higher priority, by you) are not running
        counts = tr("{running} running, {paused} paused, {waiting} waiting")
    else:
        counts = tr("{running} running, {waiting} waiting")
    parts.append(counts.format(running=running, paused=paused, waiting=waiting))
    return "gputray · " + " · ".join(parts)


COLOR_PLATE = QColor("#263238")
COLOR_DEMO = QColor("#6a1b9a")
COLOR_HOT = QColor("#ffab00")  # amber: the AMD bar is red already
COLOR_OFF = QColor("#9e9e9e")
COLOR_CROSS = QColor("#ffffff")
COLOR_WAIT = QColor("#ffffff")
COLOR_WAIT_RING = QColor("#102027")
COLOR_EMPTY = QColor("#546e7a")  # the placeholder bar before the first sample


def dimmed(color: QColor) -> QColor:
    """The empty part of a bar: the GPU's colour, darkened, still telling green from red from blue."""
    return QColor.fromRgbF(color.redF() * 0.45, color.greenF() * 0.45, color.blueF() * 0.45)


@dataclass(frozen=True)
class BarGeometry:
    """Where bar ``i`` lies on a ``size``×``size`` device-pixel canvas (whole pixels only)."""

    pad: int
    gap: int
    width: int
    height: int
    left: int  # x of the first bar

    @classmethod
    def for_size(cls, size: int, bars: int) -> BarGeometry:
        pad = max(1, round(size * 0.0625))
        gap = max(1, round(size * 0.08))
        inner = size - 2 * pad
        bars = max(1, bars)
        width = max(1, (inner - gap * (bars - 1)) // bars)
        used = width * bars + gap * (bars - 1)
        return cls(pad, gap, width, inner, pad + max(0, (inner - used) // 2))

    def rect(self, i: int) -> QRect:
        return QRect(self.left + i * (self.width + self.gap), self.pad, self.width, self.height)


def render_picture(picture: TrayPicture, size: int) -> QImage:
    """The icon as a ``size``×``size`` image in device pixels, without antialiasing."""
    img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
    p.setPen(Qt.PenStyle.NoPen)
    plate = COLOR_DEMO if picture.demo else COLOR_PLATE
    cut = 1 if size < 24 else 2  # rounded look without antialiasing: the corner pixels stay clear
    p.fillRect(QRect(cut, 0, size - 2 * cut, size), plate)
    p.fillRect(QRect(0, cut, size, size - 2 * cut), plate)
    bars = picture.bars or (GpuBar(0, False, "none", COLOR_EMPTY.name()),)
    geo = BarGeometry.for_size(size, len(bars))
    for i, bar in enumerate(bars):
        frame = geo.rect(i)
        color = QColor(bar.color)
        if bar.state in ("lost", "unavailable"):
            p.fillRect(frame, COLOR_OFF)
            if bar.state == "lost":
                p.setPen(COLOR_CROSS)
                p.drawLine(frame.topLeft(), frame.bottomRight())
                p.drawLine(frame.topRight(), frame.bottomLeft())
                p.setPen(Qt.PenStyle.NoPen)
            continue
        p.fillRect(frame, COLOR_HOT if bar.hot else dimmed(color))
        if bar.state in ("none", "asleep"):
            continue
        if bar.taken:  # a game has it: no load drawn, a pause mark (two white strokes) instead
            stroke = max(1, frame.width() // 4)
            tall = max(2, frame.height() // 2)
            top = frame.y() + (frame.height() - tall) // 2
            for x in (frame.x(), frame.right() + 1 - stroke):
                p.fillRect(QRect(x, top, stroke, tall), COLOR_CROSS)
            continue
        fill = round(frame.height() * bar.load_level / LOAD_LEVELS)
        if fill > 0:
            p.fillRect(QRect(frame.x(), frame.bottom() + 1 - fill, frame.width(), fill), color)
        if bar.hot:  # an amber rim too, so a hot GPU at full load still shows it
            rim = max(1, size // 16)
            for edge in (
                QRect(frame.x(), frame.y(), frame.width(), rim),
                QRect(frame.x(), frame.bottom() + 1 - rim, frame.width(), rim),
                QRect(frame.x(), frame.y(), rim, frame.height()),
                QRect(frame.right() + 1 - rim, frame.y(), rim, frame.height()),
            ):
                p.fillRect(edge, COLOR_HOT)
    if picture.waiting:
        d = max(4, round(size * 0.34)) | 1  # odd: a centred pixel circle
        ring = QRect(size - d, 0, d, d)
        p.setBrush(COLOR_WAIT_RING)
        p.drawEllipse(ring)
        p.setBrush(COLOR_WAIT)
        p.drawEllipse(ring.adjusted(1, 1, -1, -1))
    p.end()
    return img


class GpuIconEngine(QIconEngine):
    """Draws a TrayPicture at any size and device pixel ratio (see :func:`render_picture`)."""

    def __init__(self, picture: TrayPicture) -> None:
        super().__init__()
        self.picture = picture

    def clone(self) -> QIconEngine:
        return GpuIconEngine(self.picture)

    def actualSize(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QSize:
        """The picture is square: QIcon.paint centres this size in the slot it is given."""
        side = min(size.width(), size.height())
        return QSize(side, side)

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        """The square picture in the middle of ``rect``: a tray slot is often taller than wide (trayer
        gives 22×30), and drawn at its top-left the icon sat at the top of the panel (issue 21)."""
        device = painter.device()
        dpr = device.devicePixelRatioF() if device is not None else 1.0
        side = min(rect.width(), rect.height())
        img = render_picture(self.picture, max(1, round(side * dpr)))
        img.setDevicePixelRatio(dpr)
        square = QRect(0, 0, side, side)
        square.moveCenter(rect.center())
        painter.drawImage(square, img)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return self.scaledPixmap(size, mode, state, 1.0)

    def scaledPixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State, scale: float) -> QPixmap:
        side = max(1, round(min(size.width(), size.height()) * scale))
        pm = QPixmap.fromImage(render_picture(self.picture, side))
        pm.setDevicePixelRatio(scale)
        return pm


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

    def force_tooltip(self) -> None:
        """The next update sets the tooltip even within ``tooltip_every_s`` (after a language switch)."""
        self._tooltip_at = float("-inf")
        self._tooltip_key = None

    def update(self, picture: TrayPicture, tooltip: str) -> None:
        if picture != self.picture:
            self.picture = picture
            self.tray.setIcon(make_icon(picture))
            self.icon_sets += 1
        # Big change: any device state or hot flag, or the waiting mark, or the demo flag.
        key = (tuple((b.state, b.hot, b.taken) for b in picture.bars), picture.waiting, picture.demo)
        now = self._clock()
        due = now - self._tooltip_at >= self.tooltip_every_s
        if tooltip != self.tooltip and (key != self._tooltip_key or due):
            self.tray.setToolTip(tooltip)
            self.tooltip = tooltip
            self.tooltip_sets += 1
            self._tooltip_at = now
            self._tooltip_key = key
