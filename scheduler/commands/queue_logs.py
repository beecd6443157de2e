"""``gputray queue`` and ``gputray logs``. Without ``--watch`` / ``--follow`` they still answer when no
owner runs: they read the queue file read-only (``store.read_saved_queue``) and the log files, and say
so on stderr."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from gputray.scheduler import ipc
from gputray.scheduler.commands.client import (
    EXIT_REFUSED,
    NO_OWNER_NOTE,
    STATES_HELP,
    _ask_again,
    _client_call,
    _no_log,
    _pause_label,
    format_tasks,
    print_task_json,
)
from gputray.scheduler.commands.common import error, positive_seconds, shown
from gputray.scheduler.paths import app_paths


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_queue(sub)
    _register_logs(sub)


def _register_queue(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "queue",
        help="list queued and running tasks",
        description=f"List the tasks waiting or running, with why each waits. {STATES_HELP}. With no owner "
        "running, shows the queue as saved on disk (read-only; a note on stderr says so).",
    )
    p.add_argument("--all", action="store_true", help="include finished tasks")
    p.add_argument(
        "--json",
        action="store_true",
        help="a JSON list; per task: id, name, kind, state, device, env, reason, exit_code, attempts, "
        "submitted_at, started_at, ended_at, log_path (times ISO 8601 UTC)",
    )
    p.add_argument(
        "--watch",
        nargs="?",
        type=positive_seconds,
        const=1.0,
        metavar="SECONDS",
        help="refresh every SECONDS until Ctrl+C (exit status 3 if the owner stops meanwhile)",
    )
    p.set_defaults(func=lambda a: _client_call(_cmd_queue, a, None if a.watch else _saved_queue))


def _cmd_queue(args: argparse.Namespace) -> int:
    tty = sys.stdout.isatty()
    first = True
    with ipc.IpcClient(app_paths()) as client:
        while True:
            if args.watch:
                result = _ask_again(client, "queue", "the list above is the last one seen", all=args.all)
            else:
                result = client.request("queue", all=args.all)
            if args.watch and not args.json:
                if tty:
                    sys.stdout.write("\x1b[H\x1b[2J")
                elif not first:  # a pipe or a file: listings one after another
                    sys.stdout.write("\n")
            first = False
            _print_queue(result, args.json)
            sys.stdout.flush()
            if not args.watch:
                return 0
            try:
                time.sleep(max(0.2, args.watch))
            except KeyboardInterrupt:
                return 0


def _print_queue(result: dict[str, Any], as_json: bool) -> None:
    tasks = result.get("tasks", [])
    if as_json:
        print_task_json(tasks)
        return
    paused = [_pause_label(k) for k, v in (result.get("paused") or {}).items() if v]
    if paused:
        print(f"paused: {', '.join(paused)}")
    print(format_tasks(tasks, result.get("device_names") or {}))


def _saved_paused(paths: Any) -> dict[str, bool]:
    """What ``pause`` left on disk, in the owner's ``paused`` reply shape."""
    from gputray.scheduler.pause_file import PAUSE_ALL, read_paused

    paused_all, devices = read_paused(paths.data_dir)
    return {PAUSE_ALL: paused_all, **dict.fromkeys(devices, True)}


def _saved_queue(args: argparse.Namespace) -> int:
    """`gputray queue` without an owner: the queue file, read-only, in the owner's format."""
    from gputray.scheduler.store import read_saved_queue

    paths = app_paths()
    saved = read_saved_queue(paths.queue_db, include_finished=bool(args.all))
    records = saved.tasks
    print(f"gputray: {NO_OWNER_NOTE}", file=sys.stderr)
    for note in saved.notes:  # a damaged file, a row that is no task: the rest is shown all the same
        print(f"gputray: note: {shown(note)}", file=sys.stderr)
    result = {
        "tasks": [r.to_json() for r in records],
        "paused": _saved_paused(paths),
        "device_names": {"cpu": "CPU"},
    }
    _print_queue(result, args.json)
    sys.stdout.flush()
    return 0


def _register_logs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "logs",
        help="print a task's output",
        description="Print a task's log (stdout and stderr); without a running owner too, except --follow.",
    )
    p.add_argument("id", metavar="ID")
    p.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing until the task finishes (exit status 3 if the owner stops first)",
    )
    p.set_defaults(func=lambda a: _client_call(_cmd_logs, a, None if a.follow else _saved_log))


def _cmd_logs(args: argparse.Namespace) -> int:
    offset = 0
    out = sys.stdout
    with ipc.IpcClient(app_paths()) as client:
        while True:
            what = f"task {args.id}'s log above is complete up to then"
            chunk = _ask_again(client, "logs", what, id=args.id, offset=offset)
            text = chunk.get("text", "")
            if text:
                out.write(text)
                out.flush()
            moved = chunk["offset"] != offset
            offset = chunk["offset"]
            if moved:
                continue
            if not args.follow or chunk.get("finished") or chunk.get("state") == "interrupted":
                if not chunk.get("log_path") and not args.follow:
                    print(f"gputray: {_no_log(args.id, str(chunk.get('state')))}", file=sys.stderr)
                return 0
            try:
                time.sleep(0.25)
            except KeyboardInterrupt:
                return 0


def _saved_log(args: argparse.Namespace) -> int:
    """`gputray logs ID` without an owner: the log path from the queue file (read-only), then the log."""
    import codecs

    from gputray.scheduler.store import read_saved_task

    text_id = str(args.id).strip().lstrip("#")
    if not text_id.isdigit():
        return error(f"task ids are whole numbers from 1, not {args.id!r}; see `gputray queue`", EXIT_REFUSED)
    rec = read_saved_task(app_paths().queue_db, int(text_id))
    print("gputray: no gputray owner is running: showing the log as saved on disk", file=sys.stderr)
    if not rec.log_path:
        print(f"gputray: {_no_log(args.id, rec.state)}", file=sys.stderr)
        return 0
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        with open(rec.log_path, "rb") as f:
            while chunk := f.read(1 << 20):
                sys.stdout.write(decoder.decode(chunk))
    except FileNotFoundError:
        return 0  # as the owner answers: the job has not written anything yet
    sys.stdout.write(decoder.decode(b"", final=True))
    sys.stdout.flush()
    return 0
