"""Can Qt load its X11 platform plugin here? Asked before any QApplication exists.

PySide6's wheels bring Qt but not the system libraries Qt's xcb plugin links against (since Qt 6.5
``libxcb-cursor0`` is the one a fresh Debian, Ubuntu or Fedora install lacks). Qt then prints "could not
load the Qt platform plugin "xcb" … Reinstalling the application may fix this" and aborts with a core
dump, which sends people to reinstall gputray for nothing. So the tray loads the plugin itself first, the
way Qt does (``dlopen`` of ``platforms/libqxcb.so``, lazily bound, from ``QT_QPA_PLATFORM_PLUGIN_PATH`` or
PySide6's own plugin folder), and when the loader refuses it names the package to install on
Debian/Ubuntu, Fedora and Arch for every library that does not load.

Loading the plugin maps nothing Qt would not map a moment later. Qt-free: it runs before Qt loads.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Packages:
    """Where one shared library comes from, per distribution family."""

    debian: str  # Debian and Ubuntu (Ubuntu 24.04 adds "t64" to a few, apt finds them by the old name)
    fedora: str
    arch: str


# Every library outside Qt that Qt's xcb plugin (libqxcb.so and libQt6XcbQpa.so.6) and Qt's GUI module
# link against; tests/gui/test_qt_libraries.py checks the list against the plugin PySide6 ships.
PACKAGES: dict[str, Packages] = {
    "libxcb-cursor.so.0": Packages("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor"),
    "libxcb-icccm.so.4": Packages("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm"),
    "libxcb-util.so.1": Packages("libxcb-util1", "xcb-util", "xcb-util"),
    "libxcb-image.so.0": Packages("libxcb-image0", "xcb-util-image", "xcb-util-image"),
    "libxcb-keysyms.so.1": Packages("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms"),
    "libxcb-render-util.so.0": Packages("libxcb-render-util0", "xcb-util-renderutil", "xcb-util-renderutil"),
    "libxcb-randr.so.0": Packages("libxcb-randr0", "libxcb", "libxcb"),
    "libxcb-render.so.0": Packages("libxcb-render0", "libxcb", "libxcb"),
    "libxcb-shape.so.0": Packages("libxcb-shape0", "libxcb", "libxcb"),
    "libxcb-shm.so.0": Packages("libxcb-shm0", "libxcb", "libxcb"),
    "libxcb-sync.so.1": Packages("libxcb-sync1", "libxcb", "libxcb"),
    "libxcb-xfixes.so.0": Packages("libxcb-xfixes0", "libxcb", "libxcb"),
    "libxcb-xkb.so.1": Packages("libxcb-xkb1", "libxcb", "libxcb"),
    "libxcb.so.1": Packages("libxcb1", "libxcb", "libxcb"),
    "libxkbcommon-x11.so.0": Packages("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11"),
    "libxkbcommon.so.0": Packages("libxkbcommon0", "libxkbcommon", "libxkbcommon"),
    "libX11-xcb.so.1": Packages("libx11-xcb1", "libX11-xcb", "libx11"),
    "libX11.so.6": Packages("libx11-6", "libX11", "libx11"),
    "libGL.so.1": Packages("libgl1", "libglvnd-glx", "libglvnd"),
    "libEGL.so.1": Packages("libegl1", "libglvnd-egl", "libglvnd"),
    "libOpenGL.so.0": Packages("libopengl0", "libglvnd-opengl", "libglvnd"),
    "libglib-2.0.so.0": Packages("libglib2.0-0", "glib2", "glib2"),
    "libgthread-2.0.so.0": Packages("libglib2.0-0", "glib2", "glib2"),
    "libfontconfig.so.1": Packages("libfontconfig1", "fontconfig", "fontconfig"),
    "libfreetype.so.6": Packages("libfreetype6", "freetype", "freetype2"),
    "libdbus-1.so.3": Packages("libdbus-1-3", "dbus-libs", "dbus"),
    "libz.so.1": Packages("zlib1g", "zlib", "zlib"),
}

# glibc's words: "libxcb-cursor.so.0: cannot open shared object file: No such file or directory", or for
# a file that is there but broken "/some/dir/libxcb-cursor.so.0: file too short".
_LOADER_ERROR = re.compile(r"(?P<name>[^\s:]+\.so(?:\.[\d.]+)?): (?P<why>[^:]+)")


@dataclass(frozen=True)
class Unloadable:
    """A library the loader refused, with its own reason ("cannot open shared object file" …)."""

    soname: str
    why: str


def xcb_plugin(environ: Mapping[str, str]) -> Path | None:
    """The xcb platform plugin Qt would load: ``QT_QPA_PLATFORM_PLUGIN_PATH`` first, as Qt reads it, then
    the ``platforms`` folder of the PySide6 this Python imports (a frozen build's copy included)."""
    folders: list[Path] = []
    if environ.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        folders += [Path(p) for p in environ["QT_QPA_PLATFORM_PLUGIN_PATH"].split(os.pathsep) if p]
    spec = importlib.util.find_spec("PySide6")
    for location in (spec.submodule_search_locations or []) if spec else []:
        folders.append(Path(location) / "Qt" / "plugins" / "platforms")
    for folder in folders:
        if (folder / "libqxcb.so").is_file():
            return folder / "libqxcb.so"
    return None


def _load_error(path: str) -> str | None:
    try:
        ctypes.CDLL(path, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError as exc:
        return str(exc)
    return None


def _parse(error: str) -> Unloadable | None:
    match = _LOADER_ERROR.search(error)
    if match is None:
        return None
    return Unloadable(Path(match["name"]).name, match["why"].strip())


def unloadable_libraries(environ: Mapping[str, str]) -> tuple[Unloadable, ...]:
    """The libraries that keep Qt's xcb plugin from loading; empty when it loads (or is not there to try).

    The loader names only the first library it missed; every other library of the table is then tried
    on its own, so one install line covers them all."""
    plugin = xcb_plugin(environ)
    if plugin is None:
        return ()
    error = _load_error(str(plugin))
    if error is None:
        return ()
    first = _parse(error)
    if first is None:
        return (Unloadable(plugin.name, error),)
    found = [first]
    for soname in PACKAGES:
        if soname != first.soname:
            other = _load_error(soname)
            parsed = _parse(other) if other is not None else None
            if parsed is not None:
                found.append(parsed)
    return tuple(found)


def install_advice(missing: Sequence[Unloadable]) -> str:
    """One paragraph: what did not load and the install command for each distribution family."""
    named = ", ".join(f"{m.soname} ({m.why})" for m in missing)
    known = [PACKAGES[m.soname] for m in missing if m.soname in PACKAGES]
    if not known:
        return (
            f"Qt's X11 platform plugin cannot be loaded: {named}. Install that library with your "
            "distribution's package manager."
        )

    def unique(names: list[str]) -> str:
        return " ".join(dict.fromkeys(names))

    return (
        f"Qt's X11 platform plugin needs system libraries that do not load here: {named}. Install them — "
        f"Debian/Ubuntu: sudo apt install {unique([p.debian for p in known])}; "
        f"Fedora: sudo dnf install {unique([p.fedora for p in known])}; "
        f"Arch: sudo pacman -S {unique([p.arch for p in known])} — then start gputray again."
    )


def xcb_library_problem(environ: Mapping[str, str]) -> str | None:
    """Why Qt's xcb plugin would not load, with the packages to install; None when it loads."""
    if not sys.platform.startswith("linux"):
        return None
    missing = unloadable_libraries(environ)
    return install_advice(missing) if missing else None
