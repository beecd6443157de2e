"""The user's config file (TOML), merged over the shipped defaults."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from gputray.resources import resource_path
from gputray.scheduler.paths import app_paths
from gputray.scheduler.protocol import Refusal


class ConfigError(Refusal):
    pass


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def default_config() -> dict[str, Any]:
    with resource_path("default_config.toml").open("rb") as f:
        return tomllib.load(f)


def read_user_config(path: Path, *, malformed_hint: str = "") -> dict[str, Any]:
    """The user's file alone ({} when absent); a malformed one raises ConfigError naming the file and line
    (``malformed_hint`` is appended to that message)."""
    if not path.exists():
        return {}
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}{malformed_hint}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Defaults merged with the user's file; a malformed file raises ConfigError naming the file and line."""
    return _merge(default_config(), read_user_config(path or app_paths().config_file))
