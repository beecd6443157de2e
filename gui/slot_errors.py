"""What becomes of an exception that escapes a Qt slot or a virtual method written in Python.

PySide prints such an exception with ``PyErr_Print`` and lets the event loop go on. ``PyErr_Print``
also keeps it in ``sys.last_traceback`` until the next one, and with it every frame's locals: a widget
whose ``__init__`` raised half-way stays alive there, and Qt goes on sending it events (a language
switch, a repaint) while its Python half is unfinished. That is how a failed dashboard import became a
segmentation fault at the next language switch (issue 21). The hook here writes the traceback to the
log (stderr and ``gputray.log``, where a tray user can find it) and lets go of it at once.
"""

from __future__ import annotations

import logging
import sys
from types import TracebackType

log = logging.getLogger("gputray.gui")


def report_and_forget(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    log.error("unhandled error in the GUI", exc_info=(exc_type, exc, tb))
    sys.last_type = sys.last_value = sys.last_traceback = None
    if hasattr(sys, "last_exc"):  # Python 3.12+
        sys.last_exc = None


def install() -> None:
    """Route uncaught exceptions (slots, virtuals, the main thread) through :func:`report_and_forget`."""
    sys.excepthook = report_and_forget
