from __future__ import annotations

from gui_snapshots import snapshot
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QIcon, QImage
from PySide6.QtWidgets import QSystemTrayIcon
from pytestqt.qtbot import QtBot

from gputray.gui.tray_icon import (
    COLOR_DEMO,
    COLOR_HOT,
    GpuIconEngine,
    TrayIconController,
    picture_for,
    summary_line,
)


def render(picture_engine: GpuIconEngine, size: int = 64) -> QImage:
    return picture_engine.pixmap(QSize(size, size), QIcon.Mode.Normal, QIcon.State.Off).toImage()


def close(a: QColor, b: QColor, tol: int = 40) -> bool:
    return (
        abs(a.red() - b.red()) < tol and abs(a.green() - b.green()) < tol and abs(a.blue() - b.blue()) < tol
    )


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


def test_engine_draws_hot_bar_red_and_demo_mark(qtbot: QtBot) -> None:
    pic = picture_for(snapshot(util_5060=100.0, temp_5060=95.0, util_780m=0.0), waiting=0, demo=True)
    img = render(GpuIconEngine(pic))
    # the lower middle of the first (hot, full) bar is red; the second bar's middle is not
    assert close(img.pixelColor(16, 40), COLOR_HOT)
    assert not close(img.pixelColor(47, 30), COLOR_HOT)
    # demo: a purple corner at the bottom left
    assert close(img.pixelColor(3, 60), COLOR_DEMO)
    cool = render(GpuIconEngine(picture_for(snapshot(), waiting=0, demo=False)))
    assert not close(cool.pixelColor(3, 60), COLOR_DEMO)


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
    assert tray.toolTip() == ctl.tooltip and "90°C" in tray.toolTip()


def test_summary_line_says_demo_and_counts() -> None:
    line = summary_line(snapshot(), waiting=2, running=1, demo=True)
    assert line.startswith("gputray · DEMO · RTX 5060 Ti 42% 61°C · Radeon 780M 3% 45°C")
    assert line.endswith("1 running, 2 waiting")
    assert "lost" in summary_line(snapshot(state_5060="lost"), waiting=0, running=0, demo=False)
