"""The queue CLI's own parts: option parsing into task overrides, the listing, help for every command."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import task_steps as steps
from cli import gputray

from gputray.scheduler import cli
from gputray.scheduler.cli.commands import client, submit
from gputray.scheduler.cli.commands.common import task_json, terminal_cells
from gputray.scheduler.reasons.codes import Cancelled, ExitedWith, Reason, Said
from gputray.scheduler.replies import LogChunk, Paused, QueueReply, Reply, TaskView
from gputray.scheduler.tasks.records import TaskPatch

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
        assert cli.COMMAND_MODULES[name] in ("daemon", "submit", "queue_logs", "control", "schedule")
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
    assert submit.patch_from_args(args, now_s=now) == TaskPatch(
        device_prefs=("5060ti", "780m", "cpu"),
        on_busy="redirect",
        max_wait_s=600.0,
        vram_bytes=4 * 1024**3,
        priority=3,
        start_at=now + 1800,
        window="01:00-07:00",
        retries=2,
    )
    assert submit.patch_from_args(parse("submit", "a.png")) == TaskPatch()


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--max-wait", "soon", "--max-wait expected a duration"),
        ("--vram", "lots", "--vram expected a size"),
        ("--at", "teatime", "HH:MM"),
        ("--window", "7-9", "--window expected a daily window like '01:00-07:00'"),
        ("--timeout", "banana", "--timeout expected a duration"),
        ("--device", " , ", "at least one device"),
        ("--retries", "1000", "between 0 and 100"),
        ("--timeout", "0", "more than 0"),
        ("--priority", "99999999999999999999", "between -1000000 and 1000000"),
    ],
)
def test_bad_options_are_usage_errors_that_say_what_is_expected(option: str, value: str, words: str) -> None:
    with pytest.raises(client.UsageError) as err:
        submit.patch_from_args(parse("submit", "a.png", option, value))
    assert words in str(err.value)


def test_run_keeps_everything_after_the_double_dash() -> None:
    args = parse("run", "--device", "cpu", "--", "python", "-c", "x", "--device", "y")
    assert args.command == ["--", "python", "-c", "x", "--device", "y"]
    assert args.device == "cpu"


def test_listing_shows_state_device_and_why() -> None:
    waiting = {"id": 7, "name": "upscale cat.png", "state": "waiting", "device": None, "exit_code": None}
    failed = {"id": 8, "name": "train.py", "state": "failed", "device": "cpu", "reason": "", "exit_code": 4}
    tasks = [{**waiting, "reason": "waiting for GeForce RTX 5060 Ti"}, failed]
    text = client.format_tasks(_views(tasks)).splitlines()
    assert text[0].split() == ["ID", "STATE", "PRI", "DEVICE", "ENV", "START", "END", "DUR", "NAME", "REASON"]
    assert text[1].startswith("7") and "waiting for GeForce RTX 5060 Ti" in text[1]
    assert "exit 4" in text[2]
    assert client.format_tasks([]) == "the queue is empty"


def test_listing_shows_the_env_and_says_each_fact_once() -> None:
    """The env a torch task runs in is a column; an exit status the reason states is not said twice,
    and a task that succeeded shows no exit code."""
    base = {"device": "cpu", "name": "train.py"}
    tasks = [
        {
            **base,
            "id": 1,
            "state": "failed",
            "env": "cu128",
            "reason": "exited with status 1",
            "exit_code": 1,
        },
        {**base, "id": 2, "state": "succeeded", "env": "cu128", "reason": "", "exit_code": 0},
        {**base, "id": 3, "state": "failed", "env": None, "reason": "", "exit_code": 3},
    ]
    header, failed, ok, bare = client.format_tasks(_views(tasks)).splitlines()
    env_at = header.index("ENV")
    assert failed[env_at:].startswith("cu128") and ok[env_at:].startswith("cu128")
    assert bare[env_at:].startswith("-")
    assert failed.endswith("exited with status 1") and "exit 1" not in failed
    assert "exit" not in ok
    assert bare.endswith("exit 3")


def test_listing_names_the_gpu_when_the_owner_knows_it() -> None:
    task = {"id": 3, "name": "a.py", "state": "running", "device": "pci:0000:64:00.0", "exit_code": None}
    named = client.format_tasks(_views([task]), {"pci:0000:64:00.0": "Radeon 780M"}).splitlines()[1]
    assert "Radeon 780M" in named and "pci:" not in named
    assert "pci:0000:64:00.0" in client.format_tasks(_views([task])).splitlines()[1]


def test_listing_columns_line_up_with_japanese_names() -> None:
    base = {"state": "failed", "device": "cpu", "exit_code": 2}
    tasks = [
        {**base, "id": 1, "name": "学習 スクリプト.py", "reason": "oops"},
        {**base, "id": 2, "name": "a.py"},
    ]
    header, first, second = client.format_tasks(_views(tasks)).splitlines()
    # REASON starts in the same terminal column on every line (a CJK character is two columns wide).
    column = header.index("REASON")
    assert terminal_cells(first[: first.index("exit 2")]) == column
    assert terminal_cells(second[: second.index("exit 2")]) == column


def test_names_with_newlines_or_escape_sequences_stay_one_line_and_harmless() -> None:
    base = {"state": "waiting", "device": None, "exit_code": None}
    tasks = [
        {**base, "id": 1, "name": "two\nlines.py", "reason": "waiting for\rx"},
        {**base, "id": 2, "name": "esc\x1b[31mRED", "reason": ""},
        {**base, "id": 3, "name": "日本語 ok.py", "reason": ""},
    ]
    lines = client.format_tasks(_views(tasks)).splitlines()
    assert len(lines) == 4 and "\x1b" not in "".join(lines)
    assert "two\\nlines.py" in lines[1] and "waiting for\\rx" in lines[1]
    assert "esc\\x1b[31mRED" in lines[2] and "日本語 ok.py" in lines[3]


HEAVY = (  # the monitor's polling; its records (a status reply carries them) are plain dataclasses
    "gputray.monitor.monitor",
    "gputray.monitor.backends.base",
    "gputray.monitor.factory",
    "gputray.monitor.host",
    "apscheduler",
    "psutil",
    "gputray.scheduler.owner",
    "gputray.scheduler.pyenvs.doctor",
    "gputray.scheduler.queue.service",
    "PySide6",
)


def _main_in_child(home: Path, argv: list[str], heavy: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh interpreter; its last stdout line is `EXIT <code> <heavy modules loaded>`."""
    code = (
        "import sys\n"
        "from gputray.gui.entry import main\n"
        f"code = main({argv!r})\n"
        f"heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}))\n"
        "print('EXIT', code, heavy)\n"
    )
    env = {**os.environ, "GPUTRAY_HOME": str(home)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_queue_imports_only_what_it_needs(tmp_path: Path) -> None:
    """`gputray queue` starts fast: it never loads the monitor, the owner, the doctor, APScheduler or
    psutil (those belong to the daemon). Commands that need the owner load no SQLite either."""
    done = _main_in_child(tmp_path, ["queue", "--json"], HEAVY)
    lines = done.stdout.splitlines()
    assert lines[1:] == ["EXIT 0 []"] and json.loads(lines[0])["tasks"] == [], done.stdout + done.stderr
    store = ("sqlite3", "gputray.scheduler.queue.store")
    done = _main_in_child(tmp_path, ["logs", "1", "--follow"], (*HEAVY, *store))
    assert done.stdout.strip() == "EXIT 3 []", done.stdout + done.stderr  # 3: no owner running
    assert "gputray daemon" in done.stderr
    # With no owner, cancel acts on the saved queue (never created for it) without the daemon's parts.
    done = _main_in_child(tmp_path, ["cancel", "1"], HEAVY)
    assert done.stdout.strip() == "EXIT 1 []", done.stdout + done.stderr
    assert "no task #1 in the queue" in done.stderr
    assert not (tmp_path / "data" / "queue.sqlite3").exists()


@pytest.fixture
def saved_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Any]]:
    """A queue left on disk by an owner that is gone: a failed job with a log, a waiting and a running one."""
    from gputray.scheduler.paths import app_paths
    from gputray.scheduler.queue.store import TaskStore
    from gputray.scheduler.tasks.records import TaskSpec

    home = tmp_path / "home"
    monkeypatch.setenv("GPUTRAY_HOME", str(home))
    paths = app_paths()
    store = TaskStore(paths.queue_db)
    failed, waiting, running = store.add_many(
        TaskSpec(kind="command", name=n, argv=("prog", n)) for n in ("学習.py", "upscale cat.png", "bench")
    )
    paths.logs_dir.mkdir(parents=True)
    log = paths.logs_dir / f"{failed.id}.log"
    log.write_bytes("epoch 1 loss 0.5\nこんにちは\n".encode() + b"\xff\n")
    ran = dict(device="pci:0000:64:00.0", log_path=str(log), started_at=5.0)
    steps.fail_run(store, failed.id, "", exit_code=4, ended_at=9.0, **ran)
    steps.wait(store, waiting.id, "waiting for GeForce RTX 5060 Ti: llama-server uses 14.2 GiB")
    steps.start(store, running.id, device="pci:0000:64:00.0", pid=1)
    store.close()
    paths.data_dir.joinpath("paused.json").write_text('{"queue": false, "devices": ["pci:0000:64:00.0"]}')
    from gputray.scheduler.queue.saved_queue import read_saved_tasks

    return home, read_saved_tasks(paths.queue_db)


