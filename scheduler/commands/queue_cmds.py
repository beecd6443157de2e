"""The queue's command line: ``daemon``, ``submit``, ``run``, ``queue``, ``cancel``, ``pause``, ``resume``,
``logs``, ``retry``, ``schedule``.

``daemon`` runs the owner in this process; every other command is a thin client of the owner's socket
(``gputray.scheduler.ipc``). Exit codes: 0 done, 1 the owner refused (the message says why), 2 bad
usage, 3 no owner is running.

``queue`` and ``logs`` (without ``--watch`` / ``--follow``) still answer when no owner runs: they read
the queue file read-only (``store.read_saved_tasks``) and the log files, and say so on stderr.
Everything that changes the queue needs the owner.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from gputray.scheduler import console, ipc
from gputray.scheduler.commands.common import (
    add_monitor_source_args,
    error,
    positive_seconds,
    print_json,
    shown,
)
from gputray.scheduler.commands.common import terminal_cells as _cells
from gputray.scheduler.paths import app_paths
from gputray.scheduler.tasks import MAX_PRIORITY, MAX_RETRIES

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NO_OWNER = 3

STATES_HELP = "states: queued, waiting, running, succeeded, failed, cancelled, interrupted"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_daemon(sub)
    _register_submit(sub)
    _register_run(sub)
    _register_queue(sub)
    _register_simple(sub)
    _register_logs(sub)
    _register_schedule(sub)


# --------------------------------------------------------------------------------------------------
# helpers


def _ask(op: str, **args: Any) -> dict[str, Any]:
    return ipc.request(app_paths(), op, **args)


def _client_call(func: Any, args: argparse.Namespace, offline: Any = None) -> int:
    """Run a client command; turn the IPC errors into messages and exit codes.

    ``offline(args)``, where given, answers from the files on disk when no owner runs.
    """
    try:
        return int(func(args))
    except ipc.OwnerNotRunning as exc:
        if offline is not None:
            return _offline_call(offline, args)
        return error(str(exc), EXIT_NO_OWNER)
    except _OwnerGone as exc:
        return error(str(exc), EXIT_NO_OWNER)
    except ipc.RemoteError as exc:
        return error(exc.message, EXIT_REFUSED)
    except ipc.IpcError as exc:
        return error(str(exc), EXIT_REFUSED)
    except _UsageError as exc:
        return error(str(exc), EXIT_USAGE)


class _UsageError(Exception):
    pass


NO_OWNER_NOTE = "no gputray owner is running: showing the queue as saved on disk"


def _offline_call(func: Any, args: argparse.Namespace) -> int:
    from gputray.scheduler.store import StoreError, TaskNotFound

    try:
        return int(func(args))
    except (StoreError, TaskNotFound) as exc:
        return error(str(exc), EXIT_REFUSED)
    except OSError as exc:
        where = exc.filename or "a queue file"
        return error(f"{where}: cannot read it ({exc.strerror or exc})", EXIT_REFUSED)


class _OwnerGone(Exception):
    """The owner stopped (or crashed) while `queue --watch` or `logs --follow` was talking to it."""


def _ask_again(client: ipc.IpcClient, op: str, what: str, **args: Any) -> dict[str, Any]:
    """One request of a watching loop: a lost owner ends the loop with a message, not a traceback."""
    try:
        return client.request(op, **args)
    except ipc.RemoteError as exc:
        if exc.kind == "OwnerStopping":  # caught it mid-shutdown: the same as finding it gone
            raise _OwnerGone(
                f"the gputray owner went away ({exc.message}); {what}. To go on, {ipc.HOW_TO_START}"
            ) from None
        raise  # a refusal: said as for any command
    except ipc.OwnerNotRunning:
        raise  # no owner in the first place: said as for any command
    except ipc.IpcError as exc:
        raise _OwnerGone(
            f"the gputray owner went away ({exc}); {what}. To go on, {ipc.HOW_TO_START}"
        ) from None


def _no_log(task_id: object, state: str) -> str:
    if state in ("queued", "waiting"):
        return f"task {task_id} has no log yet: it has not started ({state})"
    return f"task {task_id} has no log: it never started ({state})"


def _short_time(iso: str | None) -> str:
    if not iso:
        return ""
    stamp = dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone()
    return stamp.strftime("%H:%M:%S")


def _device_label(device: str | None, names: dict[str, str]) -> str:
    """The GPU's name ("Radeon 780M") where the owner knows it, else the key; "-" before placement."""
    if not device:
        return "-"
    return names.get(device, device)


