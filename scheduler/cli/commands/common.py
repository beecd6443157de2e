"""Options and helpers several subcommands share: the monitor source flags and JSON output."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from gputray.scheduler import console
from gputray.scheduler.replies import PausedReply, TaskView
from gputray.scheduler.tasks.times import iso_utc

if TYPE_CHECKING:
    from gputray.monitor.monitor import Monitor


def existing_folder(text: str) -> Path:
    """argparse type for --sysfs-root / --proc-root: a typo gives an error, not "No GPU found"."""
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text}")
    return path


def positive_seconds(text: str) -> float:
    """argparse type for --watch and timeouts: a positive number of seconds (0 or -1 would spin, never
    wait, or be ignored)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_monitor_source_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where readings come from")
    group.add_argument("--demo", action="store_true", help="use the simulated RTX 5060 Ti + Radeon 780M pair")
    group.add_argument(
        "--demo-scenario",
        type=Path,
        metavar="FILE",
        help="a scenario TOML file for the simulated pair (implies --demo)",
    )
    group.add_argument(
        "--sysfs-root",
        type=existing_folder,
        default=Path("/sys"),
        metavar="DIR",
        help="read DIR as if it were /sys, e.g. a captured tree (default: /sys)",
    )
    group.add_argument(
        "--proc-root",
        type=existing_folder,
        default=Path("/proc"),
        metavar="DIR",
        help="read DIR as if it were /proc (default: /proc)",
    )


def uses_custom_source(args: argparse.Namespace) -> bool:
    return bool(
        args.demo
        or args.demo_scenario is not None
        or args.sysfs_root != Path("/sys")
        or args.proc_root != Path("/proc")
    )


def monitor_from_args(args: argparse.Namespace) -> Monitor:
    """The monitor that ``add_monitor_source_args``'s flags ask for (not started). May raise ScenarioError."""
    from gputray.monitor.factory import build_monitor

    return build_monitor(
        demo=args.demo,
        scenario=args.demo_scenario,
        sysfs_root=args.sysfs_root,
        proc_root=args.proc_root,
    )


def terminal_cells(text: str) -> int:
    """Terminal columns: CJK characters (a file called 学習.py) and emoji like ✅ take two, combining marks
    none."""
    if text.isascii():  # every ASCII character is one column (what console.cells says of each): quick
        return len(text)
    return sum(map(console.cells, text))


def shown(text: str) -> str:
    """``text`` safe to print on a terminal: control characters (a newline or an escape sequence in a
    task's name) written as escapes, so one task stays one line and cannot recolour the screen. A byte
    of a file name that is not UTF-8 (a surrogate escape) is written as that byte, ``\\xe9``, as the
    console shows it elsewhere."""
    if text.isprintable():
        return text
    return "".join(_escaped(c) for c in text)


def _escaped(char: str) -> str:
    if char.isprintable():
        return char
    if "\udc80" <= char <= "\udcff":
        return f"\\x{ord(char) - 0xDC00:02x}"
    return char.encode("unicode_escape").decode("ascii")


def reason_text(t: TaskView) -> str:
    """The task's reason in words, as its state reads it (the command line speaks English)."""
    from gputray.scheduler.reasons.render import (
        render_for,  # loaded when a task is shown, not for every command
    )

    return render_for(t.state, t.reason, "en")


def task_json(t: TaskView) -> dict[str, Any]:
    """A task as ``--json`` prints it (docs/queue.md): its fields, times as ISO 8601 UTC strings."""
    if t.state == "removed":  # gone before `wait` saw it end
        return {"id": t.id, "state": t.state}
    doc = msgspec.structs.asdict(t)
    doc["reason"] = reason_text(t)
    for key in ("submitted_at", "started_at", "ended_at", "paused_at"):
        doc[key] = iso_utc(doc[key])
    doc["after"] = list(t.after)
    doc["offer"] = None if t.offer is None else msgspec.to_builtins(t.offer)
    doc["estimate_s"] = [msgspec.to_builtins(e) for e in t.estimate_s]
    return doc


def paused_json(reply: PausedReply) -> dict[str, bool]:
    """``{"queue": bool, <device key>: bool, …}``: what ``pause --json`` prints (known devices too)."""
    paused = reply.paused
    keys = dict.fromkeys([*reply.known, *sorted(paused.devices)])
    return {"queue": paused.all, **{k: k in paused.devices for k in keys}}


print_json = console.print_json


# Exit statuses, the same for every command (listed in the README): 0 done, 1 refused (a bad file, an
# unknown task or env, a task in the wrong state), 2 bad usage (an option or value the parser refuses),
# 3 no gputray owner is running (or it stopped meanwhile), 130 Ctrl+C stopped the command (as a shell
# reports a program SIGINT ended; `gputray.scheduler.cli.main` turns KeyboardInterrupt into it, so a
# command that waits, follows or watches lets it rise). `gputray wait` adds the task's own.
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NO_OWNER = 3
EXIT_INTERRUPTED = 130


def error(message: str, code: int = EXIT_USAGE) -> int:
    """``gputray: message`` on stderr; returns ``code`` (default 2, bad usage) as the exit status."""
    return console.say_error(message, code)