def _db_files(home: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes() for p in sorted((home / "data").glob("queue.sqlite3*")) if "-shm" not in p.name
    }


NOTE = "no gputray owner is running: showing the queue as saved on disk"


def test_queue_without_an_owner_shows_the_saved_queue(saved_queue: tuple[Path, list[Any]]) -> None:
    home, records = saved_queue
    before = _db_files(home)
    as_json = gputray("queue", "--all", "--json", home=home)
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["tasks"] == [
        {**task_json(TaskView.of(r)), "device_name": None} for r in records
    ]  # as with an owner
    assert doc["queue"] == {"paused": False}
    assert {
        "key": "pci:0000:64:00.0",
        "name": "pci:0000:64:00.0",
        "slots": None,
        "running": 1,
        "paused": True,
        "free_in_s": None,  # only the owner estimates it
    } in doc["devices"]
    assert NOTE in as_json.stderr and NOTE not in as_json.stdout
    pending = json.loads(gputray("queue", "--json", home=home).stdout)["tasks"]
    assert [t["state"] for t in pending] == ["running", "waiting"]  # a crash's `running` is shown as saved

    text = gputray("queue", "--all", home=home)
    assert text.returncode == 0 and NOTE in text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "paused: pci:0000:64:00.0"
    assert lines[1].split() == [
        "ID",
        "STATE",
        "PRI",
        "DEVICE",
        "ENV",
        "START",
        "END",
        "DUR",
        "NAME",
        "REASON",
    ]
    assert "waiting for GeForce RTX 5060 Ti: llama-server uses 14.2 GiB" in text.stdout
    assert any("学習.py" in line and "exit 4" in line for line in lines)
    assert _db_files(home) == before  # read only: nothing recovered, migrated or checkpointed


