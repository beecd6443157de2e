"""Polling for tests that watch real processes: wait for a condition with a generous deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout_s: float = 30.0, what: str = "condition") -> Any:
    """Call ``predicate`` every 50 ms until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
