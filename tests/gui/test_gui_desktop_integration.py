from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from gputray.gui import desktop_integration as di


def test_desktop_entry_opens_every_recipe_type(tmp_path: Path) -> None:
    path = di.install_desktop_entry()
    assert path == tmp_path / "xdg-data" / "applications" / "gputray.desktop"  # XDG_DATA_HOME respected
    entry = configparser.ConfigParser(interpolation=None, strict=False)
    entry.optionxform = str  # type: ignore[assignment,method-assign]
    entry.read(path, encoding="utf-8")
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application"
    assert section["Exec"].endswith(" %F")
    mimes = section["MimeType"].rstrip(";").split(";")
    for wanted in ("image/png", "image/jpeg", "text/x-python", "video/mp4", "application/x-gguf"):
        assert wanted in mimes
    assert Path(section["Icon"]).is_file()
    assert section["Comment[ja]"]


def test_exec_is_plain_gputray_on_path_or_a_quoted_absolute_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(di.shutil, "which", lambda name: "/usr/bin/gputray" if name == "gputray" else None)
    assert di.exec_command() == "gputray"
    assert di._desktop_quote("/home/me/my venv/bin/gputray") == '"/home/me/my venv/bin/gputray"'
    assert di._desktop_quote("/opt/$x") == '"/opt/\\$x"'


def test_send_to_target_is_gputrayw_or_its_pythonw_equivalent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tmp_path / "Python 3.13" / "python.exe"
    python.parent.mkdir()
    python.touch()
    monkeypatch.setattr(di.sys, "executable", str(python))
    assert di.windows_gui_launcher() == (python, "-m gputray.gui.entry")  # no pythonw: still a program
    python.with_name("pythonw.exe").touch()
    assert di.windows_gui_launcher() == (python.with_name("pythonw.exe"), "-m gputray.gui.entry")
    scripts = python.parent / "Scripts"
    scripts.mkdir()
    (scripts / "gputrayw.exe").touch()
    assert di.windows_gui_launcher() == (scripts / "gputrayw.exe", "")


def test_send_to_refuses_politely_off_windows() -> None:
    with pytest.raises(OSError, match="only on Windows"):
        di.install_send_to()


def test_autostart_on_and_off(tmp_path: Path) -> None:
    assert not di.autostart_enabled()
    di.set_autostart(True)
    path = tmp_path / "xdg-config" / "autostart" / "gputray.desktop"
    assert di.autostart_enabled() and path.is_file()
    text = path.read_text(encoding="utf-8")
    assert "%F" not in text and "X-GNOME-Autostart-enabled=true" in text
    di.set_autostart(False)
    assert not path.exists() and not di.autostart_enabled()
