"""The signal dispositions a test's child process relies on, set in that child.

A suite started with SIGINT ignored (`nohup pytest &`, `pytest &` from a non-interactive shell, a CI
runner's `setsid`) hands SIG_IGN to every process it starts, and a Python that starts with SIGINT
ignored installs no KeyboardInterrupt handler: a test that sends Ctrl+C to its child would see it
ignored. Those tests start the child with ``preexec_fn=DEFAULT_CTRL_C``: SIGINT back to its default
in the child (before exec), so the child's own Python sets up Ctrl+C as a terminal would give it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable


def _default_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: ``preexec_fn`` for a child that is sent SIGINT (None on Windows, which has no preexec_fn).
DEFAULT_CTRL_C: Callable[[], None] | None = _default_ctrl_c if os.name == "posix" else None
