"""The user's config file (TOML), merged over the shipped defaults."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from gputray.resources import resource_path
from gputray.scheduler.paths import app_paths


class ConfigError(Exception):
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


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Defaults merged with the user's file; a malformed file raises ConfigError naming the file and line."""
    path = path or app_paths().config_file
    config = default_config()
    if not path.exists():
        return config
    try:
        with path.open("rb") as f:
            user = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    return _merge(config, user)