def format_tasks(tasks: list[dict[str, Any]], device_names: dict[str, str] | None = None) -> str:
    if not tasks:
        return "the queue is empty"
    rows = [("ID", "STATE", "DEVICE", "NAME", "REASON")]
    for t in tasks:
        reason = t.get("reason") or ""
        if t.get("exit_code") is not None and t["state"] in ("failed", "succeeded"):
            reason = f"exit {t['exit_code']}" + (f"; {reason}" if reason else "")
        device = _device_label(t.get("device"), device_names or {})
        rows.append((str(t["id"]), t["state"], shown(device), shown(t["name"]), shown(reason)))
    widths = [max(_cells(r[i]) for r in rows) for i in range(4)]
    lines = []
    for r in rows:
        cells = [r[i] + " " * (widths[i] - _cells(r[i])) for i in range(4)]
        lines.append("  ".join([*cells, r[4]]).rstrip())
    return "\n".join(lines)


def print_task_json(doc: Any) -> None:
    """Indented for a person at a terminal; one compact line for a pipe (10,000 tasks print 5× faster)."""
    if sys.stdout.isatty():
        print_json(doc)
    else:
        sys.stdout.write(console.json_text(doc, sys.stdout) + "\n")


def _print_submitted(result: dict[str, Any], as_json: bool) -> None:
    tasks = result.get("tasks", [])
    for note in result.get("notes", []):
        print(f"gputray: note: {note}", file=sys.stderr)
    if as_json:
        print_json(tasks)
        return
    for t in tasks:
        reason = f" ({shown(t['reason'])})" if t.get("reason") else ""
        print(f"#{t['id']} {shown(t['name'])}: {t['state']}{reason}")


# --------------------------------------------------------------------------------------------------
# daemon


def _register_daemon(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "daemon",
        help="run the queue owner without a screen",
        description=(
            "Own the GPU queue headless: watch the GPUs, run queued tasks, answer `gputray submit`, "
            "`queue` and the rest over a socket only this user can open. Stops on Ctrl+C, SIGTERM or "
            "`gputray daemon --stop`. Only one owner runs per user (the tray app is one too)."
        ),
    )
    add_monitor_source_args(p)
    p.add_argument("--stop", action="store_true", help="ask the running owner to stop, then exit")
    p.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="(default INFO)"
    )
    p.set_defaults(func=cmd_daemon)


def _setup_daemon_logging(level: str) -> Path:
    from gputray.scheduler.log_setup import setup_logging

    log_file = app_paths().state_dir / "daemon.log"
    setup_logging(log_file, level=level)
    return log_file


def cmd_daemon(args: argparse.Namespace) -> int:
    if args.stop:
        return _client_call(lambda a: _print_stop(_ask("shutdown")), args)
    from gputray.monitor.scenario import ScenarioError
    from gputray.scheduler.owner import Owner

    paths = app_paths()
    log_file = _setup_daemon_logging(args.log_level)
    demo = bool(args.demo or args.demo_scenario is not None)
    owner = Owner(
        paths,
        demo=demo,
        scenario=args.demo_scenario.resolve() if args.demo_scenario else None,
        sysfs_root=args.sysfs_root,
        proc_root=args.proc_root,
    )
    try:
        owner.start()
    except ipc.OwnerAlreadyRunning as exc:
        return error(f"{exc}", EXIT_REFUSED)
    except (ScenarioError, ipc.UnsafeIpcLocation) as exc:
        return error(str(exc), EXIT_USAGE)

    def on_signal(signum: int, frame: object) -> None:
        owner.request_shutdown()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with contextlib.suppress(AttributeError):
        signal.signal(signal.SIGHUP, on_signal)
    address = owner.server.address if owner.server else "-"
    mode = " (demo: simulated GPUs)" if demo else ""
    print(f"gputray daemon {os.getpid()} owns the queue{mode}; socket {address}; log {log_file}", flush=True)
    try:
        while not owner.wait(0.5):
            pass
    finally:
        owner.stop()
    return 0


