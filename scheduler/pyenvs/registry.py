"""Python environments that jobs can run in, declared in the user's config file as ``[[env]]`` tables.

```toml
[[env]]
name = "rocm"
python = "/home/me/venvs/rocm/bin/python"
extra_env = { HSA_OVERRIDE_GFX_VERSION = "11.0.0" }
```

The app never imports torch: what an environment can do is found by the doctor, which probes it in a
subprocess. ``scan_candidates`` only suggests environments; nothing is added without ``add_env``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from gputray.scheduler.config import ConfigError, read_config, read_user_config, write_user_config
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.probe_runner import python_version_info
from gputray.scheduler.pyenvs.record import EnvError as EnvError
from gputray.scheduler.pyenvs.record import PythonEnv as PythonEnv

_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Candidate:
    """A Python interpreter that ``scan`` found; ``configured_as`` names the env that already uses it."""

    python: Path
    source: str
    suggested_name: str
    configured_as: str | None = None


def load_envs(path: Path | None = None) -> list[PythonEnv]:
    """The configured environments, in the order of the file. Raises EnvError (a bad ``[[env]]`` entry:
    nothing is decided, or written back, until it is fixed) or ConfigError (a malformed file)."""
    config = read_config(path)
    bad = [p.message for p in config.problems if p.key == "env"]
    if bad:
        raise EnvError(bad[0])
    return list(config.envs)


def save_envs(envs: Iterable[PythonEnv]) -> None:
    """Write the env list into the user's config file, keeping every other key of that file.

    The previous file is kept as ``config.toml.bak`` (TOML writers drop comments).
    """
    where = app_paths().config_file
    user = read_user_config(where, malformed_hint=" (fix the file first; gputray will not overwrite it)")
    user.pop("env", None)
    text = tomli_w.dumps(user)
    blocks = [_env_block(env) for env in envs]
    if blocks:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + "\n".join(blocks)
    write_user_config(where, text, backup=True)


def _toml_pair(key: str, value: str) -> str:
    return tomli_w.dumps({key: value}).strip()


def _env_block(env: PythonEnv) -> str:
    """One ``[[env]]`` table (tomli_w would write short ones inline, which is harder to edit by hand)."""
    lines = ["[[env]]", _toml_pair("name", env.name), _toml_pair("python", str(env.python))]
    if env.extra_env:
        pairs = ", ".join(_toml_pair(k, v) for k, v in env.extra_env.items())
        lines.append(f"extra_env = {{ {pairs} }}")
    return "\n".join(lines) + "\n"


def venv_python(folder: Path) -> Path | None:
    """The interpreter inside a venv or conda folder, if there is one."""
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
        candidate = folder / rel
        if candidate.is_file():
            return candidate
    return None


def _absolute(path: Path) -> Path:
    # Not resolve(): a venv's bin/python is a symlink to the base interpreter, and following it
    # would lose the venv.
    return Path(os.path.abspath(path.expanduser()))


def same_interpreter(python: Path) -> tuple[Path, Path]:
    """What two paths share when they start the same environment: the folder they are in and the file
    they lead to. ``.venv/bin/python`` and ``.venv/bin/python3`` lead to one interpreter; two venvs
    made from one Python lead to one file too but from two folders, so they stay two."""
    absolute = _absolute(python)
    try:
        target = absolute.resolve()
    except OSError:  # a symlink loop: the path is all there is to compare
        target = absolute
    return absolute.parent, target


def suggest_name(python: Path) -> str:
    """``~/venvs/rocm/bin/python`` → ``rocm``; ``~/proj/.venv/bin/python`` → ``proj``."""
    parent = python.parent
    folder = parent.parent if parent.name.lower() in {"bin", "scripts"} else parent
    name = folder.name
    if name.startswith(".") or name.lower() in {"venv", "env"}:
        name = folder.parent.name or name.lstrip(".")
    if not name or folder == folder.parent:
        name = python.stem
    return re.sub(r"\s+", "-", name.strip()) or "python"


def _unique_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def parse_env_assignments(items: Iterable[str]) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` → dict; a clear EnvError for anything else."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _ENV_KEY_RE.match(key):
            raise EnvError(f"--env takes KEY=VALUE (like HSA_OVERRIDE_GFX_VERSION=11.0.0), not {item!r}")
        out[key] = value
    return out


def check_python(python: Path, extra_env: Mapping[str, str] | None = None) -> Mapping[str, Any]:
    """Run the interpreter briefly; its version facts, or EnvError saying why it is not a usable Python."""
    if not python.exists():
        raise EnvError(f"{python} does not exist")
    if python.is_dir():
        raise EnvError(f"{python} is a folder without a Python interpreter in bin/ or Scripts/")
    result = python_version_info(python, extra_env=extra_env)
    facts = result.data
    if result.status == "ok" and facts is not None and "python_version" in facts:
        return facts
    if result.status == "not_runnable":
        raise EnvError(f"{python} is not a program that can be run ({result.message})")
    raise EnvError(f"{python} does not look like a Python interpreter: {result.message}")


def resolve_python(path: Path) -> Path:
    """An absolute interpreter path; a venv or conda folder stands for the interpreter inside it."""
    python = _absolute(Path(path))
    bare = str(path)
    on_path = shutil.which(bare) if os.sep not in bare and "/" not in bare else None
    if not python.exists() and on_path:  # `envs add python3`: a path is wanted, say which one
        raise EnvError(f"{python} does not exist; for the {bare} on PATH give its full path: {on_path}")
    if python.is_dir():
        inner = venv_python(python)
        if inner is None:
            raise EnvError(f"{python} is a folder without a Python interpreter in bin/ or Scripts/")
        python = inner
    return python


def add_env(
    python: Path,
    *,
    name: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    check: bool = True,
) -> PythonEnv:
    """Add an environment to the config file. ``python`` may be the interpreter or the venv folder."""
    envs = load_envs()
    env = env_to_add(envs, python, name=name, extra_env=extra_env, check=check)
    save_envs([*envs, env])
    return env


def env_to_add(
    envs: Iterable[PythonEnv],
    python: Path,
    *,
    name: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    check: bool = True,
) -> PythonEnv:
    """The env that ``add_env`` would add to ``envs``, checked the same way, without writing anything
    (Settings keeps its list until Save)."""
    python = resolve_python(python)
    if check:
        check_python(python, extra_env)
    envs = list(envs)
    for env in envs:
        if env.python == python and dict(env.extra_env) == dict(extra_env or {}):
            raise EnvError(f"{python} is already configured as {env.name!r}")
    taken = {env.name for env in envs}
    if name is not None:
        name = name.strip()
        if not name or any(ord(c) < 32 for c in name):
            raise EnvError("an environment name must be non-empty text on one line")
        if name in taken:
            raise EnvError(f"an environment named {name!r} exists already; choose another --name")
    else:
        name = _unique_name(suggest_name(python), taken)
    return PythonEnv(name=name, python=python, extra_env=dict(extra_env or {}))


def remove_env(name: str) -> PythonEnv:
    envs = load_envs()
    for env in envs:
        if env.name == name:
            save_envs([e for e in envs if e.name != name])
            return env
    known = ", ".join(e.name for e in envs) or "none configured"
    raise EnvError(f"no environment named {name!r} (known: {known})")


def _common_roots(home: Path, cwd: Path) -> list[tuple[Path, str]]:
    """Folders whose subfolders are venvs, with a word for where they come from."""
    return [
        (home / ".venvs", "~/.venvs"),
        (home / "venvs", "~/venvs"),
        (home / ".virtualenvs", "~/.virtualenvs"),
        (home / "virtualenvs", "~/virtualenvs"),
        (home / "miniconda3" / "envs", "miniconda"),
        (home / "anaconda3" / "envs", "anaconda"),
        (home / "miniforge3" / "envs", "miniforge"),
        (home / "mambaforge" / "envs", "mambaforge"),
        (home / ".conda" / "envs", "conda"),
        (home / ".local" / "share" / "virtualenvs", "pipenv"),
        (home / ".cache" / "pypoetry" / "virtualenvs", "poetry"),
        (cwd, "this folder"),
    ]


def _conda_envs(which: Callable[[str], str | None]) -> list[Path]:
    exe = which("conda") or which("mamba")
    if exe is None:
        return []
    try:
        done = subprocess.run(
            [exe, "env", "list", "--json"],
            capture_output=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        envs = json.loads(done.stdout.decode("utf-8", errors="replace")).get("envs", [])
    except (OSError, subprocess.SubprocessError, ValueError, AttributeError):
        return []
    return [Path(e) for e in envs if isinstance(e, str)]


def scan_candidates(
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    which: Callable[[str], str | None] = shutil.which,
    current: Path | None = None,
) -> list[Candidate]:
    """Interpreters worth suggesting: this one, venvs in the usual folders, conda envs; each environment
    once (``same_interpreter``), as added when it is. Adds nothing."""
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    try:
        configured = {same_interpreter(env.python): env for env in load_envs()}
    except (EnvError, ConfigError):
        configured = {}
    found: dict[tuple[Path, Path], Candidate] = {}
    taken: set[str] = {env.name for env in configured.values()}

    def offer(python: Path, source: str) -> None:
        key = same_interpreter(python)
        if key in found:
            return
        env = configured.get(key)
        if env is not None:
            found[key] = Candidate(env.python, source, env.name, env.name)
            return
        name = _unique_name(suggest_name(_absolute(python)), taken)
        taken.add(name)
        found[key] = Candidate(_absolute(python), source, name, None)

    offer(current or Path(sys.executable), "the Python running gputray")
    for root, source in _common_roots(home, cwd):
        try:
            folders = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        for folder in folders:
            is_env = (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()
            python = venv_python(folder) if is_env else None
            if python is not None:
                offer(python, source)
    for folder in _conda_envs(which):
        python = venv_python(folder)
        if python is not None:
            offer(python, "conda")
    return list(found.values())
