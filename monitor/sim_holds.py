"""Memory that real processes hold on the simulated GPUs (the demo's and the tests' residents).

A process that wants to be seen on a simulated GPU writes ``<pid>.json`` into the folder named by
``GPUTRAY_SIM_HOLDS`` (``{"device": "5060ti", "vram_bytes": N, "util_percent": 0}``); the simulated
backend lists it on that device with that memory for as long as the process lives, and reads the file
again at every poll. A resident stub that is asked to free its memory rewrites its file with less, so
the device's used memory really drops when, and only when, the free call arrived.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ENV = "GPUTRAY_SIM_HOLDS"


@dataclass(frozen=True)
class Hold:
    pid: int
    device: str  # "5060ti", "780m" or a device key
    vram_bytes: int
    util_percent: float


def holds_dir() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value) if value else None


def _alive(pid: int) -> bool:
    if sys.platform == "win32":  # os.kill(pid, 0) there sends CTRL_C_EVENT to a process group
        import psutil

        return bool(psutil.pid_exists(pid))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_holds(folder: Path | None) -> list[Hold]:
    """The holds of live processes in ``folder`` (none when it is None or unreadable)."""
    if folder is None:
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    holds: list[Hold] = []
    for name in names:
        stem, _dot, ext = name.partition(".")
        if ext != "json" or not stem.isdigit():
            continue
        pid = int(stem)
        if not _alive(pid):
            continue
        try:
            raw = json.loads((folder / name).read_text(encoding="utf-8"))
            hold = Hold(
                pid, str(raw["device"]), int(raw.get("vram_bytes", 0)), float(raw.get("util_percent", 0))
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being rewritten: the next poll reads it
        holds.append(hold)
    return holds


def write_hold(folder: Path, pid: int, device: str, vram_bytes: int, util_percent: float = 0.0) -> None:
    """Write (atomically) what ``pid`` holds now."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{pid}.tmp"
    tmp.write_text(
        json.dumps({"device": device, "vram_bytes": vram_bytes, "util_percent": util_percent}),
        encoding="utf-8",
    )
    os.replace(tmp, folder / f"{pid}.json")
