"""The log set-up a long-running client (the tray, the cluster's bridge) shares with the owner."""

from __future__ import annotations

from gputray.scheduler.log_setup import setup_logging

__all__ = ["setup_logging"]
