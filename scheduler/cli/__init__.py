"""The ``gputray`` command line: subcommands are looked up in ``gputray.scheduler.cli.commands``.

The cluster's commands (the ``cluster`` subcommand, ``status --cluster``, the ``[cluster]`` checks of
``config``) come from above: the entry point (``gputray.gui.entry``) hands ``main`` the cluster's
``ClusterCommands`` (``cluster_port``), which every handler finds as ``args.cluster_commands``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gputray.scheduler import console
from gputray.scheduler.cli import streams

if TYPE_CHECKING:
    from gputray.scheduler.cluster_port import ClusterCommands

# Subcommand name → module under gputray.scheduler.cli.commands. A module may register several names
# (``submit`` registers ``submit`` and ``run``; ``control`` registers ``cancel``, ``retry``, ``pause`` ...).
COMMAND_MODULES: dict[str, str] = {
    "status": "status",
    "devices": "devices",
    "daemon": "daemon",
    "submit": "submit",
    "run": "submit",
    "queue": "queue_logs",
    "cancel": "control",
    "pause": "control",
    "resume": "control",
    "pause-job": "control",
    "resume-job": "control",
    "logs": "queue_logs",
    "retry": "control",
    "wait": "wait",
    "remove": "tidy",
    "clean": "tidy",
    "edit": "edit",
    "move": "edit",
    "schedule": "schedule",
    "envs": "envs",
    "doctor": "doctor",
    "config": "config_cmd",
    "completion": "completion",
    "residents": "residents",
    "free-resident": "residents",
}

Handler = Callable[[argparse.Namespace], int]


def build_parser(only: str | None = None, cluster: ClusterCommands | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or (``only``) just the module that registers that command;
    ``cluster`` adds the cluster's commands (``cluster_port.ClusterCommands``).

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
    parser.set_defaults(cluster_commands=cluster)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    cluster_names = cluster.names if cluster is not None else frozenset()
    everything = only not in COMMAND_MODULES and only not in cluster_names
    modules = (
        list(COMMAND_MODULES.values())
        if everything
        else [COMMAND_MODULES[o] for o in (only,) if o in COMMAND_MODULES]
    )
    for module_name in dict.fromkeys(modules):  # each module once, though it registers several names
        module: Any = importlib.import_module(f"gputray.scheduler.cli.commands.{module_name}")
        module.register(sub)
    if cluster is not None and (everything or only in cluster_names):
        cluster.register(sub)
    return parser


def command_names(cluster: ClusterCommands | None = None) -> set[str]:
    return set(COMMAND_MODULES) | (cluster.names if cluster is not None else set())


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def glue_negative_values(words: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``--vram -4GiB`` → ``--vram=-4GiB``: argparse reads a value that starts with "-" as an option
    ("expected one argument"); glued, the value reaches its check, which says what is wrong in words.
    Only for options that take a value, never after ``--``."""
    takes_value = {
        flag
        for action in parser._actions
        if action.option_strings and action.nargs is None  # flags (store_true, --help …) take nargs=0
        for flag in action.option_strings
    }
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return [*out, *words[i:]]
        nxt = words[i + 1] if i + 1 < len(words) else None
        value_like = nxt is not None and nxt.startswith("-") and nxt not in ("-", "--")
        if word in takes_value and value_like and not _is_option(str(nxt), parser):
            out.append(f"{word}={nxt}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def _is_option(word: str, parser: argparse.ArgumentParser) -> bool:
    flags = [flag for action in parser._actions for flag in action.option_strings]
    return any(word == flag or word.startswith(flag + "=") for flag in flags)


def main(
    argv: Sequence[str] | None = None,
    *,
    cluster: ClusterCommands | None = None,
    quick_server: Sequence[str] | None = None,
) -> int:
    """``quick_server``: how ``gputray daemon`` starts its warm command server (``ipc.quick_host``),
    handed from above like ``cluster``."""
    console.make_streams_safe()  # a cp1252 pipe on Windows gets ASCII bars, not a UnicodeEncodeError
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words else None, cluster)
    parser.set_defaults(quick_server_argv=quick_server)
    command = _subparsers(parser).get(words[0]) if words else None
    if command is not None:
        words = [words[0], *glue_negative_values(words[1:], command)]
    args, extra = parser.parse_known_args(words)
    if extra:  # said by the subcommand, with its own usage line, not gputray's top-level one
        where = command if command is not None and getattr(args, "func", None) else parser
        where.error(f"unrecognized arguments: {' '.join(extra)}")
    func: Handler | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        status = func(args)
        sys.stdout.flush()  # what is still buffered fails here, said like any other write
        return status
    except KeyboardInterrupt:  # Ctrl+C, in every command that waits, follows or watches
        return 130  # commands.common.EXIT_INTERRUPTED, not imported: `gputray queue` starts lean
    except BrokenPipeError:
        return 0
    except OSError as exc:  # stdout closed or full: one line, not a traceback
        problem = streams.output_failure(exc)
        if problem is None:
            raise
        print(f"gputray: {problem}", file=sys.stderr)
        return streams.EXIT_OUTPUT
