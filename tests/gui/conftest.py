"""Headless Qt for widget and model tests; every test gets its own GPUTRAY_HOME."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import gputray.gui  # noqa: F401 - before Qt does anything: see gui/__init__.py (None refcount fix)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def gputray_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "gputray-home"
    monkeypatch.setenv("GPUTRAY_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    yield home
