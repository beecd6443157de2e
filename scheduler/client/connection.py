"""The typed IPC client to the owner, its errors, and the paths of the owner's socket and files (the
warm command server's address file too: ``gui/quick_server.py`` writes it)."""

from __future__ import annotations

from gputray.scheduler.ipc import (
    HOW_TO_START,
    IpcClient,
    IpcError,
    OwnerAlreadyRunning,
    OwnerNotRunning,
    RemoteError,
)
from gputray.scheduler.ipc.quick_host import forget_quick_address, write_quick_address
from gputray.scheduler.paths import Paths, app_paths

__all__ = [
    "HOW_TO_START",
    "IpcClient",
    "IpcError",
    "OwnerAlreadyRunning",
    "OwnerNotRunning",
    "Paths",
    "RemoteError",
    "app_paths",
    "forget_quick_address",
    "write_quick_address",
]