def test_logs_without_an_owner_print_the_saved_log(saved_queue: tuple[Path, list[Any]]) -> None:
    home, records = saved_queue
    failed = next(r for r in records if r.state == "failed")
    out = gputray("logs", str(failed.id), home=home)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "epoch 1 loss 0.5\nこんにちは\n\ufffd\n"
    assert "no gputray owner is running" in out.stderr
    no_log = gputray("logs", str(next(r.id for r in records if r.state == "waiting")), home=home)
    assert (
        no_log.returncode == 0
        and no_log.stdout == ""
        and "has no log yet: it has not started (waiting)" in no_log.stderr
    )
    unknown = gputray("logs", "99", home=home)
    assert unknown.returncode == 1 and "no task #99 in the queue" in unknown.stderr
    word = gputray("logs", "abc", home=home)
    assert word.returncode == 1 and "task ids are whole numbers from 1" in word.stderr


@pytest.mark.parametrize("argv", [["queue", "--watch"], ["logs", "1", "--follow"]])
def test_watching_the_queue_still_needs_the_owner(
    saved_queue: tuple[Path, list[Any]], argv: list[str]
) -> None:
    home, _ = saved_queue
    before = _db_files(home)
    out = gputray(*argv, home=home)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "no gputray owner is running: start the tray app" in out.stderr
    assert _db_files(home) == before


