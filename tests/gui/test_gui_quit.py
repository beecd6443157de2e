"""Quit with jobs running asks: keep them running, stop them, or cancel. A kept job runs to its end
with no owner up; the next owner records its real exit and does not run it again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot
from waiting import wait_for

from gputray.gui import tray_app as tray_module
from gputray.gui.app import build_parser
from gputray.gui.tray_app import TrayApp
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import app_paths
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskPatch

PY = sys.executable
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the job script uses POSIX paths")


class _NoEventLoopToEnd:
    """Stands in for QApplication in the tray module: quitting must not end the test run's event loop."""

    @staticmethod
    def instance() -> None:
        return None


@pytest.fixture
def tray_app(qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TrayApp]:
    monkeypatch.setattr(tray_module, "QApplication", _NoEventLoopToEnd)
    empty = tmp_path / "empty-root"
    empty.mkdir()
    args = build_parser().parse_args(["--sysfs-root", str(empty), "--proc-root", str(empty)])
    app = TrayApp(args, tray_available=False)
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
        yield app
    finally:
        app.shutdown()
        app.panel.hide()


def _job_waiting_for(go: Path, marks: Path, code: int) -> list[str]:
    script = (
        "import os, sys, time\n"
        f"open({str(marks)!r}, 'a').write('start\\n')\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        f"sys.exit({code})\n"
    )
    return [PY, "-c", script]


def _start_job(app: TrayApp, go: Path, marks: Path, code: int = 0) -> int:
    assert app.owner is not None
    reply = app.owner.handle(
        rq.Run(
            argv=_job_waiting_for(go, marks, code), name="kept", overrides=TaskPatch(retries=2, backoff_s=0)
        )
    )
    task_id = reply.tasks[0].id
    owner = app.owner
    wait_for(lambda: owner.queue.get(task_id).pid is not None and marks.exists(), what="the job to start")
    return task_id


def test_quit_keeping_jobs_then_the_next_owner_records_their_exit(tray_app: TrayApp, tmp_path: Path) -> None:
    go, marks = tmp_path / "go", tmp_path / "marks"
    task_id = _start_job(tray_app, go, marks)
    asked: list[int] = []
    tray_app.ask_quit = lambda running: asked.append(running) or "keep"  # type: ignore[method-assign]
    tray_app.quit_asking()
    assert asked == [1] and tray_app.owner is None
    go.touch()  # the job ends while no owner is up
    wait_for(lambda: any(app_paths().logs_dir.glob("task-*.exit.json")), what="the kept job's exit file")
    owner = Owner(app_paths(), sysfs_root=tmp_path / "empty-root", proc_root=tmp_path / "empty-root")
    owner.start()
    try:
        rec = wait_for(lambda: (r := owner.queue.get(task_id)).finished and r, what="its exit to be recorded")
        assert (rec.state, rec.exit_code, rec.attempts) == ("succeeded", 0, 1), rec
        assert marks.read_text() == "start\n"  # it ran once: never again after it had completed
    finally:
        owner.stop()


def test_quit_stopping_jobs_interrupts_them(tray_app: TrayApp, tmp_path: Path) -> None:
    go, marks = tmp_path / "go", tmp_path / "marks"
    task_id = _start_job(tray_app, go, marks)
    owner = tray_app.owner
    assert owner is not None
    tray_app.ask_quit = lambda running: "stop"  # type: ignore[method-assign]
    tray_app.quit_asking()
    assert tray_app.owner is None
    rec = owner.queue.store.get(task_id)  # the store's last word, kept in memory after it closed
    assert rec.state == "queued" and "gputray stopped while it ran" in render(rec.reason), rec


def test_cancel_leaves_everything_running(tray_app: TrayApp, tmp_path: Path) -> None:
    go, marks = tmp_path / "go", tmp_path / "marks"
    task_id = _start_job(tray_app, go, marks)
    tray_app.ask_quit = lambda running: None  # type: ignore[method-assign]
    tray_app.quit_asking()
    assert tray_app.owner is not None and tray_app.owner.queue.get(task_id).state == "running"
    go.touch()
    owner = tray_app.owner
    wait_for(lambda: owner.queue.get(task_id).state == "succeeded", what="the job to finish")


def test_no_question_without_running_jobs(tray_app: TrayApp) -> None:
    tray_app.ask_quit = lambda running: pytest.fail("asked with nothing running")  # type: ignore[method-assign]
    tray_app.quit_asking()
    assert tray_app.owner is None
