"""A running job's progress bar in the real tray's panel (issue 29 item 3), and the picture docs/queue.md
shows (``docs/screenshots/panel-progress.png``, with GPUTRAY_UPDATE_SCREENSHOTS=1).

The demo tray under Xvfb + trayer (tests/e2e/test_tray_x11.py's desktop); a job printing a real tqdm bar
(tqdm is in the test extra) is held part way by a file the test creates only after the picture, so the
bar stands while the panel is shown, whatever the machine's speed. The row's words are the model's
(tests/gui/test_gui_progress.py); here the app's own audit of the shown panel finds none of its text cut.

With GPUTRAY_UPDATE_SCREENSHOTS=1 it also runs in Japanese with two resident servers on the 5060 Ti
(``tests/resident_stubs.py``: an idle Ollama, a serving llama-server), for docs/gui.md's picture of
the card's resident lines beside a row's progress bar (``panel-ja-residents-progress-1366x768.png``);
the audit then counts their figures whole too.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from resident_stubs import resident
from test_tray_x11 import (
    FULL,
    HD,
    App,
    Case,
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


JAPANESE = Case("ja", "light", "bottom", 1, HD)  # with residents: only when the pictures are refreshed
CASES = (FULL, *((JAPANESE,) if os.environ.get("GPUTRAY_UPDATE_SCREENSHOTS") == "1" else ()))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_panel_shows_a_running_jobs_progress_bar(tmp_path: Path, case: Case) -> None:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    go = tmp_path / "go"
    script = tmp_path / "train.py"
    script.write_text(JOB)
    holds = tmp_path / "holds"
    with contextlib.ExitStack() as residents:
        if case is JAPANESE:
            residents.enter_context(resident(tmp_path, "ollama", holds=holds, hold_gib=2.5))
            residents.enter_context(resident(tmp_path, "llama-server", holds=holds, hold_gib=1.5, busy=True))
        extra_env = {"GPUTRAY_SIM_HOLDS": str(holds)} if case is JAPANESE else None
        _progress_in_the_panel(case, tmp_path, shots, script, go, extra_env)
    copy_screenshots(shots)


def _progress_in_the_panel(
    case: Case, tmp_path: Path, shots: Path, script: Path, go: Path, extra_env: dict[str, str] | None
) -> None:
    residents = case is JAPANESE
    picture = "panel-ja-residents-progress-1366x768.png" if residents else "panel-progress.png"
    with desktop(case, tmp_path / "home", extra_env=extra_env) as (display, app):
        if residents:
            wait_for("the residents' lines", lambda: _two_residents(app), 40)
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
            _icon, panel = open_panel(display, app, case)
            check_layout_audit(app, "panel", min_primary=6 + (2 if residents else 0))  # the row with its bar
            time.sleep(1.2)  # one queue refresh of the shown panel before the picture
            shown = _task(app, task_id)
            assert shown["state"] == "running" and shown["progress"] == held["progress"], shown
            px, py, pw, ph = panel
            display.run("xdotool", "mousemove", str(px + 20), str(py + 20))
            display.screenshot(shots / picture, (px - 10, py - 10, pw + 20, ph + 20))
        finally:
            go.touch()  # the job goes on and ends: nothing of the test outlives it
            wait_for("the job to end", lambda: _task(app, task_id)["state"] == "succeeded", 60)
    assert (shots / picture).stat().st_size > 300


def _two_residents(app: App) -> bool:
    """Ollama and llama-server both seen by the tray's owner (``gputray residents``)."""
    listed = _cli(app, "residents", "--json")
    if listed.returncode != 0:
        return False
    names = {r["name"] for r in json.loads(listed.stdout) if r.get("device") == "pci:0000:01:00.0"}
    return {"Ollama", "llama-server"} <= names
