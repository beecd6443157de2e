"""Rewrite imports, dotted names and paths after modules moved: scheduler/'s flat modules into wings
(issue 20); the monitor's backends into ``monitor/backends/`` and the tests into folders that mirror
the packages (issue 31).

Run it on a branch that predates a move, after merging it: every ``gputray.scheduler.<old>`` and
``gputray.monitor.<old>`` import, string (``mock.patch``, ``-m``, logger lists), every
``scheduler/<old>.py`` and ``monitor/<old>.py`` path and every moved test's path
(``tests/scheduler/test_store.py``) in .py and .md files is rewritten to the new place; running it
twice changes nothing. Then ``ruff check --fix`` sorts the imports. A test file the branch added in
an old folder stays there (move it with ``git mv`` where its package's tests are).

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
    if old in _PACKAGES_NOW and match.string[match.end() : match.end() + 1] in ("'", '"'):
        return match.group(0)  # "gputray.scheduler.tasks": a string naming the package it is now
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


# Issue 31: the monitor's backends (one file per backend family) and what only they use, into
# monitor/backends/; old module (under gputray.monitor) → new.
MONITOR_MOVES: dict[str, str] = {
    "backend": "backends.base",
    "drm_backend": "backends.drm",
    "amd_sysfs": "backends.amd",
    "intel_sysfs": "backends.intel",
    "drm_other": "backends.drm_other",
    "nvml_backend": "backends.nvidia",
    "amdsmi_backend": "backends.amdsmi",
    "pdh": "backends.pdh",
    "simulated": "backends.simulated",
    "hwmon": "backends.hwmon",
    "gpu_metrics": "backends.gpu_metrics",
}
_monitor_names = "|".join(sorted(map(re.escape, MONITOR_MOVES), key=len, reverse=True))
MONITOR_DOTTED = re.compile(rf"\bgputray\.monitor\.({_monitor_names})(?!\w)")
MONITOR_FROM_PKG = re.compile(
    r"^(?P<indent>[ \t]*)from gputray\.monitor import "
    r"(?P<names>\([^)]*\)|[^\n#]+?)(?P<tail>[ \t]*(#[^\n]*)?)$",
    re.M,
)
MONITOR_PATHS = re.compile(rf"(?<![\w/.])monitor/({_monitor_names})\.py(?![\w/])")

# Issue 31: the tests mirror the packages. Test folder → {subfolder: the files that moved there}.
TEST_MOVES: dict[str, dict[str, tuple[str, ...]]] = {
    "scheduler": {
        "tasks": ("taskfile", "tasks", "recipes", "lifecycle", "model_memory", "task_keys", "limits"),
        "queue": (
            "adoption", "backlog", "clock_set", "crash_kills", "dependencies", "device_checks",
            "exclusive_apps", "job_progress", "make_room",
            "device_name_matcher", "disk_full", "durable_end", "estimates", "job_energy", "offline_control",
            "placement", "placement_day", "placement_policy", "preemption", "queue_service", "retention",
            "runtime_history", "start_failures", "store", "store_damage", "store_durability", "timing",
            "transient_start",
        ),
        "jobs": (
            "descendants", "hostile_jobs", "job_pause", "launch_env", "launcher", "log_cap", "log_files",
            "oom", "progress", "supervisor",
        ),
        "reasons": ("reasons",),
        "metrics": ("metrics",),
        "pyenvs": ("doctor", "doctor_messages", "env_choice", "envs", "probe_runner", "selection_matrix"),
        "ipc": ("fd_exhaustion", "ipc", "ipc_load", "other_users", "private_files", "wait_clients"),
        "cli": (
            "cli_start", "completion", "console", "devices_cmd", "input_edges", "queue_cmds", "status_cmd",
            "status_width",
        ),
    },
    "monitor": {
        "backends": (
            "amd_sysfs", "amdsmi_backend", "drm_other", "egpu_readings", "gpu_metrics", "intel_sysfs",
            "nvml_backend", "pdh", "simulated",
        ),
    },
}  # fmt: skip
#: Helpers that moved with the tests that use them (``tests/monitor/fake_pynvml.py``).
TEST_HELPER_MOVES: dict[str, str] = {"tests/monitor/fake_pynvml.py": "tests/monitor/backends/fake_pynvml.py"}
TEST_FILE_MOVES: dict[str, str] = {
    **{
        f"tests/{folder}/test_{name}.py": f"tests/{folder}/{sub}/test_{name}.py"
        for folder, subs in TEST_MOVES.items()
        for sub, names in subs.items()
        for name in names
    },
    **TEST_HELPER_MOVES,
}
_tests = "|".join(sorted(map(re.escape, TEST_FILE_MOVES), key=len, reverse=True))
TEST_PATHS = re.compile(rf"(?<![\w/.])({_tests})(?![\w/])")


def _monitor_from_pkg(match: re.Match[str]) -> str:
    """``from gputray.monitor import hwmon, pcie`` → ``from gputray.monitor import pcie`` and
    ``from gputray.monitor.backends import hwmon``."""
    indent, tail = match.group("indent"), match.group("tail")
    raw = match.group("names").strip().strip("()")
    kept: list[str] = []
    moved: dict[str, list[str]] = {}
    for item in (part.strip() for part in raw.replace("\n", " ").split(",")):
        if not item:
            continue
        name, _, alias = (p.strip() for p in item.partition(" as "))
        if name not in MONITOR_MOVES:
            kept.append(item)
            continue
        parent, _, leaf = MONITOR_MOVES[name].rpartition(".")
        local = alias or name
        moved.setdefault(parent, []).append(leaf if leaf == local else f"{leaf} as {local}")
    if not moved:
        return match.group(0)
    lines = [f"{indent}from gputray.monitor import {', '.join(kept)}"] if kept else []
    lines += [
        f"{indent}from gputray.monitor.{parent} import {', '.join(items)}" for parent, items in moved.items()
    ]
    lines[-1] += tail
    return "\n".join(lines)


def rewrite(text: str) -> str:
    text = FROM_PKG.sub(_from_pkg, text)
    text = DOTTED.sub(_dotted, text)
    text = PATHS.sub(lambda m: "scheduler/" + FILE_MOVES[m.group(1)], text)
    text = MONITOR_FROM_PKG.sub(_monitor_from_pkg, text)
    text = MONITOR_DOTTED.sub(lambda m: "gputray.monitor." + MONITOR_MOVES[m.group(1)], text)
    text = MONITOR_PATHS.sub(lambda m: "monitor/" + MONITOR_MOVES[m.group(1)].replace(".", "/") + ".py", text)
    return TEST_PATHS.sub(lambda m: TEST_FILE_MOVES[m.group(1)], text)


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