def _print_stop(result: dict[str, Any]) -> int:
    print(f"asked the owner (pid {result.get('pid')}) to stop")
    return 0


# --------------------------------------------------------------------------------------------------
# submit / run


def _add_placement_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where and when it runs")
    g.add_argument(
        "--device",
        metavar="PREFS",
        help="devices in order of preference, comma-separated: 5060ti, 780m, nvidia, amd, discrete, "
        "integrated, cpu or a key like pci:0000:01:00.0",
    )
    g.add_argument(
        "--on-busy",
        choices=["wait", "redirect", "cpu"],
        help="when the first choice is busy: wait for it, redirect to the first free other one, or use CPU",
    )
    g.add_argument("--max-wait", metavar="DURATION", help="wait at most this long (e.g. 10m), then redirect")
    g.add_argument(
        "--vram", metavar="SIZE", help="memory the job needs, e.g. 4GiB (checked before it starts)"
    )
    g.add_argument("--priority", type=int, help="higher runs first (default 0)")
    g.add_argument("--at", metavar="TIME", help="not before TIME: HH:MM, +10m, or 2026-12-01T01:00")
    g.add_argument(
        "--window", metavar="HH:MM-HH:MM", help="only start inside this daily window, e.g. 01:00-07:00"
    )
    g.add_argument("--retries", type=int, help="retry this many times after a failure")
    g.add_argument("--timeout", metavar="DURATION", help="stop the job after this long, e.g. 2h")
    p.add_argument("--json", action="store_true", help="print the queued tasks as JSON")


def overrides_from_args(args: argparse.Namespace, now_s: float | None = None) -> dict[str, Any]:
    """CLI options → task field overrides (full field names), checked here for quick, clear errors."""
    from gputray.scheduler.taskfile import parse_duration, parse_size
    from gputray.scheduler.tasks import parse_window
    from gputray.scheduler.timing import TimingError, parse_at

    out: dict[str, Any] = {}
    option = ""  # the option being read, named in its error
    try:
        if args.device:
            prefs = [p.strip() for p in args.device.split(",") if p.strip()]
            if not prefs:
                raise _UsageError("--device needs at least one device")
            out["device_prefs"] = prefs
        if args.on_busy:
            out["on_busy"] = args.on_busy
        if args.max_wait:
            option = "--max-wait"
            out["max_wait_s"] = parse_duration(args.max_wait)
        if args.vram:
            option = "--vram"
            out["vram_bytes"] = parse_size(args.vram)
        if args.priority is not None:
            if abs(args.priority) > MAX_PRIORITY:
                raise _UsageError(f"--priority must be between -{MAX_PRIORITY} and {MAX_PRIORITY}")
            out["priority"] = args.priority
        if args.at:
            out["start_at"] = parse_at(args.at, time.time() if now_s is None else now_s)
        if args.window:
            option = "--window"
            parse_window(args.window)
            out["window"] = args.window
        if args.retries is not None:
            if not 0 <= args.retries <= MAX_RETRIES:
                raise _UsageError(f"--retries must be between 0 and {MAX_RETRIES}")
            out["retries"] = args.retries
        if args.timeout:
            option = "--timeout"
            out["timeout_s"] = parse_duration(args.timeout)
            if out["timeout_s"] <= 0:
                raise _UsageError("--timeout must be more than 0 (leave it out for no limit)")
    except TimingError as exc:
        raise _UsageError(str(exc)) from None
    except ValueError as exc:
        raise _UsageError(f"{option} {exc}" if option else str(exc)) from None
    return out


