"""``gputray`` without a subcommand: the tray app, and the owner of the queue when none is running.

Start-up order keeps the icon quick and the instance single:
1. Ask the socket whether an owner answers. If one does, hand it the files and exit (0).
2. Show the tray icon at once (a placeholder picture).
3. In a worker thread: pick the monitor (the real backends; simulated GPUs in demo mode, or when no
   real GPU is found, labelled DEMO everywhere), then start the Owner in-process with that one
   monitor — the only poller in the process. Snapshots and queue events come back as Qt signals.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gputray.gui.hand_over import hand_over

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon

log = logging.getLogger("gputray.gui")


COMMANDS_EPILOG = """\
commands (the command line client; `gputray COMMAND --help` explains each):
  status         one line per GPU: load, temperature, power, VRAM, shared memory
  devices        every name each GPU goes by (NVML, CUDA UUID, ROCm, Vulkan, DRM, LUID)
  daemon         own the queue without a screen (the tray app owns it otherwise)
  submit         queue files (by recipe) or a TOML task file
  run            queue any program: gputray run --device 780m -- python3 bench.py
  queue          list waiting and running tasks, with why each waits
  logs           print (or --follow) a task's log
  cancel         cancel tasks; a running one is stopped with its process tree
  retry          queue a finished task again (succeeded, failed, cancelled or interrupted)
  wait           wait until tasks end; exit with their exit status
  edit           change a task that has not started (priority, device, time, name ...)
  move           reorder the queue: --top, --bottom, --before ID, --after ID
  remove         forget tasks and delete their logs
  clean          forget ended tasks (--older-than 7d, --state failed) and their logs
  pause          stop starting tasks on a device (or all)
  resume         start tasks again on a device (or all)
  pause-job      freeze one running job (its GPU memory freed where cuda-checkpoint can)
  resume-job     thaw a job paused with pause-job
  residents      the GPU servers that hold memory (Ollama, ComfyUI, llama-server ...): models, idle time
  free-resident  ask an idle resident, through its own API, to let go of its GPU memory
  schedule       submit a task file on a cron schedule
  envs           the Python environments jobs run in
  doctor         prove which env works on which GPU, with a real kernel
  config         check the config file: bad values, unknown keys
  completion     shell completion for bash, zsh, fish (gputray completion bash --install)
  cluster        several machines in one queue, on Ray: join, leave, status
