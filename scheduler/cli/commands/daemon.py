"""``gputray daemon``: run the owner (monitor + queue + socket) in this process, headless; ``--stop`` asks
a running one to stop."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import EXIT_REFUSED, ask, run_command
from gputray.scheduler.cli.commands.common import EXIT_INTERRUPTED, EXIT_USAGE, add_monitor_source_args, error
from gputray.scheduler.paths import app_paths
from gputray.scheduler.replies import Stopping


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "daemon",
        help="run the queue owner without a screen",
        description=(
            "Own the GPU queue headless: watch the GPUs, run queued tasks, answer `gputray submit`, "
            "`queue` and the rest over a socket only this user can open. Stops on Ctrl+C, SIGTERM or "
            "`gputray daemon --stop`; running jobs are stopped with it unless `--stop --keep-jobs`, which "
            "leaves them running for the next owner to record. Only one owner runs per user (the tray app "
            "is one too)."
        ),
    )
    add_monitor_source_args(p)
    p.add_argument("--stop", action="store_true", help="ask the running owner to stop, then exit")
    jobs = p.add_mutually_exclusive_group()
    jobs.add_argument(
        "--keep-jobs",
        dest="jobs",
        action="store_const",
        const="keep",
        help="with --stop: running jobs go on, the next owner records how they end (never runs them again)",
    )
    jobs.add_argument(
        "--stop-jobs",
        dest="jobs",
        action="store_const",
        const="stop",
        help="with --stop: running jobs are stopped too and follow their retry policy (the default)",
    )
    p.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="(default INFO)"
    )
    p.set_defaults(func=cmd_daemon)


def cmd_daemon(args: argparse.Namespace) -> int:
    if args.jobs is not None and not args.stop:
        return error("--keep-jobs and --stop-jobs go with --stop", EXIT_USAGE)
    if args.stop:
        return run_command(lambda a: _print_stop(ask(rq.Shutdown(jobs=a.jobs or "stop"))), args)
    from gputray.monitor.scenario import ScenarioError
    from gputray.scheduler.log_setup import setup_logging
    from gputray.scheduler.owner import Owner
    from gputray.scheduler.paths import FolderError
    from gputray.scheduler.queue.store_errors import StoreError, is_disk_full, no_space_message

    paths = app_paths()
    log_file = paths.state_dir / "daemon.log"
    setup_logging(log_file, level=args.log_level)
    demo = bool(args.demo or args.demo_scenario is not None)
    owner = Owner(
        paths,
        demo=demo,
        scenario=args.demo_scenario.resolve() if args.demo_scenario else None,
        sysfs_root=args.sysfs_root,
        proc_root=args.proc_root,
        cluster=args.cluster_commands.link_factory() if args.cluster_commands is not None else None,
        quick_server=getattr(args, "quick_server_argv", None),
    )
    try:
        owner.start()
    except ipc.OwnerAlreadyRunning as exc:
        return error(f"{exc}", EXIT_REFUSED)
    # A bad scenario, an unsafe socket folder, a read-only or damaged data folder: said, not a traceback.
    except (ScenarioError, ipc.UnsafeIpcLocation, StoreError, FolderError) as exc:
        return error(str(exc), EXIT_REFUSED)
    except OSError as exc:  # a full disk while starting: one line, never a traceback
        if not is_disk_full(exc, paths.data_dir):
            raise
        return error(f"cannot start: {no_space_message(paths.data_dir)}", EXIT_REFUSED)

    stopped_by: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        stopped_by.append(signum)
        owner.request_shutdown()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with contextlib.suppress(AttributeError):
        signal.signal(signal.SIGHUP, on_signal)
    address = owner.server.address if owner.server else "-"
    mode = " (demo: simulated GPUs)" if demo else ""
    with contextlib.suppress(OSError):  # started with its output closed (`>&-`): it serves all the same
        print(
            f"gputray daemon {os.getpid()} owns the queue{mode}; socket {address}; log {log_file}", flush=True
        )
    try:
        while not owner.wait(0.5):
            pass
    finally:
        # SIGTERM, Ctrl+C and a plain `--stop` stop the jobs; `--stop --keep-jobs` leaves them running
        owner.stop(kill_running=owner.shutdown_jobs != "keep")
    # Ctrl+C: 130, as from every other command; SIGTERM and `--stop` are asked for: 0.
    return EXIT_INTERRUPTED if stopped_by[:1] == [signal.SIGINT] else 0


def _print_stop(result: Stopping) -> int:
    running = result.running
    one = running == 1
    jobs = f"{running} running job" + ("" if one else "s")
    if not running:
        what = "no job was running"
    elif result.jobs == "keep":
        ends = "it ends" if one else "they end"
        what = f"{jobs} {'keeps' if one else 'keep'} running; the next owner records how {ends}"
    else:
        policy = "follows its" if one else "follow their"
        what = f"{jobs} {'is' if one else 'are'} stopped too (and {policy} retry policy)"
    print(f"asked the owner (pid {result.pid}) to stop; {what}")
    return 0
