"""Headless Qt for widget and model tests; every test gets its own GPUTRAY_HOME."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from torch_venv import mark_torch_tests, torch_venv_python

import gputray.gui  # noqa: F401 - before Qt does anything: see gui/__init__.py (None refcount fix)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_torch_tests(items)


@pytest.fixture(scope="session")
def torch_python() -> Path:
    """A real venv with torch (CPU build): a dropped .py runs in it (never in gputray's own Python)."""
    return torch_venv_python()


@pytest.fixture(autouse=True)
def gputray_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "gputray-home"
    monkeypatch.setenv("GPUTRAY_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    yield home
