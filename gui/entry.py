"""Process entry points. ``gputray SUBCOMMAND`` is the CLI; plain ``gputray`` (or with files) starts the tray.

Qt is imported only when the tray really starts, so CLI commands stay fast and Qt-free. The command line
is the scheduler's; the cluster's commands are handed to it here, from above (``cluster.plug``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's (it costs every command ~5 ms); mypy knows the name
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """The ``gputray`` command. Ctrl+C before a command runs (while Python imports it) ends it with
    status 130 and no traceback; the commands say themselves what an interrupt left done."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        from gputray.scheduler.client.quick import INTERRUPTED

        print(INTERRUPTED, file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None, *, handed_over: bool = True) -> int:
    """``handed_over``: a command may run in the owner's warm command server (``quick``); False in
    that server's copy itself, which runs it here."""
    args = list(sys.argv[1:] if argv is None else argv)
    if handed_over:
        from gputray.scheduler.client import quick

        status = quick.run(args)
        if status is not None:
            return status
        if len(args) == 3 and args[0] == QUICK_SERVER_OPTION:
            _import_msgspec_lean()
            from gputray.gui.quick_server import serve

            return serve(args[1], args[2], run_here)
    _import_msgspec_lean()
    from gputray.cluster.plug import CLUSTER_COMMANDS
    from gputray.scheduler.client import program

    program.make_streams_safe()
    if args == ["--version"]:  # answered before anything else loads (the tray's parser knows it too)
        from gputray.scheduler.client.about import version_line

        print(version_line())
        return 0
    from gputray.scheduler.client.program import use_private_umask

    use_private_umask()  # queue, logs, config and doctor cache are the user's alone; jobs get theirs back

    if args and args[0] in program.command_names(CLUSTER_COMMANDS):
        from gputray.scheduler.client.program import open_standard_streams

        open_standard_streams()  # `gputray queue >&-`: a closed stdout is said in words, not a traceback
        return program.main(args, cluster=CLUSTER_COMMANDS, quick_server=quick_server_argv())
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
        return run_tray(args, quick_server_argv())
    except KeyboardInterrupt:  # Ctrl+C in the terminal that started the tray: it quits
        return 130


#: ``gputray --quick-server SOCKET ADDRESS_FILE``: the owner's warm command server (``gui/quick_server.py``).
QUICK_SERVER_OPTION = "--quick-server"


def quick_server_argv() -> list[str] | None:
    """How an owner starts its warm command server: this gputray, from the same interpreter (Linux;
    never in a frozen build, whose executable is the tray)."""
    if not sys.platform.startswith("linux") or getattr(sys, "frozen", False):
        return None
    return [sys.executable, "-m", "gputray.gui.entry", QUICK_SERVER_OPTION]


def run_here(args: list[str]) -> int:
    """One command, in this process (the warm server's copy runs the client's command with it)."""
    return _main(args, handed_over=False)


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

    return run_tray(list(sys.argv[1:]), quick_server_argv())


if __name__ == "__main__":
    raise SystemExit(main())
