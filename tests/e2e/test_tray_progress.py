"""A running job's progress bar in the real tray's panel (issue 29 item 3), and the picture docs/queue.md
shows (``docs/screenshots/panel-progress.png``, with GPUTRAY_UPDATE_SCREENSHOTS=1).

The demo tray under Xvfb + trayer (tests/e2e/test_tray_x11.py's desktop); a job printing a real tqdm bar
(tqdm is in the test extra) is held part way by a file the test creates only after the picture, so the
bar stands while the panel is shown, whatever the machine's speed. The row's words are the model's
(tests/gui/test_gui_progress.py); here the app's own audit of the shown panel finds none of its text cut.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from test_tray_x11 import (
    FULL,
    App,
    check_layout_audit,
    copy_screenshots,
    desktop,
    open_panel,
    pytestmark,  # noqa: F401 - the same marks: xserver, slow, the tools
    queue_tasks,
    wait_for,
)

# A training loop with a real tqdm bar, stopped at 90 of 200 until the file named by argv[1] exists.
JOB = """
import sys, time
from pathlib import Path
from tqdm import tqdm
go = Path(sys.argv[1])
for i in tqdm(range(200), mininterval=0, desc="train"):
    while i == 90 and not go.exists():
        time.sleep(0.05)
    time.sleep(0.01)
"""


def _cli(app: App, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUTRAY_HOME": str(app.home), "LANG": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _task(app: App, task_id: int) -> dict[str, object]:
    listed = _cli(app, "queue", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    tasks = doc["tasks"] if isinstance(doc, dict) else doc
    return next(t for t in tasks if t["id"] == task_id)


def test_the_panel_shows_a_running_jobs_progress_bar(tmp_path: Path) -> None:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    go = tmp_path / "go"
    script = tmp_path / "train.py"
    script.write_text(JOB)
    with desktop(FULL, tmp_path / "home") as (display, app):
        queue_tasks(app)  # a task waiting for the busy 5060 Ti, one for later, one failed
        submitted = _cli(
            app,
            "run",
            "--device",
            "780m",
            "--name",
            "train (tqdm)",
            "--",
            sys.executable,
            str(script),
            str(go),
        )
        assert submitted.returncode == 0, submitted.stderr
        task_id = int(submitted.stdout.split()[0].lstrip("#"))
        try:
            held = wait_for(
                "the job's progress and time left",
                lambda: (t := _task(app, task_id))["eta_s"] is not None and (t["progress"] or 0) > 0.4 and t,
                60,
            )
            assert isinstance(held, dict) and held["state"] == "running" and held["progress"] < 0.5, held
            _icon, panel = open_panel(display, app, FULL)
            check_layout_audit(app, "panel", min_primary=6)  # the row with its bar is not cut
            time.sleep(1.2)  # one queue refresh of the shown panel before the picture
            shown = _task(app, task_id)
            assert shown["state"] == "running" and shown["progress"] == held["progress"], shown
            px, py, pw, ph = panel
            display.run("xdotool", "mousemove", str(px + 20), str(py + 20))
            display.screenshot(shots / "panel-progress.png", (px - 10, py - 10, pw + 20, ph + 20))
        finally:
            go.touch()  # the job goes on and ends: nothing of the test outlives it
            wait_for("the job to end", lambda: _task(app, task_id)["state"] == "succeeded", 60)
    copy_screenshots(shots)
    assert (shots / "panel-progress.png").stat().st_size > 300
