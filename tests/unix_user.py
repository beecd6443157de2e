"""A second Unix user for the tests that need one (another user's view of our files, a user bound by
RLIMIT_NPROC): created with ``useradd``, removed with ``userdel``; the test is skipped where that
cannot be done (not root, a tool missing, useradd refused)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def second_unix_user(prefix: str, *tools: str) -> Iterator[str]:
    """A new user named ``prefix`` + part of this process's PID (no home, no login shell), removed on
    leaving; ``tools``: programs the test needs beyond useradd, userdel and runuser."""
    if os.geteuid() != 0:
        pytest.skip("creating a second Unix user needs root (the CI runs as root)")
    for tool in ("useradd", "userdel", "runuser", *tools):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    name = f"{prefix}{os.getpid() % 100000}"
    made = subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot create a user here: {made.stderr.strip()}")
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)
