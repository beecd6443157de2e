"""The tray app on a real X server (Xvfb) with a real tray host (Debian's ``trayer``), QT_QPA_PLATFORM=xcb.

One app run in demo mode (an external llama-server holds the simulated 5060 Ti, so jobs get redirected)
is shared by the checks below: the icon is embedded in the tray, an xdotool click opens the panel, a
file dragged from a second process with a real XDND drag onto the panel's drop zone becomes a job that
runs, notifications are raised, the menu opens the dashboard, and the drop bubble shows.
Screenshots go to the test's tmp dir; with GPUTRAY_UPDATE_SCREENSHOTS=1 also to docs/screenshots/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import x11_tree

from gputray.scheduler.envs import add_env

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "resources" / "scenarios" / "llm_busy.toml"
TOOLS = ("Xvfb", "trayer", "xdotool", "xwininfo", "import", "convert")

pytestmark = [
    pytest.mark.xserver,
    pytest.mark.slow,
    pytest.mark.skipif(
        any(shutil.which(t) is None for t in TOOLS) or not sys.platform.startswith("linux"),
        reason=f"needs {', '.join(TOOLS)} on Linux",
    ),
]


def wait_for(what: str, check: Callable[[], object], timeout_s: float = 15.0) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Display:
    name: str
    env: dict[str, str]

    def run(self, *argv: str) -> str:
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=20).stdout

    def tree(self) -> str:
        return self.run("xwininfo", "-root", "-tree")

    def window(self, title: str) -> tuple[int, int, int, int] | None:
        """Absolute x, y, width, height of the first mapped window with exactly this title."""
        for line in self.tree().splitlines():
            m = re.search(
                r'^\s*(0x[0-9a-f]+) "(.*?)": .*? (\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)', line
            )
            if m and m.group(2) == title:
                info = self.run("xwininfo", "-id", m.group(1))
                if "IsViewable" in info:
                    w, h, x, y = (int(m.group(i)) for i in (3, 4, 5, 6))
                    return x, y, w, h
        return None

    def screenshot(self, out: Path, crop: tuple[int, int, int, int] | None = None, scale: int = 1) -> None:
        full = out.with_suffix(".full.png")
        subprocess.run(["import", "-window", "root", str(full)], env=self.env, check=True, timeout=20)
        args = ["convert", str(full)]
        if crop is not None:
            x, y, w, h = crop
            args += ["-crop", f"{w}x{h}+{x}+{y}", "+repage"]
        if scale != 1:
            args += ["-filter", "point", "-resize", f"{scale * 100}%"]
        subprocess.run([*args, str(out)], check=True, timeout=20)
        full.unlink()


def free_display() -> int:
    for n in range(70, 200):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display number")


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def display() -> Iterator[Display]:
    n = free_display()
    xvfb = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
    env = {**os.environ, "DISPLAY": f":{n}", "QT_QPA_PLATFORM": "xcb"}
    env.pop("WAYLAND_DISPLAY", None)
    trayer = None
    try:
        wait_for("Xvfb", lambda: Path(f"/tmp/.X11-unix/X{n}").exists())
        d = Display(f":{n}", env)
        trayer = subprocess.Popen(
            ["trayer", "--edge", "bottom", "--align", "right", "--widthtype", "request", "--height", "32",
             "--SetDockType", "true", "--transparent", "false", "--tint", "0x37474f"],
            env=env,
        )  # fmt: skip
        wait_for("the trayer panel", lambda: '"panel": ("panel" "trayer")' in d.tree())
        yield d
    finally:
        if trayer is not None:
            stop(trayer)
        stop(xvfb)


@dataclass
class App:
    proc: subprocess.Popen[bytes]
    home: Path
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8") if self.log.exists() else ""


@pytest.fixture(scope="module")
def app(display: Display, tmp_path_factory: pytest.TempPathFactory, torch_python: Path) -> Iterator[App]:
    home = tmp_path_factory.mktemp("gputray-home")
    state = home / "state"
    state.mkdir(parents=True)
    # a dropped .py runs in an env with torch (the queue checks it by itself), never gputray's Python
    add_env(torch_python, name="torch-cpu", path=home / "config" / "config.toml")
    # remembered drop choice for .py (so the drop needs no dialog) and the bubble switched on
    (state / "gui_state.json").write_text(
        json.dumps(
            {
                "drop_choices": {".py": {"recipe": "torch", "policy": "redirect"}},
                "bubble_visible": True,
                "bubble_pos": [40, 620],
            }
        )
    )
    env = {**display.env, "GPUTRAY_HOME": str(home), "LANG": "C.UTF-8", "LANGUAGE": "en"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputray.gui.entry", "--demo", "--demo-scenario", str(SCENARIO)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "stderr.txt", "wb"),  # noqa: SIM115 - closed with the process
    )
    running = App(proc, home, state / "gputray.log")
    try:
        wait_for("the owner to start", lambda: "owner started" in running.log_text(), 30)
        yield running
    finally:
        stop(proc)


def tray_icon_geometry(display: Display) -> tuple[int, int, int, int] | None:
    return x11_tree.tray_icon_geometry(display.tree())


def balloon_geometry(display: Display) -> tuple[int, int, int, int] | None:
    """Qt's own balloon (trayer has no notification service): a top-level "gputray" window."""
    for line in display.tree().splitlines():
        m = re.search(
            r'^     0x[0-9a-f]+ "gputray": \(.*?\)\s+(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)', line
        )
        if m:
            w, h, x, y = (int(g) for g in m.groups())
            if w > 100 and h > 30:
                return x, y, w, h
    return None


