"""Every window and dialog inside the available area of its screen (issue 33).

The available area is the screen less its panels and docks (``QScreen.availableGeometry``: the work
area the window manager publishes). A window larger than that is shrunk to it (its layout decides
whether it can be: a dialog whose content cannot shrink must be built to fit, as Settings is, with
tabs) and moved wholly inside it, title bar and frame included where the window manager reports them.
``layout_audit`` reports any window that still lies outside.
"""

from __future__ import annotations

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QWidget


def available_area(window: QWidget) -> QRect | None:
    screen = window.screen()
    return None if screen is None else screen.availableGeometry()


def fit_on_screen(window: QWidget) -> None:
    """Shrink ``window`` to its screen's available area when larger, then move it wholly inside."""
    area = available_area(window)
    if area is None or area.isEmpty():
        return
    frame = window.frameGeometry()
    extra_w = frame.width() - window.width()
    extra_h = frame.height() - window.height()
    width = min(window.width(), area.width() - extra_w)
    height = min(window.height(), area.height() - extra_h)
    if (width, height) != (window.width(), window.height()):
        window.resize(max(width, window.minimumWidth()), max(height, window.minimumHeight()))
        frame = window.frameGeometry()
    x = min(max(frame.x(), area.x()), area.x() + area.width() - frame.width())
    y = min(max(frame.y(), area.y()), area.y() + area.height() - frame.height())
    x, y = max(x, area.x()), max(y, area.y())
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)


def outside_area(window: QWidget) -> str | None:
    """Why ``window`` (its frame) is not wholly inside its screen's available area; None when it is."""
    area = available_area(window)
    if area is None or area.isEmpty():
        return None
    frame = window.frameGeometry()
    if area.contains(frame):
        return None
    return (
        f"lies at {frame.width()}×{frame.height()}+{frame.x()}+{frame.y()}, outside the available area "
        f"{area.width()}×{area.height()}+{area.x()}+{area.y()} of its screen"
    )
