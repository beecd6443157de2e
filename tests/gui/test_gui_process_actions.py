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


def test_stop_process_is_offered_for_a_real_job_of_the_users_own(qtbot: QtBot) -> None:
    """Issue 33 item 4: on the demo, a job's process was listed under its task's name, so the check
    against the pid found "python" and greyed the entry out ("the PID now belongs to python"). The
    card and the dashboard's Processes tab now offer "Stop process…" for it, and it stops the job."""
    from gputray.gui.app import build_parser
    from gputray.gui.tray_app import TrayApp
    from gputray.scheduler import protocol as rq
    from gputray.scheduler.tasks.records import TaskPatch

    app = TrayApp(build_parser().parse_args(["--demo"]), tray_available=False)
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
        assert app.owner is not None
        script = "import time; print('up', flush=True); time.sleep(120)"
        reply = app.owner.handle(
            rq.Run(
                argv=[sys.executable, "-c", script],
                name="my render",
                overrides=TaskPatch(device_prefs=("5060ti",)),
            )
        )
        task_id = reply.tasks[0].id

        def job_pid() -> int | None:
            assert app.owner is not None
            got = app.owner.handle(rq.Get(id=task_id))
            return got.pid if got.task.state == "running" else None

        qtbot.waitUntil(lambda: job_pid() is not None, timeout=30_000)
        pid = job_pid()
        assert pid is not None and psutil.Process(pid).uids().real == os.getuid()
        listed = lambda: [p for p in (app.latest.processes if app.latest else ()) if p.pid == pid]  # noqa: E731
        qtbot.waitUntil(lambda: bool(listed()), timeout=15_000)
        (process,) = listed()
        app.show_panel(None)
        card = app.panel.cards[process.device]
        qtbot.waitUntil(lambda: any(p.pid == pid for p in card.processes()), timeout=10_000)
        menu = process_menu(
            card, [p for p in card.processes() if p.pid == pid], card.stop_process_requested.emit
        )
        (entry,) = [a for a in menu.actions() if f"({pid})" in a.text()]
        assert entry.isEnabled(), entry.text()
        assert ownership(process) == (True, "")
        assert app.open_dashboard(tab=1) and app.dashboard is not None
        app.dashboard.refresh()
        row = next(i for i, p in enumerate(app.dashboard._procs) if p.pid == pid)
        assert (
            process_menu(app.dashboard, [app.dashboard._procs[row]], lambda p: None).actions()[0].isEnabled()
        )

        def answer_yes() -> None:
            box = QApplication.activeModalWidget()
            if not isinstance(box, QMessageBox):
                QTimer.singleShot(20, answer_yes)
                return
            next(b for b in box.buttons() if b.text() == "Stop process").click()

        QTimer.singleShot(20, answer_yes)
        entry.trigger()  # the card's signal → the app's stop_process → the question → SIGTERM
        qtbot.waitUntil(
            lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", timeout=15_000
        )
        assert app.owner.handle(rq.Get(id=task_id)).task.state == "failed"  # killed by SIGTERM
    finally:
        if app.dashboard is not None:
            app.dashboard.close()
        app.shutdown()
        app.panel.hide()
