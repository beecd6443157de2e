"""The frozen Windows build (`tools/build_windows.py`), unzipped and run under Wine as a user would run
it: `gputray.exe --version`; `gputrayw.exe --demo` docks its icon into a real X tray host (trayer) and a
click opens the panel; a second launch with a file hands it to the running tray; `gputray.exe status
--json` answers; the Send To link and the autostart entry it writes point at its own `gputrayw.exe`.

The build takes many minutes under Wine, so it is not made here: `.ci/run`'s frozen step (before the suite,
outside it) builds it and runs this file with the zip in `GPUTRAY_FROZEN_WINDOWS`; without that variable
(the suite) it is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
import zipfile
from pathlib import Path, PureWindowsPath

import pytest
from test_wine_desktop import known_folders, linux_path, parse_lnk
from test_wine_tray import TOOLS, colours, docked_icon, tree, window, x_env
from waiting import wait_for
from winpython import Drain, WinePython, winpath

ZIP = os.environ.get("GPUTRAY_FROZEN_WINDOWS", "")
pytestmark = pytest.mark.skipif(not ZIP, reason="GPUTRAY_FROZEN_WINDOWS names no zip (.ci/run's frozen step)")
ROOT = Path(__file__).resolve().parents[2]
PANEL_TITLE = "gputray — DEMO"
AUTOSTART = (
    "import json, winreg\n"
    "from gputray.gui.desktop_integration import RUN_KEY, set_autostart\n"
    "set_autostart(True)\n"
    "with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:\n"
    "    print(json.dumps(winreg.QueryValueEx(key, 'gputray')[0]))\n"
    "set_autostart(False)\n"
)


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("frozen-windows")
    assert Path(ZIP).name == f"gputray-{version()}-windows-x64.zip"
    with zipfile.ZipFile(ZIP) as zipped:
        zipped.extractall(where)
    folder = where / "gputray"
    assert (folder / "gputray.exe").is_file() and (folder / "gputrayw.exe").is_file()
    assert (folder / "_internal").is_dir()
    return folder


def test_the_frozen_exe_says_its_version(win: WinePython, app: Path) -> None:
    done = win.run_windows(winpath(app / "gputray.exe"), "--version")
    assert done.returncode == 0, done.text
    assert done.stdout.startswith(f"gputray {version()} (Python 3.") and "frozen build" in done.stdout, (
        done.text
    )


def test_the_frozen_tray_docks_opens_its_panel_takes_a_file_and_points_links_at_itself(
    win: WinePython, app: Path, home: Path, tmp_path: Path
) -> None:
    if win.display is None or any(shutil.which(t) is None for t in TOOLS):
        pytest.skip(f"the tray test needs an X display and {', '.join(TOOLS)}")
    display = win.display
    exe, exe_w = winpath(app / "gputray.exe"), winpath(app / "gputrayw.exe")
    env = {"GPUTRAY_HOME": winpath(home)}
    trayer = subprocess.Popen(
        ["trayer", "--edge", "bottom", "--align", "right", "--widthtype", "request", "--height", "32"],
        env=x_env(display), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    (home / "state").mkdir(parents=True)
    choices = {"drop_choices": {".py": {"recipe": "torch", "policy": "redirect"}}}
    (home / "state" / "gui_state.json").write_text(json.dumps(choices))
    log = home / "state" / "gputray.log"
    tray = subprocess.Popen(
        [win.wine, exe_w, "--demo"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=win.env(env),
    )  # fmt: skip
    output = Drain(tray, "cp1252")
    try:
        wait_for(lambda: '"panel": ("panel" "trayer")' in tree(display), 30, "trayer's panel")
        wait_for(lambda: log.exists() and "owner started" in log.read_text("utf-8"), 180, "the tray's owner")
        icon = wait_for(lambda: docked_icon(display), 30, "the frozen tray's icon in trayer")
        x, y, w, h = icon

        def both_bars() -> bool:  # the first demo sample drawn: the tray is built and answers clicks
            seen = colours(display, icon, tmp_path / "icon.png")
            green = any(g > r + 20 and g > b + 40 for r, g, b in seen)
            red = any(r > 150 and r > g + 60 and r > b + 60 for r, g, b in seen)
            return green and red

        wait_for(both_bars, 60, "the icon's green (NVIDIA) and red (AMD) bars")
        subprocess.run(["xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "1"],
                       env=x_env(display), check=True, timeout=20)  # fmt: skip
        try:
            wait_for(lambda: window(display, PANEL_TITLE), 30, "the panel")
        except AssertionError:
            raise AssertionError(f"no panel; the tray's log:\n{log.read_text('utf-8')[-3000:]}") from None

        script = tmp_path / "学習 script.py"
        script.write_text("print('hello')\n", "utf-8")
        sent = win.run_windows(exe, winpath(script), env=env)
        assert sent.returncode == 0 and "gave 1 file(s) to the running gputray" in sent.stdout, sent.text
        wait_for(lambda: "drop of 1 item(s): 1 job(s)" in log.read_text("utf-8"), 60, "the file to be queued")

        status = win.run_windows(exe, "status", "--json", env=env)
        assert status.returncode == 0, status.text
        assert json.loads(status.stdout)["demo"] is True

        appdata = known_folders(win)["APPDATA"]
        link = PureWindowsPath(appdata) / "Microsoft" / "Windows" / "SendTo" / "gputray.lnk"
        installed = win.run_windows(exe, "--install-send-to", env=env)
        assert installed.returncode == 0, installed.text
        assert PureWindowsPath(
            parse_lnk(linux_path(win, str(link)).read_bytes()).base_path
        ) == PureWindowsPath(exe_w)
        script_file = tmp_path / "autostart.py"
        script_file.write_text(AUTOSTART, "utf-8")
        run_value = win.run_windows(exe, "--gputray-run-path", winpath(script_file), env=env)
        assert run_value.returncode == 0, run_value.text
        assert json.loads(run_value.stdout) == f'"{exe_w}"', run_value.text
    finally:
        tray.kill()
        tray.wait(timeout=60)
        trayer.terminate()
        trayer.wait(timeout=30)
    assert "Traceback" not in output.text, output.text
