"""``gputray submit`` (files by recipe, or a task file) and ``gputray run`` (a command line), with the
options both take (``--device``, ``--at``, ``--vram``, ``--after``, ``--env``, ``--cwd`` …; ``edit``
takes most of them too) and ``--wait``."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import (
    Caller,
    UsageError,
    absolute,
    ask,
    caller,
    print_submitted,
    run_command,
)
from gputray.scheduler.cli.commands.common import EXIT_INTERRUPTED, shown
from gputray.scheduler.cli.interrupts import answer_awaited
from gputray.scheduler.protocol import wire_str
from gputray.scheduler.replies import Submitted
from gputray.scheduler.tasks.records import MAX_PRIORITY, MAX_RETRIES, TaskPatch


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_submit(sub)
    _register_run(sub)


FOLDER_HELP = (
    "the folder the job runs in (default: the folder where this command is typed; a task file's "
    "`cwd` key, relative to the file, comes before that)"
)


def add_placement_args(p: argparse.ArgumentParser, *, editing: bool = False) -> None:
    """The options that say where, when and how a task runs; ``editing``: for ``gputray edit`` (no
    ``--json`` here, and ``none`` clears ``--at`` and ``--window``)."""
    g = p.add_argument_group("where and when it runs")
    g.add_argument(
        "--device",
        metavar="PREFS",
        help="devices in order of preference, comma-separated: 5060ti, 780m, nvidia, amd, discrete, "
        "integrated, cpu or a key like pci:0000:01:00.0. The task waits for them when they are busy "
        "(the recipe's on_busy goes with the recipe's devices): --device 5060ti alone pins it; add "
        "--on-busy or --max-wait to let it go elsewhere",
    )
    g.add_argument(
        "--on-busy",
        choices=["wait", "redirect", "cpu"],
        help="when the first choice is busy: wait for it, redirect to the first free other one, or use CPU",
    )
    g.add_argument("--max-wait", metavar="DURATION", help="wait at most this long (e.g. 10m), then redirect")
    g.add_argument(
        "--prefer",
        choices=["free", "fastest", "greenest"],
        help="free (default): the first free preferred device; fastest: the device where it finishes "
        "first (wait + run, learned from earlier runs of its family); greenest: the least energy within "
        "--max-slowdown of the fastest",
    )
    g.add_argument(
        "--max-slowdown",
        type=float,
        metavar="FACTOR",
        help="with --prefer greenest: at most this many times the fastest finish (default 1.5)",
    )
    g.add_argument(
        "--family",
        metavar="NAME",
        help="the job family whose earlier runs estimate this one (default: recipe + script path)",
    )
    g.add_argument(
        "--vram", metavar="SIZE", help="memory the job needs, e.g. 4GiB (checked before it starts)"
    )
    g.add_argument("--priority", type=int, help="higher runs first (default 0; may be negative)")
    clear = " (`none` clears it)" if editing else ""
    g.add_argument("--at", metavar="TIME", help=f"not before TIME: HH:MM, +10m, or 2026-12-01T01:00{clear}")
    g.add_argument(
        "--window",
        metavar="HH:MM-HH:MM",
        help=f"only start inside this daily window, e.g. 01:00-07:00{clear}",
    )
    g.add_argument("--retries", type=int, help="retry this many times after a failure")
    g.add_argument("--timeout", metavar="DURATION", help="stop the job after this long, e.g. 2h")
    g.add_argument(
        "--after",
        metavar="ID[,ID...]",
        help="start only after these tasks succeeded; one that fails or is cancelled fails this one "
        "too (and `gputray retry` of it brings this one back)",
    )
    g.add_argument(
        "--after-any", action="store_true", help="with --after: start once they ended, however they ended"
    )
    g.add_argument(
        "--allow-unproven",
        action="store_true",
        help="torch: run also on a GPU where `gputray doctor` could not prove the env's torch lands on it",
    )
    g.add_argument(
        "--preempt",
        action="store_true",
        help="when lower-priority jobs of yours hold its device, pause them (gputray pause-job) so this "
        "one starts; they resume when it ends (a task file's `preemptible = false` keeps a job running)",
    )
    if not editing:  # where a task runs is settled once it is queued (the cluster bridge may have sent it)
        g.add_argument(
            "--machine",
            metavar="NAME|any",
            help="cluster: run it on that machine, or on whichever machine's GPU is free (`any`); its "
            "inputs travel there, its results and log come back beside the input (see `gputray"
            " cluster status`)",
        )
    g = p.add_argument_group("what the job gets")
    g.add_argument(
        "--env",
        action="append",
        metavar="KEY=VALUE",
        help="set an environment variable for the job (repeatable; added to the task file's [env])",
    )
    g.add_argument("--cwd", metavar="DIR", help=FOLDER_HELP)
    if not editing:
        p.add_argument("--json", action="store_true", help="print the queued tasks as JSON")
        p.add_argument(
            "--wait",
            action="store_true",
            help="stay until the task ends, printing its log as it grows, and exit with its exit status "
            "(as if it ran here); until it starts, why it waits is said on stderr each time that changes; "
            "Ctrl+C stops waiting (exit status 130), not the task",
        )


_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def task_ids(text: str, option: str) -> list[int]:
    """``"3,4"`` or ``"#3"`` → [3, 4]; a usage error naming ``option`` for anything else."""
    ids = []
    for part in text.split(","):
        word = part.strip().lstrip("#")
        if not word.isdigit() or int(word) < 1:
            raise UsageError(f"{option} takes task ids like 3 or 3,4, not {part.strip()!r}")
        ids.append(int(word))
    return ids


def _env_assignments(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY_RE.match(key):
            raise UsageError(f"--env takes KEY=VALUE (like OMP_NUM_THREADS=4), not {item!r}")
        out[key] = value
    return out


def _prefer_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--prefer``, ``--max-slowdown``, ``--family`` → the fields they set."""
    out: dict[str, Any] = {}
    if args.prefer:
        out["prefer"] = args.prefer
    if args.max_slowdown is not None:
        if not 1.0 <= args.max_slowdown <= 100.0:
            raise UsageError("--max-slowdown must be between 1 and 100 (1.5: at most 50 % slower)")
        out["max_slowdown"] = args.max_slowdown
    if args.family is not None:
        if not args.family.strip() or len(args.family) > 200:
            raise UsageError("--family takes a name of 1 to 200 characters")
        out["family"] = args.family
    return out


