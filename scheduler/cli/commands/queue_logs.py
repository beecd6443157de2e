"""``gputray queue`` and ``gputray logs``. Without ``--watch`` / ``--follow`` they still answer when no
owner runs: they read the queue file read-only (``saved_queue.read_saved_queue``) and the log files, and say
so on stderr."""

from __future__ import annotations

import argparse
import os
import sys
import time

from msgspec import to_builtins

from gputray.scheduler import console, ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import (
    EXIT_REFUSED,
    NO_OWNER_NOTE,
    STATES_HELP,
    UsageError,
    ask_again,
    format_tasks,
    no_log_text,
    paused_labels,
    print_task_json,
    run_command,
)
from gputray.scheduler.cli.commands.common import error, positive_seconds, shown, task_json
from gputray.scheduler.cli.commands.listing import TaskFilter, format_devices, parse_filter, terminal_width
from gputray.scheduler.paths import app_paths
from gputray.scheduler.replies import DeviceSlots, QueueReply, views


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_queue(sub)
    _register_logs(sub)


def _register_queue(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "queue",
        help="list queued and running tasks",
        description=f"List the tasks waiting or running, with why each waits, and each device's jobs "
        f"(running/slots). {STATES_HELP}. Times are local. Columns fit the terminal (80 columns and "
        "up); a pipe gets them in full unless COLUMNS is set. With no owner running, shows the queue as "
        "saved on disk (read-only; a note on stderr says so).",
    )
    p.add_argument("--all", action="store_true", help="include finished tasks")
    p.add_argument(
        "--filter",
        action="append",
        metavar="KEY=VALUE[,...]",
        help="only tasks that match every KEY=VALUE: state (e.g. failed), device (a name like 780m, "
        "or cpu), name (a part of it), env; a key given twice matches either value. A state filter "
        "includes finished tasks",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='an object {"tasks": [...], "queue": {"paused"}, "devices": [{key, name, slots, running, '
        "paused, free_in_s}]}; per task: id, name, kind, state, device, device_name, env, reason, "
        "exit_code, attempts, submitted_at, started_at, ended_at, log_path, priority, after, after_any, "
        "cwd (times ISO 8601 UTC), machine and remote_id (the machine it runs on and its id there, for a "
        "task another machine of the cluster runs), origin, energy_j, energy_shared, energy_estimated_s "
        "and power_avg_w (the GPU energy of its last run, null where none was measured; the seconds of "
        "it counted from power because the energy counter glitched), prefer and family (the placement "
        "policy, and whose earlier runs estimate it), offer (run elsewhere now?) and "
        "estimate_s (a pending task of a family that ran before: device_key, device_name, run_s, "
        "finish_s, runs per device it may use; runs 0: scaled from another device), progress and eta_s "
        "(a running job that reports its progress: the fraction done, 0-1, and the seconds left at its "
        "pace; null otherwise)",
    )
    p.add_argument(
        "--watch",
        nargs="?",
        type=positive_seconds,
        const=1.0,
        metavar="SECONDS",
        help="refresh every SECONDS until Ctrl+C (exit status 3 if the owner stops meanwhile)",
    )
    p.set_defaults(func=lambda a: run_command(_cmd_queue, a, None if a.watch else _saved_queue))


def _task_filter(args: argparse.Namespace) -> TaskFilter | None:
    if not args.filter:
        return None
    from gputray.scheduler.tasks.states import STATES

    try:
        return parse_filter(args.filter, STATES)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _cmd_queue(args: argparse.Namespace) -> int:
    tty = sys.stdout.isatty()
    first = True
    wanted = _task_filter(args)
    everything = bool(args.all or wanted is not None)
    with ipc.IpcClient(app_paths()) as client:
        while True:
            if args.watch:
                result: QueueReply = ask_again(
                    client, rq.Queue(all=everything), "the list above is the last one seen"
                )
            else:
                result = client.ask(rq.Queue(all=everything))
            if args.watch and not args.json:
                if tty:
                    sys.stdout.write("\x1b[H\x1b[2J")
                elif not first:  # a pipe or a file: listings one after another
                    sys.stdout.write("\n")
            first = False
            _print_queue(result, args, wanted)
            sys.stdout.flush()
            if not args.watch:
                return 0
            time.sleep(max(0.2, args.watch))  # until Ctrl+C: exit status 130 (cli.main)


