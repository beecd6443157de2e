"""The queue CLI's own parts: option parsing into task overrides, the listing, help for every command."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputray.scheduler import cli
from gputray.scheduler.commands import queue_cmds

QUEUE_COMMANDS = [
    "daemon",
    "submit",
    "run",
    "queue",
    "cancel",
    "pause",
    "resume",
    "logs",
    "retry",
    "schedule",
]


def parse(*argv: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(list(argv))


def test_every_queue_command_is_registered_with_help(capsys: pytest.CaptureFixture[str]) -> None:
    for name in QUEUE_COMMANDS:
        assert cli.COMMAND_MODULES[name] == "queue_cmds"
        with pytest.raises(SystemExit) as done:
            parse(name, "--help")
        assert done.value.code == 0
        assert "usage: gputray " + name in capsys.readouterr().out


def test_run_help_says_arguments_are_passed_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("run", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "verbatim" in text and "f-strings" in text and "without placeholders" in text


def test_submit_options_become_task_overrides() -> None:
    now = dt.datetime(2026, 11, 30, 10, 0).timestamp()
    args = parse(
        "submit", "a.png", "--device", "5060ti, 780m,cpu", "--on-busy", "redirect", "--max-wait", "10m",
        "--vram", "4GiB", "--priority", "3", "--at", "+30m", "--window", "01:00-07:00", "--retries", "2",
    )  # fmt: skip
    assert queue_cmds.overrides_from_args(args, now_s=now) == {
        "device_prefs": ["5060ti", "780m", "cpu"],
        "on_busy": "redirect",
        "max_wait_s": 600.0,
        "vram_bytes": 4 * 1024**3,
        "priority": 3,
        "start_at": now + 1800,
        "window": "01:00-07:00",
        "retries": 2,
    }
    assert queue_cmds.overrides_from_args(parse("submit", "a.png")) == {}


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--max-wait", "soon", "--max-wait expected a duration"),
        ("--vram", "lots", "--vram expected a size"),
        ("--at", "teatime", "HH:MM"),
        ("--window", "7-9", "--window expected a daily window like '01:00-07:00'"),
        ("--timeout", "banana", "--timeout expected a duration"),
        ("--device", " , ", "at least one device"),
    ],
)
def test_bad_options_are_usage_errors_that_say_what_is_expected(option: str, value: str, words: str) -> None:
    with pytest.raises(queue_cmds._UsageError) as err:
        queue_cmds.overrides_from_args(parse("submit", "a.png", option, value))
    assert words in str(err.value)


def test_run_keeps_everything_after_the_double_dash() -> None:
    args = parse("run", "--device", "cpu", "--", "python", "-c", "x", "--device", "y")
    assert args.command == ["--", "python", "-c", "x", "--device", "y"]
    assert args.device == "cpu"


def test_listing_shows_state_device_and_why() -> None:
    waiting = {"id": 7, "name": "upscale cat.png", "state": "waiting", "device": None, "exit_code": None}
    failed = {"id": 8, "name": "train.py", "state": "failed", "device": "cpu", "reason": "", "exit_code": 4}
    tasks = [{**waiting, "reason": "waiting for GeForce RTX 5060 Ti"}, failed]
    text = queue_cmds.format_tasks(tasks).splitlines()
    assert text[0].split() == ["ID", "STATE", "DEVICE", "NAME", "REASON"]
    assert text[1].startswith("7") and "waiting for GeForce RTX 5060 Ti" in text[1]
    assert "exit 4" in text[2]
    assert queue_cmds.format_tasks([]) == "the queue is empty"


def test_listing_names_the_gpu_when_the_owner_knows_it() -> None:
    task = {"id": 3, "name": "a.py", "state": "running", "device": "pci:0000:64:00.0", "exit_code": None}
    named = queue_cmds.format_tasks([task], {"pci:0000:64:00.0": "Radeon 780M"}).splitlines()[1]
    assert "Radeon 780M" in named and "pci:" not in named
    assert "pci:0000:64:00.0" in queue_cmds.format_tasks([task]).splitlines()[1]


def test_listing_columns_line_up_with_japanese_names() -> None:
    base = {"state": "succeeded", "device": "cpu", "exit_code": 0}
    tasks = [
        {**base, "id": 1, "name": "学習 スクリプト.py", "reason": "ok"},
        {**base, "id": 2, "name": "a.py"},
    ]
    header, first, second = queue_cmds.format_tasks(tasks).splitlines()
    # REASON starts in the same terminal column on every line (a CJK character is two columns wide).
    column = header.index("REASON")
    assert queue_cmds._cells(first[: first.index("exit 0")]) == column
    assert queue_cmds._cells(second[: second.index("exit 0")]) == column


def test_queue_imports_only_what_it_needs(tmp_path: Path) -> None:
    """`gputray queue` starts fast: it builds its own parser only and never loads the monitor, the
    owner, the store, the doctor, APScheduler or psutil (those belong to the daemon)."""
    code = (
        "import sys\n"
        "from gputray.gui.entry import main\n"
        "code = main(['queue', '--json'])\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('gputray.monitor', 'apscheduler', 'psutil', "
        "'sqlite3', 'gputray.scheduler.owner', 'gputray.scheduler.store', 'gputray.scheduler.doctor', "
        "'gputray.scheduler.queue_service', 'PySide6')))\n"
        "print(code, heavy)\n"
    )
    env = {**os.environ, "GPUTRAY_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "3 []", done.stdout + done.stderr  # 3: no owner running
    assert "gputray daemon" in done.stderr
