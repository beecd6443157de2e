"""The GUI fuzz test's app process: the real tray (``gputray.gui.entry``) with a seeded random walk of
clicks running inside its event loop.

Usage: ``python -X faulthandler gui_fuzz_driver.py SEED SECONDS STEPS_FILE -- GPUTRAY_ARGS…``

Every step is chosen from what is on screen at that moment, as a person would: inside an open menu
its entries; inside a modal dialog its buttons, boxes, lists and tabs (a file dialog is only
cancelled: nothing outside the test's folders is touched); otherwise the tray icon (clicked with
xdotool on the real tray, left or right), every visible window's buttons, check boxes, combo boxes,
spin boxes, tabs, list and table rows (click, double-click, context menu) and its close button. Quit
is left for the end, where the walk quits through the menu, answers "Stop them" if jobs run, and the
process must exit 0. Each step is written to STEPS_FILE before it is taken; Qt's messages go to stderr
prefixed ``qt-<kind>:`` so the test can judge them.
"""

from __future__ import annotations

import faulthandler
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QPoint, Qt, QTimer, QtMsgType, qInstallMessageHandler
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QMenu,
    QMessageBox,
    QTabBar,
    QWidget,
)
from shiboken6 import Shiboken

import gputray.gui  # noqa: F401 - before any Qt call: see gui/__init__.py

Choice = tuple[str, Callable[[], object], int]  # what the step log says, the action, its weight
LEFT = Qt.MouseButton.LeftButton
KINDS = {
    QtMsgType.QtDebugMsg: "debug",
    QtMsgType.QtInfoMsg: "info",
    QtMsgType.QtWarningMsg: "warning",
    QtMsgType.QtCriticalMsg: "critical",
    QtMsgType.QtFatalMsg: "fatal",
}


def on_qt_message(kind: QtMsgType, _context: object, text: str) -> None:
    sys.stderr.write(f"qt-{KINDS.get(kind, 'other')}: {text}\n")
    sys.stderr.flush()


def describe(w: QWidget) -> str:
    text = w.text() if isinstance(w, QAbstractButton) else ""
    name = w.objectName()
    window = w.window().windowTitle() or type(w.window()).__name__
    return f"{type(w).__name__}{'#' + name if name else ''}{' ' + repr(text) if text else ''} in {window!r}"


def own_context_menu(w: QWidget) -> bool:
    """A gputray widget with a context menu of its own (a GPU card's "Stop process…"); Qt's stock menus
    (Copy, Select All on labels and fields) are left alone."""
    return any(
        "contextMenuEvent" in vars(cls) and cls.__module__.startswith("gputray") for cls in type(w).__mro__
    )


