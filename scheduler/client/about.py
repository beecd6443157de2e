"""gputray's version and how it runs (frozen or not), for About and ``--version``."""

from __future__ import annotations

from gputray.scheduler.about import frozen, gputray_version, python_version, version_line

__all__ = ["frozen", "gputray_version", "python_version", "version_line"]
