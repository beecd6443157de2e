"""The tray app as a whole, headless (offscreen: no tray, so the panel is a normal window)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from pytestqt.qtbot import QtBot

from gputray.gui.app import build_parser, hand_over
from gputray.gui.queue_model import COL_DEVICE, COL_REASON
from gputray.gui.tray_app import TrayApp
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.registry import add_env
from gputray.scheduler.tasks.records import TaskPatch

PROBE = r"""
import json, sys, time
from PySide6.QtWidgets import QApplication
from gputray.gui.app import build_parser
from gputray.gui.app import make_application
from gputray.gui.tray_app import TrayApp
qapp = make_application()
app = TrayApp(build_parser().parse_args(sys.argv[1:]))
app.start()
deadline = time.monotonic() + 30
while (app.owner is None or app.latest is None) and time.monotonic() < deadline:
    QApplication.processEvents()
    time.sleep(0.02)
print(json.dumps({
    "started": app.owner is not None,
    "demo": app.demo,
    "heavy": sorted(m for m in ("pyqtgraph", "torch", "numpy") if m in sys.modules),
}))
app.shutdown()
"""


@pytest.fixture
def tray_app(qtbot: QtBot, tmp_path: Path) -> Iterator[TrayApp]:
    empty = tmp_path / "empty-root"
    empty.mkdir()
    # No --demo: the real backends read an empty /sys and /proc, find no GPU, and the app says so.
    args = build_parser().parse_args(["--sysfs-root", str(empty), "--proc-root", str(empty)])
    app = TrayApp(args, tray_available=False)
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
        yield app
    finally:
        app.shutdown()
        app.panel.hide()  # (closing the no-tray window would quit the application)


def test_startup_imports_neither_pyqtgraph_nor_torch(tmp_path: Path) -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "GPUTRAY_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "--demo"], env=env, capture_output=True, text=True, timeout=90
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["started"] and result["demo"]
    assert result["heavy"] == [], "heavy modules must load only when the dashboard opens"


def test_no_tray_no_gpu_window_says_why_and_a_drop_runs(
    qtbot: QtBot, tray_app: TrayApp, tmp_path: Path, torch_python: Path
) -> None:
    add_env(torch_python, name="torch-cpu")  # a dropped .py runs in an env with torch, found by itself
    panel = tray_app.panel
    assert panel.isVisible()
    assert panel.windowFlags() & Qt.WindowType.WindowType_Mask == Qt.WindowType.Window
    assert "No system tray was found" in panel.notice_label.text()
    # no GPU found → the demo, labelled everywhere
    assert tray_app.demo
    assert "No GPU was found on this machine" in panel.notice_label.text()
    assert panel.windowTitle() == "gputray — DEMO"
    assert tray_app.icon_ctl.picture is not None and tray_app.icon_ctl.picture.demo
    assert "DEMO" in tray_app.icon_ctl.tooltip
    assert set(panel.cards) == {"pci:0000:01:00.0", "pci:0000:64:00.0"}

    # a file dropped on the panel (a QDropEvent in-process; the X11 e2e test does a real XDND drag)
    marker = tmp_path / "ran.txt"
    script = tmp_path / "スクリプト 1.py"
    script.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ok')\n")
    tray_app.state.set("drop_choices", {".py": {"recipe": "torch", "policy": "redirect"}})
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(script)), QUrl.fromLocalFile(str(tmp_path))])
    drop = QDropEvent(
        QPointF(10, 10),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    panel.dropEvent(drop)
    assert tray_app.model.rowCount() == 1
    qtbot.waitUntil(lambda: tray_app.model.counts().get("succeeded") == 1, timeout=60_000)
    assert marker.read_text() == "ok"
    # The demo's GPUs are simulated: the job ran on the CPU in the env, and the panel says so.
    device = tray_app.model.data(tray_app.model.index(0, COL_DEVICE))
    assert device.endswith(" · torch-cpu")
    reason = tray_app.model.data(tray_app.model.index(0, COL_REASON))
    assert reason.startswith("demo: ran on the CPU in place of ")
    kinds = [n.kind for n in tray_app.notifier.shown]
    assert "job_finished" in kinds
    # the folder in the same drop got a clear message instead of a job
    assert "is a folder" in tray_app._last_warning.text()


def test_pause_and_resume_from_the_panel(qtbot: QtBot, tray_app: TrayApp) -> None:
    tray_app.panel.pause_all_button.click()
    assert tray_app.paused.all and tray_app.menu.pause_action.isChecked()
    assert tray_app.panel.pause_all_button.text() == "Resume queue"
    tray_app.panel.cards["pci:0000:64:00.0"].pause_button.click()
    assert tray_app.paused.devices == {"pci:0000:64:00.0"}
    tray_app.panel.pause_all_button.click()  # resuming the whole queue resumes every device
    assert not tray_app.paused.all and not tray_app.panel.cards["pci:0000:64:00.0"].pause_button.isChecked()


def test_a_second_launch_hands_its_files_to_a_daemon_which_queues_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert hand_over([]) is None  # nobody answers
    owner = Owner(app_paths(), demo=True)  # as `gputray daemon`: no tray to confirm with
    owner.start()
    try:
        script = tmp_path / "job; echo pwned.py"
        script.write_text("print('hi')\n")
        assert hand_over([str(script)]) == 0
        assert f"queued #1: {script.name}" in capsys.readouterr().out
        assert [t.name for t in owner.queue.list()] == [script.name]
        assert hand_over([str(tmp_path / "missing.png")]) == 1
        assert "missing.png" in capsys.readouterr().err
    finally:
        owner.stop()


def test_files_handed_to_the_tray_go_through_its_drop_confirm_with_the_remembered_choice(
    qtbot: QtBot, tray_app: TrayApp, tmp_path: Path, capsys: pytest.CaptureFixture[str], torch_python: Path
) -> None:
    """ "Open with", "Send To" or `gputray FILE` while the tray runs: the same path as a drop, so the
    choice remembered for the file type applies (here: .py files on the CPU)."""
    add_env(torch_python, name="torch-cpu")
    tray_app.state.set("drop_choices", {".py": {"recipe": "torch", "policy": "cpu"}})
    script = tmp_path / "second launch 'x'; 日本.py"
    script.write_text("print('handed over')\n")
    assert hand_over([str(script)]) == 0
    assert "confirm the jobs there" in capsys.readouterr().out
    qtbot.waitUntil(lambda: tray_app.model.rowCount() == 1, timeout=10_000)
    assert tray_app.owner is not None
    (task,) = tray_app.owner.queue.list()
    assert task.name == script.name and task.spec.device_prefs == ("cpu",)
    qtbot.waitUntil(lambda: tray_app.owner.queue.get(task.id).state == "succeeded", timeout=60_000)
    assert tray_app.owner.queue.get(task.id).env == "torch-cpu"

    assert hand_over([str(tmp_path / "gone.py")]) == 1  # refused at once, nothing queued
    assert "no such file" in capsys.readouterr().err
    assert tray_app.model.rowCount() == 1


def test_files_given_at_launch_are_queued_like_a_drop(qtbot: QtBot, tmp_path: Path) -> None:
    """`gputray FILE` (a desktop entry's %F) starting the tray: the drop path, with the remembered choice."""
    script = tmp_path / "at launch.py"
    script.write_text("print('from the command line')\n")
    empty = tmp_path / "empty-root"
    empty.mkdir()
    args = build_parser().parse_args(["--sysfs-root", str(empty), "--proc-root", str(empty), str(script)])
    app = TrayApp(args, tray_available=False)
    app.state.set("drop_choices", {".py": {"recipe": "torch", "policy": "cpu"}})
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None and app.model.rowCount() == 1, timeout=30_000)
        assert app.owner is not None
        (task,) = app.owner.queue.list()
        assert task.name == script.name and task.spec.device_prefs == ("cpu",)
    finally:
        app.shutdown()
        app.panel.hide()


