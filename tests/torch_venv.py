"""A real venv with torch (CPU build), built once and reused across runs and test folders.

The torch venv (torch==2.13.0, CPU build) takes a minute to create, so it lives in a cache folder
reused across runs: ``$GPUTRAY_TEST_VENV`` or ``~/.cache/gputray-test/torch-<version>``. It is
created once (under a lock, then renamed into place) and only checked on later runs. Each test folder's
conftest turns ``torch_venv_python()`` into its session fixture ``torch_python``; tests that use it get
``TORCH_TIMEOUT_S`` (the first may have to build the venv).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TORCH_VERSION = "2.13.0"
TORCH_TIMEOUT_S = 1200


def _venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _torch_venv_dir() -> Path:
    configured = os.environ.get("GPUTRAY_TEST_VENV")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "gputray-test" / f"torch-{TORCH_VERSION}"


def _has_torch(python: Path) -> bool:
    if not python.exists():
        return False
    check = (
        "import importlib.metadata as m, importlib.util as u; "
        f"assert m.version('torch').split('+')[0] == {TORCH_VERSION!r}; "
        "assert u.find_spec('torch') is not None"
    )
    done = subprocess.run([str(python), "-I", "-c", check], capture_output=True, timeout=60, check=False)
    return done.returncode == 0


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        if os.name == "posix":
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def mark_torch_tests(items: list[pytest.Item]) -> None:
    """The first test that needs the torch venv may have to create it: allow it the time."""
    for item in items:
        if "torch_python" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(TORCH_TIMEOUT_S))


def torch_venv_python() -> Path:
    """The interpreter of a real venv with torch (CPU build) installed; built on first use."""
    folder = _torch_venv_dir()
    python = _venv_python(folder)
    if _has_torch(python):
        return python
    with _lock(folder.with_name(folder.name + ".lock")):
        if _has_torch(python):
            return python
        building = folder.with_name(folder.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(building)], check=True, timeout=300)
        install = subprocess.run(
            [str(_venv_python(building)), "-m", "pip", "install", "-q", f"torch=={TORCH_VERSION}"],
            capture_output=True,
            text=True,
            timeout=TORCH_TIMEOUT_S,
            check=False,
        )
        if install.returncode != 0:
            pytest.fail(
                f"could not install torch=={TORCH_VERSION} into a test venv:\n{install.stderr[-3000:]}"
            )
        shutil.rmtree(folder, ignore_errors=True)
        building.rename(folder)
    assert _has_torch(python), f"{python} has no torch {TORCH_VERSION} after creating the venv"
    return python
