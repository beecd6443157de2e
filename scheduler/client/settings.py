"""The config file (``config.py``) and the registered Python envs (``pyenvs/``), as Settings reads and
writes them."""

from __future__ import annotations

from gputray.scheduler.config import (
    NOTIFICATION_KINDS,
    ClusterSection,
    Config,
    ConfigError,
    read_config,
    read_user_config,
    write_user_config,
)
from gputray.scheduler.pyenvs.record import PythonEnv
from gputray.scheduler.pyenvs.registry import env_to_add, load_envs, save_envs

__all__ = [
    "NOTIFICATION_KINDS",
    "ClusterSection",
    "Config",
    "ConfigError",
    "PythonEnv",
    "env_to_add",
    "load_envs",
    "read_config",
    "read_user_config",
    "save_envs",
    "write_user_config",
]
