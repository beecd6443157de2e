from __future__ import annotations

import os
from pathlib import Path

import pytest
from gui_snapshots import KEY_780M, KEY_5060, info_780m, info_5060, snapshot
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QIcon, QImage
from PySide6.QtWidgets import QSystemTrayIcon
from pytestqt.qtbot import QtBot

from gputray.gui.legend import legend
from gputray.gui.tray_icon import (
    COLOR_DEMO,
    COLOR_HOT,
    COLOR_PLATE,
    BarGeometry,
    GpuIconEngine,
    TrayIconController,
    dimmed,
    picture_for,
    render_picture,
    summary_line,
)
from gputray.monitor.records import DeviceReading, Sample

NVIDIA_GREEN, AMD_RED, INTEL_BLUE = QColor("#76b900"), QColor("#ed1c24"), QColor("#0071c5")


def render(engine: GpuIconEngine, size: int = 64) -> QImage:
    return engine.pixmap(QSize(size, size), QIcon.Mode.Normal, QIcon.State.Off).toImage()


def bar_colors(img: QImage, size: int, bars: int) -> list[set[str]]:
    """The colours inside each bar's rectangle, as hex names."""
    geo = BarGeometry.for_size(size, bars)
    out = []
    for i in range(bars):
        r = geo.rect(i)
        out.append(
            {
                img.pixelColor(x, y).name()
                for x in range(r.left(), r.right() + 1)
                for y in range(r.top(), r.bottom() + 1)
            }
        )
    return out


def test_picture_follows_load_heat_and_waiting_jobs(qtbot: QtBot) -> None:
    cool = picture_for(snapshot(util_5060=42.0, temp_5060=61.0), waiting=0, demo=False)
    assert [b.load_level for b in cool.bars] == [4, 0]
    assert not any(b.hot for b in cool.bars) and not cool.waiting
    hot = picture_for(snapshot(temp_5060=88.0), waiting=2, demo=True)
    assert hot.bars[0].hot and not hot.bars[1].hot and hot.waiting and hot.demo
    # the iGPU has its own, higher limit
    assert not picture_for(snapshot(temp_780m=88.0), waiting=0, demo=False).bars[1].hot
    lost = picture_for(snapshot(state_5060="lost", util_5060=None), waiting=0, demo=False)
    assert lost.bars[0].state == "lost"


def test_bars_keep_their_order_and_vendor_colour_whatever_order_the_backends_report() -> None:
    snap = snapshot()
    swapped = snap.__class__(
        snap.timestamp_s, tuple(reversed(snap.readings)), snap.host, verdicts=snap.verdicts
    )
    for s in (snap, swapped):
        pic = picture_for(s, waiting=0, demo=False)
        assert [b.color for b in pic.bars] == [
            "#76b900",
            "#ed1c24",
        ]  # NVIDIA green, then AMD red (by PCI address)
        assert [e.key for e in legend(s)] == [KEY_5060, KEY_780M]
    # a second card of the same vendor gets another shade, and Intel is blue
    intel = DeviceReading(
        info_5060().__class__("pci:0000:00:02.0", "Intel Arc A380", "intel", "discrete", "i915"),
        Sample("pci:0000:00:02.0", 1.0, util_percent=5.0),
    )
    second = DeviceReading(
        info_780m().__class__("pci:0000:65:00.0", "Radeon RX 7600", "amd", "discrete", "amdgpu-sysfs"),
        Sample("pci:0000:65:00.0", 1.0, util_percent=5.0),
    )
    three = snap.__class__(1.0, (*snap.readings, intel, second), snap.host)
    assert [(e.short, e.color_word) for e in legend(three)] == [
        ("Intel Arc A380", "blue"),
        ("RTX 5060 Ti", "green"),
        ("Radeon 780M", "red"),
        ("Radeon RX 7600", "pink"),
    ]


