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
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:  # the task model loads when a command makes a patch (`move` makes none)
    from gputray.scheduler.tasks.records import TaskPatch


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_submit(sub)
    _register_run(sub)


def add_placement_args(p: argparse.ArgumentParser, *, editing: bool = False) -> None:
    """The options that say where, when and how a task runs, one per key ``tasks.keys`` gives an
    option; ``editing``: for ``gputray edit`` (its own keys, no ``--json`` here, and ``none`` clears
    the keys that may be emptied)."""
    from gputray.scheduler.tasks.keys import options

    groups = {
        "where": p.add_argument_group("where and when it runs"),
        "what": p.add_argument_group("what the job gets"),
    }
    for _key, o in options(editing=editing):
        g = groups[o.group]
        help_text = o.help + (" (`none` clears it)" if editing and o.clears else "")
        if o.switch:
            g.add_argument(o.flag, action="store_true", help=help_text)
        elif o.repeat:
            g.add_argument(o.flag, action="append", metavar=o.metavar, help=help_text)
        elif o.choices:
            g.add_argument(o.flag, choices=list(o.choices), help=help_text)
        elif o.number == "int":
            g.add_argument(o.flag, type=int, metavar=o.metavar, help=help_text)
        elif o.number == "float":
            g.add_argument(o.flag, type=float, metavar=o.metavar, help=help_text)
        else:
            g.add_argument(o.flag, metavar=o.metavar, help=help_text)
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


def patch_from_args(
    args: argparse.Namespace, now_s: float | None = None, *, editing: bool = False
) -> TaskPatch:
    """The options ``add_placement_args`` made → the TaskPatch they set, each value read as its key
    is spelled (``tasks.keys``) and checked against the field's limits here, for quick, clear errors
    (exit status 2). ``editing`` (``gputray edit``): ``none`` clears the keys that may be emptied."""
    import msgspec

    from gputray.scheduler.tasks.keys import options
    from gputray.scheduler.tasks.records import TaskPatch, TaskSpec

    may_be_none = {f.name for f in msgspec.structs.fields(TaskSpec) if f.default is None}

    out: dict[str, Any] = {}
    for key, o in options(editing=editing):
        given = getattr(args, o.dest, None)
        if given is None or given is False:
            continue
        if editing and o.clears and isinstance(given, str) and given.strip().lower() == "none":
            out[key.field] = None if key.field in may_be_none else ()
            continue
        value = _option_value(key.spelling, o.flag, given, now_s)
        if key.spelling == "list" and not value:
            raise UsageError(o.refused or f"{o.flag} needs a value")
        try:
            msgspec.convert({key.field: value}, TaskPatch, strict=True)
        except msgspec.ValidationError:
            if o.refused:
                raise UsageError(o.refused.format(value=given)) from None
            if key.whole is not None:
                raise UsageError(f"{o.flag} must be between {key.whole[0]} and {key.whole[1]}") from None
            from gputray.scheduler.reasons.render import render
            from gputray.scheduler.tasks.taskfile import value_problem

            problem = value_problem(key.field, value)  # a code: its English, as the option's words
            raise UsageError(f"{o.flag} {render(problem) if problem else 'is out of range'}") from None
        out[key.field] = value
    if out.get("after_any") and "after" not in out and not editing:
        raise UsageError("--after-any goes with --after ID[,ID...]")
    return TaskPatch(**out)


def _option_value(spelling: str, flag: str, given: Any, now_s: float | None) -> Any:
    """One option's value as typed → as its field holds it (``tasks.keys``' spellings, read as the
    command line writes them); UsageError naming ``flag``."""
    from gputray.scheduler.tasks.records import parse_window
    from gputray.scheduler.tasks.spelling import parse_duration, parse_size

    try:
        if spelling == "duration":
            return parse_duration(given)
        if spelling == "size":
            return parse_size(given)
        if spelling == "time":
            from gputray.scheduler.queue.timing import TimingError, parse_at

            try:
                return parse_at(given, time.time() if now_s is None else now_s)
            except TimingError as exc:
                raise UsageError(str(exc)) from None
        if spelling == "window":
            parse_window(given)
            return given
        if spelling == "list":
            return tuple(p.strip() for p in given.split(",") if p.strip())
        if spelling == "task_ids":
            return tuple(task_ids(given, flag))
        if spelling == "env":
            return _env_assignments(given)
        if spelling == "path":
            folder = Path(absolute(str(Path(given).expanduser())))
            if not folder.is_dir():
                raise UsageError(f"{flag} {given}: no such folder")
            return str(folder)
    except ValueError as exc:
        raise UsageError(f"{flag} {exc}") from None
    return given


def named(name: str) -> TaskPatch:
    """``--name``: a name for the listing, never an empty one."""
    from gputray.scheduler.tasks.records import TaskPatch

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
