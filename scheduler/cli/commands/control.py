"""``gputray cancel``, ``retry``, ``pause`` and ``resume``: thin clients of the owner's socket. With no
owner running they act on the saved queue itself (``offline``), under the lock the owner takes.
``pause-job`` and ``resume-job`` (one running job frozen and thawed) need the owner: it holds the job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import (
    EXIT_NO_OWNER,
    EXIT_REFUSED,
    ask,
    paused_labels,
    run_command,
)
from gputray.scheduler.cli.commands.common import (
    error,
    paused_json,
    print_json,
    reason_text,
    shown,
    task_json,
)
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
    answer_with(
        p,
        _print_cancel,
        lambda a: ask(rq.Cancel(ids=list(a.ids))),
        lambda offline, a: offline.cancel(app_paths(), list(a.ids)),
    )

    p = sub.add_parser(
        "retry",
        help="queue a finished task again (and the tasks it failed through --after)",
        description=(
            "Queue a finished task (failed, cancelled, interrupted or succeeded) again: the same ID, "
            "command, options and files, at the end of the queue. Its device and Python env are chosen "
            "afresh (as when it was submitted); attempts count on (its log keeps the earlier output and "
            "the new run starts with an 'attempt N' header) and its automatic retries (--retries) start "
            "afresh. Tasks that failed because this one failed or was cancelled (--after, down the "
            "chain) are queued again too. Without a running owner it acts on the saved queue."
        ),
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true")
    answer_with(
        p,
        _print_retry,
        lambda a: ask(rq.Retry(id=a.id)),
        lambda offline, a: offline.retry(app_paths(), a.id),
    )

    for name, verb in (("pause", "Stop starting"), ("resume", "Start again")):
        p = sub.add_parser(
            name,
            help=f"{name} the queue or one device",
            description=f"{verb} new tasks on DEVICE (5060ti, 780m, cpu or a device key), or on all devices. "
            "Running tasks are not touched.",
        )
        p.add_argument("device", nargs="?", metavar="DEVICE")
        p.add_argument("--json", action="store_true")
        p.set_defaults(op=name)
        answer_with(
            p,
            _print_pause,
            lambda a: ask(rq.Pause(device=a.device) if a.op == "pause" else rq.Resume(device=a.device)),
            lambda offline, a: offline.pause(app_paths(), a.op, a.device),
        )

    for name, short, verb, request in (
        (
            "pause-job",
            "freeze one running job (its GPU memory freed where cuda-checkpoint can)",
            "Pause a running job: every process of it is frozen (its cgroup's freezer, else SIGSTOP to "
            "each; Windows: each thread suspended); its slot on the device is free for the next task. Where "
            "cuda-checkpoint (NVIDIA, driver 550 or later) is on PATH, its CUDA state is moved to host "
            "memory first, so its GPU memory is free while it is paused; otherwise, or when the tool "
            "fails, its memory stays held and the reason says why. Paused time counts neither to its "
            "--timeout nor to its runtime. Not 'gputray pause', which stops new tasks starting.",
            rq.PauseJob,
        ),
        (
            "resume-job",
            "thaw a job paused with pause-job",
            "Resume a job paused with pause-job: thawed, its CUDA state restored where it was "
            "checkpointed. Not 'gputray resume', which lets new tasks start again.",
            rq.ResumeJob,
        ),
    ):
        p = sub.add_parser(name, help=short, description=verb)
        p.add_argument("id", metavar="ID", help="the task whose job it is, as `gputray queue` shows it")
        p.add_argument("--json", action="store_true", help="print the task as JSON (`queue --json`'s)")
        p.set_defaults(
            func=lambda a, request=request: run_command(
                lambda x: _print_paused_job(x, ask(request(id=x.id))), a
            )
        )


OFFLINE_NOTE = "no gputray owner is running: acted on the saved queue"


def answer_with(
    parser: argparse.ArgumentParser,
    printer: Callable[[argparse.Namespace, Any], int],
    asking: Callable[[argparse.Namespace], Any],
    answer_offline: Callable[[Any, argparse.Namespace], Any],
) -> None:
    """The command prints ``printer(args, reply)``: the owner's reply (``asking``), or with no owner
    running, ``answer_offline(offline, args)`` on the saved queue (the same printing, a note first)."""

    def run_offline(args: argparse.Namespace) -> int:
        from gputray.scheduler.protocol import Refusal
        from gputray.scheduler.queue import offline

        try:
            result = answer_offline(offline, args)
        except offline.QueueBusy as exc:
            return error(str(exc), EXIT_NO_OWNER)
        except Refusal as exc:
            return error(str(exc), EXIT_REFUSED)
        print(f"gputray: {OFFLINE_NOTE}", file=sys.stderr)
        return printer(args, result)

    parser.set_defaults(func=lambda a: run_command(lambda x: printer(x, asking(x)), a, run_offline))


def _print_cancel(args: argparse.Namespace, result: TasksDone) -> int:
    if args.json:
        print_json({"tasks": [task_json(t) for t in result.tasks], "errors": result.errors})
    else:
        for t in result.tasks:
            print(f"#{t.id} {shown(t.name)}: {t.state}")
    for err in result.errors:
        print(f"gputray: {err}", file=sys.stderr)
    return EXIT_REFUSED if result.errors else 0


def _print_retry(args: argparse.Namespace, result: TaskReply) -> int:
    t = result.task
    if args.json:
        print_json(task_json(t))
    else:
        print(f"#{t.id} {shown(t.name)}: {t.state}")
    return 0


def _print_paused_job(args: argparse.Namespace, result: TaskReply) -> int:
    """``#10 train: paused (paused by you at 14:02; its GPU memory stays held …)``: its shown state (the
    task's state stays ``running`` while its job is frozen) and what became of it."""
    t = result.task
    if args.json:
        print_json(task_json(t))
    else:
        why = reason_text(t)
        print(f"#{t.id} {shown(t.name)}: {t.shown_state}" + (f" ({why})" if why else ""))
    return 0


def _print_pause(args: argparse.Namespace, result: PausedReply) -> int:
    if args.json:
        print_json(paused_json(result))
    else:
        on = paused_labels(result.paused, result.device_names)
        print(f"paused: {on}" if on else "nothing is paused")
    return 0
