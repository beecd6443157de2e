"""Light or dark: the tray follows the system's colour scheme (``QStyleHints.colorScheme()``).

Qt picks the palette for the scheme (the Windows and macOS themes, GNOME/KDE through their platform
themes or the XDG desktop portal's ``org.freedesktop.appearance color-scheme``). Our own colours
(hot text, notices, queue states, plots) come from :func:`colors`, one set per scheme, chosen to stay
readable on that scheme's window and base colours. When the desktop reports no scheme, the palette's
own window colour decides. Widgets that paint with these colours listen to :data:`ThemeWatcher.changed`
(or to their ``PaletteChange`` event) and restyle when the user flips the desktop's setting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication, QPalette


@dataclass(frozen=True)
class Colors:
    dark: bool
    hot_text: str  # a GPU over its limit, errors
    notice_text: str  # the demo banner and other notices in the panel
    secondary_text: str  # process lines, host line
    accent: str  # drop highlight
    plot_background: str
    plot_foreground: str
    limit_line: str  # temperature/power limits in the dashboard
    states: dict[str, str]


LIGHT = Colors(
    dark=False,
    hot_text="#c62828",
    notice_text="#7b1fa2",
    secondary_text="#5f6b73",
    accent="#1e88e5",
    plot_background="#ffffff",
    plot_foreground="#202020",
    limit_line="#c62828",
    states={
        "running": "#2e7d32",
        "paused": "#6d4c41",  # a running task whose job is frozen: not running's green
        "waiting": "#e65100",
        "starting": "#558b2f",
        "queued": "#546e7a",
        "succeeded": "#1565c0",
        "failed": "#c62828",
        "interrupted": "#c62828",
        "cancelled": "#616161",
    },
)

DARK = Colors(
    dark=True,
    hot_text="#ff8a80",
    notice_text="#ce93d8",
    secondary_text="#a7b4bc",
    accent="#64b5f6",
    plot_background="#1e1e1e",
    plot_foreground="#e0e0e0",
    limit_line="#ff8a80",
    states={
        "running": "#81c784",
        "paused": "#bcaaa4",
        "waiting": "#ffb74d",
        "starting": "#aed581",
        "queued": "#b0bec5",
        "succeeded": "#90caf9",
        "failed": "#ff8a80",
        "interrupted": "#ff8a80",
        "cancelled": "#bdbdbd",
    },
)


def follow_change(event: QEvent, retranslate: Callable[[], None], restyle: Callable[[], None]) -> None:
    """The part of a widget's ``changeEvent`` that follows the user: a new language is ``retranslate``d,
    a new palette (light/dark) ``restyle``d."""
    if event.type() == QEvent.Type.LanguageChange:
        retranslate()
    elif event.type() == QEvent.Type.PaletteChange:
        restyle()


def is_dark() -> bool:
    """The system's scheme when it says one, else whether the palette's window colour is dark."""
    app = QGuiApplication.instance()
    if not isinstance(app, QGuiApplication):
        return False
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def follow_scheme() -> bool:
    """Make the palette match the scheme when the platform did not (Qt's portal theme reports a live
    switch but keeps the old palette): the style's standard palette follows the scheme. A palette the
    platform already set to match (Windows, KDE) is left alone. True when it set a new palette."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return False
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Unknown:
        return False
    palette_dark = QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128
    if (scheme == Qt.ColorScheme.Dark) == palette_dark:
        return False
    QApplication.setPalette(app.style().standardPalette())
    return True


def colors() -> Colors:
    return DARK if is_dark() else LIGHT


def scheme_name() -> str:
    return "dark" if is_dark() else "light"


class ThemeWatcher(QObject):
    """Emits ``changed`` when the scheme flips (the desktop's switch), once per flip.

    No application-wide event filter (it would route every event through Python): the scheme signal,
    and windows forward their own ``PaletteChange`` through :meth:`check`.
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        follow_scheme()
        self._dark = is_dark()
        if isinstance(QGuiApplication.instance(), QGuiApplication):
            QGuiApplication.styleHints().colorSchemeChanged.connect(self.check)

    def check(self, *_: object) -> None:
        """Also called by windows on their ``PaletteChange`` (a palette set without a scheme change)."""
        follow_scheme()
        dark = is_dark()
        if dark != self._dark:
            self._dark = dark
            self.changed.emit()
