"""Shared fixtures for the scheduler tests: real Python environments, with and without torch.

The torch venv (torch==2.13.0, CPU build) takes a minute to create, so it lives in a cache folder
reused across runs: ``$GPUTRAY_TEST_VENV`` or ``~/.cache/gputray-test/torch-<version>``. It is
created once (under a lock, then renamed into place) and only checked on later runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

TORCH_VERSION = "2.13.0"


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first test that needs the torch venv may have to create it: allow it the time."""
    for item in items:
        if "torch_python" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(1200))


@pytest.fixture(scope="session")
def torch_python() -> Path:
    """The interpreter of a real venv with torch (CPU build) installed."""
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
            timeout=1200,
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


@pytest.fixture(scope="session")
def notorch_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv without torch. ``--copies``: its interpreter is a file of its own, safe to touch."""
    folder = tmp_path_factory.mktemp("envs") / "no-torch"
    venv.EnvBuilder(with_pip=False, symlinks=False).create(folder)
    return _venv_python(folder)


@pytest.fixture
def gputray_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "gputray-home"
    monkeypatch.setenv("GPUTRAY_HOME", str(home))
    return home
