""" "Stop process…" for a process the panel or the dashboard lists as using a GPU.

Only the user's own processes can be stopped (a process of another user, or of root, is listed but its
menu entry is disabled with the reason), never gputray itself, and only after a confirmation that
names the process. The pid is checked again against the name the monitor saw, so a pid that a new
program took over meanwhile is not stopped by mistake. Stopping sends SIGTERM (``TerminateProcess``
on Windows), as ``kill`` would; this is not a queue request, so it does not go through the owner.
"""

from __future__ import annotations

import logging
import os
import sys

import psutil
from PySide6.QtWidgets import QMessageBox, QPushButton, QWidget

from gputray.gui.i18n import tr
from gputray.monitor.records import ProcessUse

log = logging.getLogger("gputray.gui")


def _same_program(seen: str, now: str) -> bool:
    """Linux truncates ``comm`` to 15 characters; the monitor may report the longer command name."""
    a, b = seen.strip().lower(), now.strip().lower()
    return bool(a and b) and (a == b or a.startswith(b[:15]) or b.startswith(a[:15]))


def _is_mine(proc: psutil.Process) -> bool:
    if sys.platform == "win32":
        return bool(proc.username() == psutil.Process().username())
    return bool(proc.uids().real == os.getuid())


def ownership(p: ProcessUse) -> tuple[bool, str]:
    """(may the user stop it, why not — in words, empty when they may)."""
    if p.pid == os.getpid():
        return False, tr("this is gputray itself")
    try:
        proc = psutil.Process(p.pid)
        name = proc.name()
        mine = _is_mine(proc)
    except psutil.NoSuchProcess:
        return False, tr("not running on this machine")
    except psutil.AccessDenied:
        return False, tr("another user's process")
    except psutil.Error as exc:
        return False, str(exc)
    if not _same_program(p.name, name):
        return False, tr("the PID now belongs to {name}").format(name=name)
    if not mine:
        return False, tr("another user's process")
    return True, ""


def confirmation_box(parent: QWidget | None, p: ProcessUse) -> tuple[QMessageBox, QPushButton]:
    """The question, naming the process; Cancel is the default. (box, its "Stop process" button)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(tr("Stop process"))
    box.setText(tr("Stop {name} (PID {pid})?").format(name=p.name, pid=p.pid))
    box.setInformativeText(tr("It is asked to end, as `kill` would; whatever it has not saved is lost."))
    stop = box.addButton(tr("Stop process"), QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    return box, stop


def _refuse(parent: QWidget | None, p: ProcessUse, why: str) -> None:
    text = tr("{name} cannot be stopped: {why}").format(name=p.name, why=why)
    QMessageBox.information(parent, tr("Stop process"), text)


def confirm_and_stop(parent: QWidget | None, p: ProcessUse) -> bool:
    """Ask, then stop. True when the process was told to stop."""
    own, why = ownership(p)
    if not own:
        _refuse(parent, p, why)
        return False
    box, stop = confirmation_box(parent, p)
    box.exec()
    if box.clickedButton() is not stop:
        return False
    return stop_process(parent, p)


def stop_process(parent: QWidget | None, p: ProcessUse) -> bool:
    own, why = ownership(p)  # again: it may have ended while the question was open
    if not own:
        QMessageBox.information(
            parent, tr("Stop process"), tr("{name} cannot be stopped: {why}").format(name=p.name, why=why)
        )
        return False
    try:
        psutil.Process(p.pid).terminate()
    except psutil.NoSuchProcess:
        return True  # it ended by itself meanwhile
    except psutil.Error as exc:
        log.warning("stopping pid %d failed: %s", p.pid, exc)
        QMessageBox.warning(
            parent,
            tr("Stop process"),
            tr("{name} could not be stopped: {error}").format(name=p.name, error=exc),
        )
        return False
    log.info("asked pid %d (%s) to stop", p.pid, p.name)
    return True
