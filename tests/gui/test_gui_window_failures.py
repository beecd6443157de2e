"""A window that cannot be built (its module or a package it needs is missing) says so in a message box,
and the tray goes on: no traceback, no crash.

Issue 21: with pyqtgraph missing, "Open dashboard" failed inside ``Dashboard.__init__`` after the
window's C++ half existed; the exception escaped the menu's slot, Python kept it (and the half-built
window) in ``sys.last_traceback``, and the next language switch made Qt call into that window:
SIGSEGV in libpython. These run the real tray (``run_tray``, headless) in a subprocess, so a crash is an
exit status here, not the end of the test run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from gputray.scheduler.paths import app_paths

# Runs `gputray --demo` through run_tray with pyqtgraph unimportable, and drives it from a timer inside
# its own event loop: the menu's "Open dashboard", then Settings → 日本語 → Save (the real dialog), the
# menu's "Run doctor", the panel's Dashboard button; then it reports what is on screen and quits.
PROBE = r"""
import json, sys
sys.modules["pyqtgraph"] = None  # as on an install without it: ModuleNotFoundError on import
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QDialog, QDialogButtonBox, QMessageBox
import gputray.gui.tray_app as tray_app_module
from gputray.gui.app import run_tray

steps = []
seen_boxes = []

def boxes():
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]

def close_boxes():
    for box in boxes():
        seen_boxes.append(box.text())
        box.close()

def save_in_japanese():
    dialog = QApplication.activeModalWidget()
    if not isinstance(dialog, QDialog):
        QTimer.singleShot(50, save_in_japanese)
        return
    dialog.language.setCurrentIndex(dialog.language.findData("ja"))
    dialog.buttons.button(QDialogButtonBox.StandardButton.Save).click()

def drive(app):
    def open_settings():
        QTimer.singleShot(50, save_in_japanese)
        app.menu.settings_action.trigger()
    steps.extend([
        lambda: app.owner is not None and app.latest is not None,
        lambda: app.menu.dashboard_action.trigger(),
        close_boxes,
        open_settings,
        lambda: None, lambda: None, lambda: None,  # a few turns of the loop: posted events, a snapshot
        lambda: app.menu.doctor_action.trigger(),
        close_boxes,
        lambda: app.panel.dashboard_button.click(),
        close_boxes,
        lambda: None, lambda: None,
        lambda: report(app),
    ])
    def tick():
        if steps and steps[0]() is not False:
            steps.pop(0)
        if steps:
            QTimer.singleShot(100, tick)
    QTimer.singleShot(100, tick)

def report(app):
    print(json.dumps({
        "boxes": seen_boxes,
        "quit_text": app.menu.quit_action.text(),
        "windows": sorted(type(w).__name__ for w in QApplication.allWidgets() if w.isWindow()),
    }), flush=True)
    app.quit()

original_start = tray_app_module.TrayApp.start
def start(self):
    original_start(self)
    drive(self)
tray_app_module.TrayApp.start = start
sys.exit(run_tray(["--demo"]))
"""


def run_probe() -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """The probe in this test's GPUTRAY_HOME (conftest's fixture), its report from stdout."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LANG": "C.UTF-8"}
    out = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return out, (json.loads(lines[-1]) if lines else {})


def test_missing_pyqtgraph_is_a_message_and_the_language_switch_after_it_does_not_crash() -> None:
    out, seen = run_probe()
    assert out.returncode != -signal.SIGSEGV, f"the tray crashed (SIGSEGV):\n{out.stderr[-3000:]}"
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    assert seen["quit_text"] == "終了", "Save switched the menu to Japanese"
    assert "Dashboard" not in seen["windows"], "no half-built dashboard is left behind"
    boxes = seen["boxes"]
    assert isinstance(boxes, list) and len(boxes) == 3, boxes  # menu Dashboard, menu Doctor, panel button
    install = f"{sys.executable} -m pip install pyqtgraph"
    assert "pyqtgraph" in boxes[0] and install in boxes[0], boxes[0]
    assert "ダッシュボード" in boxes[1] and install in boxes[1], "after the switch, in Japanese"
    assert boxes[2] == boxes[1]


# A slot that raises after building half a window: the hook run_tray installs logs the error and lets go
# of it, so the half-built window is gone instead of kept alive (and reachable by Qt) in sys.last_*.
HALF_BUILT = r"""
import json, sys
from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QWidget
from gputray.gui import slot_errors
from gputray.gui.app import make_application
from gputray.scheduler.log_setup import setup_logging
from gputray.scheduler.paths import app_paths

class HalfBuilt(QWidget):
    def __init__(self):
        super().__init__(None)
        raise RuntimeError("failed half-way")

setup_logging(app_paths().state_dir / "gputray.log")
slot_errors.install()
app = make_application()
action = QAction()
action.triggered.connect(lambda: HalfBuilt())
def check():
    print(json.dumps({
        "alive": [type(w).__name__ for w in QApplication.allWidgets()],
        "kept": getattr(sys, "last_traceback", None) is not None,
    }), flush=True)
    app.quit()
QTimer.singleShot(0, action.trigger)
QTimer.singleShot(50, check)
app.exec()
"""


def test_an_error_escaping_a_slot_is_logged_and_lets_go_of_its_half_built_window() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", HALF_BUILT],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"alive": [], "kept": False}
    logged = (app_paths().state_dir / "gputray.log").read_text(encoding="utf-8")
    assert "unhandled error in the GUI" in logged and "RuntimeError: failed half-way" in logged