def _register_submit(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "submit",
        help="queue files (by recipe) or a task file",
        description=(
            "Queue one task per FILE, chosen by recipe: *.py → a PyTorch job, images → Real-ESRGAN ×4, "
            "videos → an ffmpeg Vulkan upscale, *.gguf → llama-bench. Or queue a TOML task file with "
            "--task. A missing program is reported now, not when the job would start."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="files to process")
    p.add_argument("--task", metavar="TASKFILE", help="a TOML task file (see the README for its keys)")
    p.add_argument("--recipe", metavar="R", help="use recipe R for every FILE instead of matching by name")
    _add_placement_args(p)
    p.set_defaults(func=lambda a: _client_call(_cmd_submit, a))


def _cmd_submit(args: argparse.Namespace) -> int:
    overrides = overrides_from_args(args)
    cwd = os.getcwd()
    if args.task:
        if args.files:
            raise _UsageError("give either FILE... or --task TASKFILE, not both")
        if args.recipe:
            raise _UsageError("--recipe applies to FILE..., not to a task file")
        result = _ask(
            "submit",
            task_file=str(Path(args.task).absolute()),
            overrides=overrides,
            cwd=cwd,
            caller_env=dict(os.environ),
        )
    else:
        if not args.files:
            raise _UsageError("nothing to submit: give FILE... or --task TASKFILE")
        files = [str(Path(f).absolute()) for f in args.files]
        result = _ask(
            "submit_files",
            files=files,
            recipe=args.recipe,
            overrides=overrides,
            cwd=cwd,
            caller_env=dict(os.environ),
        )
    _print_submitted(result, args.json)
    return 0


def _register_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="queue a command: gputray run [OPTIONS] -- PROGRAM ARGS...",
        description=(
            "Queue any program as a command job. The GPU is chosen through environment variables "
            "(CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, GPUTRAY_DEVICE ...); the arguments are passed "
            "verbatim as a list, never through a shell and without placeholders: braces, JSON and "
            "f-strings reach the program as typed (gputray run -- python -c \"print(f'{x}')\"). "
            "Placeholders such as {file} or {vk_index} exist only in vulkan task files and recipes. "
            "The job starts from this shell's environment and folder (PATH, an activated venv, your "
            "variables), as if typed here; gputray sets the GPU selection variables on top."
        ),
    )
    p.add_argument("--name", help="a name for the queue listing (default: the program)")
    _add_placement_args(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS", help="what to run")
    p.set_defaults(func=lambda a: _client_call(_cmd_run, a))


def _cmd_run(args: argparse.Namespace) -> int:
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise _UsageError("nothing to run: gputray run [OPTIONS] -- PROGRAM ARGS...")
    overrides = overrides_from_args(args)
    result = _ask(
        "run", argv=argv, name=args.name, overrides=overrides, cwd=os.getcwd(), caller_env=dict(os.environ)
    )
    _print_submitted(result, args.json)
    return 0


# --------------------------------------------------------------------------------------------------
# queue


def _register_queue(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "queue",
        help="list queued and running tasks",
        description=f"List the tasks waiting or running, with why each waits. {STATES_HELP}. With no owner "
        "running, shows the queue as saved on disk (read-only; a note on stderr says so).",
    )
    p.add_argument("--all", action="store_true", help="include finished tasks")
    p.add_argument(
        "--json",
        action="store_true",
        help="a JSON list; per task: id, name, kind, state, device, env, reason, exit_code, attempts, "
        "submitted_at, started_at, ended_at, log_path (times ISO 8601 UTC)",
    )
    p.add_argument(
        "--watch",
        nargs="?",
        type=positive_seconds,
        const=1.0,
        metavar="SECONDS",
        help="refresh every SECONDS until Ctrl+C (exit status 3 if the owner stops meanwhile)",
    )
    p.set_defaults(func=lambda a: _client_call(_cmd_queue, a, None if a.watch else _saved_queue))


def _cmd_queue(args: argparse.Namespace) -> int:
    tty = sys.stdout.isatty()
    first = True
    with ipc.IpcClient(app_paths()) as client:
        while True:
            if args.watch:
                result = _ask_again(client, "queue", "the list above is the last one seen", all=args.all)
            else:
                result = client.request("queue", all=args.all)
            if args.watch and not args.json:
                if tty:
                    sys.stdout.write("\x1b[H\x1b[2J")
                elif not first:  # a pipe or a file: listings one after another
                    sys.stdout.write("\n")
            first = False
            _print_queue(result, args.json)
            sys.stdout.flush()
            if not args.watch:
                return 0
            try:
                time.sleep(max(0.2, args.watch))
            except KeyboardInterrupt:
                return 0


def _print_queue(result: dict[str, Any], as_json: bool) -> None:
    tasks = result.get("tasks", [])
    if as_json:
        print_task_json(tasks)
        return
    paused = [_pause_label(k) for k, v in (result.get("paused") or {}).items() if v]
    if paused:
        print(f"paused: {', '.join(paused)}")
    print(format_tasks(tasks, result.get("device_names") or {}))


def _saved_paused(paths: Any) -> dict[str, bool]:
    """What ``pause`` left on disk, in the owner's ``paused`` reply shape."""
    from gputray.scheduler.pause_file import PAUSE_ALL, read_paused

    paused_all, devices = read_paused(paths.data_dir)
    return {PAUSE_ALL: paused_all, **dict.fromkeys(devices, True)}


def _saved_queue(args: argparse.Namespace) -> int:
    """`gputray queue` without an owner: the queue file, read-only, in the owner's format."""
    from gputray.scheduler.store import read_saved_tasks

    paths = app_paths()
    records = read_saved_tasks(paths.queue_db, include_finished=bool(args.all))
    print(f"gputray: {NO_OWNER_NOTE}", file=sys.stderr)
    result = {
        "tasks": [r.to_json() for r in records],
        "paused": _saved_paused(paths),
        "device_names": {"cpu": "CPU"},
    }
    _print_queue(result, args.json)
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------------------------------
# cancel / retry / pause / resume


def _register_simple(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cancel",
        help="cancel tasks",
        description="Cancel tasks; a running one is stopped with its whole process tree.",
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: _client_call(_cmd_cancel, a))

    p = sub.add_parser(
        "retry",
        help="queue a finished task again",
        description="Queue a finished task (failed, cancelled, interrupted or succeeded) again.",
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: _client_call(_cmd_retry, a))

    for name, verb in (("pause", "Stop starting"), ("resume", "Start again")):
        p = sub.add_parser(
            name,
            help=f"{name} the queue or one device",
            description=f"{verb} new tasks on DEVICE (5060ti, 780m, cpu or a device key), or on all devices. "
            "Running tasks are not touched.",
        )
        p.add_argument("device", nargs="?", metavar="DEVICE")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=lambda a, op=name: _client_call(lambda x: _cmd_pause(x, op), a))


