"""``gputray wait ID… [--follow]``, and what ``run --wait`` / ``submit --wait`` do after queueing.

The exit status is the task's own, as a shell gives it: the job's exit code, 128 + N for a job killed
by signal N, 1 for a task that ended without one (cancelled before it started, failed because of a
dependency, could not start). With several ids: the first non-zero in the order given. 3 when no
owner runs (or it stops meanwhile). Ctrl+C stops the waiting, never the task: exit status 130.
While following (``--follow``, ``run --wait``) a task that has not started, why it waits goes to stderr
each time the reason changes ("#12 waiting for CPU: running 'train (#11)'").
A task that another machine of a cluster runs is waited for through its row here, which the cluster
bridge ends (with the job's exit code there) once the job's log and results are back.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from gputray.scheduler import console, ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import ask_again, print_task_json, run_command
from gputray.scheduler.cli.commands.common import EXIT_INTERRUPTED, reason_text, shown, task_json
from gputray.scheduler.paths import app_paths
from gputray.scheduler.reasons.codes import WaitingFor, WaitingForAny
from gputray.scheduler.replies import Tasks, TaskView
from gputray.scheduler.tasks.states import PENDING_STATES

ENDED = frozenset({"succeeded", "failed", "cancelled", "removed"})
POLL_S = 0.25  # while following: how long one `wait` request may block when the log did not grow
WAIT_S = 10.0  # otherwise: one request at most this long, then ask again (the owner may stop meanwhile)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "wait",
        help="wait until tasks end; exit with their exit status",
        description=(
            "Wait until the tasks end and exit with the exit status of the first one that failed (0 when "
            "all succeeded): the job's exit code, 128+N when a signal N ended it, 1 when it ended "
            "without one (cancelled before starting, its dependency failed, could not start). Exit "
            "status 3 when no gputray owner is running. Ctrl+C stops waiting (exit status 130); the "
            "tasks go on."
        ),
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="print each task's log as it grows, one task after another (and, on stderr, why a task "
        "that has not started waits, each time that changes)",
    )
    p.add_argument("--json", action="store_true", help="print the tasks as JSON when they have ended")
    p.set_defaults(func=lambda a: run_command(_cmd_wait, a))


def _cmd_wait(args: argparse.Namespace) -> int:
    return wait_for_tasks(list(args.ids), follow=args.follow and not args.json, as_json=args.json)


def exit_status(task: TaskView) -> int:
    """What a shell would say for this task: see the module docstring."""
    if task.state == "succeeded":
        return 0
    code = task.exit_code
    if isinstance(code, int) and code > 0:
        return code
    if isinstance(code, int) and code < 0:
        return 128 + min(-code, 127)
    return 1


def wait_for_tasks(ids: Sequence[Any], *, follow: bool, as_json: bool = False) -> int:
    """Wait for ``ids`` (streaming their logs one after another when ``follow``), report, exit status."""
    with ipc.IpcClient(app_paths()) as client:
        try:
            if follow:
                for task_id in ids:
                    _follow(client, task_id)
            tasks = _until_ended(client, ids)
        except KeyboardInterrupt:
            which = ", ".join(f"#{str(i).lstrip('#')}" for i in ids)
            verb = "goes" if len(ids) == 1 else "go"
            print(
                f"\ngputray: stopped waiting; {which} {verb} on in the queue "
                "(`gputray cancel ID` stops a task)",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
    if as_json:
        print_task_json([task_json(t) for t in tasks])
    else:
        out = sys.stderr if follow else sys.stdout
        for t in tasks:
            print(_summary(t), file=out)
    return next((code for code in map(exit_status, tasks) if code), 0)


def _summary(task: TaskView) -> str:
    if task.state == "removed":
        return f"#{task.id}: removed from the queue before it ended"
    detail = f" (exit {task.exit_code})" if task.exit_code is not None else ""
    reason = reason_text(task)
    said = reason and task.state != "succeeded" and reason != task.state  # not "cancelled: cancelled"
    why = f": {shown(reason)}" if said else ""
    return f"#{task.id} {shown(task.name)}: {task.state}{detail}{why}"


def _until_ended(client: ipc.IpcClient, ids: Sequence[Any]) -> Tasks:
    while True:
        result = ask_again(client, rq.WaitFor(ids=list(ids), timeout_s=WAIT_S), "it was still running then")
        if result.done:
            return result.tasks


def why_it_waits(task: TaskView) -> str:
    """What a follower says on stderr while ``task`` has not started: why it waits, or "" (it started,
    or the owner gave no reason)."""
    if task.state not in PENDING_STATES or task.reason is None:
        return ""
    reason = shown(reason_text(task))  # "waiting for CPU: running 'long (#1)'", "the queue is paused"
    says_waiting = isinstance(task.reason, WaitingFor | WaitingForAny)
    return f"#{task.id} {reason}" if says_waiting else f"#{task.id} waits: {reason}"


def _follow(client: ipc.IpcClient, task_id: Any) -> None:
    """Print one task's log from the start until the task has ended and its log is read to the end;
    until it starts, say on stderr why it waits each time the reason changes."""
    offset = 0
    out = sys.stdout
    console.keep_line_ends(out)  # a job's CR LF stays CR LF on Windows, not CR CR LF
    what = f"task {task_id}'s log above is complete up to then"
    said = ""
    while True:
        try:
            chunk = ask_again(client, rq.Logs(id=task_id, offset=offset), what)
        except ipc.RemoteError as exc:
            if exc.kind == "TaskNotFound":
                return  # removed meanwhile: the summary says so
            raise
        if chunk.text:
            out.write(chunk.text)
            out.flush()
        moved = chunk.offset != offset
        offset = chunk.offset
        if moved:
            continue
        if chunk.finished:
            return
        waited = ask_again(client, rq.WaitFor(ids=[task_id], timeout_s=POLL_S), what)
        why = why_it_waits(waited.tasks[0]) if waited.tasks else ""
        if why and why != said:
            print(f"gputray: {why}", file=sys.stderr, flush=True)
        said = why
