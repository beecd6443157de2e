"""Where Qt's xcb plugin cannot load a system library, `gputray` names the package to install instead of
Qt's abort ("Reinstalling the application may fix this problem", exit 134).

The library is made unloadable for real: an empty file of its name in a folder on LD_LIBRARY_PATH, which
the dynamic loader finds first and refuses ("file too short"), for Qt exactly as for gputray's check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gputray.gui.qt_libraries import PACKAGES, xcb_library_problem, xcb_plugin

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's xcb plugin: Linux")


def broken_env(tmp_path: Path, *sonames: str) -> dict[str, str]:
    folder = tmp_path / "broken-libs"
    folder.mkdir()
    for soname in sonames:
        (folder / soname).write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k not in {"WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}}
    env.update(LD_LIBRARY_PATH=str(folder), DISPLAY=":0", GPUTRAY_HOME=str(tmp_path / "home"))
    return env


def test_qt_itself_aborts_when_libxcb_cursor_does_not_load(tmp_path: Path) -> None:
    """The condition the next test relies on is the real one: Qt's own start fails on it."""
    env = broken_env(tmp_path, "libxcb-cursor.so.0")
    env["QT_QPA_PLATFORM"] = "xcb"
    qt = subprocess.run(
        [sys.executable, "-c", "from PySide6.QtWidgets import QApplication; QApplication([])"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert qt.returncode != 0
    assert "xcb" in qt.stderr and "Reinstalling" in qt.stderr


def test_gputray_names_the_package_for_each_distribution_instead(tmp_path: Path) -> None:
    env = broken_env(tmp_path, "libxcb-cursor.so.0")
    result = subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", "--demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    line = result.stderr.strip()
    assert "libxcb-cursor.so.0 (file too short)" in line
    assert "Debian/Ubuntu: sudo apt install libxcb-cursor0;" in line
    assert "Fedora: sudo dnf install xcb-util-cursor;" in line
    assert "Arch: sudo pacman -S xcb-util-cursor" in line
    assert "Reinstalling" not in line and "qt.qpa" not in line


def test_every_library_that_does_not_load_is_named_in_one_install_line(tmp_path: Path) -> None:
    env = broken_env(tmp_path, "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-randr.so.0")
    problem = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; from gputray.gui.qt_libraries import xcb_library_problem as p; print(p(os.environ))",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    ).stdout
    assert "apt install libxcb-cursor0 libxcb-icccm4 libxcb-randr0;" in problem
    assert "dnf install xcb-util-cursor xcb-util-wm libxcb;" in problem


def test_a_healthy_system_passes_and_the_plugin_is_found_where_qt_looks(tmp_path: Path) -> None:
    assert xcb_library_problem(os.environ) is None
    plugin = xcb_plugin({})
    assert plugin is not None and plugin.name == "libqxcb.so"
    copy = tmp_path / "platforms"
    copy.mkdir()
    shutil.copy2(plugin, copy / "libqxcb.so")
    assert xcb_plugin({"QT_QPA_PLATFORM_PLUGIN_PATH": str(copy)}) == copy / "libqxcb.so"


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf (binutils)")
def test_the_table_covers_every_system_library_the_shipped_plugin_links() -> None:
    """A new PySide6 that links one more library fails here, not on a user's machine without advice."""
    plugin = xcb_plugin({})
    assert plugin is not None
    qt_lib = plugin.parents[2] / "lib"
    needed: set[str] = set()
    for elf in (plugin, qt_lib / "libQt6XcbQpa.so.6", qt_lib / "libQt6Gui.so.6"):
        dynamic = subprocess.run(["readelf", "-d", str(elf)], capture_output=True, text=True, check=True)
        needed |= {
            line.split("[", 1)[1].rstrip("]") for line in dynamic.stdout.splitlines() if "(NEEDED)" in line
        }
    base = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libdl.so.2", "libpthread.so.0"}
    outside_qt = {n for n in needed - base if not n.startswith(("libQt6", "libicu"))}
    assert outside_qt - set(PACKAGES) == set()
