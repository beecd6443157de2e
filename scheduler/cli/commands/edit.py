"""``gputray edit ID …`` (a task that has not started) and ``gputray move ID`` (``--top``, ``--bottom``,
``--before OTHER``, ``--after OTHER``)."""

from __future__ import annotations

import argparse

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import UsageError, ask, run_command
from gputray.scheduler.cli.commands.common import print_json, shown, task_json
from gputray.scheduler.cli.commands.submit import add_placement_args, named, patch_from_args
from gputray.scheduler.replies import TaskView


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "edit",
        help="change a task that has not started",
        description=(
            "Change where, when and how a queued or waiting task runs: the options are those of "
            "`gputray run`/`submit` (--env adds variables, --keep-waiting adds residents; `none` clears "
            "--at, --window, --after and --keep-waiting). "
            "A running or ended task is refused with the reason."
        ),
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("--name", help="a new name for the listing")
    add_placement_args(p, editing=True)
    p.add_argument("--json", action="store_true", help="print the task as JSON")
    p.set_defaults(func=lambda a: run_command(_cmd_edit, a))

    p = sub.add_parser(
        "move",
        help="reorder the queue",
        description=(
            "Move a queued or waiting task to the top or the bottom of the queue, or just before or "
            "after another one. It takes the priority of the task it lands next to (see --priority)."
        ),
    )
    p.add_argument("id", metavar="ID")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--top", action="store_true", help="first in the queue")
    where.add_argument("--bottom", action="store_true", help="last in the queue")
    where.add_argument("--before", metavar="OTHER", help="just before task OTHER")
    where.add_argument("--after", metavar="OTHER", help="just after task OTHER")
    p.add_argument("--json", action="store_true", help="print the task as JSON")
    p.set_defaults(func=lambda a: run_command(_cmd_move, a))


def _cmd_edit(args: argparse.Namespace) -> int:
    changes = patch_from_args(args, editing=True)
    if args.name is not None:
        changes = changes.then(named(args.name))
    if not changes.given():
        raise UsageError(
            "nothing to change: give --priority, --device, --at, --name, --decline-offer, --keep-waiting … "
            "(see --help)"
        )
    _print_task(ask(rq.Edit(id=args.id, changes=changes)).task, args.json)
    return 0


def _cmd_move(args: argparse.Namespace) -> int:
    result = ask(rq.Move(id=args.id, top=args.top, bottom=args.bottom, before=args.before, after=args.after))
    _print_task(result.task, args.json)
    return 0


def _print_task(task: TaskView, as_json: bool) -> None:
    if as_json:
        print_json(task_json(task))
    else:
        print(f"#{task.id} {shown(task.name)}: {task.state}, priority {task.priority}")
