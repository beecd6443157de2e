""" "Stop process…": only the user's own processes, only after a confirmation that names them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from pytestqt.qtbot import QtBot

from gputray.gui.panel import process_menu
from gputray.gui.process_actions import confirm_and_stop, ownership
from gputray.monitor.records import ProcessUse

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.fixture
def own_process() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(SLEEPER)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


@pytest.fixture
def foreign_pid() -> Iterator[int]:
    """A process of another user: as root, a child that became nobody; else init (root's)."""
    if os.geteuid() != 0:
        yield 1
        return
    sleep = shutil.which("sleep")
    if sleep is None:
        pytest.skip("needs sleep(1) to run a process as another user")
    proc = subprocess.Popen([sleep, "120"], user=65534, group=65534, cwd="/")
    yield proc.pid
    proc.kill()
    proc.wait(timeout=10)


def use(pid: int) -> ProcessUse:
    return ProcessUse(pid, psutil.Process(pid).name(), "pci:0000:01:00.0", "compute", vram_bytes=1 << 30)


def answer_with(button: str) -> None:
    """Click a button of the question once it is up (it is modal: exec() waits for the answer)."""

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        texts = (box.text(), box.informativeText())
        answers.append(texts)
        for b in box.buttons():
            if b.text().replace("&", "") == button:
                b.click()
                return
        raise AssertionError(f"no button {button!r} in {[b.text() for b in box.buttons()]}")

    QTimer.singleShot(0, click)


answers: list[tuple[str, str]] = []


def test_own_process_is_stopped_only_after_yes(qtbot: QtBot, own_process: subprocess.Popen[bytes]) -> None:
    p = use(own_process.pid)
    assert ownership(p) == (True, "")
    answers.clear()
    answer_with("Cancel")
    assert confirm_and_stop(None, p) is False
    assert own_process.poll() is None, "Cancel leaves it running"
    assert answers[-1][0] == f"Stop {p.name} (PID {p.pid})?"
    answer_with("Stop process")
    assert confirm_and_stop(None, p) is True
    assert own_process.wait(timeout=10) == -15  # SIGTERM, as kill would


def test_other_users_gone_and_reused_pids_cannot_be_stopped(qtbot: QtBot, foreign_pid: int) -> None:
    theirs = use(foreign_pid)
    assert ownership(theirs) == (False, "another user's process")
    assert ownership(ProcessUse(os.getpid(), "python", "cpu", "compute"))[0] is False  # gputray itself
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=10)
    assert ownership(ProcessUse(gone.pid, "python", "cpu", "compute")) == (
        False,
        "not running on this machine",
    )
    with subprocess.Popen(SLEEPER) as other:
        try:
            reused = ProcessUse(other.pid, "llama-server", "cpu", "compute")  # the pid now runs python
            own, why = ownership(reused)
            assert not own and why.startswith("the PID now belongs to")
        finally:
            other.kill()
    # the menu lists every process, and enables only the user's own
    with subprocess.Popen(SLEEPER) as mine:
        try:
            menu = process_menu(None, [use(mine.pid), theirs], lambda p: None)  # type: ignore[arg-type]
            entries = {a.text(): a.isEnabled() for a in menu.actions()}
            assert entries[f"Stop {use(mine.pid).name} ({mine.pid})…"] is True
            refused = next(t for t in entries if f"({foreign_pid})" in t)
            assert entries[refused] is False and "another user's process" in refused
        finally:
            mine.kill()