def _cmd_cancel(args: argparse.Namespace) -> int:
    result = _ask("cancel", ids=list(args.ids))
    if args.json:
        print_json(result)
    else:
        for t in result.get("tasks", []):
            print(f"#{t['id']} {shown(t['name'])}: {t['state']}")
    for err in result.get("errors", []):
        print(f"gputray: {err}", file=sys.stderr)
    return EXIT_REFUSED if result.get("errors") else 0


def _cmd_retry(args: argparse.Namespace) -> int:
    result = _ask("retry", id=args.id)
    if args.json:
        print_json(result["task"])
    else:
        t = result["task"]
        print(f"#{t['id']} {shown(t['name'])}: {t['state']}")
    return 0


def _pause_label(key: str) -> str:
    return "the whole queue" if key == "queue" else key


def _cmd_pause(args: argparse.Namespace, op: str) -> int:
    result = _ask(op, device=args.device)
    paused = result.get("paused") or {}
    if args.json:
        print_json(paused)
    else:
        on = [_pause_label(k) for k, v in paused.items() if v]
        print(f"paused: {', '.join(on)}" if on else "nothing is paused")
    return 0


# --------------------------------------------------------------------------------------------------
# logs


def _register_logs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "logs",
        help="print a task's output",
        description="Print a task's log (stdout and stderr); without a running owner too, except --follow.",
    )
    p.add_argument("id", metavar="ID")
    p.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing until the task finishes (exit status 3 if the owner stops first)",
    )
    p.set_defaults(func=lambda a: _client_call(_cmd_logs, a, None if a.follow else _saved_log))


