"""The e2e tests' real torch venv (a dropped .py runs in an env with torch: see ``tests/torch_venv.py``),
and the daemon fixtures of test_daemon_e2e, shared with the other e2e modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_daemon_e2e import daemon, daemons, home  # noqa: F401
from torch_venv import mark_torch_tests, torch_venv_python


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_torch_tests(items)


@pytest.fixture(scope="session")
def torch_python() -> Path:
    return torch_venv_python()
