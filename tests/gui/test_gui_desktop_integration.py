from __future__ import annotations

import configparser
import os
import shlex
import subprocess
import sys
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


def test_open_with_exec_is_the_absolute_path_of_the_running_gputray(tmp_path: Path) -> None:
    """Issue 33 item 12: installed from a shell whose PATH has the venv, the entry still names the venv's
    own gputray by its absolute path, so the file manager (whose PATH has no venv) starts this one."""
    launcher = Path(sys.executable).with_name("gputray")
    assert launcher.is_file(), "the test runs from a venv with gputray installed"
    env = {
        **os.environ,
        "PATH": f"{launcher.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    subprocess.run(
        ["gputray", "--install-desktop-entry"], env=env, check=True, capture_output=True, timeout=120
    )
    entry = configparser.ConfigParser(interpolation=None, strict=False)
    entry.read(tmp_path / "data" / "applications" / "gputray.desktop", encoding="utf-8")
    program, field_code = shlex.split(entry["Desktop Entry"]["Exec"])
    assert field_code == "%F"
    assert program == str(launcher) and Path(program).is_absolute()
    # and it starts from a session without the venv on PATH
    bare = {**env, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([program, "--help"], env=bare, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage: gputray" in done.stdout


def test_exec_quotes_an_absolute_path_with_spaces(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = tmp_path / "my venv" / "bin" / "gputray"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n", "utf-8")
    monkeypatch.setattr(di.sys, "argv", [str(script)])
    assert di.exec_command() == f'"{script}"'
    assert di._desktop_quote("/opt/$x") == '"/opt/\\$x"'
    monkeypatch.setattr(di.sys, "argv", ["-c"])  # python -c / an embedding host: the interpreter itself
    monkeypatch.setattr(di.sys, "executable", str(tmp_path / "py" / "python3"))
    assert di.running_command() == [str(tmp_path / "py" / "python3"), "-m", "gputray.gui.entry"]


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
