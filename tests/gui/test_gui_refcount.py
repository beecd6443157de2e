"""A tray app makes Qt calls all day: Python must not abort with "deallocating None" (see gui/__init__.py)."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = r"""
import sys
n = sys.getrefcount(None) + sys.getrefcount(True)
import gputray.gui
from PySide6.QtCore import QCoreApplication, QObject
app = QCoreApplication([])
o = QObject()
for i in range(3 * n + 10_000):  # more calls than None had references when we started
    o.setObjectName("x")
    o.blockSignals(False)
    QCoreApplication.processEvents()
print("alive", 3 * n + 10_000)
"""


def test_many_void_qt_calls_do_not_kill_python() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("alive")
