"""What every client command shares: asking the owner, exit codes (0 done, 1 the owner refused, 2 bad
usage, 3 no owner is running; ``wait`` adds the task's own), the answer when no owner runs, and how
tasks are printed."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gputray.scheduler import console, ipc
from gputray.scheduler.cli.commands.common import (
    EXIT_NO_OWNER,
    EXIT_REFUSED,
    EXIT_USAGE,
    error,
    print_json,
    reason_text,
    shown,
    task_json,
)
from gputray.scheduler.cli.commands.listing import format_tasks
from gputray.scheduler.cli.streams import output_failure
from gputray.scheduler.paths import app_paths
from gputray.scheduler.protocol import MAX_ENV_VALUE_CHARS, MAX_TABLE_KEYS, R, RawText, Request, wire_str
from gputray.scheduler.replies import Paused, Submitted

__all__ = ["EXIT_NO_OWNER", "EXIT_REFUSED", "EXIT_USAGE", "format_tasks"]


STATES_HELP = "states: queued, waiting, starting, running, succeeded, failed, cancelled, interrupted"


def ask(request: Request[R]) -> R:
    """The owner's reply to ``request``, of the type the request names."""
    return ipc.ask(app_paths(), request)


ENV_BUDGET_BYTES = 768 << 10  # of the 1 MiB a request may be: the rest is for the argv and options


def caller_environment(
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, str | RawText], list[str]]:
    """This shell's environment as a job's starting point, ready for the wire: values that are not
    UTF-8 travel as their bytes (``protocol.wire_str``). A variable that cannot be carried (a name that
    is not UTF-8, a value over the 128 KiB Linux allows, more than fits in a request) is left out,
    each with a note saying so; the job is never refused for it."""
    env: dict[str, str | RawText] = {}
    notes: list[str] = []
    sizes: dict[str, int] = {}
    for name, value in dict(os.environ if environ is None else environ).items():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            shown_name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            notes.append(f"{shown_name!r} is left out of the job's environment: its name is not UTF-8")
            continue
        if len(value) > MAX_ENV_VALUE_CHARS:
            notes.append(
                f"{name} ({len(value) // 1024} KiB) is left out of the job's environment: "
                f"a variable may hold at most {MAX_ENV_VALUE_CHARS // 1024} KiB"
            )
            continue
        env[name] = wire_str(value)
        sizes[name] = len(name) + len(value) * 2 + 8  # base64 or JSON escapes grow it, at most ~2x
    for name in sorted(sizes, key=sizes.__getitem__, reverse=True):
        if sum(sizes.values()) <= ENV_BUDGET_BYTES and len(env) <= MAX_TABLE_KEYS:
            break
        del env[name]
        notes.append(
            f"{name} ({sizes.pop(name) // 1024} KiB) is left out of the job's environment: too large to send"
        )
    return env, notes


class Refused(Exception):
    """The command cannot be done as things are here (exit status 1); the message says why."""


class Caller(NamedTuple):
    """Where a submit was typed and the environment its jobs start from, ready for the wire."""

    cwd: str | RawText
    env: dict[str, str | RawText]


