"""The Windows test set: gputray on the official Windows CPython under Wine (see tests/winpython.py).

One Wine prefix and one wineserver serve the whole session; an Xvfb display (from :160–:169) lets
Wine's Vulkan and DXGI see a screen. Where Wine cannot run, every test here is skipped with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from winpython import PACKAGES, ROOT, WinePython, WineUnavailable, ensure_cache, session_lock, wine_binary

DISPLAYS = range(160, 170)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first test may have to build the cache (downloads and a new prefix): allow it the time."""
    for item in items:
        if "win" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(1200))


def _copy_code(into: Path) -> Path:
    package = into / "gputray"
    package.mkdir(parents=True)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, package / name, ignore=shutil.ignore_patterns("__pycache__"))
    return into


def _start_xvfb() -> tuple[subprocess.Popen[bytes] | None, str | None]:
    if shutil.which("Xvfb") is None:
        return None, None
    for n in DISPLAYS:
        if Path(f"/tmp/.X{n}-lock").exists() or Path(f"/tmp/.X11-unix/X{n}").exists():
            continue
        proc = subprocess.Popen(
            ["Xvfb", f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            if Path(f"/tmp/.X11-unix/X{n}").exists():
                return proc, f":{n}"
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    return None, None


@pytest.fixture(scope="session")
def win() -> Iterator[WinePython]:
    """Windows Python under Wine with gputray's dependencies and this checkout's code."""
    try:
        wine_binary()
        cache = ensure_cache()
    except WineUnavailable as exc:
        pytest.skip(f"the Windows tests need Wine: {exc}")
    xvfb, display = _start_xvfb()
    with session_lock(cache), tempfile.TemporaryDirectory(prefix="gputray-wine-code-") as tmp:
        python = WinePython(cache, _copy_code(Path(tmp)), display)
        python.start_server()
        try:
            probe = python.run("-c", "import sys; print(sys.platform, sys.version_info[:2])")
            if probe.returncode != 0 or not probe.stdout.startswith("win32 (3, 13)"):
                pytest.skip(f"Windows Python does not start under Wine here: {probe.text[-2000:]}")
            yield python
        finally:
            python.stop_server()
            if xvfb is not None:
                xvfb.terminate()
                xvfb.wait(timeout=30)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A GPUTRAY_HOME whose path has a space and Japanese characters, as a Windows user's may."""
    folder = tmp_path / "ユーザー データ" / "gputray home"
    folder.mkdir(parents=True)
    return folder
