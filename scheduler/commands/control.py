"""``gputray cancel``, ``retry``, ``pause`` and ``resume``: thin clients of the owner's socket."""

from __future__ import annotations

import argparse
import sys

from gputray.scheduler.commands.client import EXIT_REFUSED, _ask, _client_call, _pause_label
from gputray.scheduler.commands.common import print_json, shown


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cancel",
        help="cancel tasks",
        description="Cancel tasks; a running one is stopped with its whole process tree.",
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: _client_call(_cmd_cancel, a))

    p = sub.add_parser(
        "retry",
        help="queue a finished task again",
        description="Queue a finished task (failed, cancelled, interrupted or succeeded) again.",
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: _client_call(_cmd_retry, a))

    for name, verb in (("pause", "Stop starting"), ("resume", "Start again")):
        p = sub.add_parser(
            name,
            help=f"{name} the queue or one device",
            description=f"{verb} new tasks on DEVICE (5060ti, 780m, cpu or a device key), or on all devices. "
            "Running tasks are not touched.",
        )
        p.add_argument("device", nargs="?", metavar="DEVICE")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=lambda a, op=name: _client_call(lambda x: _cmd_pause(x, op), a))


def _cmd_cancel(args: argparse.Namespace) -> int:
    result = _ask("cancel", ids=list(args.ids))
    if args.json:
        print_json(result)
    else:
        for t in result.get("tasks", []):
            print(f"#{t['id']} {shown(t['name'])}: {t['state']}")
    for err in result.get("errors", []):
        print(f"gputray: {err}", file=sys.stderr)
    return EXIT_REFUSED if result.get("errors") else 0


def _cmd_retry(args: argparse.Namespace) -> int:
    result = _ask("retry", id=args.id)
    if args.json:
        print_json(result["task"])
    else:
        t = result["task"]
        print(f"#{t['id']} {shown(t['name'])}: {t['state']}")
    return 0


def _cmd_pause(args: argparse.Namespace, op: str) -> int:
    result = _ask(op, device=args.device)
    paused = result.get("paused") or {}
    if args.json:
        print_json(paused)
    else:
        on = [_pause_label(k) for k, v in paused.items() if v]
        print(f"paused: {', '.join(on)}" if on else "nothing is paused")
    return 0
