"""What the tests of other people's programs share (tests/scheduler/test_real_programs.py,
test_real_llama_server.py): the switch that runs them, a cached venv holding a program's wheel, and the
key of the demo 780M (backed by lavapipe's ``llvmpipe …`` in tests/two_lavapipes.py's demo)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = pytest.mark.skipif(
    not os.environ.get("GPUTRAY_REAL_PROGRAMS"), reason="heavy: GPUTRAY_REAL_PROGRAMS=1"
)
RADEON_780M_KEY = "pci:0000:64:00.0"


def cached_venv(name: str, requirement: str, check: str, *more: str) -> Path:
    """A cached venv (``~/.cache/gputray-test/NAME``) with ``requirement``; skips, saying why, when it
    cannot be installed or ``check`` fails in it (a missing system library)."""
    folder = Path.home() / ".cache" / "gputray-test" / name
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
        install = [str(python), "-m", "pip", "install", "-q", requirement, *more]
        got = subprocess.run(install, capture_output=True, text=True, timeout=600, check=False)
        if got.returncode != 0:
            pytest.skip(f"cannot install {requirement}: {got.stderr.strip()[-300:]}")
    tried = subprocess.run(
        [str(python), "-c", check], capture_output=True, text=True, timeout=120, check=False
    )
    if tried.returncode != 0:
        pytest.skip(f"{requirement} does not load here: {tried.stderr.strip()[-300:]}")
    return python
