"""Notifications you can answer (issue 24): "Run on Radeon 780M now" / "Keep waiting".

A real session bus (``dbus-daemon``), a stand-in for the desktop's notification daemon on it
(``fake_notification_server.py``: the library boundary), and the real tray app in demo mode with its
real owner and SQLite queue. In the first tests the offer comes as the owner's queue event does
(``queue_event_arrived``, the queued signal the tray's owner thread emits); in the last, the owner's
estimator makes it from a real earlier run of the same job. The answer is the stand-in's
``ActionInvoked``, and what it did is read back from the owner. Where the daemon shows no buttons, the
tray's balloon asks: a click opens the panel at the task with the same two answers in its row menu (the
Windows path too).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from PySide6.QtWidgets import QApplication, QMenu
from pytestqt.qtbot import QtBot

from gputray.gui.app import build_parser
from gputray.gui.tray_app import TrayApp
from gputray.scheduler import protocol as rq
from gputray.scheduler.replies import Offer, TaskView
from gputray.scheduler.tasks.records import TaskPatch

HERE = Path(__file__).resolve().parent
KEY_5060 = "pci:0000:01:00.0"
KEY_780M = "pci:0000:64:00.0"
OFFER = Offer(device_key=KEY_780M, device_name="Radeon 780M", run_s=240.0, waited_s=720.0)

try:
    import jeepney  # noqa: F401 - the stand-in speaks D-Bus through it
except ImportError:  # pragma: no cover
    HAVE_JEEPNEY = False
else:
    HAVE_JEEPNEY = True

pytestmark = pytest.mark.skipif(
    shutil.which("dbus-daemon") is None or not sys.platform.startswith("linux") or not HAVE_JEEPNEY,
    reason="needs dbus-daemon and jeepney on Linux",
)


class NotificationDaemon:
    """The stand-in process: what it was asked (JSON lines) and the buttons a person presses."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        assert proc.stdout is not None and proc.stdout.readline().strip() == "notifications-ready"
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            said = json.loads(line)
            if "sent" not in said:  # not the echo of a pressed button
                self.lines.put(said)

    def next_call(self, qtbot: QtBot, what: str = "notify") -> Any:
        """The next Notify (or CloseNotification) call, while the tray's event loop runs (it calls)."""
        qtbot.waitUntil(lambda: not self.lines.empty(), timeout=30_000)
        line = self.lines.get_nowait()
        assert what in line, line
        return line[what]

    def calls_so_far(self) -> list[dict[str, Any]]:
        calls = []
        while not self.lines.empty():
            calls.append(self.lines.get_nowait())
        return calls

    def press(self, note_id: int, action: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"invoke {note_id} {action}\n")
        self.proc.stdin.flush()


