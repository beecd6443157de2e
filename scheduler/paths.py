"""Where gputray keeps its files. ``GPUTRAY_HOME`` moves all of them under one folder."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "gputray"


@dataclass(frozen=True)
class Paths:
    config_dir: Path
    data_dir: Path
    state_dir: Path
    runtime_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def queue_db(self) -> Path:
        return self.data_dir / "queue.sqlite3"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"


def app_paths() -> Paths:
    home = os.environ.get("GPUTRAY_HOME")
    if home:
        root = Path(home).expanduser().resolve()
        return Paths(root / "config", root / "data", root / "state", root / "run")
    with warnings.catch_warnings():
        # Without XDG_RUNTIME_DIR (a bare ssh or CI shell) platformdirs warns on every call and falls back
        # to /tmp/runtime-<uid>; the IPC layer makes its own folder there private, so the fallback is fine.
        warnings.simplefilter("ignore")
        try:
            runtime = platformdirs.user_runtime_dir(APP_NAME, appauthor=False)
        except OSError:  # its /tmp/runtime-<uid> exists but is another user's: not ours to use
            runtime = str(Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "run")
    return Paths(
        Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_state_dir(APP_NAME, appauthor=False)),
        Path(runtime),
    )
