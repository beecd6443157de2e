"""The program's start, for ``gui/entry.py``: the command line (``cli``), the standard streams, the
private umask, the console's JSON and error lines. Only what a CLI command loads anyway (the modules
``tests/scheduler/cli/test_cli_start.py`` allows a ``gputray queue``)."""

from __future__ import annotations

from gputray.scheduler.cli import build_parser, command_names, main
from gputray.scheduler.cli.streams import open_standard_streams
from gputray.scheduler.console import make_streams_safe, print_json, say_error
from gputray.scheduler.paths import use_private_umask

__all__ = [
    "build_parser",
    "command_names",
    "main",
    "make_streams_safe",
    "open_standard_streams",
    "print_json",
    "say_error",
    "use_private_umask",
]
