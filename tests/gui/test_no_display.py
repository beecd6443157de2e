"""Starting the tray where there is no screen at all gives advice, not a Qt abort and a core dump."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import wait_for


@pytest.mark.skipif(sys.platform == "win32", reason="Windows always has a desktop session")
def test_tray_without_any_display_says_what_to_run_instead(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}}
    env["GPUTRAY_HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", "--demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2
    assert "no graphical session" in result.stderr and "gputray daemon" in result.stderr
    assert "Aborted" not in result.stderr and "qt.qpa" not in result.stderr


def free_display_number() -> int:
    """A display number no X server uses here (no socket, no lock file)."""
    for n in range(150, 250):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise RuntimeError("no free X display number")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11")
def test_a_display_no_x_server_answers_gets_one_clean_line_not_a_qt_abort(tmp_path: Path) -> None:
    """Issue 21: DISPLAY=:99 with no server made Qt abort (exit 134, "Reinstalling … may fix this")."""
    dead = f":{free_display_number()}"
    env = {k: v for k, v in os.environ.items() if k not in {"WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}}
    env.update(DISPLAY=dead, GPUTRAY_HOME=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", "--demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert f"the X display {dead} (DISPLAY={dead}) cannot be opened" in result.stderr
    assert "gputray daemon" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "qt.qpa" not in result.stderr and "Reinstalling" not in result.stderr


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")
def test_the_display_check_lets_a_live_display_and_other_platforms_through() -> None:
    from gputray.gui.display_probe import display_problem

    dead = f":{free_display_number()}"
    assert display_problem({"DISPLAY": dead}) is not None
    assert display_problem({"DISPLAY": dead, "QT_QPA_PLATFORM": "xcb", "WAYLAND_DISPLAY": "w-0"}) is not None
    # offscreen, wayland, vnc: not X11's business; a Wayland session without an explicit xcb neither
    assert display_problem({"DISPLAY": dead, "QT_QPA_PLATFORM": "offscreen"}) is None
    assert display_problem({"DISPLAY": dead, "QT_QPA_PLATFORM": "wayland"}) is None
    assert display_problem({"DISPLAY": dead, "WAYLAND_DISPLAY": "wayland-0"}) is None
    live = free_display_number()
    xvfb = subprocess.Popen(["Xvfb", f":{live}", "-screen", "0", "320x240x24", "-nolisten", "tcp"])
    try:
        wait_for(lambda: Path(f"/tmp/.X11-unix/X{live}").exists(), 20, "Xvfb")
        assert wait_for(lambda: display_problem({"DISPLAY": f":{live}"}) is None, 20, "the display to open")
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=10)


def test_a_mistyped_command_is_named_not_started_as_the_tray(tmp_path: Path) -> None:
    env = {**os.environ, "GPUTRAY_HOME": str(tmp_path), "PYTHONIOENCODING": "utf-8"}
    result = subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", "statsu"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 2
    assert "did you mean `gputray status`" in result.stderr
    assert "graphical session" not in result.stderr  # it never got as far as starting the tray


def test_help_lists_every_command() -> None:
    from gputray.cluster.plug import CLUSTER_COMMANDS
    from gputray.gui.app import build_parser
    from gputray.scheduler.cli import command_names

    text = build_parser().format_help()
    section = text.split("commands (", 1)[1].split("\n\n", 1)[0]
    listed = {line.split()[0] for line in section.splitlines()[1:] if line.strip()}
    assert listed == command_names(CLUSTER_COMMANDS)
    # each line: the command, then what it does, in one column ("free-resident NAME  ask …" was not)
    starts = {len(line) - len(line.split(None, 1)[1]) for line in section.splitlines()[1:] if line.strip()}
    assert len(starts) == 1, section


def test_help_names_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """default_config.toml sends people to "the config file that `gputray --help` names"."""
    from gputray.gui.app import build_parser
    from gputray.scheduler.paths import app_paths

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path))
    text = build_parser().format_help()
    assert f"config     {app_paths().config_file}" in text
    assert str(tmp_path) in str(app_paths().config_file)


def test_help_says_retry_takes_every_finished_task() -> None:
    """Issue 33 item 14: the help said "failed, cancelled or interrupted" while retry re-runs succeeded
    tasks too; its line now names every state retry accepts, as `gputray retry --help` does."""
    from gputray.gui.app import build_parser
    from gputray.scheduler.tasks.records import STATES

    text = build_parser().format_help()
    line = next(line for line in text.splitlines() if line.strip().startswith("retry "))
    finished = [state for state in STATES if state not in ("queued", "waiting", "starting", "running")]
    assert finished and all(state in line for state in finished), line
