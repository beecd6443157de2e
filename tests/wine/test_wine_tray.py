"""The tray on the Windows CPython under Wine: Qt's Windows platform plugin, Wine's notification area
docked into a real X tray host (trayer), a click that opens the panel, and a Send To style launch with a
file that the running tray queues.

Qt 6.10+ needs Windows' ``icuuc.dll``, which Wine lacks: the cached prefix has ICU's own DLLs and a
forwarding ``icuuc.dll`` in System32 (``tests/wine_icu.py``). The first test checks exactly that from
the DLLs themselves; the second is the tray's end-to-end run. This module runs last, as it always has.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from waiting import wait_for
from wine_icu import PeImage
from winpython import Drain, WinePython, winpath

TOOLS = ("trayer", "xwininfo", "xdotool", "import", "convert")
PANEL_TITLE = "gputray — DEMO"
# the window Wine's explorer.exe docks into the tray host (XEmbed) for each Shell_NotifyIcon icon
WINE_TRAY_ICON = re.compile(
    r'\("explorer\.exe" "explorer\.exe"\)\s+(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)'
)
WINDOW = re.compile(r'^\s*(0x[0-9a-f]+) "(.*?)": .*? (\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)')


def x_env(display: str) -> dict[str, str]:
    return {"DISPLAY": display, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}  # window titles as UTF-8


def system32(win: WinePython) -> Path:
    return win.prefix / "drive_c" / "windows" / "system32"


def test_qt_finds_every_dll_it_imports_with_icu_in_system32(win: WinePython) -> None:
    """Qt6Core's ``icuuc.dll`` imports are all exported (as forwarders to ICU 78) by the prefix's System32
    copy, and no DLL that QtCore.pyd pulls in is missing; Qt then loads and converts through ICU."""
    qt_core = win.cache / "site" / "PySide6" / "Qt6Core.dll"
    wanted = PeImage(qt_core.read_bytes()).imports()["icuuc.dll"]
    assert len(wanted) >= 20 and "ucnv_open" in wanted, wanted  # Windows' plain names, not ucnv_open_78
    offered = set(PeImage((system32(win) / "icuuc.dll").read_bytes()).exports())
    assert set(wanted) <= offered, sorted(set(wanted) - offered)
    assert missing_imports(win) == []
    # Shift_JIS is no codec of Qt's own (UTF-*, Latin-1): valid only through ICU's converters
    loaded = win.value(
        "import json; from PySide6 import QtCore\n"
        "print(json.dumps([QtCore.qVersion(), QtCore.QStringEncoder('Shift_JIS').isValid()]))"
    )
    assert isinstance(loaded, list) and loaded[1] is True, loaded


def missing_imports(win: WinePython) -> list[tuple[str, str]]:
    """Walks the import tables of QtCore.pyd and the DLLs it pulls in, as Windows' loader would look for
    them (Qt's folder, shiboken's, Python's, System32; names without case): (importer, missing DLL)."""
    site = win.cache / "site"
    folders = [site / "PySide6", site / "shiboken6", win.python_dir, system32(win)]
    where = {p.name.lower(): p for folder in reversed(folders) for p in folder.iterdir()}
    missing, seen, todo = [], set(), [site / "PySide6" / "QtCore.pyd"]
    while todo:
        path = todo.pop()
        for name in PeImage(path.read_bytes()).imports():
            if name.lower().startswith(("api-ms-", "ext-ms-")) or name.lower() in seen:
                continue  # API sets resolve inside the loader
            seen.add(name.lower())
            found = where.get(name.lower())
            if found is None:
                missing.append((path.name, name))
            elif found.parent == site / "PySide6":
                todo.append(found)
    return missing


def tree(display: str) -> str:
    done = subprocess.run(
        ["xwininfo", "-root", "-tree"], env=x_env(display), capture_output=True, text=True, timeout=20
    )
    return done.stdout


def docked_icon(display: str) -> tuple[int, int, int, int] | None:
    """Where Wine's notification-area icon sits inside trayer's panel: absolute x, y, w, h."""
    inside_panel = False
    for line in tree(display).splitlines():
        if '"panel": ("panel" "trayer")' in line:
            inside_panel = True
        elif inside_panel and (m := WINE_TRAY_ICON.search(line)):
            w, h, x, y = (int(g) for g in m.groups())
            return x, y, w, h
    return None


def window(display: str, title: str) -> tuple[int, int, int, int] | None:
    for line in tree(display).splitlines():
        m = WINDOW.search(line)
        if m and m.group(2) == title:
            info = subprocess.run(
                ["xwininfo", "-id", m.group(1)], env=x_env(display), capture_output=True, text=True
            )
            if "IsViewable" in info.stdout:
                w, h, x, y = (int(m.group(i)) for i in (3, 4, 5, 6))
                return x, y, w, h
    return None


def colours(display: str, area: tuple[int, int, int, int], out: Path) -> set[tuple[int, int, int]]:
    """The distinct colours of a screen area (a screenshot kept at ``out``)."""
    x, y, w, h = area
    subprocess.run(["import", "-window", "root", "-crop", f"{w}x{h}+{x}+{y}", str(out)],
                   env=x_env(display), check=True, timeout=30)  # fmt: skip
    listed = subprocess.run(
        ["convert", str(out), "-depth", "8", "-unique-colors", "txt:-"], capture_output=True, text=True
    )
    found = re.findall(r"\((\d+),(\d+),(\d+)", listed.stdout)
    return {(int(r), int(g), int(b)) for r, g, b in found}


def test_tray_icon_click_opens_the_panel_and_a_send_to_launch_queues_the_file(
    win: WinePython, home: Path, tmp_path: Path
) -> None:
    if win.display is None or any(shutil.which(t) is None for t in TOOLS):
        pytest.skip(f"the tray test needs an X display and {', '.join(TOOLS)}")
    display = win.display
    trayer = subprocess.Popen(
        ["trayer", "--edge", "bottom", "--align", "right", "--widthtype", "request", "--height", "32",
         "--SetDockType", "true", "--transparent", "false", "--tint", "0x37474f"],
        env=x_env(display), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    (home / "state").mkdir(parents=True)
    # a .py dropped on the tray becomes a torch job without the drop dialog (as a user's earlier choice)
    choices = {"drop_choices": {".py": {"recipe": "torch", "policy": "redirect"}}}
    (home / "state" / "gui_state.json").write_text(json.dumps(choices))
    log = home / "state" / "gputray.log"
    tray = win.popen("-m", "gputray.gui.entry", "--demo", env={"GPUTRAY_HOME": winpath(home)})
    output = Drain(tray, "cp1252")
    try:
        wait_for(lambda: '"panel": ("panel" "trayer")' in tree(display), 30, "trayer's panel")
        wait_for(lambda: log.exists() and "owner started" in log.read_text("utf-8"), 120, "the tray's owner")
        text = log.read_text("utf-8")
        assert "tray icon shown" in text and "tray ready" in text, text  # Qt saw a notification area
        icon = wait_for(lambda: docked_icon(display), 30, "Wine's tray icon in trayer")
        x, y, w, h = icon

        # the demo's icon draws a bar per GPU: NVIDIA green and AMD red, through Shell_NotifyIconW
        # (once the first demo sample is drawn: until then the icon is the plain starting one)
        def both_bars() -> bool:
            seen = colours(display, icon, tmp_path / "icon.png")
            green = any(g > r + 20 and g > b + 40 for r, g, b in seen)
            red = any(r > 150 and r > g + 60 and r > b + 60 for r, g, b in seen)
            return green and red

        wait_for(both_bars, 30, "the icon's green (NVIDIA) and red (AMD) bars")

        subprocess.run(["xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "1"],
                       env=x_env(display), check=True, timeout=20)  # fmt: skip
        panel = wait_for(lambda: window(display, PANEL_TITLE), 30, "the panel")
        wait_for(lambda: "panel shown" in log.read_text("utf-8"), 10, "the panel to be logged")
        px, py, pw, ph = panel
        assert px >= 0 and py >= 0 and px + pw <= 1280 and py + ph <= 800, panel  # the fixture's screen
        # Wine reports no icon rectangle (Shell_NotifyIconGetRect) and no work area for trayer: the
        # panel is placed at the click, ending at its right and above it
        assert py < y + h // 2 and abs(px + pw - (x + w // 2)) <= 16, (panel, icon)

        # Send To: Explorer starts gputray with the chosen file; it hands the file to the running tray
        folder = tmp_path / "送る files"
        folder.mkdir()
        script = folder / "学習 script (1).py"
        script.write_text("print('hello from Send To')\n", "utf-8")
        sent = win.gputray(winpath(script), home=home)
        assert sent.returncode == 0, sent.text
        assert "gave 1 file(s) to the running gputray" in sent.stdout, sent.text
        dropped = "drop of 1 item(s): 1 job(s), 0 message(s)"
        wait_for(lambda: dropped in log.read_text("utf-8"), 60, "the tray to queue the file")
        listed = win.gputray("queue", "--all", "--json", home=home)
        (task,) = json.loads(listed.stdout)["tasks"]
        assert task["name"] == "学習 script (1).py" and task["kind"] == "torch", task
        assert task["cwd"] == winpath(folder), task
        panel_now = window(display, PANEL_TITLE)
        assert panel_now is not None  # still open, now listing the job
        colours(display, panel_now, tmp_path / "panel.png")
    finally:
        tray.kill()  # TerminateProcess: the tray has no console to close
        tray.wait(timeout=60)
        trayer.terminate()
        trayer.wait(timeout=30)
    assert "Traceback" not in output.text, output.text
