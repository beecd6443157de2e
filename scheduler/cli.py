"""The ``gputray`` command line: subcommands are looked up in ``gputray.scheduler.commands``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gputray.scheduler import console

# Subcommand name → module under gputray.scheduler.commands. A module may register several names
# (``envs`` registers ``envs``; ``queue_cmds`` registers ``submit``, ``queue``, ``cancel`` ...).
COMMAND_MODULES: dict[str, str] = {
    "status": "status",
    "devices": "devices",
    "daemon": "queue_cmds",
    "submit": "queue_cmds",
    "run": "queue_cmds",
    "queue": "queue_cmds",
    "cancel": "queue_cmds",
    "pause": "queue_cmds",
    "resume": "queue_cmds",
    "logs": "queue_cmds",
    "retry": "queue_cmds",
    "schedule": "queue_cmds",
    "envs": "envs",
    "doctor": "doctor",
}

Handler = Callable[[argparse.Namespace], int]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or (``only``) just the module that registers that command.

    ``gputray queue`` builds only what it runs: importing every command module (monitor, doctor,
    Vulkan …) would cost more start-up than the command itself.
    """
    parser = argparse.ArgumentParser(
        prog="gputray",
        description=(
            "Watch every GPU and run a local GPU-aware job queue. "
            "Without a subcommand, `gputray` starts the tray app."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMAND_MODULES[only]] if only in COMMAND_MODULES else COMMAND_MODULES.values()
    for module_name in dict.fromkeys(modules):  # each module once, though it registers several names
        module: Any = importlib.import_module(f"gputray.scheduler.commands.{module_name}")
        module.register(sub)
    return parser


def command_names() -> set[str]:
    return set(COMMAND_MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    console.make_streams_safe()  # a cp1252 pipe on Windows gets ASCII bars, not a UnicodeEncodeError
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(words)
    func: Handler | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
