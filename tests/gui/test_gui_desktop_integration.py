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


def test_send_to_script_quotes_paths_for_powershell() -> None:
    script = di.send_to_powershell_script(
        Path("C:/Users/O'Brien/AppData/Roaming/Microsoft/Windows/SendTo/gputray.lnk"),
        Path("C:/Python/Scripts/gputrayw.exe"),
    )
    assert "CreateShortcut('C:/Users/O''Brien/AppData" in script
    assert "$l.TargetPath = 'C:/Python/Scripts/gputrayw.exe'" in script
    assert script.endswith("$l.Save()")


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