def current_folder() -> str:
    """The folder the command was typed in; Refused, in words, when it was deleted or moved away
    meanwhile (``os.getcwd`` raises FileNotFoundError then)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise Refused(
            "the current folder no longer exists (it was deleted or moved away): "
            "cd to a folder that exists and try again"
        ) from None


def absolute(path: str) -> str:
    """``path`` made absolute against the current folder (``current_folder``: refused if it is gone)."""
    return str(Path(path) if os.path.isabs(path) else Path(current_folder(), path))


def caller() -> Caller:
    """This shell's folder (``current_folder``) and environment for a submit, the notes on what was
    left out printed to stderr."""
    cwd = current_folder()
    env, notes = caller_environment()
    for note in notes:
        print(f"gputray: note: {note}", file=sys.stderr)
    return Caller(wire_str(cwd), env)


Command = Callable[[argparse.Namespace], int]


def run_command(func: Command, args: argparse.Namespace, offline: Command | None = None) -> int:
    """Run a client command; turn the IPC errors into messages and exit codes.

    ``offline(args)``, where given, answers from the files on disk when no owner runs.
    """
    try:
        return int(func(args))
    except ipc.OwnerNotRunning as exc:
        if exc.untrusted:  # a socket someone else put there: say so (nothing was sent to it)
            print(f"gputray: warning: {exc.untrusted}; nothing was sent to it", file=sys.stderr)
        if offline is not None:
            return _offline_call(offline, args)
        return error(str(exc), EXIT_NO_OWNER)
    except OwnerGone as exc:
        return error(str(exc), EXIT_NO_OWNER)
    except ipc.RemoteError as exc:
        return error(exc.message, EXIT_REFUSED)
    except ipc.IpcError as exc:
        return error(str(exc), EXIT_REFUSED)
    except UsageError as exc:
        return error(str(exc), EXIT_USAGE)
    except Refused as exc:
        return error(str(exc), EXIT_REFUSED)


class UsageError(Exception):
    """A command line that cannot be acted on; exit status 2 with the message."""


NO_OWNER_NOTE = "no gputray owner is running: showing the queue as saved on disk"


def _offline_call(func: Command, args: argparse.Namespace) -> int:
    from gputray.scheduler.queue.store_errors import StoreError, TaskNotFound

    try:
        return int(func(args))
    except (StoreError, TaskNotFound) as exc:
        return error(str(exc), EXIT_REFUSED)
    except OSError as exc:
        if output_failure(exc) is not None:
            raise  # said by cli.main: the output, not the queue file, failed
        where = exc.filename or "a queue file"
        return error(f"{where}: cannot read it ({exc.strerror or exc})", EXIT_REFUSED)


class OwnerGone(Exception):
    """The owner stopped (or crashed) while `queue --watch` or `logs --follow` was talking to it."""


def ask_again(client: ipc.IpcClient, request: Request[R], what: str) -> R:
    """One request of a watching loop: a lost owner ends the loop with a message, not a traceback."""
    try:
        return client.ask(request)
    except ipc.RemoteError as exc:
        if exc.kind != "OwnerStopping":
            raise  # a refusal: said as for any command
        why = exc.message  # caught it mid-shutdown: the same as finding it gone
    except ipc.OwnerNotRunning:
        raise  # no owner in the first place: said as for any command
    except ipc.IpcError as exc:
        why = str(exc)
    raise OwnerGone(f"the gputray owner went away ({why}); {what}. To go on, {ipc.HOW_TO_START}") from None


def no_log_text(task_id: object, state: str) -> str:
    if state in ("queued", "waiting"):
        return f"task {task_id} has no log yet: it has not started ({state})"
    return f"task {task_id} has no log: it never started ({state})"


def print_task_json(doc: Any) -> None:
    """Indented for a person at a terminal; one compact line for a pipe (10,000 tasks print 5× faster)."""
    if sys.stdout.isatty():
        print_json(doc)
    else:
        sys.stdout.write(console.json_text(doc, sys.stdout) + "\n")


def print_submitted(result: Submitted, as_json: bool) -> None:
    for note in result.notes:
        print(f"gputray: note: {note}", file=sys.stderr)
    if as_json:
        print_json([task_json(t) for t in result.tasks])
        return
    for t in result.tasks:
        reason = f" ({shown(reason_text(t))})" if t.reason is not None else ""
        print(f"#{t.id} {shown(t.name)}: {t.state}{reason}")


def paused_labels(paused: Paused, names: Mapping[str, str]) -> str:
    """``the whole queue, Radeon 780M``: what ``pause`` stopped, for people (a device by its name where
    ``names`` knows it, else its key); "" for nothing."""
    devices = sorted(names.get(key, key) for key in paused.devices)
    return ", ".join([*(["the whole queue"] if paused.all else []), *devices])
