"""Make the desktop hand files to gputray: Linux "Open with" (.desktop), Windows Send To, autostart.

Every path ends in the same single-instance launch: ``gputray FILE...`` hands the files to the running
app. Windows code paths only run on Windows and import nothing Windows-only at module level.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from gputray.resources import resource_path

DESKTOP_FILE = "gputray.desktop"
EXTRA_MIME = {
    ".gguf": "application/x-gguf",
    ".py": "text/x-python",
    ".mkv": "video/x-matroska",
    ".webp": "image/webp",
    ".webm": "video/webm",
}


def mime_types_for_patterns(patterns: Iterable[str]) -> list[str]:
    out: list[str] = []
    for pattern in patterns:
        suffix = Path(pattern.replace("*", "x")).suffix.lower()
        mime = EXTRA_MIME.get(suffix) or mimetypes.guess_type("x" + suffix)[0]
        if mime and mime not in out:
            out.append(mime)
    return out


def recipe_patterns() -> list[str]:
    try:
        from gputray.scheduler.client.tasks import load_recipes

        return [p for r in load_recipes() for p in r.patterns]
    except Exception:  # a broken user recipes file must not stop the install
        from gputray.scheduler.client.tasks import read_recipes_file

        return [p for r in read_recipes_file(resource_path("recipes.toml")) for p in r.patterns]


def xdg_data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def exec_command() -> str:
    """The absolute path of the gputray that runs now, quoted for a .desktop ``Exec`` line.

    Never a bare ``gputray``: found on PATH only in the shell that had a venv active, it is broken for
    the file manager, the session and every other shell (issue 33). In order: a frozen build's own
    executable; the ``gputray`` launcher this process was started as (``sys.argv[0]``); the one beside
    this interpreter (a venv's ``bin``); else this interpreter with ``-m gputray.gui.entry``.
    """
    return " ".join(_desktop_quote(part) for part in running_command())


def running_command() -> list[str]:
    """What starts this very gputray again, as absolute argv words (see ``exec_command``)."""
    if getattr(sys, "frozen", False):
        return [os.path.abspath(sys.executable)]
    started_as = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started_as is not None and started_as.name.startswith("gputray") and started_as.is_file():
        return [os.path.abspath(started_as)]
    beside = Path(os.path.abspath(sys.executable)).with_name("gputray")
    if beside.is_file():
        return [str(beside)]
    return [os.path.abspath(sys.executable), "-m", "gputray.gui.entry"]


def _desktop_quote(arg: str) -> str:
    if not any(c in arg for c in " \t\n\"'\\><~|&;$*?#()`"):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
    return f'"{escaped}"'


def desktop_entry_text(exec_cmd: str, mime_types: Iterable[str], *, autostart: bool = False) -> str:
    icon = resource_path("icons/gputray.svg")
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Name=gputray",
        "GenericName=GPU monitor and job queue",
        "Comment=Watch every GPU and queue jobs on the free one",
        "Comment[ja]=すべての GPU を監視し、空いている GPU でジョブを実行します",
        f"Exec={exec_cmd}" + ("" if autostart else " %F"),
        f"Icon={icon}",
        "Terminal=false",
        "Categories=Utility;System;Monitor;",
        "StartupNotify=false",
    ]
    if not autostart:
        lines.append("MimeType=" + "".join(f"{m};" for m in mime_types))
    else:
        lines.append("X-GNOME-Autostart-enabled=true")
    return "\n".join(lines) + "\n"


def install_desktop_entry(data_home: Path | None = None) -> Path:
    """Write ``applications/gputray.desktop`` ("Open with gputray" for every recipe's file types)."""
    folder = (data_home or xdg_data_home()) / "applications"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / DESKTOP_FILE
    target.write_text(desktop_entry_text(exec_command(), mime_types_for_patterns(recipe_patterns())), "utf-8")
    tool = shutil.which("update-desktop-database")
    if tool:
        subprocess.run([tool, str(folder)], check=False, capture_output=True, timeout=30)
    return target


# -- Windows Send To ---------------------------------------------------------------------------------
def windows_gui_launcher() -> tuple[Path, str]:
    """What starts the tray without a console window, as (program, arguments).

    ``gputrayw.exe`` beside the interpreter when pip made one; otherwise (the embeddable Python, an
    install without launchers) its equivalent, ``pythonw.exe -m gputray.gui.entry``.
    """
    exe = Path(sys.executable)
    for folder in (exe.parent, exe.parent / "Scripts"):
        if (folder / "gputrayw.exe").exists():
            return folder / "gputrayw.exe", ""
    pythonw = exe.with_name("pythonw.exe")
    return (pythonw if pythonw.exists() else exe), "-m gputray.gui.entry"


def install_send_to(appdata: Path | None = None) -> Path:
    """A "gputray" entry in Explorer's Send To menu: a .lnk to the console-less tray launcher."""
    if sys.platform != "win32":
        raise OSError("the Send To shortcut exists only on Windows; use --install-desktop-entry on Linux")
    from gputray.gui.windows_shortcut import read_shortcut, write_shortcut

    base = appdata or Path(os.environ["APPDATA"])
    link = base / "Microsoft" / "Windows" / "SendTo" / "gputray.lnk"
    link.parent.mkdir(parents=True, exist_ok=True)
    target, arguments = windows_gui_launcher()
    write_shortcut(link, target, arguments, description="Queue these files in gputray")
    written = read_shortcut(link)
    if Path(written.target) != target:
        raise OSError(f"{link} was written but points at {written.target!r}, not {str(target)!r}")
    return link


# -- autostart at login ------------------------------------------------------------------------------
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"


def autostart_path() -> Path:
    return xdg_config_home() / "autostart" / DESKTOP_FILE


def autostart_enabled() -> bool:
    if sys.platform == "win32":
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                winreg.QueryValueEx(key, "gputray")
            return True
        except OSError:
            return False
    return autostart_path().exists()


def set_autostart(enabled: bool) -> None:
    if sys.platform == "win32":
        import winreg

        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
            if enabled:
                target, arguments = windows_gui_launcher()
                winreg.SetValueEx(key, "gputray", 0, winreg.REG_SZ, f'"{target}" {arguments}'.rstrip())
            else:
                with contextlib.suppress(FileNotFoundError):
                    winreg.DeleteValue(key, "gputray")
        return
    path = autostart_path()
    if enabled:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(desktop_entry_text(exec_command(), (), autostart=True), "utf-8")
    elif path.exists():
        path.unlink()