def _print_queue(result: QueueReply, args: argparse.Namespace, wanted: TaskFilter | None) -> None:
    from gputray.scheduler.tasks.states import FINISHED_STATES

    names = result.device_names
    tasks = list(result.tasks)
    if wanted is not None:
        tasks = [t for t in tasks if wanted.matches(t, names)]
        if not args.all and not wanted.names_a_state:
            tasks = [t for t in tasks if t.state not in FINISHED_STATES]
    devices = result.devices
    if args.json:
        listed = [{**task_json(t), "device_name": names.get(t.device or "")} for t in tasks]
        print_task_json(
            {"tasks": listed, "queue": {"paused": result.paused.all}, "devices": to_builtins(devices)}
        )
        return
    if paused_labels(result.paused, names):
        print(f"paused: {paused_labels(result.paused, names)}")
    if format_devices(devices):
        print(format_devices(devices))
    if not tasks and wanted is not None:
        print("no task matches the filter")
        return
    print(format_tasks(tasks, names, width=terminal_width()))


def _saved_queue(args: argparse.Namespace) -> int:
    """`gputray queue` without an owner: the queue file, read-only, in the owner's format (slots and
    device names are the owner's to know: CPU is named, the rest by key)."""
    from gputray.scheduler.queue.saved_queue import read_saved_queue

    wanted = _task_filter(args)
    paths = app_paths()
    saved = read_saved_queue(paths.queue_db, include_finished=bool(args.all or wanted is not None))
    records = saved.tasks
    print(f"gputray: {NO_OWNER_NOTE}", file=sys.stderr)
    for note in saved.notes:  # a damaged file, a row that is no task: the rest is shown all the same
        print(f"gputray: note: {shown(note)}", file=sys.stderr)
    from gputray.scheduler.queue.pause_file import read_paused

    paused = read_paused(paths.data_dir)
    names = {"cpu": "CPU"}
    devices = tuple(
        DeviceSlots(
            key=key,
            name=names.get(key, key),
            slots=None,
            running=sum(1 for r in records if r.device == key and r.state == "running"),
            paused=key in paused.devices,
        )
        for key in dict.fromkeys(["cpu", *sorted(paused.devices)])
    )
    result = QueueReply(tasks=views(records), paused=paused, device_names=names, devices=devices)
    _print_queue(result, args, wanted)
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
    p.set_defaults(func=lambda a: run_command(_cmd_logs, a, None if a.follow else _saved_log))


def _cmd_logs(args: argparse.Namespace) -> int:
    offset = 0
    end: int | None = None  # without --follow: the log's size at the first answer, where printing stops
    out = sys.stdout
    console.keep_line_ends(out)  # a job's CR LF stays CR LF on Windows, not CR CR LF
    with ipc.IpcClient(app_paths()) as client:
        while True:
            what = f"task {args.id}'s log above is complete up to then"
            bound = None if end is None else end - offset
            chunk = ask_again(client, rq.Logs(id=args.id, offset=offset, max_bytes=bound), what)
            if chunk.text:
                out.write(chunk.text)
                out.flush()
            if end is None and not args.follow:
                end = chunk.size  # a job writing faster than this reads must not keep it here
            moved = chunk.offset != offset
            offset = chunk.offset
            if moved and (end is None or offset < end):
                continue
            if not args.follow or chunk.finished or chunk.state == "interrupted":
                if not chunk.log_path and not args.follow:
                    print(f"gputray: {no_log_text(args.id, chunk.state)}", file=sys.stderr)
                return 0
            time.sleep(0.25)  # Ctrl+C: exit status 130 (cli.main), as `wait` gives


def _saved_log(args: argparse.Namespace) -> int:
    """`gputray logs ID` without an owner: the log path from the queue file (read-only), then the log."""
    import codecs

    from gputray.scheduler.jobs.log_files import LogNotReadable, open_log
    from gputray.scheduler.queue.saved_queue import read_saved_task

    text_id = str(args.id).strip().lstrip("#")
    if not text_id.isdigit():
        return error(f"task ids are whole numbers from 1, not {args.id!r}; see `gputray queue`", EXIT_REFUSED)
    rec = read_saved_task(app_paths().queue_db, int(text_id))
    print("gputray: no gputray owner is running: showing the log as saved on disk", file=sys.stderr)
    if not rec.log_path:
        print(f"gputray: {no_log_text(args.id, rec.state)}", file=sys.stderr)
        return 0
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    console.keep_line_ends(sys.stdout)
    try:
        f = open_log(rec.log_path)  # a FIFO or a link in its place is refused, not waited on or followed
    except FileNotFoundError:
        return 0  # as the owner answers: the job has not written anything yet
    except LogNotReadable as exc:
        return error(str(exc), EXIT_REFUSED)
    with f:
        left = os.fstat(f.fileno()).st_size  # what exists now: a job still writing does not keep us here
        while left > 0 and (chunk := f.read(min(left, 1 << 20))):
            left -= len(chunk)
            sys.stdout.write(decoder.decode(chunk))
    sys.stdout.write(decoder.decode(b"", final=True))
    sys.stdout.flush()
    return 0
