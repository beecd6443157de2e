"""``gputray submit`` (files by recipe, or a task file) and ``gputray run`` (a command line), with the
placement options both take (``--device``, ``--at``, ``--vram`` …)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from gputray.scheduler.commands.client import _ask, _client_call, _print_submitted, _UsageError, caller_args
from gputray.scheduler.protocol import wire_str
from gputray.scheduler.tasks import MAX_PRIORITY, MAX_RETRIES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_submit(sub)
    _register_run(sub)


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
    if args.task:
        if args.files:
            raise _UsageError("give either FILE... or --task TASKFILE, not both")
        if args.recipe:
            raise _UsageError("--recipe applies to FILE..., not to a task file")
        result = _ask(
            "submit",
            task_file=wire_str(str(Path(args.task).absolute())),
            overrides=overrides,
            **caller_args(),
        )
    else:
        if not args.files:
            raise _UsageError("nothing to submit: give FILE... or --task TASKFILE")
        files = [wire_str(str(Path(f).absolute())) for f in args.files]
        result = _ask("submit_files", files=files, recipe=args.recipe, overrides=overrides, **caller_args())
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
        "run", argv=[wire_str(a) for a in argv], name=args.name, overrides=overrides, **caller_args()
    )
    _print_submitted(result, args.json)
    return 0
