"""Running the installed command as a user would: a real subprocess with its own GPUTRAY_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def gputray(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputray.gui.entry", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "GPUTRAY_HOME": str(home), **(env or {})},
        timeout=120,
        check=False,
    )
