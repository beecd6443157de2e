"""``gputray remove ID…`` and ``gputray clean``: forget tasks and delete their logs."""

from __future__ import annotations

import argparse
import sys

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import EXIT_REFUSED, UsageError, ask, run_command
from gputray.scheduler.cli.commands.common import print_json, shown, task_json
from gputray.scheduler.cli.commands.control import answer_with
from gputray.scheduler.paths import app_paths
from gputray.scheduler.replies import Tasks, TasksDone

CLEAN_STATES = ("succeeded", "failed", "cancelled")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "remove",
        help="remove tasks and their logs",
        description=(
            "Remove tasks from the queue and delete their logs: ended ones, and queued or waiting ones "
            "(they never start). A running task needs --force, which cancels it first. A task that "
            "another queued task waits for (--after) stays until that one is removed or cancelled too."
        ),
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--force", action="store_true", help="cancel a running task first, then remove it")
    p.add_argument("--json", action="store_true", help="print the removed tasks as JSON")
    answer_with(
        p,
        _print_remove,
        lambda a: ask(rq.Remove(ids=list(a.ids), force=a.force)),
        lambda offline, a: offline.remove(app_paths(), list(a.ids), force=a.force),
    )

    p = sub.add_parser(
        "clean",
        help="remove ended tasks and their logs",
        description=(
            "Remove ended tasks (succeeded, failed, cancelled) and delete their logs; queued, waiting "
            "and running tasks are never touched, nor an ended task that a task staying waits for. "
            "With --older-than and/or --keep, only those past either limit: the owner applies the "
            "config's [retention] keep_days / keep_tasks (default 30 days, 1000 tasks) the same way "
            "every few minutes."
        ),
    )
    p.add_argument(
        "--older-than",
        metavar="DURATION",
        help="only tasks that ended longer ago than this, e.g. 7d or 12h (default: all); the runtimes "
        "learnt from job families not run for as long are forgotten too",
    )
    p.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="keep the newest N ended tasks, remove the older ones (with --older-than: either limit)",
    )
    p.add_argument(
        "--state",
        action="append",
        metavar="STATE",
        help=f"only tasks in this state: {', '.join(CLEAN_STATES)} (repeatable, or comma-separated)",
    )
    p.add_argument("--json", action="store_true", help="print the removed tasks as JSON")
    p.set_defaults(func=lambda a: run_command(_cmd_clean, a))


def _print_removed(tasks: Tasks, as_json: bool, notes: tuple[str, ...]) -> None:
    if as_json:
        print_json([task_json(t) for t in tasks])
    else:
        for t in tasks:
            print(f"removed #{t.id} {shown(t.name)} ({t.state})")
        if not tasks:
            print("nothing removed")
    for note in notes:
        print(f"gputray: {note}", file=sys.stderr)


def _print_remove(args: argparse.Namespace, result: TasksDone) -> int:
    _print_removed(result.tasks, args.json, result.errors)
    return EXIT_REFUSED if result.errors else 0


def _cmd_clean(args: argparse.Namespace) -> int:
    older_than_s = None
    if args.older_than is not None:
        from gputray.scheduler.tasks.taskfile import parse_duration

        try:
            older_than_s = parse_duration(args.older_than)
        except ValueError as exc:
            raise UsageError(f"--older-than {exc}") from None
    states = [s.strip() for item in args.state or [] for s in item.split(",") if s.strip()]
    bad = [s for s in states if s not in CLEAN_STATES]
    if bad:
        raise UsageError(f"--state {bad[0]!r}: clean removes tasks that ended: {', '.join(CLEAN_STATES)}")
    if args.keep is not None and args.keep < 0:
        raise UsageError(f"--keep {args.keep}: expected a count of tasks, 0 or more")
    result = ask(rq.Clean(older_than_s=older_than_s, keep=args.keep, states=states or None))
    _print_removed(result.tasks, args.json, result.kept)
    return 0
