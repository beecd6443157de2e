"""Rewrite imports, dotted names and paths after scheduler/'s flat modules moved into wings (issue 20).

Run it on a branch that predates the move, after merging it: every ``gputray.scheduler.<old>`` import,
string (``mock.patch``, ``-m``, logger lists) and ``scheduler/<old>.py`` path in .py and .md
files is rewritten to the new place; running it twice changes nothing. Then ``ruff check --fix`` sorts
the imports.

    .venv/bin/python tools/rewrite_moved_imports.py            # the whole checkout
    .venv/bin/python tools/rewrite_moved_imports.py FILE...    # only these files
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Old module (under gputray.scheduler) → new module. A package moved whole maps its prefix.
MOVES: dict[str, str] = {
    "tasks": "tasks.records",
    "taskfile": "tasks.taskfile",
    "recipes": "tasks.recipes",
    "store": "queue.store",
    "store_rows": "queue.store_rows",
    "store_salvage": "queue.store_salvage",
    "store_repair": "queue.store_repair",
    "queue_service": "queue.service",
    "queue_edits": "queue.edits",
    "queue_lock": "queue.lock",
    "dependencies": "queue.dependencies",
    "placement": "queue.placement",
    "timing": "queue.timing",
    "pause_file": "queue.pause_file",
    "offline": "queue.offline",
    "device_checks": "queue.device_checks",
    "launcher": "jobs.launcher",
    "supervisor": "jobs.supervisor",
    "win_job": "jobs.win_job",
    "launch_env": "jobs.invocation",
    "envs": "pyenvs.registry",
    "env_record": "pyenvs.record",
    "env_choice": "pyenvs.choice",
    "doctor": "pyenvs.doctor",
    "doctor_cache": "pyenvs.doctor_cache",
    "doctor_messages": "pyenvs.doctor_messages",
    "probe_runner": "pyenvs.probe_runner",
    "ipc_location": "ipc.location",
    "win_pipe": "ipc.win_pipe",
    "commands": "cli.commands",
    "queue.orphans": "jobs.orphans",  # a second step: queue/orphans.py (split from store.py) went to jobs/
}


def _path(module: str) -> str:
    return module.replace(".", "/") + ".py"


# Old file → new file, for paths in text (``scheduler/ipc.py`` became the ipc package itself).
FILE_MOVES: dict[str, str] = {
    **{_path(old): _path(new) for old, new in MOVES.items() if old != "commands"},
    "commands/": "cli/commands/",
    "ipc.py": "ipc/__init__.py",
    "cli.py": "cli/__init__.py",
}

_names = "|".join(sorted(map(re.escape, MOVES), key=len, reverse=True))
DOTTED = re.compile(rf"\bgputray\.scheduler\.({_names})(?!\w)")
FROM_PKG = re.compile(
    r"^(?P<indent>[ \t]*)from gputray\.scheduler import "
    r"(?P<names>\([^)]*\)|[^\n#]+?)(?P<tail>[ \t]*(#[^\n]*)?)$",
    re.M,
)
_files = "|".join(sorted(map(re.escape, FILE_MOVES), key=len, reverse=True))
PATHS = re.compile(rf"(?<![\w/.])scheduler/({_files})(?![\w/])")


# Old names that are packages now (``tasks``): ``gputray.scheduler.tasks.taskfile`` is already moved.
_PACKAGES_NOW = {new.rpartition(".")[0] for new in MOVES.values()}
_ALREADY_MOVED = re.compile(r"\.(\w+)")
_IMPORTED = re.compile(r" import \(?\s*(\w+)")


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` (under gputray.scheduler) is a module or package of this checkout."""
    path = ROOT / "scheduler" / dotted.replace(".", "/")
    return dotted in MOVES.values() or path.with_suffix(".py").is_file() or path.is_dir()


def _dotted(match: re.Match[str]) -> str:
    old = match.group(1)
    if old in _PACKAGES_NOW:
        for follows in (_ALREADY_MOVED, _IMPORTED):
            name = follows.match(match.string, match.end())
            if name and _is_module(f"{old}.{name.group(1)}"):
                return match.group(0)  # ``gputray.scheduler.tasks.taskfile``: already the package's module
    return f"gputray.scheduler.{MOVES[old]}"


def _from_pkg(match: re.Match[str]) -> str:
    indent, tail = match.group("indent"), match.group("tail")
    raw = match.group("names").strip().strip("()")
    kept: list[str] = []
    moved: dict[str, list[str]] = {}
    for item in (part.strip() for part in raw.replace("\n", " ").split(",")):
        if not item:
            continue
        name, _, alias = (p.strip() for p in item.partition(" as "))
        if name not in MOVES:
            kept.append(item)
            continue
        parent, _, leaf = MOVES[name].rpartition(".")
        local = alias or name
        moved.setdefault(parent, []).append(leaf if leaf == local else f"{leaf} as {local}")
    if not moved:
        return match.group(0)
    lines = [f"{indent}from gputray.scheduler import {', '.join(kept)}"] if kept else []
    lines += [
        f"{indent}from gputray.scheduler.{parent} import {', '.join(items)}"
        for parent, items in moved.items()
    ]
    lines[-1] += tail
    return "\n".join(lines)


def rewrite(text: str) -> str:
    text = FROM_PKG.sub(_from_pkg, text)
    text = DOTTED.sub(_dotted, text)
    return PATHS.sub(lambda m: "scheduler/" + FILE_MOVES[m.group(1)], text)


def main(argv: list[str]) -> int:
    if argv:
        files = [Path(a) for a in argv]
    else:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
        files = [ROOT / f for f in listed.stdout.split() if f.endswith((".py", ".md"))]
    for path in files:
        if not path.is_file() or path.resolve() == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
