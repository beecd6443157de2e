"""One ``[[env]]`` table of the config file as a typed record (``PythonEnv``), and its checks.

Read by ``config.read_config`` (a bad entry is a problem it lists) and written by ``envs.save_envs``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

KEYS = ("name", "python", "extra_env")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # as task files allow


class EnvError(Exception):
    """A bad environment entry or request, with a message for the user."""


@dataclass(frozen=True)
class PythonEnv:
    name: str
    python: Path
    extra_env: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "python", Path(self.python))
        object.__setattr__(self, "extra_env", MappingProxyType(dict(sorted(dict(self.extra_env).items()))))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "python": str(self.python), "extra_env": dict(self.extra_env)}


def parse_env(index: int, table: object, where: str) -> PythonEnv:
    """The ``index``-th ``[[env]]`` table of the file ``where``; EnvError naming what is wrong."""
    label = f"{where}: [[env]] #{index + 1}"
    if not isinstance(table, dict):
        raise EnvError(f"{label} is not a table")
    name = table.get("name")
    python = table.get("python")
    if not isinstance(name, str) or not name.strip():
        raise EnvError(f"{label} needs a name (a non-empty string)")
    if not isinstance(python, str) or not python.strip():
        raise EnvError(f"{label} ({name}) needs python = the path to its interpreter")
    extra = table.get("extra_env", {})
    if not isinstance(extra, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in extra.items()
    ):
        raise EnvError(f'{label} ({name}): extra_env must be a table of strings, like {{ KEY = "value" }}')
    for key, value in extra.items():
        if not _ENV_NAME.fullmatch(key):
            raise EnvError(f"{label} ({name}): extra_env: {key!r} is not a valid environment variable name")
        if "\x00" in value:
            raise EnvError(f"{label} ({name}): extra_env: {key}: the value contains a NUL character")
    return PythonEnv(name=name, python=Path(python).expanduser(), extra_env=extra)
