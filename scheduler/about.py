"""Which gputray this is: ``gputray --version``, the tray's About box and the metrics' ``gputray_build_info``.

The version is the installed distribution's (``pip``, ``pipx``, ``uv tool``, an editable checkout); a
frozen build carries the same metadata (``tools/build_linux.py`` copies it), so all of them answer alike.
Qt-free: the CLI answers ``--version`` without loading Qt.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

UNKNOWN_VERSION = "unknown"  # a copy of the source tree that was never installed


def gputray_version() -> str:
    try:
        return metadata.version("gputray")
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


def python_version() -> str:
    return platform.python_version()


def frozen() -> bool:
    """A PyInstaller build (``sys.frozen``), not an installed package."""
    return bool(getattr(sys, "frozen", False))


def version_line() -> str:
    """``gputray 0.1.0 (Python 3.11.7, Linux x86_64)``: what ``gputray --version`` prints."""
    build = ", frozen build" if frozen() else ""
    return (
        f"gputray {gputray_version()} (Python {python_version()}, {platform.system()} "
        f"{platform.machine()}{build})"
    )