@pytest.mark.parametrize("size", [16, 22, 24, 32])
@pytest.mark.parametrize("scale", [1, 2])
def test_icon_is_legible_and_crisp_at_tray_sizes(qtbot: QtBot, size: int, scale: int) -> None:
    """Each bar shows its vendor's colour (bright for the load, dimmed for the rest), and every pixel is
    one of the picture's own colours: no antialiasing blur at 16–32 px, nor at 2×."""
    pic = picture_for(snapshot(util_5060=50.0, util_780m=0.0), waiting=0, demo=False)
    pm = GpuIconEngine(pic).scaledPixmap(QSize(size, size), QIcon.Mode.Normal, QIcon.State.Off, float(scale))
    side = size * scale
    assert pm.width() == side and pm.devicePixelRatio() == scale
    img = pm.toImage()
    green, red = bar_colors(img, side, 2)
    assert green == {NVIDIA_GREEN.name(), dimmed(NVIDIA_GREEN).name()}  # half full
    assert red == {dimmed(AMD_RED).name()}  # idle: still red, dimmed
    palette = {NVIDIA_GREEN.name(), dimmed(NVIDIA_GREEN).name(), dimmed(AMD_RED).name(), COLOR_PLATE.name()}
    opaque = {
        img.pixelColor(x, y).name()
        for x in range(side)
        for y in range(side)
        if img.pixelColor(x, y).alpha() == 255
    }
    semi = [1 for x in range(side) for y in range(side) if 0 < img.pixelColor(x, y).alpha() < 255]
    assert opaque <= palette and not semi


def test_hot_lost_waiting_and_demo_marks(qtbot: QtBot) -> None:
    hot = picture_for(snapshot(util_5060=100.0, temp_5060=95.0, util_780m=0.0), waiting=0, demo=True)
    img = render_picture(hot, 32)
    green, _red = bar_colors(img, 32, 2)
    assert COLOR_HOT.name() in green and NVIDIA_GREEN.name() in green  # full load, and still visibly hot
    assert img.pixelColor(5, 0).name() == COLOR_DEMO.name()  # demo: a purple plate
    cool = render_picture(picture_for(snapshot(), waiting=0, demo=False), 32)
    assert cool.pixelColor(5, 0).name() == COLOR_PLATE.name()
    waiting = render_picture(picture_for(snapshot(), waiting=3, demo=False), 32)
    assert waiting.pixelColor(32 - 6, 5).name() == "#ffffff"  # the white dot, top right
    lost = render_picture(picture_for(snapshot(state_5060="lost", util_5060=None), waiting=0, demo=False), 32)
    assert {"#9e9e9e", "#ffffff"} <= bar_colors(lost, 32, 2)[0]  # grey with a white cross


def test_icon_is_set_only_when_the_picture_changes(qtbot: QtBot) -> None:
    now = [0.0]
    tray = QSystemTrayIcon()
    ctl = TrayIconController(tray, tooltip_every_s=10.0, clock=lambda: now[0])
    for i in range(30):  # 30 ticks of small jitter: 42 % → 44 % stays in the same tenth
        now[0] = float(i)
        snap = snapshot(util_5060=42.0 + (i % 3), t=float(i))
        ctl.update(
            picture_for(snap, waiting=0, demo=False), summary_line(snap, waiting=0, running=0, demo=False)
        )
    assert ctl.icon_sets == 1
    # the tooltip text changes every tick but is refreshed only every 10 s
    assert ctl.tooltip_sets == 3
    # a big change (GPU got hot) updates both at once
    now[0] = 30.5
    snap = snapshot(util_5060=42.0, temp_5060=90.0, t=30.5)
    ctl.update(picture_for(snap, waiting=0, demo=False), summary_line(snap, waiting=0, running=0, demo=False))
    assert ctl.icon_sets == 2 and ctl.tooltip_sets == 4
    assert tray.toolTip() == ctl.tooltip and "90°C hot" in tray.toolTip()


