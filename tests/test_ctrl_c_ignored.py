"""The suite passes when it is started with SIGINT ignored (`nohup pytest &`, `pytest &` from a script):
two of the tests that send Ctrl+C to a real child, run by a pytest that ignores SIGINT, as its
children then inherit. Before, such children ignored Ctrl+C too (a Python started with SIGINT ignored
sets no KeyboardInterrupt handler) and the tests timed out; now each sets SIGINT back to its default
in the child it signals (``tests/child_signals.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGINT dispositions are POSIX")
TESTS = Path(__file__).resolve().parent
CTRL_C_TESTS = [
    "scheduler/cli/test_status_cmd.py::test_status_watch_refreshes_until_interrupted",
    "monitor/test_process_group.py::test_ctrl_c_while_the_child_starts_kills_it_and_still_interrupts",
]


def _ignore_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_ctrl_c_tests_pass_under_a_suite_that_ignores_sigint(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *(str(TESTS / t) for t in CTRL_C_TESTS),
        ],
        cwd=TESTS.parent,
        preexec_fn=_ignore_ctrl_c,  # as `nohup` or a shell's `&` starts it
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTEST_ADDOPTS": f"--basetemp={tmp_path / 'inner'}"},
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert f"{len(CTRL_C_TESTS)} passed" in run.stdout