@pytest.mark.parametrize("command", [["logs", "1", "--follow"], ["queue", "--watch", "0.05"]])
def test_watchers_caught_mid_shutdown_say_the_owner_went_away(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request that reaches the owner while it stops is answered "stopping", not dropped: the
    watching commands must read that as the owner going away (exit 3), not as a refusal (exit 1)."""
    from gputray.scheduler.ipc.server import IpcServer
    from gputray.scheduler.owner import OwnerStopping
    from gputray.scheduler.paths import app_paths
    from gputray.scheduler.protocol import Request

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    asked: list[str] = []

    def owner_that_stops_after_one_answer(req: Request[Any]) -> Reply:
        asked.append(req.op)
        if len(asked) > 1:
            raise OwnerStopping("the gputray owner is stopping")
        if req.op == "logs":
            return LogChunk(
                id=1, state="running", log_path=None, text="job says hi\n", offset=12, size=12, finished=False
            )
        return QueueReply(tasks=(), paused=Paused(), device_names={}, devices=())

    server = IpcServer(app_paths(), owner_that_stops_after_one_answer)
    server.start()
    try:
        code = cli.main(command)
    finally:
        server.stop()
    out, err = capsys.readouterr()
    assert code == 3, (out, err)
    assert "the gputray owner went away" in err and "is stopping" in err
    assert len(asked) == 2
    if command[0] == "logs":
        assert "job says hi" in out


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ({"tasks": [], "paused": {}, "device_names": {}, "devices": [], "shiny": 1}, "unknown field `shiny`"),
        ({"tasks": [{"id": 1, "state": "queued", "submitted_at": "2026-11-30T02:30:00Z"}], "paused": {},
          "device_names": {}, "devices": []}, "Expected `float | null`, got `str`"),
        (None, "Expected `object`, got `null`"),
    ],
)  # fmt: skip
def test_a_reply_from_an_owner_of_another_version_is_a_clear_error(
    reply: dict[str, Any] | None,
    words: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An owner that answers with a field this gputray does not know, or a time as text (the old ISO
    strings): `gputray queue` says the reply does not fit and how to fix it, exit 1, no traceback."""
    from gputray.scheduler.ipc.server import IpcServer
    from gputray.scheduler.paths import app_paths

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    server = IpcServer(app_paths(), lambda req: reply)  # type: ignore[arg-type, return-value]
    server.start()
    try:
        code = cli.main(["queue", "--json"])
    finally:
        server.stop()
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert "the owner's reply to 'queue' does not fit this gputray" in err and words in err
    assert "`gputray daemon --stop` then `gputray daemon`" in err and "Traceback" not in err


# -- issue 13: listing columns, filters, negative values, subcommand usage ---------------------------

NOW_S = dt.datetime(2026, 11, 30, 14, 0).timestamp()


def _reason(text: str) -> Reason | None:
    """A reason as the owner sends it: a code (an exit status), else words kept as written."""
    status = re.fullmatch(r"exited with status (\d+)", text)
    return ExitedWith(status=int(status.group(1))) if status else Said(text=text) if text else None


def _views(tasks: list[dict[str, Any]]) -> list[TaskView]:
    return [TaskView(**{**t, "reason": _reason(t.get("reason", ""))}) for t in tasks]


def _listed() -> list[dict[str, Any]]:
    running = {
        "id": 12, "name": "train a very long model name.py", "state": "running", "device": "pci:0000:01:00.0",
        "env": "cu128", "priority": 5, "exit_code": None, "started_at": NOW_S - 125, "ended_at": None,
        "reason": "redirected to GeForce RTX 5060 Ti: Radeon 780M busy (running 'upscale' (#11)); more words",
    }  # fmt: skip
    done = {
        "id": 9, "name": "bench", "state": "failed", "device": "cpu", "env": None, "priority": -3,
        "exit_code": 4, "started_at": NOW_S - 86_400 * 3, "ended_at": NOW_S - 86_400 * 3 + 3725,
        "reason": "exited with status 4",
    }  # fmt: skip
    return [running, done]


def test_listing_fits_80_columns_and_widens_when_there_is_room() -> None:
    names = {"pci:0000:01:00.0": "GeForce RTX 5060 Ti"}
    narrow = client.format_tasks(_views(_listed()), names, width=80, now_s=NOW_S).splitlines()
    assert all(terminal_cells(line) <= 80 for line in narrow), narrow
    assert narrow[0].split() == [
        "ID",
        "STATE",
        "PRI",
        "DEVICE",
        "ENV",
        "START",
        "END",
        "DUR",
        "NAME",
        "REASON",
    ]
    row = narrow[1].split()
    assert row[:3] == ["12", "running", "5"] and "cu128" in narrow[1] and "…" in narrow[1]
    assert dt.datetime.fromtimestamp(NOW_S - 125).strftime("%H:%M") in narrow[1]  # local time, today
    assert "2:05" in narrow[1]  # running for 2 min 5 s
    assert "1:02:05" in narrow[2] and "exited with" in narrow[2] and "-3" in narrow[2]
    wide = client.format_tasks(_views(_listed()), names, width=240, now_s=NOW_S).splitlines()
    assert "train a very long model name.py" in wide[1] and "more words" in wide[1]
    assert "GeForce RTX 5060 Ti" in wide[1]
    assert "exited with status 4" in wide[2] and "exit 4" not in wide[2]  # the status is said once
    assert dt.datetime.fromtimestamp(NOW_S - 86_400 * 3).strftime("%m-%d %H:%M") in wide[2]  # another day
    assert client.format_tasks(_views(_listed()), names, now_s=NOW_S) == "\n".join(wide)  # a pipe: in full


def test_filters_match_state_device_and_name() -> None:
    from gputray.scheduler.cli.commands.listing import parse_filter
    from gputray.scheduler.tasks.records import STATES

    names = {"pci:0000:01:00.0": "GeForce RTX 5060 Ti"}
    tasks = _views(_listed())
    f = parse_filter(["state=failed,device=cpu"], STATES)
    assert [t.id for t in tasks if f.matches(t, names)] == [9]
    f = parse_filter(["device=5060ti", "state=running,state=failed"], STATES)
    assert [t.id for t in tasks if f.matches(t, names)] == [12]
    assert [t.id for t in tasks if parse_filter(["name=BENCH"], STATES).matches(t, names)] == [9]
    for bad, words in (("colour=red", "filter by state, device, name, env"), ("state=done", "the states are"),
                       ("state", "KEY=VALUE")):  # fmt: skip
        with pytest.raises(ValueError, match=words):
            parse_filter([bad], STATES)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["submit", "a.png", "--vram", "-4GiB"], "--vram a size cannot be negative, got '-4GiB'"),
        (["run", "--max-wait", "-10m", "--", "true"], "--max-wait a duration cannot be negative"),
        (["run", "--retries", "-1", "--", "true"], "--retries must be between 0 and 100"),
        (["run", "--after", "-3", "--", "true"], "--after takes task ids like 3 or 3,4, not '-3'"),
        (["edit", "3", "--vram", "-1"], "--vram a size cannot be negative"),
    ],
)
def test_negative_values_are_refused_in_words_not_read_as_options(
    argv: list[str], words: str, tmp_path: Path
) -> None:
    done = gputray(*argv, home=tmp_path)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert "expected one argument" not in done.stderr


