"""Can the tray open its X display? Asked before any QApplication exists.

When Qt's xcb plugin cannot connect (a ``DISPLAY`` left over from an ssh session or a stopped Xvfb),
Qt does not return an error: it aborts the process (exit 134, core dump) with "could not load the Qt
platform plugin … Reinstalling the application may fix this", which sends people to reinstall for
nothing. So the tray connects once itself, with libxcb through ctypes (the library Qt's own plugin
loads, so no new dependency), and says in one line what is wrong. Before that, ``qt_libraries`` loads
Qt's xcb plugin as Qt would: a missing ``libxcb-cursor0`` (Qt ≥ 6.5 needs it) or any other system
library it links against is named with the package to install, instead of the same abort.

Only the X11 path is checked: ``QT_QPA_PLATFORM=offscreen`` / ``wayland`` / ``vnc`` …, and a Wayland
session without an explicit ``xcb``, are Qt's to handle. Qt-free, so it runs before Qt loads.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping

from gputray.gui.qt_libraries import xcb_library_problem

ADVICE = "Run `gputray daemon` to own the queue without a screen, and `gputray status` to see the GPUs."


def _library(name: str) -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def uses_x11(environ: Mapping[str, str]) -> bool:
    """Whether Qt will use its xcb plugin here (the only one this module can check)."""
    platform = environ.get("QT_QPA_PLATFORM", "").split(":", 1)[0].strip()
    if platform:
        return platform == "xcb"
    return bool(environ.get("DISPLAY")) and not environ.get("WAYLAND_DISPLAY")


def x_display_opens(display: str) -> bool | None:
    """True when an X server accepts a connection on ``display``; None when libxcb is not there to ask."""
    xcb = _library("libxcb.so.1")
    if xcb is None:
        return None
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.restype = ctypes.c_int
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.restype = None
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)  # never NULL: an error connection at worst
    try:
        return bool(xcb.xcb_connection_has_error(connection) == 0)
    finally:
        xcb.xcb_disconnect(connection)


def display_problem(environ: Mapping[str, str]) -> str | None:
    """Why Qt's X11 platform would abort here, in one sentence with what to do; None when it can start
    (or when this cannot be told: another platform, no libxcb)."""
    if sys.platform in {"win32", "darwin"} or not uses_x11(environ):
        return None
    libraries = xcb_library_problem(environ)  # first: it holds wherever the display is
    if libraries is not None:
        return libraries
    display = environ.get("DISPLAY", "")
    if not display:
        return None  # app.no_display_reason says this one
    if x_display_opens(display) is False:
        return (
            f"the X display {display} (DISPLAY={display}) cannot be opened: no X server answers there, "
            "or it does not let this user in, so there is no tray. Start gputray inside your desktop "
            f"session (or fix DISPLAY). {ADVICE}"
        )
    return None
