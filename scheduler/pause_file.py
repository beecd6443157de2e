"""``paused.json`` in the data folder: which devices (or the whole queue) ``gputray pause`` stopped.

Written by the owner's queue; read back by it at start and by the CLI when no owner runs. A light
module (json only) so that `gputray queue` need not load the queue service.
"""

from __future__ import annotations

import json
from pathlib import Path

PAUSE_ALL = "queue"  # the key that stands for the whole queue


def pause_file(data_dir: Path) -> Path:
    return data_dir / "paused.json"


def read_paused(data_dir: Path) -> tuple[bool, set[str]]:
    """(whole queue paused, paused device keys); nothing paused when the file is missing or garbled."""
    try:
        data = json.loads(pause_file(data_dir).read_text(encoding="utf-8"))
        return bool(data.get(PAUSE_ALL, False)), {str(k) for k in data.get("devices", [])}
    except (OSError, ValueError, AttributeError, TypeError):
        return False, set()


def write_paused(data_dir: Path, paused_all: bool, devices: set[str]) -> None:
    """Replace the file atomically. Raises OSError."""
    path = pause_file(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({PAUSE_ALL: paused_all, "devices": sorted(devices)}), encoding="utf-8")
    tmp.replace(path)
