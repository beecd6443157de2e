"""The owner, for a tray that runs it in its own process (``gputray`` without a daemon). Importing this
loads the whole queue: do it where an owner is started."""

from __future__ import annotations

from gputray.scheduler.owner import Owner

__all__ = ["Owner"]
