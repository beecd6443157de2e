"""The argv that runs a Python script or module of gputray's in a process of its own: ``python -I -S
FILE`` / ``python -m MODULE`` from a venv, and the same through the executable itself in a frozen build
(PyInstaller's ``gputray``/``gputray.exe`` is no Python that takes ``-m``; its entry,
``tools/frozen_entry.py``, runs ``gputray --gputray-run-path FILE ARGS…`` as that script and
``gputray --gputray-run-module MODULE ARGS…`` as that module, with ``sys.argv`` as the script expects).

In the lowest layer so that the monitor (the Vulkan worker) and the scheduler (the jobs' supervisor)
share it.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

RUN_PATH = "--gputray-run-path"
RUN_MODULE = "--gputray-run-module"


def frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def script_command(path: str, *args: str) -> list[str]:
    """Run the file ``path`` as ``__main__``, isolated (``-I -S``: no user site, no PYTHON* variables)."""
    if frozen():
        return [sys.executable, RUN_PATH, path, *args]
    return [sys.executable, "-I", "-S", path, *args]


def module_command(module: str, *args: str, python: str | None = None) -> list[str]:
    """Run ``module`` as ``__main__`` with ``python`` (default: the one running gputray)."""
    if python is None and frozen():
        return [sys.executable, RUN_MODULE, module, *args]
    return [python or sys.executable, "-m", module, *args]


def run_if_asked(argv: Sequence[str]) -> bool:
    """In a frozen build's entry: run what ``argv`` (``sys.argv``) asks for and return True, or False
    when it asks for neither (then it is an ordinary ``gputray`` command line)."""
    if len(argv) < 3 or argv[1] not in (RUN_PATH, RUN_MODULE):
        return False
    target = argv[2]
    sys.argv = [target, *argv[3:]]
    if argv[1] == RUN_PATH:
        runpy.run_path(target, run_name="__main__")
    else:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    return True
