"""Starting the tray where there is no screen at all gives advice, not a Qt abort and a core dump."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


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


def test_help_names_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """default_config.toml sends people to "the config file that `gputray --help` names"."""
    from gputray.gui.app import build_parser
    from gputray.scheduler.paths import app_paths

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path))
    text = build_parser().format_help()
    assert f"config     {app_paths().config_file}" in text
    assert str(tmp_path) in str(app_paths().config_file)
