"""`gputray queue` loads only what it uses (issue 31: every command that talks to the owner starts in
≤ 50 ms; ``bench/cli_start.py`` measures the time, this guards the cause on module counts, not time).

The real command (``gui.entry.main``) runs against a real owner in a fresh interpreter, which then lists
the modules it really executed (``sys.modules``, less the stand-ins ``lazy_import`` left untouched)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner

from gputray.scheduler import protocol as rq

#: The areas each reason catalogue is split into (scheduler/reasons/en/, ja/): modules of the same names.
REASON_AREAS = (
    "monitor",
    "devices",
    "doctor",
    "envs",
    "placement",
    "refusals",
    "jobs",
    "residents",
    "dependencies",
    "cluster",
    "config",
    "events",
    "submit",
    "taskfile",
)
#: Our modules a `queue` listing needs: the entry point, the parser, the client, the wire types, the table.
QUEUE_MODULES = {
    "gputray",
    "gputray.gui",
    "gputray.gui.entry",
    "gputray.cluster",
    "gputray.cluster.plug",
    "gputray.monitor",
    "gputray.monitor.units",
    "gputray.scheduler",
    "gputray.scheduler.console",
    "gputray.scheduler.paths",
    "gputray.scheduler.paths_cache",
    "gputray.scheduler.lazy_import",
    "gputray.scheduler.protocol",
    "gputray.scheduler.replies",
    "gputray.scheduler.tasks",
    "gputray.scheduler.tasks.limits",
    "gputray.scheduler.tasks.offer",
    "gputray.scheduler.tasks.states",
    "gputray.scheduler.tasks.times",
    "gputray.scheduler.ipc",
    "gputray.scheduler.ipc.location",
    "gputray.scheduler.cli",
    "gputray.scheduler.cli.streams",
    "gputray.scheduler.cli.commands",
    "gputray.scheduler.cli.commands.client",
    "gputray.scheduler.cli.commands.common",
    "gputray.scheduler.cli.commands.listing",
    "gputray.scheduler.cli.commands.queue_logs",
    "gputray.scheduler.client",  # the entry reaches the command line through the client face (two names)
    "gputray.scheduler.client.program",
    "gputray.scheduler.client.quick",  # tries the owner's warm command server first (none here)
    "gputray.scheduler.reasons",  # a task's reason in words: the codes, the renderer, English
    "gputray.scheduler.reasons.codes",
    "gputray.scheduler.reasons.base",
    "gputray.scheduler.reasons.leaves",
    "gputray.scheduler.reasons.doctor_codes",
    "gputray.scheduler.reasons.refusals",
    "gputray.scheduler.reasons.config_codes",
    "gputray.scheduler.reasons.submit_codes",
    "gputray.scheduler.reasons.taskfile_codes",  # a recipe's problem (RecipeBadTask) holds a task's
    "gputray.scheduler.reasons.render",
    "gputray.scheduler.reasons.say",
    "gputray.scheduler.reasons.en",  # the English catalogue: every area of it (a reason nests others)
    *(f"gputray.scheduler.reasons.en.{area}" for area in ("common", *REASON_AREAS)),
    "gputray.monitor.busy_why",
    "gputray.monitor.vulkan_why",  # the Vulkan enumeration's codes: English words in en.monitor
}
#: What each of these costs a start: the task model and the monitor's records (dataclasses, ~10 ms),
#: typing_extensions and what it imports (~8 ms, through msgspec), logging, threading, json; the
#: reasons' Japanese catalogue (the command line words in English).
NEVER_FOR_QUEUE = {
    "gputray.scheduler.tasks.records",
    "gputray.monitor.records",
    "gputray.scheduler.cluster_records",
    "gputray.scheduler.queue",
    "dataclasses",
    "inspect",
    "ast",
    "typing_extensions",
    "gputray.scheduler.reasons.ja",
    *(f"gputray.scheduler.reasons.ja.{area}" for area in ("common", *REASON_AREAS)),
    "logging",
    "threading",
    "json",
    "hashlib",
    "psutil",
    "tomllib",
    "ctypes",  # the tray's singletons are made immortal when Qt loads, not when the CLI does
    "socket",  # the client speaks through ``_socket``: ``socket.py`` builds enums, imports selectors
    "platformdirs",  # GPUTRAY_HOME here; without it, what an earlier command remembered (``paths_cache``)
}
#: Every module the process holds, the interpreter's own start included (~150 when this was written;
#: ~220 before): a bound, so that a new import on this path is a decision, not an accident. +10: the English
#: catalogue split by area (one small module each, the same code and import time as the one file was); +5:
#: the doctor's, the refusals' and the config problems' codes and English words (the catalogue is whole); +2:
#: the submit errors' codes and words (the last of the tray's regex templates became codes); +2: a task's
#: problems' codes and words (``taskfile_codes``, ``en.taskfile``: a task file's English was the last of
#: the task check's); +1: the Vulkan enumeration's codes (``monitor.vulkan_why``, worded in ``en.monitor``).
MAX_QUEUE_MODULES = 195
#: The command as the console script runs it, then the modules it executed, on stderr's last line.
DRIVER = """
import sys
from gputray.gui.entry import main
status = main(sys.argv[1:])
sys.stdout.flush()
loaded = sorted(n for n, m in sys.modules.items() if m is not None and type(m).__name__ != "_LazyModule")
sys.stderr.write("\\nloaded: " + " ".join(loaded) + "\\n")
raise SystemExit(status)
"""


def imported_by(args: list[str], home: Path) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "GPUTRAY_HOME": str(home)},
        timeout=120,
        check=False,
    )
    last = done.stderr.rstrip().rpartition("\n")[2]
    assert last.startswith("loaded: "), done.stderr[-2000:]
    return set(last.removeprefix("loaded: ").split()), done


def test_queue_loads_only_what_it_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = home_paths(tmp_path, monkeypatch)
    with running_owner(paths) as owner:
        owner.handle(rq.Pause())  # the task stays queued, with a reason: the listing has a row to word
        owner.handle(rq.Run(argv=["true"], name="listed"))
        loaded, done = imported_by(["queue"], tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "listed" in done.stdout and "no gputray owner" not in done.stderr  # the owner answered
    ours = {m for m in loaded if m.startswith("gputray")}
    assert ours - QUEUE_MODULES == set(), "`gputray queue` now loads more of gputray"
    assert loaded & NEVER_FOR_QUEUE == set()
    assert len(loaded) <= MAX_QUEUE_MODULES, sorted(loaded)


def test_lazy_names_resolve_when_a_reply_is_decoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The annotations ``protocol`` and ``replies`` leave to ``lazy_import`` still decode: `status`
    (the monitor's Snapshot) and `edit` (a TaskPatch out, a TaskView back) through the real CLI."""
    paths = home_paths(tmp_path, monkeypatch)
    with running_owner(paths) as owner:
        owner.handle(rq.Pause())
        task = owner.handle(rq.Run(argv=["true"], name="edited")).tasks[0]
        _, status = imported_by(["status", "--json"], tmp_path / "home")
        _, edit = imported_by(["edit", str(task.id), "--priority", "7", "--json"], tmp_path / "home")
        assert owner.handle(rq.Get(id=task.id)).task.priority == 7
    assert status.returncode == 0 and '"devices"' in status.stdout, status.stderr[-2000:]
    assert edit.returncode == 0, edit.stderr[-2000:]


