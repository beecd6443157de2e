"""Where the panel goes: the screen that holds the tray icon, the edge the tray sits on, the room
beside the icon and the panel's top-left there (pure geometry on Qt's rectangles; ``panel.Panel``
places itself with it)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QGuiApplication, QScreen


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