def test_tooltip_carries_the_same_legend_as_the_icon() -> None:
    line = summary_line(snapshot(), waiting=2, running=1, demo=True)
    assert (
        line
        == "gputray · DEMO · green: RTX 5060 Ti 42% 61°C · red: Radeon 780M 3% 45°C · 1 running, 2 waiting"
    )
    assert "green: RTX 5060 Ti lost" in summary_line(
        snapshot(state_5060="lost"), waiting=0, running=0, demo=False
    )


def test_icon_sizes_sheet(qtbot: QtBot, tmp_path: Path) -> None:
    """docs/screenshots/icon-sizes.png (with GPUTRAY_UPDATE_SCREENSHOTS=1): the icon at 16, 22, 24 and
    32 px and at 2×, each pixel shown 4×, on a light and a dark panel: cool; hot with jobs waiting;
    demo at idle; a lost GPU."""
    from PySide6.QtCore import Qt as QtNS
    from PySide6.QtGui import QPainter

    pictures = [
        picture_for(snapshot(util_5060=42.0, util_780m=3.0), waiting=0, demo=False),
        picture_for(snapshot(util_5060=97.0, temp_5060=91.0, util_780m=60.0), waiting=2, demo=False),
        picture_for(snapshot(util_5060=0.0, util_780m=0.0), waiting=0, demo=True),
        picture_for(snapshot(state_5060="lost", util_5060=None, util_780m=30.0), waiting=1, demo=False),
    ]
    sizes, zoom, gap = (16, 22, 24, 32, 44, 48, 64), 4, 10
    width = sum(s * zoom + gap for s in sizes) + gap
    row_h = 64 * zoom + gap
    sheet = QImage(width, 2 * len(pictures) * row_h + gap, QImage.Format.Format_RGB32)
    painter = QPainter(sheet)
    for band, background in enumerate(("#e6e6e6", "#1f1f1f")):
        top = band * len(pictures) * row_h
        painter.fillRect(0, top, width, len(pictures) * row_h + gap, QColor(background))
        for r, pic in enumerate(pictures):
            x = gap
            for s in sizes:
                img = render_picture(pic, s).scaled(
                    s * zoom,
                    s * zoom,
                    QtNS.AspectRatioMode.IgnoreAspectRatio,
                    QtNS.TransformationMode.FastTransformation,
                )
                painter.drawImage(x, top + gap + r * row_h + (64 - s) * zoom // 2, img)
                x += s * zoom + gap
    painter.end()
    out = tmp_path / "icon-sizes.png"
    assert sheet.save(str(out))
    if os.environ.get("GPUTRAY_UPDATE_SCREENSHOTS") == "1":
        target = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "icon-sizes.png"
        target.write_bytes(out.read_bytes())


@pytest.mark.parametrize(("width", "height"), [(22, 30), (30, 22), (24, 24), (22, 44)])
def test_icon_is_centred_in_a_tray_slot_that_is_not_square(qtbot: QtBot, width: int, height: int) -> None:
    """trayer gives the icon a 22×30 slot; Qt paints the icon with QIcon.paint over the whole slot, and
    the picture sat at its top (issue 21). It must sit in the middle, with equal margins."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QPainter

    icon = QIcon(GpuIconEngine(picture_for(snapshot(), waiting=0, demo=True)))
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    icon.paint(painter, QRect(0, 0, width, height))  # what QSystemTrayIconSys.paintEvent does
    painter.end()
    rows = [y for y in range(height) if any(image.pixelColor(x, y).alpha() for x in range(width))]
    cols = [x for x in range(width) if any(image.pixelColor(x, y).alpha() for y in range(height))]
    top, bottom = rows[0], height - 1 - rows[-1]
    left, right = cols[0], width - 1 - cols[-1]
    assert abs(top - bottom) <= 1 and abs(left - right) <= 1, (top, bottom, left, right)
    side = min(width, height)
    assert rows[-1] - rows[0] + 1 >= side - 2 and cols[-1] - cols[0] + 1 >= side - 2  # as large as fits