def patch_from_args(
    args: argparse.Namespace, now_s: float | None = None, *, editing: bool = False
) -> TaskPatch:
    """The placement options → the TaskPatch they set, checked here for quick, clear errors.
    ``editing`` (``gputray edit``): ``none`` clears ``--at``, ``--window`` and ``--after``."""
    from gputray.scheduler.queue.timing import TimingError, parse_at
    from gputray.scheduler.tasks.records import parse_window
    from gputray.scheduler.tasks.taskfile import parse_duration, parse_size

    out: dict[str, Any] = {}
    option = ""  # the option being read, named in its error
    try:
        if args.device:
            prefs = [p.strip() for p in args.device.split(",") if p.strip()]
            if not prefs:
                raise UsageError("--device needs at least one device")
            out["device_prefs"] = tuple(prefs)
        if args.on_busy:
            out["on_busy"] = args.on_busy
        out.update(_prefer_options(args))
        if args.max_wait:
            option = "--max-wait"
            out["max_wait_s"] = parse_duration(args.max_wait)
        if args.vram:
            option = "--vram"
            out["vram_bytes"] = parse_size(args.vram)
        if args.priority is not None:
            if abs(args.priority) > MAX_PRIORITY:
                raise UsageError(f"--priority must be between -{MAX_PRIORITY} and {MAX_PRIORITY}")
            out["priority"] = args.priority
        if args.at and editing and args.at.strip().lower() == "none":
            out["start_at"] = None
        elif args.at:
            out["start_at"] = parse_at(args.at, time.time() if now_s is None else now_s)
        if args.window and editing and args.window.strip().lower() == "none":
            out["window"] = None
        elif args.window:
            option = "--window"
            parse_window(args.window)
            out["window"] = args.window
        if args.retries is not None:
            if not 0 <= args.retries <= MAX_RETRIES:
                raise UsageError(f"--retries must be between 0 and {MAX_RETRIES}")
            out["retries"] = args.retries
        if getattr(args, "machine", None):
            from gputray.scheduler.tasks.records import MACHINE_RE

            if not MACHINE_RE.match(args.machine):
                raise UsageError(f"--machine takes a machine name or `any`, not {args.machine!r}")
            out["machine"] = args.machine
        if args.timeout:
            option = "--timeout"
            out["timeout_s"] = parse_duration(args.timeout)
            if out["timeout_s"] <= 0:
                raise UsageError("--timeout must be more than 0 (leave it out for no limit)")
        if args.after is not None and editing and args.after.strip().lower() == "none":
            out["after"] = ()
        elif args.after is not None:
            out["after"] = tuple(task_ids(args.after, "--after"))
        if args.after_any:
            if args.after is None and not editing:
                raise UsageError("--after-any goes with --after ID[,ID...]")
            out["after_any"] = True
        if getattr(args, "allow_unproven", False):
            out["allow_unproven"] = True
        if getattr(args, "preempt", False):
            out["preempt"] = True
        if args.env:
            out["env"] = _env_assignments(args.env)
        if args.cwd is not None:
            folder = Path(absolute(str(Path(args.cwd).expanduser())))
            if not folder.is_dir():
                raise UsageError(f"--cwd {args.cwd}: no such folder")
            out["cwd"] = str(folder)
    except TimingError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        raise UsageError(f"{option} {exc}" if option else str(exc)) from None
    return TaskPatch(**out)


def named(name: str) -> TaskPatch:
    """``--name``: a name for the listing, never an empty one."""
    if not name.strip():
        raise UsageError("--name needs a name")
    return TaskPatch(name=name)