@pytest.fixture
def session_bus(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private session bus for this test; the tray finds it as on a desktop (DBUS_SESSION_BUS_ADDRESS)."""
    bus = subprocess.run(
        ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
        capture_output=True, text=True, check=True, timeout=20,
    )  # fmt: skip
    address, pid = bus.stdout.split()[:2]
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    try:
        yield address
    finally:
        os.kill(int(pid), signal.SIGTERM)


def start_daemon(capabilities: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "fake_notification_server.py"), capabilities],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.fixture
def daemon(session_bus: str) -> Iterator[NotificationDaemon]:
    proc = start_daemon("actions,body")
    try:
        yield NotificationDaemon(proc)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def demo_app(qtbot: QtBot) -> Iterator[TrayApp]:
    app = TrayApp(build_parser().parse_args(["--demo"]), tray_available=False)
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
        app.request(rq.Pause(device=KEY_5060))  # the 5060 Ti is busy: tasks that want it wait
        yield app
    finally:
        app.shutdown()
        app.panel.hide()


def waiting_task(qtbot: QtBot, app: TrayApp, name: str) -> TaskView:
    """A task waiting for the paused 5060 Ti, once the tray has heard so from the owner.

    The owner's thread sends "queued", then "waiting" when its dispatch finds the device paused. An
    offer emitted before the "waiting" event arrives would be overwritten by it (the stand-in offer is
    not the owner's: its view of the task has none), so the tests offer only after it."""
    done = app.request(
        rq.Run(argv=[sys.executable, "-c", "pass"], name=name, overrides=TaskPatch(device_prefs=(KEY_5060,)))
    )
    assert done is not None
    (task,) = done.tasks
    assert task.state in ("queued", "waiting")

    def heard_waiting() -> bool:
        row = app.model.row_of(task.id)
        return row is not None and app.model.tasks()[row].state == "waiting"

    qtbot.waitUntil(heard_waiting, timeout=30_000)
    return task


def offer(app: TrayApp, task: TaskView) -> None:
    """What the owner's thread does when an estimate finds the task would finish sooner elsewhere."""
    app.queue_event_arrived.emit("offer", msgspec.structs.replace(task, offer=OFFER), "")


def task_now(app: TrayApp, task_id: int) -> rq.rp.TaskReply:
    reply = app.request(rq.Get(id=task_id))
    assert reply is not None
    return reply


def declined(app: TrayApp, task_id: int) -> bool:
    spec = task_now(app, task_id).spec
    return spec is not None and spec.offer_declined


def test_the_desktop_asks_and_each_answer_is_an_edit_the_owner_acts_on(
    qtbot: QtBot, daemon: NotificationDaemon, demo_app: TrayApp, caplog: pytest.LogCaptureFixture
) -> None:  # (the bus and its daemon first: they outlive the app)
    caplog.set_level(logging.INFO, logger="gputray.gui.notifications")
    cnn, upscale = waiting_task(qtbot, demo_app, "cnn.py"), waiting_task(qtbot, demo_app, "upscale.py")
    resize = waiting_task(qtbot, demo_app, "resize.py")

    offer(demo_app, cnn)
    asked = daemon.next_call(qtbot)
    assert asked["actions"] == ["run-here", "Run on Radeon 780M now", "keep-waiting", "Keep waiting"]
    assert asked["summary"] == "cnn.py can start now on Radeon 780M"
    assert asked["body"] == "Waiting for 12 min; it takes about 4 min on Radeon 780M."
    assert asked["app_name"] == "gputray"
    daemon.press(asked["id"], "run-here")
    qtbot.waitUntil(lambda: task_now(demo_app, cnn.id).task.device == KEY_780M, timeout=30_000)
    qtbot.waitUntil(  # placed there at once; `starting` until its process runs
        lambda: task_now(demo_app, cnn.id).task.state in ("running", "succeeded"), timeout=30_000
    )

    offer(demo_app, upscale)
    asked = daemon.next_call(qtbot)
    daemon.press(asked["id"], "keep-waiting")
    qtbot.waitUntil(lambda: declined(demo_app, upscale.id), timeout=30_000)
    offer(demo_app, upscale)  # an estimate that did not hear the answer yet: not asked again
    qtbot.waitUntil(lambda: f"offer for task #{upscale.id} not shown: already answered" in caplog.text)
    assert daemon.calls_so_far() == []
    now = task_now(demo_app, upscale.id)
    assert now.task.state in ("queued", "waiting") and now.spec is not None
    assert now.spec.device_prefs == (KEY_5060,)

    offer(demo_app, resize)
    asked = daemon.next_call(qtbot)
    demo_app.cancel([resize.id])  # it no longer waits: the question goes from the screen
    assert daemon.next_call(qtbot, "closed") == asked["id"]


def test_without_buttons_on_the_desktop_the_balloon_opens_the_panel_at_the_task(
    qtbot: QtBot, session_bus: str, demo_app: TrayApp
) -> None:
    proc = start_daemon("body")  # a daemon that shows no buttons (as Windows' balloon has none)
    try:
        NotificationDaemon(proc)
        cnn = waiting_task(qtbot, demo_app, "cnn.py")
        offer(demo_app, cnn)
        qtbot.waitUntil(lambda: any(n.kind == "job_offer" for n in demo_app.notifier.shown))
        demo_app.tray.messageClicked.emit()
        assert demo_app.panel.isVisible()
        menu = QApplication.activePopupWidget()
        assert isinstance(menu, QMenu), "the task's row menu is open"
        (run,) = [a for a in menu.actions() if a.text() == "Run on Radeon 780M now"]
        assert [a.text() for a in menu.actions()][-1] == "Keep waiting"
        run.trigger()
        qtbot.waitUntil(lambda: task_now(demo_app, cnn.id).task.device == KEY_780M, timeout=30_000)
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_task_that_waited_longer_than_its_run_elsewhere_is_offered_and_starts_there(
    qtbot: QtBot, tmp_path: Path, daemon: NotificationDaemon, demo_app: TrayApp
) -> None:
    """End to end: the owner's estimator learns the family's run on the 780M from a real run, offers the
    next one (waiting for the busy 5060 Ti) the 780M, and the desktop's "Run on … now" starts it there."""
    script = tmp_path / "cnn.py"
    script.write_text("print('inference done')\n")
    argv = [sys.executable, str(script)]
    first = demo_app.request(rq.Run(argv=argv, name="cnn.py", overrides=TaskPatch(device_prefs=(KEY_780M,))))
    assert first is not None
    qtbot.waitUntil(lambda: task_now(demo_app, first.tasks[0].id).task.state == "succeeded", timeout=30_000)

    second = demo_app.request(
        rq.Run(
            argv=argv, name="cnn.py", overrides=TaskPatch(device_prefs=(KEY_5060, KEY_780M), on_busy="wait")
        )
    )
    assert second is not None
    task_id = second.tasks[0].id
    asked = daemon.next_call(qtbot)
    assert asked["actions"][:2] == ["run-here", "Run on Radeon 780M now"]
    assert asked["summary"] == "cnn.py can start now on Radeon 780M"
    assert asked["body"].startswith("Waiting for ") and "on Radeon 780M." in asked["body"]
    daemon.press(asked["id"], "run-here")
    qtbot.waitUntil(lambda: task_now(demo_app, task_id).task.device == KEY_780M, timeout=30_000)


def test_without_a_notification_service_the_row_and_the_bar_offer_both_answers(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_app: TrayApp
) -> None:
    """Issue 33 item 11: with no notification service (no session bus: only Qt's balloon, which has no
    buttons), the offer is in the row's reason and in a bar above the list with its two answers as
    buttons, one click away."""
    from PySide6.QtCore import Qt

    from gputray.gui.queue_model import COL_REASON

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")
    panel = demo_app.panel
    demo_app.show_panel(None)
    cnn, upscale = waiting_task(qtbot, demo_app, "cnn.py"), waiting_task(qtbot, demo_app, "upscale.py")
    # The offers below are stand-ins for the owner's (its event carries them; the owner's own view of
    # the task has none): the open panel's periodic reload would put that view back over the row.
    demo_app.visible_timer.stop()
    assert not panel.offer_bar.isVisible()
    offer(demo_app, cnn)
    qtbot.waitUntil(lambda: any(n.kind == "job_offer" for n in demo_app.notifier.shown))

    def row_reason() -> str:
        row = demo_app.model.row_of(cnn.id)
        return "" if row is None else str(demo_app.model.data(demo_app.model.index(row, COL_REASON)))

    # then why it waits, if it says yet
    qtbot.waitUntil(lambda: row_reason().startswith("can start now on Radeon 780M"), timeout=10_000)
    qtbot.waitUntil(panel.offer_bar.isVisible, timeout=5000)
    assert panel.offer_bar.text.text().startswith("cnn.py can start now on Radeon 780M: waiting for 12 min")
    assert panel.offer_bar.run_button.text() == "Run on Radeon 780M now"
    assert panel.offer_bar.keep_button.text() == "Keep waiting"
    qtbot.mouseClick(panel.offer_bar.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: task_now(demo_app, cnn.id).task.device == KEY_780M, timeout=30_000)

    offer(demo_app, upscale)
    qtbot.waitUntil(
        lambda: panel.offer_bar.isVisible() and panel.offer_bar.text.text().startswith("upscale.py"),
        timeout=5000,
    )
    qtbot.mouseClick(panel.offer_bar.keep_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: declined(demo_app, upscale.id), timeout=30_000)
    assert not panel.offer_bar.isVisible()