def test_the_owner_loads_the_lazy_names_before_it_serves() -> None:
    """The owner decodes in several threads: importing it loads every module ``lazy_import`` stands in
    for (Python 3.11's ``LazyLoader`` takes no lock; two threads loading one module would define its
    types twice)."""
    check = (
        "import sys\n"
        "import gputray.scheduler.owner\n"
        "from gputray.scheduler import lazy_import\n"
        "left = [n for n in lazy_import._BOUND if type(sys.modules[n]).__name__ == '_LazyModule']\n"
        "print(len(lazy_import._BOUND), left)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    bound, _, left = done.stdout.strip().partition(" ")
    assert int(bound) > 0 and left == "[]"


#: Every other command that talks to the owner, as a person types it (``{id}``: a task the owner holds),
#: with the modules of ours it loads beyond `queue`'s: its command module and what its reply names.
SUBMITS = {
    "gputray.scheduler.cli.commands.submit",
    "gputray.scheduler.cli.interrupts",
    "gputray.scheduler.tasks.keys",
    "gputray.scheduler.tasks.records",  # the task file read into a TaskSpec
}
CONTROL = {"gputray.scheduler.cli.commands.control"}
COMMANDS: dict[str, tuple[list[str], set[str]]] = {
    "queue --json": (["queue", "--json"], set()),
    "submit --task FILE": (["submit", "--task", "{file}"], SUBMITS),
    "run": (["run", "--", "true"], SUBMITS),
    "edit": (
        ["edit", "{id}", "--priority", "5"],
        SUBMITS | {"gputray.scheduler.cli.commands.edit", "gputray.scheduler.tasks.spelling"},
    ),
    "move": (["move", "{id}", "--top"], SUBMITS | {"gputray.scheduler.cli.commands.edit"}),
    "cancel": (["cancel", "{id}"], CONTROL),
    "retry": (["retry", "{id}"], CONTROL | {"gputray.scheduler.tasks.records"}),
    "cancel again": (["cancel", "{id}"], CONTROL),
    "wait (ended)": (
        ["wait", "{id}"],
        {"gputray.scheduler.cli.commands.wait"},
    ),
    "logs": (["logs", "{id}"], set()),
    "remove": (["remove", "{id}"], {"gputray.scheduler.cli.commands.tidy"} | CONTROL),
    "resume": (["resume"], CONTROL),
    "pause": (["pause"], CONTROL),
    "schedule list": (
        ["schedule", "list"],
        {"gputray.scheduler.cli.commands.schedule", "gputray.scheduler.tasks.records"},  # a TaskPatch
    ),
    "status": (
        ["status"],
        {
            "gputray.scheduler.cli.commands.status",
            "gputray.scheduler.cluster_records",
            "gputray.scheduler.resident_words",
            "gputray.monitor.records",  # the owner's Snapshot, what `status` prints
            "gputray.monitor.readings_text",
            "gputray.monitor.pcie",
            "gputray.monitor.sysfs",
            "gputray.monitor.residents",
            "gputray.monitor.resident_kinds",
            "gputray.monitor.resident_ports",
            "gputray.monitor.proc_name",
        },
    ),
}
#: Never for a command that asks the owner: the queue's store, the monitor's backends, Qt, the resident
#: APIs' HTTP client, and what the owner runs with (threads, logging, psutil, SQLite).
NEVER_FOR_A_CLIENT = {
    "gputray.scheduler.queue",
    "gputray.scheduler.owner",
    "gputray.monitor.monitor",
    "gputray.monitor.resident_api",
    "gputray.monitor.scenario",
    "PySide6",
    "ctypes",
    "psutil",
    "sqlite3",
    "logging",
    "threading",
    "urllib.request",
    "subprocess",
}
#: The most modules any of them holds (`queue`'s bound plus what a TaskSpec or a Snapshot costs:
#: ``dataclasses`` and the ``inspect`` it imports, ~15 modules).
MAX_CLIENT_MODULES = 185


def test_every_command_that_asks_the_owner_loads_only_what_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = home_paths(tmp_path, monkeypatch)
    task_file = tmp_path / "task.toml"
    task_file.write_text('name = "guarded"\nkind = "command"\nargv = ["true"]\n')
    wrong: dict[str, str] = {}
    with running_owner(paths) as owner:
        owner.handle(rq.Pause())  # nothing starts: each command finds the task where it expects it
        task = owner.handle(rq.Run(argv=["true"], name="guarded")).tasks[0]
        for name, (words, extra) in COMMANDS.items():
            args = [w.format(id=task.id, file=task_file) for w in words]
            loaded, done = imported_by(args, tmp_path / "home")
            ours = {m for m in loaded if m.startswith("gputray")}
            if done.returncode != (1 if name == "wait (ended)" else 0):  # wait: the task was cancelled
                wrong[name] = f"exit {done.returncode}: {done.stderr[:500]}"
            elif ours - QUEUE_MODULES - extra:
                wrong[name] = f"loads more of gputray: {sorted(ours - QUEUE_MODULES - extra)}"
            elif loaded & NEVER_FOR_A_CLIENT:
                wrong[name] = f"loads {sorted(loaded & NEVER_FOR_A_CLIENT)}"
            elif len(loaded) > MAX_CLIENT_MODULES:
                wrong[name] = f"{len(loaded)} modules (at most {MAX_CLIENT_MODULES})"
    assert wrong == {}


def test_a_command_finds_the_folders_platformdirs_gave_an_earlier_one(tmp_path: Path) -> None:
    """Without GPUTRAY_HOME the folders are platformdirs' answer; the first command remembers it in the
    private runtime folder (``paths_cache``) and the next one reads it back without importing
    platformdirs (~5 ms), the same answer. Another XDG folder is another answer, asked again."""
    runtime = tmp_path / "xdg-run"
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "GPUTRAY_HOME" and not k.startswith("XDG_")}
    env |= {"XDG_RUNTIME_DIR": str(runtime), "XDG_DATA_HOME": str(tmp_path / "data")}
    probe = (
        "import sys\n"
        "from gputray.scheduler.paths import app_paths\n"
        "print(repr(app_paths()), 'platformdirs' in sys.modules)\n"
    )

    def folders(extra: dict[str, str] | None = None) -> tuple[str, bool]:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env=env | (extra or {}),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        said, _, imported = done.stdout.strip().rpartition(" ")
        return said, imported == "True"

    first, asked_first = folders()
    second, asked_second = folders()
    assert asked_first and not asked_second
    assert first == second and str(tmp_path / "data" / "gputray") in first
    (runtime / "gputray-paths").chmod(0o666)  # writable by others: not trusted, asked again
    assert folders() == (first, True)
    moved, asked = folders({"XDG_DATA_HOME": str(tmp_path / "elsewhere")})
    assert asked and str(tmp_path / "elsewhere" / "gputray") in moved
