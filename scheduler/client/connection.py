"""The typed IPC client to the owner, its errors, and the paths of the owner's socket and files."""

from __future__ import annotations

from gputray.scheduler.ipc import (
    HOW_TO_START,
    IpcClient,
    IpcError,
    OwnerAlreadyRunning,
    OwnerNotRunning,
    RemoteError,
)
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
]