def test_switching_language_retranslates_the_open_windows_and_keeps_the_banner(
    qtbot: QtBot, tray_app: TrayApp
) -> None:
    from gputray.gui.i18n import install_language

    panel, menu = tray_app.panel, tray_app.menu
    try:
        from gputray.gui.settings_dialog import write_user_config

        saved = {"gui": {"language": "ja", "notifications": {"job_started": False}}}
        write_user_config(saved)  # what Settings does before it tells the tray
        tray_app._apply_settings(saved)
        assert tray_app.panel is panel and tray_app.menu is menu  # retranslated, not rebuilt
        assert panel.windowTitle() == "gputray — デモ"
        assert menu.quit_action.text() == "終了"
        assert "GPU が見つからない" in panel.notice_text(), "the demo banner stays, in Japanese"
        assert tray_app.notifier.enabled["job_started"] is False
        assert panel.isVisible()  # it was shown (no tray): it stays shown
        tray_app.set_language("en")
        assert panel.windowTitle() == "gputray — DEMO" and menu.quit_action.text() == "Quit"
        assert "No GPU was found on this machine" in panel.notice_text()
        assert "No system tray was found" in panel.notice_text()
    finally:
        install_language("en")


def test_set_priority_from_the_row_menu_changes_what_the_owner_starts_first(
    qtbot: QtBot, tray_app: TrayApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtWidgets import QInputDialog

    from gputray.scheduler import protocol as rq

    tray_app.request(rq.Pause(device=None))  # nothing starts: the order is what we look at
    for name in ("first", "second"):
        tray_app.request(
            rq.Run(argv=[sys.executable, "-c", "pass"], name=name, overrides=TaskPatch(device_prefs=("cpu",)))
        )
    tray_app.reload_queue()
    row = next(i for i, t in enumerate(tray_app.model.tasks()) if t.name == "second")
    asked: list[int] = []

    def get_int(*args: object) -> tuple[int, bool]:  # the user types 50 and presses OK
        asked.append(int(args[3]))  # type: ignore[call-overload]
        return 50, True

    monkeypatch.setattr(QInputDialog, "getInt", staticmethod(get_int))
    menu = tray_app.panel.row_menu(row)
    priority = next(a.menu() for a in menu.actions() if a.menu() is not None)
    next(a for a in priority.actions() if a.text() == "Set priority…").trigger()
    assert asked == [0]  # the dialog started from the task's priority
    listed = tray_app.request(rq.Queue(all=True))
    assert listed is not None
    assert listed is not None
    by_name = {t.name: t for t in listed.tasks}
    assert by_name["second"].priority == 50 and by_name["first"].priority == 0
    tray_app.reload_queue()
    assert [t.name for t in tray_app.model.tasks()][:2] == ["second", "first"]


def test_the_tray_starts_with_a_bad_config_using_its_good_keys(
    qtbot: QtBot, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A typo and a bad value do not stop the tray: each is logged (file, key, value), the rest is used."""
    import logging

    from gputray.gui.i18n import install_language

    path = app_paths().config_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        '[gui]\nlanguage = "ja"\nnotifcations = { gpu_hot = false }\n'
        '[gui.notifications]\njob_started = false\n[thresholds]\ntemp_limit_c = "hot"\n',
        encoding="utf-8",
    )
    app = TrayApp(build_parser().parse_args(["--demo"]), tray_available=False)
    try:
        with caplog.at_level(logging.WARNING, logger="gputray.config"):
            app.start()
            qtbot.waitUntil(lambda: app.owner is not None and app.latest is not None, timeout=30_000)
        assert app.panel.windowTitle() == "gputray — デモ"  # [gui] language is used
        assert app.notifier.enabled["job_started"] is False and app.notifier.enabled["gpu_hot"] is True
        logged = [r.getMessage() for r in caplog.records]
        assert f'{path}: thresholds.temp_limit_c = "hot" is not a number in 20 … 150; using 85.0' in logged
        assert f"{path}: unknown key gui.notifcations (did you mean gui.notifications?); ignored" in logged
        # and the panel's banner says so in Japanese (the problem too), naming the first and `gputray config`
        assert (
            "設定ファイルに問題が 2 件あります（`gputray config` で一覧できます）: "
            f'{path}: thresholds.temp_limit_c = "hot" は 20 … 150 の数値ではありません。85.0 を使います'
        ) in app.notice_text().splitlines()
        # fixed by hand and saved in Settings: the banner says no more
        path.write_text('[gui]\nlanguage = "ja"\n', encoding="utf-8")
        app._apply_settings({})
        assert "gputray config" not in app.notice_text()
    finally:
        app.shutdown()
        app.panel.hide()
        install_language("en")


def test_unticking_demo_mode_without_a_gpu_says_why_and_locks_the_entry(qtbot: QtBot, tmp_path: Path) -> None:
    """Issue 33 item 7: unticking Demo mode restarted the owner, which found no GPU and ticked the box
    again without a word. Now it says why, and the entry is off with that reason as its tooltip."""
    empty = tmp_path / "empty-root"
    empty.mkdir()
    args = build_parser().parse_args(["--demo", "--sysfs-root", str(empty), "--proc-root", str(empty)])
    app = TrayApp(args, tray_available=False)
    app.start()
    try:
        qtbot.waitUntil(lambda: app.owner is not None, timeout=30_000)
        demo = app.menu.demo_action
        assert demo.isChecked() and demo.isEnabled()  # asked for: whether a GPU exists is not known yet
        demo.setChecked(False)  # what a click on the ticked entry does
        qtbot.waitUntil(lambda: app.owner is not None and not app._starting, timeout=30_000)
        assert app.demo and demo.isChecked()
        assert not demo.isEnabled()
        assert demo.toolTip() == "No GPU was found on this machine, so gputray stays in demo mode."
        assert app._last_warning.isVisible()
        assert app._last_warning.text() == demo.toolTip()
        app._last_warning.close()
    finally:
        app.shutdown()
        app.panel.hide()


def test_about_in_the_tray_menu_names_gputray_qt_and_python_versions(qtbot: QtBot, tray_app: TrayApp) -> None:
    import platform
    from importlib import metadata

    import PySide6
    from PySide6.QtCore import qVersion

    assert tray_app.menu.actions()[-2] is tray_app.menu.about_action  # just above Quit
    assert tray_app.menu.about_action.text() == "About gputray"
    tray_app.menu.about_action.trigger()
    box = tray_app.about_box
    qtbot.waitUntil(box.isVisible, timeout=10_000)
    lines = box.text().splitlines()
    assert lines[:3] == [
        f"gputray {metadata.version('gputray')}",
        f"Qt {qVersion()} (PySide6 {PySide6.__version__})",
        f"Python {platform.python_version()}",
    ]
    box.close()
