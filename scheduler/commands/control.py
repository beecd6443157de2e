"""``gputray cancel``, ``retry``, ``pause`` and ``resume``: thin clients of the owner's socket. With no
owner running they act on the saved queue itself (``offline``), under the lock the owner takes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gputray.scheduler.commands.client import EXIT_NO_OWNER, EXIT_REFUSED, _ask, _client_call, paused_labels
from gputray.scheduler.commands.common import error, paused_json, print_json, shown, task_json
from gputray.scheduler.paths import app_paths
from gputray.scheduler.replies import PausedReply, TaskReply, TasksDone


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cancel",
        help="cancel tasks",
        description="Cancel tasks; a running one is stopped with its whole process tree.",
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: _client_call(_cmd_cancel, a, _offline(_print_cancel, _offline_cancel)))

    p = sub.add_parser(
        "retry",
        help="queue a finished task again",
        description="Queue a finished task (failed, cancelled, interrupted or succeeded) again.",
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: _client_call(_cmd_retry, a, _offline(_print_retry, _offline_retry)))

    for name, verb in (("pause", "Stop starting"), ("resume", "Start again")):
        p = sub.add_parser(
            name,
            help=f"{name} the queue or one device",
            description=f"{verb} new tasks on DEVICE (5060ti, 780m, cpu or a device key), or on all devices. "
            "Running tasks are not touched.",
        )
        p.add_argument("device", nargs="?", metavar="DEVICE")
        p.add_argument("--json", action="store_true")
        p.set_defaults(
            func=lambda a, op=name: _client_call(
                lambda x: _print_pause(x, _ask(op, device=x.device)),
                a,
                _offline(_print_pause, lambda x, op=op: _offline_pause(x, op)),
            )
        )


OFFLINE_NOTE = "no gputray owner is running: acted on the saved queue"


def _offline(printer: Callable[[argparse.Namespace, Any], int], answer: Any) -> Any:
    """The command against the saved queue (no owner answered): the same printing, a note first."""

    def run(args: argparse.Namespace) -> int:
        from gputray.scheduler import offline
        from gputray.scheduler.protocol import Refusal

        try:
            result = answer(args)
        except offline.QueueBusy as exc:
            return error(str(exc), EXIT_NO_OWNER)
        except Refusal as exc:
            return error(str(exc), EXIT_REFUSED)
        print(f"gputray: {OFFLINE_NOTE}", file=sys.stderr)
        return printer(args, result)

    return run


def _offline_cancel(args: argparse.Namespace) -> TasksDone:
    from gputray.scheduler import offline

    return offline.cancel(app_paths(), list(args.ids))


def _offline_retry(args: argparse.Namespace) -> TaskReply:
    from gputray.scheduler import offline

    return offline.retry(app_paths(), args.id)


def _offline_pause(args: argparse.Namespace, op: str) -> PausedReply:
    from gputray.scheduler import offline

    return offline.pause(app_paths(), op, args.device)


def _cmd_cancel(args: argparse.Namespace) -> int:
    return _print_cancel(args, _ask("cancel", ids=list(args.ids)))


def _print_cancel(args: argparse.Namespace, result: TasksDone) -> int:
    if args.json:
        print_json({"tasks": [task_json(t) for t in result.tasks], "errors": result.errors})
    else:
        for t in result.tasks:
            print(f"#{t.id} {shown(t.name)}: {t.state}")
    for err in result.errors:
        print(f"gputray: {err}", file=sys.stderr)
    return EXIT_REFUSED if result.errors else 0


def _cmd_retry(args: argparse.Namespace) -> int:
    return _print_retry(args, _ask("retry", id=args.id))


def _print_retry(args: argparse.Namespace, result: TaskReply) -> int:
    t = result.task
    if args.json:
        print_json(task_json(t))
    else:
        print(f"#{t.id} {shown(t.name)}: {t.state}")
    return 0


def _print_pause(args: argparse.Namespace, result: PausedReply) -> int:
    if args.json:
        print_json(paused_json(result))
    else:
        on = paused_labels(result.paused)
        print(f"paused: {on}" if on else "nothing is paused")
    return 0
