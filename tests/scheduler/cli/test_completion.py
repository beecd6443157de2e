"""`gputray completion bash|zsh|fish`: commands, options, task ids and device names from the running
owner, in a real bash (the completion function driven as bash drives it at a Tab, its `compgen` calls
included) and a real fish (`complete -C`); zsh's script is checked by zsh's own parser."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import paths_of, start_daemon, stop_daemon

from gputray.cluster.plug import CLUSTER_COMMANDS
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli import build_parser
from gputray.scheduler.cli.commands.completion import (
    DEVICE_ARGS,
    TASK_ARGS,
    device_word,
    install_path,
    mark_dynamic_arguments,
    subcommands,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="bash, zsh and fish")
BIN = Path(sys.executable).parent


def test_every_task_id_and_device_argument_completes_from_the_owner() -> None:
    """A new command with an ID or a device argument fails here until the tables name it."""
    parser = build_parser(None, CLUSTER_COMMANDS)
    dynamic = set()
    for name, sub in subcommands(parser).items():
        for action in sub._actions:
            if name != "schedule" and action.metavar in {"ID", "ID[,ID...]", "OTHER", "DEVICE", "PREFS"}:
                dynamic.add((name, action.dest))
    assert dynamic == TASK_ARGS | DEVICE_ARGS
    assert mark_dynamic_arguments(parser, "x", "tasks") == len(TASK_ARGS)
    assert mark_dynamic_arguments(parser, "x", "devices") == len(DEVICE_ARGS)


def test_device_words_are_the_model_part_of_the_name() -> None:
    assert device_word("GeForce RTX 5060 Ti") == "5060ti"
    assert device_word("Radeon 780M") == "780m"
    assert device_word("Intel(R) Arc(TM) A770 Graphics") == "a770graphics"
    assert device_word("llvmpipe") is None


@pytest.fixture
def owner_with_tasks(tmp_path: Path) -> Iterator[tuple[dict[str, str], list[int]]]:
    home = tmp_path / "home"
    daemon = start_daemon(home, tmp_path / "daemon-stderr.txt")
    try:
        later = {"start_at": 4102444800.0}  # 2100: they wait
        ids = [
            ipc.ask(paths_of(home), rq.Run(argv=["true"], name=f"t{i}", overrides=later)).tasks[0].id
            for i in range(2)
        ]
        env = {**os.environ, "GPUTRAY_HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        yield env, ids
    finally:
        stop_daemon(daemon)


BASH_DRIVER = r"""
source "$1"
function="$(complete -p gputray | sed -E 's/.* -F ([^ ]+) .*/\1/')"
tab() {  # as bash calls a completion function at a Tab: the words, the word's index, the line
  COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
  "$function" gputray "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  printf '%s\n' "== $*" "${COMPREPLY[@]}"
}
tab gputray can
tab gputray queue --
tab gputray cancel ""
tab gputray logs ""
tab gputray pause ""
tab gputray run --device ""
tab gputray completion ""
"""


def answers(output: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in output.splitlines():
        if line.startswith("== "):
            current = found.setdefault(line[3:].strip(), [])
        elif line:
            current.append(line.split("\t", 1)[0])
    return found


@pytest.mark.slow
def test_bash_completes_commands_options_task_ids_and_devices(
    owner_with_tasks: tuple[dict[str, str], list[int]], tmp_path: Path
) -> None:
    env, ids = owner_with_tasks
    script = tmp_path / "gputray.bash"
    made = subprocess.run(
        [str(BIN / "gputray"), "completion", "bash"], capture_output=True, text=True, env=env, timeout=60
    )
    assert made.returncode == 0, made.stderr
    script.write_text(made.stdout, encoding="utf-8")
    ran = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", BASH_DRIVER, "driver", str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    got = answers(ran.stdout)
    assert got["gputray can"] == ["cancel"]
    assert {"--all", "--json", "--watch", "--filter"} <= set(got["gputray queue --"])
    assert sorted(got["gputray cancel"]) == sorted(str(i) for i in ids)
    assert sorted(got["gputray logs"]) == sorted(str(i) for i in ids)
    assert {"5060ti", "780m", "cpu", "nvidia", "amd"} <= set(got["gputray pause"])
    assert {"5060ti", "780m", "cpu"} <= set(got["gputray run --device"])
    assert got["gputray completion"] == ["bash", "zsh", "fish"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("fish") is None, reason="needs fish (.ci/run installs it)")
def test_fish_completes_the_same_from_its_own_script(
    owner_with_tasks: tuple[dict[str, str], list[int]], tmp_path: Path
) -> None:
    env, ids = owner_with_tasks
    env = {**env, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    installed = subprocess.run(
        [str(BIN / "gputray"), "completion", "fish", "--install"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    target = install_path("fish", env)
    assert installed.stdout.startswith(f"installed {target}\n") and target.is_file()
    # fish loads ~/.config/fish/completions/gputray.fish by itself at the first Tab (HOME is the test's)
    ran = subprocess.run(
        ["fish", "-c", 'complete -C "gputray can"; echo ==; complete -C "gputray cancel "; '
         'echo ==; complete -C "gputray pause "'],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    commands, tasks, devices = (
        [line.split("\t")[0] for line in part.splitlines() if line] for part in ran.stdout.split("==\n")
    )
    assert commands == ["cancel"]
    assert sorted(tasks) == sorted(str(i) for i in ids)
    assert {"5060ti", "780m", "cpu"} <= set(devices)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="needs zsh (.ci/run installs it)")
def test_the_zsh_script_parses_and_installs_where_fpath_finds_it(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    installed = subprocess.run(
        [str(BIN / "gputray"), "completion", "zsh", "--install"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    target = tmp_path / "data" / "zsh" / "site-functions" / "_gputray"
    assert target.is_file() and f"fpath=({target.parent} $fpath)" in installed.stdout
    parsed = subprocess.run(["zsh", "-n", str(target)], capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stderr
    load = f"fpath=({target.parent} $fpath); autoload -Uz compinit; compinit -D; print $_comps[gputray]"
    loaded = subprocess.run(["zsh", "-f", "-c", load], capture_output=True, text=True, env=env, timeout=60)
    assert loaded.returncode == 0 and loaded.stdout.strip() == "_gputray", loaded.stdout + loaded.stderr


def test_without_a_shell_it_says_which_and_without_an_owner_devices_still_complete(tmp_path: Path) -> None:
    env = {**os.environ, "GPUTRAY_HOME": str(tmp_path / "nobody")}
    bare = subprocess.run(
        [str(BIN / "gputray"), "completion"], capture_output=True, text=True, env=env, timeout=60
    )
    assert bare.returncode == 2 and "bash, zsh or fish" in bare.stderr
    tasks = subprocess.run(
        [str(BIN / "gputray"), "completion", "--words", "tasks"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert tasks.returncode == 0 and tasks.stdout == ""
    devices = subprocess.run(
        [str(BIN / "gputray"), "completion", "--words", "devices"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert devices.stdout.split() == ["cpu", "gpu", "discrete", "integrated", "nvidia", "amd", "intel"]


def test_the_parser_the_scripts_come_from_is_the_commands_own() -> None:
    parser = build_parser(None, CLUSTER_COMMANDS)
    assert isinstance(parser, argparse.ArgumentParser)
    assert "completion" in subcommands(parser)