def test_tray_is_available_on_this_display(display: Display) -> None:
    probe = (
        "from PySide6.QtWidgets import QApplication, QSystemTrayIcon\n"
        "app = QApplication([])\n"
        "print('tray', QSystemTrayIcon.isSystemTrayAvailable())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=display.env, capture_output=True, text=True, timeout=30
    )
    assert "tray True" in out.stdout, out.stderr


def test_icon_click_panel_drop_job_notification_dashboard(display: Display, app: App, tmp_path: Path) -> None:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    icon = wait_for("the icon in the tray", lambda: tray_icon_geometry(display))
    assert isinstance(icon, tuple)
    x, y, w, h = icon
    assert w > 0 and h > 0
    time.sleep(1.5)  # a few samples so the picture and sparklines have something to show
    display.screenshot(shots / "icon.png", (1280 - 160, 800 - 40, 160, 40), scale=3)
    bubble = wait_for("the drop bubble", lambda: display.window("gputray — drop files"))
    assert isinstance(bubble, tuple) and bubble[:2] == (40, 620), "the bubble is where it was left"
    bx, by, bw, bh = bubble
    display.screenshot(shots / "bubble.png", (bx - 10, by - 10, bw + 20, bh + 20), scale=2)

    # a click on the icon opens the panel next to it
    display.run("xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "1")
    panel = wait_for("the panel", lambda: display.window("gputray — DEMO"))
    assert isinstance(panel, tuple)
    px, py, pw, ph = panel
    assert py + ph <= y and px + pw >= x, "the panel sits above the icon, right edges aligned"
    assert "panel shown" in app.log_text()

    # Pin it (a real click on its Pin button, top right): pressing in another window to start a drag
    # takes the focus away, and an unpinned panel hides when it loses focus.
    display.run("xdotool", "mousemove", str(px + pw - 28), str(py + 18), "click", "1")
    wait_for("the pin to be logged", lambda: "panel pinned: True" in app.log_text(), 5)

    # a real XDND drag from a second process onto the panel's drop zone
    marker = tmp_path / "ran.txt"
    script = tmp_path / "my job; 'quoted' ジョブ.py"
    script.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ok')\nprint('job ran')\n")
    source = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("xdnd_drag_source.py")), str(script)],
        env=display.env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert source.stdout is not None
        assert source.stdout.readline().strip() == "source-ready"
        wait_for("the drag source window", lambda: display.window("xdnd-drag-source"))
        drop_x, drop_y = px + pw // 2, py + ph - 30
        display.run("xdotool", "mousemove", "90", "55", "mousedown", "1")
        for i in range(1, 11):  # move in steps so XDND sees enter/position events
            display.run(
                "xdotool", "mousemove", str(90 + (drop_x - 90) * i // 10), str(55 + (drop_y - 55) * i // 10)
            )
            time.sleep(0.05)
        time.sleep(0.3)
        display.run("xdotool", "mouseup", "1")
        result = source.stdout.readline().strip()
        assert result == "drag-result CopyAction", result
        wait_for("the dropped job to run", lambda: marker.exists(), 30)
    finally:
        stop(source)

    wait_for("the job to finish", lambda: re.search(r"task \d+ finished", app.log_text()), 15)
    text = app.log_text()
    assert "drop of 1 item(s): 1 job(s), 0 message(s)" in text
    # notifications were raised through the tray: started on the free GPU (redirected), then finished
    assert re.search(r"notification shown \(job_(started|redirected)\)", text), text
    assert "notification shown (job_finished)" in text
    time.sleep(1.2)  # let the panel's queue refresh show the finished job
    display.run("xdotool", "mousemove", str(px + 20), str(py + 20))
    display.screenshot(shots / "panel.png", (px - 10, py - 10, pw + 20, ph + 20 + (800 - py - ph - 10)))

    # the "finished" balloon (a top-level window by the tray): a click opens the job's log; with no
    # desktop handler for text files under Xvfb, it opens in the dashboard's log tab
    balloon = wait_for("the notification balloon", lambda: balloon_geometry(display), 10)
    assert isinstance(balloon, tuple)
    bx, by, bw, bh = balloon  # click the middle of the body (the pointer arrow at the bottom is masked)
    display.run("xdotool", "mousemove", str(bx + bw // 2), str(by + bh // 2 - 5), "click", "1")
    wait_for("the log to open", lambda: re.search(r"open log .*\.log", app.log_text()), 10)
    wait_for("the dashboard", lambda: display.window("gputray dashboard — DEMO"), 20)
    display.screenshot(shots / "dashboard-logs.png", display.window("gputray dashboard — DEMO"))

    # right click → menu → "Open dashboard" (3rd item; keyboard navigation in the popup): History tab
    display.run("xdotool", "mousemove", str(x + w // 2), str(y + h // 2), "click", "3")
    time.sleep(0.5)
    display.run("xdotool", "key", "Down", "Down", "Down", "Return")
    wait_for("the dashboard from the menu", lambda: app.log_text().count("dashboard opened") >= 2, 10)
    dash = display.window("gputray dashboard — DEMO")
    assert isinstance(dash, tuple)
    time.sleep(2.5)  # one refresh of the plots
    display.screenshot(shots / "dashboard.png", dash)

    if os.environ.get("GPUTRAY_UPDATE_SCREENSHOTS") == "1":
        target = ROOT / "docs" / "screenshots"
        target.mkdir(parents=True, exist_ok=True)
        for png in shots.glob("*.png"):
            shutil.copy(png, target / png.name)
    for name in ("icon", "panel", "dashboard", "dashboard-logs", "bubble"):
        assert (shots / f"{name}.png").stat().st_size > 1000