def _register_submit(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "submit",
        help="queue files (by recipe) or a task file",
        description=(
            "Queue one task per FILE, chosen by recipe: *.py → a PyTorch job, images → Real-ESRGAN ×4, "
            "videos → an ffmpeg Vulkan upscale, *.gguf → llama-bench. Or queue a TOML task file with "
            "--task. A missing program is reported now, not when the job would start. Jobs run in the "
            "folder where this command is typed (--cwd, or a task file's `cwd` key, says otherwise) and "
            "start from this shell's environment."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="files to process")
    p.add_argument("--task", metavar="TASKFILE", help="a TOML task file (see the README for its keys)")
    p.add_argument("--recipe", metavar="R", help="use recipe R for every FILE instead of matching by name")
    p.add_argument("--name", help="a name for the queue listing (default: from the recipe or task file)")
    add_placement_args(p)
    p.set_defaults(func=lambda a: run_command(_cmd_submit, a))


def _cmd_submit(args: argparse.Namespace) -> int:
    overrides = patch_from_args(args)
    if args.name is not None:
        overrides = overrides.then(named(args.name))
    if args.task:
        if args.files:
            raise UsageError("give either FILE... or --task TASKFILE, not both")
        if args.recipe:
            raise UsageError("--recipe applies to FILE..., not to a task file")
        return _queue(
            args,
            lambda here: rq.Submit(
                task_file=wire_str(absolute(args.task)),
                overrides=overrides,
                cwd=here.cwd,
                caller_env=here.env,
            ),
        )
    if not args.files:
        raise UsageError("nothing to submit: give FILE... or --task TASKFILE")
    return _queue(
        args,
        lambda here: rq.SubmitFiles(
            files=[wire_str(absolute(f)) for f in args.files],
            recipe=args.recipe,
            overrides=overrides,
            cwd=here.cwd,
            caller_env=here.env,
        ),
    )


def _queue(args: argparse.Namespace, request: Callable[[Caller], rq.Submit | rq.SubmitFiles | rq.Run]) -> int:
    """Send the request ``request(caller())`` builds and print what was queued. Ctrl+C: before
    anything was sent, nothing was queued; once it was, the owner queues all or none whatever we do,
    so the first Ctrl+C waits for its answer and says how many were queued (exit status 130)."""
    try:
        built = request(caller())
    except KeyboardInterrupt:
        print("gputray: interrupted before anything was sent: nothing was queued", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        with answer_awaited("queueing them") as interrupted:
            result = ask(built)
    except KeyboardInterrupt:
        print(
            "gputray: stopped waiting for the owner's answer: what was sent may be queued all the same; "
            "see `gputray queue`",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if not interrupted:
        return _submitted(result, args)
    print_submitted(result, args.json)
    count = len(result.tasks)
    print(
        f"gputray: interrupted, but the owner had {'it' if count == 1 else 'them'} already: "
        f"{count} task{'' if count == 1 else 's'} queued ({_ids_text([t.id for t in result.tasks])}); "
        "`gputray cancel ID...` takes them back",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED


def _ids_text(ids: list[int]) -> str:
    """``#7``, ``#12–#1011`` (one run of ids), or ``#3, #9, #12`` (at most a few, then how many)."""
    if len(ids) > 1 and ids == list(range(ids[0], ids[0] + len(ids))):
        return f"#{ids[0]}–#{ids[-1]}"
    shown_ids = ", ".join(f"#{i}" for i in ids[:5])
    return shown_ids if len(ids) <= 5 else f"{shown_ids} … ({len(ids)} in all)"


def _submitted(result: Submitted, args: argparse.Namespace) -> int:
    """Print what was queued; with ``--wait``, stay until it ended and exit with its status."""
    ignored = [t for t in result.tasks if t.prefer != "greenest"]
    if getattr(args, "max_slowdown", None) is not None and ignored:  # else it looks as if it took effect
        print(
            f"gputray: note: --max-slowdown applies only with --prefer greenest "
            f"({_ids_text([t.id for t in ignored])} prefer{'s' if len(ignored) == 1 else ''} "
            f"{ignored[0].prefer})",
            file=sys.stderr,
        )
    if args.wait:
        from gputray.scheduler.cli.commands.wait import wait_for_tasks

        for note in result.notes:
            print(f"gputray: note: {note}", file=sys.stderr)
        for t in result.tasks:
            print(f"gputray: queued #{t.id} {shown(t.name)}; waiting for it to end", file=sys.stderr)
        return wait_for_tasks([t.id for t in result.tasks], follow=True, as_json=args.json)
    print_submitted(result, args.json)
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
            "variables), as if typed here; gputray sets the GPU selection variables on top. With "
            "--wait it behaves like running the program here: its output is printed as it comes and "
            "gputray exits with its exit status."
        ),
    )
    p.add_argument("--name", help="a name for the queue listing (default: the program)")
    add_placement_args(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS", help="what to run")
    p.set_defaults(func=lambda a: run_command(_cmd_run, a))


def _cmd_run(args: argparse.Namespace) -> int:
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("nothing to run: gputray run [OPTIONS] -- PROGRAM ARGS...")
    overrides = patch_from_args(args)
    return _queue(
        args,
        lambda here: rq.Run(
            argv=[wire_str(a) for a in argv],
            name=args.name,
            overrides=overrides,
            cwd=here.cwd,
            caller_env=here.env,
        ),
    )
