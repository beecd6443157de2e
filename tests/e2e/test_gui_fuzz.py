"""A seeded random walk of clicks over the whole tray app on a real X server, with demo data moving.

The app runs as it does for a user (Xvfb, trayer, a D-Bus session with the portal stand-in, demo mode
with a scripted load, ``-X faulthandler``), started through ``gui_fuzz_driver.py``, which walks every
tray-menu entry, panel button, tab, dialog and row menu it finds on screen (Settings with its language
and Save/Cancel, the dashboard and its doctor, message boxes) and quits through the menu at the end.
Meanwhile this test queues jobs with the CLI and flips the desktop between light and dark.

It fails on a crash (the app ends before the walk does, or Quit does not exit 0), on a traceback in
stderr, and on a Qt message about deleted objects. The seed is printed, and named in every failure:

    GPUTRAY_FUZZ_SEED=1234 GPUTRAY_FUZZ_SECONDS=300 .venv/bin/python -m pytest tests/e2e/test_gui_fuzz.py

replays that walk (for as long as asked: 15 s by default, so the test takes about 20 s).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_tray_x11 import Case, desktop, pytestmark, stop  # noqa: F401 - pytestmark: the same marks

HERE = Path(__file__).resolve().parent
SECONDS = float(os.environ.get("GPUTRAY_FUZZ_SECONDS", "15"))
# Qt's messages about objects used after deletion (Python wrappers whose C++ half is gone, or the other
# way round): a walk that provokes one has found a bug even if nothing crashed yet.
DELETED = re.compile(r"already deleted|been deleted|deleted object|QObject[:(]|destroyed while|dangling")
JOBS = (
    ("fuzz-sleep-a", ["sleep", "3"]),
    ("fuzz-sleep-b", ["sleep", "6"]),
    ("fuzz-fails", ["false"]),
    ("fuzz-later", ["--at", "+1h", "--", "true"]),
    ("fuzz-sleep-c", ["sleep", "20"]),
)


def seed_from_env() -> int:
    given = os.environ.get("GPUTRAY_FUZZ_SEED")
    return int(given) if given else random.SystemRandom().randrange(1, 1_000_000)


def queue_jobs(home: Path) -> None:
    """A few tasks by the real CLI: running, failed (Retry), waiting (Cancel, move, priority). The walk
    has begun meanwhile and may restart the owner (Demo mode): a command that found no owner (exit 3:
    nothing was queued) is given again once the new owner answers."""
    env = {**os.environ, "GPUTRAY_HOME": str(home)}
    for name, argv in JOBS:
        rest = argv if argv[0] == "--at" else ["--", *argv]
        for _ in range(60):
            done = subprocess.run(
                [sys.executable, "-m", "gputray.gui.entry", "run", "--name", name, *rest],
                env=env,
                capture_output=True,
                timeout=60,
            )
            if done.returncode != 3:
                break
            time.sleep(0.5)
        assert done.returncode == 0, done.stderr


def shim_folder(tmp_path: Path) -> Path:
    """``xdg-open`` that records what it was asked to open and opens nothing (logs, the recipes file)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    shim = folder / "xdg-open"
    shim.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "opened.txt"}\n', encoding="utf-8")
    shim.chmod(0o755)
    return folder


def judge(stderr: str) -> list[str]:
    """What in the app's stderr fails the walk."""
    bad = [line for line in stderr.splitlines() if line.startswith("qt-") and DELETED.search(line)]
    bad += [line for line in stderr.splitlines() if line.startswith(("qt-critical:", "qt-fatal:"))]
    if "Traceback (most recent call last)" in stderr or "Fatal Python error" in stderr:
        bad.append("a traceback (below)")
    return bad


@pytest.mark.timeout(SECONDS + 240)  # a longer walk asked by GPUTRAY_FUZZ_SECONDS gets its time
def test_a_random_walk_of_clicks_over_the_whole_app_ends_cleanly(tmp_path: Path) -> None:
    seed = seed_from_env()
    replay = f"replay: GPUTRAY_FUZZ_SEED={seed} GPUTRAY_FUZZ_SECONDS={SECONDS:g}"
    print(f"GUI fuzz: seed {seed}, {SECONDS:g} s ({replay})")
    home, steps = tmp_path / "home", tmp_path / "steps.txt"
    extra_env = {
        "PATH": f"{shim_folder(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),  # autostart and the like stay in the test
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "PYTHONFAULTHANDLER": "1",
    }
    launcher = (
        "-X",
        "faulthandler",
        str(HERE / "gui_fuzz_driver.py"),
        str(seed),
        str(SECONDS),
        str(steps),
        "--",
    )
    themes = random.Random(seed)
    case = Case("ja" if seed % 2 else "en", "dark", "bottom", 1)  # odd seeds start in Japanese
    with desktop(case, home, launcher=launcher, extra_env=extra_env) as (_display, app):
        queue_jobs(home)
        deadline = time.monotonic() + SECONDS + 90
        next_flip = time.monotonic() + themes.uniform(3, 9)
        scheme = case.scheme
        while app.proc.poll() is None and time.monotonic() < deadline:
            if time.monotonic() >= next_flip and "walk done" not in steps.read_text(encoding="utf-8"):
                scheme = "light" if scheme == "dark" else "dark"
                app.set_scheme(scheme)
                next_flip = time.monotonic() + themes.uniform(3, 9)
            time.sleep(0.2)
        code = app.proc.poll()
        if code is None:
            stop(app.proc)
        stderr = (home / "stderr.txt").read_text(encoding="utf-8", errors="replace")
    walked = steps.read_text(encoding="utf-8").splitlines() if steps.exists() else []
    context = "\n".join(
        [replay, f"exit status {code}", "last steps:", *walked[-20:], "stderr (end):", stderr[-6000:]]
    )
    assert walked, f"the walk never started\n{context}"
    assert "walk done" in "\n".join(walked), f"the app ended before the walk did\n{context}"
    assert code == 0, f"Quit did not end the app with 0\n{context}"
    problems = judge(stderr)
    assert problems == [], f"{problems}\n{context}"
    print(f"GUI fuzz: {len(walked)} steps, seed {seed}")