"""


def build_parser() -> argparse.ArgumentParser:
    from gputray.scheduler.client.about import version_line
    from gputray.scheduler.client.connection import app_paths

    paths = app_paths()
    files = (
        f"files:\n  config     {paths.config_file}\n"
        "             (thresholds, [[env]] Python environments, [[resident]] GPU servers,\n"
        "             [exclusive] apps, [gui] language; Settings writes it)\n"
        f"  recipes    {paths.config_dir / 'recipes.toml'}  (your own recipes, optional)\n"
        f"  log        {paths.state_dir / 'gputray.log'}\n"
        "  GPUTRAY_HOME=DIR moves all of them.\n"
    )
    p = argparse.ArgumentParser(
        prog="gputray",
        description=(
            "Start the gputray tray app: a live icon per GPU, a panel at one click, and the local job "
            "queue. Files given here become jobs. When gputray is already running, the files are "
            "handed to it and this command exits."
        ),
        epilog=COMMANDS_EPILOG + "\n" + files,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="files to queue (one job per file)")
    p.add_argument("--version", action="version", version=version_line(), help="print the version, then exit")
    p.add_argument("--demo", action="store_true", help="simulate an RTX 5060 Ti and a Radeon 780M")
    p.add_argument("--demo-scenario", type=Path, metavar="TOML", help="scripted external load for the demo")
    p.add_argument("--sysfs-root", type=Path, default=Path("/sys"), help="read this folder as /sys")
    p.add_argument("--proc-root", type=Path, default=Path("/proc"), help="read this folder as /proc")
    p.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="install a Linux .desktop file so file managers offer 'Open with gputray', then exit",
    )
    p.add_argument(
        "--install-send-to", action="store_true", help="add gputray to Windows' Send To menu, then exit"
    )
    return p


def install_signal_handlers(quit_app: Callable[[], None]) -> None:
    """SIGTERM/SIGINT end the app cleanly (the owner stops its server and store) without a polling timer.

    Python runs signal handlers only between bytecodes, which never happens while Qt waits in its event
    loop; a socket written by ``signal.set_wakeup_fd`` wakes the loop through a QSocketNotifier.
    """
    import signal
    import socket

    from PySide6.QtCore import QSocketNotifier

    if sys.platform == "win32":
        signal.signal(signal.SIGINT, lambda *_: quit_app())
        return
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno())
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read)

    def drain() -> None:
        with contextlib.suppress(OSError):
            reader.recv(64)

    notifier.activated.connect(drain)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: quit_app())
    _keep.extend([reader, writer, notifier])


_keep: list[Any] = []


def make_application() -> QApplication:
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from gputray.resources import resource_path

    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    app = QApplication([sys.argv[0]])
    app.setApplicationName("gputray")
    app.setOrganizationName("gputray")
    app.setQuitOnLastWindowClosed(False)
    icon_file = resource_path("icons/gputray.svg")
    if icon_file.exists():
        app.setWindowIcon(QIcon(str(icon_file)))
    return app


def show_first_icon(*, demo: bool) -> QSystemTrayIcon | None:
    """The icon goes up before the panel, menu and owner are built: the user sees gputray at once."""
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon

    from gputray.gui.tray_icon import GpuBar, TrayPicture, make_icon

    if not QSystemTrayIcon.isSystemTrayAvailable():
        return None
    tray = QSystemTrayIcon()
    tray.setIcon(make_icon(TrayPicture((GpuBar(0, state="none"),), demo=demo)))
    tray.setToolTip("gputray")
    tray.show()
    QApplication.processEvents()
    log.info("tray icon shown")
    return tray


def no_display_reason() -> str | None:
    """Why the tray cannot start here, or None. Qt would abort the process with a core dump instead."""
    if sys.platform in {"win32", "darwin"} or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return (
        "no graphical session here (neither DISPLAY nor WAYLAND_DISPLAY is set), so there is no tray. "
        "Run `gputray daemon` to own the queue without a screen, and `gputray status` to see the GPUs."
    )


def run_tray(argv: list[str], quick_server: list[str] | None = None) -> int:
    """``quick_server``: how the tray's owner starts its warm command server (``gui/quick_server.py``)."""
    args = build_parser().parse_args(argv)
    if args.install_desktop_entry or args.install_send_to:
        from gputray.gui import desktop_integration

        try:
            if args.install_desktop_entry:
                print(f"installed {desktop_integration.install_desktop_entry()}")
            if args.install_send_to:
                print(f"installed {desktop_integration.install_send_to()}")
        except OSError as exc:
            print(f"gputray: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.demo_scenario is not None and not args.demo_scenario.is_file():
        print(f"gputray: the scenario file {args.demo_scenario} does not exist", file=sys.stderr)
        return 2
    handed = hand_over(args.files)
    if handed is not None:
        return handed

    from gputray.gui.display_probe import display_problem

    missing_display = no_display_reason() or display_problem(os.environ)
    if missing_display is not None:
        print(f"gputray: {missing_display}", file=sys.stderr)
        return 2

    from gputray.scheduler.client.connection import app_paths
    from gputray.scheduler.client.log_setup import setup_logging

    setup_logging(app_paths().state_dir / "gputray.log", stderr_level=logging.WARNING)
    from gputray.gui import slot_errors

    slot_errors.install()
    qapp = make_application()
    tray = show_first_icon(demo=bool(args.demo or args.demo_scenario))
    from gputray.gui.tray_app import TrayApp

    args.quick_server = quick_server  # the real tray's owner starts it (a TrayApp in a test does not)
    tray_app = TrayApp(args, tray=tray)
    install_signal_handlers(tray_app.quit)
    tray_app.start()
    code = qapp.exec()
    tray_app.shutdown()
    return int(code) if code is not None else tray_app.exit_code
