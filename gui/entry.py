"""Process entry points. ``gputray SUBCOMMAND`` is the CLI; plain ``gputray`` (or with files) starts the tray.

Qt is imported only when the tray really starts, so CLI commands stay fast and Qt-free.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    from gputray.scheduler import cli

    if args and args[0] in cli.command_names():
        return cli.main(args)
    from gputray.gui.app import run_tray

    return run_tray(args)


def main_windowed() -> int:
    """The console-less entry (Windows gui-script): starts the tray, never the CLI."""
    from gputray.gui.app import run_tray

    return run_tray(list(sys.argv[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