def _cmd_logs(args: argparse.Namespace) -> int:
    offset = 0
    out = sys.stdout
    console.keep_line_ends(out)
    with ipc.IpcClient(app_paths()) as client:
        while True:
            what = f"task {args.id}'s log above is complete up to then"
            chunk = _ask_again(client, "logs", what, id=args.id, offset=offset)
            text = chunk.get("text", "")
            if text:
                out.write(text)
                out.flush()
            moved = chunk["offset"] != offset
            offset = chunk["offset"]
            if moved:
                continue
            if not args.follow or chunk.get("finished") or chunk.get("state") == "interrupted":
                if not chunk.get("log_path") and not args.follow:
                    print(f"gputray: {_no_log(args.id, str(chunk.get('state')))}", file=sys.stderr)
                return 0
            try:
                time.sleep(0.25)
            except KeyboardInterrupt:
                return 0


def _saved_log(args: argparse.Namespace) -> int:
    """`gputray logs ID` without an owner: the log path from the queue file (read-only), then the log."""
    import codecs

    from gputray.scheduler.store import read_saved_task

    text_id = str(args.id).strip().lstrip("#")
    if not text_id.isdigit():
        return error(f"task ids are whole numbers from 1, not {args.id!r}; see `gputray queue`", EXIT_REFUSED)
    rec = read_saved_task(app_paths().queue_db, int(text_id))
    print("gputray: no gputray owner is running: showing the log as saved on disk", file=sys.stderr)
    if not rec.log_path:
        print(f"gputray: {_no_log(args.id, rec.state)}", file=sys.stderr)
        return 0
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    console.keep_line_ends(sys.stdout)
    try:
        with open(rec.log_path, "rb") as f:
            while chunk := f.read(1 << 20):
                sys.stdout.write(decoder.decode(chunk))
    except FileNotFoundError:
        return 0  # as the owner answers: the job has not written anything yet
    sys.stdout.write(decoder.decode(b"", final=True))
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------------------------------
# schedule


def _register_schedule(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "schedule",
        help="recurring submissions (cron)",
        description=(
            "Submit a task file on a schedule. Runs missed while the computer slept or gputray was not "
            "running are made up once, not once per missed run."
        ),
    )
    s = p.add_subparsers(dest="schedule_cmd", metavar="ACTION")
    add = s.add_parser(
        "add", help="add a schedule", description='e.g. gputray schedule add --cron "0 3 * * *" nightly.toml'
    )
    add.add_argument(
        "--cron",
        required=True,
        metavar="'M H DOM MON DOW'",
        help='five crontab fields, local time: "0 3 * * *" (weekday 0 or 7 = Sunday, or sun..sat)',
    )
    add.add_argument("task", metavar="TASKFILE")
    add.add_argument("--name", help="a name for the listing")
    add.add_argument("--json", action="store_true")
    lst = s.add_parser("list", help="list schedules")
    lst.add_argument("--json", action="store_true")
    rm = s.add_parser("remove", help="remove a schedule")
    rm.add_argument("id", metavar="ID")
    rm.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: _client_call(_cmd_schedule, a), _parser=p)


def _cmd_schedule(args: argparse.Namespace) -> int:
    if args.schedule_cmd == "add":
        result = _ask(
            "schedule_add",
            cron=args.cron,
            task_file=str(Path(args.task).absolute()),
            name=args.name,
            cwd=os.getcwd(),
        )
        entries = [result["schedule"]]
    elif args.schedule_cmd == "remove":
        result = _ask("schedule_remove", id=args.id)
        entries = [result["schedule"]]
    elif args.schedule_cmd == "list":
        entries = _ask("schedule_list")["schedules"]
    else:
        args._parser.print_help()
        return EXIT_USAGE
    if args.json:
        print_json(entries if args.schedule_cmd == "list" else entries[0])
        return 0
    if not entries:
        print("no schedules")
    for e in entries:
        prefix = "removed " if args.schedule_cmd == "remove" else ""
        nxt = f", next {e['next_run_at']}" if e.get("next_run_at") else ""
        err = f", last error: {e['last_error']}" if e.get("last_error") else ""
        print(f"{prefix}#{e['id']} {shown(e['name'])}: {e['cron']} → {shown(e['task_file'])}{nxt}{err}")
    return 0