def test_a_negative_priority_is_a_value_and_run_keeps_its_program_line() -> None:
    from gputray.scheduler.cli import build_parser, glue_negative_values

    parser = build_parser("run")
    run_parser = parser._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    words = ["--priority", "-5", "--vram", "-1G", "--", "prog", "--vram", "-2"]
    assert glue_negative_values(words, run_parser) == [
        "--priority=-5",
        "--vram=-1G",
        "--",
        "prog",
        "--vram",
        "-2",
    ]
    assert glue_negative_values(["--device", "--json"], run_parser) == ["--device", "--json"]  # an option


def test_submit_name_and_unknown_options_get_the_subcommands_usage(tmp_path: Path) -> None:
    assert parse("submit", "a.png", "--name", "my upscale").name == "my upscale"
    done = gputray("submit", "a.png", "--naem", "x", home=tmp_path)
    assert done.returncode == 2
    assert "usage: gputray submit" in done.stderr and "unrecognized arguments: --naem x" in done.stderr
    assert "usage: gputray [-h]" not in done.stderr  # not the top-level usage
    no_name = gputray("submit", "--name", home=tmp_path)
    assert no_name.returncode == 2 and "usage: gputray submit" in no_name.stderr


@pytest.mark.parametrize(
    "argv",
    [["wait", "1"], ["clean"], ["edit", "1", "--priority", "2"], ["move", "1", "--top"]],
)  # remove works on the saved queue too (tests/scheduler/queue/test_offline_control.py)
def test_the_new_commands_need_the_owner(argv: list[str], tmp_path: Path) -> None:
    done = gputray(*argv, home=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no gputray owner is running" in done.stderr


def test_schedule_times_are_listed_in_local_time() -> None:
    from gputray.scheduler.cli.commands.schedule import _local

    at = dt.datetime(2026, 12, 1, 3, 0).timestamp()  # 03:00 here, whatever UTC says
    text = _local(at)
    assert text.startswith("2026-12-01 03:00") and "Z" not in text.split()[1]


def test_wait_says_how_a_task_ended_without_saying_it_twice() -> None:
    from gputray.scheduler.cli.commands.wait import _summary

    cancelled = TaskView(id=2, name="sleep", state="cancelled", reason=Cancelled())
    assert _summary(cancelled) == "#2 sleep: cancelled"  # not "cancelled: cancelled"
    failed = TaskView(
        id=3, name="train.py", state="failed", exit_code=3, reason=Said(text="exit 3 after 2 attempts")
    )
    assert _summary(failed) == "#3 train.py: failed (exit 3): exit 3 after 2 attempts"


def test_listing_shows_the_energy_each_run_used_once_one_has_it() -> None:
    """An ENERGY column after DUR, only when a listed task has a measured energy; ``*`` and a note
    below the table where the GPU ran other work too (its figure is the whole device's)."""
    base = {"state": "succeeded", "device": "pci:0000:64:00.0", "exit_code": 0, "started_at": NOW_S - 60,
            "ended_at": NOW_S}  # fmt: skip
    tasks = [
        {**base, "id": 1, "name": "alone", "energy_j": 1500.0},
        {**base, "id": 2, "name": "beside llama", "energy_j": 12_345.0, "energy_shared": True},
        {**base, "id": 3, "name": "on the cpu", "device": "cpu"},
    ]
    header, alone, shared, cpu, note = client.format_tasks(_views(tasks), width=100, now_s=NOW_S).splitlines()
    assert header.split() == ["ID", "STATE", "PRI", "DEVICE", "ENV", "START", "END", "DUR", "ENERGY", "NAME",
                              "REASON"]  # fmt: skip
    at = header.index("ENERGY")
    assert (
        alone[at:].startswith("1500 J ") and shared[at:].startswith("12.3 kJ* ") and cpu[at:].startswith("- ")
    )
    assert note.startswith("* the GPU ran other work too")
    unmeasured = client.format_tasks(_views([tasks[2]]), width=100, now_s=NOW_S).splitlines()
    assert "ENERGY" not in unmeasured[0] and len(unmeasured) == 2


def test_max_slowdown_without_greenest_is_said_to_do_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from gputray.scheduler.replies import Submitted

    queued = Submitted(tasks=(TaskView(id=21, name="true", state="queued", prefer="free"),))
    args = argparse.Namespace(max_slowdown=2.0, wait=False, json=False)
    assert submit._submitted(queued, args) == 0
    out = capsys.readouterr()
    assert out.err == "gputray: note: --max-slowdown applies only with --prefer greenest (#21 prefers free)\n"
    green = Submitted(tasks=(TaskView(id=22, name="true", state="queued", prefer="greenest"),))
    assert submit._submitted(green, args) == 0
    assert capsys.readouterr().err == ""


def test_the_progress_column_tells_no_time_left_of_a_paused_job() -> None:
    from gputray.scheduler.cli.commands.listing import progress_cell

    running = TaskView(id=1, name="train", state="running", progress=0.45, eta_s=25.0)
    assert progress_cell(running) == "45% ~25 s"
    paused = TaskView(id=1, name="train", state="running", progress=0.45, eta_s=25.0, paused_at=1.0)
    assert progress_cell(paused) == "45%"  # its STATE says paused; "~3 min" of a frozen job read as a promise
