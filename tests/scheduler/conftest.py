"""Shared fixtures for the scheduler tests: real Python environments, with and without torch.

The torch venv (torch==2.13.0, CPU build) is built once and cached: see ``tests/torch_venv.py``.
"""

from __future__ import annotations

import os
import venv
from pathlib import Path

import pytest
from torch_venv import mark_torch_tests, torch_venv_python


def _venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_torch_tests(items)


@pytest.fixture(scope="session")
def torch_python() -> Path:
    """The interpreter of a real venv with torch (CPU build) installed."""
    return torch_venv_python()


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
