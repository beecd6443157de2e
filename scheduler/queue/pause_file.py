"""``paused.json`` in the data folder: which devices (or the whole queue) ``gputray pause`` stopped.

Written by the owner's queue; read back by it at start and by the CLI when no owner runs. Its shape is
``replies.Paused``'s: ``{"queue": bool, "devices": [...]}``, as gputray has always written it.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from gputray.scheduler.replies import Paused


def pause_file(data_dir: Path) -> Path:
    return data_dir / "paused.json"


def read_paused(data_dir: Path) -> Paused:
    """What is paused; nothing when the file is missing or garbled."""
    try:
        return msgspec.json.decode(pause_file(data_dir).read_bytes(), type=Paused, strict=False)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return Paused()


def write_paused(data_dir: Path, paused: Paused) -> None:
    """Replace the file atomically. Raises OSError."""
    path = pause_file(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(msgspec.json.encode(paused, order="deterministic"))
    tmp.replace(path)
