"""``gputray schedule add|list|remove``: recurring submissions (cron), kept by the owner."""

from __future__ import annotations

import argparse
import datetime as dt

import msgspec

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import EXIT_USAGE, absolute, ask, current_folder, run_command
from gputray.scheduler.cli.commands.common import print_json, shown
from gputray.scheduler.replies import ScheduleView
from gputray.scheduler.tasks.times import iso_utc


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "schedule",
        help="recurring submissions (cron)",
        description=(
            "Submit a task file on a schedule. Runs missed while the computer slept or gputray was not "
            "running are made up once, not once per missed run."
        ),
    )
    s = p.add_subparsers(dest="schedule_cmd", metavar="ACTION")
    add = s.add_parser(
        "add", help="add a schedule", description='e.g. gputray schedule add --cron "0 3 * * *" nightly.toml'
    )
    add.add_argument(
        "--cron",
        required=True,
        metavar="'M H DOM MON DOW'",
        help='five crontab fields, local time: "0 3 * * *" (weekday 0 or 7 = Sunday, or sun..sat; a '
        "day of the month and a weekday both given: either one, as in crontab)",
    )
    add.add_argument("task", metavar="TASKFILE")
    add.add_argument("--name", help="a name for the listing")
    add.add_argument("--json", action="store_true")
    lst = s.add_parser("list", help="list schedules")
    lst.add_argument("--json", action="store_true")
    rm = s.add_parser("remove", help="remove a schedule")
    rm.add_argument("id", metavar="ID")
    rm.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: run_command(_cmd_schedule, a), _parser=p)


def _cmd_schedule(args: argparse.Namespace) -> int:
    if args.schedule_cmd == "add":
        task_file = absolute(args.task)
        result = ask(
            rq.ScheduleAdd(cron=args.cron, task_file=task_file, name=args.name, cwd=current_folder())
        )
    elif args.schedule_cmd == "remove":
        result = ask(rq.ScheduleRemove(id=args.id))
    elif args.schedule_cmd == "list":
        result = ask(rq.ScheduleList())
    else:
        args._parser.print_help()
        return EXIT_USAGE
    entries = list(result.schedules)
    if args.json:
        docs = [schedule_json(e) for e in entries]
        print_json(docs if args.schedule_cmd == "list" else docs[0])
        return 0
    if not entries:
        print("no schedules")
    for e in entries:
        prefix = "removed " if args.schedule_cmd == "remove" else ""
        nxt = f", next {_local(e.next_run_at)}" if e.next_run_at is not None else ""
        last = f", last {_local(e.last_run_at)}" if e.last_run_at is not None else ""
        err = f", last error: {e.last_error}" if e.last_error else ""
        print(f"{prefix}#{e.id} {shown(e.name)}: {e.cron} → {shown(e.task_file)}{nxt}{last}{err}")
    return 0


def schedule_json(entry: ScheduleView) -> dict[str, object]:
    """The ``schedule --json`` document of one schedule: times as ISO 8601 UTC."""
    return {
        "id": entry.id,
        "name": entry.name,
        "cron": entry.cron,
        "task_file": entry.task_file,
        "overrides": msgspec.to_builtins(entry.overrides),
        "created_at": iso_utc(entry.created_at),
        "last_run_at": iso_utc(entry.last_run_at),
        "next_run_at": iso_utc(entry.next_run_at),
        "last_error": entry.last_error,
    }


def _local(epoch_s: float) -> str:
    """A schedule time as local time, as the cron fields are read."""
    try:
        return dt.datetime.fromtimestamp(epoch_s).astimezone().strftime("%Y-%m-%d %H:%M %Z")
    except (OverflowError, OSError, ValueError):
        return "?"