class Walker(QObject):
    def __init__(self, app: Any, rng: random.Random, seconds: float, steps: Path) -> None:
        super().__init__(None)
        self.app = app
        self.rng = rng
        self.until = time.monotonic() + seconds
        self.steps = steps.open("a", encoding="utf-8", buffering=1)
        self.count = 0
        self.quitting = False

    def log(self, what: str) -> None:
        self.count += 1
        self.steps.write(f"{self.count} {what}\n")

    def start(self) -> None:
        QTimer.singleShot(500, self.step)

    def step(self) -> None:
        if not self.quitting and time.monotonic() >= self.until:
            self.quitting = True
            self.log("walk done: quitting through the menu")
        # Armed before the step is taken: a step that opens a modal dialog or a menu runs a nested event
        # loop, and the next step has to happen inside it.
        QTimer.singleShot(self.rng.randint(120, 450) if not self.quitting else 300, self.step)
        name, act = self.pick(self.quit_choices() if self.quitting else self.choices())
        self.log(name)
        try:
            act()
        except RuntimeError as exc:
            # The driver's own wrapper went stale: PySide can hand findChildren's caller an old Python
            # wrapper for a dialog child that Qt made and deleted itself (QInputDialog.getInt's), when
            # a new one takes its address. The app's own errors never come here: PySide prints an
            # exception raised in a slot or virtual the click runs (and the test judges stderr).
            if "already deleted" not in str(exc):
                raise
            self.log(f"skipped (a stale wrapper in the walk itself): {exc}")

    # -- what can be done now ----------------------------------------------------------------------------
    def pick(self, groups: list[list[Choice]]) -> Choice:
        """A group first (the tray icon, one window, the open menu or dialog), then a weighted choice in
        it: a window with many widgets does not crowd out the tray menu or the dashboard."""
        group = self.rng.choice([g for g in groups if g])
        return self.rng.choices([c[:2] for c in group], weights=[c[2] for c in group])[0]

    def choices(self) -> list[list[Choice]]:
        popup = QApplication.activePopupWidget()
        if isinstance(popup, QMenu):
            return [[*self.menu_choices(popup), ("close the menu", popup.close, 1)]]
        if popup is not None:
            return [[(f"close the popup {type(popup).__name__}", popup.close, 1)]]
        modal = QApplication.activeModalWidget()
        if modal is not None:
            if isinstance(modal, QFileDialog):
                return [[("cancel the file dialog", modal.reject, 1)]]
            close = modal.reject if isinstance(modal, QDialog) else modal.close
            return [[*self.widget_choices(modal), (f"close {modal.windowTitle()!r}", close, 1)]]
        groups: list[list[Choice]] = [
            [
                ("left-click the tray icon", lambda: self.click_icon(1), 1),
                ("right-click the tray icon", lambda: self.click_icon(3), 2),
            ]
        ]
        for window in QApplication.topLevelWidgets():
            if window.metaObject().className() == "QSystemTrayIconSys":
                continue  # the icon itself, embedded in the tray: clicked above, never closed
            if window.isVisible() and not isinstance(window, QMenu):
                title = window.windowTitle() or type(window).__name__
                groups.append([*self.widget_choices(window), (f"close {title!r}", window.close, 1)])
        return groups

    def quit_choices(self) -> list[list[Choice]]:
        popup = QApplication.activePopupWidget()
        if popup is self.app.menu:
            return [[("Quit", lambda: self.click_action(self.app.menu, self.app.menu.quit_action), 1)]]
        if popup is not None:
            return [[("close the popup", popup.close, 1)]]
        modal = QApplication.activeModalWidget()
        if isinstance(modal, QMessageBox) and modal.windowTitle() == "gputray":
            stop = [
                b for b in modal.buttons() if modal.buttonRole(b) == QMessageBox.ButtonRole.DestructiveRole
            ]
            if stop:
                return [
                    [("answer 'Stop them'", lambda: QTest.mouseClick(stop[0], Qt.MouseButton.LeftButton), 1)]
                ]
        if modal is not None:
            close = modal.reject if isinstance(modal, QDialog) else modal.close
            return [[(f"close {modal.windowTitle()!r}", close, 1)]]
        return [[("right-click the tray icon", lambda: self.click_icon(3), 1)]]

    def menu_choices(self, menu: QMenu) -> list[Choice]:
        out: list[Choice] = []
        for action in menu.actions():
            if action.isSeparator() or not action.isVisible() or not action.isEnabled():
                continue
            if action is self.app.menu.quit_action:
                continue  # the walk's last step
            weight = 3
            if action is self.app.menu.settings_action:
                weight = 6  # the language and theme of every window change from there
            elif action is self.app.menu.demo_action:
                weight = 1  # restarts the owner: slow, and the rest of the walk waits for it
            out.append((f"menu entry {action.text()!r}", lambda a=action: self.click_action(menu, a), weight))
        return out

    def widget_choices(self, root: QWidget) -> list[Choice]:
        """Every enabled, visible thing in ``root`` a person could click; the buttons that end a dialog
        and the combo boxes (the language) weigh more, so Save after a new language comes often."""
        out: list[Choice] = []
        for w in root.findChildren(QWidget):
            if not Shiboken.isValid(w) or w.window() is not root or not w.isVisible() or not w.isEnabled():
                continue
            if isinstance(w, QAbstractButton):
                weight = 3 if isinstance(w.parent(), QDialogButtonBox) else 1
                out.append((f"click {describe(w)}", lambda w=w: QTest.mouseClick(w, LEFT), weight))
            elif isinstance(w, QTabBar) and w.count():
                i = self.rng.randrange(w.count())
                out.append(
                    (f"tab {w.tabText(i)!r} of {describe(w)}", lambda w=w, i=i: self.click_tab(w, i), 2)
                )
            elif isinstance(w, QComboBox) and w.count() > 1:
                # another item than the one shown, as a person changing it (the language: en ↔ ja)
                i = self.rng.choice([i for i in range(w.count()) if i != w.currentIndex()])
                out.append(
                    (f"choose {w.itemText(i)!r} in {describe(w)}", lambda w=w, i=i: self.choose(w, i), 4)
                )
            elif isinstance(w, QAbstractSpinBox):
                steps = self.rng.choice((-1, 1))
                out.append((f"step {steps:+d} {describe(w)}", lambda w=w, s=steps: w.stepBy(s), 1))
            elif isinstance(w, QAbstractItemView):
                out += self.view_choices(w)
            elif w.contextMenuPolicy() == Qt.ContextMenuPolicy.CustomContextMenu or own_context_menu(w):
                out.append(
                    (f"context menu of {describe(w)}", lambda w=w: self.context_menu(w, w.rect().center()), 1)
                )
        return out

    def view_choices(self, view: QAbstractItemView) -> list[Choice]:
        model = view.model()
        if model is None or model.rowCount() == 0:
            return []
        row = self.rng.randrange(model.rowCount())
        rect = view.visualRect(model.index(row, 0))
        if not rect.isValid() or not view.viewport().rect().intersects(rect):
            return []
        at = rect.center()
        what = f"row {row} of {describe(view)}"
        vp = view.viewport()
        out: list[Choice] = [
            (f"click {what}", lambda: QTest.mouseClick(vp, LEFT, pos=at), 1),
            (f"double-click {what}", lambda: QTest.mouseDClick(vp, LEFT, pos=at), 1),
        ]
        if view.contextMenuPolicy() == Qt.ContextMenuPolicy.CustomContextMenu:
            out.append((f"context menu on {what}", lambda: self.context_menu(vp, at), 2))
        return out

    # -- how it is done ----------------------------------------------------------------------------------
    def click_icon(self, button: int) -> None:
        geometry = self.app.tray.geometry()
        if geometry.isEmpty():  # no tray: the panel is a window, nothing to click
            return
        c = geometry.center()
        subprocess.run(
            ["xdotool", "mousemove", str(c.x()), str(c.y()), "click", str(button)], check=False, timeout=10
        )

    @staticmethod
    def click_action(menu: QMenu, action: Any) -> None:
        rect = menu.actionGeometry(action)
        if rect.isEmpty():
            action.trigger()
            return
        QTest.mouseClick(menu, Qt.MouseButton.LeftButton, pos=rect.center())

    @staticmethod
    def click_tab(bar: QTabBar, index: int) -> None:
        QTest.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())

    @staticmethod
    def choose(combo: QComboBox, index: int) -> None:
        combo.setCurrentIndex(index)
        combo.activated.emit(index)

    @staticmethod
    def context_menu(w: QWidget, at: QPoint) -> None:
        event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, at, w.mapToGlobal(at))
        QApplication.sendEvent(w, event)


def main() -> int:
    seed, seconds, steps = int(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
    app_args = sys.argv[sys.argv.index("--") + 1 :]
    faulthandler.enable()
    qInstallMessageHandler(on_qt_message)
    import gputray.gui.tray_app as tray_app_module
    from gputray.gui.entry import main as gputray_main

    original_start = tray_app_module.TrayApp.start

    def start(self: Any) -> None:
        original_start(self)
        walker = Walker(self, random.Random(seed), seconds, steps)
        self._fuzz_walker = walker  # kept alive with the app
        walker.start()

    tray_app_module.TrayApp.start = start  # type: ignore[method-assign]
    return gputray_main(app_args)


if __name__ == "__main__":
    raise SystemExit(main())
