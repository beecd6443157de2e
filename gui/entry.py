"""Process entry points. ``gputray SUBCOMMAND`` is the CLI; plain ``gputray`` (or with files) starts the tray.

Qt is imported only when the tray really starts, so CLI commands stay fast and Qt-free. The command line
is the scheduler's; the cluster's commands are handed to it here, from above (``cluster.plug``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """The ``gputray`` command. Ctrl+C before a command runs (while Python imports it) ends it with
    status 130 and no traceback; the commands say themselves what an interrupt left done."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("gputray: interrupted before the command began: nothing was done", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    _import_msgspec_lean()
    from gputray.cluster.plug import CLUSTER_COMMANDS
    from gputray.scheduler.client import program

    program.make_streams_safe()
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # answered before anything else loads (the tray's parser knows it too)
        from gputray.scheduler.client.about import version_line

        print(version_line())
        return 0
    from gputray.scheduler.client.program import use_private_umask

    use_private_umask()  # queue, logs, config and doctor cache are the user's alone; jobs get theirs back

    if args and args[0] in program.command_names(CLUSTER_COMMANDS):
        from gputray.scheduler.client.program import open_standard_streams

        open_standard_streams()  # `gputray queue >&-`: a closed stdout is said in words, not a traceback
        return program.main(args, cluster=CLUSTER_COMMANDS)
    if args and _looks_like_a_command(args[0]):
        import difflib

        names = sorted(program.command_names(CLUSTER_COMMANDS))
        close = difflib.get_close_matches(args[0], names, n=1)
        hint = f"did you mean `gputray {close[0]}`? " if close else ""
        print(
            f"gputray: {args[0]!r} is neither a command nor a file; {hint}commands: {', '.join(names)}",
            file=sys.stderr,
        )
        return 2
    from gputray.gui.app import run_tray

    try:
        return run_tray(args)
    except KeyboardInterrupt:  # Ctrl+C in the terminal that started the tray: it quits
        return 130


def _import_msgspec_lean() -> None:
    """Import msgspec without ``typing_extensions``, a third of every command's start-up.

    msgspec tries ``typing_extensions`` first for ``get_type_hints``, ``Required`` and ``NotRequired``
    and falls back to ``typing`` where it is missing (as in an install without it). On Python 3.11 and
    later ``typing`` has all three, and the two ``get_type_hints`` differ only on typing_extensions' own
    forms (``ReadOnly`` …), which no gputray record uses. Importing it costs ~8 ms (it imports
    ``inspect``, ``ast``, ``dis`` and ``tokenize``), more than our own modules on the way to the
    owner's socket. Hidden only for the moment msgspec loads: whatever imports it later gets it."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # `import` raises ImportError
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


def _looks_like_a_command(arg: str) -> bool:
    """A bare word that is no file here (``gputray statsu``): a mistyped command, not a file to queue
    (which would start the tray just to say the file is missing)."""
    import os

    return (
        not arg.startswith("-")
        and "." not in arg
        and os.sep not in arg
        and "/" not in arg
        and not os.path.exists(arg)
    )


def main_windowed() -> int:
    """The console-less entry (Windows gui-script): starts the tray, never the CLI."""
    from gputray.gui.app import run_tray
    from gputray.scheduler.client import program
    from gputray.scheduler.client.program import use_private_umask

    program.make_streams_safe()
    use_private_umask()

    return run_tray(list(sys.argv[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
